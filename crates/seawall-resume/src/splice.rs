//! Splicing a continuation into the caller's stream, at event granularity:
//! where events end, what an event means, how much of a continuation
//! repeats what the caller already has, and an event rewritten without it.

use bytes::Bytes;
use memchr::{memchr2, memrchr2};
use seawall_core::provider::Provider;
use seawall_core::provider::openai_responses::last_sequence_number;
use seawall_core::{FinishKind, excerpt};
use seawall_internal::json::Text;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::{Item, Scanner};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::translate::Envelope;

/// True when `data` ends exactly at the end of an event (a blank line):
/// the common frame, passed on whole.
///
/// A blank line that ends in a CR ends its event there, as an SSE reader
/// dispatches it (a line ends with CRLF, LF or CR): an LF that may follow
/// in the next frame is the rest of that CRLF, not a line of its own.
#[inline]
pub(crate) fn ends_at_boundary(data: &[u8]) -> bool {
    matches!(
        data,
        [.., b'\n', b'\n'] | [.., b'\n', b'\r', b'\n'] | [.., b'\n' | b'\r', b'\r']
    )
}

/// The end (exclusive) of the last complete event in `data`, which starts
/// at an event boundary. A blank line ended by a trailing CR is an end:
/// the LF of a CRLF cut in two comes at the start of what follows, where
/// it is a blank line at an event boundary, no event's end.
pub(crate) fn last_boundary(data: &[u8]) -> Option<usize> {
    let mut end = data.len();
    while let Some(p) = memrchr2(b'\n', b'\r', &data[..end]) {
        let (start, stop) = if data[p] == b'\n' && p > 0 && data[p - 1] == b'\r' {
            (p - 1, p + 1)
        } else {
            (p, p + 1)
        };
        if start > 0 && matches!(data[start - 1], b'\n' | b'\r') {
            return Some(stop);
        }
        end = start;
    }
    None
}

/// As [`last_boundary`], for `data` whose first `searched` bytes were
/// searched before and end no event: only what came after them is
/// searched, with the three bytes before it where a blank line ending in
/// it may begin. An event that grows frame by frame (a hostile server's
/// endless line) is not searched again from its start on every frame.
pub(crate) fn last_boundary_since(data: &[u8], searched: usize) -> Option<usize> {
    let from = searched.saturating_sub(3);
    last_boundary(&data[from..]).map(|end| from + end)
}

/// The end of the first event of `data[from..]`, `from` being an event
/// boundary: a blank line ended by a CR at the end of `data` ends it.
pub(crate) fn next_boundary(data: &[u8], from: usize) -> Option<usize> {
    let mut line = from;
    loop {
        let p = line + memchr2(b'\n', b'\r', &data[line..])?;
        let stop = match (data[p], data.get(p + 1)) {
            (b'\r', Some(b'\n')) => p + 2,
            _ => p + 1,
        };
        if p == line {
            return Some(stop);
        }
        line = stop;
    }
}

/// Whether `frame` holds an event whose data is a JSON object, read as
/// the guard reads events: one a stream's envelope (id, model) can be
/// learned from, where a comment, a keep-alive or `[DONE]` has none.
pub(crate) fn carries_json_event(frame: &[u8]) -> bool {
    let mut found = false;
    let _ = Scanner::default().feed(frame, |item| {
        if let Item::Event(event) = item {
            found |= event.data.trim_ascii_start().first() == Some(&b'{');
        }
    });
    found
}

/// True when `frame` holds a JSON event whose member `key` says something
/// (not empty, zero or null): the event an envelope is learned from, read
/// without building a value.
pub(crate) fn names_member(frame: &[u8], key: &str) -> bool {
    let mut found = false;
    let _ = Scanner::default().feed(frame, |item| {
        if let Item::Event(event) = item {
            found |= member(event.data, key)
                .is_some_and(|value| !matches!(value.get(), "\"\"" | "0" | "null"));
        }
    });
    found
}

/// Splits the complete events off the front of `data` (which starts at an
/// boundary): the events, as slices, and where the incomplete rest starts.
pub(crate) fn split_events(data: &Bytes) -> (Vec<Bytes>, usize) {
    let mut events = Vec::new();
    let mut at = 0;
    while let Some(end) = next_boundary(data, at) {
        events.push(data.slice(at..end));
        at = end;
    }
    (events, at)
}

/// What one raw event is to the splicer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Content: its text (`None` for a tool-call delta), whether it
    /// carries the finish, and whether it carries more than text (a call).
    Content {
        text: Option<String>,
        finish: bool,
        act: bool,
    },
    /// A finish or done marker without content.
    End,
    /// Anything else: role deltas, block starts, pings, usage, comments.
    Other,
}

/// Decodes one raw event (`raw` holds exactly one event).
pub(crate) fn classify(protocol: Provider, raw: &[u8]) -> Kind {
    // Each event alone, as part of an answer: a terminal event that holds
    // the whole answer again is its end, not more content.
    classify_with(&mut Decoder::new(protocol).within_answer(), raw).0
}

/// Decodes one raw event with `decoder`, which keeps what its stream said
/// before (an OpenAI refusal streamed as `delta.refusal` and ended with
/// `stop` is still a refusal): what it is, and the finish it carries.
pub(crate) fn classify_with(decoder: &mut Decoder, raw: &[u8]) -> (Kind, Option<FinishKind>) {
    let mut kind = Kind::Other;
    let mut finished = None;
    let _ = Scanner::default().feed(raw, |item| {
        kind = match decoder.decode(item) {
            Signal::Content { text, finish, act } => {
                finished = finish.as_ref().map(|reason| reason.kind).or(finished);
                Kind::Content {
                    text: text.map(|t| t.into_owned()),
                    finish: finish.is_some(),
                    act,
                }
            }
            Signal::Finish(reason) => {
                finished = Some(reason.kind);
                Kind::End
            }
            Signal::Done => Kind::End,
            _ => Kind::Other,
        };
    });
    (kind, finished)
}

/// `raw` (one content event) with its text replaced by `text`, in the
/// provider's shape; `None` when the event is not one this knows how to
/// rewrite.
pub(crate) fn rewrite(provider: Provider, raw: &[u8], text: &str) -> Option<Bytes> {
    // The top-level members the text is in, the only ones read into
    // values and written anew: any other (padding up to the guard's cap)
    // goes as its bytes came.
    let holding: &[&str] = match provider {
        Provider::OpenAi => &["choices"],
        Provider::Anthropic => &["delta", "content_block"],
        Provider::Gemini => &["candidates"],
        Provider::OpenAiResponses => &["delta"],
        Provider::Http => return None,
    };
    with_event(raw, |name, data| {
        let mut json = Value::Object(read_members(data, holding, whole)?);
        let slot = match provider {
            Provider::OpenAi => {
                if !trim_logprobs(&mut json, text) {
                    return None;
                }
                json.pointer_mut("/choices/0/delta/content")
            }
            Provider::Anthropic => match json.pointer("/delta/text") {
                Some(_) => json.pointer_mut("/delta/text"),
                None => json.pointer_mut("/content_block/text"),
            },
            Provider::Gemini => {
                let parts = json
                    .pointer_mut("/candidates/0/content/parts")
                    .and_then(Value::as_array_mut);
                let mut first = true;
                // A thought summary (`thought: true`) is not the answer's
                // text: the decoder skips it, and so does the rewrite.
                let answer = |part: &&mut Value| part.get("thought") != Some(&Value::Bool(true));
                for part in parts.into_iter().flatten().filter(answer) {
                    if let Some(t) = part.get_mut("text") {
                        *t = Value::String(if first {
                            text.to_owned()
                        } else {
                            String::new()
                        });
                        first = false;
                    }
                }
                if first {
                    return None;
                }
                None
            }
            Provider::OpenAiResponses => json.pointer_mut("/delta"),
            Provider::Http => return None,
        };
        if let Some(slot) = slot {
            if !slot.is_string() {
                return None;
            }
            *slot = Value::String(text.to_owned());
        }
        write_members(name, data, json.as_object()?)
    })
}

/// Drops the logprobs of the tokens cut from the front of an OpenAI
/// event's content, `keep` being what is left of it, so the event lists
/// only tokens it shows; false when the cut falls inside a token.
fn trim_logprobs(json: &mut Value, keep: &str) -> bool {
    let content = json
        .pointer("/choices/0/delta/content")
        .and_then(Value::as_str);
    let Some(cut) = content.and_then(|c| c.len().checked_sub(keep.len())) else {
        return true;
    };
    let tokens = json
        .pointer_mut("/choices/0/logprobs/content")
        .and_then(Value::as_array_mut);
    let Some(tokens) = tokens else {
        return true;
    };
    let (mut dropped, mut count) = (0, 0);
    for token in tokens.iter() {
        if dropped >= cut {
            break;
        }
        // `bytes` counts a token that is part of a character; `token`
        // alone would not.
        dropped += match token.get("bytes").and_then(Value::as_array) {
            Some(bytes) => bytes.len(),
            None => token
                .get("token")
                .and_then(Value::as_str)
                .map_or(0, str::len),
        };
        count += 1;
    }
    if dropped != cut {
        return false;
    }
    tokens.drain(..count);
    true
}

/// What a continuation's events must say to read as the rest of the
/// original stream: Anthropic's content block index, the Responses API's
/// sequence numbers and item, read from the last events the caller saw;
/// OpenAI chat's and Gemini's [`Envelope`], read from the first.
///
/// A continuation numbers its blocks (items) from its own: the one it
/// continues is the original's, and any after it (a tool call once the
/// text is done) follow the original's in the same order, so each keeps
/// its distance from the continued one instead of taking its number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Fix {
    /// The original's numbers (`item_id` unused: learned in place).
    ours: Numbers,
    /// The next sequence number (Responses).
    sequence: Option<u64>,
    /// The current continuation's numbers for what it continues, from its
    /// first event shown.
    theirs: Option<Numbers>,
    /// 1 when the continuation's first content is not the continued text
    /// but a block after it (a tool call once the text was whole): its
    /// numbers then follow the original's, not take them. (Text that goes
    /// in a block of its own after a closed one moves `ours` to that
    /// block instead: [`Fix::text_after_a_closed_block`].)
    after: u64,
    /// Whether the continued block was left open in what the caller saw
    /// (Anthropic; `None` elsewhere): a continuation that adds no text to
    /// an open one, or opens with another block, never closes it
    /// ([`Fix::close_open_block`]); its text after a closed one is a
    /// block of its own ([`Fix::text_after_a_closed_block`]).
    open: Option<bool>,
    /// The Responses API's whole-text events of a generated continuation
    /// (`*.done`, the terminal response) say the continuation's text alone:
    /// once it is spliced in, how many bytes of its text repeat the end of
    /// what the caller held ([`Fix::spliced_after`]); what the caller held
    /// is the body's own record, passed to [`Fix::apply`].
    joined: Option<usize>,
    /// The original response's id, which the continuation's terminal
    /// response takes (Responses, when the provider stores neither: a
    /// stored continuation keeps its own, the one to chain from).
    response_id: Option<String>,
    /// The original's envelope (OpenAI chat, Gemini), which every event
    /// of a continuation takes; those formats number nothing else.
    envelope: Envelope,
}

/// Where the continued text is: its block index (Anthropic), or its item
/// and content part (Responses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Numbers {
    index: Option<u64>,
    item_id: Option<String>,
    output_index: Option<u64>,
    content_index: Option<u64>,
}

impl Numbers {
    fn of(json: &Value) -> Self {
        let number = |key: &str| json.get(key).and_then(Value::as_u64);
        Numbers {
            index: number("index"),
            item_id: json
                .get("item_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            output_index: number("output_index"),
            content_index: number("content_index"),
        }
    }
}

/// The members of an event that say where it is ([`Numbers`]) and what it
/// is: all a continuation's event is read for before it is known to need
/// a change, with [`scalar`].
const NUMBERED: [&str; 6] = [
    "type",
    "index",
    "item_id",
    "output_index",
    "content_index",
    "sequence_number",
];

/// An event's [`NUMBERED`] members, as a JSON object of their own: what
/// [`Numbers::of`] and [`Fix::apply`] read.
fn numbered(data: &[u8]) -> Option<Value> {
    read_members(data, &NUMBERED, scalar).map(Value::Object)
}

/// The id of the message item an `output_item.*` event's data says, and
/// the index of its last text part (0 before it has one: the first part
/// is the text's); `None` for another item. Its parts are stepped over,
/// never read into values: a message's `output_item.done` holds its
/// whole text.
fn message_at(data: &[u8]) -> Option<(String, u64)> {
    let item = member(data, "item")?.get().as_bytes();
    let is = |json: &[u8], kind: &str| {
        member(json, "type")
            .and_then(scalar)
            .is_some_and(|t| t == kind)
    };
    if !is(item, "message") {
        return None;
    }
    let id = member(item, "id").and_then(scalar)?.as_str()?.to_owned();
    let parts: Vec<&RawValue> = member(item, "content")
        .and_then(|parts| serde_json::from_str(parts.get()).ok())
        .unwrap_or_default();
    let text = parts
        .iter()
        .rposition(|part| is(part.get().as_bytes(), "output_text"))
        .unwrap_or(0);
    Some((id, text as u64))
}

/// `theirs` moved to where `base` (theirs for the continued block) sits
/// in the original, `ours`.
fn shifted(theirs: u64, base: Option<u64>, ours: u64) -> u64 {
    ours.saturating_add(theirs.saturating_sub(base.unwrap_or(theirs)))
}

impl Fix {
    /// The fix of an OpenAI chat or Gemini stream: its continuations'
    /// events take the original's `envelope`.
    pub(crate) fn under(envelope: Envelope) -> Self {
        Fix {
            envelope,
            ..Fix::default()
        }
    }

    /// Learns from `frame` (complete events the caller was shown), keeping
    /// what it knew for fields the frame does not carry; the next events
    /// applied are a new continuation's.
    pub(crate) fn learn(&mut self, provider: Provider, frame: &Bytes) {
        self.next_continuation();
        let (events, _) = split_events(frame);
        for event in events {
            let Some(json) = with_event(&event, |_, data| numbered(data)) else {
                continue;
            };
            let seen = Numbers::of(&json);
            match provider {
                Provider::Anthropic => {
                    self.ours.index = seen.index.or(self.ours.index);
                    match json.get("type").and_then(Value::as_str) {
                        Some("content_block_start" | "content_block_delta") => {
                            self.open = Some(true);
                        }
                        Some("content_block_stop") => self.open = Some(false),
                        _ => {}
                    }
                }
                Provider::OpenAiResponses => {
                    if let Some(seq) = last_sequence_number(&event) {
                        self.sequence = Some(seq.saturating_add(1));
                    }
                    // An item's own events (`output_item.added`, `.done`)
                    // name it in `item.id`, and its parts in `item.content`;
                    // only a message's text is continued, so another item's
                    // (a reasoning item, a function call) says nothing of
                    // where the text is.
                    let seen = match json.get("type").and_then(Value::as_str) {
                        Some(kind) if kind.starts_with("response.output_item.") => {
                            let Some((id, part)) = with_event(&event, |_, data| message_at(data))
                            else {
                                continue;
                            };
                            Numbers {
                                item_id: Some(id),
                                content_index: Some(part),
                                ..seen
                            }
                        }
                        _ => seen,
                    };
                    self.ours.item_id = seen.item_id.or(self.ours.item_id.take());
                    self.ours.output_index = seen.output_index.or(self.ours.output_index);
                    self.ours.content_index = seen.content_index.or(self.ours.content_index);
                }
                _ => {}
            }
        }
    }

    /// The events applied next are a new continuation's, numbered its own
    /// way.
    pub(crate) fn next_continuation(&mut self) {
        self.theirs = None;
        self.after = 0;
        self.joined = None;
    }

    /// The original response's id (Responses), from the event that named
    /// it.
    pub(crate) fn of_response(&mut self, id: Option<String>) {
        if self.response_id.is_none() {
            self.response_id = id;
        }
    }

    /// The continuation spliced in, its first `trimmed` bytes repeating
    /// what the caller held: its whole-text events then say the text the
    /// caller reads, the two joined (Responses; an SDK builds its final
    /// response from the terminal event: openai-python's
    /// `get_final_response().output_text` read the continuation's part
    /// alone).
    pub(crate) fn spliced_after(&mut self, trimmed: usize) {
        self.joined = Some(trimmed);
    }

    /// Takes the continuation's numbers from its first content, `event`:
    /// the continued text's when it is `text`, else (a tool call first)
    /// those of a block after the continued one, which keeps its own id.
    pub(crate) fn first_content(&mut self, event: &[u8], text: bool) {
        if self.theirs.is_some() {
            return;
        }
        let Some(json) = with_event(event, |_, data| numbered(data)) else {
            return;
        };
        let seen = Numbers::of(&json);
        self.theirs = Some(if text {
            seen
        } else {
            self.after = 1;
            Numbers {
                item_id: None,
                content_index: None,
                ..seen
            }
        });
    }

    /// The `content_block_stop` the continued block still needs, once
    /// (Anthropic): the continuation ends without more text (its own empty
    /// block is dropped with its preamble) or opens with a block after it,
    /// and a client that pairs every block's start with its stop would
    /// find the text block never closed.
    pub(crate) fn close_open_block(&mut self) -> Option<Bytes> {
        let index = self.ours.index.filter(|_| self.open == Some(true))?;
        self.open = Some(false);
        let stop = serde_json::json!({"type": "content_block_stop", "index": index});
        Some(serialize(b"content_block_stop", &stop))
    }

    /// The start of a new text block for a continuation whose text comes
    /// after the caller saw the continued block closed (a cut between
    /// `content_block_stop` and the finish), which then takes the next
    /// index (Anthropic): its deltas filed under the closed block would
    /// follow that block's stop, and its own stop would close it twice.
    /// Called once the continuation's first content, text, is known.
    /// The new block is then the continued one: its deltas and the stop
    /// that closes it ([`Fix::close_open_block`]) take its index.
    pub(crate) fn text_after_a_closed_block(&mut self) -> Option<Bytes> {
        let index = self.ours.index.filter(|_| self.open == Some(false))?;
        let index = index.saturating_add(1);
        self.ours.index = Some(index);
        self.open = Some(true);
        let start = serde_json::json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}});
        Some(serialize(b"content_block_start", &start))
    }

    /// Where the continued text is in the Responses API's stream — its
    /// item's id, output index and content index — and the next sequence
    /// number, as learned from what the caller saw.
    pub(crate) fn responses_place(&self) -> Option<(String, u64, u64, u64)> {
        Some((
            self.ours.item_id.clone()?,
            self.ours.output_index.unwrap_or(0),
            self.ours.content_index.unwrap_or(0),
            self.sequence?,
        ))
    }

    /// The index the continued text's deltas take (Anthropic): the
    /// continued block's — the block of its own opened after a closed one
    /// ([`Fix::text_after_a_closed_block`]), once there is one.
    pub(crate) fn text_index(&self) -> u64 {
        self.ours.index.unwrap_or(0).saturating_add(self.after)
    }

    /// `event` saying what the original stream would have said; `None` when
    /// it needs no change. `delivered` is the text the caller held when the
    /// continuation was spliced in.
    ///
    /// Every event after a splice comes here: it is read for its type and
    /// numbers alone, and only the members that change are written anew.
    /// Read whole into values, an event padded to the guard's cap (an
    /// array of zeros beside a text delta) cost 16 to 32 times its bytes,
    /// for every such event.
    pub(crate) fn apply(&mut self, event: &[u8], delivered: &str) -> Option<Bytes> {
        if !self.envelope.is_empty() {
            return with_event(event, |name, data| {
                write_members(name, data, &self.envelope.changes(data)?)
            });
        }
        with_event(event, |name, data| {
            let json = numbered(data)?;
            // The continuation's first event shown is its first content:
            // what it continues.
            let theirs = self
                .theirs
                .get_or_insert_with(|| Numbers::of(&json))
                .clone();
            let seen = Numbers::of(&json);
            // The members that change, with their new values.
            let mut changes = Map::new();
            let mut set = |key: &str, value: Value| {
                if json.get(key).is_some_and(|slot| *slot != value) {
                    changes.insert(key.to_owned(), value);
                }
            };
            let after = self.after;
            if let (Some(index), Some(ours)) = (seen.index, self.ours.index) {
                set(
                    "index",
                    shifted(index, theirs.index, ours.saturating_add(after)).into(),
                );
            }
            if let Some(seq) = self.sequence {
                set("sequence_number", seq.into());
                self.sequence = Some(seq.saturating_add(1));
            }
            // Only the continued item becomes the original's; another item
            // (a function call after the text) keeps its own id and parts.
            let continued = seen.item_id.is_none() || seen.item_id == theirs.item_id;
            if continued && let Some(id) = &self.ours.item_id {
                set("item_id", Value::String(id.clone()));
            }
            if let (Some(index), Some(ours)) = (seen.output_index, self.ours.output_index) {
                set(
                    "output_index",
                    shifted(index, theirs.output_index, ours.saturating_add(after)).into(),
                );
            }
            if continued
                && let (Some(index), Some(ours)) = (seen.content_index, self.ours.content_index)
            {
                set(
                    "content_index",
                    shifted(index, theirs.content_index, ours).into(),
                );
            }
            let kind = json.get("type").and_then(Value::as_str).unwrap_or("");
            if let Some((key, whole)) =
                self.join_whole_text(data, kind, continued, &theirs, delivered)
            {
                changes.insert(key.to_owned(), whole);
            }
            if changes.is_empty() {
                return None;
            }
            write_members(name, data, &changes)
        })
    }

    /// The Responses API's events that say the continued text whole (its
    /// `output_text.done`, `content_part.done`, `output_item.done` and the
    /// terminal response) saying the caller's whole text, under the
    /// original item's id and response's id: the member of `data` (an
    /// event of type `kind`) that changes, and its new value; `None` when
    /// none does. Only that member is read into a value.
    fn join_whole_text(
        &self,
        data: &[u8],
        kind: &str,
        continued: bool,
        theirs: &Numbers,
        before: &str,
    ) -> Option<(&'static str, Value)> {
        let trimmed = self.joined?;
        let read = |key: &str| whole(member(data, key)?);
        let join = |text: &mut Value| match text.as_str().and_then(|t| t.get(trimmed..)) {
            Some(rest) => {
                *text = Value::String(format!("{before}{rest}"));
                true
            }
            None => false,
        };
        let part = theirs.content_index.unwrap_or(0) as usize;
        let ours = &self.ours.item_id;
        // A message item the continuation's text is in: its id and the
        // continued part's text become the original's. `None` for another
        // item.
        let item = |item: &mut Value| {
            if theirs.item_id.is_none()
                || item.get("id").and_then(Value::as_str) != theirs.item_id.as_deref()
            {
                return None;
            }
            if let (Some(id), Some(slot)) = (ours, item.get_mut("id")) {
                *slot = Value::String(id.clone());
            }
            Some(
                item.pointer_mut(&format!("/content/{part}/text"))
                    .is_some_and(join),
            )
        };
        match kind {
            "response.output_text.done" if continued => {
                let mut text = read("text")?;
                join(&mut text).then_some(("text", text))
            }
            "response.content_part.done" if continued => {
                let mut part = read("part")?;
                part.get_mut("text")
                    .is_some_and(join)
                    .then_some(("part", part))
            }
            "response.output_item.done" => {
                let mut whole = read("item")?;
                (item(&mut whole) == Some(true)).then_some(("item", whole))
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let mut response = read("response")?;
                let mut changed = false;
                if let (Some(id), Some(slot)) = (&self.response_id, response.get_mut("id")) {
                    *slot = Value::String(id.clone());
                    changed = true;
                }
                let mut found = false;
                if let Some(output) = response.get_mut("output").and_then(Value::as_array_mut) {
                    for each in output.iter_mut() {
                        if let Some(joined) = item(each) {
                            found = true;
                            changed |= joined;
                        }
                    }
                }
                // A continuation that ended at once (a cut just before the
                // finish) wrote no text item of its own: the text the
                // caller holds is the answer's message, under the
                // original item's id, where the original had it.
                if let (false, Some(id)) = (found, ours)
                    && !before.is_empty()
                {
                    // A message item is `completed` or `incomplete`.
                    let status = match response.get("status").and_then(Value::as_str) {
                        Some("completed") => "completed",
                        _ => "incomplete",
                    };
                    if let Some(output) = response.get_mut("output").and_then(Value::as_array_mut) {
                        let message = serde_json::json!({"id": id, "type": "message",
                            "status": status, "role": "assistant",
                            "content": [{"type": "output_text", "text": before, "annotations": []}]});
                        let at = self.ours.output_index.unwrap_or(0) as usize;
                        output.insert(at.min(output.len()), message);
                        changed = true;
                    }
                }
                changed.then_some(("response", response))
            }
            _ => None,
        }
    }
}

/// Whether a run of whole events has a lifecycle event, one with a
/// `"response"` member (`response.created` first). A delta names none
/// (its type, `"response.…"`, is no such key): one byte search passes
/// it over.
pub(crate) fn names_a_response(events: &[u8]) -> bool {
    memchr::memmem::find(events, b"\"response\"").is_some()
}

/// The id of the Responses API answer a run of whole events names in a
/// lifecycle event (`"response":{"id":…}`).
pub(crate) fn response_id(events: &Bytes) -> Option<String> {
    let (events, _) = split_events(events);
    events.iter().find_map(|event| {
        with_event(event, |_, data| {
            let id = member(member(data, "response")?.get().as_bytes(), "id")?;
            serde_json::from_str(id.get()).ok()
        })
    })
}

/// `read` of one raw event's name and data (`raw` holds exactly one
/// event); `None` without an event.
pub(crate) fn with_event<T>(raw: &[u8], read: impl FnOnce(&[u8], &[u8]) -> Option<T>) -> Option<T> {
    let mut read = Some(read);
    let mut out = None;
    let _ = Scanner::default().feed(raw, |item| {
        if let Item::Event(event) = item
            && let Some(read) = read.take()
        {
            out = read(event.name, event.data);
        }
    });
    out
}

/// One raw event's name and JSON data, read whole (the tests' view).
#[cfg(test)]
pub(crate) fn parse_event(raw: &[u8]) -> Option<(Vec<u8>, Value)> {
    with_event(raw, |name, data| {
        Some((name.to_vec(), serde_json::from_slice(data).ok()?))
    })
}

/// Calls its function with each member of a JSON object, in order: its
/// key and its value's text. No value is built: a member is stepped over
/// as serde_json checks it, whatever it holds.
struct EachMember<F>(F);

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> DeserializeSeed<'de> for EachMember<F> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, F: FnMut(Cow<'de, str>, &'de RawValue)> Visitor<'de> for EachMember<F> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        // A key is borrowed unless it was escaped.
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let value = map.next_value()?;
            (self.0)(key, value);
        }
        Ok(())
    }
}

/// Calls `each` with every member of the JSON object `data` (an event's
/// data), its key and its value's text, in order; `None` when `data` is
/// not one object. The splice reads a few members of an event and
/// writes back the few it changes ([`write_members`]): a value tree of
/// the whole event would cost 16 to 32 times its bytes.
fn for_each_member<'a>(data: &'a [u8], each: impl FnMut(Cow<'a, str>, &'a RawValue)) -> Option<()> {
    let mut deserializer = serde_json::Deserializer::from_slice(data);
    EachMember(each).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()
}

/// The text of member `key` of the JSON object `data` (the last, when it
/// is named twice, as a parse into values keeps).
pub(crate) fn member<'a>(data: &'a [u8], key: &str) -> Option<&'a RawValue> {
    let mut found = None;
    for_each_member(data, |name, value| {
        if name == key {
            found = Some(value);
        }
    })?;
    found
}

/// The members of the JSON object `data` named in `keys`, each read with
/// `read` ([`whole`] or [`scalar`]); every other member is stepped over.
/// `None` when `data` is not one object or `read` refuses a member.
pub(crate) fn read_members(
    data: &[u8],
    keys: &[&str],
    read: fn(&RawValue) -> Option<Value>,
) -> Option<Map<String, Value>> {
    let mut members = Map::new();
    let mut refused = false;
    for_each_member(data, |key, value| {
        if keys.contains(&&*key) {
            match read(value) {
                Some(value) => {
                    members.insert(key.into_owned(), value);
                }
                None => refused = true,
            }
        }
    })?;
    (!refused).then_some(members)
}

/// A member's value, whole.
pub(crate) fn whole(value: &RawValue) -> Option<Value> {
    serde_json::from_str(value.get()).ok()
}

/// A member that should hold a number or a string: its value, or `null`
/// for an object or an array (or a string serde refuses, a lone
/// surrogate), which is not built. What the fix asks of such a member
/// (is it this number, this id?) a container answers as `null` does —
/// no — and a container padded to the guard's cap is a tree of millions
/// of values.
pub(crate) fn scalar(value: &RawValue) -> Option<Value> {
    Some(match value.get().as_bytes().first() {
        Some(b'{' | b'[') => Value::Null,
        _ => whole(value).unwrap_or(Value::Null),
    })
}

/// The longest member [`write_members`] writes as a value tree would: a
/// longer one goes as its bytes came. Read into values, a member costs up
/// to 32 times its bytes, so at most this times 32 at once.
const CANONICAL_MAX: usize = 64 << 10;

/// The event `name` with the JSON object `data` as its data, the members
/// `changes` names written with their values there; `None` when `data` is
/// not one object.
///
/// Written as a value tree of the whole event was (the bytes a caller got
/// before the splice stopped reading events whole): members in key order
/// (serde_json's map is a `BTreeMap`), a key named twice once with its
/// last value, each value compact — but for a member longer than
/// [`CANONICAL_MAX`] (padding), which goes as it came.
fn write_members(name: &[u8], data: &[u8], changes: &Map<String, Value>) -> Option<Bytes> {
    let mut members = BTreeMap::new();
    for_each_member(data, |key, value| {
        members.insert(key, value);
    })?;
    let mut bytes = event_head(name, data.len());
    bytes.push(b'{');
    // Into a `Vec`, serde_json fails to write nothing a string or a value
    // read from JSON holds; a failure is no event, still never a panic.
    let mut failed = false;
    for (at, (key, value)) in members.into_iter().enumerate() {
        if at > 0 {
            bytes.push(b',');
        }
        failed |= serde_json::to_writer(&mut bytes, &*key).is_err();
        bytes.push(b':');
        let canonical = (value.get().len() <= CANONICAL_MAX)
            .then(|| whole(value))
            .flatten();
        let written = match (changes.get(&*key), canonical) {
            (Some(change), _) => serde_json::to_writer(&mut bytes, change),
            (None, Some(value)) => serde_json::to_writer(&mut bytes, &value),
            (None, None) => {
                bytes.extend_from_slice(value.get().as_bytes());
                Ok(())
            }
        };
        failed |= written.is_err();
    }
    if failed {
        return None;
    }
    bytes.extend_from_slice(b"}\n\n");
    Some(Bytes::from(bytes))
}

/// An event's lines up to its data: `event: name` (when it has one) and
/// `data: `, in a buffer with room for `len` bytes of data and the blank
/// line.
fn event_head(name: &[u8], len: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(len + name.len() + 16);
    if !name.is_empty() {
        bytes.extend_from_slice(b"event: ");
        bytes.extend_from_slice(name);
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(b"data: ");
    bytes
}

pub(crate) fn serialize(name: &[u8], json: &Value) -> Bytes {
    let data = json.to_string();
    let mut bytes = event_head(name, data.len());
    bytes.extend_from_slice(data.as_bytes());
    bytes.extend_from_slice(b"\n\n");
    Bytes::from(bytes)
}

/// How a continuation lines up with what the caller has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alignment {
    /// Drop this many bytes from the continuation's start: they repeat the
    /// end of the delivered text (0: a clean continuation).
    Trim(usize),
    /// The continuation repeats delivered text but not as its tail: no
    /// guess, the stream ends with its interruption.
    Misaligned,
}

/// The shortest repeated text taken as evidence of a restart rather than a
/// continuation.
const PROBE_MIN: usize = 12;
/// How much of the continuation's head is looked for in the delivered
/// text.
const PROBE_LEN: usize = 16;
/// The longest repeat waited out: while the head, shorter than this, is
/// still a copy of delivered text near its end, more text is needed to
/// see where the copy stops (a model repeating its last sentences, or
/// restarting a short answer).
const REPEAT_MAX: usize = 1024;

/// How `head` (the continuation's text so far) lines up after `delivered`;
/// `None` while more text is needed. `complete`: no more is coming.
///
/// The overlap is the longest prefix of `head` that is a suffix of
/// `delivered` and starts a word there (or starts with white space), so a
/// continuation that repeats the last K words is trimmed by exactly them.
/// While all of `head` is such a suffix the overlap may go on, and while
/// it is a copy of delivered text that has not reached its end the copy
/// may go on (up to [`REPEAT_MAX`]): more text is needed. With no
/// overlap, a head whose first characters occur elsewhere in the
/// delivered text is a restart or a paraphrase: misaligned. An overlap
/// the delivered text already repeats just before it is
/// [ambiguous](ambiguous): misaligned too.
pub(crate) fn align(
    delivered: &str,
    head: &str,
    window: usize,
    complete: bool,
) -> Option<Alignment> {
    if head.is_empty() {
        return complete.then_some(Alignment::Trim(0));
    }
    let overlap = overlap(delivered, head);
    if overlap == head.len() && !complete {
        // All of it repeats: the repeat may go on.
        return None;
    }
    if !complete && copying(delivered, head) {
        return None;
    }
    if overlap == 0 {
        if head.len() < window && !complete {
            return None;
        }
        if let Some(alignment) = loose_overlap(delivered, head) {
            return Some(alignment);
        }
        if restates(delivered, head) || reopens(delivered, head) {
            return Some(Alignment::Misaligned);
        }
    }
    if ambiguous(delivered, &head[..overlap]) {
        return Some(Alignment::Misaligned);
    }
    Some(Alignment::Trim(overlap))
}

/// How a continuation of an Anthropic prefill lines up, or of a Gemini
/// request that ends with the delivered text as its `model` turn. The
/// model writes what follows that turn, so what merely resembles the
/// delivered tail is new text — a number in a matrix row (`[0 1 0` then
/// ` 0]`), a word said twice, a closing brace after a closing brace — and
/// trimming it would delete it. Two things are trimmed: a verbatim
/// restatement of the tail of at least two words and [`PROBE_MIN`] bytes
/// (too long to be a coincidence) unless it is [ambiguous](ambiguous),
/// and else the whitespace the delivered text ended with, which the
/// model writes anew (a prefill went without it: the API refuses a
/// prefill that ends in whitespace; after a Gemini turn that kept it, a
/// blank more or less loses no text). A head that begins the answer
/// again (see [`restarts`]) is misaligned. `None` while the head cannot
/// tell yet: a restatement shows only once it is whole, so a head that
/// repeats nothing waits for `window` bytes, and one still copying
/// delivered text waits, as [`align`] does.
pub(crate) fn align_prefill(
    delivered: &str,
    head: &str,
    window: usize,
    complete: bool,
) -> Option<Alignment> {
    if head.is_empty() {
        return complete.then_some(Alignment::Trim(0));
    }
    let repeat = overlap(delivered, head);
    if repeat == head.len() && !complete {
        // All of it repeats: the repeat may go on.
        return None;
    }
    if copying(delivered, head) {
        if !complete {
            return None;
        }
        // All of it still a copy when no more comes (the continuation cut
        // mid-repeat): a restatement or the same words anew, no telling
        // which, once it is long enough not to be a brace or a word.
        if repeat < head.len() && head.trim().len() >= PROBE_MIN {
            return Some(Alignment::Misaligned);
        }
    }
    let restated = &head[..repeat];
    if repeat >= PROBE_MIN && restated.trim().contains(char::is_whitespace) {
        if ambiguous(delivered, restated) {
            return Some(Alignment::Misaligned);
        }
        return Some(Alignment::Trim(repeat));
    }
    if head.len() < window && !complete {
        return None;
    }
    if repeat == 0 {
        if let Some(alignment) = loose_overlap(delivered, head) {
            return Some(alignment);
        }
        if restarts(delivered, head) {
            return Some(Alignment::Misaligned);
        }
    }
    Some(Alignment::Trim(respaced(delivered, head)))
}

/// Bytes of `head` that say again the whitespace `delivered` ended with: a
/// model given the delivered text without it (a right-stripped prefill, a
/// final message a chat template trimmed) writes it anew.
fn respaced(delivered: &str, head: &str) -> usize {
    let space = &delivered[delivered.trim_end().len()..];
    space
        .chars()
        .zip(head.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum()
}

/// How a continuation of a final message continued in place
/// (`continue_final_message`, sent right-stripped) lines up: it follows
/// the delivered text's last word, so only the whitespace the delivered
/// text ended with, which it writes anew, is trimmed ([`respaced`]); what
/// resembles the tail otherwise is new text. `None` while all of the head
/// is the start of that whitespace and more may come.
pub(crate) fn align_in_place(delivered: &str, head: &str, complete: bool) -> Option<Alignment> {
    let space = delivered.len() - delivered.trim_end().len();
    let respaced = respaced(delivered, head);
    if respaced == head.len() && respaced < space && !complete {
        return None;
    }
    Some(Alignment::Trim(respaced))
}

/// A repeat of the delivered tail spaced anew (`(wave  dis` for `(wave
/// dis`, a line break for a space): the overlap when runs of white space
/// read as one space, in `head`'s own bytes, or what stops a guess.
/// Only a repeat of two words or more counts: one word spaced anew is
/// no evidence. `None` when there is none.
fn loose_overlap(delivered: &str, head: &str) -> Option<Alignment> {
    // The delivered tail a repeat of `head` could come from, whole
    // characters from a word's start.
    let mut from = delivered.len().saturating_sub(2 * head.len() + PROBE_LEN);
    while !delivered.is_char_boundary(from) {
        from += 1;
    }
    let (tail, _) = spaced_as_one(&delivered[from..]);
    let (loose_head, offsets) = spaced_as_one(head);
    let repeat = overlap(&tail, &loose_head);
    let said = &loose_head[..repeat];
    if said.split_whitespace().count() < 2 {
        return None;
    }
    if ambiguous(&tail, said) {
        return Some(Alignment::Misaligned);
    }
    Some(Alignment::Trim(offsets[repeat]))
}

/// `text` with every run of white space written as one space, and for each
/// of its bytes (and its end) the offset in `text` it comes from.
fn spaced_as_one(text: &str) -> (String, Vec<usize>) {
    let mut spaced = String::with_capacity(text.len());
    let mut offsets = Vec::with_capacity(text.len() + 1);
    let mut blank = false;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() {
            if !blank {
                spaced.push(' ');
                offsets.push(at);
            }
            blank = true;
            continue;
        }
        blank = false;
        spaced.push(c);
        offsets.extend(std::iter::repeat_n(at, c.len_utf8()));
    }
    offsets.push(text.len());
    (spaced, offsets)
}

/// Whether the head opens as the delivered text does: the answer begun
/// again. Under a prefill (or a Gemini `model` turn) this alone is taken
/// as no continuation: there the model writes what follows, and what
/// follows may well say again a line or a phrase said before (a code
/// line, a refrain), which [`restates`] would take for a restatement.
fn restarts(delivered: &str, head: &str) -> bool {
    probe(head).is_some_and(|probe| delivered.trim_start().starts_with(probe))
}

/// Whether the head opens with the answer's own first two words (at least
/// [`REOPEN_MIN`] bytes of them) and then goes another way: the answer
/// begun again in other words ("Sea walls are coastal structures…" after
/// "Sea walls protect coasts… They are built from"), which no repeat of
/// the tail or of a phrase ([`restates`]) shows. Spliced in, the caller
/// would read two answers; given up, the interruption surfaces as without
/// the layer. Not under a prefill (or a Gemini `model` turn), where the
/// model writes what follows.
fn reopens(delivered: &str, head: &str) -> bool {
    fn first_two(text: &str) -> Option<(&str, &str)> {
        let mut words = text.split_whitespace();
        Some((words.next()?, words.next()?))
    }
    match (first_two(delivered), first_two(head)) {
        (Some(answer), Some(again)) => {
            answer == again && answer.0.len() + answer.1.len() >= REOPEN_MIN
        }
        _ => false,
    }
}

/// The fewest bytes of two opening words taken as the answer begun again:
/// "I am" or "1. A" are too common to tell.
const REOPEN_MIN: usize = 6;

/// Whether the head's first characters occur in the delivered text: a
/// restart or a restatement, not what follows.
fn restates(delivered: &str, head: &str) -> bool {
    probe(head)
        .is_some_and(|probe| memchr::memmem::find(delivered.as_bytes(), probe.as_bytes()).is_some())
}

/// The head's first characters looked for in the delivered text: up to
/// [`PROBE_LEN`] bytes, `None` when fewer than [`PROBE_MIN`] (too short
/// to be evidence).
fn probe(head: &str) -> Option<&str> {
    let probe = excerpt(head.trim_start(), PROBE_LEN);
    (probe.len() >= PROBE_MIN).then_some(probe)
}

/// Whether `text` is two or more copies of one piece holding a word (its
/// shortest period is at most half its length, and has a letter or a
/// digit): ` ha ha`, `[0 1][0 1]`. Markup that doubles a sign (`**`,
/// `##`, a code fence's three backticks) is no repetition of the answer.
fn periodic(text: &str) -> bool {
    let border = borders(text.as_bytes());
    let period = text.len() - border.last().copied().unwrap_or(0);
    2 * period <= text.len()
        && text
            .get(..period)
            .is_some_and(|piece| piece.chars().any(char::is_alphanumeric))
}

/// The prefix function of `pattern` (Knuth–Morris–Pratt): `border[i]` is
/// the length of the longest proper prefix of `pattern[..=i]` that is
/// also its suffix.
fn borders(pattern: &[u8]) -> Vec<usize> {
    let mut border = vec![0; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = border[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        border[i] = k;
    }
    border
}

/// Whether `head` is, so far, a copy of delivered text near its end that
/// has not reached the end: it occurs, starting a word, in the last
/// [`REPEAT_MAX`] bytes of the delivered text and ends before it does. A
/// model repeating more than the alignment window of its tail is
/// mid-repeat here; deciding now would see no overlap yet. An empty head
/// copies nothing.
fn copying(delivered: &str, head: &str) -> bool {
    let (text, n) = (delivered.as_bytes(), delivered.len());
    // Where a head of valid UTF-8 occurs in valid UTF-8 a character
    // starts (its first byte is no continuation byte), so the match is a
    // place to slice at; an empty head occurs at every byte, inside
    // characters too.
    if head.is_empty() || head.len() >= REPEAT_MAX || head.len() >= n {
        return false;
    }
    let from = n - (REPEAT_MAX + head.len()).min(n);
    memchr::memmem::find_iter(&text[from..n - 1], head.as_bytes())
        .any(|at| starts_a_run(&delivered[..from + at], head))
}

/// Whether trimming `repeat` (a prefix of the continuation that is a
/// suffix of the delivered text) could delete new text: the delivered
/// text already repeats it just before its end (`repeat` occurs again
/// ending within `repeat.len()` bytes of the end: a row after a row,
/// `ha ha`, a brace after a brace). There the answer's own next words may
/// well be the same again, and a model repeating its tail and a model
/// going on send the same bytes: trimming could lose a row, not trimming
/// could show one twice, so neither is guessed. Whitespace alone is
/// trimmed: a blank line more or less is no lost text.
fn ambiguous(delivered: &str, repeat: &str) -> bool {
    let (n, l) = (delivered.len(), repeat.len());
    if l == 0 || l >= n || repeat.trim().is_empty() {
        return false;
    }
    // A repeat that is itself a repetition (` ha ha`, `[0 1][0 1]`): the
    // text was repeating when it was cut.
    if periodic(repeat) {
        return true;
    }
    // An occurrence inside the last 2l bytes that ends before the last
    // byte ends between 1 and l bytes before the end.
    let from = n.saturating_sub(2 * l);
    memchr::memmem::find(&delivered.as_bytes()[from..n - 1], repeat.as_bytes()).is_some()
}

/// Whether `repeat`, written after `before`, begins a word or a run of
/// white space there (or a line): a repeat of the last words starts where
/// one of them does, or at the white space before it, never inside a
/// word, nor inside an indentation (the last four of eight spaces that
/// open a line before a brace are no repeat of the line). Inside a run of
/// blanks within a line (two spaces after a full stop) a repeat may start.
/// White space alone may start anywhere: a blank more or less loses no
/// text.
fn starts_a_run(before: &str, repeat: &str) -> bool {
    let Some(last) = before.chars().next_back() else {
        return true;
    };
    if last == '\n' || repeat.trim().is_empty() {
        return true;
    }
    match (
        last.is_whitespace(),
        repeat.starts_with(char::is_whitespace),
    ) {
        (false, false) => false,
        (true, true) => {
            // Inside a run of blanks: an indentation when the run opens
            // its line.
            let line = before.trim_end_matches([' ', '\t']);
            !(line.is_empty() || line.ends_with('\n'))
        }
        _ => true,
    }
}

/// The longest prefix of `head` that is a suffix of `delivered` and begins
/// a word in it ([`starts_a_run`]).
///
/// Linear in the head: the layer asks after every event while a long
/// continuation repeats the tail (a model in a repetition loop), so a
/// quadratic search would add up to minutes inside one poll. While all
/// of `head` still repeats the tail, one comparison says so; otherwise
/// the prefix function of the head finds every prefix that is a suffix
/// of the delivered text (Knuth–Morris–Pratt), longest first.
fn overlap(delivered: &str, head: &str) -> usize {
    let starts_word = |l: usize| {
        let start = delivered.len() - l;
        delivered.is_char_boundary(start)
            && head.is_char_boundary(l)
            && starts_a_run(&delivered[..start], &head[..l])
    };
    if delivered.ends_with(head) && starts_word(head.len()) {
        return head.len();
    }
    let max = head.len().min(delivered.len());
    let pattern = &head.as_bytes()[..max];
    let tail = &delivered.as_bytes()[delivered.len() - max..];
    let border = borders(pattern);
    // The longest prefix of the pattern the tail ends with.
    let mut matched = 0;
    for &byte in tail {
        if matched == max {
            matched = border[matched - 1];
        }
        while matched > 0 && pattern[matched] != byte {
            matched = border[matched - 1];
        }
        if pattern[matched] == byte {
            matched += 1;
        }
    }
    // Every shorter prefix the tail ends with is a border of a longer one.
    let mut l = matched;
    while l > 0 && !starts_word(l) {
        l = border[l - 1];
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Searching only what came after a prefix that ends no event
        /// finds what searching the whole finds.
        #[test]
        fn searching_the_new_bytes_finds_what_the_whole_search_finds(
            data in prop::collection::vec(prop::sample::select(vec![b'\n', b'\r', b'a', b':']), 0..40),
            at in any::<prop::sample::Index>(),
        ) {
            // The longest prefix that ends no event, then a cut in it.
            let mut clean = data.len();
            while last_boundary(&data[..clean]).is_some() {
                clean -= 1;
            }
            let searched = if clean == 0 { 0 } else { at.index(clean + 1) };
            prop_assert_eq!(last_boundary_since(&data, searched), last_boundary(&data));
        }

        /// The last boundary is where a reader of the SSE spec last read a
        /// blank line after a line (a line ends with CRLF, LF or CR, a CR
        /// at the end included: the reader dispatches there), and the
        /// events split off end at every blank line.
        #[test]
        fn boundaries_are_where_a_reader_reads_blank_lines(
            data in prop::collection::vec(prop::sample::select(vec![b'\n', b'\r', b'a']), 0..40),
        ) {
            // Every line's start, where its text ends, and where its end does.
            let mut lines = Vec::new();
            let (mut start, mut at) = (0, 0);
            while at < data.len() {
                let stop = match (data[at], data.get(at + 1)) {
                    (b'\r', Some(b'\n')) => at + 2,
                    (b'\r' | b'\n', _) => at + 1,
                    _ => {
                        at += 1;
                        continue;
                    }
                };
                lines.push((start, at, stop));
                start = stop;
                at = stop;
            }
            let ends: Vec<usize> = lines
                .iter()
                .filter(|&&(start, text_end, _)| start > 0 && start == text_end)
                .map(|&(_, _, stop)| stop)
                .collect();
            prop_assert_eq!(last_boundary(&data), ends.last().copied());
            let data = Bytes::from(data);
            let (events, rest) = split_events(&data);
            let mut split = Vec::new();
            let mut end = 0;
            for event in &events {
                end += event.len();
                split.push(end);
            }
            prop_assert_eq!(rest, end);
            // Split off, a blank line first in `data` (or after another) is
            // an event of its own, with nothing in it.
            let blanks: Vec<usize> = lines
                .iter()
                .filter(|&&(start, text_end, _)| start == text_end)
                .map(|&(_, _, stop)| stop)
                .collect();
            prop_assert_eq!(split, blanks);
        }
    }

    #[test]
    fn boundaries_in_every_line_ending() {
        assert!(ends_at_boundary(b"data: a\n\n"));
        assert!(ends_at_boundary(b"data: a\r\n\r\n"));
        assert!(!ends_at_boundary(b"data: a\n"));
        assert!(!ends_at_boundary(b"data: a\r\n"));
        assert_eq!(last_boundary(b"data: a\n\ndata: b"), Some(9));
        assert_eq!(last_boundary(b"data: a\r\n\r\ndata: b\r\n"), Some(11));
        assert_eq!(last_boundary(b"data: a\n"), None);
        // A blank line ended by a CR ends its event there, as an SSE
        // reader dispatches it: an LF after it is the rest of its CRLF.
        assert!(ends_at_boundary(b"data: a\r\r"));
        assert!(ends_at_boundary(b"data: a\r\n\r"));
        assert!(ends_at_boundary(b"data: a\n\r"));
        assert!(!ends_at_boundary(b"data: a\r"));
        assert_eq!(last_boundary(b"data: a\r\n\r"), Some(10));
        assert_eq!(last_boundary(b"data: a\r\r"), Some(9));
        assert_eq!(last_boundary(b"data: a\r\rdata: b\r"), Some(9));
        assert_eq!(last_boundary(b"data: a\r"), None);
        assert_eq!(last_boundary(b"data: a\r\n"), None);
        let data = Bytes::from_static(b"data: 1\r\rdata: 2\r\r\ndata: 3\r\n\r");
        let (events, rest) = split_events(&data);
        assert_eq!(
            events,
            [
                &b"data: 1\r\r"[..],
                &b"data: 2\r\r\n"[..],
                &b"data: 3\r\n\r"[..]
            ]
        );
        assert_eq!(rest, data.len());
        assert_eq!(split_events(&Bytes::from_static(b"data: 1\r")).0.len(), 0);
        let data = Bytes::from_static(b"event: x\ndata: 1\n\n: ping\n\ndata: 2\r\n\r\ndata: 3");
        let (events, rest) = split_events(&data);
        assert_eq!(
            events,
            [
                &b"event: x\ndata: 1\n\n"[..],
                &b": ping\n\n"[..],
                &b"data: 2\r\n\r\n"[..]
            ]
        );
        assert_eq!(&data[rest..], b"data: 3");
    }

    #[test]
    fn a_repeated_tail_is_trimmed_exactly() {
        let delivered = "w1 w2 w3 w4 w5 w6 w7";
        // The last three words again, then new ones.
        assert_eq!(
            align(delivered, " w5 w6 w7 w8 w9", 8, false),
            Some(Alignment::Trim(9))
        );
        // Still all repeat: wait for more.
        assert_eq!(align(delivered, " w5 w6", 8, false), None);
        // A clean continuation.
        assert_eq!(
            align(delivered, " w8 w9 w10", 8, false),
            Some(Alignment::Trim(0))
        );
        // Not inside a word: `7` is no repeat of `w7`.
        assert_eq!(
            align(delivered, "7 more", 4, false),
            Some(Alignment::Trim(0))
        );
        // A restart: the whole answer again, trimmed whole.
        assert_eq!(
            align(delivered, "w1 w2 w3 w4 w5 w6 w7 w8", 8, false),
            Some(Alignment::Trim(delivered.len()))
        );
        // Repeats that are not the tail: no guess.
        assert_eq!(
            align(delivered, "w2 w3 w4 w5 w6 w9", 8, false),
            Some(Alignment::Misaligned)
        );
        assert_eq!(align(delivered, "", 8, true), Some(Alignment::Trim(0)));
    }

    /// Text that repeats itself before the cut: the continuation's first
    /// row may be the model's repeat of the last one or the next row, so
    /// it is not trimmed (a row lost) nor kept (a row twice): no guess.
    #[test]
    fn a_repeat_the_answer_itself_repeats_is_no_guess() {
        for (delivered, head) in [
            (
                "Rows:\nRow: [0 1 0 0]\nRow: [0 1 0 0]\n",
                "Row: [0 1 0 0]\nThat is all, three rows.",
            ),
            ("He laughed: ha ha", " ha. Then he left the room at once."),
            (
                "fn f() {\n    if x {\n        y();\n    }\n    }\n",
                "    }\n}\nThat closes every block we opened.",
            ),
        ] {
            assert_eq!(
                align(delivered, head, 8, false),
                Some(Alignment::Misaligned),
                "{head:?}"
            );
            // A prefill's model writes what follows: a short repeat is
            // new text there, a long one is no guess either.
            let prefilled = if head.starts_with("Row") {
                Alignment::Misaligned
            } else {
                Alignment::Trim(0)
            };
            assert_eq!(
                align_prefill(delivered, head, 8, false),
                Some(prefilled),
                "{head:?}"
            );
        }
        // The same repeat once, after text that does not repeat it: the
        // model's repeat of its tail, trimmed.
        let delivered = "Rows:\nRow: [0 1 0 0]\n";
        assert_eq!(
            align(delivered, "Row: [0 1 0 0]\nThat is all.", 8, false),
            Some(Alignment::Trim(15))
        );
        // A repeat that repeats itself: the answer was repeating.
        assert_eq!(
            align(
                "Ha ha ha",
                " ha ha, said the child, and the sea answered.",
                8,
                false
            ),
            Some(Alignment::Misaligned)
        );
        // The last spaces of an indentation are no repeat of the line.
        assert_eq!(
            align(
                "if a {\n    if b {\n        go();\n        }\n",
                "    }\n}\nThat closes every block we opened.",
                8,
                false
            ),
            Some(Alignment::Trim(0))
        );
        // Whitespace alone is trimmed.
        assert_eq!(
            align("one.\n\ntwo.\n\n", "\n\nthree and four and five.", 8, false),
            Some(Alignment::Trim(2))
        );
    }

    /// In place, only the whitespace said again is trimmed, once all of
    /// it could have come; text that looks like the tail is new.
    #[test]
    fn in_place_only_the_whitespace_said_again_is_trimmed() {
        assert_eq!(align_in_place("a\n\n", "\n", false), None);
        assert_eq!(
            align_in_place("a\n\n", "\n", true),
            Some(Alignment::Trim(1))
        );
        assert_eq!(
            align_in_place("a\n\n", "\n\nb", false),
            Some(Alignment::Trim(2))
        );
        assert_eq!(
            align_in_place("a\n", "\n\nb", false),
            Some(Alignment::Trim(1))
        );
        assert_eq!(
            align_in_place("ha ha", " ha!", false),
            Some(Alignment::Trim(0))
        );
        assert_eq!(
            align_in_place("x = 1 ", "\ty", false),
            Some(Alignment::Trim(0))
        );
    }

    /// What the rules against ambiguity must not catch: a repeat after two
    /// spaces, markup that doubles a sign, and, under a prefill, a line
    /// said again (the model writes what follows the prefill).
    #[test]
    fn ordinary_repeats_are_still_lined_up() {
        let cases = [
            (
                "The storm ended at dawn.  Then we went",
                " Then we went home, and slept.",
                " Then we went",
            ),
            (
                "Here is the example:\n\n```",
                "```python\nprint(1)\n```\nThat prints one.",
                "```",
            ),
            ("Steps:\n\n**", "**Step one**: mix the flour well.", "**"),
            ("Intro.\n\n##", "## Installation and first steps", "##"),
        ];
        for (delivered, head, repeat) in cases {
            assert_eq!(
                align(delivered, head, 8, false),
                Some(Alignment::Trim(repeat.len())),
                "{head:?}"
            );
        }
        // A continuation cut while it still copies the tail: no telling.
        let delivered = "Engineers writing in Japanese call this wave dis";
        assert_eq!(
            align_prefill(delivered, "writing in Japanese call", 64, true),
            Some(Alignment::Misaligned)
        );
        let code = "def f(x):\n    if x is None:\n        return None\n    if x < 0:\n";
        assert_eq!(
            align_prefill(code, "        return None\n    return x * 2\n", 8, true),
            Some(Alignment::Trim(0))
        );
    }

    /// The answer begun again in other words, after its own first two
    /// words, is no continuation (spliced in, the caller would read two
    /// answers); a continuation that merely shares a word with the start,
    /// or opens with two short common words, is one.
    #[test]
    fn an_answer_begun_again_in_other_words_is_no_continuation() {
        let delivered = "Sea walls protect coasts by absorbing wave energy. They are built from";
        let again =
            "Sea walls are coastal structures that shield the shore from erosion and storms.";
        assert_eq!(
            align(delivered, again, 64, false),
            Some(Alignment::Misaligned)
        );
        let goes_on = " concrete, steel or rock, and each needs a deep footing to hold.";
        assert_eq!(
            align(delivered, goes_on, 64, false),
            Some(Alignment::Trim(0))
        );
        let sea = " Sea water wears the weaker ones, so rock armour lasts longest of all.";
        assert_eq!(align(delivered, sea, 64, false), Some(Alignment::Trim(0)));
        let short = "I am";
        let answer = format!("{short} sure the walls hold. It is");
        let head =
            format!("{short} not going to repeat myself here: the walls hold well in storms.");
        assert_eq!(align(&answer, &head, 64, false), Some(Alignment::Trim(0)));
        // Under a prefill the model writes what follows: no such guess.
        assert_ne!(
            align_prefill(delivered, again, 64, false),
            Some(Alignment::Misaligned)
        );
    }

    /// A repeat of the tail spaced anew is trimmed by its own bytes; a
    /// short one is no evidence.
    #[test]
    fn a_repeat_spaced_anew_is_trimmed() {
        let delivered = "Engineers writing in Japanese call this (wave dis";
        let head = "(wave  dissipation). Three rules matter here.";
        for check in [align, align_prefill] {
            assert_eq!(
                check(delivered, head, 16, false),
                Some(Alignment::Trim("(wave  dis".len()))
            );
        }
        let head = "call\nthis (wave dissipation). Three rules matter.";
        assert_eq!(
            align(delivered, head, 16, false),
            Some(Alignment::Trim("call\nthis (wave dis".len()))
        );
        // One word spaced anew: too little to tell.
        assert_eq!(
            align("the old wall", "\twall stands firm and tall.", 8, false),
            Some(Alignment::Trim(0))
        );
    }

    /// A repeat longer than the alignment window is waited out while it
    /// is still a copy of the delivered tail, and trimmed whole; a
    /// restatement of something earlier is no continuation, under a
    /// prefill too.
    #[test]
    fn a_long_repeat_is_waited_out_and_an_earlier_restatement_is_no_guess() {
        let delivered = "Sea walls absorb the energy of waves. A naive design fails at the \
                         weakest joint, and then the next one. Engineers call this wave dis";
        let start = delivered.find("the weakest").unwrap();
        let head = format!("{}sipation. Three rules matter.", &delivered[start..]);
        let repeat = delivered.len() - start;
        assert!(repeat > 64);
        for check in [align, align_prefill] {
            let mut decided = None;
            for (at, _) in head.char_indices().skip(1) {
                if let Some(alignment) = check(delivered, &head[..at], 64, false) {
                    decided = Some((at, alignment));
                    break;
                }
            }
            let (at, alignment) = decided.expect("decided");
            assert_eq!(alignment, Alignment::Trim(repeat));
            assert!(at > repeat, "decided at {at}, before the repeat ended");
        }
        // The first sentence again, then what follows: misaligned.
        let restated = "Sea walls absorb the energy of waves. Three rules matter here.";
        for check in [align, align_prefill] {
            assert_eq!(
                check(delivered, restated, 64, true),
                Some(Alignment::Misaligned)
            );
        }
    }

    /// A model stuck in a repetition loop, continued: the head repeats the
    /// tail for the whole of `max_head`, one short event at a time, and
    /// the layer asks `align` after each. Each call must cost in
    /// proportion to the head, not its square: quadratic calls add up to
    /// minutes of CPU inside one `poll_frame` (measured: 2 s for 12 KiB).
    #[test]
    fn lining_up_a_repetition_loop_takes_linear_time() {
        let delivered = " a".repeat(512 * 1024);
        let mut head = String::new();
        let started = std::time::Instant::now();
        while head.len() < 64 * 1024 {
            head.push_str(" a");
            assert_eq!(align(&delivered, &head, 64, false), None);
        }
        // The loop already repeated itself before the cut: whether the
        // head is the model's repeat or the loop going on, no one can say.
        assert_eq!(
            align(&delivered, &head, 64, true),
            Some(Alignment::Misaligned)
        );
        // Linear: well under a second even unoptimised; quadratic: minutes.
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    /// `overlap` against its definition, read literally, on every pair of
    /// short texts of words, spaces and a two-byte character.
    #[test]
    fn the_overlap_is_the_longest_word_aligned_repeat() {
        fn texts(len: usize) -> Vec<String> {
            let mut all = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..len {
                last = last
                    .iter()
                    .flat_map(|t| ["a", " ", "\n", "é"].map(|c| format!("{t}{c}")))
                    .collect();
                all.extend(last.iter().cloned());
            }
            all
        }
        let definition = |delivered: &str, head: &str| {
            (1..=head.len().min(delivered.len()))
                .filter(|&l| {
                    let start = delivered.len() - l;
                    head.is_char_boundary(l)
                        && delivered.is_char_boundary(start)
                        && delivered[start..] == head[..l]
                        && {
                            let before = &delivered[..start];
                            let line = before.trim_end_matches([' ', '\t']);
                            let blank_before = before.ends_with(char::is_whitespace);
                            let blank_head = head.starts_with(char::is_whitespace);
                            start == 0
                                || before.ends_with('\n')
                                || head[..l].trim().is_empty()
                                || blank_before != blank_head
                                || (blank_before && !(line.is_empty() || line.ends_with('\n')))
                        }
                })
                .max()
                .unwrap_or(0)
        };
        let texts = texts(4);
        for delivered in &texts {
            for head in &texts {
                assert_eq!(
                    overlap(delivered, head),
                    definition(delivered, head),
                    "{delivered:?} {head:?}"
                );
            }
        }
    }

    #[test]
    fn a_continuation_takes_the_original_index_and_numbers() {
        let mut fix = Fix::default();
        fix.learn(
            Provider::Anthropic,
            &Bytes::from_static(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"),
        );
        let next = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\n";
        let fixed = fix.apply(next, "").unwrap();
        assert!(
            std::str::from_utf8(&fixed).unwrap().contains("\"index\":2"),
            "{fixed:?}"
        );
        let mut fix = Fix::default();
        fix.learn(
            Provider::OpenAiResponses,
            &Bytes::from_static(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" w3\",\"sequence_number\":7}\n\n"),
        );
        let next = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_2\",\"output_index\":0,\"content_index\":0,\"delta\":\" w4\",\"sequence_number\":4}\n\n";
        let fixed = String::from_utf8(fix.apply(next, "").unwrap().to_vec()).unwrap();
        assert!(
            fixed.contains("\"sequence_number\":8") && fixed.contains("\"item_id\":\"msg_1\""),
            "{fixed}"
        );
        let fixed = String::from_utf8(fix.apply(next, "").unwrap().to_vec()).unwrap();
        assert!(fixed.contains("\"sequence_number\":9"), "{fixed}");
    }

    #[test]
    fn an_item_after_the_continued_one_keeps_its_own_id_and_place() {
        let mut fix = Fix::default();
        fix.learn(
            Provider::OpenAiResponses,
            &Bytes::from_static(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\" w3\",\"sequence_number\":7}\n\n"),
        );
        let text = b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_2\",\"output_index\":0,\"content_index\":0,\"delta\":\" w4\",\"sequence_number\":4}\n\n";
        let fixed = String::from_utf8(fix.apply(text, "").unwrap().to_vec()).unwrap();
        assert!(
            fixed.contains("\"item_id\":\"msg_1\"") && fixed.contains("\"output_index\":1"),
            "{fixed}"
        );
        // The function call the continuation adds after its text.
        let call = b"event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":1,\"delta\":\"{}\",\"sequence_number\":9}\n\n";
        let fixed = String::from_utf8(fix.apply(call, "").unwrap().to_vec()).unwrap();
        assert!(
            fixed.contains("\"item_id\":\"fc_1\"") && fixed.contains("\"output_index\":2"),
            "{fixed}"
        );
    }

    #[test]
    fn a_trimmed_event_keeps_only_the_logprobs_of_what_it_shows() {
        let lp = |token: &str| serde_json::json!({"token": token, "logprob": -0.1, "bytes": token.as_bytes(), "top_logprobs": []});
        let event = |tokens: &[&str]| {
            let data = serde_json::json!({"choices": [{"index": 0,
                "delta": {"content": tokens.concat()},
                "logprobs": {"content": tokens.iter().map(|t| lp(t)).collect::<Vec<_>>()},
                "finish_reason": null}]});
            format!("data: {data}\n\n")
        };
        let raw = event(&[" w2", " w3", " w4"]);
        let rewritten = rewrite(Provider::OpenAi, raw.as_bytes(), " w4").unwrap();
        let (_, json) = parse_event(&rewritten).unwrap();
        let (_, expected) = parse_event(event(&[" w4"]).as_bytes()).unwrap();
        assert_eq!(json, expected);
        // A cut inside a token cannot be shown with its logprobs.
        assert_eq!(rewrite(Provider::OpenAi, raw.as_bytes(), "4"), None);
    }

    #[test]
    fn a_gemini_thought_is_not_where_the_kept_text_goes() {
        let raw = b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Planning.\",\"thought\":true},{\"text\":\" w2 w3\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
        let rewritten = rewrite(Provider::Gemini, raw, " w3").unwrap();
        let (_, json) = parse_event(&rewritten).unwrap();
        assert_eq!(
            json.pointer("/candidates/0/content/parts").unwrap(),
            &serde_json::json!([{"text": "Planning.", "thought": true}, {"text": " w3"}])
        );
        assert_eq!(
            classify(Provider::Gemini, &rewritten),
            Kind::Content {
                text: Some(" w3".into()),
                finish: false,
                act: false
            }
        );
    }

    /// The envelope is learned from the first frame with a JSON event,
    /// however its lines end, and not from a comment or the end marker.
    #[test]
    fn a_frame_carries_a_json_event_only_with_a_whole_object_event() {
        for (frame, carries) in [
            (&b": OPENROUTER PROCESSING\n\n"[..], false),
            (b"data: [DONE]\n\n", false),
            (b"data: {\"id\":\"c\"}\n\n", true),
            (b"data:{\"id\":\"c\"}\r\n\r\n", true),
            (b": ping\n\nevent: x\ndata:  {\"id\":\"c\"}\n\n", true),
            (b"retry: 10\nid: 1\n\n", false),
            // `data:` inside a comment is no field.
            (b": data: {\"id\":\"c\"}\n\n", false),
        ] {
            assert_eq!(
                carries_json_event(frame),
                carries,
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
    }

    /// One decoder per stream: a refusal streamed, then ended with `stop`,
    /// is a refusal (each event decoded alone says a normal finish).
    #[test]
    fn a_streams_decoder_reads_a_refusal_ended_with_stop() {
        let refusal = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"No.\"},\"finish_reason\":null}]}\n\n";
        let stop =
            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        let mut decoder = Decoder::new(Provider::OpenAi).within_answer();
        assert_eq!(classify_with(&mut decoder, refusal), (Kind::Other, None));
        assert_eq!(
            classify_with(&mut decoder, stop),
            (Kind::End, Some(FinishKind::Refused))
        );
        let alone = classify_with(&mut Decoder::new(Provider::OpenAi).within_answer(), stop);
        assert_eq!(alone, (Kind::End, Some(FinishKind::Complete)));
    }

    /// The Responses API's terminal event holds the whole answer again:
    /// read alone, within an answer, it is the answer's end, not its text
    /// a second time.
    #[test]
    fn a_terminal_event_is_an_end() {
        let completed = br#"event: response.completed
data: {"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"w1 w2 w3"}]}]}}

"#;
        assert_eq!(classify(Provider::OpenAiResponses, completed), Kind::End);
    }

    #[test]
    fn events_are_classified_and_rewritten_in_their_shape() {
        let openai =
            br#"data: {"choices":[{"index":0,"delta":{"content":" w4"},"finish_reason":null}]}

"#;
        assert_eq!(
            classify(Provider::OpenAi, openai),
            Kind::Content {
                text: Some(" w4".into()),
                finish: false,
                act: false
            }
        );
        let rewritten = rewrite(Provider::OpenAi, openai, "4").unwrap();
        assert_eq!(
            classify(Provider::OpenAi, &rewritten),
            Kind::Content {
                text: Some("4".into()),
                finish: false,
                act: false
            }
        );
        let anthropic = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w4\"}}\n\n";
        let rewritten = rewrite(Provider::Anthropic, anthropic, " x").unwrap();
        assert!(rewritten.starts_with(b"event: content_block_delta\ndata: "));
        assert_eq!(
            classify(Provider::Anthropic, &rewritten),
            Kind::Content {
                text: Some(" x".into()),
                finish: false,
                act: false
            }
        );
        let gemini = b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" w4\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n";
        let rewritten = rewrite(Provider::Gemini, gemini, "").unwrap();
        assert_eq!(classify(Provider::Gemini, &rewritten), Kind::End);
    }

    /// A chunk with text and a function call: the call is content of its
    /// own, and cutting all its text away keeps the call.
    #[test]
    fn a_call_beside_text_is_kept_when_the_text_is_cut() {
        let raw = b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" w6 w7\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
        assert_eq!(
            classify(Provider::Gemini, raw),
            Kind::Content {
                text: Some(" w6 w7".into()),
                finish: false,
                act: true
            }
        );
        let rewritten = rewrite(Provider::Gemini, raw, "").unwrap();
        let (_, json) = parse_event(&rewritten).unwrap();
        let parts = json.pointer("/candidates/0/content/parts").unwrap();
        assert!(
            parts
                .as_array()
                .unwrap()
                .iter()
                .any(|part| part.get("functionCall").is_some()),
            "{parts}"
        );
    }

    /// An empty head matches everywhere, inside a character too: a
    /// continuation whose first content is no text of the first candidate
    /// (another candidate's) is no copy of anything, and lines up with no
    /// trim once complete, whatever the delivered text ends with.
    #[test]
    fn an_empty_head_is_no_copy_and_trims_nothing() {
        // 1200 bytes: the last 1024 start inside a character.
        let delivered = "中".repeat(400);
        assert!(!copying(&delivered, ""));
        assert_eq!(
            align_prefill(&delivered, "", 64, true),
            Some(Alignment::Trim(0))
        );
        assert_eq!(align_prefill(&delivered, "", 64, false), None);
        assert_eq!(align(&delivered, "", 64, true), Some(Alignment::Trim(0)));
    }
}
