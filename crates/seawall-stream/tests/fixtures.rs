//! Each provider's exact wire shape: normal end, `[DONE]`, usage-only
//! final chunk, in-stream errors before and after content, `length`,
//! refusals and filters. Every fixture is read whole and byte by byte.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use seawall_core::{Action, Class, ClosedBy, Code, Failure, FinishKind, Usage};
use seawall_stream::{Provider, StreamGuardLayer};

/// A finished stream: every frame delivered untouched and the finish in
/// the report. A refusal, filter or malformed call after content is no
/// success: the body then ends with that verdict (escalate or return to
/// the model) carrying what was delivered, never a silent clean end — and
/// without the end marker (`[DONE]`, `message_stop`), at which an SDK
/// stops reading and would never meet the verdict.
fn assert_finished(d: &Drained, fixture: &str, kind: FinishKind, reason: &str) {
    let handed_on = match kind.failure() {
        None => fixture,
        Some(_) => ["data: [DONE]", "event: message_stop"]
            .iter()
            .find_map(|marker| fixture.rfind(marker))
            .map_or(fixture, |at| &fixture[..at]),
    };
    assert_eq!(
        d.bytes,
        handed_on.as_bytes(),
        "frames pass through untouched"
    );
    let finish = d.report.finish.as_ref().expect("a finish");
    assert_eq!((finish.kind, &*finish.reason), (kind, reason));
    assert_eq!(d.report.closed_by, ClosedBy::Them);
    assert_eq!(d.report.completed_task(), kind.completes_task());
    match kind.failure() {
        None => {
            assert!(d.error.is_none(), "{:?}", d.error);
            assert_eq!(d.report.code, None);
        }
        Some(verdict) => {
            let failure = d
                .error
                .as_ref()
                .expect("a policy finish ends the body in error");
            assert_eq!(
                (failure.class(), failure.code()),
                (verdict.class(), verdict.code())
            );
            assert_ne!(failure.action(), Action::Surface);
            assert_ne!(failure.action(), Action::Retry);
            assert_eq!(failure.provider_code(), Some(reason));
            assert!(failure.evidence().content_seen);
            assert!(
                failure
                    .interrupted()
                    .and_then(|i| i.delivered_text.as_deref())
                    .is_some()
            );
            assert_eq!(d.report.code, Some(verdict.code()));
        }
    }
}

fn assert_interrupted(d: &Drained, code: Code, text: &str) {
    let failure = d.error.as_ref().expect("the body failed");
    assert_eq!(failure.code(), code);
    assert_eq!(failure.action(), Action::Surface);
    assert!(failure.evidence().content_seen);
    let delivered = failure.interrupted().expect("an Interrupted record");
    assert_eq!(delivered.delivered_text.as_deref(), Some(text));
    assert_eq!(delivered.bytes, d.bytes.len() as u64);
    assert_eq!(delivered.content_events, d.report.content_events);
    assert_eq!(d.report.code, Some(code));
}

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("fixtures/", $path))
    };
}

#[tokio::test]
async fn openai_normal_end_with_done() {
    let f = fixture!("openai/normal.sse");
    let d = delivered(run(CHAT, f).await);
    assert_finished(&d, f, FinishKind::Complete, "stop");
    assert_eq!(d.report.provider, Provider::OpenAi);
    assert_eq!(d.report.content_events, 3);
    assert_eq!(d.report.events, 6);
}

#[tokio::test]
async fn openai_usage_only_final_chunk_and_finish_without_done() {
    let f = fixture!("openai/usage_final_chunk.sse");
    assert_finished(
        &delivered(run(CHAT, f).await),
        f,
        FinishKind::Complete,
        "stop",
    );
    // The finish chunk closes the message even if `[DONE]` never comes.
    let f = fixture!("openai/no_done.sse");
    assert_finished(
        &delivered(run(CHAT, f).await),
        f,
        FinishKind::Complete,
        "stop",
    );
}

#[tokio::test]
async fn openai_length_and_filter_are_delivered_but_not_success_and_a_refusal_fails() {
    let f = fixture!("openai/length.sse");
    assert_finished(
        &delivered(run(CHAT, f).await),
        f,
        FinishKind::Truncated,
        "length",
    );
    // A refusal streamed as `delta.refusal` is no content: it fails as
    // policy before the response is released, as Anthropic's and Gemini's do.
    let refused = failed(run(CHAT, fixture!("openai/refusal.sse")).await);
    assert_eq!(refused.code(), Code::Refused);
    assert_eq!(refused.action(), Action::Escalate);
    assert!(!refused.evidence().content_seen);
    let f = fixture!("openai/content_filter.sse");
    assert_finished(
        &delivered(run(CHAT, f).await),
        f,
        FinishKind::Filtered,
        "content_filter",
    );
}

/// Compatible servers end a streamed refusal without a `finish_reason`,
/// with `[DONE]` or just EOF, and a refusal may be cut short (`length`)
/// or ended by any other reason: still a refusal (escalate), as the unary
/// check reads it, never a truncated answer delivered nor an empty or
/// aborted one to retry.
#[tokio::test]
async fn an_openai_refusal_is_a_refusal_however_it_ends() {
    let f = fixture!("openai/refusal.sse");
    let events: Vec<&str> = f.split_inclusive("\n\n").collect();
    let finish = events
        .iter()
        .position(|e| e.contains("\"finish_reason\":\"stop\""))
        .expect("the fixture ends with a stop chunk");
    let with_done: String = events[..finish]
        .iter()
        .chain(&events[finish + 1..])
        .copied()
        .collect();
    let at_eof: String = events[..finish].concat();
    assert!(with_done.ends_with(DONE) && !at_eof.contains("[DONE]"));
    let ended_otherwise = ["length", "content_filter", "error", "a_new_reason"].map(|reason| {
        f.replace(
            "\"finish_reason\":\"stop\"",
            &format!("\"finish_reason\":\"{reason}\""),
        )
    });
    for stream in [with_done, at_eof].into_iter().chain(ended_otherwise) {
        for frame in [stream.len(), 1] {
            let refused = failed(run_framed(CHAT, stream.as_bytes(), frame).await);
            assert_eq!(refused.code(), Code::Refused, "{stream}");
            assert_eq!(refused.action(), Action::Escalate);
        }
    }
}

/// An OpenAI role chunk, the fields the decoder reads only.
const ROLE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";

/// An OpenAI chunk finishing with `reason` and no text.
fn finish_chunk(reason: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\n"
    )
}

/// A reasoning model that spends its whole budget thinking finishes at the
/// token limit with no text: delivered as truncated, as the unary check
/// does (sending it again would be cut the same way); a plain stop with no
/// text stays an empty answer.
#[tokio::test]
async fn an_openai_answer_cut_by_the_token_limit_before_any_text_is_delivered_truncated() {
    let cut = format!("{ROLE}{}{DONE}", finish_chunk("length"));
    for frame in [cut.len(), 1] {
        let d = delivered(run_framed(CHAT, cut.as_bytes(), frame).await);
        assert_finished(&d, &cut, FinishKind::Truncated, "length");
        assert_eq!(d.report.content_events, 0);
    }
    let empty = format!("{ROLE}{}{DONE}", finish_chunk("stop"));
    let failure = failed(run_framed(CHAT, empty.as_bytes(), empty.len()).await);
    assert_eq!(failure.code(), Code::EmptyResponse);
    assert_eq!(failure.provider_code(), Some("stop"));
}

/// A resumed stream's continuation may bring only a finish: a complete
/// one says the answer the caller holds was whole, and is delivered. Any
/// other empty ending stays what it is for a first answer.
#[tokio::test]
async fn a_continuation_that_only_finishes_is_delivered() {
    use tower::{Layer, ServiceExt};
    let continuation = |body: String| async move {
        let provider = tower::service_fn(move |_req: http::Request<()>| {
            let body = Full::new(Bytes::from(body.clone()));
            async move { Ok::<_, std::convert::Infallible>(sse(body)) }
        });
        let mut req = request(CHAT);
        let facts = seawall_core::RequestFacts::from_head(&req).continuing();
        req.extensions_mut().insert(facts);
        match StreamGuardLayer::interactive()
            .layer(provider)
            .oneshot(req)
            .await
        {
            Ok(response) => Outcome::Delivered(drain(response).await),
            Err(e) => Outcome::Failed(Failure::downcast(e).expect("a Failure")),
        }
    };
    let whole = format!("{ROLE}{}{DONE}", finish_chunk("stop"));
    let d = delivered(continuation(whole.clone()).await);
    assert_finished(&d, &whole, FinishKind::Complete, "stop");
    assert_eq!(d.report.content_events, 0);

    let failure = failed(continuation(format!("{ROLE}{DONE}")).await);
    assert_eq!(failure.code(), Code::EmptyResponse);
    let failure =
        failed(continuation(format!("{ROLE}{}{DONE}", finish_chunk("content_filter"))).await);
    assert_eq!(failure.code(), Code::ContentFiltered);
}

#[tokio::test]
async fn openai_tool_call_deltas_are_content() {
    let f = fixture!("openai/tool_calls.sse");
    let d = delivered(run(CHAT, f).await);
    assert_finished(&d, f, FinishKind::Complete, "tool_calls");
    assert_eq!(d.report.content_events, 3);
}

#[tokio::test]
async fn openai_in_stream_error_before_and_after_content() {
    let failure = failed(run(CHAT, fixture!("openai/error_before_content.sse")).await);
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    assert_eq!(failure.action(), Action::Retry);
    assert_eq!(failure.provider_type(), Some("server_error"));
    assert_eq!(failure.evidence().status, Some(200));
    assert_eq!(failure.evidence().events, 2);
    assert!(!failure.evidence().content_seen);
    assert!(failure.interrupted().is_none());

    let f = fixture!("openai/error_after_content.sse");
    let d = delivered(run(CHAT, f).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hello");
    // Every event before the error event, not the error event: the
    // failure carries what it said.
    let error_event = f
        .find("data: {\"error\"")
        .expect("the fixture's error event");
    assert_eq!(d.bytes, f.as_bytes()[..error_event]);
    let failure = d.error.unwrap();
    assert_eq!(failure.provider_type(), Some("server_error"));
    assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Them));
}

/// llama.cpp's server, in builds from before it sent its errors as
/// `data:` events, writes a streaming error as an `error:` field, then
/// `[DONE]`. After content: an interruption caused by the error, not a
/// clean finish at the `[DONE]`. Before content, a prompt past the
/// context: that error, permanent, not an empty answer to retry.
#[tokio::test]
async fn a_llama_cpp_error_field_is_the_streams_error() {
    let f = fixture!("openai/llama_cpp_error_field.sse");
    let d = delivered(run(CHAT, f).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hello");
    let error_field = f.find("error: {").expect("the fixture's error field");
    assert_eq!(d.bytes, f.as_bytes()[..error_field]);
    let failure = d.error.unwrap();
    let cause = failure.interrupted().and_then(|i| i.cause);
    assert_eq!(cause, Some(Code::ProviderUnavailable));
    assert_eq!(failure.provider_type(), Some("server_error"));
    assert!(d.report.finish.is_none(), "{:?}", d.report.finish);

    let too_long = concat!(
        "error: {\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\"}\n\n",
        "data: [DONE]\n\n",
    );
    let failure = failed(run(CHAT, too_long).await);
    assert_eq!(
        (failure.code(), failure.class(), failure.action()),
        (Code::ContextTooLong, Class::Permanent, Action::Surface)
    );
    assert_eq!(failure.provider_type(), Some("exceed_context_size_error"));
    assert!(!failure.evidence().content_seen);
}

#[tokio::test]
async fn openai_truncated_and_empty() {
    let d = delivered(run(CHAT, fixture!("openai/truncated.sse")).await);
    assert_interrupted(&d, Code::Truncated, "Hello");
    let failure = failed(run(CHAT, fixture!("openai/done_without_content.sse")).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::EmptyResponse, Action::Retry)
    );
    assert!(failure.evidence().finish_seen);
}

/// Content, then `[DONE]` with no `finish_reason` (a proxy ending an
/// abandoned stream with the marker, or stripping the finish chunk): cut
/// short, as openai-node's `ChatCompletionStream` rejects it (`missing
/// finish_reason for choice 0`) and the unary check calls an answer
/// without its finish; with no finish made up for it, so a continuation
/// can carry it on. A refusal's finish is implied: still a refusal.
#[tokio::test]
async fn openai_done_after_content_without_a_finish_is_cut_short() {
    let head = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, the answer is\"},\"finish_reason\":null}]}\n\n";
    let stream = format!("{head}{DONE}");
    let d = delivered(run(CHAT, &stream).await);
    assert_interrupted(&d, Code::Truncated, "Hello, the answer is");
    let failure = d.error.as_ref().unwrap();
    assert!(!failure.evidence().finish_seen, "no finish made up");
    assert_eq!(d.report.finish, None);
    assert!(!d.report.completed_task());
    // Nor is `[DONE]` handed on: an SDK stops at it, before the verdict.
    assert_eq!(d.bytes, head.as_bytes());

    let refused = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":\"I can't\"},\"finish_reason\":null}]}\n\n\
                   data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Sorry\"},\"finish_reason\":null}]}\n\n";
    let d = delivered(run(CHAT, &format!("{refused}{DONE}")).await);
    let finish = d.report.finish.as_ref().expect("the refusal's finish");
    assert_eq!(finish.kind, FinishKind::Refused);
    assert_eq!(d.error.map(|e| e.code()), Some(Code::Refused));
}

#[tokio::test]
async fn anthropic_normal_end_pings_do_not_count() {
    let f = fixture!("anthropic/normal.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "end_turn");
    assert_eq!(d.report.provider, Provider::Anthropic);
    assert_eq!((d.report.content_events, d.report.keepalives), (2, 1));
}

#[tokio::test]
async fn anthropic_length_tool_use_and_thinking() {
    let f = fixture!("anthropic/length.sse");
    assert_finished(
        &delivered(run(MESSAGES, f).await),
        f,
        FinishKind::Truncated,
        "max_tokens",
    );
    let f = fixture!("anthropic/tool_use.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "tool_use");
    // The block start names the act (a tool call without arguments has no
    // input delta at all), then its input streams: both are content, as the
    // unary check counts a tool_use block.
    assert_eq!(d.report.content_events, 2);
    // Thinking is progress, not content: only the text delta counts.
    let f = fixture!("anthropic/thinking.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "end_turn");
    assert_eq!(d.report.content_events, 1);
}

/// A paused server-tool turn ("Send the assistant content back to
/// continue") is delivered whole, but is not a finished task.
#[tokio::test]
async fn anthropic_pause_turn_is_delivered_not_complete() {
    let f = fixture!("anthropic/pause_turn.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Truncated, "pause_turn");
    assert!(!d.report.completed_task());
}

/// A turn that compacted the conversation first: the summary is no
/// content, the answer after it is, and the report bills the compaction
/// pass beside the answer's, as `usage.iterations` says.
#[tokio::test]
async fn anthropic_compaction_pass_is_billed_with_the_answer() {
    let f = fixture!("anthropic/compaction.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "end_turn");
    // The one ping is inside the compaction block: the model at work, no
    // keep-alive.
    assert_eq!((d.report.content_events, d.report.keepalives), (1, 0));
    assert_eq!(
        d.report.usage,
        Some(Usage::new(180_000 + 23_000, 3_500 + 1_000))
    );
    assert!(d.report.usage_whole);
}

/// The compaction fixture's events, each with its blank line: the
/// message's start, the compaction block's start, a ping, the summary,
/// the block's stop, then the answer.
fn compaction_events() -> Vec<&'static str> {
    let events: Vec<_> = fixture!("anthropic/compaction.sse")
        .split_inclusive("\n\n")
        .collect();
    assert!(events[1].contains(r#""type":"compaction""#));
    assert!(events[2].starts_with("event: ping"));
    assert!(events[4].starts_with("event: content_block_stop"));
    events
}

/// A compaction that summarises for 90 s, pinging every 10 s, then the
/// summary and the answer: not cut at the interactive preset's 60 s
/// first-content bound (cut, the retry would pay the whole compaction
/// again), and delivered whole.
#[tokio::test(start_paused = true)]
async fn anthropic_compaction_outlives_the_first_content_bound() {
    let events = compaction_events();
    let mut script = vec![send(events[0]), send(events[1])];
    script.extend(every(10.0, events[2], 9));
    script.extend(events[3..].iter().map(|&event| send(event)));
    let response = call(StreamGuardLayer::interactive(), MESSAGES, scripted(script))
        .await
        .unwrap_or_else(|e| panic!("cut while compacting: {e}"));
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let sent = [&events[..2], &[events[2]; 9], &events[3..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(
        d.report.time_to_first_content,
        Some(Duration::from_secs(90))
    );
    assert_eq!((d.report.content_events, d.report.keepalives), (1, 0));
}

/// Pings extend nothing outside a compaction: `message_start` and then
/// only pings still fail at the first-content bound, `timeout`, as
/// before.
#[tokio::test(start_paused = true)]
async fn anthropic_pings_without_a_compaction_fail_at_the_first_content_bound() {
    let events = compaction_events();
    let mut script = vec![send(events[0])];
    script.extend(every(10.0, events[2], 30));
    let failure =
        failure_of(call(StreamGuardLayer::interactive(), MESSAGES, scripted(script)).await);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.action(), Action::Retry);
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(60)));
    assert!(failure.message().unwrap().contains("first_content"));
}

/// A compaction that falls silent is cut, retryable: with no ping at
/// all, at the first-content bound (its start alone extends nothing, and
/// the idle bound ends sooner); past it, at the idle bound after its last
/// ping. Once its block stops, pings are keep-alives again: a stream of
/// them after the summary, with no answer, is cut at the idle bound after
/// the compaction's last ping.
#[tokio::test(start_paused = true)]
async fn anthropic_compaction_that_falls_silent_is_cut() {
    let events = compaction_events();
    let head = || vec![send(events[0]), send(events[1])];
    let silent = head();
    let mut stalled = head();
    stalled.extend(every(10.0, events[2], 9));
    let mut stopped = head();
    stopped.extend(every(10.0, events[2], 9));
    stopped.extend([send(events[3]), send(events[4])]);
    stopped.extend(every(10.0, events[2], 30));
    let cases = [
        ("silent", silent, 60, "first_content"),
        ("stalled", stalled, 120, "idle bound of 30s"),
        ("stopped", stopped, 120, "idle bound of 30s"),
    ];
    let interactive = |(name, script, cut_at, bound)| {
        (name, StreamGuardLayer::interactive(), script, cut_at, bound)
    };
    assert_cut_before_content(MESSAGES, cases.map(interactive)).await;
}

/// The long-reasoning fixture's events, each with its blank line: the
/// response's head, a keep-alive before any item, a reasoning item with
/// a keep-alive inside, a commentary message, a second reasoning item
/// with a keep-alive inside, the final message and the terminal event.
fn long_reasoning_events() -> Vec<&'static str> {
    let events: Vec<_> = fixture!("responses/long_reasoning.sse")
        .split_inclusive("\n\n")
        .collect();
    assert!(events[2].starts_with("event: keepalive"));
    assert!(events[3].contains(r#""type":"reasoning""#));
    assert!(events[4].starts_with("event: keepalive"));
    assert!(events[5].starts_with("event: response.output_item.done"));
    assert!(events[7].starts_with("event: response.output_text.delta"));
    assert!(events[9].contains(r#""type":"reasoning""#));
    assert!(events[10].starts_with("event: keepalive"));
    assert!(events[11].starts_with("event: response.output_item.done"));
    events
}

/// The Responses compaction fixture's events: the response's head, the
/// compaction item's start, one `response.compaction.compacting`, a
/// keep-alive inside the item, its end, then the answer.
fn responses_compaction_events() -> Vec<&'static str> {
    let events: Vec<_> = fixture!("responses/compaction.sse")
        .split_inclusive("\n\n")
        .collect();
    assert!(events[2].contains(r#""type":"compaction""#));
    assert!(events[3].starts_with("event: response.compaction.compacting"));
    assert!(events[4].starts_with("event: keepalive"));
    assert!(events[5].starts_with("event: response.output_item.done"));
    events
}

/// The Responses API sends `keepalive` events while the model reasons
/// with its summary off (the default) or compacts: those inside an open
/// reasoning or compaction item are the model at work, not keep-alives;
/// the one before any item is one.
#[tokio::test]
async fn responses_keepalives_inside_reasoning_or_compaction_are_the_model_at_work() {
    let f = fixture!("responses/long_reasoning.sse");
    let d = delivered(run(RESPONSES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "completed");
    assert_eq!((d.report.content_events, d.report.keepalives), (2, 1));
    assert_eq!(d.report.usage, Some(Usage::new(1_200, 48_000)));

    let f = fixture!("responses/compaction.sse");
    let d = delivered(run(RESPONSES, f).await);
    assert_finished(&d, f, FinishKind::Complete, "completed");
    assert_eq!((d.report.content_events, d.report.keepalives), (1, 0));
}

/// A reasoning item that shows nothing but a keep-alive every 15 s for
/// 90 s, then the answer: not cut at the interactive preset's 60 s
/// first-content bound (cut, the retry would reason, and be billed, as
/// long again), and delivered whole.
#[tokio::test(start_paused = true)]
async fn responses_reasoning_with_only_keepalives_outlives_the_first_content_bound() {
    let events = long_reasoning_events();
    let mut script = vec![send(events[0]), send(events[1]), send(events[3])];
    script.extend(every(15.0, events[4], 6));
    script.extend(events[5..].iter().map(|&event| send(event)));
    let response = call(StreamGuardLayer::interactive(), RESPONSES, scripted(script))
        .await
        .unwrap_or_else(|e| panic!("cut while reasoning: {e}"));
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let sent = [&events[..2], &[events[3]], &[events[4]; 6], &events[5..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(
        d.report.time_to_first_content,
        Some(Duration::from_secs(90))
    );
    assert_eq!((d.report.content_events, d.report.keepalives), (2, 0));
}

/// A compaction that samples its summary for 90 s, a
/// `response.compaction.compacting` every 10 s, then the answer: not cut
/// at the first-content bound, and delivered whole.
#[tokio::test(start_paused = true)]
async fn responses_compaction_outlives_the_first_content_bound() {
    let events = responses_compaction_events();
    let mut script: Vec<_> = events[..3].iter().map(|&event| send(event)).collect();
    script.extend(every(10.0, events[3], 9));
    script.extend(events[4..].iter().map(|&event| send(event)));
    let response = call(StreamGuardLayer::interactive(), RESPONSES, scripted(script))
        .await
        .unwrap_or_else(|e| panic!("cut while compacting: {e}"));
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let sent = [&events[..3], &[events[3]; 9], &events[4..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(
        d.report.time_to_first_content,
        Some(Duration::from_secs(90))
    );
    assert_eq!((d.report.content_events, d.report.keepalives), (1, 0));
}

/// After content, a second reasoning item with only keep-alives for 45 s
/// (past the 30 s idle bound), then more text: the model at work between
/// its answer's parts, not a stalled stream; delivered whole.
#[tokio::test(start_paused = true)]
async fn responses_reasoning_after_content_outlives_the_idle_bound() {
    let events = long_reasoning_events();
    let mut script: Vec<_> = events[..10].iter().map(|&event| send(event)).collect();
    script.extend(every(15.0, events[10], 3));
    script.extend(events[11..].iter().map(|&event| send(event)));
    let response = call(StreamGuardLayer::interactive(), RESPONSES, scripted(script))
        .await
        .expect("content came first");
    let d = drain(response).await;
    assert!(d.error.is_none(), "cut while reasoning: {:?}", d.error);
    let sent = [&events[..10], &[events[10]; 3], &events[11..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(d.report.time_to_first_content, Some(Duration::ZERO));
    // The keep-alive before any item is one; those inside are not.
    assert_eq!((d.report.content_events, d.report.keepalives), (2, 1));
}

/// Keep-alives extend nothing outside a reasoning or compaction item:
/// the response's head and then only keep-alives still fail at the
/// first-content bound, `timeout`, as before. A reasoning item that falls
/// silent is cut: at once, at the first-content bound; past it, at the
/// idle bound after its last keep-alive. Once its item is done,
/// keep-alives are keep-alives again: cut at the idle bound after the
/// last one inside it.
#[tokio::test(start_paused = true)]
async fn responses_keepalives_outside_reasoning_fail_at_the_first_content_bound() {
    let events = long_reasoning_events();
    let mut outside = vec![send(events[0]), send(events[1])];
    outside.extend(every(15.0, events[2], 8));
    let head = || vec![send(events[0]), send(events[1]), send(events[3])];
    let silent = head();
    let mut stalled = head();
    stalled.extend(every(15.0, events[4], 6));
    let mut done = head();
    done.extend(every(15.0, events[4], 6));
    done.push(send(events[5]));
    done.extend(every(15.0, events[2], 20));
    let cases = [
        ("outside", outside, 60, "first_content"),
        ("silent", silent, 60, "first_content"),
        ("stalled", stalled, 120, "idle bound of 30s"),
        ("done", done, 120, "idle bound of 30s"),
    ];
    let interactive = |(name, script, cut_at, bound)| {
        (name, StreamGuardLayer::interactive(), script, cut_at, bound)
    };
    assert_cut_before_content(RESPONSES, cases.map(interactive)).await;
}

#[tokio::test]
async fn anthropic_refusal_before_content_is_policy() {
    let failure = failed(run(MESSAGES, fixture!("anthropic/refusal_before_content.sse")).await);
    assert_eq!(failure.code(), Code::Refused);
    assert_eq!(failure.class(), Class::Policy);
    assert_eq!(failure.action(), Action::Escalate);
    let f = fixture!("anthropic/refusal_after_content.sse");
    let d = delivered(run(MESSAGES, f).await);
    assert_finished(&d, f, FinishKind::Refused, "refusal");
}

#[tokio::test]
async fn anthropic_overloaded_before_and_after_content() {
    let failure = failed(run(MESSAGES, fixture!("anthropic/error_before_content.sse")).await);
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Transient, Code::Overloaded)
    );
    assert_eq!(failure.action(), Action::Retry);
    assert_eq!(failure.provider_type(), Some("overloaded_error"));

    let d = delivered(run(MESSAGES, fixture!("anthropic/error_after_content.sse")).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hello");
    // `message_start` counted the prompt, but the message never finished:
    // delivered, the report keeps what it reported (the receipt's answer,
    // marked not whole); the failure has no whole count.
    assert!(d.report.usage.is_some_and(|u| u.input_tokens > 0));
    assert_eq!(d.error.as_ref().unwrap().usage(), None);
    assert_eq!(d.error.unwrap().provider_type(), Some("overloaded_error"));
    let d = delivered(run(MESSAGES, fixture!("anthropic/truncated.sse")).await);
    assert_interrupted(&d, Code::Truncated, "Hello");
}

#[tokio::test]
async fn gemini_finish_frame_then_eof() {
    let f = fixture!("gemini/normal.sse");
    let d = delivered(run(GEMINI, f).await);
    assert_finished(&d, f, FinishKind::Complete, "STOP");
    assert_eq!(d.report.provider, Provider::Gemini);
    assert_eq!(d.report.content_events, 2);
    let f = fixture!("gemini/usage_final_chunk.sse");
    assert_finished(
        &delivered(run(GEMINI, f).await),
        f,
        FinishKind::Complete,
        "STOP",
    );
    let f = fixture!("gemini/function_call.sse");
    assert_finished(
        &delivered(run(GEMINI, f).await),
        f,
        FinishKind::Complete,
        "STOP",
    );
}

#[tokio::test]
async fn gemini_length_safety_and_blocked_prompt() {
    let f = fixture!("gemini/length.sse");
    assert_finished(
        &delivered(run(GEMINI, f).await),
        f,
        FinishKind::Truncated,
        "MAX_TOKENS",
    );
    let f = fixture!("gemini/safety.sse");
    assert_finished(
        &delivered(run(GEMINI, f).await),
        f,
        FinishKind::Filtered,
        "SAFETY",
    );
    let failure = failed(run(GEMINI, fixture!("gemini/prompt_blocked.sse")).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::ContentFiltered, Action::Escalate)
    );
}

/// The stream decoder reads the unary check's table: an image blocked for
/// prohibited content or recitation is policy, before content and after;
/// no image is delivered, not complete; a request missing its thought
/// signatures is the caller's to fix, never retried as an empty answer.
#[tokio::test]
async fn gemini_image_and_request_finishes() {
    let f = fixture!("gemini/image_prohibited.sse");
    assert_finished(
        &delivered(run(GEMINI, f).await),
        f,
        FinishKind::Filtered,
        "IMAGE_PROHIBITED_CONTENT",
    );
    let failure = failed(
        run(
            GEMINI,
            fixture!("gemini/image_recitation_before_content.sse"),
        )
        .await,
    );
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::ContentFiltered, Action::Escalate)
    );
    assert_eq!(failure.provider_code(), Some("IMAGE_RECITATION"));
    let f = fixture!("gemini/no_image.sse");
    let d = delivered(run(GEMINI, f).await);
    assert_finished(&d, f, FinishKind::Truncated, "NO_IMAGE");
    assert!(!d.report.completed_task());
    let failure = failed(run(GEMINI, fixture!("gemini/missing_thought_signature.sse")).await);
    assert_eq!(
        (failure.class(), failure.code(), failure.action()),
        (Class::Permanent, Code::BadRequest, Action::Surface)
    );
    assert_eq!(failure.provider_code(), Some("MISSING_THOUGHT_SIGNATURE"));
}

#[tokio::test]
async fn gemini_errors_and_truncation() {
    let failure = failed(run(GEMINI, fixture!("gemini/error_before_content.sse")).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::Overloaded, Action::Retry)
    );
    let d = delivered(run(GEMINI, fixture!("gemini/error_after_content.sse")).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hello");
    // No finishReason, then EOF: a fragment, however many bytes it holds.
    let d = delivered(run(GEMINI, fixture!("gemini/truncated.sse")).await);
    assert_interrupted(&d, Code::Truncated, "Hello wor");
}

/// Google's API writes an error it meets mid-stream into the stream raw:
/// a pretty-printed JSON body with no `data:`, which no SSE client
/// dispatches, then closes. Its chunks each carried `finishReason` (as
/// Vertex AI's did), so read as the event-stream format says, the stream
/// was complete and the error lost. It is the provider's error: after
/// content an interruption caused by it, its text never handed on; before
/// content the error itself, retried by its class.
#[tokio::test]
async fn a_raw_error_body_written_into_a_stream_is_the_providers_error() {
    let f = fixture!("gemini/raw_error_after_content.sse");
    let d = delivered(run(GEMINI, f).await);
    assert_interrupted(&d, Code::StreamInterrupted, "First Second ");
    let cause = d
        .error
        .as_ref()
        .and_then(|e| e.interrupted())
        .and_then(|i| i.cause);
    assert_eq!(cause, Some(Code::Overloaded), "Gemini's UNAVAILABLE");
    assert!(!String::from_utf8_lossy(&d.bytes).contains("UNAVAILABLE"));

    let raw_only = &f[f.find("{\n").unwrap()..];
    let failure = failed(run(GEMINI, Box::leak(raw_only.to_owned().into_boxed_str())).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::Overloaded, Action::Retry)
    );

    // One line, into an OpenAI stream: the same.
    let openai = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "{\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":null}}\n",
    );
    let d = delivered(run(CHAT, openai).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hi");

    // Stray lines that are no error body are ignored, as the format says.
    let noise = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "x-note: {\"a\":1}\n{\"status\":\"ok\"}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let d = delivered(run(CHAT, noise).await);
    assert!(d.error.is_none(), "{:?}", d.error);
}

/// A server that writes its error and closes without a final line end:
/// the error is still why the stream ended (a quota error is no empty
/// answer to retry), though no event was dispatched.
#[tokio::test]
async fn an_error_the_stream_ends_on_without_a_line_end_is_still_read() {
    let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let raw = Box::leak(quota.to_owned().into_boxed_str());
    let failure = failed(run(CHAT, raw).await);
    assert_eq!(failure.code(), Code::QuotaExhausted, "{failure:?}");

    // The same body as an event that no blank line ended.
    let event = Box::leak(format!("data: {quota}\n").into_boxed_str());
    let failure = failed(run(CHAT, event).await);
    assert_eq!(failure.code(), Code::QuotaExhausted, "{failure:?}");
    let anthropic = concat!(
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
    );
    let failure = failed(run(MESSAGES, anthropic).await);
    assert_eq!(failure.code(), Code::Overloaded, "{failure:?}");
    // The Responses API's flat error event, an error by its name alone.
    let responses = concat!(
        "event: error\n",
        "data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached\",\"param\":null,\"sequence_number\":1}",
    );
    let failure = failed(run(RESPONSES, responses).await);
    assert_eq!(failure.code(), Code::RateLimited, "{failure:?}");

    // After content: an interruption caused by it.
    let after = Box::leak(
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hi\"}},\"finish_reason\":null}}]}}\n\n{quota}"
        )
        .into_boxed_str(),
    );
    let d = delivered(run(CHAT, after).await);
    assert_interrupted(&d, Code::StreamInterrupted, "Hi");

    // An event no blank line ended that is no error is still dropped, as
    // the format says: a cut answer, not a finished one.
    let cut = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n",
    );
    let d = delivered(run(CHAT, cut).await);
    assert_interrupted(&d, Code::Truncated, "Hi");
}

/// A Gemini stream whose connection closed in the middle of an event:
/// the half line is a cut, as a reset there is — the answer is cut after
/// what was delivered (resumable), not a broken event stream.
#[tokio::test]
async fn a_gemini_stream_closed_mid_event_is_cut_not_broken() {
    let body = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hello\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" wor",
    );
    let d = delivered(run(GEMINI, body).await);
    assert_interrupted(&d, Code::Truncated, "Hello");
    // A last line the end closed that reads whole is an event, as
    // Google's reader takes it.
    let whole = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hello\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}",
    );
    let d = delivered(run(GEMINI, whole).await);
    assert!(d.error.is_none(), "{:?}", d.error);
}

#[tokio::test]
async fn generic_any_data_is_content_and_eof_finishes() {
    let f = "data: one\n\n: keep-alive\n\ndata: two\n\n";
    let d = delivered(run("/v1/events", f).await);
    assert_finished(&d, f, FinishKind::Complete, "eof");
    assert_eq!(d.report.provider, Provider::Http);
    assert_eq!((d.report.content_events, d.report.keepalives), (2, 1));
    let failure = failed(run("/v1/events", ": only a comment\n\n").await);
    assert_eq!(failure.code(), Code::EmptyResponse);
}

#[tokio::test]
async fn configured_protocol_wins_over_the_path() {
    let f = fixture!("anthropic/normal.sse");
    let response = call(
        StreamGuardLayer::interactive().provider(Provider::Anthropic),
        "/proxy/stream",
        Full::new(Bytes::from_static(f.as_bytes())),
    )
    .await
    .unwrap();
    let d = drain(response).await;
    assert_eq!(d.report.provider, Provider::Anthropic);
    assert_eq!(d.report.finish.unwrap().kind, FinishKind::Complete);
}

/// With `deliver_policy_outcomes` (a proxy whose clients read the
/// provider's own refusal), a refusal or filter the provider declared as
/// the finish is the answer: released whole before content, ending
/// cleanly after it, the finish in the report. An error event stays a
/// failure.
#[tokio::test]
async fn policy_finishes_are_delivered_when_asked() {
    let deliver = || StreamGuardLayer::interactive().deliver_policy_outcomes(true);
    let whole = |fixture: &'static str| Full::new(Bytes::from_static(fixture.as_bytes()));
    for (path, fixture, kind, reason) in [
        (
            MESSAGES,
            fixture!("anthropic/refusal_before_content.sse"),
            FinishKind::Refused,
            "refusal",
        ),
        (
            MESSAGES,
            fixture!("anthropic/refusal_after_content.sse"),
            FinishKind::Refused,
            "refusal",
        ),
        (
            CHAT,
            fixture!("openai/refusal.sse"),
            FinishKind::Refused,
            "stop",
        ),
        (
            CHAT,
            fixture!("openai/content_filter.sse"),
            FinishKind::Filtered,
            "content_filter",
        ),
    ] {
        let response = call(deliver(), path, whole(fixture))
            .await
            .unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let d = drain(response).await;
        assert!(d.error.is_none(), "{fixture}: {:?}", d.error);
        assert_eq!(d.bytes, fixture.as_bytes(), "every byte, once");
        let finish = d.report.finish.as_ref().expect("a finish");
        assert_eq!((finish.kind, &*finish.reason), (kind, reason), "{fixture}");
        assert_eq!(d.report.code, None);
        assert!(!d.report.completed_task());
    }
    // A refusal that ends without a reason, at EOF: still the answer.
    let f = fixture!("openai/refusal.sse");
    let at_eof: String = f
        .split_inclusive("\n\n")
        .take_while(|e| !e.contains("\"finish_reason\":\"stop\""))
        .collect();
    let d = drain(
        call(deliver(), CHAT, Full::new(Bytes::from(at_eof.clone())))
            .await
            .unwrap(),
    )
    .await;
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.bytes, at_eof.as_bytes());
    // The provider's error event is no finish: still a failure.
    let failure = match call(
        deliver(),
        MESSAGES,
        whole(fixture!("anthropic/error_before_content.sse")),
    )
    .await
    {
        Err(e) => Failure::downcast(e).unwrap(),
        Ok(_) => panic!("an error event is no answer"),
    };
    assert_eq!(failure.code(), Code::Overloaded);
}

/// Several choices (`n > 1`), one per chunk as OpenAI and vLLM send them:
/// the first to finish does not finish the message. A stream cut after
/// choice 0 finished, while choice 1 still wrote, is truncated, not
/// complete; whole, it finishes with the notable reason (a choice cut at
/// its limit is not hidden by another's `stop`).
#[tokio::test]
async fn several_choices_finish_when_every_choice_has() {
    let chunk = |index: u32, delta: &str, finish: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":{index},\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let head = [
        chunk(0, r#"{"role":"assistant","content":""}"#, "null"),
        chunk(1, r#"{"role":"assistant","content":""}"#, "null"),
        chunk(0, r#"{"content":"A"}"#, "null"),
        chunk(1, r#"{"content":"B"}"#, "null"),
        chunk(0, "{}", r#""length""#),
        chunk(1, r#"{"content":"C"}"#, "null"),
    ]
    .concat();
    // Cut while choice 1 still writes.
    let d = match run_framed(CHAT, head.as_bytes(), head.len()).await {
        Outcome::Delivered(d) => d,
        Outcome::Failed(f) => panic!("{f:?}"),
    };
    assert_eq!(d.error.map(|e| e.code()), Some(Code::Truncated));
    // Ended by `[DONE]` while choice 1 never finished: cut, as a stream
    // that ends without its finish, never complete (a lone choice's
    // `[DONE]` without a finish closes it). So with a choice that first
    // shows up after the others finished.
    let late = [
        chunk(0, r#"{"role":"assistant","content":"A"}"#, "null"),
        chunk(0, "{}", r#""stop""#),
        chunk(1, r#"{"content":"B"}"#, "null"),
    ]
    .concat();
    for marked in [head.clone() + DONE, late + DONE] {
        let d = match run_framed(CHAT, marked.as_bytes(), marked.len()).await {
            Outcome::Delivered(d) => d,
            Outcome::Failed(f) => panic!("{f:?}"),
        };
        let error = d.error.expect("not complete");
        assert_eq!(error.code(), Code::Truncated, "{error:?}");
        // Nor is `[DONE]` handed on: an SDK stops at it, before the verdict.
        assert_eq!(d.bytes, marked.trim_end_matches(DONE).as_bytes());
    }
    // Whole.
    let whole = head + &chunk(1, "{}", r#""stop""#) + DONE;
    let d = match run_framed(CHAT, whole.as_bytes(), whole.len()).await {
        Outcome::Delivered(d) => d,
        Outcome::Failed(f) => panic!("{f:?}"),
    };
    assert!(d.error.is_none(), "{:?}", d.error);
    let finish = d.report.finish.expect("a finish");
    assert_eq!(
        (finish.kind, &*finish.reason),
        (FinishKind::Truncated, "length")
    );
}

/// Several choices in one chunk (`n > 1`; OpenAI's chunk schema: choices
/// "can contain more than one element"): every choice is read, not the
/// first only. One choice's `stop` does not hide another's cut at its
/// limit, and a stream cut while choice 1 never finished is truncated.
/// The delivered text is choice 0's.
#[tokio::test]
async fn several_choices_in_one_chunk_are_each_read() {
    let both = |first: &str, second: &str| format!("data: {{\"choices\":[{first},{second}]}}\n\n");
    let choice = |index: u32, delta: &str, finish: &str| {
        format!(r#"{{"index":{index},"delta":{delta},"finish_reason":{finish}}}"#)
    };
    let written = both(
        &choice(0, r#"{"content":"A"}"#, "null"),
        &choice(1, r#"{"content":"B"}"#, "null"),
    );
    // Choice 1 never finishes: the connection cut, or `[DONE]`.
    let cut = written.clone()
        + &both(
            &choice(0, "{}", r#""stop""#),
            &choice(1, r#"{"content":"C"}"#, "null"),
        );
    for stream in [cut.clone(), cut + DONE] {
        let d = delivered(run(CHAT, &stream).await);
        let error = d.error.as_ref().expect("not complete");
        assert_eq!(error.code(), Code::Truncated, "{stream}");
        assert_eq!(
            error
                .interrupted()
                .and_then(|i| i.delivered_text.as_deref()),
            Some("A"),
            "choice 0's text"
        );
    }
    // Whole: choice 1's cut at its limit is the message's finish.
    let whole = written
        + &both(
            &choice(0, "{}", r#""stop""#),
            &choice(1, "{}", r#""length""#),
        )
        + DONE;
    let d = delivered(run(CHAT, &whole).await);
    let finish = d.report.finish.as_ref().expect("a finish");
    assert_eq!(
        (finish.kind, &*finish.reason),
        (FinishKind::Truncated, "length")
    );
    assert!(d.error.is_none(), "{:?}", d.error);
}

/// Several Gemini candidates (`candidateCount > 1`): in one chunk each, or
/// one per chunk with its `index` (the first's left out). The first to
/// finish does not finish the message; one cut while another finished is
/// truncated, not complete, and a candidate's cut is not hidden by
/// another's `STOP`. The delivered text is the first candidate's, what
/// the SDK's `text` reads.
#[tokio::test]
async fn several_gemini_candidates_finish_when_every_candidate_has() {
    let path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";
    let candidate = |index: u32, text: &str, finish: Option<&str>| {
        let index = if index == 0 {
            String::new()
        } else {
            format!(",\"index\":{index}")
        };
        let finish = finish
            .map(|reason| format!(",\"finishReason\":\"{reason}\""))
            .unwrap_or_default();
        format!(
            "{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}],\"role\":\"model\"}}{finish}{index}}}"
        )
    };
    let chunk = |candidates: &[String]| {
        format!(
            "data: {{\"candidates\":[{}]}}\r\n\r\n",
            candidates.join(",")
        )
    };
    let run = |stream: String| async move {
        match run_framed(path, stream.as_bytes(), stream.len()).await {
            Outcome::Delivered(d) => d,
            Outcome::Failed(f) => panic!("{f:?}"),
        }
    };
    // Both in each chunk; candidate 1 never finishes.
    let together = chunk(&[candidate(0, "A", None), candidate(1, "B", None)])
        + &chunk(&[candidate(0, "!", Some("STOP")), candidate(1, "b", None)]);
    // One per chunk, candidate 1 showing up after candidate 0 finished.
    let late = chunk(&[candidate(0, "A", Some("STOP"))]) + &chunk(&[candidate(1, "B", None)]);
    for (cut, text) in [(together.clone(), "A!"), (late, "A")] {
        let d = run(cut.clone()).await;
        let error = d.error.unwrap_or_else(|| panic!("not complete: {cut}"));
        assert_eq!(error.code(), Code::Truncated, "{cut}: {error:?}");
        let delivered = error
            .interrupted()
            .and_then(|i| i.delivered_text.as_deref());
        assert_eq!(delivered, Some(text), "{cut}");
        // Another candidate's text is text, not a tool call.
        let calls = error.interrupted().map(|i| i.tool_call_events);
        assert_eq!(calls, Some(0), "{cut}");
    }
    // Whole, candidate 1 cut at its limit: truncated, whichever finished
    // first, and so however the chunks hold them.
    for whole in [
        together.clone() + &chunk(&[candidate(1, "", Some("MAX_TOKENS"))]),
        chunk(&[
            candidate(0, "A", Some("STOP")),
            candidate(1, "B", Some("MAX_TOKENS")),
        ]),
        chunk(&[candidate(1, "B", Some("MAX_TOKENS"))])
            + &chunk(&[candidate(0, "A", Some("STOP"))]),
    ] {
        let d = run(whole.clone()).await;
        let finish = d.report.finish.as_ref().expect("a finish");
        assert_eq!(
            (finish.kind, &*finish.reason),
            (FinishKind::Truncated, "MAX_TOKENS"),
            "{whole}"
        );
    }
    // Whole, both stopped: complete, the first candidate's text delivered.
    let whole = together + &chunk(&[candidate(1, "", Some("STOP"))]);
    let d = run(whole.clone()).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.bytes, whole.as_bytes());
    let finish = d.report.finish.as_ref().expect("a finish");
    assert_eq!(
        (finish.kind, &*finish.reason),
        (FinishKind::Complete, "STOP")
    );
    assert_eq!(d.report.content_events, 2);
}

/// A second finish does not take back the verdict of the first: a filter
/// or a cut at the token limit followed by a `stop` is no whole answer.
#[tokio::test]
async fn a_later_stop_does_not_take_back_a_filter() {
    for (first, kind) in [
        ("content_filter", FinishKind::Filtered),
        ("length", FinishKind::Truncated),
    ] {
        let body = Box::leak(
            format!(
                concat!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hel\"}},\"finish_reason\":null}}]}}\n\n",
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{first}\"}}]}}\n\n",
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n",
                    "data: [DONE]\n\n",
                ),
                first = first
            )
            .into_boxed_str(),
        );
        let d = delivered(run(CHAT, body).await);
        let finish = d.report.finish.clone().unwrap();
        assert_eq!(
            (finish.kind, &*finish.reason),
            (kind, first),
            "{:?}",
            d.error
        );
    }
}
