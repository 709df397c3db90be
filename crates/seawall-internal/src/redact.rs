//! Keys and tokens: never printed, compared in constant time, scrubbed
//! from text someone else wrote before it is shown (the gateway's answers
//! to its clients, `seawall chat`'s stderr).
//!
//! What the scrub guarantees: no secret it holds, whole or in part, is
//! left in the text it is given. The text may arrive cut (an excerpt of a
//! provider's message, a line written before its end), and a secret that
//! straddles the cut leaves its start ending the text. So a whole copy
//! anywhere is replaced, and so is a secret's start that ends the text as
//! a word of its own (after a space, a quote, `=` or the text's start;
//! not glued to a letter or digit, which ends an ordinary word): any
//! start, down to one byte, where the text may end at a cut; one of at
//! least [`MIN_START_LEN`] bytes elsewhere (a cut made before the text
//! was read).

use std::fmt;
use std::sync::Arc;

/// A key or token. `Debug` and `Display` print `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// The secret `value`.
    pub fn new(value: String) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one header that carries it upstream.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Equality whose time does not depend on where the first difference is.
    pub fn matches(&self, candidate: &[u8]) -> bool {
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

/// The shortest secret the redactor scrubs: a shorter value would scrub
/// ordinary words, and no provider issues one.
pub const MIN_SECRET_LEN: usize = 8;

/// The shortest start of a secret scrubbed from the end of text that was
/// not cut there: a shorter one (`sk-`) is every key's and says nothing,
/// and would scrub ordinary words.
pub const MIN_START_LEN: usize = 4;

/// Every secret held, to scrub from text that is shown (an upstream error
/// message may echo a key).
#[derive(Debug, Clone, Default)]
pub struct Redactor(Vec<Secret>);

impl Redactor {
    /// Holds `secret`, unless it is held already or shorter than
    /// [`MIN_SECRET_LEN`].
    pub fn push(&mut self, secret: &Secret) {
        // Very short values would scrub ordinary words; the gateway
        // refuses them as keys and tokens (`Gateway::with_env`).
        if secret.expose().len() < MIN_SECRET_LEN || self.0.contains(secret) {
            return;
        }
        // The longest first, whatever the order pushed: a secret that
        // contains another is replaced whole, not left as the rest after
        // the shorter one's `[redacted]`.
        let len = secret.expose().len();
        let at = self.0.partition_point(|held| held.expose().len() >= len);
        self.0.insert(at, secret.clone());
    }

    /// The secrets held, the longest first.
    pub fn secrets(&self) -> &[Secret] {
        &self.0
    }

    /// `text` with every whole copy of a secret replaced by `[redacted]`,
    /// and a secret's start that ends it: any start when `cut` (the text
    /// may end at a cut), one of at least [`MIN_START_LEN`] bytes
    /// otherwise.
    pub fn scrub(&self, text: &str, cut: bool) -> String {
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
    }

    /// A secret that contains another is replaced whole, whichever was
    /// pushed first; one pushed twice, or too short, is held once or not.
    #[test]
    fn a_secret_containing_another_is_replaced_whole() {
        let short = Secret::new("sk-abcdefgh".into());
        let long = Secret::new("sk-abcdefgh-long-suffix".into());
        for order in [[&short, &long], [&long, &short]] {
            let mut redactor = Redactor::default();
            for secret in order {
                redactor.push(secret);
                redactor.push(secret);
            }
            redactor.push(&Secret::new("sk-abc".into()));
            for cut in [false, true] {
                assert_eq!(
                    redactor.scrub("key sk-abcdefgh-long-suffix, sk-abcdefgh.", cut),
                    "key [redacted], [redacted].",
                    "{cut}"
                );
            }
            assert_eq!(redactor.0.len(), 2);
        }
    }
}
