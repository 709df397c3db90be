//! What the caller holds: a [`Resumed`] handle in the response extensions,
//! filled as resumes happen.

use std::sync::{Arc, Mutex, MutexGuard};

use seawall_core::provider::Provider;
use seawall_core::{Attempt, Code, Finish, Receipt, RouteId, Usage};

/// One continuation the layer sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeRecord {
    /// 1 for the first continuation of the operation, 2 for the next, ….
    pub attempt: u32,
    /// The route that answered (or failed) the continuation.
    pub route: Option<RouteId>,
    /// Characters the caller had been shown when the stream was cut.
    pub delivered_chars: u64,
    /// What cut it: the interruption's own cause (`transport`,
    /// `idle_timeout`, `overloaded`, …), or `truncated`.
    pub cause: Code,
    /// The continuation's failure before content, if it failed; `None`
    /// when it answered. [`Code::Cancelled`] when the caller dropped the
    /// body before the continuation joined it (while it was sent, awaited,
    /// or lined up): its receipt is kept if its answer came.
    pub failed: Option<Code>,
    /// Its text joined the body. False when it failed, and when it
    /// answered but could not be lined up with what the caller had (the
    /// report's `gave_up` is then `misaligned`).
    pub spliced: bool,
    /// It retrieved the provider's own stored stream after the last event
    /// delivered (a Responses API background response), instead of asking
    /// the model to go on: nothing generated again, nothing billed again.
    pub retrieved: bool,
    /// Characters the continuation repeated and the layer trimmed.
    pub trimmed_chars: u64,
    /// The wire format the continuation was answered in, when the route
    /// that answered said it was not the caller's
    /// ([`AnsweredIn`](crate::AnsweredIn)): its text was said in the
    /// caller's format. `None` for an answer in the caller's.
    pub answered_in: Option<Provider>,
    /// The continuation's own receipt: its attempts (a provider that
    /// answered 2xx bills the continuation like any request), the usage
    /// its stream reports once it ends, and why its ladder stopped.
    /// `None` when nothing below keeps receipts (no retry layer).
    pub receipt: Option<Receipt>,
}

/// Everything the layer did for one response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeReport {
    /// Every continuation, in order.
    pub resumes: Vec<ResumeRecord>,
    /// The finish of the answer, once the body ended with one, or was
    /// dropped once the caller held it (a client that stops reading at
    /// `[DONE]`, as the stream guard judges such a drop finished).
    pub finish: Option<Finish>,
    /// Why the layer did not resume the interruption the body ended with,
    /// if it ended with one: `not_resumable`, `max_resumes`, `deadline`,
    /// `replay_cap`, `request_unsent` (the request's body was still being
    /// sent when the answer began), `misaligned`, `n_choices`, `extended_thinking`,
    /// `structured_output`, `tool_call`, `continuation_failed` (a
    /// continuation failed for good: its code is in its record), `budget`
    /// (the retry budget, which pays for a resume as for a retry, had no
    /// token for it),
    /// `max_tokens` (the delivered answer spent the output budget),
    /// `another_format` (a continuation answered in another wire format
    /// carried what the caller's cannot say: a tool call, a finish with no
    /// counterpart), `cancelled` (the caller dropped the body while a
    /// continuation had no outcome yet), ….
    pub gave_up: Option<&'static str>,
}

impl ResumeReport {
    /// Continuations spliced into the body.
    pub fn resumed(&self) -> usize {
        self.resumes.iter().filter(|r| r.spliced).count()
    }

    /// Every continuation's upstream attempts, in order.
    pub fn attempts(&self) -> impl Iterator<Item = &Attempt> {
        self.resumes
            .iter()
            .filter_map(|r| r.receipt.as_ref())
            .flat_map(|r| r.attempts.iter())
    }

    /// The continuations' attempts the provider billed (answered 2xx).
    pub fn billed_attempts(&self) -> usize {
        self.attempts().filter(|a| a.billed).count()
    }

    /// The tokens the continuations' billed attempts reported (a streamed
    /// one's once its body ended): a retrieval of the stored answer is not
    /// billed, and the usage it reads is the cut answer's (see
    /// [`receipt`](Self::receipt)).
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for usage in self.attempts().filter_map(Attempt::billed_usage) {
            total += usage;
        }
        total
    }

    /// The whole operation's receipt: `first` (the [`Receipt`] of the
    /// answer the continuations extend, from its response extensions)
    /// followed by every continuation's attempts. Its
    /// [`billed_attempts`](Receipt::billed_attempts) are the requests the
    /// answer the caller read was billed for, and its
    /// [`usage`](Receipt::usage) the tokens they reported: an answer cut
    /// before its usage event (an OpenAI stream's usage chunk comes last)
    /// reported none, and
    /// [`billed_without_usage`](Receipt::billed_without_usage) counts such
    /// attempts (then the usage is a floor).
    ///
    /// A retrieval of the provider's stored stream reads the cut answer's
    /// own end, its whole usage with it: that usage is moved onto the
    /// last billed attempt whose usage was not whole (the cut answer), so
    /// that the bill is counted once, on the attempt billed for it.
    pub fn receipt(&self, first: &Receipt) -> Receipt {
        let mut whole = first.clone();
        for record in &self.resumes {
            let Some(mut receipt) = record.receipt.clone() else {
                continue;
            };
            if record.retrieved
                && let Some(cut) = whole
                    .attempts
                    .as_mut_slice()
                    .iter_mut()
                    .rev()
                    .find(|a| a.billed && !a.usage_is_whole())
            {
                // The attempt that answered the retrieval is its last.
                if let Some(read) = receipt.attempts.as_mut_slice().last_mut() {
                    cut.take_usage_of(read);
                }
            }
            whole.append(receipt);
        }
        whole
    }
}

/// A handle on the [`ResumeReport`] of one response, in its extensions.
/// Clones share the report; it fills as the body is read.
#[derive(Debug, Clone, Default)]
pub struct Resumed(Arc<Mutex<ResumeReport>>);

impl Resumed {
    /// A copy of the report as it stands.
    pub fn report(&self) -> ResumeReport {
        self.lock().clone()
    }

    /// Continuations spliced into the body so far.
    pub fn count(&self) -> usize {
        self.lock().resumed()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ResumeReport> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
