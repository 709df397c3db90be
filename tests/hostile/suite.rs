//! The hostile-server suite, run by two test binaries: `tests/hostile.rs`
//! (the stack over the hyper-util client) and `tests/hostile_reqwest.rs`
//! (the same stack over `seawall::reqwest::ReqwestService`). Each root
//! names its client in `crate::CLIENT`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::{ClassifyLayer, ProviderClassifier};
use seawall::core::{BoxError, Code, Failure, Receipt};
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// One step of a reply.
#[derive(Debug, Clone)]
enum Act {
    Write(Vec<u8>),
    Pause(Duration),
    /// Close with a TCP reset.
    Reset,
}

/// The raw server: request `n` gets reply `n` (the last one repeats).
struct Hostile {
    base: String,
    requests: Arc<AtomicUsize>,
    /// Each request's head, in order.
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hostile {
    async fn start(replies: Vec<Vec<Act>>) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        let replies = Arc::new(replies);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let counter = counter.clone();
                let seen = seen.clone();
                let replies = replies.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &counter, &seen, &replies).await;
                });
            }
        });
        Hostile {
            base,
            requests,
            heads,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Reads one request (head and a `content-length` body), then plays the
/// reply its number picks, then closes the connection.
async fn serve(
    mut stream: TcpStream,
    counter: &AtomicUsize,
    heads: &Mutex<Vec<String>>,
    replies: &[Vec<Act>],
) -> std::io::Result<()> {
    let Some(request) = seawall_test::raw::read_request(&mut stream).await? else {
        return Ok(());
    };
    heads.lock().unwrap().push(request.head);
    let n = counter.fetch_add(1, Ordering::SeqCst);
    let reply = &replies[n.min(replies.len() - 1)];
    for act in reply {
        match act {
            Act::Write(bytes) => {
                // A client that went away ends the reply; that is fine.
                if stream.write_all(bytes).await.is_err() {
                    return Ok(());
                }
                stream.flush().await?;
            }
            Act::Pause(d) => tokio::time::sleep(*d).await,
            Act::Reset => {
                stream.set_zero_linger()?;
                return Ok(());
            }
        }
    }
    stream.shutdown().await
}

fn head(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A whole reply: head and body, the body ending with the connection.
fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<Act> {
    let mut bytes = head(status, headers);
    bytes.extend_from_slice(body);
    vec![Act::Write(bytes)]
}

const HEALTHY_STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w2\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

const HEALTHY_UNARY: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"w1 w2"},"finish_reason":"stop"}]}"#;

fn healthy_stream() -> Vec<Act> {
    reply(
        "200 OK",
        &[("content-type", "text/event-stream")],
        HEALTHY_STREAM.as_bytes(),
    )
}

fn healthy_unary() -> Vec<Act> {
    reply(
        "200 OK",
        &[("content-type", "application/json")],
        HEALTHY_UNARY.as_bytes(),
    )
}

/// The interactive preset with short bounds and an immediate backoff.
fn stack() -> Stack {
    crate::common::short_stack().retry_policy(
        RetryPolicy::interactive()
            .backoff(Backoff::exponential(
                Duration::from_millis(1),
                Duration::from_millis(2),
            ))
            .min_attempt_time(Duration::from_millis(50)),
    )
}

/// What the caller got.
#[derive(Debug)]
struct Outcome {
    /// The body, when the whole answer arrived.
    body: Option<Bytes>,
    /// The failure, before or after content.
    failure: Option<Failure>,
    /// Any error text (checked for secrets).
    error_text: Option<String>,
    receipt: Option<Receipt>,
    /// The answer's content type, as the caller read it.
    content_type: Option<String>,
}

impl Outcome {
    fn code(&self) -> Option<Code> {
        self.failure.as_ref().map(Failure::code)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(self.body.as_deref().unwrap_or_default()).into_owned()
    }
}

/// The body a chat request sends.
fn chat_body(stream: bool) -> String {
    format!(
        r#"{{"model":"gpt-x","stream":{stream},"messages":[{{"role":"user","content":"hi"}}]}}"#
    )
}

/// The client under the stack.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // each root names one
pub(crate) enum Client {
    /// hyper-util's pooled client.
    Hyper,
    /// `seawall::reqwest::ReqwestService` over a client as seawall builds
    /// it (no redirects, no retries, no timeouts of its own; no proxy
    /// from the environment: loopback only).
    #[cfg(feature = "reqwest")]
    Reqwest,
}

async fn ask_at(base: &str, stream: bool, stack: &Stack) -> Outcome {
    ask_classified(base, stream, stack, ClassifyLayer::openai()).await
}

async fn ask_classified(
    base: &str,
    stream: bool,
    stack: &Stack,
    classify: ClassifyLayer<ProviderClassifier>,
) -> Outcome {
    let call = (format!("{base}/v1/chat/completions"), chat_body(stream));
    ask_with(call, &[], stack, classify).await
}

/// Asks the Responses API (`POST /v1/responses`) for `stream` or not.
async fn ask_responses(server: &Hostile, stream: bool) -> Outcome {
    let body = format!(r#"{{"model":"gpt-x","stream":{stream},"input":"hi"}}"#);
    let call = (format!("{}/v1/responses", server.base), body);
    ask_with(call, &[], &stack(), ClassifyLayer::openai_responses()).await
}

/// Sends `call` (URL and JSON body) with `headers` through `stack` over the
/// root's client.
async fn ask_with(
    call: (String, String),
    headers: &[(&str, &str)],
    stack: &Stack,
    classify: ClassifyLayer<ProviderClassifier>,
) -> Outcome {
    match crate::CLIENT {
        Client::Hyper => {
            ask_through(
                stack.build(&classify, crate::common::client()),
                call,
                headers,
            )
            .await
        }
        #[cfg(feature = "reqwest")]
        Client::Reqwest => {
            let client = seawall::reqwest::client_builder()
                .no_proxy()
                .build()
                .expect("a reqwest client");
            let service = seawall::reqwest::ReqwestService::new(client);
            ask_through(stack.build(&classify, service), call, headers).await
        }
    }
}

async fn ask_through<S, B>(
    service: S,
    (url, body): (String, String),
    headers: &[(&str, &str)],
) -> Outcome
where
    S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError>,
    B: http_body::Body<Data = Bytes, Error = BoxError>,
{
    let mut request = http::Request::post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let failed = |error: BoxError, receipt: Option<Receipt>| {
        let failure = Failure::find(&*error).cloned();
        let receipt = failure
            .as_ref()
            .and_then(|f| f.receipt().cloned())
            .or(receipt);
        Outcome {
            body: None,
            error_text: Some(format!("{error} / {error:?}")),
            failure,
            receipt,
            content_type: None,
        }
    };
    let response = match tokio::time::timeout(Duration::from_secs(10), service.oneshot(request))
        .await
        .expect("the stack answers within its deadline")
    {
        Ok(response) => response,
        Err(error) => return failed(error, None),
    };
    let receipt = response.extensions().get::<Receipt>().cloned();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match response.into_body().collect().await {
        Ok(body) => Outcome {
            body: Some(body.to_bytes()),
            failure: None,
            error_text: None,
            receipt,
            content_type,
        },
        Err(error) => failed(error, receipt),
    }
}

async fn ask(server: &Hostile, stream: bool) -> Outcome {
    ask_at(&server.base, stream, &stack()).await
}

/// Reply 1 is hostile, reply 2 healthy: the stack must refuse the first as
/// an answer and retry it (nothing reached the caller), so the caller gets
/// the healthy answer after exactly two requests.
async fn retried_to_an_answer(first: Vec<Act>, stream: bool) -> Outcome {
    let second = if stream {
        healthy_stream()
    } else {
        healthy_unary()
    };
    let server = Hostile::start(vec![first, second]).await;
    let outcome = ask(&server, stream).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert!(outcome.text().contains("w2"), "{outcome:?}");
    assert_eq!(server.requests(), 2, "{outcome:?}");
    assert_eq!(outcome.receipt.as_ref().map(|r| r.attempts.len()), Some(2));
    outcome
}

#[tokio::test]
async fn a_stream_request_answered_with_json_of_another_shape_is_retried() {
    let first = reply("200 OK", &[("content-type", "application/json")], b"{}");
    retried_to_an_answer(first, true).await;
}

#[tokio::test]
async fn a_stream_without_content_type_that_ends_before_content_is_retried() {
    let role_only = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n";
    let first = reply("200 OK", &[], role_only.as_bytes());
    retried_to_an_answer(first, true).await;
}

#[tokio::test]
async fn a_stream_without_content_type_is_guarded_and_delivered() {
    let server = Hostile::start(vec![reply(
        "200 OK",
        &[("content-type", "text/plain")],
        HEALTHY_STREAM.as_bytes(),
    )])
    .await;
    let outcome = ask(&server, true).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert!(outcome.text().ends_with("data: [DONE]\n\n"));
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_captive_portal_page_is_no_answer_stream_or_unary() {
    for stream in [true, false] {
        let first = reply(
            "200 OK",
            &[("content-type", "text/html; charset=utf-8")],
            b"<html><body>Sign in to the hotel wifi</body></html>",
        );
        retried_to_an_answer(first, stream).await;
        let plain = reply("200 OK", &[], b"hello there");
        retried_to_an_answer(plain, stream).await;
    }
}

/// A proxy's plain-text page reads like an event stream's first field
/// ("rate limit exceeded", "internal error", "data unavailable"): on a
/// request for one whole answer, or labelled JSON, it is no stream and no
/// answer. Handed on unchecked, the gateway served it as a 200 answer.
#[tokio::test]
async fn a_page_that_opens_like_an_event_stream_is_no_unary_answer() {
    for page in [
        &b"rate limit exceeded, try again later"[..],
        b"internal error, please retry",
        b"error: upstream overloaded",
        b"data unavailable",
        b": maintenance",
    ] {
        for label in [None, Some("text/plain"), Some("application/json")] {
            let headers: Vec<(&str, &str)> =
                label.iter().map(|label| ("content-type", *label)).collect();
            let outcome = retried_to_an_answer(reply("200 OK", &headers, page), false).await;
            assert_eq!(outcome.text(), HEALTHY_UNARY);
        }
    }
}

/// An event stream labelled JSON: where a stream was asked for, it is
/// the stream, relabelled so the guard reads it (some OpenAI-compatible
/// servers label every answer JSON; refused, every attempt failed alike,
/// each billed); where one whole answer was asked for, it is no answer.
#[tokio::test]
async fn an_event_stream_labelled_json_is_a_stream_only_where_one_was_asked() {
    let labelled = || {
        reply(
            "200 OK",
            &[("content-type", "application/json")],
            HEALTHY_STREAM.as_bytes(),
        )
    };
    retried_to_an_answer(labelled(), false).await;
    let server = Hostile::start(vec![labelled()]).await;
    let outcome = ask(&server, true).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), HEALTHY_STREAM);
    assert_eq!(server.requests(), 1);
    // Guarded as a stream: one that ends before content is no answer.
    let role_only = HEALTHY_STREAM.split("\n\n").next().unwrap().to_owned() + "\n\n";
    let first = reply(
        "200 OK",
        &[("content-type", "application/json")],
        role_only.as_bytes(),
    );
    retried_to_an_answer(first, true).await;
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn a_compressed_answer_is_decoded_before_anything_reads_it() {
    // Content codings are case-insensitive and `x-gzip` is `gzip` (RFC
    // 9110, 8.4.1): spelled so, the answer went undecoded, was refused
    // and asked for (and billed) three times.
    for encoding in ["gzip", "GZIP", "x-gzip", "identity, Gzip"] {
        for (stream, ct, body) in [
            (false, "application/json", HEALTHY_UNARY),
            (true, "text/event-stream", HEALTHY_STREAM),
        ] {
            let server = Hostile::start(vec![reply(
                "200 OK",
                &[("content-type", ct), ("content-encoding", encoding)],
                &gzip(body.as_bytes()),
            )])
            .await;
            let outcome = ask(&server, stream).await;
            assert_eq!(outcome.code(), None, "{encoding} {outcome:?}");
            assert_eq!(outcome.text(), body);
            assert_eq!(server.requests(), 1);
        }
    }
}

/// A small compressed answer that decodes to far more than any answer (a
/// gzip bomb): past the check cap it is handed on as it decodes, and ends
/// `answer_too_large` at the ceiling instead of filling the caller's
/// memory (an SDK reads a whole answer). Bytes reached the caller: it is
/// not asked for again.
#[tokio::test]
async fn a_compressed_answer_that_decodes_past_the_ceiling_is_too_large() {
    const CEILING: u64 = 1024 * 1024;
    let mut bomb = String::from(r#"{"object":"list","data":[""#);
    bomb.push_str(&"x".repeat(16 * 1024 * 1024));
    bomb.push_str(r#""]}"#);
    let packed = gzip(bomb.as_bytes());
    assert!(packed.len() < 128 * 1024, "{}", packed.len());
    let server = Hostile::start(vec![reply(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        &packed,
    )])
    .await;
    let classify = ClassifyLayer::openai()
        .max_success_body(64 * 1024)
        .max_answer_body(CEILING);
    let outcome = ask_classified(&server.base, false, &stack(), classify).await;
    assert_eq!(outcome.code(), Some(Code::AnswerTooLarge), "{outcome:?}");
    let delivered = outcome.failure.as_ref().and_then(|f| f.interrupted());
    assert_eq!(delivered.and_then(|d| d.cause), Some(Code::AnswerTooLarge));
    assert!(
        delivered.is_some_and(|d| d.bytes <= CEILING + 64 * 1024),
        "{delivered:?}"
    );
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn an_encoding_nobody_decodes_or_a_corrupt_one_is_no_answer() {
    for stream in [false, true] {
        let ct = if stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        let unknown = reply(
            "200 OK",
            &[("content-type", ct), ("content-encoding", "snappy")],
            b"\xff\x06\x00\x00sNaPpY",
        );
        retried_to_an_answer(unknown, stream).await;
        // Not asked for: zstd's decoder takes any window a frame names, up
        // to 128 MiB a response.
        let zstd = reply(
            "200 OK",
            &[("content-type", ct), ("content-encoding", "zstd")],
            b"\x28\xb5\x2f\xfd\x00\x58\x00\x00",
        );
        retried_to_an_answer(zstd, stream).await;
        let corrupt = reply(
            "200 OK",
            &[("content-type", ct), ("content-encoding", "gzip")],
            b"\x1f\x8b\x08\x00 certainly not deflate data",
        );
        retried_to_an_answer(corrupt, stream).await;
    }
}

#[tokio::test]
async fn json_nested_past_the_parser_depth_is_no_answer() {
    let deep = format!(
        r#"{{"choices":{}{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let first = reply(
        "200 OK",
        &[("content-type", "application/json")],
        deep.as_bytes(),
    );
    retried_to_an_answer(first, false).await;
}

#[tokio::test]
async fn event_data_that_is_not_json_before_content_is_retried() {
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"\n\n";
    let first = reply(
        "200 OK",
        &[("content-type", "text/event-stream")],
        cut.as_bytes(),
    );
    retried_to_an_answer(first, true).await;
}

#[tokio::test]
async fn event_data_that_is_not_utf8_after_content_is_an_interruption_not_an_answer() {
    let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n".to_vec();
    body.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n",
    );
    body.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let server = Hostile::start(vec![reply(
        "200 OK",
        &[("content-type", "text/event-stream")],
        &body,
    )])
    .await;
    let outcome = ask(&server, true).await;
    let failure = outcome.failure.as_ref().expect("not delivered as complete");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    let interrupted = failure.interrupted().expect("what was delivered");
    assert_eq!(interrupted.cause, Some(Code::ProtocolViolation));
    assert_eq!(interrupted.delivered_text.as_deref(), Some("w1"));
    assert_eq!(server.requests(), 1, "nothing after content is replayed");
}

#[tokio::test]
async fn a_broken_chunked_body_is_retried() {
    let mut first = head(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("transfer-encoding", "chunked"),
        ],
    );
    first.extend_from_slice(b"5\r\n{\"cho\r\nzz\r\nnot hex\r\n");
    retried_to_an_answer(vec![Act::Write(first)], false).await;
}

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_retried() {
    let mut first = head(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-length", "1000"),
        ],
    );
    first.extend_from_slice(b"{\"choices\":[");
    retried_to_an_answer(vec![Act::Write(first)], false).await;
}

#[tokio::test]
async fn a_reset_mid_unary_body_is_retried() {
    let mut first = head(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-length", "1000"),
        ],
    );
    first.extend_from_slice(b"{\"choices\":[");
    retried_to_an_answer(vec![Act::Write(first), Act::Reset], false).await;
}

/// A unary answer longer than the check cap, its body delimited by the
/// connection's close (no length, not chunked): a cut there ends the body
/// as cleanly as its end would, and only the answer's own structure tells.
#[tokio::test]
async fn a_long_answer_cut_where_only_its_close_delimits_it_is_not_whole() {
    const CAP: usize = 4 * 1024;
    let mut whole = String::from(r#"{"object":"list","data":["#);
    while whole.len() < 4 * CAP {
        whole.push_str(r#"{"object":"embedding","embedding":[0.25,-0.5,"}]"]},"#);
    }
    whole.push_str(r#"{"object":"embedding","embedding":[1.0]}],"model":"m"}"#);
    let json = [("content-type", "application/json")];
    let classify = || ClassifyLayer::openai().max_success_body(CAP);
    for cut in [2 * CAP, whole.len() - 2] {
        let server = Hostile::start(vec![reply("200 OK", &json, &whole.as_bytes()[..cut])]).await;
        let outcome = ask_classified(&server.base, false, &stack(), classify()).await;
        assert_eq!(
            outcome.code(),
            Some(Code::Truncated),
            "cut at {cut}: {outcome:?}"
        );
        let delivered = outcome.failure.as_ref().and_then(|f| f.interrupted());
        assert_eq!(delivered.map(|d| d.bytes), Some(cut as u64), "cut at {cut}");
        // Bytes reached the caller: the stack does not send it again.
        assert_eq!(server.requests(), 1);
    }
    let server = Hostile::start(vec![reply("200 OK", &json, whole.as_bytes())]).await;
    let outcome = ask_classified(&server.base, false, &stack(), classify()).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), whole);
}

/// A `[DONE]` the Responses API never sends, as some compatible servers
/// add to every stream: after the terminal event it breaks nothing (the
/// stream ends at the terminal event: what follows is no part of the
/// answer, and is not handed on), and without one it finishes nothing.
#[tokio::test]
async fn done_on_a_responses_stream_neither_breaks_nor_finishes_it() {
    let event = |ty: &str, rest: &str, n: u32| {
        format!("event: {ty}\ndata: {{\"type\":\"{ty}\"{rest},\"sequence_number\":{n}}}\n\n")
    };
    let created = event(
        "response.created",
        r#","response":{"id":"r","status":"in_progress","output":[]}"#,
        0,
    );
    let delta = event(
        "response.output_text.delta",
        r#","item_id":"m","output_index":0,"content_index":0,"delta":"w1 w2""#,
        1,
    );
    let completed = event(
        "response.completed",
        r#","response":{"id":"r","status":"completed","output":[]}"#,
        2,
    );
    let sse = [("content-type", "text/event-stream")];
    let answer = format!("{created}{delta}{completed}");
    let whole = format!("{answer}data: [DONE]\n\n");
    let server = Hostile::start(vec![reply("200 OK", &sse, whole.as_bytes())]).await;
    let outcome = ask_responses(&server, true).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(
        outcome.text(),
        answer,
        "passed as sent, to its terminal event"
    );
    assert_eq!(server.requests(), 1);

    let unfinished = format!("{created}{delta}data: [DONE]\n\n");
    let server = Hostile::start(vec![reply("200 OK", &sse, unfinished.as_bytes())]).await;
    let outcome = ask_responses(&server, true).await;
    assert_eq!(outcome.code(), Some(Code::Truncated), "{outcome:?}");
    assert_eq!(server.requests(), 1, "content reached the caller");
}

/// A byte order mark before a unary answer (RFC 8259 lets a parser ignore
/// one): the answer is checked past it and delivered as sent, once.
#[tokio::test]
async fn a_unary_answer_behind_a_byte_order_mark_is_an_answer() {
    let json = [("content-type", "application/json")];
    let marked = format!("\u{feff}{HEALTHY_UNARY}");
    let server = Hostile::start(vec![reply("200 OK", &json, marked.as_bytes())]).await;
    let outcome = ask(&server, false).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), marked);
    assert_eq!(server.requests(), 1);
    // Still checked: an empty answer behind the mark is no answer.
    let empty = "\u{feff}{\"choices\":[]}";
    let outcome = retried_to_an_answer(reply("200 OK", &json, empty.as_bytes()), false).await;
    assert_eq!(outcome.text(), HEALTHY_UNARY);
}

#[tokio::test]
async fn an_event_stream_label_on_a_json_body_is_no_answer() {
    let first = reply(
        "200 OK",
        &[("content-type", "text/event-stream")],
        HEALTHY_UNARY.as_bytes(),
    );
    retried_to_an_answer(first, true).await;
}

/// A unary request's answer is one JSON answer whatever its label says:
/// checked as one and delivered, once; an event stream answering it is no
/// answer the caller's client reads (retried).
#[tokio::test]
async fn a_unary_answer_labelled_an_event_stream_is_checked_as_unary() {
    let sse = [("content-type", "text/event-stream")];
    let server = Hostile::start(vec![reply("200 OK", &sse, HEALTHY_UNARY.as_bytes())]).await;
    let outcome = ask(&server, false).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), HEALTHY_UNARY);
    assert_eq!(server.requests(), 1);
    // Labelled as what it is: whatever the guard above reads of the
    // request later, it leaves the answer to the check; the caller's
    // client reads JSON.
    assert_eq!(outcome.content_type.as_deref(), Some("application/json"));
    // Still checked: an empty answer so labelled is no answer.
    let empty = reply("200 OK", &sse, b"{\"choices\":[]}");
    let outcome = retried_to_an_answer(empty, false).await;
    assert_eq!(outcome.text(), HEALTHY_UNARY);
    let stream = reply("200 OK", &sse, HEALTHY_STREAM.as_bytes());
    retried_to_an_answer(stream, false).await;
}

/// A head and then only keep-alives is as silent as a head and then
/// nothing: a first-byte timeout, route-shaped (fail over; this stack has
/// no other route, so it ends there), with the evidence of silence. It
/// was a `timeout` after the first-content bound, retried on the same
/// silent route.
#[tokio::test]
async fn keepalives_without_content_are_not_progress() {
    let mut first = vec![Act::Write(head(
        "200 OK",
        &[("content-type", "text/event-stream")],
    ))];
    for _ in 0..40 {
        first.push(Act::Write(b": ping\n\n".to_vec()));
        first.push(Act::Pause(Duration::from_millis(50)));
    }
    let server = Hostile::start(vec![first, healthy_stream()]).await;
    let outcome = ask(&server, true).await;
    assert_eq!(outcome.code(), Some(Code::FirstByteTimeout), "{outcome:?}");
    let failure = outcome.failure.as_ref().unwrap();
    assert!(failure.is_route_shaped(), "{outcome:?}");
    assert_eq!(failure.evidence().bytes, 0, "{outcome:?}");
    assert_eq!(server.requests(), 1, "{outcome:?}");
}

/// `data:` alone, as a heartbeat, before and after content: no part of
/// the answer is in it, so it neither costs a retry nor breaks the answer.
#[tokio::test]
async fn an_event_without_data_is_a_heartbeat_not_a_broken_answer() {
    let heartbeat = "data:\n\n";
    let (before, after) = HEALTHY_STREAM.split_at(
        HEALTHY_STREAM
            .find("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w2")
            .unwrap(),
    );
    let body = format!("{heartbeat}{before}{heartbeat}{after}");
    let sse = [("content-type", "text/event-stream")];
    let server = Hostile::start(vec![reply("200 OK", &sse, body.as_bytes())]).await;
    let outcome = ask(&server, true).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), body, "passed as sent");
    assert_eq!(server.requests(), 1);
}

/// vLLM ends a generation its engine stopped (shutdown, scale-down, pause)
/// with `finish_reason: "abort"` and `[DONE]`, as if whole
/// (vllm-project/vllm#57082): no answer. Before content it is retried;
/// after content it is an interruption, never a finished answer.
#[tokio::test]
async fn a_servers_abort_finish_is_no_answer() {
    let sse = [("content-type", "text/event-stream")];
    let json = [("content-type", "application/json")];
    let abort = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"abort\"}]}\n\ndata: [DONE]\n\n";
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
    let content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n";

    let before = format!("{role}{abort}");
    retried_to_an_answer(reply("200 OK", &sse, before.as_bytes()), true).await;
    let unary = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"w1"},"finish_reason":"abort"}]}"#;
    retried_to_an_answer(reply("200 OK", &json, unary.as_bytes()), false).await;

    let after = format!("{role}{content}{abort}");
    let server = Hostile::start(vec![reply("200 OK", &sse, after.as_bytes())]).await;
    let outcome = ask(&server, true).await;
    assert_eq!(outcome.code(), Some(Code::StreamInterrupted), "{outcome:?}");
    let delivered = outcome.failure.as_ref().and_then(|f| f.interrupted());
    assert_eq!(
        delivered.and_then(|d| d.cause),
        Some(Code::ProviderUnavailable)
    );
    assert_eq!(server.requests(), 1, "content reached the caller");
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_says_so() {
    let server = Hostile::start(vec![reply(
        "307 Temporary Redirect",
        &[
            ("location", "http://127.0.0.1:1/elsewhere"),
            ("content-length", "0"),
        ],
        b"",
    )])
    .await;
    for stream in [false, true] {
        let before = server.requests();
        let outcome = ask(&server, stream).await;
        let failure = outcome.failure.as_ref().expect("a redirect is no answer");
        assert_eq!(failure.code(), Code::Redirected);
        assert_eq!(failure.status(), Some(307));
        assert_eq!(
            failure.action(),
            seawall::core::Action::Surface,
            "a configuration error: asking again changes nothing"
        );
        assert_eq!(server.requests() - before, 1);
    }
}

#[tokio::test]
async fn a_retry_after_too_long_to_parse_is_a_quota_wall() {
    let server = Hostile::start(vec![reply(
        "429 Too Many Requests",
        &[
            ("content-type", "application/json"),
            ("retry-after", "99999999999999999999999999999999"),
        ],
        br#"{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
    )])
    .await;
    let outcome = ask(&server, false).await;
    assert_eq!(outcome.code(), Some(Code::QuotaExhausted), "{outcome:?}");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn credentials_in_the_base_url_appear_nowhere() {
    let server = Hostile::start(vec![reply(
        "503 Service Unavailable",
        &[("content-type", "application/json")],
        br#"{"error":{"message":"down","type":"server_error","param":null,"code":null}}"#,
    )])
    .await;
    let base = server
        .base
        .replace("http://", "http://sk-user:sk-secret-key@");
    let outcome = ask_at(&base, false, &stack()).await;
    assert!(outcome.failure.is_some(), "{outcome:?}");
    let text = format!(
        "{} {:?} {:?}",
        outcome.error_text.as_deref().unwrap_or(""),
        outcome.failure,
        outcome.receipt
    );
    assert!(!text.contains("sk-secret-key"), "{text}");
    assert!(!text.contains("sk-user"), "{text}");
    let receipt = outcome.receipt.expect("a receipt");
    for attempt in receipt.attempts.iter() {
        assert!(!attempt.route.as_str().contains('@'), "{attempt:?}");
    }
}

#[tokio::test]
async fn an_endless_header_line_is_a_bounded_transport_failure() {
    let mut first = b"HTTP/1.1 200 OK\r\nx-endless: ".to_vec();
    first.extend(std::iter::repeat_n(b'a', 1 << 20));
    let server = Hostile::start(vec![vec![
        Act::Write(first),
        Act::Pause(Duration::from_secs(5)),
    ]])
    .await;
    let stack = stack().budget(Budget::unlimited());
    let outcome = ask_at(&server.base, true, &stack).await;
    let failure = outcome.failure.as_ref().expect("no answer");
    assert_eq!(
        failure.class(),
        seawall::core::Class::Transient,
        "{failure:?}"
    );
    assert!(server.requests() >= 1);
}

/// A response head the client cannot parse (two lengths that disagree) is
/// a transport failure, retried; its message says what was wrong with it,
/// not only that the client failed (hyper-util's words are
/// `client error (SendRequest)`: why is further down the chain).
#[tokio::test]
async fn an_unparsable_response_head_says_why() {
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10\r\ncontent-length: 20\r\n\r\n{}".to_vec();
    let server = Hostile::start(vec![vec![
        Act::Write(head),
        Act::Pause(Duration::from_secs(5)),
    ]])
    .await;
    let stack = stack().budget(Budget::unlimited());
    let outcome = ask_at(&server.base, false, &stack).await;
    let failure = outcome.failure.as_ref().expect("no answer");
    assert_eq!(failure.code(), Code::Transport, "{failure:?}");
    let message = failure.message().unwrap_or_default().to_ascii_lowercase();
    assert!(message.contains("content-length"), "{message}");
    assert!(server.requests() >= 2, "retried");
}

/// A unary answer whose framing promises more than it sends, on a
/// connection kept open: a length one byte too long, a chunked body
/// without its last chunk, a close-delimited HTTP/1.0 body. The answer's
/// object closed: it is delivered as it came, once, without waiting for
/// an end that never comes (it used to be discarded at the attempt's
/// bound and asked for again, then fail).
#[tokio::test]
async fn a_whole_unary_answer_is_delivered_though_its_framing_never_ends() {
    let marked = format!("\u{feff}{HEALTHY_UNARY}");
    // Behind a byte order mark too: the mark is no part of the value.
    for answer in [HEALTHY_UNARY, &marked] {
        let heads = [
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                answer.len() + 1
            ),
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{answer}\r\n",
                answer.len()
            ),
            format!("HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{answer}"),
        ];
        for reply in heads {
            let server = Hostile::start(vec![vec![
                Act::Write(reply.into_bytes()),
                Act::Pause(Duration::from_secs(30)),
            ]])
            .await;
            let started = std::time::Instant::now();
            let outcome = ask(&server, false).await;
            assert_eq!(outcome.code(), None, "{outcome:?}");
            assert_eq!(outcome.text(), answer);
            assert_eq!(server.requests(), 1);
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{:?}",
                started.elapsed()
            );
        }
    }
}

/// The same framings under an answer past the check cap (a large
/// embeddings batch, 9 MiB, under the answer ceiling), handed on as it
/// comes: once its value closed and the body goes quiet, it ends whole,
/// as a checked answer does (it used to wait for the total deadline,
/// every byte delivered, and fail).
#[tokio::test]
async fn a_whole_answer_past_the_check_cap_ends_though_its_framing_never_ends() {
    let mut answer = String::from(r#"{"object":"list","data":["#);
    let mut index = 0;
    while answer.len() < 9 * 1024 * 1024 {
        answer.push_str(&format!(
            r#"{{"object":"embedding","index":{index},"embedding":[0.25,-0.5,0.125,"}}]"]}},"#
        ));
        index += 1;
    }
    answer.push_str(r#"{"object":"embedding","embedding":[1.0]}],"model":"m"}"#);
    let heads = [
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len() + 1
        ),
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n",
            answer.len()
        ),
        "HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n".to_owned(),
    ];
    for head in heads {
        let chunked = head.contains("chunked");
        let mut reply = head.into_bytes();
        reply.extend_from_slice(answer.as_bytes());
        if chunked {
            reply.extend_from_slice(b"\r\n");
        }
        let server = Hostile::start(vec![vec![
            Act::Write(reply),
            Act::Pause(Duration::from_secs(30)),
        ]])
        .await;
        let started = std::time::Instant::now();
        let outcome = ask(&server, false).await;
        let elapsed = started.elapsed();
        assert_eq!(outcome.code(), None, "{:?}", outcome.error_text);
        assert_eq!(outcome.body.as_ref().map(Bytes::len), Some(answer.len()));
        assert!(outcome.text() == answer, "the answer came altered");
        assert_eq!(server.requests(), 1);
        // Well under the stack's total deadline (5 s).
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    }
}

/// A byte order mark before an error body, or split across the first
/// frames of an answer, changes nothing: the error is read for what it
/// says (a quota wall is not retried), the answer is an answer.
#[tokio::test]
async fn a_byte_order_mark_anywhere_a_body_opens_is_read_past() {
    let wall = "\u{feff}{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}";
    let server = Hostile::start(vec![reply(
        "429 Too Many Requests",
        &[("content-type", "application/json")],
        wall.as_bytes(),
    )])
    .await;
    let outcome = ask(&server, false).await;
    assert_eq!(outcome.code(), Some(Code::QuotaExhausted), "{outcome:?}");
    assert_eq!(server.requests(), 1);

    let body = format!("\u{feff}{HEALTHY_UNARY}");
    let (mark, rest) = body.as_bytes().split_at(1);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let server = Hostile::start(vec![vec![
        Act::Write([head.as_bytes(), mark].concat()),
        Act::Pause(Duration::from_millis(50)),
        Act::Write(rest.to_vec()),
    ]])
    .await;
    let outcome = ask(&server, false).await;
    assert_eq!(outcome.code(), None, "{outcome:?}");
    assert_eq!(outcome.text(), body);
    assert_eq!(server.requests(), 1);
}

/// A 2xx answer whose body stalls before its object closes: each attempt
/// ends at its bound, and the receipt counts each as billed (the provider
/// answered 2xx: a generation started, whatever came of it).
#[tokio::test]
async fn an_answer_that_stalls_mid_body_is_billed() {
    let partial = &HEALTHY_UNARY[..40];
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{partial}",
        HEALTHY_UNARY.len()
    );
    let server = Hostile::start(vec![vec![
        Act::Write(reply.into_bytes()),
        Act::Pause(Duration::from_secs(30)),
    ]])
    .await;
    let stack = stack().budget(Budget::unlimited());
    let outcome = ask_at(&server.base, false, &stack).await;
    assert_eq!(outcome.code(), Some(Code::Timeout), "{outcome:?}");
    let receipt = outcome.receipt.expect("a receipt");
    assert!(receipt.attempts.len() >= 2, "{receipt:?}");
    assert_eq!(
        receipt.billed_attempts(),
        receipt.attempts.len(),
        "{receipt:?}"
    );
    assert_eq!(server.requests(), receipt.attempts.len());
}

/// The `accept-encoding` lines of a request head, values trimmed.
fn accept_encoding(head: &str) -> Vec<String> {
    let lines = head.lines().filter_map(|line| line.split_once(':'));
    lines
        .filter(|(name, _)| name.eq_ignore_ascii_case("accept-encoding"))
        .map(|(_, value)| value.trim().to_owned())
        .collect()
}

#[tokio::test]
async fn a_caller_asking_for_a_coding_nothing_decodes_is_asked_for_what_is() {
    let url = |server: &Hostile| format!("{}/v1/chat/completions", server.base);
    for (asked, sent) in [
        // Headers copied from a browser: a server may pick zstd, which
        // nothing in the stack decodes, and fail every billed attempt.
        (Some("gzip, deflate, br, zstd"), "gzip,deflate,br"),
        (Some("*"), "gzip,deflate,br"),
        (Some("br"), "br"),
        (Some("identity"), "identity"),
        (None, "gzip,deflate,br"),
    ] {
        let server = Hostile::start(vec![healthy_unary()]).await;
        let headers: Vec<_> = asked
            .map(|value| ("accept-encoding", value))
            .into_iter()
            .collect();
        let call = (url(&server), chat_body(false));
        let outcome = ask_with(call, &headers, &stack(), ClassifyLayer::openai()).await;
        assert_eq!(outcome.code(), None, "{asked:?}: {outcome:?}");
        let heads = server.heads();
        assert_eq!(heads.len(), 1, "{asked:?}");
        assert_eq!(
            accept_encoding(&heads[0]),
            [sent],
            "{asked:?}: {}",
            heads[0]
        );
    }
}

/// Outside a generation, a 2xx that says it has no body (a 204, a 205, a
/// `content-length: 0`) is a success, whatever its content type claims:
/// it was retried as `empty_response`, and counted against the route. A
/// generation's empty 200 is still no answer.
#[tokio::test]
async fn an_empty_success_outside_a_generation_is_a_success() {
    for (status, length) in [
        ("204 No Content", None),
        ("205 Reset Content", None),
        ("200 OK", Some("0")),
        ("200 OK", Some("00")),
    ] {
        // A coding nothing here decodes changes nothing: there is no body.
        let mut headers = vec![
            ("content-type", "application/json"),
            ("content-encoding", "zstd"),
        ];
        headers.extend(length.map(|length| ("content-length", length)));
        let server = Hostile::start(vec![reply(status, &headers, b""), healthy_unary()]).await;
        let call = (format!("{}/v1/files", server.base), chat_body(false));
        let outcome = ask_with(call, &[], &stack(), ClassifyLayer::openai()).await;
        assert_eq!(outcome.code(), None, "{status}: {outcome:?}");
        assert_eq!(server.requests(), 1, "{status}");
        assert_eq!(outcome.body.as_deref(), Some(&b""[..]), "{status}");
    }
    let empty = reply(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-length", "0"),
        ],
        b"",
    );
    retried_to_an_answer(empty, false).await;
}

/// A stream request answered with a head that does not say event stream
/// (JSON, no content type, `text/plain`), then nothing: the classifier
/// below holds it for its first bytes, and the first-byte bound (200 ms)
/// still ends it, route-shaped — it waited out the attempt's whole bound
/// (1.5 s) as a `timeout` and was retried, as a reasoning stack would
/// wait 660 s. A JSON answer whose bytes come slowly is slow, not silent,
/// and one whose head comes late with it is a unary answer: both are read
/// to their end.
#[tokio::test]
async fn headers_then_nothing_under_any_content_type_is_a_first_byte_timeout() {
    for content_type in [Some("application/json"), None, Some("text/plain")] {
        let headers: Vec<_> = content_type
            .map(|ct| ("content-type", ct))
            .into_iter()
            .collect();
        let silent = vec![
            Act::Write(head("200 OK", &headers)),
            Act::Pause(Duration::from_secs(10)),
        ];
        let server = Hostile::start(vec![silent]).await;
        let outcome = ask(&server, true).await;
        assert_eq!(
            outcome.code(),
            Some(Code::FirstByteTimeout),
            "{content_type:?}: {outcome:?}"
        );
        let evidence = outcome.failure.as_ref().unwrap().evidence();
        assert_eq!(evidence.status, Some(200), "the head came");
        assert_eq!(server.requests(), 1, "{content_type:?}");
    }
    let (opening, rest) = HEALTHY_UNARY.split_at(10);
    let slow = vec![
        Act::Write(head("200 OK", &[("content-type", "application/json")])),
        Act::Write(opening.as_bytes().to_vec()),
        Act::Pause(Duration::from_millis(400)),
        Act::Write(rest.as_bytes().to_vec()),
    ];
    // A server that ignores `"stream": true` sends its head with its
    // whole answer, past the first-byte bound: a unary answer, read.
    let ignoring = vec![
        Act::Pause(Duration::from_millis(400)),
        Act::Write(head("200 OK", &[("content-type", "application/json")])),
        Act::Write(HEALTHY_UNARY.as_bytes().to_vec()),
    ];
    for reply in [slow, ignoring] {
        let server = Hostile::start(vec![reply]).await;
        let outcome = ask(&server, true).await;
        assert_eq!(outcome.code(), None, "{outcome:?}");
        assert_eq!(outcome.text(), HEALTHY_UNARY);
        assert_eq!(server.requests(), 1);
    }
}
