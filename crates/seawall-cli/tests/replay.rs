//! The replay's stories, asserted: each incident through each stack against
//! a real chaos server, outcomes and counts from the journal and from what
//! the caller received. A scale of 5 ms per incident second leaves
//! generous margins for loopback latency on a loaded machine.

use seawall_chaos::ChaosServer;
use seawall_cli::replay::{Incident, Row, StackKind, incidents, run_incident};

const SCALE: f64 = 5.0;

fn incident(key: &str) -> Incident {
    incidents()
        .into_iter()
        .find(|i| i.key == key)
        .expect("a known incident")
}

async fn row(key: &str, stack: StackKind) -> Row {
    let chaos = ChaosServer::builder().start().await.expect("chaos starts");
    run_incident(&chaos, &incident(key), stack, SCALE).await
}

#[tokio::test]
async fn a_quota_wall_is_one_attempt_for_seawall_and_nine_for_the_naive_stack() {
    let seawall = row("quota_wall", StackKind::Seawall).await;
    assert_eq!((seawall.attempts, seawall.outcome), (1, "error"));
    assert_eq!(seawall.code.as_deref(), Some("quota_exhausted"));
    let naive = row("quota_wall", StackKind::Naive).await;
    assert_eq!(naive.attempts, 9, "3 stream attempts × 3 API attempts");
    assert_eq!(naive.code.as_deref(), Some("http_429"));
}

#[tokio::test]
async fn a_silent_stream_fails_over_after_one_first_byte_timeout() {
    let seawall = row("silent_stream", StackKind::Seawall).await;
    assert_eq!(seawall.attempts, 2);
    assert_eq!(seawall.routes, vec!["primary", "fallback"]);
    assert_eq!((seawall.outcome, seawall.tokens), ("ok", 8));
    // One 15 s first-byte bound, then a healthy fallback: far below one 600 s attempt.
    assert!(seawall.elapsed_s < 100.0, "{seawall:?}");
}

#[tokio::test]
async fn a_reset_after_content_is_resumed_not_replayed() {
    let seawall = row("reset_after_400", StackKind::Seawall).await;
    assert!(!seawall.duplicated);
    assert_eq!(
        (seawall.outcome, seawall.tokens, seawall.attempts),
        ("ok", 600, 2)
    );
    let naive = row("reset_after_400", StackKind::Naive).await;
    assert!(
        naive.duplicated,
        "the naive caller is shown the first 400 tokens twice"
    );
    assert_eq!(naive.tokens, 1000);
}

#[tokio::test]
async fn empty_answers_and_lone_frames_are_retried_by_seawall_and_accepted_by_the_naive_stack() {
    for key in ["empty_200", "frame_then_eof", "overloaded_before_content"] {
        let seawall = row(key, StackKind::Seawall).await;
        assert_eq!(
            (seawall.attempts, seawall.outcome, seawall.tokens),
            (2, "ok", 8),
            "{key}"
        );
    }
    for key in ["empty_200", "frame_then_eof"] {
        let naive = row(key, StackKind::Naive).await;
        assert_eq!(
            (naive.attempts, naive.outcome, naive.tokens),
            (1, "ok", 0),
            "{key}: accepted as done"
        );
    }
    // An in-stream error is raised, as the SDKs raise it: the naive caller
    // restarts the stream.
    let naive = row("overloaded_before_content", StackKind::Naive).await;
    assert_eq!(
        (naive.attempts, naive.outcome, naive.tokens),
        (2, "ok", 8),
        "restarted"
    );
}

#[tokio::test]
async fn permanent_and_policy_failures_reach_the_server_once() {
    let context = row("context_length", StackKind::Seawall).await;
    assert_eq!(
        (context.attempts, context.code.as_deref()),
        (1, Some("context_too_long"))
    );
    let refusal = row("refusal", StackKind::Seawall).await;
    assert_eq!(
        (refusal.attempts, refusal.code.as_deref()),
        (1, Some("refused"))
    );
    let naive = row("context_length", StackKind::Naive).await;
    assert_eq!(naive.attempts, 9);
}

#[tokio::test]
async fn an_interruption_after_content_is_surfaced_with_its_prefix() {
    let seawall = row("overloaded_after_content", StackKind::Seawall).await;
    assert_eq!(
        (seawall.attempts, seawall.outcome, seawall.tokens),
        (1, "error", 50)
    );
    assert_eq!(seawall.code.as_deref(), Some("stream_interrupted"));
    // The naive caller restarts the failed stream: the first 50 tokens
    // are shown twice.
    let naive = row("overloaded_after_content", StackKind::Naive).await;
    assert_eq!(
        (
            naive.attempts,
            naive.outcome,
            naive.tokens,
            naive.duplicated
        ),
        (2, "ok", 250, true),
        "restarted"
    );
}

#[tokio::test]
async fn a_brief_503_and_a_cancelled_caller() {
    let seawall = row("brief_503", StackKind::Seawall).await;
    assert_eq!(
        (seawall.attempts, seawall.outcome, seawall.billed),
        (2, "ok", 1)
    );
    let cancelled = row("caller_cancels", StackKind::Seawall).await;
    assert_eq!((cancelled.attempts, cancelled.outcome), (1, "cancelled"));
    assert_eq!(cancelled.code.as_deref(), Some("cancelled"));
    assert_eq!(cancelled.tokens, 20);
}

#[tokio::test]
async fn route_scoped_walls_move_to_the_backup_at_once_and_a_blip_stays() {
    // A quota wall or a bad key condemns the route, not the request: one
    // attempt on it, then the backup answers, with no backoff wait.
    for key in ["quota_wall_with_backup", "auth_with_second_key"] {
        let seawall = row(key, StackKind::Seawall).await;
        assert_eq!(seawall.attempts, 2, "{key}: {seawall:?}");
        assert_eq!(seawall.routes, vec!["primary", "fallback"], "{key}");
        assert_eq!(seawall.outcome, "ok", "{key}");
        assert!(seawall.elapsed_s < 30.0, "{key}: {seawall:?}");
        let naive = row(key, StackKind::Naive).await;
        assert_eq!(
            naive.outcome, "error",
            "{key}: no backup for the naive stack"
        );
    }
    // A brief 503 is a blip on a healthy route: the same route answers and
    // the fallback is never called.
    let seawall = row("brief_503_with_fallback", StackKind::Seawall).await;
    assert_eq!(seawall.attempts, 2, "{seawall:?}");
    assert_eq!(seawall.routes, vec!["primary"]);
    assert_eq!(seawall.outcome, "ok");
}
