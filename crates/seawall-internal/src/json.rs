//! Borrowed JSON text and the UTF-8-once parse: what seawall-core's
//! provider tables and seawall-stream's decoders read JSON with; the
//! members of a request body that seawall reads; and how a body opens
//! (byte order mark, blanks), for the classification and the stream guard.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use serde::de::{Deserialize, Deserializer, IgnoredAny, SeqAccess, Visitor};

use crate::nesting::Nesting;

/// The UTF-8 byte order mark, which a body may open with (RFC 8259 lets a
/// JSON parser ignore it; WHATWG's event-stream parser skips it).
pub const UTF8_BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Whether `data` is all a byte order mark holds so far: nothing, its
/// first bytes split from the rest by a frame, or the whole mark. What
/// follows decides what the body opens with.
pub fn bom_so_far(data: &[u8]) -> bool {
    UTF8_BOM.starts_with(data)
}

/// `data` without a leading UTF-8 byte order mark.
pub fn without_bom(data: &[u8]) -> &[u8] {
    data.strip_prefix(&UTF8_BOM[..]).unwrap_or(data)
}

/// The first byte of `data` that is not ASCII whitespace, after a byte
/// order mark: what a body opens with. `None` while only blanks came, or
/// the first bytes of a mark split across frames.
pub fn opening(data: &[u8]) -> Option<u8> {
    Opening::default().feed(data)
}

/// What a body opens with, read frame by frame ([`opening`] of the frames
/// joined): a byte order mark split across frames is read past as the
/// whole mark it is, where each frame read alone would open the body with
/// the mark's last bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opening {
    /// How many bytes of [`UTF8_BOM`] the body began with so far.
    mark: u8,
    /// The body is past where a mark can be: the whole mark, or another
    /// byte, came first.
    past_mark: bool,
}

impl Opening {
    /// Reads the body's next frame: its first byte that is not ASCII
    /// whitespace after the mark, once one came. `None` while only blanks
    /// (or the mark's first bytes) came.
    pub fn feed(&mut self, data: &[u8]) -> Option<u8> {
        let mut rest = data;
        while !self.past_mark {
            let (&byte, after) = rest.split_first()?;
            if byte != UTF8_BOM[usize::from(self.mark)] {
                self.past_mark = true;
                // The mark's first bytes, and then no mark: the body
                // opened with its first byte.
                if self.mark > 0 {
                    return Some(UTF8_BOM[0]);
                }
                break;
            }
            self.mark += 1;
            self.past_mark = usize::from(self.mark) == UTF8_BOM.len();
            rest = after;
        }
        rest.iter()
            .copied()
            .find(|byte| !byte.is_ascii_whitespace())
    }
}

/// JSON's whitespace (RFC 8259: space, tab, line feed, carriage return).
pub fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Reads JSON of shape `T`, or `None` when `data` is not UTF-8 or not JSON
/// of that shape. A leading byte order mark is read past (RFC 8259 lets a
/// parser ignore one), as by every reader here.
///
/// The data is checked as UTF-8 once, whole, so serde_json need not check
/// each string again (measured faster than `from_slice` on typical chunks).
pub fn parse<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Option<T> {
    serde_json::from_str(std::str::from_utf8(without_bom(data)).ok()?).ok()
}

/// Reads JSON of shape `T` with the result of `serde_json::from_slice`.
///
/// Data that is valid UTF-8 (nearly all) is checked once, whole, and read
/// as text, as [`parse`] does; any other data is read by `from_slice`, which
/// may still accept it (serde_json does not check the strings it skips).
pub fn from_bytes<'a, T: Deserialize<'a>>(data: &'a [u8]) -> serde_json::Result<T> {
    let data = without_bom(data);
    match std::str::from_utf8(data) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(data),
    }
}

/// The end marker of OpenAI's chat stream, as an event's whole data.
pub const DONE_MARKER: &[u8] = b"[DONE]";

/// Whether an event's data is the `[DONE]` marker as the OpenAI SDK reads
/// one: data that starts with it, whatever follows (openai-python's
/// `sse.data.startswith("[DONE]")`).
pub fn is_done_marker(data: &[u8]) -> bool {
    data.starts_with(DONE_MARKER)
}

/// Whether `first`, the first byte of a body after its blanks
/// ([`opening`]), opens an event stream: a field line (`data`, `event`,
/// `id`, `retry`) or a comment — and, as much, many a plain-text page
/// ("rate limit exceeded", "internal error").
pub fn opens_event_stream(first: u8) -> bool {
    matches!(first, b'd' | b'e' | b'i' | b'r' | b':')
}

/// Whether a media type (a `content-type` without its parameters) is
/// JSON: `application/json` or any `+json` type.
pub fn is_json_media(media: &[u8]) -> bool {
    media.eq_ignore_ascii_case(b"application/json")
        || (media.len() > 5 && media[media.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

/// `data` with every lone surrogate escape (`\ud83d` with no low half
/// after it, a low half with no high one before it) written as `\ufffd`,
/// the replacement character; `None` when it has none.
///
/// JSON's grammar allows such an escape and JavaScript writes one when it
/// cuts a string between the halves of a pair (a proxy slicing an emoji
/// by UTF-16 index, then `JSON.stringify`), but serde refuses the whole
/// document for it. Read after the repair, such an event is the text it
/// carries, one character replaced, instead of an event skipped with its
/// text. The escape and its replacement have the same length, so every
/// other byte stays where it was.
pub fn repair_lone_surrogates(data: &[u8]) -> Option<Vec<u8>> {
    let mut repaired: Option<Vec<u8>> = None;
    let mut at = 0;
    // Whether the escape before `at` was a high half still waiting for its
    // low one, and where it starts.
    let mut high: Option<usize> = None;
    while let Some(found) = memchr::memchr(b'\\', &data[at..]) {
        let escape = at + found;
        let unit = match data.get(escape + 1) {
            Some(b'u') => data
                .get(escape + 2..escape + 6)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u16::from_str_radix(hex, 16).ok()),
            _ => None,
        };
        // A high half is followed by its low half at once, or it is alone.
        let adjacent = high.is_some_and(|start| start + 6 == escape);
        if let Some(start) = high
            .take()
            .filter(|_| !adjacent || !matches!(unit, Some(0xDC00..=0xDFFF)))
        {
            replace(&mut repaired, data, start);
        }
        match unit {
            Some(0xD800..=0xDBFF) => high = Some(escape),
            Some(0xDC00..=0xDFFF) if !adjacent => replace(&mut repaired, data, escape),
            _ => {}
        }
        at = escape + if unit.is_some() { 6 } else { 2 };
        if at >= data.len() {
            break;
        }
    }
    if let Some(start) = high {
        replace(&mut repaired, data, start);
    }
    repaired
}

/// Writes `\ufffd` over the escape at `start` of a copy of `data`.
fn replace(repaired: &mut Option<Vec<u8>>, data: &[u8], start: usize) {
    let copy = repaired.get_or_insert_with(|| data.to_vec());
    copy[start..start + 6].copy_from_slice(b"\\ufffd");
}

/// A copy of the JSON object `data` with the values of its top-level
/// members named in `names` written as `null`, or `None` when it has none
/// of them (or is not an object the cursor reads whole). A value serde
/// refuses though it is JSON by the grammar (a number out of any float's
/// range: `1e400`) then no longer refuses the document around it.
pub fn null_members<const N: usize>(data: &[u8], names: [&str; N]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(data).ok()?;
    let mut cursor = crate::cursor::Cursor::new(text);
    let mut spans: Vec<Range<usize>> = Vec::new();
    cursor
        .fields(names, |cursor, _| {
            let start = cursor.offset();
            cursor.skip()?;
            spans.push(start..cursor.offset());
            Ok(())
        })
        .ok()?;
    cursor.end().ok()?;
    if spans.is_empty() {
        return None;
    }
    let mut copy = Vec::with_capacity(data.len());
    let mut at = 0;
    for span in spans {
        copy.extend_from_slice(&data[at..span.start]);
        copy.extend_from_slice(b" null");
        at = span.end;
    }
    copy.extend_from_slice(&data[at..]);
    Some(copy)
}

/// A JSON string, borrowed from the input when it has no escapes.
///
/// (`Option<Cow<str>>` with `#[serde(borrow)]` would always allocate:
/// serde borrows through `Cow` only where it is not wrapped.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor(PhantomData))
    }
}

impl<'a> Text<'a> {
    /// The text, or `None` when it is empty.
    pub fn non_empty(self) -> Option<Cow<'a, str>> {
        (!self.0.is_empty()).then_some(self.0)
    }
}

/// A member that is a string in the shapes a reader knows and may be
/// anything in others, read leniently: the string, or `None` for any other
/// value (stepped over), never an error that would make the whole event
/// unreadable (the Responses API's shell output delta is an object where
/// every other `delta` is a string).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MaybeText<'a>(pub Option<Text<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MaybeTextVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MaybeTextVisitor<'a> {
            type Value = MaybeText<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeText(Some(Text(Cow::Borrowed(v)))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeText(Some(Text(Cow::Owned(v.to_owned())))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(MaybeText(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }
        }
        deserializer.deserialize_any(MaybeTextVisitor(PhantomData))
    }
}

/// The members of a generation request's body that seawall reads: the
/// model it names, whether it asks for a stream, and (read by
/// [`read_last_wins`](Self::read_last_wins) only) how many choices it
/// asks for. Every other member is stepped over, never built into values,
/// so a long conversation costs one scan and no allocation (a
/// `serde_json::Value` of the body would cost one per string). The
/// request facts (seawall-core) and the gateway read bodies with it.
#[derive(Debug, Default, serde::Deserialize)]
pub struct RequestMembers<'a> {
    /// `"model"`, a string (or `null`, or missing).
    #[serde(borrow, default)]
    pub model: Option<Text<'a>>,
    /// `"stream"`, a boolean (or `null`, or missing).
    #[serde(default)]
    pub stream: Option<bool>,
    /// `"background": true` (the Responses API's background mode): the
    /// provider runs the response whether or not anyone reads it. Any
    /// other value is not true, and no error.
    #[serde(default)]
    pub background: Flag,
    /// `"n"`: how many choices an OpenAI chat or completions request asks
    /// for. Read by [`read_last_wins`](Self::read_last_wins) only: `read`
    /// (the gateway's) steps over it, so a body naming it twice is not
    /// refused for a member the gateway does not use.
    #[serde(skip)]
    pub n: Count,
    /// `generationConfig.candidateCount` (or `generation_config.
    /// candidate_count`: Google's proto3 JSON reading takes either
    /// spelling): how many candidates a Gemini request asks for. Read by
    /// [`read_last_wins`](Self::read_last_wins) only, as `n` is.
    #[serde(skip)]
    pub candidate_count: Count,
}

/// A member that counts something, read leniently: never an error for a
/// well-formed value, so a count of another type leaves the body's other
/// members read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A whole, non-negative number: an integer, or one written with a
    /// zero fraction (`2.0`, which pydantic-based servers take as `2`).
    Number(u64),
    /// A string holding a whole, non-negative number (`"2"`), as the
    /// proto3 JSON mapping reads an integer field (Google's APIs).
    Quoted(u64),
    /// Missing, `null`, or anything else: a fraction, a negative number,
    /// one past `u64`, another type.
    #[default]
    Other,
}

impl Count {
    /// The number, taking a [`Count::Quoted`] one only when `quoted` (the
    /// reader's wire reads integers from strings).
    pub fn whole(self, quoted: bool) -> Option<u64> {
        match self {
            Count::Number(count) => Some(count),
            Count::Quoted(count) if quoted => Some(count),
            _ => None,
        }
    }
}

/// The longest string read as a [`Count::Quoted`]: `u64::MAX` is 20
/// digits, and `"2.0"` spellings a few more.
const MAX_QUOTED_COUNT: usize = 32;

/// `value` as a whole, non-negative number, when it is one.
fn whole(value: f64) -> Option<u64> {
    // `u64::MAX as f64` rounds up to 2^64, itself out of range.
    (value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64).then_some(value as u64)
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count::Other)
            }
            fn visit_u64<E>(self, v: u64) -> Result<Count, E> {
                Ok(Count::Number(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Count, E> {
                Ok(u64::try_from(v).map_or(Count::Other, Count::Number))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Count, E> {
                Ok(whole(v).map_or(Count::Other, Count::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<Count, E> {
                // No count is spelled in more than a few digits: a long
                // string is none, and is not scanned again.
                if v.len() > MAX_QUOTED_COUNT {
                    return Ok(Count::Other);
                }
                let count = v
                    .parse::<u64>()
                    .ok()
                    .or_else(|| v.parse::<f64>().ok().and_then(whole));
                Ok(count.map_or(Count::Other, Count::Quoted))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Count::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count::Other)
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

/// Gemini's `generationConfig`, for its candidate count alone: any other
/// member is stepped over, and a value that is no object counts nothing
/// (never an error).
struct GenerationConfig(Count);

impl<'de> Deserialize<'de> for GenerationConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ConfigVisitor;
        impl<'de> Visitor<'de> for ConfigVisitor {
            type Value = GenerationConfig;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<GenerationConfig, A::Error> {
                let mut count = Count::Other;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        // Named twice, the last one counts.
                        Key::CandidateCount => count = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(GenerationConfig(count))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(GenerationConfig(Count::Other))
            }
        }
        deserializer.deserialize_any(ConfigVisitor)
    }
}

/// A member that counts when it is `true`; any other value (another type
/// included) reads as `false` without failing the body.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Flag(matches!(
            Scalar::deserialize(deserializer)?,
            Scalar::Bool(true)
        )))
    }
}

/// Any JSON value, read leniently for the one scalar a reader wants: a
/// boolean or an integer as it is, anything else (a float, a string,
/// `null`, a container, stepped over) as [`Scalar::Other`]. Never an
/// error for a well-formed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    Unsigned(u64),
    /// A negative integer.
    Negative(i64),
    /// Anything else.
    Other,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Unsigned(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(u64::try_from(v).map_or(Scalar::Negative(v), Scalar::Unsigned))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

impl<'a> RequestMembers<'a> {
    /// Reads `body`, which must be one JSON object. An error otherwise,
    /// and when a member is named twice (serde refuses a duplicate field:
    /// no reader of the body may pick another `model` than seawall did),
    /// the model is not a string or `stream` not a boolean.
    pub fn read(body: &'a str) -> serde_json::Result<Self> {
        // serde's derive also reads a struct from an array (`["m",
        // true]`): not a request body.
        an_object(body)?;
        serde_json::from_str(body)
    }

    /// [`read`](Self::read), but a member named twice takes its last
    /// value, as the providers' readers do (Python's `json`, Go's
    /// `encoding/json`): for a reader that must see the body as the
    /// provider will (the request facts), where `read` is for one that
    /// refuses such a body (the gateway). Only the last value's type
    /// counts: an earlier one is dropped with it. Allocates no more than
    /// `read`.
    pub fn read_last_wins(body: &'a str) -> serde_json::Result<Self> {
        an_object(body)?;
        serde_json::from_str::<LastWins<'a>>(body).map(|last| last.0)
    }

    /// Where the model's name stands in `body` (the text it was read
    /// from), when the JSON spelled it without escapes: `body[range]` is
    /// the name, with its quotes right around it.
    pub fn model_span(&self, body: &str) -> Option<Range<usize>> {
        match &self.model.as_ref()?.0 {
            Cow::Borrowed(name) => {
                let start = (name.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
                let range = start..start + name.len();
                (range.end <= body.len()).then_some(range)
            }
            Cow::Owned(_) => None,
        }
    }

    /// Where the model's name is spelled in `body`, escapes and all:
    /// `body[range]` is its token inside its quotes (the name itself when
    /// unescaped). `None` when it is not a top-level string of `body`. For
    /// rewriting the name in place: an escaped name (`meta\/llama`, as PHP
    /// writes a slash) was unescaped into a copy, so its token is looked
    /// for.
    pub fn model_token(&self, body: &str) -> Option<Range<usize>> {
        match &self.model.as_ref()?.0 {
            Cow::Borrowed(_) => self.model_span(body),
            Cow::Owned(_) => escaped_model_span(body),
        }
    }
}

/// An error unless `body` opens with an object (blanks before it aside).
fn an_object(body: &str) -> serde_json::Result<()> {
    let start = body.trim_start_matches([' ', '\t', '\n', '\r']);
    if start.starts_with('{') {
        Ok(())
    } else {
        Err(serde::de::Error::custom("expected a JSON object"))
    }
}

/// [`RequestMembers`] read with the last of a repeated member winning
/// ([`RequestMembers::read_last_wins`]).
struct LastWins<'a>(RequestMembers<'a>);

/// A member of the request body that [`LastWins`] reads.
enum Key {
    Model,
    Stream,
    Background,
    N,
    GenerationConfig,
    /// Inside `generationConfig` only.
    CandidateCount,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member's name")
            }
            // An escaped name comes here unescaped, from serde_json's
            // scratch buffer: no copy.
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "model" => Key::Model,
                    "stream" => Key::Stream,
                    "background" => Key::Background,
                    "n" => Key::N,
                    "generationConfig" | "generation_config" => Key::GenerationConfig,
                    "candidateCount" | "candidate_count" => Key::CandidateCount,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A value of `model` or `stream`, of whatever type: its type is checked
/// only once it is known to be the last (an earlier value of another type
/// is dropped, as the provider drops it).
enum Member<'a> {
    Null,
    Bool(bool),
    Text(Text<'a>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MemberVisitor<'a> {
            type Value = Member<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Member::Text(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Member::Text(Text(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Member::Bool(v))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Member::Null)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Member::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Member::Other)
            }
        }
        deserializer.deserialize_any(MemberVisitor(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LastWins<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LastWinsVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for LastWinsVisitor<'a> {
            type Value = LastWins<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error;
                let (mut model, mut stream) = (Member::Null, Member::Null);
                let mut background = Flag::default();
                let (mut n, mut candidate_count) = (Count::Other, Count::Other);
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Model => model = map.next_value()?,
                        Key::Stream => stream = map.next_value()?,
                        Key::Background => background = map.next_value()?,
                        Key::N => n = map.next_value()?,
                        Key::GenerationConfig => {
                            candidate_count = map.next_value::<GenerationConfig>()?.0;
                        }
                        // Counts only inside `generationConfig`.
                        Key::CandidateCount | Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                // As `read` takes them: a string or `null`, a boolean or
                // `null`.
                let model = match model {
                    Member::Null => None,
                    Member::Text(name) => Some(name),
                    _ => return Err(A::Error::custom("\"model\" is not a string")),
                };
                let stream = match stream {
                    Member::Null => None,
                    Member::Bool(stream) => Some(stream),
                    _ => return Err(A::Error::custom("\"stream\" is not a boolean")),
                };
                Ok(LastWins(RequestMembers {
                    model,
                    stream,
                    background,
                    n,
                    candidate_count,
                }))
            }
        }
        deserializer.deserialize_map(LastWinsVisitor(PhantomData))
    }
}

/// The top-level `model` string's token in `body`, inside its quotes.
///
/// `body` was read as JSON already (`RequestMembers::read`), so this only
/// walks its tokens: strings are stepped over by their quotes, never
/// decoded (a lone surrogate elsewhere is no obstacle), and containers by
/// [`Nesting`]'s depth count, not recursion (nor is deep nesting). A key
/// spelled with escapes (`"mod\u0065l"`) is matched too: a caller that
/// found no place would have to read the whole body into values to set the
/// name, which a hostile body padded to the cap makes cost 16 to 32 times
/// its size.
fn escaped_model_span(body: &str) -> Option<Range<usize>> {
    let bytes = body.as_bytes();
    let skip_blanks = |at: &mut usize| {
        while bytes.get(*at).copied().is_some_and(is_blank) {
            *at += 1;
        }
    };
    // Past the end of the string, object or array opening at `at`.
    let value_end = |at: usize| Some(at + Nesting::default().scan(bytes.get(at..)?)?);
    let mut at = bytes.len() - without_bom(bytes).len();
    skip_blanks(&mut at);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        skip_blanks(&mut at);
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = value_end(at)?;
        // Quotes included: cut at ASCII quotes, so at char boundaries.
        let key = &body[at..key_end];
        at = key_end;
        skip_blanks(&mut at);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        skip_blanks(&mut at);
        let value = at;
        match *bytes.get(at)? {
            b'"' | b'{' | b'[' => at = value_end(at)?,
            // A number, `true`, `false`, `null`.
            _ => {
                while bytes
                    .get(at)
                    .is_some_and(|&b| b != b',' && b != b'}' && !is_blank(b))
                {
                    at += 1;
                }
            }
        }
        if names_model(key) {
            return (bytes[value] == b'"').then(|| value + 1..at - 1);
        }
        skip_blanks(&mut at);
        if bytes.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

/// Whether `key`, a key's string token (quotes included), says `model`,
/// escaped or not. Only a token short enough to spell it with every
/// letter escaped (`\u006d` is six bytes) is decoded, by the cursor's
/// unescaping: a long key costs no copy.
fn names_model(key: &str) -> bool {
    const MODEL: &str = "model";
    if key.get(1..key.len() - 1) == Some(MODEL) {
        return true;
    }
    if key.len() > 6 * MODEL.len() + 2 || !key.contains('\\') {
        return false;
    }
    crate::cursor::Cursor::new(key)
        .string()
        .is_ok_and(|key| key == MODEL)
}

#[cfg(test)]
mod tests {
    #[test]
    fn named_members_are_written_null() {
        let body = br#"{"a":1,"usage":{"n":1e400},"b":[2]}"#;
        let copy = super::null_members(body, ["usage"]).unwrap();
        assert_eq!(copy, br#"{"a":1,"usage": null,"b":[2]}"#);
        assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
        assert!(serde_json::from_slice::<serde_json::Value>(&copy).is_ok());
        assert_eq!(super::null_members(br#"{"a":1}"#, ["usage"]), None);
        assert_eq!(super::null_members(br#"{"usage":1"#, ["usage"]), None);
        assert_eq!(super::null_members(b"[1]", ["usage"]), None);
    }

    use super::*;

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        let repaired = |data: &str| {
            repair_lone_surrogates(data.as_bytes()).map(|bytes| String::from_utf8(bytes).unwrap())
        };
        assert_eq!(repaired(r#"{"t":"a \ud83d\ude00 \n \\ud83d"}"#), None);
        assert_eq!(repaired(r#"{"t":"a"}"#), None);
        assert_eq!(
            repaired(r#"{"t":"a \ud83d"}"#).as_deref(),
            Some(r#"{"t":"a \ufffd"}"#)
        );
        // A low half first, a high half before another high one, a high
        // half before an escape that is no low one, halves in two strings.
        assert_eq!(
            repaired(r#"["\uDE00\uD83D\uD83D\uDE00","\ud83d\n","\ud83d","\ude00",x\"#).as_deref(),
            Some(r#"["\ufffd\ufffd\uD83D\uDE00","\ufffd\n","\ufffd","\ufffd",x\"#)
        );
        for repaired in [r#"{"t":"\ud83d"}"#, r#"{"t":"\ud83d\u0041"}"#] {
            let fixed = repair_lone_surrogates(repaired.as_bytes()).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
            assert!(value["t"].as_str().unwrap().starts_with('\u{fffd}'));
        }
    }

    #[test]
    fn a_body_opens_after_its_byte_order_mark_and_blanks() {
        assert_eq!(opening(b"\xEF\xBB\xBF \r\n{}"), Some(b'{'));
        assert_eq!(opening(b"\xEF\xBB\xBF  "), None);
        // A mark split across frames: nothing opened yet.
        assert_eq!(opening(b"\xEF"), None);
        assert_eq!(opening(b"\xEF\xBB"), None);
        assert_eq!(opening(b"\xEF{"), Some(0xEF));
        assert_eq!(opening(b" \xEF\xBB\xBF{"), Some(0xEF));
        // Frame by frame, a mark split anywhere is read past as one.
        let body: &[u8] = b"\xEF\xBB\xBF \r\n{}";
        for cut in 0..=body.len() {
            let mut opening = Opening::default();
            let (head, tail) = body.split_at(cut);
            let first = opening.feed(head).or_else(|| opening.feed(tail));
            assert_eq!(first, Some(b'{'), "cut at {cut}");
        }
        let mut opening = Opening::default();
        assert_eq!(opening.feed(b"\xEF\xBB"), None);
        assert_eq!(opening.feed(b"x"), Some(0xEF));
        assert_eq!(without_bom(b"\xEF\xBBx"), b"\xEF\xBBx");
        // JSON's blanks are four: a form feed is ASCII whitespace, not one.
        assert!(is_blank(b'\t') && !is_blank(0x0C));
    }

    #[derive(serde::Deserialize)]
    struct Field<'a> {
        #[serde(borrow, default)]
        text: Option<Text<'a>>,
    }

    #[test]
    fn text_borrows_unless_escaped() {
        let plain: Field<'_> = parse(br#"{"text":"plain"}"#).unwrap();
        assert!(matches!(plain.text, Some(Text(Cow::Borrowed("plain")))));
        let escaped: Field<'_> = parse(br#"{"text":"a\"b"}"#).unwrap();
        assert!(matches!(escaped.text, Some(Text(Cow::Owned(ref s))) if s == "a\"b"));
        assert_eq!(Text(Cow::Borrowed("")).non_empty(), None);
    }

    #[test]
    fn request_members_are_read_from_an_object_only() {
        let body =
            r#" {"messages":[{"role":"user","content":"\"hi\""}],"model":"gpt-x","stream":true}"#;
        let members = RequestMembers::read(body).unwrap();
        assert_eq!(members.stream, Some(true));
        let span = members.model_span(body).unwrap();
        assert_eq!(&body[span.start - 1..span.end + 1], "\"gpt-x\"");
        // Escaped: the name is read unescaped; it stands nowhere in the
        // body, but its token is where the body spells it.
        let escaped = r#"{"messages":[{"model":"no"}], "model" : "gpt-\u0078\/y" ,"n":1}"#;
        let members = RequestMembers::read(escaped).unwrap();
        assert_eq!(members.model.as_ref().map(|m| &*m.0), Some("gpt-x/y"));
        assert_eq!(members.model_span(escaped), None);
        let token = members.model_token(escaped).unwrap();
        assert_eq!(
            &escaped[token.start - 1..token.end + 1],
            r#""gpt-\u0078\/y""#
        );
        let span = RequestMembers::read(body)
            .unwrap()
            .model_token(body)
            .unwrap();
        assert_eq!(&body[span], "gpt-x");
        // Found past what a decoding reader gives up on: a lone surrogate,
        // deep nesting, a quote escaped inside a string.
        let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
        let hostile =
            format!(r#"{{"a":"\ud83d","b":{deep},"c":"say \"model\":","model":"m\/x","d":1}}"#);
        let token = escaped_model_span(&hostile).unwrap();
        assert_eq!(&hostile[token], r"m\/x");
        // An escaped key is the same key: found, not left to a reader
        // that builds the whole body into values.
        let key = r#"{"mod\u0065l" : "x\/y","n":1}"#;
        assert_eq!(escaped_model_span(key).map(|r| &key[r]), Some(r"x\/y"));
        let every = r#"{"\u006d\u006F\u0064\u0065\u006c":"x"}"#;
        assert_eq!(escaped_model_span(every).map(|r| &every[r]), Some("x"));
        assert_eq!(escaped_model_span(r#"{"mod\u0065ls":"x"}"#), None);
        assert_eq!(
            escaped_model_span(r#" {"n":[1,{"model":"no"}],"model" : "yes" } "#).map(|r| r.len()),
            Some(3)
        );
        let none = RequestMembers::read("{}").unwrap();
        assert!(none.model.is_none() && none.stream.is_none());
        assert_eq!(none.model_span("{}"), None);
        for refused in [
            r#"["gpt-x",true]"#,
            r#"{"model":"a","model":"b"}"#,
            r#"{"model":"a","stream":true,"stream":false}"#,
            r#"{"model":7}"#,
            r#"{"model":"a","stream":"true"}"#,
            r#"{"model":"a"} x"#,
            "",
            "null",
        ] {
            assert!(RequestMembers::read(refused).is_err(), "{refused}");
        }
    }

    /// The counts of choices: read by `read_last_wins`, the last of a
    /// repeat winning, leniently (never an error, so the body's other
    /// members stay read); `read` steps over them, and refuses no body
    /// for naming them twice.
    #[test]
    fn choice_counts_are_read_leniently_the_last_winning() {
        let body = r#"{"n":1,"model":"m","generationConfig":{"candidateCount":"3","candidate_count":2},"n":2.0,"stream":true}"#;
        let members = RequestMembers::read_last_wins(body).unwrap();
        assert_eq!(members.n, Count::Number(2));
        assert_eq!(members.candidate_count, Count::Number(2));
        assert_eq!(members.stream, Some(true));
        let strict = RequestMembers::read(body).unwrap();
        assert_eq!(
            (strict.n, strict.candidate_count),
            (Count::Other, Count::Other)
        );
        for (value, count) in [
            ("7", Count::Number(7)),
            ("0", Count::Number(0)),
            ("1e1", Count::Number(10)),
            (r#""5""#, Count::Quoted(5)),
            (r#""5.0""#, Count::Quoted(5)),
            ("-1", Count::Other),
            ("0.5", Count::Other),
            ("1e300", Count::Other),
            (r#""-5""#, Count::Other),
            (r#""five""#, Count::Other),
            (r#""00000000000000000000000000000000002""#, Count::Other),
            ("null", Count::Other),
            ("false", Count::Other),
            (r#"[1,{"a":[]}]"#, Count::Other),
            (r#"{"candidateCount":2}"#, Count::Other),
        ] {
            let body =
                format!(r#"{{"n":{value},"generation_config":{{"candidateCount":{value}}}}}"#);
            let members = RequestMembers::read_last_wins(&body).unwrap();
            assert_eq!(
                (members.n, members.candidate_count),
                (count, count),
                "{body}"
            );
        }
        assert_eq!(Count::Quoted(5).whole(false), None);
        assert_eq!(Count::Quoted(5).whole(true), Some(5));
        assert_eq!(Count::Number(5).whole(false), Some(5));
        // A config that is no object counts nothing, and breaks nothing.
        for config in ["null", "3", r#""x""#, "[3]", "true"] {
            let body = format!(r#"{{"generationConfig":{config},"model":"m"}}"#);
            let members = RequestMembers::read_last_wins(&body).unwrap();
            assert_eq!(members.candidate_count, Count::Other, "{body}");
            assert_eq!(
                members.model.map(|m| m.0.into_owned()).as_deref(),
                Some("m")
            );
        }
    }

    #[test]
    fn request_members_read_last_wins_keeps_the_last_of_a_repeat() {
        let body = r#"{"model":"a","n":[1,{"model":"no"}],"stream":false,"model":"b","stream":true,"background":true}"#;
        let members = RequestMembers::read_last_wins(body).unwrap();
        assert_eq!(members.stream, Some(true));
        assert!(members.background.0);
        let span = members.model_span(body).unwrap();
        assert_eq!(&body[span], "b");
        // An escaped key is the same key; an escaped name is unescaped.
        let escaped = r#"{"model":"a","mod\u0065l":"x\/y","background":true,"background":1}"#;
        let members = RequestMembers::read_last_wins(escaped).unwrap();
        assert_eq!(members.model.as_ref().map(|m| &*m.0), Some("x/y"));
        assert!(!members.background.0);
        // Only the last value's type counts.
        let members = RequestMembers::read_last_wins(
            r#"{"model":7,"model":"m","stream":"yes","stream":null}"#,
        )
        .unwrap();
        assert_eq!(members.model.as_ref().map(|m| &*m.0), Some("m"));
        assert_eq!(members.stream, None);
        // What `read` reads, it reads alike.
        let plain = r#" {"messages":[],"model":"gpt-x","stream":true}"#;
        let (strict, last) = (
            RequestMembers::read(plain).unwrap(),
            RequestMembers::read_last_wins(plain).unwrap(),
        );
        assert_eq!(strict.model_span(plain), last.model_span(plain));
        assert_eq!(
            (strict.stream, strict.background),
            (last.stream, last.background)
        );
        for refused in [
            r#"["gpt-x",true]"#,
            r#"{"model":7}"#,
            r#"{"model":"a","model":7}"#,
            r#"{"model":"a","stream":"true"}"#,
            r#"{"model":"a"} x"#,
            r#"{"model":"a""#,
            "",
            "null",
        ] {
            assert!(
                RequestMembers::read_last_wins(refused).is_err(),
                "{refused}"
            );
        }
        // The strict reader still refuses a repeat.
        assert!(RequestMembers::read(body).is_err());
    }

    #[test]
    fn from_bytes_reads_what_from_slice_reads() {
        // An invalid byte in a skipped string: `parse` refuses it,
        // `from_bytes` reads it as `from_slice` does.
        let body = b"{\"other\":\"\xff\",\"text\":\"x\"}";
        assert!(parse::<Field<'_>>(body).is_none());
        let read: Field<'_> = from_bytes(body).unwrap();
        let sliced: Field<'_> = serde_json::from_slice(body).unwrap();
        assert_eq!(read.text, sliced.text);
        assert!(from_bytes::<Field<'_>>(b"{\"text\":").is_err());
    }
}

/// Whether a value says something, as openai-python's stream reader tests
/// an event's `error` member (`if data.get("error")`): `null`, `false`,
/// `0`, `""`, `{}` and `[]` say nothing. Servers that serialise a whole
/// struct send `"error":""` or `"error":null` beside a healthy chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Truthy(pub bool);

impl<'de> Deserialize<'de> for Truthy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TruthyVisitor;
        impl<'de> Visitor<'de> for TruthyVisitor {
            type Value = Truthy;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Truthy, E> {
                Ok(Truthy(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Truthy, E> {
                Ok(Truthy(v != 0))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Truthy, E> {
                Ok(Truthy(v != 0))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Truthy, E> {
                Ok(Truthy(v != 0.0))
            }
            fn visit_str<E>(self, v: &str) -> Result<Truthy, E> {
                Ok(Truthy(!v.is_empty()))
            }
            fn visit_unit<E>(self) -> Result<Truthy, E> {
                Ok(Truthy(false))
            }
            fn visit_none<E>(self) -> Result<Truthy, E> {
                Ok(Truthy(false))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Truthy, D::Error> {
                d.deserialize_any(TruthyVisitor)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Truthy, A::Error> {
                let mut any = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(Truthy(any))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Truthy, A::Error> {
                let mut any = false;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(Truthy(any))
            }
        }
        deserializer.deserialize_any(TruthyVisitor)
    }
}

/// Present when the field is there and not `null`, whatever it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Present;

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present)
    }
}

/// Reads every element of a JSON array (`null` reads as none) into `acc`,
/// one at a time, without a `Vec`: a hostile array of a million `{}` costs
/// one element's memory, not a million parsed elements (48 bytes or more
/// each, against the 3 bytes each took on the wire).
pub fn fold_seq<'de, D, T, A, F>(deserializer: D, acc: A, fold: F) -> Result<A, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    F: FnMut(&mut A, T),
{
    struct Fold<T, A, F> {
        acc: A,
        fold: F,
        item: PhantomData<T>,
    }
    impl<'de, T: Deserialize<'de>, A, F: FnMut(&mut A, T)> Visitor<'de> for Fold<T, A, F> {
        type Value = A;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array or null")
        }
        fn visit_unit<E>(self) -> Result<A, E> {
            Ok(self.acc)
        }
        fn visit_seq<S: SeqAccess<'de>>(mut self, mut seq: S) -> Result<A, S::Error> {
            while let Some(item) = seq.next_element::<T>()? {
                (self.fold)(&mut self.acc, item);
            }
            Ok(self.acc)
        }
    }
    deserializer.deserialize_any(Fold {
        acc,
        fold,
        item: PhantomData,
    })
}

/// The first element of a JSON array; the rest are read and dropped one
/// by one. `null` reads as no element.
#[derive(Debug, PartialEq)]
pub struct First<T>(pub Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        First(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(deserializer, None, |first: &mut Option<T>, item: T| {
            if first.is_none() {
                *first = Some(item);
            }
        })
        .map(First)
    }
}
