//! The layer's own behaviour: bounded error bodies, untouched streams,
//! checked unary answers, transport errors, user rules.

mod common;

use std::error::Error as StdError;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use common::{Chunks, Expect, Repeat, collect, expect, found, response, through};
use http::response::Parts;
use http::{Request, Response};
use http_body::Body;
use seawall_classify::{
    Checked, Classifier, ClassifyLayer, Inspection, ProviderClassifier, SuccessContext,
    response_rule, transport_failure,
};
use seawall_core::provider::ErrorContext;
use seawall_core::{Action, Class, Code, Failure, Finish, FinishKind};
use tower::{BoxError, Layer, Service, ServiceExt, service_fn};

const JSON: (&str, &str) = ("content-type", "application/json");
const SSE: (&str, &str) = ("content-type", "text/event-stream");

#[tokio::test]
async fn a_100_mib_error_body_is_not_buffered() {
    static CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];
    let body = Repeat::new(Bytes::from_static(&CHUNK), 1600); // 100 MiB
    let pulled = body.pulled.clone();
    let response = Response::builder().status(500).body(body).unwrap();
    let error = through(&ClassifyLayer::openai(), response)
        .await
        .map(|_| ())
        .unwrap_err();
    let failure = found(&error);
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    let pulled = pulled.load(Ordering::SeqCst);
    assert_eq!(pulled, 64 * 1024, "stopped at the 64 KiB cap");
    assert_eq!(failure.evidence().bytes, pulled);
    assert_eq!(failure.evidence().chunks, 1);

    // A smaller cap, chunks that straddle it: at most one chunk past it.
    let body = Repeat::new(Bytes::from_static(&CHUNK[..1000]), 100_000);
    let pulled = body.pulled.clone();
    let layer = ClassifyLayer::openai().max_error_body(2500);
    let response = Response::builder().status(429).body(body).unwrap();
    let error = through(&layer, response).await.map(|_| ()).unwrap_err();
    assert_eq!(found(&error).code(), Code::RateLimited);
    assert_eq!(pulled.load(Ordering::SeqCst), 3000);
}

#[tokio::test]
async fn the_cap_cuts_a_json_body_and_the_status_still_decides() {
    // The declared code sits past the cap: the status table decides.
    let body = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let layer = ClassifyLayer::openai().max_error_body(20);
    let error = through(&layer, response(429, &[JSON], body))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::RateLimited);
}

#[tokio::test]
async fn non_utf8_and_failed_error_bodies_classify_by_status() {
    let cases = [
        (503, Code::ProviderUnavailable),
        (429, Code::RateLimited),
        (401, Code::Auth),
    ];
    for (status, code) in cases {
        for layer in [
            ClassifyLayer::openai(),
            ClassifyLayer::anthropic(),
            ClassifyLayer::gemini(),
        ] {
            let body = Chunks::new([Bytes::from_static(b"\xff\xfe\x00\xc3(")]);
            let response = Response::builder().status(status).body(body).unwrap();
            let error = through(&layer, response).await.map(|_| ()).unwrap_err();
            assert_eq!(found(&error).code(), code, "{status}");
        }
    }

    // The body breaks half-way: what arrived plus the status decide.
    let body =
        Chunks::new([r#"{"error":{"type":"overloa"#]).then_error(io::ErrorKind::ConnectionReset);
    let response = Response::builder().status(529).body(body).unwrap();
    let error = through(&ClassifyLayer::anthropic(), response)
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::Overloaded);
}

#[tokio::test]
async fn a_2xx_event_stream_is_not_polled() {
    for layer in [
        ClassifyLayer::openai(),
        ClassifyLayer::anthropic(),
        ClassifyLayer::gemini(),
        ClassifyLayer::http(),
    ] {
        let events = ["data: {\"choices\":[]}\n\n", "data: [DONE]\n\n"];
        let body = Chunks::new(events);
        let polls = body.polls.clone();
        let response = Response::builder()
            .status(200)
            .header(SSE.0, SSE.1)
            .body(body)
            .unwrap();
        let response = through(&layer, response).await.unwrap();
        assert_eq!(polls.load(Ordering::SeqCst), 0, "the layer read the stream");
        assert!(response.extensions().get::<Finish>().is_none());
        let (_, body) = response.into_parts();
        assert_eq!(body.size_hint().exact(), Some(events.concat().len() as u64));
        assert_eq!(collect(body).await, events.concat());
    }
}

#[tokio::test]
async fn a_2xx_that_is_not_grpc_answers_no_grpc_call() {
    for content_type in [
        Some("text/html"),
        Some(SSE.1),
        Some("application/json"),
        None,
    ] {
        let body = Chunks::new(["<html>sign in to the network</html>"]);
        let polls = body.polls.clone();
        let mut response = Response::builder().status(200);
        if let Some(content_type) = content_type {
            response = response.header("content-type", content_type);
        }
        let response = response.body(body).unwrap();
        let error = through(&ClassifyLayer::grpc(), response)
            .await
            .map(|_| ())
            .unwrap_err();
        let failure = found(&error);
        assert_eq!(failure.code(), Code::ProtocolViolation, "{content_type:?}");
        assert_eq!(
            failure.action(),
            Action::Retry,
            "nothing reached the caller"
        );
        assert_eq!(polls.load(Ordering::SeqCst), 0, "judged by its head");
    }
    // A gRPC answer, or a trailers-only one whatever its type, is delivered.
    for (content_type, status) in [("application/grpc", None), ("text/plain", Some("0"))] {
        let mut response = Response::builder()
            .status(200)
            .header("content-type", content_type);
        if let Some(status) = status {
            response = response.header("grpc-status", status);
        }
        let response = response.body(Chunks::new(["\0\0\0\0\0"])).unwrap();
        assert!(
            through(&ClassifyLayer::grpc(), response).await.is_ok(),
            "{content_type}"
        );
    }
}

#[tokio::test]
async fn grpc_web_is_handed_on_for_its_own_client_to_judge() {
    // A message, then the trailers as a frame of the body (flag 0x80).
    let trailers = "grpc-status:0\r\n";
    let mut frames = b"\0\0\0\0\x02\x08\x01".to_vec();
    frames.push(0x80);
    frames.extend_from_slice(&(trailers.len() as u32).to_be_bytes());
    frames.extend_from_slice(trailers.as_bytes());
    let body = Bytes::from(frames);
    for content_type in ["application/grpc-web+proto", "application/grpc-web-text"] {
        let response = Response::builder()
            .status(200)
            .header("content-type", content_type)
            .body(Chunks::new([body.clone()]))
            .unwrap();
        let response = through(&ClassifyLayer::grpc(), response)
            .await
            .expect(content_type);
        let (_, whole) = response.into_parts();
        assert_eq!(
            collect(whole).await,
            body,
            "{content_type}: untouched, no error"
        );
    }
}

async fn unary(layer: &ClassifyLayer, body: &str) -> Result<Response<Bytes>, BoxError> {
    let response = through(
        layer,
        response(
            200,
            &[("content-type", "application/json; charset=utf-8")],
            body,
        ),
    )
    .await?;
    let (parts, body) = response.into_parts();
    assert!(!body.is_end_stream() || body.size_hint().exact() == Some(0));
    Ok(Response::from_parts(parts, collect(body).await))
}

fn finish(response: &Response<Bytes>) -> (FinishKind, &str) {
    let finish = response
        .extensions()
        .get::<Finish>()
        .expect("finish marked");
    (finish.kind, &finish.reason)
}

#[tokio::test]
async fn openai_unary_answers() {
    let layer = ClassifyLayer::openai();
    let ok = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#;
    let response = unary(&layer, ok).await.unwrap();
    assert_eq!(finish(&response), (FinishKind::Complete, "stop"));
    assert_eq!(response.body(), ok, "the checked body is delivered whole");

    let cut = r#"{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a","refusal":null},"logprobs":null,"finish_reason":"length"}]}"#;
    let response = unary(&layer, cut).await.unwrap();
    assert_eq!(finish(&response), (FinishKind::Truncated, "length"));

    let tool = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null},"finish_reason":"tool_calls"}]}"#;
    assert_eq!(
        finish(&unary(&layer, tool).await.unwrap()),
        (FinishKind::Complete, "tool_calls")
    );

    let cases = [
        (
            "content_filter",
            r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"content_filter"}]}"#,
            expect(Class::Policy, Code::ContentFiltered, Action::Escalate),
        ),
        (
            "refusal",
            r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't help with that."},"finish_reason":"stop"}]}"#,
            expect(Class::Policy, Code::Refused, Action::Escalate),
        ),
        (
            "200 with nothing in it",
            r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"finish_reason":"stop"}]}"#,
            expect(Class::Transient, Code::EmptyResponse, Action::Retry),
        ),
        (
            "no choices",
            r#"{"object":"chat.completion","choices":[]}"#,
            expect(Class::Transient, Code::EmptyResponse, Action::Retry),
        ),
        // No answer at all is the plainest 200 with nothing in it (as a
        // stream that ends before content is), not broken JSON.
        (
            "no bytes",
            "",
            expect(Class::Transient, Code::EmptyResponse, Action::Retry),
        ),
        (
            "blank lines",
            "\r\n \n",
            expect(Class::Transient, Code::EmptyResponse, Action::Retry),
        ),
    ];
    for (name, body, want) in cases {
        let error = unary(&layer, body).await.unwrap_err();
        let failure = found(&error);
        want.check(name, failure);
        assert_eq!(failure.status(), Some(200));
        assert_eq!(failure.evidence().bytes, body.len() as u64);
    }
    let error = unary(&layer, cases[1].1).await.unwrap_err();
    assert_eq!(
        found(&error).message(),
        Some("I'm sorry, I can't help with that.")
    );

    // Other endpoints' JSON is delivered unchecked and unmarked.
    let embeddings = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"text-embedding-3-small"}"#;
    let response = unary(&layer, embeddings).await.unwrap();
    assert!(response.extensions().get::<Finish>().is_none());
    assert_eq!(response.body(), embeddings);
}

/// Calls `layer` with `method` on `path`, over an upstream that answers
/// 200 with the JSON `body`.
async fn answered_at(
    layer: &ClassifyLayer,
    method: http::Method,
    path: &str,
    body: &'static str,
) -> Result<Response<Bytes>, BoxError> {
    answered(layer, method, path, 200, &[JSON], body).await
}

/// The Responses API's POSTs below `…/responses/` are no generations:
/// counting a prompt's tokens and compacting a conversation answer in
/// shapes of their own, delivered as they are (they were
/// `protocol_violation`, retried and, for a compaction, billed again).
#[tokio::test]
async fn a_post_below_responses_is_no_generation() {
    let layer = ClassifyLayer::openai();
    for (path, body) in [
        (
            "/v1/responses/input_tokens",
            r#"{"object":"response.input_tokens","input_tokens":11}"#,
        ),
        (
            "/v1/responses/compact",
            r#"{"id":"cmp_1","object":"response.compaction","output":[{"type":"compaction","encrypted_content":"gAAA"}],"usage":{"input_tokens":900,"output_tokens":120,"total_tokens":1020}}"#,
        ),
    ] {
        let answer = answered_at(&layer, http::Method::POST, path, body)
            .await
            .unwrap_or_else(|error| panic!("{path}: {error}"));
        assert_eq!(answer.body(), body, "{path}");
    }
}

/// Answers with no body by HTTP's rules are delivered as they are: a
/// `HEAD`'s 2xx, whose length and type describe the body a `GET` would
/// get, and a 304. A `HEAD` health probe was `empty_response` (retried,
/// counted against the route), a 304 `redirected`.
#[tokio::test]
async fn a_head_answer_and_a_304_have_no_body_to_check() {
    let answered = |status: u16, method: http::Method| async move {
        let inner = service_fn(move |_: Request<()>| async move {
            let head = [JSON, ("content-length", "2048"), ("etag", "\"v1\"")];
            Ok::<_, std::convert::Infallible>(response(status, &head, ""))
        });
        let request = Request::builder()
            .method(method)
            .uri("https://api.llm.example/v1/models")
            .body(())
            .unwrap();
        ClassifyLayer::openai().layer(inner).oneshot(request).await
    };
    let head = answered(200, http::Method::HEAD).await;
    let head = head.expect("a HEAD's answer has no body");
    assert_eq!(head.status(), 200);
    assert!(collect(head.into_body()).await.is_empty());
    let not_modified = answered(304, http::Method::GET).await;
    assert_eq!(not_modified.expect("nothing changed").status(), 304);
    // A GET's empty 200 with a length is still no answer.
    let get = answered(200, http::Method::GET).await;
    assert_eq!(found(&get.unwrap_err()).code(), Code::EmptyResponse);
    // A HEAD's error status is still the route's failure.
    let failed = answered(503, http::Method::HEAD).await;
    assert_eq!(
        found(&failed.unwrap_err()).code(),
        Code::ProviderUnavailable
    );
}

/// The head of a 304 that names the version the client has.
const ETAG: &[(&str, &str)] = &[("etag", "\"v1\"")];

/// A 304 answers only a conditional `GET` or `HEAD` (RFC 9110 §15.4.5): to
/// a generation, a `POST`, it is no answer, retried as a broken one. It
/// was delivered, a success with nothing in it.
#[tokio::test]
async fn a_304_to_a_generation_is_no_answer() {
    let error = posted(
        &ClassifyLayer::openai(),
        "/v1/chat/completions",
        304,
        ETAG,
        "",
    )
    .await
    .map(|_| ())
    .expect_err("a 304 is no answer to a POST");
    let failure = found(&error);
    expect(Class::Transient, Code::ProtocolViolation, Action::Retry).check("304", failure);
    assert_eq!(failure.status(), Some(304));
}

/// A 304 to any other method than `GET` or `HEAD` is a stray redirect
/// status like any other 3xx (`redirected`, never followed), not a
/// success with no body: a `POST` to embeddings, a `DELETE`, a `PUT`.
/// It was delivered as one, counted a success by the breaker.
#[tokio::test]
async fn a_304_to_a_request_that_is_never_conditional_is_a_stray_redirect() {
    for method in [http::Method::POST, http::Method::DELETE, http::Method::PUT] {
        let layer = ClassifyLayer::openai();
        let error = answered(&layer, method.clone(), "/v1/embeddings", 304, ETAG, "")
            .await
            .map(|_| ())
            .expect_err("a 304 answers no such request");
        let failure = found(&error);
        expect(Class::Permanent, Code::Redirected, Action::Surface).check(method.as_str(), failure);
        assert_eq!(failure.status(), Some(304));
    }
}

/// The answer of a `POST` to `path`, answered `status` with `head` and
/// `body`, through `layer`.
async fn posted(
    layer: &ClassifyLayer,
    path: &str,
    status: u16,
    head: &'static [(&'static str, &'static str)],
    body: &'static str,
) -> Result<Response<Bytes>, BoxError> {
    answered(layer, http::Method::POST, path, status, head, body).await
}

/// The answer of a `method` request to `path`, answered `status` with
/// `head` and `body`, through `layer`.
async fn answered(
    layer: &ClassifyLayer,
    method: http::Method,
    path: &str,
    status: u16,
    head: &'static [(&'static str, &'static str)],
    body: &'static str,
) -> Result<Response<Bytes>, BoxError> {
    let inner = service_fn(move |_: Request<()>| async move {
        Ok::<_, std::convert::Infallible>(response(status, head, body))
    });
    let request = Request::builder()
        .method(method)
        .uri(format!("https://api.llm.example{path}"))
        .body(())
        .unwrap();
    let response = layer.layer(inner).oneshot(request).await?;
    let (parts, body) = response.into_parts();
    Ok(Response::from_parts(parts, collect(body).await))
}

/// An endpoint whose every success is one JSON body (embeddings,
/// moderations, token counts) is answered by nothing else: a 2xx there
/// that is a captive portal's page, text, an event stream or nothing at
/// all is no answer (`protocol_violation`, retried), and a body without a
/// JSON label is read as JSON (one cut short is broken). They were
/// delivered unread as good answers. Other endpoints, and a plain HTTP
/// layer, keep delivering what they get.
#[tokio::test]
async fn an_endpoint_that_answers_json_takes_nothing_else() {
    const EMBEDDING: &str = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
    const HTML: (&str, &str) = ("content-type", "text/html; charset=utf-8");
    const TEXT: (&str, &str) = ("content-type", "text/plain");
    const EMPTY: (&str, &str) = ("content-length", "0");
    let layer = ClassifyLayer::openai();
    for (name, path, status, head, body) in [
        (
            "html",
            "/v1/embeddings",
            200,
            &[HTML][..],
            "<html><body>Sign in to the Wi-Fi</body></html>",
        ),
        ("empty", "/v1/embeddings", 200, &[JSON, EMPTY][..], ""),
        ("204", "/v1/embeddings", 204, &[][..], ""),
        ("empty, unframed", "/v1/embeddings", 200, &[JSON][..], ""),
        (
            "text",
            "/v1/moderations",
            200,
            &[TEXT][..],
            "upstream says hello",
        ),
        ("sse", "/v1/embeddings", 200, &[SSE][..], "data: {}\n\n"),
        (
            "cut, unlabelled",
            "/v1/embeddings",
            200,
            &[][..],
            r#"{"object":"list","data":[{"embedding":[0.1,"#,
        ),
        ("empty count", "/v1/messages/count_tokens", 200, &[][..], ""),
    ] {
        let error = posted(&layer, path, status, head, body)
            .await
            .map(|_| ())
            .expect_err(name);
        let failure = found(&error);
        expect(Class::Transient, Code::ProtocolViolation, Action::Retry).check(name, failure);
        assert_eq!(failure.status(), Some(status), "{name}");
    }
    for (name, layer, path, head, body) in [
        (
            "json",
            ClassifyLayer::openai(),
            "/v1/embeddings",
            &[JSON][..],
            EMBEDDING,
        ),
        (
            "unlabelled json",
            ClassifyLayer::openai(),
            "/v1/embeddings",
            &[][..],
            EMBEDDING,
        ),
        (
            "count",
            ClassifyLayer::anthropic(),
            "/v1/messages/count_tokens",
            &[TEXT][..],
            r#"{"input_tokens":12}"#,
        ),
        (
            "speech",
            ClassifyLayer::openai(),
            "/v1/audio/speech",
            &[("content-type", "audio/mpeg")][..],
            "ID3\u{3}",
        ),
        (
            "other endpoint",
            ClassifyLayer::openai(),
            "/v1/files",
            &[HTML][..],
            "<html>",
        ),
        (
            "plain http",
            ClassifyLayer::http(),
            "/v1/embeddings",
            &[HTML][..],
            "<html>",
        ),
    ] {
        let answer = posted(&layer, path, 200, head, body)
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(answer.body(), body, "{name}");
    }
}

/// Token counting for Claude on Vertex AI (where Anthropic's Vertex client
/// sends `messages.count_tokens`) is the model `count-tokens`'s
/// `rawPredict`: its `{"input_tokens":…}` is delivered as it is (it was
/// judged a Messages answer of another shape, retried, and always failed).
#[tokio::test]
async fn counting_tokens_for_claude_on_vertex_is_no_generation() {
    let path =
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict";
    let body = r#"{"input_tokens":1234}"#;
    for layer in [ClassifyLayer::anthropic(), ClassifyLayer::openai()] {
        let answer = answered_at(&layer, http::Method::POST, path, body)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(answer.body(), body);
    }
}

/// One client calling two wires (a gateway serving OpenAI's and
/// Anthropic's side by side): an OpenAI layer reads `/v1/messages`
/// answers in Anthropic's shape, as the path says — in its own, every one
/// was "another shape" on a generation endpoint, a failure retried.
#[tokio::test]
async fn the_path_names_the_shape_of_the_answer() {
    let layer = ClassifyLayer::openai();
    let ok = r#"{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}"#;
    let answer = answered_at(&layer, http::Method::POST, "/v1/messages", ok)
        .await
        .unwrap();
    assert_eq!(finish(&answer), (FinishKind::Complete, "end_turn"));
    let refused = r#"{"id":"msg_02","type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_sequence":null}"#;
    let error = answered_at(&layer, http::Method::POST, "/v1/messages", refused)
        .await
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::Refused);
    // And an Anthropic layer reads a chat completion at its path.
    let chat = r#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#;
    let answer = answered_at(
        &ClassifyLayer::anthropic(),
        http::Method::POST,
        "/v1/chat/completions",
        chat,
    )
    .await
    .unwrap();
    assert_eq!(finish(&answer), (FinishKind::Complete, "stop"));
}

/// OpenAI resources whose paths end like a generation's are not judged as
/// answers: a message added to an Assistants thread (`…/threads/{id}/
/// messages`, once taken for Anthropic's `/v1/messages`) and the stored
/// completions listed by a GET of `/v1/chat/completions`. Judged, they were
/// "another shape", retried: a second message posted to the thread.
#[tokio::test]
async fn resources_that_end_like_a_generation_are_not_judged() {
    let layer = ClassifyLayer::openai();
    let message = r#"{"id":"msg_1","object":"thread.message","created_at":1,"thread_id":"thread_1","role":"user","content":[{"type":"text","text":{"value":"Hi","annotations":[]}}],"attachments":[],"metadata":{}}"#;
    let posted = answered_at(
        &layer,
        http::Method::POST,
        "/v1/threads/thread_1/messages",
        message,
    )
    .await
    .unwrap();
    assert_eq!(posted.body(), message);
    let listed = r#"{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}"#;
    let list = answered_at(&layer, http::Method::GET, "/v1/chat/completions", listed)
        .await
        .unwrap();
    assert_eq!(list.body(), listed);
    // The same body where a generation's answer must be: no answer.
    let error = answered_at(&layer, http::Method::POST, "/v1/chat/completions", listed)
        .await
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::ProtocolViolation);
}

/// A 2xx whose body declares an error (OpenRouter once a generation has
/// begun) is the error it declares, its code read as the status: a 429
/// waits, a 502 is retried, spent credits are a wall — not one
/// `protocol_violation` retried at once whatever it said.
#[tokio::test]
async fn an_error_declared_in_a_2xx_body_is_that_error() {
    let layer = ClassifyLayer::openai();
    let cases: [(&'static str, Expect); 4] = [
        (
            r#"{"error":{"code":429,"message":"Rate limit exceeded. Please try again in 20s.","metadata":{"provider_name":"Example"}}}"#,
            expect(Class::Transient, Code::RateLimited, Action::Retry)
                .after(Duration::from_secs(20)),
        ),
        (
            r#"{"error":{"code":502,"message":"Provider returned error"}}"#,
            expect(Class::Transient, Code::ProviderUnavailable, Action::Retry),
        ),
        (
            r#"{"error":{"code":402,"message":"Insufficient credits"}}"#,
            expect(Class::Permanent, Code::QuotaExhausted, Action::Surface),
        ),
        (
            r#"{"error":{"message":"The server had an error processing your request.","type":"server_error","code":null}}"#,
            expect(Class::Transient, Code::ProviderUnavailable, Action::Retry),
        ),
    ];
    for (body, want) in cases {
        let error = answered_at(&layer, http::Method::POST, "/v1/chat/completions", body)
            .await
            .unwrap_err();
        want.check(body, found(&error));
    }
    // Where no answer must be, a resource's own `error` object (a failed
    // fine-tuning job) is the resource, delivered.
    let job = r#"{"object":"fine_tuning.job","id":"ftjob-1","status":"failed","error":{"code":"invalid_training_file","message":"bad line 3","param":"training_file"}}"#;
    let fetched = answered_at(
        &layer,
        http::Method::GET,
        "/v1/fine_tuning/jobs/ftjob-1",
        job,
    )
    .await
    .unwrap();
    assert_eq!(fetched.body(), job);
    // A declared policy error is no answer even where policy outcomes are
    // delivered: only the answer's own refusal is.
    let flagged = r#"{"error":{"code":"invalid_prompt","message":"Invalid prompt: flagged"}}"#;
    let error = answered_at(
        &ClassifyLayer::openai().deliver_policy_outcomes(true),
        http::Method::POST,
        "/v1/chat/completions",
        flagged,
    )
    .await
    .unwrap_err();
    assert_eq!(found(&error).code(), Code::ContentFiltered);
    // `"error": null` beside an answer says nothing.
    let answer = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"error":null}"#;
    answered_at(&layer, http::Method::POST, "/v1/chat/completions", answer)
        .await
        .unwrap();
}

/// Blanks before an answer, sent a few bytes at a time (a hostile or
/// broken server), are read once each: the opening is looked for after
/// what is known to be blank, not in the whole buffer again at every
/// frame — quadratic, 2 MiB of spaces in 64-byte frames was a minute of
/// CPU inside one poll.
#[tokio::test]
async fn blanks_before_an_answer_are_read_once() {
    let answer = r#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#;
    let body = Repeat::new(Bytes::from(vec![b' '; 64]), 32 * 1024).tail(answer);
    let response = http::Response::builder()
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let started = std::time::Instant::now();
    let response = through(&ClassifyLayer::openai(), response).await.unwrap();
    let bytes = collect(response.into_body()).await;
    assert_eq!(bytes.len(), 2 * 1024 * 1024 + answer.len());
    let took = started.elapsed();
    // Linear: well under a second even unoptimised; quadratic: a minute.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
}

/// With `deliver_policy_outcomes` (a proxy whose clients read the
/// provider's own refusal), a refusal or filter declared in a whole answer
/// is that answer, its finish marked, not a failure.
#[tokio::test]
async fn policy_outcomes_are_delivered_when_asked() {
    let cases: [(ClassifyLayer, &'static str, FinishKind, &str); 4] = [
        (
            ClassifyLayer::openai(),
            r#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#,
            FinishKind::Refused,
            // No reason of the provider's says it: seawall's code does.
            "refused",
        ),
        (
            ClassifyLayer::openai(),
            r#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Here is"},"finish_reason":"content_filter"}]}"#,
            FinishKind::Filtered,
            "content_filter",
        ),
        (
            ClassifyLayer::anthropic(),
            r#"{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":22,"output_tokens":1}}"#,
            FinishKind::Refused,
            "refusal",
        ),
        (
            ClassifyLayer::gemini(),
            r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":8}}"#,
            FinishKind::Filtered,
            "PROHIBITED_CONTENT",
        ),
    ];
    for (layer, body, kind, reason) in cases {
        let error = unary(&layer, body).await.unwrap_err();
        assert_eq!(found(&error).class(), Class::Policy, "{body}");
        let response = unary(&layer.deliver_policy_outcomes(true), body)
            .await
            .unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(response.body(), body, "the provider's answer as sent");
        assert_eq!(finish(&response), (kind, reason), "{body}");
        // Billed as any answer: the usage it reports goes with it.
        let usage = response.extensions().get::<seawall_core::Usage>();
        if body.contains("\"usage") {
            assert!(usage.is_some_and(|u| u.input_tokens > 0), "{body}");
        }
    }
}

#[tokio::test]
async fn anthropic_unary_answers() {
    let layer = ClassifyLayer::anthropic();
    let ok = r#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}"#;
    assert_eq!(
        finish(&unary(&layer, ok).await.unwrap()),
        (FinishKind::Complete, "end_turn")
    );
    let cut = r#"{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"text","text":"Once"}],"stop_reason":"max_tokens","stop_sequence":null}"#;
    assert_eq!(
        finish(&unary(&layer, cut).await.unwrap()),
        (FinishKind::Truncated, "max_tokens")
    );
    let tool = r#"{"id":"msg_03","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use"}"#;
    assert!(unary(&layer, tool).await.is_ok());

    let refusal = r#"{"id":"msg_04","type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_sequence":null}"#;
    let error = unary(&layer, refusal).await.unwrap_err();
    expect(Class::Policy, Code::Refused, Action::Escalate).check("refusal", found(&error));
    assert_eq!(found(&error).provider_code(), Some("refusal"));

    let empty = r#"{"id":"msg_05","type":"message","role":"assistant","content":[{"type":"text","text":""}],"stop_reason":"end_turn"}"#;
    let error = unary(&layer, empty).await.unwrap_err();
    expect(Class::Transient, Code::EmptyResponse, Action::Retry).check("empty", found(&error));
}

#[tokio::test]
async fn gemini_unary_answers() {
    let layer = ClassifyLayer::gemini();
    let ok = r#"{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"gemini-2.0-flash"}"#;
    assert_eq!(
        finish(&unary(&layer, ok).await.unwrap()),
        (FinishKind::Complete, "STOP")
    );
    let cut = r#"{"candidates":[{"content":{"parts":[{"text":"Once"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}]}"#;
    assert_eq!(
        finish(&unary(&layer, cut).await.unwrap()),
        (FinishKind::Truncated, "MAX_TOKENS")
    );

    let cases = [
        (
            "finishReason SAFETY",
            r#"{"candidates":[{"content":{"parts":[{"text":"Here is"}],"role":"model"},"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}]}"#,
            expect(Class::Policy, Code::ContentFiltered, Action::Escalate),
        ),
        (
            "promptFeedback.blockReason",
            r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","safetyRatings":[]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash"}"#,
            expect(Class::Policy, Code::ContentFiltered, Action::Escalate),
        ),
        (
            "empty parts",
            r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}]}"#,
            expect(Class::Transient, Code::EmptyResponse, Action::Retry),
        ),
        (
            "MALFORMED_FUNCTION_CALL",
            r#"{"candidates":[{"content":{},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}"#,
            expect(
                Class::ModelFixable,
                Code::BadArguments,
                Action::ReturnToModel,
            ),
        ),
    ];
    for (name, body, want) in cases {
        let error = unary(&layer, body).await.unwrap_err();
        want.check(name, found(&error));
    }
    let error = unary(&layer, cases[1].1).await.unwrap_err();
    assert_eq!(found(&error).provider_code(), Some("PROHIBITED_CONTENT"));

    // Usage alone, no candidates and no block reason: the empty answer
    // Gemini sometimes sends, where an answer must be; elsewhere another
    // resource counting tokens (a cached content), delivered — judged, its
    // creation was retried and each retry made (and billed) another.
    let bare = r#"{"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.0-flash"}"#;
    let generate = "/v1beta/models/gemini-2.0-flash:generateContent";
    let error = answered_at(&layer, http::Method::POST, generate, bare)
        .await
        .unwrap_err();
    expect(Class::Transient, Code::EmptyResponse, Action::Retry)
        .check("usage alone", found(&error));
    let cache = r#"{"name":"cachedContents/c1","model":"models/gemini-2.0-flash","createTime":"2026-12-01T00:00:00Z","expireTime":"2026-12-01T01:00:00Z","usageMetadata":{"totalTokenCount":123456}}"#;
    let created = answered_at(&layer, http::Method::POST, "/v1beta/cachedContents", cache)
        .await
        .unwrap();
    assert_eq!(created.body(), cache);
}

#[tokio::test(start_paused = true)]
async fn a_json_array_stream_is_handed_on_after_its_first_chunk() {
    // Gemini's streamGenerateContent without alt=sse: a JSON array that
    // arrives over time. The layer must not wait for it to end.
    let first = r#"[{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}]}"#;
    let body = Chunks::new([first]).then_pending();
    let polls = body.polls.clone();
    let response = Response::builder()
        .status(200)
        .header(JSON.0, JSON.1)
        .body(body)
        .unwrap();
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        through(&ClassifyLayer::gemini(), response),
    )
    .await
    .expect("handed on without waiting for the end")
    .unwrap();
    assert_eq!(polls.load(Ordering::SeqCst), 1);
    assert!(response.extensions().get::<Finish>().is_none());
    let mut body = response.into_body();
    let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        frame.into_data().unwrap(),
        first,
        "what was read is replayed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_body_read_here_counts_as_the_attempts_progress() {
    // A per-attempt deadline outside reads `Progress` when it fires: bytes
    // that arrived while this layer read a slow body are not silence.
    let progress = seawall_core::Progress::default();
    let first = r#"{"choices":[{"index":0,"#;
    let body = Chunks::new([first]).then_pending();
    let mut response = Some(
        Response::builder()
            .status(200)
            .header(JSON.0, JSON.1)
            .body(body)
            .unwrap(),
    );
    let inner = service_fn(move |_: Request<()>| {
        let response = response.take().expect("one call");
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let mut request = Request::new(());
    request.extensions_mut().insert(progress.clone());
    let call = ClassifyLayer::openai().layer(inner).oneshot(request);
    let waited = tokio::time::timeout(Duration::from_secs(1), call).await;
    assert!(waited.is_err(), "the body never ends");
    assert_eq!(progress.bytes(), first.len() as u64);
}

#[tokio::test]
async fn a_unary_body_past_the_check_cap_is_delivered_unchecked() {
    let chunks = [
        r#"{"object":"chat.completion","#,
        r#""choices":[{"index":0,"#,
        r#""message":{"content":""},"finish_reason":"stop"}]}"#,
    ];
    let whole: String = chunks.concat();
    let body = Chunks::new(chunks);
    let pulled = body.pulled.clone();
    let response = Response::builder()
        .status(200)
        .header(JSON.0, JSON.1)
        .body(body)
        .unwrap();
    let layer = ClassifyLayer::openai().max_success_body(40);
    let response = through(&layer, response).await.unwrap();
    assert_eq!(
        pulled.load(Ordering::SeqCst),
        (chunks[0].len() + chunks[1].len()) as u64
    );
    assert!(response.extensions().get::<Finish>().is_none());
    let body = response.into_body();
    // The upstream's exact size is kept as a lower bound only: a server
    // relaying an exact size stops polling at the last byte, and the end,
    // where a cut or an overlong value is judged, would never be read.
    let hint = body.size_hint();
    assert_eq!(
        (hint.lower(), hint.upper()),
        (whole.len() as u64, None),
        "no exact size"
    );
    assert_eq!(collect(body).await, whole, "nothing lost");
}

/// Reads a body past the check cap to its end: the bytes that came, and
/// the failure it ended with.
async fn read_past_cap(chunks: Chunks) -> (Vec<u8>, Option<Failure>) {
    let response = Response::builder()
        .status(200)
        .header(JSON.0, JSON.1)
        .body(chunks)
        .unwrap();
    let layer = ClassifyLayer::openai().max_success_body(20);
    let mut body = std::pin::pin!(through(&layer, response).await.unwrap().into_body());
    let mut read = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        match frame {
            Ok(frame) => read.extend_from_slice(frame.data_ref().unwrap()),
            Err(error) => {
                let failure = found(&error).clone();
                // The error ends the body.
                let next = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await;
                assert!(next.is_none(), "{next:?}");
                return (read, Some(failure));
            }
        }
    }
    (read, None)
}

#[tokio::test]
async fn a_json_answer_past_the_check_cap_that_ends_before_it_closes_is_truncated() {
    let chunks = [
        r#"{"object":"list","data":[{"embedding":[0.1,"#,
        r#"0.2]},{"embedding":[0.3,"#,
        r#"0.4"#,
    ];
    let (read, failure) = read_past_cap(Chunks::new(chunks)).await;
    assert_eq!(read, chunks.concat().as_bytes(), "every byte passed, once");
    let failure = failure.expect("a cut answer is no answer");
    assert_eq!(failure.code(), Code::Truncated, "{failure}");
    let delivered = failure.interrupted().expect("what the caller was shown");
    assert_eq!(delivered.bytes, read.len() as u64);
    assert_eq!(delivered.cause, Some(Code::Truncated));

    // The same bytes with the value closed (a brace inside a string does
    // not close it) are an answer, behind a byte order mark too.
    let whole = [chunks[0], chunks[1], r#"0.4],"s":"}]"}]}"#, "\n"];
    let (read, failure) = read_past_cap(Chunks::new(whole)).await;
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(read, whole.concat().as_bytes());
    let marked = concat!("\u{feff}", r#"{"object":"list","data":[{"embedding":[0.1,"#);
    let whole = [marked, chunks[1], r#"0.4]}]}"#];
    let (read, failure) = read_past_cap(Chunks::new(whole)).await;
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(read, whole.concat().as_bytes());
}

#[tokio::test]
async fn a_json_answer_past_the_check_cap_broken_or_followed_by_more_is_an_interruption() {
    let head = r#"{"object":"list","data":[{"embedding":[0.1,"#;
    let broken = Chunks::new([head, "0.2"]).then_error(io::ErrorKind::ConnectionReset);
    let (read, failure) = read_past_cap(broken).await;
    assert_eq!(read.len(), head.len() + 3);
    let failure = failure.expect("a reset is no answer");
    assert_eq!(failure.code(), Code::StreamInterrupted, "{failure}");
    assert_eq!(failure.interrupted().unwrap().cause, Some(Code::Transport));

    let twice = Chunks::new([head, "0.2]}]}", r#"{"object":"list"}"#]);
    let (_, failure) = read_past_cap(twice).await;
    let failure = failure.expect("two values are no answer");
    assert_eq!(failure.code(), Code::StreamInterrupted, "{failure}");
    assert_eq!(
        failure.interrupted().unwrap().cause,
        Some(Code::ProtocolViolation)
    );
}

#[tokio::test]
async fn a_2xx_body_that_breaks_while_checked_is_a_transport_failure() {
    let head = r#"{"choices":[{"#;
    let body = Chunks::new([head]).then_error(io::ErrorKind::ConnectionReset);
    let response = Response::builder()
        .status(200)
        .header(JSON.0, JSON.1)
        .body(body)
        .unwrap();
    let error = through(&ClassifyLayer::openai(), response)
        .await
        .map(|_| ())
        .unwrap_err();
    let failure = found(&error);
    expect(Class::Transient, Code::Transport, Action::Retry).check("reset", failure);
    assert_eq!(failure.status(), Some(200));
    assert_eq!(failure.evidence().bytes, head.len() as u64);
}

/// An error wrapping another, as clients build them.
#[derive(Debug)]
struct Wrapped(&'static str, Box<dyn StdError + Send + Sync>);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl StdError for Wrapped {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.1)
    }
}

/// tonic's own timeout and connect errors, wrapped as its
/// `transport::Error` wraps them, read as the transport's.
#[cfg(feature = "tonic")]
#[test]
fn tonics_own_timeout_and_connect_errors_are_read() {
    let expired = Wrapped("transport error", Box::new(tonic::TimeoutExpired(())));
    let failure = transport_failure(&expired).expect("recognised");
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.action(), Action::Retry);

    let refused = io::Error::other("no route");
    let connect = Wrapped(
        "transport error",
        Box::new(tonic::ConnectError(Box::new(refused))),
    );
    let failure = transport_failure(&connect).expect("recognised");
    assert_eq!(failure.code(), Code::Transport);
}

async fn failing(layer: &ClassifyLayer, error: BoxError) -> BoxError {
    let mut error = Some(error);
    let inner = service_fn(move |_: Request<()>| {
        let error = error.take().unwrap();
        async move { Err::<Response<Chunks>, _>(error) }
    });
    layer
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .map(|_| ())
        .unwrap_err()
}

#[tokio::test]
async fn transport_errors_map_by_their_source_chain() {
    use io::ErrorKind::*;
    let layer = ClassifyLayer::openai();
    for kind in [
        ConnectionRefused,
        ConnectionReset,
        ConnectionAborted,
        BrokenPipe,
        UnexpectedEof,
        NotConnected,
    ] {
        let error: BoxError = Box::new(Wrapped("client error", Box::new(io::Error::from(kind))));
        let error = failing(&layer, error).await;
        let failure = found(&error);
        expect(Class::Transient, Code::Transport, Action::Retry)
            .check(&format!("{kind:?}"), failure);
        assert_eq!(failure.status(), None);
        assert!(failure.evidence().elapsed.is_some());
        // Every link says its part: the wrapper, then the io error.
        let message = format!("client error: {}", io::Error::from(kind));
        assert_eq!(failure.message(), Some(message.as_str()));
    }
    let timeouts: [BoxError; 4] = [
        Box::new(io::Error::from(TimedOut)),
        Box::new(tower::timeout::error::Elapsed::new()),
        Box::new(io::Error::other(tower::timeout::error::Elapsed::new())),
        Box::new(Wrapped(
            "connect",
            Box::new(Wrapped("tcp", Box::new(io::Error::from(TimedOut)))),
        )),
    ];
    for error in timeouts {
        let error = failing(&layer, error).await;
        expect(Class::Transient, Code::Timeout, Action::Retry).check("timeout", found(&error));
    }
    let elapsed = tokio::time::timeout(Duration::ZERO, std::future::pending::<()>())
        .await
        .unwrap_err();
    let error = failing(&layer, Box::new(elapsed)).await;
    assert_eq!(found(&error).code(), Code::Timeout);
}

/// A call tower's `LoadShed` refused because the service under it was at
/// capacity is `overloaded`, retried after a backoff: capacity comes back,
/// and marked refused here (closed by us, no status).
/// It was `unknown`, failed for good on the first busy moment.
#[tokio::test]
async fn a_call_shed_at_capacity_is_overloaded() {
    // The first call holds the one slot for as long as it is kept.
    let inner = service_fn(|_: Request<()>| {
        std::future::pending::<Result<Response<Chunks>, std::convert::Infallible>>()
    });
    let mut service = tower::ServiceBuilder::new()
        .layer(ClassifyLayer::openai())
        .load_shed()
        .concurrency_limit(1)
        .service(inner);
    let _holding = service.ready().await.unwrap().call(Request::new(()));
    let shed = service.ready().await.unwrap().call(Request::new(()));
    let error = shed.await.map(|_| ()).expect_err("no slot left");
    let failure = found(&error);
    expect(Class::Transient, Code::Overloaded, Action::Retry).check("shed", failure);
    assert_eq!(failure.status(), None, "nothing was sent");
    // Refused on this side: the mark a breaker above reads, so a burst
    // past the local limit is not counted against the route.
    assert_eq!(
        failure.evidence().closed_by,
        Some(seawall_core::ClosedBy::Us)
    );
    assert!(
        failure
            .cause()
            .is_some_and(|cause| cause.is::<tower::load_shed::error::Overloaded>()),
        "tower's own error stays reachable"
    );
}

/// `max_answer_body` below the check cap bounds the answer there too: a
/// checked answer longer than it is `answer_too_large`, never handed on
/// whole (it was, up to the check cap, and only a longer one failed).
#[tokio::test]
async fn an_answer_bound_below_the_check_cap_holds() {
    let answer = |text: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"{text}"}},"finish_reason":"stop"}}]}}"#
        )
    };
    let layer = ClassifyLayer::openai().max_answer_body(1024);
    let json = [("content-type", "application/json")];
    // Sent in 256-byte frames: the read stops at the bound, not at the
    // check cap (8 MiB) or the answer's end.
    let long = answer(&"x".repeat(4096));
    let frames = long
        .as_bytes()
        .chunks(256)
        .map(|c| String::from_utf8(c.to_vec()).unwrap());
    let mut head = Response::builder().status(200);
    head = head.header("content-type", "application/json");
    let chunked = head.body(Chunks::new(frames.collect::<Vec<_>>())).unwrap();
    let pulled = std::sync::Arc::clone(&chunked.body().pulled);
    let error = through(&layer, chunked).await.expect_err("too large");
    let failure = found(&error);
    assert_eq!(failure.code(), Code::AnswerTooLarge);
    assert_eq!(failure.evidence().bytes, 1024 + 256);
    assert_eq!(pulled.load(Ordering::Relaxed), 1024 + 256);
    let short = answer("hello");
    let delivered = through(&layer, response(200, &json, &short))
        .await
        .expect("within the bound");
    assert_eq!(collect(delivered.into_body()).await, short.as_bytes());
}

/// The verdict is a `Failure`; the client's own error is kept with it
/// (`Failure::cause`), so a caller still finds tower's `Elapsed`, an io
/// error's kind or its own error type. It was dropped once read. It is no
/// link of the chain: its text is not sanitised.
#[tokio::test]
async fn the_clients_error_stays_reachable_under_the_verdict() {
    fn in_cause<T: StdError + 'static>(error: &BoxError) -> Option<&T> {
        let cause = found(error).cause()?;
        let mut link: Option<&(dyn StdError + 'static)> = Some(cause);
        while let Some(current) = link {
            if let Some(found) = current.downcast_ref::<T>() {
                return Some(found);
            }
            link = current.source();
        }
        None
    }
    let layer = ClassifyLayer::openai();
    let error = failing(&layer, Box::new(tower::timeout::error::Elapsed::new())).await;
    assert_eq!(found(&error).code(), Code::Timeout);
    assert!(in_cause::<tower::timeout::error::Elapsed>(&error).is_some());
    let error = failing(
        &layer,
        Box::new(io::Error::from(io::ErrorKind::ConnectionReset)),
    )
    .await;
    assert_eq!(found(&error).code(), Code::Transport);
    let io = in_cause::<io::Error>(&error).expect("the io error");
    assert_eq!(io.kind(), io::ErrorKind::ConnectionReset);
    let secret = "GET https://api.example/v1?key=AIza-secret failed";
    let error = failing(&layer, Box::new(Wrapped("client", secret.into()))).await;
    assert_eq!(found(&error).code(), Code::Unknown);
    assert!(in_cause::<Wrapped>(&error).is_some());
    // Not in the chain, nor in the failure's Debug: the key stays out of
    // whatever prints them.
    assert!(found(&error).source().is_none());
    assert!(!format!("{:?}", found(&error)).contains("AIza-secret"));
}

#[tokio::test]
async fn unknown_errors_fail_closed_unless_told_otherwise() {
    let error = failing(&ClassifyLayer::openai(), "tls: certificate expired".into()).await;
    let failure = found(&error);
    expect(Class::Permanent, Code::Unknown, Action::Surface).check("unknown", failure);
    assert_eq!(failure.message(), Some("tls: certificate expired"));
    // An io error kind that says nothing about the network is unknown too.
    let error = failing(
        &ClassifyLayer::openai(),
        Box::new(io::Error::from(io::ErrorKind::InvalidData)),
    )
    .await;
    assert_eq!(found(&error).code(), Code::Unknown);

    let lenient = ClassifyLayer::openai().unknown_errors(Class::Transient);
    let error = failing(&lenient, "weird".into()).await;
    expect(Class::Transient, Code::Unknown, Action::Retry).check("lenient", found(&error));
}

/// An HTTP client's error names the URL it failed on (reqwest: "error
/// sending request for url (…)"); a key in its query or userinfo never
/// reaches the failure's message, its logs or receipts.
#[tokio::test]
async fn a_key_in_a_failed_url_stays_out_of_the_message() {
    let said = "error sending request for url (https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaSyFAKE): \
                client error (Connect): tcp connect error: Connection refused (os error 111)";
    let connect = Wrapped(
        said,
        Box::new(io::Error::from(io::ErrorKind::ConnectionRefused)),
    );
    for error in [Box::new(connect) as BoxError, said.into()] {
        let error = failing(&ClassifyLayer::gemini(), error).await;
        let failure = found(&error);
        let message = failure.message().expect("a message");
        assert!(!message.contains("AIzaSyFAKE"), "{message}");
        assert!(message.contains("g:generateContent"), "{message}");
        assert!(!error.to_string().contains("AIzaSyFAKE"), "{error}");
    }
}

#[tokio::test]
async fn a_failure_passes_through_unchanged() {
    let original = Failure::new(Code::CircuitOpen).with_message("breaker open");
    let error = failing(
        &ClassifyLayer::openai(),
        Box::new(Wrapped("outer", Box::new(original))),
    )
    .await;
    // The very same error: still the wrapper, with the failure inside.
    assert_eq!(error.to_string(), "outer");
    let failure = found(&error);
    assert_eq!(
        (failure.code(), failure.message()),
        (Code::CircuitOpen, Some("breaker open"))
    );
}

#[tokio::test]
async fn hyper_errors_from_a_real_client() {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let client = Client::builder(TokioExecutor::new()).build_http::<http_body_util::Empty<Bytes>>();
    let layer = ClassifyLayer::openai();

    // Connection refused: a port nobody listens on any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = listener.local_addr().unwrap();
    drop(listener);
    let error = client
        .request(
            Request::get(format!("http://{refused}/"))
                .body(Default::default())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(error.is_connect());
    let failure = transport_failure(&error).expect("recognised");
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Transient, Code::Transport)
    );

    // Closed before the response: hyper's incomplete message.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        drop(stream);
    });
    let mut service = layer.layer(tower::service_fn(
        move |request: Request<http_body_util::Empty<Bytes>>| {
            let client = client.clone();
            async move { client.request(request).await }
        },
    ));
    let request = Request::get(format!("http://{addr}/"))
        .body(Default::default())
        .unwrap();
    let error = service
        .ready()
        .await
        .unwrap()
        .call(request)
        .await
        .map(|_| ())
        .unwrap_err();
    server.await.unwrap();
    expect(Class::Transient, Code::Transport, Action::Retry).check("closed", found(&error));
}

#[tokio::test]
async fn poll_ready_errors_are_classified() {
    struct NotReady;
    impl Service<Request<()>> for NotReady {
        type Response = Response<Chunks>;
        type Error = io::Error;
        type Future = std::future::Ready<Result<Response<Chunks>, io::Error>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), io::Error>> {
            std::task::Poll::Ready(Err(io::Error::from(io::ErrorKind::ConnectionRefused)))
        }
        fn call(&mut self, _: Request<()>) -> Self::Future {
            unreachable!("never ready")
        }
    }
    let error = ClassifyLayer::http()
        .layer(NotReady)
        .oneshot(Request::new(()))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::Transport);
}

#[tokio::test]
async fn user_rules_come_first_and_fall_through() {
    let layer = ClassifyLayer::openai().with_rules(response_rule(
        |parts: &Parts, _body: &[u8], _cx: ErrorContext| {
            parts
                .headers
                .contains_key("x-gateway-busy")
                .then(|| Failure::with_class(Class::Transient, Code::Overloaded))
        },
    ));
    let body =
        r#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#;
    let error = through(
        &layer,
        response(400, &[JSON, ("x-gateway-busy", "1")], body),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    expect(Class::Transient, Code::Overloaded, Action::Retry).check("rule", found(&error));
    assert_eq!(
        found(&error).status(),
        Some(400),
        "evidence filled for rules too"
    );

    let error = through(&layer, response(400, &[JSON], body))
        .await
        .map(|_| ())
        .unwrap_err();
    expect(Class::Permanent, Code::BadRequest, Action::Surface)
        .check("fall through", found(&error));

    // The provider's unary checks still run behind the rule.
    let empty = r#"{"choices":[]}"#;
    let error = through(&layer, response(200, &[JSON], empty))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::EmptyResponse);
}

/// A service of the user's own: answers 200 with `{"ok":false}` when busy.
#[derive(Clone)]
struct OwnApi;

impl Classifier for OwnApi {
    fn inspect_success(&self, _parts: &Parts, _cx: &SuccessContext<'_>) -> Inspection {
        Inspection::CheckBody
    }
    fn check_success(&self, _parts: &Parts, body: &[u8], _cx: &SuccessContext<'_>) -> Checked {
        if body == br#"{"ok":false}"# {
            return Checked::Fail(Failure::new(Code::Overloaded));
        }
        Checked::Deliver(None)
    }
    fn classify_error(&self, error: &(dyn StdError + 'static)) -> Option<Failure> {
        (error.to_string() == "drained").then(|| Failure::new(Code::ProviderUnavailable))
    }
}

#[tokio::test]
async fn custom_classifiers() {
    let layer = ClassifyLayer::new(OwnApi);
    let error = through(&layer, response(200, &[], r#"{"ok":false}"#))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::Overloaded);
    let ok = through(&layer, response(200, &[], r#"{"ok":true}"#))
        .await
        .unwrap();
    assert_eq!(collect(ok.into_body()).await, r#"{"ok":true}"#);
    // Non-2xx the classifier leaves alone: the generic status table.
    let error = through(&layer, response(503, &[], ""))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::ProviderUnavailable);

    let mut drained = Some(BoxError::from("drained"));
    let inner = service_fn(move |_: Request<()>| {
        let error = drained.take().unwrap();
        async move { Err::<Response<Chunks>, _>(error) }
    });
    let error = layer
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::ProviderUnavailable);

    // Provider rules can sit behind a user's classifier as well.
    let both = ClassifyLayer::new(ProviderClassifier::gemini()).with_rules(OwnApi);
    let error = through(&both, response(200, &[JSON], r#"{"ok":false}"#))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::Overloaded);
    // The user's rule reads every body; the provider's JSON check still
    // judges only the JSON ones, so a plain-text answer is delivered.
    let text = through(&both, response(200, &[], "{not json, just text"))
        .await
        .unwrap();
    assert_eq!(collect(text.into_body()).await, "{not json, just text");
}

/// A client layer below that answers with a `tonic::Status` says what the
/// same status on the wire would.
#[cfg(feature = "tonic")]
#[tokio::test]
async fn a_tonic_status_from_below_reads_as_the_status_on_the_wire() {
    async fn error_of(status: tonic::Status) -> Failure {
        let mut status = Some(status);
        let inner = service_fn(move |_: Request<()>| {
            let status = status.take().expect("one call");
            async move { Err::<Response<Chunks>, _>(status) }
        });
        let error = ClassifyLayer::grpc()
            .layer(inner)
            .oneshot(Request::new(()))
            .await
            .map(|_| ())
            .unwrap_err();
        found(&error).clone()
    }

    let unavailable = error_of(tonic::Status::unavailable("token service down")).await;
    assert_eq!(unavailable.code(), Code::ProviderUnavailable);
    assert_eq!(unavailable.action(), Action::Retry);
    assert_eq!(unavailable.provider_code(), Some("14"));
    assert_eq!(unavailable.message(), Some("token service down"));

    let denied = error_of(tonic::Status::unauthenticated("no token")).await;
    assert_eq!(denied.code(), Code::Auth);
    assert_eq!(denied.action(), Action::Surface);

    let mut pushback = tonic::Status::resource_exhausted("slow down");
    pushback
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "250".parse().unwrap());
    let slowed = error_of(pushback).await;
    assert_eq!(slowed.retry_after(), Some(Duration::from_millis(250)));

    let detailed = error_of(tonic::Status::with_details(
        tonic::Code::InvalidArgument,
        "bad",
        Bytes::from_static(b"\x08\x03"),
    ))
    .await;
    assert_eq!(detailed.status_details(), Some(&b"\x08\x03"[..]));
}

/// An error body that stops short of its end (a chunked body without its
/// last chunk, on a connection kept open) or trickles is judged by what
/// came within two seconds: the status and headers keep their verdict (a
/// 429's `Retry-After`), where the attempt's bound used to fire first and
/// make a rate limit a timeout retried at once.
#[tokio::test(start_paused = true)]
async fn an_error_body_that_never_ends_is_judged_by_what_came() {
    let body = Chunks::new([r#"{"error":{"message":"Rate limit reached for"#]).then_pending();
    let response = Response::builder()
        .status(429)
        .header(JSON.0, JSON.1)
        .header("retry-after", "7")
        .body(body)
        .unwrap();
    let started = tokio::time::Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(30),
        through(&ClassifyLayer::openai(), response),
    )
    .await
    .expect("judged without the body's end")
    .expect_err("a 429");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    let failure = found(&error);
    assert_eq!(failure.code(), Code::RateLimited);
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(failure.status(), Some(429));
}

/// Gemini's JSON-array stream is an answer only where it was asked for
/// (`:streamGenerateContent` without `alt=sse`). An array anywhere else —
/// an error as its one element, `[]`, or an array where SSE or one whole
/// answer was asked for — was handed on unread and called complete.
#[tokio::test]
async fn an_array_is_a_gemini_answer_only_where_one_was_asked() {
    let layer = ClassifyLayer::gemini();
    let error =
        r#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#;
    let whole = r#"[{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"finishReason":"STOP"}]}]"#;
    for path in [
        "/v1beta/models/gemini-x:generateContent",
        "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
    ] {
        for body in [error, "[]", whole] {
            let refused = answered_at(&layer, http::Method::POST, path, body)
                .await
                .expect_err("no answer");
            expect(Class::Transient, Code::ProtocolViolation, Action::Retry)
                .check(path, found(&refused));
        }
    }
    let asked = "/v1beta/models/gemini-x:streamGenerateContent";
    let streamed = answered_at(&layer, http::Method::POST, asked, whole)
        .await
        .expect("the array stream, handed on");
    assert_eq!(streamed.body(), whole);
}

/// Only an answer to a request that asked for a stream is relabelled an
/// event stream when it opens like one under a JSON label: elsewhere (an
/// endpoint that asks for none, a page that reads `error: …`) the label
/// stays as the server sent it.
#[tokio::test]
async fn only_an_asked_for_stream_is_relabelled() {
    let layer = ClassifyLayer::openai();
    // Not embeddings: an endpoint that answers JSON takes no such text.
    let delivered = answered_at(
        &layer,
        http::Method::POST,
        "/v1/audio/transcriptions",
        "error: upstream",
    )
    .await
    .expect("no generation: handed on as sent");
    assert_eq!(delivered.headers()[http::header::CONTENT_TYPE], JSON.1);
    assert_eq!(delivered.body(), "error: upstream");
}

/// A whole answer delivered when its JSON closed, before a framing that
/// never ends: the server's `content-length` is not the body's (a server
/// relaying it would abort), so it goes; a length that is the body's stays.
#[tokio::test(start_paused = true)]
async fn a_whole_answer_delivered_early_keeps_no_length_that_is_not_its_own() {
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#;
    for (declared, kept) in [(answer.len() + 1, false), (answer.len(), true)] {
        let body = Chunks::new([answer]).then_pending();
        let mut response = Some(
            Response::builder()
                .status(200)
                .header(JSON.0, JSON.1)
                .header("content-length", declared)
                .body(body)
                .unwrap(),
        );
        let inner = service_fn(move |_: Request<()>| {
            let response = response.take().expect("one call");
            async move { Ok::<_, std::convert::Infallible>(response) }
        });
        let call = ClassifyLayer::openai()
            .layer(inner)
            .oneshot(Request::new(()));
        let response = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("delivered when the JSON closed")
            .unwrap();
        let length = response.headers().get("content-length");
        assert_eq!(length.is_some(), kept, "{declared}");
        assert_eq!(collect(response.into_body()).await, answer.as_bytes());
    }
}
