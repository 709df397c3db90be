//! A scripted upstream for the ladder's tests.
#![allow(dead_code)] // each test file uses part of it

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Body;
use http_body_util::BodyExt;
use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};
use seawall_core::{Failure, Receipt};
use tokio::time::Instant;
use tower::BoxError;

/// What the upstream does on one call.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Ok,
    Fail(Failure),
    /// Never answers (an attempt deadline ends it).
    Hang,
}

/// One call the upstream received.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub at: Instant,
    pub body: Bytes,
    pub headers: HeaderMap,
}

#[derive(Clone)]
pub(crate) struct Upstream {
    state: Arc<Mutex<State>>,
}

struct State {
    script: VecDeque<Step>,
    /// Played once the script runs out.
    then: Step,
    calls: Vec<Call>,
}

pub(crate) type Reply = Pin<Box<dyn Future<Output = Result<Response<String>, BoxError>> + Send>>;

impl Upstream {
    /// Plays `script`, then repeats its last step.
    pub(crate) fn new(script: impl IntoIterator<Item = Step>) -> Self {
        let script: VecDeque<Step> = script.into_iter().collect();
        let then = script.back().cloned().unwrap_or(Step::Ok);
        Upstream {
            state: Arc::new(Mutex::new(State {
                script,
                then,
                calls: Vec::new(),
            })),
        }
    }

    /// A service that reads the whole request body, then plays the next step.
    pub(crate) fn service<B>(
        &self,
    ) -> impl tower::Service<
        Request<B>,
        Response = Response<String>,
        Error = BoxError,
        Future = Reply,
    > + Clone
    + Send
    + 'static
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let state = self.state.clone();
        tower::service_fn(move |request: Request<B>| {
            let state = state.clone();
            let at = Instant::now();
            let fut: Reply = Box::pin(async move {
                let (parts, body) = request.into_parts();
                let body = body.collect().await.map_err(Into::into)?.to_bytes();
                let step = {
                    let mut state = state.lock().unwrap();
                    state.calls.push(Call {
                        at,
                        body,
                        headers: parts.headers,
                    });
                    let then = state.then.clone();
                    state.script.pop_front().unwrap_or(then)
                };
                match step {
                    Step::Ok => Ok(Response::new(String::from("ok"))),
                    Step::Fail(failure) => Err(Box::new(failure) as BoxError),
                    Step::Hang => std::future::pending().await,
                }
            });
            fut
        })
    }

    pub(crate) fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    pub(crate) fn count(&self) -> usize {
        self.state.lock().unwrap().calls.len()
    }
}

/// The failure the classifier makes of an OpenAI error response.
pub(crate) fn openai(status: u16, retry_after: Option<Duration>, body: &str) -> Failure {
    classify_error(
        Provider::OpenAi,
        body.as_bytes(),
        ErrorContext {
            status: Some(status),
            hint: RetryHint {
                after: retry_after,
                should_retry: None,
                limit_reset: None,
            },
            quota_wall: QuotaWall::default(),
            now: SystemTime::now(),
        },
    )
}

pub(crate) const RATE_LIMIT_BODY: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

pub(crate) fn failure(err: &BoxError) -> &Failure {
    Failure::find(&**err).expect("a seawall Failure")
}

pub(crate) fn receipt(err: &BoxError) -> &Receipt {
    failure(err)
        .receipt()
        .expect("a receipt inside the failure")
}

/// Two ladders of two attempts each over `upstream`, the inner one allowed
/// to retry under the outer: four calls at most.
pub(crate) fn nested_ladders(
    upstream: &Upstream,
) -> impl tower::Service<Request<String>, Response = Response<String>, Error = BoxError> {
    use seawall_core::recording::ReplayBody;
    use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
    tower::ServiceBuilder::new()
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2),
            Budget::unlimited(),
        ))
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2).allow_nested(),
            Budget::unlimited(),
        ))
        .service(upstream.service::<ReplayBody<ReplayBody<String>>>())
}
