//! Which route a failed continuation's record names: the one that failed
//! it, not a fallback the walk after it skipped without a call.

#[path = "common/chat_script.rs"]
mod chat_script;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::{Attempt, BoxError, Code, Failure, Receipt, RouteId};
use seawall_resume::{ResumeLayer, ResumeRequestBody, Resumed};
use tower::{ServiceBuilder, ServiceExt, service_fn};

use chat_script::{chunk, cut, stream};

/// What a fallback hands back when its primary answers a continuation
/// 503 and its one other route is cooling down: the primary's failure,
/// with a receipt of the primary's attempt and then the cooling route's
/// skip (`route_cooling_down`, no call made). `named` says whether the
/// failure names its route (a ladder's does).
fn primary_503_then_cooling_skip(named: bool) -> Box<Failure> {
    let mut receipt = Receipt::default();
    receipt.push(Attempt::new(
        RouteId::new("api.example"),
        Some(Code::ProviderUnavailable),
        Duration::ZERO,
    ));
    receipt.push(Attempt::new(
        RouteId::new("spare"),
        Some(Code::RouteCoolingDown),
        Duration::ZERO,
    ));
    let failure = Failure::new(Code::ProviderUnavailable).with_receipt(receipt);
    Box::new(if named {
        failure.with_route(RouteId::new("api.example"))
    } else {
        failure
    })
}

/// The routes the records of the resumes name, each continuation failing
/// as [`primary_503_then_cooling_skip`] says.
async fn routes_recorded(named: bool) -> Vec<Option<RouteId>> {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |_: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    if first {
                        Ok(stream(vec![
                            Ok(chunk("w1")),
                            Ok(chunk(" w2")),
                            Err(cut("w1 w2")),
                        ]))
                    } else {
                        Err(primary_503_then_cooling_skip(named) as BoxError)
                    }
                }
            },
        ));
    let body = serde_json::json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    // Still cut: every continuation failed.
    assert!(response.into_body().collect().await.is_err());
    let report = resumed.report();
    assert!(!report.resumes.is_empty());
    report
        .resumes
        .iter()
        .inspect(|record| assert_eq!(record.failed, Some(Code::ProviderUnavailable)))
        .map(|record| record.route.clone())
        .collect()
}

/// The failure names its route: the record names it, not the cooling
/// route skipped after it (the receipt's last attempt).
#[tokio::test]
async fn a_failed_continuation_names_the_route_that_failed_it() {
    for route in routes_recorded(true).await {
        assert_eq!(route, Some(RouteId::new("api.example")));
    }
}

/// A failure that names no route: the last attempt of its receipt that
/// called an upstream, not a skip that called no one.
#[tokio::test]
async fn without_a_named_route_the_last_attempt_sent_is_named() {
    for route in routes_recorded(false).await {
        assert_eq!(route, Some(RouteId::new("api.example")));
    }
}
