//! Anthropic's error types and the statuses it answers them with (its
//! API's errors page), both ways: the gateway writes a type for a status
//! on Anthropic's wire and recognises a provider's type as Anthropic's;
//! the fault server answers a status with the type Anthropic would.

/// Anthropic's documented error types, each with its status.
const TYPES: &[(&str, u16)] = &[
    ("invalid_request_error", 400),
    ("authentication_error", 401),
    ("billing_error", 402),
    ("permission_error", 403),
    ("not_found_error", 404),
    ("conflict_error", 409),
    ("request_too_large", 413),
    ("rate_limit_error", 429),
    ("api_error", 500),
    ("timeout_error", 504),
    ("overloaded_error", 529),
];

/// The status Anthropic answers an error of type `ty` with, for one of
/// its types; `None` for any other word.
pub fn status_of_type(ty: &str) -> Option<u16> {
    TYPES
        .iter()
        .find(|(name, _)| *name == ty)
        .map(|(_, status)| *status)
}

/// The type Anthropic gives an error answered with `status`: its own for
/// the statuses its errors page names, else `invalid_request_error` for a
/// 4xx and `api_error` for anything else. 500 is `api_error` either way;
/// `conflict_error` (409) is named, so a 409 reads as one.
pub fn type_of_status(status: u16) -> &'static str {
    match TYPES.iter().find(|(_, s)| *s == status) {
        Some((name, _)) => name,
        None if (400..500).contains(&status) => "invalid_request_error",
        None => "api_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_back_as_its_status() {
        for (ty, status) in TYPES {
            assert_eq!(status_of_type(ty), Some(*status));
            assert_eq!(type_of_status(*status), *ty);
        }
        assert_eq!(status_of_type("insufficient_quota"), None);
        assert_eq!(type_of_status(418), "invalid_request_error");
        assert_eq!(type_of_status(503), "api_error");
        assert_eq!(type_of_status(200), "api_error");
    }
}
