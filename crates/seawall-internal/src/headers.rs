//! Header readings more than one crate makes.

use http::HeaderMap;
use http::header::CONTENT_LENGTH;

/// The length a message's `content-length` declares, when it declares one
/// that reads as a number (surrounding blanks allowed): `None` when the
/// header is missing or unreadable.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(CONTENT_LENGTH)?.to_str().ok()?;
    value.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn a_declared_length_is_read_as_a_number() {
        let length = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_LENGTH, HeaderValue::from_static(value));
            declared_length(&headers)
        };
        assert_eq!(length("0"), Some(0));
        assert_eq!(length("00"), Some(0));
        assert_eq!(length(" 12 "), Some(12));
        assert_eq!(length("twelve"), None);
        assert_eq!(length("-1"), None);
        assert_eq!(declared_length(&HeaderMap::new()), None);
    }
}
