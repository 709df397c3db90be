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

/// What every link of `error`'s chain says, joined with `: `, as
/// `anyhow`'s `{:#}` prints a chain (a link whose words the text so far
/// already holds is not said twice: a wrapper that quotes its source).
/// No link is added once the text has `max_bytes`: a long chain of long
/// errors costs no more than its first links.
pub fn chain_text(error: &(dyn StdError + 'static), max_bytes: usize) -> String {
    let mut text = error.to_string();
    let mut current = error.source();
    for _ in 0..MAX_DEPTH {
        if text.len() >= max_bytes {
            break;
        }
        let Some(link) = current else { break };
        let said = link.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        current = link.source();
    }
    text
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

    #[derive(Debug)]
    struct Outer(Inner);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("outer")
        }
    }
    impl StdError for Outer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    /// Each link once, in order; nothing past the bound.
    #[test]
    fn a_chains_text_says_each_link_once_within_its_bound() {
        assert_eq!(chain_text(&Outer(Inner), 1024), "outer: inner");
        assert_eq!(chain_text(&Outer(Inner), 3), "outer");
        let quoting = io::Error::other("inner");
        assert_eq!(chain_text(&quoting, 1024), "inner");
    }
}
