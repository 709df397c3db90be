//! A plain hyper client, no seawall layers: what goes over the wire is what the tests see.
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// A response read to its end, or to the error that cut it.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// The body error, when the body did not end cleanly.
    pub error: Option<hyper::Error>,
}

impl Reply {
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("utf-8 body")
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("json body")
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

pub(crate) fn request(
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::post(path).header("host", "chaos.test");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(body.into())).unwrap()
}

/// Sends one request on a fresh connection; returns the head and the open body.
pub(crate) async fn open(
    addr: SocketAddr,
    req: Request<Full<Bytes>>,
) -> Result<http::Response<Incoming>, hyper::Error> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.send_request(req).await
}

/// Reads a body to its end, keeping the bytes that arrived before an error.
pub(crate) async fn drain(mut body: Incoming) -> (Vec<u8>, Option<hyper::Error>) {
    let mut out = Vec::new();
    loop {
        match body.frame().await {
            None => return (out, None),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => return (out, Some(e)),
        }
    }
}

/// Sends one POST and reads the reply to its end.
pub(crate) async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let res = open(addr, request(path, headers, body.to_owned()))
        .await
        .expect("response head");
    let (parts, incoming) = res.into_parts();
    let (body, error) = drain(incoming).await;
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
        error,
    }
}

pub(crate) const OPENAI: &str = "/v1/chat/completions";
pub(crate) const ANTHROPIC: &str = "/v1/messages";
pub(crate) const GEMINI_UNARY: &str = "/v1beta/models/gemini-x:generateContent";
pub(crate) const GEMINI_STREAM: &str = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";

#[allow(unused_imports)] // each test binary uses its own part
pub(crate) use seawall_test::canned::{
    ANTHROPIC_UNARY_REQUEST as ANTHROPIC_UNARY_BODY, GEMINI_REQUEST as GEMINI_BODY,
    OPENAI_STREAM_REQUEST as OPENAI_STREAM_BODY, OPENAI_UNARY_REQUEST as OPENAI_UNARY_BODY,
};
pub(crate) const ANTHROPIC_STREAM_BODY: &str = r#"{"model":"claude-x","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;

/// The SSE `data:` payloads of a body, in order (comments and `event:` lines skipped).
pub(crate) fn data_lines(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect()
}

/// Concatenated OpenAI `delta.content` of a stream.
pub(crate) fn openai_text(body: &str) -> String {
    data_lines(body)
        .iter()
        .filter(|d| d.as_str() != "[DONE]")
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

pub(crate) const RESPONSES: &str = "/v1/responses";
pub(crate) const RESPONSES_STREAM_BODY: &str = r#"{"model":"gpt-x","stream":true,"input":"hi"}"#;
pub(crate) const RESPONSES_UNARY_BODY: &str =
    r#"{"model":"gpt-x","input":[{"role":"user","content":"hi"}],"max_output_tokens":64}"#;

/// One event of a Responses stream: its `event:` name and its `data:` parsed.
#[derive(Debug)]
pub(crate) struct Event {
    pub name: String,
    pub data: serde_json::Value,
}

/// The events of a Responses stream, in order; comment-only blocks (`: ping`) skipped.
pub(crate) fn events(body: &str) -> Vec<Event> {
    body.split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some(Event {
                name: name.to_owned(),
                data: serde_json::from_str(data).expect("event data is JSON"),
            })
        })
        .collect()
}

/// The event names of a Responses stream, in order.
pub(crate) fn event_names(body: &str) -> Vec<String> {
    events(body).into_iter().map(|e| e.name).collect()
}

/// Concatenated `response.output_text.delta` text of a Responses stream.
pub(crate) fn responses_text(body: &str) -> String {
    events(body)
        .iter()
        .filter(|e| e.name == "response.output_text.delta")
        .filter_map(|e| e.data["delta"].as_str().map(str::to_owned))
        .collect()
}
