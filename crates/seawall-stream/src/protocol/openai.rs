//! OpenAI chat completions chunks, read by the provider's own table
//! ([`seawall_core::provider::openai`]: the same answer fields the unary
//! check reads in `message`, here in `delta`).

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use seawall_core::provider::Presence;
use seawall_core::provider::members::KeyIn;
use seawall_core::provider::openai::{
    COMPLETION_TEXT, ContentPart, MESSAGE_FIELDS, MESSAGE_REFUSAL, MESSAGE_TEXT, finish_kind,
    is_error_object,
};
use seawall_core::usage::UsageFields;
use seawall_core::{FinishKind, Usage};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::choices::{Choices, bit, notable};
use super::wire::{First, Text, Truthy, declared_reason, fold_seq, parse_text};
use super::{Reason, Signal, in_stream_error};
use seawall_core::provider::{Provider, QuotaWall};
use seawall_internal::cursor::{Cursor, Holes, Scan};

// Read member by member ([`later_wins!`](seawall_core::later_wins)): a
// member named twice is the later one, as the SDKs read it.
seawall_core::later_wins! {
    #[cfg_attr(test, derive(Debug, PartialEq))]
    struct Chunk<'a> {
        choices: Listed<'a> = "choices",
        /// An `error` member that says something ([`Truthy`]): what
        /// openai-python raises on.
        error: Truthy = "error",
        /// A `usage` that says something ([`Truthy`]; OpenAI's per-chunk
        /// `"usage":null` does not): the chunk is worth [`read_usage`].
        usage: Truthy = "usage",
        /// Groq stopped the stream early ([`GroqStop`]).
        x_groq: GroqStop = "x_groq",
    }
}

/// Whether a chunk's `x_groq` holds an `error` that says something
/// ([`Truthy`]): "An error string indicating why a stream was stopped
/// early" (groq-python's `XGroq`), beside a finish that reads as whole.
/// Groq's clients raise on it. An `x_groq` of another shape says nothing,
/// and leaves the chunk readable.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct GroqStop(bool);

impl<'de> Deserialize<'de> for GroqStop {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StopVisitor;
        impl<'de> Visitor<'de> for StopVisitor {
            type Value = GroqStop;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GroqStop, A::Error> {
                // The later `error`, if named twice, as the SDKs read it.
                let mut stop = false;
                while let Some(field) = map.next_key_seed(KeyIn(&["error"]))? {
                    match field {
                        Some(_) => stop = map.next_value::<Truthy>()?.0,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(GroqStop(stop))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GroqStop, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(GroqStop(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
            fn visit_unit<E>(self) -> Result<GroqStop, E> {
                Ok(GroqStop(false))
            }
        }
        deserializer.deserialize_any(StopVisitor)
    }
}

/// A chunk's `choices`: the first read whole, as a chunk of one choice
/// (every chunk OpenAI sends) needs it; any after it folded one by one
/// ([`Several`]). With `n > 1` a chunk "can contain more than one element"
/// (OpenAI's chunk schema): read for its first only, a second choice's
/// finish was never seen, and one choice's `stop` hid another's cut.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Listed<'a> {
    first: First<Choice<'a>>,
    rest: Several<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Listed<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // One at a time where they lie: nothing kept per choice, so a
        // chunk of many costs no more memory than one of two.
        fold_seq(
            deserializer,
            Listed::default(),
            |listed: &mut Listed<'a>, choice: Choice<'a>| match listed.first {
                First(None) => listed.first = First(Some(choice)),
                First(Some(_)) => listed.rest.add(choice),
            },
        )
    }
}

/// Several choices folded into what the guard needs, as Gemini's
/// candidates are: which were seen and finished, the most telling finish
/// (the first not a plain stop, else the first), whether any is content,
/// and the text of choice 0, the delivered one.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Several<'a> {
    /// Choices folded in.
    count: u32,
    seen: u64,
    finished: u64,
    finish: Option<Reason<'a>>,
    content: bool,
    acts: bool,
    thinking: bool,
    refusal: bool,
    text: Option<Cow<'a, str>>,
}

impl<'a> Several<'a> {
    fn add(&mut self, choice: Choice<'a>) {
        self.count = self.count.saturating_add(1);
        // As one choice's chunk reads it: no index (or none a count) is
        // the first's.
        let index = choice.index.as_ref().and_then(serde_json::Number::as_u64);
        let index = index.unwrap_or(0);
        let bit = bit(index).unwrap_or(0);
        self.seen |= bit;
        if let Some(Text(reason)) = declared_reason(choice.finish_reason) {
            self.finished |= bit;
            let finish = Reason {
                kind: finish_kind(&reason),
                reason,
            };
            if self
                .finish
                .as_ref()
                .is_none_or(|kept| !notable(kept.kind) && notable(finish.kind))
            {
                self.finish = Some(finish);
            }
        }
        let (text, acts, thinking) = match choice.delta {
            Some(delta) => {
                self.refusal |= delta.refusal.and_then(Text::non_empty).is_some();
                (delta.content, delta.acts, delta.thinking)
            }
            None => (choice.text, false, false),
        };
        let text = text.and_then(Text::non_empty);
        self.content |= text.is_some() || acts;
        self.acts |= acts;
        self.thinking |= thinking;
        if index == 0 && self.text.is_none() {
            self.text = text;
        }
    }

    /// Folds in `other`'s choices, which came after these.
    fn absorb(&mut self, other: Several<'a>) {
        self.count = self.count.saturating_add(other.count);
        self.seen |= other.seen;
        self.finished |= other.finished;
        if let Some(finish) = other.finish
            && self
                .finish
                .as_ref()
                .is_none_or(|kept| !notable(kept.kind) && notable(finish.kind))
        {
            self.finish = Some(finish);
        }
        self.content |= other.content;
        self.acts |= other.acts;
        self.thinking |= other.thinking;
        self.refusal |= other.refusal;
        if self.text.is_none() {
            self.text = other.text;
        }
    }
}

seawall_core::later_wins! {
    #[cfg_attr(test, derive(Debug, PartialEq))]
    struct Choice<'a> {
        /// Which choice (`n > 1` asks for several: one per chunk from
        /// OpenAI and vLLM, several in one from other servers).
        index: Option<serde_json::Number> = "index",
        delta: Option<Delta<'a>> = "delta",
        finish_reason: Option<Text<'a>> = "finish_reason",
        /// A legacy completion's text ([`COMPLETION_TEXT`]: the name is a
        /// literal here; the tests that compare the cursor's reading with
        /// this one hold the two together).
        text: Option<Text<'a>> = "text",
    }
}

/// A delta read by [`MESSAGE_FIELDS`]: its text, its refusal, and whether
/// any other answer field (tool calls, the legacy function call, audio)
/// holds anything.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Delta<'a> {
    content: Option<Text<'a>>,
    refusal: Option<Text<'a>>,
    acts: bool,
    /// A [`THINKING_FIELDS`] member holds something: the model thinking.
    thinking: bool,
}

/// Where the servers that speak this wire stream a reasoning model's
/// thinking: `reasoning_content` (DeepSeek, vLLM, Qwen), `reasoning`
/// (OpenRouter, Ollama, Groq, newer vLLM), `reasoning_details`
/// (OpenRouter's structured form, alone when the thinking is encrypted),
/// `reasoning_steps` (Perplexity's concise mode, its web searches while
/// they run, beside an empty text: read as progress, a search past the
/// first-content bound was cut and asked, and billed, again).
/// Not the answer: the model at work on it ([`Signal::Thinking`]).
const THINKING_FIELDS: [&str; 4] = [
    "reasoning_content",
    "reasoning",
    "reasoning_details",
    "reasoning_steps",
];

/// A delta's members read by the cursor: the answer's, then the thinking
/// ones.
const DELTA_FIELDS: [&str; MESSAGE_FIELDS.len() + THINKING_FIELDS.len()] = {
    let mut fields = [""; MESSAGE_FIELDS.len() + THINKING_FIELDS.len()];
    let mut i = 0;
    while i < MESSAGE_FIELDS.len() {
        fields[i] = MESSAGE_FIELDS[i];
        i += 1;
    }
    while i < fields.len() {
        fields[i] = THINKING_FIELDS[i - MESSAGE_FIELDS.len()];
        i += 1;
    }
    fields
};

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DeltaVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for DeltaVisitor<'a> {
            type Value = Delta<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a chunk delta")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Delta<'a>, A::Error> {
                let mut delta = Delta::default();
                // What each of the other fields holds: a field named twice
                // is its later value, as the SDKs read it (the text's own
                // parts in `holds[MESSAGE_TEXT]` and `thinks[MESSAGE_TEXT]`).
                let mut holds = [false; DELTA_FIELDS.len()];
                let mut thinks = false;
                while let Some(field) = map.next_key_seed(KeyIn(&DELTA_FIELDS))? {
                    match field {
                        Some(MESSAGE_TEXT) => {
                            let parts = map.next_value::<ContentParts<'a>>()?;
                            delta.content = parts.text;
                            holds[MESSAGE_TEXT] = parts.other;
                            thinks = parts.thinking;
                        }
                        Some(MESSAGE_REFUSAL) => delta.refusal = map.next_value()?,
                        Some(field) => holds[field] = map.next_value::<Presence>()?.0,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let (answer, thinking) = holds.split_at(MESSAGE_FIELDS.len());
                delta.acts = answer.contains(&true);
                delta.thinking = thinks || thinking.contains(&true);
                Ok(delta)
            }
        }
        deserializer.deserialize_map(DeltaVisitor(std::marker::PhantomData))
    }
}

/// A delta's `content`: a string, or a list of parts as Mistral's
/// reasoning models send it (`[{"type":"thinking","thinking":[…]}]`,
/// `[{"type":"text","text":"…"}]`): the text of its `text` parts is the
/// answer's text, a thinking part the model working (no content), any
/// other part (an image) content without text. Read as a string only, a
/// list made the chunk unreadable: skipped, neither content nor progress,
/// and an answer written in text parts was never seen.
#[derive(Default)]
struct ContentParts<'a> {
    text: Option<Text<'a>>,
    other: bool,
    /// A thinking part came: the model thinking.
    thinking: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentParts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        seawall_core::later_wins! {
            struct Part<'a> {
                ty: Option<Text<'a>> = "type",
                text: Option<Text<'a>> = "text",
            }
        }
        // A string, or the parts read one at a time where they lie: serde's
        // untagged enum copied the whole list first, and an 8 MiB event of
        // `{}` parts became some 300 MiB of copies.
        struct PartsVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for PartsVisitor<'a> {
            type Value = ContentParts<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, a list of parts or null")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ContentParts::text(Text(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ContentParts::text(Text(v.to_owned().into())))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(ContentParts::default())
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(ContentParts::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                ContentParts::deserialize(d)
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut joined = String::new();
                let (mut other, mut thinking) = (false, false);
                while let Some(part) = seq.next_element::<Part<'de>>()? {
                    match ContentPart::of(part.ty.as_ref().map(|t| &*t.0)) {
                        ContentPart::Text => {
                            joined.push_str(part.text.as_ref().map_or("", |t| &t.0));
                        }
                        ContentPart::Thinking => thinking = true,
                        ContentPart::Other => other = true,
                    }
                }
                Ok(ContentParts {
                    text: Some(Text(joined.into())),
                    other,
                    thinking,
                })
            }
        }
        deserializer.deserialize_any(PartsVisitor(std::marker::PhantomData))
    }
}

impl<'a> ContentParts<'a> {
    fn text(text: Text<'a>) -> Self {
        ContentParts {
            text: Some(text),
            other: false,
            thinking: false,
        }
    }
}

/// Reads a chunk with the cursor, reading what serde's derive would; gives
/// up on anything else.
#[cfg(test)]
fn scan(text: &str) -> Scan<Chunk<'_>> {
    let mut chunk = Chunk::unread();
    scan_into(&mut Cursor::new(text), &mut chunk)?;
    Ok(chunk)
}

impl Chunk<'_> {
    /// A chunk before any member is read: what serde's derive makes of `{}`.
    fn unread() -> Self {
        Chunk {
            choices: Listed::default(),
            error: Truthy(false),
            usage: Truthy(false),
            x_groq: GroqStop(false),
        }
    }
}

/// As `scan`, into `chunk` (which holds a part read when it gives up),
/// leaving the chunk's holes in `cursor`. Read in place, not returned: a
/// chunk, its choice and their holes are some 330 bytes, and moving them
/// from one result to the next was an eighth of the cost of decoding a
/// chunk (callgrind, the stack bench's stream).
fn scan_into<'a>(cursor: &mut Cursor<'a>, chunk: &mut Chunk<'a>) -> Scan<()> {
    cursor.fields(["choices", "error", "usage", "x_groq"], |cursor, field| {
        match field {
            0 => {
                // More than one element is left to serde (`lone_element`).
                let first = &mut chunk.choices.first.0;
                *first = None;
                cursor.nullable(|cursor| {
                    cursor
                        .lone_element(|cursor| scan_choice(cursor, first.insert(Choice::unread())))
                })?;
            }
            1 => chunk.error = Truthy(cursor.truthy()?),
            2 => chunk.usage = Truthy(cursor.truthy()?),
            // Read, not stepped over: a kept shape steps over the strings
            // it skipped, and a Groq error would pass as one. Anything
            // but an object or `null` is left to serde.
            _ => {
                let mut stop = false;
                cursor.nullable(|cursor| {
                    cursor.fields(["error"], |cursor, _| {
                        stop = cursor.truthy()?;
                        Ok(())
                    })
                })?;
                chunk.x_groq = GroqStop(stop);
            }
        }
        Ok(())
    })?;
    cursor.end()
}

impl Choice<'_> {
    /// A choice before any member is read.
    fn unread() -> Self {
        Choice {
            index: None,
            delta: None,
            finish_reason: None,
            text: None,
        }
    }
}

fn scan_choice<'a>(cursor: &mut Cursor<'a>, choice: &mut Choice<'a>) -> Scan<()> {
    cursor.fields(
        ["delta", "finish_reason", COMPLETION_TEXT, "index"],
        |cursor, field| {
            match field {
                0 => {
                    let delta = &mut choice.delta;
                    *delta = None;
                    cursor.nullable(|cursor| scan_delta(cursor, delta.insert(Delta::default())))?;
                }
                1 => choice.finish_reason = cursor.text()?,
                2 => choice.text = cursor.text()?,
                _ => choice.index = Some(cursor.count()?.into()),
            }
            Ok(())
        },
    )
}

fn scan_delta<'a>(cursor: &mut Cursor<'a>, delta: &mut Delta<'a>) -> Scan<()> {
    cursor.fields(DELTA_FIELDS, |cursor, field| {
        match field {
            MESSAGE_TEXT => delta.content = cursor.text_hole()?,
            MESSAGE_REFUSAL => delta.refusal = cursor.text()?,
            _ if field >= MESSAGE_FIELDS.len() => delta.thinking |= cursor.holds()?,
            _ => delta.acts |= cursor.holds()?,
        }
        Ok(())
    })
}

seawall_core::later_wins! {
    /// A chunk's `usage`, read only from the chunks that can carry it (no
    /// choices, a finish, or a `usage` that says something): once per
    /// stream, so serde reads it.
    struct UsageChunk {
        usage: Option<UsageFields> = "usage",
        /// Groq streams its usage here, in the last chunk.
        x_groq: Option<GroqExtra> = "x_groq",
    }
}

seawall_core::later_wins! {
    struct GroqExtra {
        usage: Option<UsageFields> = "usage",
    }
}

fn read_usage(text: &str, usage: &mut Option<Usage>) {
    // Built once: a finder per call costs more than the search.
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
    if USAGE.find(text.as_bytes()).is_none() {
        return;
    }
    if let Some(found) = parse_text::<UsageChunk>(text)
        .and_then(|UsageChunk { usage, x_groq }| usage.or_else(|| x_groq?.usage))
        .and_then(|fields| fields.usage())
    {
        *usage = Some(found);
    }
}

/// The shape of this stream's plain text chunks, once it has sent enough
/// of them to be worth keeping: the last such chunk's bytes and its holes
/// (see [`Holes`]). A chunk with the same bytes outside the holes and a
/// string in each is read by comparing bytes and stepping over strings,
/// with no key matched: OpenAI's chunks repeat every field but the text
/// (and `obfuscation`) from one to the next.
///
/// It is only ever a shortcut to the cursor's own answer: every chunk it
/// recognises, the cursor (and serde) would read as the same text delta.
#[derive(Debug, Clone, Default)]
pub(super) struct Shape {
    bytes: Vec<u8>,
    holes: Holes,
    /// Plain text chunks read so far.
    plain: u32,
}

/// Plain chunks a stream sends before its shape is kept: an answer of a
/// token or two never pays for the copy (one allocation), and every chunk
/// after the fourth is read by the shape, at about a seventh of the
/// cursor's cost (callgrind on the reqwest bench's 64-token stream: about
/// 3 900 instructions a chunk the cursor reads, about 550 one the shape
/// reads).
const SHAPE_AFTER: u32 = 4;

impl Shape {
    /// A plain text chunk was read by the cursor with `holes`.
    fn learn(&mut self, text: &str, holes: &Holes) {
        self.plain = self.plain.saturating_add(1);
        if self.plain < SHAPE_AFTER || holes.spans().is_none() || holes.text().is_none() {
            return;
        }
        self.bytes.clear();
        self.bytes.extend_from_slice(text.as_bytes());
        self.holes = *holes;
    }

    /// What `data` means, when it has the kept shape.
    ///
    /// Only the part of `data` from the first string that differs from
    /// the kept one is checked as UTF-8: everything before it is the kept
    /// bytes, which were a checked text, cut before a `"`, so a whole on
    /// its own. A chunk whose rest is not UTF-8 is not recognised (and
    /// the caller finds it is not UTF-8 at all).
    fn recognise<'a>(&self, data: &'a [u8]) -> Option<Signal<'a>> {
        if self.bytes.is_empty() {
            return None;
        }
        let (spans, text_hole) = (self.holes.spans()?, self.holes.text()?);
        let (mut at, mut kept_at) = (0, 0);
        // The checked rest of `data`, and where it starts.
        let mut rest: Option<(usize, &'a str)> = None;
        let mut delta = None;
        for (hole, &(start, end)) in spans.iter().enumerate() {
            let same = &self.bytes[kept_at..start as usize];
            if data.get(at..at + same.len())? != same {
                return None;
            }
            at += same.len();
            kept_at = end as usize;
            // The same string as last time (an `id`, the model) is the same
            // token: no need to step through it.
            let kept = &self.bytes[start as usize..kept_at];
            if hole != text_hole && data[at..].starts_with(kept) {
                at += kept.len();
                continue;
            }
            let (base, text) = match rest {
                Some(rest) => rest,
                None => *rest.insert((at, std::str::from_utf8(&data[at..]).ok()?)),
            };
            let mut cursor = Cursor::at(text, at - base);
            if hole == text_hole {
                delta = Some(cursor.text_hole().ok()??);
            } else {
                cursor.pass_hole().ok()?;
            }
            at = base + cursor.offset();
        }
        if data.get(at..)? != &self.bytes[kept_at..] {
            return None;
        }
        Some(match delta?.non_empty() {
            Some(text) => Signal::Content {
                text: Some(text),
                finish: None,
                act: false,
            },
            None => Signal::Progress,
        })
    }
}

pub(super) fn decode<'a>(
    data: &'a [u8],
    refused: &mut bool,
    usage: &mut Option<Usage>,
    shape: &mut Shape,
    choices: &mut Choices,
    quota_wall: QuotaWall,
) -> Signal<'a> {
    // The SDKs stop at a data line that starts `[DONE]`; a space after it
    // is no broken event.
    if seawall_internal::json::is_done_marker(data) {
        return Signal::Done;
    }
    if let Some(signal) = shape.recognise(data) {
        return signal;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return Signal::Other;
    };
    let mut cursor = Cursor::new(text);
    let mut chunk = Chunk::unread();
    // The cursor's holes are a shape only where it read the chunk.
    let scanned = scan_into(&mut cursor, &mut chunk).is_ok();
    if !scanned {
        chunk = match parse_text::<Chunk<'_>>(text) {
            Some(chunk) => chunk,
            None => return Signal::Other,
        };
    }
    // Groq's stop, checked before the finish beside it is read: that
    // finish says `stop` of a cut answer.
    if chunk.error.0 || chunk.x_groq.0 {
        return Signal::Error(Box::new(in_stream_error(
            Provider::OpenAi,
            data,
            quota_wall,
        )));
    }
    // A chunk without choices is the usage-only final chunk (or another
    // bookkeeping chunk): progress, not content; one that carries nothing
    // is a keep-alive ([`is_bookkeeping`]). Unless it is an error object
    // itself, as vLLM's and FastChat's are (`"object":"error"`).
    let Listed {
        first: First(first),
        rest,
    } = chunk.choices;
    let Some(mut choice) = first else {
        if is_error_object(data) {
            return Signal::Error(Box::new(in_stream_error(
                Provider::OpenAi,
                data,
                quota_wall,
            )));
        }
        read_usage(text, usage);
        return if is_bookkeeping(text) {
            Signal::Progress
        } else {
            Signal::KeepAlive
        };
    };
    if rest.count > 0 {
        return several(choice, rest, refused, usage, text, chunk.usage.0, choices);
    }
    choice.finish_reason = declared_reason(choice.finish_reason.take());
    // The usage comes with the finish (Groq's `x_groq`), or after it in a
    // chunk of its own that still has a choice, with no finish (OpenRouter,
    // LiteLLM's proxy, mlx): read only where there was a finish, it was
    // lost.
    let carries_usage = chunk.usage.0;
    if choice.finish_reason.is_some() || carries_usage {
        read_usage(text, usage);
    }
    let index = choice.index.as_ref().and_then(serde_json::Number::as_u64);
    // The delivered text is the first choice's: with `n > 1` OpenAI sends
    // one choice a chunk, in turn, and the SDKs assemble each apart.
    // Another choice's text is content, not this text (nor a shape kept
    // for it).
    let first = index.is_none_or(|index| index == 0);
    // A chunk with its usage is never a kept shape's: the shape reads no
    // usage.
    let plain = first
        && choice.finish_reason.is_none()
        && !carries_usage
        && choice.delta.as_ref().is_some_and(|delta| {
            delta.content.is_some()
                && !delta.acts
                && !delta.thinking
                && delta.refusal.as_ref().is_none_or(|r| r.0.is_empty())
        });
    if plain && scanned {
        shape.learn(text, cursor.holes());
    }
    let (text, content, act, thinking) = match choice.delta {
        Some(delta) => {
            // A refusal delta is the model declining, not an answer: it
            // marks the stream refused and moves it on, like Anthropic's and
            // Gemini's refusals, so a refusal before any content fails as
            // policy while the response is still held back.
            *refused |= delta.refusal.and_then(Text::non_empty).is_some();
            let text = delta.content.and_then(Text::non_empty);
            let content = text.is_some() || delta.acts;
            (
                text.map(|t| other_choice(t, first)),
                content,
                delta.acts,
                delta.thinking,
            )
        }
        // A legacy completion's chunk: its text is the answer, as the
        // unary check counts it. Never a kept shape's (not `plain`).
        None => {
            let text = choice.text.and_then(Text::non_empty);
            let content = text.is_some();
            (text.map(|t| other_choice(t, first)), content, false, false)
        }
    };
    let finish = choice.finish_reason.map(|Text(reason)| {
        // A refusal message ends in `stop` or `content_filter`, or is cut
        // short (`length`): whatever ended it, the model declined, as the
        // unary check reads `message.refusal` before the finish. Read as
        // its finish, a refusal cut at `length` was delivered as a
        // truncated answer, and one ended otherwise retried.
        let kind = if *refused {
            FinishKind::Refused
        } else {
            finish_kind(&reason)
        };
        Reason { kind, reason }
    });
    let finish = choices.finish(index.unwrap_or(0), finish);
    match (content, finish) {
        (true, finish) => Signal::Content { text, finish, act },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) if thinking => Signal::Thinking,
        (false, None) => Signal::Progress,
    }
}

/// A chunk of several choices (`n > 1`, from a server that sends them
/// together): read as Gemini's candidates are, every choice's finish
/// noted, the message's finish only once every choice seen has
/// finished, and the delivered text choice 0's. Never a kept shape's:
/// the cursor reads one choice only, and leaves these to serde.
fn several<'a>(
    first: Choice<'a>,
    rest: Several<'a>,
    refused: &mut bool,
    usage: &mut Option<Usage>,
    text: &'a str,
    carries_usage: bool,
    choices: &mut Choices,
) -> Signal<'a> {
    let mut all = Several::default();
    all.add(first);
    all.absorb(rest);
    // A refusal delta is the model declining, in whichever choice (as one
    // choice a chunk reads it).
    *refused |= all.refusal;
    if all.finish.is_some() || carries_usage {
        read_usage(text, usage);
    }
    let finish = all.finish.map(|reason| Reason {
        kind: if *refused {
            FinishKind::Refused
        } else {
            reason.kind
        },
        reason: reason.reason,
    });
    let finish = choices.settle(all.seen, all.finished, finish);
    match (all.content, finish) {
        (true, finish) => Signal::Content {
            // Content with no text of choice 0's and no act is another
            // choice's text: text (`""`), not a call.
            text: match all.text {
                None if !all.acts => Some(Cow::Borrowed("")),
                text => text,
            },
            finish,
            act: all.acts,
        },
        (false, Some(reason)) => Signal::Finish(reason),
        (false, None) if all.thinking => Signal::Thinking,
        (false, None) => Signal::Progress,
    }
}

seawall_core::later_wins! {
    /// The members that make a chunk without choices one of this answer's:
    /// its id or object (Azure's first chunk, `choices: []` beside its
    /// `prompt_filter_results`), or its usage.
    struct Bookkeeping {
        id: Option<IgnoredAny> = "id",
        object: Option<IgnoredAny> = "object",
        usage: Option<IgnoredAny> = "usage",
    }
}

/// Whether a chunk without choices says anything of the answer
/// ([`Bookkeeping`]). One that does not (`{}`, `{"type":"ping"}`) is a
/// keep-alive: read as progress, it moved the idle bound after content
/// on for ever, and counted as the provider generating.
fn is_bookkeeping(text: &str) -> bool {
    parse_text::<Bookkeeping>(text).is_none_or(|Bookkeeping { id, object, usage }| {
        id.is_some() || object.is_some() || usage.is_some()
    })
}

/// A choice's text as the delivered text takes it: the first choice's
/// whole, another's as none (`""`: still text, so no call is counted for
/// it).
fn other_choice(text: Cow<'_, str>, first: bool) -> Cow<'_, str> {
    if first { text } else { Cow::Borrowed("") }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use seawall_test::json::{
        array_of, damaged, members, mutated, nullable, openai_message, string, value,
    };

    use super::*;

    /// Chunks as OpenAI and compatible servers send them.
    const SAMPLES: &[&str] = &[
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hello\n\"world\" caf\u00e9 \ud83d\ude00"},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"Let me see"},"finish_reason":null}]}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Hm","reasoning_details":[{"type":"reasoning.text","text":"Hm"}]},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.reasoning","choices":[{"index":0,"finish_reason":null,"message":{"role":"assistant","content":""},"delta":{"role":"assistant","content":"","reasoning_steps":[{"thought":"Searching","type":"web_search","web_search":{"search_results":[],"search_keywords":["Seattle weather"]}}]}}]}"#,
        r#"{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}}}"#,
        r#"{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}"#,
        r#" { "choices" : [ { "delta" : { "content" : "spaced" } , "finish_reason" : null } ] } "#,
        // Legacy completions (`/v1/completions`): the text in the choice.
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":"Hello \"you\"","index":0,"logprobs":null,"finish_reason":null}],"model":"gpt-3.5-turbo-instruct"}"#,
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"model":"gpt-3.5-turbo-instruct"}"#,
    ];

    #[test]
    fn the_cursor_reads_real_chunks_as_serde_does() {
        for sample in SAMPLES {
            let scanned = scan(sample).unwrap_or_else(|_| panic!("gave up on {sample}"));
            assert_eq!(Some(scanned), parse_text::<Chunk<'_>>(sample), "{sample}");
        }
    }

    #[test]
    fn the_cursor_leaves_doubtful_chunks_to_serde() {
        for doubtful in [
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choi\u0063es":[]}"#,
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"[[{"delta":null,"finish_reason":"stop"}],null]"#,
            r#"{"choices":[{"delta":{"content":1}}]}"#,
            r#"{"choices":[]} x"#,
        ] {
            assert!(scan(doubtful).is_err(), "{doubtful}");
        }
    }

    /// A chunk-shaped text.
    fn chunk() -> impl Strategy<Value = String> {
        let choice = members(vec![
            ("delta", nullable(openai_message())),
            ("finish_reason", nullable(string().boxed())),
            ("text", nullable(string().boxed())),
        ]);
        members(vec![
            ("choices", array_of(choice)),
            ("error", value().boxed()),
            ("usage", value().boxed()),
        ])
    }

    /// A plain chunk as OpenAI sends them (with `obfuscation`), its holes
    /// filled with any strings, its finish now and then set, now and then
    /// a legacy completion's chunk (the text in the choice, no delta),
    /// maybe with one byte cut out or one character put in.
    fn plain_chunk() -> impl Strategy<Value = String> {
        (
            (
                prop_oneof![string(), Just(r#""chatcmpl-1""#.to_owned())],
                prop_oneof![string(), Just(r#""gpt-x""#.to_owned())],
                string(),
                prop_oneof![string(), Just(r#""a1""#.to_owned())],
            ),
            prop_oneof![8 => Just("null".to_owned()), 1 => string()],
            any::<prop::sample::Index>(),
            prop::option::weighted(0.2, prop::sample::select(vec!['{', '}', '"', '\\', ' ', ',', '0'])),
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.2),
        )
            .prop_map(|((id, model, content, obfuscation), finish, at, put, cut, legacy)| {
                let text = if legacy {
                    format!(
                        r#"{{"id":{id},"object":"text_completion","created":1,"model":{model},"choices":[{{"text":{content},"index":0,"logprobs":null,"finish_reason":{finish}}}],"obfuscation":{obfuscation}}}"#
                    )
                } else {
                    format!(
                        r#"{{"id":{id},"object":"chat.completion.chunk","created":1,"model":{model},"choices":[{{"index":0,"delta":{{"content":{content}}},"logprobs":null,"finish_reason":{finish}}}],"obfuscation":{obfuscation}}}"#
                    )
                };
                damaged(text, at, put, cut)
            })
    }

    fn read(text: &str, shape: &mut Shape) -> String {
        read_bytes(text.as_bytes(), shape)
    }

    fn read_bytes(data: &[u8], shape: &mut Shape) -> String {
        format!(
            "{:?}",
            decode(
                data,
                &mut false,
                &mut None,
                shape,
                &mut Choices::default(),
                QuotaWall::default()
            )
        )
    }

    /// A stream that has sent enough plain chunks keeps their shape.
    fn trained() -> Shape {
        let mut shape = Shape::default();
        let plain = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}],"obfuscation":"a1"}"#;
        for _ in 0..SHAPE_AFTER {
            read(plain, &mut shape);
        }
        assert!(!shape.bytes.is_empty());
        shape
    }

    #[test]
    fn a_kept_shape_reads_what_differs_and_nothing_else() {
        let shape = trained();
        let next = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":" caf\u00e9"},"logprobs":null,"finish_reason":null}],"obfuscation":"zz9"}"#;
        assert_eq!(
            shape.recognise(next.as_bytes()).map(|s| format!("{s:?}")),
            Some(r#"Content { text: Some(" café"), finish: None, act: false }"#.to_owned())
        );
        // A finish, a refusal, a tool call: not the shape, the cursor reads them.
        for other in [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":"stop"}],"obfuscation":"a1"}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":null},"logprobs":null,"finish_reason":null}],"obfuscation":"a1"}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{}]},"logprobs":null,"finish_reason":null}],"obfuscation":"a1"}"#,
        ] {
            assert!(shape.recognise(other.as_bytes()).is_none(), "{other}");
        }
    }

    /// The kept shape is a cache: what it changes is only the work done,
    /// so these look at the cache itself. Only plain text chunks teach it,
    /// and only once a stream has sent `SHAPE_AFTER` of them.
    #[test]
    fn only_enough_plain_chunks_teach_a_shape() {
        let plain = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}],"obfuscation":"a1"}"#;
        let mut shape = Shape::default();
        for _ in 1..SHAPE_AFTER {
            read(plain, &mut shape);
        }
        assert!(shape.bytes.is_empty(), "a short answer keeps no shape");
        read(plain, &mut shape);
        assert_eq!(shape.bytes, plain.as_bytes());

        // Plain, but with more strings than the holes hold: no shape.
        let crowded = format!(
            r#"{{{}"choices":[{{"index":0,"delta":{{"content":"hi"}},"finish_reason":null}}]}}"#,
            (0..20)
                .map(|i| format!(r#""x{i}":"v","#))
                .collect::<String>()
        );
        let mut shape = Shape::default();
        for _ in 0..2 * SHAPE_AFTER {
            read(&crowded, &mut shape);
        }
        assert!(shape.bytes.is_empty(), "{crowded}");

        for not_plain in [
            // A finish with its text, a tool call beside text, a refusal
            // beside text: the cursor reads each, none is kept.
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"index":0}]},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"hi","refusal":"no"},"finish_reason":null}]}"#,
            // A legacy completion's text: content, read by the cursor.
            r#"{"id":"c","object":"text_completion","choices":[{"text":"hi","index":0,"logprobs":null,"finish_reason":null}]}"#,
            // Thinking beside an empty text (Perplexity's search steps):
            // the model at work, never a text chunk's shape.
            r#"{"id":"c","object":"chat.reasoning","choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant","content":"","reasoning_steps":[{"thought":"Searching","type":"web_search"}]}}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"","reasoning_content":"Hm"},"finish_reason":null}]}"#,
            // Text beside the usage (vLLM's continuous usage stats): the
            // usage is read from it, and would not be from a shape's.
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}"#,
        ] {
            let mut shape = Shape::default();
            for _ in 0..2 * SHAPE_AFTER {
                read(not_plain, &mut shape);
            }
            assert!(shape.bytes.is_empty(), "{not_plain}");
        }
    }

    /// OpenAI's chunks carry `"usage":null` when the usage is asked for;
    /// the last one, or another server's chunk after the finish, carries
    /// it: never read by a shape kept from the others, always read.
    #[test]
    fn a_kept_shape_never_reads_a_chunk_with_usage() {
        let chunk = |content: &str, usage: &str| {
            format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{{"index":0,"delta":{{"content":{content}}},"logprobs":null,"finish_reason":null}}],"usage":{usage}}}"#
            )
        };
        let mut shape = Shape::default();
        for _ in 0..SHAPE_AFTER {
            read(&chunk(r#""hi""#, "null"), &mut shape);
        }
        assert!(!shape.bytes.is_empty());
        for content in [r#""hi""#, r#""""#] {
            let last = chunk(
                content,
                r#"{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}"#,
            );
            assert!(shape.recognise(last.as_bytes()).is_none(), "{last}");
            let mut usage = None;
            decode(
                last.as_bytes(),
                &mut false,
                &mut usage,
                &mut shape,
                &mut Choices::default(),
                QuotaWall::default(),
            );
            assert_eq!(usage, Some(Usage::new(9, 12)), "{last}");
        }
    }

    #[test]
    fn a_kept_shape_reads_the_same_text_again() {
        let shape = trained();
        let same = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}],"obfuscation":"a1"}"#;
        assert_eq!(
            shape.recognise(same.as_bytes()).map(|s| format!("{s:?}")),
            Some(r#"Content { text: Some("hi"), finish: None, act: false }"#.to_owned())
        );
    }

    /// A chunk of several choices is never a kept shape's, however like
    /// one its first choice is: every choice is read, and one choice's
    /// finish waits for the other's.
    #[test]
    fn several_choices_in_a_chunk_are_each_read() {
        let head = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}"#;
        let tail = r#"],"obfuscation":"a1"}"#;
        let two = |second: &str| format!("{head},{second}{tail}");
        let mut shape = trained();
        let mut choices = Choices::default();
        let mut decode_with = |data: &str| {
            format!(
                "{:?}",
                decode(
                    data.as_bytes(),
                    &mut false,
                    &mut None,
                    &mut shape,
                    &mut choices,
                    QuotaWall::default()
                )
            )
        };
        let both =
            two(r#"{"index":1,"delta":{"content":"yo"},"logprobs":null,"finish_reason":null}"#);
        assert!(trained().recognise(both.as_bytes()).is_none());
        assert_eq!(
            decode_with(&both),
            r#"Content { text: Some("hi"), finish: None, act: false }"#
        );
        // Choice 0 stops, choice 1 is cut at its limit: the message's
        // finish is the cut, once both finished.
        let finished = r#"{"choices":[{"index":1,"delta":{},"finish_reason":"length"},{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        assert_eq!(
            decode_with(finished),
            r#"Finish(Reason { kind: Truncated, reason: "length" })"#
        );
        // Text of choice 0's only, wherever it lies in the list; another
        // choice's is `""`.
        let read = |data: &str| {
            format!(
                "{:?}",
                decode(
                    data.as_bytes(),
                    &mut false,
                    &mut None,
                    &mut Shape::default(),
                    &mut Choices::default(),
                    QuotaWall::default()
                )
            )
        };
        assert_eq!(
            read(
                r#"{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}"#
            ),
            r#"Content { text: Some("A"), finish: None, act: false }"#
        );
        assert_eq!(
            read(
                r#"{"choices":[{"index":1,"delta":{"content":"B"}},{"index":2,"delta":{"content":"C"}}]}"#
            ),
            r#"Content { text: Some(""), finish: None, act: false }"#
        );
        // One finished, the other not yet: no finish of the message's.
        assert_eq!(
            read(
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{"role":"assistant"}}]}"#
            ),
            "Progress"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Whatever the kept shape recognises, the cursor and serde read
        /// the same way.
        #[test]
        fn a_kept_shape_never_disagrees_with_the_cursor(text in plain_chunk()) {
            let with = read(&text, &mut trained());
            let without = read(&text, &mut Shape::default());
            prop_assert_eq!(with, without, "{}", text);
        }

        /// The kept shape checks only part of a chunk as UTF-8: a chunk
        /// with a byte that breaks UTF-8 anywhere reads the same with it
        /// and without it (not text at all, or whatever the cursor says).
        #[test]
        fn a_kept_shape_never_reads_broken_utf8(
            text in plain_chunk(),
            at in any::<prop::sample::Index>(),
            bad in prop::sample::select(vec![
                &[0xff][..], &[0x80], &[0xc3], &[0xe2, 0x82], &[0xed, 0xa0, 0x80],
            ]),
        ) {
            let mut data = text.into_bytes();
            let at = at.index(data.len() + 1);
            data.splice(at..at, bad.iter().copied());
            let with = read_bytes(&data, &mut trained());
            let without = read_bytes(&data, &mut Shape::default());
            prop_assert_eq!(&with, &without, "{:?}", data);
            prop_assert_eq!(with, "Other");
        }

        /// Whenever the cursor answers, serde gives the same answer.
        #[test]
        fn the_cursor_never_disagrees_with_serde(text in mutated(chunk())) {
            if let Ok(scanned) = scan(&text) {
                prop_assert_eq!(Some(scanned), parse_text::<Chunk<'_>>(&text), "{}", text);
            }
        }
    }
}
