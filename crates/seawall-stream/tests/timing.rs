//! The three real shapes and the gap timers, on tokio's paused clock with
//! a channel-fed body.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::BodyExt;
use seawall_core::{Action, ClosedBy, Code, FinishKind, Progress};
use seawall_stream::{StreamGuardLayer, StreamReportHandle};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";
const MESSAGE_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n";

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// (a) One 40-byte frame, then EOF at 0.8 s: a broken completion, cheap to
/// retry.
#[tokio::test(start_paused = true)]
async fn forty_bytes_then_eof_is_an_empty_response_to_retry() {
    let frame = &OPENAI_ROLE.as_bytes()[..40];
    let body = scripted(vec![
        wait(0.3),
        send(Bytes::copy_from_slice(frame)),
        wait(0.5),
    ]);
    let start = Instant::now();
    let failure = failure_of(call(StreamGuardLayer::interactive(), CHAT, body).await);
    assert_eq!(failure.code(), Code::EmptyResponse);
    assert_eq!(failure.action(), Action::Retry);
    assert!(!failure.is_route_shaped());
    let evidence = failure.evidence();
    assert_eq!(
        (evidence.bytes, evidence.chunks, evidence.events),
        (40, 1, 0)
    );
    assert_eq!(evidence.time_to_first_byte, Some(secs(0.3)));
    assert_eq!(evidence.elapsed, Some(secs(0.8)));
    assert_eq!(evidence.closed_by, Some(ClosedBy::Them));
    assert!(!evidence.content_seen && !evidence.finish_seen);
    assert_eq!(start.elapsed(), secs(0.8));
}

/// (b) 150 KB over 29 s, then a reset: a partial answer the user has read,
/// never to be replayed — surfaced with what was delivered.
#[tokio::test(start_paused = true)]
async fn reset_after_content_is_an_interruption_with_the_delivered_prefix() {
    let mut script = vec![wait(0.4), send(OPENAI_ROLE)];
    let mut expected_text = String::new();
    let mut sent = OPENAI_ROLE.len();
    let mut n = 0;
    while sent < 150_000 {
        let delta = format!("token {n} of a long answer, with \"quotes\" and é; ").repeat(20);
        let frame = openai_delta(&delta);
        sent += frame.len();
        expected_text.push_str(&delta);
        script.push(wait(0.1));
        script.push(send(frame));
        n += 1;
    }
    let step = 29.0 - 0.4 - 0.1 * n as f64;
    script.push(wait(step));
    script.push(Step::Reset);

    let start = Instant::now();
    let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
        .await
        .expect("released at the first content event");
    assert_eq!(
        start.elapsed(),
        secs(0.5),
        "released at the first content, not at the end"
    );
    let d = drain(response).await;
    assert_eq!(d.bytes.len(), sent);
    let failure = d.error.expect("interrupted");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    assert!(failure.message().unwrap().contains("connection reset"));
    let evidence = failure.evidence();
    assert!(evidence.content_seen);
    assert_eq!(evidence.closed_by, Some(ClosedBy::Them));
    assert_eq!(evidence.elapsed, Some(secs(29.0)));
    let delivered = failure.interrupted().expect("the delivered record");
    assert_eq!(delivered.content_events, n);
    assert_eq!(delivered.bytes, sent as u64);
    assert_eq!(delivered.delivered_text.as_deref(), Some(&*expected_text));
    assert!(!delivered.text_capped);
    assert_eq!(d.report.code, Some(Code::StreamInterrupted));
    assert_eq!(d.report.time_to_first_content, Some(secs(0.5)));
    assert_eq!(d.report.time_to_first_byte, Some(secs(0.4)));
}

/// (c) Headers, then zero bytes: a route that accepts connections and does
/// not generate — fail over at the first-byte bound, do not wait 600 s.
#[tokio::test(start_paused = true)]
async fn headers_then_silence_fails_over_at_the_first_byte_bound() {
    let body = scripted(vec![wait(600.0)]);
    let start = Instant::now();
    let failure = failure_of(call(StreamGuardLayer::interactive(), CHAT, body).await);
    assert_eq!(failure.code(), Code::FirstByteTimeout);
    assert_eq!(failure.action(), Action::Failover);
    assert!(failure.is_route_shaped());
    assert_eq!(failure.evidence().bytes, 0);
    assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Us));
    assert_eq!(failure.evidence().elapsed, Some(secs(15.0)));
    assert_eq!(start.elapsed(), secs(15.0));
}

/// Headers, then only keep-alives (OpenRouter's `: OPENROUTER PROCESSING`
/// comments, blank lines, Anthropic's `ping` events, a named event with no
/// data): a route that does not generate, as silent as one that sends
/// nothing. It fails at the first-byte bound with the same code and
/// evidence, so the ladder fails over instead of waiting out the
/// first-content bound on every retry.
#[tokio::test(start_paused = true)]
async fn headers_then_only_keep_alives_fail_over_at_the_first_byte_bound() {
    for (path, keep_alive) in [
        (CHAT, ": OPENROUTER PROCESSING\n\n"),
        (CHAT, "\n"),
        (CHAT, "event: ping\n\n"),
        (CHAT, "event: ping\ndata:\n\n"),
        (MESSAGES, PING),
    ] {
        let mut script = vec![wait(0.5)];
        for _ in 0..200 {
            script.push(send(keep_alive));
            script.push(wait(3.0));
        }
        let start = Instant::now();
        let failure =
            failure_of(call(StreamGuardLayer::interactive(), path, scripted(script)).await);
        assert_eq!(failure.code(), Code::FirstByteTimeout, "{keep_alive:?}");
        assert_eq!(failure.action(), Action::Failover, "{keep_alive:?}");
        assert!(failure.is_route_shaped(), "{keep_alive:?}");
        let evidence = failure.evidence();
        assert_eq!(
            (evidence.bytes, evidence.chunks, evidence.events),
            (0, 0, 0)
        );
        assert_eq!(evidence.time_to_first_byte, None);
        assert_eq!(evidence.closed_by, Some(ClosedBy::Us));
        assert_eq!(evidence.elapsed, Some(secs(15.0)));
        assert_eq!(start.elapsed(), secs(15.0));
        let message = failure.message().expect("a message");
        assert!(message.contains("only keep-alives arrived"), "{message}");
    }
}

/// An attempt's bound outside reads the attempt's progress: keep-alives
/// add nothing to it until the stream says something, and then count with
/// the rest.
#[tokio::test(start_paused = true)]
async fn keep_alives_reach_the_attempt_progress_only_once_the_stream_speaks() {
    const COMMENT: &str = ": OPENROUTER PROCESSING\n\n";
    let guarded = |script: Vec<Step>| {
        let progress = Progress::default();
        let mut body = Some(scripted(script));
        let provider = tower::service_fn(move |_req: http::Request<()>| {
            let body = body.take().unwrap();
            async move { Ok::<_, std::convert::Infallible>(sse(body)) }
        });
        let mut req = request(CHAT);
        req.extensions_mut().insert(progress.clone());
        let call = StreamGuardLayer::interactive().layer(provider).oneshot(req);
        (progress, call)
    };

    let (seen, call) = guarded(vec![send(COMMENT), wait(3.0), send(COMMENT), Step::Hang]);
    failure_of(call.await);
    assert_eq!(seen.bytes(), 0, "keep-alives alone are silence");

    let (seen, call) = guarded(vec![
        send(COMMENT),
        wait(3.0),
        send(OPENAI_ROLE),
        send(openai_delta("a")),
        Step::Hang,
    ]);
    let response = call.await.unwrap();
    assert_eq!(
        seen.bytes(),
        (COMMENT.len() + OPENAI_ROLE.len() + openai_delta("a").len()) as u64
    );
    drop(response);
}

/// A first-content bound shorter than the first-byte bound arms the first
/// wait: the failure names the bound that fired.
#[tokio::test(start_paused = true)]
async fn silence_under_a_shorter_first_content_bound_names_that_bound() {
    let layer = StreamGuardLayer::interactive().first_content_timeout(secs(5.0));
    let failure = failure_of(call(layer, CHAT, scripted(vec![wait(600.0)])).await);
    assert_eq!(failure.code(), Code::FirstByteTimeout);
    assert_eq!(failure.evidence().elapsed, Some(secs(5.0)));
    let message = failure.message().expect("a message");
    assert!(message.contains("bound of 5s passed"), "{message}");
}

/// Keep-alives prove nothing: pings every 10 s, no content → `timeout`
/// at the first-content bound.
#[tokio::test(start_paused = true)]
async fn pings_without_content_fail_at_the_first_content_bound() {
    let mut script = vec![send(MESSAGE_START)];
    for _ in 0..100 {
        script.push(wait(10.0));
        script.push(send(PING));
    }
    let layer = StreamGuardLayer::interactive().first_content_timeout(secs(45.0));
    let failure = failure_of(call(layer, MESSAGES, scripted(script)).await);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(
        failure.action(),
        Action::Retry,
        "bytes arrived: not route-shaped"
    );
    assert!(!failure.is_route_shaped());
    assert_eq!(failure.evidence().elapsed, Some(secs(45.0)));
    assert_eq!(failure.evidence().events, 5, "message_start and four pings");
    assert_eq!(failure.evidence().content_events, 0);
}

/// A chunk that carries nothing (OpenAI's wire: no choices, no usage, no
/// id or object; Gemini's: no candidates, usage or prompt feedback) is a
/// keep-alive: it does not move the idle bound after content, which
/// passes as measured from the content.
#[tokio::test(start_paused = true)]
async fn chunks_that_carry_nothing_do_not_move_the_idle_bound() {
    let gemini_text = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\r\n\r\n";
    let cases = [
        (CHAT, openai_delta("Hel"), "data: {}\n\n"),
        (CHAT, openai_delta("Hel"), "data: {\"type\":\"ping\"}\n\n"),
        (CHAT, openai_delta("Hel"), "data: {\"choices\":[]}\n\n"),
        (GEMINI, gemini_text.to_owned(), "data: {}\r\n\r\n"),
        (
            GEMINI,
            gemini_text.to_owned(),
            "data: {\"candidates\":[]}\r\n\r\n",
        ),
    ];
    for (path, content, empty) in cases {
        // Content at 1 s, then an empty chunk at 15 s, 30 s, 45 s…
        let mut script = vec![wait(1.0), send(content), wait(14.0), send(empty)];
        for _ in 0..20 {
            script.push(wait(15.0));
            script.push(send(empty));
        }
        let layer = StreamGuardLayer::interactive().idle_timeout(secs(30.0));
        let d = drain(call(layer, path, scripted(script)).await.unwrap()).await;
        let failure = d.error.expect("idle");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{empty}");
        assert_eq!(failure.evidence().elapsed, Some(secs(31.0)), "{empty}");
        assert_eq!(
            failure.interrupted().unwrap().cause,
            Some(Code::IdleTimeout),
            "{empty}"
        );
        assert_eq!(d.report.keepalives, 2, "{empty}");
    }
}

/// Gaps, not streams: content every 50 s with idle 60 s runs ten virtual
/// minutes and finishes.
#[tokio::test(start_paused = true)]
async fn slow_steady_stream_runs_ten_minutes() {
    let mut script = vec![send(OPENAI_ROLE)];
    for i in 0..12 {
        script.push(wait(50.0));
        script.push(send(openai_delta(&format!("part {i} "))));
    }
    script.push(send(OPENAI_STOP));
    script.push(send(DONE));
    let layer = StreamGuardLayer::interactive()
        .first_content_timeout(secs(120.0))
        .idle_timeout(secs(60.0));
    let response = call(layer, CHAT, scripted(script)).await.unwrap();
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.report.content_events, 12);
    assert_eq!(d.report.elapsed, secs(600.0));
    assert_eq!(d.report.finish.as_ref().unwrap().kind, FinishKind::Complete);
    assert!(d.report.completed_task());
}

/// After content, pings do not reset the idle bound.
#[tokio::test(start_paused = true)]
async fn idle_gap_after_content_is_an_interruption() {
    let mut script = vec![send(OPENAI_ROLE), wait(1.0), send(openai_delta("Hel"))];
    for _ in 0..20 {
        script.push(wait(10.0));
        script.push(send(": keep-alive\n\n"));
    }
    let layer = StreamGuardLayer::interactive().idle_timeout(secs(30.0));
    let d = drain(call(layer, CHAT, scripted(script)).await.unwrap()).await;
    let failure = d.error.expect("idle");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Us));
    assert_eq!(failure.evidence().elapsed, Some(secs(31.0)));
    assert!(failure.message().unwrap().contains("idle"));
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("Hel")
    );
    assert_eq!(d.report.keepalives, 2);
}

/// The idle bound counts from the last content, however many came before
/// it within the bound (the timer is re-armed late, when it fires, not on
/// every event).
#[tokio::test(start_paused = true)]
async fn the_idle_bound_counts_from_the_last_content() {
    let mut script = vec![send(OPENAI_ROLE), wait(1.0), send(openai_delta("a"))];
    for _ in 0..3 {
        script.push(wait(20.0));
        script.push(send(openai_delta("b")));
    }
    script.push(wait(600.0));
    let layer = StreamGuardLayer::interactive().idle_timeout(secs(30.0));
    let d = drain(call(layer, CHAT, scripted(script)).await.unwrap()).await;
    let failure = d.error.expect("idle");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.evidence().elapsed, Some(secs(91.0)));
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("abbb")
    );
}

/// The bound is the caller's own, as a deadline is: the interruption it
/// makes names no cause (a breaker counts none against the route).
#[tokio::test(start_paused = true)]
async fn max_duration_bounds_the_whole_stream() {
    let mut script = vec![send(OPENAI_ROLE)];
    for _ in 0..100 {
        script.push(wait(5.0));
        script.push(send(openai_delta("x")));
    }
    let layer = StreamGuardLayer::interactive().max_duration(Some(secs(22.0)));
    let d = drain(call(layer, CHAT, scripted(script)).await.unwrap()).await;
    let failure = d.error.expect("bounded");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.evidence().elapsed, Some(secs(22.0)));
    assert_eq!(failure.interrupted().unwrap().content_events, 4);
    assert_eq!(failure.interrupted().unwrap().cause, None);
    assert_eq!(failure.evidence().closed_by, Some(ClosedBy::Us));
}

#[tokio::test(start_paused = true)]
async fn reasoning_preset_waits_minutes_for_first_content() {
    let script = vec![
        send(OPENAI_ROLE),
        wait(300.0),
        send(openai_delta("After thinking")),
        send(OPENAI_STOP),
        send(DONE),
    ];
    let d = drain(
        call(StreamGuardLayer::reasoning(), CHAT, scripted(script))
            .await
            .unwrap(),
    )
    .await;
    assert!(d.error.is_none());
    assert_eq!(d.report.time_to_first_content, Some(secs(300.0)));

    let script = vec![send(OPENAI_ROLE), wait(300.0), send(openai_delta("late"))];
    let failure = failure_of(call(StreamGuardLayer::interactive(), CHAT, scripted(script)).await);
    assert_eq!(failure.code(), Code::Timeout);
}

/// A caller that drops the body early closed it: `cancelled`, by us.
#[tokio::test(start_paused = true)]
async fn dropping_the_body_early_is_cancelled_by_us() {
    let script = vec![send(OPENAI_ROLE), send(openai_delta("Hello")), Step::Hang];
    let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
        .await
        .unwrap();
    let handle = report_handle(&response);
    let mut body = response.into_body();
    body.frame().await.unwrap().unwrap();
    assert!(handle.get().is_none(), "still streaming");
    drop(body);
    let report = handle.get().expect("written on drop");
    assert_eq!(report.code, Some(Code::Cancelled));
    assert_eq!(report.closed_by, ClosedBy::Us);
    assert_eq!(report.content_events, 1);
}

/// Dropping after the finish marker is a finished stream, not a cancel.
#[tokio::test(start_paused = true)]
async fn dropping_after_the_finish_is_finished() {
    let script = vec![
        send(OPENAI_ROLE),
        send(openai_delta("Hi")),
        send(OPENAI_STOP),
        Step::Hang,
    ];
    let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
        .await
        .unwrap();
    let handle = report_handle(&response);
    let mut body = response.into_body();
    for _ in 0..3 {
        body.frame().await.unwrap().unwrap();
    }
    drop(body);
    let report = handle.get().unwrap();
    assert_eq!((report.code, report.closed_by), (None, ClosedBy::Us));
    assert_eq!(report.finish.as_ref().unwrap().reason.as_ref(), "stop");
}

/// Dropping a body whose end was already decided reports that end, not a
/// cancel: a filter finish after content (a failure the caller would
/// have read next), and the provider's error event in the frame that was
/// handed on up to it.
#[tokio::test(start_paused = true)]
async fn dropping_after_a_decided_end_reports_that_end() {
    let filtered =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n";
    let error = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n";
    for (frames, code) in [
        (
            vec![
                OPENAI_ROLE.to_owned(),
                openai_delta("Hi"),
                filtered.to_owned(),
            ],
            Code::ContentFiltered,
        ),
        (
            vec![
                OPENAI_ROLE.to_owned(),
                format!("{}{error}", openai_delta("Hi")),
            ],
            Code::StreamInterrupted,
        ),
    ] {
        let count = frames.len();
        let mut script: Vec<Step> = frames.into_iter().map(send).collect();
        script.push(Step::Hang);
        let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
            .await
            .unwrap();
        let handle = report_handle(&response);
        let mut body = response.into_body();
        for _ in 0..count {
            body.frame().await.unwrap().unwrap();
        }
        assert!(handle.get().is_none(), "not ended yet");
        drop(body);
        let report = handle.get().expect("written on drop");
        assert_eq!(report.code, Some(code), "{report:?}");
        assert_eq!(report.closed_by, ClosedBy::Them);
    }
}

#[tokio::test(start_paused = true)]
async fn other_responses_pass_through() {
    let provider = tower::service_fn(|_req: http::Request<()>| async {
        let response = http::Response::builder()
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(Bytes::from_static(
                b"{\"ok\":true}",
            )))
            .unwrap();
        Ok::<_, std::convert::Infallible>(response)
    });
    let response = StreamGuardLayer::interactive()
        .layer(provider)
        .oneshot(request(CHAT))
        .await
        .unwrap();
    assert!(response.extensions().get::<StreamReportHandle>().is_none());
    assert!(!response.body().is_guarded());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"{\"ok\":true}");
}

/// The attempt's shared progress sees what the guard sees, before the
/// response is released.
#[tokio::test(start_paused = true)]
async fn progress_in_the_request_is_fed() {
    let progress = Progress::default();
    let seen = progress.clone();
    let body = scripted(vec![
        send(OPENAI_ROLE),
        send(openai_delta("a")),
        send(OPENAI_STOP),
        send(DONE),
    ]);
    let mut body = Some(body);
    let provider = tower::service_fn(move |_req: http::Request<()>| {
        let body = body.take().unwrap();
        async move { Ok::<_, std::convert::Infallible>(sse(body)) }
    });
    let mut req = request(CHAT);
    req.extensions_mut().insert(progress);
    let response = StreamGuardLayer::interactive()
        .layer(provider)
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(seen.content_events(), 1);
    assert_eq!(
        seen.bytes(),
        (OPENAI_ROLE.len() + openai_delta("a").len()) as u64
    );
    drain(response).await;
}

/// A body error a layer below already classified keeps its verdict before
/// content, and becomes an interruption after.
#[tokio::test(start_paused = true)]
async fn classified_body_errors_keep_their_verdict_before_content() {
    let overloaded = seawall_core::Failure::new(Code::Overloaded);
    let script = vec![send(OPENAI_ROLE), Step::Fail(overloaded.clone())];
    let failure = failure_of(call(StreamGuardLayer::interactive(), CHAT, scripted(script)).await);
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::Overloaded, Action::Retry)
    );
    assert_eq!(failure.evidence().bytes, OPENAI_ROLE.len() as u64);

    let script = vec![send(openai_delta("Hi")), Step::Fail(overloaded)];
    let d = drain(
        call(StreamGuardLayer::interactive(), CHAT, scripted(script))
            .await
            .unwrap(),
    )
    .await;
    let failure = d.error.unwrap();
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::StreamInterrupted, Action::Surface)
    );
    assert_eq!(failure.message(), Some("overloaded"));
}

/// A caller that stops waiting for its answer to begin (an `AnswerBy`: an
/// SDK's read timeout, as the gateway reads it) while the model thinks is
/// handed what came so far just before that instant, as it would read it
/// straight from the provider — not failed with the thinking lost. A hold
/// of keep-alives alone is no answer begun and is not handed on.
#[tokio::test(start_paused = true)]
async fn a_thinking_hold_is_handed_on_before_the_callers_wait_ends() {
    use seawall_core::{AnswerBy, Deadline};
    const THINKING: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n";
    const TEXT: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
    const END: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let call_by = |answer_by: Option<f64>, script: Vec<Step>| {
        let mut body = Some(scripted(script));
        let provider = tower::service_fn(move |_req: http::Request<()>| {
            let body = body.take().expect("called once");
            async move { Ok::<_, std::convert::Infallible>(sse(body)) }
        });
        let mut request = request(MESSAGES);
        if let Some(after) = answer_by {
            request
                .extensions_mut()
                .insert(AnswerBy(Deadline::after(secs(after))));
        }
        StreamGuardLayer::interactive()
            .layer(provider)
            .oneshot(request)
    };
    let thinking = || {
        vec![
            send(MESSAGE_START),
            wait(1.5),
            send(THINKING),
            wait(1.5),
            send(THINKING),
            wait(1.5),
            send(TEXT),
            send(END),
        ]
    };

    let start = Instant::now();
    let response = call_by(Some(3.0), thinking()).await.expect("handed on");
    assert_eq!(
        start.elapsed(),
        secs(2.95),
        "50 ms before the caller's bound"
    );
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let text = String::from_utf8(d.bytes).unwrap();
    assert_eq!(
        text,
        [MESSAGE_START, THINKING, THINKING, TEXT, END].concat()
    );
    assert_eq!(d.report.time_to_first_content, Some(secs(4.5)));

    // Without a caller's bound the hold lasts until the first content.
    let start = Instant::now();
    call_by(None, thinking()).await.expect("an answer");
    assert_eq!(start.elapsed(), secs(4.5));

    // A hold of keep-alives alone is kept: no answer began.
    let mut pings = vec![send(PING)];
    for _ in 0..4 {
        pings.extend([wait(1.0), send(PING)]);
    }
    pings.extend([send(MESSAGE_START), send(TEXT), send(END)]);
    let start = Instant::now();
    call_by(Some(3.0), pings).await.expect("an answer");
    assert_eq!(start.elapsed(), secs(4.0));

    // Once handed on, a failure before content is an interruption of what
    // the caller read, never replayed.
    let cut = vec![
        send(MESSAGE_START),
        wait(1.0),
        send(THINKING),
        wait(3.0),
        Step::Reset,
    ];
    let d = drain(call_by(Some(3.0), cut).await.expect("handed on")).await;
    let failure = d.error.expect("the reset");
    assert_eq!(failure.action(), Action::Surface);
}

/// The events of one wire for a model that thinks before it answers: its
/// head, one thought, and the answer with its end.
struct Thinker {
    path: &'static str,
    head: &'static str,
    thought: &'static str,
    answer: &'static str,
}

const THINKERS: [Thinker; 5] = [
    // DeepSeek, vLLM, Qwen.
    Thinker {
        path: CHAT,
        head: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        thought: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"reasoning_content\":\"Let me see\"},\"finish_reason\":null}]}\n\n",
        answer: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"42\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    },
    // OpenRouter, Ollama, Groq.
    Thinker {
        path: CHAT,
        head: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        thought: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"Let me see\"},\"finish_reason\":null}]}\n\n",
        answer: "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"42\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    },
    Thinker {
        path: MESSAGES,
        head: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        thought: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me see\"}}\n\n",
        answer: "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"42\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    },
    Thinker {
        path: "/v1/responses",
        head: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n",
        thought: "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"Let me see\",\"sequence_number\":1}\n\n",
        answer: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"42\",\"sequence_number\":2}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n",
    },
    Thinker {
        path: GEMINI,
        head: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"}}]}\r\n\r\n",
        thought: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Let me see\",\"thought\":true}],\"role\":\"model\"}}]}\r\n\r\n",
        answer: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"42\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\r\n\r\n",
    },
];

/// A model that thinks for two and a half minutes, a thought every 10 s,
/// is not cut at the interactive preset's 60 s first-content bound: cut
/// and asked again, it would think (and be billed) as long again, on
/// every wire that streams its thinking.
#[tokio::test(start_paused = true)]
async fn a_model_still_thinking_outlives_the_first_content_bound() {
    for thinker in THINKERS {
        let mut script = vec![send(thinker.head)];
        for _ in 0..15 {
            script.push(wait(10.0));
            script.push(send(thinker.thought));
        }
        script.push(wait(1.0));
        script.push(send(thinker.answer));
        let response = call(
            StreamGuardLayer::interactive(),
            thinker.path,
            scripted(script),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", thinker.thought));
        let d = drain(response).await;
        assert!(d.error.is_none(), "{}: {:?}", thinker.thought, d.error);
        assert_eq!(d.report.time_to_first_content, Some(secs(151.0)));
        assert!(d.report.completed_task(), "{}", thinker.thought);
    }
}

/// A model that stops thinking and falls silent before content is cut
/// at the idle bound after its last thought (later than the first-content
/// bound here), as a retryable `timeout`: nothing reached the caller.
#[tokio::test(start_paused = true)]
async fn a_model_that_stops_thinking_times_out_at_the_idle_bound() {
    for thinker in THINKERS {
        let mut script = vec![send(thinker.head)];
        for _ in 0..5 {
            script.push(wait(10.0));
            script.push(send(thinker.thought));
        }
        script.push(wait(600.0));
        let failure = failure_of(
            call(
                StreamGuardLayer::interactive(),
                thinker.path,
                scripted(script),
            )
            .await,
        );
        assert_eq!(failure.code(), Code::Timeout, "{}", thinker.thought);
        assert_eq!(failure.action(), Action::Retry);
        assert_eq!(
            failure.evidence().elapsed,
            Some(secs(80.0)),
            "{}",
            thinker.thought
        );
        assert!(failure.message().unwrap().contains("idle bound of 30s"));
    }
}

/// Only thinking extends the wait: a head followed by empty deltas, empty
/// thoughts or lifecycle events every 10 s still fails at the
/// first-content bound ("headers and then nothing").
#[tokio::test(start_paused = true)]
async fn moving_without_thinking_still_fails_at_the_first_content_bound() {
    let idle = [
        (
            CHAT,
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"reasoning_content\":\"\"},\"finish_reason\":null}]}\n\n",
        ),
        (
            CHAT,
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":null},\"finish_reason\":null}]}\n\n",
        ),
        (
            MESSAGES,
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n",
        ),
        (
            MESSAGES,
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\n\n",
        ),
        (
            "/v1/responses",
            "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1}\n\n",
        ),
        (
            GEMINI,
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\",\"thought\":true}],\"role\":\"model\"}}]}\r\n\r\n",
        ),
    ];
    for (path, event) in idle {
        let mut script = vec![];
        for _ in 0..30 {
            script.push(send(event));
            script.push(wait(10.0));
        }
        let failure =
            failure_of(call(StreamGuardLayer::interactive(), path, scripted(script)).await);
        assert_eq!(failure.code(), Code::Timeout, "{event}");
        assert_eq!(failure.evidence().elapsed, Some(secs(60.0)), "{event}");
        assert!(
            failure.message().unwrap().contains("first_content"),
            "{event}"
        );
    }
}

/// A call in the same event as text (a Gemini chunk with a text part and
/// a function call; an OpenAI delta with content and `tool_calls`) is a
/// call delivered: the interruption record counts it, so nothing tries to
/// continue the answer as text and has the call made twice.
#[tokio::test(start_paused = true)]
async fn a_call_beside_text_counts_as_a_call_delivered() {
    let cases = [
        (
            GEMINI,
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Let me check.\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}],\"role\":\"model\"}}]}\r\n\r\n",
        ),
        (
            CHAT,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me check.\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        ),
    ];
    for (path, event) in cases {
        let script = vec![send(event), wait(0.1), Step::Reset];
        let response = call(StreamGuardLayer::interactive(), path, scripted(script))
            .await
            .unwrap();
        let d = drain(response).await;
        let failure = d.error.expect("reset");
        let delivered = failure.interrupted().expect("after content");
        assert_eq!(delivered.delivered_text.as_deref(), Some("Let me check."));
        assert_eq!(delivered.tool_call_events, 1, "{event}");
    }
}
