//! What each event of a provider's stream means.
//!
//! A [`Decoder`] turns every scanned [`Item`] into a [`Signal`]: content
//! (text or a tool-call delta: something the caller will show or act on),
//! progress that is not content (a role delta, `message_start`, usage),
//! a keep-alive, a finish reason, an in-stream error (classified through
//! [`seawall_core::provider::classify_error`]), or the done marker.
//!
//! Event JSON is read with serde into borrowed structs that name only the
//! fields a decision needs; everything else is skipped without building a
//! tree. OpenAI's chunks, the most frequent by far, are first read by a
//! strict hand-written cursor (`seawall_internal::cursor`, which the
//! OpenAI unary check shares) that gives up to serde whenever it is not
//! sure.

mod anthropic;
mod choices;
mod gemini;
mod generic;
mod openai;
mod openai_responses;
mod wire;

use std::borrow::Cow;
use std::time::SystemTime;

use seawall_core::provider::openai_responses::error_event as openai_responses_error_event;
use seawall_core::provider::{ErrorContext, Presence, Provider, QuotaWall, classify_error};
use seawall_core::usage::UsageFields;
use seawall_core::{Failure, FinishKind, Usage};
use seawall_internal::json::repair_lone_surrogates;
use seawall_internal::nesting::Nesting;

use crate::sse::{Event, Item};

/// A finish reason as sent, and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason<'a> {
    /// What the reason means.
    pub kind: FinishKind,
    /// The provider's reason string.
    pub reason: Cow<'a, str>,
}

/// What one scanned item means.
#[derive(Debug, Clone)]
pub enum Signal<'a> {
    /// Something the caller will show or act on, with the delta's text when
    /// it is text, and the finish reason when the same event carries it.
    Content {
        /// The text delta, if the content is text. Empty for the text of
        /// a choice other than the first (OpenAI's `n > 1`): the delivered
        /// text is the first choice's.
        text: Option<Cow<'a, str>>,
        /// A finish reason carried by the same event.
        finish: Option<Reason<'a>>,
        /// The event carries more than text: a tool or function call (or
        /// part of one), audio, an image. Content a continuation cannot
        /// carry on, whether or not text came with it.
        act: bool,
    },
    /// Progress that is not content: role deltas, block starts, usage.
    /// Resets the idle timer.
    Progress,
    /// The model at work on its answer before showing it: thinking or
    /// reasoning text, a ping while Anthropic compacts the conversation
    /// (its summary comes whole, after only pings), a compaction's
    /// progress or a `keepalive` inside an open reasoning or compaction
    /// item on the Responses API (a long reasoning run with its summary
    /// off sends only keep-alives until the answer). Progress too; and
    /// before the first content, while it keeps coming within the idle
    /// bound, it keeps the first-content bound from cutting a model that
    /// is still thinking (see the guard).
    Thinking,
    /// A keep-alive (a ping or `keepalive` event, but one while the model
    /// reasons or compacts out of sight ([`Signal::Thinking`]); a comment;
    /// a chunk that carries nothing: OpenAI's `{}` without choices, id or
    /// usage, a Gemini chunk without candidates, usage or prompt
    /// feedback): proves nothing, resets nothing, and does not meet the
    /// first-byte bound.
    KeepAlive,
    /// The finish reason, on an event without content.
    Finish(Reason<'a>),
    /// An error sent inside the stream, classified. Boxed: a `Failure` is
    /// several times the size of every other signal, and each decoded
    /// event moves its signal through the decoder and the guard, while an
    /// error comes once per stream at most.
    Error(Box<Failure>),
    /// The protocol's end marker (`[DONE]`, `message_stop`).
    Done,
    /// Well-formed JSON this protocol does not know (an event type added
    /// later, a member of another type): skipped.
    Other,
    /// Event data that is not UTF-8 or not well-formed JSON: part of the
    /// answer may be in it, so it cannot be skipped (data with nothing in
    /// it, or blanks only, is a keep-alive). The reason names what broke.
    Undecodable(&'static str),
}

impl Signal<'_> {
    /// The same signal, owning its text.
    pub fn into_owned(self) -> Signal<'static> {
        match self {
            Signal::Content { text, finish, act } => Signal::Content {
                text: text.map(|text| Cow::Owned(text.into_owned())),
                finish: finish.map(Reason::into_owned),
                act,
            },
            Signal::Finish(reason) => Signal::Finish(reason.into_owned()),
            Signal::Progress => Signal::Progress,
            Signal::Thinking => Signal::Thinking,
            Signal::KeepAlive => Signal::KeepAlive,
            Signal::Error(failure) => Signal::Error(failure),
            Signal::Done => Signal::Done,
            Signal::Other => Signal::Other,
            Signal::Undecodable(why) => Signal::Undecodable(why),
        }
    }
}

impl Reason<'_> {
    /// The same reason, owning its text.
    pub fn into_owned(self) -> Reason<'static> {
        Reason {
            kind: self.kind,
            reason: Cow::Owned(self.reason.into_owned()),
        }
    }
}

/// Decodes the events of one stream in a provider's wire format
/// ([`Provider::Http`]: any other event stream — any non-empty data is
/// content and a clean EOF is the finish). In every format an event named
/// `error` is an error whatever its data looks like; in the JSON formats an
/// event with no data, and a `[DONE]` where the format has no end marker of
/// its own, are keep-alives (no part of an answer is in them). Keeps the little state a
/// protocol needs across events (an OpenAI refusal streamed as `delta.refusal` ends
/// with `finish_reason: "stop"`, or with no reason at all, and is still a
/// refusal).
#[derive(Debug, Clone)]
pub struct Decoder {
    provider: Provider,
    refused: bool,
    /// A content event was decoded.
    content: bool,
    /// A finish reason was decoded.
    finished: bool,
    /// The protocol's end arrived (see [`Decoder::ended`]).
    ended: bool,
    /// It arrived as a `[DONE]` the protocol has not of its own: the end
    /// is before that event ([`Decoder::ends_before`]).
    ends_before: bool,
    /// It arrived as the protocol's end marker (`[DONE]`, `message_stop`),
    /// an event that carries no part of the answer.
    marker: bool,
    /// An Anthropic stream named one of its message events: from then on
    /// an unnamed event is passed over, as the SDK passes it over.
    named: bool,
    /// The model is at work out of sight: an Anthropic compaction or
    /// thinking block, or a Responses API reasoning or compaction item or
    /// hosted tool's call, started and has not ended. Its pings
    /// (`keepalive` events) are the model at work ([`Signal::Thinking`]),
    /// not keep-alives.
    at_work: bool,
    /// An Anthropic server tool's block started and no block since: the
    /// tool runs at the provider until its result's block starts, and
    /// the pings meanwhile are the tool at work.
    tool_running: bool,
    /// The usage the stream reported so far (the last report wins: every
    /// provider sends cumulative counts), but Anthropic's.
    usage: Option<Usage>,
    /// What only the stream's own wire keeps ([`WireState`]).
    wire: WireState,
    /// The choices of a stream asked for several (OpenAI's `n > 1`,
    /// Gemini's `candidateCount > 1`).
    choices: choices::Choices,
    /// Stray lines since the last event (see [`Item::Stray`]), kept while
    /// they may be a raw error body; `None` until one comes.
    stray: Option<Stray>,
    /// The threshold past which an error event's rate-limit hint is a
    /// quota wall.
    quota_wall: QuotaWall,
}

/// The state only one wire keeps, in one place: a stream is read on one
/// wire, and kept side by side they made every decoder (in the guard's
/// box of each stream) some 150 bytes larger, to build and copy.
#[derive(Debug, Clone)]
enum WireState {
    /// OpenAI's chat wire: the shape of its plain chunks.
    OpenAi(openai::Shape),
    /// Anthropic's: the counts reported so far, field by field. It reports
    /// them in parts, and its usage is their sum.
    Anthropic(UsageFields),
    /// Any other wire keeps nothing of its own.
    Other,
}

/// Stray lines that open a JSON object, and where that object is.
#[derive(Debug, Clone, Default)]
struct Stray {
    text: Vec<u8>,
    object: Nesting,
}

/// The most stray text kept while it may be an error body: error bodies
/// are small, and past this the lines are noise.
const MAX_STRAY: usize = 64 << 10;

/// A raw JSON body with an `error` member, as Google's API writes one into
/// a stream it cannot finish.
#[derive(serde::Deserialize)]
struct StrayError {
    #[serde(default)]
    error: wire::Truthy,
}

impl Decoder {
    /// A decoder for one stream of `provider`'s.
    pub fn new(provider: Provider) -> Decoder {
        Decoder::for_stream(provider, QuotaWall::default(), None)
    }

    /// [`Decoder::new`] with [`with_quota_wall`](Decoder::with_quota_wall)
    /// and [`with_choices_asked`](Decoder::with_choices_asked), built in
    /// one go: the guard makes one per stream, and each builder step moved
    /// the whole decoder.
    pub(crate) fn for_stream(provider: Provider, wall: QuotaWall, asked: Option<u8>) -> Decoder {
        Decoder {
            provider,
            refused: false,
            content: false,
            finished: false,
            ended: false,
            ends_before: false,
            marker: false,
            named: false,
            at_work: false,
            tool_running: false,
            usage: None,
            wire: match provider {
                Provider::OpenAi => WireState::OpenAi(openai::Shape::default()),
                Provider::Anthropic => WireState::Anthropic(UsageFields::default()),
                _ => WireState::Other,
            },
            choices: match asked.filter(|_| provider == Provider::OpenAi) {
                Some(asked) => choices::Choices::asked(asked),
                None => choices::Choices::default(),
            },
            stray: None,
            quota_wall: wall,
        }
    }

    /// The same decoder, judging the rate-limit hint of an error sent
    /// inside the stream against `wall` (by default
    /// [`QuotaWall::default`], 60 s): a hint longer than its threshold is
    /// `quota_exhausted`, a shorter one `rate_limited`. Give it the
    /// classifier's threshold, so a hint means the same in a stream as in
    /// a unary answer.
    pub fn with_quota_wall(mut self, wall: QuotaWall) -> Decoder {
        self.quota_wall = wall;
        self
    }

    /// The same decoder, for a stream whose request asked for `asked`
    /// choices ([`RequestFacts::choices_asked`](seawall_core::RequestFacts::choices_asked),
    /// OpenAI's `n`): a stream that ends without its `[DONE]` before one
    /// of them showed up is cut short ([`Decoder::asked_choice_missing`]),
    /// not whole. With its `[DONE]` it is whole as the server gave it: a
    /// server that ignores `n` writes one choice and its end marker.
    /// Gemini's stream has no end marker to tell the two apart (the JSON
    /// array's `]` closes both), so its `candidateCount` changes nothing;
    /// on any other wire (and for `None`, or one choice) the decoder is
    /// left as it was.
    pub fn with_choices_asked(mut self, asked: Option<u8>) -> Decoder {
        if let Some(asked) = asked.filter(|_| self.provider == Provider::OpenAi) {
            self.choices = choices::Choices::asked(asked);
        }
        self
    }

    /// This decoder, for events read one at a time from within an answer
    /// whose content came before them: a terminal event is then its
    /// finish alone, never an answer of its own (see the Responses API's
    /// terminal event, which holds the whole answer again).
    pub fn within_answer(mut self) -> Decoder {
        self.content = true;
        self
    }

    /// Whose wire format is decoded.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The token usage the stream reported so far, if it reported any.
    pub fn usage(&self) -> Option<Usage> {
        match &self.wire {
            WireState::Anthropic(parts) => parts.usage(),
            _ => self.usage,
        }
    }

    /// Whether the stream's protocol has ended: its end marker (`[DONE]`,
    /// Anthropic's `message_stop`) or the Responses API's one terminal
    /// event (`response.completed`, `response.incomplete`) was decoded.
    /// Nothing after it is part of the answer, as an SDK reads it (the
    /// OpenAI SDKs stop reading at `[DONE]`). A finish reason alone is no
    /// end where more may follow it: OpenAI's usage chunk, Anthropic's
    /// `message_stop`, Gemini's last usage frame.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Whether the stream ended at the start of the event that ended it,
    /// not after it: a `[DONE]` on the Responses API's stream or Gemini's,
    /// neither of which has one. The OpenAI SDK stops reading there (the
    /// Responses API's reads with the chat one's reader), and Google's
    /// raises on it (it is no JSON): no SDK reads past it, and none is
    /// shown it.
    pub fn ends_before(&self) -> bool {
        self.ends_before
    }

    /// Whether the stream ended at its protocol's end marker (`[DONE]` on
    /// a chat stream, Anthropic's `message_stop`): an event that carries no
    /// part of the answer, only that it is over. The OpenAI SDKs stop
    /// reading there.
    pub fn ended_by_marker(&self) -> bool {
        self.marker
    }

    /// What `item` means.
    pub fn decode<'a>(&mut self, item: Item<'a>) -> Signal<'a> {
        let event = match item {
            Item::Comment(_) => return Signal::KeepAlive,
            Item::Stray { line, .. } => return self.stray(line),
            Item::Event(event) => event,
        };
        self.stray = None;
        // An event named `error` is an error whatever its data looks like:
        // asked first, since a decoder reads an object without its error
        // member as progress (`{"message":…,"code":500}`).
        if event.name == b"error" {
            self.at_work = false;
            self.tool_running = false;
            return self.error(event.data);
        }
        let mut signal = self.decode_data(event.name, event.data);
        // serde refuses a lone surrogate escape, which JSON allows: read
        // with the character replaced, the event is the text it carries,
        // not one to skip with that text. Asked only of what no decoder
        // read, so a healthy stream pays nothing for it.
        if matches!(signal, Signal::Other)
            && self.provider != Provider::Http
            && let Some(repaired) = repair_lone_surrogates(event.data)
        {
            signal = self.decode_data(event.name, &repaired).into_owned();
        }
        self.content |= matches!(signal, Signal::Content { .. });
        self.marker |= matches!(signal, Signal::Done);
        self.ended |= matches!(
            (&signal, self.provider),
            (Signal::Done, _)
                | (
                    Signal::Finish(_)
                        | Signal::Content {
                            finish: Some(_),
                            ..
                        },
                    Provider::OpenAiResponses,
                )
        );
        // What a decoder read is returned as it stands, at once: only what
        // it could not read, and the end marker, are read on.
        if !matches!(signal, Signal::Other | Signal::Done) {
            self.finished |= matches!(
                signal,
                Signal::Finish(_)
                    | Signal::Content {
                        finish: Some(_),
                        ..
                    }
            );
            return signal;
        }
        match signal {
            // OpenAI's end marker on a stream whose protocol has none:
            // some compatible servers end every stream with it. Anthropic's
            // SDK passes an unnamed event over: nothing. The Responses
            // API's stops reading at it and Google's raises on it: the
            // stream ends before it, finished only if it had finished.
            Signal::Other if seawall_internal::json::is_done_marker(event.data) => {
                if self.provider == Provider::Anthropic {
                    Signal::KeepAlive
                } else {
                    // No finish of its own: the stream ends as it stood.
                    self.ended = true;
                    self.ends_before = true;
                    Signal::Other
                }
            }
            // An event with no data (`data:` alone, a heartbeat some
            // servers send): no part of an answer can be in it.
            Signal::Other
                if self.provider != Provider::Http
                    && event.data.iter().all(u8::is_ascii_whitespace) =>
            {
                Signal::KeepAlive
            }
            // Checked only once the protocol's own reading failed, so a
            // healthy stream pays nothing for it.
            // Anthropic's SDK reads its named message events only: any
            // other it passes over, however broken.
            Signal::Other if self.provider != Provider::Http => match undecodable(event.data)
                .filter(|_| {
                    self.provider != Provider::Anthropic || anthropic::reads(event.name, self.named)
                }) {
                Some(why) => Signal::Undecodable(why),
                // An error body in another wire's shape (an OpenAI-shaped
                // `{"error":…}` in an Anthropic or Responses stream, as
                // proxies write one): an error, not an event to skip and
                // hand on, its words and all, as part of the answer.
                None if declares_error(event.data) => self.error(event.data),
                // Well-formed, but its reading failed where the answer is
                // (a member of another type): skipped, its text and finish
                // never reached the record.
                None if (self.provider != Provider::Anthropic
                    || anthropic::reads(event.name, self.named))
                    && carries_answer(self.provider, event.data) =>
                {
                    Signal::Undecodable(UNREADABLE_ANSWER)
                }
                None => Signal::Other,
            },
            Signal::Done if !self.finished => match self.implied_finish() {
                Some(reason) => Signal::Finish(reason),
                None => Signal::Done,
            },
            signal => signal,
        }
    }

    /// The finish a stream that ends without a reason of its own amounts
    /// to: a refusal, once the model streamed one, however the stream ends.
    pub fn implied_finish(&self) -> Option<Reason<'static>> {
        self.refused.then(|| Reason {
            kind: FinishKind::Refused,
            reason: "refusal".into(),
        })
    }

    /// A choice the request asked for ([`Decoder::with_choices_asked`])
    /// never showed up and no end marker came: the stream was cut before
    /// it began.
    pub fn asked_choice_missing(&self) -> bool {
        !self.ended && self.choices.asked_unseen()
    }

    /// Whether a choice has not finished: of several (`n > 1`), one that
    /// has not, whatever the others said (a choice that first shows up
    /// after the others finished included); on OpenAI's chat wire and
    /// Anthropic's, a lone message whose content came without a finish
    /// (but a refusal, whose finish is implied). The end marker then ends
    /// a message cut short, never a whole one, and makes up no finish for
    /// it: a proxy that ends an abandoned stream with `[DONE]` or
    /// `message_stop`, or strips the finish chunk (`message_delta`'s
    /// `stop_reason`), leaves an answer openai-node's
    /// `ChatCompletionStream` rejects (`missing finish_reason for choice
    /// 0`) and the unary check calls cut short (Anthropic's unary
    /// `stop_reason` is "always non-null"). An end marker before any
    /// content still closes an empty message. Gemini's stream and the
    /// Responses API's have no end marker of their own: one that ends
    /// without its finish (`finishReason`, the terminal event) is cut
    /// however it ends.
    pub fn choice_unfinished(&self) -> bool {
        self.choices.one_unfinished()
            || (matches!(self.provider, Provider::OpenAi | Provider::Anthropic)
                && self.content
                && !self.finished
                && !self.refused)
    }

    /// A line the event-stream format ignores. Google's API writes an
    /// error it meets mid-stream into the stream raw, a pretty-printed
    /// JSON body no SSE client dispatches (`{`, `  "error": {`, … `}`),
    /// and closes it: read as the format says, the error was lost and a
    /// stream whose chunks carried `finishReason` was called complete.
    /// Lines are gathered until they close a JSON object with an `error`
    /// member, which is the provider's error; an `error:` field with an
    /// object in it is the provider's error too (`error_field`); anything
    /// else is ignored, as the format says.
    fn stray(&mut self, line: &[u8]) -> Signal<'static> {
        if self.provider == Provider::Http {
            return Signal::Other;
        }
        let stray = self.stray.get_or_insert_with(Stray::default);
        // Only an object may be an error body: a line that opens none is
        // noise, as the format says, unless it is an `error:` field.
        if stray.text.is_empty() && line.trim_ascii_start().first() != Some(&b'{') {
            self.stray = None;
            return self.error_field(line).unwrap_or(Signal::Other);
        }
        if stray.text.len() + line.len() >= MAX_STRAY {
            self.stray = None;
            return Signal::Other;
        }
        stray.text.extend_from_slice(line);
        stray.text.push(b'\n');
        // Read once, when the object closes (`Nesting` follows it across
        // the lines without parsing).
        if stray.object.scan(line).is_none() {
            return Signal::Other;
        }
        let text = self
            .stray
            .take()
            .map(|stray| stray.text)
            .unwrap_or_default();
        if declares_error(&text) {
            self.error(&text)
        } else {
            // A closed object with no error, or text that is no JSON:
            // noise, as the format says.
            Signal::Other
        }
    }

    /// A line `error: {…}`, as llama.cpp's server wrote a streaming error
    /// before it sent one as a `data:` event (ggml-org/llama.cpp#16109;
    /// builds from before it still run): `error: {"code":500,"message":…,
    /// "type":"server_error"}` when its context fills mid-answer, or a 400
    /// `exceed_context_size_error` for a prompt too long, then `data:
    /// [DONE]`. Read as noise, the error was lost and the `[DONE]` ended
    /// the stream clean: a cut answer called complete, or, before content,
    /// an empty answer retried with a prompt that can never fit. The object
    /// holds `code`, `message` and `type` at its top, as an error body's
    /// `error` member does: read wrapped as one, it is the provider's
    /// error; any other `error:` value is noise.
    fn error_field(&self, line: &[u8]) -> Option<Signal<'static>> {
        let value = line.strip_prefix(b"error:")?.trim_ascii();
        if value.first() != Some(&b'{') || undecodable(value).is_some() {
            return None;
        }
        let mut body = Vec::with_capacity(value.len() + 10);
        body.extend_from_slice(b"{\"error\":");
        body.extend_from_slice(value);
        body.push(b'}');
        declares_error(&body).then(|| self.error(&body))
    }

    /// What an event's data means in the provider's format.
    fn decode_data<'a>(&mut self, name: &'a [u8], data: &'a [u8]) -> Signal<'a> {
        match (self.provider, &mut self.wire) {
            (Provider::OpenAi, WireState::OpenAi(shape)) => openai::decode(
                data,
                &mut self.refused,
                &mut self.usage,
                shape,
                &mut self.choices,
                self.quota_wall,
            ),
            (Provider::OpenAiResponses, _) => openai_responses::decode(
                data,
                &mut self.refused,
                &mut self.at_work,
                &mut self.usage,
                self.content,
                self.quota_wall,
            ),
            (Provider::Anthropic, WireState::Anthropic(parts)) => anthropic::decode(
                name,
                data,
                &mut self.named,
                &mut self.at_work,
                &mut self.tool_running,
                parts,
                self.quota_wall,
            ),
            (Provider::Gemini, _) => {
                gemini::decode(data, &mut self.usage, &mut self.choices, self.quota_wall)
            }
            // `Decoder::new` gives OpenAI and Anthropic their own state, so
            // only plain HTTP comes here.
            (Provider::Http | Provider::OpenAi | Provider::Anthropic, _) => {
                generic::decode(name, data)
            }
        }
    }

    /// What an event that no blank line ended says at the end of the
    /// stream: nothing is dispatched (no SDK reads it), but an error body
    /// in it is still why the stream ended (a server that writes its
    /// error event and closes without the blank line).
    pub fn undispatched(&self, event: Event<'_>) -> Signal<'static> {
        // As a dispatched one: an event named `error` is an error whatever
        // its data (the Responses API's flat error event has no `error`
        // member).
        if self.provider != Provider::Http && (event.name == b"error" || declares_error(event.data))
        {
            self.error(event.data)
        } else {
            Signal::Other
        }
    }

    fn error(&self, data: &[u8]) -> Signal<'static> {
        Signal::Error(Box::new(in_stream_error(
            self.provider,
            data,
            self.quota_wall,
        )))
    }
}

/// Whether `data` is a JSON object with an `error` member that says
/// something ([`wire::Truthy`]: not `null`, `""`, `{}`…): an error body,
/// whatever else it holds.
fn declares_error(data: &[u8]) -> bool {
    memchr::memmem::find(data, b"\"error\"").is_some()
        && matches!(
            serde_json::from_slice::<StrayError>(data),
            Ok(StrayError {
                error: wire::Truthy(true)
            })
        )
}

/// Why `data` cannot be read as a JSON event at all, if it cannot: not
/// UTF-8, or not well-formed JSON. A structural check only: skipping every
/// value without keeping any. What the guard reads as a broken event
/// ([`Signal::Undecodable`]), for a reader that must agree with it.
pub fn undecodable(data: &[u8]) -> Option<&'static str> {
    if std::str::from_utf8(data).is_err() {
        return Some("event data is not UTF-8");
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(data) {
        Ok(_) => None,
        Err(_) => Some("event data is not well-formed JSON"),
    }
}

/// Why an event whose answer members cannot be read is undecodable
/// ([`carries_answer`]).
const UNREADABLE_ANSWER: &str = "event data holds an answer not in the protocol's shape";

/// Whether well-formed event `data` the protocol's reading failed holds
/// something where `provider`'s answer is: OpenAI's `choices`, Gemini's
/// `candidates`, the `delta` or `content_block` of an Anthropic event its
/// reader could not read (in an event the SDK reads). Such an
/// event may carry text and a finish, so it is never skipped as
/// [`Signal::Other`]: it is [`Signal::Undecodable`]. The Responses API's
/// events are open-ended (event types added later carry members of any
/// shape) and are left to their reader. Asked only once the protocol's
/// own reading failed, so a healthy stream pays nothing for it.
fn carries_answer(provider: Provider, data: &[u8]) -> bool {
    seawall_core::later_wins! {
        struct Answer {
            choices: Presence = "choices",
            candidates: Presence = "candidates",
            delta: Presence = "delta",
            content_block: Presence = "content_block",
        }
    }
    let Ok(answer) = serde_json::from_slice::<Answer>(data) else {
        return false;
    };
    match provider {
        Provider::OpenAi => answer.choices.0,
        Provider::Gemini => answer.candidates.0,
        // Its decoder passes over events of types it does not know
        // (added later): only an event it could not read is undecodable.
        Provider::Anthropic => {
            (answer.delta.0 || answer.content_block.0) && anthropic::unreadable(data)
        }
        Provider::OpenAiResponses | Provider::Http => false,
    }
}

/// Classifies an error sent inside a stream with the provider's table.
///
/// The Responses API's `error` event is its own shape: flat
/// (`{"type":"error","code":…,"message":…}`, as its reference documents
/// it) or nested under `error` (as OpenAI's servers also send it), and its
/// own reader takes both. Every `error` event comes here by its name, so
/// read by the error-body table alone the flat one lost its code: a rate
/// limit before content was `unknown` and permanent, never retried.
fn in_stream_error(provider: Provider, data: &[u8], quota_wall: QuotaWall) -> Failure {
    match provider {
        Provider::OpenAiResponses => openai_responses_error_event(data, quota_wall),
        _ => classify_error(
            provider,
            data,
            ErrorContext::in_stream(SystemTime::now()).with_quota_wall(quota_wall),
        ),
    }
}

#[cfg(test)]
mod tests {
    use seawall_core::Code;
    use seawall_core::provider::{AnswerCheck, check_answer};

    use super::*;
    use crate::sse::Event;

    /// Whether the decoder counts the event as content.
    fn streams_content(provider: Provider, data: &str) -> bool {
        let mut decoder = Decoder::new(provider);
        // Anthropic names each event after its data's type.
        let ty = serde_json::from_str::<serde_json::Value>(data)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned))
            .filter(|_| provider == Provider::Anthropic)
            .unwrap_or_default();
        let item = Item::Event(Event {
            name: ty.as_bytes(),
            data: data.as_bytes(),
            start: 0,
            end: data.len(),
        });
        matches!(decoder.decode(item), Signal::Content { .. })
    }

    /// What one OpenAI chunk decodes to, with the decoder it left.
    fn decode_openai(data: &str) -> (Signal<'static>, Decoder) {
        let mut decoder = Decoder::new(Provider::OpenAi);
        let item = Item::Event(Event {
            name: b"",
            data: data.as_bytes(),
            start: 0,
            end: data.len(),
        });
        let signal = decoder.decode(item).into_owned();
        (signal, decoder)
    }

    /// What servers that speak OpenAI's wire send in a stream beside the
    /// usual chunks: an `error` member that says nothing, an error object
    /// as the whole event, an error that is a plain message, thinking in
    /// structured form only, Perplexity's search steps, usage where Groq
    /// puts it.
    #[test]
    fn openai_compatible_servers_chunks() {
        let content = r#""choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]"#;
        // As openai-python reads an `error` member: only one that says
        // something is an error. Both readers: the cursor, and serde (the
        // escaped key makes the cursor leave the chunk to it).
        for id in [r#""id":"c""#, r#""\u0069d":"c""#] {
            for error in [r#""""#, "null", "{}", "[]", "false", "0", "0.0"] {
                let chunk = format!(r#"{{{id},"error":{error},{content}}}"#);
                let (signal, _) = decode_openai(&chunk);
                assert!(
                    matches!(signal, Signal::Content { .. }),
                    "{chunk}: {signal:?}"
                );
            }
            for error in [r#""boom""#, r#"{"message":"boom"}"#, "true", "1", "[1]"] {
                let chunk = format!(r#"{{{id},"error":{error},{content}}}"#);
                let (signal, _) = decode_openai(&chunk);
                assert!(matches!(signal, Signal::Error(_)), "{chunk}: {signal:?}");
            }
        }
        // Past the chunks a stream's shape is kept from: an `error` that
        // says nothing is part of the shape, and one that says something
        // is no chunk of it.
        let quiet = format!(r#"{{"id":"c","error":"",{content}}}"#);
        let mut decoder = Decoder::new(Provider::OpenAi);
        let mut decode = |data: &str| {
            decoder
                .decode(Item::Event(Event {
                    name: b"",
                    data: data.as_bytes(),
                    start: 0,
                    end: data.len(),
                }))
                .into_owned()
        };
        for _ in 0..8 {
            assert!(matches!(decode(&quiet), Signal::Content { .. }));
        }
        let loud = format!(r#"{{"id":"c","error":"Model is overloaded",{content}}}"#);
        let signal = decode(&loud);
        assert!(matches!(signal, Signal::Error(_)), "{signal:?}");
        for (event, code) in [
            (
                r#"{"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}"#,
                Code::ProviderUnavailable,
            ),
            (
                r#"{"error":"Model is overloaded","error_type":"overloaded"}"#,
                Code::Overloaded,
            ),
            (
                r#"{"error":"Request failed during generation: Server error: out of memory","error_type":"generation"}"#,
                Code::ProviderUnavailable,
            ),
        ] {
            let (signal, _) = decode_openai(event);
            let Signal::Error(failure) = signal else {
                panic!("{event}: {signal:?}");
            };
            assert_eq!(failure.code(), code, "{event}");
            assert!(failure.message().is_some(), "{event}");
        }
        // Not an error object: a chunk without choices is bookkeeping.
        let (signal, _) = decode_openai(r#"{"object":"chat.completion.chunk","choices":[]}"#);
        assert!(matches!(signal, Signal::Progress), "{signal:?}");

        let encrypted = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"gAAAAB"}]},"finish_reason":null}]}"#;
        let (signal, _) = decode_openai(encrypted);
        assert!(matches!(signal, Signal::Thinking), "{signal:?}");

        // Perplexity's concise mode while it searches: its steps, an
        // empty text beside them. The model at work, every time (past the
        // chunks a plain shape is kept from too).
        let searching = r#"{"id":"cfa38f9d-fdbc-4ac6-a5d2-a3010b6a33a6","model":"sonar-pro","created":1759441590,"object":"chat.reasoning","choices":[{"index":0,"finish_reason":null,"message":{"role":"assistant","content":""},"delta":{"role":"assistant","content":"","reasoning_steps":[{"thought":"Searching the web for Seattle's current weather...","type":"web_search","web_search":{"search_results":[],"search_keywords":["Seattle weather"]}}]}}]}"#;
        let mut decoder = Decoder::new(Provider::OpenAi);
        for _ in 0..8 {
            let signal = decoder.decode(Item::Event(Event {
                name: b"",
                data: searching.as_bytes(),
                start: 0,
                end: searching.len(),
            }));
            assert!(matches!(signal, Signal::Thinking), "{signal:?}");
        }

        // OpenRouter (and LiteLLM's proxy, mlx) send the usage after the
        // finish, in a chunk that still has a choice, with no finish.
        let mut decoder = Decoder::new(Provider::OpenAi);
        for chunk in [
            r#"{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1764031697,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}"#,
            r#"{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1764031697,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}]}"#,
            r#"{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1764031697,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":1697,"completion_tokens":52,"total_tokens":1749}}"#,
        ] {
            decoder.decode(Item::Event(Event {
                name: b"",
                data: chunk.as_bytes(),
                start: 0,
                end: chunk.len(),
            }));
        }
        assert_eq!(decoder.usage(), Some(Usage::new(1697, 52)));

        let groq = r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"id":"req_1","usage":{"queue_time":0.01,"prompt_tokens":244,"prompt_time":0.02,"completion_tokens":15,"completion_time":0.04,"total_tokens":259,"total_time":0.06}}}"#;
        let (_, decoder) = decode_openai(groq);
        let usage = decoder.usage().expect("Groq's usage");
        assert_eq!((usage.input_tokens, usage.output_tokens), (244, 15));
    }

    /// llama.cpp's `error:` field (servers built before it sent errors as
    /// `data:` events): the stream's error, classified by the provider's
    /// table; an `error:` line with no error object in it is noise.
    #[test]
    fn an_error_field_is_the_streams_error() {
        let stray = |provider: Provider, line: &str| {
            Decoder::new(provider)
                .decode(Item::Stray {
                    line: line.as_bytes(),
                    start: 0,
                })
                .into_owned()
        };
        for (line, code) in [
            (
                r#"error: {"code":500,"message":"Input prompt is too big compared to KV size. Please try increasing KV size.","type":"server_error"}"#,
                Code::ProviderUnavailable,
            ),
            (
                r#"error:{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}"#,
                Code::ContextTooLong,
            ),
        ] {
            let Signal::Error(failure) = stray(Provider::OpenAi, line) else {
                panic!("{line}");
            };
            assert_eq!(failure.code(), code, "{line}");
            assert!(failure.message().is_some(), "{line}");
            // Any other wire: still an error, not noise.
            for provider in [
                Provider::OpenAiResponses,
                Provider::Anthropic,
                Provider::Gemini,
            ] {
                let signal = stray(provider, line);
                assert!(
                    matches!(signal, Signal::Error(_)),
                    "{provider:?}: {signal:?}"
                );
            }
            // Any event stream: any line the format ignores is ignored.
            let signal = stray(Provider::Http, line);
            assert!(matches!(signal, Signal::Other), "{signal:?}");
        }
        for line in [
            "error: overloaded",
            "error: {}",
            r#"error: {"code":500"#,
            r#"error: {"a":1},"message":"x"}"#,
            r#"errors: {"code":500,"message":"boom","type":"server_error"}"#,
        ] {
            let signal = stray(Provider::OpenAi, line);
            assert!(matches!(signal, Signal::Other), "{line}: {signal:?}");
        }
    }

    /// Whether the unary check finds an answer in the body (an empty one is
    /// `empty_response`).
    fn answers(provider: Provider, body: &str) -> bool {
        match check_answer(provider, body.as_bytes()) {
            AnswerCheck::Answer { .. } => true,
            AnswerCheck::Fail(failure) => {
                assert_eq!(failure.code(), seawall_core::Code::EmptyResponse, "{body}");
                false
            }
            other => panic!("{other:?} for {body}"),
        }
    }

    /// The cases where the unary check and the stream guard once kept
    /// tables of their own and disagreed: now both ask the provider's one
    /// table, and each case is content (or not) in both.
    #[test]
    fn unary_and_stream_count_content_by_one_table() {
        let openai = |field: &str| {
            (
                format!(
                    r#"{{"choices":[{{"index":0,"delta":{{"role":"assistant",{field}}},"finish_reason":null}}]}}"#
                ),
                format!(
                    r#"{{"choices":[{{"index":0,"message":{{"role":"assistant",{field}}},"finish_reason":"stop"}}]}}"#
                ),
            )
        };
        for (field, content) in [
            (
                r#""audio":{"id":"a1","data":"UklGR","transcript":""}"#,
                true,
            ),
            (r#""tool_calls":[]"#, false),
            (
                r#""tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]"#,
                true,
            ),
            (r#""content":"""#, false),
            (
                r#""content":null,"function_call":{"name":"f","arguments":"{}"}"#,
                true,
            ),
            // An image model's answer (OpenRouter): images, no text.
            (
                r#""content":"","images":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]"#,
                true,
            ),
            (r#""content":"","images":[]"#, false),
        ] {
            let (chunk, message) = openai(field);
            assert_eq!(
                streams_content(Provider::OpenAi, &chunk),
                content,
                "{chunk}"
            );
            assert_eq!(answers(Provider::OpenAi, &message), content, "{message}");
        }
        // Legacy completions: the text sits in the choice itself.
        for (text, content) in [(r#""Hello""#, true), (r#""""#, false), ("null", false)] {
            let chunk = format!(
                r#"{{"object":"text_completion","choices":[{{"text":{text},"index":0,"logprobs":null,"finish_reason":null}}]}}"#
            );
            let answer = format!(
                r#"{{"object":"text_completion","choices":[{{"text":{text},"index":0,"logprobs":null,"finish_reason":"stop"}}]}}"#
            );
            assert_eq!(
                streams_content(Provider::OpenAi, &chunk),
                content,
                "{chunk}"
            );
            assert_eq!(answers(Provider::OpenAi, &answer), content, "{answer}");
        }

        let gemini = |part: &str| {
            (
                format!(
                    r#"{{"candidates":[{{"content":{{"role":"model","parts":[{part}]}},"index":0}}]}}"#
                ),
                format!(
                    r#"{{"candidates":[{{"content":{{"role":"model","parts":[{part}]}},"finishReason":"STOP"}}]}}"#
                ),
            )
        };
        for (part, content) in [
            (
                r#"{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"4"}}"#,
                true,
            ),
            (
                r#"{"fileData":{"mimeType":"image/png","fileUri":"gs://b/o"}}"#,
                true,
            ),
            (r#"{"functionCall":{"name":"f","args":{}}}"#, true),
            (r#"{"text":"plan","thought":true}"#, false),
            (r#"{"text":"","thoughtSignature":"c2ln"}"#, false),
            (r#"{"someFuturePart":{"x":1}}"#, true),
        ] {
            let (chunk, answer) = gemini(part);
            assert_eq!(
                streams_content(Provider::Gemini, &chunk),
                content,
                "{chunk}"
            );
            assert_eq!(answers(Provider::Gemini, &answer), content, "{answer}");
        }

        for (block, content) in [
            (
                r#"{"type":"web_search_tool_result","tool_use_id":"s","content":[]}"#,
                true,
            ),
            (
                r#"{"type":"tool_use","id":"t","name":"f","input":{}}"#,
                true,
            ),
            (r#"{"type":"thinking","thinking":""}"#, false),
            (r#"{"type":"text","text":""}"#, false),
            // Markers and state, no output of the model's: the hand-over
            // after a refusal, and the conversation's summary.
            (
                r#"{"type":"fallback","from":{"model":"claude-a"},"to":{"model":"claude-b"},"trigger":{"type":"refusal","category":"cyber"}}"#,
                false,
            ),
            (r#"{"type":"compaction","content":"summary"}"#, false),
        ] {
            let start =
                format!(r#"{{"type":"content_block_start","index":0,"content_block":{block}}}"#);
            let message =
                format!(r#"{{"type":"message","content":[{block}],"stop_reason":"end_turn"}}"#);
            assert_eq!(
                streams_content(Provider::Anthropic, &start),
                content,
                "{start}"
            );
            assert_eq!(answers(Provider::Anthropic, &message), content, "{message}");
        }

        for (item, content) in [
            (
                r#"{"type":"web_search_call","id":"ws","status":"completed"}"#,
                true,
            ),
            (
                r#"{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":""}"#,
                true,
            ),
            (r#"{"type":"reasoning","id":"r","summary":[]}"#, false),
        ] {
            let event =
                format!(r#"{{"type":"response.output_item.done","output_index":0,"item":{item}}}"#);
            let answer =
                format!(r#"{{"object":"response","status":"completed","output":[{item}]}}"#);
            assert_eq!(
                streams_content(Provider::OpenAiResponses, &event),
                content,
                "{event}"
            );
            assert_eq!(
                answers(Provider::OpenAiResponses, &answer),
                content,
                "{answer}"
            );
        }
    }
}
