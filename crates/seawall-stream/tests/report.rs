//! One tracing event per stream, with stable field names.

mod common;

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use seawall_core::AttemptSpans;
use seawall_stream::{Bound, StreamGuardLayer, StreamReport};
use seawall_test::trace::{Fields, Recorder};
use tower::{Layer, ServiceExt};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn one_event_with_stable_fields_per_stream() {
    let recorder = Recorder::new();
    let _guard = recorder.install();

    let stream = include_str!("fixtures/openai/length.sse");
    let response = call(
        seawall_stream::StreamGuardLayer::interactive(),
        CHAT,
        Full::new(Bytes::from_static(stream.as_bytes())),
    )
    .await
    .unwrap();
    drain(response).await;

    let events = recorder.events_of("seawall::stream");
    assert_eq!(events.len(), 1, "exactly one event");
    let field = |name: &str| events[0].value(name);
    assert_eq!(field("protocol"), "openai");
    assert_eq!(field("outcome"), "finished");
    assert_eq!(field("finish_reason"), "length");
    assert_eq!(field("finish_kind"), "truncated");
    assert_eq!(field("content_events"), "1");
    assert_eq!(field("closed_by"), "them");
    assert_eq!(field("status"), "200");
    for name in [
        "events",
        "keepalives",
        "bytes",
        "chunks",
        "ttfb_ms",
        "ttfc_ms",
        "elapsed_ms",
    ] {
        field(name);
    }
}

fn secs(s: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(s)
}

/// Runs `script` through `layer` on the chat path: the report, when the
/// body was handed on, and the guard's one event.
async fn cut(layer: StreamGuardLayer, script: Vec<Step>) -> (Option<StreamReport>, Fields) {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    let report = match call(layer, CHAT, scripted(script)).await {
        Ok(response) => Some(drain(response).await.report),
        Err(_) => None,
    };
    let mut events = recorder.events_of("seawall::stream");
    assert_eq!(events.len(), 1, "exactly one event");
    (report, events.remove(0))
}

/// The code says `timeout` before content and `stream_interrupted` after
/// it whichever bound passed: the event (and the report) name the bound,
/// so a first-content bound set too tight is told from a `max_duration`
/// that was reached.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_event_names_the_bound_that_cut_the_stream() {
    // Content every 5 s, the whole stream bounded at 22 s.
    let mut script = vec![send(OPENAI_ROLE)];
    for _ in 0..100 {
        script.push(wait(5.0));
        script.push(send(openai_delta("x")));
    }
    let layer = StreamGuardLayer::interactive().max_duration(Some(secs(22.0)));
    let (report, event) = cut(layer, script).await;
    assert_eq!(event.value("outcome"), "stream_interrupted");
    assert_eq!(event.value("bound"), "max_duration");
    assert_eq!(report.unwrap().bound, Some(Bound::MaxDuration));

    // A role delta, then nothing: no content within the bound.
    let layer = StreamGuardLayer::interactive().first_content_timeout(secs(45.0));
    let (report, event) = cut(layer, vec![send(OPENAI_ROLE), wait(600.0)]).await;
    assert!(report.is_none(), "failed before content");
    assert_eq!(event.value("outcome"), "timeout");
    assert_eq!(event.value("bound"), "first_content");

    // Content, then nothing.
    let layer = StreamGuardLayer::interactive().idle_timeout(secs(30.0));
    let script = vec![
        send(OPENAI_ROLE),
        wait(1.0),
        send(openai_delta("Hel")),
        wait(600.0),
    ];
    let (report, event) = cut(layer, script).await;
    assert_eq!(event.value("outcome"), "stream_interrupted");
    assert_eq!(event.value("bound"), "idle");
    assert_eq!(report.unwrap().bound, Some(Bound::Idle));

    // A finish without content, then nothing: the wait for its usage ends
    // it as the empty answer it is.
    let script = vec![send(OPENAI_ROLE), send(OPENAI_STOP), wait(600.0)];
    let (report, event) = cut(StreamGuardLayer::interactive(), script).await;
    assert!(report.is_none(), "failed before content");
    assert_eq!(event.value("outcome"), "empty_response");
    assert_eq!(event.value("bound"), "after_empty_finish");
}

/// A stream no bound ended names none: one cut by the provider, or one
/// that finished.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn no_bound_is_named_when_none_ended_the_stream() {
    let script = vec![send(OPENAI_ROLE), send(openai_delta("Hel")), Step::Reset];
    let (report, event) = cut(StreamGuardLayer::interactive(), script).await;
    assert_eq!(event.value("outcome"), "stream_interrupted");
    assert!(!event.has("bound"), "{event:?}");
    assert_eq!(report.unwrap().bound, None);

    let script = vec![send(openai_delta("Hel")), send(OPENAI_STOP), send(DONE)];
    let (report, event) = cut(StreamGuardLayer::interactive(), script).await;
    assert_eq!(event.value("outcome"), "finished");
    assert!(!event.has("bound"), "{event:?}");
    assert_eq!(report.unwrap().bound, None);
}

/// The bound is recorded on the attempt's span beside `error.type`, and
/// on the operation's too once the stream reached the caller.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_spans_name_the_bound_that_cut_the_stream() {
    // A span's name is part of its callsite: a literal each.
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                $name,
                error.type = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
                seawall.stream.bound = tracing::field::Empty,
            )
        };
    }
    let cases = [
        // Before content: the ladder judges the attempt, its operation
        // goes on.
        (
            StreamGuardLayer::interactive().first_content_timeout(secs(45.0)),
            vec![send(OPENAI_ROLE), wait(600.0)],
            "first_content",
            None,
        ),
        (
            StreamGuardLayer::interactive().idle_timeout(secs(30.0)),
            vec![send(openai_delta("Hel")), wait(600.0)],
            "idle",
            Some("idle"),
        ),
    ];
    for (layer, script, attempt_bound, operation_bound) in cases {
        let recorder = Recorder::new();
        let _guard = recorder.install();
        let mut body = Some(scripted(script));
        let provider = tower::service_fn(move |_req: http::Request<()>| {
            let body = body.take().expect("called once");
            async move { Ok::<_, std::convert::Infallible>(sse(body)) }
        });
        let mut request = common::request(CHAT);
        request
            .extensions_mut()
            .insert(AttemptSpans::new(span!("attempt"), span!("operation")));
        if let Ok(response) = layer.layer(provider).oneshot(request).await {
            drain(response).await;
        }
        let attempt = recorder.span("attempt").fields;
        assert_eq!(
            attempt.get("seawall.stream.bound"),
            Some(attempt_bound),
            "{attempt:?}"
        );
        let operation = recorder.span("operation").fields;
        assert_eq!(
            operation.get("seawall.stream.bound"),
            operation_bound,
            "{operation:?}"
        );
    }
}
