//! How a message ended, in one vocabulary for every provider.

use std::borrow::Cow;
use std::fmt;

use crate::provider::Provider;
use crate::{Class, Code, Failure};

/// What a provider's finish reason means for the caller.
///
/// `Complete` finishes the message and the task. `Truncated` finishes the
/// message but not the task: it is delivered and marked, never silently
/// equal to success. `Refused` and `Filtered` are policy outcomes;
/// `Malformed` is the model's own mistake, `Rejected` the request's;
/// `Aborted` is the provider's own stop before the end, no answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishKind {
    /// `stop`, `end_turn`, `tool_calls`, `STOP`, …
    Complete,
    /// `length`, `max_tokens`, `MAX_TOKENS`, `pause_turn`: a message whose
    /// turn a limit or a pause ended before the task was done.
    Truncated,
    /// The model refused (`refusal`).
    Refused,
    /// A content filter ended it (`content_filter`, `SAFETY`, `RECITATION`,
    /// Zhipu's `sensitive`, a Bedrock guardrail's `guardrail_intervened`, …).
    Filtered,
    /// The model produced a malformed call (`MALFORMED_FUNCTION_CALL`).
    Malformed,
    /// The provider ended the turn over the request itself (Gemini's
    /// `MISSING_THOUGHT_SIGNATURE`): the caller must fix it (`bad_request`).
    Rejected,
    /// The provider stopped the generation before its end for reasons of
    /// its own (vLLM's `abort`: an engine shutdown, scale-down or pause;
    /// DeepSeek's `insufficient_system_resource`; Zhipu's `network_error`;
    /// a `finish_reason` of `error`), then ended the answer as if whole. Not
    /// an answer, and nothing the request did: `provider_unavailable`,
    /// transient; after content, an interruption.
    Aborted,
    /// A reason seawall does not know; treated as complete but reported as is.
    Other,
}

impl FinishKind {
    /// OpenAI chat completions `finish_reason`
    /// ([`provider::openai::finish_kind`](crate::provider::openai::finish_kind)).
    pub fn openai(reason: &str) -> FinishKind {
        crate::provider::openai::finish_kind(reason)
    }

    /// The Responses API's `status` (`completed`) or its
    /// `incomplete_details.reason` (`max_output_tokens`, `content_filter`)
    /// ([`provider::openai_responses::finish_kind`](crate::provider::openai_responses::finish_kind)).
    pub fn openai_responses(reason: &str) -> FinishKind {
        crate::provider::openai_responses::finish_kind(reason)
    }

    /// Anthropic messages `stop_reason`
    /// ([`provider::anthropic::finish_kind`](crate::provider::anthropic::finish_kind)).
    pub fn anthropic(reason: &str) -> FinishKind {
        crate::provider::anthropic::finish_kind(reason)
    }

    /// Gemini `finishReason`
    /// ([`provider::gemini::finish_kind`](crate::provider::gemini::finish_kind)).
    pub fn gemini(reason: &str) -> FinishKind {
        crate::provider::gemini::finish_kind(reason)
    }

    /// `reason` in `provider`'s vocabulary ([`Provider::finish_kind`]).
    pub fn for_provider(provider: Provider, reason: &str) -> FinishKind {
        provider.finish_kind(reason)
    }

    /// True when the message is complete and nothing is missing from it.
    pub fn completes_task(self) -> bool {
        matches!(self, FinishKind::Complete | FinishKind::Other)
    }

    /// The failure this finish amounts to, if it is one: refusals and
    /// filters are policy failures, malformed calls model-fixable ones, a
    /// rejected request a bad request, a provider's abort a transient
    /// `provider_unavailable`. `Complete`, `Other` and `Truncated` are
    /// delivered answers.
    pub fn failure(self) -> Option<Failure> {
        match self {
            FinishKind::Refused => Some(Failure::new(Code::Refused)),
            FinishKind::Filtered => Some(Failure::new(Code::ContentFiltered)),
            FinishKind::Malformed => {
                Some(Failure::with_class(Class::ModelFixable, Code::BadArguments))
            }
            FinishKind::Rejected => Some(Failure::new(Code::BadRequest)),
            FinishKind::Aborted => Some(Failure::new(Code::ProviderUnavailable)),
            FinishKind::Complete | FinishKind::Truncated | FinishKind::Other => None,
        }
    }

    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishKind::Complete => "complete",
            FinishKind::Truncated => "truncated",
            FinishKind::Refused => "refused",
            FinishKind::Filtered => "filtered",
            FinishKind::Malformed => "malformed",
            FinishKind::Rejected => "rejected",
            FinishKind::Aborted => "aborted",
            FinishKind::Other => "other",
        }
    }
}

/// Whether a finish reason as sent says something: not the empty string,
/// which SGLang 0.4.3 and older Ollama send on every stream chunk
/// (sgl-project/sglang#3912, ollama/ollama#4357), nor the string `"null"`
/// (KoboldCpp). Either is no finish at all, in a stream chunk and in a
/// whole answer alike: read as a reason, it was one seawall does not know,
/// so complete — an empty answer retried, or a cut one delivered whole.
/// The unary checks and the stream decoders both ask here.
pub fn is_declared(reason: &str) -> bool {
    !reason.is_empty() && reason != "null"
}

/// What an answer without content amounts to, given how it finished
/// (kind and the provider's reason): `None` when it is still an answer to
/// deliver — a limit or a pause ended it, and sending it again would end
/// the same way — else its failure: the finish's own verdict (a refusal, a
/// filter, a malformed call) or `empty_response`, with the provider's
/// reason as its code. The unary check and the stream guard both ask here.
pub fn empty_answer(finish: Option<(FinishKind, &str)>) -> Option<Failure> {
    let Some((kind, reason)) = finish else {
        return Some(Failure::new(Code::EmptyResponse));
    };
    if kind == FinishKind::Truncated {
        return None;
    }
    let failure = kind
        .failure()
        .unwrap_or_else(|| Failure::new(Code::EmptyResponse));
    Some(failure.with_provider_code(reason))
}

impl fmt::Display for FinishKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a delivered answer ended: the provider's own reason and what it
/// means. Put in the response extensions by the layers that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// What the reason means.
    pub kind: FinishKind,
    /// The provider's reason string as sent.
    pub reason: Cow<'static, str>,
}

/// Every reason seawall knows, so a known one costs no allocation.
const KNOWN_REASONS: &[&str] = &[
    "stop",
    "length",
    "tool_calls",
    "function_call",
    "content_filter",
    "max_output_tokens",
    "completed",
    "incomplete",
    "failed",
    "cancelled",
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "NO_IMAGE",
    "TOO_MANY_TOOL_CALLS",
    "MALFORMED_RESPONSE",
    "MISSING_THOUGHT_SIGNATURE",
    "done",
    "eof",
    "model_length",
    "abort",
    "error",
    "insufficient_system_resource",
    "sensitive",
    "network_error",
    "time_limit",
    "content_filtered",
    "guardrail_intervened",
];

impl Finish {
    /// A finish with the provider's `reason`, borrowed from a static table
    /// when it is a reason seawall knows (every response carries one); any
    /// other is cut to [`PROVIDER_WORD_BYTES`](crate::PROVIDER_WORD_BYTES)
    /// (it goes into the stream's report, its log line and its span).
    pub fn new(kind: FinishKind, reason: &str) -> Finish {
        let reason = match KNOWN_REASONS.iter().find(|known| **known == reason) {
            Some(known) => Cow::Borrowed(*known),
            None => Cow::Owned(crate::excerpt(reason, crate::PROVIDER_WORD_BYTES).to_owned()),
        };
        Finish { kind, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_answer_is_a_failure_unless_the_token_limit_cut_it() {
        assert!(empty_answer(Some((FinishKind::Truncated, "length"))).is_none());
        let stop = empty_answer(Some((FinishKind::Complete, "stop"))).unwrap();
        assert_eq!(
            (stop.code(), stop.provider_code()),
            (Code::EmptyResponse, Some("stop"))
        );
        let refused = empty_answer(Some((FinishKind::Refused, "refusal"))).unwrap();
        assert_eq!(refused.code(), Code::Refused);
        assert_eq!(empty_answer(None).unwrap().code(), Code::EmptyResponse);
    }

    #[test]
    fn reasons_map_per_provider() {
        assert_eq!(FinishKind::openai("stop"), FinishKind::Complete);
        assert_eq!(FinishKind::openai("tool_calls"), FinishKind::Complete);
        assert_eq!(FinishKind::openai("length"), FinishKind::Truncated);
        assert_eq!(FinishKind::openai("content_filter"), FinishKind::Filtered);
        assert_eq!(FinishKind::openai("model_length"), FinishKind::Truncated);
        for aborted in ["abort", "error", "insufficient_system_resource"] {
            assert_eq!(
                FinishKind::openai(aborted),
                FinishKind::Aborted,
                "{aborted}"
            );
        }
        assert_eq!(FinishKind::anthropic("end_turn"), FinishKind::Complete);
        assert_eq!(FinishKind::anthropic("max_tokens"), FinishKind::Truncated);
        assert_eq!(FinishKind::anthropic("refusal"), FinishKind::Refused);
        assert_eq!(FinishKind::gemini("STOP"), FinishKind::Complete);
        assert_eq!(FinishKind::gemini("MAX_TOKENS"), FinishKind::Truncated);
        assert_eq!(FinishKind::gemini("SAFETY"), FinishKind::Filtered);
        assert_eq!(
            FinishKind::gemini("MALFORMED_FUNCTION_CALL"),
            FinishKind::Malformed
        );
        assert!(!FinishKind::Truncated.completes_task());
        assert_eq!(FinishKind::Refused.failure().unwrap().code(), Code::Refused);
        assert_eq!(
            FinishKind::Malformed.failure().unwrap().class(),
            Class::ModelFixable
        );
        assert!(FinishKind::Truncated.failure().is_none());
    }

    #[test]
    fn for_provider_reads_each_vocabulary() {
        let cases = [
            (Provider::OpenAi, "stop", FinishKind::Complete),
            (Provider::OpenAi, "length", FinishKind::Truncated),
            // Another wire's word passed through by a proxy: its meaning.
            (Provider::OpenAi, "end_turn", FinishKind::Complete),
            (Provider::OpenAi, "eos", FinishKind::Other),
            (Provider::Anthropic, "end_turn", FinishKind::Complete),
            (Provider::Anthropic, "refusal", FinishKind::Refused),
            (Provider::Anthropic, "length", FinishKind::Other),
            (Provider::Gemini, "STOP", FinishKind::Complete),
            (Provider::Gemini, "SAFETY", FinishKind::Filtered),
            (Provider::Gemini, "stop", FinishKind::Other),
            (Provider::Http, "stop", FinishKind::Complete),
            (Provider::Http, "length", FinishKind::Truncated),
        ];
        for (provider, reason, kind) in cases {
            assert_eq!(
                FinishKind::for_provider(provider, reason),
                kind,
                "{provider:?} {reason}"
            );
        }
    }

    #[test]
    fn known_reasons_are_borrowed_and_others_kept() {
        let known = Finish::new(FinishKind::Complete, "end_turn");
        assert!(matches!(known.reason, Cow::Borrowed("end_turn")));
        let other = Finish::new(FinishKind::Other, "something_new");
        assert_eq!(&*other.reason, "something_new");
    }
}
