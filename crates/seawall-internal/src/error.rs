//! Walking an error's source chain.

use std::error::Error as StdError;
use std::io;

/// How deep a source chain is followed; real chains are a handful of links.
const MAX_DEPTH: usize = 32;

/// Every link of `error`'s chain, `error` first, through io errors'
/// payloads: `io::Error::source` skips a payload and goes on to the
/// payload's source, and connectors nest what they say in io errors
/// (reqwest's rustls error is two deep).
pub fn links<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&link: &&'a (dyn StdError + 'static)| {
        link.downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .map(|payload| payload as &(dyn StdError + 'static))
            .or_else(|| link.source())
    })
    .take(MAX_DEPTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Inner;
    impl std::fmt::Display for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("inner")
        }
    }
    impl StdError for Inner {}

    /// The payload of an io error is a link, though `source` skips it.
    #[test]
    fn an_io_errors_payload_is_a_link() {
        let outer = io::Error::other(Inner);
        let found: Vec<String> = links(&outer).map(ToString::to_string).collect();
        assert_eq!(found, ["inner", "inner"]);
        assert!(links(&outer).any(|link| link.is::<Inner>()));
    }
}
