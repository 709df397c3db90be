//! An event stream through the gateway, read as openai-python reads one:
//! an upstream that opens with a byte order mark (split over writes) and
//! sends keep-alives with no data (`event: ping`, an empty `data:`)
//! answers a client whose SDK parses every event it dispatches, and fails
//! mid-answer on one it cannot.

mod common;

use common::*;
use seawall_gateway::Wire;
use seawall_test::canned::{
    OPENAI_DONE_EVENT, OPENAI_ROLE_EVENT, OPENAI_STOP_EVENT, openai_delta_event,
};

/// One chunk of a chunked body, of any bytes.
fn chunk_of(bytes: &[u8]) -> Step {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    Step::Write(out)
}

/// The events openai-python's `SSEDecoder` dispatches from `body`, each
/// parsed as its `Stream` parses one, up to `[DONE]`; or what it raises.
/// As the SDK does: lines decoded and split on `:` as they are (a byte
/// order mark stays in the first field's name), an event dispatched at a
/// blank line once any field was set, the last `id` kept across events.
fn as_openai_python_reads(body: &[u8]) -> Result<Vec<serde_json::Value>, String> {
    let text = String::from_utf8(body.to_vec()).map_err(|e| e.to_string())?;
    let (mut event, mut data, mut id, mut retry) = (None::<String>, Vec::new(), None, None);
    let mut parsed = Vec::new();
    // Python's `bytes.splitlines`: CRLF, LF and CR each end a line.
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for line in text.lines() {
        if line.is_empty() {
            let set = event.as_deref().is_some_and(|e| !e.is_empty())
                || !data.is_empty()
                || id.as_deref().is_some_and(|i: &str| !i.is_empty())
                || retry.is_some();
            if !set {
                continue;
            }
            let joined = data.join("\n");
            if joined.starts_with("[DONE]") {
                return Ok(parsed);
            }
            let value: serde_json::Value = serde_json::from_str(&joined)
                .map_err(|e| format!("json.loads({joined:?}) of event {event:?}: {e}"))?;
            parsed.push(value);
            (event, data, retry) = (None, Vec::new(), None);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
        match field {
            "event" => event = Some(value),
            "data" => data.push(value),
            "id" => id = Some(value),
            "retry" => retry = value.parse::<u64>().ok().or(retry),
            _ => {}
        }
    }
    Ok(parsed)
}

#[test]
fn the_reader_reads_as_the_sdk_does() {
    let role = OPENAI_ROLE_EVENT.as_bytes();
    assert_eq!(as_openai_python_reads(role).unwrap().len(), 1);
    let mark = [&[0xEF, 0xBB, 0xBF][..], role].concat();
    assert!(as_openai_python_reads(&mark).unwrap().is_empty());
    assert!(as_openai_python_reads(b"event: ping\n\n").is_err());
    assert!(as_openai_python_reads(b"data:\n\n").is_err());
    assert!(as_openai_python_reads(b"id: 1\ndata: {}\n\n: hi\n\n").is_err());
    assert!(as_openai_python_reads(b": hi\n\n\n").unwrap().is_empty());
}

/// A chat stream that opens with a byte order mark split over two writes
/// and holds keep-alives with no data reaches the client as every data
/// event, in order: none lost to the mark, none the SDK cannot parse.
#[tokio::test]
async fn a_chat_stream_reads_whole_in_the_openai_sdk() {
    let head =
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n";
    let (w1, w2) = (openai_delta_event("w1"), openai_delta_event(" w2"));
    let steps = vec![
        Step::Write(head.as_bytes().to_vec()),
        chunk_of(b"\xEF"),
        Step::Pause(20),
        chunk_of(&[&b"\xBB\xBF"[..], OPENAI_ROLE_EVENT.as_bytes()].concat()),
        chunk("event: ping\n\n"),
        chunk(&w1),
        chunk(&format!("event: ping\ndata:\n\n: keep-alive\n\n{w2}")),
        chunk("data: \n\n"),
        chunk(OPENAI_STOP_EVENT),
        chunk(OPENAI_DONE_EVENT),
        Step::Write(b"0\r\n\r\n".to_vec()),
    ];
    let upstream = raw_upstream(steps).await;
    let gateway = Running::start(config_over(Wire::OpenAi, &upstream)).await;
    let (status, _, body) = send(
        &client(),
        post(&gateway.url("/v1/chat/completions"), OPENAI_STREAM, &[]),
    )
    .await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    assert!(body.starts_with(b"data: "), "{text}");
    assert!(!text.contains("event: ping"), "{text}");
    assert!(text.contains(": keep-alive\n\n"), "{text}");
    let events = as_openai_python_reads(&body).unwrap_or_else(|e| panic!("{e}: {text}"));
    let contents: Vec<_> = events
        .iter()
        .map(|event| event["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(
        contents,
        [Some(""), Some("w1"), Some(" w2"), None],
        "{text}"
    );
    assert_eq!(events[3]["choices"][0]["finish_reason"], "stop", "{text}");
    assert!(text.ends_with(OPENAI_DONE_EVENT), "{text}");
    assert_eq!(gateway.gateway.stats().served, 1);
}
