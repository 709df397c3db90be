//! A stream the operation's total deadline cuts mid-answer, under the
//! plain stack (total deadline, retry ladder, per-attempt bound, stream
//! guard) with no caller's `AnswerBy`: the guard reads the operation's
//! deadline from the slots the ladder made for the operation (the
//! request's `Deadline` reaching it is narrowed to the attempt's bound),
//! and reports the cut as `deadline_exceeded`, an interruption, not as its
//! caller's `cancelled`. On tokio's paused clock, over an in-memory
//! provider (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use metrics_util::debugging::{DebuggingRecorder, Snapshotter};
use seawall::classify::ClassifyLayer;
use seawall::core::metric_names::STREAM_INTERRUPTIONS_TOTAL;
use seawall::core::{Code, Failure, RouteId};
use seawall::fallback::{FallbackLayer, FallbackRoute};
use seawall::resume::ResumeLayer;
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::{StreamGuardLayer, StreamReportHandle};
use seawall_test::metrics::{counter, snapshot};
use tower::ServiceExt;

/// The operation's total deadline.
const TOTAL: Duration = Duration::from_millis(500);
/// Each attempt's bound: shorter than the operation, so the `Deadline`
/// the guard finds is the attempt's, not the operation's.
const ATTEMPT: Duration = Duration::from_millis(300);

/// One OpenAI chat chunk with content, then nothing more: the stream
/// stalls (no end, no error) until someone gives up on it.
const CONTENT: &str = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n";

/// Runs `body` on a current-thread runtime on the paused clock, with a
/// debugging recorder as this thread's recorder; returns the snapshotter.
fn recorded(body: impl std::future::Future<Output = ()>) -> Snapshotter {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(body)
    });
    snapshotter
}

/// The plain stack: a total deadline, a ladder of three attempts each
/// bounded, a guard whose own bounds are far beyond the operation's (so
/// only the operation's deadline cuts the stalled stream).
fn stack() -> Stack {
    Stack::interactive()
        .total_deadline(TOTAL)
        .attempt_timeout(ATTEMPT)
        .retry_policy(RetryPolicy::interactive().backoff(Backoff::exponential(
            Duration::from_millis(5),
            Duration::from_millis(20),
        )))
        .budget(Budget::unlimited())
        .stream_guard(
            StreamGuardLayer::interactive()
                .first_byte_timeout(Duration::from_secs(10))
                .first_content_timeout(Duration::from_secs(10))
                .idle_timeout(Duration::from_secs(10)),
        )
}

/// A streamed chat completion.
fn chat() -> http::Request<Full<Bytes>> {
    http::Request::post("http://provider.example/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .expect("a request")
}

/// The stream `service` answers [`chat`] with: the guard's report handle
/// and the body, to read.
async fn streamed<S, B>(service: S) -> (StreamReportHandle, std::pin::Pin<Box<B>>)
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
{
    let response = service.oneshot(chat()).await.expect("an answer");
    let report = response
        .extensions()
        .get::<StreamReportHandle>()
        .cloned()
        .expect("the guard's report");
    (report, Box::pin(response.into_body()))
}

/// Reads the stream `service` answers [`chat`] with until the operation's
/// deadline cuts it after its content: the caller reads
/// `deadline_exceeded` mid-answer, and the guard reports the same once the
/// caller drops the body, and counts the interruption (checked by the
/// caller of this on the recorder).
async fn cut_by_the_operations_deadline<S, B>(service: S)
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>>,
    S::Error: std::fmt::Debug,
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<tower::BoxError>,
{
    let started = tokio::time::Instant::now();
    let (report, mut body) = streamed(service).await;
    let mut content = 0;
    let error = loop {
        match body.frame().await {
            Some(Ok(_)) => content += 1,
            Some(Err(error)) => break error.into(),
            None => panic!("the stream ended before the deadline cut it"),
        }
    };
    assert!(content > 0, "content came before the deadline");
    assert_eq!(started.elapsed(), TOTAL, "cut at the operation's deadline");
    let failure = Failure::find(&*error).expect("a failure");
    assert_eq!(failure.code(), Code::DeadlineExceeded);
    drop(body);
    let report = report.get().expect("reported once dropped");
    assert_eq!(report.code, Some(Code::DeadlineExceeded), "{report:?}");
}

/// One interruption, `deadline_exceeded`, in `snapshotter`.
fn one_deadline_interruption(snapshotter: &Snapshotter) {
    let snapshot = snapshot(snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "deadline_exceeded")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 1);
}

/// The plain stack: the ladder made the operation's slots, with the
/// operation's deadline as the ladder received it. The `Deadline` the
/// guard found was the attempt's, and no caller's `AnswerBy` made the
/// deadline layer keep the operation's.
#[test]
fn a_stream_cut_by_the_operations_deadline_is_an_interruption_without_an_answer_by() {
    let snapshotter = recorded(async {
        let service = stack().build(&ClassifyLayer::openai(), common::timed::stalling(CONTENT));
        cut_by_the_operations_deadline(service).await;
    });
    one_deadline_interruption(&snapshotter);
}

/// Under a fallback, which makes the operation's slots before the
/// primary's ladder narrows the `Deadline` to its reserve's window.
#[test]
fn a_stream_cut_by_the_operations_deadline_under_a_fallback_is_an_interruption() {
    let snapshotter = recorded(async {
        let stack = stack();
        let classify = ClassifyLayer::openai();
        let fallback = FallbackLayer::chain([FallbackRoute::new(
            stack.attempt(&classify, common::timed::stalling(CONTENT)),
        )
        .route(RouteId::new("spare"))]);
        let service =
            stack.build_with_fallback(&classify, common::timed::stalling(CONTENT), fallback);
        cut_by_the_operations_deadline(service).await;
    });
    one_deadline_interruption(&snapshotter);
}

/// Under a resume layer, which makes the operation's slots (the
/// continuation's ladder would find them) before the ladder does.
#[test]
fn a_stream_cut_by_the_operations_deadline_under_a_resume_is_an_interruption() {
    let snapshotter = recorded(async {
        let service = stack()
            .resume(ResumeLayer::new())
            .build(&ClassifyLayer::openai(), common::timed::stalling(CONTENT));
        cut_by_the_operations_deadline(service).await;
    });
    one_deadline_interruption(&snapshotter);
}

/// A caller that stops reading before the operation's deadline gave up
/// on the answer itself: `cancelled`, no interruption — the operation's
/// deadline the slots carry does not make every drop a cut.
#[test]
fn a_stream_dropped_before_the_operations_deadline_is_the_callers_cancel() {
    let snapshotter = recorded(async {
        let service = stack().build(&ClassifyLayer::openai(), common::timed::stalling(CONTENT));
        let (report, mut body) = streamed(service).await;
        let first = body.frame().await.expect("a frame").expect("content");
        assert!(first.is_data());
        // Past the attempt's bound, before the operation's deadline.
        tokio::time::sleep(Duration::from_millis(400)).await;
        drop(body);
        let report = report.get().expect("reported once dropped");
        assert_eq!(report.code, Some(Code::Cancelled), "{report:?}");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]),
        0,
        "{snapshot:?}"
    );
}
