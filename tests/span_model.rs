//! The model a request names — for a gateway, a client's word — reaches
//! span fields bounded and without control characters: a log formatter
//! writes a `display` field as is, so a raw one could forge a log line,
//! send a terminal an escape sequence, or make a span too large to export.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::span::MODEL_FIELD_BYTES;
use seawall::resume::ResumeLayer;
use tower::ServiceExt;
use tracing::Instrument;
use tracing_subscriber::fmt::format::FmtSpan;

/// What the fmt subscriber wrote.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Refused, then interrupted after content, then whole: an answer
/// retried and resumed.
const RETRIED_AND_RESUMED: &[&str] = &[
    "status;code=503",
    "reset_after;tokens=4;total=8",
    "ok;tokens=8",
];
/// Refused, then whole.
const RETRIED: &[&str] = &["status;code=503", "ok"];

/// The log a plain fmt subscriber (every span's fields on its close)
/// writes while `request` goes through a stack that retries and resumes,
/// its upstream scripted with `faults`.
fn logged(
    classify: ClassifyLayer,
    faults: &[&str],
    request: impl FnOnce(&str) -> http::Request<Full<Bytes>>,
) -> String {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::CLOSE)
        .finish();
    common::spans::run_under(subscriber, async {
        let chaos = common::chaos().await;
        for route in ["openai", "gemini"] {
            chaos
                .script(route, faults.iter().map(|f| common::fault(f)).collect())
                .unwrap();
        }
        let service = common::short_stack()
            .resume(ResumeLayer::new())
            .build(&classify, common::client());
        // A resume's span is a child of the span the answer is read in.
        async {
            let response = service.oneshot(request(&chaos.base_url())).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
        .instrument(tracing::info_span!("app"))
        .await
    });
    let bytes = buffer.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

fn openai_stream(base: &str, model: &str) -> http::Request<Full<Bytes>> {
    let body = serde_json::json!({
        "model": model,
        "stream": true,
        "messages": [{"role": "user", "content": "count"}],
    });
    http::Request::post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// Every line the formatter wrote is one it began: a level first.
fn assert_lines_are_its_own(log: &str) {
    for line in log.lines() {
        let level = line.trim_start().split(' ').next().unwrap_or_default();
        assert!(
            ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level),
            "a line the formatter did not begin: {line:?}"
        );
    }
}

/// No field holds more of the model (`m`s) than the bound, yet each
/// model field holds that much.
fn assert_cut_to_the_bound(log: &str, operation: &str) {
    let bounded = "m".repeat(MODEL_FIELD_BYTES);
    assert!(
        !log.contains(&format!("{bounded}m")),
        "a field holds more of the model than {MODEL_FIELD_BYTES} bytes"
    );
    assert!(log.contains(&format!("otel.name={operation} {bounded} ")));
    assert!(log.contains(&format!("gen_ai.request.model=\"{bounded}\"")));
}

#[test]
fn a_model_with_control_characters_cannot_forge_a_log_line() {
    // The JSON escapes `\n` and `\u001b`: the parsed model holds them raw.
    let model = "x\nFORGED \u{1b}[31m";
    let log = logged(ClassifyLayer::openai(), RETRIED_AND_RESUMED, |base| {
        openai_stream(base, model)
    });
    assert!(!log.contains('\u{1b}'), "no escape reaches the log: {log}");
    assert_lines_are_its_own(&log);
    // The operation's, its attempts' and the resume's spans are named by
    // the model, cleaned.
    let name = "otel.name=chat x\u{fffd}FORGED \u{fffd}[31m ";
    assert!(log.contains(&format!("resume{{{name}")), "{log}");
    assert!(log.contains(&format!("attempt{{{name}")), "{log}");
    assert!(
        log.contains("gen_ai.request.model=\"x\u{fffd}FORGED \u{fffd}[31m\""),
        "{log}"
    );
}

#[test]
fn a_huge_model_is_cut_in_every_span_field() {
    // The longest name the fault server takes (it refuses longer ones
    // with a 400): twice the span's bound. The cut does not depend on
    // how far past the bound a name runs.
    let model = "m".repeat(seawall_chaos::MAX_MODEL_LEN);
    const { assert!(seawall_chaos::MAX_MODEL_LEN > MODEL_FIELD_BYTES) };
    // Not resumed: a continuation would carry the whole model again.
    let log = logged(ClassifyLayer::openai(), RETRIED, |base| {
        openai_stream(base, &model)
    });
    assert_cut_to_the_bound(&log, "chat");
}

#[test]
fn a_huge_model_in_a_gemini_path_is_cut_in_every_span_field() {
    // Gemini names the model in the path: known as the spans start.
    let model = "m".repeat(seawall_chaos::MAX_MODEL_LEN);
    let log = logged(ClassifyLayer::gemini(), RETRIED_AND_RESUMED, |base| {
        http::Request::post(format!(
            "{base}/v1beta/models/{model}:streamGenerateContent?alt=sse"
        ))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"contents":[{"role":"user","parts":[{"text":"count"}]}]}"#,
        )))
        .unwrap()
    });
    assert_cut_to_the_bound(&log, "generate_content");
}
