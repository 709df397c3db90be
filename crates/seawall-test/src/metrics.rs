//! Reading back what a `metrics-util` [`DebuggingRecorder`] recorded: the
//! metrics of one name and kind carrying given labels, and counters summed
//! over the labels not asked for.
//!
//! [`DebuggingRecorder`]: metrics_util::debugging::DebuggingRecorder

use metrics_util::debugging::{DebugValue, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};

/// Every metric recorded so far, by key. A snapshot reads counters and
/// gauges by resetting them: take one per assertion block.
pub fn snapshot(snapshotter: &Snapshotter) -> Vec<(CompositeKey, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key, value))
        .collect()
}

/// The values of the metric `name` of `kind` with every label in `labels`
/// (and any others).
pub fn matching<'a>(
    snapshot: &'a [(CompositeKey, DebugValue)],
    kind: MetricKind,
    name: &'a str,
    labels: &'a [(&str, &str)],
) -> impl Iterator<Item = &'a DebugValue> {
    snapshot
        .iter()
        .filter(move |(key, _)| key.kind() == kind && key.key().name() == name)
        .filter(|(key, _)| {
            labels.iter().all(|(k, v)| {
                key.key()
                    .labels()
                    .any(|label| label.key() == *k && label.value() == *v)
            })
        })
        .map(|(_, value)| value)
}

/// The counter `name` with every label in `labels`, summed over the rest.
pub fn counter(
    snapshot: &[(CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> u64 {
    matching(snapshot, MetricKind::Counter, name, labels)
        .map(|value| match value {
            DebugValue::Counter(n) => *n,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::DebuggingRecorder;

    use super::{counter, snapshot};

    #[test]
    fn counters_sum_over_the_labels_not_asked_for() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            metrics::counter!("calls", "code" => "a", "route" => "x").increment(2);
            metrics::counter!("calls", "code" => "a", "route" => "y").increment(3);
            metrics::counter!("calls", "code" => "b").increment(5);
            metrics::gauge!("calls").set(7.0);
        });
        let snapshot = snapshot(&snapshotter);
        assert_eq!(counter(&snapshot, "calls", &[]), 10);
        assert_eq!(counter(&snapshot, "calls", &[("code", "a")]), 5);
        assert_eq!(
            counter(&snapshot, "calls", &[("code", "a"), ("route", "y")]),
            3
        );
        assert_eq!(counter(&snapshot, "calls", &[("code", "c")]), 0);
        assert_eq!(counter(&snapshot, "other", &[]), 0);
    }
}
