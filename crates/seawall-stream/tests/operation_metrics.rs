//! What the guard counts for a stream whose end is decided around it: one
//! the operation's deadline cut (the deadline layer outside yields
//! `deadline_exceeded` and leaves this body to its caller to drop), and a
//! continuation of a cut answer read back by retrieval, read from a
//! debugging recorder of this thread's own on tokio's paused clock
//! (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use std::time::Duration;

use common::*;
use http_body_util::BodyExt;
use metrics_util::debugging::DebuggingRecorder;
use seawall_core::metric_names::{STREAM_INTERRUPTIONS_TOTAL, TOKENS_TOTAL};
use seawall_core::{AnswerBy, Code, Deadline, RequestFacts};
use seawall_stream::StreamGuardLayer;
use seawall_test::metrics::{counter, snapshot};

/// A chat stream sending a delta every second, for a minute.
fn slow_stream() -> Vec<Step> {
    let mut script = vec![send(OPENAI_ROLE)];
    for _ in 0..60 {
        script.push(send(openai_delta("x")));
        script.push(wait(1.0));
    }
    script
}

/// Reads two frames of a chat stream whose operation's deadline is 10 s
/// away (kept by its total bound, as the deadline layer keeps it, beside
/// a `Deadline` an attempt's bound narrowed to 2 s), then waits
/// `drop_after` and drops it unfinished, as a caller does once the
/// deadline layer around the body gave it `deadline_exceeded` (or for its
/// own reasons): what the guard reported, and the interruptions counted.
async fn dropped_after(drop_after: Duration) -> (Option<Code>, u64) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let mut request = request(CHAT);
    AnswerBy::keep_operation(&mut request, Some(Deadline::after(Duration::from_secs(10))));
    request
        .extensions_mut()
        .insert(Deadline::after(Duration::from_secs(2)));
    let response = call_with(
        StreamGuardLayer::interactive(),
        request,
        scripted(slow_stream()),
    )
    .await
    .expect("content arrives");
    let handle = report_handle(&response);
    let mut body = Box::pin(response.into_body());
    for _ in 0..2 {
        let frame = body.frame().await.expect("a frame").expect("content");
        assert!(frame.is_data());
    }
    tokio::time::sleep(drop_after).await;
    drop(body);
    let code = handle.get().expect("reported on drop").code;
    let snapshot = snapshot(&snapshotter);
    (code, counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]))
}

/// A stream still unfinished when the operation's deadline passed was
/// broken by it: the caller read `deadline_exceeded` mid-answer, and the
/// interruption is counted with that code. Dropped before the deadline
/// (past the attempt's bound, which the body runs past), it is the
/// caller's own stop: `cancelled`, no interruption.
#[tokio::test(start_paused = true)]
async fn a_stream_dropped_past_the_operations_deadline_was_cut_by_it() {
    let (code, counted) = dropped_after(Duration::from_secs(15)).await;
    assert_eq!(code, Some(Code::DeadlineExceeded));
    assert_eq!(counted, 1);

    let (code, counted) = dropped_after(Duration::from_secs(4)).await;
    assert_eq!(code, Some(Code::Cancelled));
    assert_eq!(counted, 0);
}

/// A request whose operation's deadline is not known (none kept beside
/// its `Deadline`, which a layer outside may have narrowed to a bound the
/// body runs past) dropped unfinished is the caller's stop, however late.
#[tokio::test(start_paused = true)]
async fn a_stream_without_a_kept_deadline_dropped_late_is_cancelled() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let mut request = request(CHAT);
    request
        .extensions_mut()
        .insert(Deadline::after(Duration::from_secs(2)));
    let response = call_with(
        StreamGuardLayer::interactive(),
        request,
        scripted(slow_stream()),
    )
    .await
    .expect("content arrives");
    let handle = report_handle(&response);
    let mut body = Box::pin(response.into_body());
    body.frame().await.expect("a frame").expect("content");
    tokio::time::sleep(Duration::from_secs(30)).await;
    drop(body);
    assert_eq!(handle.get().expect("reported").code, Some(Code::Cancelled));
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 0);
}

const DELTA: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":9}\n\n";
const COMPLETED: &str = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"incomplete_details\":null,\"error\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}},\"sequence_number\":10}\n\n";

/// A background stream cut after content is continued by retrieving the
/// stored stream after the last event read (`GET
/// …/responses/{id}?stream=true&starting_after=N`, its facts saying it
/// continues): the cut stream saw no usage (only the terminal event
/// carries it), so the retrieval's `response.completed` usage is the
/// whole answer's, counted here once. The same `GET` without those facts
/// (a stored answer read again) counts nothing.
#[tokio::test(start_paused = true)]
async fn a_retrieved_continuation_counts_the_answers_tokens() {
    for (continues, counted) in [(true, 15), (false, 0)] {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _recording = metrics::set_default_local_recorder(&recorder);
        let mut request = http::Request::get(
            "https://provider.example/v1/responses/resp_1?stream=true&starting_after=8",
        )
        .body(())
        .unwrap();
        if continues {
            let facts = RequestFacts::of_request(&request).continuing();
            request.extensions_mut().insert(facts);
        }
        let response = call_with(
            StreamGuardLayer::interactive(),
            request,
            scripted(vec![send(DELTA), send(COMPLETED)]),
        )
        .await
        .expect("content arrives");
        let d = drain(response).await;
        assert!(d.error.is_none(), "{continues}: {:?}", d.error);
        let snapshot = snapshot(&snapshotter);
        assert_eq!(
            counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]),
            if continues { 10 } else { 0 },
            "{continues}: input tokens"
        );
        assert_eq!(
            counter(&snapshot, TOKENS_TOTAL, &[]),
            counted,
            "{continues}: tokens counted"
        );
    }
}
