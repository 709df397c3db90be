//! A strict JSON cursor for the hot path: it reads the few fields a
//! decision needs straight from an event's text and steps over the rest,
//! without serde's visitor machinery (reading each event was the largest
//! part of the guard's cost per event).
//!
//! It answers only what it is sure of. Whatever it does not handle itself
//! (an escape in a key, a lone surrogate, anything that is not well-formed
//! JSON, a duplicate field, deep nesting, a shape the caller did not
//! expect) makes it give up, and the caller asks serde instead. So it can
//! only ever be slow, not wrong; a differential test holds it to serde's
//! answers.
//!
//! Used by the stream decoders (`seawall-stream`) for every event and by
//! the unary answer checks (`seawall-core`'s providers) for every answer.

use std::borrow::Cow;

use memchr::memchr;

use crate::json::Text;

/// The cursor gave up: serde decides.
#[derive(Debug)]
pub struct GiveUp;

/// What a cursor read, or [`GiveUp`].
pub type Scan<T> = Result<T, GiveUp>;

/// The bytes that end a run of plain string content: the closing quote,
/// an escape, and the control characters JSON forbids raw.
static STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stops[byte] = true;
        byte += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

/// Where the first byte that ends a run of plain string content is: eight
/// bytes at a time (keys and values are short, too short to pay for
/// setting up a vector search each), then the table for the tail.
#[inline(always)]
fn next_stop(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // Sets the high bit of every byte of `word` below `n` (n <= 128); exact
    // up to the first such byte, which is all that is read of it.
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let stops = below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1)
            | below(word, 0x20);
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&byte| STOPS[usize::from(byte)])
        .map(|found| at + found)
}

/// Deeper than this, give up (serde's own limit is 128; one bit per level
/// in `skip`).
const MAX_DEPTH: usize = 64;

/// Where the string tokens of an event are whose text no decision reads
/// (values and keys inside skipped values), and the one text read for the
/// record, in order, quotes included: another event with other strings
/// there and the same bytes everywhere else means the same, but for that
/// text (see `openai::Shape`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Holes {
    spans: [(u32, u32); MAX_HOLES],
    len: u8,
    /// More holes than fit, or an offset past `u32`: no shape to keep.
    overflow: bool,
    /// Which hole is the text.
    text: Option<u8>,
}

/// Holes an event may have and still have a shape kept.
const MAX_HOLES: usize = 16;

impl Holes {
    fn push(&mut self, start: usize, end: usize) {
        match (
            self.spans.get_mut(usize::from(self.len)),
            u32::try_from(start),
            u32::try_from(end),
        ) {
            (Some(span), Ok(start), Ok(end)) => {
                *span = (start, end);
                self.len += 1;
            }
            _ => self.overflow = true,
        }
    }

    /// The holes, in order, unless there were too many to keep.
    pub fn spans(&self) -> Option<&[(u32, u32)]> {
        (!self.overflow).then(|| &self.spans[..usize::from(self.len)])
    }

    /// Which hole is the text, if one is.
    pub fn text(&self) -> Option<usize> {
        self.text.map(usize::from)
    }
}

/// A position in an event's text.
#[derive(Debug)]
pub struct Cursor<'a> {
    text: &'a str,
    at: usize,
    holes: Holes,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Cursor::at(text, 0)
    }

    /// A cursor at byte `at` of `text`.
    pub fn at(text: &'a str, at: usize) -> Self {
        Cursor {
            text,
            at,
            holes: Holes::default(),
        }
    }

    /// The byte offset reached.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// The holes met so far (borrowed: they are some 130 bytes, copied
    /// only by a caller that keeps them).
    pub fn holes(&self) -> &Holes {
        &self.holes
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes().get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    /// Consumes `byte` (after whitespace) or gives up.
    fn expect(&mut self, byte: u8) -> Scan<()> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// Consumes `null` when it comes next.
    #[inline]
    fn null(&mut self) -> bool {
        let found = self.peek() == Some(b'n') && self.bytes()[self.at..].starts_with(b"null");
        if found {
            self.at += 4;
        }
        found
    }

    /// Nothing but whitespace is left.
    pub fn end(&mut self) -> Scan<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(GiveUp),
        }
    }

    /// Reads the members of an object, calling `member` with each key; it
    /// must consume the value.
    #[inline(always)]
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Scan<()>) -> Scan<()> {
        let mut more = self.open(b'{', b'}')?;
        while more {
            let (key, escaped) = self.pass_string()?;
            // serde matches the unescaped key: leave escaped keys to it.
            if escaped {
                return Err(GiveUp);
            }
            self.expect(b':')?;
            member(self, key)?;
            more = self.after_item(b'}')?;
        }
        Ok(())
    }

    /// Consumes the opening bracket `open`, and `close` too when the
    /// container is empty: whether items follow.
    fn open(&mut self, open: u8, close: u8) -> Scan<bool> {
        self.expect(open)?;
        if self.peek() == Some(close) {
            self.at += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// Consumes what follows an item: a comma (another item follows) or
    /// the closing bracket `close` (the container ended).
    fn after_item(&mut self, close: u8) -> Scan<bool> {
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                Ok(true)
            }
            Some(byte) if byte == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(GiveUp),
        }
    }

    /// Reads an object for the members `names` (by their index in it),
    /// skipping the others. `field` must consume the value. A name twice is
    /// left to serde, which refuses a duplicate field.
    ///
    /// Inlined, so that `names` are constants where the keys are matched:
    /// each comparison is then a load or two, not a call to `bcmp`.
    #[inline(always)]
    pub fn fields<const N: usize>(
        &mut self,
        names: [&str; N],
        mut field: impl FnMut(&mut Self, usize) -> Scan<()>,
    ) -> Scan<()> {
        // One bit a name: clearing an array of flags was a store a name
        // each time.
        const { assert!(N <= 64, "one bit a name") };
        let mut seen = 0u64;
        self.object(
            |cursor, key| match names.iter().position(|name| *name == key) {
                Some(index) if seen & (1 << index) != 0 => Err(GiveUp),
                Some(index) => {
                    seen |= 1 << index;
                    field(cursor, index)
                }
                None => cursor.skip(),
            },
        )
    }

    /// Reads an array holding at most one element, with `element`; gives up
    /// on more (serde would check every one).
    pub fn lone_element<T>(
        &mut self,
        element: impl FnOnce(&mut Self) -> Scan<T>,
    ) -> Scan<Option<T>> {
        if !self.open(b'[', b']')? {
            return Ok(None);
        }
        let value = element(self)?;
        self.expect(b']')?;
        Ok(Some(value))
    }

    /// Reads every element of an array with `element` (which must consume
    /// it).
    pub fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        let mut more = self.open(b'[', b']')?;
        while more {
            element(self)?;
            more = self.after_item(b']')?;
        }
        Ok(())
    }

    /// Reads a plain count: digits only, fitting a `u64`. Anything else (a
    /// sign, a fraction, an exponent, another type) gives up: serde reads
    /// those its own way.
    #[inline]
    pub fn count(&mut self) -> Scan<u64> {
        self.peek();
        // Read here, not by `number` and `str::parse`: an index is a digit
        // or two, and those cost some hundred instructions a count. A run
        // of digits is a count unless it has a leading zero or a fraction
        // or an exponent follows (what `number` would take further).
        let rest = &self.bytes()[self.at..];
        let run = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
        let digits = &rest[..run];
        if digits.is_empty()
            || (digits.len() > 1 && digits[0] == b'0')
            || matches!(rest.get(run), Some(b'.' | b'e' | b'E'))
        {
            return Err(GiveUp);
        }
        let value = digits
            .iter()
            .try_fold(0u64, |value, &digit| {
                value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            })
            .ok_or(GiveUp)?;
        self.at += run;
        Ok(value)
    }

    /// Steps over one value, telling whether it holds anything (seawall-core's
    /// `Presence`: `null`, `""`, `[]` and arrays of those hold nothing).
    pub fn holds(&mut self) -> Scan<bool> {
        self.holds_within(0)
    }

    fn holds_within(&mut self, depth: usize) -> Scan<bool> {
        match self.peek().ok_or(GiveUp)? {
            b'"' => Ok(!self.string_here()?.0.is_empty()),
            b'n' if self.null() => Ok(false),
            b'[' => {
                // Half the limit: an object inside is skipped with a depth
                // count of its own.
                if depth == MAX_DEPTH / 2 {
                    return Err(GiveUp);
                }
                let mut any = false;
                self.elements(|cursor| {
                    any |= cursor.holds_within(depth + 1)?;
                    Ok(())
                })?;
                Ok(any)
            }
            _ => self.skip().map(|()| true),
        }
    }

    /// Reads `null` or a string, telling whether it holds any text;
    /// gives up on any other value (a list of parts is the caller's
    /// serde reading). Escapes are checked, not decoded.
    #[inline]
    pub fn holds_text(&mut self) -> Scan<bool> {
        if self.null() {
            return Ok(false);
        }
        Ok(!self.string_here()?.0.is_empty())
    }

    /// As [`text`](Self::text), and a string read is the event's text
    /// hole (see [`Holes`]).
    #[inline]
    pub fn text_hole(&mut self) -> Scan<Option<Text<'a>>> {
        // `null` looked past the whitespace: the string starts here.
        if self.null() {
            return Ok(None);
        }
        let start = self.at;
        let text = self.string_text()?;
        if self.holes.text.is_none() {
            self.holes.text = Some(self.holes.len);
            self.holes.push(start, self.at);
        } else {
            self.holes.overflow = true;
        }
        Ok(Some(Text(text)))
    }

    /// Steps over a string token whose text nothing reads, keeping its
    /// span as a hole.
    #[inline(always)]
    pub fn pass_hole(&mut self) -> Scan<()> {
        self.peek();
        self.hole_here()
    }

    /// As [`pass_hole`](Self::pass_hole), the whitespace passed already.
    #[inline(always)]
    fn hole_here(&mut self) -> Scan<()> {
        let start = self.at;
        self.string_here()?;
        self.holes.push(start, self.at);
        Ok(())
    }

    /// Reads `null` as `None` and a string as its text (serde's
    /// `Option<Text>`).
    #[inline]
    pub fn text(&mut self) -> Scan<Option<Text<'a>>> {
        if self.null() {
            return Ok(None);
        }
        self.string_text().map(|text| Some(Text(text)))
    }

    /// Steps over one value, telling whether it says something
    /// ([`Truthy`](crate::json::Truthy): not `null`, `false`, `0`, `""`,
    /// `{}` or `[]`).
    pub fn truthy(&mut self) -> Scan<bool> {
        // A string is read, not passed as a hole: whether it is empty
        // decides (a kept shape steps over the strings in its holes).
        if self.peek() == Some(b'"') {
            return Ok(!self.string_here()?.0.is_empty());
        }
        let start = self.at;
        self.skip()?;
        let value = &self.bytes()[start..self.at];
        Ok(match value[0] {
            b'n' | b'f' => false,
            b'{' | b'[' => value[1..value.len() - 1]
                .iter()
                .any(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r')),
            b'-' | b'0'..=b'9' => value
                .iter()
                .take_while(|byte| !matches!(byte, b'e' | b'E'))
                .any(|byte| matches!(byte, b'1'..=b'9')),
            _ => true,
        })
    }

    /// Reads `null` as `None` and an object with `read` (serde's
    /// `Option<T>` of a struct).
    pub fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Scan<T>) -> Scan<Option<T>> {
        if self.null() {
            return Ok(None);
        }
        read(self).map(Some)
    }

    /// Reads a string: borrowed when it has no escapes, unescaped otherwise.
    #[inline]
    pub fn string(&mut self) -> Scan<Cow<'a, str>> {
        self.peek();
        self.string_text()
    }

    /// As [`string`](Self::string), the whitespace passed already.
    #[inline(always)]
    fn string_text(&mut self) -> Scan<Cow<'a, str>> {
        let (raw, escaped) = self.string_here()?;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        unescape(raw).map(Cow::Owned)
    }

    /// Steps over a string, checking it: its raw content, and whether it
    /// holds escapes.
    #[inline(always)]
    fn pass_string(&mut self) -> Scan<(&'a str, bool)> {
        self.peek();
        self.string_here()
    }

    /// As [`pass_string`](Self::pass_string), for a caller that has
    /// looked past the whitespace already (`peek`, `null`): the string
    /// starts right at the cursor. Looking again cost a few instructions
    /// a string, on every string of every event.
    #[inline(always)]
    fn string_here(&mut self) -> Scan<(&'a str, bool)> {
        if self.bytes().get(self.at) != Some(&b'"') {
            return Err(GiveUp);
        }
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at += next_stop(&self.bytes()[self.at..]).ok_or(GiveUp)?;
            match self.bytes()[self.at] {
                b'"' => {
                    let raw = &self.text[start..self.at];
                    self.at += 1;
                    return Ok((raw, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                // A raw control character is not allowed in a JSON string.
                _ => return Err(GiveUp),
            }
        }
    }

    /// Reads the escape at the cursor (`\` included).
    fn escape(&mut self) -> Scan<char> {
        let kind = *self.bytes().get(self.at + 1).ok_or(GiveUp)?;
        self.at += 2;
        Ok(match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate must be followed by a low one.
                        if !self.bytes()[self.at..].starts_with(b"\\u") {
                            return Err(GiveUp);
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(GiveUp);
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code).ok_or(GiveUp)?
                    }
                    0xDC00..=0xDFFF => return Err(GiveUp),
                    _ => char::from_u32(unit).ok_or(GiveUp)?,
                }
            }
            _ => return Err(GiveUp),
        })
    }

    fn hex4(&mut self) -> Scan<u32> {
        let digits = self.bytes().get(self.at..self.at + 4).ok_or(GiveUp)?;
        let mut value = 0;
        for &digit in digits {
            value = value * 16 + char::from(digit).to_digit(16).ok_or(GiveUp)?;
        }
        self.at += 4;
        Ok(value)
    }

    /// Steps over one value of any kind.
    #[inline(always)]
    pub fn skip(&mut self) -> Scan<()> {
        // Bit `i` set: the container open at depth `i` is an object.
        let mut objects: u64 = 0;
        let mut depth = 0;
        loop {
            // A value.
            match self.peek().ok_or(GiveUp)? {
                b'"' => self.hole_here()?,
                b'n' if self.null() => {}
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'-' | b'0'..=b'9' => self.number()?,
                byte @ (b'{' | b'[') => {
                    if depth == MAX_DEPTH {
                        return Err(GiveUp);
                    }
                    self.at += 1;
                    let object = byte == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                    } else {
                        objects = objects & !(1 << depth) | u64::from(object) << depth;
                        depth += 1;
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                _ => return Err(GiveUp),
            }
            // What follows it: more of the same container, or its end.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let object = objects >> (depth - 1) & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    Some(b'}') if object => {
                        self.at += 1;
                        depth -= 1;
                    }
                    Some(b']') if !object => {
                        self.at += 1;
                        depth -= 1;
                    }
                    _ => return Err(GiveUp),
                }
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if !self.bytes()[self.at..].starts_with(word) {
            return Err(GiveUp);
        }
        self.at += word.len();
        Ok(())
    }

    /// A number, by JSON's grammar: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    /// What may follow it is checked by the caller.
    fn number(&mut self) -> Scan<()> {
        if self.bytes()[self.at] == b'-' {
            self.at += 1;
        }
        match self.bytes().get(self.at) {
            Some(b'0') => {
                self.at += 1;
                if self.bytes().get(self.at).is_some_and(u8::is_ascii_digit) {
                    return Err(GiveUp);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(GiveUp),
        }
        if self.bytes().get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        if matches!(self.bytes().get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes().get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        Ok(())
    }

    /// Steps over a run of digits, returning its length.
    fn digits(&mut self) -> usize {
        let run = self.bytes()[self.at..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        self.at += run;
        run
    }

    /// A key and its colon, inside a skipped object.
    fn key(&mut self) -> Scan<()> {
        self.pass_hole()?;
        self.expect(b':')
    }
}

/// The text of a checked string's raw content `raw`, which holds escapes.
/// Apart from [`Cursor::string`]: escapes are rare in the fields read, and
/// the plain case stays small enough to inline.
#[cold]
fn unescape(raw: &str) -> Scan<String> {
    let mut text = String::with_capacity(raw.len());
    let mut inner = Cursor::new(raw);
    while let Some(found) = memchr(b'\\', &inner.bytes()[inner.at..]) {
        text.push_str(&raw[inner.at..inner.at + found]);
        inner.at += found;
        text.push(inner.escape()?);
    }
    text.push_str(&raw[inner.at..]);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Option<Cow<'_, str>> {
        Cursor::new(text).string().ok()
    }

    /// What `read` reads of the whole of `text`, nothing left after it.
    fn whole<'a, T>(text: &'a str, read: impl FnOnce(&mut Cursor<'a>) -> Scan<T>) -> Option<T> {
        let mut cursor = Cursor::new(text);
        let value = read(&mut cursor).ok()?;
        cursor.end().ok()?;
        Some(value)
    }

    fn skips(text: &str) -> bool {
        let mut cursor = Cursor::new(text);
        cursor.skip().is_ok() && cursor.end().is_ok()
    }

    #[test]
    fn strings_borrow_without_escapes_and_unescape_with_them() {
        assert!(matches!(string(r#""plain""#), Some(Cow::Borrowed("plain"))));
        assert_eq!(string(r#""a\nb\"c\\d\/""#).unwrap(), "a\nb\"c\\d/");
        assert_eq!(string(r#""caf\u00e9 \ud83d\ude00""#).unwrap(), "café 😀");
        assert_eq!(string(r#""\b\f\n\r\t""#).unwrap(), "\u{8}\u{c}\n\r\t");
        assert_eq!(string("\"ok\u{7f}\"").unwrap(), "ok\u{7f}");
    }

    #[test]
    fn the_first_stop_is_found_at_every_offset() {
        for length in 0..24 {
            for stop in [b'"', b'\\', 0x00, 0x1f] {
                let mut bytes = vec![b'a'; length];
                assert_eq!(next_stop(&bytes), None);
                for at in 0..length {
                    bytes.fill(b'a');
                    // Bytes the word tricks could mistake: just above the
                    // limits, and the stops' neighbours.
                    for (i, byte) in bytes.iter_mut().enumerate() {
                        *byte = [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff][i % 8];
                    }
                    bytes[at] = stop;
                    if at + 1 < length {
                        bytes[at + 1] = b'"';
                    }
                    assert_eq!(next_stop(&bytes), Some(at), "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn doubtful_strings_give_up() {
        for text in [
            r#""lone \ud83d""#,
            r#""low \ude00""#,
            r#""bad \x""#,
            r#""short \u12""#,
            "\"raw\ttab\"",
            r#""unterminated"#,
        ] {
            assert!(string(text).is_none(), "{text}");
        }
    }

    #[test]
    fn holds_says_what_presence_says() {
        fn holds(text: &str) -> Option<bool> {
            whole(text, Cursor::holds)
        }
        for (text, held) in [
            ("null", false),
            ("\"\"", false),
            ("[]", false),
            ("[null, \"\", []]", false),
            ("\"a\"", true),
            ("0", true),
            ("false", true),
            ("{}", true),
            ("[null, {}]", true),
            ("[[\"x\"]]", true),
        ] {
            assert_eq!(holds(text), Some(held), "{text}");
        }
        // Arrays nest in `holds` up to half the skip limit, then it gives up.
        let nested = |depth: usize| "[".repeat(depth) + "1" + &"]".repeat(depth);
        assert_eq!(holds(&nested(MAX_DEPTH / 2)), Some(true));
        assert_eq!(holds(&nested(MAX_DEPTH / 2 + 1)), None);
        assert_eq!(holds("[null,"), None);
        assert_eq!(holds("nul"), None);
    }

    #[test]
    fn elements_are_read_one_by_one() {
        fn count(text: &str) -> Option<usize> {
            whole(text, |cursor| {
                let mut seen = 0;
                cursor.elements(|cursor| {
                    seen += 1;
                    cursor.skip()
                })?;
                Ok(seen)
            })
        }
        assert_eq!(count(" [ ] "), Some(0));
        assert_eq!(count("[1, {\"a\":[2]} ,\"3\"]"), Some(3));
        // `null` is no array: a caller that allows it says so (`nullable`).
        for broken in ["[1,]", "[1 2]", "[1", "{}", "null"] {
            assert!(count(broken).is_none(), "{broken}");
        }
        // Each container closes with its own bracket.
        assert!(count("[1}").is_none());
        let fields = |text: &str| {
            let mut cursor = Cursor::new(text);
            cursor.fields(["a"], |cursor, _| cursor.skip())?;
            cursor.end()
        };
        assert!(fields(r#"{"a":1,"b":[2]}"#).is_ok());
        assert!(fields(r#"{"a":1]"#).is_err());
        assert!(fields(r#"{"a":1 "b":2}"#).is_err());
    }

    #[test]
    fn holes_are_the_strings_no_decision_reads_and_the_text_read() {
        let text = r#"{"id":"c1","content":"hi","n":2}"#;
        let mut cursor = Cursor::new(text);
        let mut content = None;
        cursor
            .fields(["content"], |cursor, _| {
                content = cursor.text_hole()?;
                Ok(())
            })
            .unwrap();
        assert_eq!(cursor.offset(), text.len());
        assert_eq!(content.map(|t| t.0.into_owned()), Some("hi".to_owned()));
        let holes = cursor.holes();
        let spans: Vec<&str> = holes
            .spans()
            .unwrap()
            .iter()
            .map(|&(start, end)| &text[start as usize..end as usize])
            .collect();
        // The value of the skipped `id` and the text: the keys of the
        // object being read are matched, so they are not holes.
        assert_eq!(spans, [r#""c1""#, r#""hi""#]);
        assert_eq!(holes.text(), Some(1));
        let mut cursor = Cursor::new(r#"["hi","x"]"#);
        cursor.lone_element(|cursor| cursor.text_hole()).ok();
        assert_eq!(cursor.holes().text(), Some(0));
        assert_eq!(Cursor::new("{}").holes().text(), None);

        // More strings than the holes hold: no spans to keep.
        let crowded = format!(
            "{{{}\"z\":0}}",
            (0..MAX_HOLES)
                .map(|i| format!("\"k{i}\":\"v\","))
                .collect::<String>()
        );
        let mut cursor = Cursor::new(&crowded);
        cursor.skip().unwrap();
        assert_eq!(cursor.holes().spans(), None);
        // A second text read is no shape either.
        let mut cursor = Cursor::new(r#"["a","b"]"#);
        cursor
            .elements(|cursor| cursor.text_hole().map(drop))
            .unwrap();
        assert_eq!(cursor.holes().spans(), None);
    }

    #[test]
    fn a_field_twice_is_left_to_serde() {
        let read = |text: &str| {
            let mut cursor = Cursor::new(text);
            cursor.fields(["a"], |cursor, _| cursor.skip())
        };
        assert!(
            read(r#"{"a":1,"b":2,"b":3}"#).is_ok(),
            "unread keys may repeat"
        );
        assert!(read(r#"{"a":1,"a":2}"#).is_err());
    }

    #[test]
    fn counts_are_plain_integers_that_fit() {
        fn count(text: &str) -> Option<u64> {
            whole(text, Cursor::count)
        }
        assert_eq!(count(" 0"), Some(0));
        assert_eq!(count("1234"), Some(1234));
        assert_eq!(count("18446744073709551615"), Some(u64::MAX));
        for other in [
            "18446744073709551616",
            "-1",
            "-0",
            "1.0",
            "1e3",
            "1E3",
            "1.",
            "01",
            "00",
            "-",
            "\"7\"",
            "null",
            "",
        ] {
            assert_eq!(count(other), None, "{other}");
        }
    }

    #[test]
    fn a_lone_element_is_read_and_more_are_left_to_serde() {
        fn lone(text: &str) -> Option<Option<u64>> {
            whole(text, |cursor| cursor.lone_element(Cursor::count))
        }
        assert_eq!(lone(" [ ] "), Some(None));
        assert_eq!(lone("[ 7 ]"), Some(Some(7)));
        assert_eq!(lone("[1,2]"), None);
        assert_eq!(lone("null"), None);
    }

    #[test]
    fn skips_nested_values_and_gives_up_on_what_serde_must_judge() {
        assert!(skips(r#"{"a":[{"b":null},[],{}],"c":"d"}"#));
        assert!(skips(r#" [ "x" , { "y" : [ null ] } ] "#));
        assert!(skips(r#"[0,-1,12.5,1e9,-0.0E-3,true,false]"#));
        // An array where an object was open at the same depth before, and
        // the other way round: each container is closed by its own bracket.
        assert!(skips(r#"[{"a":1},[1,2],{"b":2,"c":3}]"#));
        assert!(skips(r#"{"a":[1,2],"b":{"c":1,"d":2},"e":[3,4]}"#));
        for text in [
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":1e}"#,
            r#"{"a":-}"#,
            r#"{"a":+1}"#,
            r#"{"a":1x}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{"a" "b"}"#,
            r#"[null,]"#,
            r#"{"a":null"#,
            r#"{"a":null}}"#,
            r#"{"a":[}"#,
            r#"[1}"#,
            r#"{"a":1]"#,
            r#"[{"a":1]]"#,
            r#"{"a":[1}}"#,
        ] {
            assert!(!skips(text), "{text}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(!skips(&deep));
        let fits = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(skips(&fits));
    }
}
