//! What several of the fallback's tests share: a route health registry on
//! tokio's clock, a scripted service and a request.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall_core::recording::ReplayBody;
use seawall_core::{BoxError, Code, Deadline, Failure, RouteId};
use tokio::time::Instant;
use tower::service_fn;

pub(crate) type Req = http::Request<ReplayBody<Full<Bytes>>>;
pub(crate) type Resp = http::Response<Full<Bytes>>;
pub(crate) type Boxed = tower::util::BoxCloneSyncService<Req, Resp, BoxError>;

pub(crate) const SEC: Duration = Duration::from_secs(1);

/// A route health registry on tokio's clock, as the breaker keeps one.
#[derive(Clone, Default)]
pub(crate) struct Registry(Arc<Mutex<HashMap<RouteId, (Code, Instant)>>>);

impl Registry {
    pub(crate) fn cool(&self, route: &str, code: Code, for_: Duration) {
        self.0
            .lock()
            .unwrap()
            .insert(RouteId::new(route), (code, Instant::now() + for_));
    }

    pub(crate) fn health(
        &self,
    ) -> impl Fn(&RouteId) -> Option<(Code, Option<Duration>)> + Send + Sync + 'static {
        let this = self.clone();
        move |route: &RouteId| {
            let (code, until) = *this.0.lock().unwrap().get(route)?;
            let now = Instant::now();
            (until > now).then(|| (code, Some(until - now)))
        }
    }
}

/// A request to `primary.example`, due in `due` when given.
pub(crate) fn request(due: Option<Duration>) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post("https://primary.example/v1/chat")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap();
    if let Some(due) = due {
        request.extensions_mut().insert(Deadline::after(due));
    }
    request
}

/// A service whose call `n` fails with `failure(n)` (`None`: answers),
/// counting its calls.
pub(crate) fn scripted(
    calls: &Arc<AtomicUsize>,
    failure: impl Fn(usize) -> Option<Failure> + Send + Sync + 'static,
) -> Boxed {
    let calls = calls.clone();
    let failure = Arc::new(failure);
    Boxed::new(service_fn(move |_request: Req| {
        let calls = calls.clone();
        let failure = failure.clone();
        async move {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            match failure(n) {
                Some(failure) => Err(failure.into()),
                None => Ok(http::Response::new(Full::new(Bytes::from_static(b"hi")))),
            }
        }
    }))
}

/// Counts `seawall_attempts_total` by its labels, for the thread it is set
/// on (`metrics::set_default_local_recorder`); every other metric is
/// dropped.
#[cfg(feature = "metrics")]
#[derive(Clone, Default)]
pub(crate) struct Attempts(Arc<Mutex<Vec<(metrics::Key, Count)>>>);

/// One counter's count.
#[cfg(feature = "metrics")]
type Count = Arc<std::sync::atomic::AtomicU64>;

#[cfg(feature = "metrics")]
impl Attempts {
    /// The attempts counted with every label in `labels`, summed over
    /// the others.
    pub(crate) fn count(&self, labels: &[(&str, &str)]) -> u64 {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(key, _)| {
                labels.iter().all(|(k, v)| {
                    key.labels()
                        .any(|label| label.key() == *k && label.value() == *v)
                })
            })
            .map(|(_, count)| count.load(Ordering::SeqCst))
            .sum()
    }
}

#[cfg(feature = "metrics")]
impl metrics::Recorder for Attempts {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        if key.name() != seawall_core::metric_names::ATTEMPTS_TOTAL {
            return metrics::Counter::noop();
        }
        let mut counted = self.0.lock().unwrap();
        let count = match counted.iter().find(|(seen, _)| seen == key) {
            Some((_, count)) => count.clone(),
            None => {
                let count = Arc::default();
                counted.push((key.clone(), Arc::clone(&count)));
                count
            }
        };
        metrics::Counter::from_arc(count)
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}
