//! The gateway's log line as the `seawall` binary writes it. A test binary
//! of its own: the subscriber is the process's global one.

mod common;

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

/// A client names the model: in the log it is one escaped, bounded
/// value. A newline in it cannot start a line of its own (a forged
/// record), and a megabyte of name is not a megabyte of log.
#[tokio::test]
async fn a_model_name_cannot_forge_or_flood_the_log() {
    let log = Captured::install();
    let chaos = ChaosServer::builder().start().await.unwrap();
    // The model `*`: every name is served.
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let forged =
        r#"gpt-x\n2026-01-01T00:00:00.000000Z  INFO seawall::gateway: request ended model=forged"#;
    let long = "m".repeat(1 << 20);
    for model in [forged, long.as_str()] {
        let body =
            format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]}}"#);
        let mut request = post(&gateway.url("/v1/chat/completions"), "", &[]);
        *request.body_mut() = full(body);
        let (status, _, _) = send(&client(), request).await;
        // The upstream refuses a megabyte of name (seawall-chaos's
        // `model_too_long`); the request ends, and is logged, all the same.
        if model == forged {
            assert_eq!(status, 200);
        }
    }
    drop(gateway);
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let ended: Vec<_> = log
        .lines()
        .filter(|l| l.contains("request ended"))
        .collect();
    assert_eq!(ended.len(), 2, "{log}");
    assert!(
        !log.lines().any(|line| line.starts_with("2026-01-01")),
        "a forged record: {log}"
    );
    assert!(ended[0].contains(r#"model="gpt-x\n2026"#), "{}", ended[0]);
    let longest = log.lines().map(str::len).max().unwrap();
    assert!(longest < 1024, "a {longest}-byte log line");
}
