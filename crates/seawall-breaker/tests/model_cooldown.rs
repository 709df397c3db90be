//! A limit the provider keeps per model cools that model alone on its
//! route, on tokio's paused clock: gemini-2.5-pro's per-day wall leaves
//! gemini-2.5-flash on the same route called; the account's walls, and a
//! wall for a request that names no model, still cool the whole route; a
//! route keeps only a few models cooling on their own.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use seawall_breaker::{Breaker, BreakerHandle, BreakerLayer, MAX_MODELS_COOLING};
use seawall_core::{BoxError, Code, Failure, RequestFacts, RouteId};
use tower::util::BoxCloneService;
use tower::{Layer, ServiceExt};

const ROUTE: &str = "generativelanguage.googleapis.com";
const DAY_WALL: Duration = Duration::from_secs(12 * 3600);

type Response = http::Response<Empty<Bytes>>;

/// Gemini's per-day, per-model wall as the classifier reads it: the
/// message names the quota's model.
fn day_wall(model: &str) -> Failure {
    Failure::new(Code::QuotaExhausted)
        .with_status(429)
        .with_provider_type("RESOURCE_EXHAUSTED")
        .with_retry_after(DAY_WALL)
        .with_message(&format!(
            "You exceeded your current quota, please check your plan and billing details.\n\
             * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, \
             limit: 50, model: {model}"
        ))
}

/// OpenAI's billing wall: the account's, whatever model was asked.
fn billing_wall() -> Failure {
    Failure::new(Code::QuotaExhausted)
        .with_status(429)
        .with_provider_type("insufficient_quota")
        .with_provider_code("insufficient_quota")
        .with_retry_after(DAY_WALL)
        .with_message(
            "You exceeded your current quota, please check your plan and billing details.",
        )
}

type Provider = BoxCloneService<http::Request<()>, Response, BoxError>;

/// A provider that fails a call whose path names a model of `walled` with
/// the wall `wall` gives for that model, and answers every other.
fn provider(walled: &'static [&'static str], wall: fn(&str) -> Failure) -> Provider {
    BoxCloneService::new(tower::service_fn(move |request: http::Request<()>| {
        let path = request.uri().path().to_owned();
        async move {
            match walled
                .iter()
                .find(|model| path.contains(&format!("/{model}:")))
            {
                Some(model) => Err(wall(model).into()),
                None => Ok(http::Response::new(Empty::new())),
            }
        }
    }))
}

/// A Gemini generation for `model` (`None`: a request that names none),
/// with the request facts the retry ladder puts in its extensions.
fn ask(model: Option<&str>) -> http::Request<()> {
    let uri = match model {
        Some(model) => {
            format!("https://{ROUTE}/v1beta/models/{model}:generateContent")
        }
        None => format!("https://{ROUTE}/v1beta/files"),
    };
    let mut request = http::Request::post(uri).body(()).unwrap();
    let facts = RequestFacts::from_head(&request);
    request.extensions_mut().insert(facts);
    request
}

/// The call's outcome: `Ok` when answered, else the failure's code
/// (`route_cooling_down` for a refusal without a call).
async fn outcome(service: &Breaker<Provider>, request: http::Request<()>) -> Result<(), Code> {
    match service.clone().oneshot(request).await {
        Ok(_) => Ok(()),
        Err(error) => Err(Failure::downcast(error.into_box())
            .expect("a failure")
            .code()),
    }
}

fn layer() -> (BreakerLayer, BreakerHandle) {
    let layer = BreakerLayer::new();
    let handle = layer.handle();
    (layer, handle)
}

#[tokio::test(start_paused = true)]
async fn one_models_day_wall_leaves_the_routes_other_models_called() {
    let (layer, handle) = layer();
    let service = layer.layer(provider(&["gemini-2.5-pro"], day_wall));
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::QuotaExhausted)
    );
    // The other model's quota is untouched: it is called and answered.
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-flash"))).await,
        Ok(())
    );
    // The walled model is refused here, without a call.
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::RouteCoolingDown)
    );
    // Not the route's cooldown: the route reports none.
    assert_eq!(handle.cooldown(&RouteId::new(ROUTE)), None);
    // Hours later, still; after the wall's end the model is called again.
    tokio::time::advance(DAY_WALL - Duration::from_secs(60)).await;
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::RouteCoolingDown)
    );
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-flash"))).await,
        Ok(())
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::QuotaExhausted),
        "the wall's end: the model is called again"
    );
}

#[tokio::test(start_paused = true)]
async fn the_accounts_wall_still_cools_every_model() {
    let (layer, handle) = layer();
    let service = layer.layer(provider(&["gpt-x"], |_| billing_wall()));
    assert_eq!(
        outcome(&service, ask(Some("gpt-x"))).await,
        Err(Code::QuotaExhausted)
    );
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-flash"))).await,
        Err(Code::RouteCoolingDown)
    );
    assert_eq!(
        handle.cooldown(&RouteId::new(ROUTE)).map(|(code, _)| code),
        Some(Code::QuotaExhausted)
    );
}

#[tokio::test(start_paused = true)]
async fn a_wall_for_a_request_naming_no_model_cools_the_route() {
    let (layer, handle) = layer();
    let service = layer.layer(BoxCloneService::new(tower::service_fn(
        |_: http::Request<()>| async {
            Err::<Response, BoxError>(day_wall("gemini-2.5-pro").into())
        },
    )));
    assert_eq!(
        outcome(&service, ask(None)).await,
        Err(Code::QuotaExhausted)
    );
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-flash"))).await,
        Err(Code::RouteCoolingDown)
    );
    assert!(handle.cooldown(&RouteId::new(ROUTE)).is_some());
}

#[tokio::test(start_paused = true)]
async fn past_the_models_a_route_keeps_a_wall_cools_the_route() {
    const MODELS: [&str; MAX_MODELS_COOLING + 1] =
        ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"];
    let (layer, handle) = layer();
    let service = layer.layer(provider(&MODELS, day_wall));
    let route = RouteId::new(ROUTE);
    for model in &MODELS[..MAX_MODELS_COOLING] {
        assert_eq!(
            outcome(&service, ask(Some(model))).await,
            Err(Code::QuotaExhausted)
        );
        assert_eq!(handle.cooldown(&route), None, "{model}");
    }
    assert_eq!(outcome(&service, ask(Some("fresh"))).await, Ok(()));
    // One more model's wall: no place left, the route cools.
    assert_eq!(
        outcome(&service, ask(Some(MODELS[MAX_MODELS_COOLING]))).await,
        Err(Code::QuotaExhausted)
    );
    assert!(handle.cooldown(&route).is_some());
    assert_eq!(
        outcome(&service, ask(Some("fresh"))).await,
        Err(Code::RouteCoolingDown)
    );
}

#[tokio::test(start_paused = true)]
async fn a_reset_ends_the_models_cooldowns() {
    let (layer, handle) = layer();
    let service = layer.layer(provider(&["gemini-2.5-pro"], day_wall));
    let _ = outcome(&service, ask(Some("gemini-2.5-pro"))).await;
    handle.reset(&RouteId::new(ROUTE));
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::QuotaExhausted),
        "called again after the reset"
    );
}

/// A model cooling for a short rate limit while the route cools for a
/// cause of its own (its credentials refused): a call for the model is
/// refused with the route's longer wait, not the model's, so a ladder or
/// a fallback does not take the model's seconds for the route's return.
#[tokio::test(start_paused = true)]
async fn a_models_short_wait_does_not_hide_the_routes_longer_one() {
    fn limited(model: &str) -> Failure {
        if model == "gpt-a" {
            Failure::new(Code::RateLimited)
                .with_status(429)
                .with_retry_after(Duration::from_secs(2))
                .with_message(&format!(
                    "Rate limit reached for {model} in organization org-x on requests per min (RPM): Limit 3."
                ))
        } else {
            Failure::new(Code::Auth).with_status(401)
        }
    }
    let (layer, handle) = layer();
    let service = layer.layer(provider(&["gpt-a", "gpt-b"], limited));
    let ask_for = |model: &str| {
        let mut request = http::Request::post(format!(
            "https://{ROUTE}/v1beta/models/{model}:generateContent"
        ))
        .body(())
        .unwrap();
        let facts = RequestFacts::from_head(&request).with_model(model);
        request.extensions_mut().insert(facts);
        request
    };
    assert_eq!(
        outcome(&service, ask_for("gpt-a")).await,
        Err(Code::RateLimited)
    );
    assert_eq!(outcome(&service, ask_for("gpt-b")).await, Err(Code::Auth));
    let refusal = service.clone().oneshot(ask_for("gpt-a")).await.unwrap_err();
    let failure = Failure::find(&refusal).expect("a failure");
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    let wait = failure.retry_after();
    assert!(
        wait.is_none_or(|wait| wait > Duration::from_secs(2)),
        "the route's wait, not the model's 2 s: {failure:?}"
    );
    // The route's refusal names no model; the handle gives a call for
    // gpt-a the same cooldown.
    assert_eq!(refusal.as_open().unwrap().model(), None);
    let route = RouteId::new(ROUTE);
    assert_eq!(
        handle.model_cooldown(&route, "gpt-a"),
        handle.cooldown(&route)
    );
    assert_eq!(
        handle.model_cooldown(&route, "gpt-a").map(|(code, _)| code),
        Some(Code::Auth)
    );
    assert_eq!(handle.models_cooling(&route).len(), 1, "gpt-a's own, kept");
}

/// A model cooling on its own is visible through the handle, as a call for
/// it meets it, and its refusal names it: an operator (or the gateway's
/// error message) says which model is held back, not "the route cooling".
#[tokio::test(start_paused = true)]
async fn a_models_cooldown_is_seen_through_the_handle_and_named_by_its_refusal() {
    let (layer, handle) = layer();
    let route = RouteId::new(ROUTE);
    let service = layer.layer(provider(&["gemini-2.5-pro"], day_wall));
    assert_eq!(handle.model_cooldown(&route, "gemini-2.5-pro"), None);
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::QuotaExhausted)
    );
    tokio::time::advance(Duration::from_secs(60)).await;
    let left = DAY_WALL - Duration::from_secs(60);
    assert_eq!(
        handle.model_cooldown(&route, "gemini-2.5-pro"),
        Some((Code::QuotaExhausted, Some(left)))
    );
    assert_eq!(handle.model_cooldown(&route, "gemini-2.5-flash"), None);
    assert_eq!(
        handle.models_cooling(&route),
        vec![(
            "gemini-2.5-pro".to_owned(),
            Code::QuotaExhausted,
            Some(left)
        )]
    );
    assert_eq!(handle.cooldown(&route), None, "the route's own: none");

    let error = service
        .clone()
        .oneshot(ask(Some("gemini-2.5-pro")))
        .await
        .unwrap_err();
    let refusal = error.as_open().expect("refused without a call");
    assert_eq!(refusal.model(), Some("gemini-2.5-pro"));
    assert_eq!(refusal.cooled_by(), Some(Code::QuotaExhausted));
    let failure = Failure::downcast(error.into_box()).unwrap();
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    let message = failure.message().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "model gemini-2.5-pro cooling down on route {ROUTE} after quota_exhausted"
        )),
        "{message}"
    );

    // At the wall's end, and after a reset, nothing is left to see.
    tokio::time::advance(left).await;
    assert_eq!(handle.model_cooldown(&route, "gemini-2.5-pro"), None);
    assert!(handle.models_cooling(&route).is_empty());
    assert_eq!(
        outcome(&service, ask(Some("gemini-2.5-pro"))).await,
        Err(Code::QuotaExhausted)
    );
    handle.reset(&route);
    assert!(handle.models_cooling(&route).is_empty());
}
