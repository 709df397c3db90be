//! Transport errors: what the network and the HTTP client said.

use std::error::Error as StdError;
use std::io;

use seawall_core::{Code, Failure};

/// How deep a source chain is followed; real chains are a handful of links.
const MAX_DEPTH: usize = 32;

/// The failure a transport error amounts to, found by walking its source
/// chain: `timeout` when any link is a timeout (`io::ErrorKind::TimedOut`,
/// tokio's and tower's `Elapsed`, a hyper timeout), else `transport` when any
/// link is a connection failure (refused, reset, aborted, broken pipe, early
/// EOF, not connected, unreachable), a hyper protocol error or a hyper-util
/// connect error. `None` when no link is recognised.
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
    let code = chain_code(error, 0)?;
    Some(Failure::new(code).with_message(&error.to_string()))
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
        } else if error.is_user() {
            // Our own request or body failed: not the network's doing.
            None
        } else {
            // Closed, incomplete, canceled before dispatch, parse errors.
            Some(Code::Transport)
        };
    }
    if let Some(error) = link.downcast_ref::<hyper_util::client::legacy::Error>() {
        return error.is_connect().then_some(Code::Transport);
    }
    if link.is::<tokio::time::error::Elapsed>() || link.is::<tower::timeout::error::Elapsed>() {
        return Some(Code::Timeout);
    }
    #[cfg(feature = "tonic")]
    if link.is::<tonic::TimeoutExpired>() {
        return Some(Code::Timeout);
    }
    #[cfg(feature = "tonic")]
    if link.is::<tonic::ConnectError>() {
        return Some(Code::Transport);
    }
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
