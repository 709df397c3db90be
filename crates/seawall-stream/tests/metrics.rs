//! The interruptions the guard counts, read back from a debugging recorder
//! of this thread's own, on tokio's paused clock (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use std::time::Duration;

use common::*;
use metrics_util::debugging::DebuggingRecorder;
use seawall_core::Code;
use seawall_core::metric_names::{STREAM_INTERRUPTIONS_TOTAL, TOKENS_TOTAL};
use seawall_stream::StreamGuardLayer;
use seawall_test::metrics::{counter, snapshot};

/// A stream cut after content at the guard's own `max_duration` names no
/// cause on its record (the bound is the caller's: a breaker counts none
/// against the route), but the interruption is counted by what cut it,
/// the bound, `timeout`: never the `stream_interrupted` every such failure
/// carries.
#[tokio::test(start_paused = true)]
async fn a_max_duration_cut_is_counted_as_a_timeout() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let mut script = vec![send(OPENAI_ROLE)];
    for _ in 0..10 {
        script.push(wait(5.0));
        script.push(send(openai_delta("x")));
    }
    let layer = StreamGuardLayer::interactive().max_duration(Some(Duration::from_secs(12)));
    let d = drain(call(layer, CHAT, scripted(script)).await.unwrap()).await;
    let failure = d.error.expect("bounded");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.interrupted().expect("after content").cause, None);

    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 1);
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "timeout")]
        ),
        1
    );
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "stream_interrupted")]
        ),
        0
    );
}

/// A reset after content is counted as `transport`, as before: the label
/// for a cause the record names is that cause.
#[tokio::test(start_paused = true)]
async fn a_reset_after_content_is_counted_as_transport() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let script = vec![
        send(OPENAI_ROLE),
        send(openai_delta("x")),
        wait(1.0),
        Step::Reset,
    ];
    let d = drain(
        call(StreamGuardLayer::interactive(), CHAT, scripted(script))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(d.error.expect("reset").code(), Code::StreamInterrupted);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "transport")]
        ),
        1
    );
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 1);
}

/// A stored Responses answer read again as a stream (`GET
/// …/responses/{id}?stream=true`, a caller re-reading one) bills nothing:
/// its `response.completed` usage is the stored answer's, counted when it
/// was made, and the report still carries it. The same stream answering a
/// `POST` is the work billed, and its tokens are counted. (A resume's
/// retrieval after a cut continues the answer, its facts say so, and its
/// tokens are counted: `tests/operation_metrics.rs`.)
#[tokio::test(start_paused = true)]
async fn a_stored_answer_read_again_counts_no_tokens() {
    let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n";
    let completed = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"incomplete_details\":null,\"error\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"total_tokens\":15}},\"sequence_number\":2}\n\n";
    let read_again = http::Request::get(
        "https://provider.example/v1/responses/resp_1?stream=true&starting_after=0",
    )
    .body(())
    .unwrap();
    for (request, counted) in [(read_again, 0), (request(RESPONSES), 15)] {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _recording = metrics::set_default_local_recorder(&recorder);
        let method = request.method().clone();
        let response = call_with(
            StreamGuardLayer::interactive(),
            request,
            scripted(vec![send(delta), send(completed)]),
        )
        .await
        .expect("content arrives");
        let d = drain(response).await;
        assert!(d.error.is_none(), "{method}: {:?}", d.error);
        let usage = d.report.usage.expect("the report keeps the usage");
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (10, 5),
            "{method}"
        );
        let snapshot = snapshot(&snapshotter);
        assert_eq!(
            counter(&snapshot, TOKENS_TOTAL, &[]),
            counted,
            "{method}: tokens counted"
        );
    }
}
