//! A stream asked for several choices (OpenAI's `"n": 2`) that ends
//! without its `[DONE]` (the body's clean end) before the second choice's
//! first chunk is cut, not whole: through the assembled stack, against a
//! server on loopback that reads the request and writes the stream as
//! given. With its `[DONE]` it is whole as the server gave it (a server
//! that ignores `n`, as OpenRouter and llama-cpp-python do, writes one
//! choice and its end marker: a retry would only buy the same again).
//! The same stream with every choice asked for finished, or asked for one
//! choice, is whole, as before; Gemini's `candidateCount` changes nothing
//! (its stream has no end marker to tell a cut from a server that ignored
//! it); nor does an `n` on a wire that has no choices (Anthropic's).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::{Code, Failure};
use tokio::io::AsyncWriteExt;
use tower::ServiceExt;

/// A server on loopback that reads each request whole and answers it
/// `200` with `content_type` and `body`, then closes the connection (the
/// body's clean end). Returns its base URL and how many requests it read.
async fn serve(content_type: &'static str, body: String) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = body.clone();
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let Ok(Some(_request)) = seawall_test::raw::read_request(&mut stream).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (base, calls)
}

/// The caller's outcome: `None` when the answer came whole, else the
/// failure's code (before content or from the body).
async fn outcome(
    classify: ClassifyLayer,
    path: &str,
    request_body: &'static str,
    content_type: &'static str,
    stream: String,
) -> Option<Code> {
    let (base, calls) = serve(content_type, stream).await;
    let request = http::Request::post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(request_body.as_bytes())))
        .unwrap();
    let stack = common::short_stack().build(&classify, common::client());
    let failure = match stack.oneshot(request).await {
        Err(error) => Some(Failure::find(&*error).cloned().expect("classified")),
        Ok(response) => match response.into_body().collect().await {
            Ok(_) => None,
            Err(error) => Some(Failure::find(&*error).cloned().expect("classified")),
        },
    };
    assert!(calls.load(Ordering::SeqCst) >= 1, "the server was asked");
    failure.map(|failure| failure.code())
}

fn sse(events: &[&str]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

const CHAT: &str = "/v1/chat/completions";

/// OpenAI's chunk of choice `index`: its text, or its finish.
fn chunk(index: u32, delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{{"index":{index},"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]}}"#
    )
}

/// Choice `index` whole: its role, its text, its finish.
fn whole_choice(index: u32) -> Vec<String> {
    vec![
        chunk(index, r#"{"role":"assistant","content":""}"#, None),
        chunk(index, &format!(r#"{{"content":"Answer {index}."}}"#), None),
        chunk(index, "{}", Some("stop")),
    ]
}

fn chat_stream(choices: &[u32], done: bool) -> String {
    let mut events: Vec<String> = choices.iter().flat_map(|&i| whole_choice(i)).collect();
    if done {
        events.push("[DONE]".to_owned());
    }
    sse(&events.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn openai_n_2_cut_before_the_second_choice_without_done_is_truncated() {
    const TWO: &str =
        r#"{"model":"gpt-x","stream":true,"n":2,"messages":[{"role":"user","content":"hi"}]}"#;
    let openai = ClassifyLayer::openai;
    let event_stream = "text/event-stream";
    // Choice 0 whole, then the body's clean end with no `[DONE]`: choice
    // 1 never came. Every case is run before any is judged, so each is
    // seen to fail alone.
    let mut cut = Vec::new();
    let code = outcome(openai(), CHAT, TWO, event_stream, chat_stream(&[0], false)).await;
    cut.push(("n: 2".to_owned(), code));
    // `n` written `2.0` asks for two as well.
    let code = outcome(
        openai(),
        CHAT,
        r#"{"model":"gpt-x","stream":true,"n":2.0,"messages":[]}"#,
        event_stream,
        chat_stream(&[0], false),
    )
    .await;
    cut.push(("n: 2.0".to_owned(), code));
    let whole: Vec<_> = cut
        .iter()
        .filter(|(_, code)| *code != Some(Code::Truncated))
        .collect();
    assert!(whole.is_empty(), "not cut: {whole:?}");
    // Choice 0 whole and its `[DONE]`: a server that ignored `n` said the
    // answer is whole.
    let code = outcome(openai(), CHAT, TWO, event_stream, chat_stream(&[0], true)).await;
    assert_eq!(code, None);
    // Both choices whole, one after the other or interleaved: whole.
    let code = outcome(
        openai(),
        CHAT,
        TWO,
        event_stream,
        chat_stream(&[0, 1], true),
    )
    .await;
    assert_eq!(code, None);
    let (zero, one) = (whole_choice(0), whole_choice(1));
    let interleaved: Vec<&str> = zero
        .iter()
        .zip(&one)
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .chain(["[DONE]"])
        .collect();
    let code = outcome(openai(), CHAT, TWO, event_stream, sse(&interleaved)).await;
    assert_eq!(code, None);
}

#[tokio::test]
async fn openai_one_choice_asked_is_whole_as_before() {
    for body in [
        r#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        r#"{"model":"gpt-x","stream":true,"n":1,"messages":[]}"#,
        // Not a count: no claim, read as before.
        r#"{"model":"gpt-x","stream":true,"n":"2","messages":[]}"#,
    ] {
        for done in [true, false] {
            let code = outcome(
                ClassifyLayer::openai(),
                CHAT,
                body,
                "text/event-stream",
                chat_stream(&[0], done),
            )
            .await;
            assert_eq!(code, None, "{body} [DONE]: {done}");
        }
    }
}

/// Gemini's chunk of candidate `index` (proto3 JSON leaves index 0 out).
fn candidate(index: u32, text: &str, finish: bool) -> String {
    let index = if index == 0 {
        String::new()
    } else {
        format!(r#","index":{index}"#)
    };
    let finish = if finish {
        r#","finishReason":"STOP""#
    } else {
        ""
    };
    format!(
        r#"{{"candidates":[{{"content":{{"parts":[{{"text":"{text}"}}],"role":"model"}}{finish}{index}}}],"modelVersion":"gemini-x"}}"#
    )
}

fn gemini_chunks(candidates: &[u32]) -> Vec<String> {
    candidates
        .iter()
        .flat_map(|&i| {
            [
                candidate(i, &format!("Answer {i}"), false),
                candidate(i, ".", true),
            ]
        })
        .collect()
}

const GEMINI_SSE: &str = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";
const GEMINI_ARRAY: &str = "/v1beta/models/gemini-x:streamGenerateContent";

/// Gemini's stream of `candidates`, as server-sent events or as the JSON
/// array.
fn gemini_stream(candidates: &[u32], array: bool) -> String {
    let chunks = gemini_chunks(candidates);
    if array {
        format!("[{}]", chunks.join(",\r\n"))
    } else {
        chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect()
    }
}

async fn gemini(body: &'static str, candidates: &[u32], array: bool) -> Option<Code> {
    let (path, content_type) = if array {
        (GEMINI_ARRAY, "application/json")
    } else {
        (GEMINI_SSE, "text/event-stream")
    };
    outcome(
        ClassifyLayer::gemini(),
        path,
        body,
        content_type,
        gemini_stream(candidates, array),
    )
    .await
}

/// Gemini's `candidateCount` changes nothing: a stream of one candidate
/// ends as it would have (its JSON array's `]` closes a cut and a server
/// that ignored the count alike; its event stream has no end marker).
#[tokio::test]
async fn gemini_candidate_count_2_changes_nothing() {
    const TWO: &str = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":1,"candidateCount":2}}"#;
    const SNAKE: &str = r#"{"contents":[],"generation_config":{"candidate_count":"2"}}"#;
    for array in [false, true] {
        for body in [TWO, SNAKE] {
            for candidates in [&[0][..], &[0, 1]] {
                assert_eq!(
                    gemini(body, candidates, array).await,
                    None,
                    "{body} array: {array} {candidates:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn gemini_one_candidate_asked_is_whole_as_before() {
    for array in [false, true] {
        for body in [
            r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            r#"{"contents":[],"generationConfig":{"candidateCount":1}}"#,
            // OpenAI's member means nothing to Gemini.
            r#"{"contents":[],"n":2}"#,
        ] {
            assert_eq!(
                gemini(body, &[0], array).await,
                None,
                "{body} array: {array}"
            );
        }
    }
}

/// Anthropic has no choices: an `n` in its body (ignored there) changes
/// nothing.
#[tokio::test]
async fn anthropic_has_no_choices_to_ask_for() {
    let events = [
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ];
    let stream: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    let code = outcome(
        ClassifyLayer::anthropic(),
        "/v1/messages",
        r#"{"model":"claude-x","max_tokens":64,"stream":true,"n":2,"messages":[{"role":"user","content":"hi"}]}"#,
        "text/event-stream",
        stream,
    )
    .await;
    assert_eq!(code, None);
}
