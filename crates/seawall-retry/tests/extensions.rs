//! Every attempt carries the first request's extensions, whether the ladder
//! kept them as known values or copied the whole map.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{Code, Deadline, Failure, Receipt, RequestFacts, RouteId};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{BoxError, Layer, ServiceExt, service_fn};

/// A caller's own extension, unknown to the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tenant(u32);

/// What an attempt found: the deadline, the route, the caller's own
/// extension, and the request facts' model as the head named it (`None`
/// when the attempt had no facts at all: the ladder always puts some in).
type Seen = (
    Option<Deadline>,
    Option<RouteId>,
    Option<Tenant>,
    Option<Option<String>>,
);

/// Fails the first attempt with a retryable failure, answers the second,
/// and records what each attempt found in its extensions.
async fn attempts(request: Request<String>) -> (Vec<Seen>, Response<()>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let upstream = {
        let seen = Arc::clone(&seen);
        service_fn(move |request: Request<ReplayBody<String>>| {
            let extensions = request.extensions();
            let mut seen = seen.lock().unwrap();
            seen.push((
                extensions.get::<Deadline>().copied(),
                extensions.get::<RouteId>().cloned(),
                extensions.get::<Tenant>().copied(),
                extensions
                    .get::<RequestFacts>()
                    .map(|facts| facts.head_model().map(str::to_owned)),
            ));
            let first = seen.len() == 1;
            async move {
                if first {
                    Err::<Response<()>, BoxError>(Box::new(Failure::new(Code::Overloaded)))
                } else {
                    Ok(Response::new(()))
                }
            }
        })
    };
    let svc = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited()).layer(upstream);
    let response = svc.oneshot(request).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    (seen, response)
}

fn request() -> Request<String> {
    Request::post("https://api.llm.example/v1/chat/completions")
        .body(String::from("{}"))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_deadline_and_a_route_reach_every_attempt() {
    let deadline = Deadline::after(Duration::from_secs(30));
    let mut request = request();
    request.extensions_mut().insert(deadline);
    request.extensions_mut().insert(RouteId::new("primary"));
    let (seen, response) = attempts(request).await;
    let expected = (
        Some(deadline),
        Some(RouteId::new("primary")),
        None,
        Some(None),
    );
    assert_eq!(seen, vec![expected.clone(), expected]);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.attempts[1].route, RouteId::new("primary"));
}

#[tokio::test(start_paused = true)]
async fn a_callers_own_extension_reaches_every_attempt() {
    let deadline = Deadline::after(Duration::from_secs(30));
    let mut request = request();
    request.extensions_mut().insert(deadline);
    request.extensions_mut().insert(Tenant(7));
    let (seen, _) = attempts(request).await;
    let expected = (Some(deadline), None, Some(Tenant(7)), Some(None));
    assert_eq!(seen, vec![expected.clone(), expected]);
}

#[tokio::test(start_paused = true)]
async fn a_request_without_extensions_gets_none_on_a_retry() {
    let (seen, response) = attempts(request()).await;
    let expected = (None, None, None, Some(None));
    assert_eq!(seen, vec![expected.clone(), expected]);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.attempts[0].route, RouteId::new("api.llm.example"));
}

#[tokio::test(start_paused = true)]
async fn a_callers_request_facts_reach_every_attempt() {
    let deadline = Deadline::after(Duration::from_secs(30));
    let mut request = request();
    request.extensions_mut().insert(deadline);
    request
        .extensions_mut()
        .insert(RequestFacts::default().with_model("gpt-x"));
    let (seen, _) = attempts(request).await;
    let expected = (Some(deadline), None, None, Some(Some("gpt-x".to_owned())));
    assert_eq!(seen, vec![expected.clone(), expected]);
}

/// A 2xx answer is a billed attempt only for a request the provider bills:
/// reading a stored response, polling a background one or counting tokens
/// costs nothing, and the receipt says so (it said billed for each poll).
#[tokio::test]
async fn only_a_billable_request_makes_a_billed_attempt() {
    for (method, path, billed) in [
        ("POST", "/v1/chat/completions", 1),
        ("POST", "/v1/embeddings", 1),
        ("GET", "/v1/responses/resp_1", 0),
        ("POST", "/v1/messages/count_tokens", 0),
        ("POST", "/v1/responses/input_tokens", 0),
        ("POST", "/v1beta/models/gemini-x:countTokens", 0),
        (
            "POST",
            "/v1/projects/p/locations/l/publishers/google/models/g:computeTokens",
            0,
        ),
        ("DELETE", "/v1/files/file_1", 0),
    ] {
        let svc =
            RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited()).layer(service_fn(
                |_: Request<ReplayBody<String>>| async { Ok::<_, BoxError>(Response::new(())) },
            ));
        let request = Request::builder()
            .method(method)
            .uri(format!("https://api.example.com{path}"))
            .body(String::new())
            .unwrap();
        let response = svc.oneshot(request).await.unwrap();
        let receipt = response.extensions().get::<Receipt>().unwrap();
        assert_eq!(receipt.billed_attempts(), billed, "{method} {path}");
    }
}
