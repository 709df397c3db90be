//! What an attempt cost: the provider's own token counts.
//!
//! A unary answer says its usage in its body, read when the answer is
//! checked. A stream says it at its end (OpenAI's usage chunk with
//! `stream_options.include_usage`, Anthropic's `message_delta`, Gemini's
//! last `usageMetadata`, the Responses API's `response.completed`) — after
//! the response, and the [`Receipt`](crate::Receipt) with it, reached the
//! caller. So an attempt holds either the usage itself or a
//! [`UsageSlot`] that the stream's body fills when it ends:
//! [`Attempt::usage`](crate::Attempt::usage) reads whichever it has, and
//! says `None` for a stream still running (or one whose provider sent no
//! usage).

use std::fmt;
use std::ops::AddAssign;
use std::sync::Arc;

use seawall_internal::cursor::{Cursor, GiveUp, Scan};
use seawall_internal::json::{MaybeText, Scalar, Text};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Tokens as the provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Usage {
    /// Prompt tokens billed (OpenAI `prompt_tokens`, the Responses API
    /// `input_tokens`, Anthropic `input_tokens` with its prompt cache's
    /// writes and reads, Gemini `promptTokenCount` with its
    /// `toolUsePromptTokenCount`).
    pub input_tokens: u64,
    /// Generated tokens billed (OpenAI `completion_tokens`, Anthropic and
    /// the Responses API `output_tokens`, Gemini `candidatesTokenCount`
    /// with its `thoughtsTokenCount`).
    pub output_tokens: u64,
}

impl Usage {
    /// A usage record.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Something that will know a stream's usage once the stream ends: the
/// stream guard's report implements it.
pub trait UsageSource: Send + Sync {
    /// The usage, once known.
    fn usage(&self) -> Option<Usage>;

    /// Whether [`usage`](Self::usage) is the whole count, not what a
    /// stream cut short had reported so far (Anthropic's `message_start`
    /// says one output token; the count comes with the finish).
    fn usage_whole(&self) -> bool {
        self.usage().is_some()
    }
}

/// A handle on usage still to come, put in a streamed response's
/// extensions by the layer that reads the stream. Cloning shares it.
#[derive(Clone)]
pub struct UsageSlot(Arc<dyn UsageSource>);

impl UsageSlot {
    /// A slot read from `source` (usually an `Arc` the reading layer keeps
    /// anyway: no allocation).
    pub fn new(source: Arc<dyn UsageSource>) -> Self {
        UsageSlot(source)
    }

    /// The usage, once the stream ended and its provider said it.
    pub fn get(&self) -> Option<Usage> {
        self.0.usage()
    }

    /// Whether the usage is the stream's whole count
    /// ([`UsageSource::usage_whole`]).
    pub fn is_whole(&self) -> bool {
        self.0.usage_whole()
    }
}

impl fmt::Debug for UsageSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UsageSlot").field(&self.get()).finish()
    }
}

/// Two slots are equal when they are the same slot.
impl PartialEq for UsageSlot {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for UsageSlot {}

/// Token counts in any of the providers' spellings: OpenAI chat
/// (`prompt_tokens`/`completion_tokens`), Anthropic and the Responses API
/// (`input_tokens`/`output_tokens`), Gemini (`promptTokenCount`/
/// `candidatesTokenCount`). Read leniently: a count of another type, or a
/// second spelling beside the first, never fails the answer; a usage
/// object with no count is none.
///
/// Every token the provider read or wrote counts, as each bills it:
/// Anthropic's `input_tokens` leaves out the prompt cache's writes and
/// reads (`cache_creation_input_tokens`, `cache_read_input_tokens`, billed
/// beside it), and Gemini's `candidatesTokenCount` leaves out the
/// thinking (`thoughtsTokenCount`, billed as output) and its
/// `promptTokenCount` the tool-use prompt (`toolUsePromptTokenCount`), so
/// those are added in. OpenAI's counts already hold their cached and
/// reasoning tokens (`*_tokens_details` are parts of them), and a server
/// that sends cache counts beside `prompt_tokens` (LiteLLM) counts them in
/// it: nothing is added to `prompt_tokens`.
///
/// Anthropic's server-side compaction summarises the conversation in a
/// sampling pass of its own before the answer's, billed beside it: its
/// counts are not in the top-level ones, only in `iterations` (an entry
/// per pass, of `type` `compaction` or `message`; the top level is the
/// `message` pass). So the `compaction` entries are added in, their
/// prompt cache with them; the `message` entries are the top level again.
#[derive(Debug, Clone, Default)]
pub struct UsageFields {
    prompt_tokens: Count,
    input_tokens: Count,
    cache_creation_input_tokens: Count,
    cache_read_input_tokens: Count,
    prompt_token_count: Count,
    tool_use_prompt_token_count: Count,
    completion_tokens: Count,
    output_tokens: Count,
    candidates_token_count: Count,
    thoughts_token_count: Count,
    /// What the compaction passes in `iterations` cost; `None` when the
    /// usage lists no iterations.
    compaction: Option<Usage>,
    /// These are the counts of an `iterations` entry of `type`
    /// `compaction`.
    compaction_pass: bool,
}

/// The members [`UsageFields`] reads: the counts, by the index
/// [`UsageFields::count`] knows them by, then [`ITERATIONS`] and [`TYPE`].
const MEMBERS: [&str; 12] = [
    "prompt_tokens",
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "promptTokenCount",
    "toolUsePromptTokenCount",
    "completion_tokens",
    "output_tokens",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "iterations",
    "type",
];

/// Anthropic's sampling passes of one request ([`Iterations`]).
const ITERATIONS: usize = 10;

/// What an `iterations` entry is: `compaction` or `message`.
const TYPE: usize = 11;

/// The visits of a lenient reader for a value of a shape it does not read
/// (a string, a number, a boolean, `null`): `$none`, never an error that
/// would fail the whole answer.
macro_rules! scalars_read_as {
    ($value:ty, $none:expr) => {
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<$value, E> {
            Ok($none)
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<$value, E> {
            Ok($none)
        }
    };
}

/// Read member by member: a member named twice is the later one, never
/// an error (a derived reading refuses a duplicate, and a whole answer
/// with it). Any other value (an empty list, as some relays write for no
/// usage) is no count at all.
impl<'de> Deserialize<'de> for UsageFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = UsageFields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("token counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UsageFields, A::Error> {
                let mut fields = UsageFields::default();
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match MEMBERS.iter().position(|name| *name == key) {
                        Some(ITERATIONS) => {
                            fields.compaction = map.next_value::<Iterations>()?.0;
                        }
                        Some(TYPE) => {
                            let MaybeText(ty) = map.next_value()?;
                            fields.compaction_pass = ty.is_some_and(|ty| ty.0 == "compaction");
                        }
                        Some(index) => *fields.count(index) = map.next_value()?,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(fields)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UsageFields, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(UsageFields::default())
            }
            scalars_read_as!(UsageFields, UsageFields::default());
        }
        deserializer.deserialize_any(Fields)
    }
}

/// Anthropic's `usage.iterations` (server-side compaction): an entry per
/// sampling pass of the request, read for what its `compaction` passes
/// cost together (several when a server-tool loop compacts more than
/// once). Read as leniently as the counts: a value that is no list is no
/// iterations, an entry that is no object no pass.
struct Iterations(Option<Usage>);

impl<'de> Deserialize<'de> for Iterations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Passes;
        impl<'de> Visitor<'de> for Passes {
            type Value = Iterations;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("sampling passes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Iterations, A::Error> {
                let mut compaction = Usage::default();
                while let Some(pass) = seq.next_element::<UsageFields>()? {
                    if pass.compaction_pass {
                        compaction += pass.usage().unwrap_or_default();
                    }
                }
                Ok(Iterations(Some(compaction)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Iterations, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Iterations(None))
            }
            scalars_read_as!(Iterations, Iterations(None));
        }
        deserializer.deserialize_any(Passes)
    }
}

impl UsageFields {
    /// The count named `MEMBERS[index]` (one of the counts).
    fn count(&mut self, index: usize) -> &mut Count {
        match index {
            0 => &mut self.prompt_tokens,
            1 => &mut self.input_tokens,
            2 => &mut self.cache_creation_input_tokens,
            3 => &mut self.cache_read_input_tokens,
            4 => &mut self.prompt_token_count,
            5 => &mut self.tool_use_prompt_token_count,
            6 => &mut self.completion_tokens,
            7 => &mut self.output_tokens,
            8 => &mut self.candidates_token_count,
            _ => &mut self.thoughts_token_count,
        }
    }

    /// The fields read with the JSON cursor at a usage object: plain counts
    /// only; any other member is stepped over, and a count of another
    /// type (or a member twice) gives up, for serde to read the usage its
    /// own lenient way. So do `iterations`, which only a usage that
    /// compacted has: every other usage stays on the cursor.
    pub(crate) fn scan(cursor: &mut Cursor<'_>) -> Scan<UsageFields> {
        let mut fields = UsageFields::default();
        cursor.fields(MEMBERS, |cursor, field| match field {
            ITERATIONS => Err(GiveUp),
            // Only an `iterations` entry's `type` means anything.
            TYPE => cursor.skip(),
            _ => {
                *fields.count(field) = Count(Some(cursor.count()?));
                Ok(())
            }
        })?;
        Ok(fields)
    }

    /// The input count, in the first spelling there: OpenAI's, else
    /// Anthropic's with its cache, else Gemini's with its tool-use prompt;
    /// and what compaction passes read.
    fn input(&self) -> Option<u64> {
        let answer = self
            .prompt_tokens
            .0
            .or_else(|| {
                Count::sum([
                    &self.input_tokens,
                    &self.cache_creation_input_tokens,
                    &self.cache_read_input_tokens,
                ])
            })
            .or_else(|| Count::sum([&self.prompt_token_count, &self.tool_use_prompt_token_count]));
        Count::sum([
            &Count(answer),
            &Count(self.compaction.map(|pass| pass.input_tokens)),
        ])
    }

    /// The output count, in the first spelling there: OpenAI chat's, else
    /// Anthropic's and the Responses API's, else Gemini's with its
    /// thinking; and what compaction passes wrote.
    fn output(&self) -> Option<u64> {
        let answer = self
            .completion_tokens
            .0
            .or(self.output_tokens.0)
            .or_else(|| Count::sum([&self.candidates_token_count, &self.thoughts_token_count]));
        Count::sum([
            &Count(answer),
            &Count(self.compaction.map(|pass| pass.output_tokens)),
        ])
    }

    /// The fields of a later report over these, field by field: a count
    /// the later report gives replaces this one's, a count it leaves out is
    /// kept. For a provider that reports cumulative counts in parts across
    /// events (Anthropic: `message_start` has the input and its cache,
    /// a `message_delta` the output, and at times the input again without
    /// its cache). Anthropic's `iterations` are cumulative too: a later
    /// list replaces the earlier one whole.
    pub fn merge(&mut self, later: &UsageFields) {
        let fields = [
            (&mut self.prompt_tokens, later.prompt_tokens),
            (&mut self.input_tokens, later.input_tokens),
            (
                &mut self.cache_creation_input_tokens,
                later.cache_creation_input_tokens,
            ),
            (
                &mut self.cache_read_input_tokens,
                later.cache_read_input_tokens,
            ),
            (&mut self.prompt_token_count, later.prompt_token_count),
            (
                &mut self.tool_use_prompt_token_count,
                later.tool_use_prompt_token_count,
            ),
            (&mut self.completion_tokens, later.completion_tokens),
            (&mut self.output_tokens, later.output_tokens),
            (
                &mut self.candidates_token_count,
                later.candidates_token_count,
            ),
            (&mut self.thoughts_token_count, later.thoughts_token_count),
        ];
        for (kept, later) in fields {
            if later.0.is_some() {
                *kept = later;
            }
        }
        if later.compaction.is_some() {
            self.compaction = later.compaction;
        }
    }

    /// True when an input count is there.
    pub fn has_input(&self) -> bool {
        self.input().is_some()
    }

    /// True when an output count is there.
    pub fn has_output(&self) -> bool {
        self.output().is_some()
    }

    /// The usage these fields give, if any count is there.
    pub fn usage(&self) -> Option<Usage> {
        let (input, output) = (self.input(), self.output());
        if input.is_none() && output.is_none() {
            return None;
        }
        Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)))
    }
}

/// A token count: a non-negative integer, else nothing (never an error).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Count(Option<u64>);

impl Count {
    /// The sum of the counts there, if any is.
    fn sum<const N: usize>(counts: [&Count; N]) -> Option<u64> {
        counts
            .iter()
            .filter_map(|count| count.0)
            .reduce(u64::saturating_add)
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Count(match Scalar::deserialize(deserializer)? {
            Scalar::Unsigned(count) => Some(count),
            _ => None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    struct Cell(OnceLock<Usage>);

    impl UsageSource for Cell {
        fn usage(&self) -> Option<Usage> {
            self.0.get().copied()
        }
    }

    /// What serde reads of `json`, and the cursor too unless it gives up
    /// (a count that is no plain count): they must agree.
    fn read(json: &str) -> Option<Usage> {
        let by_serde = serde_json::from_str::<UsageFields>(json).unwrap().usage();
        if let Ok(fields) = UsageFields::scan(&mut Cursor::new(json)) {
            assert_eq!(by_serde, fields.usage(), "{json}");
        }
        by_serde
    }

    #[test]
    fn every_billed_token_counts_in_each_spelling() {
        // Anthropic: the prompt cache's writes and reads are input beside
        // `input_tokens`.
        assert_eq!(
            read(
                r#"{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":2000,"cache_read_input_tokens":5000}"#
            ),
            Some(Usage::new(7003, 1))
        );
        // Gemini: thinking is output, the tool-use prompt input.
        assert_eq!(
            read(
                r#"{"promptTokenCount":3,"candidatesTokenCount":2,"thoughtsTokenCount":500,"toolUsePromptTokenCount":7,"totalTokenCount":512}"#
            ),
            Some(Usage::new(10, 502))
        );
        // Thinking only, so far.
        assert_eq!(
            read(r#"{"promptTokenCount":3,"thoughtsTokenCount":40}"#),
            Some(Usage::new(3, 40))
        );
        // OpenAI's counts hold their cached and reasoning parts, and a
        // server that adds cache counts beside `prompt_tokens` counts them
        // in it.
        assert_eq!(
            read(
                r#"{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":80},"completion_tokens_details":{"reasoning_tokens":15},"cache_read_input_tokens":80}"#
            ),
            Some(Usage::new(100, 20))
        );
        assert_eq!(read(r#"{"cache_read_input_tokens":null}"#), None);
    }

    /// Anthropic's compaction pass is billed beside the answer's, and only
    /// `iterations` says it (the docs' example: the top level is the
    /// `message` pass, 23 000 in and 1 000 out).
    #[test]
    fn a_compaction_pass_is_billed_with_the_answer() {
        let example = r#"{"input_tokens":23000,"output_tokens":1000,"iterations":[{"type":"compaction","input_tokens":180000,"output_tokens":3500},{"type":"message","input_tokens":23000,"output_tokens":1000}]}"#;
        let whole = Some(Usage::new(180_000 + 23_000, 3_500 + 1_000));
        assert_eq!(read(example), whole);
        // The cursor leaves a usage that lists its passes to serde.
        assert!(UsageFields::scan(&mut Cursor::new(example)).is_err());
        // A compaction pass's prompt cache is input too, and every pass
        // counts; an entry that is no pass, and iterations that are no
        // list, count nothing and fail nothing.
        assert_eq!(
            read(
                r#"{"input_tokens":5,"output_tokens":2,"iterations":[{"type":"compaction","input_tokens":100,"cache_read_input_tokens":50,"output_tokens":7},"x",{"type":"compaction","input_tokens":1,"output_tokens":1},{"type":"message","input_tokens":5,"output_tokens":2}]}"#
            ),
            Some(Usage::new(5 + 150 + 1, 2 + 7 + 1))
        );
        assert_eq!(
            read(r#"{"input_tokens":5,"output_tokens":2,"iterations":"none"}"#),
            Some(Usage::new(5, 2))
        );

        // In a stream the counts come in parts and are cumulative:
        // `message_start` has the input, each `message_delta` the counts
        // so far with their iterations. The last report replaces the
        // earlier, never adds to it.
        let report = |json: &str| serde_json::from_str::<UsageFields>(json).unwrap();
        let mut kept = report(r#"{"input_tokens":23000,"output_tokens":1}"#);
        kept.merge(&report(example));
        assert_eq!(kept.usage(), whole);
        kept.merge(&report(example));
        assert_eq!(kept.usage(), whole);
        kept.merge(&report(r#"{"output_tokens":1000}"#));
        assert_eq!(kept.usage(), whole);
    }

    #[test]
    fn a_slot_reads_what_its_source_learns_later() {
        let cell = Arc::new(Cell(OnceLock::new()));
        let slot = UsageSlot::new(cell.clone());
        assert_eq!(slot.get(), None);
        cell.0.set(Usage::new(10, 20)).unwrap();
        assert_eq!(slot.clone().get(), Some(Usage::new(10, 20)));
        let mut total = Usage::new(1, 2);
        total += Usage::new(10, 20);
        assert_eq!(total, Usage::new(11, 22));
    }
}
