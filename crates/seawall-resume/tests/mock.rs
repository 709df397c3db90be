//! Continuations the chaos server does not produce: built by hand.

#[path = "common/chat_script.rs"]
mod chat_script;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall_core::{BoxError, ClosedBy, Code, Failure};
use seawall_resume::{OpenAiStyle, ResumeLayer, ResumeRequestBody, Resumed};
use seawall_test::trace::Fields;
use tower::{ServiceBuilder, ServiceExt, service_fn};

use chat_script::{chunk, cut, stream};

type Frames = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<http_body::Frame<Bytes>, BoxError>> + Send>,
>;

/// A stream of `items`, each after its delay (on tokio's clock).
fn timed(
    items: Vec<(std::time::Duration, Result<Bytes, Box<Failure>>)>,
) -> http::Response<http_body_util::StreamBody<Frames>> {
    use futures_util::StreamExt;
    let frames = futures_util::stream::iter(items).then(|(delay, item)| async move {
        tokio::time::sleep(delay).await;
        item.map(http_body::Frame::data)
            .map_err(|failure| failure as BoxError)
    });
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(http_body_util::StreamBody::new(Box::pin(frames) as Frames))
        .unwrap()
}

#[tokio::test]
async fn a_continuation_without_readable_content_never_ends_the_answer_cleanly() {
    let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))];
    // Served in another wire format: nothing the layer reads as OpenAI
    // content, then a clean end.
    let rest = Bytes::from_static(
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w3\"}}\n\n",
    );
    let spliced = splice_openai(ResumeLayer::new(), first, move |_| Ok(rest.clone())).await;
    let error = spliced.error.expect("the answer is still cut");
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("w1 w2")
    );
    let mut expected = chunk("w1").to_vec();
    expected.extend_from_slice(&chunk(" w2"));
    assert_eq!(
        spliced.shown, expected,
        "nothing of the continuation is shown"
    );
    assert_eq!(spliced.continuations.len(), 1);
    assert_eq!(spliced.report.gave_up, Some("no_content"));
}

/// Frames cut anywhere: the caller gets the same bytes, in whole events.
#[tokio::test]
async fn events_cut_by_frame_boundaries_are_passed_whole() {
    let mut whole = Vec::new();
    for i in 1..=20 {
        whole.extend_from_slice(&chunk(&format!(" w{i}")));
    }
    whole.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\n\n");
    for size in [1, 7, 50, 130, 333] {
        let pieces: Vec<Result<Bytes, Box<Failure>>> = whole
            .chunks(size)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new())
            .service(service_fn(
                move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                    let pieces = pieces
                        .iter()
                        .map(|p| p.clone().map_err(|_| unreachable!()))
                        .collect();
                    async move { Ok::<_, BoxError>(stream(pieces)) }
                },
            ));
        let request = http::Request::post("http://api.example/v1/chat/completions")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"m","stream":true,"messages":[]}"#,
            )))
            .unwrap();
        let response = service.oneshot(request).await.unwrap();
        let mut body = std::pin::pin!(response.into_body());
        let mut shown = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            shown.extend_from_slice(&data);
            // A CRLF blank line ends its event at its CR: the frame may
            // end there, its LF starting the next.
            assert!(
                ends_an_event(&shown),
                "size {size}: a frame ends inside an event: {data:?}"
            );
        }
        assert_eq!(shown, whole, "size {size}");
    }
}

/// The text an OpenAI stream shows.
fn text_of(bytes: &[u8]) -> String {
    text_in(seawall_stream::Provider::OpenAi, bytes)
}

/// The text a stream of `provider`'s shows.
fn text_in(provider: seawall_stream::Provider, bytes: &[u8]) -> String {
    let mut scanner = seawall_stream::sse::Scanner::default();
    let mut decoder = seawall_stream::protocol::Decoder::new(provider);
    let mut text = String::new();
    scanner
        .feed(bytes, |item| {
            if let seawall_stream::protocol::Signal::Content { text: Some(t), .. } =
                decoder.decode(item)
            {
                text.push_str(&t);
            }
        })
        .unwrap();
    text
}

/// A stream whose lines end with CR alone (legal in SSE) cut right after
/// an event: the event's last byte is a CR that might be half of a CRLF,
/// and the break must not lose the event: the guard read it, its text is
/// in what was delivered, and the continuation starts after it.
#[tokio::test]
async fn an_event_ended_by_a_lone_cr_before_the_cut_is_not_lost() {
    let cr = |text: &str| {
        Bytes::from(
            String::from_utf8(chunk(text).to_vec())
                .unwrap()
                .replace('\n', "\r"),
        )
    };
    let first = vec![Ok(cr("w1")), Ok(cr(" w2")), Err(cut("w1 w2"))];
    let mut rest = chunk(" w3").to_vec();
    rest.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let rest = Bytes::from(rest);
    let spliced = splice_openai(ResumeLayer::new(), first, move |_| Ok(rest.clone())).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(text_of(&spliced.shown), "w1 w2 w3");
}

/// An OpenAI chat chunk's data line (no line end) under the answer `id`.
fn chat_line(id: &str, delta: &str, finish: &str) -> String {
    format!(
        "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}"
    )
}

/// One frame per event of `lines`, each ended by `end` (its line's end
/// and the blank line's); `carried`, the LF of a CRLF whose CR ended the
/// event before, starts the next frame (and ends the last).
fn framed(lines: &[String], end: &str, carried: &str) -> Vec<Bytes> {
    let last = lines.len().saturating_sub(1);
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let before = if i > 0 { carried } else { "" };
            let after = if i == last { carried } else { "" };
            Bytes::from(format!("{before}{line}{end}{after}"))
        })
        .collect()
}

/// `frames` one after another.
fn joined(frames: &[Bytes]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|frame| frame.iter().copied())
        .collect()
}

/// The line ends of events whose blank line ends in a CR: CR alone, and
/// CRLF with the blank line's LF cut into the next frame.
const CR_ENDS: [(&str, &str); 2] = [("\r\r", ""), ("\r\n\r", "\n")];

/// Whether `shown` ends where an event does, read as the SSE spec reads
/// lines (ended by CRLF, LF or CR): its last line blank, after a line.
fn ends_an_event(shown: &[u8]) -> bool {
    let without_last_end = match shown {
        [rest @ .., b'\r', b'\n'] | [rest @ .., b'\n' | b'\r'] => rest,
        _ => return false,
    };
    matches!(without_last_end, [] | [.., b'\n' | b'\r'])
}

/// An event whose blank line ends in a CR ends there: an SSE reader
/// dispatches it at that CR. The caller is shown it at once, not when the
/// next bytes come after a pause (a model thinking, a slow tool call);
/// an LF that comes after the pause, the rest of a CRLF, goes on as it
/// came, and the caller reads every byte once.
#[tokio::test(start_paused = true)]
async fn an_event_ended_by_a_cr_reaches_the_caller_before_a_pause() {
    use std::time::Duration;
    let pause = Duration::from_secs(30);
    for (end, carried) in CR_ENDS {
        let lines = [
            chat_line("c", r#"{"content":"w1"}"#, "null"),
            chat_line("c", r#"{"content":" w2"}"#, "null"),
            chat_line("c", "{}", r#""stop""#),
            "data: [DONE]".to_owned(),
        ];
        let frames = framed(&lines, end, carried);
        let items: Vec<_> = frames
            .iter()
            .enumerate()
            .map(|(i, frame)| {
                let delay = if i == 1 { pause } else { Duration::ZERO };
                (delay, Ok(frame.clone()))
            })
            .collect();
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new())
            .service(service_fn(
                move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                    let items = items.clone();
                    async move { Ok::<_, BoxError>(timed(items)) }
                },
            ));
        let request = http::Request::post("http://api.example/v1/chat/completions")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap();
        let start = tokio::time::Instant::now();
        let response = service.oneshot(request).await.unwrap();
        let mut body = std::pin::pin!(response.into_body());
        let first = tokio::time::timeout(Duration::from_secs(1), body.frame())
            .await
            .unwrap_or_else(|_| panic!("{end:?}: the first event waits out the pause"))
            .expect("a frame")
            .expect("no error")
            .into_data()
            .expect("data");
        assert_eq!(first, frames[0], "{end:?}: the first event as it came");
        assert_eq!(text_of(&first), "w1", "{end:?}");
        let (rest, error) = read(body).await;
        assert!(error.is_none(), "{end:?}: {error:?}");
        let mut shown = first.to_vec();
        shown.extend_from_slice(&rest);
        assert_eq!(
            shown,
            joined(&frames),
            "{end:?}: every byte once, unchanged"
        );
        assert_eq!(text_of(&shown), "w1 w2", "{end:?}");
        assert_eq!(start.elapsed(), pause, "{end:?}");
    }
}

/// Streams in CRLF or CR line endings, or both, cut at every size (CRLFs
/// cut in two among them): the caller gets the same bytes, each event
/// once, and every frame ends where an event does.
#[tokio::test]
async fn events_in_cr_and_crlf_endings_cut_anywhere_pass_once_and_unchanged() {
    let mut lines: Vec<String> = (1..=6)
        .map(|i| chat_line("c", &format!("{{\"content\":\" w{i}\"}}"), "null"))
        .collect();
    lines.push(chat_line("c", "{}", r#""stop""#));
    lines.push("data: [DONE]".to_owned());
    // Each event's line end and blank line.
    let ends = ["\r\n\r\n", "\r\r", "\r\n\r", "\r\r\n", "\n\r"];
    for name in ["crlf", "cr", "mixed"] {
        let mut whole = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let end = match name {
                "crlf" => ends[0],
                "cr" => ends[1],
                _ => ends[i % ends.len()],
            };
            whole.extend_from_slice(line.as_bytes());
            whole.extend_from_slice(end.as_bytes());
        }
        let whole = Bytes::from(whole);
        for size in 1..=41 {
            let pieces: Vec<Bytes> = whole.chunks(size).map(Bytes::copy_from_slice).collect();
            let service = ServiceBuilder::new()
                .layer(ResumeLayer::new())
                .service(service_fn(
                    move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                        let pieces = pieces.iter().cloned().map(Ok).collect();
                        async move { Ok::<_, BoxError>(stream(pieces)) }
                    },
                ));
            let request = http::Request::post("http://api.example/v1/chat/completions")
                .body(Full::new(Bytes::from_static(
                    br#"{"model":"m","stream":true,"messages":[]}"#,
                )))
                .unwrap();
            let response = service.oneshot(request).await.unwrap();
            let mut body = std::pin::pin!(response.into_body());
            let mut shown = Vec::new();
            while let Some(frame) = body.frame().await {
                shown.extend_from_slice(&frame.unwrap().into_data().unwrap());
                assert!(
                    ends_an_event(&shown),
                    "{name} size {size}: a frame ends inside an event: {shown:?}"
                );
            }
            assert_eq!(shown, whole, "{name} size {size}");
            assert_eq!(text_of(&shown), " w1 w2 w3 w4 w5 w6", "{name} size {size}");
        }
    }
}

/// A stream in CR line endings (CR alone, or CRLF with the blank line's
/// LF in the next frame) cut, and continued in them: the continuation's
/// repeat is trimmed, its events are said under the original's id, and
/// its last event before a pause is shown before the pause ends. An LF
/// that starts a frame after an event's CR is the rest of that CRLF:
/// never an event of its own, nor a frame of nothing but a line end.
#[tokio::test(start_paused = true)]
async fn a_stream_in_cr_endings_is_resumed_in_them() {
    use std::time::Duration;
    let pause = Duration::from_secs(30);
    for (end, carried) in CR_ENDS {
        let content =
            |id: &str, text: &str| chat_line(id, &format!("{{\"content\":\"{text}\"}}"), "null");
        let original = framed(
            &[
                chat_line("chatcmpl-A", r#"{"role":"assistant"}"#, "null"),
                content("chatcmpl-A", "w1"),
                content("chatcmpl-A", " w2"),
            ],
            end,
            "",
        );
        let mut first: Vec<_> = original
            .into_iter()
            .map(|frame| (Duration::ZERO, Ok(frame)))
            .collect();
        first.push((Duration::ZERO, Err(cut("w1 w2"))));
        let rest = framed(
            &[
                chat_line("chatcmpl-B", r#"{"role":"assistant"}"#, "null"),
                content("chatcmpl-B", " w2"),
                content("chatcmpl-B", " w3"),
                content("chatcmpl-B", " w4"),
                chat_line("chatcmpl-B", "{}", r#""stop""#),
                "data: [DONE]".to_owned(),
            ],
            end,
            carried,
        );
        let rest: Vec<_> = rest
            .into_iter()
            .enumerate()
            .map(|(i, frame)| {
                let delay = if i == 4 { pause } else { Duration::ZERO };
                (delay, Ok(frame))
            })
            .collect();
        let calls = Arc::new(AtomicUsize::new(0));
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new().align_window(8))
            .service(service_fn(
                move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                    let items = match calls.fetch_add(1, Ordering::SeqCst) {
                        0 => first.clone(),
                        _ => rest.clone(),
                    };
                    async move { Ok::<_, BoxError>(timed(items)) }
                },
            ));
        let request = http::Request::post("http://api.example/v1/chat/completions")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap();
        let start = tokio::time::Instant::now();
        let response = service.oneshot(request).await.unwrap();
        let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
        let mut body = std::pin::pin!(response.into_body());
        let mut frames = Vec::new();
        let before_the_pause = tokio::time::timeout(Duration::from_secs(1), async {
            while text_of(&joined(&frames)) != "w1 w2 w3 w4" {
                match body.frame().await {
                    Some(Ok(frame)) => frames.push(frame.into_data().unwrap()),
                    other => panic!("{end:?}: {other:?}"),
                }
            }
        })
        .await;
        assert!(
            before_the_pause.is_ok(),
            "{end:?}: w4 waits out the pause: {:?}",
            text_of(&joined(&frames))
        );
        while let Some(frame) = body.frame().await {
            frames.push(frame.expect("no error").into_data().unwrap());
        }
        let shown = joined(&frames);
        assert_eq!(text_of(&shown), "w1 w2 w3 w4", "{end:?}: each word once");
        assert_eq!(start.elapsed(), pause, "{end:?}");
        let chunks = json_events(&shown);
        assert_eq!(
            chunks.len(),
            6,
            "{end:?}: the role chunk, four words, the finish"
        );
        for chunk in &chunks {
            assert_eq!(chunk["id"], "chatcmpl-A", "{end:?}: {chunk}");
        }
        for frame in &frames {
            assert!(
                !frame.iter().all(|b| matches!(b, b'\r' | b'\n')),
                "{end:?}: a frame of line ends alone: {frames:?}"
            );
        }
        let report = resumed.report();
        assert_eq!(report.resumed(), 1, "{end:?}");
        assert_eq!(report.resumes[0].trimmed_chars, 3, "{end:?}");
    }
}

/// The values of header `name` on the original request and on its one
/// continuation, when the caller sent it as `caller-1` through `layer`.
async fn keys_sent(layer: ResumeLayer, name: &'static str) -> Vec<Option<http::HeaderValue>> {
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = keys.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let service = ServiceBuilder::new().layer(layer).service(service_fn(
        move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            seen.lock().unwrap().push(req.headers().get(name).cloned());
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                let mut rest = chunk(" w3").to_vec();
                rest.extend_from_slice(
                    b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
                );
                Ok::<_, BoxError>(if first {
                    stream(vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))])
                } else {
                    stream(vec![Ok(Bytes::from(rest))])
                })
            }
        },
    ));
    let body = serde_json::json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .header(name, "caller-1")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    response.into_body().collect().await.unwrap();
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "the original and one continuation");
    keys
}

/// The caller's idempotency key names the original request, not its
/// continuation: a server that honours keys would answer the
/// continuation with the original's stored answer. It stays behind.
#[tokio::test]
async fn a_continuation_does_not_reuse_the_callers_idempotency_key() {
    let keys = keys_sent(ResumeLayer::new(), "idempotency-key").await;
    assert_eq!(keys[0], Some(http::HeaderValue::from_static("caller-1")));
    assert_eq!(keys[1], None);
}

/// So does a key in a header of the caller's naming (as a retry ladder
/// below may key its attempts with), once the layer is told it; the
/// usual one still stays behind too.
#[tokio::test]
async fn a_continuation_does_not_reuse_a_key_under_another_name() {
    let name = http::HeaderName::from_static("x-idempotency-key");
    let layer = ResumeLayer::new().idempotency_key(name);
    let keys = keys_sent(layer.clone(), "x-idempotency-key").await;
    assert_eq!(keys[0], Some(http::HeaderValue::from_static("caller-1")));
    assert_eq!(keys[1], None);
    let keys = keys_sent(layer, "idempotency-key").await;
    assert_eq!(keys[1], None);
}

/// A request body that streams in (no exact size) past the replay cap
/// cannot be sent again: its interruption surfaces as it came, and the
/// report says why (`replay_cap`) — only once it broke — and so does a
/// warning: the cap lost an answer the layer would have continued.
#[tokio::test]
async fn a_streamed_request_over_the_replay_cap_is_not_resumed() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new().max_replay_bytes(16))
        .service(service_fn(
            move |req: http::Request<ResumeRequestBody<seawall_test::body::Chunks>>| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    req.into_body().collect().await?;
                    Ok::<_, BoxError>(stream(vec![
                        Ok(chunk("w1")),
                        Ok(chunk(" w2")),
                        Err(cut("w1 w2")),
                    ]))
                }
            },
        ));
    let body = seawall_test::body::Chunks::new([
        r#"{"model":"m","stream":true,"#,
        r#""messages":[{"role":"user","content":"hi"}]}"#,
    ]);
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(body)
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let error = response.into_body().collect().await.unwrap_err();
    assert_eq!(
        Failure::find(&*error).map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(resumed.report().gave_up, Some("replay_cap"));
    let lost = lost(&recorder);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].1.value("reason"), "replay_cap");
}

/// The warnings of target `seawall::resume` that say an answer was lost,
/// with the span each was emitted in.
fn lost(recorder: &seawall_test::trace::Recorder) -> Vec<(Option<u64>, Fields)> {
    recorder
        .events()
        .into_iter()
        .filter(|e| e.target == "seawall::resume" && e.level == tracing::Level::WARN)
        .map(|e| (e.parent, e.fields))
        .collect()
}

/// An answer read under the span `call`: `first` (cut), then what `rest`
/// answers each continuation with.
async fn splice_in_call(
    layer: ResumeLayer,
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: impl Fn(&serde_json::Value) -> Result<Bytes, Box<Failure>> + Clone + Send + 'static,
) -> Spliced {
    use tracing::Instrument;
    splice_openai(layer, first, rest)
        .instrument(tracing::info_span!("call"))
        .await
}

/// A first cut refused because a limit stopped it (the delivered text
/// passed the guard's cap, so no continuation can be built from it): no
/// resume span opens, so the loss is a warning on the span the answer is
/// read in, with its reason and route.
#[tokio::test]
async fn a_first_cut_refused_by_a_limit_is_a_warning_on_the_callers_span() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let mut interrupted = cut("w1 w2").interrupted().cloned().unwrap();
    interrupted.text_capped = true;
    let capped = Box::new((*cut("w1 w2")).with_interrupted(interrupted));
    let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(capped)];
    let read = splice_in_call(ResumeLayer::new(), first, |_| unreachable!()).await;
    assert_eq!(read.report.gave_up, Some("text_not_kept"));
    assert!(read.continuations.is_empty());
    let lost = lost(&recorder);
    assert_eq!(lost.len(), 1, "{lost:?}");
    let (parent, fields) = &lost[0];
    assert_eq!(fields.value("reason"), "text_not_kept");
    assert_eq!(fields.value("route"), "api.example");
    assert_eq!(*parent, Some(recorder.span("call").id), "{lost:?}");
    assert!(recorder.spans().iter().all(|s| s.name != "resume"));
}

/// Resumes used up: the warning is on the last resume's span, which says
/// why too.
#[tokio::test]
async fn resumes_used_up_are_a_warning_on_the_last_resume_span() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))];
    let rest = |_: &serde_json::Value| -> Result<Bytes, Box<Failure>> { Err(cut("w1 w2 w3")) };
    let read = splice_in_call(ResumeLayer::new().max_resumes(1), first, rest).await;
    assert_eq!(
        read.report.gave_up,
        Some("max_resumes"),
        "{:?}",
        read.report
    );
    let resume = recorder.span("resume");
    assert_eq!(resume.fields.get("seawall.gave_up"), Some("max_resumes"));
    let lost = lost(&recorder);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].1.value("reason"), "max_resumes");
    assert_eq!(lost[0].0, Some(resume.id));
}

/// A cut the layer never resumes by design (a tool call in flight) loses
/// nothing a limit could have kept: it is said at DEBUG only.
#[tokio::test]
async fn a_cut_never_resumed_by_design_is_no_warning() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let mut interrupted = cut("w1 w2").interrupted().cloned().unwrap();
    interrupted.tool_call_events = 1;
    let tool = Box::new((*cut("w1 w2")).with_interrupted(interrupted));
    let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(tool)];
    let read = splice_in_call(ResumeLayer::new(), first, |_| unreachable!()).await;
    assert_eq!(read.report.gave_up, Some("tool_call"));
    assert_eq!(lost(&recorder), vec![]);
    let said: Vec<_> = recorder
        .events_of("seawall::resume")
        .iter()
        .filter_map(|f| f.get("reason").map(str::to_owned))
        .collect();
    assert_eq!(said, ["tool_call"]);
}

/// A continuation that repeats the tail and then sends only events
/// without text (empty deltas, as a stuck server might) is held while it
/// lines up — within a bound: past 1 MiB of held events it ends as
/// misaligned, with the interruption, instead of growing.
#[tokio::test]
async fn events_without_text_held_while_lining_up_are_bounded() {
    let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))];
    let empty = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":null}]}\n\n";
    let mut rest = chunk(" w2").to_vec();
    rest.extend(empty.repeat(2 << 20 >> 6).into_bytes());
    rest.extend_from_slice(b"data: [DONE]\n\n");
    let rest = Bytes::from(rest);
    let spliced = splice_openai(ResumeLayer::new(), first, move |_| Ok(rest.clone())).await;
    let error = spliced.error.expect("ended as misaligned");
    assert_eq!(
        Failure::find(&*error).map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert_eq!(spliced.report.gave_up, Some("misaligned"));
    assert!(spliced.shown.len() < 4096, "nothing of the hold was shown");
}

/// A continuation in small pieces that repeats two delivered words: spliced
/// whole, the repeat trimmed.
#[tokio::test]
async fn a_continuation_in_pieces_is_spliced_and_trimmed() {
    let mut continuation = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".to_vec();
    for word in [" w2", " w3", " w4", " w5"] {
        continuation.extend_from_slice(&chunk(word));
    }
    continuation.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let continuation = Bytes::from(continuation);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new().align_window(8))
        .service(service_fn(
            move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                let continuation = continuation.clone();
                async move {
                    if n == 1 {
                        let body = req.into_body().collect().await?.to_bytes();
                        let json: serde_json::Value = serde_json::from_slice(&body)?;
                        assert_eq!(json["messages"][1]["content"], "w1 w2 w3");
                    }
                    Ok::<_, BoxError>(match n {
                        0 => stream(vec![
                            Ok(chunk("w1")),
                            Ok(chunk(" w2")),
                            Ok(chunk(" w3")),
                            Err(cut("w1 w2 w3")),
                        ]),
                        _ => stream(
                            continuation
                                .chunks(7)
                                .map(|c| Ok(Bytes::copy_from_slice(c)))
                                .collect(),
                        ),
                    })
                }
            },
        ));
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let shown = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(text_of(&shown), "w1 w2 w3 w4 w5");
    let report = resumed.report();
    assert_eq!(report.resumed(), 1);
    assert_eq!(report.resumes[0].trimmed_chars, " w2 w3".len() as u64);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// What the caller read of an answer whose first stream was cut once.
struct Spliced {
    shown: Vec<u8>,
    error: Option<BoxError>,
    report: seawall_resume::ResumeReport,
    /// The continuation requests the provider received.
    continuations: Vec<serde_json::Value>,
}

/// Sends `request` to `path` through `layer`: the first call streams
/// `first` (ending with its interruption), every later one what `rest`
/// answers its body with.
async fn splice(
    layer: ResumeLayer,
    path: &str,
    request: serde_json::Value,
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: impl Fn(&serde_json::Value) -> Result<Bytes, Box<Failure>> + Clone + Send + 'static,
) -> Spliced {
    let first = Arc::new(std::sync::Mutex::new(Some(first)));
    let continuations = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = continuations.clone();
    let service = ServiceBuilder::new().layer(layer).service(service_fn(
        move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            let first = first.lock().unwrap().take();
            let rest = rest.clone();
            let seen = seen.clone();
            async move {
                if let Some(first) = first {
                    return Ok::<_, BoxError>(stream(first));
                }
                let body = req.into_body().collect().await?.to_bytes();
                let json = serde_json::from_slice(&body)?;
                let answer = rest(&json);
                seen.lock().unwrap().push(json);
                Ok(stream(vec![Ok(answer.map_err(|f| f as BoxError)?)]))
            }
        },
    ));
    let request = http::Request::post(format!("http://api.example{path}"))
        .body(Full::new(Bytes::from(request.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let (shown, error) = read(response.into_body()).await;
    let continuations = continuations.lock().unwrap().clone();
    Spliced {
        shown,
        error,
        report: resumed.report(),
        continuations,
    }
}

/// What a caller reading `body` to its end is shown, and the error it
/// ends with, if it does.
async fn read<B>(body: B) -> (Vec<u8>, Option<B::Error>)
where
    B: http_body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut shown = Vec::new();
    loop {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    shown.extend_from_slice(&data);
                }
            }
            Some(Err(error)) => return (shown, Some(error)),
            None => return (shown, None),
        }
    }
}

/// [`splice`] for an OpenAI chat completions request.
async fn splice_openai(
    layer: ResumeLayer,
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: impl Fn(&serde_json::Value) -> Result<Bytes, Box<Failure>> + Clone + Send + 'static,
) -> Spliced {
    let request = serde_json::json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    splice(layer, "/v1/chat/completions", request, first, rest).await
}

/// [`splice`] for a Gemini streamed request.
async fn splice_gemini(
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: impl Fn(&serde_json::Value) -> Result<Bytes, Box<Failure>> + Clone + Send + 'static,
) -> Spliced {
    let request = serde_json::json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    let path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";
    splice(ResumeLayer::new(), path, request, first, rest).await
}

/// One Anthropic event.
fn anthropic(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic_start() -> String {
    anthropic(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

fn text_start(index: u64) -> String {
    anthropic(
        "content_block_start",
        serde_json::json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
    )
}

fn stop(index: u64) -> String {
    anthropic(
        "content_block_stop",
        serde_json::json!({"type": "content_block_stop", "index": index}),
    )
}

fn anthropic_text(index: u64, text: &str) -> String {
    anthropic(
        "content_block_delta",
        serde_json::json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": text}}),
    )
}

/// The end of an Anthropic message: its stop reason, then `message_stop`.
fn anthropic_end(stop_reason: &str) -> String {
    anthropic(
        "message_delta",
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 2}}),
    ) + &anthropic("message_stop", serde_json::json!({"type": "message_stop"}))
}

/// An Anthropic continuation whose text block (its own index 0) says
/// `text`, then whatever `after` holds.
fn anthropic_continuation(text: &str, after: &str) -> String {
    [
        anthropic_start(),
        text_start(0),
        anthropic_text(0, text),
        stop(0),
    ]
    .concat()
        + after
}

/// An Anthropic stream cut after `w1 w2` in its text block, index 0.
fn anthropic_cut() -> Vec<Result<Bytes, Box<Failure>>> {
    vec![
        Ok(Bytes::from(anthropic_start() + &text_start(0))),
        Ok(Bytes::from(anthropic_text(0, "w1"))),
        Ok(Bytes::from(anthropic_text(0, " w2"))),
        Err(cut("w1 w2")),
    ]
}

/// [`splice`] for an Anthropic messages request.
async fn splice_anthropic(
    first: Vec<Result<Bytes, Box<Failure>>>,
    rest: impl Fn(&serde_json::Value) -> Result<Bytes, Box<Failure>> + Clone + Send + 'static,
) -> Spliced {
    let request = serde_json::json!({"model": "claude-x", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    splice(ResumeLayer::new(), "/v1/messages", request, first, rest).await
}

/// The events of a block that carries one delta and closes.
const ONE_DELTA_BLOCK: [&str; 3] = [
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

/// The original text block of [`anthropic_cut`], closed: its start, its
/// two deltas (`w1`, ` w2`), its stop.
const W1_W2_CLOSED: [&str; 4] = [
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
];

/// The names of the events of block `index`, in order.
fn events_of(blocks: &[(String, u64)], index: u64) -> Vec<&str> {
    blocks
        .iter()
        .filter(|(_, i)| *i == index)
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Every `(event name, block index)` of an Anthropic stream, in order.
fn anthropic_blocks(shown: &[u8]) -> Vec<(String, u64)> {
    let mut blocks = Vec::new();
    let mut scanner = seawall_stream::sse::Scanner::default();
    scanner
        .feed(shown, |item| {
            if let seawall_stream::sse::Item::Event(event) = item
                && let Ok(json) = serde_json::from_slice::<serde_json::Value>(event.data)
                && let Some(index) = json["index"].as_u64()
            {
                let name = String::from_utf8_lossy(event.name).into_owned();
                blocks.push((name, index));
            }
        })
        .unwrap();
    blocks
}

/// A tool call in block `index`, and the message's end for it.
fn tool_block(index: u64) -> String {
    [
        anthropic(
            "content_block_start",
            serde_json::json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        ),
        anthropic(
            "content_block_delta",
            serde_json::json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Oslo\"}"}}),
        ),
        stop(index),
        anthropic_end("tool_use"),
    ]
    .concat()
}

/// A continuation that finishes the text and then calls a tool: the tool
/// block keeps an index of its own, after the text block's, as the
/// continuation numbered it relative to its own text block.
#[tokio::test]
async fn an_anthropic_block_after_the_continued_text_keeps_its_own_index() {
    let first = anthropic_cut();
    let rest = anthropic_continuation(" w3", &tool_block(1));
    let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.resumed(), 1);
    assert_eq!(
        spliced.continuations[0]["messages"][1],
        serde_json::json!({"role": "assistant", "content": "w1 w2"})
    );
    let blocks = anthropic_blocks(&spliced.shown);
    let of = |index: u64| events_of(&blocks, index);
    assert_eq!(
        of(0),
        [
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop"
        ],
        "{blocks:?}"
    );
    assert_eq!(of(1), ONE_DELTA_BLOCK, "{blocks:?}");
}

/// A continuation whose first content is a tool call (the text was whole
/// at the cut; the model goes on to call a tool): its block follows the
/// original text block instead of taking its index, so a client's
/// accumulator never files the tool's input under the text block, and
/// the text block is closed before it (it never was).
#[tokio::test]
async fn a_tool_call_that_opens_a_continuation_follows_the_text_block() {
    let first = anthropic_cut();
    let rest = anthropic_start() + &tool_block(0);
    let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.resumed(), 1);
    let blocks = anthropic_blocks(&spliced.shown);
    let of = |index: u64| events_of(&blocks, index);
    assert_eq!(of(0), W1_W2_CLOSED, "{blocks:?}");
    assert_eq!(of(1), ONE_DELTA_BLOCK, "{blocks:?}");
    let order: Vec<_> = blocks
        .iter()
        .map(|(name, index)| (name.as_str(), *index))
        .collect();
    let at = |event| order.iter().position(|e| *e == event).expect("shown");
    let (closed, opened) = (
        at(("content_block_stop", 0)),
        at(("content_block_start", 1)),
    );
    assert!(closed < opened, "the text block closes first: {order:?}");
}

/// A cut after the caller saw the text block closed (between its
/// `content_block_stop` and the finish), and a continuation that writes
/// more: its text is a block of its own after the closed one, started and
/// stopped, not deltas filed after the closed block's stop.
#[tokio::test]
async fn text_after_a_closed_block_is_a_block_of_its_own() {
    let mut first = anthropic_cut();
    first.insert(3, Ok(Bytes::from(stop(0))));
    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
    let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.resumed(), 1);
    let blocks = anthropic_blocks(&spliced.shown);
    assert_eq!(events_of(&blocks, 0), W1_W2_CLOSED, "{blocks:?}");
    assert_eq!(events_of(&blocks, 1), ONE_DELTA_BLOCK, "{blocks:?}");
    assert_eq!(
        text_in(seawall_stream::Provider::Anthropic, &spliced.shown),
        "w1 w2 w3"
    );
}

/// A continuation that adds nothing (the text was whole at the cut: the
/// model ends at once) ends the answer with its finish, and the text block
/// it was to continue is closed before it; the continuation's own empty
/// block is not shown. Once only, however the cut fell: a block the
/// caller saw closed is not closed again.
#[tokio::test]
async fn a_continuation_that_adds_nothing_closes_the_open_block() {
    let nothing = [
        anthropic_start(),
        text_start(0),
        stop(0),
        anthropic_end("end_turn"),
    ]
    .concat();
    for closed_before_the_cut in [false, true] {
        let mut first = anthropic_cut();
        if closed_before_the_cut {
            first.insert(3, Ok(Bytes::from(stop(0))));
        }
        let rest = nothing.clone();
        let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
        assert!(spliced.error.is_none(), "{:?}", spliced.error);
        assert_eq!(spliced.report.resumed(), 1);
        let blocks = anthropic_blocks(&spliced.shown);
        assert_eq!(events_of(&blocks, 0), W1_W2_CLOSED, "{blocks:?}");
        let shown = String::from_utf8_lossy(&spliced.shown);
        let stop_at = shown.rfind("content_block_stop").unwrap();
        assert!(stop_at < shown.find("message_delta").unwrap(), "{shown}");
        assert_eq!(shown.matches("event: message_start").count(), 1, "{shown}");
    }
}

/// A continuation that opens with a tool call has nothing to line up: it
/// passes as it comes, however large the call's input — held whole, past
/// the hold's bound it ended as misaligned.
#[tokio::test]
async fn a_large_tool_call_opening_a_continuation_passes() {
    let first = anthropic_cut();
    let piece = anthropic(
        "content_block_delta",
        serde_json::json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","}}),
    );
    let start = anthropic(
        "content_block_start",
        serde_json::json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}}),
    );
    let rest =
        anthropic_start() + &start + &piece.repeat(12_000) + &stop(0) + &anthropic_end("tool_use");
    let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.gave_up, None);
    let blocks = anthropic_blocks(&spliced.shown);
    assert!(blocks.iter().filter(|(_, i)| *i == 1).count() > 12_000);
}

/// Pings while the stream stalls, then the idle gap cuts it: the last
/// frame the caller saw is a ping, and the continuation still writes into
/// the text block that was open (here the second, index 1).
#[tokio::test]
async fn a_ping_before_the_cut_does_not_lose_the_open_block_index() {
    let ping = anthropic("ping", serde_json::json!({"type": "ping"}));
    let first = vec![
        Ok(Bytes::from(anthropic_start() + &text_start(0))),
        Ok(Bytes::from(anthropic_text(0, "Intro.") + &stop(0))),
        Ok(Bytes::from(text_start(1) + &anthropic_text(1, " w1"))),
        Ok(Bytes::from(anthropic_text(1, " w2"))),
        Ok(Bytes::from(ping.clone())),
        Ok(Bytes::from(ping)),
        Err(cut("Intro. w1 w2")),
    ];
    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
    let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.resumed(), 1);
    let blocks = anthropic_blocks(&spliced.shown);
    let deltas: Vec<u64> = blocks
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, index)| *index)
        .collect();
    assert_eq!(deltas, [0, 1, 1, 1], "{blocks:?}");
    assert_eq!(blocks.last(), Some(&("content_block_stop".into(), 1)));
}

/// A JSON schema constrains every answer from its first token: the
/// continuation is a new object, never the rest of the cut one, so the
/// layer must not splice it (the caller would read two half objects).
#[tokio::test]
async fn an_answer_under_a_json_schema_is_never_resumed() {
    let first = vec![
        Ok(chunk("{\\\"answer\\\": \\\"The")),
        Ok(chunk(" quick brown")),
        Err(cut("{\"answer\": \"The quick brown")),
    ];
    let mut rest = chunk("{\\\"answer\\\": \\\"A fox\\\"}").to_vec();
    rest.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let request = serde_json::json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "strict": true,
            "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}}});
    let spliced = splice(
        ResumeLayer::new(),
        "/v1/chat/completions",
        request,
        first,
        move |_| Ok(Bytes::from(rest.clone())),
    )
    .await;
    assert_eq!(text_of(&spliced.shown), "{\"answer\": \"The quick brown");
    let error = spliced.error.expect("the interruption");
    assert_eq!(
        Failure::find(&*error).map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert!(spliced.continuations.is_empty(), "no continuation sent");
    assert_eq!(spliced.report.gave_up, Some("structured_output"));
}

/// Claude 4.6 and later refuse a prefill with a 400 ("Prefilling is not
/// supported on Claude 4.6 and later models", Anthropic's Messages API
/// guide): the next continuation of the same answer asks in a user turn
/// instead of sending the same refused prefill again.
#[tokio::test]
async fn a_refused_prefill_is_asked_for_in_a_user_turn_next() {
    let first = anthropic_cut();
    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
    let spliced = splice_anthropic(first, move |body: &serde_json::Value| {
        let last = body["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "assistant" {
            let refused = Failure::new(Code::BadRequest)
                .with_status(400)
                .with_message("Prefilling assistant messages is not supported for this model.");
            return Err(Box::new(refused));
        }
        Ok(Bytes::from(rest.clone()))
    })
    .await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    let roles: Vec<_> = spliced
        .continuations
        .iter()
        .map(|c| c["messages"].as_array().unwrap().last().unwrap()["role"].clone())
        .collect();
    assert_eq!(roles, ["assistant", "user"]);
    let resumes = &spliced.report.resumes;
    assert_eq!(resumes.len(), 2);
    assert_eq!(resumes[0].failed, Some(Code::BadRequest));
    assert_eq!(resumes[1].failed, None);
    let deltas = anthropic_blocks(&spliced.shown)
        .into_iter()
        .filter(|(name, _)| name == "content_block_delta")
        .count();
    assert_eq!(deltas, 3, "w1, w2, then w3 of the continuation");
}

/// An agent's request whose last turn holds tool results, its text answer
/// cut, and a model that refuses prefill: the user turn that asks to
/// continue comes after the delivered text as the model's own turn,
/// never as text in a user turn right after the tool results (Anthropic
/// merges consecutive user turns, and its "Handling stop reasons" guide
/// names text right after a `tool_result` as what makes Claude answer
/// with an empty `end_turn`, which would read as the answer being whole).
#[tokio::test]
async fn a_user_turn_after_tool_results_follows_the_delivered_text() {
    let request = serde_json::json!({"model": "claude-x", "max_tokens": 100, "stream": true,
    "messages": [
        {"role": "user", "content": "what is the weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
            "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "sunny"}]},
    ]});
    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
    let spliced = splice(
        ResumeLayer::new(),
        "/v1/messages",
        request,
        anthropic_cut(),
        move |body: &serde_json::Value| {
            let last = body["messages"].as_array().unwrap().last().unwrap();
            if last["role"] == "assistant" {
                let refused = Failure::new(Code::BadRequest)
                    .with_status(400)
                    .with_message("Prefilling assistant messages is not supported for this model.");
                return Err(Box::new(refused));
            }
            Ok(Bytes::from(rest.clone()))
        },
    )
    .await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.continuations.len(), 2);
    let messages = spliced.continuations[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{messages:?}");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[3]["role"], "assistant");
    assert_eq!(messages[3]["content"], "w1 w2");
    assert_eq!(messages[4]["role"], "user");
    let prompt = messages[4]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Continue exactly where it stops"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("w1 w2"),
        "the text is the model's turn: {prompt}"
    );
}

/// Claude continues a prefill in place: what follows it is new text even
/// when it looks like the delivered tail (a number in a matrix, a word
/// said twice), never a repeat to trim. Only the whitespace the delivered
/// text ended with, which the prefill went without, comes again.
#[tokio::test]
async fn an_anthropic_prefill_is_continued_in_place() {
    for (delivered, next, whole, prefill) in [
        (
            ["[[1 0 0]\n [0 1", " 0"],
            " 0]\n",
            "[[1 0 0]\n [0 1 0 0]\n",
            "[[1 0 0]\n [0 1 0",
        ),
        (["ha", " ha"], " ha!", "ha ha ha!", "ha ha"),
        (
            ["Line one.", "\n\n"],
            "\n\nLine two.",
            "Line one.\n\nLine two.",
            "Line one.",
        ),
    ] {
        let text = delivered.concat();
        let first = vec![
            Ok(Bytes::from(anthropic_start() + &text_start(0))),
            Ok(Bytes::from(anthropic_text(0, delivered[0]))),
            Ok(Bytes::from(anthropic_text(0, delivered[1]))),
            Err(cut(&text)),
        ];
        let rest = anthropic_continuation(next, &anthropic_end("end_turn"));
        let spliced = splice_anthropic(first, move |_| Ok(Bytes::from(rest.clone()))).await;
        assert!(spliced.error.is_none(), "{:?}", spliced.error);
        let last = spliced.continuations[0]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["content"], prefill);
        assert_eq!(
            text_in(seawall_stream::Provider::Anthropic, &spliced.shown),
            whole,
            "{delivered:?}"
        );
    }
}

/// A continuation refused for what it is — longer than the context
/// window once the delivered text is in it, a refusal, a bad request —
/// would be refused again word for word: one is sent, not the budget.
#[tokio::test]
async fn a_continuation_refused_for_good_is_not_sent_again() {
    for code in [Code::ContextTooLong, Code::Refused, Code::BadRequest] {
        let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))];
        let spliced = splice_openai(ResumeLayer::new(), first, move |_: &serde_json::Value| {
            Err(Box::new(Failure::new(code).with_status(400)))
        })
        .await;
        assert_eq!(spliced.continuations.len(), 1, "{code}");
        let error = spliced.error.expect("the interruption");
        let failure = Failure::find(&*error).unwrap();
        assert_eq!(failure.code(), Code::StreamInterrupted, "{code}");
        assert_eq!(text_of(&spliced.shown), "w1 w2");
        let report = &spliced.report;
        assert_eq!(report.resumes.len(), 1, "{code}");
        assert_eq!(report.resumes[0].failed, Some(code));
        assert_eq!(report.gave_up, Some("continuation_failed"), "{code}");
        // The interruption says why it was not continued, not only how
        // the first stream broke.
        let message = failure.message().unwrap_or_default();
        assert!(
            message.contains(&format!("not resumed: the continuation failed with {code}")),
            "{message}"
        );
    }
}

/// A server that continues the final message in place
/// (`continue_final_message`) is sent the delivered text right-stripped
/// (chat templates commonly trim the final message, and transformers then
/// ends the prompt at the trimmed text) and generates only what follows
/// it: the whitespace the delivered text ended with, which it writes
/// again, is trimmed once (a line break after a table row, the space
/// before a word), and a blank line it adds is kept; a continuation that
/// starts like the delivered tail is new text (a word said again), never
/// a repeat to trim.
#[tokio::test]
async fn a_continuation_in_place_trims_only_the_whitespace_said_again() {
    for (delivered, next, whole, sent, trimmed) in [
        (
            ["| 1 | 2 |", "\\n"],
            "\\n| 3 | 4 |",
            "| 1 | 2 |\n| 3 | 4 |",
            "| 1 | 2 |",
            1,
        ),
        (["Hello", " "], " world", "Hello world", "Hello", 1),
        (
            ["Line one.", "\\n"],
            "\\n\\nLine two.",
            "Line one.\n\nLine two.",
            "Line one.",
            1,
        ),
        (["ha", " ha"], " ha!", "ha ha ha!", "ha ha", 0),
    ] {
        let text = delivered.concat().replace("\\n", "\n");
        let first = vec![
            Ok(chunk(delivered[0])),
            Ok(chunk(delivered[1])),
            Err(cut(&text)),
        ];
        let mut rest = chunk(next).to_vec();
        rest.extend_from_slice(
            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        );
        let spliced = splice_openai(
            ResumeLayer::new().openai_style(OpenAiStyle::ContinueFinalMessage),
            first,
            move |_| Ok(Bytes::from(rest.clone())),
        )
        .await;
        assert!(spliced.error.is_none(), "{:?}", spliced.error);
        let asked = &spliced.continuations[0];
        assert_eq!(asked["continue_final_message"], true);
        assert_eq!(asked["messages"][1]["content"], sent, "{delivered:?}");
        assert_eq!(text_of(&spliced.shown), whole, "{delivered:?}");
        assert_eq!(spliced.report.resumes[0].trimmed_chars, trimmed);
    }
}

/// The caller's output budget covers the whole answer: each delivered
/// content event spent at least one token of it, so the continuation
/// asks for at most what is left, and none is sent when nothing is.
#[tokio::test]
async fn a_continuation_asks_only_for_the_budget_left() {
    let mut rest = chunk(" w3").to_vec();
    rest.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let rest = Bytes::from(rest);
    for (budget, left) in [(10, Some(8)), (2, None)] {
        let request = serde_json::json!({"model": "m", "stream": true, "max_completion_tokens": budget,
            "messages": [{"role": "user", "content": "hi"}]});
        let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(cut("w1 w2"))];
        let rest = rest.clone();
        let spliced = splice(
            ResumeLayer::new(),
            "/v1/chat/completions",
            request,
            first,
            move |_| Ok(rest.clone()),
        )
        .await;
        let sent: Vec<_> = spliced
            .continuations
            .iter()
            .map(|c| c["max_completion_tokens"].as_u64().unwrap())
            .collect();
        match left {
            Some(left) => {
                assert_eq!(sent, [left]);
                assert_eq!(text_of(&spliced.shown), "w1 w2 w3");
            }
            None => {
                assert!(sent.is_empty(), "{sent:?}");
                assert_eq!(spliced.report.gave_up, Some("max_tokens"));
            }
        }
    }
}

/// A server's `abort` finish after content is judged at the `[DONE]` that
/// follows it, when the caller already holds both (the stream guard's
/// real verdict here): nothing is spliced in after the end an SDK stops
/// reading at, and nothing more is billed.
#[tokio::test]
async fn an_abort_finish_the_caller_already_read_is_not_resumed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .layer(seawall_stream::StreamGuardLayer::interactive())
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    Ok::<_, BoxError>(stream(vec![
                        Ok(chunk("w1")),
                        Ok(chunk(" w2")),
                        Ok(Bytes::from_static(
                            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"abort\"}]}\n\n",
                        )),
                        Ok(Bytes::from_static(b"data: [DONE]\n\n")),
                    ]))
                }
            },
        ));
    let request = serde_json::json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from(request.to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let (shown, error) = read(response.into_body()).await;
    let error = error.expect("an abort is no answer");
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert!(failure.evidence().finish_seen);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no continuation was sent");
    assert_eq!(resumed.report().gave_up, Some("finished"));
    // The caller read the abort, but not `[DONE]`: an SDK stops reading
    // at it and would never meet the verdict.
    assert!(
        shown.ends_with(b"\"finish_reason\":\"abort\"}]}\n\n"),
        "the caller read the abort"
    );
}

/// A continuation that repeats the tail of the answer in a chunk that
/// also calls a function: the repeated text is cut and the call kept,
/// never dropped with the text. (Gemini continues its `model` turn in
/// place: only a restatement of two words and 12 bytes or more is a
/// repeat to trim there.)
#[tokio::test]
async fn a_call_in_a_repeated_chunk_is_kept_when_its_text_is_trimmed() {
    let gemini = |parts: &str, finish: &str| {
        Bytes::from(format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":{parts},\"role\":\"model\"}}{finish},\"index\":0}}]}}\r\n\r\n"
        ))
    };
    let delivered = "w1 w2 w3 w4 w5 w6 w7";
    let first = vec![
        Ok(gemini(&format!("[{{\"text\":\"{delivered}\"}}]"), "")),
        Err(cut(delivered)),
    ];
    let mut rest = gemini(
        "[{\"text\":\" w3 w4 w5 w6 w7\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]",
        "",
    )
    .to_vec();
    rest.extend_from_slice(&gemini("[{\"text\":\"\"}]", ",\"finishReason\":\"STOP\""));
    let rest = Bytes::from(rest);
    let spliced = splice_gemini(first, move |_| Ok(rest.clone())).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    let shown = String::from_utf8(spliced.shown).unwrap();
    assert!(shown.contains("functionCall"), "{shown}");
    assert_eq!(shown.matches("w3 w4 w5 w6 w7").count(), 1, "{shown}");
    assert_eq!(spliced.continuations.len(), 1);
}

/// A Gemini stream that ends cleanly after an event no blank line ended:
/// Google's reader (and the guard) took that event, so its text is in what
/// was delivered; the caller is shown it, ended plainly, and the
/// continuation follows it — no word lost at the splice.
#[tokio::test]
async fn a_gemini_event_the_end_closed_is_shown_before_its_continuation() {
    let gemini = |text: &str, finish: &str, end: &str| {
        Bytes::from(format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}],\"role\":\"model\"}}{finish},\"index\":0}}]}}{end}"
        ))
    };
    // The last event's line ended, ended by a lone CR, or not ended at
    // all: each read whole by Google's reader and the guard, so shown.
    // Half an event is a cut: the guard read none of it, and the caller is
    // shown none of it.
    let half = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" w";
    let cases = [
        (gemini(" w3", "", "\n"), "w1 w2 w3"),
        (gemini(" w3", "", "\r"), "w1 w2 w3"),
        (gemini(" w3", "", ""), "w1 w2 w3"),
        (Bytes::from_static(half.as_bytes()), "w1 w2"),
    ];
    for (last, delivered) in cases {
        let mut ended = cut(delivered);
        let interrupted = ended.interrupted().cloned().unwrap();
        ended = Box::new(Failure::new(Code::Truncated).with_interrupted(interrupted));
        ended.evidence_mut().closed_by = Some(ClosedBy::Them);
        let first = vec![
            Ok(gemini("w1", "", "\n\n")),
            Ok(gemini(" w2", "", "\n\n")),
            Ok(last.clone()),
            Err(ended),
        ];
        let mut rest = gemini(" w4", "", "\n\n").to_vec();
        rest.extend_from_slice(&gemini("", ",\"finishReason\":\"STOP\"", "\n\n"));
        let rest = Bytes::from(rest);
        let spliced = splice_gemini(first, move |_| Ok(rest.clone())).await;
        assert!(spliced.error.is_none(), "{last:?}: {:?}", spliced.error);
        assert_eq!(
            text_in(seawall_stream::Provider::Gemini, &spliced.shown),
            format!("{delivered} w4"),
            "{last:?}"
        );
    }
}

/// A stream cut by the connection's own timeout (a client's read timeout,
/// which the classifier names `timeout`) is continued as a reset is; one
/// the guard closed at a bound of its own (past `max_duration`) is not.
#[tokio::test]
async fn a_connections_timeout_is_resumed_and_a_guards_bound_is_not() {
    for (closed_by, resumed) in [(ClosedBy::Them, true), (ClosedBy::Us, false)] {
        let mut failure = cut("w1 w2");
        let mut interrupted = failure.interrupted().cloned().unwrap();
        interrupted.cause = Some(Code::Timeout);
        failure = Box::new(failure.with_interrupted(interrupted));
        failure.evidence_mut().closed_by = Some(closed_by);
        let first = vec![Ok(chunk("w1")), Ok(chunk(" w2")), Err(failure)];
        let rest = |_: &serde_json::Value| {
            Ok(Bytes::from(format!(
                "{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
                String::from_utf8(chunk(" w3").to_vec()).unwrap()
            )))
        };
        let spliced = splice_openai(ResumeLayer::new(), first, rest).await;
        if resumed {
            assert!(spliced.error.is_none(), "{:?}", spliced.error);
            assert_eq!(spliced.report.resumed(), 1);
            assert_eq!(text_of(&spliced.shown), "w1 w2 w3");
        } else {
            assert!(spliced.error.is_some());
            assert_eq!(spliced.report.gave_up, Some("not_resumable"));
            assert!(spliced.continuations.is_empty());
        }
    }
}

/// A server that answers before it has read the whole request body (it
/// reads the rest as it streams) keeps its upload whole: the layer does
/// not read the body on to record it. It read on through its own handle,
/// took the upload's frames past the replay cap, and the server's read of
/// the body failed; the report now says why nothing could be resumed.
#[tokio::test]
async fn an_answer_before_the_upload_ends_leaves_the_upload_whole() {
    let (read_tx, read_rx) = tokio::sync::oneshot::channel();
    let read_tx = Arc::new(std::sync::Mutex::new(Some(read_tx)));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new().max_replay_bytes(16))
        .service(service_fn(
            move |req: http::Request<ResumeRequestBody<seawall_test::body::Chunks>>| {
                let read_tx = read_tx.lock().unwrap().take().expect("called once");
                async move {
                    // The body is read after the answer began.
                    tokio::spawn(async move {
                        let read = req.into_body().collect().await.map(|c| c.to_bytes());
                        let _ = read_tx.send(read.map_err(|e| e.to_string()));
                    });
                    Ok::<_, BoxError>(stream(vec![
                        Ok(chunk("w1")),
                        Ok(chunk(" w2")),
                        Err(cut("w1 w2")),
                    ]))
                }
            },
        ));
    let parts = [
        r#"{"model":"m","stream":true,"#,
        r#""messages":[{"role":"user","content":"hi"}]}"#,
    ];
    let body = seawall_test::body::Chunks::new(parts);
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(body)
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let read = read_rx.await.unwrap();
    assert_eq!(
        read.as_deref(),
        Ok(parts.concat().as_bytes()),
        "the server reads the whole body"
    );
    let error = response.into_body().collect().await.unwrap_err();
    assert_eq!(
        Failure::find(&*error).map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert_eq!(resumed.report().gave_up, Some("request_unsent"));
}

/// One Gemini event of text `text`, with `finish` (`,"finishReason":…`)
/// after its content.
fn gemini_event(text: &str, finish: &str) -> Bytes {
    Bytes::from(format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}],\"role\":\"model\"}}{finish},\"index\":0}}]}}\n\n"
    ))
}

/// A Gemini stream cut after `w1 w2`, and a continuation that says ` w3`
/// and stops.
fn gemini_cut_and_rest() -> (Vec<Result<Bytes, Box<Failure>>>, Bytes) {
    let first = vec![
        Ok(gemini_event("w1", "")),
        Ok(gemini_event(" w2", "")),
        Err(cut("w1 w2")),
    ];
    let mut rest = gemini_event(" w3", "").to_vec();
    rest.extend_from_slice(&gemini_event("", ",\"finishReason\":\"STOP\""));
    (first, Bytes::from(rest))
}

/// A Gemini answer streamed as `delivered` (one event each), cut, and
/// continued by `next` (one event each) and a `STOP`, asked as the layer
/// asks by default: the delivered text as the last, `model` turn.
async fn continue_gemini(delivered: &[&str], next: &[&str]) -> Spliced {
    // The text as it goes inside a JSON string.
    let escaped = |text: &str| {
        let quoted = serde_json::to_string(text).unwrap();
        quoted[1..quoted.len() - 1].to_owned()
    };
    let mut first: Vec<_> = delivered
        .iter()
        .map(|text| Ok(gemini_event(&escaped(text), "")))
        .collect();
    first.push(Err(cut(&delivered.concat())));
    let mut rest = Vec::new();
    for text in next {
        rest.extend_from_slice(&gemini_event(&escaped(text), ""));
    }
    rest.extend_from_slice(&gemini_event("", ",\"finishReason\":\"STOP\""));
    let rest = Bytes::from(rest);
    let spliced = splice_gemini(first, move |_| Ok(rest.clone())).await;
    let last = spliced.continuations[0]["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "model");
    assert_eq!(last["parts"][0]["text"], delivered.concat());
    spliced
}

/// Gemini continues a conversation that ends with the model's own turn
/// in place, as Claude continues a prefill: it writes what follows the
/// turn, so a `0` after `[0 1 0` is the next number of the row, not a
/// repeat of the tail to trim.
#[tokio::test]
async fn a_gemini_model_turn_is_continued_in_place() {
    let spliced = continue_gemini(&["[0 1", " 0"], &[" 0 1]"]).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(
        text_in(seawall_stream::Provider::Gemini, &spliced.shown),
        "[0 1 0 0 1]"
    );
    assert_eq!(spliced.report.resumes[0].trimmed_chars, 0);
}

/// A continuation whose first content is another candidate's text (none
/// of the first candidate's) after a long answer in characters of several
/// bytes: nothing to line up, so the answer ends with the continuation's
/// finish. (An empty head matches inside a character: the alignment
/// sliced there and panicked.)
#[tokio::test]
async fn another_candidates_text_after_wide_characters_ends_the_answer() {
    // 1200 bytes: the last 1024 start inside a character.
    let delivered = "中".repeat(400);
    let first = vec![Ok(gemini_event(&delivered, "")), Err(cut(&delivered))];
    let rest = Bytes::from_static(
        b"data: {\"candidates\":[{\"index\":1,\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"more\"}]},\"finishReason\":\"STOP\"}]}\n\n",
    );
    let spliced = splice_gemini(first, move |_| Ok(rest.clone())).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(
        text_in(seawall_stream::Provider::Gemini, &spliced.shown),
        delivered
    );
    let shown = String::from_utf8(spliced.shown).unwrap();
    assert!(
        shown.ends_with("\"finishReason\":\"STOP\"}]}\n\n"),
        "{shown}"
    );
    assert_eq!(spliced.report.resumes[0].trimmed_chars, 0);
}

/// What follows a Gemini `model` turn may well open with a line the
/// answer already holds (code printing a value again): new text, spliced
/// in, not a restatement to give the answer up for.
#[tokio::test]
async fn a_line_said_again_after_a_gemini_model_turn_is_spliced() {
    let delivered = [
        "fn main() {\n    let mut total = 1;\n",
        "    println!(\"{total}\");\n    total += 1;\n",
    ];
    let next = ["    println!(\"{total}\");\n", "}\n"];
    let spliced = continue_gemini(&delivered, &next).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(spliced.report.gave_up, None);
    assert!(spliced.report.resumes[0].spliced);
    assert_eq!(
        text_in(seawall_stream::Provider::Gemini, &spliced.shown),
        [delivered.concat(), next.concat()].concat()
    );
}

/// The JSON data of every event in `shown` that has one.
fn json_events(shown: &[u8]) -> Vec<serde_json::Value> {
    let mut events = Vec::new();
    seawall_stream::sse::Scanner::default()
        .feed(shown, |item| {
            if let seawall_stream::sse::Item::Event(event) = item
                && let Ok(json) = serde_json::from_slice(event.data)
            {
                events.push(json);
            }
        })
        .unwrap();
    events
}

/// One answer has one id: a continuation answered in the caller's own
/// format (OpenAI chat) is spliced under the original's id, creation time
/// and fingerprint, as one answered in another format is said under them.
/// openai-node's `ChatCompletionStream` takes the last chunk's id for the
/// whole answer. Azure's first event, its prompt filter results, has a
/// blank envelope: the original's is the first that says one.
#[tokio::test]
async fn a_chat_continuation_is_spliced_under_the_originals_id() {
    let chunk_of = |id: &str, created: u64, delta: &str, finish: &str| {
        Bytes::from(format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":\"m\",\"system_fingerprint\":\"fp-{id}\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        ))
    };
    // Azure's first event: its prompt filter results, no choices, a blank
    // envelope no continuation may take.
    let azure = Bytes::from_static(
        b"data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n",
    );
    for filtered in [false, true] {
        let mut first = vec![
            Ok(chunk_of("chatcmpl-A", 1, r#"{"role":"assistant"}"#, "null")),
            Ok(chunk_of("chatcmpl-A", 1, r#"{"content":"w1"}"#, "null")),
            Ok(chunk_of("chatcmpl-A", 1, r#"{"content":" w2"}"#, "null")),
            Err(cut("w1 w2")),
        ];
        if filtered {
            first.insert(0, Ok(azure.clone()));
        }
        let mut rest = Vec::new();
        for (delta, finish) in [
            (r#"{"role":"assistant"}"#, "null"),
            (r#"{"content":" w3"}"#, "null"),
            (r#"{"content":" w4"}"#, "null"),
            ("{}", r#""stop""#),
        ] {
            rest.extend_from_slice(&chunk_of("chatcmpl-B", 2, delta, finish));
        }
        rest.extend_from_slice(b"data: [DONE]\n\n");
        let rest = Bytes::from(rest);
        let spliced = splice_openai(ResumeLayer::new(), first, move |_| Ok(rest.clone())).await;
        assert!(spliced.error.is_none(), "{:?}", spliced.error);
        assert_eq!(text_of(&spliced.shown), "w1 w2 w3 w4");
        let mut chunks = json_events(&spliced.shown);
        if filtered {
            assert_eq!(chunks.remove(0)["id"], "", "the filter results, as sent");
        }
        assert_eq!(chunks.len(), 6, "the role chunk, four deltas, the finish");
        for chunk in &chunks {
            assert_eq!(chunk["id"], "chatcmpl-A", "{filtered} {chunk}");
            assert_eq!(chunk["created"], 1, "{chunk}");
            assert_eq!(chunk["model"], "m", "{chunk}");
            assert_eq!(chunk["system_fingerprint"], "fp-chatcmpl-A", "{chunk}");
        }
        assert!(spliced.shown.ends_with(b"data: [DONE]\n\n"));
    }
}

/// A Gemini continuation answered by Gemini is spliced under the
/// original's `responseId`, as one answered in another format is said
/// under it.
#[tokio::test]
async fn a_gemini_continuation_is_spliced_under_the_originals_response_id() {
    let event = |id: &str, text: &str, finish: &str| {
        Bytes::from(format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{text}\"}}],\"role\":\"model\"}}{finish},\"index\":0}}],\"modelVersion\":\"gemini-x\",\"responseId\":\"{id}\"}}\n\n"
        ))
    };
    let first = vec![
        Ok(event("r-A", "w1", "")),
        Ok(event("r-A", " w2", "")),
        Err(cut("w1 w2")),
    ];
    let mut rest = event("r-B", " w3", "").to_vec();
    rest.extend_from_slice(&event("r-B", "", ",\"finishReason\":\"STOP\""));
    let rest = Bytes::from(rest);
    let spliced = splice_gemini(first, move |_| Ok(rest.clone())).await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    assert_eq!(
        text_in(seawall_stream::Provider::Gemini, &spliced.shown),
        "w1 w2 w3"
    );
    let events = json_events(&spliced.shown);
    assert_eq!(events.len(), 4);
    for event in &events {
        assert_eq!(event["responseId"], "r-A", "{event}");
    }
}

/// Newer Gemini models refuse a request whose contents end with a `model`
/// turn with a 400 ("Requests ending with a model turn are not supported
/// unless the last part is a function response"): the next continuation
/// of the same answer ends with a user turn asking to continue instead of
/// sending the refused request again, and the answer goes on.
#[tokio::test]
async fn a_refused_gemini_model_turn_is_asked_for_in_a_user_turn_next() {
    let (first, rest) = gemini_cut_and_rest();
    let spliced = splice_gemini(first, move |body: &serde_json::Value| {
        let last = body["contents"].as_array().unwrap().last().unwrap();
        if last["role"] == "model" {
            let refused = Failure::new(Code::BadRequest)
                .with_status(400)
                .with_message("Requests ending with a model turn are not supported unless the last part is a function response.");
            return Err(Box::new(refused));
        }
        Ok(rest.clone())
    })
    .await;
    assert!(spliced.error.is_none(), "{:?}", spliced.error);
    let roles: Vec<_> = spliced
        .continuations
        .iter()
        .map(|c| c["contents"].as_array().unwrap().last().unwrap()["role"].clone())
        .collect();
    assert_eq!(roles, ["model", "user"]);
    // The delivered text is still the model's own turn, right before the
    // user turn: the turns alternate.
    let second = spliced.continuations[1]["contents"].as_array().unwrap();
    assert_eq!(second[second.len() - 2]["role"], "model");
    assert_eq!(second[second.len() - 2]["parts"][0]["text"], "w1 w2");
    let resumes = &spliced.report.resumes;
    assert_eq!(resumes.len(), 2);
    assert_eq!(resumes[0].failed, Some(Code::BadRequest));
    assert_eq!(resumes[1].failed, None);
    assert_eq!(
        text_in(seawall_stream::Provider::Gemini, &spliced.shown),
        "w1 w2 w3"
    );
}

/// A model that refused the layer's way of asking (a prefill, a last
/// `model` turn) refuses it in every answer: the service's clones remember
/// the refusal for the route and model, so a later interrupted answer asks
/// in a user turn from its first continuation, with no refused request and
/// no resume spent on it. Another model on the same route is still asked
/// as the layer is set to.
#[tokio::test]
async fn a_refused_way_of_asking_is_not_tried_again_by_later_answers() {
    for gemini in [false, true] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = seen.clone();
        let provider = service_fn(move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            let record = record.clone();
            async move {
                let (first, rest) = if gemini {
                    gemini_cut_and_rest()
                } else {
                    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
                    (anthropic_cut(), Bytes::from(rest))
                };
                if !req.body().is_continuation() {
                    return Ok::<_, BoxError>(stream(first));
                }
                let path = req.uri().path().to_owned();
                let body = req.into_body().collect().await?.to_bytes();
                let json: serde_json::Value = serde_json::from_slice(&body)?;
                let model = json["model"].as_str().unwrap_or(&path).to_owned();
                let turns = json.get("messages").or(json.get("contents")).unwrap();
                let last = turns.as_array().unwrap().last().unwrap()["role"].clone();
                record.lock().unwrap().push(last.clone());
                if model.contains("new") && last != "user" {
                    return Err(
                        Box::new(Failure::new(Code::BadRequest).with_status(400)) as BoxError
                    );
                }
                Ok(stream(vec![Ok(rest)]))
            }
        });
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new())
            .service(provider);
        let (format, own_turn) = if gemini {
            (seawall_stream::Provider::Gemini, "model")
        } else {
            (seawall_stream::Provider::Anthropic, "assistant")
        };
        for (model, roles) in [
            ("new", vec![own_turn, "user"]),
            // The second answer for the same model starts with the user turn.
            ("new", vec!["user"]),
            ("old", vec![own_turn]),
        ] {
            let request = if gemini {
                let body =
                    serde_json::json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
                http::Request::post(format!(
                    "http://api.example/v1beta/models/gemini-{model}:streamGenerateContent?alt=sse"
                ))
                .body(Full::new(Bytes::from(body.to_string())))
            } else {
                let body = serde_json::json!({"model": format!("claude-{model}"), "max_tokens": 100,
                    "stream": true, "messages": [{"role": "user", "content": "hi"}]});
                http::Request::post("http://api.example/v1/messages")
                    .body(Full::new(Bytes::from(body.to_string())))
            };
            let response = service.clone().oneshot(request.unwrap()).await.unwrap();
            let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
            let (shown, error) = read(response.into_body()).await;
            assert!(error.is_none(), "{gemini} {model}: {error:?}");
            assert_eq!(text_in(format, &shown), "w1 w2 w3", "{gemini} {model}");
            let asked: Vec<_> = std::mem::take(&mut *seen.lock().unwrap());
            assert_eq!(asked, roles, "{gemini} {model}");
            assert_eq!(resumed.report().resumes.len(), roles.len());
        }
    }
}

/// A 400 that the user turn gets too was about something else than the
/// way of asking (a request the model refuses whatever it ends with): it
/// is not remembered, and the next answer asks as the layer is set to.
#[tokio::test]
async fn a_400_the_user_turn_gets_too_teaches_nothing() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let provider = service_fn(move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
        let record = record.clone();
        async move {
            if !req.body().is_continuation() {
                return Ok::<_, BoxError>(stream(anthropic_cut()));
            }
            let body = req.into_body().collect().await?.to_bytes();
            let json: serde_json::Value = serde_json::from_slice(&body)?;
            let last = json["messages"].as_array().unwrap().last().unwrap()["role"].clone();
            record.lock().unwrap().push(last);
            Err(Box::new(Failure::new(Code::BadRequest).with_status(400)) as BoxError)
        }
    });
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(provider);
    for _ in 0..2 {
        let body = serde_json::json!({"model": "claude-x", "max_tokens": 100, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]});
        let request = http::Request::post("http://api.example/v1/messages")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        let (_, error) = read(response.into_body()).await;
        assert!(error.is_some(), "the interruption");
        let asked: Vec<_> = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(asked, ["assistant", "user"]);
    }
}

/// Who answers a continuation in [`only_the_requests_own_route_teaches_its_way_of_asking`].
#[derive(Clone, Copy, Debug)]
enum Answerer {
    /// The request's own route: an Anthropic model that refuses prefill.
    Own,
    /// A fallback route continuing its own request in `format`; it refuses
    /// a request ending with its model's own turn when `refuses`, and names
    /// its route in a receipt when `receipt`.
    Fallback {
        format: seawall_stream::Provider,
        refuses: bool,
        receipt: bool,
    },
}

/// A refusal on a fallback route is its own model's, and an answer from a
/// fallback route (another endpoint, another wire format) says nothing of
/// the request's own model: neither is remembered under the request's
/// route and model. Only the request's own route, refusing its prefill and
/// then answering the user turn, teaches later answers to start with the
/// user turn, and only for the caller's own format: a fallback's Gemini
/// `model` turn is asked as the layer is set to in every answer.
#[tokio::test]
async fn only_the_requests_own_route_teaches_its_way_of_asking() {
    use seawall_core::{Attempt, Receipt, RouteId};
    use seawall_resume::{AnsweredIn, Continuation};
    use seawall_stream::Provider;

    let fallback = |format, refuses, receipt| Answerer::Fallback {
        format,
        refuses,
        receipt,
    };
    let gemini_refusing = fallback(Provider::Gemini, true, false);
    let cases = [
        // A fallback's Gemini refusal, its route unnamed (read as the
        // request's own): the caller's own prefill is switched for the
        // request's model, never the fallback's `model` turn.
        (
            vec![gemini_refusing, Answerer::Own],
            vec![("gemini", "model"), ("own", "user")],
            vec![gemini_refusing, Answerer::Own],
            vec![("gemini", "model"), ("own", "user")],
        ),
        // A fallback route that names itself: its refusal teaches nothing.
        (
            vec![fallback(Provider::Gemini, true, true), Answerer::Own],
            vec![("gemini", "model"), ("own", "user")],
            vec![Answerer::Own, Answerer::Own],
            vec![("own", "assistant"), ("own", "user")],
        ),
        // The user turn answered by a fallback route of the same format.
        (
            vec![Answerer::Own, fallback(Provider::Anthropic, false, true)],
            vec![("own", "assistant"), ("anthropic", "user")],
            vec![Answerer::Own, Answerer::Own],
            vec![("own", "assistant"), ("own", "user")],
        ),
        // Answered by a route of another format that names no route.
        (
            vec![Answerer::Own, fallback(Provider::Gemini, false, false)],
            vec![("own", "assistant"), ("gemini", "model")],
            vec![Answerer::Own, Answerer::Own],
            vec![("own", "assistant"), ("own", "user")],
        ),
    ];
    for (n, (first, first_asked, second, second_asked)) in cases.into_iter().enumerate() {
        let script = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (next, record) = (script.clone(), seen.clone());
        let provider = service_fn(move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
            let (next, record) = (next.clone(), record.clone());
            async move {
                if !req.body().is_continuation() {
                    return Ok::<_, BoxError>(stream(anthropic_cut()));
                }
                let answerer = next
                    .lock()
                    .unwrap()
                    .pop_front()
                    .expect("a scripted answerer");
                let continuation = req.extensions().get::<Continuation>().cloned().unwrap();
                let anthropic_rest = || {
                    let rest = anthropic_continuation(" w3", &anthropic_end("end_turn"));
                    stream(vec![Ok(Bytes::from(rest))])
                };
                let route = RouteId::new("fallback.example:443");
                let receipt = |code| {
                    let mut receipt = Receipt::default();
                    receipt.push(Attempt::new(route.clone(), code, std::time::Duration::ZERO));
                    receipt
                };
                let refused = Failure::new(Code::BadRequest).with_status(400);
                match answerer {
                    Answerer::Own => {
                        let body = req.into_body().collect().await?.to_bytes();
                        let json: serde_json::Value = serde_json::from_slice(&body)?;
                        let last = &json["messages"].as_array().unwrap().last().unwrap()["role"];
                        record
                            .lock()
                            .unwrap()
                            .push(("own", last.as_str().unwrap().to_owned()));
                        if last == "assistant" {
                            return Err(Box::new(refused) as BoxError);
                        }
                        Ok(anthropic_rest())
                    }
                    Answerer::Fallback {
                        format,
                        refuses,
                        receipt: named,
                    } => {
                        let (template, turns) = if format == Provider::Gemini {
                            let body = serde_json::json!({"contents":
                                [{"role": "user", "parts": [{"text": "hi"}]}]});
                            (body, "contents")
                        } else {
                            let body = serde_json::json!({"model": "claude-other",
                                "max_tokens": 100, "stream": true,
                                "messages": [{"role": "user", "content": "hi"}]});
                            (body, "messages")
                        };
                        let body = continuation.body(format, &template)?;
                        let last = body[turns].as_array().unwrap().last().unwrap()["role"]
                            .as_str()
                            .unwrap()
                            .to_owned();
                        let own_turn = last != "user";
                        record.lock().unwrap().push((format.as_str(), last));
                        if refuses && own_turn {
                            let refused = if named {
                                refused.with_receipt(receipt(Some(Code::BadRequest)))
                            } else {
                                refused
                            };
                            return Err(Box::new(refused) as BoxError);
                        }
                        let mut response = if format == Provider::Gemini {
                            let mut response = stream(vec![Ok(gemini_cut_and_rest().1)]);
                            response.extensions_mut().insert(AnsweredIn(format));
                            response
                        } else {
                            anthropic_rest()
                        };
                        if named {
                            response.extensions_mut().insert(receipt(None));
                        }
                        Ok(response)
                    }
                }
            }
        });
        let service = ServiceBuilder::new()
            .layer(ResumeLayer::new())
            .service(provider);
        for (answerers, asked) in [(first, first_asked), (second, second_asked)] {
            *script.lock().unwrap() = answerers.into();
            let body = serde_json::json!({"model": "claude-new", "max_tokens": 100,
                "stream": true, "messages": [{"role": "user", "content": "hi"}]});
            let request = http::Request::post("http://api.example/v1/messages")
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap();
            let response = service.clone().oneshot(request).await.unwrap();
            let (shown, error) = read(response.into_body()).await;
            assert!(error.is_none(), "case {n}: {error:?}");
            assert_eq!(text_in(Provider::Anthropic, &shown), "w1 w2 w3", "case {n}");
            let seen: Vec<_> = std::mem::take(&mut *seen.lock().unwrap());
            let seen: Vec<_> = seen
                .iter()
                .map(|(who, role)| (*who, role.as_str()))
                .collect();
            assert_eq!(seen, asked, "case {n}");
            assert!(
                script.lock().unwrap().is_empty(),
                "case {n}: every answerer asked"
            );
        }
    }
}

/// A caller's `AnswerBy` bounds only the wait for the answer to begin:
/// a stream that began in time and is cut after it passed is continued
/// within the operation's deadline, and the continuation is held to that
/// deadline, not to the caller's spent wait.
#[tokio::test(start_paused = true)]
async fn a_stream_cut_after_the_callers_answer_by_is_resumed_within_the_operation() {
    use std::time::Duration;

    use seawall_core::{AnswerBy, Deadline};
    use seawall_deadline::DeadlineLayer;

    let start = tokio::time::Instant::now();
    let operation = Deadline::after(Duration::from_secs(60));
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let service = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(60)))
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let seen = seen.clone();
                async move {
                    let first = {
                        let mut calls = seen.lock().unwrap();
                        calls.push((Deadline::of(&req), AnswerBy::of(&req)));
                        calls.len() == 1
                    };
                    let items = if first {
                        // Content at 1 s, the connection lost 5 s later.
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        vec![
                            (Duration::ZERO, Ok(chunk("w1"))),
                            (Duration::ZERO, Ok(chunk(" w2"))),
                            (Duration::from_secs(5), Err(cut("w1 w2"))),
                        ]
                    } else {
                        let rest = format!(
                            "{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
                            String::from_utf8(chunk(" w3").to_vec()).unwrap()
                        );
                        vec![(Duration::ZERO, Ok(Bytes::from(rest)))]
                    };
                    Ok::<_, BoxError>(timed(items))
                }
            },
        ));
    let answer_by = Deadline::after(Duration::from_secs(3));
    let mut request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from(
            serde_json::json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        )))
        .unwrap();
    request.extensions_mut().insert(AnswerBy(answer_by));
    let response = service.oneshot(request).await.unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let (shown, error) = read(response.into_body()).await;

    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&shown), "w1 w2 w3", "each token once");
    assert_eq!(resumed.report().resumed(), 1);
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    let calls = calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [
            (Some(answer_by), Some(AnswerBy(answer_by))),
            (Some(operation), None),
        ],
        "the first attempt plans within the caller's wait, the continuation within the operation"
    );
}

/// An answer the layer only passes through keeps its exact length: a
/// server relaying it can send `Content-Length` instead of chunks.
#[tokio::test]
async fn a_passed_through_answer_keeps_its_exact_length() {
    let json = Bytes::from_static(b"{\"choices\":[]}");
    let length = json.len() as u64;
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let json = json.clone();
                async move {
                    Ok::<_, BoxError>(
                        http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(json))
                            .unwrap(),
                    )
                }
            },
        ));
    let request = http::Request::post("/v1/chat/completions")
        .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let hint = http_body::Body::size_hint(response.body());
    assert_eq!(hint.exact(), Some(length));
}

/// The first call streams "w1 w2" and is cut; the continuation answers
/// with what `rest` gives, a future that may never end. The caller reads
/// two frames, waits (on the paused clock) 60 s for a third that never
/// comes, then drops the body: gone while the continuation is in flight.
async fn dropped_while_resuming<F>(rest: impl Fn() -> F + Clone + Send + 'static) -> Resumed
where
    F: std::future::Future<Output = http::Response<http_body_util::StreamBody<Frames>>>
        + Send
        + 'static,
{
    use std::time::Duration;
    use tracing::Instrument;

    let calls = Arc::new(AtomicUsize::new(0));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                let rest = rest.clone();
                async move {
                    if first {
                        return Ok::<_, BoxError>(timed(vec![
                            (Duration::ZERO, Ok(chunk("w1"))),
                            (Duration::ZERO, Ok(chunk(" w2"))),
                            (Duration::ZERO, Err(cut("w1 w2"))),
                        ]));
                    }
                    Ok(rest().await)
                }
            },
        ));
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from(
            serde_json::json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        )))
        .unwrap();
    let response = service
        .oneshot(request)
        .instrument(tracing::info_span!("call"))
        .await
        .unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let mut body = Box::pin(response.into_body());
    let mut shown = Vec::new();
    for _ in 0..2 {
        let frame = body.frame().await.unwrap().unwrap();
        shown.extend_from_slice(&frame.into_data().unwrap());
    }
    assert_eq!(text_of(&shown), "w1 w2");
    let third = tokio::time::timeout(Duration::from_secs(60), body.frame()).await;
    assert!(third.is_err(), "nothing more comes: {:?}", third.ok());
    drop(body);
    resumed
}

/// A body dropped while its continuation was being called: the
/// continuation never answered, and its record says it was cancelled.
#[tokio::test(start_paused = true)]
async fn a_continuation_dropped_in_flight_is_cancelled_not_answered() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let resumed = dropped_while_resuming(|| async {
        std::future::pending::<()>().await;
        unreachable!("the continuation never answers")
    })
    .await;

    let report = resumed.report();
    assert_eq!(report.resumes.len(), 1, "{report:?}");
    let record = &report.resumes[0];
    assert_eq!(record.failed, Some(Code::Cancelled), "{report:?}");
    assert!(!record.spliced);
    assert_eq!(report.gave_up, Some("cancelled"));
    assert_eq!(report.resumed(), 0);
    let span = recorder.span("resume");
    assert_eq!(span.fields.get("error.type"), Some("cancelled"), "{span:?}");
    assert_eq!(span.fields.get("seawall.gave_up"), Some("cancelled"));
    assert!(
        !span.fields.has("otel.status_code"),
        "a caller who stops waiting broke nothing: {span:?}"
    );
    assert!(span.closed);
}

/// A body dropped once the continuation answered, before its first
/// content lined up: cancelled too, and the receipt of its answer kept.
#[tokio::test(start_paused = true)]
async fn a_continuation_dropped_before_it_lines_up_keeps_its_receipt() {
    let mut receipt = seawall_core::Receipt::default();
    receipt.fallback = true;
    let kept = receipt.clone();
    let resumed = dropped_while_resuming(move || {
        let receipt = receipt.clone();
        async move {
            // Its headers came, its body says nothing yet.
            let frames = futures_util::stream::pending();
            let mut response = http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(http_body_util::StreamBody::new(Box::pin(frames) as Frames))
                .unwrap();
            response.extensions_mut().insert(receipt);
            response
        }
    })
    .await;

    let report = resumed.report();
    assert_eq!(report.resumes.len(), 1, "{report:?}");
    let record = &report.resumes[0];
    assert_eq!(record.failed, Some(Code::Cancelled), "{report:?}");
    assert!(!record.spliced);
    assert_eq!(record.receipt, Some(kept), "the answer's receipt is kept");
    assert_eq!(report.gave_up, Some("cancelled"));
}

/// A body dropped right after the continuation's end marker (Rust OpenAI
/// clients stop reading at `[DONE]`): the answer finished, as the stream
/// guard judges that drop, and the record says its finish — on the
/// report and on the resume's span — never an answer left without one.
#[tokio::test(start_paused = true)]
async fn a_body_dropped_at_the_continuations_end_keeps_its_finish() {
    use futures_util::StreamExt;
    use std::time::Duration;
    use tracing::Instrument;

    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
    let calls = Arc::new(AtomicUsize::new(0));
    let guard =
        seawall_stream::StreamGuardLayer::interactive().idle_timeout(Duration::from_secs(5));
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .layer(guard)
        .service(service_fn(
            move |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| {
                let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                let frames: Vec<Bytes> = if first {
                    // Then nothing: the guard's idle bound cuts it.
                    vec![chunk("w1"), chunk(" w2")]
                } else {
                    vec![
                        chunk(" w3"),
                        Bytes::from_static(
                            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n",
                        ),
                        Bytes::from_static(b"data: [DONE]\n\n"),
                    ]
                };
                async move {
                    // The server keeps the connection open after its last frame.
                    let frames = futures_util::stream::iter(frames)
                        .map(|data| Ok(http_body::Frame::data(data)))
                        .chain(futures_util::stream::pending());
                    let response = http::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(http_body_util::StreamBody::new(Box::pin(frames) as Frames))
                        .unwrap();
                    Ok::<_, BoxError>(response)
                }
            },
        ));
    let request = http::Request::post("http://api.example/v1/chat/completions")
        .body(Full::new(Bytes::from(
            serde_json::json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        )))
        .unwrap();
    let response = service
        .oneshot(request)
        .instrument(tracing::info_span!("call"))
        .await
        .unwrap();
    let resumed = response.extensions().get::<Resumed>().cloned().unwrap();
    let mut body = Box::pin(response.into_body());
    let mut shown = Vec::new();
    while !shown.ends_with(b"data: [DONE]\n\n") {
        let frame = tokio::time::timeout(Duration::from_secs(60), body.frame())
            .await
            .expect("the continuation comes")
            .expect("the body has not ended")
            .expect("no error");
        shown.extend_from_slice(&frame.into_data().unwrap());
    }
    assert_eq!(text_of(&shown), "w1 w2 w3");
    drop(body);

    let report = resumed.report();
    assert_eq!(report.resumes.len(), 1, "{report:?}");
    assert!(report.resumes[0].spliced);
    assert_eq!(report.gave_up, None);
    let finish = report.finish.as_ref().expect("the answer's finish");
    assert_eq!(finish.reason.as_ref(), "stop");
    let span = recorder.span("resume");
    assert_eq!(
        span.fields.get("gen_ai.response.finish_reasons"),
        Some("stop"),
        "{span:?}"
    );
    assert_eq!(span.fields.get("gen_ai.usage.output_tokens"), Some("3"));
    assert!(!span.fields.has("error.type"), "{span:?}");
}
