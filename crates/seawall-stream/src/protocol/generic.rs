//! Any event stream: non-empty data is content, `[DONE]` is done, an event
//! named `error` is an error, and a clean EOF is the finish.

use std::borrow::Cow;

use super::Signal;

pub(super) fn decode<'a>(name: &[u8], data: &'a [u8]) -> Signal<'a> {
    match data {
        // An event named `error` is never content: the decoder's rule for
        // such events (in `protocol/mod.rs`) makes it the error it is,
        // whatever its data.
        _ if name == b"error" => Signal::Other,
        b"" => Signal::Other,
        b"[DONE]" => Signal::Done,
        data => Signal::Content {
            text: std::str::from_utf8(data).ok().map(Cow::Borrowed),
            finish: None,
            act: false,
        },
    }
}
