//! The choices of a stream that asked for several: OpenAI's `n > 1`,
//! Gemini's `candidateCount > 1`.

use std::borrow::Cow;

use seawall_core::FinishKind;
use seawall_core::facts::MAX_CHOICES;

use super::Reason;

/// The choices (OpenAI) or candidates (Gemini) of one stream, each
/// finishing on its own. OpenAI and vLLM send one choice per chunk; Gemini
/// sends several candidates in a chunk, or one each with its `index`. The
/// message is finished when every choice seen has: the first to finish
/// does not finish the others (a break after it would have called them
/// complete). The choices the request asked for ([`Choices::asked`]) are
/// kept apart: one that never showed up is a cut only where the server
/// gave no end marker ([`Choices::asked_unseen`]).
#[derive(Debug, Clone, Default)]
pub(super) struct Choices {
    /// The choices seen (index < 64), and those finished.
    seen: u64,
    finished: u64,
    /// The choices the request asked for (the first 64).
    asked: u64,
    /// The first finish that was not a plain stop, kept for the message's
    /// finish: a choice cut at its token limit is not hidden by another's
    /// `stop`.
    notable: Option<(FinishKind, String)>,
}

impl Choices {
    /// The choices of a stream whose request asked for `asked` (at most
    /// the first 64 are followed).
    ///
    /// A choice asked for is not counted as seen: servers that ignore `n`
    /// (OpenRouter, llama-cpp-python) write one whole choice and their
    /// `[DONE]`, an answer whole as they give it, that a retry would only
    /// buy again. One that never showed up tells of a cut only where no
    /// end marker came ([`Choices::asked_unseen`]).
    pub(super) fn asked(asked: u8) -> Choices {
        let asked = bit(u64::from(asked)).map_or(u64::MAX, |past| past - 1);
        Choices {
            asked,
            ..Choices::default()
        }
    }

    /// A choice the request asked for never showed up.
    pub(super) fn asked_unseen(&self) -> bool {
        self.asked & !self.seen != 0
    }

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

/// The bit of choice `index`, for the first [`MAX_CHOICES`].
pub(super) fn bit(index: u64) -> Option<u64> {
    (index < u64::from(MAX_CHOICES)).then(|| 1u64 << index)
}

// One bit of a word per choice followed.
const _: () = assert!(MAX_CHOICES as u32 <= u64::BITS);

#[cfg(test)]
mod tests {
    use super::*;

    fn stop() -> Option<Reason<'static>> {
        Some(Reason {
            kind: FinishKind::Complete,
            reason: "stop".into(),
        })
    }

    /// Asked for two, the first's finish is the message's while the
    /// second never showed up (a server that ignores `n` ends there), and
    /// the second is told apart as asked and unseen; once it shows up, it
    /// is waited for as any choice seen.
    #[test]
    fn choices_asked_are_told_apart_until_they_show_up() {
        let mut choices = Choices::asked(2);
        assert!(choices.asked_unseen());
        assert!(!choices.one_unfinished());
        assert!(choices.finish(0, stop()).is_some());
        assert!(choices.asked_unseen());
        assert_eq!(choices.finish(1, None), None);
        assert!(!choices.asked_unseen());
        assert!(choices.one_unfinished());
        assert!(choices.finish(1, stop()).is_some());
        assert!(!choices.one_unfinished());
        // One asked is unseen only until it shows up; none, never.
        assert!(!Choices::asked(0).asked_unseen());
        let mut choices = Choices::asked(1);
        assert!(choices.asked_unseen());
        assert!(choices.finish(0, stop()).is_some());
        assert!(!choices.asked_unseen());
        // All 64 followed: the last one seen leaves none unseen.
        let mut choices = Choices::asked(MAX_CHOICES);
        for index in 0..63 {
            choices.finish(index, None);
        }
        assert!(choices.asked_unseen());
        choices.finish(63, None);
        assert!(!choices.asked_unseen());
        assert!(choices.one_unfinished());
    }
}
