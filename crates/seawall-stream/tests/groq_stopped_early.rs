//! Groq's `x_groq.error`, a stream it stopped early, read through the
//! guard: an in-stream error, not the finish beside it.

mod common;

use common::*;
use seawall_core::{Action, Class, Code, Failure};

/// Groq's last chunk when it stopped the stream early: a finish, and
/// `x_groq.error` saying why ("An error string indicating why a stream
/// was stopped early", groq-python's `XGroq`).
fn stopped(finish: &str) -> String {
    format!(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"llama-3.3-70b-versatile\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}],\"x_groq\":{{\"id\":\"req_1\",\"error\":\"over capacity\"}}}}\n\n"
    )
}

/// The cause an interrupted stream's failure carries.
fn cause(failure: &Failure) -> Option<Code> {
    failure.interrupted().and_then(|i| i.cause)
}

/// A stream Groq stopped early is cut, not complete, whatever finish its
/// last chunk wrote: the answer so far is handed on, the failure is the
/// stop, a passing overload carrying Groq's words. Before content, the
/// stop is retried.
#[tokio::test]
async fn groq_stopped_early_is_an_in_stream_error() {
    for finish in ["stop", "tool_calls"] {
        let stream = format!(
            "{OPENAI_ROLE}{}{}{DONE}",
            openai_delta("Hello"),
            stopped(finish)
        );
        let d = delivered(run(CHAT, &stream).await);
        let failure = d.error.as_ref().unwrap_or_else(|| {
            panic!(
                "{finish}: delivered as complete, {:?}",
                d.report.finish.as_ref().map(|f| f.kind)
            )
        });
        assert_eq!(failure.code(), Code::StreamInterrupted, "{finish}");
        assert_eq!(cause(failure), Some(Code::Overloaded), "{finish}");
        let message = failure.message().unwrap_or_default();
        assert!(message.contains("over capacity"), "{finish}: {message}");
        assert!(!d.report.completed_task(), "{finish}");
        // The stop's own chunk is not handed on.
        let at = stream.find("data: {\"id\":\"c\"").unwrap();
        assert_eq!(d.bytes, stream.as_bytes()[..at], "{finish}");

        let before = format!("{OPENAI_ROLE}{}{DONE}", stopped(finish));
        let failure = failed(run(CHAT, &before).await);
        assert_eq!(
            (failure.code(), failure.class(), failure.action()),
            (Code::Overloaded, Class::Transient, Action::Retry),
            "{finish} before content"
        );
        let message = failure.message().unwrap_or_default();
        assert!(message.contains("over capacity"), "{finish}: {message}");
    }
    // An `x_groq` without an error (its usage, its id) is Groq's usual
    // last chunk: complete.
    let usual = format!(
        "{OPENAI_ROLE}{}data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}],\"x_groq\":{{\"id\":\"req_1\",\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":1}}}}}}\n\n{DONE}",
        openai_delta("Hello")
    );
    let d = delivered(run(CHAT, &usual).await);
    assert!(d.error.is_none(), "{:?}", d.error);
    assert!(d.report.completed_task());
}
