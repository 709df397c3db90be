//! The gateway's Prometheus recorder runs no upkeep of its own: without a
//! thread draining it, every histogram sample would wait in its bucket
//! until a scrape, and a gateway nobody scrapes would grow for ever. (Its
//! own test binary: the recorder is the whole process's. Linux only: it
//! reads the process's thread names from `/proc`.)
#![cfg(all(feature = "metrics", target_os = "linux"))]

mod common;

use common::*;
use seawall_chaos::ChaosServer;
use seawall_gateway::Wire;

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect()
}

#[tokio::test]
async fn the_recorder_is_kept_up_without_a_scrape() {
    assert!(
        !thread_names().iter().any(|name| name == "seawall-upkeep"),
        "no recorder yet"
    );
    let chaos = ChaosServer::builder().start().await.unwrap();
    let _gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let names = thread_names();
    assert_eq!(
        names
            .iter()
            .filter(|name| *name == "seawall-upkeep")
            .count(),
        1,
        "{names:?}"
    );
}
