//! Errors as a tower user prints them: the chain (each error's text, then
//! each `source`'s, joined by `: `, as `anyhow`'s `{:#}` prints it) says
//! every text once, and `Failure::find` still sees the verdict through
//! every wrapper.

use std::error::Error as StdError;

use http::{Request, Response};
use seawall::core::recording::ReplayBody;
use seawall::core::{AnotherRoute, BoxError, Code, Failure, Receipt, RouteId};
use tower::{Layer, ServiceExt};

/// The chain as `anyhow`'s `{:#}` prints it.
fn chain(error: &(dyn StdError + 'static)) -> String {
    std::iter::successors(Some(error), |&link| link.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// No link's text is said again right after it, nor anywhere else in the
/// chain.
fn said_once(error: &(dyn StdError + 'static)) {
    let shown = chain(error);
    eprintln!("CHAIN {shown}");
    for link in std::iter::successors(Some(error), |&link| link.source()) {
        let text = link.to_string();
        assert!(!shown.contains(&format!("{text}: {text}")), "{shown}");
        assert_eq!(shown.matches(&text).count(), 1, "{text:?} in {shown}");
    }
}

/// A breaker over a route that met a quota wall: the call that met it,
/// then the refusal of the route cooling down. Each says its text once,
/// the failure found through the breaker.
#[cfg(feature = "breaker")]
#[tokio::test(start_paused = true)]
async fn a_breakers_refusal_and_failure_say_their_text_once() {
    use seawall::breaker::BreakerLayer;
    let upstream = tower::service_fn(|_: Request<String>| async {
        let wall = Failure::new(Code::QuotaExhausted).with_status(429);
        Err::<Response<String>, BoxError>(Box::new(wall))
    });
    let service = BreakerLayer::new().layer(upstream);
    let request = || {
        Request::post("https://api.example.com/v1/chat/completions")
            .body(String::new())
            .unwrap()
    };
    let met: BoxError = service.clone().oneshot(request()).await.unwrap_err().into();
    said_once(&*met);
    assert_eq!(Failure::find(&*met).unwrap().code(), Code::QuotaExhausted);

    let refused: BoxError = service.oneshot(request()).await.unwrap_err().into();
    said_once(&*refused);
    let failure = Failure::find(&*refused).expect("the refusal's failure");
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert!(
        chain(&*refused).contains("cooling down after quota_exhausted"),
        "{}",
        chain(&*refused)
    );
}

/// A route set's signal over a member's failure says the signal, then the
/// failure, once.
#[test]
fn another_routes_signal_says_the_failure_once() {
    let failure = Failure::new(Code::Auth).with_route(RouteId::new("r"));
    let signal: BoxError = Box::new(AnotherRoute::new(failure));
    said_once(&*signal);
    assert_eq!(Failure::find(&*signal).unwrap().code(), Code::Auth);
}

/// The ladder's unclassified path: an error of the client's own comes back
/// with the receipt attached, its text said once.
#[cfg(feature = "retry")]
#[tokio::test(start_paused = true)]
async fn an_unclassified_error_with_its_receipt_says_its_text_once() {
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    let upstream = tower::service_fn(|_: Request<ReplayBody<String>>| async {
        let reset: BoxError = "connection reset".into();
        Err::<Response<String>, BoxError>(reset)
    });
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited());
    let request = Request::post("https://api.example.com/v1/chat/completions")
        .body(String::from("{}"))
        .unwrap();
    let error = ladder.layer(upstream).oneshot(request).await.unwrap_err();
    said_once(&*error);
    assert!(
        chain(&*error).ends_with(": connection reset"),
        "{}",
        chain(&*error)
    );
    assert_eq!(Receipt::of_error(&*error).unwrap().attempts.len(), 1);
}

/// A connection refused, read by the classifier over `ReqwestService`:
/// reqwest's error is reached from the failure's cause by `source` alone
/// (as `anyhow`'s `chain()` walks), its `is_connect` readable; the chain
/// says each text once.
#[cfg(all(feature = "reqwest", feature = "classify"))]
#[tokio::test]
async fn reqwest_errors_are_reached_from_the_cause_by_source() {
    use seawall::classify::ClassifyLayer;
    use seawall::reqwest::{ReqwestService, reqwest};
    // Bind a port, then free it: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = seawall::reqwest::client_builder()
        .no_proxy()
        .build()
        .unwrap();
    let service = ClassifyLayer::openai().layer(ReqwestService::new(client));
    let request = Request::get(format!("http://127.0.0.1:{port}/v1/models?key=SECRET"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let error = service.oneshot(request).await.map(drop).unwrap_err();
    let failure = Failure::find(&*error).expect("classified");
    assert_eq!(failure.code(), Code::Transport);
    let cause = failure.cause().expect("the client's error");
    said_once(cause);
    let cause: &(dyn StdError + 'static) = cause;
    let reqwest = std::iter::successors(Some(cause), |&link| link.source())
        .find_map(|link| link.downcast_ref::<reqwest::Error>())
        .expect("reqwest's error, by source");
    assert!(reqwest.is_connect(), "{reqwest:?}");
    assert!(!chain(cause).contains("SECRET"), "{}", chain(cause));
}

/// A request reqwest cannot send: the variant, then its failure, once; the
/// failure keeps reqwest's error as its cause.
#[cfg(feature = "reqwest")]
#[tokio::test]
async fn an_invalid_request_keeps_reqwests_error_as_its_cause() {
    use seawall::reqwest::{ReqwestService, reqwest};
    let service = ReqwestService::new(seawall::reqwest::client_builder().build().unwrap());
    let request = Request::get("ftp://127.0.0.1:9/v1/models?key=SECRET")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let error = service.oneshot(request).await.map(drop).unwrap_err();
    said_once(&error);
    let failure = Failure::find(&error).expect("the variant's failure");
    assert_eq!(failure.code(), Code::BadRequest);
    let cause = failure.cause().expect("reqwest's error");
    let reqwest = cause.downcast_ref::<reqwest::Error>().expect("as it is");
    assert!(reqwest.is_builder(), "{reqwest:?}");
    assert!(!chain(cause).contains("SECRET"), "{}", chain(cause));
}
