//! A Responses API background stream is retrieved from the provider's
//! store (`GET /v1/responses/{id}?stream=true&starting_after=N`) only when
//! the *connection* was cut. A stream the provider ended with its own
//! error (`response.failed`, an `error` event) failed in storage too: its
//! stored events after the cursor are that failure again, so a retrieval
//! would only replay it, a request per resume. Such a cut is continued as
//! one not in the background: a generated continuation within its limits,
//! or the interruption.
//!
//! End to end through the layer, the retry ladder, the stream guard and the
//! classifier, over a scripted provider that keeps its streams as the API
//! does.

mod common;
#[path = "common/stored_stream.rs"]
mod stored_stream;

use common::quick_ladder;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use stored_stream::{ID, WORDS, answer, background, event, read_events, renumbered, stream};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_classify::ClassifyLayer;
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Code, Failure};
use seawall_resume::{ResumeLayer, ResumeReport, Resumed};
use seawall_stream::StreamGuardLayer;
use seawall_test::body::Chunks;
use serde_json::{Value, json};
use tower::{Service, ServiceBuilder, ServiceExt};

/// The original is cut after the preamble (events 0 ..= 3) and five words.
const CUT: usize = 9;

/// How the provider ends the creating POST's stream after [`CUT`] events.
#[derive(Clone, Copy, Debug)]
enum End {
    /// `response.failed`, the response's `error` a `server_error`.
    Failed,
    /// `response.failed` with a `vector_store_timeout`: the provider's own
    /// timeout, which the guard reads as a timeout closed by them.
    FailedTimeout,
    /// An `error` event saying `server_error`.
    ErrorEvent,
    /// The connection reset.
    Reset,
    /// Silence until the guard's idle bound closes the connection.
    Silent,
}

impl End {
    /// The provider's own failure event, numbered `seq`, if it sends one.
    fn failure(self, seq: usize) -> Option<String> {
        let failed = |code: &str| {
            let response = json!({"id": ID, "object": "response", "status": "failed",
                "error": {"code": code, "message": "The server had an error."}, "output": []});
            event("response.failed", json!({"response": response}), seq)
        };
        match self {
            End::Failed => Some(failed("server_error")),
            End::FailedTimeout => Some(failed("vector_store_timeout")),
            End::ErrorEvent => Some(event(
                "error",
                json!({"code": "server_error", "message": "The server had an error.",
                    "param": null}),
                seq,
            )),
            End::Reset | End::Silent => None,
        }
    }

    /// What the provider keeps of the response: the whole answer when
    /// only the connection was cut, the failure where it failed.
    fn stored(self) -> Vec<String> {
        match self.failure(CUT) {
            Some(failure) => stream()[..CUT].iter().cloned().chain([failure]).collect(),
            None => stream(),
        }
    }
}

/// A request the provider saw.
#[derive(Clone, Debug)]
struct Seen {
    method: http::Method,
    target: String,
    body: Bytes,
}

/// A provider that keeps its streams as the API does: the creating POST
/// is ended by `end` after [`CUT`] events; a retrieval gets the stored
/// events after its cursor; a generated continuation (a later POST) the
/// words after those its input holds, as a new response — the first one
/// reset after `continuation_cut` words when set.
#[derive(Clone)]
struct Upstream {
    end: End,
    continuation_cut: Option<usize>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    fn new(end: End) -> Self {
        Upstream {
            end,
            continuation_cut: None,
            seen: Arc::default(),
        }
    }

    fn answer(&self, seen: &Seen, posts: usize) -> Chunks {
        let all = stream();
        if seen.method == http::Method::GET {
            let after: usize = seen
                .target
                .split("starting_after=")
                .nth(1)
                .and_then(|rest| rest.split('&').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            let stored = self.end.stored();
            return Chunks::new(stored.get(after + 1..).unwrap_or_default().to_vec());
        }
        if posts == 1 {
            let shown = Chunks::new(all[..CUT].to_vec());
            return match self.end {
                End::Reset => shown.then_error(io::ErrorKind::ConnectionReset),
                End::Silent => shown.then_pending(),
                end => Chunks::new(all[..CUT].iter().cloned().chain(end.failure(CUT))),
            };
        }
        // A generated continuation: the words after those it was given.
        let body = String::from_utf8_lossy(&seen.body);
        let given = (1..=WORDS)
            .take_while(|n| body.contains(&format!("w{n}")))
            .count();
        let fresh = renumbered(
            all[..4].iter().chain(&all[4 + given..]),
            &format!("resp_cont{posts}"),
        );
        match self.continuation_cut.filter(|_| posts == 2) {
            Some(words) => {
                Chunks::new(fresh[..4 + words].to_vec()).then_error(io::ErrorKind::ConnectionReset)
            }
            None => Chunks::new(fresh),
        }
    }

    fn methods(&self) -> Vec<http::Method> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|seen| seen.method.clone()).collect()
    }
}

impl<B> Service<http::Request<B>> for Upstream
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Chunks>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let provider = self.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await.map_err(Into::into)?.to_bytes();
            let seen = Seen {
                method: parts.method,
                target: parts.uri.path_and_query().unwrap().to_string(),
                body,
            };
            let posts = {
                let mut all = provider.seen.lock().unwrap();
                all.push(seen.clone());
                all.iter()
                    .filter(|seen| seen.method == http::Method::POST)
                    .count()
            };
            let body = provider.answer(&seen, posts);
            Ok(http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(body)
                .unwrap())
        })
    }
}

struct Read {
    text: String,
    sequence: Vec<u64>,
    error: Option<BoxError>,
    report: ResumeReport,
}

/// Generous on tokio's paused clock: only a stuck body reaches it.
const PATIENCE: Duration = Duration::from_secs(3600);

async fn run(provider: &Upstream, body: Value) -> Read {
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .layer(quick_ladder())
        .layer(StreamGuardLayer::interactive())
        .layer(ClassifyLayer::for_provider(Provider::OpenAiResponses))
        .service(provider.clone());
    let request = http::Request::post("https://api.openai.com/v1/responses")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, service.oneshot(request))
        .await
        .unwrap()
        .unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let (text, sequence, error) = read_events(response.into_body(), PATIENCE).await;
    Read {
        text,
        sequence,
        error,
        report: resumed.report(),
    }
}

const GET: http::Method = http::Method::GET;
const POST: http::Method = http::Method::POST;

/// The provider's own failure in the stream is not retrieved (its stored
/// stream holds it again): the answer goes on by a generated continuation,
/// as one not in the background would, and reads whole and in order.
#[tokio::test(start_paused = true)]
async fn a_stream_the_provider_failed_is_continued_not_retrieved() {
    for end in [End::Failed, End::FailedTimeout, End::ErrorEvent] {
        let provider = Upstream::new(end);
        let read = run(&provider, background(false)).await;
        assert_eq!(provider.methods(), [POST, POST], "{end:?}: no retrieval");
        assert!(read.error.is_none(), "{end:?}: {:?}", read.error);
        assert_eq!(read.text, answer(), "{end:?}");
        let all: Vec<u64> = (0..stream().len() as u64).collect();
        assert_eq!(read.sequence, all, "{end:?}: renumbered as one stream");
        let seen = provider.seen.lock().unwrap();
        let continued: Value = serde_json::from_slice(&seen[1].body).unwrap();
        assert!(continued["input"].to_string().contains("w5"), "{continued}");
        let report = &read.report;
        assert_eq!(report.resumes.len(), 1, "{end:?}: {report:?}");
        let record = &report.resumes[0];
        assert!(!record.retrieved && record.spliced, "{end:?}: {record:?}");
        assert_eq!(report.gave_up, None, "{end:?}");
    }
}

/// Where a generated continuation is not allowed (structured output, as
/// for a request not in the background), the provider's own failure ends
/// the answer with the interruption at once: no retrieval that would only
/// replay it, `gave_up` saying why, the delivered text in its record.
#[tokio::test(start_paused = true)]
async fn a_failed_stream_a_continuation_cannot_fix_ends_with_the_failure() {
    for end in [End::Failed, End::ErrorEvent] {
        let provider = Upstream::new(end);
        let read = run(&provider, background(true)).await;
        assert_eq!(provider.methods(), [POST], "{end:?}: nothing more sent");
        let error = read.error.expect("the interruption");
        let failure = Failure::find(&*error).expect("a failure");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{failure:?}");
        let interrupted = failure.interrupted().unwrap();
        assert_eq!(interrupted.cause, Some(Code::ProviderUnavailable));
        assert_eq!(
            interrupted.delivered_text.as_deref(),
            Some("w1 w2 w3 w4 w5 ")
        );
        assert_eq!(read.text, "w1 w2 w3 w4 w5 ");
        assert_eq!(read.report.gave_up, Some("structured_output"));
        assert!(read.report.resumes.is_empty(), "{:?}", read.report);
    }
}

/// A cut of the connection (a reset, the guard's idle bound) still
/// retrieves the stored stream after the last event read: the rest as
/// stored, structured output no obstacle.
#[tokio::test(start_paused = true)]
async fn a_cut_connection_still_retrieves_the_stored_stream() {
    for (end, cause) in [
        (End::Reset, Code::Transport),
        (End::Silent, Code::IdleTimeout),
    ] {
        let provider = Upstream::new(end);
        let read = run(&provider, background(true)).await;
        assert_eq!(provider.methods(), [POST, GET], "{end:?}");
        let seen = provider.seen.lock().unwrap();
        assert_eq!(
            seen[1].target,
            format!("/v1/responses/{ID}?stream=true&starting_after=8")
        );
        assert!(read.error.is_none(), "{end:?}: {:?}", read.error);
        assert_eq!(read.text, answer(), "{end:?}");
        let all: Vec<u64> = (0..stream().len() as u64).collect();
        assert_eq!(read.sequence, all, "{end:?}: every event once, as stored");
        let record = &read.report.resumes[0];
        assert!(record.retrieved && record.spliced, "{end:?}: {record:?}");
        assert_eq!(record.cause, cause, "{end:?}");
    }
}

/// Past a generated continuation the caller reads the continuation's
/// events, renumbered: a later cut of its connection is continued by
/// another generated one, never by retrieving the original's (failed)
/// stored stream at a cursor of the renumbered events.
#[tokio::test(start_paused = true)]
async fn a_cut_after_a_generated_continuation_is_not_retrieved_from_the_original() {
    let mut provider = Upstream::new(End::Failed);
    provider.continuation_cut = Some(3);
    let read = run(&provider, background(false)).await;
    assert_eq!(provider.methods(), [POST, POST, POST]);
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer());
    let all: Vec<u64> = (0..stream().len() as u64).collect();
    assert_eq!(read.sequence, all, "renumbered as one stream");
    let seen = provider.seen.lock().unwrap();
    let last: Value = serde_json::from_slice(&seen[2].body).unwrap();
    assert!(last["input"].to_string().contains("w8"), "{last}");
    let report = &read.report;
    assert_eq!(report.resumes.len(), 2, "{report:?}");
    assert_eq!(report.resumes[1].cause, Code::Transport);
    assert!(report.resumes.iter().all(|r| !r.retrieved && r.spliced));
}
