use std::time::Duration;

use http::HeaderName;
use tower_layer::Layer;

use crate::{DeadlineService, WireTimeout};

/// Sets the operation's deadline, or bounds one attempt inside it.
///
/// See the [crate docs](crate) for what fails and how.
#[derive(Debug, Clone)]
pub struct DeadlineLayer {
    pub(crate) config: Config,
}

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) bound: Bound,
    /// Where to write the remaining time for the next hop.
    pub(crate) propagate: Option<WireTimeout>,
    /// A header to rewrite with the remaining time where a request
    /// already carries it.
    pub(crate) refresh: Option<WireTimeout>,
    /// Where to read the caller's remaining time from.
    pub(crate) incoming: Option<WireTimeout>,
    /// A total bound leaves the operation's deadline for the attempts'
    /// wire ([`DeadlineLayer::carry_to_attempts`]).
    pub(crate) carry: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Bound {
    /// The operation's deadline (`None`: only what is already in the
    /// extensions or read from the wire). Bounds the body too.
    Total(Option<Duration>),
    /// One attempt's bound, inside the operation's deadline.
    PerAttempt(Duration),
}

impl DeadlineLayer {
    /// The operation must be done within `total`, body included.
    ///
    /// The deadline is computed once, when the request enters the layer,
    /// and stored as a [`seawall_core::Deadline`] in the request extensions;
    /// an earlier deadline already there is kept.
    pub fn new(total: Duration) -> Self {
        DeadlineLayer::with_bound(Bound::Total(Some(total)))
    }

    /// Each attempt must produce its response within `attempt` (and within
    /// the operation's deadline). Place it inside the retry layer.
    ///
    /// When this bound fires first the failure is a transient `timeout`
    /// carrying the attempt's evidence; when the operation's deadline is the
    /// earlier bound, it is `deadline_exceeded`. The response body is not
    /// bounded here (the operation deadline bounds it).
    pub fn per_attempt(attempt: Duration) -> Self {
        DeadlineLayer::with_bound(Bound::PerAttempt(attempt))
    }

    /// Server side: the deadline is whatever the caller sent in `wire`
    /// (malformed or missing: no deadline from this layer). Use
    /// [`DeadlineLayer::read_incoming`] on [`DeadlineLayer::new`] to also
    /// cap it with a bound of our own.
    ///
    /// In a tonic server, put `seawall::tonic::GrpcStatusLayer::server()`
    /// outside it (`Server::builder().layer(GrpcStatusLayer::server()).layer(..)`):
    /// tonic answers an error that is not a `tonic::Status` by resetting
    /// the stream, and so does hyper for an error in a streamed body,
    /// which the caller reads as `INTERNAL`; through that layer the bound's
    /// failure is a `DEADLINE_EXCEEDED` status, before the response or in
    /// the trailers after messages.
    pub fn from_incoming(wire: WireTimeout) -> Self {
        DeadlineLayer::with_bound(Bound::Total(None)).read_incoming(wire)
    }

    /// Also reads the caller's remaining time from `wire`; the earlier of
    /// the two deadlines wins. `wire` may differ from the header this
    /// layer [`propagate`](Self::propagate)s: a caller's bound in that
    /// header is read too.
    pub fn read_incoming(mut self, wire: WireTimeout) -> Self {
        self.config.incoming = Some(wire);
        self
    }

    /// Writes the remaining time on the request as `wire` says: the
    /// operation's. A per-attempt layer writes the time left of the
    /// operation it runs in (what a total bound outside left with
    /// [`carry_to_attempts`](Self::carry_to_attempts), else the `Deadline`
    /// it found), not its own bound, and nothing when it found none: its
    /// bound covers the wait for the answer to begin, where a gRPC
    /// deadline ends the whole call, a stream that began in time
    /// included.
    ///
    /// A well-formed value the request already carries in that header is
    /// the caller's own bound (tonic's `set_timeout`), never lengthened:
    /// it is an operation deadline here too, and the earlier of the two
    /// is written. A total layer reads it as
    /// [`read_incoming`](Self::read_incoming) does; an attempt counts it
    /// from when a total layer outside that carries the operation's
    /// deadline took the request (else from its own start), so a retry
    /// sends what is left of it. A malformed value is replaced.
    pub fn propagate(mut self, wire: WireTimeout) -> Self {
        self.config.propagate = Some(wire);
        self
    }

    /// Where the operation's deadline was read from the caller's own
    /// bound in `wire`'s header (tonic's `set_timeout`, by a total
    /// `DeadlineLayer` outside with [`read_incoming`](Self::read_incoming)),
    /// rewrites that header with the time left; adds it to no request.
    /// Without it, every attempt of a ladder sends the caller's whole
    /// bound again, and the server (and tonic's own timer on the channel)
    /// work on past the operation's end. [`propagate`](Self::propagate)
    /// writes it on every request instead. Like it, never later than the
    /// value the header carries, counted from when the total layer took
    /// the request.
    pub fn refresh(mut self, wire: WireTimeout) -> Self {
        self.config.refresh = Some(wire);
        self
    }

    /// Writes the remaining time as `grpc-timeout` on the request (the
    /// operation's, never later than a caller's own `grpc-timeout`: see
    /// [`propagate`](Self::propagate)).
    pub fn propagate_grpc_timeout(mut self) -> Self {
        self.config.propagate = Some(WireTimeout::Grpc);
        self
    }

    /// A total bound: leaves the operation's deadline in the request for a
    /// per-attempt layer inside that [`propagate`](Self::propagate)s it,
    /// which then writes what is left of the operation, not the
    /// `Deadline` it finds (narrowed by a retry ladder to keep a fallback's
    /// reserve, or to a caller's `AnswerBy`). A total bound that read the
    /// caller's own bound off the wire leaves it anyway. One extension
    /// more a request: off by default.
    ///
    /// The attempts count a caller's own bound in the header they write
    /// from when this layer took the request. This layer does not read
    /// that header unless it propagates it or is told to
    /// ([`read_incoming`](Self::read_incoming)); told, the retry between
    /// plans within the caller's bound too.
    pub fn carry_to_attempts(mut self) -> Self {
        self.config.carry = true;
        self
    }

    /// Writes the remaining time in whole milliseconds, rounded up and at
    /// least 1, into the header `name` (for example
    /// `x-request-timeout-ms`), never later than a caller's own value
    /// there (see [`propagate`](Self::propagate)).
    pub fn propagate_header(mut self, name: HeaderName) -> Self {
        self.config.propagate = Some(WireTimeout::Millis(name));
        self
    }

    fn with_bound(bound: Bound) -> Self {
        DeadlineLayer {
            config: Config {
                bound,
                propagate: None,
                refresh: None,
                incoming: None,
                carry: false,
            },
        }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DeadlineService::new(inner, self.config.clone())
    }
}
