//! A request body at hand is read ahead for the spans only when a
//! subscriber records them, in a test binary of its own: a subscriber set
//! for one thread shares tracing's global per-callsite cache with every
//! other test running at the same time, and a span no one records would
//! look recorded.

use std::sync::{Arc, Mutex};

use http::{Request, Response};
use seawall_core::RequestFacts;
use seawall_core::recording::ReplayBody;
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_test::trace::Recorder;
use tower::{BoxError, Layer, ServiceExt, service_fn};

const CHAT: &str = r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#;

/// Sends a chat completion held in memory through a ladder of 3 attempts,
/// and returns the model its facts named as the first attempt was called:
/// before anything sent its body.
async fn model_at_first_call() -> Option<String> {
    let seen = Arc::new(Mutex::new(None));
    let at_call = seen.clone();
    let upstream = service_fn(move |request: Request<ReplayBody<String>>| {
        *at_call.lock().unwrap() = Some(
            request
                .extensions()
                .get::<RequestFacts>()
                .and_then(RequestFacts::model)
                .map(String::from),
        );
        async { Ok::<_, BoxError>(Response::new(String::new())) }
    });
    let ladder =
        RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited()).layer(upstream);
    let request = Request::post("https://api.openai.com/v1/chat/completions")
        .body(String::from(CHAT))
        .unwrap();
    ladder.oneshot(request).await.unwrap();
    let seen = seen.lock().unwrap().take();
    seen.expect("the upstream was called")
}

/// Without a subscriber nothing is read ahead: the body is read as it is
/// sent, and a call pays nothing for spans no one records. With one, a
/// body at hand is read before the spans start, and both are named by
/// its model from the start (an OpenTelemetry span takes its name as it
/// starts: the operation's as its first attempt's span is made).
#[tokio::test]
async fn a_body_at_hand_is_read_ahead_only_for_recorded_spans() {
    assert_eq!(model_at_first_call().await, None);

    let recorder = Recorder::new();
    let _guard = recorder.install();
    assert_eq!(model_at_first_call().await.as_deref(), Some("gpt-x"));
    let operation = recorder.span("operation").fields;
    assert_eq!(operation.get("otel.name"), Some("chat gpt-x"));
    assert_eq!(operation.get("gen_ai.request.model"), Some("gpt-x"));
    let attempt = recorder.span("attempt").fields;
    assert_eq!(attempt.get("otel.name"), Some("chat gpt-x"));
}
