//! An incremental scanner for the WHATWG event-stream format.
//!
//! Frames are scanned in place with `memchr`: only a line cut by a frame
//! boundary is carried over. An event whose one `data:` line lies whole in
//! the frame is handed on as a slice of the frame, uncopied (the common
//! case: one JSON object per event); only an event of several `data:` lines,
//! or one that spans frames, is copied into a reused buffer, so its lines
//! can be joined with `\n`. Both buffers are capped; a line or an event
//! longer than its cap is an error, never unbounded growth — and so is an
//! event whose lines, of any field, never end in a blank line (see
//! [`Scanner::new`]).
//!
//! Events and comments are what the format dispatches; a line that is no
//! field of the format is handed on too, as [`Item::Stray`], for a reader
//! that knows what a raw error body written into a stream looks like
//! (the format itself ignores such lines).

use std::mem;

use memchr::memchr2;
use seawall_internal::sse_field;

/// The default cap on one line, and on one event's data: 32 MiB. A
/// generated image arrives as one event: Gemini's `inlineData` part (a 4K
/// PNG is about 7.8 MB, some 10.4 MB of base64; python-genai#2248), the
/// Responses API's `image_generation_call` result, repeated whole in
/// `response.completed`. Such an answer is billed whole before it is sent,
/// so the cap is set well above the largest image the providers make:
/// refusing it would throw away what the caller paid for. It is larger
/// than the unary check cap (seawall-classify's `DEFAULT_MAX_SUCCESS_BODY`,
/// 8 MiB) on purpose: a unary answer past that cap is handed on unchecked,
/// while a stream's event past this one fails the stream.
pub const DEFAULT_MAX_LINE: usize = 32 << 20;

use seawall_internal::json::UTF8_BOM as BOM;

/// The least bound on one event's lines of any field (see
/// [`Scanner::new`]).
const MIN_EVENT_LINES: usize = 64 << 10;

/// One thing the scanner found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A dispatched event (a blank line after at least one `data:` line).
    Event(Event<'a>),
    /// A comment line (starting with `:`), without the colon. Servers send
    /// them as keep-alives.
    Comment(&'a [u8]),
    /// A line that is no field of the event-stream format (`data`,
    /// `event`, `id`, `retry`), which the format ignores: some servers
    /// write an error body into a stream raw, line by line, where no SSE
    /// client dispatches it (Google's API does, mid-stream). `start` is as
    /// [`Event::start`]: where the frame's last blank line ended.
    Stray {
        /// The whole line, without its line end.
        line: &'a [u8],
        /// Where a cut before it begins in the frame being fed.
        start: usize,
    },
}

/// A dispatched event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field, empty when the event had none (the WHATWG
    /// default name is `message`).
    pub name: &'a [u8],
    /// The `data:` lines, joined with `\n`.
    pub data: &'a [u8],
    /// Where the event begins in the frame being fed: just after the
    /// frame's previous blank line (comments before the event count as
    /// its own), or 0 when nothing in this frame came before it — also
    /// when it began in an earlier frame. Cutting the frame here hands on
    /// whole events only, never this one: a client dispatches no event
    /// whose blank line it never read.
    pub start: usize,
    /// Where the event ends in the frame being fed: just after the blank
    /// line that dispatched it (after its CR, when the LF of a CRLF is in
    /// the next frame). Cutting the frame here hands on this event whole
    /// and nothing after it.
    pub end: usize,
}

/// Why the scanner gave up. More reasons may come: a match on it needs a
/// wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A `data:` line without a line end grew past the cap: an answer's
    /// part larger than the reader was set to hold.
    #[error("event-stream line longer than {cap} bytes")]
    LineTooLong {
        /// The cap in bytes.
        cap: usize,
    },
    /// Any other line (a comment, another field, a line that is no field)
    /// grew past the cap: no part of an answer, a broken stream.
    #[error("event-stream line that is no data longer than {cap} bytes")]
    OtherLineTooLong {
        /// The cap in bytes.
        cap: usize,
    },
    /// An event's data grew past the cap.
    #[error("event-stream event larger than {cap} bytes")]
    EventTooLarge {
        /// The cap in bytes.
        cap: usize,
    },
}

impl ScanError {
    /// A stable snake_case name for logs and messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScanError::LineTooLong { .. } => "sse_line_too_long",
            ScanError::OtherLineTooLong { .. } => "sse_other_line_too_long",
            ScanError::EventTooLarge { .. } => "sse_event_too_large",
        }
    }
}

/// What a reader feeds the scanner at the end of a stream, as `provider`'s
/// SDK reads one: Google's reads a stream by its lines and takes the last
/// data line at EOF as an event, blank line or not (`\n\n` ends that
/// line and dispatches it here); the OpenAI and Anthropic SDKs, as
/// WHATWG's parser, drop an event no blank line ended (nothing).
pub fn at_end_of_stream(provider: seawall_core::provider::Provider) -> &'static [u8] {
    match provider {
        seawall_core::provider::Provider::Gemini => b"\n\n",
        _ => b"",
    }
}

/// Where the first line end (LF or CR) in `rest` is. Every event ends in a
/// blank line, which starts with its line end: found without setting up a
/// vector search (as costly as the rest of a short line's scan).
#[inline]
fn line_end(rest: &[u8]) -> Option<usize> {
    match rest.first() {
        Some(b'\n' | b'\r') => Some(0),
        _ => memchr2(b'\n', b'\r', rest),
    }
}

/// The incremental scanner. Feed it frames in order; it calls back with
/// every complete comment and event, whatever the frame boundaries were.
#[derive(Debug)]
pub struct Scanner {
    /// The start of a line cut by a frame boundary.
    line: Vec<u8>,
    /// The current event's data lines, joined with `\n`.
    data: Vec<u8>,
    /// The current event's name.
    name: Vec<u8>,
    has_data: bool,
    /// The previous frame ended in CR: a leading LF in this one is the
    /// second half of a CRLF, not a blank line.
    skip_lf: bool,
    /// How many bytes of a leading BOM matched so far; `None` once decided.
    bom_matched: Option<u8>,
    /// Where the frame being fed has its last blank line's end (0 before
    /// the first): the next event's [`Event::start`].
    boundary: usize,
    /// Where the blank line being handled ends in the frame: the
    /// dispatched event's [`Event::end`].
    dispatch_end: usize,
    /// The bytes of the event being read so far, every line of it (data,
    /// other fields, comments) and a byte for each line end: see
    /// [`Scanner::new`].
    pending: usize,
    max_line: usize,
    max_event: usize,
    /// The bound on `pending`.
    max_pending: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner::new(DEFAULT_MAX_LINE, DEFAULT_MAX_LINE)
    }
}

impl Scanner {
    /// A scanner with caps on one line and on one event's data, in bytes.
    ///
    /// An event's lines, whatever their field, are bounded too, at twice
    /// the data cap (at least 64 KiB): lines that are no data (comments, `id:`, unknown
    /// fields) or empty `data:` lines never sent without a blank line end
    /// no event, and a reader that hands on whole events only (a relay)
    /// would hold every byte of them.
    pub fn new(max_line: usize, max_event: usize) -> Self {
        Scanner {
            line: Vec::new(),
            data: Vec::new(),
            name: Vec::new(),
            has_data: false,
            skip_lf: false,
            bom_matched: Some(0),
            boundary: 0,
            dispatch_end: 0,
            pending: 0,
            max_line,
            max_event,
            max_pending: max_event.saturating_mul(2).max(MIN_EVENT_LINES),
        }
    }

    /// Bytes of memory the scanner holds in its buffers (capacity, not
    /// length): bounded by the caps.
    pub fn buffered(&self) -> usize {
        self.line.capacity() + self.data.capacity() + self.name.capacity()
    }

    /// Whether the stream so far ends inside a line: bytes no line end
    /// closed yet.
    pub fn mid_line(&self) -> bool {
        !self.line.is_empty()
    }

    /// Ends the stream as `provider`'s SDK reads its end
    /// ([`at_end_of_stream`]: Google's dispatches the last event, blank
    /// line or not), and elsewhere closes a last line no line end closed:
    /// that line is read (a raw error body written without a final newline
    /// is still the provider's error, [`Item::Stray`]) without dispatching
    /// the event it may belong to. Returns that event, if one is left that
    /// no blank line ended (its `start` and `end` are 0): no SDK dispatches
    /// it, but its caller may still read why the stream ended from it.
    pub fn end(
        &mut self,
        provider: seawall_core::provider::Provider,
        mut on_item: impl FnMut(Item<'_>),
    ) -> Result<Option<Event<'_>>, ScanError> {
        let tail = match at_end_of_stream(provider) {
            b"" if !self.line.is_empty() => b"\n",
            tail => tail,
        };
        // Nothing to feed (the usual end: every line closed) scans nothing
        // and dispatches nothing; only the frame's boundary is reset, as a
        // feed would.
        if tail.is_empty() {
            self.boundary = 0;
        } else {
            self.feed(tail, &mut on_item)?;
        }
        Ok((self.has_data || self.name == b"error").then_some(Event {
            name: &self.name,
            data: &self.data,
            start: 0,
            end: 0,
        }))
    }

    /// Scans one frame, calling `on_item` for each complete comment and
    /// event. After an error the scanner must not be fed again.
    pub fn feed(
        &mut self,
        frame: &[u8],
        mut on_item: impl FnMut(Item<'_>),
    ) -> Result<(), ScanError> {
        self.boundary = 0;
        let mut rest = self.skip_bom(frame);
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        // The current event's only data line so far, still in the frame.
        let mut in_frame = None;
        while let Some(end) = line_end(rest) {
            let next = if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        self.skip_lf = true;
                        end + 1
                    }
                }
            } else {
                end + 1
            };
            let part = &rest[..end];
            let blank = part.is_empty() && self.line.is_empty();
            if self.line.is_empty() {
                if part.len() > self.max_line {
                    return Err(self.line_too_long(part));
                }
                // Only a blank line dispatches, and a blank line is never
                // carried: it ends here, in this frame.
                self.dispatch_end = frame.len() - rest.len() + next;
                self.line_complete(part, &mut in_frame, &mut on_item)?;
            } else {
                self.carry(part)?;
                let line = mem::take(&mut self.line);
                // A carried line is the frame's first: nothing is in the
                // frame yet, and its data is copied.
                let mut carried = None;
                let result = self.line_complete(&line, &mut carried, &mut on_item);
                if let Some(value) = carried {
                    self.data.extend_from_slice(value);
                }
                self.line = line;
                self.line.clear();
                result?;
            }
            rest = &rest[next..];
            if blank {
                // `rest` is always a suffix of `frame`.
                self.boundary = frame.len() - rest.len();
            }
        }
        // The event goes on in the next frame: keep its data.
        if let Some(value) = in_frame {
            self.data.extend_from_slice(value);
        }
        self.carry(rest)
    }

    /// The cap's error for a line that begins with what is carried and
    /// goes on with `rest`: its field says whether it was an answer's part.
    fn line_too_long(&self, rest: &[u8]) -> ScanError {
        const DATA: &[u8] = b"data:";
        let carried = &self.line[..self.line.len().min(DATA.len())];
        let more = &rest[..rest.len().min(DATA.len() - carried.len())];
        let cap = self.max_line;
        if DATA.starts_with(carried) && DATA[carried.len()..].starts_with(more) {
            ScanError::LineTooLong { cap }
        } else {
            ScanError::OtherLineTooLong { cap }
        }
    }

    /// Consumes a leading UTF-8 BOM at the very start of the stream, even
    /// when it is split across frames.
    fn skip_bom<'f>(&mut self, mut frame: &'f [u8]) -> &'f [u8] {
        while let (Some(matched), Some(&byte)) = (self.bom_matched, frame.first()) {
            if byte != BOM[usize::from(matched)] {
                // Not a BOM after all: what matched so far is line content
                // (none of it can be a line end).
                self.line.extend_from_slice(&BOM[..usize::from(matched)]);
                self.bom_matched = None;
                break;
            }
            frame = &frame[1..];
            self.bom_matched = if matched == 2 {
                None
            } else {
                Some(matched + 1)
            };
        }
        frame
    }

    fn carry(&mut self, part: &[u8]) -> Result<(), ScanError> {
        if self.line.len() + part.len() > self.max_line {
            return Err(self.line_too_long(part));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    /// Handles one complete line. `in_frame` is the current event's data
    /// while it is a single line borrowed from the frame (the event's data
    /// buffer is then empty); a second data line copies it into the buffer.
    fn line_complete<'f>(
        &mut self,
        line: &'f [u8],
        in_frame: &mut Option<&'f [u8]>,
        on_item: &mut impl FnMut(Item<'_>),
    ) -> Result<(), ScanError> {
        if line.is_empty() {
            self.pending = 0;
            // WHATWG drops an event without data; the SDKs dispatch one
            // that has a name, and raise on `error` (Anthropic's): an error
            // event is one, data or not.
            if self.has_data || self.name == b"error" {
                let data = match in_frame.take() {
                    Some(value) => value,
                    None => &self.data,
                };
                on_item(Item::Event(Event {
                    name: &self.name,
                    data,
                    start: self.boundary,
                    end: self.dispatch_end,
                }));
            }
            self.data.clear();
            self.name.clear();
            self.has_data = false;
            return Ok(());
        }
        self.pending += line.len() + 1;
        if line[0] == b':' {
            self.check_pending()?;
            on_item(Item::Comment(&line[1..]));
            return Ok(());
        }
        let (field, value) = sse_field::field(line);
        match field {
            b"data" => {
                let held = in_frame.map_or(self.data.len(), <[u8]>::len);
                let extra = usize::from(self.has_data) + value.len();
                if held + extra > self.max_event {
                    return Err(ScanError::EventTooLarge {
                        cap: self.max_event,
                    });
                }
                if !self.has_data {
                    *in_frame = Some(value);
                } else {
                    if let Some(first) = in_frame.take() {
                        self.data.extend_from_slice(first);
                    }
                    self.data.push(b'\n');
                    self.data.extend_from_slice(value);
                }
                self.has_data = true;
            }
            b"event" => {
                self.name.clear();
                self.name.extend_from_slice(value);
            }
            // `id` and `retry` steer reconnection, which a guard that never
            // replays does not do.
            b"id" | b"retry" => {}
            // Ignored by the format, and told to the reader, which may know
            // what a raw error body looks like.
            _ => {
                self.check_pending()?;
                on_item(Item::Stray {
                    line,
                    start: self.boundary,
                });
            }
        }
        // After the data's own cap, which names the cap a caller set.
        self.check_pending()
    }

    /// The event's lines, of any field, within twice the data cap (and at
    /// least [`MIN_EVENT_LINES`]: field names and line ends are overhead a
    /// small data cap must leave room for).
    fn check_pending(&self) -> Result<(), ScanError> {
        if self.pending > self.max_pending {
            return Err(ScanError::EventTooLarge {
                cap: self.max_pending,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Owned {
        Event(String, String),
        Comment(String),
        Stray(String),
    }

    fn scan(frames: &[&[u8]]) -> Vec<Owned> {
        let mut scanner = Scanner::default();
        let mut out = Vec::new();
        for frame in frames {
            scanner
                .feed(frame, |item| {
                    out.push(match item {
                        Item::Event(e) => Owned::Event(
                            String::from_utf8_lossy(e.name).into_owned(),
                            String::from_utf8_lossy(e.data).into_owned(),
                        ),
                        Item::Comment(c) => Owned::Comment(String::from_utf8_lossy(c).into_owned()),
                        Item::Stray { line, .. } => {
                            Owned::Stray(String::from_utf8_lossy(line).into_owned())
                        }
                    })
                })
                .unwrap();
        }
        out
    }

    fn ev(name: &str, data: &str) -> Owned {
        Owned::Event(name.into(), data.into())
    }

    #[test]
    fn whatwg_rules() {
        let stream = b"\xEF\xBB\xBF: hi\nevent: a\ndata: 1\ndata:2\r\n\r\ndata\rid: 7\r\rfoo: bar\n\ndata:  two spaces\n\n";
        let expected = vec![
            Owned::Comment(" hi".into()),
            ev("a", "1\n2"),
            ev("", ""),
            // An unknown field dispatches nothing; it is told as stray.
            Owned::Stray("foo: bar".into()),
            ev("", " two spaces"),
        ];
        assert_eq!(scan(&[stream]), expected);
        // Byte by byte, including inside the BOM and every CRLF.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(scan(&bytes), expected);
    }

    #[test]
    fn a_line_end_is_found_first_or_later() {
        assert_eq!(line_end(b""), None);
        assert_eq!(line_end(b"data: x"), None);
        assert_eq!(line_end(b"\n"), Some(0));
        assert_eq!(line_end(b"\r\n"), Some(0));
        assert_eq!(line_end(b"data: x\r\n"), Some(7));
        assert_eq!(line_end(b"data: x\n\n"), Some(7));
    }

    #[test]
    fn split_crlf_is_one_line_end() {
        assert_eq!(scan(&[b"data: x\r", b"\n\r", b"\n"]), vec![ev("", "x")]);
        // A lone CR then a blank line: two line ends, one dispatch.
        assert_eq!(scan(&[b"data: x\r", b"\r"]), vec![ev("", "x")]);
    }

    #[test]
    fn no_data_no_dispatch_and_partial_event_stays_pending() {
        assert_eq!(scan(&[b"event: ping\n\n", b"data: cut"]), vec![]);
    }

    #[test]
    fn events_whole_in_the_frame_are_not_copied() {
        let mut scanner = Scanner::default();
        let frame = b"data: {\"a\":1}\n\n: ping\nevent: x\ndata: 2\n\n";
        let mut data = Vec::new();
        scanner
            .feed(frame, |item| {
                if let Item::Event(event) = item {
                    assert!(frame.as_ptr_range().contains(&event.data.as_ptr()));
                    data.push(event.data.to_vec());
                }
            })
            .unwrap();
        assert_eq!(data, [b"{\"a\":1}".to_vec(), b"2".to_vec()]);
        assert_eq!(scanner.data.capacity(), 0, "nothing copied");

        // Several data lines, and an event cut by the frame end, are copied
        // and joined.
        let mut out = Vec::new();
        let mut feed = |frame: &[u8]| {
            scanner
                .feed(frame, |item| {
                    if let Item::Event(event) = item {
                        out.push(String::from_utf8_lossy(event.data).into_owned());
                    }
                })
                .unwrap()
        };
        feed(b"data: a\ndata: b\n\ndata: c");
        feed(b"ut\ndata: d\n");
        feed(b"\n");
        assert_eq!(out, ["a\nb", "cut\nd"]);
    }

    #[test]
    fn an_event_knows_where_it_begins_in_the_frame() {
        let starts = |frames: &[&[u8]]| {
            let mut scanner = Scanner::default();
            let mut out = Vec::new();
            for frame in frames {
                scanner
                    .feed(frame, |item| {
                        if let Item::Event(event) = item {
                            out.push(event.start);
                        }
                    })
                    .unwrap();
            }
            out
        };
        // After the previous blank line; a comment or a nameless blank
        // block before an event is its own.
        let frame = b"data: a\n\n: c\nevent: e\ndata: b\r\n\r\ndata: c\r\r";
        assert_eq!(starts(&[frame]), [0, 9, 33]);
        assert_eq!(starts(&[b"event: ping\n\ndata: x\n\n"]), [13]);
        // Begun in an earlier frame, or the frame's first: 0, also when the
        // earlier frame ended with a carried line or a CR.
        let frames: [&[u8]; 2] = [b"data: a\n\ndata: b", b"c\n\ndata: d\n\n"];
        assert_eq!(starts(&frames), [0, 0, 3]);
        let frames: [&[u8]; 2] = [b"data: a\r", b"\n\r\ndata: b\n\n"];
        assert_eq!(starts(&frames), [0, 3]);
    }

    #[test]
    fn caps_bound_memory() {
        let mut scanner = Scanner::new(64, 128);
        let long = [b'a'; 40];
        scanner.feed(b"data: ", |_| {}).unwrap();
        scanner.feed(&long, |_| {}).unwrap();
        assert_eq!(
            scanner.feed(&long, |_| {}),
            Err(ScanError::LineTooLong { cap: 64 })
        );
        assert!(scanner.buffered() <= 64 * 2 + 128 * 2);

        let mut scanner = Scanner::new(64, 128);
        assert_eq!(scanner.feed(&[b'x'; 60], |_| {}), Ok(()));
        assert_eq!(
            scanner.feed(&[b'x'; 5], |_| {}),
            Err(ScanError::OtherLineTooLong { cap: 64 })
        );
        let mut scanner = Scanner::new(64, 128);
        let mut frame = [b'x'; 70];
        frame[69] = b'\n';
        assert_eq!(
            scanner.feed(&frame, |_| {}),
            Err(ScanError::OtherLineTooLong { cap: 64 })
        );

        let mut scanner = Scanner::new(64, 100);
        let line = b"data: 0123456789012345678901234567890123456789\n";
        scanner.feed(line, |_| {}).unwrap();
        scanner.feed(line, |_| {}).unwrap();
        assert_eq!(
            scanner.feed(line, |_| {}),
            Err(ScanError::EventTooLarge { cap: 100 })
        );

        // Lines that are no data bound the event at twice the data cap
        // (at least 64 KiB); a blank line starts the count again.
        let cap = 2 * 40_000;
        for filler in [&b": keep-alive\n"[..], b"id: 12345678\n", b"foo: bar\n"] {
            let mut scanner = Scanner::new(64, 40_000);
            let mut fed = 0;
            let result = loop {
                if let Err(error) = scanner.feed(filler, |_| {}) {
                    break error;
                }
                fed += filler.len();
                assert!(fed <= cap, "{:?}", String::from_utf8_lossy(filler));
            };
            assert!(fed + 2 * filler.len() > cap, "{fed}");
            assert_eq!(result, ScanError::EventTooLarge { cap });
        }
        // Empty data lines (a byte of data each, six on the wire) meet the
        // lines' bound first.
        let mut scanner = Scanner::new(64, 40_000);
        let error = loop {
            if let Err(error) = scanner.feed(b"data:\n", |_| {}) {
                break error;
            }
        };
        assert_eq!(error, ScanError::EventTooLarge { cap });
        let mut scanner = Scanner::new(64, 100);
        for _ in 0..100_000 {
            scanner.feed(b": ping\n\n", |_| {}).unwrap();
            scanner.feed(b"id: 1\ndata: x\n\n", |_| {}).unwrap();
        }
    }
}
