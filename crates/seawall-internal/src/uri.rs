//! Checks on a URL a user gives as where requests go: a base URL, a route
//! set member's origin.
//!
//! `http`'s parser checks an authority's characters but not its port:
//! `http://127.0.0.1:80800` parses, [`Authority::port`] then reads `None`
//! (the port does not fit a `u16`), and hyper's connector, seeing no port,
//! connects to the scheme's default (80 or 443). The line that names the
//! URL shows `:80800` while the request — with its key — goes to `:80`.
//! So a port part that is not a port refuses the URL where it is given.

use http::uri::Authority;

/// Why `authority`'s port part is not a port a connection can go to, or
/// `None` when it is one or there is none (`host` alone: the scheme's
/// default port).
///
/// Refused, each with its own message (which never quotes the URL: it may
/// carry a secret):
///
/// - a port past 65535 (`:80800`), or one that is not all digits (`:abc`,
///   `:-1`, `:+80`): `http` reads no port there, and the request would go
///   to the scheme's default port instead of the one written;
/// - an empty port (`host:`). RFC 3986 allows it and it means the default
///   port, but in a URL someone typed it is far more often a port lost on
///   the way (`http://host:$PORT` with `PORT` unset), and the key would go
///   to port 80 or 443 unasked. Leaving out the `:` says the default
///   plainly;
/// - port 0, which nothing can be connected to;
/// - anything but `:PORT` after an IPv6 host's `]` (`[::1]abc`), which
///   `http` accepts and reads as no port.
///
/// Leading zeros are digits: `:080` is port 80, as `http` reads it.
///
/// ```
/// use http::Uri;
/// use seawall_internal::uri::port_error;
///
/// let port = |url: &str| port_error(url.parse::<Uri>().unwrap().authority().unwrap());
/// assert_eq!(port("https://api.example.com"), None);
/// assert_eq!(port("http://[::1]:8080/v1"), None);
/// assert!(port("http://127.0.0.1:80800").is_some());
/// ```
pub fn port_error(authority: &Authority) -> Option<&'static str> {
    let text = authority.as_str();
    // Userinfo may hold `:` (`user:secret@`): the host starts after the
    // last `@`, as `http` reads it.
    let host_port = text.rsplit_once('@').map_or(text, |(_, rest)| rest);
    let after_host = match host_port.strip_prefix('[') {
        // The parser has checked that brackets pair up; an IPv6 host's
        // colons are inside them.
        Some(inside) => inside.split_once(']').map_or("", |(_, rest)| rest),
        // A name or an IPv4 address has no `:` of its own: the first one
        // starts the port, as `http`'s `host()` ends the host there.
        None => host_port.find(':').map_or("", |colon| &host_port[colon..]),
    };
    if after_host.is_empty() {
        return None;
    }
    let Some(port) = after_host.strip_prefix(':') else {
        return Some("only `:PORT` may follow an IPv6 host's `]`");
    };
    if port.is_empty() {
        return Some(
            "the port after `:` is empty; leave out the `:` for the scheme's default port",
        );
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Some("the port is not a number (1 to 65535)");
    }
    // All digits: the only way left to fail is to be too large.
    match port.parse::<u16>() {
        Ok(0) => Some("port 0 cannot be connected to (a port is 1 to 65535)"),
        Ok(_) => None,
        Err(_) => Some("the port is past 65535"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(url: &str) -> Authority {
        let uri: http::Uri = url.parse().unwrap();
        uri.authority().unwrap().clone()
    }

    /// What this module is for: `http` parses each of these and reads no
    /// port (or port 0), so a connector goes to the scheme's default port.
    #[test]
    fn http_reads_no_port_where_one_was_written() {
        for written in ["80800", "", "abc", "-1", "65536", "99999999999"] {
            let authority = authority(&format!("http://127.0.0.1:{written}/v1"));
            assert_eq!(authority.port().map(|p| p.as_u16()), None, "{written}");
            assert_eq!(authority.port_u16(), None, "{written}");
        }
        assert_eq!(authority("http://[::1]abc/").port_u16(), None);
        assert_eq!(authority("http://u:p@h:99999").port_u16(), None);
        assert_eq!(authority("http://127.0.0.1:0").port_u16(), Some(0));
        assert_eq!(authority("http://127.0.0.1:65535").port_u16(), Some(65535));
        assert_eq!(authority("http://127.0.0.1:+80").port_u16(), Some(80));
    }

    #[test]
    fn ports_that_are_ports_pass() {
        for url in [
            "http://127.0.0.1",
            "http://127.0.0.1:1",
            "http://127.0.0.1:65535/v1",
            "http://127.0.0.1:080",
            "https://api.example.com",
            "https://api.example.com:8443/openai",
            "http://[::1]",
            "http://[::1]:8080",
            "http://[fe80::1:2:3]:443",
            "http://user:secret@host",
            "http://user:secret@host:8080",
            "http://u:p@[::1]:1",
        ] {
            assert_eq!(port_error(&authority(url)), None, "{url}");
        }
    }

    #[test]
    fn ports_that_are_not_are_refused_without_quoting_the_url() {
        for (url, said) in [
            ("http://127.0.0.1:80800", "past 65535"),
            ("http://127.0.0.1:65536/v1", "past 65535"),
            ("http://127.0.0.1:999999999999999999999", "past 65535"),
            ("http://127.0.0.1:", "empty"),
            ("http://127.0.0.1:/v1", "empty"),
            ("http://127.0.0.1:abc", "not a number"),
            ("http://127.0.0.1:-1", "not a number"),
            ("http://127.0.0.1:+80", "not a number"),
            ("http://127.0.0.1:0", "port 0"),
            ("http://127.0.0.1:00000", "port 0"),
            ("http://[::1]:99999", "past 65535"),
            ("http://[::1]:", "empty"),
            ("http://[::1]abc", "IPv6"),
            ("http://user:secret@host:80800", "past 65535"),
            ("http://user:secret@host:", "empty"),
            // `http` reads the host as `a[`: not an IPv6 host, and what
            // follows its first `:` is no port.
            ("http://a[::1]:80", "not a number"),
        ] {
            let why = port_error(&authority(url)).unwrap_or_else(|| panic!("{url} passed"));
            assert!(why.contains(said), "{url}: {why}");
            assert!(!why.contains("secret") && !why.contains("127"), "{why}");
        }
    }
}
