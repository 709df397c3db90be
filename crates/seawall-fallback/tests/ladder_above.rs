//! Under a retry ladder ([`OuterLadder`] in the request), an attempt the
//! fallback recorded itself (a route without a ladder of its own) is
//! handed up in a [`Receipt`]: a ladder that finds none counts the
//! attempt, and its tokens, again.

mod common;

use std::convert::Infallible;

use bytes::Bytes;
use common::{Req, Resp, request};
use http_body_util::Full;
use seawall_core::recording::OuterLadder;
use seawall_core::{Receipt, RouteId, StopReason, Usage};
use seawall_fallback::FallbackLayer;
use tower::{Layer, ServiceExt, service_fn};

/// A 200 with the usage the provider reported, as the classifier leaves it.
fn answer() -> Resp {
    let mut response = http::Response::new(Full::new(Bytes::from_static(b"{}")));
    response.extensions_mut().insert(Usage::new(100, 50));
    response
}

/// The receipt on the primary's answer, through a fallback over a primary
/// without a ladder, a ladder above when `ladder_above`.
async fn receipt_of_primarys_answer(ladder_above: bool) -> Option<Receipt> {
    let spare = service_fn(|_: Req| async { Ok::<_, Infallible>(answer()) });
    let primary = service_fn(|_: Req| async { Ok::<_, Infallible>(answer()) });
    let service = FallbackLayer::new(spare)
        .route(RouteId::new("spare"))
        .layer(primary);
    let mut request = request(None);
    if ladder_above {
        request.extensions_mut().insert(OuterLadder);
    }
    let response = service.oneshot(request).await.expect("the primary answers");
    response.extensions().get::<Receipt>().cloned()
}

#[tokio::test]
async fn a_ladderless_primarys_answer_is_handed_up_as_recorded() {
    let receipt = receipt_of_primarys_answer(true).await;
    if cfg!(feature = "metrics") {
        // Recorded here: the ladder is told so.
        let receipt = receipt.expect("the attempt recorded here, handed up");
        let attempts: Vec<_> = receipt
            .attempts
            .iter()
            .map(|a| (a.route.as_str(), a.code, a.billed, a.usage()))
            .collect();
        assert_eq!(
            attempts,
            [("primary.example", None, true, Some(Usage::new(100, 50)))]
        );
        assert_eq!(receipt.stop, Some(StopReason::Succeeded));
        assert!(!receipt.fallback);
    } else {
        // Recorded by no one here: the ladder above counts it.
        assert_eq!(receipt, None);
    }
}

#[tokio::test]
async fn without_a_ladder_above_the_primarys_answer_is_left_alone() {
    assert_eq!(receipt_of_primarys_answer(false).await, None);
}
