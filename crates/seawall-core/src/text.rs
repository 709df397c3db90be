//! Case-insensitive search in provider messages, without lowercasing a
//! copy of the message for every phrase looked for.

/// The first index at which `needle` occurs in `haystack`, ignoring ASCII
/// case. Candidate positions are found by the needle's first byte, in
/// either case, with `memchr2`, so the cost stays near linear in the
/// haystack.
pub(crate) fn find_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (first, rest) = needle.split_first()?;
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let last_start = haystack.len().checked_sub(needle.len())?;
    let mut from = 0;
    while from <= last_start {
        let at = from + memchr::memchr2(lower, upper, &haystack[from..=last_start])?;
        if haystack[at + 1..at + needle.len()].eq_ignore_ascii_case(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Whether `needle` occurs in `haystack`, ignoring ASCII case.
pub(crate) fn contains_ci(haystack: &str, needle: &str) -> bool {
    find_ci(haystack.as_bytes(), needle.as_bytes()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_regardless_of_case_and_position() {
        assert_eq!(
            find_ci(b"Please TRY again in 2s", b"try again in "),
            Some(7)
        );
        assert_eq!(find_ci(b"try", b"try again"), None);
        assert_eq!(find_ci(b"", b"x"), None);
        assert_eq!(find_ci(b"abc", b""), None);
        assert!(contains_ci(
            "Prompt is too long: 210000 tokens",
            "prompt is too long"
        ));
        assert!(!contains_ci("prompt is short", "prompt is too long"));
        assert_eq!(find_ci(b"aXbxc", b"xc"), Some(3));
        assert_eq!(find_ci(b"xx", b"xx"), Some(0));
        assert_eq!(find_ci(b"axx", b"XX"), Some(1));
    }
}
