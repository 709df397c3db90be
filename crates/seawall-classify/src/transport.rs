//! Transport errors: what the network and the HTTP client said.

use std::error::Error as StdError;
use std::io;

use seawall_core::{ClosedBy, Code, Failure, MESSAGE_EXCERPT_BYTES};
use seawall_internal::error::links;

/// How deep a source chain is followed; real chains are a handful of links.
const MAX_DEPTH: usize = 32;

/// Past this many bytes [`chain_message`] adds no link: a failure keeps
/// [`MESSAGE_EXCERPT_BYTES`] of its message, with room for the URL
/// secrets taken out before the cut.
const CHAIN_MESSAGE_BYTES: usize = 4 * MESSAGE_EXCERPT_BYTES;

/// The failure a transport error amounts to, found by walking its source
/// chain: `timeout` when any link is a timeout (`io::ErrorKind::TimedOut`,
/// tokio's and tower's `Elapsed`, tower-http's body `TimeoutError`, a
/// hyper timeout, tonic's TLS handshake past its bound), else `transport` when any link is a connection failure
/// (refused, reset, aborted, broken pipe, early EOF, not connected,
/// unreachable), a hyper protocol error, a hyper connection whose task is
/// gone with the request in flight (its runtime shut down) or a hyper-util
/// or tonic connect error, `overloaded` when tower's `LoadShed` refused the
/// call (the service under it at capacity: closed by us, with no status, as
/// nothing reached the route, so a breaker does not count it against the
/// route); `rate_limited` (transient: retried after the backoff, counted by
/// a breaker only where rate limits count) when the server reset the
/// stream or sent GOAWAY with HTTP/2's `ENHANCE_YOUR_CALM` (it sheds this
/// client's load: gRPC reads it as `RESOURCE_EXHAUSTED`; closed by them);
/// `bad_request` (permanent) when hyper says the request body ended
/// short of its `Content-Length` (wrong as written, so wrong on every
/// attempt), or could not send the request (its body failed, also over
/// HTTP/2, where hyper resets the stream itself); `transport`, permanent,
/// for a connection refused the same way on every attempt: a TLS handshake
/// refused (`certificate_refused`, feature `rustls`), a proxy that asks for
/// credentials, a server that did not agree to HTTP/2 (tonic, feature
/// `tonic`). `None` when no link is recognised.
///
/// A timeout wins over a connection failure because the chain of a connect
/// timeout holds both, and the timeout is what happened.
///
/// ```
/// use seawall_classify::transport_failure;
/// use seawall_core::{Action, Code};
/// use std::io;
///
/// let reset = io::Error::from(io::ErrorKind::ConnectionReset);
/// let failure = transport_failure(&reset).unwrap();
/// assert_eq!((failure.code(), failure.action()), (Code::Transport, Action::Retry));
/// ```
pub fn transport_failure(error: &(dyn StdError + 'static)) -> Option<Failure> {
    // A configuration to fix, the same on every attempt: no ladder
    // retries it, the breaker does not count it, and a route set or a
    // fallback may still move on (the route is at fault).
    let for_good = |message: String| {
        Failure::with_class(seawall_core::Class::Permanent, Code::Transport).with_message(&message)
    };
    #[cfg(feature = "rustls")]
    if let Some(refused) = certificate_refused(error) {
        return Some(for_good(format!(
            "tls: the handshake was refused: {refused}"
        )));
    }
    if let Some(refused) = setup_refused(error) {
        return Some(for_good(format!("{refused}: {}", chain_message(error))));
    }
    if body_cut_short(error) {
        // The request is wrong as written: every attempt would fail alike.
        return Some(Failure::new(Code::BadRequest).with_message(&format!(
            "the request body ended before the length its content-length declared: {}",
            chain_message(error)
        )));
    }
    if request_refused_by_client(error) {
        // The request could not be sent as it is (its body failed: the
        // upload's source went away; a header or method hyper cannot
        // write): not the route's doing, and no attempt would send it. The
        // links below it are the body's own failure, not the network's.
        return Some(Failure::new(Code::BadRequest).with_message(&format!(
            "the request could not be sent: {}",
            chain_message(error)
        )));
    }
    let calm = told_to_calm_down(error);
    let code = match chain_code(error, 0) {
        // A timeout is what happened, whatever else the chain holds.
        Some(Code::Timeout) => Code::Timeout,
        // The server sheds what this client sends: as gRPC reads it
        // (`RESOURCE_EXHAUSTED`), a rate limit, not a broken connection.
        _ if calm => Code::RateLimited,
        code => code?,
    };
    let mut failure = Failure::new(code);
    if code == Code::RateLimited {
        failure = failure.with_message(&format!(
            "the server asked to calm down (HTTP/2 ENHANCE_YOUR_CALM): {}",
            chain_message(error)
        ));
        failure.evidence_mut().closed_by = Some(ClosedBy::Them);
    } else {
        failure = failure.with_message(&chain_message(error));
    }
    if code == Code::Overloaded {
        // tower's `LoadShed` is the one link read as `overloaded`: it
        // refused the call on this side, unsent. Said so, a burst past a
        // local limit does not open the route's breaker for every caller,
        // where a provider's own overload (with its status) does.
        failure.evidence_mut().closed_by = Some(ClosedBy::Us);
    }
    if never_reached(error) {
        failure = failure.with_nothing_generated();
    }
    Some(match stream_reset(error) {
        Some(reason) => failure.with_stream_reset(reason),
        None => failure,
    })
}

/// The request never reached the server, found in `error`'s chain: the
/// connection was never made (hyper-util's connect error, tonic's
/// `ConnectError` — every failure of its connect phase, a name not found
/// or a TLS handshake reset alike —, a connection refused), hyper gave
/// the request back unwritten (`is_canceled`: the connection closed or
/// was not ready before the request was queued on it), tower's
/// `LoadShed` refused it here, or the server said it did no processing:
/// HTTP/2's `REFUSED_STREAM` (RFC 9113 §8.7), or its GOAWAY. h2 gives a
/// stream the peer's GOAWAY as its error only where the stream's id is
/// above the frame's last-stream-id or the stream was opened after it
/// (RFC 9113 §6.8: such a stream "was not or will not be processed");
/// a stream the server took sees a broken pipe when the connection goes.
/// Nothing was generated, so nothing was billed: an attempt cut so is
/// not among those that may have been.
fn never_reached(error: &(dyn StdError + 'static)) -> bool {
    links(error).any(|link| {
        if let Some(h2) = link.downcast_ref::<h2::Error>() {
            return h2.is_remote()
                && (h2.is_go_away()
                    || h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM));
        }
        #[cfg(feature = "tonic")]
        if link.is::<tonic::ConnectError>() {
            return true;
        }
        link.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(|error| error.is_connect())
            || link
                .downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_canceled)
            || link.is::<tower::load_shed::error::Overloaded>()
            || link
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::ConnectionRefused)
    })
}

/// The error code of the HTTP/2 stream reset (RST_STREAM) in `error`'s
/// chain, if one broke the call: what gRPC reads a status from (its spec's
/// table: `CANCEL` is `CANCELLED`, `ENHANCE_YOUR_CALM` `RESOURCE_EXHAUSTED`,
/// …). A connection's GOAWAY is none.
fn stream_reset(error: &(dyn StdError + 'static)) -> Option<u32> {
    let h2 = links(error).find_map(|link| link.downcast_ref::<h2::Error>())?;
    h2.is_reset().then(|| h2.reason()).flatten().map(u32::from)
}

/// The server reset the stream, or sent the connection's GOAWAY, with
/// `ENHANCE_YOUR_CALM` (RFC 9113 §7: the peer "might be generating
/// excessive load"), found in `error`'s chain: a server shedding this
/// client's load (grpc-go's GOAWAY `too_many_pings`, a proxy's limit on
/// streams). Only the peer's word: h2 sends the code itself at a server
/// that misbehaves (`is_library`), which says nothing of the server's
/// load.
fn told_to_calm_down(error: &(dyn StdError + 'static)) -> bool {
    links(error).any(|link| {
        link.downcast_ref::<h2::Error>()
            .is_some_and(|h2| h2.is_remote() && h2.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM))
    })
}

/// What refused to set the connection up, the same on every attempt,
/// below the certificate checks: a proxy that asks for credentials
/// (hyper-util's tunnel, under reqwest's proxies too, got a 407 to its
/// `CONNECT`), a server that did not agree to HTTP/2 over TLS (tonic's
/// channel, feature `tonic`), as rustls's own `NoApplicationProtocol` is
/// read. Their error types are private: their text is the only handle.
fn setup_refused(error: &(dyn StdError + 'static)) -> Option<&'static str> {
    links(error).find_map(|link| match link.to_string().as_str() {
        "tunnel error: proxy authorization required" => {
            Some("proxy: the proxy asks for credentials")
        }
        #[cfg(feature = "tonic")]
        "HTTP/2 was not negotiated." => Some("tls: the server did not agree to HTTP/2"),
        _ => None,
    })
}

/// hyper refused the request itself: a "user" error (the request body
/// failed while being written, a header or version it cannot write), or,
/// over HTTP/2, a stream hyper reset itself, found in `error`'s chain. A
/// connection task gone is no refusal ([`dispatch_gone`]).
fn request_refused_by_client(error: &(dyn StdError + 'static)) -> bool {
    let mut under_hyper = false;
    links(error).any(|link| match link.downcast_ref::<hyper::Error>() {
        Some(hyper) if hyper.is_user() && !dispatch_gone(hyper) => true,
        Some(_) => {
            under_hyper = true;
            false
        }
        None => under_hyper && link.downcast_ref::<h2::Error>().is_some_and(reset_by_us),
    })
}

/// hyper's connection task went away with the request in flight: the
/// runtime that ran it shut down (a client shared across runtimes) or it
/// panicked. hyper files it among its "user" errors, but the request was
/// not refused: its connection was lost, and a fresh one may carry it.
/// hyper has no predicate for it; its text is the only handle.
fn dispatch_gone(error: &hyper::Error) -> bool {
    error.is_user() && error.to_string() == "dispatch task is gone"
}

/// An HTTP/2 stream reset this side sent, neither the peer (`is_remote`)
/// nor h2 itself for a protocol error (`is_library`); a GOAWAY is no
/// reset. Under hyper's client it is the request body failing: hyper
/// reports that body's error to no one (it logs it), resets the stream
/// with INTERNAL_ERROR, and the response fails with this reset. Read as
/// `transport`, the caller's broken upload was retried and counted
/// against the route, where HTTP/1 says hyper's "user" error.
fn reset_by_us(h2: &h2::Error) -> bool {
    h2.is_reset() && !h2.is_remote() && !h2.is_library()
}

/// hyper says the request body ended short of the length its
/// `Content-Length` declared: the one way an HTTP/1 client aborts writing
/// a body. Among hyper's "user" errors, which are otherwise no verdict
/// here (the body's own failure is the caller's to name).
fn body_cut_short(error: &(dyn StdError + 'static)) -> bool {
    links(error).any(|link| {
        link.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_body_write_aborted)
    })
}

/// What every link of `error`'s chain says, joined with `: ` (a link whose
/// words the one before it already quotes is not said twice). hyper-util's
/// client says only `client error (SendRequest)`; why (the response head
/// it could not parse, the connection refused) is further down the chain.
/// No link is added once the text is well past what a failure keeps of
/// it ([`MESSAGE_EXCERPT_BYTES`], after URL secrets are taken out): a
/// long chain of long errors costs no more than its first links.
pub(crate) fn chain_message(error: &(dyn StdError + 'static)) -> String {
    seawall_internal::error::chain_text(error, CHAIN_MESSAGE_BYTES)
}

/// A TLS handshake refused for good, found in `error`'s chain: what
/// rustls said (feature `rustls`). A server certificate rustls refused
/// (unknown issuer, expired, not for this name) or none presented; a
/// server with no protocol version, cipher suite or ALPN protocol in
/// common; a server that answered TLS with something else (a plain-HTTP
/// port); an alert that refuses the handshake or this client's
/// certificate (`handshake_failure`, `bad_certificate`, `unknown_ca`,
/// `protocol_version`, `certificate_required`, …). The same on every
/// attempt: a configuration to fix. An alert about the moment
/// (`internal_error`, `close_notify`) is not one.
///
/// Connectors wrap rustls's error in io errors, nested at times (reqwest's
/// is two deep), and `io::Error::source` skips an io error's payload: the
/// walk goes on through payloads.
#[cfg(feature = "rustls")]
pub fn certificate_refused(error: &(dyn StdError + 'static)) -> Option<String> {
    use rustls::AlertDescription as Alert;
    links(error).find_map(|link| match link.downcast_ref::<rustls::Error>() {
        Some(
            tls @ (rustls::Error::InvalidCertificate(_)
            | rustls::Error::NoCertificatesPresented
            | rustls::Error::PeerIncompatible(_)
            | rustls::Error::InvalidMessage(_)
            | rustls::Error::NoApplicationProtocol
            | rustls::Error::AlertReceived(
                Alert::HandshakeFailure
                | Alert::NoCertificate
                | Alert::BadCertificate
                | Alert::UnsupportedCertificate
                | Alert::CertificateRevoked
                | Alert::CertificateExpired
                | Alert::CertificateUnknown
                | Alert::UnknownCA
                | Alert::AccessDenied
                | Alert::ProtocolVersion
                | Alert::InsufficientSecurity
                | Alert::CertificateRequired
                | Alert::UnrecognisedName
                | Alert::NoApplicationProtocol,
            )),
        ) => Some(tls.to_string()),
        _ => None,
    })
}

fn chain_code(error: &(dyn StdError + 'static), depth: usize) -> Option<Code> {
    let mut found = None;
    let mut current = Some(error);
    let mut depth = depth;
    while let Some(link) = current {
        if depth >= MAX_DEPTH {
            break;
        }
        depth += 1;
        let code = link_code(link).or_else(|| {
            // `io::Error::source` skips a custom payload and goes straight to
            // the payload's source, so look at the payload itself.
            let payload = link.downcast_ref::<io::Error>()?.get_ref()?;
            chain_code(payload, depth)
        });
        match code {
            Some(Code::Timeout) => return Some(Code::Timeout),
            Some(code) => found = found.or(Some(code)),
            None => {}
        }
        current = link.source();
    }
    found
}

fn link_code(link: &(dyn StdError + 'static)) -> Option<Code> {
    if let Some(io) = link.downcast_ref::<io::Error>() {
        return io_code(io.kind());
    }
    if let Some(error) = link.downcast_ref::<hyper::Error>() {
        return if error.is_timeout() {
            Some(Code::Timeout)
        } else if error.is_user() && !dispatch_gone(error) {
            // Our own request or body failed: not the network's doing.
            None
        } else {
            // Closed, incomplete, canceled before dispatch, parse errors,
            // a connection task gone.
            Some(Code::Transport)
        };
    }
    if let Some(error) = link.downcast_ref::<hyper_util::client::legacy::Error>() {
        return error.is_connect().then_some(Code::Transport);
    }
    if link.is::<tokio::time::error::Elapsed>() || link.is::<tower::timeout::error::Elapsed>() {
        return Some(Code::Timeout);
    }
    // tower-http's `TimeoutError`: its `ResponseBodyTimeout` ended a body
    // that sent no frame within its bound. A timeout, as a client's own
    // read timeout is, not an answer that broke.
    if link.is::<tower_http::timeout::TimeoutError>() {
        return Some(Code::Timeout);
    }
    // tower's `LoadShed` refused the call: the service under it was at
    // capacity (a concurrency or rate limit), and the request was shed
    // unsent. Capacity comes back: a retry after a backoff may pass.
    if link.is::<tower::load_shed::error::Overloaded>() {
        return Some(Code::Overloaded);
    }
    #[cfg(feature = "tonic")]
    if link.is::<tonic::TimeoutExpired>() {
        return Some(Code::Timeout);
    }
    #[cfg(feature = "tonic")]
    if let Some(connect) = link.downcast_ref::<tonic::ConnectError>() {
        // tonic's TLS handshake past its bound (its `TlsError`, private:
        // the text is the only handle) is a timeout, as a connect timeout
        // is, not a connection refused.
        return Some(if connect.0.to_string() == "TLS handshake timeout." {
            Code::Timeout
        } else {
            Code::Transport
        });
    }
    // Not recognised, on purpose: a tower `Buffer` whose worker is gone
    // (`Closed`: its runtime shut down, the worker panicked). Every call
    // through it fails alike and the route said nothing: as `transport`
    // it was retried into the same dead buffer and counted against the
    // route's breaker. A buffer's `ServiceError` is the inner service's
    // failure, read from the links below it.
    None
}

fn io_code(kind: io::ErrorKind) -> Option<Code> {
    use io::ErrorKind::*;
    match kind {
        TimedOut => Some(Code::Timeout),
        ConnectionRefused | ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
        | NotConnected | AddrNotAvailable | HostUnreachable | NetworkUnreachable | NetworkDown => {
            Some(Code::Transport)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link that says a long text and has `next` as its source.
    #[derive(Debug)]
    struct Long(usize, Option<Box<Long>>);

    impl std::fmt::Display for Long {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "link {} {}", self.0, "x".repeat(1000))
        }
    }

    impl StdError for Long {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.1.as_deref().map(|next| next as _)
        }
    }

    #[test]
    fn a_chain_message_stops_past_what_a_failure_keeps() {
        let chain = (0..MAX_DEPTH)
            .rev()
            .fold(None, |next, n| Some(Box::new(Long(n, next))));
        let chain = chain.expect("a chain");
        let message = chain_message(&*chain);
        assert!(message.starts_with("link 0 "), "the first link first");
        assert!(message.contains("link 1 "), "then its source");
        // One link's words past the bound at most, not all 32 links'.
        assert!(
            message.len() < CHAIN_MESSAGE_BYTES + 1100,
            "{} bytes",
            message.len()
        );
        assert!(!message.contains(&format!("link {} ", MAX_DEPTH - 1)));
    }
}
