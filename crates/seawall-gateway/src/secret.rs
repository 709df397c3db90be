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
//! any start, down to one byte, where the text may end at a cut; one of
//! at least [`MIN_START_LEN`] bytes elsewhere (a cut made before seawall
//! read the text).

use std::fmt;
use std::sync::Arc;

/// A key or token. `Debug` and `Display` print `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(Arc<str>);

impl Secret {
    pub(crate) fn new(value: String) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one header that carries it upstream.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Equality whose time does not depend on where the first difference is.
    pub(crate) fn matches(&self, candidate: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        let mut diff = expected.len() ^ candidate.len();
        for (i, byte) in expected.iter().enumerate() {
            let other = candidate.get(i).copied().unwrap_or(!byte);
            diff |= usize::from(byte ^ other);
        }
        diff == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The shortest secret the redactor scrubs.
pub(crate) const MIN_SECRET_LEN: usize = 8;

/// The shortest start of a secret scrubbed from the end of text that was
/// not cut there: a shorter one (`sk-`) is every key's and says nothing,
/// and would scrub ordinary words.
pub(crate) const MIN_START_LEN: usize = 4;

/// Whether `text`, an excerpt of at most `bound` bytes, may end at a cut:
/// [`excerpt`](seawall::core::excerpt) backs off to a character boundary,
/// at most 3 bytes short of its bound.
pub(crate) fn may_end_at_cut(text: &str, bound: usize) -> bool {
    text.len().saturating_add(3) >= bound
}

/// Every secret the gateway holds, to scrub from text it passes on (an
/// upstream error message may echo a key).
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor(Vec<Secret>);

impl Redactor {
    pub(crate) fn push(&mut self, secret: &Secret) {
        // Very short values would scrub ordinary words; the gateway
        // refuses them as keys and tokens (`Gateway::with_env`).
        if secret.expose().len() >= MIN_SECRET_LEN && !self.0.contains(secret) {
            self.0.push(secret.clone());
        }
    }

    /// `text` with every whole copy of a secret replaced by `[redacted]`,
    /// and a secret's start that ends it: any start when `cut` (the text
    /// may end at a cut, [`may_end_at_cut`]), one of at least
    /// [`MIN_START_LEN`] bytes otherwise.
    pub(crate) fn scrub(&self, text: &str, cut: bool) -> String {
        let mut text = text.to_owned();
        for secret in &self.0 {
            if text.contains(secret.expose()) {
                text = text.replace(secret.expose(), "[redacted]");
            }
        }
        let shortest = if cut { 1 } else { MIN_START_LEN };
        // A key is echoed as a word of its own (`key sk-…`, `"sk-…`,
        // `=sk-…`), never glued to the letter before it: a start that
        // follows one is the end of an ordinary word (`tokens` ends in
        // every `sk-` key's `s`).
        let text_bytes = text.as_bytes();
        let starts_a_word = |n: usize| {
            text_bytes
                .len()
                .checked_sub(n + 1)
                .is_none_or(|before| !text_bytes[before].is_ascii_alphanumeric())
        };
        // The longest start ending the text, of any secret: two secrets'
        // starts may both end it (`…sk-route` ends in a token's `te`).
        let start = self
            .0
            .iter()
            .filter_map(|secret| {
                let secret = secret.expose().as_bytes();
                (shortest..secret.len())
                    .rev()
                    .find(|&n| text_bytes.ends_with(&secret[..n]) && starts_a_word(n))
            })
            .max();
        if let Some(n) = start {
            // The text's byte where the start begins equals a secret's
            // first, never a UTF-8 continuation byte: a character boundary.
            text.truncate(text.len() - n);
            text.push_str("[redacted]");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_hide() {
        let secret = Secret::new("sk-very-secret-value".into());
        assert_eq!(format!("{secret:?} {secret}"), "[redacted] [redacted]");
        assert!(secret.matches(b"sk-very-secret-value"));
        assert!(!secret.matches(b"sk-very-secret-valuX"));
        assert!(!secret.matches(b"sk-very"));
        assert!(!secret.matches(b""));
        let mut redactor = Redactor::default();
        redactor.push(&secret);
        assert_eq!(
            redactor.scrub("bad key sk-very-secret-value given", false),
            "bad key [redacted] given"
        );
    }

    /// A secret's start that ends the text as a word of its own is
    /// scrubbed: down to one byte where the text may end at a cut, from
    /// four bytes elsewhere; a start inside the text, or glued to the
    /// letter before it, is an ordinary word.
    #[test]
    fn a_secrets_start_ending_the_text_hides() {
        let mut redactor = Redactor::default();
        redactor.push(&Secret::new("te-other-secret".into()));
        redactor.push(&Secret::new("sk-very-secret-value".into()));
        redactor.push(&Secret::new("éa-third-secret".into()));
        for (text, cut, shown) in [
            ("key sk-very-secret-val", false, "key [redacted]"),
            ("key sk-v", false, "key [redacted]"),
            ("key sk-", false, "key sk-"),
            ("key sk-", true, "key [redacted]"),
            ("keys", true, "keys"),
            ("key s", true, "key [redacted]"),
            ("code=sk-v", false, "code=[redacted]"),
            ("tasks-v", false, "tasks-v"),
            ("key sk-very-secret-value", true, "key [redacted]"),
            ("sk-very is not it", false, "sk-very is not it"),
            ("café", true, "café"),
            ("là éa", true, "là [redacted]"),
            ("key éa-th", false, "key [redacted]"),
            // `t` starts the first secret, `sk-very-secret` the second.
            ("key sk-very-secret", true, "key [redacted]"),
            ("", true, ""),
        ] {
            assert_eq!(redactor.scrub(text, cut), shown, "{text:?} {cut}");
        }
        assert!(may_end_at_cut(&"x".repeat(509), 512));
        assert!(!may_end_at_cut(&"x".repeat(508), 512));
    }
}
