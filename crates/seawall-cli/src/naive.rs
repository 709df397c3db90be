//! The naive stack: the configuration behind the incidents seawall exists
//! for, built from tower's own parts.
//!
//! - API level: `tower::retry` with a policy that retries *every* error
//!   (and every non-2xx status, turned into an error the way SDKs do),
//!   three attempts in all, a fixed pause in between, plus
//!   `tower::timeout` per attempt around opening the stream (the request
//!   and its first body frame).
//! - Caller level: a loop that makes up to three stream attempts,
//!   restarting the whole stream when opening or reading it fails —
//!   nested around the API level, so the attempts multiply.
//!
//! Nothing here classifies anything: that is the point of the comparison.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use seawall::core::BoxError;
use tower::retry::Policy;
use tower::{Service, ServiceBuilder, ServiceExt};

/// The client both stacks send through.
pub type NaiveClient = Client<HttpConnector, Full<Bytes>>;

/// A stream opened by the naive API level: the head, the first body frame
/// (read to prove the stream started), and the rest of the body.
#[derive(Debug)]
pub struct Opened {
    /// The response status.
    pub status: http::StatusCode,
    /// The first body frame, if the body had one.
    pub first: Option<Bytes>,
    /// The rest of the body.
    pub rest: Incoming,
}

/// Settings of the naive stack.
#[derive(Debug, Clone, Copy)]
pub struct NaivePolicy {
    /// Attempts of the API-level retry (tower retry), counting the first.
    pub api_attempts: usize,
    /// Attempts of the caller's stream loop, counting the first.
    pub stream_attempts: usize,
    /// `tower::timeout` per API attempt, and the caller's read timeout.
    pub attempt_timeout: Duration,
    /// The fixed pause between API attempts.
    pub pause: Duration,
}

/// Retries every error, `remaining` more times, after a fixed pause.
#[derive(Clone)]
struct RetryEverything {
    remaining: usize,
    pause: Duration,
}

impl Policy<http::Request<Full<Bytes>>, Opened, BoxError> for RetryEverything {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut http::Request<Full<Bytes>>,
        result: &mut Result<Opened, BoxError>,
    ) -> Option<Self::Future> {
        if result.is_err() && self.remaining > 0 {
            self.remaining -= 1;
            Some(tokio::time::sleep(self.pause))
        } else {
            None
        }
    }

    fn clone_request(
        &mut self,
        req: &http::Request<Full<Bytes>>,
    ) -> Option<http::Request<Full<Bytes>>> {
        Some(seawall::core::recording::clone_head(
            req,
            req.body().clone(),
        ))
    }
}

/// The error the naive API level returns for a non-2xx status.
#[derive(Debug)]
pub struct StatusError(pub http::StatusCode);

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http {}", self.0.as_u16())
    }
}

impl std::error::Error for StatusError {}

type OpenFuture = Pin<Box<dyn Future<Output = Result<Opened, BoxError>> + Send>>;

/// Opens a stream: sends the request, turns a non-2xx status into an
/// error, and waits for the first body frame.
fn open(
    client: NaiveClient,
) -> impl Service<http::Request<Full<Bytes>>, Response = Opened, Error = BoxError, Future = OpenFuture>
+ Clone {
    tower::service_fn(move |req: http::Request<Full<Bytes>>| {
        let client = client.clone();
        Box::pin(async move {
            let response = client.request(req).await?;
            let status = response.status();
            if !status.is_success() {
                return Err(StatusError(status).into());
            }
            let mut rest = response.into_body();
            let first = match rest.frame().await {
                Some(frame) => frame?.into_data().ok(),
                None => None,
            };
            Ok(Opened {
                status,
                first,
                rest,
            })
        }) as OpenFuture
    })
}

/// The naive API level: `retry(every error) → timeout → open`.
pub async fn call(
    client: &NaiveClient,
    settings: NaivePolicy,
    request: http::Request<Full<Bytes>>,
) -> Result<Opened, BoxError> {
    ServiceBuilder::new()
        .retry(RetryEverything {
            remaining: settings.api_attempts.saturating_sub(1),
            pause: settings.pause,
        })
        .timeout(settings.attempt_timeout)
        .service(open(client.clone()))
        .oneshot(request)
        .await
}
