//! The `Classifier` trait: what a response or an error means.

use std::error::Error as StdError;

use http::response::Parts;
use seawall_core::provider::{ErrorContext, QuotaWall};
use seawall_core::{Failure, Finish, RequestFacts, Usage};

/// Decides what responses and errors mean. [`ClassifyLayer`] calls it; the
/// built-in [`ProviderClassifier`] implements it for each provider, and users
/// implement it for their own services.
///
/// Every method has a default that knows nothing, so a classifier only
/// writes the rules it has. What nobody recognises, the layer settles
/// itself: a non-2xx response by the generic HTTP status table, an error by
/// the transport rules and then as `unknown`.
///
/// [`ClassifyLayer`]: crate::ClassifyLayer
/// [`ProviderClassifier`]: crate::ProviderClassifier
pub trait Classifier {
    /// Classifies a non-2xx response from its head and the first bytes of
    /// its body (at most the layer's `max_error_body`; the body may be
    /// empty, cut short or not UTF-8). `cx` carries the status, the retry
    /// hint of the headers, the quota wall and the clock. `None` means "not
    /// mine": the next rules, then the generic status table, decide.
    fn classify_response(&self, parts: &Parts, body: &[u8], cx: ErrorContext) -> Option<Failure> {
        let _ = (parts, body, cx);
        None
    }

    /// [`classify_response`](Self::classify_response), told what the
    /// request was ([`RequestFacts`]): the layer calls this one. One client
    /// may call more than one wire (Gemini and Claude on one Vertex AI
    /// host, a gateway serving OpenAI's and Anthropic's side by side), and
    /// an error's body is in the wire its path names. By default the
    /// facts are not read.
    fn classify_response_for(
        &self,
        parts: &Parts,
        body: &[u8],
        cx: ErrorContext,
        facts: &RequestFacts,
    ) -> Option<Failure> {
        let _ = facts;
        self.classify_response(parts, body, cx)
    }

    /// Looks at the head of a 2xx response. Called on every success, so it
    /// must be cheap: a header lookup or two. `cx` says what the request
    /// asked for and the quota wall.
    fn inspect_success(&self, parts: &Parts, cx: &SuccessContext<'_>) -> Inspection {
        let _ = (parts, cx);
        Inspection::Deliver
    }

    /// Checks a whole 2xx body that [`inspect_success`] asked to read.
    ///
    /// [`inspect_success`]: Classifier::inspect_success
    fn check_success(&self, parts: &Parts, body: &[u8], cx: &SuccessContext<'_>) -> Checked {
        let _ = (parts, body, cx);
        Checked::Deliver(None)
    }

    /// Classifies an error of the inner service or of a body read. `None`
    /// leaves it to the layer's transport rules.
    fn classify_error(&self, error: &(dyn StdError + 'static)) -> Option<Failure> {
        let _ = error;
        None
    }
}

/// What a classifier knows when it looks at a 2xx answer besides the
/// answer: what the request asked for and the quota wall.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SuccessContext<'a> {
    /// What the request asked for: the provider whose generation endpoint
    /// it called, whether it asked for a stream.
    pub facts: &'a RequestFacts,
    /// The quota-wall threshold of the layer.
    pub quota_wall: QuotaWall,
    /// A refusal or filter declared in a whole answer is that answer, not
    /// a failure ([`ClassifyLayer::deliver_policy_outcomes`](crate::ClassifyLayer::deliver_policy_outcomes)).
    pub deliver_policy: bool,
}

impl<'a> SuccessContext<'a> {
    /// A context for `facts` with the default quota wall.
    pub fn new(facts: &'a RequestFacts) -> Self {
        SuccessContext {
            facts,
            quota_wall: QuotaWall::default(),
            deliver_policy: false,
        }
    }

    /// This context with policy outcomes delivered as answers, or not.
    pub fn with_deliver_policy(mut self, deliver: bool) -> Self {
        self.deliver_policy = deliver;
        self
    }

    /// This context with `quota_wall`.
    pub fn with_quota_wall(mut self, quota_wall: QuotaWall) -> Self {
        self.quota_wall = quota_wall;
        self
    }
}

/// What the head of a 2xx response calls for.
#[derive(Debug)]
#[non_exhaustive]
pub enum Inspection {
    /// Deliver the response untouched; its body is never polled here,
    /// only held to its `content-length` as the caller reads it (an end
    /// short of it is `truncated`).
    Deliver,
    /// Read the body (up to the layer's `max_success_body`) and pass it to
    /// [`Classifier::check_success`].
    CheckBody,
    /// The head alone is a failure, e.g. a trailers-only gRPC error.
    Fail(Failure),
    /// The outcome is in the trailers (gRPC's `grpc-status`): wait for the
    /// body's first whole message (a first message longer than tonic's
    /// default 4 MiB limit goes on at its prefix). Trailers first (no
    /// message, or inside the first one) are read as the
    /// call's status and a failure fails the response future, while outer
    /// layers may still retry; a message first resolves it, and a failed
    /// status in the trailers after messages ends the body with an
    /// interruption carrying what was delivered.
    AwaitTrailers,
}

/// What a checked 2xx body amounts to.
#[derive(Debug)]
#[non_exhaustive]
pub enum Checked {
    /// Deliver it, with the finish reason it declared (put in the response
    /// extensions), if any.
    Deliver(Option<Finish>),
    /// Deliver it, with what the answer said of itself: its finish reason
    /// and the provider's token usage (each put in the response extensions
    /// when present).
    Answer {
        /// The finish reason the answer declared.
        finish: Option<Finish>,
        /// The usage the answer reported.
        usage: Option<Usage>,
    },
    /// The failure a "successful" body amounts to: empty, refused, filtered.
    Fail(Failure),
}

impl Checked {
    /// What a delivered answer said of itself (finish, usage), or the
    /// failure it amounts to.
    pub fn delivered(self) -> Result<(Option<Finish>, Option<Usage>), Box<Failure>> {
        match self {
            Checked::Deliver(finish) => Ok((finish, None)),
            Checked::Answer { finish, usage } => Ok((finish, usage)),
            Checked::Fail(failure) => Err(Box::new(failure)),
        }
    }
}

/// Rules put in front of a classifier: built by
/// [`ClassifyLayer::with_rules`](crate::ClassifyLayer::with_rules).
///
/// For every question the rules answer first; where they answer `None`
/// (or `Deliver`) the defaults behind them decide.
#[derive(Debug, Clone)]
pub struct WithRules<R, C> {
    rules: R,
    defaults: C,
}

impl<R, C> WithRules<R, C> {
    /// `rules` in front of `defaults`.
    pub fn new(rules: R, defaults: C) -> Self {
        WithRules { rules, defaults }
    }
}

impl<R: Classifier, C: Classifier> Classifier for WithRules<R, C> {
    fn classify_response(&self, parts: &Parts, body: &[u8], cx: ErrorContext) -> Option<Failure> {
        self.rules
            .classify_response(parts, body, cx)
            .or_else(|| self.defaults.classify_response(parts, body, cx))
    }

    fn classify_response_for(
        &self,
        parts: &Parts,
        body: &[u8],
        cx: ErrorContext,
        facts: &RequestFacts,
    ) -> Option<Failure> {
        self.rules
            .classify_response_for(parts, body, cx, facts)
            .or_else(|| self.defaults.classify_response_for(parts, body, cx, facts))
    }

    fn inspect_success(&self, parts: &Parts, cx: &SuccessContext<'_>) -> Inspection {
        match self.rules.inspect_success(parts, cx) {
            Inspection::Deliver => self.defaults.inspect_success(parts, cx),
            Inspection::CheckBody => match self.defaults.inspect_success(parts, cx) {
                fail @ Inspection::Fail(_) => fail,
                _ => Inspection::CheckBody,
            },
            fail @ Inspection::Fail(_) => fail,
            Inspection::AwaitTrailers => match self.defaults.inspect_success(parts, cx) {
                fail @ Inspection::Fail(_) => fail,
                _ => Inspection::AwaitTrailers,
            },
        }
    }

    fn check_success(&self, parts: &Parts, body: &[u8], cx: &SuccessContext<'_>) -> Checked {
        // The body is read when either side asks; each side checks only the
        // bodies it asked for (a provider's JSON check must not judge the
        // plain-text body a user's rule wanted). The quota wall only shapes a
        // refusal, never whether a side asks.
        let asks = |side: &dyn Classifier| {
            matches!(side.inspect_success(parts, cx), Inspection::CheckBody)
        };
        let (finish, usage) = if asks(&self.rules) {
            match self.rules.check_success(parts, body, cx).delivered() {
                Ok(said) => said,
                Err(failure) => return Checked::Fail(*failure),
            }
        } else {
            (None, None)
        };
        if !asks(&self.defaults) {
            return Checked::Answer { finish, usage };
        }
        match self.defaults.check_success(parts, body, cx).delivered() {
            Ok((second, second_usage)) => Checked::Answer {
                finish: finish.or(second),
                usage: usage.or(second_usage),
            },
            Err(failure) => Checked::Fail(*failure),
        }
    }

    fn classify_error(&self, error: &(dyn StdError + 'static)) -> Option<Failure> {
        self.rules
            .classify_error(error)
            .or_else(|| self.defaults.classify_error(error))
    }
}

/// A classifier made of one closure over non-2xx responses: see
/// [`response_rule`].
#[derive(Debug, Clone, Copy)]
pub struct ResponseRule<F>(F);

/// Wraps a closure as a [`Classifier`] that only classifies non-2xx
/// responses, the usual shape of a user rule.
///
/// ```
/// use seawall_classify::{ClassifyLayer, response_rule};
/// use seawall_core::{Class, Code, Failure};
///
/// // A gateway that says "try later" with a 400 and a marker header.
/// let layer = ClassifyLayer::openai().with_rules(response_rule(|parts, _body, _cx| {
///     parts
///         .headers
///         .contains_key("x-gateway-busy")
///         .then(|| Failure::with_class(Class::Transient, Code::Overloaded))
/// }));
/// # let _ = layer;
/// ```
pub fn response_rule<F>(rule: F) -> ResponseRule<F>
where
    F: Fn(&Parts, &[u8], ErrorContext) -> Option<Failure>,
{
    ResponseRule(rule)
}

impl<F> Classifier for ResponseRule<F>
where
    F: Fn(&Parts, &[u8], ErrorContext) -> Option<Failure>,
{
    fn classify_response(&self, parts: &Parts, body: &[u8], cx: ErrorContext) -> Option<Failure> {
        (self.0)(parts, body, cx)
    }
}
