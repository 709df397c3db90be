//! The event-stream scanner and every protocol's decoder on arbitrary
//! bytes: no panic, buffers within the caps, and the same meaning however
//! the bytes are framed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seawall_stream::Provider;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::{ScanError, Scanner};

const CAP: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    let protocol = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Http,
    ][usize::from(selector & 3)];
    let frame = usize::from(selector >> 2) + 1;
    let whole = run(protocol, &[stream]);
    let framed: Vec<&[u8]> = stream.chunks(frame).collect();
    assert_eq!(whole, run(protocol, &framed));
});

/// What the decoder made of the stream, in a comparable form, and the
/// scanner's error if it stopped.
fn run(protocol: Provider, frames: &[&[u8]]) -> (Vec<String>, Option<ScanError>) {
    let mut scanner = Scanner::new(CAP, CAP);
    let mut decoder = Decoder::new(protocol);
    let mut seen = Vec::new();
    for frame in frames {
        let fed = scanner.feed(frame, |item| {
            seen.push(match decoder.decode(item) {
                // Failures carry wall-clock times (quota resets): compare
                // what they mean, not when they were made.
                Signal::Error(failure) => format!("error {} {}", failure.code(), failure.class()),
                other => format!("{other:?}"),
            });
        });
        // Line, event data and name, each at most its cap (capacity may
        // round up to twice).
        assert!(scanner.buffered() <= 6 * CAP);
        if let Err(error) = fed {
            return (seen, Some(error));
        }
    }
    (seen, None)
}
