//! Reading an answer the way an application does: text deltas as they
//! arrive, for streams; the message text, for unary answers.
//!
//! Both the naive stack and the seawall stack are read by this one caller,
//! so what the replay table says the caller "saw" is the same measurement
//! for both.

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use seawall::core::BoxError;
use seawall::core::FinishKind;
use seawall::core::provider::Provider;
use seawall::stream::Protocol;
use seawall::stream::protocol::{Reason, Signal};
use seawall::stream::sse::Scanner;
use serde_json::Value;

/// What reached the caller from one response.
#[derive(Debug, Default)]
pub struct Delivery {
    /// The text the caller was shown.
    pub text: String,
    /// Content events read (streams) or 1 for a unary answer with text.
    pub content_events: u64,
    /// The finish reason the caller saw, if any.
    pub finish: Option<String>,
    /// What the finish reason means, as the provider's decoder read it.
    pub finish_kind: Option<FinishKind>,
    /// The body error that ended the read, if any.
    pub error: Option<BoxError>,
    /// True when the caller stopped reading on purpose.
    pub cancelled: bool,
}

impl Delivery {
    fn finish(&mut self, reason: Reason<'_>) {
        self.finish_kind = Some(reason.kind);
        self.finish = Some(reason.reason.into_owned());
    }
}

/// A 2xx unary body the caller could not read as the provider's answer:
/// what a caller meets when a cut body slips through as a success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAnAnswer;

impl std::fmt::Display for NotAnAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer is not the provider's JSON")
    }
}

impl std::error::Error for NotAnAnswer {}

/// The stream protocol of a provider.
pub fn protocol(provider: Provider) -> Protocol {
    Protocol::of_provider(provider)
}

/// Reads an event stream, calling `on_text` with every text delta as it
/// arrives. `prefix` is a frame already read by whoever opened the stream.
/// With `stop_after`, the caller stops (drops the body) after that many
/// content events.
pub async fn read_stream<B>(
    prefix: Option<Bytes>,
    body: B,
    provider: Provider,
    stop_after: Option<u64>,
    mut on_text: impl FnMut(&str),
) -> Delivery
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut scanner = Scanner::default();
    let mut decoder = protocol(provider).decoder();
    let mut delivery = Delivery::default();
    let mut feed = |frame: &[u8], delivery: &mut Delivery| {
        let scanned = scanner.feed(frame, |item| match decoder.decode(item) {
            Signal::Content { text, finish } => {
                delivery.content_events += 1;
                if let Some(text) = text {
                    on_text(&text);
                    delivery.text.push_str(&text);
                }
                if let Some(finish) = finish {
                    delivery.finish(finish);
                }
            }
            Signal::Finish(reason) => delivery.finish(reason),
            _ => {}
        });
        if let Err(err) = scanned {
            delivery.error = Some(err.into());
        }
    };
    if let Some(frame) = prefix {
        feed(&frame, &mut delivery);
    }
    while delivery.error.is_none() {
        if stop_after.is_some_and(|n| delivery.content_events >= n) {
            delivery.cancelled = true;
            break;
        }
        match body.frame().await {
            None => break,
            Some(Err(err)) => delivery.error = Some(err.into()),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    feed(&data, &mut delivery);
                }
            }
        }
    }
    delivery
}

/// Reads a unary answer and extracts the message text in the provider's
/// shape.
pub async fn read_unary<B>(body: B, provider: Provider) -> Delivery
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut delivery = Delivery::default();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            delivery.error = Some(err.into());
            return delivery;
        }
    };
    let Ok(json) = serde_json::from_slice::<Value>(&bytes) else {
        delivery.error = Some(Box::new(NotAnAnswer));
        return delivery;
    };
    let (text, finish) = unary_text(&json, provider);
    if !text.is_empty() {
        delivery.content_events = 1;
    }
    delivery.text = text;
    delivery.finish_kind = finish.map(|(kind, _)| kind);
    delivery.finish = finish.map(|(_, reason)| reason.to_owned());
    delivery
}

/// The answer's text and its finish (what it means, the reason as sent).
fn unary_text(json: &Value, provider: Provider) -> (String, Option<(FinishKind, &str)>) {
    fn reason_of(provider: Provider, reason: Option<&Value>) -> Option<(FinishKind, &str)> {
        reason
            .and_then(Value::as_str)
            .map(|reason| (FinishKind::for_provider(provider, reason), reason))
    }
    let finish = |reason| reason_of(provider, reason);
    match provider {
        Provider::OpenAi => {
            let choice = &json["choices"][0];
            (
                choice["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                finish(choice.get("finish_reason")),
            )
        }
        Provider::OpenAiResponses => {
            let parts = || {
                json["output"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|item| item["content"].as_array())
                    .flatten()
            };
            let text = parts()
                .filter(|part| part["type"] == "output_text")
                .filter_map(|part| part["text"].as_str())
                .collect();
            let refused = parts().any(|part| part["type"] == "refusal");
            let finish = match json["status"].as_str() {
                // Incomplete for a reason this CLI does not know is still
                // not a finished answer.
                Some("incomplete") => {
                    let reason = json["incomplete_details"]["reason"]
                        .as_str()
                        .unwrap_or("incomplete");
                    Some(match FinishKind::openai_responses(reason) {
                        FinishKind::Other => (FinishKind::Truncated, reason),
                        kind => (kind, reason),
                    })
                }
                Some("completed") if refused => Some((FinishKind::Refused, "refusal")),
                status => status.map(|s| (FinishKind::openai_responses(s), s)),
            };
            (text, finish)
        }
        Provider::Anthropic => {
            let text = json["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|block| block["text"].as_str())
                .collect();
            (text, finish(json.get("stop_reason")))
        }
        _ => {
            let candidate = &json["candidates"][0];
            let text = candidate["content"]["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect();
            (text, finish(candidate.get("finishReason")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[tokio::test]
    async fn stream_text_and_finish_are_read_across_frames() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w2\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (head, tail) = body.split_at(57);
        let mut seen = Vec::new();
        let delivery = read_stream(
            Some(Bytes::from_static(head.as_bytes())),
            Full::new(Bytes::from_static(tail.as_bytes())),
            Provider::OpenAi,
            None,
            |t| seen.push(t.to_owned()),
        )
        .await;
        assert_eq!(delivery.text, "w1 w2");
        assert_eq!(seen, vec!["w1", " w2"]);
        assert_eq!(delivery.content_events, 2);
        assert_eq!(delivery.finish.as_deref(), Some("stop"));
        assert!(delivery.error.is_none());
    }

    #[tokio::test]
    async fn unary_text_per_provider() {
        let anthropic = r#"{"content":[{"type":"text","text":"w1 w2"}],"stop_reason":"end_turn"}"#;
        let d = read_unary(
            Full::new(Bytes::from_static(anthropic.as_bytes())),
            Provider::Anthropic,
        )
        .await;
        assert_eq!(
            (d.text.as_str(), d.finish.as_deref()),
            ("w1 w2", Some("end_turn"))
        );
        let gemini =
            r#"{"candidates":[{"content":{"parts":[{"text":"w1"}]},"finishReason":"STOP"}]}"#;
        let d = read_unary(
            Full::new(Bytes::from_static(gemini.as_bytes())),
            Provider::Gemini,
        )
        .await;
        assert_eq!((d.text.as_str(), d.finish.as_deref()), ("w1", Some("STOP")));
    }

    #[tokio::test]
    async fn responses_api_unary_text_and_finish() {
        let read = |json: &'static str| {
            read_unary(
                Full::new(Bytes::from_static(json.as_bytes())),
                Provider::OpenAiResponses,
            )
        };
        let d = read(
            r#"{"status":"completed","output":[{"type":"reasoning"},{"type":"message","content":[{"type":"output_text","text":"w1"},{"type":"output_text","text":" w2"}]}]}"#,
        )
        .await;
        assert_eq!(
            (d.text.as_str(), d.finish.as_deref(), d.finish_kind),
            ("w1 w2", Some("completed"), Some(FinishKind::Complete))
        );
        let d = read(
            r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"w1"}]}]}"#,
        )
        .await;
        assert_eq!(d.finish_kind, Some(FinishKind::Truncated));
        // Incomplete for a reason nobody knows yet is still not complete.
        let d =
            read(r#"{"status":"incomplete","incomplete_details":{"reason":"new"},"output":[]}"#)
                .await;
        assert_eq!(
            (d.finish.as_deref(), d.finish_kind),
            (Some("new"), Some(FinishKind::Truncated))
        );
        let d = read(
            r#"{"status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}"#,
        )
        .await;
        assert_eq!(d.finish_kind, Some(FinishKind::Refused));
    }
}
