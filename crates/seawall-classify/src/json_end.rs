//! Whether a JSON answer too long to check closed where its body ended.
//!
//! A unary answer past the check cap is handed on as it comes, unchecked.
//! Its framing may not tell a cut from an end: a body delimited by the
//! connection's close (HTTP/1.0, or `connection: close` without a length)
//! that loses its connection mid-value ends as cleanly as a whole one. The
//! answer's own structure does tell: a JSON value is whole when every
//! object and array it opened is closed, outside a string. [`JsonEnd`]
//! follows that as the bytes pass (seawall-internal's `Nesting`: a depth
//! count and the string state, nothing kept) so a cut body ends with an
//! error instead of looking complete, and a whole one whose framing
//! promised more than it sent ends once the body goes quiet.

use seawall_internal::json::is_blank;
use seawall_internal::nesting::Nesting;

/// Where the body is in its one JSON value.
#[derive(Debug, Default)]
pub(crate) enum JsonEnd {
    /// Before the value (blanks only so far).
    #[default]
    Before,
    /// Inside it.
    In(Nesting),
    /// After it, blanks only.
    After,
    /// Something other than blanks after it, or a value that does not
    /// open with `{`, `[` or `"`.
    Trailing,
}

/// What the bytes fed amounted to when the body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// One value, opened and closed, nothing but whitespace after it.
    Whole,
    /// The body ended inside the value.
    Cut,
    /// More than whitespace after the value.
    Trailing,
}

impl JsonEnd {
    /// Follows `data`, the next bytes of the body.
    pub(crate) fn feed(&mut self, data: &[u8]) {
        let mut at = 0;
        while at < data.len() {
            match self {
                JsonEnd::Before | JsonEnd::After => {
                    let Some(next) = data[at..].iter().position(|&byte| !is_blank(byte)) else {
                        return;
                    };
                    at += next;
                    *self = match (&*self, data[at]) {
                        (JsonEnd::Before, b'{' | b'[' | b'"') => JsonEnd::In(Nesting::default()),
                        _ => JsonEnd::Trailing,
                    };
                }
                JsonEnd::In(nesting) => match nesting.scan(&data[at..]) {
                    Some(len) => {
                        at += len;
                        *self = JsonEnd::After;
                    }
                    None => return,
                },
                JsonEnd::Trailing => return,
            }
        }
    }

    /// What the bytes fed amount to, the body having ended (or gone
    /// quiet).
    pub(crate) fn ending(&self) -> Ending {
        match self {
            JsonEnd::After => Ending::Whole,
            JsonEnd::Before | JsonEnd::In(_) => Ending::Cut,
            JsonEnd::Trailing => Ending::Trailing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ending, JsonEnd};

    fn ending_in_pieces(text: &str, piece: usize) -> Ending {
        let mut end = JsonEnd::default();
        for chunk in text.as_bytes().chunks(piece) {
            end.feed(chunk);
        }
        end.ending()
    }

    fn ending(text: &str) -> Ending {
        let whole = ending_in_pieces(text, text.len().max(1));
        // Where the frames split the bytes never matters.
        for piece in 1..text.len().min(9) {
            assert_eq!(ending_in_pieces(text, piece), whole, "{text:?} in {piece}s");
        }
        whole
    }

    #[test]
    fn a_value_is_whole_when_it_closes_outside_a_string() {
        let answer = r#"{"data":[{"embedding":[0.1,-2e-3]},{"s":"a } ] \" \\"}],"n":null}"#;
        assert_eq!(ending(answer), Ending::Whole);
        assert_eq!(ending(&format!(" \n{answer}\r\n ")), Ending::Whole);
        for cut in 1..answer.len() {
            assert_eq!(ending(&answer[..cut]), Ending::Cut, "cut at {cut}");
        }
    }

    #[test]
    fn an_escaped_quote_or_backslash_keeps_the_string_open_or_closes_it() {
        assert_eq!(ending(r#"{"a":"\""#), Ending::Cut);
        assert_eq!(ending(r#"{"a":"\\"}"#), Ending::Whole);
        assert_eq!(ending(r#"{"a":"\\\"}"#), Ending::Cut);
    }

    #[test]
    fn anything_after_the_value_is_trailing() {
        assert_eq!(ending(r#"{"a":1}x"#), Ending::Trailing);
        assert_eq!(ending(r#"{"a":1}{"a":1}"#), Ending::Trailing);
        assert_eq!(ending(r#"{"a":1}}"#), Ending::Trailing);
        assert_eq!(ending(""), Ending::Cut);
    }
}
