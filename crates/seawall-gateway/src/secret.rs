//! Keys and tokens: never printed, compared in constant time, scrubbed
//! from any upstream text the gateway passes on.

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

    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.0 {
            if text.contains(secret.expose()) {
                text = text.replace(secret.expose(), "[redacted]");
            }
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
            redactor.scrub("bad key sk-very-secret-value given"),
            "bad key [redacted] given"
        );
    }
}
