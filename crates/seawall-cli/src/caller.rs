//! Reading an answer the way an application does: text deltas as they
//! arrive, for streams; the message text, for unary answers.
//!
//! Both the naive stack and the seawall stack are read by this one caller,
//! so what the replay table says the caller "saw" is the same measurement
//! for both.
//!
//! The caller only extracts text. When a body read ends with an error, the
//! verdict is the library's: the stream guard's classified [`Failure`]
//! travels in the error. The caller's own reason to stop (an in-stream
//! error event, an event it cannot decode, a line past its scanner's cap)
//! only ends the text; it becomes the delivery's error, itself a coded
//! `Failure`, when the body does not end with a verdict of its own. So a
//! stream read without the guard (the naive stack) fails on an in-stream
//! error as the providers' SDKs do, which raise on one.
//! Memory is bounded: a stream's text is counted and handed on as it
//! arrives (kept only on request), a unary body is read up to a cap.

use std::ops::ControlFlow;

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::{BoxError, Code, Failure, FinishKind, Receipt};
use seawall::resume::Resumed;
use seawall::stream::protocol::{Decoder, Reason, Signal};
use seawall::stream::sse::{DEFAULT_MAX_LINE, Scanner};
use serde_json::Value;

/// The default cap on a unary answer body, in bytes: the classifier's own
/// check cap ([`ClassifyLayer::DEFAULT_MAX_SUCCESS_BODY`], 8 MiB). A unary
/// answer is JSON and must be parsed whole, so it is held whole; a longer
/// one is not read further: `protocol_violation`.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = ClassifyLayer::DEFAULT_MAX_SUCCESS_BODY;

/// How much more of a stream is read once the caller stopped extracting
/// text, waiting for the body's own verdict (the stream guard ends the body
/// right after the frame that broke it).
const DRAIN_AFTER_STOP: usize = DEFAULT_MAX_LINE;

/// What reached the caller from one response.
#[derive(Debug, Default)]
pub struct Delivery {
    /// The text the caller was shown, when the read keeps it
    /// ([`Reading::keep_text`]; [`read_unary`] always does).
    pub text: String,
    /// Characters of text the caller was shown, counted as they arrived.
    pub chars: u64,
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

/// How a stream is read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// Stop (drop the body) after this many content events.
    pub stop_after: Option<u64>,
    /// Keep the text in [`Delivery::text`]. Without it the text is only
    /// handed to the callback and counted: memory stays bounded however
    /// long the answer.
    pub keep_text: bool,
}

/// Reads an event stream, calling `on_text` with every text delta as it
/// arrives, and keeps the text. `prefix` is a frame already read by whoever
/// opened the stream. With `stop_after`, the caller stops (drops the body)
/// after that many content events.
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
    let reading = Reading {
        stop_after,
        keep_text: true,
    };
    read_stream_with(prefix, body, provider, reading, |text| {
        on_text(text);
        ControlFlow::Continue(())
    })
    .await
}

/// Reads an event stream as [`read_stream`] does, as `reading` says.
///
/// `on_text` may stop the read: on [`ControlFlow::Break`] (the text could
/// not be handed on, say its reader has gone) the body is dropped at once,
/// which cancels the call rather than paying for a generation nobody
/// reads; the delivery is [`cancelled`](Delivery::cancelled) and that
/// text is not counted as shown.
///
/// The caller's scanner and decoder only extract text. An in-stream error
/// event, an event that cannot be decoded, or a line or event past the
/// scanner's cap ends the text there; the rest of the body is read (up to
/// the line cap, 8 MiB) for the body's own verdict (the stream guard's,
/// when there is one), and only when the body brings none is the caller's
/// reason the delivery's error: the error event's own classified failure,
/// as a provider's SDK raises it; otherwise `protocol_violation`
/// (`stream_interrupted` after content), as the guard would have said.
pub async fn read_stream_with<B>(
    prefix: Option<Bytes>,
    body: B,
    provider: Provider,
    reading: Reading,
    mut on_text: impl FnMut(&str) -> ControlFlow<()>,
) -> Delivery
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut scanner = Scanner::default();
    let mut decoder = Decoder::new(provider);
    let mut delivery = Delivery::default();
    // Why the caller stopped extracting text, if it did.
    let mut stopped: Option<Failure> = None;
    // The caller's own reason, coded as the guard codes it: no more content
    // is counted once it stopped, so the count now is the count at the end.
    let own = |why: String, delivery: &Delivery| {
        let code = if delivery.content_events > 0 {
            Code::StreamInterrupted
        } else {
            Code::ProtocolViolation
        };
        Failure::new(code).with_message(&why)
    };
    let mut feed = |frame: &[u8], delivery: &mut Delivery, stopped: &mut Option<Failure>| {
        if stopped.is_some() || delivery.cancelled {
            return;
        }
        let scanned = scanner.feed(frame, |item| {
            if stopped.is_some() || delivery.cancelled {
                return;
            }
            match decoder.decode(item) {
                Signal::Content { text, finish, .. } => {
                    delivery.content_events += 1;
                    if let Some(text) = text {
                        if on_text(&text).is_break() {
                            delivery.cancelled = true;
                            return;
                        }
                        delivery.chars += text.chars().count() as u64;
                        if reading.keep_text {
                            delivery.text.push_str(&text);
                        }
                    }
                    if let Some(finish) = finish {
                        delivery.finish(finish);
                    }
                }
                Signal::Finish(reason) => delivery.finish(reason),
                Signal::Undecodable(why) => {
                    *stopped = Some(own(format!("sse_undecodable_event: {why}"), delivery));
                }
                // The stream failed: an SDK raises here, whatever came before.
                Signal::Error(failure) => *stopped = Some(*failure),
                Signal::Progress
                | Signal::Thinking
                | Signal::KeepAlive
                | Signal::Done
                | Signal::Other => {}
            }
        });
        if let Err(err) = scanned {
            stopped.get_or_insert_with(|| own(format!("{}: {err}", err.as_str()), delivery));
        }
    };
    if let Some(frame) = prefix {
        feed(&frame, &mut delivery, &mut stopped);
    }
    let mut drained = 0usize;
    loop {
        if delivery.cancelled {
            break;
        }
        if stopped.is_none()
            && reading
                .stop_after
                .is_some_and(|n| delivery.content_events >= n)
        {
            delivery.cancelled = true;
            break;
        }
        match body.frame().await {
            None => {
                // The event EOF ends, where the provider's SDK reads one.
                let tail = seawall::stream::sse::at_end_of_stream(provider);
                feed(tail, &mut delivery, &mut stopped);
                break;
            }
            Some(Err(err)) => {
                delivery.error = Some(err.into());
                break;
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if stopped.is_some() {
                        drained += data.len();
                        if drained > DRAIN_AFTER_STOP {
                            break;
                        }
                    } else {
                        feed(&data, &mut delivery, &mut stopped);
                    }
                }
            }
        }
    }
    if let (None, Some(why)) = (&delivery.error, stopped) {
        delivery.error = Some(Box::new(why));
    }
    delivery
}

/// Reads a unary answer of at most [`DEFAULT_MAX_ANSWER_BYTES`] and
/// extracts the message text in the provider's shape.
pub async fn read_unary<B>(body: B, provider: Provider) -> Delivery
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    read_unary_capped(body, provider, DEFAULT_MAX_ANSWER_BYTES).await
}

/// Reads a unary answer of at most `cap` bytes and extracts the message
/// text in the provider's shape. A longer body is not read further (nor,
/// when its length is declared, at all): the delivery's error is
/// `protocol_violation` with the message `answer_too_large: …`. A body
/// that is not JSON is [`NotAnAnswer`].
pub async fn read_unary_capped<B>(body: B, provider: Provider, cap: usize) -> Delivery
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut delivery = Delivery::default();
    let too_large = || {
        Box::new(Failure::new(Code::ProtocolViolation).with_message(&format!(
            "answer_too_large: the unary answer is longer than {cap} bytes \
             (--max-answer-bytes); it is not read further"
        )))
    };
    let mut body = std::pin::pin!(body);
    let declared = body.size_hint().lower();
    if usize::try_from(declared).map_or(true, |declared| declared > cap) {
        delivery.error = Some(too_large());
        return delivery;
    }
    let mut bytes = Vec::new();
    loop {
        match body.frame().await {
            None => break,
            Some(Err(err)) => {
                delivery.error = Some(err.into());
                return delivery;
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > cap {
                        delivery.error = Some(too_large());
                        return delivery;
                    }
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
    let Ok(json) = serde_json::from_slice::<Value>(&bytes) else {
        delivery.error = Some(Box::new(NotAnAnswer));
        return delivery;
    };
    drop(bytes);
    let (text, finish) = unary_text(&json, provider);
    if !text.is_empty() {
        delivery.content_events = 1;
    }
    delivery.chars = text.chars().count() as u64;
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
                    Some((
                        seawall::core::provider::openai_responses::incomplete_kind(reason),
                        reason,
                    ))
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

/// The receipt of the whole answer the caller read, once its body ended:
/// the response's own, followed by what its continuations cost when the
/// resume layer was on (a continuation is billed like any request).
pub fn whole_receipt(first: Option<Receipt>, resumed: Option<&Resumed>) -> Option<Receipt> {
    match (first, resumed) {
        (Some(first), Some(resumed)) => Some(resumed.report().receipt(&first)),
        (first, _) => first,
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

    /// Gemini's last event ended by EOF instead of a blank line is read,
    /// as Google's SDK and the stream guard read it.
    #[tokio::test]
    async fn geminis_last_event_at_eof_is_read() {
        let body = concat!(
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n",
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"!\"}]},\"finishReason\":\"STOP\"}]}",
        );
        let delivery = read_stream(
            None,
            Full::new(Bytes::from_static(body.as_bytes())),
            Provider::Gemini,
            None,
            |_| {},
        )
        .await;
        assert_eq!(delivery.text, "Hi!");
        assert_eq!(delivery.finish.as_deref(), Some("STOP"));
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
    /// A body of these frames and errors, in order, with no size hint.
    struct Frames(std::collections::VecDeque<Result<Bytes, BoxError>>);

    impl Frames {
        fn new(items: impl IntoIterator<Item = Result<&'static str, Failure>>) -> Self {
            Frames(
                items
                    .into_iter()
                    .map(|item| {
                        item.map(|text| Bytes::from_static(text.as_bytes()))
                            .map_err(|failure| Box::new(failure) as BoxError)
                    })
                    .collect(),
            )
        }
    }

    impl Body for Frames {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
            std::task::Poll::Ready(
                self.0
                    .pop_front()
                    .map(|item| item.map(http_body::Frame::data)),
            )
        }
    }

    fn chunk(text: &str) -> String {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
        )
    }

    fn code(delivery: &Delivery) -> Option<Code> {
        delivery
            .error
            .as_ref()
            .and_then(|err| Failure::find(&**err))
            .map(Failure::code)
    }

    #[tokio::test]
    async fn a_stream_read_without_keeping_text_counts_it() {
        let body = format!("{}{}data: [DONE]\n\n", chunk("wé"), chunk(" w2"));
        let mut seen = String::new();
        let reading = Reading {
            stop_after: None,
            keep_text: false,
        };
        let delivery = read_stream_with(
            None,
            Full::new(Bytes::from(body)),
            Provider::OpenAi,
            reading,
            |t| {
                seen.push_str(t);
                ControlFlow::Continue(())
            },
        )
        .await;
        assert_eq!(seen, "wé w2");
        assert_eq!((delivery.text.as_str(), delivery.chars), ("", 5));
    }

    /// Text stops at an undecodable event; the body's own verdict, when it
    /// brings one, is the delivery's error; without one, the caller's is,
    /// coded as the guard codes it.
    #[tokio::test]
    async fn the_bodys_verdict_wins_over_the_callers_own_stop() {
        let broken: &'static str = Box::leak(
            format!("{}data: {{\"choices\n\n{}", chunk("w1"), chunk(" w2")).into_boxed_str(),
        );
        let verdict = Failure::new(Code::Overloaded);
        let delivery = read_stream_with(
            None,
            Frames::new([Ok(broken), Err(verdict)]),
            Provider::OpenAi,
            Reading::default(),
            |_| ControlFlow::Continue(()),
        )
        .await;
        assert_eq!(code(&delivery), Some(Code::Overloaded));
        assert_eq!(delivery.chars, 2);
        let delivery = read_stream_with(
            None,
            Frames::new([Ok(broken)]),
            Provider::OpenAi,
            Reading::default(),
            |_| ControlFlow::Continue(()),
        )
        .await;
        assert_eq!(code(&delivery), Some(Code::StreamInterrupted));
        let message = Failure::find(&**delivery.error.as_ref().unwrap())
            .and_then(Failure::message)
            .unwrap()
            .to_owned();
        assert!(message.starts_with("sse_undecodable_event"), "{message}");
        // A line past the scanner's cap before any content.
        let long: &'static str =
            Box::leak(format!("data: {}", "x".repeat(DEFAULT_MAX_LINE + 1)).into_boxed_str());
        let delivery = read_stream_with(
            None,
            Frames::new([Ok(long)]),
            Provider::OpenAi,
            Reading::default(),
            |_| ControlFlow::Continue(()),
        )
        .await;
        assert_eq!(code(&delivery), Some(Code::ProtocolViolation));
    }

    /// An in-stream error event fails the read as an SDK fails it: the text
    /// stops there and, with no verdict from the body (no guard), the
    /// event's own classified failure is the delivery's error.
    #[tokio::test]
    async fn an_in_stream_error_fails_the_read() {
        let body = concat!(
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"w1\"}}\n\n",
            "event: error\n",
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w2\"}}\n\n",
        );
        let delivery = read_stream(
            None,
            Full::new(Bytes::from_static(body.as_bytes())),
            Provider::Anthropic,
            None,
            |_| {},
        )
        .await;
        assert_eq!(delivery.text, "w1");
        assert_eq!(code(&delivery), Some(Code::Overloaded));
        // The guard's verdict, when the body brings one, still wins.
        let verdict = Failure::new(Code::StreamInterrupted);
        let delivery = read_stream_with(
            None,
            Frames::new([Ok(body), Err(verdict)]),
            Provider::Anthropic,
            Reading::default(),
            |_| ControlFlow::Continue(()),
        )
        .await;
        assert_eq!(code(&delivery), Some(Code::StreamInterrupted));
    }

    #[tokio::test]
    async fn a_unary_answer_past_the_cap_is_not_read() {
        let answer =
            r#"{"choices":[{"index":0,"message":{"content":"w1"},"finish_reason":"stop"}]}"#;
        // Declared (a size hint) or not.
        let declared = read_unary_capped(
            Full::new(Bytes::from_static(answer.as_bytes())),
            Provider::OpenAi,
            10,
        )
        .await;
        let streamed = read_unary_capped(
            Frames::new([Ok(answer)]),
            Provider::OpenAi,
            answer.len() - 1,
        )
        .await;
        for delivery in [declared, streamed] {
            assert_eq!(code(&delivery), Some(Code::ProtocolViolation));
            assert_eq!(delivery.text, "");
        }
        let whole =
            read_unary_capped(Frames::new([Ok(answer)]), Provider::OpenAi, answer.len()).await;
        assert_eq!((whole.text.as_str(), whole.chars), ("w1", 2));
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
