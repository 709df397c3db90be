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
use std::time::SystemTime;

use seawall_core::provider::{ErrorContext, Provider, classify_declared};
use seawall_core::usage::UsageFields;
use seawall_core::{Code, Failure, Finish, FinishKind, Usage};

use crate::classifier::Checked;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Checks a whole 2xx body in `provider`'s generation shape. `strict` (the
/// request called a generation endpoint, so the body must be an answer):
/// valid JSON of another shape is `protocol_violation` too, instead of
/// another endpoint's answer delivered unchecked.
pub(crate) fn check(provider: Provider, body: &[u8], strict: bool) -> Checked {
    let checked = match provider {
        Provider::OpenAi => check_openai(body),
        Provider::OpenAiResponses => check_responses(body),
        Provider::Anthropic => check_anthropic(body),
        Provider::Gemini => check_gemini(body),
        Provider::Http => return Checked::Deliver(None),
    };
    match checked {
        Some(checked) => checked,
        None if strict => {
            Checked::Fail(Failure::new(Code::ProtocolViolation).with_message(&format!(
                "the 2xx answer of a generation endpoint is JSON but not a {} answer",
                provider.as_str()
            )))
        }
        None => Checked::Deliver(None),
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
    usage: Option<Usage>,
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
    Checked::Answer {
        finish: finish.map(|(kind, reason)| Finish::new(kind, &reason.0)),
        usage,
    }
}

fn usage_of(fields: Option<UsageFields>) -> Option<Usage> {
    fields.as_ref().and_then(UsageFields::usage)
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
    #[serde(default)]
    usage: Option<UsageFields>,
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
/// shape is `None`, another shape (see [`check`]).
fn unreadable(error: serde_json::Error) -> Option<Checked> {
    match error.classify() {
        serde_json::error::Category::Eof | serde_json::error::Category::Syntax => {
            Some(Checked::Fail(
                Failure::new(Code::ProtocolViolation)
                    .with_message(&format!("the 2xx answer is not valid JSON: {error}")),
            ))
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => None,
    }
}

fn check_openai(body: &[u8]) -> Option<Checked> {
    let (choices, usage) = match from_bytes(body) {
        Ok(ChatCompletion {
            choices: Some(choices),
            usage,
        }) => (choices, usage),
        Ok(ChatCompletion { choices: None, .. }) => return None,
        Err(error) => return unreadable(error),
    };
    Some(verdict(
        choices.policy,
        choices.has_content,
        choices.finish,
        usage_of(usage),
    ))
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
    #[serde(default)]
    usage: Option<UsageFields>,
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

fn check_anthropic(body: &[u8]) -> Option<Checked> {
    let message = match from_bytes::<AnthropicMessage<'_>>(body) {
        Ok(message) => message,
        Err(error) => return unreadable(error),
    };
    if message.ty.as_ref().is_none_or(|ty| ty.0 != "message") {
        return None;
    }
    let finish = message
        .stop_reason
        .map(|reason| (FinishKind::anthropic(&reason.0), reason));
    let policy = finish
        .as_ref()
        .and_then(|(kind, reason)| finish_failure(*kind, &reason.0));
    Some(verdict(
        policy,
        message.content.0,
        finish,
        usage_of(message.usage),
    ))
}

// Gemini generateContent.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiResponse<'a> {
    #[serde(borrow)]
    candidates: Option<Outcome<'a, Candidate<'a>>>,
    #[serde(borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    usage_metadata: Option<UsageFields>,
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

fn check_gemini(body: &[u8]) -> Option<Checked> {
    let response = match from_bytes::<GeminiResponse<'_>>(body) {
        Ok(response) => response,
        Err(error) => return unreadable(error),
    };
    if response.candidates.is_none()
        && response.prompt_feedback.is_none()
        && response.usage_metadata.is_none()
    {
        return None;
    }
    let candidates = response.candidates.unwrap_or_default();
    let blocked = response
        .prompt_feedback
        .and_then(|feedback| feedback.block_reason)
        .map(|reason| Failure::new(Code::ContentFiltered).with_provider_code(&*reason.0));
    let policy = blocked.or(candidates.policy);
    Some(verdict(
        policy,
        candidates.has_content,
        candidates.finish,
        usage_of(response.usage_metadata),
    ))
}

// OpenAI Responses API.

#[derive(Deserialize)]
struct ResponsesAnswer<'a> {
    #[serde(borrow)]
    object: Option<Text<'a>>,
    #[serde(borrow)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    incomplete_details: Option<IncompleteDetails<'a>>,
    #[serde(borrow, default)]
    error: Option<ResponsesError<'a>>,
    #[serde(borrow, default)]
    output: Option<ResponsesOutput<'a>>,
    #[serde(default)]
    usage: Option<UsageFields>,
}

#[derive(Deserialize)]
struct IncompleteDetails<'a> {
    #[serde(borrow, default)]
    reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct ResponsesError<'a> {
    #[serde(borrow, default)]
    code: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

/// What the output items add up to: whether any is part of an answer (text,
/// a tool call), and the first refusal.
#[derive(Default)]
struct ResponsesOutput<'a> {
    has_content: bool,
    refusal: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct OutputItem<'a> {
    #[serde(borrow, rename = "type")]
    ty: Text<'a>,
    #[serde(borrow, default)]
    content: Option<PartsOf<'a>>,
}

#[derive(Default)]
struct PartsOf<'a> {
    has_text: bool,
    refusal: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct OutputPart<'a> {
    #[serde(borrow, rename = "type")]
    ty: Text<'a>,
    #[serde(default)]
    text: Presence,
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for PartsOf<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold(
            deserializer,
            |acc: &mut PartsOf<'a>, part: OutputPart<'a>| match &*part.ty.0 {
                "refusal" => {
                    if acc.refusal.is_none() {
                        acc.refusal = part.refusal;
                    }
                }
                _ => acc.has_text |= part.text.0,
            },
        )
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ResponsesOutput<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold(
            deserializer,
            |acc: &mut ResponsesOutput<'a>, item: OutputItem<'a>| {
                match &*item.ty.0 {
                    "message" => {
                        let parts = item.content.unwrap_or_default();
                        acc.has_content |= parts.has_text;
                        if acc.refusal.is_none() {
                            acc.refusal = parts.refusal;
                        }
                    }
                    // Reasoning alone is the model working, not the answer.
                    "reasoning" => {}
                    // Tool calls of every kind are acts the caller carries out.
                    _ => acc.has_content = true,
                }
            },
        )
    }
}

/// Reads every element of a JSON array into a default accumulator.
fn fold<'de, D, T, A>(deserializer: D, step: impl FnMut(&mut A, T)) -> Result<A, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    A: Default,
{
    struct FoldVisitor<T, A, F>(F, PhantomData<(T, A)>);
    impl<'de, T: Deserialize<'de>, A: Default, F: FnMut(&mut A, T)> Visitor<'de>
        for FoldVisitor<T, A, F>
    {
        type Value = A;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_unit<E>(self) -> Result<A, E> {
            Ok(A::default())
        }
        fn visit_seq<S: SeqAccess<'de>>(mut self, mut seq: S) -> Result<A, S::Error> {
            let mut acc = A::default();
            while let Some(item) = seq.next_element::<T>()? {
                (self.0)(&mut acc, item);
            }
            Ok(acc)
        }
    }
    deserializer.deserialize_any(FoldVisitor(step, PhantomData))
}

/// A Responses API answer: `completed` with output, `incomplete` with its
/// reason (cut at the token limit: delivered and marked; filtered: a policy
/// failure), `failed` with the provider's error, a refusal part. A response
/// still `queued`/`in_progress` (background mode) is a handle, not an
/// answer: delivered unchecked.
fn check_responses(body: &[u8]) -> Option<Checked> {
    let answer = match from_bytes::<ResponsesAnswer<'_>>(body) {
        Ok(answer) => answer,
        Err(error) => return unreadable(error),
    };
    if answer.object.as_ref().is_some_and(|o| o.0 != "response") {
        return None;
    }
    let status = answer.status?;
    let output = answer.output.unwrap_or_default();
    match &*status.0 {
        "failed" => {
            let error = answer.error;
            Some(Checked::Fail(classify_declared(
                Provider::OpenAiResponses,
                None,
                error.as_ref().and_then(|e| e.code.as_ref()).map(|c| &*c.0),
                error
                    .as_ref()
                    .and_then(|e| e.message.as_ref())
                    .map(|m| &*m.0),
                ErrorContext::in_stream(SystemTime::now()),
            )))
        }
        "completed" | "incomplete" => {
            let reason = match &*status.0 {
                "completed" => status,
                _ => answer
                    .incomplete_details
                    .and_then(|d| d.reason)
                    .unwrap_or(Text("incomplete".into())),
            };
            let kind = match FinishKind::openai_responses(&reason.0) {
                FinishKind::Other if reason.0 != "completed" => FinishKind::Truncated,
                kind => kind,
            };
            let policy = match &output.refusal {
                Some(refusal) => Some(Failure::new(Code::Refused).with_message(&refusal.0)),
                None => finish_failure(kind, &reason.0),
            };
            Some(verdict(
                policy,
                output.has_content,
                Some((kind, reason)),
                usage_of(answer.usage),
            ))
        }
        _ => Some(Checked::Deliver(None)),
    }
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

    // The checks as a body on an unknown path meets them: another shape is
    // delivered unchecked.
    fn check_openai(body: &[u8]) -> Checked {
        check(Provider::OpenAi, body, false)
    }
    fn check_anthropic(body: &[u8]) -> Checked {
        check(Provider::Anthropic, body, false)
    }
    fn check_gemini(body: &[u8]) -> Checked {
        check(Provider::Gemini, body, false)
    }
    fn check_responses(body: &[u8]) -> Checked {
        check(Provider::OpenAiResponses, body, true)
    }

    fn usage(checked: Checked) -> Option<Usage> {
        match checked.delivered() {
            Ok((_, usage)) => usage,
            Err(failure) => panic!("not delivered: {failure}"),
        }
    }

    #[test]
    fn answers_say_their_usage_in_each_providers_spelling() {
        let openai = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}}}"#;
        assert_eq!(usage(check_openai(openai)), Some(Usage::new(9, 12)));
        let anthropic = br#"{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}"#;
        assert_eq!(usage(check_anthropic(anthropic)), Some(Usage::new(10, 3)));
        let gemini = br#"{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}"#;
        assert_eq!(usage(check_gemini(gemini)), Some(Usage::new(3, 2)));
        let responses = br#"{"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":4,"output_tokens":1,"total_tokens":5}}"#;
        assert_eq!(usage(check_responses(responses)), Some(Usage::new(4, 1)));
        // Odd counts never cost the answer: both spellings, a string, a
        // negative number, no usage at all.
        let odd = br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"9","input_tokens":7,"completion_tokens":-1}}"#;
        assert_eq!(usage(check_openai(odd)), Some(Usage::new(7, 0)));
        let none = br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#;
        assert_eq!(usage(check_openai(none)), None);
    }

    #[test]
    fn on_a_generation_endpoint_another_shape_is_no_answer() {
        for (provider, body) in [
            (Provider::OpenAi, &br#"{"object":"list","data":[]}"#[..]),
            (Provider::OpenAi, br#"{}"#),
            (Provider::Anthropic, br#"{"id":"x","type":"other"}"#),
            (Provider::Gemini, br#"{"foo":1}"#),
            (Provider::OpenAiResponses, br#"{"object":"list"}"#),
            (Provider::OpenAi, br#"{"choices":"nope"}"#),
        ] {
            assert_eq!(
                code(check(provider, body, true)),
                Some(Code::ProtocolViolation),
                "{provider:?} {}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(code(check(provider, body, false)), None, "{provider:?}");
        }
    }

    #[test]
    fn responses_answers() {
        let text = br#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"w1 w2","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}"#;
        let finish = delivered(check_responses(text)).unwrap();
        assert_eq!(
            (finish.kind, &*finish.reason),
            (FinishKind::Complete, "completed")
        );

        let call = br#"{"object":"response","status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}]}"#;
        assert!(delivered(check_responses(call)).is_some());

        let cut = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"w1"}]}]}"#;
        let finish = delivered(check_responses(cut)).unwrap();
        assert_eq!(finish.kind, FinishKind::Truncated);

        let cut_empty = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning"}]}"#;
        assert_eq!(
            delivered(check_responses(cut_empty)).unwrap().kind,
            FinishKind::Truncated
        );

        let filtered = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}"#;
        assert_eq!(code(check_responses(filtered)), Some(Code::ContentFiltered));

        let empty = br#"{"object":"response","status":"completed","output":[]}"#;
        assert_eq!(code(check_responses(empty)), Some(Code::EmptyResponse));

        let only_reasoning = br#"{"object":"response","status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"hm"}]}]}"#;
        assert_eq!(
            code(check_responses(only_reasoning)),
            Some(Code::EmptyResponse)
        );

        let refusal = br#"{"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}"#;
        let Checked::Fail(failure) = check_responses(refusal) else {
            panic!("a refusal is not delivered")
        };
        assert_eq!(
            (failure.code(), failure.class()),
            (Code::Refused, Class::Policy)
        );

        let failed = br#"{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#;
        let Checked::Fail(failure) = check_responses(failed) else {
            panic!("a failed response is not delivered")
        };
        assert_eq!(
            (failure.code(), failure.class()),
            (Code::ProviderUnavailable, Class::Transient)
        );
        let rate = br#"{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}"#;
        assert_eq!(code(check_responses(rate)), Some(Code::RateLimited));

        // Background mode: a handle to poll, not an answer.
        let queued = br#"{"id":"resp_1","object":"response","status":"queued","output":[]}"#;
        assert!(matches!(check_responses(queued), Checked::Deliver(None)));

        let cut_json = br#"{"object":"response","status":"completed","output":[{"type":"mess"#;
        assert_eq!(
            code(check_responses(cut_json)),
            Some(Code::ProtocolViolation)
        );
    }

    fn code(checked: Checked) -> Option<Code> {
        match checked.delivered() {
            Err(failure) => Some(failure.code()),
            Ok(_) => None,
        }
    }

    fn delivered(checked: Checked) -> Option<Finish> {
        match checked.delivered() {
            Ok((finish, _)) => finish,
            Err(failure) => panic!("not delivered: {failure}"),
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
                _ => panic!("a cut body was delivered"),
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
