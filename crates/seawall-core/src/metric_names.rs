//! The metrics seawall's layers record, by name, in one place.
//!
//! The layers record through the [`metrics`](https://docs.rs/metrics)
//! facade when their `metrics` feature is on (the facade crate's `metrics`
//! feature turns it on for all of them); with it off nothing is compiled
//! in. Labels take only bounded values: route names and stable codes —
//! never model output, prompts, URLs or keys.
//!
//! | name | kind | labels | recorded by |
//! |---|---|---|---|
//! | `seawall_attempts_total` | counter | `route`, `code` (`ok` on success; `cancelled` for an attempt in flight when its caller stopped waiting), `outcome` (`success`/`failure`/`cancelled`, the last with the code `cancelled`) | the retry ladder, per attempt; the fallback, per attempt of a route without a ladder of its own |
//! | `seawall_retries_total` | counter | `route`, `code` | the retry ladder, per retry decided |
//! | `seawall_retry_budget_exhausted_total` | counter | — | the retry ladder |
//! | `seawall_operation_duration_seconds` | histogram | `outcome` (`success`/`failure`/`cancelled`) | the retry ladder, per operation |
//! | `seawall_breaker_transitions_total` | counter | `route`, `to` | the breaker |
//! | `seawall_breakers_open` | gauge | — | the breaker: routes open or isolated |
//! | `seawall_fallbacks_total` | counter | `from`, `to`, `code` | the fallback |
//! | `seawall_stream_interruptions_total` | counter | `route`, `code` (the cause) | the stream guard |
//! | `seawall_time_to_first_byte_seconds` | histogram | — | the stream guard |
//! | `seawall_time_to_first_content_seconds` | histogram | — | the stream guard |
//! | `seawall_tokens_total` | counter | `route`, `kind` (`input`/`output`) | the retry ladder (unary), the fallback (unary, on a route without a ladder of its own), the stream guard (streams) |
//!
//! For a stream the ladder's verdict, and so its attempt's `ok` and its
//! operation's `success` and duration, is where the stream guard hands it
//! on (its first content event, as a rule): past it nothing is retried.
//! A break after that is counted by `seawall_stream_interruptions_total`
//! alone, so an error rate over streams adds the two, and a stream's
//! operation duration ends where it was handed on.
//!
//! Histograms should be exported as histograms, not summaries: give the
//! exporter [`SECONDS_BUCKETS`] (`metrics-exporter-prometheus`:
//! `set_buckets(SECONDS_BUCKETS)`). For each metric's help line and unit
//! (`# HELP` in Prometheus' text format), call [`describe`] once the
//! exporter's recorder is installed.

/// Upstream attempts.
pub const ATTEMPTS_TOTAL: &str = "seawall_attempts_total";
/// Retries the ladder decided on.
pub const RETRIES_TOTAL: &str = "seawall_retries_total";
/// Retries the budget refused.
pub const RETRY_BUDGET_EXHAUSTED_TOTAL: &str = "seawall_retry_budget_exhausted_total";
/// Whole operations, from the ladder's first call to its verdict (a
/// stream's verdict is where it is handed on).
pub const OPERATION_DURATION_SECONDS: &str = "seawall_operation_duration_seconds";
/// Breaker state changes.
pub const BREAKER_TRANSITIONS_TOTAL: &str = "seawall_breaker_transitions_total";
/// Routes whose breaker is open or isolated.
pub const BREAKERS_OPEN: &str = "seawall_breakers_open";
/// Fallbacks taken.
pub const FALLBACKS_TOTAL: &str = "seawall_fallbacks_total";
/// Streams interrupted after content.
pub const STREAM_INTERRUPTIONS_TOTAL: &str = "seawall_stream_interruptions_total";
/// From the call to a stream's first body byte.
pub const TIME_TO_FIRST_BYTE_SECONDS: &str = "seawall_time_to_first_byte_seconds";
/// From the call to a stream's first content event.
pub const TIME_TO_FIRST_CONTENT_SECONDS: &str = "seawall_time_to_first_content_seconds";
/// Tokens the providers reported.
pub const TOKENS_TOTAL: &str = "seawall_tokens_total";

/// Bucket bounds for the `_seconds` histograms: 5 ms to 10 min.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Describes every metric above to the recorder installed now: its kind,
/// its unit and a line of help (the `# HELP` line of Prometheus' text
/// format). Call it once the recorder is installed: a recorder keeps what
/// it was told, and one installed later learns nothing. Cheap, and harmless
/// to call again (each call describes the same again). Without the
/// `metrics` feature it does nothing.
pub fn describe() {
    #[cfg(feature = "metrics")]
    {
        use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
        describe_counter!(
            ATTEMPTS_TOTAL,
            Unit::Count,
            "Upstream attempts, by route, stable code (ok on success) and outcome (success, failure, or cancelled when its caller stopped waiting)."
        );
        describe_counter!(
            RETRIES_TOTAL,
            Unit::Count,
            "Retries the retry ladder decided on, by route and the code that caused them."
        );
        describe_counter!(
            RETRY_BUDGET_EXHAUSTED_TOTAL,
            Unit::Count,
            "Retries the retry budget refused."
        );
        describe_histogram!(
            OPERATION_DURATION_SECONDS,
            Unit::Seconds,
            "Whole operations, from the retry ladder's first call to its verdict, by outcome (success, failure, cancelled)."
        );
        describe_counter!(
            BREAKER_TRANSITIONS_TOTAL,
            Unit::Count,
            "Circuit breaker state changes, by route and the state entered."
        );
        describe_gauge!(
            BREAKERS_OPEN,
            Unit::Count,
            "Routes whose circuit breaker is open or isolated."
        );
        describe_counter!(
            FALLBACKS_TOTAL,
            Unit::Count,
            "Fallbacks taken, by the route left, the route taken and the code that caused them."
        );
        describe_counter!(
            STREAM_INTERRUPTIONS_TOTAL,
            Unit::Count,
            "Streams interrupted after content, by route and the code of what broke them."
        );
        describe_histogram!(
            TIME_TO_FIRST_BYTE_SECONDS,
            Unit::Seconds,
            "Time from the call to a stream's first body byte."
        );
        describe_histogram!(
            TIME_TO_FIRST_CONTENT_SECONDS,
            Unit::Seconds,
            "Time from the call to a stream's first content event."
        );
        describe_counter!(
            TOKENS_TOTAL,
            Unit::Count,
            "Tokens the providers reported, by route and kind (input, output)."
        );
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };

    /// One description: name, kind, unit, help.
    type Told = (String, &'static str, Option<Unit>, String);

    /// What `describe` told a recorder, in order.
    #[derive(Default)]
    struct Descriptions(Mutex<Vec<Told>>);

    impl Descriptions {
        fn told(&self, name: KeyName, kind: &'static str, unit: Option<Unit>, help: SharedString) {
            self.0
                .lock()
                .unwrap()
                .push((name.as_str().to_owned(), kind, unit, help.to_string()));
        }
    }

    impl Recorder for Descriptions {
        fn describe_counter(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
            self.told(name, "counter", unit, help);
        }
        fn describe_gauge(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
            self.told(name, "gauge", unit, help);
        }
        fn describe_histogram(&self, name: KeyName, unit: Option<Unit>, help: SharedString) {
            self.told(name, "histogram", unit, help);
        }
        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            Counter::noop()
        }
        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// This module's source: its name constants and its table are read
    /// from it, so a name added without a description fails here.
    const SOURCE: &str = include_str!("metric_names.rs");

    /// Every `pub const …: &str` name of this module.
    fn names() -> Vec<&'static str> {
        SOURCE
            .lines()
            .filter_map(|line| line.strip_prefix("pub const "))
            .filter_map(|line| line.split_once(": &str = \""))
            .filter_map(|(_, rest)| rest.split_once('"'))
            .map(|(name, _)| name)
            .collect()
    }

    /// The kind the module's table gives each name.
    fn table() -> BTreeMap<&'static str, &'static str> {
        SOURCE
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `"))
            .filter_map(|line| {
                let (name, rest) = line.split_once('`')?;
                let kind = rest.split('|').nth(1)?.trim();
                Some((name, kind))
            })
            .collect()
    }

    #[test]
    fn every_name_is_described_with_its_kind_and_unit() {
        let names = names();
        let table = table();
        assert!(names.len() >= 11, "the names were read: {names:?}");
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            table.keys().copied().collect::<Vec<_>>(),
            "every name is in the table, and every name in the table is a constant"
        );

        let told = Descriptions::default();
        metrics::with_local_recorder(&told, super::describe);
        let once = told.0.lock().unwrap().clone();
        for name in &names {
            let of_name: Vec<_> = once.iter().filter(|(n, ..)| n == name).collect();
            assert_eq!(of_name.len(), 1, "{name} described once: {once:?}");
            let (_, kind, unit, help) = of_name[0];
            assert_eq!(*kind, table[name], "{name} described as its kind");
            assert!(!help.trim().is_empty(), "{name} has help");
            let seconds = name.ends_with("_seconds");
            assert_eq!(
                *unit,
                Some(if seconds { Unit::Seconds } else { Unit::Count }),
                "{name}'s unit"
            );
        }
        assert_eq!(once.len(), names.len(), "only seawall's names: {once:?}");

        // Again: the same descriptions, nothing else.
        metrics::with_local_recorder(&told, super::describe);
        let twice = told.0.lock().unwrap().clone();
        assert_eq!(twice[..once.len()], once[..]);
        assert_eq!(twice[once.len()..], once[..]);
    }
}
