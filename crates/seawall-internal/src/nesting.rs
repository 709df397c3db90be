//! Where a JSON value ends, followed across the pieces its bytes come in.
//!
//! Two readers need it without parsing: the JSON-array splitter (where
//! each element of Gemini's array stream ends) and the classification of a
//! unary answer too long to check (whether the body ended where its value
//! closed). Both see the bytes frame by frame, so the state — open
//! brackets, inside a string, after a backslash — lives between calls, and
//! nothing is kept.

/// A JSON value opening with `{`, `[` or `"`, followed to its end.
///
/// ```
/// use seawall_internal::nesting::Nesting;
///
/// let mut value = Nesting::default();
/// assert_eq!(value.scan(br#"{"a":"}\"""#), None);
/// assert_eq!(value.scan(br#",[1]} ,"#), Some(5));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Nesting {
    /// Objects and arrays open (a count: brackets of the wrong kind are a
    /// parser's business).
    depth: usize,
    in_string: bool,
    /// The previous byte in a string was a backslash.
    escaped: bool,
}

impl Nesting {
    /// Scans `data`, the value's next bytes (its opening byte first, in the
    /// first piece): how many of them belong to the value when it ends
    /// within them, `None` when it goes on.
    pub fn scan(&mut self, data: &[u8]) -> Option<usize> {
        let mut i = 0;
        while i < data.len() {
            if self.in_string {
                if std::mem::take(&mut self.escaped) {
                    i += 1;
                    continue;
                }
                // Strings are most of a value's bytes: skip to their end.
                i += memchr::memchr2(b'"', b'\\', &data[i..])?;
                if data[i] == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    if self.depth == 0 {
                        // A bare string ends at its quote.
                        return Some(i + 1);
                    }
                }
                i += 1;
                continue;
            }
            match data[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    // At depth 0 only a caller that started mid-value
                    // sees one: it ends the value as well as anything.
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Nesting;
    use proptest::prelude::*;

    fn end_in_pieces(text: &[u8], piece: usize) -> Option<usize> {
        let mut value = Nesting::default();
        let mut at = 0;
        for chunk in text.chunks(piece.max(1)) {
            if let Some(len) = value.scan(chunk) {
                return Some(at + len);
            }
            at += chunk.len();
        }
        None
    }

    #[test]
    fn brackets_and_quotes_in_strings_do_not_count() {
        let value = br#"{"a":"} ] \" \\","b":[{"c":"["}]}"#;
        let mut text = value.to_vec();
        text.extend_from_slice(b" ,{}");
        assert_eq!(end_in_pieces(&text, text.len()), Some(value.len()));
        assert_eq!(end_in_pieces(&value[..value.len() - 1], 64), None);
        assert_eq!(end_in_pieces(br#""a\"b" x"#, 64), Some(6));
    }

    proptest! {
        /// Where the frames split the bytes never matters.
        #[test]
        fn the_end_does_not_depend_on_the_pieces(
            text in r#"[\[{"]([\[\]{}",\\ab:]{0,40})"#,
            piece in 1usize..12,
        ) {
            let bytes = text.as_bytes();
            prop_assert_eq!(end_in_pieces(bytes, piece), end_in_pieces(bytes, bytes.len()));
        }
    }
}
