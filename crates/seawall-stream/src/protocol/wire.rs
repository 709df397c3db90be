//! Serde helpers shared by the protocols: borrowed text (seawall-core's,
//! shared with the unary checks and the error table) and sequences read
//! without allocating a `Vec`.

pub(super) use seawall_internal::json::{First, Present, Text, Truthy, fold_seq, parse};
use serde::de::Deserialize;

/// A finish reason that says something: not the empty string, which SGLang
/// 0.4.3 and older Ollama send on every chunk (sgl-project/sglang#3912,
/// ollama/ollama#4357), nor the string `"null"` (KoboldCpp). Read as a
/// finish, either ended the answer at its first chunk: an empty answer to
/// retry, or one called complete however it broke after.
pub(super) fn declared_reason(reason: Option<Text<'_>>) -> Option<Text<'_>> {
    reason.filter(|Text(reason)| !reason.is_empty() && &**reason != "null")
}

/// Reads an event's JSON already checked as UTF-8.
pub(super) fn parse_text<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    serde_json::from_str(text).ok()
}
