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
