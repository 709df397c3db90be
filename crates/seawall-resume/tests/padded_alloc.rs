//! A continuation's events padded to the guard's event cap cost about
//! their bytes, not a value tree of them: the splice reads the few
//! members it fixes (an Anthropic block's index) and passes the rest as
//! it came. Read whole into `serde_json::Value`s, each such event cost 16
//! to 32 times its size.

use std::alloc::System;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::{BoxError, Code, Failure, Interrupted};
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use seawall_stream::Provider;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::Scanner;
use seawall_test::body::Script;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The size of a padded event: 8 MiB, within the stream guard's cap on
/// one event (`DEFAULT_MAX_LINE`, 32 MiB) — large enough that a value
/// tree of it would show, small enough that a debug build reads it in
/// seconds (at the cap itself this test took 40 s).
const EVENT_CAP: usize = 8 << 20;
const _: () = assert!(EVENT_CAP <= seawall_stream::sse::DEFAULT_MAX_LINE);

fn event(name: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// An Anthropic text delta's data.
fn delta(index: u64, text: &str) -> String {
    format!(
        r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}"#
    )
}

fn text_delta(index: u64, text: &str) -> Bytes {
    event("content_block_delta", &delta(index, text))
}

/// A text delta padded with an array of zeros to just under `size`.
fn padded_delta(index: u64, text: &str, size: usize) -> Bytes {
    let mut data = String::with_capacity(size);
    data.push_str(&delta(index, text));
    data.pop();
    data.push_str(r#","pad":["#);
    while data.len() + 64 < size {
        data.push_str("0,");
    }
    data.push_str("0]}");
    event("content_block_delta", &data)
}

/// What the caller holds at the cut, in two deltas.
const DELIVERED: [&str; 2] = ["w1", " w2 and more words"];

/// The end of [`DELIVERED`] a continuation may repeat: long enough (two
/// words, 12 bytes) to count as a restatement of an Anthropic prefill.
const REPEATED: &str = " and more words";

/// The continuation's first text.
const LINED_UP: &str = " w3, and then the rest of the answer, a sentence long enough to line up";

const MESSAGE_START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}"#;

fn block_start(index: u64) -> Bytes {
    event(
        "content_block_start",
        &format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
        ),
    )
}

fn stream(items: Vec<Result<Bytes, BoxError>>) -> http::Response<Script> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Script::items(items))
        .unwrap()
}

/// The most bytes of events the layer holds while a continuation lines
/// up, by default (its 64 KiB `max_head`, 16 times).
const HELD_CAP: usize = 1 << 20;

/// What the caller read, the bytes the layer allocated while it read, and
/// the bytes of the padded events: an original text block at `index` cut
/// after [`DELIVERED`], then a continuation (its block 0) of two deltas padded
/// to the cap. With `repeat`, its first delta repeats [`REPEATED`], padded to
/// what the layer holds while it lines up: the event is rewritten without
/// it.
async fn padded_continuation(index: u64, repeat: bool) -> (String, usize, usize) {
    let mut interrupted = Interrupted::default();
    interrupted.delivered_text = Some(DELIVERED.concat());
    interrupted.content_events = 2;
    interrupted.cause = Some(Code::Transport);
    let cut = Failure::new(Code::StreamInterrupted).with_interrupted(interrupted);
    let first = vec![
        Ok(event("message_start", MESSAGE_START)),
        Ok(block_start(index)),
        Ok(text_delta(index, DELIVERED[0])),
        Ok(text_delta(index, DELIVERED[1])),
        Err(Box::new(cut) as BoxError),
    ];
    let rest = [
        event("message_start", MESSAGE_START),
        block_start(0),
        // Long enough (the default 64-byte window) to line up before the
        // padded events come: they pass the splice one by one.
        match repeat {
            true => padded_delta(0, &format!("{REPEATED}{LINED_UP}"), HELD_CAP - 1024),
            false => text_delta(0, LINED_UP),
        },
        padded_delta(0, " w4", EVENT_CAP),
        padded_delta(0, " w5", EVENT_CAP),
        event(
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        event(
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
        ),
        event("message_stop", r#"{"type":"message_stop"}"#),
    ];
    let padded = rest.iter().filter(|e| e.len() > 1024).map(Bytes::len).sum();
    let first = Arc::new(Mutex::new(Some(first)));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |_: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let answer = match first.lock().unwrap().take() {
                    Some(first) => first,
                    None => rest.iter().cloned().map(Ok).collect(),
                };
                async move { Ok::<_, BoxError>(stream(answer)) }
            },
        ));
    let request = http::Request::post("http://api.example/v1/messages")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap();

    let region = Region::new(GLOBAL);
    let response = service.oneshot(request).await.unwrap();
    let mut body = std::pin::pin!(response.into_body());
    // The frames as the layer handed them over, not copied into one.
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        frames.push(frame.unwrap().into_data().unwrap());
    }
    let allocated = region.change().bytes_allocated;

    let mut scanner = Scanner::default();
    let mut decoder = Decoder::new(Provider::Anthropic);
    let mut text = String::new();
    for frame in &frames {
        scanner
            .feed(frame, |item| {
                if let Signal::Content { text: Some(t), .. } = decoder.decode(item) {
                    text.push_str(&t);
                }
            })
            .unwrap();
    }
    (text, allocated, padded)
}

/// Each padded event within twice its bytes: passed on, it is copied
/// once as the splice holds it; written anew, once more. One test: the
/// count is the process's, and two tests at once would count each
/// other's bytes.
#[tokio::test]
async fn a_padded_event_costs_about_its_bytes() {
    // The original's block is 0, as the continuation's: nothing to fix.
    // Then 1: each continuation event is renumbered, written anew. Then
    // a first event that repeats what the caller has, cut.
    for (index, repeat) in [(0, false), (1, false), (1, true)] {
        let (text, allocated, padded) = padded_continuation(index, repeat).await;
        assert_eq!(text, format!("{}{LINED_UP} w4 w5", DELIVERED.concat()));
        assert!(
            allocated < 2 * padded,
            "original block {index}, repeat {repeat}: {allocated} bytes allocated for {padded} bytes of padded events"
        );
    }
}
