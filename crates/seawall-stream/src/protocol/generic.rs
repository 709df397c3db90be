//! Any event stream: non-empty data is content, `[DONE]` is done, and a
//! clean EOF is the finish.

use std::borrow::Cow;

use super::Signal;

pub(super) fn decode(data: &[u8]) -> Signal<'_> {
    match data {
        b"" => Signal::Other,
        b"[DONE]" => Signal::Done,
        data => Signal::Content {
            text: std::str::from_utf8(data).ok().map(Cow::Borrowed),
            finish: None,
        },
    }
}
