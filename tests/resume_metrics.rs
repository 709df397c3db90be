//! A resumed stream's metrics, read back from a debugging recorder after a
//! real fault script over loopback: a resume is a retry of the caller's
//! operation, not an operation of its own.
#![cfg(all(feature = "metrics", feature = "resume"))]

mod common;

use metrics_util::MetricKind;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use seawall::core::metric_names::{ATTEMPTS_TOTAL, OPERATION_DURATION_SECONDS, RETRIES_TOTAL};
use seawall_chaos::answer_text;
use seawall_test::metrics::{counter, matching, snapshot};

/// A stream reset after 400 of its 600 tokens, resumed once: the caller
/// made one operation, recorded once (by the ladder that handed the
/// stream on at its first content), and the continuation is its one
/// retry, counted under the route whose stream was cut with the code the
/// cut carries. Before, the continuation's ladder recorded an operation
/// of its own and no retry.
#[test]
fn a_resume_is_a_retry_of_the_operation_not_another_operation() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let incident = common::resume::reset_stream_resumed().await;
                assert_eq!(incident.text, answer_text(600));
                assert_eq!(incident.resumed.count(), 1);
                assert_eq!(incident.chaos.journal().len(), 2);
            })
    });
    let snapshot = snapshot(&snapshotter);
    let samples = |outcome: &str| -> usize {
        matching(
            &snapshot,
            MetricKind::Histogram,
            OPERATION_DURATION_SECONDS,
            &[("outcome", outcome)],
        )
        .map(|value| match value {
            DebugValue::Histogram(samples) => samples.len(),
            _ => 0,
        })
        .sum()
    };
    // One operation, a success: the stream was handed on at its first
    // content.
    assert_eq!(
        [samples("success"), samples("failure"), samples("cancelled")],
        [1, 0, 0]
    );
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 1);
    // Under the route the cut stream's attempt was counted under.
    let route = snapshot
        .iter()
        .find(|(key, _)| key.key().name() == ATTEMPTS_TOTAL)
        .and_then(|(key, _)| key.key().labels().find(|l| l.key() == "route"))
        .map(|label| label.value().to_owned())
        .unwrap();
    assert_eq!(
        counter(
            &snapshot,
            RETRIES_TOTAL,
            &[("route", &route), ("code", "stream_interrupted")]
        ),
        1
    );
}
