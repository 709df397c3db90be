//! The event-stream scanner through its public interface: CRLF line ends
//! within and across frames, and the memory it reports holding.

use seawall_stream::sse::{Item, ScanError, Scanner};

/// Events (name, data) and comments, as owned strings.
fn scan(scanner: &mut Scanner, frames: &[&[u8]]) -> Vec<String> {
    let mut out = Vec::new();
    for frame in frames {
        scanner
            .feed(frame, |item| {
                out.push(match item {
                    Item::Event(e) => format!(
                        "event {:?} {:?}",
                        String::from_utf8_lossy(e.name),
                        String::from_utf8_lossy(e.data)
                    ),
                    Item::Comment(c) => format!("comment {:?}", String::from_utf8_lossy(c)),
                    Item::Stray { line, start } => {
                        format!("stray {:?} at {start}", String::from_utf8_lossy(line))
                    }
                })
            })
            .unwrap();
    }
    out
}

/// A CRLF is one line end: the data lines around it belong to one event.
#[test]
fn crlf_inside_a_frame_is_one_line_end() {
    let frames: &[&[u8]] = &[b"event: e\r\ndata: a\r\ndata: b\r\n\r\n: c\r\n"];
    assert_eq!(
        scan(&mut Scanner::default(), frames),
        [r#"event "e" "a\nb""#, r#"comment " c""#]
    );
}

/// A CR ending one frame and an LF starting the next are one line end too,
/// however the rest of the next frame goes on.
#[test]
fn crlf_split_across_frames_is_one_line_end() {
    let frames: &[&[u8]] = &[b"data: a\r", b"\ndata: b\r", b"\n\r\n"];
    assert_eq!(
        scan(&mut Scanner::default(), frames),
        [r#"event "" "a\nb""#]
    );
    // An empty frame between the halves changes nothing.
    let frames: &[&[u8]] = &[b"data: a\r", b"", b"\ndata: b\n\n"];
    assert_eq!(
        scan(&mut Scanner::default(), frames),
        [r#"event "" "a\nb""#]
    );
    // A CR followed by anything else is a line end of its own.
    let frames: &[&[u8]] = &[b"data: a\r", b"data: b\r\r"];
    assert_eq!(
        scan(&mut Scanner::default(), frames),
        [r#"event "" "a\nb""#]
    );
}

/// What the scanner holds between frames — a cut line, an event's copied
/// data, its name — is counted, and not much more than that.
#[test]
fn buffered_counts_what_is_held_between_frames() {
    let mut scanner = Scanner::default();
    assert_eq!(scanner.buffered(), 0, "nothing held yet");
    scan(&mut scanner, &[b"event: xyz\ndata: aaaa\ndata: bbb"]);
    // The name (3 bytes), the copied first data line (4) and the cut
    // line (`data: bbb`, 9) are held.
    let held = scanner.buffered();
    assert!(held >= 3 + 4 + 9, "{held}");
    assert!(held <= 64, "{held}");
    assert_eq!(
        scan(&mut scanner, &[b"\n\n"]),
        [r#"event "xyz" "aaaa\nbbb""#]
    );
}

#[test]
fn errors_have_stable_names_and_their_cap() {
    let mut scanner = Scanner::new(8, 8);
    let error = scanner.feed(b"data: 0123456789", |_| {}).unwrap_err();
    assert_eq!(error, ScanError::LineTooLong { cap: 8 });
    assert_eq!(error.as_str(), "sse_line_too_long");
    assert_eq!(error.to_string(), "event-stream line longer than 8 bytes");
    let mut scanner = Scanner::new(64, 8);
    let error = scanner
        .feed(b"data: 01234\ndata: 5678\n", |_| {})
        .unwrap_err();
    assert_eq!(error, ScanError::EventTooLarge { cap: 8 });
    assert_eq!(error.as_str(), "sse_event_too_large");
    assert_eq!(error.to_string(), "event-stream event larger than 8 bytes");
    // A line that is no data: no answer's part, a broken stream.
    for frames in [
        &[&b": 0123456789"[..]][..],
        &[b"da", b"ta0123456789"],
        &[b"{\"error\": 1234"],
    ] {
        let mut scanner = Scanner::new(8, 8);
        let error = frames
            .iter()
            .find_map(|frame| scanner.feed(frame, |_| {}).err())
            .unwrap();
        assert_eq!(error, ScanError::OtherLineTooLong { cap: 8 }, "{frames:?}");
        assert_eq!(error.as_str(), "sse_other_line_too_long");
    }
    let mut scanner = Scanner::new(8, 8);
    scanner.feed(b"da", |_| {}).unwrap();
    let error = scanner.feed(b"ta: 0123456789", |_| {}).unwrap_err();
    assert_eq!(error, ScanError::LineTooLong { cap: 8 });
}

/// A line of exactly the cap is accepted, in the frame or carried over
/// frames; one byte more is not.
#[test]
fn a_line_of_exactly_the_cap_is_accepted() {
    let mut scanner = Scanner::new(8, 64);
    assert_eq!(scan(&mut scanner, &[b"data: ab\n\n"]), [r#"event "" "ab""#]);
    let mut scanner = Scanner::new(8, 64);
    assert_eq!(
        scan(&mut scanner, &[b"data", b": ab", b"\n\n"]),
        [r#"event "" "ab""#]
    );
    let mut scanner = Scanner::new(8, 64);
    assert_eq!(
        scanner.feed(b"data: abc\n", |_| {}),
        Err(ScanError::LineTooLong { cap: 8 })
    );
    let mut scanner = Scanner::new(8, 64);
    scanner.feed(b"data: ab", |_| {}).unwrap();
    assert_eq!(
        scanner.feed(b"c", |_| {}),
        Err(ScanError::LineTooLong { cap: 8 })
    );
}

/// An event's data of exactly the cap (its lines joined by `\n`) is
/// accepted; a first data line alone past the cap is not.
#[test]
fn an_event_of_exactly_the_cap_is_accepted() {
    let mut scanner = Scanner::new(64, 8);
    assert_eq!(
        scan(&mut scanner, &[b"data: 0123\ndata: 567\n\n"]),
        [r#"event "" "0123\n567""#]
    );
    let mut scanner = Scanner::new(64, 8);
    assert_eq!(
        scanner.feed(b"data: 012345678\n", |_| {}),
        Err(ScanError::EventTooLarge { cap: 8 })
    );
    let mut scanner = Scanner::new(64, 8);
    assert_eq!(
        scanner.feed(b"data: 0123\ndata: 5678\n", |_| {}),
        Err(ScanError::EventTooLarge { cap: 8 })
    );
}

/// An event without data is dropped, as WHATWG's parser drops it, but for
/// one named `error`: the SDKs dispatch it and raise on it.
#[test]
fn an_error_event_without_data_is_dispatched() {
    let frames: &[&[u8]] = &[b"event: ping\n\nevent: error\n\ndata: x\n\n"];
    assert_eq!(
        scan(&mut Scanner::default(), frames),
        [r#"event "error" """#, r#"event "" "x""#]
    );
}
