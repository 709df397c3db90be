//! client → gateway → seawall-chaos, over loopback.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, StreamBody};
use seawall_chaos::{ChaosServer, Fault, Outcome};
use seawall_gateway::{Config, Gateway, GatewayError, Preset, Wire};
use seawall_test::canned::{OPENAI_ROLE_EVENT, openai_delta_event};

fn fault(text: &str) -> Fault {
    text.parse().expect("a valid fault")
}

/// The same request straight to one chaos server and through the gateway
/// to another, fresh one (response ids count requests per server): the
/// bytes must be identical.
async fn byte_identical(wire: Wire, body: &'static str, fault: &str) {
    let direct_chaos = ChaosServer::builder().start().await.unwrap();
    let routed_chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(wire, &[("main", &routed_chaos)])).await;
    let client = client();
    let headers = [("x-chaos-fault", fault)];
    let (status, direct_headers, direct_body) = send(
        &client,
        common::direct(&chaos_url(&direct_chaos, wire), body, &headers),
    )
    .await;
    assert_eq!(status, 200);
    let (status, headers, routed_body) =
        send(&client, post(&gateway.url(path(wire)), body, &headers)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&routed_body));
    assert_eq!(
        routed_body,
        direct_body,
        "{}",
        String::from_utf8_lossy(&routed_body)
    );
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");
    assert_eq!(header(&headers, "x-seawall-served-by"), "main");
    // The ladder ran for a success too: a client whose read of the body
    // breaks must not send the call again (Anthropic's SDK would).
    assert_eq!(header(&headers, "x-should-retry"), "false");
    assert_eq!(
        header(&headers, "content-type"),
        header(&direct_headers, "content-type")
    );
    let stats = gateway.gateway.stats();
    assert_eq!((stats.served, stats.failed, stats.cancelled), (1, 0, 0));
}

#[tokio::test]
async fn openai_unary_is_byte_identical() {
    byte_identical(Wire::OpenAi, OPENAI_UNARY, "ok;tokens=12").await;
}

#[tokio::test]
async fn openai_stream_is_byte_identical() {
    byte_identical(Wire::OpenAi, OPENAI_STREAM, "ok;tokens=12;delay_ms=2").await;
}

#[tokio::test]
async fn anthropic_unary_is_byte_identical() {
    byte_identical(Wire::Anthropic, ANTHROPIC_UNARY, "ok;tokens=12").await;
}

#[tokio::test]
async fn anthropic_stream_is_byte_identical() {
    byte_identical(Wire::Anthropic, ANTHROPIC_STREAM, "ok;tokens=12;delay_ms=2").await;
}

#[tokio::test]
async fn silent_primary_fails_over_to_the_fallback_route() {
    let primary = ChaosServer::builder().start().await.unwrap();
    let spare = ChaosServer::builder().start().await.unwrap();
    // The script beats the header: only the primary hangs.
    primary
        .script("openai", vec![fault("hang_after_headers")])
        .unwrap();
    let gateway = Running::start(config(
        Wire::OpenAi,
        &[("main", &primary), ("spare", &spare)],
    ))
    .await;
    let started = std::time::Instant::now();
    let (status, headers, body) = send(
        &client(),
        post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_STREAM,
            &[("x-chaos-request-id", "failover")],
        ),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-served-by"), "spare; fallback");
    assert_eq!(header(&headers, "x-seawall-attempts"), "2");
    let data = data_lines(&body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "one short first-byte bound"
    );
    let hung = primary.wait_for_request("failover").await;
    assert_eq!(hung.fault, "hang_after_headers");
    assert_eq!(hung.outcome, Outcome::ClientDisconnected);
    let served = spare.wait_for_request("failover").await;
    assert_eq!(served.outcome, Outcome::Completed);
}

/// How an answer's body ended for the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyEnd {
    /// Its end: a chunked body's last chunk.
    Clean,
    /// A failure: the connection closed before the last chunk.
    Failed,
}

/// `request` sent, and its body read to its end, clean or failed.
async fn send_to_end(
    client: &HttpClient,
    request: http::Request<ClientBody>,
) -> (http::StatusCode, http::HeaderMap, Bytes, BodyEnd) {
    let response = tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .expect("an answer in time")
        .expect("a response");
    let (parts, body) = response.into_parts();
    let (read, end) = read_to_end(body).await;
    (parts.status, parts.headers, read, end)
}

/// A response body read to its end, clean or failed.
async fn read_to_end(mut body: hyper::body::Incoming) -> (Bytes, BodyEnd) {
    let mut read = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
                Err(_) => return BodyEnd::Failed,
            }
        }
        BodyEnd::Clean
    })
    .await
    .expect("the body's end in time");
    (Bytes::from(read), end)
}

/// `request` sent, its answer a stream broken after content: its body
/// fails after seawall's error event, so no client takes the cut answer
/// for a whole one (it used to end cleanly).
async fn send_broken(
    client: &HttpClient,
    request: http::Request<ClientBody>,
) -> (http::StatusCode, http::HeaderMap, Bytes) {
    let (status, headers, body, end) = send_to_end(client, request).await;
    assert_eq!(
        end,
        BodyEnd::Failed,
        "a broken stream ends failed: {}",
        String::from_utf8_lossy(&body)
    );
    (status, headers, body)
}

/// `fault` (`reset_after;tokens=3`: three tokens reach the client, then
/// exactly one error event in the client's wire format, then the body
/// fails).
async fn interrupted_after_content(
    wire: Wire,
    body: &'static str,
    fault: &str,
) -> (Vec<String>, String) {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(wire, &[("main", &chaos)])).await;
    let (status, headers, body) = send_broken(
        &client(),
        post(&gateway.url(path(wire)), body, &[("x-chaos-fault", fault)]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");
    let text = String::from_utf8(body.to_vec()).unwrap();
    let stats = gateway.gateway.stats();
    assert_eq!((stats.interrupted, stats.served), (1, 0));
    let data = data_lines(&body);
    let errors = data.iter().filter(|d| d.contains("\"error\"")).count();
    assert_eq!(errors, 1, "one error event: {text}");
    (data, text)
}

#[tokio::test]
async fn openai_interruption_ends_with_one_error_event() {
    let (data, text) =
        interrupted_after_content(Wire::OpenAi, OPENAI_STREAM, "reset_after;tokens=3").await;
    let tokens = data.iter().filter(|d| d.contains("\"content\":\"")).count();
    assert!(
        text.contains(r#""content":"w1""#) && text.contains(r#""content":" w3""#),
        "{text}"
    );
    assert!(!text.contains("w4"), "{text}");
    assert!(tokens >= 3, "{text}");
    let last = data.last().unwrap();
    let error: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(error["error"]["code"], "stream_interrupted", "{last}");
    // OpenAI's type for a server's failure, not seawall's class.
    assert_eq!(error["error"]["type"], "server_error");
    assert_eq!(error["error"]["seawall_code"], "stream_interrupted");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("seawall: ")
    );
    let keys: Vec<_> = error["error"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys.len(),
        5,
        "message, type, param, code, seawall_code: {last}"
    );
    assert!(error["error"]["param"].is_null(), "{last}");
    assert!(text.ends_with(&format!("data: {last}\n\n")), "{text}");
    assert!(last.starts_with(r#"{"error":{"message":"#), "{last}");
    assert!(!text.contains("[DONE]"));
}

#[tokio::test]
async fn anthropic_interruption_ends_with_one_error_event() {
    let (data, text) =
        interrupted_after_content(Wire::Anthropic, ANTHROPIC_STREAM, "reset_after;tokens=3").await;
    assert!(
        text.contains(r#""text":" w3""#) && !text.contains("w4"),
        "{text}"
    );
    let last = data.last().unwrap();
    assert!(
        text.ends_with(&format!("event: error\ndata: {last}\n\n")),
        "{text}"
    );
    assert!(
        last.starts_with(r#"{"type":"error","error":{"type":"#),
        "{last}"
    );
    let error: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(error["type"], "error");
    // One of Anthropic's types (the cut is no word of the provider's),
    // seawall's code beside it.
    assert_eq!(error["error"]["type"], "api_error");
    assert_eq!(error["error"]["seawall_code"], "stream_interrupted");
    assert_eq!(error["error"].as_object().unwrap().len(), 3, "{last}");
    assert!(!text.contains("message_stop"));
}

/// A stream the upstream cuts inside an event: the half event never
/// reaches the client (an SDK would parse its broken JSON and raise that
/// instead of seawall's error); every event the client reads is whole,
/// the last one seawall's.
#[tokio::test]
async fn a_stream_cut_inside_an_event_ends_with_whole_events() {
    for (wire, body) in [
        (Wire::OpenAi, OPENAI_STREAM),
        (Wire::Anthropic, ANTHROPIC_STREAM),
    ] {
        let (_, text) = interrupted_after_content(wire, body, "reset_mid_event;tokens=3").await;
        let out = text.as_bytes();
        let events = data_lines(out);
        for data in &events {
            let parsed = serde_json::from_str::<serde_json::Value>(data);
            assert!(parsed.is_ok(), "{wire:?}: a broken event: {data:?}\n{text}");
        }
        assert!(text.contains("w3"), "{wire:?}: {text}");
        assert!(
            events.last().unwrap().contains("stream_interrupted"),
            "{wire:?}: {text}"
        );
        let errors = events.iter().filter(|d| d.contains("error")).count();
        assert_eq!(errors, 1, "{wire:?}: {text}");
    }
}

/// Three tokens as events with `end` as line end, over a chunked 200.
fn streamed_head_and_tokens(content_type: Option<&str>, end: &str) -> Vec<Step> {
    let mut head = String::from("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n");
    if let Some(content_type) = content_type {
        head.push_str(&format!("content-type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    let mut steps = vec![Step::Write(head.into_bytes())];
    let events = [
        OPENAI_ROLE_EVENT.to_owned(),
        openai_delta_event("w1"),
        openai_delta_event(" w2"),
    ];
    for event in events {
        // The canned events end in LF; JSON holds no raw line end.
        steps.push(chunk(&event.replace('\n', end)));
    }
    steps
}

/// A streamed request through a gateway whose one route answers `steps`:
/// what the client read, and how the body ended.
async fn streamed_through(steps: Vec<Step>) -> (Running, http::StatusCode, Bytes, BodyEnd) {
    let upstream = raw_upstream(steps).await;
    let gateway = Running::start(config_over(Wire::OpenAi, &upstream)).await;
    let (status, _, out, end) = send_to_end(
        &client(),
        post(&gateway.url("/v1/chat/completions"), OPENAI_STREAM, &[]),
    )
    .await;
    (gateway, status, out, end)
}

/// Whatever the stream guard reads as a stream ends with seawall's event
/// when it breaks: a content type in capitals (media types are
/// case-insensitive) or none at all on a stream the client asked for.
#[tokio::test]
async fn a_stream_the_guard_guards_ends_with_the_error_event() {
    for content_type in [Some("Text/Event-Stream; charset=utf-8"), None] {
        let mut steps = streamed_head_and_tokens(content_type, "\n");
        steps.push(Step::Pause(50));
        let (gateway, status, out, end) = streamed_through(steps).await;
        assert_eq!(end, BodyEnd::Failed);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, 200, "{content_type:?}: {text}");
        assert!(text.contains("w2"), "{content_type:?}: {text}");
        let last = data_lines(&out).pop().unwrap();
        assert!(
            last.contains("stream_interrupted"),
            "{content_type:?}: {text}"
        );
        assert_eq!(gateway.gateway.stats().interrupted, 1);
    }
}

/// A stream whose upstream keeps the connection open after `[DONE]` (and
/// sends more): the client's body ends at `[DONE]`, at once, as an OpenAI
/// SDK stops reading there; nothing after it is relayed.
#[tokio::test]
async fn a_stream_ends_at_done_though_the_upstream_stays_open() {
    let mut steps = streamed_head_and_tokens(Some("text/event-stream"), "\n");
    let done = format!(
        "{}data: [DONE]\n\n",
        seawall_test::canned::OPENAI_STOP_EVENT
    );
    steps.push(chunk(&format!("{done}{}", openai_delta_event(" EXTRA"))));
    steps.push(Step::Pause(10_000));
    let started = std::time::Instant::now();
    let (gateway, status, out, end) = streamed_through(steps).await;
    assert_eq!(end, BodyEnd::Clean);
    let text = String::from_utf8_lossy(&out);
    assert_eq!(status, 200, "{text}");
    assert!(text.ends_with(&done), "{text}");
    assert!(!text.contains("EXTRA"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the body ended at [DONE], not when the upstream let go: {:?}",
        started.elapsed()
    );
    assert_eq!(gateway.gateway.stats().served, 1);
}

/// A finish that is no answer (vLLM's `abort`) then `[DONE]`: the client
/// reads seawall's error and no `[DONE]` before it. An SDK stops at
/// `[DONE]`: sent first, it made the cut answer look whole.
#[tokio::test]
async fn an_aborted_stream_ends_with_the_error_and_no_done() {
    let mut steps = streamed_head_and_tokens(Some("text/event-stream"), "\n");
    let abort = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"abort\"}]}\n\n";
    steps.push(chunk(&format!("{abort}data: [DONE]\n\n")));
    steps.push(Step::Pause(10_000));
    let (_gateway, status, out, end) = streamed_through(steps).await;
    assert_eq!(end, BodyEnd::Failed);
    let text = String::from_utf8_lossy(&out);
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains("[DONE]"), "{text}");
    let last = text
        .trim_end()
        .rsplit("\n\n")
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        last.contains("\"error\""),
        "the error ends the stream: {text}"
    );
}

/// An error the provider declares inside its 200 stream before any
/// content takes the status it has unstreamed (a context overflow 400, a
/// rate limit 429), not a 502: SDKs choose their exception, and whether to
/// retry, by the status.
#[tokio::test]
async fn an_error_in_the_stream_before_content_keeps_its_status() {
    for (error, status) in [
        (
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            400,
        ),
        (
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            429,
        ),
    ] {
        let steps = vec![
            Step::Write(
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n"
                    .to_vec(),
            ),
            chunk(OPENAI_ROLE_EVENT),
            chunk(&format!("data: {error}\n\n")),
            Step::Write(b"0\r\n\r\n".to_vec()),
        ];
        let (_gateway, got, out, end) = streamed_through(steps).await;
        assert_eq!(end, BodyEnd::Clean);
        assert_eq!(got.as_u16(), status, "{}", String::from_utf8_lossy(&out));
    }
}

/// The provider's own error event is replaced by seawall's, scrubbed,
/// however it comes: CRLF line ends, split over two writes. The client
/// reads one error, and never the route key the provider echoed.
#[tokio::test]
async fn a_provider_error_event_is_replaced_however_it_comes() {
    let error = r#"data: {"error":{"message":"key sk-route-main-secret was revoked","type":"server_error","param":null,"code":null}}"#;
    for end in ["\n", "\r\n"] {
        let mut steps = streamed_head_and_tokens(Some("text/event-stream"), end);
        let event = format!("{error}{end}{end}");
        steps.push(Step::Pause(30));
        steps.push(chunk(&event[..12]));
        steps.push(Step::Pause(30));
        steps.push(chunk(&event[12..]));
        steps.push(Step::Pause(30));
        let (_gateway, status, out, end) = streamed_through(steps).await;
        assert_eq!(end, BodyEnd::Failed);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("w2"), "{text}");
        assert_eq!(text.matches(r#"{"error""#).count(), 1, "{end:?}: {text}");
        assert!(!text.contains("sk-route-main-secret"), "{end:?}: {text}");
        let last = data_lines(&out).pop().unwrap();
        assert!(last.contains("[redacted] was revoked"), "{end:?}: {text}");
    }
}

/// The provider's error event echoing a route key where seawall cuts its
/// message (512 bytes) shows no part of the key in seawall's final event.
#[tokio::test]
async fn a_key_echoed_across_a_cut_in_an_error_event_shows_no_part_of_itself() {
    let key = common::env("KEY_MAIN").unwrap();
    // seawall's message names the provider's error before its text: every
    // place of the key about the cut.
    for pad in 460..=511 {
        let mut steps = streamed_head_and_tokens(Some("text/event-stream"), "\n");
        let event = format!(
            r#"data: {{"error":{{"message":"{} {key} was revoked","type":"server_error","param":null,"code":null}}}}"#,
            "x".repeat(pad)
        );
        steps.push(chunk(&format!("{event}\n\n")));
        let (_gateway, status, out, end) = streamed_through(steps).await;
        assert_eq!(end, BodyEnd::Failed);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, 200, "{text}");
        let last = data_lines(&out).pop().unwrap();
        let event: serde_json::Value = serde_json::from_str(&last).unwrap();
        let message = event["error"]["message"].as_str().unwrap();
        assert!(message.contains("xxx"), "{text}");
        shows_no_part_of(&key, &text, &[message]);
    }
}

/// A provider refusing a route's own key answers 401: that is the
/// gateway's credential failing, so the client gets a 502 (code `auth`),
/// not a 401 that would send it to check the token the gateway accepted.
/// Through a keyless route the key was the client's: 401, with the
/// challenge a 401 must carry.
#[tokio::test]
async fn a_refused_key_is_the_clients_401_only_when_it_was_the_clients() {
    let refusal = r#"{"error":{"message":"Incorrect API key provided: sk-route-main-secret.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let answer = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nwww-authenticate: Bearer realm=\"provider\"\r\n\r\n{refusal}",
        refusal.len()
    );
    let upstream = raw_upstream(vec![Step::Write(answer.into_bytes())]).await;
    for keyed in [true, false] {
        let mut config = config_over(Wire::OpenAi, &upstream);
        if !keyed {
            config.routes[0].key_env = None;
        }
        let gateway = Running::start(config).await;
        let (status, headers, body) = send(
            &client(),
            post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
        )
        .await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(header(&headers, "x-seawall-code"), "auth", "{text}");
        if keyed {
            assert!(!text.contains("sk-route-main-secret"), "{text}");
            assert_eq!(status, 502, "{text}");
        } else {
            assert_eq!(status, 401, "{text}");
            assert_eq!(header(&headers, "www-authenticate"), "Bearer");
        }
    }
}

/// A rate limit's answer keeps the provider's rate-limit headers, as a
/// success does (a client paces itself by them), through a keyed route
/// or not; never its cookies, and the gateway's own headers win.
#[tokio::test]
async fn a_rate_limit_keeps_the_providers_rate_limit_headers() {
    let limited = r#"{"error":{"message":"Rate limit reached for tokens per min.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 30\r\nretry-after-ms: 30000\r\n\
         x-ratelimit-remaining-tokens: 0\r\nx-ratelimit-reset-tokens: 30s\r\n\
         anthropic-ratelimit-tokens-remaining: 0\r\nset-cookie: s=1\r\n\
         x-seawall-code: forged\r\n\r\n{limited}",
        limited.len()
    );
    let upstream = raw_upstream(vec![Step::Write(answer.into_bytes())]).await;
    for keyed in [true, false] {
        let mut config = config_over(Wire::OpenAi, &upstream);
        if !keyed {
            config.routes[0].key_env = None;
        }
        let gateway = Running::start(config).await;
        let (status, headers, body) = send(
            &client(),
            post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
        )
        .await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 429, "{text}");
        assert_eq!(header(&headers, "x-ratelimit-remaining-tokens"), "0");
        assert_eq!(header(&headers, "x-ratelimit-reset-tokens"), "30s");
        assert_eq!(
            header(&headers, "anthropic-ratelimit-tokens-remaining"),
            "0"
        );
        assert_eq!(header(&headers, "retry-after-ms"), "30000");
        assert_eq!(header(&headers, "retry-after"), "30");
        assert_eq!(header(&headers, "x-seawall-code"), "rate_limited");
        assert!(!headers.contains_key("set-cookie"), "{headers:?}");
    }
}

/// A refusal of a route's own key is the gateway's credential failing,
/// rewritten to a 502: the provider's rate-limit headers on that 401 spoke
/// of the status it no longer is, and the 502 carries none of them (they
/// came along, a 502 with `x-ratelimit-*`). Through a keyless route the
/// 401 is the client's own and passes with them, as a success would.
#[tokio::test]
async fn a_keyed_refusal_rewritten_to_502_carries_no_rate_limit_headers() {
    let refused = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let answer = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nx-ratelimit-remaining-requests: 99\r\n\
         anthropic-ratelimit-requests-remaining: 99\r\nretry-after-ms: 10\r\n\
         openai-processing-ms: 3\r\n\r\n{refused}",
        refused.len()
    );
    let upstream = raw_upstream(vec![Step::Write(answer.into_bytes())]).await;
    let kept = [
        "x-ratelimit-remaining-requests",
        "anthropic-ratelimit-requests-remaining",
        "retry-after-ms",
        "openai-processing-ms",
    ];
    for (keyed, expected) in [(true, 502), (false, 401)] {
        let mut config = config_over(Wire::OpenAi, &upstream);
        if !keyed {
            config.routes[0].key_env = None;
        }
        let gateway = Running::start(config).await;
        let (status, headers, body) = send(
            &client(),
            post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
        )
        .await;
        assert_eq!(status, expected, "{}", String::from_utf8_lossy(&body));
        for name in kept {
            assert_eq!(headers.contains_key(name), !keyed, "{name}: {headers:?}");
        }
    }
}

/// A route key the provider echoes where seawall cuts its text (a message
/// kept to 512 bytes, a code to 64) shows no part of itself: the cut
/// leaves the key's start ending the excerpt, and that is scrubbed too.
#[tokio::test]
async fn a_key_echoed_across_a_cut_shows_no_part_of_itself() {
    let key = common::env("KEY_MAIN").unwrap();
    // Every place of the key about the cuts.
    for pad in 480..=511 {
        let refusal = format!(
            r#"{{"error":{{"message":"{} {key}","type":"invalid_request_error","param":null,"code":"{} {key}"}}}}"#,
            "x".repeat(pad),
            "y".repeat(pad - 450),
        );
        let answer = format!(
            "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{refusal}",
            refusal.len()
        );
        let upstream = raw_upstream(vec![Step::Write(answer.into_bytes())]).await;
        let gateway = Running::start(config_over(Wire::OpenAi, &upstream)).await;
        let (status, _, body) = send(
            &client(),
            post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
        )
        .await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 502, "{text}");
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("xxx"), "{text}");
        let code = error["error"]["provider_code"].as_str().unwrap();
        assert!(code.contains("yyy"), "{text}");
        shows_no_part_of(&key, &text, &[message, code]);
    }
}

/// `text` holds no start of `secret` of 4 bytes or more, and none of
/// `cut`, pieces of it that end where seawall cut them, ends in a start
/// however short as a word of its own (a start glued to the letter
/// before it ends an ordinary word: `was` ends in every `sk-` key's `s`).
fn shows_no_part_of(secret: &str, text: &str, cut: &[&str]) {
    for n in 1..=secret.len() {
        let start = &secret[..n];
        assert!(n < 4 || !text.contains(start), "{start:?} shown: {text}");
        for piece in cut {
            let glued = piece
                .strip_suffix(start)
                .and_then(|before| before.bytes().last())
                .is_some_and(|byte| byte.is_ascii_alphanumeric());
            assert!(!piece.ends_with(start) || glued, "{start:?} ends {piece:?}");
        }
    }
}

/// Through a keyless route each client spends its own account: one
/// client's rejected key, exhausted quota or rate limit says nothing of
/// the route for the next client. Before, one bad key cooled the route
/// until a restart, refusing every client (503 `route_cooling_down`).
#[tokio::test]
async fn one_clients_account_never_cools_a_keyless_route_for_others() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.routes[0].key_env = None;
    config.token_env = None;
    let gateway = Running::start(config).await;
    let url = gateway.url("/v1/chat/completions");
    let ask = |key: &'static str, fault: Option<&'static str>| {
        let mut builder = http::Request::post(url.as_str())
            .header("content-type", "application/json")
            .header("authorization", key);
        if let Some(fault) = fault {
            builder = builder.header("x-chaos-fault", fault);
        }
        builder.body(full(OPENAI_UNARY)).unwrap()
    };
    // The route's first call carries no key at all: still the callers'.
    let anonymous = http::Request::post(url.as_str())
        .header("content-type", "application/json")
        .body(full(OPENAI_UNARY))
        .unwrap();
    assert_eq!(send(&client(), anonymous).await.0, 200);
    for (fault, status) in [
        ("status;code=401;kind=auth", 401),
        (
            "status;code=429;retry_after=48489;kind=insufficient_quota",
            429,
        ),
        ("status;code=429;retry_after=600", 429),
    ] {
        let (got, headers, _) = send(&client(), ask("Bearer sk-client-a", Some(fault))).await;
        assert_eq!(got, status, "{fault}");
        assert_ne!(header(&headers, "x-seawall-code"), "route_cooling_down");
        let (got, _, body) = send(&client(), ask("Bearer sk-client-b", None)).await;
        assert_eq!(
            got,
            200,
            "after {fault}: {}",
            String::from_utf8_lossy(&body)
        );
    }
}

/// Whose account a fallback route spends is the fallback's own: a keyless
/// fallback behind a keyed primary forwards each client's key, so one
/// client's rejected key there never cools it for the others; a keyed
/// fallback behind a keyless primary spends the gateway's key, so its
/// rejection cools the route (later calls skip it without a call).
/// Anthropic's wire: the client's own key in `x-api-key`, the gateway's
/// token in `Authorization`.
#[tokio::test]
async fn a_fallback_route_spends_its_own_account_not_the_primarys() {
    let rejected: Fault = "status;code=401;kind=auth".parse().unwrap();
    let ask = |url: &str, key: &str| post(url, ANTHROPIC_UNARY, &[("x-api-key", key)]);

    // Keyed primary (its key rejected), keyless fallback.
    let main = ChaosServer::builder()
        .fault_for_key("sk-route-main-secret", rejected.clone())
        .start()
        .await
        .unwrap();
    let spare = ChaosServer::builder()
        .fault_for_key("sk-client-a", rejected.clone())
        .start()
        .await
        .unwrap();
    let mut routes = config(Wire::Anthropic, &[("main", &main), ("spare", &spare)]);
    routes.routes[1].key_env = None;
    let gateway = Running::start(routes).await;
    let url = gateway.url("/v1/messages");
    let (status, headers, _) = send(&client(), ask(&url, "sk-client-a")).await;
    assert_eq!(status, 401);
    assert_ne!(header(&headers, "x-seawall-code"), "route_cooling_down");
    let (status, _, body) = send(&client(), ask(&url, "sk-client-b")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));

    // Keyless primary (this client's quota spent), keyed fallback (the
    // gateway's key rejected).
    let main = ChaosServer::builder()
        .fault_for_key(
            "sk-client-a",
            "status;code=429;retry_after=48489;kind=insufficient_quota"
                .parse()
                .unwrap(),
        )
        .start()
        .await
        .unwrap();
    let spare = ChaosServer::builder()
        .fault_for_key("sk-route-spare-secret", rejected)
        .start()
        .await
        .unwrap();
    let mut routes = config(Wire::Anthropic, &[("main", &main), ("spare", &spare)]);
    routes.routes[0].key_env = None;
    let gateway = Running::start(routes).await;
    let url = gateway.url("/v1/messages");
    for _ in 0..2 {
        let (status, _, _) = send(&client(), ask(&url, "sk-client-a")).await;
        assert_ne!(status, 200);
    }
    assert_eq!(spare.journal().len(), 1, "the rejected route is skipped");
}

/// A chat completion, as an OpenAI upstream answers one.
const OPENAI_ANSWER: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;

/// An upstream answering in `script` order (status and body; the last
/// one for every call after), one request per connection; it keeps the
/// head of each call (its request line first). The `n`th answer names itself `req_n` in
/// OpenAI's `x-request-id` and Anthropic's `request-id`. A body that opens
/// with `data:` or `event:` is labelled an event stream, any other JSON.
async fn scripted_upstream(
    script: Vec<(u16, &'static str)>,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::AsyncWriteExt;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&lines);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let Ok(Some(request)) = seawall_test::raw::read_request(&mut stream).await else {
                continue;
            };
            let call = {
                let mut seen = seen.lock().unwrap();
                seen.push(request.head);
                seen.len() - 1
            };
            let (status, body) = script[call.min(script.len() - 1)];
            let label = if body.starts_with("data:") || body.starts_with("event:") {
                "text/event-stream"
            } else {
                "application/json"
            };
            let answer = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {label}\r\ncontent-length: {}\r\nx-request-id: req_{call}\r\nrequest-id: req_{call}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    (format!("http://{addr}"), lines)
}

/// A provider's error passed on keeps the provider's request id, in the
/// header the client's SDK reads it from (openai-python's
/// `APIStatusError.request_id`: `x-request-id`; anthropic's: `request-id`):
/// what the provider's support asks for. It was dropped.
#[tokio::test]
async fn a_providers_error_keeps_its_request_id() {
    for (wire, path, body, refusal, id_header) in [
        (
            Wire::OpenAi,
            "/v1/chat/completions",
            OPENAI_UNARY,
            r#"{"error":{"message":"This model's maximum context length is 8 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            "x-request-id",
        ),
        (
            Wire::Anthropic,
            "/v1/messages",
            ANTHROPIC_UNARY,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#,
            "request-id",
        ),
    ] {
        let (base, calls) = scripted_upstream(vec![(400, refusal)]).await;
        let gateway = Running::start(config_at(wire, &[("main", base)])).await;
        let (status, headers, got) = send(&client(), post(&gateway.url(path), body, &[])).await;
        assert_eq!(status, 400, "{path}: {}", String::from_utf8_lossy(&got));
        assert_eq!(calls.lock().unwrap().len(), 1, "{path}: not retried");
        assert_eq!(header(&headers, id_header), "req_0", "{path}");
        // In the body too, where the wire's own errors carry it:
        // Anthropic's beside `error`. OpenAI's body names the member the
        // error is about instead, as the provider named it.
        let got: serde_json::Value = serde_json::from_slice(&got).unwrap();
        match wire {
            Wire::Anthropic => assert_eq!(got["request_id"], "req_0", "{got}"),
            Wire::OpenAi => assert_eq!(got["error"]["param"], "messages", "{got}"),
        }
    }
    // A 200 that is no answer, asked again until the ladder ends: the last
    // attempt's id.
    let empty = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#;
    let (base, calls) = scripted_upstream(vec![(200, empty)]).await;
    let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
    let (status, headers, got) = send(
        &client(),
        post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
    )
    .await;
    assert_ne!(status, 200, "{}", String::from_utf8_lossy(&got));
    let last = calls.lock().unwrap().len() - 1;
    assert_eq!(header(&headers, "x-request-id"), format!("req_{last}"));
}

/// An answer that may carry no body (a 204, a 304) is whole with its
/// head: hyper's server never reads a body for it and dropped the relay
/// unread, so the request was counted cancelled (a client gone away) for
/// an answer it had. Every endpoint the gateway serves answers JSON, and
/// the stack now fails a 204 or a 304 there (an empty or stray answer):
/// then it is counted failed, never cancelled either. The served branch
/// stays for a classifier that passes one.
#[tokio::test]
async fn an_answer_without_a_body_is_served_not_cancelled() {
    for (status, path) in [(204, "/v1/embeddings"), (304, "/v1/chat/completions")] {
        let (base, _) = scripted_upstream(vec![(status, "")]).await;
        let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
        let (got, _, body) = send(&client(), post(&gateway.url(path), OPENAI_UNARY, &[])).await;
        // The gateway's end of the request is counted a moment after the
        // client has read the answer.
        let started = tokio::time::Instant::now();
        while gateway.gateway.stats().in_flight > 0 && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stats = gateway.gateway.stats();
        assert_eq!(
            (stats.requests, stats.cancelled, stats.in_flight),
            (1, 0, 0),
            "{status}: {stats:?}"
        );
        if got == status {
            assert!(body.is_empty(), "{status}");
            assert_eq!(stats.served, 1, "{status}: {stats:?}");
        } else {
            assert_eq!(stats.failed, 1, "{status} answered {got}: {stats:?}");
        }
    }
}

/// A stream the provider fails before any content (a 200, then its error
/// event), and a stream request answered with one whole answer: the
/// gateway answers each with an error, and the provider's request id is
/// on it as on a unary error (the guard's failure named none, the
/// gateway's own 502 dropped the head's).
#[tokio::test]
async fn a_stream_failed_before_content_keeps_the_request_id() {
    let quota = "data: {\"error\":{\"message\":\"You exceeded your current quota.\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}\n\n";
    let whole = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#;
    for (body, expected) in [(quota, 429), (whole, 502)] {
        let (base, calls) = scripted_upstream(vec![(200, body)]).await;
        let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
        let (status, headers, got) = send(
            &client(),
            post(&gateway.url("/v1/chat/completions"), OPENAI_STREAM, &[]),
        )
        .await;
        assert_eq!(status, expected, "{}", String::from_utf8_lossy(&got));
        let last = calls.lock().unwrap().len() - 1;
        assert_eq!(
            header(&headers, "x-request-id"),
            format!("req_{last}"),
            "{body}"
        );
    }
}

/// An OpenAI SDK given the gateway's bare address as its base URL (no
/// `/v1`) calls `/chat/completions` and `/models`: served as under `/v1`
/// (they were 404s). The query a client's URL carries goes upstream as
/// sent (anthropic-python's beta client posts `/v1/messages?beta=true`;
/// it was dropped).
#[tokio::test]
async fn paths_without_v1_and_queries_are_served() {
    let (base, calls) = scripted_upstream(vec![(200, OPENAI_ANSWER)]).await;
    let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
    let (status, _, got) = send(
        &client(),
        post(&gateway.url("/chat/completions"), OPENAI_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    let models = http::Request::get(gateway.url("/models"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(full(""))
        .unwrap();
    let (status, _, listed) = send(&client(), models).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&listed));

    let message = r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}"#;
    let (anthropic, anthropic_calls) = scripted_upstream(vec![(200, message)]).await;
    let gateway = Running::start(config_at(Wire::Anthropic, &[("main", anthropic)])).await;
    let (status, _, got) = send(
        &client(),
        post(&gateway.url("/v1/messages?beta=true"), ANTHROPIC_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    assert_eq!(
        request_lines(&calls),
        ["POST /v1/chat/completions HTTP/1.1"]
    );
    assert_eq!(
        request_lines(&anthropic_calls),
        ["POST /v1/messages?beta=true HTTP/1.1"]
    );
}

/// The request lines of the calls a [`scripted_upstream`] kept.
fn request_lines(calls: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
    let calls = calls.lock().unwrap();
    let line = |head: &String| head.lines().next().unwrap_or("").to_owned();
    calls.iter().map(line).collect()
}

/// The gateway names itself in each request it sends upstream, after the
/// intermediaries the client's request came through (RFC 9110, 7.6.3: an
/// HTTP-to-HTTP gateway must).
#[tokio::test]
async fn the_upstream_request_says_it_came_via_the_gateway() {
    for (sent, seen) in [
        (None, "1.1 seawall"),
        (Some("1.0 corp-proxy"), "1.0 corp-proxy, 1.1 seawall"),
    ] {
        let (base, calls) = scripted_upstream(vec![(200, OPENAI_ANSWER)]).await;
        let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
        let via: Vec<_> = sent.map(|via| ("via", via)).into_iter().collect();
        let url = gateway.url("/v1/chat/completions");
        let (status, _, got) = send(&client(), post(&url, OPENAI_UNARY, &via)).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
        let head = calls.lock().unwrap().concat();
        // Field lines of one name are one list, in order.
        let list: Vec<_> = head
            .lines()
            .filter_map(|line| line.split_once(':'))
            .filter(|(name, _)| name.eq_ignore_ascii_case("via"))
            .map(|(_, value)| value.trim())
            .collect();
        assert_eq!(list.join(", "), seen, "{head}");
    }
}

/// An app whose base URL is the gateway keeps its other calls on the same
/// models: embeddings and Anthropic's token count go to the same path on
/// the route, retried like any call, their answers passed as sent (never
/// checked as chat answers).
#[tokio::test]
async fn embeddings_and_token_counts_go_through_the_stack() {
    let embedding = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
    let overloaded = r#"{"error":{"message":"The server is overloaded.","type":"server_error","param":null,"code":null}}"#;
    let count = r#"{"input_tokens":12}"#;
    for (wire, path, body, answer, failing) in [
        (
            Wire::OpenAi,
            "/v1/embeddings",
            r#"{"model":"m","input":"hi"}"#,
            embedding,
            (503, overloaded),
        ),
        (
            Wire::Anthropic,
            "/v1/messages/count_tokens",
            r#"{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}"#,
            count,
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
        ),
    ] {
        let (base, calls) = scripted_upstream(vec![failing, (200, answer)]).await;
        let gateway = Running::start(config_at(wire, &[("main", base)])).await;
        let (status, _, got) = send(&client(), post(&gateway.url(path), body, &[])).await;
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&got));
        assert_eq!(got, answer.as_bytes(), "{path}: the bytes as sent");
        assert_eq!(
            request_lines(&calls),
            vec![format!("POST {path} HTTP/1.1"); 2],
            "retried once"
        );
    }
}

/// An upstream that ignores `"stream": true` and answers whole: the
/// client's SDK would read the JSON as an event stream with no event and
/// end as if done. The gateway says what happened instead.
#[tokio::test]
async fn a_stream_request_answered_whole_is_an_error_not_an_empty_stream() {
    let answer = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#;
    let (base, calls) = scripted_upstream(vec![(200, answer)]).await;
    let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
    let url = gateway.url("/v1/chat/completions");
    let (status, headers, body) = send(&client(), post(&url, OPENAI_STREAM, &[])).await;
    assert_eq!(status, 502, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-code"), "protocol_violation");
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");
    assert_eq!(header(&headers, "x-seawall-served-by"), "main");
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stream request with one whole answer"),
        "{error}"
    );
    assert_eq!(calls.lock().unwrap().len(), 1);
    // Asked without a stream, the same answer passes.
    let (status, _, body) = send(&client(), post(&url, OPENAI_UNARY, &[])).await;
    assert_eq!(status, 200);
    assert_eq!(body, answer.as_bytes());
}

/// A refusal is an answer the client's SDK reads (OpenAI's
/// `message.refusal`, Anthropic's `stop_reason: "refusal"`): it passes as
/// the provider sent it, once — not a 502, not an error event after the
/// provider's own end.
#[tokio::test]
async fn a_refusal_passes_as_the_provider_sent_it() {
    let (status, headers, body, _) = ask_chaos(
        Wire::OpenAi,
        "/v1/chat/completions",
        OPENAI_UNARY,
        "refusal",
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        answer["choices"][0]["message"]["refusal"].is_string(),
        "{answer}"
    );
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");

    let (status, _, body, (chaos, _)) = ask_chaos(
        Wire::Anthropic,
        "/v1/messages",
        ANTHROPIC_STREAM,
        "refusal;tokens=3",
    )
    .await;
    assert_eq!(status, 200);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("\"stop_reason\":\"refusal\""), "{text}");
    assert!(
        text.trim_end().ends_with("{\"type\":\"message_stop\"}"),
        "{text}"
    );
    assert!(!text.contains("event: error"), "{text}");
    assert_eq!(chaos.journal().len(), 1);
}

/// An upstream whose certificate the gateway refuses (unknown issuer, as
/// expired or misnamed): a configuration to fix, the same on every
/// attempt. One handshake, not a ladder of them, and a 502 naming it.
#[tokio::test]
async fn an_upstream_certificate_refused_is_one_attempt() {
    let (port, handshakes) = seawall_test::tls::refused_certificate_server().await;
    let gateway = Running::start(config_at(
        Wire::OpenAi,
        &[("main", format!("https://localhost:{port}"))],
    ))
    .await;
    let (status, headers, body) = send(
        &client(),
        post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 502, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-code"), "transport");
    assert!(String::from_utf8_lossy(&body).contains("certificate"));
    assert_eq!(handshakes.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A route key too short to be told from ordinary words could not be
/// scrubbed from error text: the gateway refuses it at start.
#[test]
fn a_route_key_too_short_to_scrub_or_unsendable_is_refused() {
    let config = config_over(Wire::OpenAi, "http://127.0.0.1:9");
    let short = |name: &str| match name {
        "KEY_MAIN" => Some("k-12345".to_owned()),
        other => env(other),
    };
    let err = Gateway::with_env(config.clone(), short).unwrap_err();
    assert!(matches!(err, GatewayError::Unsafe(_)), "{err}");
    assert!(err.to_string().contains("KEY_MAIN"), "{err}");
    assert!(!err.to_string().contains("k-12345"), "{err}");
    assert!(Gateway::with_env(config.clone(), env).is_ok());
    // A key with a line end (a file written on Windows) or a space.
    for bad in ["sk-route-main-secret\r", "sk-route main-secret"] {
        let key = |name: &str| match name {
            "KEY_MAIN" => Some(bad.to_owned()),
            other => env(other),
        };
        let err = Gateway::with_env(config.clone(), key).unwrap_err();
        assert!(matches!(err, GatewayError::Config(_)), "{err}");
        assert!(err.to_string().contains("KEY_MAIN"), "{err}");
        assert!(!err.to_string().contains("sk-route"), "{err}");
    }
}

/// A gateway token no client could present (a line end from a file
/// written on Windows, a space, a character outside ASCII) or too short
/// is refused at start, its variable named and its value not shown: it
/// would start, answer 401 to every call and say all is well at /healthz.
#[test]
fn a_gateway_token_too_short_or_unsendable_is_refused() {
    let config = config_over(Wire::OpenAi, "http://127.0.0.1:9");
    for bad in [
        format!("{TOKEN}\r"),
        format!("{TOKEN} "),
        format!("gateway token {TOKEN}"),
        format!("{TOKEN}\u{e9}"),
        format!("\t{TOKEN}"),
    ] {
        let token = |name: &str| match name {
            "GATEWAY_TOKEN" => Some(bad.clone()),
            other => env(other),
        };
        let err = Gateway::with_env(config.clone(), token).unwrap_err();
        assert!(matches!(err, GatewayError::Config(_)), "{bad:?}: {err}");
        assert!(err.to_string().contains("GATEWAY_TOKEN"), "{err}");
        assert!(!err.to_string().contains(TOKEN), "{err}");
    }
    let short = |name: &str| match name {
        "GATEWAY_TOKEN" => Some("tok-0123456789a".to_owned()),
        other => env(other),
    };
    let err = Gateway::with_env(config.clone(), short).unwrap_err();
    assert!(matches!(err, GatewayError::Unsafe(_)), "{err}");
    assert!(err.to_string().contains("16 characters"), "{err}");
    assert!(!err.to_string().contains("tok-0123456789a"), "{err}");
    assert!(Gateway::with_env(config, env).is_ok());
}

/// One call to `path` with `body`, its fault picked by header, through a
/// fresh gateway of `wire` over a fresh chaos server; both are returned,
/// for the journal and the gateway's counts.
async fn ask_chaos(
    wire: Wire,
    path: &str,
    body: &'static str,
    fault: &str,
) -> (
    http::StatusCode,
    http::HeaderMap,
    Bytes,
    (seawall_chaos::ChaosHandle, Running),
) {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(wire, &[("main", &chaos)])).await;
    let (status, headers, got) = send(
        &client(),
        post(&gateway.url(path), body, &[("x-chaos-fault", fault)]),
    )
    .await;
    (status, headers, got, (chaos, gateway))
}

#[tokio::test]
async fn failures_before_content_keep_the_status_and_retry_after() {
    // Longer than the deadline: the ladder cannot wait it out.
    let (status, headers, body, (_, gateway)) = ask_chaos(
        Wire::OpenAi,
        "/v1/chat/completions",
        OPENAI_UNARY,
        "status;code=429;retry_after=30",
    )
    .await;
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "retry-after"), "30");
    assert_eq!(header(&headers, "x-should-retry"), "false");
    let code = header(&headers, "x-seawall-code").to_owned();
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["seawall_code"], code.as_str());
    assert_eq!(code, "rate_limited");
    // The provider's own code, as an SDK reads it.
    assert_eq!(error["error"]["code"], "rate_limit_exceeded", "{error}");
    let text = String::from_utf8_lossy(&body);
    assert!(!text.contains("sk-route"), "no key in errors: {text}");
    for (name, value) in &headers {
        assert!(
            !value.to_str().unwrap_or("").contains("sk-route"),
            "no key in header {name}"
        );
    }
    assert_eq!(gateway.gateway.stats().failed, 1);
}

/// After a quota wall the route cools down, and the gateway refuses calls
/// to it without making one, answering as the wall did: 429 with the time left
/// (a 503 had async-openai, which retries every 5xx and ignores
/// `x-should-retry`, sleep out the wall's `Retry-After`, and
/// openai-python raise a server error where the limit's own answer had
/// been a `RateLimitError`); a wall keeps OpenAI's `insufficient_quota`
/// type.
#[tokio::test]
async fn a_route_cooling_after_a_quota_wall_or_a_rate_limit_answers_as_it() {
    for (fault, met, quota, longest) in [(
        "status;code=429;retry_after=48489;kind=insufficient_quota",
        "quota_exhausted",
        true,
        48_489,
    )] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
        let url = gateway.url("/v1/chat/completions");
        let (status, headers, body) = send(
            &client(),
            post(&url, OPENAI_UNARY, &[("x-chaos-fault", fault)]),
        )
        .await;
        assert_eq!(status, 429, "{fault}");
        assert_eq!(header(&headers, "x-seawall-code"), met);
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        // OpenAI's own type for a quota wall: an SDK that retries on its
        // own (async-openai) stops there instead of sleeping out the
        // Retry-After.
        let walled = error["error"]["type"] == "insufficient_quota";
        assert_eq!(walled, quota, "{error}");
        let (status, headers, body) = send(&client(), post(&url, OPENAI_UNARY, &[])).await;
        assert_eq!(status, 429, "{fault}: {}", String::from_utf8_lossy(&body));
        assert_eq!(header(&headers, "x-seawall-code"), "route_cooling_down");
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let walled = error["error"]["type"] == "insufficient_quota";
        assert_eq!(walled, quota, "{error}");
        assert_eq!(error["error"]["code"], "route_cooling_down");
        assert_eq!(header(&headers, "x-should-retry"), "false");
        let left: u64 = header(&headers, "retry-after").parse().unwrap();
        assert!((longest - 5..=longest).contains(&left), "{fault}: {left}");
        assert_eq!(chaos.journal().len(), 1, "the cooling route was not called");
    }
    // A rate limit longer than the test config's 10 s deadline (not waited
    // for) whose words name its model ("Rate limit reached for gpt-x in
    // organization …", the model's limit) cools that model on the route,
    // not the route: the gateway names the model it read from the body
    // before the first attempt is sent, so the next operation for gpt-x
    // is refused without a call, as the limit answered, and the refusal
    // names the model; a call for another model is answered.
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let url = gateway.url("/v1/chat/completions");
    let fault = "status;code=429;retry_after=30";
    let (status, headers, _) = send(
        &client(),
        post(&url, OPENAI_UNARY, &[("x-chaos-fault", fault)]),
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(header(&headers, "x-seawall-code"), "rate_limited");
    let (status, headers, body) = send(&client(), post(&url, OPENAI_UNARY, &[])).await;
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 429, "{body}");
    assert_eq!(header(&headers, "x-seawall-code"), "route_cooling_down");
    assert!(
        body.contains("model gpt-x cooling down on route main after rate_limited"),
        "{body}"
    );
    let left: u64 = header(&headers, "retry-after").parse().unwrap();
    assert!((25..=30).contains(&left), "{left}");
    assert_eq!(chaos.journal().len(), 1, "gpt-x was not called again");
    let other = r#"{"model":"gpt-y","messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, body) = send(&client(), post(&url, other, &[])).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(chaos.journal().len(), 2);
}

#[tokio::test]
async fn anthropic_failure_before_content_is_in_anthropic_shape() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::Anthropic, &[("main", &chaos)])).await;
    let (status, headers, body) = send(
        &client(),
        post(
            &gateway.url("/v1/messages"),
            ANTHROPIC_UNARY,
            &[("x-chaos-fault", "status;code=400;kind=context_length")],
        ),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(header(&headers, "x-seawall-code"), "context_too_long");
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["type"], "error");
    // Anthropic's own type, as anthropic-python and apps read it, with
    // seawall's code beside it.
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(error["error"]["seawall_code"], "context_too_long");
    assert_eq!(error["error"]["provider_type"], "invalid_request_error");
    // One attempt: a context-length 400 is never retried.
    assert_eq!(chaos.journal().len(), 1);
    // Through an OpenAI route, OpenAI's own code too.
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let (status, _, body) = send(
        &client(),
        post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_UNARY,
            &[("x-chaos-fault", "status;code=400;kind=context_length")],
        ),
    )
    .await;
    assert_eq!(status, 400);
    // What openai-python's `BadRequestError` reads: OpenAI's own `code`
    // and `type` (agent frameworks trim their history on this code).
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], "context_length_exceeded", "{error}");
    assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
    assert_eq!(
        error["error"]["seawall_code"], "context_too_long",
        "{error}"
    );
    assert_eq!(error["error"]["provider_code"], "context_length_exceeded");
}

#[tokio::test]
async fn two_hundred_concurrent_streams() {
    const STREAMS: usize = 200;
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let url = gateway.url("/v1/chat/completions");
    let tasks: Vec<_> = (0..STREAMS)
        .map(|i| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move {
                let id = format!("stream-{i}");
                let (status, headers, body) = send(
                    &client,
                    post(
                        &url,
                        OPENAI_STREAM,
                        &[
                            ("x-chaos-fault", "ok;tokens=20;delay_ms=5"),
                            ("x-chaos-request-id", &id),
                        ],
                    ),
                )
                .await;
                assert_eq!(status, 200);
                assert_eq!(header(&headers, "x-seawall-attempts"), "1");
                let text: String = data_lines(&body)
                    .iter()
                    .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
                    .filter_map(|v| {
                        v["choices"][0]["delta"]["content"]
                            .as_str()
                            .map(str::to_owned)
                    })
                    .collect();
                assert_eq!(text, seawall_chaos::answer_text(20), "{id}");
                assert_eq!(data_lines(&body).last().map(String::as_str), Some("[DONE]"));
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let rows = chaos
        .settled_journal(Duration::from_secs(5), |row| {
            row.request_id
                .as_deref()
                .is_some_and(|id| id.starts_with("stream-"))
        })
        .await;
    assert_eq!(rows.len(), STREAMS);
    let mut ids: Vec<_> = rows.iter().filter_map(|r| r.request_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), STREAMS, "one upstream call per stream");
    for row in &rows {
        assert_eq!(row.outcome, Outcome::Completed, "{row:?}");
        assert_eq!(row.tokens_written, 20);
    }
    assert_eq!(gateway.gateway.stats().served, STREAMS as u64);
    // hyper drops a finished body a moment after the client read its end.
    for _ in 0..50 {
        if gateway.gateway.stats().in_flight == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gateway.gateway.stats().in_flight, 0);
}

#[tokio::test]
async fn bodies_over_the_cap_get_413_unread() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let url = gateway.url("/v1/chat/completions");
    // Announced at 9 MiB, and never sent: the answer cannot wait for it.
    let never = StreamBody::new(futures_util::stream::pending::<
        Result<http_body::Frame<Bytes>, BoxError>,
    >());
    let request = http::Request::post(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-length", 9 << 20)
        .body(BodyExt::boxed(never))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), client.request(request))
        .await
        .expect("413 without reading the body")
        .unwrap();
    assert_eq!(response.status(), 413);
    assert_eq!(response.headers()["x-seawall-code"], "request_too_large");
    // Chunked, no length: cut at the cap.
    let chunk = Bytes::from(vec![b' '; 1 << 20]);
    let chunks = futures_util::stream::iter(
        (0..9).map(move |_| Ok::<_, BoxError>(http_body::Frame::data(chunk.clone()))),
    );
    let request = http::Request::post(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(BodyExt::boxed(StreamBody::new(chunks)))
        .unwrap();
    let (status, _, _) = send(&client, request).await;
    assert_eq!(status, 413);
    // Under the cap is fine, past axum's own 2 MB default.
    let mut big =
        String::from(r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"pad":""#);
    big.push_str(&" ".repeat(3 << 20));
    big.push_str("\"}");
    let request = http::Request::post(&url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(full(big))
        .unwrap();
    let (status, _, body) = send(&client, request).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        chaos.journal().len(),
        1,
        "only the request under the cap went upstream"
    );
    assert_eq!(gateway.gateway.stats().refused, 2);
}

#[tokio::test]
async fn keyed_routes_need_the_gateway_token() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let url = gateway.url("/v1/chat/completions");
    for auth in [
        None,
        Some("Bearer wrong-token-wrong-token"),
        Some("Bearer "),
    ] {
        let mut builder = http::Request::post(&url);
        if let Some(auth) = auth {
            builder = builder.header("authorization", auth);
        }
        let (status, headers, body) =
            send(&client, builder.body(full(OPENAI_UNARY)).unwrap()).await;
        assert_eq!(status, 401);
        assert_eq!(header(&headers, "x-seawall-code"), "auth");
        assert_eq!(header(&headers, "x-should-retry"), "false");
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["error"]["code"], "auth");
    }
    assert!(chaos.journal().is_empty(), "nothing went upstream");
    // The token in its own header works too.
    let request = http::Request::post(&url)
        .header("x-seawall-token", TOKEN)
        .body(full(OPENAI_UNARY))
        .unwrap();
    assert_eq!(send(&client, request).await.0, 200);
    let (status, _, _) = send(&client, post(&url, OPENAI_UNARY, &[])).await;
    assert_eq!(status, 200);
}

/// A variable set to nothing (an `export KEY=` whose value went missing)
/// is said to be empty, not unset: the user looks for the value, not for
/// the export.
#[test]
fn a_variable_set_but_empty_is_said_so() {
    let config = config_over(Wire::OpenAi, "http://127.0.0.1:9");
    for var in ["GATEWAY_TOKEN", "KEY_MAIN"] {
        let empty = |name: &str| {
            if name == var {
                Some(String::new())
            } else {
                env(name)
            }
        };
        let err = Gateway::with_env(config.clone(), empty).unwrap_err();
        assert!(matches!(err, GatewayError::MissingEnv { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&format!("{var} is set but empty")), "{text}");
        assert!(!text.contains("not set"), "{text}");
        let unset = |name: &str| if name == var { None } else { env(name) };
        let text = Gateway::with_env(config.clone(), unset)
            .unwrap_err()
            .to_string();
        assert!(text.contains(&format!("{var} is not set")), "{text}");
    }
}

#[test]
fn unsafe_configurations_do_not_start() {
    let routes = Config::from_routes(&["main=openai@http://127.0.0.1:9"]).unwrap();
    // A keyed route without a gateway token.
    let mut keyed = routes.clone();
    keyed.set_route_key("main", "KEY_MAIN").unwrap();
    let err = Gateway::with_env(keyed.clone(), env).unwrap_err();
    assert!(matches!(err, GatewayError::Unsafe(_)), "{err}");
    // Beyond loopback without a token.
    let mut open = routes.clone();
    open.listen = "0.0.0.0:8787".parse().unwrap();
    let err = Gateway::with_env(open, env).unwrap_err();
    assert!(err.to_string().contains("not a loopback address"), "{err}");
    // A key variable that is not set: named, never a value.
    keyed.token_env = Some("GATEWAY_TOKEN".into());
    keyed.set_route_key("main", "NOT_SET").unwrap();
    let err = Gateway::with_env(keyed.clone(), env).unwrap_err();
    assert!(err.to_string().contains("NOT_SET"), "{err}");
    // The key itself written where its variable's name belongs: not shown.
    keyed.set_route_key("main", "sk-proj-secret0123").unwrap();
    let err = Gateway::with_env(keyed, env).unwrap_err();
    assert!(!err.to_string().contains("secret0123"), "{err}");
    assert!(err.to_string().contains("is it the key itself"), "{err}");
    // Keyless and on loopback is fine.
    Gateway::with_env(routes, env).unwrap();
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_upstream_call() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let response = client
        .request(post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_STREAM,
            &[
                ("x-chaos-fault", "ok;tokens=2000;delay_ms=5"),
                ("x-chaos-request-id", "leaver"),
            ],
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.data_ref().is_some_and(|d| !d.is_empty()));
    drop(body);
    drop(client);
    let row = tokio::time::timeout(Duration::from_secs(5), chaos.wait_for_request("leaver"))
        .await
        .expect("the upstream call ends with the client");
    assert_eq!(row.outcome, Outcome::ClientDisconnected);
    assert!(row.tokens_written < 2000);
    // Counted as cancelled, not as a failure; the route stays healthy.
    gateway.until_cancelled(1, Duration::from_secs(1)).await;
    let stats = gateway.gateway.stats();
    assert_eq!(
        (stats.cancelled, stats.failed, stats.interrupted),
        (1, 0, 0)
    );
    let (status, _, _) = send(
        &common::client(),
        post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_client_that_goes_away_before_content_cancels_too() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    // Only the client's impatience may end this call, not the guard.
    config.policy.first_byte_timeout = Some(Duration::from_secs(5));
    let gateway = Running::start(config).await;
    let client = client();
    let request = client.request(post(
        &gateway.url("/v1/chat/completions"),
        OPENAI_STREAM,
        &[
            ("x-chaos-fault", "slow_first_byte;ms=1500"),
            ("x-chaos-request-id", "impatient"),
        ],
    ));
    // Give up while the gateway still holds the stream back.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), request)
            .await
            .is_err()
    );
    drop(client);
    let row = tokio::time::timeout(Duration::from_secs(5), chaos.wait_for_request("impatient"))
        .await
        .expect("the upstream call ends with the client");
    assert_eq!(row.outcome, Outcome::ClientDisconnected);
    assert_eq!(row.tokens_written, 0, "{row:?}");
    gateway.until_cancelled(1, Duration::from_secs(1)).await;
    assert_eq!(gateway.gateway.stats().cancelled, 1);
    assert_eq!(gateway.gateway.stats().failed, 0);
}

#[tokio::test]
async fn shutdown_lets_in_flight_streams_finish() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let response = client
        .request(post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_STREAM,
            &[("x-chaos-fault", "ok;tokens=30;delay_ms=20")],
        ))
        .await
        .unwrap();
    gateway.shutdown();
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .unwrap()
        .expect("the stream finishes after the signal")
        .to_bytes();
    let data = data_lines(&body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let task = gateway.task.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve returns once drained")
        .unwrap()
        .unwrap();
    // No longer listening.
    assert!(tokio::net::TcpStream::connect(gateway.addr).await.is_err());
}

/// What outlives the grace period ends in the gateway's own words, not a
/// dropped connection: a stream with the final error event and a failed
/// body, a request not yet answered with a 503 worth sending again.
/// Before, the connections were aborted: a stream stopped mid-body with
/// no event and no end of its chunked body, and a waiting request got no
/// bytes at all; the log called both `cancelled`.
#[tokio::test]
async fn shutdown_cuts_what_outlives_the_grace_period() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.shutdown_grace = Duration::from_millis(200);
    let mut gateway = Running::start(config).await;
    let response = client()
        .request(post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_STREAM,
            &[("x-chaos-fault", "ok;tokens=1000;delay_ms=20")],
        ))
        .await
        .unwrap();
    // A stream whose answer has not begun: held by the guard.
    let request = post(
        &gateway.url("/v1/chat/completions"),
        OPENAI_STREAM,
        &[("x-chaos-fault", "hang_after_headers")],
    );
    let waiting = tokio::spawn(async move { send(&client(), request).await });
    let arrived = tokio::time::timeout(Duration::from_secs(5), async {
        while chaos.journal().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(arrived.is_ok(), "both requests reached the upstream");
    let started = std::time::Instant::now();
    gateway.shutdown();
    let (body, end) = read_to_end(response.into_body()).await;
    // Its body fails after the event: a clean end would pass the cut
    // answer for a whole one (it used to end cleanly).
    assert_eq!(end, BodyEnd::Failed);
    let data = data_lines(&body);
    let last: serde_json::Value =
        serde_json::from_str(data.last().expect("events")).expect("a JSON error event");
    assert_eq!(last["error"]["code"], "stream_interrupted", "{last}");
    let message = last["error"]["message"].as_str().unwrap();
    assert!(message.contains("shutting down"), "{message}");
    assert!(
        !data.iter().any(|line| line == "[DONE]"),
        "a cut stream never ends as done"
    );
    let (status, headers, body) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiting request is answered")
        .unwrap();
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-code"), "provider_unavailable");
    assert_eq!(header(&headers, "x-should-retry"), "true");
    assert_eq!(header(&headers, "retry-after"), "2");
    let task = gateway.task.take().unwrap();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve returns after the grace period")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn health_and_unknown_paths() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let request = http::Request::get(gateway.url("/healthz"))
        .body(full(Bytes::new()))
        .unwrap();
    let (status, _, body) = send(&client, request).await;
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(health["status"], "ok");
    // The wrong wire for the model's routes.
    let (status, _, body) = send(
        &client,
        post(&gateway.url("/v1/messages"), ANTHROPIC_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 400);
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["type"], "error");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/chat/completions")
    );
}

/// A configuration with two routes to `chaos`: `main` on OpenAI's wire,
/// `claude` on Anthropic's.
fn openai_and_claude(chaos: &seawall_chaos::ChaosHandle) -> Config {
    let mut config = config(Wire::OpenAi, &[("main", chaos)]);
    let mut claude = config.routes[0].clone();
    claude.name = "claude".into();
    claude.wire = Wire::Anthropic;
    config.routes.push(claude);
    config
}

/// `GET /v1/models` lists the configured models of the caller's wire
/// (OpenAI's shape, or Anthropic's with `anthropic-version`), never the
/// catch-all, and only to a client holding the token.
#[tokio::test]
async fn the_configured_models_are_listed_per_wire() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = openai_and_claude(&chaos);
    for (model, route) in [("gpt-b", "main"), ("gpt-a", "main"), ("claude-c", "claude")] {
        config.models.insert(model.into(), vec![route.into()]);
    }
    let gateway = Running::start(config).await;
    let list = |headers: &[(&str, &str)]| {
        let mut builder = http::Request::get(gateway.url("/v1/models"));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(full(Bytes::new())).unwrap()
    };
    let bearer = format!("Bearer {TOKEN}");
    let (status, _, body) = send(&client(), list(&[("authorization", &bearer)])).await;
    assert_eq!(status, 200);
    let openai: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(openai["object"], "list");
    let ids: Vec<_> = openai["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, ["gpt-a", "gpt-b"]);
    assert_eq!(openai["data"][0]["object"], "model");

    let (status, _, body) = send(
        &client(),
        list(&[("x-api-key", TOKEN), ("anthropic-version", "2023-06-01")]),
    )
    .await;
    assert_eq!(status, 200);
    let anthropic: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(anthropic["data"][0]["id"], "claude-c");
    assert_eq!(anthropic["data"][0]["type"], "model");
    assert_eq!(anthropic["data"].as_array().unwrap().len(), 1);
    assert_eq!(anthropic["has_more"], false);
    assert_eq!(anthropic["last_id"], "claude-c");

    let (status, headers, _) = send(&client(), list(&[])).await;
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), "Bearer");
}

/// Both SDKs' `models.retrieve` (`GET /v1/models/{id}`) is served as the
/// list shows the model, in the wire the call speaks; a model no route
/// serves over that wire is a 404 in its shape (it was a 404 for every
/// model, in the shape of a path the gateway does not serve).
#[tokio::test]
async fn a_configured_model_is_retrieved_as_listed() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = openai_and_claude(&chaos);
    config.models.remove("*");
    for (model, route) in [
        ("gpt-a", "main"),
        ("org/gpt-b", "main"),
        ("claude-c", "claude"),
    ] {
        config.models.insert(model.into(), vec![route.into()]);
    }
    let gateway = Running::start(config).await;
    let bearer = format!("Bearer {TOKEN}");
    let openai: &[(&str, &str)] = &[("authorization", &bearer)];
    let anthropic: &[(&str, &str)] = &[("x-api-key", TOKEN), ("anthropic-version", "2023-06-01")];
    let get = |path: &str, headers: &[(&str, &str)]| {
        let mut builder = http::Request::get(gateway.url(path));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(full(Bytes::new())).unwrap()
    };
    let json = |body: &[u8]| serde_json::from_slice::<serde_json::Value>(body).unwrap();
    for (headers, id) in [
        (openai, "gpt-a"),
        (openai, "org/gpt-b"),
        (anthropic, "claude-c"),
    ] {
        let (status, _, list) = send(&client(), get("/v1/models", headers)).await;
        assert_eq!(status, 200);
        let listed = json(&list)["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap();
        for path in [format!("/v1/models/{id}"), format!("/models/{id}")] {
            if headers == anthropic && path.starts_with("/models") {
                continue;
            }
            let (status, headers, body) = send(&client(), get(&path, headers)).await;
            assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
            assert_eq!(header(&headers, "content-type"), "application/json");
            assert_eq!(json(&body), listed, "{path}");
        }
    }
    // Unknown, or served only over the other wire: the wire's 404.
    for (headers, id) in [(openai, "nope"), (openai, "claude-c"), (anthropic, "gpt-a")] {
        let (status, _, body) = send(&client(), get(&format!("/v1/models/{id}"), headers)).await;
        assert_eq!(status, 404, "{id}");
        let body = json(&body);
        if headers == anthropic {
            assert_eq!(body["type"], "error", "{body}");
            assert_eq!(body["error"]["type"], "not_found_error", "{body}");
            assert_eq!(body["error"]["seawall_code"], "not_found", "{body}");
        } else {
            assert_eq!(body["error"]["code"], "not_found", "{body}");
        }
        assert!(
            body.to_string().contains("no route serves model"),
            "{id}: {body}"
        );
    }
    let (status, _, _) = send(&client(), get("/v1/models/gpt-a", &[])).await;
    assert_eq!(status, 401);

    // `*` serves any name over its wire: any is found there.
    let gateway = Running::start(common::config(Wire::OpenAi, &[("main", &chaos)])).await;
    let request = http::Request::get(gateway.url("/v1/models/any-model"))
        .header("authorization", &bearer)
        .body(full(Bytes::new()))
        .unwrap();
    let (status, _, body) = send(&client(), request).await;
    assert_eq!(status, 200);
    assert_eq!(json(&body)["id"], "any-model");
}

/// A model id whose percent-encoding is no UTF-8 (`%FF`) names no model:
/// without the token it is the 401 every other call gets, with it the
/// wire's 404 `not_found`, not the router's plain-text 400 before the
/// token was looked at.
#[tokio::test]
async fn a_model_id_that_is_no_utf8_is_the_wires_404_after_the_token() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    // `*` routed: any name that decodes would be found.
    let gateway = Running::start(openai_and_claude(&chaos)).await;
    let bearer = format!("Bearer {TOKEN}");
    let openai: &[(&str, &str)] = &[("authorization", &bearer)];
    let anthropic: &[(&str, &str)] = &[("x-api-key", TOKEN), ("anthropic-version", "2023-06-01")];
    let get = |path: &str, headers: &[(&str, &str)]| {
        let mut builder = http::Request::get(gateway.url(path));
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(full(Bytes::new())).unwrap()
    };
    for path in [
        "/v1/models/%FF",
        "/models/gpt-%C3%28",
        "/v1/models/org/%80x",
    ] {
        let (status, headers, body) = send(&client(), get(path, &[])).await;
        assert_eq!(status, 401, "{path}: {}", String::from_utf8_lossy(&body));
        assert_eq!(header(&headers, "x-seawall-code"), "auth", "{path}");
        for (wire, with) in [("openai", openai), ("anthropic", anthropic)] {
            let (status, headers, body) = send(&client(), get(path, with)).await;
            assert_eq!(status, 404, "{path}: {}", String::from_utf8_lossy(&body));
            assert_eq!(header(&headers, "content-type"), "application/json");
            assert_eq!(header(&headers, "x-seawall-code"), "not_found", "{path}");
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            if wire == "anthropic" {
                assert_eq!(body["type"], "error", "{body}");
                assert_eq!(body["error"]["type"], "not_found_error", "{body}");
                assert_eq!(body["error"]["seawall_code"], "not_found", "{body}");
            } else {
                assert_eq!(body["error"]["code"], "not_found", "{body}");
            }
        }
    }
}

/// A background response (`"background": true`) is stored upstream to be
/// fetched later by its id, which the gateway cannot relay: refused before
/// any call, in OpenAI's shape naming the member, instead of billed and
/// never readable.
#[tokio::test]
async fn a_background_response_is_refused_before_any_call() {
    let done = r#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}]}"#;
    let (base, calls) = scripted_upstream(vec![(200, done)]).await;
    let gateway = Running::start(config_at(Wire::OpenAi, &[("main", base)])).await;
    let background = r#"{"model":"gpt-x","input":"hi","background":true}"#;
    let (status, headers, body) = send(
        &client(),
        post(&gateway.url("/v1/responses"), background, &[]),
    )
    .await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["param"], "background", "{body}");
    assert_eq!(body["error"]["code"], "bad_request", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("background"),
        "{body}"
    );
    assert_eq!(header(&headers, "x-seawall-code"), "bad_request");
    assert!(calls.lock().unwrap().is_empty(), "no call upstream");
    assert_eq!(gateway.gateway.stats().refused, 1);
    // Not in the background: relayed.
    let foreground = r#"{"model":"gpt-x","input":"hi","background":false}"#;
    let (status, _, body) = send(
        &client(),
        post(&gateway.url("/v1/responses"), foreground, &[]),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(calls.lock().unwrap().len(), 1);
}

/// A Responses call may name no model (a stored prompt names its own;
/// openai-python's `responses.create` makes `model` optional): through
/// `*` it goes upstream as sent, not renamed though the route renames;
/// every other endpoint, and a gateway without `*`, still refuses it.
#[tokio::test]
async fn a_response_naming_no_model_goes_through_any_model() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.routes[0].model = Some("gpt-renamed".into());
    let gateway = Running::start(config).await;
    let unnamed = r#"{"prompt":{"id":"p"},"input":"hi"}"#;
    let (status, _, body) = send(
        &client(),
        post(
            &gateway.url("/v1/responses"),
            unnamed,
            &[("x-chaos-request-id", "unnamed")],
        ),
    )
    .await;
    assert_ne!(status, 400, "{}", String::from_utf8_lossy(&body));
    let row = chaos.wait_for_request("unnamed").await;
    assert_eq!(row.path, "/v1/responses");
    assert_eq!(
        row.body_hash.as_deref(),
        Some(seawall_chaos::body_hash(unnamed.as_bytes()).as_str()),
        "the body as sent"
    );
    let chat = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, body) = send(
        &client(),
        post(&gateway.url("/v1/chat/completions"), chat, &[]),
    )
    .await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    assert_eq!(chaos.journal().len(), 1);
    // Without `*`, no route can serve it.
    let text = format!(
        r#"
        [[route]]
        name = "main"
        wire = "openai"
        base_url = "{}"

        [models]
        "gpt-x" = ["main"]
        "#,
        chaos.base_url()
    );
    let mut config = Config::from_toml(&text).unwrap();
    config.token_env = Some("GATEWAY_TOKEN".into());
    let gateway = Running::start(config).await;
    let (status, _, body) =
        send(&client(), post(&gateway.url("/v1/responses"), unnamed, &[])).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("`*`"), "{text}");
    assert_eq!(chaos.journal().len(), 1);
}

/// A body the gateway cannot read as one request is refused before any
/// route sees it: not JSON, not an object, not UTF-8, a member named
/// twice (the gateway would route by one `model` and the provider might
/// read the other), a `stream` that is not a boolean (it would be relayed
/// as a unary call).
#[tokio::test]
async fn a_body_that_is_not_one_clear_request_is_refused() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let url = gateway.url("/v1/chat/completions");
    for (body, says) in [
        (&b"not json"[..], "expected a JSON object"),
        (br#"{"model":"gpt-x",}"#, "trailing comma"),
        (br#"["gpt-x", true]"#, "expected a JSON object"),
        (br#"{"model":"gpt-x","messages":[]"#, "EOF while parsing"),
        (b"{\"model\":\"gpt-x\",\"x\":\"\xff\"}", "not UTF-8"),
        (br#"{"messages":[]}"#, "names no \"model\""),
        (br#"{"model":null}"#, "names no \"model\""),
        (
            br#"{"model":"gpt-x","messages":[],"model":"other"}"#,
            "duplicate field `model`",
        ),
        (
            br#"{"model":"gpt-x","stream":"true"}"#,
            "expected a boolean",
        ),
        (br#"{"model":7}"#, "invalid type: integer `7`"),
    ] {
        let mut request = post(&url, "", &[]);
        *request.body_mut() = full(Bytes::from_static(body));
        let (status, headers, answer) = send(&client, request).await;
        let shown = String::from_utf8_lossy(body);
        assert_eq!(status, 400, "{shown}");
        assert_eq!(header(&headers, "x-seawall-code"), "bad_request", "{shown}");
        let error: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{shown}: {message}");
    }
    assert!(chaos.journal().is_empty(), "nothing went upstream");
    assert_eq!(gateway.gateway.stats().refused, 10);

    // A compressed body is said to be one, not called "not UTF-8", and the
    // refusal says which codings are taken (RFC 9110, 15.5.16).
    let mut request = post(&url, "", &[("content-encoding", "gzip")]);
    *request.body_mut() = full(Bytes::from_static(b"\x1f\x8b\x08\x00compressed"));
    let (status, headers, answer) = send(&client, request).await;
    assert_eq!(status, 415);
    assert_eq!(header(&headers, "x-seawall-code"), "bad_request");
    // What it may be instead: not encoded.
    assert_eq!(header(&headers, "accept-encoding"), "identity");
    let error: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("encoded (gzip)"), "{message}");
    assert!(chaos.journal().is_empty(), "nothing went upstream");
}

#[tokio::test]
async fn metrics_are_served_for_prometheus() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script("openai", vec!["status;code=503".parse().unwrap()])
        .unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let client = client();
    let (status, _, _) = send(
        &client,
        post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &[]),
    )
    .await;
    assert_eq!(status, 200);
    let request = http::Request::get(gateway.url("/metrics"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(full(Bytes::new()))
        .unwrap();
    let (status, _, body) = send(&client, request).await;
    assert_eq!(status, 200);
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("seawall_attempts_total"), "{text}");
    assert!(text.contains("seawall_retries_total"), "{text}");
    assert!(text.contains("code=\"provider_unavailable\""), "{text}");
    // Histograms, not summaries: explicit buckets.
    assert!(
        text.contains("seawall_operation_duration_seconds_bucket"),
        "{text}"
    );
    // Each family says what it counts.
    for family in [
        "seawall_attempts_total",
        "seawall_retries_total",
        "seawall_operation_duration_seconds",
    ] {
        assert!(text.contains(&format!("# HELP {family} ")), "{text}");
    }
}

/// A provider's own in-stream error after content is replaced by seawall's
/// event: the client reads one error, in the provider's words where it
/// said them (Anthropic's `overloaded_error`; OpenAI's event names a type
/// and no code), with seawall's code and the provider's message.
#[tokio::test]
async fn a_provider_error_event_becomes_one_seawall_event() {
    for (wire, body, event, provider_text) in [
        (
            Wire::OpenAi,
            OPENAI_STREAM,
            "data: {\"error\"",
            "The server had an error",
        ),
        (
            Wire::Anthropic,
            ANTHROPIC_STREAM,
            "event: error",
            "Overloaded",
        ),
    ] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let gateway = Running::start(config(wire, &[("main", &chaos)])).await;
        let (status, _, out) = send_broken(
            &client(),
            post(
                &gateway.url(path(wire)),
                body,
                &[("x-chaos-fault", "stream_error_after;tokens=2")],
            ),
        )
        .await;
        assert_eq!(status, 200);
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert_eq!(text.matches(event).count(), 1, "{text}");
        let last = data_lines(&out).pop().unwrap();
        let error: serde_json::Value = serde_json::from_str(&last).unwrap();
        let (word, said) = match wire {
            Wire::OpenAi => (&error["error"]["code"], "stream_interrupted"),
            Wire::Anthropic => (&error["error"]["type"], "overloaded_error"),
        };
        assert_eq!(word, said, "{text}");
        assert_eq!(
            error["error"]["seawall_code"], "stream_interrupted",
            "{text}"
        );
        let message = &error["error"]["message"];
        assert!(message.as_str().unwrap().contains(provider_text), "{text}");
        assert!(text.contains("w2") && !text.contains("w3"), "{text}");
    }
}

/// A file config: a route that renames the model, a fallback, and a third
/// route after it in the model's chain.
#[tokio::test]
async fn a_file_config_renames_the_model_per_route() {
    let primary = ChaosServer::builder().start().await.unwrap();
    let spare = ChaosServer::builder().start().await.unwrap();
    let third = ChaosServer::builder().start().await.unwrap();
    let text = format!(
        r#"
        listen = "127.0.0.1:0"
        token_env = "GATEWAY_TOKEN"
        first_byte_timeout = "300ms"

        [[route]]
        name = "main"
        wire = "openai"
        base_url = "{}/v1"
        key_env = "KEY_MAIN"
        model = "gpt-x-main"

        [[route]]
        name = "spare"
        wire = "openai"
        base_url = "{}"
        key_env = "KEY_SPARE"
        model = "gpt-x-spare"
        preset = "batch"

        [[route]]
        name = "third"
        wire = "openai"
        base_url = "{}"
        key_env = "KEY_THIRD"

        [models]
        "gpt-x" = ["main", "spare", "third"]
        "#,
        primary.base_url(),
        spare.base_url(),
        third.base_url()
    );
    let config = Config::from_toml(&text).unwrap();
    let gateway = Running::start(config).await;
    let client = client();
    let url = gateway.url("/v1/chat/completions");
    let (status, headers, body) = send(
        &client,
        post(&url, OPENAI_UNARY, &[("x-chaos-request-id", "renamed")]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-seawall-served-by"), "main");
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["model"], "gpt-x-main");
    let row = primary.wait_for_request("renamed").await;
    assert_eq!(row.model.as_deref(), Some("gpt-x-main"));
    // The fallback gets its own name for the model.
    primary
        .script("openai", vec![fault("hang_after_headers")])
        .unwrap();
    let (status, headers, _) = send(
        &client,
        post(&url, OPENAI_STREAM, &[("x-chaos-request-id", "fallback")]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-seawall-served-by"), "spare; fallback");
    let row = spare.wait_for_request("fallback").await;
    assert_eq!(row.model.as_deref(), Some("gpt-x-spare"));
    assert!(third.journal().is_empty(), "the spare answered");
    // The whole chain: the main route walled, the spare's key rejected,
    // the third answers (with the client's name for the model).
    primary
        .script(
            "openai",
            vec![fault(
                "status;code=429;retry_after=48489;kind=insufficient_quota",
            )],
        )
        .unwrap();
    spare
        .script("openai", vec![fault("status;code=401")])
        .unwrap();
    let (status, headers, body) = send(
        &client,
        post(&url, OPENAI_UNARY, &[("x-chaos-request-id", "chain")]),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-served-by"), "third; fallback");
    assert_eq!(header(&headers, "x-seawall-attempts"), "3");
    let row = third.wait_for_request("chain").await;
    assert_eq!(row.model.as_deref(), Some("gpt-x"));
    assert_eq!(spare.journal().len(), 2, "one attempt on the spare");
    // A model no route serves.
    let (status, _, body) = send(
        &client,
        post(&url, r#"{"model":"other","messages":[]}"#, &[]),
    )
    .await;
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn a_thread_per_listener_serves_and_drains() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Gateway::with_env(config(Wire::OpenAi, &[("main", &chaos)]), env).unwrap();
    let listeners = seawall_gateway::listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
    let addr = listeners[0].local_addr().unwrap();
    if cfg!(target_os = "linux") {
        // One port, three sockets: the kernel spreads the connections.
        assert_eq!(listeners.len(), 3);
        assert!(listeners.iter().all(|l| l.local_addr().unwrap() == addr));
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(gateway.clone().serve_per_thread(listeners, async move {
        let _ = stopped.await;
    }));
    let url = format!("http://{addr}/v1/chat/completions");
    // A client each: a connection each, so they land on several threads.
    let calls = (0..24).map(|_| {
        let url = url.clone();
        async move {
            let response = client()
                .request(post(
                    &url,
                    OPENAI_STREAM,
                    &[("x-chaos-fault", "ok;tokens=8")],
                ))
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            data_lines(&response.into_body().collect().await.unwrap().to_bytes())
        }
    });
    for data in futures_util::future::join_all(calls).await {
        // role, eight tokens, the finish, [DONE]
        assert_eq!(data.len(), 11, "{data:?}");
        assert!(data[8].contains("w8"), "{data:?}");
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    }
    assert_eq!(gateway.stats().served, 24);
    // A stream in flight when the signal comes finishes; then every thread
    // stops and the port is closed.
    let response = client()
        .request(post(
            &url,
            OPENAI_STREAM,
            &[("x-chaos-fault", "ok;tokens=20;delay_ms=20")],
        ))
        .await
        .unwrap();
    stop.send(()).unwrap();
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect())
        .await
        .unwrap()
        .expect("the stream finishes after the signal")
        .to_bytes();
    assert_eq!(data_lines(&body).last().map(String::as_str), Some("[DONE]"));
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("every thread drains and stops")
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert_eq!(gateway.stats().served, 25);
    assert_eq!(gateway.stats().in_flight, 0);
}

/// A port something listens on is refused with `--threads` as without:
/// the group's `SO_REUSEPORT` sockets would otherwise join a second
/// gateway's group on the same port (or any such socket of the same
/// user), and the kernel would split the connections between the two.
#[tokio::test]
async fn a_port_already_listened_on_is_refused_with_threads_too() {
    let first = seawall_gateway::listeners("127.0.0.1:0".parse().unwrap(), 2).unwrap();
    let addr = first[0].local_addr().unwrap();
    for count in [1, 2, 3] {
        let err = seawall_gateway::listeners(addr, count)
            .expect_err("a second group on a port already listened on");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{count}: {err}");
    }
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = seawall_gateway::listeners(plain.local_addr().unwrap(), 2).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
    // Once the first group is gone, its port is free for a group again.
    drop(first);
    let again = seawall_gateway::listeners(addr, 2).unwrap();
    assert!(again.iter().all(|l| l.local_addr().unwrap() == addr));
    if cfg!(target_os = "linux") {
        assert_eq!(again.len(), 2);
    }
}

/// One call with the timeout an official SDK sends in `header_name`
/// (`x-stainless-read-timeout` from the Python SDKs, `x-stainless-timeout`
/// from the TypeScript ones), through a fresh gateway over a fresh chaos
/// server: what came back, how its body ended, how long it took, and
/// the upstream calls.
async fn with_client_timeout(
    body: &'static str,
    fault: &str,
    header_name: &str,
    read_timeout: &str,
) -> (
    http::StatusCode,
    http::HeaderMap,
    Bytes,
    BodyEnd,
    Duration,
    usize,
) {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let started = std::time::Instant::now();
    let (status, headers, got, end) = send_to_end(
        &client(),
        post(
            &gateway.url("/v1/chat/completions"),
            body,
            &[("x-chaos-fault", fault), (header_name, read_timeout)],
        ),
    )
    .await;
    let elapsed = started.elapsed();
    (status, headers, got, end, elapsed, chaos.journal().len())
}

/// A unary call's ladder plans within the client's read timeout: a
/// `Retry-After` it cannot wait out before the client gives up ends it
/// with that 429, at once, rather than past the client's timeout (where
/// the SDK would send the whole request again).
#[tokio::test]
async fn a_unary_ladder_ends_within_the_clients_read_timeout() {
    let (status, headers, body, end, elapsed, calls) = with_client_timeout(
        OPENAI_UNARY,
        "status;code=429;retry_after=3",
        "x-stainless-read-timeout",
        "2.0",
    )
    .await;
    assert_eq!(end, BodyEnd::Clean);
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "retry-after"), "3");
    assert_eq!(header(&headers, "x-should-retry"), "false");
    assert_eq!(calls, 1, "no retry the client would not wait for");
    assert!(elapsed < Duration::from_millis(1800), "{elapsed:?}");
}

/// A stream whose hold holds what the client would already read (here
/// the role delta, then keep-alives) when the client's read timeout is
/// near has begun, as the client reads it straight from the provider: it
/// is handed on before the client gives up (it used to be a 504, and a
/// thinking model's billed work was lost with it), then ends with the
/// final error event when the first-content bound passes, never retried.
#[tokio::test]
async fn a_stream_that_has_begun_is_handed_on_before_the_client_gives_up() {
    let (status, headers, body, end, elapsed, calls) = with_client_timeout(
        OPENAI_STREAM,
        "stall_after;tokens=0;ms=8000;pings=1;ping_ms=100",
        "x-stainless-timeout",
        "1.5",
    )
    .await;
    assert_eq!(end, BodyEnd::Failed);
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");
    assert_eq!(calls, 1);
    let lines = data_lines(&body);
    assert!(lines[0].contains(r#""role":"assistant""#), "{text}");
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert!(last["error"]["code"].is_string(), "{text}");
    // Handed on at the client's wait less its margin (1.35 s), ended by
    // the 2 s first-content bound of this configuration, not the stall.
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
}

/// An answer that has not begun when the client's read timeout is near
/// (a unary answer still being written) gets a 504 the SDK does not
/// retry, before the client gives up, saying whose bound it was.
#[tokio::test]
async fn an_answer_that_has_not_begun_is_answered_before_the_client_gives_up() {
    let (status, headers, body, end, elapsed, calls) = with_client_timeout(
        OPENAI_UNARY,
        "slow_first_byte;ms=8000",
        "x-stainless-timeout",
        "1.5",
    )
    .await;
    assert_eq!(end, BodyEnd::Clean);
    assert_eq!(status, 504, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-code"), "deadline_exceeded");
    assert_eq!(header(&headers, "x-should-retry"), "false");
    assert_eq!(header(&headers, "x-seawall-attempts"), "1");
    assert_eq!(calls, 1);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("the client's own timeout"), "{text}");
    // At the client's wait less its margin (1.35 s).
    assert!(
        elapsed >= Duration::from_millis(1300) && elapsed < Duration::from_millis(1900),
        "{elapsed:?}"
    );
}

/// The client's wait began when it sent the request: a slow upload counts
/// against it (openai-node and anthropic's TypeScript SDK time the whole
/// fetch). The wait was counted from the body's end, and the 504 came
/// after the client had given up.
#[tokio::test]
async fn the_clients_wait_counts_its_upload() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let (first, rest) = OPENAI_UNARY.split_at(10);
    let slow = futures_util::StreamExt::then(
        futures_util::StreamExt::enumerate(futures_util::stream::iter([first, rest])),
        |(n, part)| async move {
            if n == 1 {
                tokio::time::sleep(Duration::from_millis(800)).await;
            }
            Ok::<_, BoxError>(http_body::Frame::data(Bytes::from_static(part.as_bytes())))
        },
    );
    let request = http::Request::post(gateway.url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("x-chaos-fault", "slow_first_byte;ms=8000")
        .header("x-stainless-timeout", "1.5")
        .body(BodyExt::boxed(StreamBody::new(slow)))
        .unwrap();
    let started = std::time::Instant::now();
    let (status, _, body) = send(&client(), request).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 504, "{}", String::from_utf8_lossy(&body));
    // At the client's wait less its margin (1.35 s) from the request's
    // start, not from the body's end (2.15 s at the earliest).
    assert!(elapsed < Duration::from_millis(2100), "{elapsed:?}");
}

/// A stream request's ladder plans within the client's wait too: a 429
/// whose `Retry-After` it cannot wait out is answered at once, as the
/// 429, not as a timeout at the end of the wait.
#[tokio::test]
async fn a_stream_ladder_ends_within_the_clients_read_timeout() {
    let (status, headers, body, end, elapsed, calls) = with_client_timeout(
        OPENAI_STREAM,
        "status;code=429;retry_after=3",
        "x-stainless-timeout",
        "2",
    )
    .await;
    assert_eq!(end, BodyEnd::Clean);
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "retry-after"), "3");
    assert_eq!(calls, 1);
    assert!(elapsed < Duration::from_millis(1800), "{elapsed:?}");
}

/// The read timeout bounds each read, not the whole stream: a stream that
/// began in time runs on past it, whole.
#[tokio::test]
async fn a_stream_that_began_runs_past_the_clients_read_timeout() {
    let (status, _, body, end, elapsed, calls) = with_client_timeout(
        OPENAI_STREAM,
        "stall_after;tokens=2;ms=1500;pings=1;ping_ms=200",
        "x-stainless-read-timeout",
        "1.0",
    )
    .await;
    assert_eq!(end, BodyEnd::Clean);
    assert_eq!(status, 200);
    let text = String::from_utf8_lossy(&body);
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(elapsed > Duration::from_secs(1), "{elapsed:?}");
    assert_eq!(calls, 1);
}

/// A stream asked for from Node (`x-stainless-runtime: node`) is handed
/// on before Node's `fetch` stops waiting for its head (undici's 300 s,
/// whatever the SDK's timeout), stated (Anthropic's SDK, its default 600)
/// or not (openai-node with its default): here the model's first text
/// comes at 400 s, within the reasoning preset's bounds, and the head was
/// held until then, after the client had given up and sent the request
/// again. Handed on, the stream runs on to its end, one upstream call. On
/// the paused clock.
#[tokio::test(start_paused = true)]
async fn a_node_clients_stream_is_handed_on_before_its_fetch_gives_up() {
    for stated in [Some("600"), None] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
        config.policy.preset = Preset::Reasoning;
        config.policy.first_byte_timeout = None;
        config.policy.first_content_timeout = None;
        config.policy.deadline = None;
        let gateway = Running::start(config).await;
        let mut headers = vec![
            (
                "x-chaos-fault",
                "stall_after;tokens=0;ms=400000;pings=1;ping_ms=10000",
            ),
            ("x-stainless-runtime", "node"),
        ];
        headers.extend(stated.map(|timeout| ("x-stainless-timeout", timeout)));
        let request = post(
            &gateway.url("/v1/chat/completions"),
            OPENAI_STREAM,
            &headers,
        );
        let started = tokio::time::Instant::now();
        let (head, status, body, end) = tokio::time::timeout(Duration::from_secs(1200), async {
            let response = client().request(request).await.expect("a response");
            let head = started.elapsed();
            let status = response.status();
            let mut body = response.into_body();
            let mut read = Vec::new();
            let mut end = BodyEnd::Clean;
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(frame) => read.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
                    Err(_) => end = BodyEnd::Failed,
                }
            }
            (head, status, read, end)
        })
        .await
        .expect("the stream's end on the paused clock");
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{stated:?}: {text}");
        // At undici's wait less the margin (299 s), not at the first text.
        assert!(
            head >= Duration::from_secs(290) && head < Duration::from_secs(300),
            "{stated:?}: the head after {head:?}"
        );
        assert_eq!(end, BodyEnd::Clean, "{stated:?}: {text}");
        assert!(
            text.trim_end().ends_with("data: [DONE]"),
            "{stated:?}: {text}"
        );
        let lines = data_lines(&body);
        assert!(
            lines[0].contains(r#""role":"assistant""#),
            "{stated:?}: {text}"
        );
        assert!(
            lines.iter().any(|line| line.contains(r#""content""#)),
            "{text}"
        );
        assert_eq!(chaos.journal().len(), 1, "{stated:?}");
    }
}

/// The headers openai-node sends of itself from Node, at `version`.
fn openai_node(version: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("x-stainless-runtime", "node"),
        ("x-stainless-lang", "js"),
        ("x-stainless-package-version", version),
    ]
}

/// A whole (non-streaming) chat completion from `client` that the upstream
/// takes 400 s to begin, on a reasoning preset with no bound of its own:
/// when the head came, its status, its headers, its body, and how many
/// calls went upstream. On the paused clock.
async fn a_400_s_whole_answer(
    client_headers: &[(&'static str, &'static str)],
) -> (Duration, http::StatusCode, http::HeaderMap, String, usize) {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.policy.preset = Preset::Reasoning;
    config.policy.first_byte_timeout = None;
    config.policy.first_content_timeout = None;
    config.policy.deadline = None;
    let gateway = Running::start(config).await;
    let mut headers = vec![("x-chaos-fault", "slow_first_byte;ms=400000")];
    headers.extend_from_slice(client_headers);
    let request = post(&gateway.url("/v1/chat/completions"), OPENAI_UNARY, &headers);
    let started = tokio::time::Instant::now();
    let (head, status, response_headers, body) =
        tokio::time::timeout(Duration::from_secs(1200), async {
            let response = client().request(request).await.expect("a response");
            let head = started.elapsed();
            let (parts, body) = response.into_parts();
            let body = body.collect().await.expect("a whole body").to_bytes();
            (head, parts.status, parts.headers, body)
        })
        .await
        .expect("the answer on the paused clock");
    let text = String::from_utf8_lossy(&body).into_owned();
    (head, status, response_headers, text, chaos.journal().len())
}

/// A whole answer asked for from a client on undici (openai-node 5 and
/// later, or one that states undici's bound) cannot be handed on early:
/// one that takes longer than undici's 300 s wait for the head (a
/// reasoning model writing for minutes) made the SDK give up and send the
/// request again, twice, three billed runs of the ladder. It is answered
/// with a 504 the SDK does not retry just before Node would give up, one
/// upstream call, stated timeout or not. On the paused clock.
#[tokio::test(start_paused = true)]
async fn a_node_clients_whole_answer_is_answered_before_its_fetch_gives_up() {
    let stated = |mut headers: Vec<_>, header| {
        headers.push(header);
        headers
    };
    let cases = [
        stated(openai_node("5.23.2"), ("x-stainless-timeout", "600")),
        openai_node("6.1.0"),
        // A client on undici by its own word, whatever its SDK.
        stated(openai_node("4.104.0"), ("x-seawall-headers-timeout", "300")),
    ];
    for headers in cases {
        let (head, status, response_headers, text, calls) = a_400_s_whole_answer(&headers).await;
        assert_eq!(status, 504, "{headers:?}: {text}");
        assert!(
            head >= Duration::from_secs(290) && head < Duration::from_secs(300),
            "{headers:?}: the answer after {head:?}"
        );
        assert_eq!(
            header(&response_headers, "x-seawall-code"),
            "deadline_exceeded"
        );
        assert_eq!(header(&response_headers, "x-should-retry"), "false");
        assert_eq!(calls, 1, "{headers:?}");
    }
}

/// openai-node 4 on Node fetches with node-fetch (`http.request`), which
/// has no 300 s wait for the head: a whole answer it waits 600 s for, or
/// its default ten minutes, taking 400 s is served, not cut to a 504 at
/// undici's bound it never had (billed, and lost). On the paused clock.
#[tokio::test(start_paused = true)]
async fn a_node_fetch_clients_whole_answer_runs_past_undicis_bound() {
    let stated = {
        let mut headers = openai_node("4.104.0");
        headers.push(("x-stainless-timeout", "600"));
        headers
    };
    for headers in [
        stated,
        openai_node("4.104.0"),
        vec![("x-stainless-runtime", "node")],
    ] {
        let (head, status, _, text, calls) = a_400_s_whole_answer(&headers).await;
        assert_eq!(status, 200, "{headers:?}: {text}");
        assert!(head >= Duration::from_secs(400), "{headers:?}: {head:?}");
        assert_eq!(calls, 1, "{headers:?}");
    }
}

/// A fallback route skipped as cooling down (no call made) is in the
/// receipt, last, but the answer returned is the primary's: the failure
/// names the route whose answer it is, not the skipped one. It named the
/// skipped fallback on the primary's 429, and the keyed-route check read
/// the same: a keyless primary's 401 (the client's own key refused) came
/// back a 502 because the skipped fallback holds a key of its own.
#[tokio::test]
async fn a_failure_names_the_route_whose_answer_it_is_not_a_skipped_one() {
    let rejected: Fault = "status;code=401;kind=auth".parse().unwrap();
    // A keyless primary: this client's quota spent, that client's key
    // refused; a keyed fallback whose own key is refused, so that it
    // cools after its first call.
    let main = ChaosServer::builder()
        .fault_for_key(
            "sk-client-a",
            "status;code=429;retry_after=48489;kind=insufficient_quota"
                .parse()
                .unwrap(),
        )
        .fault_for_key("sk-client-c", rejected.clone())
        .start()
        .await
        .unwrap();
    let spare = ChaosServer::builder()
        .fault_for_key("sk-route-spare-secret", rejected)
        .start()
        .await
        .unwrap();
    let mut routes = config(Wire::Anthropic, &[("main", &main), ("spare", &spare)]);
    routes.routes[0].key_env = None;
    let gateway = Running::start(routes).await;
    let url = gateway.url("/v1/messages");
    let ask = |key: &str| post(&url, ANTHROPIC_UNARY, &[("x-api-key", key)]);
    // The fallback is called, refuses the gateway's key and cools: its
    // answer ends the ladder, a 502 (the gateway's credential).
    let (status, headers, body) = send(&client(), ask("sk-client-a")).await;
    assert_eq!(status, 502, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-served-by"), "spare; fallback");
    // Now skipped: the primary's 429 is the answer, and names it.
    let (status, headers, body) = send(&client(), ask("sk-client-a")).await;
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-served-by"), "main");
    // The client's own key refused by the keyless primary stays the
    // client's 401, the skipped fallback's key notwithstanding.
    let (status, headers, body) = send(&client(), ask("sk-client-c")).await;
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));
    assert_eq!(header(&headers, "x-seawall-served-by"), "main");
    assert_eq!(spare.journal().len(), 1, "the cooling fallback is skipped");
}

/// A path the gateway does not serve, or a method it does not take there,
/// is a JSON error in the wire the path looks like, with a stable code:
/// axum's own 404 and 405 had empty bodies, and an SDK showed a bare
/// status.
#[tokio::test]
async fn unknown_paths_and_methods_are_wire_shaped_errors() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    let cases = [
        ("POST", "/v1/chat/completion", 404, "not_found", "openai"),
        ("POST", "/nope", 404, "not_found", "openai"),
        (
            "POST",
            "/v1/messages/batches",
            404,
            "not_found",
            "anthropic",
        ),
        ("GET", "/v1/chat/completions", 405, "bad_request", "openai"),
        ("PUT", "/v1/messages", 405, "bad_request", "anthropic"),
        // An Anthropic SDK whose base URL ends in /v1: its own wire.
        ("POST", "/v1/v1/messages", 404, "not_found", "anthropic-sdk"),
    ];
    for (method, path, status, code, wire) in cases {
        let mut request = http::Request::builder()
            .method(method)
            .uri(gateway.url(path))
            .header("authorization", format!("Bearer {TOKEN}"));
        if wire == "anthropic-sdk" {
            request = request.header("anthropic-version", "2023-06-01");
        }
        let request = request.body(full("")).unwrap();
        let (got, headers, body) = send(&client(), request).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(got, status, "{method} {path}: {text}");
        assert_eq!(header(&headers, "x-seawall-code"), code, "{method} {path}");
        let json: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
        match wire {
            "openai" => assert_eq!(json["error"]["code"], code, "{text}"),
            _ => assert_eq!(json["type"], "error", "{text}"),
        }
        if status == 405 {
            assert!(
                header(&headers, "allow").contains("POST"),
                "{method} {path}"
            );
            assert!(text.contains("use POST"), "{text}");
        }
    }
    assert!(chaos.journal().is_empty(), "nothing reached the upstream");
    // The router itself has no fallback: an app with one merges it.
    let app = axum::Router::new()
        .fallback(|| async { "the app's own" })
        .merge(gateway.gateway.router());
    drop(app);
}

/// A client that stops reading its stream (its TCP window closes), the
/// connection left open: hyper stops polling the answer, so no timer in
/// it fires. The write that waits past `client_stall` closes the
/// connection, and the upstream call ends with it, counted `cancelled`.
#[tokio::test]
async fn a_client_that_stops_reading_is_let_go_at_the_stall_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.client_stall = Duration::from_millis(300);
    config.policy.deadline = Some(Duration::from_secs(120));
    let gateway = Running::start(config).await;
    // A small receive buffer: the answer cannot all sit in the kernel.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut socket = socket.connect(gateway.addr).await.unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\nx-chaos-fault: ok;tokens=100000\r\nx-chaos-request-id: stopped\r\ncontent-length: {}\r\n\r\n{OPENAI_STREAM}",
        OPENAI_STREAM.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0; 512];
    let read = socket.read(&mut head).await.unwrap();
    assert!(
        head[..read].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&head[..read])
    );
    // From here on nothing is read; the socket stays open.
    gateway.until_cancelled(1, Duration::from_secs(10)).await;
    let stats = gateway.gateway.stats();
    assert_eq!((stats.cancelled, stats.in_flight), (1, 0), "let go");
    // The upstream call ended with it (cut, unless the kernel's buffers
    // on the way took the whole answer first, on a host with large ones).
    let row = tokio::time::timeout(Duration::from_secs(5), chaos.wait_for_request("stopped"))
        .await
        .expect("the upstream call ended");
    assert!(
        matches!(
            row.outcome,
            Outcome::ClientDisconnected | Outcome::Completed
        ),
        "{row:?}"
    );
    drop(socket);
}

/// A client that writes its whole body before it reads the answer (httpx,
/// under openai-python and anthropic's SDK) reads the refusal, not a
/// reset: a wrong token, and a body over the cap announced or not. The
/// refused body was dropped unread, and its bytes still arriving reset the
/// connection (RFC 9112, 9.6), the 401 or 413 with it.
#[tokio::test]
async fn a_client_that_writes_its_whole_body_first_reads_the_refusal() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.max_body_bytes = 1 << 20;
    let gateway = Running::start(config).await;
    // More than loopback's socket buffers hold: the body is still coming
    // when the refusal is decided.
    let body = vec![b' '; 12 << 20];
    for (path, token, length, expected) in [
        ("/v1/chat/completions", "wrong-token", true, "401"),
        ("/v1/chat/completions", TOKEN, true, "413"),
        ("/v1/chat/completions", TOKEN, false, "413"),
        // A path the gateway does not serve: its 404, not a reset.
        ("/v1/audio/transcriptions", TOKEN, true, "404"),
    ] {
        let mut socket = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let framing = if length {
            format!("content-length: {}", body.len())
        } else {
            "transfer-encoding: chunked".to_owned()
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\n{framing}\r\n\r\n"
        );
        let mut sent = head.into_bytes();
        if length {
            sent.extend_from_slice(&body);
        } else {
            for chunk in body.chunks(64 << 10) {
                sent.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                sent.extend_from_slice(chunk);
                sent.extend_from_slice(b"\r\n");
            }
            sent.extend_from_slice(b"0\r\n\r\n");
        }
        let written = tokio::time::timeout(Duration::from_secs(10), socket.write_all(&sent)).await;
        assert!(
            matches!(written, Ok(Ok(()))),
            "{expected}: the whole body is taken: {written:?}"
        );
        let mut answer = vec![0; 512];
        let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut answer))
            .await
            .expect("an answer in time");
        let n = read.unwrap_or_else(|error| panic!("{expected}: the answer, not {error}"));
        let line = String::from_utf8_lossy(&answer[..n]);
        assert!(
            line.starts_with(&format!("HTTP/1.1 {expected}")),
            "{expected}: {line}"
        );
    }
}

/// A client that goes away while sending its request body went away: it
/// is counted `cancelled`, as one that goes away later is, not as a
/// request the gateway refused; nothing goes upstream.
#[tokio::test]
async fn a_client_that_goes_away_mid_upload_is_cancelled_not_refused() {
    use tokio::io::AsyncWriteExt;
    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Running::start(config(Wire::OpenAi, &[("main", &chaos)])).await;
    // Closed with a FIN, then with a reset (a linger of zero: a client
    // killed, or one with unread data in its socket).
    for (gone, reset) in [(1, false), (2, true)] {
        let mut socket = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"model\":"
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        if reset {
            socket.set_zero_linger().unwrap();
        }
        drop(socket);
        gateway.until_cancelled(gone, Duration::from_secs(2)).await;
        let stats = gateway.gateway.stats();
        assert_eq!(
            (stats.cancelled, stats.refused),
            (gone, 0),
            "reset: {reset}"
        );
    }
    assert!(chaos.journal().is_empty(), "nothing went upstream");
}

/// A refused client does not keep its connection: the gateway answers its
/// refusal with `Connection: close` and closes. One that held many idle
/// connections after a refusal each took every descriptor.
#[tokio::test]
async fn a_refusal_closes_its_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.token_env = Some("GATEWAY_TOKEN".into());
    let gateway = Running::start(config).await;
    // A call, and the reads that ask for the token too.
    for request in [
        &b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
        b"GET /v1/models HTTP/1.1\r\nhost: gateway\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nhost: gateway\r\n\r\n",
    ] {
        let shown = String::from_utf8_lossy(request).into_owned();
        let mut socket = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        socket.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("the connection stays open after refusing {shown}"));
        read.unwrap();
        let answer = String::from_utf8_lossy(&answer).to_lowercase();
        assert!(answer.starts_with("http/1.1 401"), "{shown}: {answer}");
        assert!(answer.contains("connection: close"), "{shown}: {answer}");
    }
}

/// No more client connections are served at once than `max_connections`:
/// the next waits in the listener's backlog until one closes, then is
/// served.
#[tokio::test]
async fn client_connections_past_the_cap_wait_for_one_to_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let chaos = ChaosServer::builder().start().await.unwrap();
    let mut config = config(Wire::OpenAi, &[("main", &chaos)]);
    config.max_connections = 2;
    let gateway = Running::start(config).await;
    let connect = || tokio::net::TcpStream::connect(gateway.addr);
    let (first, _second) = (connect().await.unwrap(), connect().await.unwrap());
    let mut third = connect().await.unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
        .await
        .unwrap();
    let mut answer = [0u8; 64];
    let waited = tokio::time::timeout(Duration::from_millis(300), third.read(&mut answer)).await;
    assert!(waited.is_err(), "served past the cap: {waited:?}");
    drop(first);
    let n = tokio::time::timeout(Duration::from_secs(5), third.read(&mut answer))
        .await
        .expect("served once a connection closed")
        .unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answer[..n])
    );
}
