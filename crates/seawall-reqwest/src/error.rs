//! What [`ReqwestService`](crate::ReqwestService) fails with, shaped so the
//! classifier reads it without looking at message text.

use std::error::Error as StdError;
use std::fmt;
use std::io;

use seawall_core::{BoxError, Code, Failure};

/// The error of [`ReqwestService`](crate::ReqwestService) and of its
/// response body.
///
/// Every variant is built so that `ClassifyLayer` (or
/// [`Failure::find`]) reaches the right verdict by walking the source chain:
///
/// - [`Error::Transport`] holds an [`io::Error`] whose kind says what
///   happened (`TimedOut`, `ConnectionRefused`, `ConnectionAborted`, …) and
///   whose [`source`](StdError::source) is reqwest's own error, with
///   hyper's and the socket's errors below it: `transport` or `timeout`, retryable, but for a
///   connection refused alike on every attempt, which the classifier
///   reads in that chain as a permanent `transport` (a proxy that asks for
///   credentials).
/// - [`Error::InvalidRequest`] and [`Error::RequestBody`] carry a permanent
///   [`Failure`] (`bad_request`) in their chain, so no layer retries them
///   whatever its settings for unknown errors: a request reqwest cannot send
///   fails the same way every time, and a body that broke mid-send must not
///   be sent again half-read.
///
/// Each variant's text names only what failed; the rest is in its source
/// chain (the [`Failure`] and its message, or reqwest's error and its
/// causes), which a printer of the whole chain (`anyhow`'s `{:#}`) shows
/// once. A variant that carries a `Failure` keeps reqwest's error, without
/// its URL, as the failure's [`cause`](Failure::cause).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `http::Request` cannot be turned into a request reqwest sends:
    /// a relative URI, a scheme other than `http`/`https`, no host.
    #[error("invalid request")]
    InvalidRequest {
        /// The request's URI, without userinfo or query
        /// ([`ShownUri`](seawall_core::ShownUri)).
        uri: String,
        /// What reqwest said.
        reason: String,
        /// `bad_request`, permanent.
        #[source]
        failure: Failure,
    },
    /// The request body failed while it was being sent, or ended short
    /// of the length its `Content-Length` declared. The attempt is over,
    /// and nothing sends it again.
    #[error("request body failed")]
    RequestBody {
        /// The body's own error, as text (its source chain is not followed:
        /// a body reading a socket may fail with `ConnectionReset`, which
        /// must not read as the route's fault).
        reason: String,
        /// `bad_request`, permanent.
        #[source]
        failure: Failure,
    },
    /// The network or the HTTP exchange failed: connect, reset, timeout, a
    /// response body that broke off.
    ///
    /// The io error's source is reqwest's error (`error sending request`),
    /// the causes below it after it (`client error (Connect)`, `tcp
    /// connect error`, `Connection refused`): the classifier takes a
    /// failure's message from that chain, and a walk by `source` reaches
    /// `reqwest::Error` (`is_connect`, `is_timeout`) and the types below.
    #[error("transport failed")]
    Transport(#[source] io::Error),
    /// The client followed a redirect (a `reqwest::Client` not built by
    /// [`client_builder`](crate::client_builder)): the answer is another
    /// URL's, to another request (a 301/302/303 is followed as a `GET`
    /// without the body). One that ended back at the URL sent leaves no
    /// trace to find (see [`ReqwestService::new`](crate::ReqwestService::new)).
    /// Or its redirect policy stopped one: too many
    /// redirects, a loop, its own rule, a `Location` with a scheme other
    /// than `http`/`https`. `redirected`, permanent, as the classifier
    /// calls a 3xx the client did not follow: the route's answer was a
    /// redirect, not the request's fault.
    #[error("redirected")]
    Redirected {
        /// Where to (where the policy stopped: the URL that answered with
        /// the redirect, or the `Location` it refused), without userinfo or
        /// query.
        to: String,
        /// `redirected`, permanent.
        #[source]
        failure: Failure,
    },
    /// The server's certificate was refused (unknown issuer, expired, not
    /// for this name) or it presented none: a configuration to fix, the
    /// same on every attempt. Its `transport` failure is permanent, so no
    /// ladder retries it (a route set or a fallback may still move on: the
    /// route is at fault) and the breaker does not count it.
    #[error("TLS handshake refused")]
    Tls {
        /// What was refused, from rustls.
        reason: String,
        /// `transport`, permanent.
        #[source]
        failure: Failure,
    },
}

/// The payload of an [`Error::Transport`]'s io error: reqwest's error as
/// its source. `io::Error::source` skips a payload and returns the
/// payload's source, so reqwest's error as the payload itself would be out
/// of reach of a walk by `source`; one level down, it is the next link.
#[derive(Debug)]
struct Sent(reqwest::Error);

impl fmt::Display for Sent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The io error's text, which its source (reqwest's) follows in a
        // chain: only the client's name, not reqwest's words again.
        f.write_str("reqwest")
    }
}

impl StdError for Sent {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

impl Error {
    /// Maps one of reqwest's errors. `uri` names the request in an
    /// [`Error::InvalidRequest`].
    pub(crate) fn from_reqwest(error: reqwest::Error, uri: &dyn fmt::Display) -> Error {
        if let Some(body) = request_body_error(&error) {
            let mapped = Error::request_body(body.0.to_string());
            return mapped.caused_by(error);
        }
        if let Some(stopped) = redirect_stopped(&error, uri) {
            return stopped.caused_by(error);
        }
        // reqwest's own message names the full URL, key and all.
        let error = error.without_url();
        if error.is_builder() {
            return Error::invalid_request(uri, &error).caused_by(error);
        }
        if let Some(failure) = seawall_classify::transport_failure(&error) {
            let reason = || failure.message().unwrap_or_default().to_owned();
            if failure.code() == Code::BadRequest {
                // A body shorter than its Content-Length.
                let mapped = Error::RequestBody {
                    reason: reason(),
                    failure,
                };
                return mapped.caused_by(error);
            }
            if seawall_classify::certificate_refused(&error).is_some() {
                let mapped = Error::Tls {
                    reason: reason(),
                    failure,
                };
                return mapped.caused_by(error);
            }
        }
        Error::Transport(io::Error::new(transport_kind(&error), Sent(error)))
    }

    /// This error, its [`Failure`] keeping `error` (without its URL,
    /// which may carry a key) as the [`cause`](Failure::cause) a caller
    /// downcasts to `reqwest::Error`. Kept out of the source chain, as
    /// `with_cause` keeps it: the classifier does not read a body's own
    /// failure in it as the route's.
    fn caused_by(self, error: reqwest::Error) -> Error {
        let cause = error.without_url();
        match self {
            Error::InvalidRequest {
                uri,
                reason,
                failure,
            } => Error::InvalidRequest {
                uri,
                reason,
                failure: failure.with_cause(cause),
            },
            Error::RequestBody { reason, failure } => Error::RequestBody {
                reason,
                failure: failure.with_cause(cause),
            },
            Error::Redirected { to, failure } => Error::Redirected {
                to,
                failure: failure.with_cause(cause),
            },
            Error::Tls { reason, failure } => Error::Tls {
                reason,
                failure: failure.with_cause(cause),
            },
            transport @ Error::Transport(_) => transport,
        }
    }

    pub(crate) fn invalid_request(uri: &dyn fmt::Display, reason: &dyn fmt::Display) -> Error {
        let uri = uri.to_string();
        let reason = reason.to_string();
        let failure = Failure::new(Code::BadRequest).with_message(&format!(
            "reqwest cannot send a request to `{uri}`: {reason}"
        ));
        Error::InvalidRequest {
            uri,
            reason,
            failure,
        }
    }

    pub(crate) fn redirected(to: &reqwest::Url) -> Error {
        let shown = shown_url(to);
        let message = format!("the client followed a redirect to `{shown}`");
        Error::redirect(shown, &message)
    }

    /// The client's redirect policy stopped at `at`, saying `reason`.
    fn redirect_stopped(at: &reqwest::Url, reason: &str) -> Error {
        let shown = shown_url(at);
        let message = format!("the client's redirect policy stopped at `{shown}`: {reason}");
        Error::redirect(shown, &message)
    }

    fn redirect(to: String, what: &str) -> Error {
        let failure = Failure::new(Code::Redirected).with_message(&format!(
            "{what}; build it with seawall_reqwest::client_builder, which follows none"
        ));
        Error::Redirected { to, failure }
    }

    fn request_body(reason: String) -> Error {
        let failure = Failure::new(Code::BadRequest).with_message(&format!(
            "the request body failed while it was being sent: {reason}"
        ));
        Error::RequestBody { reason, failure }
    }
}

/// `url` without userinfo or query.
fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(url.path());
    shown
}

/// A redirect the client's policy stopped (a `reqwest::Client` that
/// follows them): too many, a loop, its own rule (reqwest's redirect
/// errors), or a `Location` whose scheme reqwest does not follow, which
/// reqwest reports as a builder error naming that URL. Not the request's
/// fault: the request, sent as `http` or `https` (`uri`), was answered
/// with a redirect. A request of another scheme reqwest refused itself
/// stays an [`Error::InvalidRequest`].
fn redirect_stopped(error: &reqwest::Error, uri: &dyn fmt::Display) -> Option<Error> {
    let at = error.url()?;
    let followed = || {
        let sent = uri.to_string();
        let sent_as_http = sent.starts_with("http://") || sent.starts_with("https://");
        sent_as_http && !matches!(at.scheme(), "http" | "https")
    };
    let stopped = error.is_redirect() || (error.is_builder() && followed());
    if !stopped {
        return None;
    }
    // What reqwest said below its phase (`too many redirects`, `URL
    // scheme is not allowed`), else the phase.
    let reason = match StdError::source(error) {
        Some(cause) => cause.to_string(),
        None => error.to_string(),
    };
    Some(Error::redirect_stopped(at, &reason))
}

/// The io kind a reqwest error stands for. `Other` when the chain already
/// holds something the classifier recognises (hyper's errors, io errors),
/// so the chain speaks for itself; otherwise reqwest's own predicates,
/// which see its private error types (its `TimedOut`) that no downcast can.
fn transport_kind(error: &reqwest::Error) -> io::ErrorKind {
    // First: a connect timeout's chain holds hyper-util's connect error,
    // which the chain reads as `transport`, above reqwest's private
    // `TimedOut`, which only reqwest sees. The timeout is what happened.
    if error.is_timeout() {
        io::ErrorKind::TimedOut
    } else if seawall_classify::transport_failure(error).is_some() {
        io::ErrorKind::Other
    } else if error.is_connect() {
        io::ErrorKind::ConnectionRefused
    } else if error.is_request() || error.is_body() {
        io::ErrorKind::ConnectionAborted
    } else {
        io::ErrorKind::Other
    }
}

/// The request body's own failure, found in the chain of the error reqwest
/// (hyper, underneath) returned for the exchange.
fn request_body_error<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a RequestBodyError> {
    let mut current = Some(error);
    for _ in 0..32 {
        let link = current?;
        if let Some(found) = link.downcast_ref::<RequestBodyError>() {
            return Some(found);
        }
        current = link.source();
    }
    None
}

/// Marks an error of the request body on its way through reqwest and hyper.
#[derive(Debug)]
pub(crate) struct RequestBodyError(pub(crate) BoxError);

impl fmt::Display for RequestBodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request body: {}", self.0)
    }
}

// No `source`: see `Error::RequestBody::reason`.
impl StdError for RequestBodyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_error_is_found_below_other_errors() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] RequestBodyError);
        let outer = Outer(RequestBodyError("disk gone".into()));
        let found = request_body_error(&outer).unwrap();
        assert_eq!(found.to_string(), "request body: disk gone");
    }

    #[test]
    fn invalid_requests_and_broken_bodies_are_permanent() {
        let error = Error::invalid_request(&"/v1/chat/completions", &"relative URL");
        let failure = Failure::find(&error).unwrap();
        assert_eq!(failure.code(), Code::BadRequest);
        assert!(failure.to_string().contains("`/v1/chat/completions`"));
        let error = Error::request_body("disk gone".into());
        assert_eq!(Failure::find(&error).unwrap().code(), Code::BadRequest);
    }

    /// A variant names what failed; the failure's text follows as its
    /// source, once.
    #[test]
    fn a_variants_text_does_not_repeat_its_failure() {
        let to = reqwest::Url::parse("https://elsewhere.example/login?next=1").unwrap();
        for error in [
            Error::invalid_request(&"/v1/chat/completions", &"relative URL"),
            Error::request_body("disk gone".into()),
            Error::redirected(&to),
        ] {
            let failure = Failure::find(&error).unwrap();
            let message = failure.message().unwrap();
            let source = StdError::source(&error).unwrap().to_string();
            assert!(source.contains(message), "{source}");
            assert!(!error.to_string().contains(message), "{error}");
        }
    }
}
