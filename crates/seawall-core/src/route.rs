use std::fmt;
use std::sync::{Arc, OnceLock};

/// The longest name a caller's request may make a table keep for the
/// process's life, in bytes: a breaker's route under a route function
/// keyed by the request's model, resume's learned continuation styles.
/// The name is the caller's to write, bounded only by the body's size,
/// and a table of a thousand names of megabytes each would pin
/// gigabytes; real names (authorities, model names) are tens of bytes. A
/// longer name is not kept: the call goes as without the table.
pub const MAX_KEPT_NAME: usize = 256;

/// The identity of a route: one provider endpoint (and optionally model)
/// whose health is tracked as a unit.
///
/// Cheap to clone (an `Arc<str>`). A caller may put one in the request
/// extensions; otherwise layers derive it from the URI authority with
/// [`RouteId::of_request`].
///
/// A derived name is the authority's `host:port` only: never the userinfo
/// (`user:password@`, where a key in a base URL would sit), nor a path or
/// query. Route names end up in receipts, logs, errors and metric labels.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(Arc<str>);

impl RouteId {
    /// A route with the given name.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        RouteId(name.into())
    }

    /// The route's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The route's name, shared (a reference count, no copy): for metric
    /// labels and other owners.
    pub fn to_shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }

    /// The route's name as OpenTelemetry's `server.address` and
    /// `server.port` want it: a `host:port` name split in two (an IPv6
    /// host without its brackets), any other name (a host alone, a name
    /// of the user's own) whole and no port.
    pub fn address<'a>(&'a self) -> (&'a str, Option<u16>) {
        let name = self.as_str();
        let unbracketed = |host: &'a str| {
            host.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host)
        };
        let Some((host, port)) = name.rsplit_once(':') else {
            return (name, None);
        };
        match port.parse::<u16>() {
            // `::1` alone has colons too: a bare IPv6 host has no port.
            Ok(port) if !host.contains(':') => (host, Some(port)),
            Ok(port) if host.starts_with('[') && host.ends_with(']') => {
                (unbracketed(host), Some(port))
            }
            _ => (unbracketed(name), None),
        }
    }

    /// The route of a URI: its authority's `host:port`, without any
    /// `user:password@` in front, or `"default"` for a URI without one.
    pub fn from_uri(uri: &http::Uri) -> Self {
        RouteId::new(name_of_uri(uri))
    }

    /// The name of the route a request goes to, borrowed: what
    /// [`RouteId::of_request`] would name, without allocating. Layers on
    /// the success path compare this against a cached route.
    pub fn name_of_request<B>(request: &http::Request<B>) -> &str {
        match request.extensions().get::<RouteId>() {
            Some(route) => route.as_str(),
            None => name_of_uri(request.uri()),
        }
    }

    /// The route a request goes to: the `RouteId` in its extensions when the
    /// caller set one, else the URI's authority.
    pub fn of_request<B>(request: &http::Request<B>) -> Self {
        RouteId::of_head(request.extensions(), request.uri())
    }

    /// The route of a request known by its parts (a layer that sees only
    /// the head): the `RouteId` in `extensions`, else `uri`'s authority —
    /// the one rule every layer names routes by.
    pub fn of_head(extensions: &http::Extensions, uri: &http::Uri) -> Self {
        extensions
            .get::<RouteId>()
            .cloned()
            .unwrap_or_else(|| RouteId::from_uri(uri))
    }

    /// [`RouteId::of_request`], sharing the name kept in `first` when the
    /// request goes to that route (and keeping its route there when `first`
    /// is empty): a service that remembers the first route it called names
    /// later requests to it without allocating, since a client usually
    /// talks to one provider. Other routes cost their own name.
    pub fn of_request_sharing<B>(request: &http::Request<B>, first: &OnceLock<RouteId>) -> Self {
        let name = RouteId::name_of_request(request);
        match first.get() {
            Some(known) if known.as_str() == name => known.clone(),
            Some(_) => RouteId::of_request(request),
            None => first.get_or_init(|| RouteId::of_request(request)).clone(),
        }
    }
}

/// The route name of a URI, borrowed from it: the authority after its last
/// `@` (a host cannot contain one; userinfo can, so the last one ends it),
/// or `"default"` without an authority. Never the path or query: they are
/// not part of the authority.
fn name_of_uri(uri: &http::Uri) -> &str {
    match uri.authority() {
        Some(authority) => {
            let authority = authority.as_str();
            // A byte search: `str::rfind` with a char pattern goes through
            // the generic searcher on every call of the ladder (callgrind:
            // the route lookup took about 660 instructions a call with it,
            // under 200 without).
            authority
                .bytes()
                .rposition(|byte| byte == b'@')
                .map_or(authority, |at| &authority[at + 1..])
        }
        None => "default",
    }
}

/// A URI as seawall shows it in errors and logs: scheme, host, port and
/// path — never the userinfo (a key in a base URL) nor the query (keys
/// travel there too, e.g. Gemini's `?key=`).
#[derive(Clone, Copy)]
pub struct ShownUri<'a>(pub &'a http::Uri);

impl fmt::Display for ShownUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let uri = self.0;
        if let Some(scheme) = uri.scheme_str() {
            write!(f, "{scheme}://")?;
        }
        if uri.authority().is_some() {
            f.write_str(name_of_uri(uri))?;
        }
        f.write_str(uri.path())
    }
}

impl fmt::Debug for ShownUri<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl fmt::Debug for RouteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for RouteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for RouteId {
    fn from(name: &str) -> Self {
        RouteId::new(name)
    }
}

#[cfg(test)]
mod shown_tests {
    use super::ShownUri;

    #[test]
    fn a_shown_uri_keeps_no_secret() {
        let uri: http::Uri = "https://sk-user:sk-secret@api.example.com:8443/v1beta/models/g:generateContent?key=AIzaSECRET"
            .parse()
            .unwrap();
        let shown = ShownUri(&uri).to_string();
        assert_eq!(
            shown,
            "https://api.example.com:8443/v1beta/models/g:generateContent"
        );
        let relative: http::Uri = "/v1/chat/completions?x=1".parse().unwrap();
        assert_eq!(ShownUri(&relative).to_string(), "/v1/chat/completions");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_shares_the_first_route_and_names_others() {
        let cache = OnceLock::new();
        let a = http::Request::get("http://a.example/x").body(()).unwrap();
        let b = http::Request::get("http://b.example/x").body(()).unwrap();
        let first = RouteId::of_request_sharing(&a, &cache);
        let again = RouteId::of_request_sharing(&a, &cache);
        assert!(
            Arc::ptr_eq(&first.0, &again.0),
            "the first route's name is shared"
        );
        assert_eq!(
            RouteId::of_request_sharing(&b, &cache).as_str(),
            "b.example"
        );
        assert_eq!(
            RouteId::of_request_sharing(&a, &cache).as_str(),
            "a.example"
        );
        let mut named = http::Request::get("http://a.example/x").body(()).unwrap();
        named.extensions_mut().insert(RouteId::new("primary"));
        assert_eq!(
            RouteId::of_request_sharing(&named, &cache).as_str(),
            "primary"
        );
    }

    /// Every way of naming a request's route, for a URI.
    fn names(uri: &str) -> [String; 4] {
        let request = http::Request::get(uri).body(()).unwrap();
        [
            RouteId::from_uri(request.uri()).as_str().to_owned(),
            RouteId::name_of_request(&request).to_owned(),
            RouteId::of_request(&request).as_str().to_owned(),
            RouteId::of_request_sharing(&request, &OnceLock::new())
                .as_str()
                .to_owned(),
        ]
    }

    #[test]
    fn route_names_never_carry_userinfo_path_or_query() {
        for (uri, name) in [
            ("http://key:secret@host:8080/v1", "host:8080"),
            ("http://user@host", "host"),
            ("http://@host/x", "host"),
            ("https://u:p@ss@host:443/v1?key=secret", "host:443"),
            ("http://host:8080/v1?key=secret#frag", "host:8080"),
            ("http://[::1]:8080/v1", "[::1]:8080"),
            ("http://key:secret@[::1]:8080/v1", "[::1]:8080"),
            ("http://user@[fe80::1%25eth0]/v1", "[fe80::1%25eth0]"),
            ("http://a%40b:c%40d@host/", "host"),
        ] {
            assert_eq!(names(uri), [name; 4].map(String::from), "{uri}");
        }
    }

    #[test]
    fn the_borrowed_name_is_a_slice_of_the_uri() {
        let request = http::Request::get("http://key:secret@host:8080/v1")
            .body(())
            .unwrap();
        let name = RouteId::name_of_request(&request);
        let authority = request.uri().authority().unwrap().as_str();
        assert_eq!(name, "host:8080");
        assert!(authority.as_bytes().as_ptr_range().contains(&name.as_ptr()));
    }

    #[test]
    fn the_cache_never_shares_a_name_with_userinfo() {
        let cache = OnceLock::new();
        let plain = http::Request::get("http://host:8080/v1").body(()).unwrap();
        let keyed = http::Request::get("http://k:s@host:8080/v1")
            .body(())
            .unwrap();
        let first = RouteId::of_request_sharing(&keyed, &cache);
        let again = RouteId::of_request_sharing(&plain, &cache);
        assert_eq!(first.as_str(), "host:8080");
        assert!(Arc::ptr_eq(&first.0, &again.0), "one route, one name");
    }

    proptest::proptest! {
        /// Userinfo of any allowed characters, with one `@` or more in it,
        /// in front of a name, an IPv6 literal, with or without a port.
        #[test]
        fn no_route_name_contains_an_at_sign(
            user in "[A-Za-z0-9._~!$&'()*+,;=:%-]{0,24}",
            ats in 1usize..3,
            host in "([a-z0-9-]{1,20}(\\.[a-z0-9-]{1,10}){0,2}|\\[[0-9a-f:]{2,20}\\])",
            port in proptest::option::of(1u16..),
            rest in "(/[a-z0-9?=&]{0,12}){0,3}",
        ) {
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let userinfo = vec![user.as_str(); ats].join("@");
            let uri = format!("http://{userinfo}@{host}{port}{rest}");
            let expected = format!("{host}{port}");
            for name in &names(&uri) {
                proptest::prop_assert!(!name.contains('@'), "{} from {}", name, uri);
                proptest::prop_assert_eq!(name, &expected);
            }
        }
    }

    #[test]
    fn extension_wins_over_authority() {
        let mut request = http::Request::get("https://api.example.com:443/v1/x")
            .body(())
            .unwrap();
        assert_eq!(
            RouteId::of_request(&request).as_str(),
            "api.example.com:443"
        );
        request.extensions_mut().insert(RouteId::new("primary"));
        assert_eq!(RouteId::of_request(&request).as_str(), "primary");
        assert_eq!(RouteId::name_of_request(&request), "primary");
        let relative = http::Request::get("/v1/x").body(()).unwrap();
        assert_eq!(RouteId::of_request(&relative).as_str(), "default");
        assert_eq!(RouteId::name_of_request(&relative), "default");
    }

    #[test]
    fn an_address_is_the_host_and_the_port() {
        for (name, address) in [
            ("api.openai.com", ("api.openai.com", None)),
            ("127.0.0.1:8080", ("127.0.0.1", Some(8080))),
            ("[::1]:443", ("::1", Some(443))),
            ("::1", ("::1", None)),
            ("[2001:db8::1]", ("2001:db8::1", None)),
            ("spare", ("spare", None)),
            ("host:port", ("host:port", None)),
            ("host:70000", ("host:70000", None)),
        ] {
            assert_eq!(RouteId::new(name).address(), address, "{name}");
        }
    }
}
