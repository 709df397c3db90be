//! The Responses API's provider at work out of sight, on tokio's paused
//! clock: a background response waiting in the provider's queue
//! (`queued` until `response.in_progress`) and a hosted shell running its
//! commands (after its call's item ends, before its output's starts)
//! send nothing but keep-alives while they last. Read as the model at
//! work, those keep-alives keep the first-content and idle bounds off;
//! the same keep-alives without the queue or the hosted run, a wait
//! that falls silent and `max_duration` still end the stream.

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use seawall_core::RequestFacts;
use seawall_core::facts::OperationSlots;
use seawall_core::recording::ReplayBody;
use seawall_stream::{GuardBody, StreamGuardLayer};
use tower::{Layer, ServiceExt};

/// A background response's head: created and queued.
const QUEUED: [&str; 2] = [
    "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"queued\",\"background\":true,\"output\":[]}}\n\n",
    "event: response.queued\ndata: {\"type\":\"response.queued\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"queued\",\"background\":true,\"output\":[]}}\n\n",
];

/// A response's head when it runs at once.
const CREATED: [&str; 1] = [
    "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"background\":true,\"output\":[]}}\n\n",
];

/// The response leaves the queue, answers and completes.
const ANSWER: [&str; 4] = [
    "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"background\":true,\"output\":[]}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":3,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Done.\"}\n\n",
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":5,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"background\":true,\"output\":[{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\"}],\"role\":\"assistant\"}],\"usage\":{\"input_tokens\":10,\"output_tokens\":2,\"total_tokens\":12}}}\n\n",
];

/// A background response queued for 100 s, a keep-alive every 10 s,
/// then run: not cut at the interactive preset's 60 s first-content
/// bound (cut, the stored response still runs and is billed, and the
/// retry queues a second one), and delivered whole. Its keep-alives are
/// the provider at work, no keep-alives.
#[tokio::test(start_paused = true)]
async fn a_queued_background_response_outlives_the_first_content_bound() {
    let mut script = sends(&QUEUED);
    script.extend(every(10.0, KEEPALIVE, 10));
    script.extend(sends(&ANSWER));
    let response = call(StreamGuardLayer::interactive(), RESPONSES, scripted(script))
        .await
        .unwrap_or_else(|e| panic!("cut while queued: {e}"));
    let d = drain(response).await;
    assert!(d.error.is_none(), "{:?}", d.error);
    let sent = [&QUEUED[..], &[KEEPALIVE; 10], &ANSWER[..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(
        d.report.time_to_first_content,
        Some(Duration::from_secs(100))
    );
    assert_eq!((d.report.content_events, d.report.keepalives), (1, 0));
}

/// The queue's keep-alives keep only the first-content bound off: the
/// same keep-alives from a response that is not queued are cut at that
/// bound, as are those after the response leaves the queue
/// (`response.in_progress`) with nothing more; a queue that falls
/// silent is cut (at once, at the first-content bound; past it, at the
/// idle bound after its last keep-alive); `max_duration` still ends an
/// endless one.
#[tokio::test(start_paused = true)]
async fn keepalives_while_queued_are_still_bounded() {
    let mut not_queued = sends(&CREATED);
    not_queued.extend(every(10.0, KEEPALIVE, 10));
    not_queued.extend(sends(&ANSWER));
    let silent = sends(&QUEUED);
    let mut stalled = sends(&QUEUED);
    stalled.extend(every(10.0, KEEPALIVE, 9));
    let mut left_the_queue = sends(&QUEUED);
    left_the_queue.extend(every(10.0, KEEPALIVE, 2));
    left_the_queue.extend(sends(&ANSWER[..1]));
    left_the_queue.extend(every(10.0, KEEPALIVE, 10));
    let mut endless = sends(&QUEUED);
    endless.extend(every(10.0, KEEPALIVE, 100));
    let bounded = StreamGuardLayer::interactive().max_duration(Some(Duration::from_secs(150)));
    let cases = [
        (
            "not queued",
            StreamGuardLayer::interactive(),
            not_queued,
            60,
            "first_content",
        ),
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
            "left the queue",
            StreamGuardLayer::interactive(),
            left_the_queue,
            60,
            "first_content",
        ),
        ("endless", bounded, endless, 150, "max_duration"),
    ];
    assert_cut_before_content(RESPONSES, cases).await;
}

/// Calls the interactive guard as a background response's stream is
/// asked for (`"background": true, "stream": true`, the body recorded so
/// the guard knows it), over a provider that reads the request and
/// answers with `script`. The guard hands such a stream on at its head,
/// never held (a retry would run a second one): its bounds still run.
async fn call_background(script: Vec<Step>) -> http::Response<GuardBody<ChannelBody>> {
    let body = br#"{"model":"m","input":"hi","stream":true,"background":true}"#;
    let slots = Arc::new(OperationSlots::default());
    let mut request = http::Request::post(format!("https://provider.example{RESPONSES}"))
        .header("content-type", "application/json")
        .body(
            ReplayBody::recorded(Full::new(Bytes::from_static(body)), 1 << 16)
                .fill_facts(Arc::clone(&slots)),
        )
        .unwrap();
    let facts = RequestFacts::from_head(&request).with_slots(slots);
    request.extensions_mut().insert(facts);
    let mut script = Some(script);
    let provider = tower::service_fn(move |request: http::Request<ReplayBody<Full<Bytes>>>| {
        let script = script.take().expect("called once");
        async move {
            // Read whole, as a server does: the recording fills the facts.
            request
                .into_body()
                .collect()
                .await
                .expect("the request body");
            Ok::<_, Infallible>(sse(scripted(script)))
        }
    });
    StreamGuardLayer::interactive()
        .layer(provider)
        .oneshot(request)
        .await
        .expect("a background stream is handed on at its head")
}

/// A background response's stream is handed on at its head, but its
/// first-content bound still runs: queued 100 s with a keep-alive every
/// 10 s, then run, it is delivered whole; the same keep-alives from one
/// that is not queued are still cut at 60 s, an interruption the caller
/// sees.
#[tokio::test(start_paused = true)]
async fn a_queued_background_stream_handed_on_is_not_cut_while_queued() {
    let mut queued = sends(&QUEUED);
    queued.extend(every(10.0, KEEPALIVE, 10));
    queued.extend(sends(&ANSWER));
    let d = drain(call_background(queued).await).await;
    assert!(d.error.is_none(), "cut while queued: {:?}", d.error);
    let sent = [&QUEUED[..], &[KEEPALIVE; 10], &ANSWER[..]].concat();
    assert_eq!(d.bytes, sent.concat().as_bytes());
    assert!(d.report.completed_task());

    let mut not_queued = sends(&CREATED);
    not_queued.extend(every(10.0, KEEPALIVE, 10));
    not_queued.extend(sends(&ANSWER));
    not_queued.push(Step::Hang);
    let failure = drain(call_background(not_queued).await)
        .await
        .error
        .expect("cut");
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(60)));
    let message = failure.message().unwrap();
    assert!(message.contains("first_content"), "{message}");
}

/// A hosted shell call (as captured in vercel/ai's
/// `openai-shell-skills.1.chunks.txt`, trimmed): the call's item (content
/// at once) with its command, its end, then, once the command has run,
/// the output item (already `completed`) with its output, then the
/// answer. `environment` is the call's.
fn shell(environment: &str) -> Vec<String> {
    let call = |event: &str, status: &str, commands: &str| {
        format!(
            "event: response.output_item.{event}\ndata: {{\"type\":\"response.output_item.{event}\",\"item\":{{\"id\":\"sh_1\",\"type\":\"shell_call\",\"status\":\"{status}\",\"action\":{{\"commands\":[{commands}],\"max_output_length\":null,\"timeout_ms\":null}},\"call_id\":\"call_1\"{environment}}},\"output_index\":0,\"sequence_number\":0}}\n\n"
        )
    };
    let mut events = vec![
        CREATED[0].to_owned(),
        call("added", "in_progress", ""),
        "event: response.shell_call_command.added\ndata: {\"type\":\"response.shell_call_command.added\",\"command\":\"\",\"command_index\":0,\"output_index\":0,\"sequence_number\":3}\n\n".to_owned(),
        "event: response.shell_call_command.delta\ndata: {\"type\":\"response.shell_call_command.delta\",\"command_index\":0,\"delta\":\"make test\",\"output_index\":0,\"sequence_number\":4}\n\n".to_owned(),
        "event: response.shell_call_command.done\ndata: {\"type\":\"response.shell_call_command.done\",\"command\":\"make test\",\"command_index\":0,\"output_index\":0,\"sequence_number\":5}\n\n".to_owned(),
        call("done", "completed", "\"make test\""),
        "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"item\":{\"id\":\"sho_1\",\"type\":\"shell_call_output\",\"status\":\"completed\",\"call_id\":\"call_1\",\"max_output_length\":null,\"output\":[]},\"output_index\":1,\"sequence_number\":7}\n\n".to_owned(),
        "event: response.shell_call_output_content.delta\ndata: {\"type\":\"response.shell_call_output_content.delta\",\"command_index\":0,\"delta\":{\"stdout\":\"ok\\n\"},\"item_id\":\"sho_1\",\"output_index\":1,\"sequence_number\":8}\n\n".to_owned(),
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"id\":\"sho_1\",\"type\":\"shell_call_output\",\"status\":\"completed\",\"call_id\":\"call_1\",\"max_output_length\":null,\"output\":[{\"outcome\":{\"type\":\"exit\",\"exit_code\":0},\"stderr\":\"\",\"stdout\":\"ok\\n\"}]},\"output_index\":1,\"sequence_number\":9}\n\n".to_owned(),
    ];
    events.extend(ANSWER[1..].iter().map(|&event| event.to_owned()));
    events
}

const HOSTED: &str =
    ",\"environment\":{\"type\":\"container_reference\",\"container_id\":\"cntr_1\"}";

/// Where the hosted command runs: after the call's end, before the
/// output's start.
const RUN_AT: usize = 6;

/// A hosted shell command that prints nothing for 60 s, a keep-alive
/// every 10 s, then its output: not cut at the 30 s idle bound (cut
/// there, the billed run is lost, and a call delivered is not resumed),
/// and delivered whole. Its keep-alives are the command running.
#[tokio::test(start_paused = true)]
async fn a_hosted_shell_command_outlives_the_idle_bound() {
    let events = shell(HOSTED);
    assert!(events[RUN_AT - 1].contains("\"container_reference\""));
    assert!(events[RUN_AT].contains("\"shell_call_output\""));
    let mut script = sends(&events[..RUN_AT]);
    script.extend(every(10.0, KEEPALIVE, 6));
    script.extend(sends(&events[RUN_AT..]));
    let response = call(StreamGuardLayer::interactive(), RESPONSES, scripted(script))
        .await
        .expect("content came first");
    let d = drain(response).await;
    assert!(
        d.error.is_none(),
        "cut while the command ran: {:?}",
        d.error
    );
    let sent = [
        events[..RUN_AT].concat(),
        KEEPALIVE.repeat(6),
        events[RUN_AT..].concat(),
    ]
    .concat();
    assert_eq!(d.bytes, sent.as_bytes());
    assert!(d.report.completed_task());
    assert_eq!(d.report.keepalives, 0);
}

/// The hosted command's keep-alives move only the idle bound: one that
/// falls silent is cut at the idle bound after its last keep-alive, and
/// `max_duration` still ends an endless one. A shell call without a
/// container is the caller's to run (the turn ends with it): the same
/// keep-alives after it are cut at the idle bound.
#[tokio::test(start_paused = true)]
async fn keepalives_while_a_hosted_shell_command_runs_are_still_bounded() {
    let hosted = shell(HOSTED);
    let local = shell(",\"environment\":{\"type\":\"local\"}");
    let unnamed = shell("");
    let head = |events: &[String]| sends(&events[..RUN_AT]);
    let mut stalled = head(&hosted);
    stalled.extend(every(10.0, KEEPALIVE, 6));
    let mut endless = head(&hosted);
    endless.extend(every(10.0, KEEPALIVE, 100));
    let mut local_run = head(&local);
    local_run.extend(every(10.0, KEEPALIVE, 6));
    let mut unnamed_run = head(&unnamed);
    unnamed_run.extend(every(10.0, KEEPALIVE, 6));
    let bounded = StreamGuardLayer::interactive().max_duration(Some(Duration::from_secs(150)));
    let cases = [
        (
            "stalled",
            StreamGuardLayer::interactive(),
            stalled,
            90,
            "idle",
        ),
        ("endless", bounded, endless, 150, "max_duration"),
        (
            "local",
            StreamGuardLayer::interactive(),
            local_run,
            30,
            "idle",
        ),
        (
            "unnamed",
            StreamGuardLayer::interactive(),
            unnamed_run,
            30,
            "idle",
        ),
    ];
    assert_cut_after_content(RESPONSES, cases).await;
}
