//! Proptest strategies for JSON-shaped texts: mostly valid, now and then
//! doubtful (escapes serde must judge, numbers and literals cut short,
//! members twice, escaped keys), for the differential tests that hold the
//! JSON cursor to serde's answers (the stream decoders' and the unary
//! answer checks').

use proptest::prelude::*;

/// A JSON string, now and then with a doubtful escape or a raw control
/// character.
pub fn string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => prop::sample::select(vec![
            "a", "é", " ", "😀", "\u{7f}", "\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b",
            "\\u00e9", "\\u0000", "\\ud83d\\ude00",
        ]),
        1 => prop::sample::select(vec!["\\ud83d", "\\ude00", "\\x", "\\u12", "\t", "\n"]),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|parts| format!("\"{}\"", parts.concat()))
}

/// Any JSON-ish value, mostly valid.
pub fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        4 => prop::sample::select(vec![
            "null", "true", "false", "0", "-1", "12.5", "1e9", "-0.0E-3", "[]", "{}",
        ])
        .prop_map(str::to_owned),
        1 => prop::sample::select(vec!["01", "1.", "-", "1e", "nul", "tru", "+1"])
            .prop_map(str::to_owned),
        4 => string(),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((prop::sample::select(vec!["a", "b", "index"]), inner), 0..3)
                .prop_map(|members| object(members.into_iter().map(|(k, v)| (k.to_owned(), v)))),
        ]
    })
}

/// An object of `members`, in their order (keys as given, unescaped).
pub fn object(members: impl Iterator<Item = (String, String)>) -> String {
    let members: Vec<_> = members.map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", members.join(","))
}

/// An object with some of `fields` (each with its own value strategy),
/// in any order, sometimes twice, plus unknown members.
pub fn members(fields: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<String> {
    let chosen: Vec<_> = fields
        .into_iter()
        .map(|(key, value)| {
            prop::option::weighted(0.7, value.prop_map(move |v| (key.to_owned(), v)))
        })
        .collect();
    let extra = prop::collection::vec(
        (
            prop::sample::select(vec!["id", "role", "index", "logprobs", "choi\\u0063es"]),
            value(),
        ),
        0..3,
    );
    (chosen, extra, any::<prop::sample::Index>(), any::<u8>())
        .prop_map(|(chosen, extra, at, twice)| {
            let mut members: Vec<_> = chosen.into_iter().flatten().collect();
            members.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v)));
            if !members.is_empty() {
                let i = at.index(members.len());
                // Shuffle a little: rotate, and now and then repeat one.
                members.rotate_left(i);
                if twice < 16 {
                    members.push(members[0].clone());
                }
            }
            object(members.into_iter())
        })
        .boxed()
}

/// `value`, or `null`, or now and then any other value.
pub fn nullable(value: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![1 => Just("null".to_owned()), 4 => value, 1 => self::value()].boxed()
}

/// An OpenAI message or delta object: some of the fields that say what
/// it holds (`content`, `refusal`, `tool_calls`, `function_call`,
/// `audio`), each with any value now and then.
pub fn openai_message() -> BoxedStrategy<String> {
    members(vec![
        ("content", nullable(string().boxed())),
        ("refusal", nullable(string().boxed())),
        ("tool_calls", value().boxed()),
        ("function_call", value().boxed()),
        ("audio", value().boxed()),
        // Where compatible servers stream a reasoning model's thinking.
        ("reasoning_content", nullable(string().boxed())),
        ("reasoning", value().boxed()),
    ])
}

/// An array of `element`s, mostly of one, now and then of none or two, or
/// `null`, or any other value.
pub fn array_of(element: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just("null".to_owned()),
        1 => Just("[]".to_owned()),
        6 => element.clone().prop_map(|e| format!("[{e}]")),
        2 => (element.clone(), element).prop_map(|(a, b)| format!("[{a},{b}]")),
        1 => value(),
    ]
    .boxed()
}

/// `text` with `put` put in at `at` (moved back to a character
/// boundary), or else, when `cut`, the character there cut out.
pub fn damaged(mut text: String, at: prop::sample::Index, put: Option<char>, cut: bool) -> String {
    let mut at = at.index(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    match put {
        Some(c) => text.insert(at, c),
        None if cut => {
            text.remove(at);
        }
        None => {}
    }
    text
}

/// A text of `text`, maybe with one byte cut out or one character put
/// in, and maybe spaced out.
pub fn mutated(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (
        text,
        any::<prop::sample::Index>(),
        prop::option::weighted(
            0.2,
            prop::sample::select(vec!['{', '}', '[', ']', ',', ':', '"', '\\', ' ', 'n', '0']),
        ),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(text, at, put, cut, spaced)| {
            let text = if spaced {
                text.replace(',', " ,\n ").replace(':', " : ")
            } else {
                text
            };
            damaged(text, at, put, cut)
        })
}
