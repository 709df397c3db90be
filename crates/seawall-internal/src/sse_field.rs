//! One line of an event stream read as a field, by the WHATWG rule (HTML
//! 9.2.6, "process the field"): what seawall-stream's scanner reads every
//! line with, and what the gateway's relay reads an event's lines with to
//! know whether an OpenAI SDK would find data in it. One rule in one
//! place, so the two never read the same line two ways.
//!
//! Lines are split by the caller (CR, LF or CRLF end one; the line end is
//! not part of the line): each reader follows its lines its own way, the
//! scanner across frames, the relay within one whole event.

use memchr::memchr;

/// A line's field name and value: the name runs up to the first `:`, and
/// the value is the rest after it, one leading space dropped (and only
/// one: `data:  x` holds ` x`); a line without a `:` is a field of that
/// name with an empty value. A line that opens with `:` is a comment,
/// which the format ignores; read here it is a field with an empty name,
/// so a caller that hands comments on (with their space) tells them apart
/// first.
///
/// Inline and allocation-free: the scanner reads every line of a stream
/// with it.
#[inline]
pub fn field(line: &[u8]) -> (&[u8], &[u8]) {
    match memchr(b':', line) {
        Some(colon) => {
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[][..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> (&str, &str) {
        let (name, value) = field(line.as_bytes());
        (
            std::str::from_utf8(name).unwrap(),
            std::str::from_utf8(value).unwrap(),
        )
    }

    #[test]
    fn data_without_a_space() {
        assert_eq!(read("data:x"), ("data", "x"));
    }

    #[test]
    fn one_space_after_the_colon_is_dropped() {
        assert_eq!(read("data: x"), ("data", "x"));
    }

    #[test]
    fn only_one_space_is_dropped() {
        assert_eq!(read("data:  x"), ("data", " x"));
    }

    #[test]
    fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
        assert_eq!(read("data"), ("data", ""));
        assert_eq!(read("data x"), ("data x", ""));
    }

    #[test]
    fn a_comment_is_a_field_with_an_empty_name() {
        assert_eq!(read(":comment"), ("", "comment"));
        assert_eq!(read(": keep-alive"), ("", "keep-alive"));
    }

    #[test]
    fn id_and_retry() {
        assert_eq!(read("id: 7"), ("id", "7"));
        assert_eq!(read("id"), ("id", ""));
        assert_eq!(read("retry: 1000"), ("retry", "1000"));
    }

    #[test]
    fn an_unknown_field_is_read_the_same_way() {
        assert_eq!(read("event: error"), ("event", "error"));
        assert_eq!(read("foo: bar"), ("foo", "bar"));
        assert_eq!(read("{\"error\": 1}"), ("{\"error\"", "1}"));
    }

    #[test]
    fn an_empty_line() {
        assert_eq!(read(""), ("", ""));
    }

    #[test]
    fn the_name_ends_at_the_first_colon() {
        assert_eq!(read("data: {\"a\":1}"), ("data", "{\"a\":1}"));
        assert_eq!(read("data::x"), ("data", ":x"));
        assert_eq!(read("data: :x"), ("data", ":x"));
    }
}
