//! Test helpers: a channel-fed body, a provider that answers with it, and
//! a reader that drains a guarded body.
#![allow(dead_code)]

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use seawall_core::{Action, BoxError, Code, Failure};
use seawall_stream::{GuardBody, StreamGuardLayer, StreamReport, StreamReportHandle};
use tokio::sync::mpsc;
use tower::{Layer, ServiceExt};

/// A body fed through a channel: frames, errors, and EOF when the sender
/// is dropped.
pub(crate) struct ChannelBody {
    rx: mpsc::UnboundedReceiver<Result<Bytes, BoxError>>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|result| result.map(Frame::data)))
    }
}

/// One step of a scripted stream.
pub(crate) enum Step {
    /// Wait this long (virtual time).
    Wait(Duration),
    /// Send a frame.
    Send(Bytes),
    /// Fail the body (a reset).
    Reset,
    /// Fail the body with an error a layer below already classified.
    Fail(Failure),
    /// Hold the connection open forever.
    Hang,
}

pub(crate) fn wait(secs: f64) -> Step {
    Step::Wait(Duration::from_secs_f64(secs))
}

pub(crate) fn send(frame: impl Into<Bytes>) -> Step {
    Step::Send(frame.into())
}

/// The Responses API's keep-alive event.
pub(crate) const KEEPALIVE: &str =
    "event: keepalive\ndata: {\"type\":\"keepalive\",\"sequence_number\":99}\n\n";

/// `count` copies of `event`, one every `secs` seconds.
pub(crate) fn every(secs: f64, event: &'static str, count: usize) -> Vec<Step> {
    (0..count).flat_map(|_| [wait(secs), send(event)]).collect()
}

/// Each of `events` sent at once, in order.
pub(crate) fn sends<E: AsRef<str>>(events: &[E]) -> Vec<Step> {
    events
        .iter()
        .map(|event| send(event.as_ref().to_owned()))
        .collect()
}

#[derive(Debug)]
pub(crate) struct ResetError;
impl std::fmt::Display for ResetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by peer")
    }
}
impl std::error::Error for ResetError {}

/// A body played from a script by a spawned task; EOF after the last step.
pub(crate) fn scripted(script: Vec<Step>) -> ChannelBody {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        for step in script {
            match step {
                Step::Wait(d) => tokio::time::sleep(d).await,
                Step::Send(frame) => {
                    if tx.send(Ok(frame)).is_err() {
                        return;
                    }
                }
                Step::Reset => {
                    let _ = tx.send(Err(Box::new(ResetError) as BoxError));
                    return;
                }
                Step::Fail(failure) => {
                    let _ = tx.send(Err(Box::new(failure) as BoxError));
                    return;
                }
                Step::Hang => {
                    tx.closed().await;
                    return;
                }
            }
        }
    });
    ChannelBody { rx }
}

pub(crate) fn sse<B>(body: B) -> Response<B> {
    Response::builder()
        .header("content-type", "text/event-stream; charset=utf-8")
        .body(body)
        .unwrap()
}

pub(crate) fn request(path: &str) -> Request<()> {
    Request::post(format!("https://provider.example{path}"))
        .body(())
        .unwrap()
}

/// Calls a guard over a provider that answers once with `body`.
pub(crate) async fn call<B>(
    layer: StreamGuardLayer,
    path: &str,
    body: B,
) -> Result<Response<GuardBody<B>>, BoxError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    call_with(layer, request(path), body).await
}

/// [`call`] with a request of the test's own (another method, headers).
pub(crate) async fn call_with<B>(
    layer: StreamGuardLayer,
    request: Request<()>,
    body: B,
) -> Result<Response<GuardBody<B>>, BoxError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let mut body = Some(body);
    let provider = tower::service_fn(move |_req: Request<()>| {
        let body = body.take().expect("called once");
        async move { Ok::<_, Infallible>(sse(body)) }
    });
    layer.layer(provider).oneshot(request).await
}

/// What reading a guarded body to its end gave.
pub(crate) struct Drained {
    pub bytes: Vec<u8>,
    pub error: Option<Failure>,
    pub report: StreamReport,
}

/// The report handle a guarded response carries.
pub(crate) fn report_handle<B>(response: &Response<B>) -> StreamReportHandle {
    response
        .extensions()
        .get::<StreamReportHandle>()
        .cloned()
        .expect("a guarded stream has a report handle")
}

pub(crate) async fn drain<B>(response: Response<GuardBody<B>>) -> Drained
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let handle = report_handle(&response);
    let mut body = std::pin::pin!(response.into_body());
    let mut bytes = Vec::new();
    let mut error = None;
    while let Some(frame) = body.as_mut().frame().await {
        match frame {
            Ok(frame) => bytes.extend_from_slice(frame.data_ref().expect("data frame")),
            Err(e) => {
                let failure = Failure::downcast(e).expect("the body error is a Failure");
                assert!(
                    handle.get().is_some(),
                    "the report is written before the error is yielded"
                );
                error = Some(failure);
                break;
            }
        }
    }
    let report = handle.get().cloned().expect("the body ended");
    Drained {
        bytes,
        error,
        report,
    }
}

/// The failure a response future failed with.
pub(crate) fn failure_of<T: std::fmt::Debug>(result: Result<T, BoxError>) -> Failure {
    let error = result.expect_err("the guard fails before content");
    Failure::downcast(error).expect("the error is a Failure")
}

/// A case for a guard's bounds: its name, the guard, its script (a hang
/// is added at its end), when the guard cuts it (seconds) and a word of
/// the bound that does, as the cut's message names it.
pub(crate) type Cut = (&'static str, StreamGuardLayer, Vec<Step>, u64, &'static str);

/// `failure` came when (seconds) and from the bound the case `name` says.
fn assert_cut_at(failure: &Failure, name: &str, cut_at: u64, bound: &str) {
    assert_eq!(
        failure.evidence().elapsed,
        Some(Duration::from_secs(cut_at)),
        "{name}"
    );
    let message = failure.message().unwrap();
    assert!(message.contains(bound), "{name}: {message}");
}

/// Each case answered on `path`, cut before content: a retryable
/// timeout when and by the bound the case says.
pub(crate) async fn assert_cut_before_content(path: &str, cases: impl IntoIterator<Item = Cut>) {
    for (name, layer, mut script, cut_at, bound) in cases {
        script.push(Step::Hang);
        let failure = failure_of(call(layer, path, scripted(script)).await);
        assert_eq!(failure.code(), Code::Timeout, "{name}");
        assert_eq!(failure.action(), Action::Retry, "{name}");
        assert_cut_at(&failure, name, cut_at, bound);
    }
}

/// Each case answered on `path`, cut after content: the stream
/// interrupted when and by the bound the case says.
pub(crate) async fn assert_cut_after_content(path: &str, cases: impl IntoIterator<Item = Cut>) {
    for (name, layer, mut script, cut_at, bound) in cases {
        script.push(Step::Hang);
        let response = call(layer, path, scripted(script))
            .await
            .expect("content came first");
        let failure = drain(response).await.error.expect("cut");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{name}");
        assert_cut_at(&failure, name, cut_at, bound);
    }
}

#[allow(unused_imports)] // each test binary uses its own part
pub(crate) use seawall_test::canned::{
    OPENAI_DONE_EVENT as DONE, OPENAI_ROLE_EVENT as OPENAI_ROLE, OPENAI_STOP_EVENT as OPENAI_STOP,
    openai_delta_event as openai_delta,
};
pub(crate) const CHAT: &str = "/v1/chat/completions";
pub(crate) const MESSAGES: &str = "/v1/messages";
pub(crate) const RESPONSES: &str = "/v1/responses";
pub(crate) const GEMINI: &str = "/v1beta/models/gemini-x:streamGenerateContent";

/// What a fixture run came to.
pub(crate) enum Outcome {
    /// The future failed before content.
    Failed(Failure),
    /// The body was delivered (and ended well or badly).
    Delivered(Drained),
}

pub(crate) async fn run_framed(path: &str, fixture: &[u8], frame: usize) -> Outcome {
    let frames: Vec<Step> = fixture
        .chunks(frame)
        .map(|c| send(Bytes::copy_from_slice(c)))
        .collect();
    match call(StreamGuardLayer::interactive(), path, scripted(frames)).await {
        Ok(response) => Outcome::Delivered(drain(response).await),
        Err(e) => Outcome::Failed(Failure::downcast(e).expect("a Failure")),
    }
}

/// Runs the fixture whole and byte by byte, checks both agree (the
/// verdict, the finish, the counts, the usage; byte by byte, never an
/// event the whole run held back), returns the whole run.
pub(crate) async fn run(path: &str, fixture: &str) -> Outcome {
    let whole = match call(
        StreamGuardLayer::interactive(),
        path,
        Full::new(Bytes::copy_from_slice(fixture.as_bytes())),
    )
    .await
    {
        Ok(response) => Outcome::Delivered(drain(response).await),
        Err(e) => Outcome::Failed(Failure::downcast(e).expect("a Failure")),
    };
    let bytewise = run_framed(path, fixture.as_bytes(), 1).await;
    match (&whole, &bytewise) {
        (Outcome::Failed(a), Outcome::Failed(b)) => {
            assert_eq!((a.code(), a.class()), (b.code(), b.class()));
            assert_eq!(a.evidence().events, b.evidence().events);
        }
        (Outcome::Delivered(a), Outcome::Delivered(b)) => {
            // An error event is never handed on, nor anything after it.
            // Byte by byte, the lines of one before its blank line have
            // passed already: never a whole event a client dispatches.
            assert!(b.bytes.starts_with(&a.bytes));
            let mut dispatched = 0;
            seawall_stream::sse::Scanner::default()
                .feed(&b.bytes[a.bytes.len()..], |item| {
                    dispatched += usize::from(matches!(item, seawall_stream::sse::Item::Event(_)));
                })
                .unwrap();
            assert_eq!(dispatched, 0, "an event passed byte by byte only");
            assert_eq!(
                a.error.as_ref().map(Failure::code),
                b.error.as_ref().map(Failure::code)
            );
            assert_eq!(a.report.finish, b.report.finish);
            assert_eq!(a.report.content_events, b.report.content_events);
            assert_eq!(a.report.events, b.report.events);
            assert_eq!(a.report.usage, b.report.usage);
        }
        _ => panic!("whole and byte-by-byte runs disagree"),
    }
    whole
}

pub(crate) fn delivered(outcome: Outcome) -> Drained {
    match outcome {
        Outcome::Delivered(d) => d,
        Outcome::Failed(f) => panic!("expected a delivered stream, got {f}"),
    }
}

pub(crate) fn failed(outcome: Outcome) -> Failure {
    match outcome {
        Outcome::Failed(f) => f,
        Outcome::Delivered(d) => panic!("expected a failure before content, got {:?}", d.report),
    }
}
