//! seawall under a tonic channel against hostile or unusual gRPC servers.
//!
//! The servers here are hand-written HTTP/2 over loopback
//! (`seawall_test::raw_h2`): a few hundred bytes of framing (client
//! preface, SETTINGS, PING acks, HEADERS with a literal-only HPACK block,
//! DATA, RST_STREAM, GOAWAY) so a test can send exactly the frames a
//! broken server or proxy sends — a reset with a chosen error code, a
//! body that ends without trailers, a message cut in half — which neither
//! tonic's server nor hyper's lets one write. The client is tonic's
//! generated `HealthClient` over a `Channel` in the seawall stack,
//! as in `tests/tonic.rs`.
//!
//! Each test asserts what a demanding tonic user expects: a typed failure
//! with a stable seawall code, a retry when nothing reached the caller and
//! the failure is transient, no replay once a message did, never a hang,
//! never a panic.
#![cfg(feature = "tonic")]

mod common;

use common::grpc::{Mapped, Raw, ask, client, failure_of, service, serving, stack};
use seawall_test::proto::{bytes_field, status_with_detail, varint};
use seawall_test::raw_h2::{
    Act, CANCEL, ENHANCE_YOUR_CALM, INTERNAL_ERROR, NO_ERROR, REFUSED_STREAM, data, goaway,
    headers, reset, scripted_server,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use seawall::classify::ProviderClassifier;
use seawall::core::{Action, Attempt, Class, Code, Failure, Receipt};
use seawall::retry::RetryPolicy;
use seawall::stack::{Seawall, Stack};
use seawall::tonic::{GrpcStatus, GrpcStatusLayer};
use tonic::Status;
use tonic_health::pb::health_client::HealthClient;
use tower::Layer;

// ---------------------------------------------------------------------------
// The client side, as in tests/tonic.rs.
// ---------------------------------------------------------------------------

/// A stack with short bounds, for the servers that go quiet.
fn short_stack(attempt: Duration, total: Duration) -> Stack {
    stack().attempt_timeout(attempt).total_deadline(total)
}

/// No test may hang: every call is bounded far above what it should take.
const HANG: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(HANG, future)
        .await
        .expect("the call hung")
}

/// The seawall codes of each attempt in `receipt`.
fn codes(receipt: Option<&Receipt>) -> Vec<Option<Code>> {
    receipt
        .map(|receipt| receipt.attempts.iter().map(|a| a.code).collect())
        .unwrap_or_default()
}

/// One health check against `url` answers serving after one attempt that
/// failed with `first`: two calls reached the server. Returns whether the
/// receipt bills the failed attempt.
async fn answered_on_the_second_attempt(url: &str, calls: &AtomicUsize, first: Code) -> bool {
    first_attempt_of_two(url, calls, first).await.billed
}

/// As [`answered_on_the_second_attempt`]: the record of the first attempt.
async fn first_attempt_of_two(url: &str, calls: &AtomicUsize, first: Code) -> Attempt {
    let mut client = client(url, stack());
    let answer = bounded(client.check(ask()))
        .await
        .unwrap_or_else(|status| panic!("the retry answers: {status:?} {:?}", failure_of(&status)));
    let receipt = answer.extensions().get::<Receipt>().cloned();
    assert_eq!(codes(receipt.as_ref()), vec![Some(first), None]);
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let attempts: Vec<Attempt> = receipt.into_iter().flat_map(|r| r.attempts).collect();
    assert!(attempts[1].billed, "the answer is billed");
    attempts[0].clone()
}

/// One health check against `url` fails: the status tonic gives, after
/// exactly one call reached the server.
async fn fails_without_retry(url: &str, calls: &AtomicUsize) -> Status {
    let mut client = client(url, stack());
    let status = bounded(client.check(ask()))
        .await
        .expect_err("the call fails");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried: {status:?}");
    status
}

/// Watches `url`: the messages before the stream's end, and how it ended.
async fn watch_to_end(url: &str, stack: Stack) -> (usize, Result<(), Status>) {
    let mut client = client(url, stack);
    let stream = bounded(client.watch(ask()))
        .await
        .expect("the stream opens")
        .into_inner();
    read_to_end(stream).await
}

/// The messages of a watch before its end, and how it ended.
async fn read_to_end(
    mut stream: tonic::Streaming<tonic_health::pb::HealthCheckResponse>,
) -> (usize, Result<(), Status>) {
    let mut messages = 0;
    loop {
        match bounded(stream.message()).await {
            Ok(Some(message)) => {
                assert_eq!(message, serving());
                messages += 1;
            }
            Ok(None) => return (messages, Ok(())),
            Err(status) => return (messages, Err(status)),
        }
    }
}

/// [`watch_to_end`] with `GrpcStatusLayer` outermost.
async fn watch_through_the_layer(url: &str, stack: Stack) -> (usize, Result<(), Status>) {
    let stream = bounded(layered(url, stack).watch(ask()))
        .await
        .expect("the stream opens")
        .into_inner();
    read_to_end(stream).await
}

// ---------------------------------------------------------------------------
// gRPC answers from the hand-written HTTP/2 server (`seawall_test::raw_h2`).
// ---------------------------------------------------------------------------

/// A serving health status as one gRPC message: flag, length, protobuf.
const SERVING: &[u8] = b"\0\0\0\0\x02\x08\x01";

/// The response head of a gRPC answer: 200, `application/grpc`.
fn grpc_head(stream: u32) -> Act {
    grpc_head_with(stream, &[], false)
}

/// A gRPC answer's head (200, `application/grpc`) with `extra` fields,
/// ending the stream when `end`.
fn grpc_head_with(stream: u32, extra: &[(&str, &[u8])], end: bool) -> Act {
    let mut fields: Vec<(&str, &[u8])> =
        vec![(":status", b"200"), ("content-type", b"application/grpc")];
    fields.extend_from_slice(extra);
    headers(stream, &fields, end)
}

/// A trailers-only answer: 200, `application/grpc`, `grpc-status` and
/// `extra` in the one HEADERS frame that ends the stream.
fn trailers_only(stream: u32, status: &[u8], extra: &[(&str, &[u8])]) -> Act {
    let mut fields: Vec<(&str, &[u8])> = vec![("grpc-status", status)];
    fields.extend_from_slice(extra);
    grpc_head_with(stream, &fields, true)
}

/// Trailers with `grpc-status: status` and `extra`, ending the stream.
fn trailers(stream: u32, status: &[u8], extra: &[(&str, &[u8])]) -> Act {
    let mut fields: Vec<(&str, &[u8])> = vec![("grpc-status", status)];
    fields.extend_from_slice(extra);
    headers(stream, &fields, true)
}

/// A well-formed serving answer.
fn serve(stream: u32) -> Vec<Act> {
    vec![
        grpc_head(stream),
        data(stream, SERVING, false),
        trailers(stream, b"0", &[]),
    ]
}

/// A server whose first call does `first` and every later one serves.
async fn first_then_serving<F>(first: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(u32) -> Vec<Act> + Send + Sync + 'static,
{
    raw_server(move |stream, n| if n == 0 { first(stream) } else { serve(stream) }).await
}

/// A server that does `every` on every call.
async fn always<F>(every: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(u32) -> Vec<Act> + Send + Sync + 'static,
{
    raw_server(move |stream, _| every(stream)).await
}

/// [`scripted_server`], addressed as a tonic channel is.
async fn raw_server<F>(script: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(u32, usize) -> Vec<Act> + Send + Sync + 'static,
{
    let (addr, calls) = scripted_server(script).await;
    (format!("http://{addr}"), calls)
}

/// A moment for the frames before a reset to reach the client first.
const SETTLE: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------
// The server as the protocol says: the harness itself works.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_hand_written_server_answers_as_grpc() {
    let (url, calls) = always(serve).await;
    let mut client = client(&url, stack());
    for _ in 0..3 {
        let answer = bounded(client.check(ask())).await.expect("served");
        assert_eq!(answer.into_inner(), serving());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let (messages, end) = watch_to_end(&url, stack()).await;
    assert_eq!((messages, end.map_err(|s| s.code())), (1, Ok(())));
}

// ---------------------------------------------------------------------------
// No trailers at all.
// ---------------------------------------------------------------------------

/// Headers, then END_STREAM on the headers themselves, no `grpc-status`
/// anywhere: no answer, nothing delivered, retried.
#[tokio::test]
async fn headers_that_end_the_stream_without_a_status_are_retried() {
    let (url, calls) = first_then_serving(|stream| vec![grpc_head_with(stream, &[], true)]).await;
    answered_on_the_second_attempt(&url, &calls, Code::ProtocolViolation).await;
}

/// Headers, then the body ends with an empty DATA frame carrying
/// END_STREAM — how a server or proxy whose body just stops ends an HTTP/2
/// stream — with no message and no trailers. Nothing reached the caller:
/// it is the same missing status as above and must be retried.
#[tokio::test]
async fn a_body_that_ends_empty_without_trailers_is_retried() {
    let (url, calls) =
        first_then_serving(|stream| vec![grpc_head(stream), data(stream, b"", true)]).await;
    answered_on_the_second_attempt(&url, &calls, Code::ProtocolViolation).await;
}

/// A unary answer whose message arrives and whose body then ends without
/// trailers: the caller gets seawall's verdict (a stream interrupted by a
/// missing status), and the call is not replayed.
#[tokio::test]
async fn a_message_then_no_trailers_is_an_interruption_not_replayed() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            data(stream, SERVING, false),
            data(stream, b"", true),
        ]
    })
    .await;
    let status = fails_without_retry(&url, &calls).await;
    let failure = failure_of(&status).expect("seawall's verdict inside tonic's status");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().and_then(|i| i.cause),
        Some(Code::ProtocolViolation)
    );
    assert_eq!(failure.action(), Action::Surface);
}

/// A watch whose messages stop without trailers: the messages, then an
/// interruption — never a clean end, never a replay.
#[tokio::test]
async fn a_stream_that_ends_without_trailers_is_not_a_clean_end() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            data(stream, SERVING, false),
            data(stream, SERVING, false),
            data(stream, b"", true),
        ]
    })
    .await;
    let (messages, end) = watch_to_end(&url, stack()).await;
    assert_eq!(messages, 2);
    let status = end.expect_err("a stream without a status did not end cleanly");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// RST_STREAM(NO_ERROR) after messages: hyper reads it as the body's clean
/// end (RFC 9113 §8.1, an early response), but a gRPC answer without its
/// status is still cut short (tonic itself says `Unknown` of it).
#[tokio::test]
async fn a_no_error_reset_after_messages_is_an_interruption() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            data(stream, SERVING, false),
            Act::Sleep(SETTLE),
            reset(stream, NO_ERROR),
        ]
    })
    .await;
    let (messages, end) = watch_to_end(&url, stack()).await;
    assert_eq!(messages, 1);
    let status = end.expect_err("no status: not a clean end");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// Trailers-only answers.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn trailers_only_unavailable_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        vec![trailers_only(
            stream,
            b"14",
            &[("grpc-message", b"draining")],
        )]
    })
    .await;
    let billed = answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
    // HTTP said 200, but the server refused before generating anything.
    assert!(!billed, "a trailers-only refusal is not billed");
}

/// A trailers-only OK on a unary call: no message, so tonic says so
/// (`Internal`); the server said OK, so nothing is retried.
#[tokio::test]
async fn trailers_only_ok_on_a_unary_call_is_not_retried() {
    let (url, calls) = always(|stream| vec![trailers_only(stream, b"0", &[])]).await;
    let status = fails_without_retry(&url, &calls).await;
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
}

/// A trailers-only OK on a watch: an empty stream that ends cleanly.
#[tokio::test]
async fn trailers_only_ok_on_a_watch_is_an_empty_clean_stream() {
    let (url, calls) = always(|stream| vec![trailers_only(stream, b"0", &[])]).await;
    let (messages, end) = watch_to_end(&url, stack()).await;
    assert_eq!((messages, end.map_err(|s| s.code())), (0, Ok(())));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// Trailers right after the headers (no message) with UNAVAILABLE: the
/// usual shape behind proxies; retried.
#[tokio::test]
async fn unavailable_in_trailers_before_any_message_is_retried() {
    let (url, calls) =
        first_then_serving(|stream| vec![grpc_head(stream), trailers(stream, b"14", &[])]).await;
    let billed = answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
    assert!(!billed, "no message before the status: nothing billed");
}

// ---------------------------------------------------------------------------
// grpc-status values that are not codes.
// ---------------------------------------------------------------------------

/// `grpc-status: abc`, `99`, `-1`, in the headers (trailers-only) and in
/// the trailers: read as UNKNOWN (as tonic reads them), permanent, never
/// retried, a seawall failure the caller can find.
#[tokio::test]
async fn an_unreadable_grpc_status_is_unknown_and_not_retried() {
    for value in [&b"abc"[..], b"99", b"-1"] {
        for in_trailers in [false, true] {
            let (url, calls) = first_then_serving(move |stream| {
                if in_trailers {
                    vec![grpc_head(stream), trailers(stream, value, &[])]
                } else {
                    vec![trailers_only(stream, value, &[])]
                }
            })
            .await;
            let status = fails_without_retry(&url, &calls).await;
            let failure = failure_of(&status).expect("seawall's verdict");
            let value = String::from_utf8_lossy(value);
            assert_eq!(failure.code(), Code::Unknown, "{value} {in_trailers}");
            assert_eq!(failure.class(), Class::Permanent, "{value}");
        }
    }
}

/// `grpc-status: 14` in the headers, then a message and `grpc-status: 0`
/// in trailers (a broken server). tonic takes the headers' status and
/// never reads the body; seawall does the same: UNAVAILABLE before any
/// message was read, retried.
#[tokio::test]
async fn a_failing_status_in_the_headers_wins_over_ok_trailers() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head_with(stream, &[("grpc-status", b"14")], false),
            data(stream, SERVING, false),
            trailers(stream, b"0", &[]),
        ]
    })
    .await;
    answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
}

/// `grpc-status: 0` in the headers, then a message and `grpc-status: 14`
/// in the trailers (a broken server). tonic reads an OK head as
/// trailers-only: it still decodes the body's message but never reads the
/// trailers, so the call answers. seawall hands such an answer on unjudged
/// (`head_has_status`), so the caller sees what tonic alone shows, and
/// nothing is replayed.
#[tokio::test]
async fn an_ok_status_in_the_headers_is_tonics_answer_whatever_the_trailers_say() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head_with(stream, &[("grpc-status", b"0")], false),
            data(stream, SERVING, false),
            trailers(stream, b"14", &[]),
        ]
    })
    .await;
    let mut client = client(&url, stack());
    let answer = bounded(client.check(ask()))
        .await
        .expect("tonic's reading: OK");
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// Messages framed wrong.
// ---------------------------------------------------------------------------

/// A length prefix that promises more than the body holds, then an OK
/// status: no whole message reached the caller (tonic could only fail the
/// decode), so the answer is broken before content — `protocol_violation`
/// — and retried.
#[tokio::test]
async fn a_message_shorter_than_its_prefix_under_ok_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            data(stream, b"\0\0\0\0\x09\x08\x01", false),
            trailers(stream, b"0", &[]),
        ]
    })
    .await;
    let billed = answered_on_the_second_attempt(&url, &calls, Code::ProtocolViolation).await;
    // The server said OK of what it sent: a broken answer, billed as a
    // broken 200 over HTTP is.
    assert!(billed, "a broken answer under OK is billed");
}

/// Half a first message, then UNAVAILABLE in the trailers: no message
/// reached the caller (tonic cannot decode half of one), so this is the
/// same as UNAVAILABLE before any message, and is retried. README: the
/// answer "is held back for its first message".
#[tokio::test]
async fn half_a_first_message_then_unavailable_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            data(stream, &SERVING[..3], false),
            Act::Sleep(SETTLE),
            trailers(stream, b"14", &[]),
        ]
    })
    .await;
    let billed = answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
    assert!(
        !billed,
        "no whole message before the status: nothing billed"
    );
}

/// A serving health status padded with an unknown field (number 15, which
/// the decoder skips) to 40 KB: one gRPC message that HTTP/2 carries in
/// three DATA frames (16 KiB each at most), as any answer over 16 KiB is.
fn big_serving() -> Vec<u8> {
    let mut message = vec![0x08, 0x01];
    bytes_field(15, &[0; 40_000], &mut message);
    let mut framed = vec![0];
    framed.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    framed.extend_from_slice(&message);
    framed
}

/// `big_serving` in DATA frames of 16,000 bytes.
fn big_serving_frames(stream: u32) -> Vec<Act> {
    big_serving()
        .chunks(16_000)
        .map(|chunk| data(stream, chunk, false))
        .collect()
}

#[tokio::test]
async fn a_message_over_several_frames_is_read_whole() {
    let (url, calls) = always(|stream| {
        let mut acts = vec![grpc_head(stream)];
        acts.extend(big_serving_frames(stream));
        acts.push(trailers(stream, b"0", &[]));
        acts
    })
    .await;
    let mut client = client(&url, stack());
    let answer = bounded(client.check(ask())).await.expect("served");
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// The same message cut by a reset after two of its three frames: the
/// answer is held until the message is whole, so the reset is still one
/// before any message, retried.
#[tokio::test]
async fn a_reset_before_the_last_frame_of_the_first_message_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        let mut acts = vec![grpc_head(stream)];
        let frames = big_serving_frames(stream);
        assert_eq!(frames.len(), 3);
        acts.extend(frames.into_iter().take(2));
        acts.push(Act::Sleep(SETTLE));
        acts.push(reset(stream, INTERNAL_ERROR));
        acts
    })
    .await;
    answered_on_the_second_attempt(&url, &calls, Code::Transport).await;
}

/// A 40 KB first message cut by a reset after its first DATA frame:
/// nothing reached the caller (tonic cannot decode a third of a message),
/// so the reset is a broken stream before any message, retried like one
/// (`tests/tonic.rs`, `a_reset_before_any_message_is_retried`).
#[tokio::test]
async fn a_reset_inside_the_first_message_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        let mut acts = vec![grpc_head(stream)];
        acts.extend(big_serving_frames(stream).into_iter().take(1));
        acts.extend([Act::Sleep(SETTLE), reset(stream, INTERNAL_ERROR)]);
        acts
    })
    .await;
    answered_on_the_second_attempt(&url, &calls, Code::Transport).await;
}

/// Half a first message, then silence: the attempt's bound should end it
/// (nothing delivered) and the next attempt answer — not the operation's
/// deadline, seconds later, with nothing retried.
#[tokio::test]
async fn half_a_first_message_then_silence_is_bounded_by_the_attempt() {
    let (url, calls) =
        first_then_serving(|stream| vec![grpc_head(stream), data(stream, &SERVING[..3], false)])
            .await;
    let mut client = client(
        &url,
        short_stack(Duration::from_millis(300), Duration::from_secs(4)),
    );
    let started = tokio::time::Instant::now();
    let answer = bounded(client.check(ask())).await;
    let elapsed = started.elapsed();
    let answer = answer.unwrap_or_else(|status| {
        panic!(
            "after {elapsed:?}: {status:?} {:?}",
            failure_of(&status).map(Failure::code)
        )
    });
    assert_eq!(answer.into_inner(), serving());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

/// Compressed-flag 1 without `grpc-encoding`: tonic refuses the message
/// (`Internal`, as the gRPC spec says), once.
#[tokio::test]
async fn a_compressed_flag_without_an_encoding_is_refused_once() {
    let (url, calls) = always(|stream| {
        vec![
            grpc_head(stream),
            data(stream, b"\x01\0\0\0\x02\x08\x01", false),
            trailers(stream, b"0", &[]),
        ]
    })
    .await;
    let status = fails_without_retry(&url, &calls).await;
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert!(status.message().contains("compressed-flag"), "{status:?}");
}

/// A prefix announcing 64 MiB, past tonic's 4 MiB decode limit, and the
/// stream then left open: tonic refuses it at the prefix (`OutOfRange`),
/// at once, without waiting for the bytes, and once.
#[tokio::test]
async fn a_message_past_the_decode_limit_is_refused_at_its_prefix() {
    // 64 MiB, and 5 MiB: past tonic's default 4 MiB limit, so past the
    // hold too (a hold to the classifier's 8 MiB check cap waited for all
    // of the second until every attempt timed out).
    for prefix in [b"\0\x04\0\0\0", b"\0\0\x50\0\0"] {
        let (url, calls) = always(move |stream| {
            let mut first = prefix.to_vec();
            first.extend_from_slice(b"\x08\x01");
            vec![grpc_head(stream), data(stream, &first, false)]
        })
        .await;
        let started = tokio::time::Instant::now();
        let status = fails_without_retry(&url, &calls).await;
        assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

/// A gRPC answer with `content-encoding: gzip` whose body is not gzip (a
/// proxy that labels what it did not compress). The stack's decompression
/// layer fails the read before any message: nothing reached the caller,
/// and a 2xx answer broken while read is the answer's fault —
/// `protocol_violation`, retried, as on the HTTP paths (future.rs,
/// `SuccessRead::Failed`) — not `unknown`, permanent.
#[tokio::test]
async fn a_body_that_is_not_its_content_encoding_is_retried() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head_with(stream, &[("content-encoding", b"gzip")], false),
            data(stream, SERVING, false),
            trailers(stream, b"0", &[]),
        ]
    })
    .await;
    answered_on_the_second_attempt(&url, &calls, Code::ProtocolViolation).await;
}

// ---------------------------------------------------------------------------
// Resets and GOAWAY.
// ---------------------------------------------------------------------------

/// RST_STREAM(REFUSED_STREAM) before any headers: the server says it
/// never processed the request (RFC 9113 §8.7): retried.
#[tokio::test]
async fn refused_stream_before_headers_is_retried() {
    let (url, calls) = first_then_serving(|stream| vec![reset(stream, REFUSED_STREAM)]).await;
    let first = first_attempt_of_two(&url, &calls, Code::Transport).await;
    // Unprocessed: neither billed nor possibly billed.
    assert!(!first.billed && !first.may_be_billed(), "{first:?}");
}

/// RST_STREAM(CANCEL) and RST_STREAM(INTERNAL_ERROR) before any headers:
/// a broken stream before anything was delivered, a transport failure
/// retried as seawall retries any reset before a message.
#[tokio::test]
async fn cancel_or_internal_error_before_headers_is_a_transport_failure_retried() {
    for code in [CANCEL, INTERNAL_ERROR] {
        let (url, calls) = first_then_serving(move |stream| vec![reset(stream, code)]).await;
        let first = first_attempt_of_two(&url, &calls, Code::Transport).await;
        // The whole request reached the server, which may have acted on
        // it before the reset: possibly billed.
        assert!(!first.billed && first.may_be_billed(), "{first:?}");
    }
}

/// The same resets after the headers, before any message.
#[tokio::test]
async fn a_reset_after_headers_before_a_message_is_retried() {
    for code in [REFUSED_STREAM, CANCEL, INTERNAL_ERROR] {
        let (url, calls) = first_then_serving(move |stream| {
            vec![grpc_head(stream), Act::Sleep(SETTLE), reset(stream, code)]
        })
        .await;
        answered_on_the_second_attempt(&url, &calls, Code::Transport).await;
    }
}

/// Any reset after a message: an interruption by a transport failure,
/// surfaced, never replayed — REFUSED_STREAM included (the server has
/// plainly processed a request it answered). Through `GrpcStatusLayer` the
/// caller's status has the code tonic gives the reset's reason, never
/// `Unavailable` (gRPC's "safe to retry": a caller's own retry would
/// replay a delivered stream); seawall's verdict is its source.
#[tokio::test]
async fn a_reset_after_a_message_is_never_replayed() {
    for (code, expected, cause) in [
        (REFUSED_STREAM, tonic::Code::Unknown, Code::Transport),
        (CANCEL, tonic::Code::Cancelled, Code::Transport),
        (INTERNAL_ERROR, tonic::Code::Internal, Code::Transport),
        // The server sheds this client's load: a rate limit.
        (
            ENHANCE_YOUR_CALM,
            tonic::Code::ResourceExhausted,
            Code::RateLimited,
        ),
    ] {
        let (url, calls) = first_then_serving(move |stream| {
            vec![
                grpc_head(stream),
                data(stream, SERVING, false),
                Act::Sleep(SETTLE),
                reset(stream, code),
            ]
        })
        .await;
        let (messages, end) = watch_through_the_layer(&url, stack()).await;
        assert_eq!(messages, 1, "{code}");
        let status = end.expect_err("a reset is no clean end");
        assert_eq!(status.code(), expected, "{code}: {status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{code}");
        assert_eq!(
            failure.interrupted().and_then(|i| i.cause),
            Some(cause),
            "{code}"
        );
        assert_eq!(failure.action(), Action::Surface);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{code}: never replayed");
    }
}

/// GOAWAY naming stream 0 as the last processed, sent when the request
/// arrives, then the connection closed: the request was never processed;
/// the call is retried on a new connection (a graceful GOAWAY or one with
/// an error code alike).
#[tokio::test]
async fn goaway_before_headers_is_retried_on_a_new_connection() {
    // ENHANCE_YOUR_CALM: the server sheds this client's load, a rate
    // limit (retried after the backoff).
    for (code, failed) in [
        (NO_ERROR, Code::Transport),
        (ENHANCE_YOUR_CALM, Code::RateLimited),
    ] {
        let (url, calls) =
            first_then_serving(move |_| vec![goaway(0, code), Act::Sleep(SETTLE), Act::Close])
                .await;
        let mut client = client(&url, stack());
        let answer = bounded(client.check(ask())).await.unwrap_or_else(|status| {
            panic!(
                "{code}: the retry answers: {status:?} {:?}",
                failure_of(&status)
            )
        });
        assert_eq!(answer.get_ref(), &serving());
        assert_eq!(calls.load(Ordering::SeqCst), 2, "{code}");
        let codes = codes(answer.extensions().get::<Receipt>());
        assert_eq!(codes.last(), Some(&None), "{codes:?}");
        assert!(
            codes[..codes.len() - 1].iter().all(|c| *c == Some(failed)),
            "{code}: {codes:?}"
        );
    }
}

/// The ladder was retried (two attempts or more), every attempt failed
/// with `code`, and each was a call the server saw.
fn every_attempt_failed(failure: &Failure, code: Code, calls: &AtomicUsize) {
    let receipt = failure.receipt().expect("a receipt");
    assert!(receipt.attempts.len() >= 2, "retried: {receipt:?}");
    assert!(
        receipt
            .attempts
            .iter()
            .all(|attempt| attempt.code == Some(code)),
        "{code}: {receipt:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), receipt.attempts.len());
}

/// A server that refuses every stream: the ladder stops (its attempts or
/// the deadline), every attempt a transport failure, no hang.
#[tokio::test]
async fn a_server_that_refuses_every_stream_ends_the_ladder() {
    let (url, calls) = always(|stream| vec![reset(stream, REFUSED_STREAM)]).await;
    let mut client = client(&url, stack());
    let status = bounded(client.check(ask())).await.expect_err("refused");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::Transport, "{failure:?}");
    every_attempt_failed(failure, Code::Transport, &calls);
}

// ---------------------------------------------------------------------------
// Resets through `GrpcStatusLayer`: the code tonic itself gives them.
// ---------------------------------------------------------------------------

/// tonic's client over `GrpcStatusLayer` over the seawall-wrapped channel.
fn layered(
    url: &str,
    stack: Stack,
) -> HealthClient<GrpcStatus<Seawall<Mapped, ProviderClassifier>>> {
    HealthClient::new(GrpcStatusLayer::new().layer(service(url, stack)))
}

/// After a message nothing seawall reads is `Unavailable`: a
/// REFUSED_STREAM (tonic's `Unavailable`, "nothing was processed") from a
/// server that plainly answered, a connection lost mid-stream. Either is
/// `Unknown`, what tonic says of a stream cut without a status.
#[tokio::test]
async fn after_a_message_a_reset_or_a_lost_connection_is_never_unavailable() {
    type Cut = fn(u32) -> Act;
    let cuts: [(&str, Cut); 2] = [
        ("REFUSED_STREAM", |stream| reset(stream, REFUSED_STREAM)),
        ("closed", |_| Act::Close),
    ];
    for (what, cut) in cuts {
        let (url, calls) = first_then_serving(move |stream| {
            vec![
                grpc_head(stream),
                data(stream, SERVING, false),
                Act::Sleep(SETTLE),
                cut(stream),
            ]
        })
        .await;
        let (messages, end) = watch_through_the_layer(&url, stack()).await;
        assert_eq!(messages, 1, "{what}");
        let status = end.expect_err("no clean end");
        assert_eq!(status.code(), tonic::Code::Unknown, "{what}: {status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::StreamInterrupted, "{what}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{what}: never replayed");
    }
}

/// Resets before any message, on every attempt, through
/// `GrpcStatusLayer`: seawall retries each as the `transport` failure it
/// is (ENHANCE_YOUR_CALM as the `rate_limited` one: the server sheds this
/// client's load), and the caller gets the code tonic gives
/// the last reset's reason — REFUSED_STREAM still `Unavailable`, the
/// server having processed nothing.
#[tokio::test]
async fn a_reset_before_any_message_has_the_code_tonic_gives_its_reason() {
    for (code, expected, failed) in [
        (REFUSED_STREAM, tonic::Code::Unavailable, Code::Transport),
        (INTERNAL_ERROR, tonic::Code::Internal, Code::Transport),
        (CANCEL, tonic::Code::Cancelled, Code::Transport),
        // The server sheds this client's load: a rate limit, retried.
        (
            ENHANCE_YOUR_CALM,
            tonic::Code::ResourceExhausted,
            Code::RateLimited,
        ),
    ] {
        let (url, calls) = always(move |stream| vec![reset(stream, code)]).await;
        let mut client = layered(&url, stack());
        let status = bounded(client.check(ask())).await.expect_err("reset");
        assert_eq!(status.code(), expected, "{code}: {status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), failed, "{code}");
        every_attempt_failed(failure, failed, &calls);
    }
}

/// The same, the reset after the headers: a unary call's answer is held
/// until its message is whole, so this is still a reset before any message.
#[tokio::test]
async fn a_reset_after_headers_has_the_code_tonic_gives_its_reason() {
    for (code, expected) in [
        (REFUSED_STREAM, tonic::Code::Unavailable),
        (INTERNAL_ERROR, tonic::Code::Internal),
    ] {
        let (url, _) =
            always(move |stream| vec![grpc_head(stream), Act::Sleep(SETTLE), reset(stream, code)])
                .await;
        let stack = stack().retry_policy(RetryPolicy::interactive().max_attempts(1));
        let status = bounded(layered(&url, stack).check(ask()))
            .await
            .expect_err("reset");
        assert_eq!(status.code(), expected, "{code}: {status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::Transport, "{code}");
    }
}

// ---------------------------------------------------------------------------
// A proxy's own answers: HTTP errors without gRPC headers.
// ---------------------------------------------------------------------------

/// An HTTP error without any gRPC header, a proxy's page as its body.
fn proxy_error(stream: u32, status: &'static [u8], retry_after: Option<&'static [u8]>) -> Vec<Act> {
    let mut fields: Vec<(&str, &[u8])> = vec![(":status", status), ("content-type", b"text/html")];
    if let Some(after) = retry_after {
        fields.push(("retry-after", after));
    }
    vec![
        headers(stream, &fields, false),
        data(stream, b"<html>upstream unavailable</html>", true),
    ]
}

#[tokio::test]
async fn a_proxys_502_or_503_is_retried() {
    for status in [&b"502"[..], b"503"] {
        let (url, calls) =
            first_then_serving(move |stream| proxy_error(stream, status, None)).await;
        answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
    }
}

/// A proxy's 403 (a gateway's policy on this method, a firewall's on this
/// payload): `PERMISSION_DENIED` for this call, as gRPC and tonic read it,
/// refused at once and not retried — and the route left open: the next
/// call goes out and is served. Read as HTTP's `auth`, the breaker closed
/// the route for good.
#[tokio::test]
async fn a_proxys_403_is_this_calls_refusal_and_leaves_the_route_open() {
    let (url, calls) = first_then_serving(|stream| proxy_error(stream, b"403", None)).await;
    let mut client = HealthClient::new(GrpcStatusLayer::new().layer(service(&url, stack())));
    let status = bounded(client.check(ask())).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::BadRequest, "{failure:?}");
    assert_eq!(failure.status(), Some(403));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    let answer = bounded(client.check(ask()))
        .await
        .expect("the route is open");
    assert_eq!(answer.get_ref(), &serving());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// A proxy's 429 with `Retry-After: 1`: waited for, then retried.
#[tokio::test]
async fn a_proxys_429_with_retry_after_is_waited_for() {
    let (url, calls) = first_then_serving(|stream| proxy_error(stream, b"429", Some(b"1"))).await;
    let started = tokio::time::Instant::now();
    answered_on_the_second_attempt(&url, &calls, Code::RateLimited).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1),
        "Retry-After honoured: {elapsed:?}"
    );
}

/// A proxy's 503 with `Retry-After: 3600`, past the operation's deadline:
/// surfaced at once with the hint, not slept on; under
/// `GrpcStatusLayer`, tonic's own reading of a 503, `Unavailable`.
#[tokio::test]
async fn a_proxys_503_with_a_long_retry_after_is_surfaced_at_once() {
    let (url, calls) = always(|stream| proxy_error(stream, b"503", Some(b"3600"))).await;
    let mut client = HealthClient::new(GrpcStatusLayer::new().layer(service(&url, stack())));
    let started = tokio::time::Instant::now();
    let status = bounded(client.check(ask())).await.expect_err("surfaced");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    assert_eq!(failure.status(), Some(503));
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// grpc-retry-pushback-ms.
// ---------------------------------------------------------------------------

/// Negative or unparseable pushback on UNAVAILABLE: the server asks not to
/// be retried (gRFC A6): one call, surfaced.
#[tokio::test]
async fn a_negative_or_garbage_pushback_stops_the_retry() {
    for pushback in [&b"-1"[..], b"soon", b"1.5", b""] {
        let (url, calls) = first_then_serving(move |stream| {
            vec![trailers_only(
                stream,
                b"14",
                &[("grpc-retry-pushback-ms", pushback)],
            )]
        })
        .await;
        let status = fails_without_retry(&url, &calls).await;
        let failure = failure_of(&status).expect("seawall's verdict");
        let shown = String::from_utf8_lossy(pushback);
        assert_eq!(failure.code(), Code::ProviderUnavailable, "{shown}");
        assert_eq!(failure.action(), Action::Surface, "{shown}");
    }
}

/// A huge pushback (more digits than any integer holds): past the
/// deadline, surfaced at once, not slept on and not overflowed.
#[tokio::test]
async fn a_huge_pushback_is_surfaced_at_once() {
    for pushback in [&b"86400000"[..], b"99999999999999999999999999999"] {
        let (url, calls) = first_then_serving(move |stream| {
            vec![trailers_only(
                stream,
                b"14",
                &[("grpc-retry-pushback-ms", pushback)],
            )]
        })
        .await;
        let started = tokio::time::Instant::now();
        let status = fails_without_retry(&url, &calls).await;
        assert!(started.elapsed() < Duration::from_secs(2));
        let failure = failure_of(&status).expect("seawall's verdict");
        assert_eq!(failure.code(), Code::ProviderUnavailable);
        assert!(
            failure.retry_after() >= Some(Duration::from_secs(86_400)),
            "{failure:?}"
        );
    }
}

/// A short pushback in the trailers (after headers, no message) is
/// honoured like one in the headers.
#[tokio::test]
async fn a_short_pushback_in_trailers_is_waited_for() {
    let (url, calls) = first_then_serving(|stream| {
        vec![
            grpc_head(stream),
            trailers(stream, b"14", &[("grpc-retry-pushback-ms", b"400")]),
        ]
    })
    .await;
    let started = tokio::time::Instant::now();
    answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;
    assert!(started.elapsed() >= Duration::from_millis(400));
}

// ---------------------------------------------------------------------------
// grpc-status-details-bin.
// ---------------------------------------------------------------------------

/// A `google.rpc.Status` (code 8) whose one detail is a `RetryInfo` with
/// `retry_info` as its value.
fn status_with_retry_info(retry_info: &[u8]) -> Vec<u8> {
    let type_url = b"type.googleapis.com/google.rpc.RetryInfo";
    status_with_detail(8, b"slow down", type_url, retry_info)
}

fn base64(bytes: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    out
}

/// RESOURCE_EXHAUSTED whose `RetryInfo` is malformed — a truncated
/// duration, nanos out of range, a negative delay, bytes that are no
/// protobuf, details that are not base64: no hint, so a rate limit retried
/// after the ladder's own backoff; no panic, no wait for a bogus delay.
#[tokio::test]
async fn malformed_retry_info_is_no_hint_and_is_retried() {
    let mut duration_nanos_out_of_range = Vec::new();
    varint(2 << 3, &mut duration_nanos_out_of_range);
    varint(5_000_000_000, &mut duration_nanos_out_of_range);
    let mut nanos = Vec::new();
    bytes_field(1, &duration_nanos_out_of_range, &mut nanos);
    let mut negative_seconds = Vec::new();
    varint(1 << 3, &mut negative_seconds);
    varint(u64::MAX, &mut negative_seconds);
    let mut negative = Vec::new();
    bytes_field(1, &negative_seconds, &mut negative);
    // A duration field whose length runs past the end.
    let truncated = vec![0x0a, 0x10, 0x08, 0x05];
    let garbage = vec![0xff; 12];
    let cases: Vec<Vec<u8>> = vec![
        base64(&status_with_retry_info(&truncated)),
        base64(&status_with_retry_info(&nanos)),
        base64(&status_with_retry_info(&negative)),
        base64(&status_with_retry_info(&garbage)),
        base64(&[0xff; 7]),
        b"!!not base64!!".to_vec(),
    ];
    for details in cases {
        let shown = String::from_utf8_lossy(&details).into_owned();
        let (url, calls) = first_then_serving(move |stream| {
            vec![trailers_only(
                stream,
                b"8",
                &[("grpc-status-details-bin", &details)],
            )]
        })
        .await;
        let started = tokio::time::Instant::now();
        answered_on_the_second_attempt(&url, &calls, Code::RateLimited).await;
        assert!(started.elapsed() < Duration::from_secs(2), "{shown}");
    }
}

/// The same malformed details under `GrpcStatusLayer`, the server failing
/// every time: the caller's status has the server's code, and the details
/// as sent when they were base64 (none when they were not) — no panic in
/// tonic's own base64 reading, which `expect`s.
#[tokio::test]
async fn malformed_details_reach_the_caller_without_a_panic() {
    let truncated = status_with_retry_info(&[0x0a, 0x10, 0x08, 0x05]);
    for (sent, kept) in [
        (base64(&truncated), Some(truncated.clone())),
        (b"!!not base64!!".to_vec(), None),
    ] {
        let (url, _) = always(move |stream| {
            vec![trailers_only(
                stream,
                b"8",
                &[("grpc-status-details-bin", &sent)],
            )]
        })
        .await;
        let stack = stack().retry_policy(RetryPolicy::interactive().max_attempts(1));
        let mut client = HealthClient::new(GrpcStatusLayer::new().layer(service(&url, stack)));
        let status = bounded(client.check(ask())).await.expect_err("exhausted");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
        assert_eq!(
            (!status.details().is_empty()).then(|| status.details().to_vec()),
            kept
        );
    }
}

/// OK trailers whose details use the URL-safe alphabet with padding
/// spaced out: readable to seawall, not to tonic, so they are written
/// again in the standard alphabet and the answer arrives.
#[tokio::test]
async fn ok_trailers_with_url_safe_details_are_written_again() {
    let details = status_with_retry_info(&[0x08, 0x01]);
    let url_safe: Vec<u8> = base64(&details)
        .into_iter()
        .map(|b| match b {
            b'+' => b'-',
            b'/' => b'_',
            b => b,
        })
        .chain(*b" ")
        .collect();
    let (url, _) = always(move |stream| {
        vec![
            grpc_head(stream),
            data(stream, SERVING, false),
            trailers(stream, b"0", &[("grpc-status-details-bin", &url_safe)]),
        ]
    })
    .await;
    let mut client = client(&url, stack());
    let answer = bounded(client.check(ask())).await.expect("the answer");
    assert_eq!(answer.into_inner(), serving());
}

/// `grpc-status: 0` with details that are not base64, in the trailers
/// after a message. tonic's `Status::from_header_map` `expect`s the
/// details to be base64 and panics in the caller's task; seawall reads the
/// trailers first and drops details tonic cannot take (the status stays):
/// the answer arrives.
#[tokio::test]
async fn ok_trailers_with_details_that_are_not_base64_do_not_panic() {
    let (url, _) = always(|stream| {
        vec![
            grpc_head(stream),
            data(stream, SERVING, false),
            trailers(
                stream,
                b"0",
                &[("grpc-status-details-bin", b"!!not base64!!")],
            ),
        ]
    })
    .await;
    let mut client = client(&url, stack());
    let call = tokio::spawn(async move { client.check(ask()).await.map(|r| r.into_inner()) });
    let joined = bounded(call).await;
    assert!(joined.is_ok(), "the caller's task panicked: {joined:?}");
    assert_eq!(joined.unwrap().expect("the answer"), serving());
}

/// A trailers-only answer (status in the headers, no body) saying OK with
/// details that are not base64: tonic would panic reading that head (in
/// this test's task), so the details are dropped, as in trailers, and the
/// answer the server completed reaches tonic once, not asked for again.
/// tonic reads it as any trailers-only OK: on a unary call `Internal` (no
/// message) with no seawall failure inside, on a watch an empty stream
/// that ends cleanly.
#[tokio::test]
async fn a_trailers_only_ok_with_details_that_are_not_base64_is_delivered_once_without_them() {
    let (url, calls) = always(|stream| {
        vec![trailers_only(
            stream,
            b"0",
            &[("grpc-status-details-bin", b"!!not base64!!")],
        )]
    })
    .await;
    let status = fails_without_retry(&url, &calls).await;
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert!(failure_of(&status).is_none(), "{status:?}");
    let (messages, end) = watch_to_end(&url, stack()).await;
    assert_eq!((messages, end.map_err(|s| s.code())), (0, Ok(())));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the watch asked once");
}

// ---------------------------------------------------------------------------
// Servers that go quiet.
// ---------------------------------------------------------------------------

/// Headers, then nothing: the answer is held for its first message, so
/// each attempt's bound ends it and the ladder tries again until the
/// operation's deadline; the caller gets a deadline failure soon after it.
#[tokio::test]
async fn headers_then_silence_is_bounded_by_each_attempt() {
    let (url, calls) = always(|stream| vec![grpc_head(stream)]).await;
    let mut client = client(
        &url,
        short_stack(Duration::from_millis(300), Duration::from_millis(1500)),
    );
    let started = tokio::time::Instant::now();
    let status = bounded(client.check(ask())).await.expect_err("out of time");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    let failure = failure_of(&status).expect("seawall's verdict");
    assert!(
        matches!(failure.code(), Code::Timeout | Code::DeadlineExceeded),
        "{failure:?}"
    );
    every_attempt_failed(failure, Code::Timeout, &calls);
}

/// A watch that sends a message and then nothing: the stream is the
/// caller's, never replayed; the operation's deadline ends it.
#[tokio::test]
async fn a_stream_gone_quiet_after_a_message_ends_at_the_deadline() {
    let (url, calls) = always(|stream| vec![grpc_head(stream), data(stream, SERVING, false)]).await;
    let started = tokio::time::Instant::now();
    let (messages, end) = watch_to_end(
        &url,
        short_stack(Duration::from_millis(300), Duration::from_millis(1200)),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(messages, 1);
    let status = end.expect_err("out of time");
    let failure = failure_of(&status).expect("seawall's verdict");
    assert_eq!(failure.code(), Code::DeadlineExceeded, "{failure:?}");
    assert!(
        elapsed >= Duration::from_millis(1000) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// grpc-message that is not what it should be.
// ---------------------------------------------------------------------------

/// A `grpc-message` with broken percent escapes and bytes that are not
/// UTF-8, on UNAVAILABLE: still UNAVAILABLE, retried; and, failing every
/// time under `GrpcStatusLayer`, a status with the server's code and the
/// message decoded leniently — no panic, no `Unknown` for a message tonic
/// alone would have refused.
#[tokio::test]
async fn a_broken_grpc_message_does_not_change_the_verdict() {
    const BROKEN: &[u8] = b"caf\xe9 %zz 100% %E2%28 down";
    let (url, calls) = first_then_serving(|stream| {
        vec![trailers_only(stream, b"14", &[("grpc-message", BROKEN)])]
    })
    .await;
    answered_on_the_second_attempt(&url, &calls, Code::ProviderUnavailable).await;

    let (url, _) =
        always(|stream| vec![trailers_only(stream, b"14", &[("grpc-message", BROKEN)])]).await;
    let stack = stack().retry_policy(RetryPolicy::interactive().max_attempts(1));
    let mut client = HealthClient::new(GrpcStatusLayer::new().layer(service(&url, stack)));
    let status = bounded(client.check(ask())).await.expect_err("unavailable");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(status.message().contains("%zz 100%"), "{status:?}");
    assert!(status.message().ends_with("down"), "{status:?}");
}

// ---------------------------------------------------------------------------
// A call still sending, its answer handed on at its headers.
// ---------------------------------------------------------------------------

/// A bidirectional call still sending (its answer handed on at its
/// headers, not held for a message) whose answer breaks after its headers
/// and before any message, through `GrpcStatusLayer`: the code tonic
/// gives the fault, as for a held answer — REFUSED_STREAM and a lost
/// connection `Unavailable`, nothing having reached the caller — not an
/// interruption of content it never had, read as `Unknown`. Not sent
/// again: the request went as it was made.
#[tokio::test]
async fn a_call_still_sending_broken_before_a_message_has_the_code_of_its_fault() {
    type Cut = fn(u32) -> Act;
    let cuts: [(&str, Cut, tonic::Code); 3] = [
        (
            "REFUSED_STREAM",
            |stream| reset(stream, REFUSED_STREAM),
            tonic::Code::Unavailable,
        ),
        (
            "INTERNAL_ERROR",
            |stream| reset(stream, INTERNAL_ERROR),
            tonic::Code::Internal,
        ),
        ("closed", |_| Act::Close, tonic::Code::Unavailable),
    ];
    for (what, cut, expected) in cuts {
        let (url, calls) =
            always(move |stream| vec![grpc_head(stream), Act::Sleep(SETTLE), cut(stream)]).await;
        let mut grpc =
            tonic::client::Grpc::new(GrpcStatusLayer::new().layer(service(&url, stack())));
        // Held open: the call is still sending when the answer comes.
        let (_tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(1);
        bounded(grpc.ready()).await.expect("ready");
        let call = grpc.streaming(
            tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)),
            "/echo.Echo/Chat".parse().unwrap(),
            Raw,
        );
        let mut inbound = bounded(call)
            .await
            .expect("answered at the headers")
            .into_inner();
        let status = bounded(inbound.message())
            .await
            .expect_err("broken before a message");
        assert_eq!(status.code(), expected, "{what}: {status:?}");
        let failure = failure_of(&status).expect("seawall's verdict is the source");
        assert_eq!(failure.code(), Code::Transport, "{what}: {failure:?}");
        assert!(failure.interrupted().is_none(), "{what}: {failure:?}");
        assert!(!failure.evidence().content_seen, "{what}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{what}: not sent again");
    }
}
