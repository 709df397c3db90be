//! Classifies a handful of canned provider answers through `ClassifyLayer`
//! and prints what each one means.
//!
//! ```text
//! cargo run --example classify
//! ```

use std::convert::Infallible;
use std::time::SystemTime;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use seawall::classify::ClassifyLayer;
use seawall::core::{Failure, Finish};
use tower::{Layer, ServiceExt, service_fn};

struct Canned {
    name: &'static str,
    layer: fn() -> ClassifyLayer,
    status: u16,
    headers: &'static [(&'static str, &'static str)],
    body: &'static str,
}

const JSON: (&str, &str) = ("content-type", "application/json");

const CASES: &[Canned] = &[
    Canned {
        name: "openai 429 rate limit",
        layer: ClassifyLayer::openai,
        status: 429,
        headers: &[JSON],
        body: r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1.574s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
    },
    Canned {
        name: "openai 429 Retry-After 48489",
        layer: ClassifyLayer::openai,
        status: 429,
        headers: &[JSON, ("retry-after", "48489")],
        body: r#"{"error":{"message":"Rate limit reached for requests per day (RPD).","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
    },
    Canned {
        name: "openai 429 insufficient_quota",
        layer: ClassifyLayer::openai,
        status: 429,
        headers: &[JSON],
        body: r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
    },
    Canned {
        name: "openai 400 context_length_exceeded",
        layer: ClassifyLayer::openai,
        status: 400,
        headers: &[JSON],
        body: r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130017 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    },
    Canned {
        name: "openai 200 content_filter",
        layer: ClassifyLayer::openai,
        status: 200,
        headers: &[JSON],
        body: r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"content_filter"}]}"#,
    },
    Canned {
        name: "openai 200 length (delivered)",
        layer: ClassifyLayer::openai,
        status: 200,
        headers: &[JSON],
        body: r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a","refusal":null},"finish_reason":"length"}]}"#,
    },
    Canned {
        name: "anthropic 529 overloaded",
        layer: ClassifyLayer::anthropic,
        status: 529,
        headers: &[JSON],
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
    },
    Canned {
        name: "anthropic 400 prompt too long",
        layer: ClassifyLayer::anthropic,
        status: 400,
        headers: &[JSON],
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215344 tokens > 200000 maximum"},"request_id":"req_2"}"#,
    },
    Canned {
        name: "anthropic 200 refusal",
        layer: ClassifyLayer::anthropic,
        status: 200,
        headers: &[JSON],
        body: r#"{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_sequence":null}"#,
    },
    Canned {
        name: "gemini 429 per-minute quota",
        layer: ClassifyLayer::gemini,
        status: 429,
        headers: &[JSON],
        body: r#"{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#,
    },
    Canned {
        name: "gemini 200 with nothing in it",
        layer: ClassifyLayer::gemini,
        status: 200,
        headers: &[JSON],
        body: r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}]}"#,
    },
    Canned {
        name: "grpc RESOURCE_EXHAUSTED + pushback",
        layer: ClassifyLayer::grpc,
        status: 200,
        headers: &[
            ("content-type", "application/grpc"),
            ("grpc-status", "8"),
            ("grpc-retry-pushback-ms", "250"),
        ],
        body: "",
    },
    Canned {
        name: "openai 200 text/event-stream",
        layer: ClassifyLayer::openai,
        status: 200,
        headers: &[("content-type", "text/event-stream")],
        body: "data: {\"choices\":[]}\n\n",
    },
];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "{:<38} {:<13} {:<20} {:<15} hint",
        "case", "class", "code", "action"
    );
    for case in CASES {
        let mut builder = Response::builder().status(case.status);
        for (name, value) in case.headers {
            builder = builder.header(*name, *value);
        }
        let mut canned = Some(builder.body(Full::new(Bytes::from_static(case.body.as_bytes()))));
        let provider = service_fn(move |_: Request<()>| {
            let response = canned
                .take()
                .expect("one call")
                .expect("valid canned response");
            async move { Ok::<_, Infallible>(response) }
        });
        let service = (case.layer)().layer(provider);
        match service.oneshot(Request::new(())).await {
            Ok(response) => {
                let finish = response.extensions().get::<Finish>().map_or_else(
                    || "unread (stream)".to_owned(),
                    |f| format!("finish {}", f.kind),
                );
                println!(
                    "{:<38} {:<13} {:<20} {:<15} {finish}",
                    case.name, "delivered", "-", "-"
                );
            }
            Err(error) => {
                let Some(failure) = Failure::find(&*error) else {
                    println!("{:<38} not a seawall failure: {error}", case.name);
                    continue;
                };
                println!(
                    "{:<38} {:<13} {:<20} {:<15} {}",
                    case.name,
                    failure.class().as_str(),
                    failure.code().as_str(),
                    failure.action().as_str(),
                    hint(failure)
                );
            }
        }
    }
}

fn hint(failure: &Failure) -> String {
    let after = failure
        .retry_after()
        .map(|after| format!("retry after {after:?}"));
    let reset = failure.reset_at().and_then(|at| {
        let secs = at.duration_since(SystemTime::now()).ok()?.as_secs();
        Some(format!(
            "quota resets in ~{}h{:02}m",
            secs / 3600,
            secs % 3600 / 60
        ))
    });
    match (after, reset) {
        (Some(after), Some(reset)) => format!("{after}; {reset}"),
        (Some(after), None) => after,
        (None, Some(reset)) => reset,
        (None, None) => "-".to_owned(),
    }
}
