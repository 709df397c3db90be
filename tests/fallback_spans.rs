//! The spans of a fallback chain, read back by a capturing subscriber:
//! one `fallback` span per move, with the retry crate's field names, over
//! loopback against seawall-chaos. (In a binary of its own: a subscriber
//! set for one test must not race tests run without one.)

mod common;

use common::spans::{Capture, Captured, run};

use http_body_util::BodyExt;
use seawall::classify::ClassifyLayer;
use seawall::core::RouteId;
use seawall::core::provider::Provider;
use seawall::fallback::{FallbackLayer, ServedBy};
use tower::ServiceExt;

#[test]
fn each_move_of_a_chain_is_one_fallback_span_with_the_stable_fields() {
    let capture = Capture::default();
    let (primary_addr, a_addr) = run(&capture, async {
        let primary = common::chaos().await;
        let a = common::chaos().await;
        let b = common::chaos().await;
        primary
            .script(
                "openai",
                vec![common::fault(
                    "status;code=429;retry_after=48489;kind=insufficient_quota",
                )],
            )
            .unwrap();
        a.script("openai", vec![common::fault("status;code=401")])
            .unwrap();
        let stack = common::short_stack();
        let (a_base, b_base) = (a.base_url(), b.base_url());
        let to_a = common::fallback_to(&stack, Provider::OpenAi, &a_base).routes()[0]
            .clone()
            .route(RouteId::new("a"));
        let to_b = common::fallback_to(&stack, Provider::OpenAi, &b_base).routes()[0]
            .clone()
            .route(RouteId::new("b"));
        let chain = FallbackLayer::chain([to_a, to_b]);
        let service = stack.build_with_fallback(&ClassifyLayer::openai(), common::client(), chain);
        let ask = common::Ask {
            provider: Provider::OpenAi,
            stream: false,
            id: "spans".to_owned(),
            fault: None,
            stop_after: None,
        };
        let response = service
            .oneshot(common::request(&primary.base_url(), &ask))
            .await
            .unwrap();
        let served = response.extensions().get::<ServedBy>().unwrap().clone();
        assert_eq!(served.route, RouteId::new("b"));
        response.into_body().collect().await.unwrap();
        assert_eq!(
            (
                primary.journal().len(),
                a.journal().len(),
                b.journal().len()
            ),
            (1, 1, 1)
        );
        (primary.addr().to_string(), "a".to_owned())
    });
    let spans = capture.seawall_by_id();
    let mut moves: Vec<_> = spans
        .values()
        .filter(|s| s.name == "fallback")
        .cloned()
        .collect();
    moves.sort_by_key(|s| s.fields.get("seawall.attempt").cloned());
    assert_eq!(moves.len(), 2, "{spans:#?}");
    let field = |s: &Captured, name: &str| s.fields.get(name).cloned().unwrap_or_default();
    assert_eq!(field(&moves[0], "otel.kind"), "client");
    assert_eq!(field(&moves[0], "seawall.attempt"), "1");
    assert_eq!(field(&moves[0], "server.address"), "a");
    assert_eq!(field(&moves[0], "seawall.from"), primary_addr);
    assert_eq!(field(&moves[0], "seawall.cause"), "quota_exhausted");
    assert_eq!(field(&moves[0], "seawall.delay_ms"), "0");
    assert_eq!(field(&moves[0], "error.type"), "auth");
    assert_eq!(field(&moves[0], "otel.status_code"), "ERROR");
    assert_eq!(field(&moves[1], "seawall.attempt"), "2");
    assert_eq!(field(&moves[1], "server.address"), "b");
    assert_eq!(field(&moves[1], "seawall.from"), a_addr);
    assert_eq!(field(&moves[1], "seawall.cause"), "auth");
    assert_eq!(field(&moves[1], "error.type"), "");
    assert_eq!(field(&moves[1], "otel.status_code"), "");
    // The primary's ladder keeps its own operation span.
    assert_eq!(spans.values().filter(|s| s.name == "operation").count(), 1);
}

/// A fallback route has no ladder of its own: its answer's finish and
/// usage are recorded on the move's span, a whole answer's when it comes
/// and a stream's when it ends (the span kept open until then).
#[test]
fn a_fallback_routes_answer_is_recorded_on_its_move() {
    for stream in [false, true] {
        let capture = Capture::default();
        run(&capture, async {
            let primary = common::chaos().await;
            let backup = common::chaos().await;
            primary
                .script(
                    "openai",
                    vec![common::fault(
                        "status;code=429;retry_after=48489;kind=insufficient_quota",
                    )],
                )
                .unwrap();
            let stack = common::short_stack();
            let fallback = common::fallback_to(&stack, Provider::OpenAi, &backup.base_url());
            let service =
                stack.build_with_fallback(&ClassifyLayer::openai(), common::client(), fallback);
            let ask = common::Ask {
                provider: Provider::OpenAi,
                stream,
                id: "moved".to_owned(),
                fault: None,
                stop_after: None,
            };
            let response = service
                .oneshot(common::request(&primary.base_url(), &ask))
                .await
                .unwrap();
            response.into_body().collect().await.unwrap();
        });
        let spans = capture.seawall_by_id();
        let moves: Vec<_> = spans.values().filter(|s| s.name == "fallback").collect();
        assert_eq!(moves.len(), 1, "{spans:#?}");
        let field = |name: &str| moves[0].fields.get(name).cloned().unwrap_or_default();
        assert_eq!(
            field("gen_ai.response.finish_reasons"),
            "stop",
            "{stream}: {spans:#?}"
        );
        assert_eq!(
            field("gen_ai.usage.output_tokens"),
            "8",
            "{stream}: {spans:#?}"
        );
        assert_eq!(field("error.type"), "", "{stream}");
        assert!(moves[0].closed, "{stream}");
    }
}
