//! An in-process provider that plays a script of failures and answers,
//! noting when each call came: for the ladder and breaker suites on
//! tokio's paused clock, where only timing and counts matter.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use seawall::core::Failure;
use seawall::core::recording::ReplayBody;
use tokio::time::Instant;
use tower::Service;

/// The request the provider receives from a stack.
pub(crate) type Req = http::Request<ReplayBody<Full<Bytes>>>;

/// The provider: plays `script` (`Some` a failure, `None` an answer),
/// then gives `then` every time, noting when each call came. A request
/// carrying the header set with [`Provider::refusing_marked`] fails at
/// once, unnoted and without taking a step of the script.
#[derive(Clone)]
pub(crate) struct Provider {
    script: Arc<Mutex<VecDeque<Option<Failure>>>>,
    then: Option<Failure>,
    marked: Option<(&'static str, Failure)>,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl Provider {
    /// Plays `script`, then gives `then` (`None` an answer).
    pub(crate) fn new(
        script: impl IntoIterator<Item = Option<Failure>>,
        then: Option<Failure>,
    ) -> Self {
        Provider {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            then,
            marked: None,
            calls: Arc::default(),
        }
    }

    /// A request carrying `header` fails with `failure`, unnoted.
    pub(crate) fn refusing_marked(mut self, header: &'static str, failure: Failure) -> Self {
        self.marked = Some((header, failure));
        self
    }

    /// The provider as a service.
    pub(crate) fn service(
        &self,
    ) -> impl Service<Req, Response = http::Response<Full<Bytes>>, Error = tower::BoxError>
    + Clone
    + Send
    + 'static {
        let provider = self.clone();
        tower::service_fn(move |request: Req| {
            let provider = provider.clone();
            async move {
                if let Some((header, failure)) = &provider.marked
                    && request.headers().contains_key(*header)
                {
                    return Err(tower::BoxError::from(failure.clone()));
                }
                provider.calls.lock().unwrap().push(Instant::now());
                let step = provider.script.lock().unwrap().pop_front();
                match step.unwrap_or_else(|| provider.then.clone()) {
                    Some(failure) => Err(tower::BoxError::from(failure)),
                    None => Ok(http::Response::new(Full::new(Bytes::from_static(b"ok")))),
                }
            }
        })
    }

    /// When each noted call came.
    pub(crate) fn calls(&self) -> Vec<Instant> {
        self.calls.lock().unwrap().clone()
    }
}

/// A chat request to the primary route, before the stack wraps its body.
pub(crate) fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("http://prim.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(br#"{"model":"m"}"#)))
        .unwrap()
}
