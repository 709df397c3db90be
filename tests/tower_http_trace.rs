//! `seawall::tower_http::SeawallClassifier` in tower-http's `TraceLayer`
//! on a tonic server over loopback: a gRPC call that fails reaches
//! `on_failure` by seawall's code, whether its status comes in the head
//! (trailers-only) or in the trailers after messages (a seawall bound that
//! fires mid-stream, answered by `GrpcStatusLayer::server`).
#![cfg(all(feature = "tower-http", feature = "tonic", feature = "deadline"))]

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seawall::deadline::DeadlineLayer;
use seawall::tonic::GrpcStatusLayer;
use seawall::tower_http::{FailureClass, SeawallClassifier};
use tokio_stream::Stream;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_http::trace::TraceLayer;

/// The server's own bound on every call.
const BOUND: Duration = Duration::from_millis(300);

fn serving() -> HealthCheckResponse {
    HealthCheckResponse {
        status: ServingStatus::Serving as i32,
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

/// A health service whose answer the request's `service` names.
#[derive(Clone)]
struct Scripted;

#[tonic::async_trait]
impl Health for Scripted {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        match request.get_ref().service.as_str() {
            "unavailable" => Err(Status::unavailable("down")),
            // Past the server's bound: its deadline answers.
            "slow" => {
                tokio::time::sleep(Duration::from_secs(20)).await;
                Ok(Response::new(serving()))
            }
            _ => Ok(Response::new(serving())),
        }
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let first = tokio_stream::iter([Ok(serving()), Ok(serving())]);
        let stream: WatchStream = match request.get_ref().service.as_str() {
            // Two messages, then nothing until the server's bound fires.
            "stall" => Box::pin(tokio_stream::StreamExt::chain(
                first,
                tokio_stream::pending(),
            )),
            "unavailable" => Box::pin(tokio_stream::StreamExt::chain(
                first,
                tokio_stream::iter([Err(Status::unavailable("lost the leader"))]),
            )),
            _ => Box::pin(first),
        };
        Ok(Response::new(stream))
    }
}

/// The codes `on_failure` was called with, in order.
type Failures = Arc<Mutex<Vec<String>>>;

/// A tonic server traced by seawall's classifier, its failures answered as
/// statuses, every call bound by [`BOUND`]; and a plain client to it.
async fn traced_server() -> (HealthClient<Channel>, Failures) {
    let failures = Failures::default();
    let recorded = failures.clone();
    let trace = TraceLayer::new(SeawallClassifier).on_failure(
        move |class: FailureClass, _latency: Duration, _span: &tracing::Span| {
            recorded.lock().unwrap().push(class.code_str());
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(
        Server::builder()
            .layer(trace)
            .layer(GrpcStatusLayer::server())
            .layer(DeadlineLayer::new(BOUND))
            .add_service(HealthServer::new(Scripted))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let channel = Channel::from_shared(url).unwrap().connect().await.unwrap();
    (HealthClient::new(channel), failures)
}

fn ask(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.to_owned(),
    }
}

/// What `on_failure` has seen once it has seen `n` failures, or after two
/// seconds (tower-http calls it before the answer's end goes out; the wait
/// is a margin).
async fn seen(failures: &Failures, n: usize) -> Vec<String> {
    let waited = tokio::time::timeout(Duration::from_secs(2), async {
        while failures.lock().unwrap().len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let seen = failures.lock().unwrap().clone();
    assert!(waited.is_ok(), "{n} failures expected, seen {seen:?}");
    seen
}

/// Reads a watch to its end: the messages, and the status it ended with.
async fn watch_to_end(
    client: &mut HealthClient<Channel>,
    service: &str,
) -> (usize, Result<(), Status>) {
    let mut stream = client
        .watch(ask(service))
        .await
        .expect("a stream")
        .into_inner();
    let mut messages = 0;
    loop {
        match stream.message().await {
            Ok(Some(_)) => messages += 1,
            Ok(None) => return (messages, Ok(())),
            Err(status) => return (messages, Err(status)),
        }
    }
}

#[tokio::test]
async fn a_trailers_only_status_reaches_on_failure() {
    let (mut client, failures) = traced_server().await;
    let status = client.check(ask("unavailable")).await.expect_err("down");
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(seen(&failures, 1).await, ["provider_unavailable"]);

    // The server's bound fires before the answer: its error reaches the
    // trace before tonic answers it as DEADLINE_EXCEEDED, and is named by
    // the verdict it carries.
    let status = client.check(ask("slow")).await.expect_err("out of time");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        seen(&failures, 2).await,
        ["provider_unavailable", "deadline_exceeded"]
    );
}

#[tokio::test]
async fn a_status_in_the_trailers_after_messages_reaches_on_failure() {
    let (mut client, failures) = traced_server().await;
    // The server's bound fires after two messages: the status comes as
    // the body's trailers.
    let (messages, end) = watch_to_end(&mut client, "stall").await;
    assert_eq!(messages, 2);
    let status = end.expect_err("out of time");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert_eq!(seen(&failures, 1).await, ["timeout"]);

    // The handler's own status after messages.
    let (messages, end) = watch_to_end(&mut client, "unavailable").await;
    assert_eq!(messages, 2);
    assert_eq!(
        end.expect_err("unavailable").code(),
        tonic::Code::Unavailable
    );
    assert_eq!(
        seen(&failures, 2).await,
        ["timeout", "provider_unavailable"]
    );
}

#[tokio::test]
async fn calls_that_succeed_reach_no_on_failure() {
    let (mut client, failures) = traced_server().await;
    client.check(ask("")).await.expect("serving");
    let (messages, end) = watch_to_end(&mut client, "").await;
    assert_eq!((messages, end.is_ok()), (2, true));
    // A failing call after them, so the record is known to be up to date.
    client.check(ask("unavailable")).await.expect_err("down");
    assert_eq!(seen(&failures, 1).await, ["provider_unavailable"]);
}
