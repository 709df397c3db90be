//! The model at work out of sight, on tokio's paused clock: thinking the
//! caller does not see (Anthropic's omitted or redacted thinking) and a
//! hosted tool running (a Responses API image render) send nothing but
//! keep-alives while they last. Read as the model at work, those
//! keep-alives keep the first-content and idle bounds off; a stream that
//! falls silent, keep-alives outside such work and `max_duration` still
//! end it.

mod common;

use std::time::Duration;

use common::*;
use seawall_stream::StreamGuardLayer;

const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

/// A recorded stream's events, each with its blank line.
fn events(fixture: &'static str) -> Vec<&'static str> {
    fixture.split_inclusive("\n\n").collect()
}

/// Thinking with `display: "omitted"`: `message_start`, the thinking
/// block's start, one empty `thinking_delta`, then (while the model
/// thinks) only pings, then the signature, the block's stop and the text.
fn omitted_thinking() -> Vec<&'static str> {
    let events = events(include_str!(
        "fixtures/real/anthropic/docs_thinking_omitted.sse"
    ));
    assert!(events[1].contains(r#""type":"thinking""#));
    assert!(events[2].contains(r#""thinking":"""#));
    assert!(events[3].contains("signature_delta"));
    assert!(events[4].starts_with("event: content_block_stop"));
    events
}

/// Redacted thinking: the block arrives whole in its start, then stops.
fn redacted_thinking() -> Vec<&'static str> {
    let events = events(include_str!(
        "fixtures/real/anthropic/docs_redacted_thinking.sse"
    ));
    assert!(events[1].contains(r#""type":"redacted_thinking""#));
    assert!(events[2].starts_with("event: content_block_stop"));
    events
}

/// A model that thinks out of sight for 90 s, a ping every 10 s, then
/// answers: not cut at the interactive preset's 60 s first-content bound
/// (cut, it would be asked again and think, and be billed, as long
/// again), and delivered whole. Its pings are the model at work, no
/// keep-alives.
#[tokio::test(start_paused = true)]
async fn hidden_thinking_outlives_the_first_content_bound() {
    for (name, events, open) in [
        ("omitted", omitted_thinking(), 3),
        ("redacted", redacted_thinking(), 2),
    ] {
        let mut script = sends(&events[..open]);
        script.extend(every(10.0, PING, 9));
        script.extend(sends(&events[open..]));
        let response = call(StreamGuardLayer::interactive(), MESSAGES, scripted(script))
            .await
            .unwrap_or_else(|e| panic!("{name}: cut while thinking: {e}"));
        let d = drain(response).await;
        assert!(d.error.is_none(), "{name}: {:?}", d.error);
        let sent = [&events[..open], &[PING; 9], &events[open..]].concat();
        assert_eq!(d.bytes, sent.concat().as_bytes(), "{name}");
        assert!(d.report.completed_task(), "{name}");
        assert_eq!(
            d.report.time_to_first_content,
            Some(Duration::from_secs(90)),
            "{name}"
        );
        assert_eq!(
            (d.report.content_events, d.report.keepalives),
            (1, 0),
            "{name}"
        );
    }
}

/// Pings inside a thinking block keep only the first-content bound off:
/// `max_duration` still ends the stream; a thinking block that falls
/// silent is cut (at once, at the first-content bound; past it, at the
/// idle bound after its last ping); once the block stops, pings are
/// keep-alives again; and pings with no thinking block open extend
/// nothing.
#[tokio::test(start_paused = true)]
async fn pings_in_a_thinking_block_are_still_bounded() {
    let events = omitted_thinking();
    let head = || sends(&events[..3]);
    let mut endless = head();
    endless.extend(every(10.0, PING, 100));
    let silent = head();
    let mut stalled = head();
    stalled.extend(every(10.0, PING, 9));
    let mut stopped = head();
    stopped.extend(every(10.0, PING, 9));
    stopped.extend(sends(&events[3..5]));
    stopped.extend(every(10.0, PING, 30));
    let mut no_block = sends(&events[..1]);
    no_block.extend(every(10.0, PING, 30));
    let bounded = StreamGuardLayer::interactive().max_duration(Some(Duration::from_secs(150)));
    let cases = [
        ("endless", bounded, endless, 150, "max_duration"),
        (
            "silent",
            StreamGuardLayer::interactive(),
            silent,
            60,
            "first_content",
        ),
        (
            "stalled",
            StreamGuardLayer::interactive(),
            stalled,
            120,
            "idle bound of 30s",
        ),
        (
            "stopped",
            StreamGuardLayer::interactive(),
            stopped,
            120,
            "idle bound of 30s",
        ),
        (
            "no block",
            StreamGuardLayer::interactive(),
            no_block,
            60,
            "first_content",
        ),
    ];
    assert_cut_before_content(MESSAGES, cases).await;
}

/// A hosted image render: the response's head, a reasoning item, the
/// `image_generation_call` item's start (content at once: the caller
/// shows its result), its progress events, its end with the image, then
/// an empty message and the terminal event.
fn image_generation() -> Vec<&'static str> {
    let events = events(include_str!(
        "fixtures/real/responses/vercel_image_generation_tool.sse"
    ));
    assert!(events[4].contains(r#""type":"image_generation_call""#));
    assert!(events[6].starts_with("event: response.image_generation_call.generating"));
    assert!(events[7].starts_with("event: response.image_generation_call.partial_image"));
    assert!(events[9].starts_with("event: response.output_item.done"));
    assert!(events[9].contains(r#""result":"#));
    events
}

/// A hosted tool that runs for 60 s after its item's start (content), a
/// keep-alive every 10 s, then its result: not cut at the 30 s idle bound
/// (cut there, the billed render is lost, and a call delivered is never
/// resumed), and delivered whole. Its keep-alives are the tool at work.
#[tokio::test(start_paused = true)]
async fn a_hosted_tool_running_after_content_outlives_the_idle_bound() {
    let d = a_tool_run_outlives_the_idle_bound(RESPONSES, &image_generation(), 7, KEEPALIVE).await;
    assert_eq!(d.report.time_to_first_content, Some(Duration::ZERO));
    assert_eq!(d.report.keepalives, 0);
}

/// A tool that runs for 60 s after `events[..at]` (content), `sign` every
/// 10 s, then the rest of `events`: delivered whole, not cut at the idle
/// bound, its task completed.
async fn a_tool_run_outlives_the_idle_bound(
    path: &str,
    events: &[&'static str],
    at: usize,
    sign: &'static str,
) -> Drained {
    let mut script = sends(&events[..at]);
    script.extend(every(10.0, sign, 6));
    script.extend(sends(&events[at..]));
    let response = call(StreamGuardLayer::interactive(), path, scripted(script))
        .await
        .expect("content came first");
    let d = drain(response).await;
    assert!(d.error.is_none(), "cut while the tool ran: {:?}", d.error);
    let sent = [&events[..at], &[sign; 6], &events[at..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    d
}

/// A tool's run after content, bounded as the two tests below say: `head`
/// up to the run, `sign` its sign of life every 10 s, `result` the events
/// that end the run, on `path`.
async fn a_tool_run_is_still_bounded(
    path: &str,
    head: &[&'static str],
    sign: &'static str,
    result: &[&'static str],
) {
    let head = || sends(head);
    let mut endless = head();
    endless.extend(every(10.0, sign, 100));
    let silent = head();
    let mut stalled = head();
    stalled.extend(every(10.0, sign, 6));
    let mut done = head();
    done.extend(every(10.0, sign, 6));
    done.extend(sends(result));
    done.extend(every(10.0, sign, 20));
    let bounded = StreamGuardLayer::interactive().max_duration(Some(Duration::from_secs(150)));
    let cases = [
        ("endless", bounded, endless, 150, "max_duration"),
        (
            "silent",
            StreamGuardLayer::interactive(),
            silent,
            30,
            "idle",
        ),
        (
            "stalled",
            StreamGuardLayer::interactive(),
            stalled,
            90,
            "idle",
        ),
        ("done", StreamGuardLayer::interactive(), done, 90, "idle"),
    ];
    assert_cut_after_content(path, cases).await;
}

/// Keep-alives while a hosted tool runs move only the idle bound:
/// `max_duration` still ends the stream; a tool that falls silent is cut
/// at the idle bound after its last sign of life; once its item is done,
/// keep-alives are keep-alives again.
#[tokio::test(start_paused = true)]
async fn keepalives_while_a_hosted_tool_runs_are_still_bounded() {
    let events = image_generation();
    a_tool_run_is_still_bounded(RESPONSES, &events[..7], KEEPALIVE, &events[7..10]).await;
}

/// A web fetch: text, the `server_tool_use` block (content: the call),
/// its input, its stop, then (once the page is fetched) the
/// `web_fetch_tool_result` block and the answer.
fn web_fetch() -> Vec<&'static str> {
    let events = events(include_str!(
        "fixtures/real/anthropic/vercel_web_fetch_tool.sse"
    ));
    assert!(events[7].contains(r#""type":"server_tool_use""#));
    assert!(events[19].starts_with("event: content_block_stop"));
    assert!(events[20].contains(r#""type":"web_fetch_tool_result""#));
    events
}

/// A server tool that runs for 60 s after its block stops, a ping every
/// 10 s, then its result: not cut at the 30 s idle bound (cut there, the
/// billed result is lost, and a call delivered is never resumed), and
/// delivered whole. Its pings are the tool at work.
#[tokio::test(start_paused = true)]
async fn a_server_tool_running_outlives_the_idle_bound() {
    a_tool_run_outlives_the_idle_bound(MESSAGES, &web_fetch(), 20, PING).await;
}

/// Pings while a server tool runs move only the idle bound:
/// `max_duration` still ends the stream; a tool that falls silent is cut
/// at the idle bound after its last ping; once its result's block
/// starts, pings are keep-alives again.
#[tokio::test(start_paused = true)]
async fn pings_while_a_server_tool_runs_are_still_bounded() {
    let events = web_fetch();
    a_tool_run_is_still_bounded(MESSAGES, &events[..20], PING, &events[20..22]).await;
}
