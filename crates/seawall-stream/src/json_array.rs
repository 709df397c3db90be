//! An incremental splitter for a stream sent as one JSON array.
//!
//! Gemini's `streamGenerateContent` without `alt=sse` answers
//! `application/json` whose body is a JSON array of response objects,
//! written one element at a time as the model produces them
//! (`[{…}\r\n,{…}\r\n]`). The splitter finds the elements whatever the
//! frame boundaries are: it tracks nesting, strings and escapes across
//! frames, and hands on each complete element as a byte slice, uncopied
//! when it lies whole in one frame; only an element cut by a frame
//! boundary is copied into a reused buffer, which is capped: an element
//! larger than the cap is an error, never unbounded growth.
//!
//! The splitter checks the array's framing — `[`, elements separated by
//! `,`, `]`, JSON whitespace between them, nothing but whitespace after the
//! `]` — and balances brackets and strings inside an element; whether an
//! element is well-formed JSON is for its decoder to say. A body that
//! opens with `{` instead of `[` is read as a single element (a unary
//! answer to a stream request has the shape of one element).
//!
//! ```
//! use seawall_stream::json_array::Splitter;
//!
//! let mut splitter = Splitter::new(1 << 20);
//! let mut elements = Vec::new();
//! for frame in [&b"[{\"a\":\"]\"}\r\n,{\"b"[..], &b"\":2}\r\n]"[..]] {
//!     splitter
//!         .feed(frame, |element| elements.push(element.to_vec()))
//!         .unwrap();
//! }
//! assert_eq!(elements, [&b"{\"a\":\"]\"}"[..], &b"{\"b\":2}"[..]]);
//! assert!(splitter.is_closed());
//! ```

use seawall_internal::json::{UTF8_BOM as BOM, is_blank};
use seawall_internal::nesting::Nesting;

/// Why the splitter gave up. Each has a stable name ([`ArrayError::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayError {
    /// The body's first non-blank byte opens neither an array nor an object.
    #[error("the body is not a JSON array (it opens with byte {byte:#04x})")]
    NotAnArray {
        /// The first non-blank byte.
        byte: u8,
    },
    /// One element grew past the cap.
    #[error("JSON array element larger than {cap} bytes")]
    ElementTooLarge {
        /// The cap in bytes.
        cap: usize,
    },
    /// A byte the array's framing does not allow where it stands: a missing
    /// or doubled `,`, a `,` before `]`, a closing bracket without its
    /// opening one.
    #[error("unexpected byte {byte:#04x} in the JSON array's framing")]
    Unexpected {
        /// The byte.
        byte: u8,
    },
    /// Something other than whitespace after the array (or the single
    /// object) closed.
    #[error("data after the end of the JSON array (byte {byte:#04x})")]
    TrailingData {
        /// The first such byte.
        byte: u8,
    },
}

impl ArrayError {
    /// A stable snake_case name for logs and messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            ArrayError::NotAnArray { .. } => "json_array_not_an_array",
            ArrayError::ElementTooLarge { .. } => "json_array_element_too_large",
            ArrayError::Unexpected { .. } => "json_array_unexpected_byte",
            ArrayError::TrailingData { .. } => "json_array_trailing_data",
        }
    }
}

/// Where the splitter stands between elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the opening `[` (or `{`).
    Opening,
    /// After `[`: an element or `]`.
    FirstElement,
    /// After `,`: an element.
    Element,
    /// Inside an element.
    InElement,
    /// After an element: `,` or `]`.
    Separator,
    /// After `]` (or the single object): whitespace only.
    Closed,
}

/// The incremental splitter. Feed it frames in order; it calls back with
/// every complete element, whatever the frame boundaries were.
#[derive(Debug)]
pub struct Splitter {
    at: At,
    /// The body is a single object, not an array.
    single: bool,
    /// The start of an element cut by a frame boundary.
    carried: Vec<u8>,
    /// Where the current element (not a scalar) ends.
    nesting: Nesting,
    /// The current element is a bare scalar (number, literal): it ends at
    /// the first delimiter.
    scalar: bool,
    /// How many bytes of a leading BOM matched so far; `None` once decided.
    bom_matched: Option<u8>,
    failed: Option<ArrayError>,
    max_element: usize,
}

impl Splitter {
    /// A splitter with a cap on one element, in bytes.
    pub fn new(max_element: usize) -> Self {
        Splitter {
            at: At::Opening,
            single: false,
            carried: Vec::new(),
            nesting: Nesting::default(),
            scalar: false,
            bom_matched: Some(0),
            failed: None,
            max_element,
        }
    }

    /// True once the array's `]` (or the single object's end) arrived: a
    /// body that ends before is cut.
    pub fn is_closed(&self) -> bool {
        self.at == At::Closed && self.failed.is_none()
    }

    /// Bytes of memory the splitter holds (capacity): bounded by the cap.
    pub fn buffered(&self) -> usize {
        self.carried.capacity()
    }

    /// Splits one frame, calling `on_element` for each complete element.
    /// After an error every later call returns the same error.
    pub fn feed(
        &mut self,
        frame: &[u8],
        mut on_element: impl FnMut(&[u8]),
    ) -> Result<(), ArrayError> {
        self.feed_located(frame, |element, _, _| on_element(element))
    }

    /// [`feed`](Splitter::feed), telling also where each element begins in
    /// `frame` (0 when it began in an earlier frame) and where it ends. A
    /// reader that must not hand an element on (a provider's error
    /// element) cuts the frame at its beginning; the separator before it
    /// stays.
    pub fn feed_located(
        &mut self,
        frame: &[u8],
        mut on_element: impl FnMut(&[u8], usize, usize),
    ) -> Result<(), ArrayError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let result = self.split(frame, &mut on_element);
        if let Err(error) = result {
            self.failed = Some(error);
            self.carried = Vec::new();
        }
        result
    }

    fn split(
        &mut self,
        frame: &[u8],
        on_element: &mut impl FnMut(&[u8], usize, usize),
    ) -> Result<(), ArrayError> {
        let mut i = self.skip_bom(frame)?;
        // Where the current element starts in this frame, when it started
        // here.
        let mut start = None;
        while i < frame.len() {
            if self.at == At::InElement {
                let from = i;
                match self.scan_element(&frame[i..]) {
                    Some(len) => {
                        let end = from + len;
                        match start.take() {
                            Some(begin) => {
                                self.check_size(end - begin)?;
                                on_element(&frame[begin..end], begin, end);
                            }
                            None => {
                                self.carry(&frame[from..end])?;
                                on_element(&self.carried, 0, end);
                                self.carried.clear();
                            }
                        }
                        self.at = if self.single {
                            At::Closed
                        } else {
                            At::Separator
                        };
                        i = end;
                    }
                    None => {
                        // The element goes on in the next frame.
                        let begin = start.take().unwrap_or(from);
                        self.carry(&frame[begin..])?;
                        return Ok(());
                    }
                }
                continue;
            }
            let byte = frame[i];
            if is_blank(byte) {
                i += 1;
                continue;
            }
            match (self.at, byte) {
                (At::Opening, b'[') => self.at = At::FirstElement,
                (At::Opening, b'{') => {
                    self.single = true;
                    self.open_element(byte);
                    start = Some(i);
                }
                (At::Opening, _) => return Err(ArrayError::NotAnArray { byte }),
                (At::FirstElement | At::Separator, b']') => self.at = At::Closed,
                (At::Separator, b',') => self.at = At::Element,
                (At::FirstElement | At::Element, b',' | b']' | b'}' | b':') => {
                    return Err(ArrayError::Unexpected { byte });
                }
                (At::FirstElement | At::Element, _) => {
                    self.open_element(byte);
                    start = Some(i);
                    if self.scalar {
                        // A scalar's first byte is part of it; scanning
                        // starts at the next.
                        i += 1;
                        continue;
                    }
                }
                (At::Separator, _) => return Err(ArrayError::Unexpected { byte }),
                (At::Closed, _) => return Err(ArrayError::TrailingData { byte }),
                (At::InElement, _) => unreachable!("handled above"),
            }
            if self.at != At::InElement {
                i += 1;
            }
        }
        // A scalar whose first byte ended the frame.
        if let Some(begin) = start {
            self.carry(&frame[begin..])?;
        }
        Ok(())
    }

    /// Skips a leading byte-order mark, however it is cut; returns where
    /// the frame's data starts.
    fn skip_bom(&mut self, frame: &[u8]) -> Result<usize, ArrayError> {
        let Some(matched) = self.bom_matched else {
            return Ok(0);
        };
        let mut matched = usize::from(matched);
        let mut i = 0;
        while matched < BOM.len() && i < frame.len() {
            if frame[i] != BOM[matched] {
                self.bom_matched = None;
                return if matched == 0 {
                    Ok(0)
                } else {
                    // Part of a BOM, then something else: no JSON opens so.
                    Err(ArrayError::NotAnArray { byte: BOM[0] })
                };
            }
            matched += 1;
            i += 1;
        }
        self.bom_matched = (matched < BOM.len()).then_some(matched as u8);
        Ok(i)
    }

    /// Sets up the state for an element opening with `byte` (not yet
    /// scanned unless it is a scalar).
    fn open_element(&mut self, byte: u8) {
        self.at = At::InElement;
        self.nesting = Nesting::default();
        self.scalar = !matches!(byte, b'{' | b'[' | b'"');
    }

    /// Scans element bytes; returns how many of `data` belong to the
    /// element when it ends within `data`.
    fn scan_element(&mut self, data: &[u8]) -> Option<usize> {
        if !self.scalar {
            return self.nesting.scan(data);
        }
        data.iter().position(|&byte| {
            is_blank(byte) || matches!(byte, b',' | b']' | b'}' | b'[' | b'{' | b'"')
        })
    }

    fn check_size(&self, len: usize) -> Result<(), ArrayError> {
        if len > self.max_element {
            Err(ArrayError::ElementTooLarge {
                cap: self.max_element,
            })
        } else {
            Ok(())
        }
    }

    fn carry(&mut self, piece: &[u8]) -> Result<(), ArrayError> {
        self.check_size(self.carried.len() + piece.len())?;
        self.carried.extend_from_slice(piece);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every element, and how the body ended, fed in the given frames.
    fn split(frames: &[&[u8]], cap: usize) -> (Vec<Vec<u8>>, Result<bool, ArrayError>) {
        let mut splitter = Splitter::new(cap);
        let mut elements = Vec::new();
        for frame in frames {
            if let Err(error) = splitter.feed(frame, |e| elements.push(e.to_vec())) {
                return (elements, Err(error));
            }
        }
        (elements, Ok(splitter.is_closed()))
    }

    #[test]
    fn each_element_says_where_it_begins_in_its_frame() {
        let mut splitter = Splitter::new(64);
        let mut seen = Vec::new();
        for frame in [&b"[{\"a\":1} ,{\"b"[..], &b"\":2}, \"c\"]"[..]] {
            splitter
                .feed_located(frame, |element, start, _| {
                    seen.push((element.to_vec(), start));
                })
                .unwrap();
        }
        let expected: [(&[u8], usize); 3] = [
            (b"{\"a\":1}", 1),
            // Begun in the frame before: 0.
            (b"{\"b\":2}", 0),
            (b"\"c\"", 6),
        ];
        let expected: Vec<(Vec<u8>, usize)> =
            expected.iter().map(|(e, s)| (e.to_vec(), *s)).collect();
        assert_eq!(seen, expected);
    }

    fn whole(body: &[u8], cap: usize) -> (Vec<Vec<u8>>, Result<bool, ArrayError>) {
        split(&[body], cap)
    }

    /// The same body cut at every byte, in two pieces and byte by byte,
    /// splits the same as whole.
    fn same_at_every_boundary(body: &[u8], cap: usize) -> (Vec<Vec<u8>>, Result<bool, ArrayError>) {
        let expected = whole(body, cap);
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(split(&[a, b], cap), expected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(split(&bytes, cap), expected, "byte by byte");
        expected
    }

    const GEMINI: &[u8] = b"[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"w1\"}],\"role\":\"model\"},\"index\":0}]}\r\n,{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" w2\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\r\n]";

    #[test]
    fn gemini_elements_split_alike_at_every_boundary() {
        let (elements, end) = same_at_every_boundary(GEMINI, 1 << 20);
        assert_eq!(end, Ok(true));
        assert_eq!(elements.len(), 2);
        assert!(elements[0].starts_with(b"{\"candidates\"") && elements[0].ends_with(b"}"));
        assert!(elements[1].windows(6).any(|w| w == b"\"STOP\""));
        for element in &elements {
            serde_json::from_slice::<serde::de::IgnoredAny>(element).expect("whole JSON");
        }
    }

    #[test]
    fn brackets_and_escaped_quotes_inside_strings_do_not_end_an_element() {
        let body = br#" [ {"t":"]}[{,\"]\\"} , {"u":"a\\\"}"} ,"s\"]" , 12 ,true,null, [1,[2]] ] "#;
        let (elements, end) = same_at_every_boundary(body, 1 << 20);
        assert_eq!(end, Ok(true));
        let expected: [&[u8]; 7] = [
            br#"{"t":"]}[{,\"]\\"}"#,
            br#"{"u":"a\\\"}"}"#,
            br#""s\"]""#,
            b"12",
            b"true",
            b"null",
            b"[1,[2]]",
        ];
        assert_eq!(elements, expected.map(<[u8]>::to_vec));
    }

    #[test]
    fn an_empty_array_is_closed_and_a_cut_one_is_not() {
        assert_eq!(
            same_at_every_boundary(b"\r\n[ ]\r\n", 64),
            (vec![], Ok(true))
        );
        assert_eq!(same_at_every_boundary(b"[", 64), (vec![], Ok(false)));
        let (elements, end) = same_at_every_boundary(b"[{\"a\":1},{\"b\":", 64);
        assert_eq!((elements, end), (vec![b"{\"a\":1}".to_vec()], Ok(false)));
        assert_eq!(same_at_every_boundary(b"", 64), (vec![], Ok(false)));
    }

    #[test]
    fn a_single_object_is_one_element() {
        let (elements, end) = same_at_every_boundary(b"\xEF\xBB\xBF {\"a\":[\"}\"]}\n", 64);
        assert_eq!(
            (elements, end),
            (vec![b"{\"a\":[\"}\"]}".to_vec()], Ok(true))
        );
    }

    #[test]
    fn framing_errors_have_stable_names() {
        let cases: [(&[u8], &str); 9] = [
            (b"data: {}\n\n", "json_array_not_an_array"),
            (b"<html>", "json_array_not_an_array"),
            (b"\xEF\xBB[]", "json_array_not_an_array"),
            (b"[,{}]", "json_array_unexpected_byte"),
            (b"[{},]", "json_array_unexpected_byte"),
            (b"[{} {}]", "json_array_unexpected_byte"),
            (b"[{},,{}]", "json_array_unexpected_byte"),
            (b"[{}]x", "json_array_trailing_data"),
            (b"{}{}", "json_array_trailing_data"),
        ];
        for (body, name) in cases {
            let (_, end) = same_at_every_boundary(body, 64);
            assert_eq!(end.map_err(ArrayError::as_str), Err(name), "{body:?}");
        }
    }

    #[test]
    fn an_element_over_the_cap_fails_in_one_frame_or_many() {
        let body = b"[{\"a\":\"0123456789\"},{\"b\":\"01234567890123456789\"}]";
        // The first element is 18 bytes, the second 28.
        let (elements, end) = same_at_every_boundary(body, 20);
        assert_eq!(elements, vec![b"{\"a\":\"0123456789\"}".to_vec()]);
        assert_eq!(end, Err(ArrayError::ElementTooLarge { cap: 20 }));
        assert_eq!(same_at_every_boundary(body, 28).1, Ok(true));
        // An element that never ends stops growing at the cap.
        let mut splitter = Splitter::new(1024);
        splitter.feed(b"[\"", |_| {}).unwrap();
        let chunk = [b'x'; 100];
        let mut failed = None;
        for _ in 0..100 {
            if let Err(error) = splitter.feed(&chunk, |_| {}) {
                failed = Some(error);
                break;
            }
            assert!(splitter.buffered() <= 2048);
        }
        assert_eq!(failed, Some(ArrayError::ElementTooLarge { cap: 1024 }));
        assert_eq!(
            splitter.buffered(),
            0,
            "a failed splitter lets its buffer go"
        );
        // And stays failed.
        assert_eq!(splitter.feed(b"]", |_| {}), failed.map_or(Ok(()), Err));
    }

    proptest! {
        #[test]
        fn any_bytes_split_alike_however_framed_and_never_panic(
            body in proptest::collection::vec(
                prop_oneof![
                    Just(b'['), Just(b']'), Just(b'{'), Just(b'}'), Just(b','),
                    Just(b'"'), Just(b'\\'), Just(b' '), Just(b'1'), any::<u8>(),
                ],
                0..64,
            ),
            cuts in proptest::collection::vec(0usize..64, 0..6),
            cap in 1usize..40,
        ) {
            let expected = whole(&body, cap);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            cuts.sort_unstable();
            let mut frames = Vec::new();
            let mut from = 0;
            for cut in cuts {
                frames.push(&body[from..cut]);
                from = cut;
            }
            frames.push(&body[from..]);
            prop_assert_eq!(split(&frames, cap), expected.clone());
            for element in &expected.0 {
                prop_assert!(element.len() <= cap);
            }
        }
    }
}
