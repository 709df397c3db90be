//! Whether a JSON answer too long to check closed where its body ended.
//!
//! A unary answer past the check cap is handed on as it comes, unchecked.
//! Its framing may not tell a cut from an end: a body delimited by the
//! connection's close (HTTP/1.0, or `connection: close` without a length)
//! that loses its connection mid-value ends as cleanly as a whole one. The
//! answer's own structure does tell: a JSON value is whole when every
//! object and array it opened is closed, outside a string. [`JsonEnd`]
//! follows that as the bytes pass — a depth count and the string state,
//! nothing kept — so a cut body ends with an error instead of looking
//! complete.

/// The structure of a JSON value read so far: how deep it is open, and
/// whether the bytes are inside a string.
#[derive(Debug, Default)]
pub(crate) struct JsonEnd {
    /// Objects and arrays open (a count: brackets of the wrong kind are
    /// the parser's business, not this check's).
    depth: u64,
    in_string: bool,
    /// The last byte inside a string was a backslash.
    escaped: bool,
    /// The outermost value opened and closed again.
    closed: bool,
    /// Something other than whitespace after the outermost value closed.
    trailing: bool,
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
            if self.trailing {
                return;
            }
            if self.in_string {
                if std::mem::take(&mut self.escaped) {
                    at += 1;
                    continue;
                }
                // Strings are most of an answer's bytes: skip to their end.
                let Some(stop) = memchr::memchr2(b'"', b'\\', &data[at..]) else {
                    return;
                };
                at += stop;
                if data[at] == b'"' {
                    self.in_string = false;
                } else {
                    self.escaped = true;
                }
                at += 1;
                continue;
            }
            match data[at] {
                b' ' | b'\n' | b'\r' | b'\t' => {}
                _ if self.closed => self.trailing = true,
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => match self.depth {
                    0 => self.trailing = true,
                    _ => {
                        self.depth -= 1;
                        self.closed = self.depth == 0;
                    }
                },
                _ => {}
            }
            at += 1;
        }
    }

    /// What the bytes fed amount to, the body having ended.
    pub(crate) fn ending(&self) -> Ending {
        if self.trailing {
            Ending::Trailing
        } else if self.closed {
            Ending::Whole
        } else {
            Ending::Cut
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
