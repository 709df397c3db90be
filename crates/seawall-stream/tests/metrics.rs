//! The interruptions the guard counts, read back from a recorder of this
//! thread's own, on tokio's paused clock (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use seawall_core::Code;
use seawall_core::metric_names::STREAM_INTERRUPTIONS_TOTAL;
use seawall_stream::StreamGuardLayer;

/// The counters recorded into it, by name and labels. (The crate's own
/// dependencies hold only the `metrics` facade, so the recorder is this
/// one rather than a debugging recorder.)
#[derive(Default)]
struct Counters(Mutex<HashMap<Key, Arc<AtomicU64>>>);

impl Counters {
    /// The counter `name` with `label` set to `value`, summed over the rest.
    fn count(&self, name: &str, label: &str, value: &str) -> u64 {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(key, _)| key.name() == name)
            .filter(|(key, _)| key.labels().any(|l| l.key() == label && l.value() == value))
            .map(|(_, n)| n.load(Ordering::Relaxed))
            .sum()
    }

    /// The counter `name`, summed over its labels.
    fn total(&self, name: &str) -> u64 {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(key, _)| key.name() == name)
            .map(|(_, n)| n.load(Ordering::Relaxed))
            .sum()
    }
}

impl Recorder for Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.0.lock().unwrap();
        Counter::from_arc(counters.entry(key.clone()).or_default().clone())
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// A stream cut after content at the guard's own `max_duration` names no
/// cause on its record (the bound is the caller's: a breaker counts none
/// against the route), but the interruption is counted by what cut it,
/// the bound, `timeout`: never the `stream_interrupted` every such failure
/// carries.
#[tokio::test(start_paused = true)]
async fn a_max_duration_cut_is_counted_as_a_timeout() {
    let counters = Counters::default();
    let _recording = metrics::set_default_local_recorder(&counters);
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

    assert_eq!(counters.total(STREAM_INTERRUPTIONS_TOTAL), 1);
    assert_eq!(
        counters.count(STREAM_INTERRUPTIONS_TOTAL, "code", "timeout"),
        1
    );
    assert_eq!(
        counters.count(STREAM_INTERRUPTIONS_TOTAL, "code", "stream_interrupted"),
        0
    );
}

/// A reset after content is counted as `transport`, as before: the label
/// for a cause the record names is that cause.
#[tokio::test(start_paused = true)]
async fn a_reset_after_content_is_counted_as_transport() {
    let counters = Counters::default();
    let _recording = metrics::set_default_local_recorder(&counters);
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
    assert_eq!(
        counters.count(STREAM_INTERRUPTIONS_TOTAL, "code", "transport"),
        1
    );
    assert_eq!(counters.total(STREAM_INTERRUPTIONS_TOTAL), 1);
}
