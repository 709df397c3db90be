//! The assembled stack with `Stack::resume` over a real chaos server: the
//! stream cut mid-answer reads as one answer. Moved from `src/resume.rs`'s
//! unit tests, whose set-up it repeated: the run lives in
//! `tests/common/resume.rs`, shared with `tests/resume_metrics.rs`.
#![cfg(all(
    feature = "resume",
    feature = "classify",
    feature = "deadline",
    feature = "retry",
    feature = "breaker",
    feature = "stream",
    feature = "fallback"
))]

mod common;

use seawall_chaos::answer_text;

/// The assembled stack with `Stack::resume`: incident 3 reads as one
/// answer, every token once.
#[tokio::test]
async fn the_assembled_stack_resumes_a_reset_stream() {
    let incident = common::resume::reset_stream_resumed().await;
    assert_eq!(incident.text, answer_text(600));
    assert_eq!(incident.resumed.count(), 1);
    assert_eq!(incident.chaos.journal().len(), 2);
}
