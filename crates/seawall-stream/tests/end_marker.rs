//! The protocol's end marker ends the stream: `[DONE]`, Anthropic's
//! `message_stop`, the Responses API's terminal event. Nothing after it
//! reaches the caller or counts (an OpenAI SDK stops reading at `[DONE]`,
//! so anything after it would make the caller's answer differ from the
//! SDK's), and a server that keeps the connection open after it holds
//! nobody: the body ends at the marker, not at the idle bound.

mod common;

use std::time::Duration;

use common::*;
use seawall_core::{Code, FinishKind};
use seawall_stream::StreamGuardLayer;

/// `frames`, then a connection held open forever, through the guard on
/// the paused clock: what the caller read, and how long the body took to
/// end (the idle bound is 30 s).
async fn read_then_hang(path: &str, frames: Vec<String>) -> (Drained, Duration) {
    let started = tokio::time::Instant::now();
    let mut script: Vec<Step> = frames.into_iter().map(send).collect();
    script.push(Step::Hang);
    let response = call(StreamGuardLayer::interactive(), path, scripted(script))
        .await
        .expect("content arrives");
    let drained = drain(response).await;
    (drained, started.elapsed())
}

fn text(drained: &Drained) -> String {
    String::from_utf8(drained.bytes.clone()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn nothing_after_done_is_read_and_the_body_ends_there() {
    let answer = format!("{OPENAI_ROLE}{}{OPENAI_STOP}{DONE}", openai_delta("Hello"));
    let extra = openai_delta("EXTRA-AFTER-DONE");
    // After `[DONE]` in the same frame, in a frame of its own, and both.
    for frames in [
        vec![format!("{answer}{extra}")],
        vec![answer.clone(), extra.clone()],
        vec![format!("{answer}{extra}"), extra.clone()],
    ] {
        let (drained, took) = read_then_hang(CHAT, frames).await;
        assert!(drained.error.is_none(), "{:?}", drained.error);
        assert_eq!(text(&drained), answer, "cut just after [DONE]");
        let report = &drained.report;
        assert_eq!(
            report.finish.as_ref().map(|f| f.kind),
            Some(FinishKind::Complete)
        );
        assert_eq!(report.content_events, 1);
        assert!(
            took < Duration::from_secs(1),
            "ended at [DONE], not at idle: {took:?}"
        );
    }
}

/// `[DONE]` dispatched by a CRLF blank line whose LF is in the next
/// frame: the stream ends at the CR, and the rest is never read.
#[tokio::test(start_paused = true)]
async fn a_crlf_blank_line_split_after_done_ends_at_its_cr() {
    let answer = format!("{}{OPENAI_STOP}data: [DONE]\r\n\r", openai_delta("Hi"));
    let (drained, took) = read_then_hang(
        CHAT,
        vec![answer.clone(), format!("\n{}", openai_delta("EXTRA"))],
    )
    .await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), answer);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn nothing_after_message_stop_is_read() {
    let answer = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let extra = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"EXTRA\"}}\n\n";
    let (drained, took) = read_then_hang(MESSAGES, vec![format!("{answer}{extra}")]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), answer);
    assert_eq!(drained.report.content_events, 1);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn nothing_after_the_responses_terminal_event_is_read() {
    let answer = concat!(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]},\"sequence_number\":0}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n",
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"incomplete_details\":null,\"error\":null},\"sequence_number\":2}\n\n",
    );
    // Some compatible servers send `[DONE]` after it: no part of the answer.
    let after = "data: [DONE]\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"EXTRA\",\"sequence_number\":3}\n\n";
    let (drained, took) = read_then_hang(RESPONSES, vec![format!("{answer}{after}")]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), answer);
    assert_eq!(
        drained.report.finish.as_ref().map(|f| f.kind),
        Some(FinishKind::Complete)
    );
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// A reader that stops at the end marker and drops the body (async-openai
/// drops it after the `[DONE]` frame, never polling for the end) finds
/// the body ended on that frame and the answer reported: a breaker above
/// settles its call on `is_end_stream`, and a body dropped before it
/// counted as no success at all. Live (the marker after the frame the
/// hold let go at) and held (the whole answer in one frame), for the
/// three end markers.
#[tokio::test(start_paused = true)]
async fn the_frame_that_ends_the_protocol_ends_the_body() {
    use http_body::Body as _;
    use http_body_util::BodyExt;

    let openai = [
        OPENAI_ROLE.to_owned(),
        openai_delta("Hello"),
        OPENAI_STOP.to_owned(),
        DONE.to_owned(),
    ];
    let anthropic = [
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_owned(),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n".to_owned(),
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n".to_owned(),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_owned(),
    ];
    let responses = [
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]},\"sequence_number\":0}\n\n".to_owned(),
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n".to_owned(),
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"incomplete_details\":null,\"error\":null},\"sequence_number\":2}\n\n".to_owned(),
    ];
    for (path, events) in [
        (CHAT, &openai[..]),
        (MESSAGES, &anthropic[..]),
        (RESPONSES, &responses[..]),
    ] {
        for held in [false, true] {
            let mut script: Vec<Step> = if held {
                vec![send(events.concat())]
            } else {
                events.iter().cloned().map(send).collect()
            };
            // The connection stays open after the marker, as a server's
            // kept-alive one does.
            script.push(Step::Hang);
            let response = call(StreamGuardLayer::interactive(), path, scripted(script))
                .await
                .expect("content arrives");
            let handle = report_handle(&response);
            let mut body = response.into_body();
            let mut read = Vec::new();
            let last = events.last().unwrap().as_bytes();
            while !read.ends_with(last) {
                let frame = body.frame().await.expect("a frame").expect("no error");
                read.extend_from_slice(frame.data_ref().expect("data"));
            }
            assert!(
                body.is_end_stream(),
                "{path} held={held}: ended on the marker's frame"
            );
            let report = handle
                .get()
                .cloned()
                .expect("reported on the marker's frame");
            assert_eq!(
                report.finish.as_ref().map(|f| f.kind),
                Some(FinishKind::Complete),
                "{path} held={held}"
            );
            assert!(report.content_events >= 1, "{path} held={held}");
            drop(body);
        }
    }
}

/// A stored response's events read again (`GET …/responses/{id}?stream=true`,
/// what a resume of a background response sends) are the Responses
/// API's: a stream that ends before `response.completed` is cut short,
/// and a `response.failed` is the provider's failure, not more content.
#[tokio::test(start_paused = true)]
async fn a_stored_responses_events_are_read_as_the_responses_api() {
    const STORED: &str = "/v1/responses/resp_1?stream=true&starting_after=8";
    let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"w6\",\"sequence_number\":9}\n\n";
    let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"m\"}},\"sequence_number\":10}\n\n";
    for (frames, code) in [
        (vec![delta.to_owned()], seawall_core::Code::Truncated),
        (
            vec![delta.to_owned(), failed.to_owned()],
            seawall_core::Code::StreamInterrupted,
        ),
    ] {
        let response = call(
            StreamGuardLayer::interactive(),
            STORED,
            scripted(frames.into_iter().map(send).collect()),
        )
        .await
        .expect("content arrives");
        let drained = drain(response).await;
        let error = drained.error.expect("not complete");
        assert_eq!(error.code(), code, "{error:?}");
        assert_eq!(
            drained.report.provider,
            seawall_core::provider::Provider::OpenAiResponses
        );
    }
}

/// A `[DONE]` on a stream whose protocol has none ends it where the SDK
/// stops: the Responses API's (read with the chat reader, which stops at
/// it) before its terminal event is cut short; Gemini's after its finish
/// (Google's SDK raises on it, no JSON) is whole, and the `[DONE]` is
/// handed on to no one.
#[tokio::test(start_paused = true)]
async fn done_where_the_protocol_has_none_ends_the_stream_before_it() {
    let delta = |text: &str, n: u32| {
        format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"{text}\",\"sequence_number\":{n}}}\n\n"
        )
    };
    let completed = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"incomplete_details\":null,\"error\":null},\"sequence_number\":3}\n\n";
    let frame = format!(
        "{}data: [DONE]\n\n{}{completed}",
        delta("Hello", 1),
        delta(" world", 2)
    );
    let response = call(
        StreamGuardLayer::interactive(),
        RESPONSES,
        scripted(vec![send(frame)]),
    )
    .await
    .expect("content arrives");
    let drained = drain(response).await;
    let error = drained
        .error
        .clone()
        .expect("no terminal event before [DONE]");
    assert_eq!(error.code(), seawall_core::Code::Truncated, "{error:?}");
    assert_eq!(text(&drained), delta("Hello", 1), "nothing from [DONE] on");

    let gemini = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n";
    let (drained, took) = read_then_hang(
        "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        vec![format!("{gemini}data: [DONE]\r\n\r\n")],
    )
    .await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), gemini);
    assert_eq!(
        drained.report.finish.as_ref().map(|f| f.kind),
        Some(FinishKind::Complete)
    );
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// Gemini's last event ended by EOF instead of its blank line: Google's
/// SDK reads a stream by lines and takes it, so its finish finishes the
/// answer. The OpenAI SDK (as WHATWG's parser) drops such an event: there
/// the stream stays cut.
#[tokio::test(start_paused = true)]
async fn geminis_last_event_may_end_at_eof() {
    let text = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]},\"index\":0}]}\r\n\r\n";
    let last = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"!\"}]},\"finishReason\":\"STOP\"}]}";
    for end in ["\r\n", ""] {
        let frames = vec![send(format!("{text}{last}{end}"))];
        let response = call(
            StreamGuardLayer::interactive(),
            "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
            scripted(frames),
        )
        .await
        .expect("content arrives");
        let drained = drain(response).await;
        assert!(drained.error.is_none(), "{end:?}: {:?}", drained.error);
        assert_eq!(
            drained.report.finish.as_ref().map(|f| f.kind),
            Some(FinishKind::Complete),
            "{end:?}"
        );
        assert_eq!(drained.report.content_events, 2);
    }
    let openai = format!("{}{OPENAI_STOP}", openai_delta("Hi"));
    let cut = openai.trim_end_matches('\n').to_owned();
    let response = call(
        StreamGuardLayer::interactive(),
        CHAT,
        scripted(vec![send(cut)]),
    )
    .await
    .expect("content arrives");
    let drained = drain(response).await;
    assert_eq!(
        drained.error.map(|e| e.code()),
        Some(seawall_core::Code::Truncated)
    );
}

/// A finish reason alone is no end: OpenAI's usage chunk comes after it,
/// and is read.
#[tokio::test(start_paused = true)]
async fn a_finish_reason_is_not_the_end_marker() {
    let usage = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n";
    let answer = format!("{}{OPENAI_STOP}", openai_delta("Hi"));
    let (drained, _) = read_then_hang(
        CHAT,
        vec![answer.clone(), usage.to_owned(), DONE.to_owned()],
    )
    .await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), format!("{answer}{usage}{DONE}"));
    let usage = drained
        .report
        .usage
        .expect("the usage chunk after the finish");
    assert_eq!((usage.input_tokens, usage.output_tokens), (3, 2));
}

/// The end marker of a stream that ends badly (here filtered after
/// content) is held back, in its frame or alone in one (an SDK stops at
/// `[DONE]` and would never read the verdict after it); a plain HTTP
/// event stream, whose end after content is its finish, hands its
/// `[DONE]` on whole.
#[tokio::test(start_paused = true)]
async fn the_marker_of_a_bad_end_is_held_back_and_a_good_ones_handed_on() {
    let filtered =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n";
    let cut = format!("{OPENAI_ROLE}{}{filtered}", openai_delta("Hello"));
    for frames in [
        vec![format!("{cut}{DONE}")],
        vec![cut.clone(), DONE.to_owned()],
    ] {
        let (drained, took) = read_then_hang(CHAT, frames).await;
        let error = drained.error.clone().expect("filtered after content");
        assert_eq!(
            error.code(),
            seawall_core::Code::ContentFiltered,
            "{error:?}"
        );
        assert_eq!(text(&drained), cut, "no [DONE] handed on");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    let plain = format!("data: hello\n\n{DONE}");
    let (drained, took) = read_then_hang("/v1/other/events", vec![plain.clone()]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), plain);
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// The guard may end a body before the server did (a withheld error
/// event, a held-back end marker): a guarded stream keeps no
/// `content-length` of the server's, which a server relaying it would
/// hold it to.
#[tokio::test(start_paused = true)]
async fn a_guarded_stream_keeps_no_length_of_the_servers() {
    use tower::{Layer, ServiceExt};
    let stream = format!("{OPENAI_ROLE}{}{OPENAI_STOP}{DONE}", openai_delta("Hi"));
    let provider = tower::service_fn(move |_: http::Request<()>| {
        let response = http::Response::builder()
            .header("content-type", "text/event-stream")
            .header("content-length", stream.len())
            .body(http_body_util::Full::new(bytes::Bytes::from(
                stream.clone(),
            )))
            .unwrap();
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let request = http::Request::post(CHAT).body(()).unwrap();
    let response = StreamGuardLayer::interactive()
        .layer(provider)
        .oneshot(request)
        .await
        .expect("content arrives");
    assert!(response.headers().get("content-length").is_none());
    let drained = drain(response).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
}

/// A server that speaks OpenAI's wire and sends its error as the error
/// object itself (`"object":"error"`, vLLM's and FastChat's shape), then
/// `[DONE]`: the answer was cut, and the caller reads the failure, not a
/// clean end. Beside it, chunks whose `error` member says nothing (`""`,
/// as servers that serialise a whole struct send) are the answer.
#[tokio::test(start_paused = true)]
async fn an_error_object_before_done_is_no_clean_end() {
    let error = "data: {\"object\":\"error\",\"message\":\"engine dead\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}\n\n";
    let frames = vec![format!(
        "{OPENAI_ROLE}{}{error}{DONE}",
        openai_delta("Hello")
    )];
    let (drained, _) = read_then_hang(CHAT, frames).await;
    let failure = drained.error.as_ref().expect("the stream fails");
    assert_eq!(failure.code(), seawall_core::Code::StreamInterrupted);
    assert!(!text(&drained).contains("[DONE]"), "{}", text(&drained));
    assert!(!text(&drained).contains("engine dead"));

    let quiet = "data: {\"id\":\"c\",\"error\":\"\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n";
    let finish = "data: {\"id\":\"c\",\"error\":\"\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    let answer = format!("{quiet}{finish}{DONE}");
    let (drained, _) = read_then_hang(CHAT, vec![answer.clone()]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), answer);
    assert_eq!(
        drained.report.finish.as_ref().map(|f| f.kind),
        Some(FinishKind::Complete)
    );
}

/// vLLM ends every Responses stream with `response.completed`; the
/// response inside says how it ended. An answer cut at the token limit is
/// delivered as cut, not as whole; an engine's abort after content is the
/// provider's failure.
#[tokio::test(start_paused = true)]
async fn a_terminal_events_status_says_how_the_response_ended() {
    let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n";
    let cut = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"r\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[]}}\n\n";
    let (drained, _) = read_then_hang(RESPONSES, vec![format!("{delta}{cut}")]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    let finish = drained.report.finish.expect("a finish");
    assert_eq!(
        (finish.kind, &*finish.reason),
        (FinishKind::Truncated, "max_output_tokens")
    );

    let aborted = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"r\",\"status\":\"cancelled\",\"output\":[]}}\n\n";
    let (drained, _) = read_then_hang(RESPONSES, vec![format!("{delta}{aborted}")]).await;
    let error = drained.error.expect("an abort after content");
    assert_eq!(error.code(), seawall_core::Code::StreamInterrupted);
}

/// A Responses stream whose whole answer comes in its terminal event
/// alone (a proxy's stream made from a unary answer): the answer the
/// SDK's final response holds, delivered — read as empty, it was asked
/// again and billed again. One whose response holds nothing is still an
/// empty answer.
#[tokio::test(start_paused = true)]
async fn an_answer_only_in_the_terminal_event_is_an_answer() {
    let whole = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"summary\":[]},{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"The whole answer.\",\"annotations\":[]}]}]}}\n\n";
    let (drained, _) = read_then_hang(RESPONSES, vec![whole.to_owned()]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), whole);
    assert_eq!(drained.report.content_events, 1);
    assert_eq!(
        drained.report.finish.as_ref().map(|f| f.kind),
        Some(FinishKind::Complete)
    );

    // A part a compatible server types `text`: the answer, as the unary
    // check reads the same response.
    let typed_text = whole.replace("\"output_text\"", "\"text\"");
    let (drained, _) = read_then_hang(RESPONSES, vec![typed_text.clone()]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert_eq!(text(&drained), typed_text);

    let empty = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"summary\":[]}]}}\n\n";
    let response = call(
        StreamGuardLayer::interactive(),
        RESPONSES,
        scripted(vec![send(empty), Step::Hang]),
    )
    .await;
    assert_eq!(
        failure_of(response).code(),
        seawall_core::Code::EmptyResponse
    );

    // A refusal there is the model declining, as the unary check reads
    // the same response: not an empty answer to ask again.
    let refused = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"type\":\"reasoning\",\"content\":null},{\"type\":\"message\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"I can't help with that.\"}]}]}}\n\n";
    let response = call(
        StreamGuardLayer::interactive(),
        RESPONSES,
        scripted(vec![send(refused), Step::Hang]),
    )
    .await;
    assert_eq!(failure_of(response).code(), seawall_core::Code::Refused);
}

/// An OpenAI stream that finishes empty waits for the usage chunk that
/// `stream_options.include_usage` sends after the finish, so the failure
/// says what the empty answer cost; whatever ends the wait instead (a
/// server that sends nothing more, a reset, the end of the body), the
/// failure is the empty finish's, within a short wait, never a clean end
/// nor a transport failure that would retry a filtered answer.
#[tokio::test(start_paused = true)]
async fn an_empty_openai_finish_waits_for_its_usage_and_no_longer() {
    use seawall_core::{Class, Code};
    let filtered = OPENAI_STOP.replace("\"stop\"", "\"content_filter\"");
    let usage = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":812,\"completion_tokens\":37,\"total_tokens\":849}}\n\n";
    // The usage in a frame of its own, after the finish.
    let script = vec![
        send(format!("{OPENAI_ROLE}{filtered}")),
        wait(0.1),
        send(usage),
        send(DONE),
    ];
    let failure = failure_of(call(StreamGuardLayer::interactive(), CHAT, scripted(script)).await);
    assert_eq!(failure.code(), Code::ContentFiltered);
    let counted = failure.usage().expect("the usage that followed the finish");
    assert_eq!((counted.input_tokens, counted.output_tokens), (812, 37));
    // Then nothing, a reset, the end, an unreadable event or a transient
    // error event: the filter, at once or after the short wait, not at the
    // idle bound (30 s) nor as a failure to send again.
    let unreadable = || send("data: {not json\n\n");
    let error = || send("data: {\"error\":{\"type\":\"server_error\",\"message\":\"x\"}}\n\n");
    for end in [Step::Hang, Step::Reset, wait(0.0), unreadable(), error()] {
        let started = tokio::time::Instant::now();
        let script = vec![send(format!("{OPENAI_ROLE}{filtered}")), end];
        let failure =
            failure_of(call(StreamGuardLayer::interactive(), CHAT, scripted(script)).await);
        assert_eq!(failure.code(), Code::ContentFiltered);
        assert_eq!(failure.class(), Class::Policy);
        assert!(
            started.elapsed() <= Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    // Content after the finish (another choice's) makes it an answer.
    let other_choice = openai_delta("Hello").replace("\"index\":0", "\"index\":1");
    let other_stop = OPENAI_STOP.replace("\"index\":0", "\"index\":1");
    let (drained, _) = read_then_hang(
        CHAT,
        vec![format!(
            "{OPENAI_ROLE}{filtered}{other_choice}{other_stop}{DONE}"
        )],
    )
    .await;
    assert_eq!(drained.report.content_events, 1, "{:?}", drained.error);
}

/// Gemini names a finish on chunks that are not the last: a code-execution
/// round's code carries `STOP`, and its result and the answer follow.
/// Content after a finish takes it back: a reset or a silence after that
/// content is a cut answer, not a whole one. (A cut just after a `STOP`
/// chunk, nothing after it, still reads as whole: the stream cannot say
/// otherwise.)
#[tokio::test(start_paused = true)]
async fn a_gemini_finish_followed_by_content_is_not_the_end() {
    use seawall_core::Code;
    let path = format!("{GEMINI}?alt=sse");
    let code = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"executableCode\":{\"language\":\"PYTHON\",\"code\":\"print(1)\"}}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":5,\"totalTokenCount\":15}}\r\n\r\n";
    let result = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"codeExecutionResult\":{\"outcome\":\"OUTCOME_OK\",\"output\":\"1\\n\"}}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
    let text = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"The answer is\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
    for end in [Step::Reset, Step::Hang, wait(0.0)] {
        let script = vec![send(code), send(result), send(text), end];
        let response = call(StreamGuardLayer::interactive(), &path, scripted(script))
            .await
            .expect("content arrives");
        let drained = drain(response).await;
        let failure = drained.error.expect("a cut answer is no whole answer");
        assert!(
            matches!(failure.code(), Code::StreamInterrupted | Code::Truncated),
            "{failure:?}"
        );
        assert!(!drained.report.completed_task(), "{:?}", drained.report);
    }
    // A finish that is a verdict stays one, whatever follows it: a filter
    // is no cut to resume.
    let filtered = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Once\"}],\"role\":\"model\"},\"finishReason\":\"SAFETY\",\"index\":0}]}\r\n\r\n";
    let response = call(
        StreamGuardLayer::interactive(),
        &path,
        scripted(vec![send(filtered), send(text)]),
    )
    .await
    .unwrap();
    let failure = drain(response).await.error.expect("filtered");
    assert_eq!(failure.code(), Code::ContentFiltered, "{failure:?}");
    // The answer's own last chunk finishes it.
    let last = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" 1.\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n";
    let script = vec![send(code), send(result), send(text), send(last)];
    let response = call(StreamGuardLayer::interactive(), &path, scripted(script))
        .await
        .unwrap();
    let drained = drain(response).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert!(drained.report.completed_task());
}

/// The Responses API's `response.failed` carries the response's usage:
/// the whole count of what it used before it failed, billed. The failure
/// keeps it, before content and after (as the interruption it is then),
/// and so does the stream's report, as a whole count.
#[tokio::test(start_paused = true)]
async fn a_failed_responses_stream_keeps_the_usage_its_end_counted() {
    let created = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[],\"usage\":null},\"sequence_number\":0}\n\n";
    let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\",\"sequence_number\":1}\n\n";
    let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"},\"output\":[],\"usage\":{\"input_tokens\":900,\"output_tokens\":310}},\"sequence_number\":2}\n\n";
    let failure = failure_of(
        call(
            StreamGuardLayer::interactive(),
            RESPONSES,
            scripted(vec![send(created), send(failed)]),
        )
        .await,
    );
    let usage = failure.usage().expect("the count of the failed response");
    assert_eq!((usage.input_tokens, usage.output_tokens), (900, 310));
    let response = call(
        StreamGuardLayer::interactive(),
        RESPONSES,
        scripted(vec![send(created), send(delta), send(failed)]),
    )
    .await
    .unwrap();
    let drained = drain(response).await;
    let failure = drained.error.expect("interrupted");
    assert_eq!(failure.code(), seawall_core::Code::StreamInterrupted);
    let usage = failure.usage().expect("the count, after content too");
    assert_eq!((usage.input_tokens, usage.output_tokens), (900, 310));
    // Delivered, the attempt's usage in the receipt is the report's: the
    // provider's whole count, though no finish came (the receipt counted
    // it as a part, `billed_without_usage`).
    assert_eq!(drained.report.usage, Some(usage));
    assert!(drained.report.usage_whole, "{:?}", drained.report);
}

/// On Gemini's wire an empty finish is no end: a proxy that opens its
/// stream with an empty `STOP` chunk sends the answer after it, and the
/// answer is delivered, not failed `empty_response` (and asked again, to
/// fail the same way). An empty finish the stream ends on is still the
/// empty or filtered answer it is, at its end.
#[tokio::test(start_paused = true)]
async fn a_gemini_empty_finish_followed_by_the_answer_is_the_answer() {
    use seawall_core::Code;
    let path = format!("{GEMINI}?alt=sse");
    let empty = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n";
    let answer = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hello\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":1}}\r\n\r\n";
    let response = call(
        StreamGuardLayer::interactive(),
        &path,
        scripted(vec![send(empty), send(answer)]),
    )
    .await
    .expect("the answer after the empty finish");
    let drained = drain(response).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert!(drained.report.completed_task());
    let safety = "data: {\"candidates\":[{\"content\":{\"parts\":[],\"role\":\"model\"},\"finishReason\":\"SAFETY\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":3}}\r\n\r\n";
    for (chunk, code) in [
        (empty, Code::EmptyResponse),
        (safety, Code::ContentFiltered),
    ] {
        let started = tokio::time::Instant::now();
        let failure = failure_of(
            call(
                StreamGuardLayer::interactive(),
                &path,
                scripted(vec![send(chunk)]),
            )
            .await,
        );
        assert_eq!(failure.code(), code);
        assert_eq!(started.elapsed(), Duration::ZERO, "at the stream's end");
    }
}

/// A consumer that stops reading for longer than the idle bound (a caller
/// busy elsewhere, hyper writing to a client that reads slowly) holds the
/// stream, not the upstream: the time it held it is not the upstream's
/// silence. The next frame (a ping the upstream sent meanwhile) is handed
/// on; the stream was cut `idle_timeout` there, a healthy stream failed
/// and counted against its route.
#[tokio::test(start_paused = true)]
async fn a_consumer_that_stops_reading_is_not_the_upstreams_silence() {
    use http_body_util::BodyExt;
    let first = format!("{OPENAI_ROLE}{}", openai_delta("Hello"));
    let script = vec![send(first), send(": ping\n\n"), Step::Hang];
    let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
        .await
        .expect("content arrives");
    let mut body = response.into_body();
    let frame = body.frame().await.expect("a frame").expect("content");
    assert!(frame.into_data().is_ok());
    // The consumer is away for longer than the idle bound (30 s).
    tokio::time::sleep(Duration::from_secs(40)).await;
    let next = body.frame().await.expect("the ping");
    assert!(next.is_ok(), "{next:?}");
    // And the stream goes on: no idle bound passed while the upstream was
    // read (the upstream is silent from here, and is cut 30 s on).
    let after = tokio::time::timeout(Duration::from_secs(5), body.frame()).await;
    assert!(after.is_err(), "no verdict within 5 s: {after:?}");
}

/// A `HEAD`'s answer has no body, whatever its type says: an event
/// stream's 2xx to a `HEAD` is handed on as it is, not failed as a stream
/// that ended before content (a health probe counted against the route).
/// The same answer to a `POST` is still no answer.
#[tokio::test(start_paused = true)]
async fn a_head_answer_is_not_guarded() {
    use http_body_util::{BodyExt, Empty};
    use tower::{Layer, ServiceExt};

    for (method, guarded) in [(http::Method::HEAD, false), (http::Method::POST, true)] {
        let provider = tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, std::convert::Infallible>(sse(Empty::<bytes::Bytes>::new()))
        });
        let request = http::Request::builder()
            .method(method.clone())
            .uri(format!("https://provider.example{CHAT}"))
            .body(())
            .unwrap();
        let answer = StreamGuardLayer::interactive()
            .layer(provider)
            .oneshot(request)
            .await;
        let read = match answer {
            Ok(response) => response.into_body().collect().await.map(|_| ()),
            Err(error) => Err(error),
        };
        assert_eq!(read.is_err(), guarded, "{method}: {read:?}");
    }
}

/// Content, then `message_stop` with no `stop_reason` (no `message_delta`,
/// or one whose `stop_reason` is null): a proxy closing an abandoned
/// stream with the marker. Cut short, as a chat stream's `[DONE]` without
/// its finish is and as the unary check reads a message without its
/// `stop_reason`; no finish is made up for it, and the marker is not
/// handed on. Before any content the marker still closes an empty
/// message.
#[tokio::test(start_paused = true)]
async fn message_stop_after_content_without_a_stop_reason_is_cut_short() {
    let head = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"c\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The answer is\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    let null_reason = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null,\"stop_sequence\":null},\"usage\":{\"output_tokens\":4}}\n\n";
    let stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    for before_stop in ["", null_reason] {
        let kept = format!("{head}{before_stop}");
        let (drained, took) = read_then_hang(MESSAGES, vec![format!("{kept}{stop}")]).await;
        let failure = drained.error.as_ref().expect("cut short");
        assert_eq!(failure.code(), Code::Truncated, "{before_stop:?}");
        assert!(failure.evidence().content_seen);
        assert!(!failure.evidence().finish_seen, "no finish made up");
        assert_eq!(drained.report.finish, None);
        assert!(!drained.report.completed_task());
        assert_eq!(text(&drained), kept, "the marker is not handed on");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    // The same stream with its `stop_reason` is whole.
    let whole = format!(
        "{head}event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":4}}}}\n\n{stop}"
    );
    let (drained, _) = read_then_hang(MESSAGES, vec![whole]).await;
    assert!(drained.error.is_none(), "{:?}", drained.error);
    assert!(drained.report.completed_task());
}

/// Gemini's stream and the Responses API's have no end marker: one that
/// ends after content without its finish (`finishReason`, the terminal
/// event), cleanly or at a `[DONE]` a proxy adds, is cut short.
#[tokio::test(start_paused = true)]
async fn gemini_and_responses_streams_without_their_finish_are_cut_short() {
    let gemini = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"The answer is\"}],\"role\":\"model\"},\"index\":0}]}\n\n";
    let responses = concat!(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]},\"sequence_number\":0}\n\n",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"The answer is\",\"sequence_number\":1}\n\n",
    );
    for (path, stream) in [(GEMINI, gemini), (RESPONSES, responses)] {
        for end in ["", "data: [DONE]\n\n"] {
            let d = delivered(run(path, &format!("{stream}{end}")).await);
            let failure = d.error.as_ref().expect("cut short");
            assert_eq!(failure.code(), Code::Truncated, "{path} {end:?}");
            assert!(failure.evidence().content_seen);
            assert_eq!(d.report.finish, None);
        }
    }
}
