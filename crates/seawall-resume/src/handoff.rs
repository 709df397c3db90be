//! What a fallback route needs to continue an answer in its own wire
//! format, and what it tells the layer back.
//!
//! The layer builds each continuation in the caller's wire format and
//! sends it through the inner service, where a fallback route may take it
//! (the primary is now unhealthy). A route that rewrites requests for
//! another endpoint — another model, another provider's wire format —
//! must not send its own request for the *original* question: its
//! provider would answer from the start, billed whole, and nothing could
//! splice it in. So every continuation the layer sends carries a
//! [`Continuation`] in its extensions (the delivered text, shared, and
//! the resume's number), and such a route builds the continuation of its
//! own request with [`Continuation::body`] — Anthropic prefill, OpenAI's
//! trailing assistant message, Gemini's `model` turn, as the layer would.
//!
//! A route whose answer is in another wire format than the caller's says
//! so on its response with [`AnsweredIn`]: the layer then reads the
//! continuation with that format's decoder and hands the caller its text
//! as the caller's own wire format's text deltas (see the crate docs,
//! "On a fallback route, in another wire format"). A response without
//! the marker is read in the caller's format, as the same route's always
//! is.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use seawall_core::provider::Provider;
use serde_json::Value;

use crate::continuation::{ResumeError, Styles, continuation_with, never_resume, spend_budget};

/// Marks a continuation request the [`ResumeLayer`](crate::ResumeLayer)
/// sends (a generated one; a background response's retrieval carries
/// none): the text the caller was shown so far and which resume it is, so
/// a route that sends the operation elsewhere can continue its own
/// request ([`body`](Self::body)) instead of asking its question anew.
///
/// ```
/// use seawall_core::provider::Provider;
/// use seawall_resume::Continuation;
/// use serde_json::json;
///
/// # fn continued(continuation: &Continuation) -> Result<(), seawall_resume::ResumeError> {
/// // A fallback route's own request, for its own model and wire format:
/// let template = json!({"model": "claude-x", "max_tokens": 1024, "stream": true,
///     "messages": [{"role": "user", "content": "Count."}]});
/// let next = continuation.body(Provider::Anthropic, &template)?;
/// assert_eq!(next["messages"][1]["role"], "assistant");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Continuation {
    caller: Provider,
    delivered: Arc<str>,
    resume: u32,
    spent: u64,
    styles: Styles,
    /// The formats a route built a request ending with the model's own
    /// turn in (an Anthropic prefill, a Gemini `model` turn), one bit
    /// each ([`model_turn_bit`]): a 400 for the continuation may be a
    /// model that refuses it (shared by the clones the routes were given
    /// and the layer's).
    model_turns: Arc<AtomicU8>,
    /// Why a route declined to build its continuation, as the layer
    /// would say it giving up (`max_tokens`, `extended_thinking`, …):
    /// the failure the route answers with is its own.
    declined: Arc<OnceLock<&'static str>>,
}

impl Continuation {
    pub(crate) fn new(
        caller: Provider,
        delivered: Arc<str>,
        resume: u32,
        spent: u64,
        styles: Styles,
    ) -> Self {
        Continuation {
            caller,
            delivered,
            resume,
            spent,
            styles,
            model_turns: Arc::default(),
            declined: Arc::default(),
        }
    }

    /// Why a route declined to build this continuation
    /// ([`body`](Self::body)'s error), if one did.
    pub(crate) fn declined(&self) -> Option<&'static str> {
        self.declined.get().copied()
    }

    /// Whether a route built a request in `provider`'s format ending with
    /// the model's own turn from this continuation ([`body`](Self::body)).
    pub(crate) fn ended_with_model_turn(&self, provider: Provider) -> bool {
        self.model_turns.load(Ordering::Relaxed) & model_turn_bit(provider) != 0
    }

    /// The caller's wire format: the one the continuation request is in,
    /// and the one its answer is said in.
    pub fn caller(&self) -> Provider {
        self.caller
    }

    /// Whether the layer can say an answer in `answered`'s wire format to
    /// this caller: any provider's format (OpenAI chat completions and
    /// Responses, Anthropic, Gemini), not a plain event stream. A route of
    /// another format that cannot be said had better not be asked: its
    /// answer would be billed and not shown.
    pub fn readable_in(&self, answered: Provider) -> bool {
        answered == self.caller || crate::translate::can_translate(self.caller, answered)
    }

    /// The text the caller was shown before this continuation, across
    /// every stream of the answer (what was trimmed as a repeat not
    /// counted twice).
    pub fn delivered(&self) -> &str {
        &self.delivered
    }

    /// Which resume of the answer this is: 1 for the first.
    pub fn resume(&self) -> u32 {
        self.resume
    }

    /// Content events the answer delivered before this continuation; each
    /// spent at least one token of the caller's output budget.
    pub fn spent(&self) -> u64 {
        self.spent
    }

    /// The styles the layer asks in, per wire format (the layer's, until a
    /// model refused its prefill).
    pub fn styles(&self) -> &Styles {
        &self.styles
    }

    /// The continuation of `original`, a request body in `provider`'s wire
    /// format that asks the same question (a fallback route's own
    /// request): the delivered text appended in that provider's way, with
    /// the layer's styles, its output budget lowered by what was spent
    /// ([`continuation_with`]). [`ResumeError::BudgetSpent`] when nothing
    /// is left of that budget: the original would have ended by now;
    /// [`ResumeError::NeverResumed`] for a request the layer never
    /// continues ([`never_resume`]: several choices, extended thinking,
    /// structured output), which the route's own may be where the
    /// caller's is not. The layer, told so, gives the answer up for that
    /// reason.
    ///
    /// An Anthropic prefill or a Gemini `model` turn last built here is
    /// remembered: a model that refuses it (Claude 4.6 and later, newer
    /// Gemini models answer it with a 400) is then asked in a user turn on
    /// the next continuation, as the layer does for a caller of that
    /// format.
    pub fn body(&self, provider: Provider, original: &Value) -> Result<Value, ResumeError> {
        if let Some(reason) = never_resume(provider, original) {
            let _ = self.declined.set(reason);
            return Err(ResumeError::NeverResumed(reason));
        }
        let mut next = continuation_with(provider, original, &self.delivered, &self.styles)?;
        if !spend_budget(provider, &mut next, self.spent) {
            let _ = self.declined.set("max_tokens");
            return Err(ResumeError::BudgetSpent);
        }
        if self.styles.ends_with_model_turn(provider) {
            self.model_turns
                .fetch_or(model_turn_bit(provider), Ordering::Relaxed);
        }
        Ok(next)
    }
}

/// The bit of `provider` in [`Continuation`]'s `model_turns`: none for a
/// format whose continuation never ends with the model's own turn.
fn model_turn_bit(provider: Provider) -> u8 {
    match provider {
        Provider::Anthropic => 1,
        Provider::Gemini => 2,
        _ => 0,
    }
}

/// The wire format a response is in, put in its extensions by a route
/// that answers in another format than the request it was given (a
/// fallback route of another provider). The layer reads a continuation's
/// answer so marked with that format's decoder; an unmarked answer is
/// read in the caller's format. A first response so marked (the answer
/// began on that route) is not resumed: the caller reads it in that
/// format, where nothing said in the request's could follow it.
///
/// ```
/// use seawall_core::provider::Provider;
/// use seawall_resume::AnsweredIn;
///
/// let mut response = http::Response::new(());
/// response.extensions_mut().insert(AnsweredIn(Provider::Anthropic));
/// assert_eq!(AnsweredIn::of(&response), Some(Provider::Anthropic));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnsweredIn(pub Provider);

impl AnsweredIn {
    /// The format `response` says it is in, if it says.
    pub fn of<B>(response: &http::Response<B>) -> Option<Provider> {
        response.extensions().get::<AnsweredIn>().map(|a| a.0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_route_continues_its_own_request_with_the_budget_left() {
        let continuation = Continuation::new(
            Provider::OpenAi,
            Arc::from("w1 w2 "),
            1,
            2,
            Styles::default(),
        );
        assert!(continuation.readable_in(Provider::Anthropic));
        assert!(!continuation.readable_in(Provider::Http));
        let template = json!({"model": "claude-x", "max_tokens": 10, "stream": true,
            "messages": [{"role": "user", "content": "Count."}]});
        assert!(!continuation.ended_with_model_turn(Provider::Anthropic));
        let next = continuation.body(Provider::Anthropic, &template).unwrap();
        assert!(
            continuation
                .clone()
                .ended_with_model_turn(Provider::Anthropic),
            "shared by the clones"
        );
        assert!(!continuation.ended_with_model_turn(Provider::Gemini));
        assert_eq!(
            next["messages"][1],
            json!({"role": "assistant", "content": "w1 w2"})
        );
        assert_eq!(next["max_tokens"], json!(8));
        assert_eq!(next["model"], json!("claude-x"));
        let spent = Continuation::new(
            Provider::OpenAiResponses,
            Arc::from("w1"),
            2,
            10,
            Styles::default(),
        );
        assert!(spent.readable_in(Provider::Anthropic));
        assert!(!spent.readable_in(Provider::Http));
        assert_eq!(spent.declined(), None);
        assert_eq!(
            spent.body(Provider::Anthropic, &template),
            Err(ResumeError::BudgetSpent)
        );
        assert_eq!(spent.clone().declined(), Some("max_tokens"));
        // The route's own request is checked as the caller's is.
        for (provider, never, reason) in [
            (
                Provider::Anthropic,
                json!({"model": "claude-x", "max_tokens": 10, "thinking": {"type": "enabled"},
                    "messages": [{"role": "user", "content": "Count."}]}),
                "extended_thinking",
            ),
            (
                Provider::OpenAi,
                json!({"model": "gpt-x", "n": 2,
                    "messages": [{"role": "user", "content": "Count."}]}),
                "n_choices",
            ),
            (
                Provider::OpenAi,
                json!({"model": "gpt-x", "response_format": {"type": "json_schema"},
                    "messages": [{"role": "user", "content": "Count."}]}),
                "structured_output",
            ),
        ] {
            let asked = Continuation::new(
                Provider::OpenAi,
                Arc::from("w1 w2 "),
                1,
                2,
                Styles::default(),
            );
            assert_eq!(
                asked.body(provider, &never),
                Err(ResumeError::NeverResumed(reason))
            );
            assert_eq!(asked.declined(), Some(reason));
        }
        let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "Count."}]}]});
        let next = continuation.body(Provider::Gemini, &gemini).unwrap();
        assert_eq!(next["contents"][1]["role"], json!("model"));
        assert!(continuation.ended_with_model_turn(Provider::Gemini));
    }
}
