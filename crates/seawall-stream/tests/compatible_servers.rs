//! Servers that speak OpenAI's chat wire with chunks of their own, read
//! through the guard on tokio's paused clock.

mod common;

use std::time::Duration;

use common::*;
use seawall_core::FinishKind;
use seawall_stream::StreamGuardLayer;

/// Perplexity's concise mode while it searches the web (`stream_mode:
/// "concise"`): a `chat.reasoning` chunk whose delta holds the search step
/// beside an empty text.
const SEARCHING: &str = "data: {\"id\":\"cfa38f9d-fdbc-4ac6-a5d2-a3010b6a33a6\",\"model\":\"sonar-pro\",\"created\":1759441590,\"object\":\"chat.reasoning\",\"choices\":[{\"index\":0,\"finish_reason\":null,\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning_steps\":[{\"thought\":\"Searching the web for Seattle's current weather...\",\"type\":\"web_search\",\"web_search\":{\"search_results\":[],\"search_keywords\":[\"Seattle weather\"]}}]}}]}\n\n";

/// The answer after the search: its text, its finish, `[DONE]`.
const ANSWER: [&str; 3] = [
    "data: {\"id\":\"cfa38f9d-fdbc-4ac6-a5d2-a3010b6a33a6\",\"model\":\"sonar-pro\",\"created\":1759441590,\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"finish_reason\":null,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}]}\n\n",
    "data: {\"id\":\"cfa38f9d-fdbc-4ac6-a5d2-a3010b6a33a6\",\"model\":\"sonar-pro\",\"created\":1759441590,\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: [DONE]\n\n",
];

/// A search that outlasts the interactive preset's 60 s first-content
/// bound, a step every 10 s, then the answer: the model at work, not cut
/// (cut, it would be asked again, search again and be billed again), and
/// delivered whole. Past the chunks a plain shape is kept from, the steps
/// still count as the model at work.
#[tokio::test(start_paused = true)]
async fn a_perplexity_search_outlives_the_first_content_bound() {
    let mut script = Vec::new();
    for _ in 0..7 {
        script.push(wait(10.0));
        script.push(send(SEARCHING));
    }
    script.extend(ANSWER.map(send));
    let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
        .await
        .unwrap_or_else(|e| panic!("cut while searching: {e}"));
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let sent = [SEARCHING.repeat(7), ANSWER.concat()].concat();
    assert_eq!(d.bytes, sent.as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(
        d.report.time_to_first_content,
        Some(Duration::from_secs(70))
    );
    assert_eq!(d.report.content_events, 1);
}

/// A chat stream ending in `finish`, with `text` before it (none: an
/// empty answer): its error code (or `ok`) and its finish.
async fn ended_by(text: Option<&str>, finish: &str) -> (String, Option<(FinishKind, String)>) {
    let content = text.map(openai_delta).unwrap_or_default();
    let stream = format!(
        "{OPENAI_ROLE}{content}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}]}}\n\n{DONE}"
    );
    match run(CHAT, &stream).await {
        Outcome::Failed(failure) => (format!("failed {}", failure.code()), None),
        Outcome::Delivered(d) => (
            d.error
                .as_ref()
                .map_or("ok".to_owned(), |f| format!("cut {}", f.code())),
            d.report
                .finish
                .as_ref()
                .map(|f| (f.kind, f.reason.to_string())),
        ),
    }
}

/// The finish words of other servers, in the stream as in a whole
/// answer, mean what the OpenAI word of the same sense does: Zhipu's
/// `sensitive` is a filter (before content not an empty answer retried
/// until the review lets it pass), `network_error` and watsonx's
/// `cancelled` an abort, watsonx's `time_limit` and a proxied
/// `MAX_TOKENS` a limit (an empty one delivered, as an empty `length`
/// is, not billed again), `SAFETY` a filter, `refusal` a refusal.
#[tokio::test(start_paused = true)]
async fn compatible_servers_finish_words_mean_what_the_openai_word_does() {
    for (word, like) in [
        ("sensitive", "content_filter"),
        ("SAFETY", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("model_context_window_exceeded", "length"),
        ("network_error", "abort"),
        ("cancelled", "abort"),
        ("time_limit", "length"),
        ("MAX_TOKENS", "length"),
        ("max_tokens", "length"),
    ] {
        for text in [Some("Hello"), None] {
            let (code, finish) = ended_by(text, word).await;
            let (expected, expected_finish) = ended_by(text, like).await;
            assert_eq!(code, expected, "{word} after {text:?}");
            assert_ne!(code, "failed empty_response", "{word} after {text:?}");
            assert_eq!(
                finish.map(|(kind, reason)| (kind, reason == word)),
                expected_finish.map(|(kind, _)| (kind, true)),
                "{word} after {text:?}"
            );
        }
    }
    // A refusal is a refusal with content or without.
    for text in [Some("Hello"), None] {
        let (code, _) = ended_by(text, "refusal").await;
        assert!(code.ends_with("refused"), "{text:?}: {code}");
    }
    // A word nobody documents stays complete, as before.
    assert_eq!(
        ended_by(Some("Hello"), "eos_token_new").await,
        (
            "ok".to_owned(),
            Some((FinishKind::Other, "eos_token_new".to_owned()))
        )
    );
}
