//! A capturing subscriber for the span suites: every span opened, by id,
//! with its target, parent, recorded fields and whether it has closed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// One span as the subscriber saw it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Captured {
    pub(crate) name: String,
    pub(crate) target: String,
    pub(crate) parent: Option<u64>,
    pub(crate) fields: BTreeMap<String, String>,
    pub(crate) closed: bool,
}

impl Captured {
    /// A field's recorded value, empty when it was never recorded.
    pub(crate) fn field(&self, name: &str) -> String {
        self.fields.get(name).cloned().unwrap_or_default()
    }
}

/// Every span opened (seawall's and the test's own), in order; ids are
/// not reused while the capture runs because every span is kept open or
/// recorded as closed before a later one takes its id.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<(u64, Captured)>>>);

impl Capture {
    /// Every span so far, in the order they opened.
    pub(crate) fn spans(&self) -> Vec<(u64, Captured)> {
        self.0.lock().unwrap().clone()
    }

    /// seawall's spans (targets `seawall::…`) by id, the latest for an id.
    pub(crate) fn seawall_by_id(&self) -> BTreeMap<u64, Captured> {
        self.spans()
            .into_iter()
            .filter(|(_, span)| span.target.starts_with("seawall"))
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl Capture {
    /// The open span with `id`, the latest to take that id.
    fn with_open(&self, id: &Id, f: impl FnOnce(&mut Captured)) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, captured)) = spans
            .iter_mut()
            .rev()
            .find(|(i, s)| *i == id.into_u64() && !s.closed)
        {
            f(captured);
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut captured = Captured {
            name: attrs.metadata().name().to_owned(),
            target: attrs.metadata().target().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut captured.fields));
        self.0.lock().unwrap().push((id.into_u64(), captured));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        self.with_open(id, |captured| {
            values.record(&mut Fields(&mut captured.fields))
        });
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        self.with_open(&id, |captured| captured.closed = true);
    }
}

/// Runs `call` on a current-thread runtime under `capture`.
pub(crate) fn run<T>(capture: &Capture, call: impl std::future::Future<Output = T>) -> T {
    run_under(tracing_subscriber::registry().with(capture.clone()), call)
}

/// Runs `call` on a current-thread runtime with `subscriber` as this
/// thread's subscriber.
pub(crate) fn run_under<T>(
    subscriber: impl Subscriber + Send + Sync + 'static,
    call: impl std::future::Future<Output = T>,
) -> T {
    tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(call)
    })
}
