//! Serde helpers shared by the protocols: borrowed text (seawall-core's,
//! shared with the unary checks and the error table) and sequences read
//! without allocating a `Vec`.

pub(super) use seawall_internal::json::{First, Present, Text, Truthy, fold_seq, parse};
use serde::de::Deserialize;

/// A finish reason that says something ([`seawall_core::finish::is_declared`],
/// the unary checks' reading too): `""` and `"null"` are none.
pub(super) fn declared_reason(reason: Option<Text<'_>>) -> Option<Text<'_>> {
    reason.filter(|Text(reason)| seawall_core::finish::is_declared(reason))
}

/// Reads an event's JSON already checked as UTF-8.
pub(super) fn parse_text<'a, T: Deserialize<'a>>(text: &'a str) -> Option<T> {
    serde_json::from_str(text).ok()
}
