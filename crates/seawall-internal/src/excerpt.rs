/// The longest prefix of `text` of at most `max` bytes that ends on a
/// character boundary: a bounded piece of text someone else wrote (a
/// provider's message, a client's header) for a log, an error or a
/// journal row.
///
/// ```
/// use seawall_internal::excerpt;
///
/// assert_eq!(excerpt("héllo", 2), "h");
/// assert_eq!(excerpt("hello", 64), "hello");
/// ```
pub fn excerpt(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_splits_a_character() {
        let text = "a€b";
        for max in 0..=text.len() + 1 {
            let cut = excerpt(text, max);
            assert!(cut.len() <= max);
            assert!(text.starts_with(cut));
        }
        assert_eq!(excerpt(text, 3), "a");
        assert_eq!(excerpt(text, 4), "a€");
    }
}
