//! The gateway's log line counts a request's upstream calls as
//! `x-seawall-attempts` does: a refusal of seawall's called no one. A test
//! binary of its own: the subscriber is the process's global one.

mod common;

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

#[tokio::test]
async fn a_refused_request_logs_the_calls_its_header_counts() {
    let log = Captured::install();
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
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let ended: Vec<_> = log
        .lines()
        .filter(|l| l.contains("request ended"))
        .collect();
    assert_eq!(ended.len(), 2, "{log}");
    assert!(ended[0].contains("attempts=1"), "{}", ended[0]);
    assert!(ended[1].contains("attempts=0"), "{}", ended[1]);
}
