//! Servers that speak OpenAI's chat wire with chunks of their own, read
//! through the guard on tokio's paused clock.

mod common;

use std::time::Duration;

use common::*;
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
