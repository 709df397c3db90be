//! The gateway's log line says what its headers say: the upstream calls
//! `x-seawall-attempts` counts (a refusal of seawall's called no one), the
//! route `x-seawall-served-by` names. A test binary of its own: the
//! subscriber is the process's global one, installed once for its tests,
//! which tell their lines apart by their routes' names.

mod common;

use std::sync::OnceLock;

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

/// The log of every test in this binary (the subscriber is global).
fn captured() -> &'static Captured {
    static LOG: OnceLock<Captured> = OnceLock::new();
    LOG.get_or_init(Captured::install)
}

/// The "request ended" lines logged so far that contain `needle`.
fn ended_lines(needle: &str) -> Vec<String> {
    let log = String::from_utf8(captured().0.lock().unwrap().clone()).unwrap();
    log.lines()
        .filter(|l| l.contains("request ended") && l.contains(needle))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_refused_request_logs_the_calls_its_header_counts() {
    captured();
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let url = gateway.url("/v1/chat/completions");
    // A quota wall, then a request the cooling route is refused for.
    let wall = "status;code=429;retry_after=48489;kind=insufficient_quota";
    let mut counted = Vec::new();
    for fault in [Some(wall), None] {
        let headers: Vec<_> = fault.map(|f| ("x-chaos-fault", f)).into_iter().collect();
        let (status, headers, _) = send(&client(), post(&url, OPENAI_UNARY, &headers)).await;
        assert_eq!(status, 429);
        counted.push(header(&headers, "x-seawall-attempts").to_owned());
    }
    assert_eq!(counted, ["1", "0"]);
    assert_eq!(chaos.journal().len(), 1, "the cooling route was not called");
    drop(gateway);
    let ended = ended_lines("served_by=\"main\"");
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert!(ended[0].contains("attempts=1"), "{}", ended[0]);
    assert!(ended[1].contains("attempts=0"), "{}", ended[1]);
}

/// A request whose fallback route failed too: the log line names the
/// route as the header does, a fallback's marked as one (as on success).
#[tokio::test]
async fn a_failed_fallback_is_logged_as_its_header_names_it() {
    captured();
    let primary = ChaosServer::builder().start().await.unwrap();
    let spare = ChaosServer::builder().start().await.unwrap();
    let wall = "status;code=429;retry_after=48489;kind=insufficient_quota";
    for chaos in [&primary, &spare] {
        chaos.script("openai", vec![wall.parse().unwrap()]).unwrap();
    }
    let gateway = Running::start(config(
        Wire::OpenAi,
        &[("prim", &primary), ("backup", &spare)],
    ))
    .await;
    let url = gateway.url("/v1/chat/completions");
    let (status, headers, _) = send(&client(), post(&url, OPENAI_UNARY, &[])).await;
    assert_eq!(status, 429);
    assert_eq!(header(&headers, "x-seawall-served-by"), "backup; fallback");
    assert_eq!(spare.journal().len(), 1, "the fallback was called");
    drop(gateway);
    let ended = ended_lines("backup");
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert!(
        ended[0].contains("served_by=\"backup; fallback\""),
        "{}",
        ended[0]
    );
}
