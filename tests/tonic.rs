//! seawall under a tonic channel, against a real tonic server over loopback.
//!
//! The server is the standard gRPC health service (`tonic-health`'s
//! generated `Health` trait, so no protoc is needed) with a scripted
//! implementation: each call takes the next outcome of its script. The
//! client is tonic's own generated `HealthClient` over a `Channel` wrapped
//! in the seawall stack — the body mapping tonic needs is one `map_request`.

mod common;

use common::grpc::{Raw, ask, client, failure_of, service, serving, stack};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seawall::core::{Class, Code, Receipt};
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use tokio_stream::Stream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_types::{ErrorDetails, StatusExt};

/// What one call of the scripted service does.
#[derive(Clone)]
enum Step {
    Serve,
    Fail(Status),
    /// Watch: `n` messages, then this status (or a clean end).
    Stream(usize, Option<Status>),
}

#[derive(Default)]
struct Scripted {
    script: Mutex<Vec<Step>>,
    calls: AtomicUsize,
    timeouts: Mutex<Vec<Option<String>>>,
}

impl Scripted {
    fn next(&self, request: &Request<HealthCheckRequest>) -> Step {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let timeout = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.timeouts.lock().unwrap().push(timeout);
        let script = self.script.lock().unwrap();
        script[n.min(script.len() - 1)].clone()
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

/// The scripted service as the server holds it.
#[derive(Clone)]
struct Service(Arc<Scripted>);

#[tonic::async_trait]
impl Health for Service {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        match self.0.next(&request) {
            Step::Serve | Step::Stream(..) => Ok(Response::new(serving())),
            Step::Fail(status) => Err(status),
        }
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let (messages, end) = match self.0.next(&request) {
            Step::Serve => (1, None),
            Step::Fail(status) => (0, Some(status)),
            Step::Stream(n, end) => (n, end),
        };
        let items = (0..messages)
            .map(|_| Ok(serving()))
            .chain(end.map(Err))
            .collect::<Vec<_>>();
        Ok(Response::new(Box::pin(tokio_stream::iter(items))))
    }
}

/// A tonic server on a free loopback port running `script`.
async fn server(script: Vec<Step>) -> (String, Arc<Scripted>) {
    let scripted = Arc::new(Scripted {
        script: Mutex::new(script),
        ..Scripted::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let service = HealthServer::new(Service(scripted.clone()));
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    (url, scripted)
}

/// Reads `stream` to its failure: the messages before it, and the status.
async fn messages_until_failure(
    stream: &mut tonic::Streaming<HealthCheckResponse>,
) -> (usize, Status) {
    let mut messages = 0;
    loop {
        match stream.message().await {
            Ok(Some(_)) => messages += 1,
            Ok(None) => panic!("a failed stream must not end cleanly"),
            Err(status) => return (messages, status),
        }
    }
}

/// Watches a tonic server running `script` through the default stack: the
/// stream as the client sees it, and the server's record.
async fn watch(script: Vec<Step>) -> (tonic::Streaming<HealthCheckResponse>, Arc<Scripted>) {
    let (url, scripted) = server(script).await;
    let mut client = client(&url, stack());
    let stream = client.watch(ask()).await.expect("the stream opens");
    (stream.into_inner(), scripted)
}

#[tokio::test]
async fn unavailable_then_ok_is_retried_with_the_request_replayed() {
    let (url, scripted) = server(vec![Step::Fail(Status::unavailable("down")), Step::Serve]).await;
    let mut client = client(&url, stack());
    let response = client.check(ask()).await.expect("the retry answers");
    assert_eq!(response.get_ref().status, ServingStatus::Serving as i32);
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 2);
    let receipt = response.extensions().get::<Receipt>().expect("a receipt");
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(
        receipt.attempts.iter().next().unwrap().code,
        Some(Code::ProviderUnavailable)
    );
}

#[tokio::test]
async fn resource_exhausted_with_retry_info_is_waited_for() {
    let details = ErrorDetails::with_retry_info(Some(Duration::from_millis(300)));
    let limited = Status::with_error_details(tonic::Code::ResourceExhausted, "slow", details);
    let (url, scripted) = server(vec![Step::Fail(limited), Step::Serve]).await;
    let mut client = client(&url, stack());
    let started = tokio::time::Instant::now();
    client.check(ask()).await.expect("answered after the hint");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the RetryInfo delay is honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_long_retry_info_is_a_quota_wall_not_a_wait() {
    let details = ErrorDetails::with_retry_info(Some(Duration::from_secs(48_489)));
    let wall = Status::with_error_details(tonic::Code::ResourceExhausted, "quota", details);
    let (url, scripted) = server(vec![Step::Fail(wall)]).await;
    let mut client = client(&url, stack());
    let status = client.check(ask()).await.expect_err("a quota wall");
    let failure = failure_of(&status).expect("the seawall failure inside tonic's status");
    assert_eq!(failure.code(), Code::QuotaExhausted);
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 1);
}

/// The `grpc-timeout` each attempt reached the server with, read back as
/// a duration; every attempt must have carried a valid one.
fn grpc_timeouts_sent(scripted: &Scripted) -> Vec<Duration> {
    let timeouts = scripted.timeouts.lock().unwrap().clone();
    timeouts
        .iter()
        .map(|timeout| {
            let timeout = timeout.as_deref().expect("grpc-timeout on every attempt");
            seawall::deadline::parse_grpc_timeout(&timeout.parse().unwrap())
                .expect("a valid grpc-timeout")
        })
        .collect()
}

/// Each attempt carries what is left of the operation (10 s), narrowed as
/// it passes; not the attempt's own 3 s bound, which covers the wait for
/// the answer to begin: a gRPC deadline ends the whole call, and a stream
/// that began in time runs on past it.
#[tokio::test]
async fn the_deadline_travels_as_grpc_timeout_narrowed_per_attempt() {
    let (url, scripted) = server(vec![Step::Fail(Status::unavailable("down")), Step::Serve]).await;
    let mut client = client(&url, stack());
    client.check(ask()).await.expect("the retry answers");
    let timeouts = grpc_timeouts_sent(&scripted);
    assert_eq!(timeouts.len(), 2);
    for remaining in &timeouts {
        assert!(
            *remaining <= Duration::from_secs(10) && *remaining > Duration::from_secs(3),
            "the operation's time left: {remaining:?}"
        );
    }
    assert!(
        timeouts[1] <= timeouts[0],
        "narrowed as it passes: {timeouts:?}"
    );
}

#[tokio::test]
async fn the_callers_own_grpc_timeout_bounds_the_operation() {
    let (url, scripted) = server(vec![Step::Fail(Status::unavailable("down")), Step::Serve]).await;
    let mut client = client(&url, stack());
    // tonic writes it as `grpc-timeout` and enforces it itself.
    let mut request = Request::new(ask());
    request.set_timeout(Duration::from_millis(800));
    client
        .check(request)
        .await
        .expect("the retry answers in time");
    let timeouts = grpc_timeouts_sent(&scripted);
    assert_eq!(timeouts.len(), 2);
    for remaining in timeouts {
        assert!(
            remaining <= Duration::from_millis(800),
            "the caller's 800 ms bound, not the stack's 3 s attempt: {remaining:?}"
        );
    }
}

/// A server that accepts connections and says nothing (no HTTP/2
/// handshake): its URL, and the task holding the connections (abort it).
async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (url, held)
}

/// Without `propagate_deadline` too, the caller's own `set_timeout`
/// bounds the whole operation: the ladder does not send attempt after
/// attempt, each under the caller's bound again (tonic enforces the
/// `grpc-timeout` it wrote on every copy), until the stack's own total.
#[tokio::test]
async fn the_callers_own_grpc_timeout_bounds_the_operation_without_propagation() {
    let (url, held) = silent_server().await;
    let stack = Stack::interactive()
        .total_deadline(Duration::from_secs(10))
        .attempt_timeout(Duration::from_secs(3))
        .retry_policy(RetryPolicy::interactive().backoff(Backoff::exponential(
            Duration::from_millis(5),
            Duration::from_millis(20),
        )))
        .budget(Budget::unlimited());
    let mut client = client(&url, stack);
    let mut request = Request::new(ask());
    request.set_timeout(Duration::from_millis(300));
    let status = client.check(request).await.expect_err("out of time");
    let failure = failure_of(&status).expect("seawall's verdict is the source");
    let receipt = failure.receipt().expect("a receipt");
    assert_eq!(receipt.attempts.len(), 1, "{receipt:?}");
    held.abort();
}

#[tokio::test]
async fn a_status_in_trailers_before_any_message_is_retried() {
    let (mut stream, scripted) = watch(vec![
        Step::Stream(0, Some(Status::unavailable("draining"))),
        Step::Stream(2, None),
    ])
    .await;
    let mut messages = 0;
    while let Some(message) = stream.message().await.expect("a clean end") {
        assert_eq!(message.status, ServingStatus::Serving as i32);
        messages += 1;
    }
    assert_eq!(messages, 2);
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stream_that_fails_after_messages_is_not_replayed() {
    let (mut stream, scripted) = watch(vec![
        Step::Stream(2, Some(Status::unavailable("lost the leader"))),
        Step::Stream(5, None),
    ])
    .await;
    let (messages, status) = messages_until_failure(&mut stream).await;
    assert_eq!(messages, 2);
    let failure = failure_of(&status).expect("the seawall failure inside tonic's status");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.class(), Class::Transient);
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::ProviderUnavailable)
    );
    assert_eq!(
        failure.action(),
        seawall::core::Action::Surface,
        "after messages nothing is replayed"
    );
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_permanent_status_is_not_retried() {
    let (url, scripted) = server(vec![
        Step::Fail(Status::invalid_argument("no")),
        Step::Serve,
    ])
    .await;
    let mut client = client(&url, stack());
    let status = client.check(ask()).await.expect_err("invalid argument");
    // tonic reports an error of its service as `Unknown` with the error as
    // the source: the seawall failure, which keeps the gRPC code.
    let failure = failure_of(&status).expect("the seawall failure inside tonic's status");
    assert_eq!(failure.code(), Code::BadRequest);
    assert_eq!(failure.provider_code(), Some("3"));
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 1);
}

/// A response body of the hand-written HTTP/2 servers.
type H2Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::io::Error>;

/// A serving health status as one gRPC message: flag, length, protobuf.
const SERVING: &[u8] = b"\0\0\0\0\x02\x08\x01";

/// A gRPC answer with `body`.
fn grpc_answer(body: H2Body) -> http::Response<H2Body> {
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(body)
        .unwrap()
}

/// An HTTP/2 server on a free loopback port: `answer` makes the response
/// to each request, given the request and how many came before it.
/// Returns its URL and its call count.
async fn h2_server<F, A>(answer: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(http::Request<hyper::body::Incoming>, usize) -> A + Clone + Send + Sync + 'static,
    A: std::future::Future<Output = http::Response<H2Body>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (answer, counter) = (answer.clone(), counter.clone());
            let service = hyper::service::service_fn(move |request| {
                let answer = answer(request, counter.fetch_add(1, Ordering::SeqCst));
                async move { Ok::<_, Infallible>(answer.await) }
            });
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), service),
            );
        }
    });
    (url, calls)
}

/// An HTTP/2 server that answers its first call with a captive portal's
/// page (200, `text/html`) and every later one with a serving health
/// status, written out by hand: a gRPC message (flag, length, protobuf
/// `status: SERVING`) and `grpc-status: 0` in the trailers.
async fn portal_then_serving() -> (String, Arc<AtomicUsize>) {
    use http_body_util::{BodyExt, Full};

    h2_server(|_, calls| async move {
        if calls == 0 {
            return http::Response::builder()
                .header("content-type", "text/html")
                .body(
                    Full::from("<html>sign in to the network</html>")
                        .map_err(|never| match never {})
                        .boxed(),
                )
                .unwrap();
        }
        serving_answer()
    })
    .await
}

/// A serving health status written out by hand: one gRPC message, then
/// `grpc-status: 0` in the trailers.
fn serving_answer() -> http::Response<H2Body> {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;

    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", "0".parse().unwrap());
    let frames = [
        Ok::<_, std::io::Error>(Frame::data(bytes::Bytes::from_static(SERVING))),
        Ok(Frame::trailers(trailers)),
    ];
    grpc_answer(StreamBody::new(tokio_stream::iter(frames)).boxed())
}

/// An HTTP/2 server whose first answer sends `messages` serving messages
/// and then breaks (its body fails: HTTP/2 resets the stream), and whose
/// later answers serve.
async fn resets_after(messages: usize) -> (String, Arc<AtomicUsize>) {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;

    h2_server(move |_, calls| async move {
        if calls > 0 {
            return serving_answer();
        }
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            for _ in 0..messages {
                let _ = tx
                    .send(Ok(Frame::data(bytes::Bytes::from_static(SERVING))))
                    .await;
            }
            // Let the headers and messages reach the client before the
            // reset does (HTTP/2 drops frames queued before a reset).
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = tx
                .send(Err(std::io::Error::other("the server lost its backend")))
                .await;
        });
        grpc_answer(StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed())
    })
    .await
}

#[tokio::test]
async fn a_2xx_that_is_not_grpc_is_no_answer_and_is_retried() {
    let (url, calls) = portal_then_serving().await;
    answered_on_the_second_attempt(&url, &calls, Code::ProtocolViolation).await;
}

/// One health check against `url` answers serving after one attempt that
/// failed with `first`: two calls reached the server.
async fn answered_on_the_second_attempt(url: &str, calls: &AtomicUsize, first: Code) {
    let mut client = client(url, stack());
    let answer = client.check(ask()).await.expect("the retry answers");
    let codes: Vec<_> = answer
        .extensions()
        .get::<Receipt>()
        .map(|receipt| receipt.attempts.iter().map(|a| a.code).collect())
        .unwrap_or_default();
    assert_eq!(codes, vec![Some(first), None]);
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// tonic's channel reports a reset as a `Status` (`Unknown` or `Internal`,
/// the HTTP/2 error its source). Before any message that is a broken
/// connection, retried as one: read as a status on the wire (with the
/// `tonic` feature) it was `unknown`, permanent, and the call failed.
#[tokio::test]
async fn a_reset_before_any_message_is_retried() {
    let (url, calls) = resets_after(0).await;
    answered_on_the_second_attempt(&url, &calls, Code::Transport).await;
}

/// With `seawall::tonic::GrpcStatusLayer` outermost, the caller's
/// `Status` has the server's code, message and details (tonic would say
/// `Unknown` of a seawall failure otherwise), and seawall's verdict stays
/// its source.
#[cfg(feature = "tonic")]
mod with_grpc_status {
    use super::*;
    use common::grpc::Mapped;
    use seawall::classify::ProviderClassifier;
    use seawall::stack::Seawall;
    use seawall::tonic::{GrpcStatus, GrpcStatusLayer};
    use tonic_health::pb::health_client::HealthClient;
    use tower::Layer;

    /// tonic's client over the layer over the seawall-wrapped channel.
    fn client(
        url: &str,
        stack: Stack,
    ) -> HealthClient<GrpcStatus<Seawall<Mapped, ProviderClassifier>>> {
        HealthClient::new(GrpcStatusLayer::new().layer(service(url, stack)))
    }

    #[tokio::test]
    async fn a_servers_status_keeps_its_code_message_and_details() {
        let mut details = ErrorDetails::new();
        details.add_bad_request_violation("service", "no such service");
        let invalid = Status::with_error_details(tonic::Code::InvalidArgument, "bad name", details);
        let (url, scripted) = server(vec![Step::Fail(invalid), Step::Serve]).await;
        let mut client = client(&url, stack());
        let status = client.check(ask()).await.expect_err("invalid argument");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(status.message(), "bad name");
        let violations = status
            .get_error_details()
            .bad_request()
            .map(|b| b.field_violations.clone())
            .unwrap_or_default();
        assert_eq!(violations.len(), 1, "the details as the server sent them");
        assert_eq!(violations[0].field, "service");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::BadRequest);
        assert_eq!(scripted.calls.load(Ordering::SeqCst), 1, "not retried");
    }

    /// tonic keeps the rest of a status's map as its metadata (a request
    /// id, a pushback for the caller's own logic): so does the layer.
    #[tokio::test]
    async fn a_servers_status_keeps_its_metadata() {
        let mut missing = Status::not_found("no such service");
        missing
            .metadata_mut()
            .insert("x-debug", "1".parse().unwrap());
        let (url, scripted) = server(vec![Step::Fail(missing)]).await;
        let mut client = client(&url, stack());
        let status = client.check(ask()).await.expect_err("not found");
        assert_eq!(status.code(), tonic::Code::NotFound);
        assert_eq!(
            status
                .metadata()
                .get("x-debug")
                .and_then(|v| v.to_str().ok()),
            Some("1"),
            "{status:?}"
        );
        assert!(status.metadata().get("grpc-status").is_none());
        assert_eq!(scripted.calls.load(Ordering::SeqCst), 1, "not retried");
    }

    #[tokio::test]
    async fn a_status_after_messages_keeps_its_code() {
        let (url, scripted) = server(vec![
            Step::Stream(2, Some(Status::unavailable("lost the leader"))),
            Step::Stream(5, None),
        ])
        .await;
        let mut client = client(&url, stack());
        let mut stream = client.watch(ask()).await.expect("messages").into_inner();
        let (messages, status) = messages_until_failure(&mut stream).await;
        assert_eq!(messages, 2);
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(status.message().contains("lost the leader"), "{status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::StreamInterrupted);
        assert_eq!(scripted.calls.load(Ordering::SeqCst), 1, "never replayed");
    }

    /// A route cooled by what its server said answers the next call, refused
    /// here without a call, with the code the server gave: a quota wall's
    /// `RESOURCE_EXHAUSTED`, rejected credentials' `UNAUTHENTICATED` — not
    /// `UNAVAILABLE`, which tells a caller to retry with a backoff.
    #[tokio::test]
    async fn a_cooling_route_answers_as_what_cooled_it() {
        let quota = || {
            let details = ErrorDetails::with_retry_info(Some(Duration::from_secs(48_489)));
            Status::with_error_details(tonic::Code::ResourceExhausted, "quota", details)
        };
        let rejected = || Status::unauthenticated("bad key");
        for (said, cause, code) in [
            (
                quota(),
                Code::QuotaExhausted,
                tonic::Code::ResourceExhausted,
            ),
            (rejected(), Code::Auth, tonic::Code::Unauthenticated),
        ] {
            let (url, scripted) = server(vec![Step::Fail(said), Step::Serve]).await;
            let mut client = client(&url, stack());
            let first = client.check(ask()).await.expect_err("the server's refusal");
            assert_eq!(first.code(), code, "{first}");
            let status = client.check(ask()).await.expect_err("the route is cooling");
            let refusal = failure_of(&status).expect("seawall's verdict is the source");
            assert_eq!(refusal.code(), Code::RouteCoolingDown, "{refusal:?}");
            assert_eq!(refusal.cooled_by(), Some(cause));
            assert_eq!(status.code(), code, "as the first call answered: {status}");
            assert_eq!(
                scripted.calls.load(Ordering::SeqCst),
                1,
                "the cooling route was not called"
            );
        }
    }

    #[tokio::test]
    async fn a_retried_call_answers_as_without_the_layer() {
        let (url, scripted) =
            server(vec![Step::Fail(Status::unavailable("down")), Step::Serve]).await;
        let mut client = client(&url, stack());
        let answer = client.check(ask()).await.expect("the retry answers");
        assert_eq!(answer.into_inner(), serving());
        assert_eq!(scripted.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_server_that_is_not_there_is_unavailable() {
        // A port nothing listens on: bound, then let go.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let mut client = client(&url, stack());
        let status = client.check(ask()).await.expect_err("nobody answers");
        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        assert!(failure_of(&status).is_some(), "{status:?}");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_deadline_exceeded() {
        let (url, held) = silent_server().await;
        let stack = stack()
            .total_deadline(Duration::from_millis(200))
            .attempt_timeout(Duration::from_millis(50));
        let mut client = client(&url, stack);
        let status = client.check(ask()).await.expect_err("out of time");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert!(
            matches!(failure.code(), Code::Timeout | Code::DeadlineExceeded),
            "{failure:?}"
        );
        // tonic enforces the grpc-timeout seawall sends with a timer of its
        // own, racing the attempt's: whichever fires, the attempt timed out
        // and the ladder goes on.
        let receipt = failure.receipt().expect("a receipt");
        assert!(receipt.attempts.len() >= 2, "{receipt:?}");
        for attempt in &receipt.attempts {
            assert_eq!(attempt.code, Some(Code::Timeout), "{receipt:?}");
        }
        held.abort();
    }

    /// A tonic server that bounds its own work: a `DeadlineLayer` reading
    /// the caller's `grpc-timeout` (capped by a bound of its own), with
    /// `GrpcStatusLayer::server()` outside it so the server answers its
    /// failure as a `DEADLINE_EXCEEDED` status, before the response or
    /// after a streamed message. tonic resets the stream of any error
    /// that is not a `Status` (the caller reads `INTERNAL`), so the layer
    /// is what keeps the code.
    #[tokio::test]
    async fn a_servers_own_deadline_answers_deadline_exceeded() {
        use seawall::deadline::{DeadlineLayer, WireTimeout};

        #[derive(Clone)]
        struct Slow;

        #[tonic::async_trait]
        impl Health for Slow {
            async fn check(
                &self,
                _: Request<HealthCheckRequest>,
            ) -> Result<Response<HealthCheckResponse>, Status> {
                tokio::time::sleep(Duration::from_secs(20)).await;
                Ok(Response::new(serving()))
            }

            type WatchStream = WatchStream;

            /// One message, then nothing until the caller goes.
            async fn watch(
                &self,
                _: Request<HealthCheckRequest>,
            ) -> Result<Response<WatchStream>, Status> {
                let first = tokio_stream::iter([Ok(serving())]);
                let stream = tokio_stream::StreamExt::chain(first, tokio_stream::pending());
                Ok(Response::new(Box::pin(stream)))
            }
        }

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bound =
            DeadlineLayer::new(Duration::from_millis(200)).read_incoming(WireTimeout::grpc());
        tokio::spawn(
            Server::builder()
                .layer(GrpcStatusLayer::server())
                .layer(bound)
                .add_service(HealthServer::new(Slow))
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        // A plain tonic client, no seawall on its side.
        let channel = tonic::transport::Channel::from_shared(url).unwrap();
        let mut plain = HealthClient::new(channel.connect().await.unwrap());
        let started = std::time::Instant::now();
        let status = plain.check(ask()).await.expect_err("out of time");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the server's bound, not the handler, ended the call"
        );
        // A stream the bound ends after a message: the status comes as the
        // body's trailers (an error there reset the stream, and the caller
        // read `INTERNAL`).
        let started = std::time::Instant::now();
        let mut messages = plain.watch(ask()).await.expect("a stream").into_inner();
        let first = messages.message().await.expect("a message");
        assert!(first.is_some());
        let status = messages.message().await.expect_err("out of time");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

/// An HTTP/2 server for a bidirectional call that speaks second: it
/// answers its headers at once and then echoes each message the client
/// sends, ending with `grpc-status: 0` when the client's stream ends. With
/// `refuse_first`, its first call is refused at once (trailers-only
/// `UNAVAILABLE`, the request unread). Returns its URL and its call count.
async fn echo_server(refuse_first: bool) -> (String, Arc<AtomicUsize>) {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;

    h2_server(move |request, calls| {
        let refused = refuse_first && calls == 0;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<bytes::Bytes>, std::io::Error>>(8);
        if !refused {
            tokio::spawn(async move {
                let mut body = request.into_body();
                while let Some(Ok(frame)) = body.frame().await {
                    if let Ok(data) = frame.into_data() {
                        // Each data frame holds whole messages here.
                        let _ = tx.send(Ok(Frame::data(data))).await;
                    }
                }
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", "0".parse().unwrap());
                let _ = tx.send(Ok(Frame::trailers(trailers))).await;
            });
        }
        async move {
            let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx));
            let mut response = http::Response::builder().header("content-type", "application/grpc");
            if refused {
                response = response.header("grpc-status", "14");
            }
            response.body(body.boxed()).unwrap()
        }
    })
    .await
}

#[tokio::test]
async fn a_call_that_still_sends_gets_its_answer_at_the_headers() {
    let (url, _) = echo_server(false).await;
    let mut grpc = tonic::client::Grpc::new(service(&url, stack()));
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(4);
    let outbound = tokio_stream::wrappers::ReceiverStream::new(rx);
    grpc.ready().await.expect("ready");
    // The client sends only once the call has returned, as a chat does:
    // the server, which speaks second, sends nothing before that.
    let response = tokio::time::timeout(
        Duration::from_secs(2),
        grpc.streaming(
            Request::new(outbound),
            "/echo.Echo/Chat".parse().unwrap(),
            Raw,
        ),
    )
    .await
    .expect("the call returns at the server's headers, not at its first message")
    .expect("answered");
    let mut inbound = response.into_inner();
    for word in ["hello", "again"] {
        tx.send(bytes::Bytes::from(word)).await.unwrap();
        let echoed = inbound.message().await.expect("a message").expect("echoed");
        assert_eq!(echoed, word);
    }
    drop(tx);
    assert!(inbound.message().await.expect("a clean end").is_none());
}

#[tokio::test]
async fn a_streamed_request_refused_at_once_is_sent_again_whole() {
    let (url, calls) = echo_server(true).await;
    let mut grpc = tonic::client::Grpc::new(service(&url, stack()));
    let words = [&b"one"[..], b"two", b"three"].map(bytes::Bytes::from_static);
    grpc.ready().await.expect("ready");
    let response = grpc
        .streaming(
            Request::new(tokio_stream::iter(words.clone())),
            "/echo.Echo/Chat".parse().unwrap(),
            Raw,
        )
        .await
        .expect("the second call answers");
    let mut inbound = response.into_inner();
    let mut echoed = Vec::new();
    while let Some(message) = inbound.message().await.expect("a clean end") {
        echoed.push(message);
    }
    assert_eq!(echoed.concat(), words.concat(), "every message, once");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// A call handed on at its headers (it is still sending) that the server
/// refuses after its headers, before any message, with a per-day quota:
/// the quota's own verdict, as for a call held back — not billed, its
/// reset kept for the breaker's cooldown — not an interruption of content
/// that never came. The request, still being sent, is not sent again.
#[tokio::test]
async fn a_quota_refusal_before_any_message_of_a_call_still_sending_is_the_quota() {
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Frame;
    use seawall_test::proto::{bytes_field, status_with_detail};

    let (url, calls) = h2_server(|_, _| async {
        // QuotaFailure { violations: [{ quota_id: 5 }] }, per day.
        let mut violation = Vec::new();
        let per_day = b"GenerateRequestsPerDayPerProjectPerModel-FreeTier";
        bytes_field(5, per_day, &mut violation);
        let mut quota_failure = Vec::new();
        bytes_field(1, &violation, &mut quota_failure);
        let type_url = b"type.googleapis.com/google.rpc.QuotaFailure";
        let details = status_with_detail(8, b"quota", type_url, &quota_failure);
        let mut trailers = http::HeaderMap::new();
        Status::with_details(tonic::Code::ResourceExhausted, "quota", details.into())
            .add_header(&mut trailers)
            .unwrap();
        let frames = [Ok::<_, std::io::Error>(Frame::trailers(trailers))];
        grpc_answer(StreamBody::new(tokio_stream::iter(frames)).boxed())
    })
    .await;
    let mut grpc = tonic::client::Grpc::new(service(&url, stack()));
    // Held open: the call is still sending when the answer comes.
    let (_tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1);
    grpc.ready().await.expect("ready");
    let call = grpc.streaming(
        Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)),
        "/echo.Echo/Chat".parse().unwrap(),
        Raw,
    );
    let response = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("answered at the headers")
        .expect("headers without a status");
    let mut inbound = response.into_inner();
    let status = tokio::time::timeout(Duration::from_secs(5), inbound.message())
        .await
        .expect("the trailers end the call")
        .expect_err("the quota");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::QuotaExhausted, "{failure:?}");
    assert!(!failure.billed(), "refused before generating: {failure:?}");
    assert!(failure.reset_at().is_some(), "the day's reset: {failure:?}");
    assert!(failure.interrupted().is_none(), "no content to interrupt");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not sent again");
    // The breaker cooled the route for the day: the next call stays here.
    grpc.ready().await.expect("ready");
    let (_tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1);
    let call = grpc.streaming(
        Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)),
        "/echo.Echo/Chat".parse().unwrap(),
        Raw,
    );
    let status = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("refused at once")
        .expect_err("the route is cooling down");
    let refusal = failure_of(&status).expect("seawall's verdict");
    assert_eq!(refusal.code(), Code::RouteCoolingDown, "{refusal:?}");
    assert_eq!(refusal.cooled_by(), Some(Code::QuotaExhausted));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the cooling route was not called"
    );
}

/// A server stream that sends two messages and then breaks: an
/// interruption, surfaced and never replayed.
#[tokio::test]
async fn a_stream_reset_after_messages_is_an_interruption_never_replayed() {
    let (url, calls) = resets_after(2).await;
    let mut client = client(&url, stack());
    let mut stream = client.watch(ask()).await.expect("messages").into_inner();
    let (messages, status) = messages_until_failure(&mut stream).await;
    assert_eq!(messages, 2);
    let failure = failure_of(&status).expect("seawall's verdict, not a bare transport error");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::Transport)
    );
    assert_eq!(failure.action(), seawall::core::Action::Surface);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never replayed");
}

/// PERMISSION_DENIED is this call's authorization, not the channel's
/// credentials: refused once, the next call on the same stack still goes
/// out (a generated client's requests carry no authority, so every call
/// of the stack shares one route; read as `auth` it closed that route
/// until a reset by hand).
#[tokio::test]
async fn a_permission_denied_call_leaves_the_route_open() {
    let (url, scripted) = server(vec![
        Step::Fail(Status::permission_denied("not yours")),
        Step::Serve,
    ])
    .await;
    let mut client = client(&url, stack());
    let status = client.check(ask()).await.expect_err("denied");
    let failure = failure_of(&status).expect("the seawall failure inside tonic's status");
    assert_eq!(failure.provider_code(), Some("7"));
    let response = client.check(ask()).await.expect("the next call goes out");
    assert_eq!(response.get_ref().status, ServingStatus::Serving as i32);
    assert_eq!(scripted.calls.load(Ordering::SeqCst), 2);
}

/// Without `propagate_deadline`, the caller's own `grpc-timeout` (tonic's
/// `set_timeout`) is rewritten per attempt too, with what is left of it: a
/// retry does not send the caller's whole bound again, for the server and
/// tonic's own timer on the channel to work on past the operation's end.
#[tokio::test]
async fn the_callers_own_grpc_timeout_is_narrowed_per_attempt_without_propagation() {
    let (url, scripted) = server(vec![Step::Fail(Status::unavailable("down")), Step::Serve]).await;
    let stack = Stack::interactive()
        .attempt_timeout(Duration::from_secs(3))
        .retry_policy(RetryPolicy::interactive().backoff(Backoff::exponential(
            Duration::from_millis(5),
            Duration::from_millis(20),
        )));
    let mut client = client(&url, stack);
    let mut request = Request::new(ask());
    request.set_timeout(Duration::from_secs(8));
    client.check(request).await.expect("the retry answers");
    let timeouts = grpc_timeouts_sent(&scripted);
    assert_eq!(timeouts.len(), 2);
    assert!(timeouts[0] <= Duration::from_secs(8), "{timeouts:?}");
    assert!(
        timeouts[1] < timeouts[0],
        "the retry carries what is left, not the caller's 8 s again: {timeouts:?}"
    );
}
