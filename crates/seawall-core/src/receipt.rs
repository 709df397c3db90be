use std::time::Duration;

use crate::{BoxError, Code, RouteId, Usage, UsageSlot};

/// Whether a request asks for work a provider bills, so that a 2xx answer
/// to it is a billed attempt: not a `GET`, `HEAD`, `DELETE` or `OPTIONS`
/// (reading a stored response, polling a background one, listing models,
/// deleting a file) and not token counting (Anthropic's
/// `…/messages/count_tokens`, the Responses API's `…/input_tokens`,
/// Gemini's `:countTokens`, Vertex AI's `:computeTokens`, Claude's
/// `count-tokens` model on Vertex AI), which the providers do not bill. A
/// query after the path is not read.
pub fn billable(method: &http::Method, path: &str) -> bool {
    if matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::DELETE | http::Method::OPTIONS
    ) {
        return false;
    }
    let path = path.split('?').next().unwrap_or(path);
    !crate::provider::counts_tokens(path.strip_suffix('/').unwrap_or(path))
}

/// Why a retry ladder stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// An attempt succeeded.
    Succeeded,
    /// Another attempt would not fit the operation's deadline.
    Deadline,
    /// The retry budget had no token left.
    Budget,
    /// `max_attempts` were made.
    Attempts,
    /// The failure's action was not `Retry`.
    NotRetryable,
    /// The provider asked to wait longer than the ladder waits
    /// (`max_retry_after`; with a fallback to go to, longer than the
    /// backoff's cap): the failure is returned with its hint.
    HintTooLong,
    /// The request body could not be replayed (over the replay cap).
    NotReplayable,
    /// The same route failed in a route-shaped way: ended with `Failover`.
    Failover,
    /// An outer ladder owns retries; this one made a single attempt.
    OuterLadder,
}

impl StopReason {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Succeeded => "succeeded",
            StopReason::Deadline => "deadline",
            StopReason::Budget => "budget",
            StopReason::Attempts => "attempts",
            StopReason::NotRetryable => "not_retryable",
            StopReason::HintTooLong => "hint_too_long",
            StopReason::NotReplayable => "not_replayable",
            StopReason::Failover => "failover",
            StopReason::OuterLadder => "outer_ladder",
        }
    }
}

/// One upstream attempt of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// The route the attempt went to.
    pub route: RouteId,
    /// The failure code, or `None` when the attempt succeeded.
    pub code: Option<Code>,
    /// How long the ladder slept before this attempt.
    pub delay: Duration,
    /// The provider started a generation: a 2xx answer, billed whatever
    /// came of it (under a retry ladder or a fallback, only to a request
    /// it bills: [`billable`]). Only the certain ones: an attempt cut
    /// before any answer came back after its request reached the
    /// provider whole may have been billed too
    /// ([`may_be_billed`](Self::may_be_billed)).
    pub billed: bool,
    /// See [`may_be_billed`](Self::may_be_billed).
    may_be_billed: bool,
    /// See [`was_sent`](Self::was_sent).
    not_sent: bool,
    usage: Option<AttemptUsage>,
}

/// An attempt's usage: known, to come when its stream ends, or the part a
/// stream that failed before delivery had reported.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AttemptUsage {
    Known(Usage),
    Pending(UsageSlot),
    Partial(Usage),
}

impl Attempt {
    /// An attempt record.
    pub fn new(route: RouteId, code: Option<Code>, delay: Duration) -> Self {
        Attempt {
            route,
            code,
            delay,
            billed: false,
            may_be_billed: false,
            not_sent: false,
            usage: None,
        }
    }

    /// This record, of an attempt that never called the upstream for a
    /// reason that is no refusal of seawall's: a fallback's primary whose
    /// readiness failed, so nothing was sent to it. Neither billed nor
    /// possibly billed, and not among [`Receipt::calls`].
    pub fn not_sent(mut self) -> Self {
        self.not_sent = true;
        self.billed = false;
        self.may_be_billed = false;
        self
    }

    /// Whether the attempt called the upstream: all but those marked
    /// [`not_sent`](Self::not_sent) and seawall's own refusals of a route
    /// ([`Code::is_refusal`]).
    pub fn was_sent(&self) -> bool {
        !self.not_sent && !self.code.is_some_and(Code::is_refusal)
    }

    /// The record of an attempt that answered `response`: billed when it is
    /// 2xx, with the usage its extensions carry (a checked unary answer's
    /// [`Usage`], or a stream's [`UsageSlot`] filled when it ends).
    pub fn answered<B>(route: RouteId, delay: Duration, response: &http::Response<B>) -> Self {
        let attempt = Attempt::new(route, None, delay).with_billed(response.status().is_success());
        let extensions = response.extensions();
        if let Some(usage) = extensions.get::<Usage>() {
            attempt.with_usage(*usage)
        } else if let Some(slot) = extensions.get::<UsageSlot>() {
            attempt.with_usage_slot(slot.clone())
        } else {
            attempt
        }
    }

    /// The record of an attempt that failed with `failure`: billed when the
    /// failure says so ([`Failure::billed`](crate::Failure::billed): the provider had answered 2xx
    /// and generated), with the usage it reported, if it did: its whole
    /// count, or the part a stream had reported before it broke
    /// ([`Failure::partial_usage`](crate::Failure::partial_usage)), which
    /// is not whole ([`usage_is_whole`](Self::usage_is_whole)).
    pub fn failed(route: RouteId, delay: Duration, failure: &crate::Failure) -> Self {
        let mut attempt =
            Attempt::new(route, Some(failure.code()), delay).with_billed(failure.billed());
        if let Some(usage) = failure.usage() {
            attempt.usage = Some(AttemptUsage::Known(usage));
        } else if let Some(part) = failure.partial_usage() {
            attempt.usage = Some(AttemptUsage::Partial(part));
        }
        attempt
    }

    /// This record, marked billed (the provider answered 2xx).
    pub fn with_billed(mut self, billed: bool) -> Self {
        self.billed = billed;
        self
    }

    /// This record, marked as one the provider may have billed though no
    /// answer said so (see [`may_be_billed`](Self::may_be_billed)).
    pub fn with_may_be_billed(mut self, may_be_billed: bool) -> Self {
        self.may_be_billed = may_be_billed;
        self
    }

    /// Whether the provider may have billed this attempt though it is not
    /// [`billed`](Self::billed): its request reached the provider whole,
    /// the provider bills it ([`billable`]), and no answer came back — a
    /// per-attempt bound, the deadline or the caller cut it while the
    /// provider was still generating (a unary answer says nothing before
    /// it is whole), or the connection broke after the request was
    /// written. A provider runs such a generation to its end and bills
    /// it. Never true of a billed attempt: the two are disjoint, and a
    /// caller's worst case is the sum of
    /// [`Receipt::billed_attempts`] and [`Receipt::may_be_billed_attempts`].
    pub fn may_be_billed(&self) -> bool {
        self.may_be_billed && !self.billed
    }

    /// Whether an attempt of a request the provider bills (`bills`:
    /// [`billable`]), asking what `facts` say, that failed with `failure`
    /// may have been billed ([`may_be_billed`](Self::may_be_billed)): the
    /// request's body was sent to its end
    /// ([`RequestFacts::body_sent`](crate::RequestFacts::body_sent)), no
    /// answer's head came back (no status: a status says what the
    /// provider did, a 2xx billed, anything else not generated), and the
    /// failure is no refusal of seawall's, which calls no one
    /// ([`Failure::is_refused_here`](crate::Failure::is_refused_here)),
    /// nor one before the request reached the provider (a connection
    /// never made, a stream refused unprocessed:
    /// [`Failure::nothing_generated`](crate::Failure::nothing_generated)).
    ///
    /// The body's fact is the attempt's own
    /// ([`RequestFacts::attempt_sent_whole`](crate::RequestFacts::attempt_sent_whole)):
    /// an attempt whose request never went out whole (a connect that never
    /// finished, cut by its bound) is not counted because an earlier one
    /// sent it, nor because the ladder read the body ahead for its facts.
    /// A body whose sending nobody records (no retry ladder, no fallback)
    /// says nothing, and its attempt is not counted.
    pub fn unanswered_after_sending(
        bills: bool,
        facts: &crate::RequestFacts,
        failure: &crate::Failure,
    ) -> bool {
        bills
            && failure.status().is_none()
            && !failure.is_refused_here()
            && !failure.nothing_generated()
            && facts.attempt_sent_whole()
    }

    /// This record with the usage the answer reported.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(AttemptUsage::Known(usage));
        self
    }

    /// This record with usage still to come: the stream's body fills
    /// `slot` when it ends.
    pub fn with_usage_slot(mut self, slot: UsageSlot) -> Self {
        self.usage = Some(AttemptUsage::Pending(slot));
        self
    }

    /// The provider's usage for this attempt, when it reported one — for a
    /// streamed attempt, once its body ended; for a stream that failed
    /// before its finish, what it had reported
    /// ([`usage_is_whole`](Self::usage_is_whole) says which).
    pub fn usage(&self) -> Option<Usage> {
        match &self.usage {
            Some(AttemptUsage::Known(usage) | AttemptUsage::Partial(usage)) => Some(*usage),
            Some(AttemptUsage::Pending(slot)) => slot.get(),
            None => None,
        }
    }

    /// The usage of a billed attempt: what the provider charged for it.
    /// `None` for an attempt not billed, whatever it reported — a
    /// retrieval of a stored answer reads that answer's usage, a token
    /// count reports the tokens counted, and neither is charged.
    pub fn billed_usage(&self) -> Option<Usage> {
        if self.billed { self.usage() } else { None }
    }

    /// Takes `other`'s usage (known, or to come when its stream ends) for
    /// this attempt's, when `other` has one; returns whether it had.
    /// `other` is left with none. A layer that knows the usage another
    /// attempt read is this one's moves it here: a retrieval of a stored
    /// answer cut in flight reads that answer's whole count, which is
    /// what the cut attempt was billed for.
    pub fn take_usage_of(&mut self, other: &mut Attempt) -> bool {
        match other.usage.take() {
            Some(usage) => {
                self.usage = Some(usage);
                true
            }
            None => false,
        }
    }

    /// Whether [`usage`](Self::usage) is the attempt's whole count: a
    /// unary answer's, or a stream's that reached its finish. A stream
    /// cut short, delivered or failed before it was, may have reported
    /// part of it (Anthropic's input in `message_start`, Gemini's running
    /// count): then this is false.
    pub fn usage_is_whole(&self) -> bool {
        match &self.usage {
            Some(AttemptUsage::Known(_)) => true,
            Some(AttemptUsage::Pending(slot)) => slot.is_whole(),
            Some(AttemptUsage::Partial(_)) | None => false,
        }
    }
}

/// The attempts of an operation, in order. Reads as a slice of
/// [`Attempt`]s; holds the first one inline, so the common operation — one
/// attempt that succeeds — costs no allocation for it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Attempts(Inline);

#[derive(Clone, Default, PartialEq, Eq)]
enum Inline {
    #[default]
    Empty,
    One(Attempt),
    Many(Vec<Attempt>),
}

impl Attempts {
    /// Records an attempt after the others.
    pub fn push(&mut self, attempt: Attempt) {
        self.0 = match std::mem::take(&mut self.0) {
            Inline::Empty => Inline::One(attempt),
            Inline::One(first) => Inline::Many(vec![first, attempt]),
            Inline::Many(mut all) => {
                all.push(attempt);
                Inline::Many(all)
            }
        };
    }

    /// The attempts as a slice.
    pub fn as_slice(&self) -> &[Attempt] {
        match &self.0 {
            Inline::Empty => &[],
            Inline::One(first) => std::slice::from_ref(first),
            Inline::Many(all) => all,
        }
    }

    /// The attempts as a mutable slice: a layer that knows more than the
    /// status (a retrieval of a stored answer generates nothing: not
    /// billed) corrects its records.
    pub fn as_mut_slice(&mut self) -> &mut [Attempt] {
        match &mut self.0 {
            Inline::Empty => &mut [],
            Inline::One(first) => std::slice::from_mut(first),
            Inline::Many(all) => all,
        }
    }
}

impl std::ops::Deref for Attempts {
    type Target = [Attempt];
    fn deref(&self) -> &[Attempt] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<'a> IntoIterator for &'a Attempts {
    type Item = &'a Attempt;
    type IntoIter = std::slice::Iter<'a, Attempt>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl IntoIterator for Attempts {
    type Item = Attempt;
    type IntoIter = std::vec::IntoIter<Attempt>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Inline::Empty => Vec::new().into_iter(),
            Inline::One(first) => vec![first].into_iter(),
            Inline::Many(all) => all.into_iter(),
        }
    }
}

impl Extend<Attempt> for Attempts {
    fn extend<I: IntoIterator<Item = Attempt>>(&mut self, attempts: I) {
        for attempt in attempts {
            self.push(attempt);
        }
    }
}

impl FromIterator<Attempt> for Attempts {
    fn from_iter<I: IntoIterator<Item = Attempt>>(attempts: I) -> Self {
        let mut all = Attempts::default();
        all.extend(attempts);
        all
    }
}

/// One per operation: every attempt, why the ladder stopped, and whether a
/// fallback served the answer.
///
/// The retry layer puts it in the response extensions on success and inside
/// the [`Failure`](crate::Failure) on error; an error that is no `Failure`
/// carries it [`attach`](Receipt::attach)ed, and
/// [`of_error`](Receipt::of_error) finds it on either. The fallback layer
/// merges the primary's and the fallback's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Receipt {
    /// Every attempt, in order, seawall's own refusals of a route
    /// included ([`calls`](Self::calls) leaves them out).
    pub attempts: Attempts,
    /// Why the (last) ladder stopped.
    pub stop: Option<StopReason>,
    /// True when the fallback route produced the outcome.
    pub fallback: bool,
}

impl Receipt {
    /// Records an attempt.
    pub fn push(&mut self, attempt: Attempt) {
        self.attempts.push(attempt);
    }

    /// Appends another receipt's attempts (a fallback's, after the primary's);
    /// its stop reason replaces ours.
    pub fn append(&mut self, other: Receipt) {
        self.attempts.extend(other.attempts);
        if other.stop.is_some() {
            self.stop = other.stop;
        }
        self.fallback |= other.fallback;
    }

    /// Appends another receipt's attempts as [`append`](Self::append)
    /// does, its first after `waited` more: the wait before the call that
    /// the other receipt's layer recorded (a ladder's backoff, a
    /// fallback's before moving on).
    pub fn append_after(&mut self, mut other: Receipt, waited: Duration) {
        if let Some(first) = other.attempts.as_mut_slice().first_mut() {
            first.delay += waited;
        }
        self.append(other);
    }

    /// The tokens of every billed attempt that reported usage (a streamed
    /// attempt reports it once its body ended; a stream cut short, what it
    /// had reported): what the operation was charged, or a floor of it
    /// while [`billed_without_usage`](Self::billed_without_usage) is not
    /// zero. An attempt not billed (a retrieval of a stored answer, a
    /// token count) is left out, whatever it reported
    /// ([`Attempt::billed_usage`]).
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for usage in self.attempts.iter().filter_map(Attempt::billed_usage) {
            total += usage;
        }
        total
    }

    /// Attempts that called the upstream ([`Attempt::was_sent`]): all
    /// but seawall's own refusals of a route, no call made
    /// ([`Code::is_refusal`]: its breaker open, it cooling down), and
    /// attempts marked [`not_sent`](Attempt::not_sent).
    pub fn calls(&self) -> usize {
        self.attempts.iter().filter(|a| a.was_sent()).count()
    }

    /// Attempts the provider billed: those it answered 2xx (under a retry
    /// ladder or a fallback, to a request it bills: [`billable`]). The
    /// certain ones: those cut before an answer came back may have been
    /// billed as well ([`may_be_billed_attempts`](Self::may_be_billed_attempts)),
    /// and a caller's worst case is the sum of the two.
    pub fn billed_attempts(&self) -> usize {
        self.attempts.iter().filter(|a| a.billed).count()
    }

    /// Attempts the provider may have billed though no answer said so
    /// ([`Attempt::may_be_billed`]): their request reached it whole and
    /// they were cut before its answer came (a unary generation still
    /// running at a per-attempt bound), which the provider runs to its
    /// end and bills. Not in [`billed_attempts`](Self::billed_attempts)
    /// nor [`billed_without_usage`](Self::billed_without_usage): the
    /// uncertain rest, whose usage nobody reports.
    pub fn may_be_billed_attempts(&self) -> usize {
        self.attempts.iter().filter(|a| a.may_be_billed()).count()
    }

    /// Billed attempts whose whole usage nobody reported (yet): a stream
    /// cut before its usage event (OpenAI's `include_usage` chunk comes
    /// last) or before the finish that brings the final count (Anthropic
    /// reports the input at the start, the output at the end), a body not
    /// read to its end ([`Attempt::usage_is_whole`]). An attempt that
    /// reported part of its count (a stream that failed after Anthropic's
    /// `message_start` counted the input) is counted here too: its part is
    /// in [`usage`](Self::usage), and its whole is still unknown. While
    /// this is not zero, [`usage`](Self::usage) is what was reported, a
    /// floor of what was billed.
    pub fn billed_without_usage(&self) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.billed && !a.usage_is_whole())
            .count()
    }

    /// `error`, which is no seawall [`Failure`](crate::Failure) (a
    /// client's own, a service's), carrying this receipt: the attempts
    /// made before it were made, and billed, all the same. Its text says
    /// how many attempts were made and why the ladder stopped; `error` is
    /// its [`source`](std::error::Error::source), whose text a printer of
    /// the chain shows next;
    /// [`of_error`](Self::of_error) finds the receipt. A failure keeps its
    /// receipt itself ([`Failure::with_receipt`](crate::Failure::with_receipt)).
    pub fn attach(self, error: BoxError) -> BoxError {
        Box::new(WithReceipt {
            error,
            receipt: self,
        })
    }

    /// Takes off `error` the receipt [`attach`](Self::attach) gave it:
    /// the error as it was, and the receipt. Another error comes back as
    /// it is, without one.
    pub fn detach(error: BoxError) -> (BoxError, Option<Receipt>) {
        match error.downcast::<WithReceipt>() {
            Ok(with) => (with.error, Some(with.receipt)),
            Err(error) => (error, None),
        }
    }

    /// The receipt `error` carries: the first in its source chain, a
    /// [`Failure`](crate::Failure)'s or one [`attach`](Self::attach)ed to
    /// an error of another kind.
    pub fn of_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Receipt> {
        // The chain as `Failure::find` walks it: bounded, through io
        // errors' payloads.
        seawall_internal::error::links(error).find_map(|link| {
            match link.downcast_ref::<WithReceipt>() {
                Some(with) => Some(&with.receipt),
                None => link
                    .downcast_ref::<crate::Failure>()
                    .and_then(crate::Failure::receipt),
            }
        })
    }

    /// The routes tried, in first-use order, without repeats.
    pub fn routes(&self) -> Vec<&RouteId> {
        let mut routes: Vec<&RouteId> = Vec::new();
        for attempt in &self.attempts {
            if !routes.contains(&&attempt.route) {
                routes.push(&attempt.route);
            }
        }
        routes
    }
}

/// An error of another kind than [`Failure`](crate::Failure), with the
/// receipt of the operation it ended ([`Receipt::attach`]).
#[derive(Debug)]
struct WithReceipt {
    error: BoxError,
    receipt: Receipt,
}

/// The receipt's part only: the error's text is its source's.
impl std::fmt::Display for WithReceipt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The calls sent, as `x-seawall-attempts` counts them: a route
        // refused or skipped while cooling is no attempt made.
        match self.receipt.calls() {
            0 => write!(f, "failed before any call was sent")?,
            1 => write!(f, "failed after 1 attempt")?,
            calls => write!(f, "failed after {calls} attempts")?,
        }
        match self.receipt.stop {
            Some(stop) => write!(f, " (stop: {})", stop.as_str()),
            None => Ok(()),
        }
    }
}

impl std::error::Error for WithReceipt {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_known_usage_and_count_billed_attempts() {
        let route = RouteId::new("a");
        let mut receipt = Receipt::default();
        let empty = crate::Failure::new(Code::EmptyResponse).with_status(200);
        receipt.push(Attempt::failed(route.clone(), Duration::ZERO, &empty));
        let limited = crate::Failure::new(Code::RateLimited).with_status(429);
        receipt.push(Attempt::failed(route.clone(), Duration::ZERO, &limited));
        // A gRPC refusal: HTTP 200, nothing generated.
        let refused = crate::Failure::new(Code::ProviderUnavailable)
            .with_status(200)
            .with_nothing_generated();
        receipt.push(Attempt::failed(route.clone(), Duration::ZERO, &refused));
        let mut response = http::Response::new(());
        response.extensions_mut().insert(Usage::new(10, 20));
        receipt.push(Attempt::answered(route, Duration::ZERO, &response));
        assert_eq!(receipt.billed_attempts(), 2);
        assert_eq!(receipt.usage(), Usage::new(10, 20));
        // The empty 200 was billed and reported nothing.
        assert_eq!(receipt.billed_without_usage(), 1);
        let billed: Vec<_> = receipt.attempts.iter().map(|a| a.billed).collect();
        assert_eq!(billed, [true, false, false, true]);
    }

    #[test]
    fn an_attempt_is_billed_or_may_be_never_both() {
        let route = RouteId::new("a");
        let mut receipt = Receipt::default();
        let cut = crate::Failure::new(Code::Timeout);
        receipt.push(Attempt::failed(route.clone(), Duration::ZERO, &cut).with_may_be_billed(true));
        // A 2xx said it was: certain, not uncertain.
        let empty = crate::Failure::new(Code::EmptyResponse).with_status(200);
        receipt.push(Attempt::failed(route, Duration::ZERO, &empty).with_may_be_billed(true));
        assert_eq!(receipt.billed_attempts(), 1);
        assert_eq!(receipt.may_be_billed_attempts(), 1);
        assert_eq!(receipt.billed_without_usage(), 1);
    }

    /// An attached receipt says the attempts and the stop, not the error's
    /// text, which is its source's: the chain says it once.
    #[test]
    fn an_attached_receipt_does_not_repeat_the_error() {
        let mut receipt = Receipt::default();
        receipt.push(Attempt::new(
            RouteId::new("a"),
            Some(Code::Unknown),
            Duration::ZERO,
        ));
        // A route refused without a call is no attempt made.
        receipt.push(Attempt::new(
            RouteId::new("b"),
            Some(Code::CircuitOpen),
            Duration::ZERO,
        ));
        receipt.stop = Some(StopReason::NotRetryable);
        let error = receipt.clone().attach("connection reset".into());
        assert_eq!(
            error.to_string(),
            "failed after 1 attempt (stop: not_retryable)"
        );
        let source = error.source().expect("the error");
        assert_eq!(source.to_string(), "connection reset");
        assert!(Receipt::of_error(&*error).is_some());
        let mut refused = Receipt::default();
        refused.push(Attempt::new(
            RouteId::new("b"),
            Some(Code::CircuitOpen),
            Duration::ZERO,
        ));
        let error = refused.attach("not ready".into());
        assert_eq!(error.to_string(), "failed before any call was sent");
    }

    #[test]
    fn routes_keep_first_use_order_without_repeats() {
        let mut receipt = Receipt::default();
        let a = RouteId::new("a");
        let b = RouteId::new("b");
        receipt.push(Attempt::new(a.clone(), Some(Code::Timeout), Duration::ZERO));
        receipt.push(Attempt::new(
            a.clone(),
            Some(Code::Timeout),
            Duration::from_millis(250),
        ));
        let mut fallback = Receipt::default();
        fallback.push(Attempt::new(b.clone(), None, Duration::ZERO));
        fallback.stop = Some(StopReason::Succeeded);
        fallback.fallback = true;
        receipt.append(fallback);
        assert_eq!(receipt.routes(), vec![&a, &b]);
        let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
        assert_eq!(codes, [Some(Code::Timeout), Some(Code::Timeout), None]);
        assert_eq!(receipt.attempts.len(), 3);
        assert_eq!(receipt.stop, Some(StopReason::Succeeded));
        assert!(receipt.fallback);
    }
}
