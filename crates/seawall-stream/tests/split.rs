//! Any split of the same byte stream into frames — inside CRLF, inside
//! UTF-8 sequences, one byte at a time — yields the same events and the
//! same report.

mod common;

use bytes::Bytes;
use common::*;
use proptest::prelude::*;
use seawall_core::Code;
use seawall_stream::Provider;
use seawall_stream::StreamGuardLayer;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::Scanner;
use tower::{Layer, ServiceExt};

fn stream(finished: bool) -> String {
    let mut s = String::from("\u{FEFF}: hello\r\n\r\n");
    s.push_str(&OPENAI_ROLE.replace("\n\n", "\r\n\r\n"));
    for (i, text) in ["é", "日本語", "🦀 crab", "line\nbreak", "\"quoted\""]
        .iter()
        .enumerate()
    {
        let event = openai_delta(text);
        // Mix the three line ends.
        let event = match i % 3 {
            0 => event,
            1 => event.replace('\n', "\r\n"),
            _ => event.replace('\n', "\r"),
        };
        s.push_str(&event);
        s.push_str(":ping\n\n");
    }
    if finished {
        s.push_str(OPENAI_STOP);
        s.push_str(DONE);
    }
    s
}

fn frames(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<Bytes> {
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut at = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        out.push(Bytes::copy_from_slice(&bytes[at..cut]));
        at = cut;
    }
    out
}

/// What the scanner and decoder saw, as comparable values.
fn signals(frames: &[Bytes]) -> Vec<String> {
    let mut scanner = Scanner::default();
    let mut decoder = Decoder::new(Provider::OpenAi);
    let mut out = Vec::new();
    for frame in frames {
        scanner
            .feed(frame, |item| {
                out.push(match decoder.decode(item) {
                    Signal::Content { text, finish, .. } => format!("content {text:?} {finish:?}"),
                    other => format!("{other:?}"),
                })
            })
            .unwrap();
    }
    out
}

/// A current-thread runtime on tokio's paused clock.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

fn guarded(frames: Vec<Bytes>) -> Drained {
    paused_runtime().block_on(async {
        let script = frames.into_iter().map(send).collect();
        let response = call(StreamGuardLayer::interactive(), CHAT, scripted(script))
            .await
            .unwrap();
        drain(response).await
    })
}

/// As [`guarded`], the answer without a content type to a request that
/// asked for an event stream: the guard must see it open like one.
fn guarded_unlabelled(frames: Vec<Bytes>) -> Drained {
    paused_runtime().block_on(async {
        let mut body = Some(scripted(frames.into_iter().map(send).collect()));
        let provider = tower::service_fn(move |_req: http::Request<()>| {
            let body = body.take().expect("called once");
            async move { Ok::<_, std::convert::Infallible>(http::Response::new(body)) }
        });
        let mut request = request(CHAT);
        request.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("text/event-stream"),
        );
        let response = StreamGuardLayer::interactive()
            .layer(provider)
            .oneshot(request)
            .await
            .unwrap_or_else(|error| panic!("read as no stream: {error}"));
        drain(response).await
    })
}

fn same_outcome(a: &Drained, b: &Drained) {
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(
        a.error
            .as_ref()
            .map(|f| (f.code(), f.interrupted().cloned())),
        b.error
            .as_ref()
            .map(|f| (f.code(), f.interrupted().cloned()))
    );
    let (ra, rb) = (&a.report, &b.report);
    assert_eq!(
        (
            ra.code,
            &ra.finish,
            ra.content_events,
            ra.events,
            ra.keepalives,
            ra.bytes
        ),
        (
            rb.code,
            &rb.finish,
            rb.content_events,
            rb.events,
            rb.keepalives,
            rb.bytes
        )
    );
}

#[test]
fn reference_runs_are_what_they_should_be() {
    let whole = stream(true);
    let d = guarded(vec![Bytes::from(whole.clone())]);
    assert!(d.error.is_none());
    assert_eq!((d.report.content_events, d.report.keepalives), (5, 6));
    let cut = guarded(vec![Bytes::from(stream(false))]);
    let failure = cut.error.unwrap();
    assert_eq!(failure.code(), Code::Truncated);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some("é日本語🦀 crabline\nbreak\"quoted\"")
    );
    // Byte by byte.
    let bytes = whole.as_bytes();
    let one_by_one = frames(bytes, (1..bytes.len()).collect());
    same_outcome(&d, &guarded(one_by_one));
}

/// A byte order mark split across frames is read past as a whole one
/// (WHATWG's reader skips it): an answer without a content type that
/// opens with it, cut inside it at either byte, is the same stream.
#[test]
fn an_unlabelled_stream_opens_past_a_byte_order_mark_split_across_frames() {
    let text = stream(true);
    let bytes = text.as_bytes();
    assert!(bytes.starts_with(b"\xEF\xBB\xBF"));
    let whole = guarded(vec![Bytes::copy_from_slice(bytes)]);
    for cut in 0..=3 {
        let split = guarded_unlabelled(frames(bytes, vec![cut]));
        assert!(split.error.is_none(), "cut at {cut}: {:?}", split.error);
        same_outcome(&split, &whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_split_gives_the_same_events_and_report(
        finished in any::<bool>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let text = stream(finished);
        let bytes = text.as_bytes();
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len())).collect();
        let split = frames(bytes, cuts);
        let whole = vec![Bytes::copy_from_slice(bytes)];
        prop_assert_eq!(signals(&split), signals(&whole));
        same_outcome(&guarded(split), &guarded(whole));
    }
}
