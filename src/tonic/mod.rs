//! tonic interop: seawall's verdict as the `tonic::Status` a generated
//! client returns, with the server's own code.
//!
//! # The story
//!
//! A tonic client turns its service's errors into a [`tonic::Status`]:
//! a `Status` it finds in the error is used as it is; anything else it
//! does not recognise becomes `Unknown`. Every failure of a seawall stack
//! is a [`Failure`], which tonic does not know, so without this layer a
//! server's `NOT_FOUND`, `INVALID_ARGUMENT` or `UNAVAILABLE` reaches the
//! caller as `Unknown`, and code that matches on `status.code()` stops
//! working the day seawall goes in.
//!
//! [`GrpcStatusLayer`] goes outermost, just under the generated client,
//! and makes every error that carries a [`Failure`] — the service's, and a
//! streamed body's after messages — a `tonic::Status`:
//!
//! - **code**: the `grpc-status` the server sent, when the failure came
//!   from one (a stream interrupted by a status after messages keeps its
//!   cause's code); else what tonic itself says of a non-gRPC HTTP answer
//!   (the gRPC HTTP-to-status table: 401 `Unauthenticated`, 403
//!   `PermissionDenied`, 404 `Unimplemented`, 429/502/503/504
//!   `Unavailable`, 400 `Internal`, any other `Unknown`); else what
//!   tonic says of an HTTP/2 stream reset (RST_STREAM), by its reason, as
//!   the gRPC spec's table has it (`INTERNAL_ERROR`, `PROTOCOL_ERROR` and
//!   the other protocol faults `Internal`, `CANCEL` `Cancelled`,
//!   `ENHANCE_YOUR_CALM` `ResourceExhausted`, `INADEQUATE_SECURITY`
//!   `PermissionDenied`, `REFUSED_STREAM` `Unavailable`); else seawall's
//!   own verdict, by [`code_of`]: a deadline or timeout
//!   `DeadlineExceeded`, a lost connection, an open breaker, a route
//!   cooling after an overload or an outage, or a spent retry budget
//!   `Unavailable`, a broken or empty answer `Internal`, a rate limit,
//!   quota or size cap `ResourceExhausted`. A route cooling after a rate
//!   limit, a quota wall or rejected credentials answers as what cooled it
//!   ([`Failure::cooled_by`]: `ResourceExhausted`, `Unauthenticated`), as
//!   the call that met it did: `Unavailable` would tell the caller to
//!   retry a wall.
//!   Once a message reached the caller, seawall's reading is never
//!   `Unavailable` (gRPC's "safe to retry": a caller's own retry would
//!   replay a delivered stream) but `Unknown`, what tonic says of a stream
//!   cut without a status; a server's own `UNAVAILABLE` is its word, kept;
//! - **message**: the server's `grpc-message` (a bounded excerpt, as
//!   [`Failure::message`]; after messages, without the cause's code
//!   seawall's interruption leads it with), else seawall's description of
//!   the failure;
//! - **details**: the server's `grpc-status-details-bin` as it sent them
//!   ([`Failure::status_details`]), so `tonic-types`' `ErrorDetails` read
//!   as without seawall;
//! - **metadata**: the rest of the server's trailers (of its head, for a
//!   trailers-only answer), as tonic keeps them — request ids,
//!   `grpc-retry-pushback-ms` — up to a bound
//!   ([`Failure::status_metadata`]). Where the server sent no
//!   `grpc-retry-pushback-ms` and a transient failure before any message
//!   carries a wait ([`Failure::retry_after`]: a rate limit's hint, a
//!   cooling route's time left), the wait is written there, in
//!   milliseconds: gRPC's server pushback (gRFC A6), which a gRPC client
//!   with a retry policy (grpc-go, grpc-java) reads from a trailers-only
//!   answer and waits for instead of its backoff — the answer a tonic
//!   server sends when it returns the status. A permanent failure (a
//!   quota wall, a route cooling after one) gets none: a client would
//!   wait its hours out to its deadline;
//! - **source**: the original error, under a wrapper that prints only
//!   the code and the route (tonic's `Display` of a status prints its
//!   source's `Debug`: a whole `Failure`, receipt and all, repeated the
//!   message and grew with every attempt), so [`Failure::find`] on
//!   `status.source()` still gives seawall's whole verdict (class, code,
//!   receipt, what an interrupted stream had delivered).
//!
//! Errors without a `Failure` (none of seawall's layers made them) are
//! passed on untouched: tonic maps them itself, as it would without
//! seawall.
//!
//! A tonic *server* with seawall layers of its own (a `DeadlineLayer`
//! reading the caller's `grpc-timeout`) wants it too, outside them
//! (`Server::builder().layer(GrpcStatusLayer::server()).layer(..)`): a
//! tonic server resets the stream of an error that is not a `Status`, and
//! hyper resets a stream whose body fails, either of which its caller
//! reads as `INTERNAL`. Through the layer, a bound that fires is a
//! `DEADLINE_EXCEEDED` status: before the response, the status tonic
//! answers with; in a streamed body after messages, the body's trailers.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use http::Request;
//! use seawall::classify::ClassifyLayer;
//! use seawall::core::recording::ReplayBody;
//! use seawall::stack::Stack;
//! use seawall::tonic::GrpcStatusLayer;
//! use tower::{Layer, ServiceBuilder};
//!
//! let channel = tonic::transport::Channel::from_static("http://[::1]:50051")
//!     .connect()
//!     .await?;
//! let stack = Stack::interactive().build(
//!     &ClassifyLayer::grpc(),
//!     ServiceBuilder::new()
//!         .map_request(|r: Request<ReplayBody<tonic::body::Body>>| r.map(tonic::body::Body::new))
//!         .service(channel),
//! );
//! let service = GrpcStatusLayer::new().layer(stack);
//! // let mut client = HealthClient::new(service);
//! # let _ = service;
//! # Ok(())
//! # }
//! ```

mod body;
mod layer;
mod service;

pub use body::StatusBody;
pub use layer::GrpcStatusLayer;
pub use service::{GrpcStatus, ResponseFuture};

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use ::tonic::Code as GrpcCode;
use ::tonic::metadata::MetadataMap;
use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{BoxError, Class, Code, Failure};

/// `error` as a boxed `tonic::Status` when it carries a [`Failure`]
/// (see the [module docs](self)), else untouched.
pub fn into_status(error: BoxError) -> BoxError {
    match status_of(&*error) {
        Some(mut status) => {
            status.set_source(Arc::new(Verdict(error)));
            Box::new(status)
        }
        None => error,
    }
}

/// A status's source: the error it was made of, printed short. tonic's
/// `Display` of a status writes its source's `Debug`; a `Failure`'s is
/// every field, its receipt's attempts included, which repeats the
/// status's message and grows with each attempt. `source()` is the error
/// itself, so [`Failure::find`] on `status.source()` reaches the verdict.
struct Verdict(BoxError);

impl Verdict {
    /// The failure in the wrapped error (there is one: [`into_status`]
    /// wraps no other).
    fn failure(&self) -> Option<&Failure> {
        Failure::find(&*self.0)
    }
}

impl fmt::Debug for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.failure() {
            Some(failure) => {
                write!(f, "seawall({}", failure.code())?;
                if let Some(route) = failure.route() {
                    write!(f, ", route {route}")?;
                }
                f.write_str(")")
            }
            None => f.write_str("seawall"),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl StdError for Verdict {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0)
    }
}

/// The `tonic::Status` the first [`Failure`] in `error`'s source chain
/// amounts to (without a source: [`into_status`] sets it), or `None` when
/// there is none.
pub fn status_of(error: &(dyn StdError + 'static)) -> Option<::tonic::Status> {
    let failure = Failure::find(error)?;
    let (code, sent) = match sent_code(failure) {
        Some(code) => (code, true),
        None => (code_of(failure), false),
    };
    let message = match sent_message(failure) {
        Some(message) if sent => message.to_owned(),
        _ => failure.to_string(),
    };
    let details = failure
        .status_details()
        .map_or_else(bytes::Bytes::new, bytes::Bytes::copy_from_slice);
    let mut metadata = failure
        .status_metadata()
        .map(|map| MetadataMap::from_headers(map.clone()))
        .unwrap_or_default();
    if let Some(pushback) = pushback_of(failure)
        && !metadata.contains_key(PUSHBACK)
    {
        metadata.insert(PUSHBACK, pushback.into());
    }
    Some(::tonic::Status::with_details_and_metadata(
        code, message, details, metadata,
    ))
}

/// gRPC's server pushback (gRFC A6): the milliseconds a client's own
/// retry policy waits before its next attempt, read from a trailers-only
/// answer's trailers.
const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// The pushback `failure`'s wait amounts to: its `retry_after` in
/// milliseconds, for a transient failure before any content. None for a
/// permanent one (a quota wall's hours would have a client with a retry
/// policy sleep to its deadline), after content (no retry is valid once
/// the answer began), or for a hint at the clamp ("a week or more" names
/// no return).
fn pushback_of(failure: &Failure) -> Option<i32> {
    let wait = failure.retry_after()?;
    let before_content =
        failure.interrupted().is_none() && failure.code() != Code::StreamInterrupted;
    (failure.class() == Class::Transient && before_content && wait < MAX_RETRY_HINT)
        // A6's value is a signed 32-bit count; past it, read as "do not
        // retry". A week fits.
        .then(|| i32::try_from(wait.as_millis()).unwrap_or(i32::MAX))
}

/// The gRPC code a server sent, when `failure` came from a `grpc-status`
/// (seawall keeps it as the provider code; an interruption keeps its
/// cause's).
fn sent_code(failure: &Failure) -> Option<GrpcCode> {
    let code: i32 = failure.provider_code()?.parse().ok()?;
    (1..=16).contains(&code).then(|| GrpcCode::from_i32(code))
}

/// The `grpc-message` a server sent with `failure`'s status: its message,
/// but for a stream interrupted by a status after messages, whose message
/// leads its cause's with the cause's code ([`Failure::interrupted_by`]),
/// the cause's alone (none when the server sent none).
fn sent_message(failure: &Failure) -> Option<&str> {
    let message = failure.message()?;
    if failure.code() != Code::StreamInterrupted {
        return Some(message);
    }
    let is_code = |word: &str| word.parse::<Code>().is_ok();
    match message.split_once(": ") {
        Some((cause, said)) if is_code(cause) => Some(said),
        None if is_code(message) => None,
        _ => Some(message),
    }
}

/// The gRPC code of `failure` when no server sent one: tonic's own reading
/// of a non-gRPC HTTP answer's status where there was one, else tonic's
/// reading of the HTTP/2 stream reset that broke a transport failure, else
/// seawall's code (an interruption's by its cause). After content never
/// `Unavailable`: `Unknown` instead (see the [module docs](self)).
pub fn code_of(failure: &Failure) -> GrpcCode {
    match failure.status() {
        Some(200) | None => {}
        Some(401) => return GrpcCode::Unauthenticated,
        Some(403) => return GrpcCode::PermissionDenied,
        Some(404) => return GrpcCode::Unimplemented,
        Some(429 | 502 | 503 | 504) => return GrpcCode::Unavailable,
        Some(400) => return GrpcCode::Internal,
        Some(_) => return GrpcCode::Unknown,
    }
    let delivered = failure.interrupted().is_some() || failure.code() == Code::StreamInterrupted;
    let code = match (failure.code(), failure.interrupted()) {
        (Code::StreamInterrupted, Some(interrupted)) => {
            interrupted.cause.unwrap_or(Code::StreamInterrupted)
        }
        (Code::RouteCoolingDown, _) => cooled_as(failure),
        (code, _) => code,
    };
    let grpc = match code {
        Code::Transport => failure
            .stream_reset()
            .and_then(reset_code)
            .unwrap_or_else(|| by_code(code)),
        code => by_code(code),
    };
    match grpc {
        // The server processed the call (it answered): no reading of
        // seawall's says a retry is safe. A REFUSED_STREAM after messages
        // is no refusal either.
        GrpcCode::Unavailable if delivered => GrpcCode::Unknown,
        grpc => grpc,
    }
}

/// What a route cooling down answers as: what cooled it, when that is a
/// rate limit or something a wait does not cure (a quota wall, rejected
/// credentials). The call that met it answered `RESOURCE_EXHAUSTED` or
/// `UNAUTHENTICATED`; the next one, refused here, answering `UNAVAILABLE`
/// (gRPC's "retry with a backoff") would have a caller retry a wall. A
/// cooling after an overload or an outage stays a refusal: `Unavailable`.
fn cooled_as(failure: &Failure) -> Code {
    match failure.cooled_by() {
        Some(cause @ Code::RateLimited) => cause,
        Some(cause) if cause.default_class() != Class::Transient && !cause.is_refusal() => cause,
        _ => Code::RouteCoolingDown,
    }
}

/// The code the gRPC spec's RST_STREAM table (PROTOCOL-HTTP2.md,
/// "Errors"), which tonic's own reading of an h2 reset follows, gives an
/// HTTP/2 error code. `STREAM_CLOSED` has no mapping (nor
/// `HTTP_1_1_REQUIRED`, not in the table): seawall's code stands.
fn reset_code(reason: u32) -> Option<GrpcCode> {
    Some(match reason {
        // NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR,
        // SETTINGS_TIMEOUT.
        0..=4 => GrpcCode::Internal,
        // FRAME_SIZE_ERROR.
        6 => GrpcCode::Internal,
        // REFUSED_STREAM: the server took none of it.
        7 => GrpcCode::Unavailable,
        // CANCEL.
        8 => GrpcCode::Cancelled,
        // COMPRESSION_ERROR, CONNECT_ERROR.
        9 | 0xa => GrpcCode::Internal,
        // ENHANCE_YOUR_CALM.
        0xb => GrpcCode::ResourceExhausted,
        // INADEQUATE_SECURITY.
        0xc => GrpcCode::PermissionDenied,
        _ => return None,
    })
}

/// seawall's codes in gRPC's vocabulary.
fn by_code(code: Code) -> GrpcCode {
    match code {
        Code::Cancelled => GrpcCode::Cancelled,
        Code::Timeout | Code::FirstByteTimeout | Code::IdleTimeout | Code::DeadlineExceeded => {
            GrpcCode::DeadlineExceeded
        }
        Code::Transport
        | Code::CircuitOpen
        | Code::RouteCoolingDown
        | Code::BudgetExhausted
        | Code::ProviderUnavailable
        | Code::Overloaded
        | Code::StreamInterrupted => GrpcCode::Unavailable,
        Code::RateLimited | Code::QuotaExhausted | Code::AnswerTooLarge | Code::RequestTooLarge => {
            GrpcCode::ResourceExhausted
        }
        Code::ProtocolViolation | Code::EmptyResponse | Code::Truncated => GrpcCode::Internal,
        Code::Auth => GrpcCode::Unauthenticated,
        Code::NotFound => GrpcCode::NotFound,
        Code::BadRequest | Code::BadArguments | Code::ContextTooLong => GrpcCode::InvalidArgument,
        // No gRPC counterpart: a refusal, a filter, a redirect, unknown.
        _ => GrpcCode::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::{Attempt, Interrupted, Receipt, RouteId};

    fn tonic_status(failure: Failure) -> ::tonic::Status {
        let error: BoxError = Box::new(failure);
        let error = into_status(error);
        *error.downcast::<::tonic::Status>().expect("a tonic status")
    }

    #[test]
    fn a_servers_code_message_and_details_are_its_own() {
        // A NOT_FOUND is seawall's `bad_request` (the request's entity
        // is missing): the caller's code is still the server's.
        let failure = Failure::new(Code::BadRequest)
            .with_status(200)
            .with_provider_code("5")
            .with_message("no such order")
            .with_status_details(&b"\x08\x05"[..])
            .with_status_metadata(
                &[(
                    http::HeaderName::from_static("x-request-id"),
                    http::HeaderValue::from_static("r-1"),
                )]
                .into_iter()
                .collect(),
            );
        let status = tonic_status(failure);
        assert_eq!(status.code(), GrpcCode::NotFound);
        assert_eq!(status.message(), "no such order");
        assert_eq!(status.details(), b"\x08\x05");
        assert_eq!(
            status
                .metadata()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok()),
            Some("r-1")
        );
        let source = std::error::Error::source(&status).expect("the original error");
        assert_eq!(
            Failure::find(source).map(Failure::code),
            Some(Code::BadRequest)
        );
    }

    #[test]
    fn an_interruption_keeps_its_causes_code() {
        let cause = Failure::new(Code::ProviderUnavailable)
            .with_provider_code("14")
            .with_message("lost the leader");
        let status = tonic_status(Failure::interrupted_by(&cause));
        assert_eq!(status.code(), GrpcCode::Unavailable);
        assert_eq!(status.message(), "lost the leader", "the server's words");
        // Sent without a grpc-message: seawall's description, as before
        // messages.
        let silent =
            after_content(&Failure::new(Code::ProviderUnavailable).with_provider_code("14"));
        assert_eq!(tonic_status(silent.clone()).message(), silent.to_string());

        let mut delivered = Interrupted::default();
        delivered.cause = Some(Code::IdleTimeout);
        let idle = Failure::new(Code::StreamInterrupted).with_interrupted(delivered);
        assert_eq!(tonic_status(idle).code(), GrpcCode::DeadlineExceeded);
    }

    #[test]
    fn without_a_grpc_status_the_http_status_then_seawalls_code_decide() {
        for (http, code) in [
            (401, GrpcCode::Unauthenticated),
            (403, GrpcCode::PermissionDenied),
            (404, GrpcCode::Unimplemented),
            (429, GrpcCode::Unavailable),
            (503, GrpcCode::Unavailable),
            (400, GrpcCode::Internal),
            (500, GrpcCode::Unknown),
        ] {
            let failure = Failure::new(Code::ProviderUnavailable).with_status(http);
            assert_eq!(code_of(&failure), code, "{http}");
        }
        for (seawall, code) in [
            (Code::DeadlineExceeded, GrpcCode::DeadlineExceeded),
            (Code::CircuitOpen, GrpcCode::Unavailable),
            (Code::Transport, GrpcCode::Unavailable),
            (Code::Truncated, GrpcCode::Internal),
            (Code::Cancelled, GrpcCode::Cancelled),
            (Code::Refused, GrpcCode::Unknown),
        ] {
            let failure = Failure::new(seawall);
            assert_eq!(code_of(&failure), code, "{seawall}");
            assert_eq!(tonic_status(failure.clone()).message(), failure.to_string());
        }
        // A provider code that is no gRPC code is not taken for one.
        let failure = Failure::new(Code::RateLimited).with_provider_code("429");
        assert_eq!(tonic_status(failure).code(), GrpcCode::ResourceExhausted);
    }

    /// A transport failure as seawall reads an h2 reset of `reason`.
    fn reset(reason: u32) -> Failure {
        Failure::new(Code::Transport).with_stream_reset(reason)
    }

    /// `cause` after a message reached the caller.
    fn after_content(cause: &Failure) -> Failure {
        let mut delivered = Interrupted::default();
        delivered.content_events = 1;
        delivered.cause = Some(cause.code());
        Failure::interrupted_by(cause)
            .with_status(200)
            .with_interrupted(delivered)
    }

    #[test]
    fn a_reset_has_the_code_the_spec_table_gives_its_reason() {
        // h2's reasons by number (RFC 9113, 7), as the spec's table reads them.
        let table = [
            (0x0, GrpcCode::Internal),
            (0x1, GrpcCode::Internal),
            (0x2, GrpcCode::Internal),
            (0x3, GrpcCode::Internal),
            (0x4, GrpcCode::Internal),
            (0x6, GrpcCode::Internal),
            (0x7, GrpcCode::Unavailable),
            (0x8, GrpcCode::Cancelled),
            (0x9, GrpcCode::Internal),
            (0xa, GrpcCode::Internal),
            (0xb, GrpcCode::ResourceExhausted),
            (0xc, GrpcCode::PermissionDenied),
        ];
        for (reason, code) in table {
            assert_eq!(code_of(&reset(reason)), code, "{reason:#x}");
        }
        // seawall's verdict stays the source, its code untouched.
        let status = tonic_status(reset(0xb));
        assert_eq!(status.code(), GrpcCode::ResourceExhausted);
        let source = std::error::Error::source(&status).expect("the original error");
        assert_eq!(
            Failure::find(source).map(Failure::code),
            Some(Code::Transport)
        );
    }

    #[test]
    fn no_reset_or_one_the_table_does_not_map_leaves_seawalls_code() {
        // STREAM_CLOSED and HTTP_1_1_REQUIRED: no mapping; no reset at all.
        for failure in [reset(0x5), reset(0xd), Failure::new(Code::Transport)] {
            assert_eq!(code_of(&failure), GrpcCode::Unavailable, "{failure}");
        }
        // A reset kept on a failure that is no transport failure is not read.
        let failure = Failure::new(Code::Timeout).with_stream_reset(0x8);
        assert_eq!(code_of(&failure), GrpcCode::DeadlineExceeded);
    }

    #[test]
    fn after_content_seawalls_reading_is_never_unavailable() {
        let internal = after_content(&reset(0x2));
        assert_eq!(code_of(&internal), GrpcCode::Internal);
        let cancel = after_content(&reset(0x8));
        assert_eq!(code_of(&cancel), GrpcCode::Cancelled);
        // A refusal after messages is none; a lost connection, an
        // interruption without a cause: a retry is not known to be safe.
        let refused = after_content(&reset(0x7));
        assert_eq!(code_of(&refused), GrpcCode::Unknown);
        let lost = Failure::new(Code::Transport).with_message("stream closed: broken pipe");
        assert_eq!(code_of(&lost), GrpcCode::Unavailable, "before content");
        assert_eq!(code_of(&after_content(&lost)), GrpcCode::Unknown);
        let mut delivered = Interrupted::default();
        delivered.content_events = 1;
        let no_cause = Failure::new(Code::StreamInterrupted).with_interrupted(delivered);
        assert_eq!(code_of(&no_cause), GrpcCode::Unknown);
        // A server's own UNAVAILABLE after messages is its word.
        let sent = Failure::new(Code::ProviderUnavailable).with_provider_code("14");
        let status = tonic_status(after_content(&sent));
        assert_eq!(status.code(), GrpcCode::Unavailable);
    }

    /// A 429 after `attempts` attempts, each on the receipt.
    fn rate_limited_after(attempts: usize) -> Failure {
        let failure = Failure::new(Code::RateLimited)
            .with_status(429)
            .with_route(RouteId::new("api.example"))
            .with_retry_after(std::time::Duration::from_secs(2))
            .with_message("slow down");
        let mut receipt = Receipt::default();
        for _ in 0..attempts {
            receipt.push(Attempt::failed(
                RouteId::new("api.example"),
                std::time::Duration::from_millis(10),
                &failure,
            ));
        }
        failure.with_receipt(receipt)
    }

    #[test]
    fn a_statuss_text_is_short_and_its_source_still_the_verdict() {
        let one = tonic_status(rate_limited_after(1)).to_string();
        let status = tonic_status(rate_limited_after(3));
        let three = status.to_string();
        assert!(!three.contains("Receipt"), "{three}");
        assert_eq!(three.len(), one.len(), "no longer per attempt: {three}");
        assert_eq!(
            three.matches("slow down").count(),
            1,
            "the message once: {three}"
        );
        assert!(three.contains("rate_limited"), "{three}");
        assert!(three.len() < 200, "{} bytes: {three}", three.len());
        let source = std::error::Error::source(&status).expect("the original error");
        let failure = Failure::find(source).expect("seawall's verdict under the wrapper");
        assert_eq!(failure.receipt().map(Receipt::calls), Some(3));
        assert_eq!(failure.route().map(RouteId::as_str), Some("api.example"));
    }

    fn pushback(failure: Failure) -> Option<String> {
        let status = tonic_status(failure);
        let value = status.metadata().get(PUSHBACK)?;
        Some(value.to_str().expect("ascii").to_owned())
    }

    #[test]
    fn a_transient_wait_is_a_pushback_a_permanent_one_none() {
        assert_eq!(pushback(rate_limited_after(1)).as_deref(), Some("2000"));
        let cooling = Failure::route_refusal(Some(Code::RateLimited))
            .with_retry_after(std::time::Duration::from_millis(750));
        assert_eq!(pushback(cooling).as_deref(), Some("750"));
        // The server's own pushback is its word.
        let said = Failure::new(Code::RateLimited)
            .with_retry_after(std::time::Duration::from_secs(2))
            .with_status_metadata(
                &[(
                    http::HeaderName::from_static(PUSHBACK),
                    http::HeaderValue::from_static("50"),
                )]
                .into_iter()
                .collect(),
            );
        assert_eq!(pushback(said).as_deref(), Some("50"));
        let hours = std::time::Duration::from_secs(5 * 3600);
        for none in [
            // A wall, met or remembered: nothing to wait out.
            Failure::new(Code::QuotaExhausted).with_retry_after(hours),
            Failure::route_refusal(Some(Code::QuotaExhausted)).with_retry_after(hours),
            // After content no retry is valid, whatever wait it carries
            // (an interruption keeps none of its cause's: given here, so
            // the case is refused for being after content, not waitless).
            after_content(&rate_limited_after(1))
                .with_retry_after(std::time::Duration::from_secs(2)),
            // A hint at the clamp names no return.
            Failure::new(Code::RateLimited).with_retry_after(MAX_RETRY_HINT),
            // No wait, no pushback.
            Failure::new(Code::Overloaded),
        ] {
            let shown = none.to_string();
            assert_eq!(pushback(none), None, "{shown}");
        }
    }

    #[test]
    fn a_cooling_route_answers_as_what_cooled_it() {
        for (cause, code) in [
            (Code::QuotaExhausted, GrpcCode::ResourceExhausted),
            (Code::RateLimited, GrpcCode::ResourceExhausted),
            (Code::Auth, GrpcCode::Unauthenticated),
            (Code::Overloaded, GrpcCode::Unavailable),
            (Code::ProviderUnavailable, GrpcCode::Unavailable),
        ] {
            let refusal = Failure::route_refusal(Some(cause));
            assert_eq!(refusal.code(), Code::RouteCoolingDown);
            assert_eq!(code_of(&refusal), code, "{cause}");
        }
        // A registry's word for a route shut, with no cause: a refusal.
        assert_eq!(
            code_of(&Failure::route_refusal(None)),
            GrpcCode::Unavailable
        );
        assert_eq!(
            code_of(&Failure::new(Code::RouteCoolingDown)),
            GrpcCode::Unavailable
        );
    }

    #[test]
    fn an_error_without_a_failure_is_left_to_tonic() {
        let error: BoxError = "connection refused".into();
        let error = into_status(error);
        assert!(error.downcast_ref::<::tonic::Status>().is_none());
        assert_eq!(error.to_string(), "connection refused");
    }
}
