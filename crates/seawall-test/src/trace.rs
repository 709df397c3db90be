//! A recording tracing layer: every event and every span the code under
//! test emits, with its fields as strings, for suites that assert what
//! seawall tells a subscriber.
//!
//! [`Recorder`] is a `tracing-subscriber` [`Layer`]; [`Recorder::install`]
//! sets it over a [`Registry`](tracing_subscriber::Registry) as this
//! thread's subscriber. A subscriber set for one thread still shares
//! tracing's global per-callsite interest cache with the other tests of
//! the binary, so a suite that counts events runs in a binary of its own.
//!
//! That cache is also why `install` first sets, once per process, a global
//! subscriber that enables nothing but answers every callsite "sometimes".
//! While exactly one scoped subscriber is alive, tracing decides a new
//! callsite's interest from the registering thread's subscriber alone: a
//! test thread with none would cache "never", and the recorder's thread
//! would miss that span or event for the rest of the binary, depending on
//! which test met the callsite first. With the global one, no callsite is
//! ever cached "never", and each thread's own subscriber decides.

use std::sync::{Arc, Mutex, MutexGuard};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::DefaultGuard;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Fields by name, in the order they were recorded: a span's at its start,
/// then each `record` after. A name recorded twice is there twice; the
/// lookups read the last value, as a subscriber exporting the span would.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<(&'static str, String)>);

impl Fields {
    /// The last value recorded for `name` (`&str`s as they are, anything
    /// else as its `Debug`), `None` when it never was.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` was recorded at all.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The value of `name`, panicking with every field when there is none:
    /// for assertions on a field the event must carry.
    #[track_caller]
    pub fn value(&self, name: &str) -> &str {
        self.get(name)
            .unwrap_or_else(|| panic!("no field {name}: {self:?}"))
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name(), value.to_owned()));
    }
}

/// One event as recorded.
#[derive(Debug, Clone)]
pub struct RecordedEvent {
    /// Its target (`seawall::stream`, …).
    pub target: &'static str,
    /// Its level.
    pub level: tracing::Level,
    /// The span it was emitted in, by [`RecordedSpan::id`].
    pub parent: Option<u64>,
    /// Its fields, `message` among them.
    pub fields: Fields,
}

/// One span as recorded: its fields at its start and as recorded since.
#[derive(Debug, Clone)]
pub struct RecordedSpan {
    /// The registry's id (reused once the span closed).
    pub id: u64,
    /// Its name (`operation`, `attempt`, …).
    pub name: &'static str,
    /// Its target.
    pub target: &'static str,
    /// Its parent, by id.
    pub parent: Option<u64>,
    /// Its fields; one declared `Empty` appears once recorded.
    pub fields: Fields,
    /// Whether it has closed.
    pub closed: bool,
}

/// The global subscriber under every recorder: enables nothing, and keeps
/// each callsite's interest open so the thread's own subscriber decides.
struct Undecided;

impl Subscriber for Undecided {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    // Never called: nothing is enabled.
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[derive(Debug, Default)]
struct Recorded {
    events: Vec<RecordedEvent>,
    /// In the order they opened.
    spans: Vec<RecordedSpan>,
}

/// Records every event and every span; clones share what was recorded.
#[derive(Debug, Clone, Default)]
pub struct Recorder(Arc<Mutex<Recorded>>);

impl Recorder {
    /// A new recorder.
    pub fn new() -> Self {
        Recorder::default()
    }

    /// Sets this recorder, over a registry, as this thread's subscriber
    /// until the guard drops.
    pub fn install(&self) -> DefaultGuard {
        static UNDECIDED: std::sync::Once = std::sync::Once::new();
        UNDECIDED.call_once(|| {
            // A binary that set a global subscriber of its own keeps it.
            let _ = tracing::subscriber::set_global_default(Undecided);
        });
        tracing::subscriber::set_default(self.subscriber())
    }

    /// This recorder over a registry, for `with_default` or to layer more
    /// on.
    pub fn subscriber(&self) -> impl Subscriber + Send + Sync + 'static {
        tracing_subscriber::registry().with(self.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        // A test that panicked while holding it recorded nothing partial.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.lock().events.clone()
    }

    /// The fields of every event of `target` so far, in order.
    pub fn events_of(&self, target: &str) -> Vec<Fields> {
        self.lock()
            .events
            .iter()
            .filter(|e| e.target == target)
            .map(|e| e.fields.clone())
            .collect()
    }

    /// The fields of every warning of `target` so far, in order.
    pub fn warnings_of(&self, target: &str) -> Vec<Fields> {
        self.lock()
            .events
            .iter()
            .filter(|e| e.target == target && e.level == tracing::Level::WARN)
            .map(|e| e.fields.clone())
            .collect()
    }

    /// Every span so far, in the order they opened.
    pub fn spans(&self) -> Vec<RecordedSpan> {
        self.lock().spans.clone()
    }

    /// The first span named `name`, panicking with every span when none
    /// opened.
    #[track_caller]
    pub fn span(&self, name: &str) -> RecordedSpan {
        let recorded = self.lock();
        match recorded.spans.iter().find(|s| s.name == name) {
            Some(span) => span.clone(),
            None => panic!("no span {name}: {:?}", recorded.spans),
        }
    }

    /// The open span with `id`: the latest to take it.
    fn with_open(&self, id: &Id, f: impl FnOnce(&mut RecordedSpan)) {
        let mut recorded = self.lock();
        if let Some(span) = recorded
            .spans
            .iter_mut()
            .rev()
            .find(|s| s.id == id.into_u64() && !s.closed)
        {
            f(span);
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let span = RecordedSpan {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            target: attrs.metadata().target(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            fields,
            closed: false,
        };
        self.lock().spans.push(span);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        self.with_open(id, |span| values.record(&mut span.fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let recorded = RecordedEvent {
            target: event.metadata().target(),
            level: *event.metadata().level(),
            parent: ctx.event_span(event).map(|s| s.id().into_u64()),
            fields,
        };
        self.lock().events.push(recorded);
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.with_open(&id, |span| span.closed = true);
    }
}

#[cfg(test)]
mod tests {
    use super::Recorder;

    #[test]
    fn records_events_and_spans_with_their_fields() {
        let recorder = Recorder::new();
        let _guard = recorder.install();
        let outer = tracing::info_span!("outer", done = tracing::field::Empty, n = 1);
        outer.in_scope(|| {
            tracing::info!(target: "here", code = "x", count = 3_u64, "what");
            outer.record("done", true);
            tracing::info_span!("inner").in_scope(|| {});
        });
        outer.record("done", false);
        drop(outer);

        let events = recorder.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].target, "here");
        assert_eq!(events[0].fields.value("code"), "x");
        assert_eq!(events[0].fields.value("count"), "3");
        assert_eq!(events[0].fields.value("message"), "what");
        assert_eq!(recorder.events_of("elsewhere").len(), 0);

        let outer = recorder.span("outer");
        assert_eq!(events[0].parent, Some(outer.id));
        assert_eq!(outer.fields.get("n"), Some("1"));
        // The last recorded value, every value kept in order.
        assert_eq!(outer.fields.get("done"), Some("false"));
        assert_eq!(outer.fields.0.len(), 3);
        assert!(outer.closed);
        assert_eq!(recorder.span("inner").parent, Some(outer.id));
        assert!(!recorder.span("inner").fields.has("n"));
    }
}
