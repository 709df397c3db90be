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

/// `text` with every URL in it shown without its userinfo and query:
/// keys travel there (Gemini's `?key=`, a base URL's `user:key@`), and an
/// HTTP client's error names the URL it failed on (reqwest: "error sending
/// request for url (…)"). A URL runs from its scheme to the first white
/// space, quote or bracket — except an IP literal's brackets
/// (`http://[::1]:8080/`, `http://user:key@[::1]/`), which belong to the
/// authority; its query runs to the fragment or that end. Borrowed when
/// there is nothing to take out.
pub fn without_url_secrets(text: &str) -> std::borrow::Cow<'_, str> {
    const END: &[u8] = b" \t\r\n\"'<>()[]{},";
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = memchr::memmem::find(&bytes[from..], b"://") {
        let authority_start = from + found + 3;
        let url_end = url_end(bytes, authority_start, END);
        let url = &bytes[authority_start..url_end];
        let authority_len = url
            .iter()
            .position(|&b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(url.len());
        // Userinfo: up to the last `@` of the authority.
        let userinfo = url[..authority_len]
            .iter()
            .rposition(|&b| b == b'@')
            .map(|at| authority_start..authority_start + at + 1);
        // Query: from `?` to the fragment or the URL's end.
        let query = url.iter().position(|&b| b == b'?').map(|at| {
            let end = url[at..]
                .iter()
                .position(|&b| b == b'#')
                .map_or(url.len(), |hash| at + hash);
            authority_start + at..authority_start + end
        });
        for cut in [userinfo, query].into_iter().flatten() {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..cut.start]);
            copied = cut.end;
        }
        from = url_end.max(authority_start);
        if from >= bytes.len() {
            break;
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            std::borrow::Cow::Owned(out)
        }
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// Where the URL whose authority begins at `authority_start` ends: at the
/// first byte of `end`, except that a `[` opening the host (right after
/// `://` or the userinfo's `@`) runs to its `]`, for an IPv6 literal would
/// otherwise end the URL before the query that holds the key. Such a `[`
/// left unclosed (before an ending byte) does not end the URL either:
/// taking too much out of a message costs less than showing a key.
fn url_end(bytes: &[u8], authority_start: usize, end: &[u8]) -> usize {
    let mut at = authority_start;
    let mut in_authority = true;
    while let Some(&b) = bytes.get(at) {
        if b == b'[' && in_authority && (at == authority_start || bytes[at - 1] == b'@') {
            let closed = bytes[at + 1..]
                .iter()
                .position(|b| end.contains(b))
                .filter(|&close| bytes[at + 1 + close] == b']');
            at += closed.map_or(1, |close| close + 2);
            continue;
        }
        if end.contains(&b) {
            return at;
        }
        if matches!(b, b'/' | b'?' | b'#') {
            in_authority = false;
        }
        at += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo_and_query() {
        let cases = [
            (
                "error sending request for url (https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIzaSECRET&alt=sse): connection refused",
                "error sending request for url (https://generativelanguage.googleapis.com/v1beta/models/g:generateContent): connection refused",
            ),
            (
                "connect to http://user:sk-SECRET@host:8080/v1/chat failed",
                "connect to http://host:8080/v1/chat failed",
            ),
            (
                "see https://a.example/x?q=1#frag then",
                "see https://a.example/x#frag then",
            ),
            (
                "two http://a/?k=1 and http://b/?k=2",
                "two http://a/ and http://b/",
            ),
            ("no url here, just text", "no url here, just text"),
            ("a scheme at the end://", "a scheme at the end://"),
            (
                "error sending request for url (http://[::1]:8080/v1?key=SECRET): refused",
                "error sending request for url (http://[::1]:8080/v1): refused",
            ),
            (
                "connect to http://user:SECRET@[::1]/v1 failed",
                "connect to http://[::1]/v1 failed",
            ),
            (
                "http://[fe80::1%25eth0]:1/x?key=SECRET#f",
                "http://[fe80::1%25eth0]:1/x#f",
            ),
            ("(see https://x/y?key=s) then", "(see https://x/y) then"),
            ("[https://x?key=s]", "[https://x]"),
            (
                "see [https://x/a?key=s] and (https://y/b?key=t), http://[::1]/c?key=u.",
                "see [https://x/a] and (https://y/b), http://[::1]/c",
            ),
            // A host's bracket never closed does not end the URL early.
            ("http://[::1?key=s", "http://[::1"),
        ];
        for (text, shown) in cases {
            assert_eq!(without_url_secrets(text), shown, "{text}");
        }
        assert!(matches!(
            without_url_secrets("https://docs.example/rate-limits"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

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
