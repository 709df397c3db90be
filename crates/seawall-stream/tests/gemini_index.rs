//! A Gemini candidate's `index` written as a float. Google's JSON readers
//! (proto3 JSON mapping, conformance `Int32FieldFloatTrailingZero` and
//! `Int32FieldExponentialFormat`) take an integral float for an `int32`,
//! so `0.0` names the first candidate, whose text is the answer's.

use seawall_stream::Provider;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::{Event, Item};

/// The text and whether a finish came with it, of the one event `data`.
fn decode(decoder: &mut Decoder, data: &str) -> (Option<String>, bool) {
    let item = Item::Event(Event {
        name: b"",
        data: data.as_bytes(),
        start: 0,
        end: data.len(),
    });
    match decoder.decode(item) {
        Signal::Content { text, finish, .. } => (text.map(|t| t.into_owned()), finish.is_some()),
        Signal::Finish(_) => (None, true),
        other => panic!("not content: {other:?}"),
    }
}

fn chunk(index: &str, text: &str, finish: &str) -> String {
    format!(
        r#"{{"candidates":[{{"index":{index},"content":{{"role":"model","parts":[{{"text":"{text}"}}]}}{finish}}}]}}"#
    )
}

#[test]
fn an_integral_float_index_zero_is_the_first_candidate() {
    for zero in ["0", "0.0", "-0", "-0.0", "0e0", "0.000"] {
        let mut decoder = Decoder::new(Provider::Gemini);
        assert_eq!(
            decode(&mut decoder, &chunk(zero, "Hi", "")),
            (Some("Hi".to_owned()), false),
            "index {zero}"
        );
        assert_eq!(
            decode(
                &mut decoder,
                &chunk(zero, " there", r#","finishReason":"STOP""#)
            ),
            (Some(" there".to_owned()), true),
            "index {zero}"
        );
    }
}

/// Another candidate, however written, is still another's text: none of
/// the answer's.
#[test]
fn other_indices_are_other_candidates() {
    for other in ["1", "1.0", "1e0", "0.5", "-1", "-1.0"] {
        let mut decoder = Decoder::new(Provider::Gemini);
        assert_eq!(
            decode(&mut decoder, &chunk(other, "Hi", "")),
            (Some(String::new()), false),
            "index {other}"
        );
    }
}

/// A candidate `0.0` still unfinished keeps the message going when
/// candidate `1.0` finishes: both are seen, one has finished.
#[test]
fn a_float_indexed_candidate_is_waited_for() {
    let mut decoder = Decoder::new(Provider::Gemini);
    let both = r#"{"candidates":[{"index":0.0,"content":{"role":"model","parts":[{"text":"Hi"}]}},{"index":1.0,"content":{"role":"model","parts":[{"text":"Yo"}]},"finishReason":"STOP"}]}"#;
    assert_eq!(decode(&mut decoder, both), (Some("Hi".to_owned()), false));
    assert_eq!(
        decode(
            &mut decoder,
            &chunk("0.0", "!", r#","finishReason":"STOP""#)
        ),
        (Some("!".to_owned()), true)
    );
}
