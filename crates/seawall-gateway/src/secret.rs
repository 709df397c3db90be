//! Keys and tokens: never printed, compared in constant time, scrubbed
//! from any upstream text the gateway passes on.
//!
//! What the scrub guarantees: no route key and not the gateway's token,
//! whole or in part, reaches the client in the upstream text it is given
//! (a provider's message, type, code or param, in an error's JSON or a
//! stream's final error event). The text arrives cut: seawall keeps an
//! excerpt of a provider's message and words, and a secret the provider
//! echoed may straddle the cut, its start ending the excerpt. So a whole
//! copy anywhere is replaced, and so is a secret's start that ends the
//! text as a word of its own (after a space, a quote, `=` or the text's
//! start; not glued to a letter or digit, which ends an ordinary word):
//! any start, down to one byte, where the text may end at a cut
//! ([`may_end_at_cut`]); one of at least
//! [`MIN_START_LEN`](seawall_internal::redact::MIN_START_LEN) bytes
//! elsewhere (a cut made before seawall read the text).
//!
//! [`Secret`] and [`Redactor`] live in [`seawall_internal::redact`]:
//! `seawall chat` scrubs its keys from its stderr with them too. What is
//! the gateway's own is where its excerpts are cut.

pub(crate) use seawall_internal::redact::{MIN_SECRET_LEN, Redactor, Secret};

/// Whether `text`, an excerpt of at most `bound` bytes, may end at a cut:
/// [`excerpt`](seawall::core::excerpt) backs off to a character boundary,
/// at most 3 bytes short of its bound.
pub(crate) fn may_end_at_cut(text: &str, bound: usize) -> bool {
    text.len().saturating_add(3) >= bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_within_3_bytes_of_its_bound_may_end_at_a_cut() {
        assert!(may_end_at_cut(&"x".repeat(509), 512));
        assert!(!may_end_at_cut(&"x".repeat(508), 512));
        assert!(may_end_at_cut("", 0));
    }
}
