//! The seawall stack over a bare `ReqwestService`, with `http::Request`s,
//! against a real seawall-chaos server over loopback: every figure from
//! the server's journal (what reached the provider) or from what the caller
//! read.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Read, rows, same_body, words};
use futures_util::stream;
use http_body_util::{Full, StreamBody};
use seawall::classify::ClassifyLayer;
use seawall::core::{Action, BoxError, Code, Failure, Receipt};
use seawall_chaos::{ChaosHandle, FAULT_HEADER, Fault, JournalEntry};
use tower::ServiceExt;

/// How one call ended, for the caller and for the provider.
#[derive(Debug)]
struct Seen {
    /// The failure before any content, or in the body.
    failure: Option<Failure>,
    /// True when the failure came in the body, after the response.
    in_body: bool,
    receipt: Option<Receipt>,
    text: String,
    primary: Vec<JournalEntry>,
    fallback: Vec<JournalEntry>,
    elapsed: Duration,
}

/// One call through the short stack: `fault` as the header of every
/// attempt, `script` for the first ones, a healthy fallback when asked.
async fn call(stream: bool, fault: Option<&str>, script: &[&str], with_fallback: bool) -> Seen {
    let primary = common::chaos().await;
    let fallback = common::chaos().await;
    if !script.is_empty() {
        let faults = script.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
        primary.script("openai", faults).unwrap();
    }
    let mut request = http::Request::post(format!("{}/v1/chat/completions", primary.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(common::chat_body(stream))))
        .unwrap();
    if let Some(fault) = fault {
        request
            .headers_mut()
            .insert(FAULT_HEADER, fault.parse().unwrap());
    }
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let started = Instant::now();
    let result = if with_fallback {
        let layer = common::fallback_to(&stack, &fallback.base_url());
        let service = stack.build_with_fallback(&classify, common::service(), layer);
        respond(service.oneshot(request).await, stream).await
    } else {
        let service = stack.build(&classify, common::service());
        respond(service.oneshot(request).await, stream).await
    };
    let elapsed = started.elapsed();
    let (read, failure, in_body, receipt) = result;
    Seen {
        failure,
        in_body,
        receipt,
        text: read.text,
        primary: rows(&primary).await,
        fallback: rows(&fallback).await,
        elapsed,
    }
}

async fn respond<B>(
    result: Result<http::Response<B>, BoxError>,
    stream: bool,
) -> (Read, Option<Failure>, bool, Option<Receipt>)
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    match result {
        Err(error) => {
            let failure = Failure::find(&*error).cloned();
            assert!(failure.is_some(), "a classified failure: {error}");
            let receipt = failure.as_ref().and_then(|f| f.receipt().cloned());
            (Read::default(), failure, false, receipt)
        }
        Ok(response) => {
            let receipt = response.extensions().get::<Receipt>().cloned();
            let read = common::read(response.into_body(), stream).await;
            let failure = read.error.as_ref().map(|e| {
                Failure::find(&**e)
                    .cloned()
                    .expect("a classified body failure")
            });
            let receipt = failure
                .as_ref()
                .and_then(|f| f.receipt().cloned())
                .or(receipt);
            (read, failure, true, receipt)
        }
    }
}

fn attempts(seen: &Seen) -> usize {
    seen.receipt.as_ref().map_or(0, |r| r.attempts.len())
}

#[tokio::test]
async fn a_503_then_ok_is_two_attempts_with_the_same_body() {
    for stream in [false, true] {
        let seen = call(stream, None, &["status;code=503", "ok"], false).await;
        assert!(seen.failure.is_none(), "{seen:?}");
        assert_eq!(seen.text, words(8));
        assert_eq!(seen.primary.len(), 2);
        assert_eq!(attempts(&seen), 2);
        same_body(&seen.primary);
    }
}

#[tokio::test]
async fn the_quota_wall_is_one_attempt() {
    for stream in [false, true] {
        // Alone: surfaced after one call.
        let seen = call(
            stream,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
            &[],
            false,
        )
        .await;
        let failure = seen.failure.as_ref().expect("a failure");
        assert_eq!(failure.code(), Code::QuotaExhausted);
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
        assert_eq!(attempts(&seen), 1);
        // With a backup: one call to the wall, then the backup answers.
        let seen = call(
            stream,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
            &[],
            true,
        )
        .await;
        assert!(seen.failure.is_none(), "{seen:?}");
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
    }
}

#[tokio::test]
async fn headers_then_silence_fails_over_after_one_first_byte_bound() {
    let seen = call(true, Some("hang_after_headers"), &[], true).await;
    assert!(seen.failure.is_none(), "{seen:?}");
    assert_eq!(seen.text, words(8));
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
    let receipt = seen.receipt.as_ref().unwrap();
    assert_eq!(receipt.attempts[0].code, Some(Code::FirstByteTimeout));
    assert!(receipt.fallback);
    // One first-byte bound, not an attempt bound: generous margins.
    assert!(seen.elapsed >= common::FIRST_BYTE, "{:?}", seen.elapsed);
    assert!(seen.elapsed < common::ATTEMPT, "{:?}", seen.elapsed);
    same_body(&[seen.primary[0].clone(), seen.fallback[0].clone()]);
}

#[tokio::test]
async fn a_unary_answer_that_never_comes_fails_over_after_one_attempt_bound() {
    let seen = call(false, Some("hang_after_headers"), &[], true).await;
    assert!(seen.failure.is_none(), "{seen:?}");
    assert_eq!(seen.text, words(8));
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 1));
    assert_eq!(seen.receipt.unwrap().attempts[0].code, Some(Code::Timeout));
}

#[tokio::test]
async fn a_reset_after_content_surfaces_what_was_delivered_without_a_second_request() {
    let seen = call(true, None, &["reset_after;tokens=3", "ok"], true).await;
    let failure = seen.failure.as_ref().expect("an interruption");
    assert!(seen.in_body);
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    let interrupted = failure.interrupted().expect("what was delivered");
    assert_eq!(interrupted.content_events, 3);
    assert_eq!(
        interrupted.delivered_text.as_deref(),
        Some(words(3).as_str())
    );
    assert_eq!(interrupted.cause, Some(Code::Transport));
    assert_eq!(seen.text, words(3));
    assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
}

#[tokio::test]
async fn a_unary_body_reset_is_transport_and_retried() {
    let seen = call(false, None, &["reset_after;tokens=3", "ok"], false).await;
    assert!(seen.failure.is_none(), "{seen:?}");
    assert_eq!(seen.text, words(8));
    assert_eq!(seen.primary.len(), 2);
    assert_eq!(
        seen.receipt.unwrap().attempts[0].code,
        Some(Code::Transport)
    );
}

#[tokio::test]
async fn a_reset_before_headers_is_transport_and_retried() {
    let seen = call(true, None, &["reset_before_headers", "ok"], false).await;
    assert!(seen.failure.is_none(), "{seen:?}");
    assert_eq!(seen.primary.len(), 2);
    assert_eq!(
        seen.receipt.unwrap().attempts[0].code,
        Some(Code::Transport)
    );
}

#[tokio::test]
async fn an_empty_answer_is_retried_to_an_answer() {
    for stream in [false, true] {
        let seen = call(stream, None, &["empty", "ok"], false).await;
        assert!(seen.failure.is_none(), "{seen:?}");
        assert_eq!(seen.text, words(8));
        assert_eq!(seen.primary.len(), 2);
        assert_eq!(
            seen.receipt.unwrap().attempts[0].code,
            Some(Code::EmptyResponse)
        );
        same_body(&seen.primary);
    }
}

#[tokio::test]
async fn a_refusal_is_not_retried() {
    for stream in [false, true] {
        let seen = call(stream, Some("refusal"), &[], true).await;
        let failure = seen.failure.as_ref().expect("a refusal");
        assert_eq!(failure.code(), Code::Refused);
        assert_eq!(failure.action(), Action::Escalate);
        assert_eq!((seen.primary.len(), seen.fallback.len()), (1, 0));
    }
}

/// A server that answers every connection with one raw HTTP response.
async fn raw_server(
    answer: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(AtomicU32::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (base, hits)
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (base, hits) = raw_server(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:9/v1/chat/completions\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await;
    let request = http::Request::post(format!("{base}/v1/chat/completions"))
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::service());
    let error = service.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*error).expect("a classified failure");
    assert_eq!(failure.code(), Code::Redirected, "{error}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

type Frames = std::vec::IntoIter<Result<http_body::Frame<Bytes>, std::io::Error>>;

/// A request body that sends one chunk, then fails.
fn failing_body() -> StreamBody<stream::Iter<Frames>> {
    StreamBody::new(stream::iter(vec![
        Ok(http_body::Frame::data(Bytes::from_static(
            b"{\"model\":\"gpt-x\",",
        ))),
        Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
    ]))
}

/// Sends `request` through the short stack: a permanent `bad_request`
/// after one attempt, its text saying `says`.
async fn refused_once<B>(request: http::Request<B>, says: &str)
where
    B: http_body::Body<Data = Bytes> + Send + Sync + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::service());
    let error = service.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*error).expect("a classified failure");
    assert_eq!(failure.code(), Code::BadRequest, "{error}");
    assert_eq!(failure.action(), Action::Surface);
    assert!(error.to_string().contains(says), "{error}");
    assert_eq!(failure.receipt().map(|r| r.attempts.len()), Some(1));
}

#[tokio::test]
async fn a_request_body_failing_mid_stream_is_a_clear_error_never_retried() {
    let chaos = common::chaos().await;
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(failing_body())
        .unwrap();
    refused_once(request, "request body failed").await;
    // The server saw at most the one broken attempt.
    assert!(rows(&chaos).await.len() <= 1);
}

#[tokio::test]
async fn a_uri_reqwest_cannot_send_is_a_clear_error_naming_it() {
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::service());
    for uri in [
        "/v1/chat/completions",
        "ftp://127.0.0.1:9/v1/chat/completions",
    ] {
        let request = http::Request::post(uri)
            .body(Full::new(Bytes::from(common::chat_body(false))))
            .unwrap();
        let error = service.clone().oneshot(request).await.unwrap_err();
        assert!(error.to_string().contains(uri), "{error}");
        let failure = Failure::find(&*error).expect("a classified failure");
        assert_eq!(failure.code(), Code::BadRequest);
        assert_eq!(failure.receipt().map(|r| r.attempts.len()), Some(1));
    }
    // A key in the URI is named nowhere.
    let secret = "ftp://sk-user:sk-secret@127.0.0.1:9/v1/chat/completions?key=AIzaSECRET";
    let request = http::Request::post(secret)
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = service.clone().oneshot(request).await.unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(
        shown.contains("ftp://127.0.0.1:9/v1/chat/completions"),
        "{shown}"
    );
    for part in ["sk-user", "sk-secret", "AIzaSECRET"] {
        assert!(!shown.contains(part), "{shown}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_transport() {
    // Bind a port, then free it: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let request = http::Request::post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = common::service().oneshot(request).await.unwrap_err();
    let failure = seawall::classify::transport_failure(&error).expect("recognised");
    assert_eq!(failure.code(), Code::Transport);
    // reqwest's own text is only "error sending request": the cause below
    // it is what tells a refusal from a reset.
    let cause = root_cause(&error);
    assert!(failure.message().unwrap().contains(&cause), "{failure}");
}

/// The text of the deepest error in `error`'s chain.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

#[tokio::test]
async fn a_body_cut_short_is_transport_naming_the_cut() {
    let (base, hits) = raw_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"choices\":[",
    )
    .await;
    let request = || {
        http::Request::post(format!("{base}/v1/chat/completions"))
            .body(Full::new(Bytes::from(common::chat_body(false))))
            .unwrap()
    };
    // The bare service: the body's error says it ended early.
    let response = common::service().oneshot(request()).await.unwrap();
    let error = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap_err();
    let cause = root_cause(&error);
    assert!(cause.contains("end of file"), "{cause}");
    // The stack: retried as `transport`, and the verdict's message names
    // the cut, not only reqwest's "request or response body error".
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::service());
    let error = service.oneshot(request()).await.unwrap_err();
    let failure = Failure::find(&*error).expect("a classified failure");
    assert_eq!(failure.code(), Code::Transport);
    assert!(failure.message().unwrap().contains(&cause), "{failure}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1 + 3);
}

/// The server the frames come from, for the timing test below.
async fn slow_stream(chaos: &ChaosHandle) -> Vec<Duration> {
    use http_body_util::BodyExt;
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header(FAULT_HEADER, "ok;tokens=4;delay_ms=100")
        .body(Full::new(Bytes::from(common::chat_body(true))))
        .unwrap();
    let response = common::service().oneshot(request).await.unwrap();
    let started = Instant::now();
    let mut body = response.into_body();
    let mut at = Vec::new();
    while let Some(frame) = body.frame().await {
        frame.unwrap();
        at.push(started.elapsed());
    }
    at
}

#[tokio::test]
async fn frames_arrive_as_the_server_sends_them() {
    let chaos = common::chaos().await;
    let at = slow_stream(&chaos).await;
    // Four tokens 100 ms apart: the body is not collected before it is
    // handed on, so the frames are spread over ~300 ms.
    assert!(at.len() >= 4, "{at:?}");
    assert!(at[0] < Duration::from_millis(150), "{at:?}");
    assert!(*at.last().unwrap() >= Duration::from_millis(250), "{at:?}");
}

/// A request a server received over HTTP/2 (a proxy relaying it through
/// this service) is sent over the connection this client makes, HTTP/1.1
/// here: its version is the client's to pick, not an error on every
/// attempt.
#[tokio::test]
async fn a_request_received_over_http2_is_sent_over_http1() {
    let chaos = common::chaos().await;
    let mut request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            common::chat_body(false),
        )))
        .unwrap();
    *request.version_mut() = http::Version::HTTP_2;
    let response = tower::ServiceExt::oneshot(common::service(), request)
        .await
        .expect("sent over HTTP/1.1");
    assert_eq!(response.status(), 200);
    assert_eq!(common::rows(&chaos).await.len(), 1);
}

/// A request body that is not `Sync` (axum's, any unsync boxed body) goes
/// through the service and the stack over it: a proxy relays what its
/// server received without first collecting it.
#[tokio::test]
async fn an_unsync_request_body_is_sent() {
    use http_body_util::BodyExt;
    let chaos = common::chaos().await;
    let body = || {
        http_body_util::Full::new(bytes::Bytes::from(common::chat_body(false)))
            .map_err(|never| match never {})
            .boxed_unsync()
    };
    let request = |body| {
        http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
            .header("content-type", "application/json")
            .body(body)
            .unwrap()
    };
    let response = tower::ServiceExt::oneshot(common::service(), request(body()))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let stack = common::short_stack().build(
        &seawall::classify::ClassifyLayer::openai(),
        common::service(),
    );
    let response = tower::ServiceExt::oneshot(stack, request(body()))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let rows = common::rows(&chaos).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].body_hash, rows[1].body_hash, "the same bytes");
}

/// A `Content-Length` longer than the body: hyper stops writing when the
/// body ends short, the same way on every attempt. A request wrong as
/// written is a permanent `bad_request`, sent once, not a network error
/// retried until the ladder runs out.
#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_a_bad_request_sent_once() {
    let (base, hits) = raw_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
    )
    .await;
    let request = http::Request::post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("content-length", "12")
        .body(Full::new(Bytes::from_static(b"0123456789")))
        .unwrap();
    refused_once(request, "content-length").await;
    assert!(hits.load(std::sync::atomic::Ordering::SeqCst) <= 1);
}

/// An HTTP/1.0 request whose body has no known length (a relayed
/// stream) is sent over HTTP/1.1 with its body: hyper sends no body at
/// all for HTTP/1.0 without a length.
#[tokio::test]
async fn an_http10_request_with_a_streamed_body_keeps_its_body() {
    let chaos = common::chaos().await;
    let body = common::chat_body(false);
    let frames = vec![Ok::<_, std::io::Error>(http_body::Frame::data(
        Bytes::from(body.clone()),
    ))];
    let mut request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(StreamBody::new(stream::iter(frames)))
        .unwrap();
    *request.version_mut() = http::Version::HTTP_10;
    let response = common::service().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let rows = rows(&chaos).await;
    assert_eq!(rows.len(), 1);
}

/// A user's own `reqwest::Client` follows redirects: the answer that
/// comes back is another URL's, to a `GET` without the body. It is
/// `redirected` (permanent), naming the fix, never taken as the answer.
#[tokio::test]
async fn a_redirect_a_users_own_client_followed_is_redirected() {
    let (elsewhere, followed) = raw_server(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 14\r\n\r\n<html></html>\n",
    )
    .await;
    let moved: &'static str = Box::leak(
        format!(
            "HTTP/1.1 302 Found\r\nlocation: {elsewhere}/login?next=1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
        .into_boxed_str(),
    );
    let (base, _) = raw_server(moved).await;
    let request = http::Request::post(format!("{base}/v1/chat/completions"))
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    seawall_reqwest::install_crypto_provider();
    let service = common::short_stack().build(
        &ClassifyLayer::openai(),
        seawall_reqwest::ReqwestService::new(reqwest::Client::new()),
    );
    let error = service.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*error).expect("a classified failure");
    assert_eq!(failure.code(), Code::Redirected, "{error}");
    assert_eq!(failure.receipt().map(|r| r.attempts.len()), Some(1));
    assert!(error.to_string().contains("client_builder"), "{error}");
    assert!(error.to_string().contains("/login"), "{error}");
    assert!(!error.to_string().contains("next=1"), "{error}");
    assert_eq!(followed.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// reqwest's own `connect_timeout` is a `timeout` (what happened), not
/// the connect error its chain also holds: a server that takes the TCP
/// connection and never answers the TLS handshake outlasts the bound
/// (reqwest's own timer, around the handshake, whose error type only
/// reqwest can name).
#[tokio::test]
async fn a_connect_timeout_in_the_handshake_is_a_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let client = seawall_reqwest::client_builder()
        .connect_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let request = http::Request::post(format!("https://{address}/v1/chat/completions"))
        .body(Full::new(Bytes::from(common::chat_body(false))))
        .unwrap();
    let error = seawall_reqwest::ReqwestService::new(client)
        .oneshot(request)
        .await
        .unwrap_err();
    let failure = seawall::classify::transport_failure(&error).expect("classified");
    assert_eq!(failure.code(), Code::Timeout, "{error}");
}

/// A client's own read timeout on a stream that stalls is a timeout, as
/// on a unary answer: before content the attempt's code (`timeout`,
/// retried to an answer), after it the interruption's cause. It was a
/// bare body error the stream guard could only call `transport`.
#[tokio::test]
async fn a_read_timeout_in_a_stream_is_a_timeout() {
    let client = seawall_reqwest::client_builder()
        .no_proxy()
        // Well inside the stack's idle bound (300 ms): the client's fires
        // first.
        .read_timeout(Duration::from_millis(50))
        .build()
        .expect("a reqwest client");
    let ask = |script: &'static [&'static str]| {
        let client = client.clone();
        async move {
            let primary = common::chaos().await;
            let faults = script.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
            primary.script("openai", faults).unwrap();
            let request =
                http::Request::post(format!("{}/v1/chat/completions", primary.base_url()))
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(common::chat_body(true))))
                    .unwrap();
            let service = common::short_stack().build(
                &ClassifyLayer::openai(),
                seawall_reqwest::ReqwestService::new(client),
            );
            let seen = respond(service.oneshot(request).await, true).await;
            (seen, rows(&primary).await.len())
        }
    };
    let ((read, failure, _, receipt), requests) = ask(&["stall_after;tokens=3;ms=2000"]).await;
    let failure = failure.expect("an interruption");
    assert_eq!(failure.code(), Code::StreamInterrupted, "{failure:?}");
    let interrupted = failure.interrupted().expect("what was delivered");
    assert_eq!(interrupted.cause, Some(Code::Timeout), "{failure:?}");
    assert_eq!(read.text, words(3));
    assert_eq!(requests, 1);
    assert_eq!(receipt.map(|r| r.attempts.len()), Some(1));

    let ((read, failure, _, receipt), requests) =
        ask(&["stall_after;tokens=0;ms=2000", "ok"]).await;
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(read.text, words(8));
    assert_eq!(requests, 2);
    let receipt = receipt.expect("a receipt");
    assert_eq!(receipt.attempts[0].code, Some(Code::Timeout), "{receipt:?}");
}
