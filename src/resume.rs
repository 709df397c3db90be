//! Resuming an interrupted stream instead of restarting it:
//! [`ResumeLayer`] (crate `seawall-resume`), re-exported, and the
//! assembled stack with it ([`Stack::resume`](crate::stack::Stack::resume)).
//!
//! When a stream fails after content reached the caller, seawall never
//! replays it: the caller already showed the text. The layer continues it
//! instead — it builds the continuation request from the original request
//! and the delivered text, sends it through the same stack and splices it
//! into the same response body, trimming whatever the model repeats, so
//! the user sees one answer and the provider bills the rest once. See
//! [`seawall_resume`] for the whole story.
//!
//! A continuation that moves to a fallback route carries a
//! [`Continuation`] (the delivered text), so a route with a request of its
//! own continues that one in its own wire format
//! ([`Continuation::body`]); a route answering in another format than the
//! caller's marks its response [`AnsweredIn`], and the layer says that
//! answer's text in the caller's format. `seawall chat --resume` builds its
//! fallback routes so.
//!
//! The continuation builders are here too, for callers that drive it
//! themselves:
//!
//! ```
//! use seawall::resume::{continuation, AnthropicStyle};
//! use seawall::core::provider::Provider;
//! use serde_json::json;
//!
//! let original = json!({"model": "m", "max_tokens": 512, "stream": true,
//!     "messages": [{"role": "user", "content": "Count to ten."}]});
//! let next = continuation(Provider::Anthropic, &original, "one two three ", AnthropicStyle::Prefill).unwrap();
//! assert_eq!(next["messages"][1], json!({"role": "assistant", "content": "one two three"}));
//! ```

pub use seawall_resume::*;

#[cfg(all(
    feature = "classify",
    feature = "deadline",
    feature = "retry",
    feature = "breaker",
    feature = "stream",
    feature = "fallback"
))]
pub use assembled::{Resumable, ResumableWithFallback, Resuming};

#[cfg(all(
    feature = "classify",
    feature = "deadline",
    feature = "retry",
    feature = "breaker",
    feature = "stream",
    feature = "fallback"
))]
mod assembled {
    use seawall_classify::ClassifyLayer;
    use seawall_deadline::DeadlineService;
    use seawall_fallback::{Fallback, FallbackLayer};
    use seawall_resume::{Resume, ResumeLayer};
    use seawall_retry::RetryBudget;
    use tower_layer::Layer;

    use crate::stack::{AttemptStack, Stack};

    /// The whole stack with resuming, without a fallback:
    /// Deadline(total) → Resume → RetryBudget → [`AttemptStack`].
    pub type Resumable<S, C> = DeadlineService<Resume<RetryBudget<AttemptStack<S, C>>>>;

    /// The whole stack with resuming and a fallback:
    /// Deadline(total) → Resume → Fallback → RetryBudget → [`AttemptStack`].
    pub type ResumableWithFallback<S, C, F, R> =
        DeadlineService<Resume<Fallback<RetryBudget<AttemptStack<S, C>>, F, R>>>;

    /// A [`Stack`] that resumes interrupted streams
    /// ([`Stack::resume`]). The layer sits inside the operation's
    /// deadline, so every continuation shares its clock, and outside the
    /// fallback and the ladder, so a continuation gets the same retries and
    /// failover as the original request.
    #[derive(Debug, Clone)]
    pub struct Resuming {
        stack: Stack,
        layer: ResumeLayer,
    }

    impl Resuming {
        pub(crate) fn new(stack: Stack, layer: ResumeLayer) -> Self {
            Resuming { stack, layer }
        }

        /// The stack without resuming.
        pub fn stack(&self) -> &Stack {
            &self.stack
        }

        /// [`Stack::build`], with the resume layer inside the total deadline.
        pub fn build<S, C: Clone>(
            &self,
            classify: &ClassifyLayer<C>,
            client: S,
        ) -> Resumable<S, C> {
            let ladder = self.stack.build(classify, client).into_inner();
            self.stack
                .total_deadline_layer()
                .layer(self.layer_for(classify).layer(ladder))
        }

        /// [`Stack::build_with_fallback`], with the resume layer inside the
        /// total deadline and outside the fallback.
        pub fn build_with_fallback<S: Clone, C: Clone, F: Clone, R>(
            &self,
            classify: &ClassifyLayer<C>,
            client: S,
            fallback: FallbackLayer<F, R>,
        ) -> ResumableWithFallback<S, C, F, R> {
            let inner = self
                .stack
                .build_with_fallback(classify, client, fallback)
                .into_inner();
            self.stack
                .total_deadline_layer()
                .layer(self.layer_for(classify).layer(inner))
        }

        /// The resume layer, judging a rate limit's hint against the
        /// stack's attempts' quota wall (the classifier's, raised to the
        /// ladder's longer `max_retry_after` where it is the default:
        /// `Stack::quota_wall`) unless it was given its own, and
        /// sending no continuation with the caller's key in the header the
        /// ladder keys its attempts with: the ladder then keys each
        /// continuation anew.
        pub(crate) fn layer_for<C>(&self, classify: &ClassifyLayer<C>) -> ResumeLayer {
            let layer = self
                .layer
                .clone()
                .quota_wall_or(self.stack.quota_wall(classify));
            match self.stack.retry().given_idempotency_key() {
                Some(name) => layer.idempotency_key(name.clone()),
                None => layer,
            }
        }
    }
}

#[cfg(all(
    test,
    feature = "classify",
    feature = "deadline",
    feature = "retry",
    feature = "breaker",
    feature = "stream",
    feature = "fallback"
))]
mod tests {
    use seawall_classify::ClassifyLayer;

    use super::*;
    use crate::stack::Stack;

    /// The resume layer judges a hint against the classifier's quota wall
    /// unless it was given its own threshold.
    #[test]
    fn the_resume_layer_takes_the_classifiers_quota_wall() {
        use std::time::Duration;
        let classify = ClassifyLayer::openai().quota_wall(Duration::from_secs(600));
        let taken = Stack::interactive().resume(ResumeLayer::new());
        assert_eq!(
            taken.layer_for(&classify).given_quota_wall(),
            Some(Duration::from_secs(600))
        );
        let own =
            Stack::interactive().resume(ResumeLayer::new().quota_wall(Duration::from_secs(30)));
        assert_eq!(
            own.layer_for(&classify).given_quota_wall(),
            Some(Duration::from_secs(30))
        );
    }
}
