//! Checks of 2xx unary JSON answers: 200-with-nothing-in-it, refusals and
//! filters, and the finish reason.
//!
//! Only the fields the rules read are parsed, borrowed where the JSON allows.
//! A body that is not the provider's generation shape (an embeddings or
//! models response, or not JSON at all) is delivered unchecked: these checks
//! catch answers that lie about success, they do not police other endpoints.
//! A body that opens a JSON object and then breaks off or turns to garbage
//! is `protocol_violation` (transient): it is no answer, and nothing of it
//! has reached the caller, so it may be retried.

use std::fmt;
use std::marker::PhantomData;

use seawall_core::finish::empty_answer;
use seawall_core::json::{Text, from_bytes};
use seawall_core::provider::Provider;
use seawall_core::{Code, Failure, Finish, FinishKind};

use crate::classifier::Checked;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Checks a whole 2xx body in `provider`'s generation shape.
pub(crate) fn check(provider: Provider, body: &[u8]) -> Checked {
    match provider {
        Provider::OpenAi => check_openai(body),
        Provider::Anthropic => check_anthropic(body),
        Provider::Gemini => check_gemini(body),
        Provider::Http => Checked::Deliver(None),
    }
}

/// What an answer amounts to once its parts are read. Policy outcomes come
/// first: a filtered answer may carry partial text and is still filtered.
/// An answer cut at its token limit is delivered even when nothing made it
/// in: sending it again would be cut the same way.
fn verdict(
    policy: Option<Failure>,
    has_content: bool,
    finish: Option<(FinishKind, Text<'_>)>,
) -> Checked {
    if let Some(failure) = policy {
        return Checked::Fail(failure);
    }
    if !has_content
        && let Some(failure) =
            empty_answer(finish.as_ref().map(|(kind, reason)| (*kind, &*reason.0)))
    {
        return Checked::Fail(failure);
    }
    Checked::Deliver(finish.map(|(kind, reason)| Finish::new(kind, &reason.0)))
}

/// The failure a finish reason amounts to, with the reason as the
/// provider's code.
fn finish_failure(kind: FinishKind, reason: &str) -> Option<Failure> {
    Some(kind.failure()?.with_provider_code(reason))
}

// OpenAI chat completions (and legacy completions: `choices[].text`).

#[derive(Deserialize)]
struct ChatCompletion<'a> {
    #[serde(borrow)]
    choices: Option<Outcome<'a, Choice<'a>>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<ChatMessage<'a>>,
    #[serde(default)]
    text: Presence,
}

#[derive(Deserialize)]
struct ChatMessage<'a> {
    #[serde(default)]
    content: Presence,
    #[serde(default)]
    tool_calls: Presence,
    #[serde(default)]
    function_call: Presence,
    #[serde(default)]
    audio: Presence,
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
}

impl<'a> Candidacy<'a> for Choice<'a> {
    fn policy(&self) -> Option<Failure> {
        let refusal = self.message.as_ref().and_then(|m| m.refusal.as_ref());
        if let Some(refusal) = refusal.filter(|r| !r.0.is_empty()) {
            return Some(Failure::new(Code::Refused).with_message(&refusal.0));
        }
        let reason = self.finish_reason.as_ref()?;
        finish_failure(FinishKind::openai(&reason.0), &reason.0)
    }

    fn has_content(&self) -> bool {
        self.text.0
            || self
                .message
                .as_ref()
                .is_some_and(|m| m.content.0 || m.tool_calls.0 || m.function_call.0 || m.audio.0)
    }

    fn finish(self) -> Option<(FinishKind, Text<'a>)> {
        self.finish_reason
            .map(|reason| (FinishKind::openai(&reason.0), reason))
    }
}

/// A body that does not parse: cut or broken JSON is a failure (nothing
/// reached the caller yet, so it may be retried); valid JSON of another
/// shape is another endpoint's answer, delivered unchecked.
fn unreadable(error: serde_json::Error) -> Checked {
    match error.classify() {
        serde_json::error::Category::Eof | serde_json::error::Category::Syntax => Checked::Fail(
            Failure::new(Code::ProtocolViolation)
                .with_message(&format!("the 2xx answer is not valid JSON: {error}")),
        ),
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            Checked::Deliver(None)
        }
    }
}

fn check_openai(body: &[u8]) -> Checked {
    let choices = match from_bytes(body) {
        Ok(ChatCompletion {
            choices: Some(choices),
        }) => choices,
        Ok(ChatCompletion { choices: None }) => return Checked::Deliver(None),
        Err(error) => return unreadable(error),
    };
    verdict(choices.policy, choices.has_content, choices.finish)
}

// Anthropic messages.

#[derive(Deserialize)]
struct AnthropicMessage<'a> {
    #[serde(borrow, rename = "type")]
    ty: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Any<ContentBlock<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(borrow, rename = "type")]
    ty: Text<'a>,
    #[serde(default)]
    text: Presence,
}

impl Present for ContentBlock<'_> {
    /// Thinking alone is not an answer; any other block (text, tool use,
    /// server tool results) is.
    fn present(&self) -> bool {
        match &*self.ty.0 {
            "text" => self.text.0,
            "thinking" | "redacted_thinking" => false,
            _ => true,
        }
    }
}

fn check_anthropic(body: &[u8]) -> Checked {
    let message = match from_bytes::<AnthropicMessage<'_>>(body) {
        Ok(message) => message,
        Err(error) => return unreadable(error),
    };
    if message.ty.as_ref().is_none_or(|ty| ty.0 != "message") {
        return Checked::Deliver(None);
    }
    let finish = message
        .stop_reason
        .map(|reason| (FinishKind::anthropic(&reason.0), reason));
    let policy = finish
        .as_ref()
        .and_then(|(kind, reason)| finish_failure(*kind, &reason.0));
    verdict(policy, message.content.0, finish)
}

// Gemini generateContent.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiResponse<'a> {
    #[serde(borrow)]
    candidates: Option<Outcome<'a, Candidate<'a>>>,
    #[serde(borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    usage_metadata: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback<'a> {
    #[serde(borrow, default)]
    block_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default)]
    content: Option<GeminiContent>,
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct GeminiContent {
    #[serde(default)]
    parts: Any<GeminiPart>,
}

impl<'a> Candidacy<'a> for Candidate<'a> {
    fn policy(&self) -> Option<Failure> {
        let reason = self.finish_reason.as_ref()?;
        finish_failure(FinishKind::gemini(&reason.0), &reason.0)
    }

    fn has_content(&self) -> bool {
        self.content.as_ref().is_some_and(|content| content.parts.0)
    }

    fn finish(self) -> Option<(FinishKind, Text<'a>)> {
        self.finish_reason
            .map(|reason| (FinishKind::gemini(&reason.0), reason))
    }
}

fn check_gemini(body: &[u8]) -> Checked {
    let response = match from_bytes::<GeminiResponse<'_>>(body) {
        Ok(response) => response,
        Err(error) => return unreadable(error),
    };
    if response.candidates.is_none()
        && response.prompt_feedback.is_none()
        && response.usage_metadata.is_none()
    {
        return Checked::Deliver(None);
    }
    let candidates = response.candidates.unwrap_or_default();
    let blocked = response
        .prompt_feedback
        .and_then(|feedback| feedback.block_reason)
        .map(|reason| Failure::new(Code::ContentFiltered).with_provider_code(&*reason.0));
    let policy = blocked.or(candidates.policy);
    verdict(policy, candidates.has_content, candidates.finish)
}

// Small readers that look at values without keeping them.

/// One choice (OpenAI) or candidate (Gemini) of an answer, as the verdict
/// reads it.
trait Candidacy<'a> {
    /// The policy failure this one amounts to (a refusal, a filter).
    fn policy(&self) -> Option<Failure>;
    /// Whether it holds any part of an answer.
    fn has_content(&self) -> bool;
    /// Its finish reason.
    fn finish(self) -> Option<(FinishKind, Text<'a>)>;
}

/// What the choices or candidates of an answer add up to, read one by one
/// instead of collected into a `Vec`: the first policy failure, whether any
/// holds content, and the first one's finish reason.
struct Outcome<'a, T> {
    policy: Option<Failure>,
    has_content: bool,
    finish: Option<(FinishKind, Text<'a>)>,
    item: PhantomData<T>,
}

impl<T> Default for Outcome<'_, T> {
    fn default() -> Self {
        Outcome {
            policy: None,
            has_content: false,
            finish: None,
            item: PhantomData,
        }
    }
}

impl<'de: 'a, 'a, T: Candidacy<'a> + Deserialize<'de>> Deserialize<'de> for Outcome<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OutcomeVisitor<'a, T>(PhantomData<Outcome<'a, T>>);
        impl<'de: 'a, 'a, T: Candidacy<'a> + Deserialize<'de>> Visitor<'de> for OutcomeVisitor<'a, T> {
            type Value = Outcome<'a, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut outcome = Outcome::default();
                let mut first = true;
                while let Some(item) = seq.next_element::<T>()? {
                    if outcome.policy.is_none() {
                        outcome.policy = item.policy();
                    }
                    outcome.has_content |= item.has_content();
                    if first {
                        outcome.finish = item.finish();
                        first = false;
                    }
                }
                Ok(outcome)
            }
        }
        deserializer.deserialize_seq(OutcomeVisitor(PhantomData))
    }
}

/// Whether an array element is part of an answer.
trait Present {
    fn present(&self) -> bool;
}

/// Whether any element of an array is part of an answer, read without
/// collecting the array.
struct Any<T>(bool, PhantomData<T>);

impl<T> Default for Any<T> {
    fn default() -> Self {
        Any(false, PhantomData)
    }
}

impl<'de, T: Present + Deserialize<'de>> Deserialize<'de> for Any<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnyVisitor<T>(PhantomData<T>);
        impl<'de, T: Present + Deserialize<'de>> Visitor<'de> for AnyVisitor<T> {
            type Value = Any<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut any = false;
                while let Some(item) = seq.next_element::<T>()? {
                    any |= item.present();
                }
                Ok(Any(any, PhantomData))
            }
        }
        deserializer.deserialize_seq(AnyVisitor(PhantomData))
    }
}

/// Whether a value holds anything: `null`, `""`, `[]` and arrays of those
/// are nothing; any other string, number, boolean or object is something.
/// Reads the value without copying it.
#[derive(Default, Clone, Copy)]
struct Presence(bool);

impl<'de> Deserialize<'de> for Presence {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PresenceVisitor)
    }
}

struct PresenceVisitor;

impl<'de> Visitor<'de> for PresenceVisitor {
    type Value = Presence;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Presence, E> {
        Ok(Presence(true))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Presence, E> {
        Ok(Presence(!v.is_empty()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Presence, E> {
        Ok(Presence(false))
    }
    fn visit_none<E: de::Error>(self) -> Result<Presence, E> {
        Ok(Presence(false))
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Presence, D::Error> {
        Presence::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Presence, A::Error> {
        let mut any = false;
        while let Some(Presence(item)) = seq.next_element()? {
            any |= item;
        }
        Ok(Presence(any))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Presence, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Presence(true))
    }
}

/// Whether a Gemini part is part of the answer: non-empty text that is not
/// a thought, or any other kind of part (function call, inline data, code).
/// Unknown part kinds count as content, so a new kind is never mistaken for
/// an empty answer.
struct GeminiPart(bool);

impl Present for GeminiPart {
    fn present(&self) -> bool {
        self.0
    }
}

impl<'de> Deserialize<'de> for GeminiPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(GeminiPartVisitor)
    }
}

struct GeminiPartVisitor;

impl<'de> Visitor<'de> for GeminiPartVisitor {
    type Value = GeminiPart;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Gemini part")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GeminiPart, A::Error> {
        let (mut content, mut thought) = (false, false);
        while let Some(key) = map.next_key::<PartKey>()? {
            match key {
                PartKey::Text => content |= map.next_value::<Presence>()?.0,
                PartKey::Thought => thought = map.next_value::<Option<bool>>()?.unwrap_or(false),
                PartKey::Metadata => {
                    map.next_value::<IgnoredAny>()?;
                }
                PartKey::Other => {
                    content |= map.next_value::<Presence>()?.0;
                }
            }
        }
        Ok(GeminiPart(content && !thought))
    }
}

enum PartKey {
    Text,
    Thought,
    Metadata,
    Other,
}

impl<'de> Deserialize<'de> for PartKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = PartKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a part field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PartKey, E> {
                Ok(match v {
                    "text" => PartKey::Text,
                    "thought" => PartKey::Thought,
                    "thoughtSignature" | "partMetadata" | "videoMetadata" => PartKey::Metadata,
                    _ => PartKey::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::Class;

    fn code(checked: Checked) -> Option<Code> {
        match checked {
            Checked::Fail(failure) => Some(failure.code()),
            Checked::Deliver(_) => None,
        }
    }

    fn delivered(checked: Checked) -> Option<Finish> {
        match checked {
            Checked::Deliver(finish) => finish,
            Checked::Fail(failure) => panic!("not delivered: {failure}"),
        }
    }

    #[test]
    fn openai_shapes() {
        let ok = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\"\n","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
        let finish = delivered(check_openai(ok)).unwrap();
        assert_eq!(
            (finish.kind, &*finish.reason),
            (FinishKind::Complete, "stop")
        );

        let tools = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
        assert!(delivered(check_openai(tools)).is_some());

        let empty = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#;
        assert_eq!(code(check_openai(empty)), Some(Code::EmptyResponse));
        assert_eq!(
            code(check_openai(br#"{"choices":[]}"#)),
            Some(Code::EmptyResponse)
        );

        let truncated_empty = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"length"}]}"#;
        let finish = delivered(check_openai(truncated_empty)).unwrap();
        assert_eq!(finish.kind, FinishKind::Truncated);

        let embeddings =
            br#"{"object":"list","data":[{"object":"embedding","embedding":[0.1],"index":0}]}"#;
        assert!(delivered(check_openai(embeddings)).is_none());
        // Only bodies that open a JSON object reach the check (the layer
        // delivers anything else unchecked); one that then breaks off is
        // not an answer, and nothing of it has reached the caller.
        for cut in [
            &b"{\"id\":\"c\",\"choices\":[{\"index\":0,"[..],
            b"{\"id\": nope}",
        ] {
            match check_openai(cut) {
                Checked::Fail(failure) => assert_eq!(failure.code(), Code::ProtocolViolation),
                Checked::Deliver(_) => panic!("a cut body was delivered"),
            }
        }
    }

    #[test]
    fn gemini_parts() {
        let thought_only = br#"{"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true}],"role":"model"},"finishReason":"STOP"}]}"#;
        assert_eq!(code(check_gemini(thought_only)), Some(Code::EmptyResponse));
        let call = br#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}],"role":"model"},"finishReason":"STOP"}]}"#;
        assert!(delivered(check_gemini(call)).is_some());
        let malformed = br#"{"candidates":[{"content":{"parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#;
        let Checked::Fail(failure) = check_gemini(malformed) else {
            panic!("malformed call delivered");
        };
        assert_eq!(
            (failure.class(), failure.code()),
            (Class::ModelFixable, Code::BadArguments)
        );
        assert!(delivered(check_gemini(br#"{"totalTokens":31}"#)).is_none());
    }

    #[test]
    fn anthropic_thinking_alone_is_empty() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"x"}],"stop_reason":"end_turn"}"#;
        assert_eq!(code(check_anthropic(body)), Some(Code::EmptyResponse));
        let count = br#"{"input_tokens":12}"#;
        assert!(delivered(check_anthropic(count)).is_none());
    }
}
