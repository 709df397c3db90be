//! The choices of a stream that asked for several: OpenAI's `n > 1`,
//! Gemini's `candidateCount > 1`.

use std::borrow::Cow;

use seawall_core::FinishKind;

use super::Reason;

/// The choices (OpenAI) or candidates (Gemini) of one stream, each
/// finishing on its own. OpenAI and vLLM send one choice per chunk; Gemini
/// sends several candidates in a chunk, or one each with its `index`. The
/// message is finished when every choice seen has: the first to finish
/// does not finish the others (a break after it would have called them
/// complete).
#[derive(Debug, Clone, Default)]
pub(super) struct Choices {
    /// The choices seen (index < 64), and those finished.
    seen: u64,
    finished: u64,
    /// The first finish that was not a plain stop, kept for the message's
    /// finish: a choice cut at its token limit is not hidden by another's
    /// `stop`.
    notable: Option<(FinishKind, String)>,
}

impl Choices {
    /// Several choices were seen and one of them never finished: an end
    /// marker now ends a message with a choice cut short.
    pub(super) fn one_unfinished(&self) -> bool {
        self.seen.count_ones() > 1 && self.seen & !self.finished != 0
    }

    /// Notes `index`'s finish; the finish of the message, once every
    /// choice seen has finished (for a single choice, its own).
    pub(super) fn finish<'a>(
        &mut self,
        index: u64,
        finish: Option<Reason<'a>>,
    ) -> Option<Reason<'a>> {
        // Past 64 choices, each finish is the message's, as for one.
        let Some(bit) = bit(index) else {
            return finish;
        };
        let finished = if finish.is_some() { bit } else { 0 };
        self.settle(bit, finished, finish)
    }

    /// Notes one chunk's choices: those in `seen`, of which those in
    /// `finished` finished, `finish` being the chunk's most telling
    /// finish (the first not a plain stop, else the first). The finish of
    /// the message, once every choice seen has finished.
    pub(super) fn settle<'a>(
        &mut self,
        seen: u64,
        finished: u64,
        finish: Option<Reason<'a>>,
    ) -> Option<Reason<'a>> {
        self.seen |= seen;
        let reason = finish?;
        self.finished |= finished;
        if notable(reason.kind) && self.notable.is_none() {
            self.notable = Some((reason.kind, reason.reason.clone().into_owned()));
        }
        if self.seen & !self.finished != 0 {
            return None;
        }
        // Kept, not taken: a choice that shows up later and finishes
        // plainly does not hide it.
        match &self.notable {
            Some((kind, notable)) if self.seen.count_ones() > 1 => Some(Reason {
                kind: *kind,
                reason: Cow::Owned(notable.clone()),
            }),
            _ => Some(reason),
        }
    }
}

/// Whether a choice's finish tells of the message's end more than a plain
/// stop does (a cut at the limit, a filter): the first such is the
/// message's finish, whatever the other choices said.
pub(super) fn notable(kind: FinishKind) -> bool {
    kind != FinishKind::Complete
}

/// The bit of choice `index`, for the first 64.
pub(super) fn bit(index: u64) -> Option<u64> {
    (index < 64).then(|| 1u64 << index)
}
