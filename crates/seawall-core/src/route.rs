use std::fmt;
use std::sync::Arc;

/// The identity of a route: one provider endpoint (and optionally model)
/// whose health is tracked as a unit.
///
/// Cheap to clone (an `Arc<str>`). A caller may put one in the request
/// extensions; otherwise layers derive it from the URI authority with
/// [`RouteId::of_request`].
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

    /// The route of a URI: its authority (`host:port`), or `"default"` for a
    /// URI without one.
    pub fn from_uri(uri: &http::Uri) -> Self {
        match uri.authority() {
            Some(authority) => RouteId::new(authority.as_str()),
            None => RouteId::new("default"),
        }
    }

    /// The name of the route a request goes to, borrowed: what
    /// [`RouteId::of_request`] would name, without allocating. Layers on
    /// the success path compare this against a cached route.
    pub fn name_of_request<B>(request: &http::Request<B>) -> &str {
        match request.extensions().get::<RouteId>() {
            Some(route) => route.as_str(),
            None => request.uri().authority().map_or("default", |a| a.as_str()),
        }
    }

    /// The route a request goes to: the `RouteId` in its extensions when the
    /// caller set one, else the URI's authority.
    pub fn of_request<B>(request: &http::Request<B>) -> Self {
        request
            .extensions()
            .get::<RouteId>()
            .cloned()
            .unwrap_or_else(|| RouteId::from_uri(request.uri()))
    }
}

/// Remembers the first route a service called, so that later requests to
/// the same route share its name instead of allocating their own: a client
/// usually talks to one provider. Other routes cost their own name.
#[derive(Debug, Default)]
pub struct RouteCache(std::sync::OnceLock<RouteId>);

impl RouteCache {
    /// [`RouteId::of_request`], without its allocation when the route is the
    /// one this cache saw first.
    pub fn route_of<B>(&self, request: &http::Request<B>) -> RouteId {
        let name = RouteId::name_of_request(request);
        match self.0.get() {
            Some(known) if known.as_str() == name => known.clone(),
            Some(_) => RouteId::of_request(request),
            None => self.0.get_or_init(|| RouteId::of_request(request)).clone(),
        }
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
mod tests {
    use super::*;

    #[test]
    fn the_cache_shares_the_first_route_and_names_others() {
        let cache = RouteCache::default();
        let a = http::Request::get("http://a.example/x").body(()).unwrap();
        let b = http::Request::get("http://b.example/x").body(()).unwrap();
        let first = cache.route_of(&a);
        let again = cache.route_of(&a);
        assert!(
            Arc::ptr_eq(&first.0, &again.0),
            "the first route's name is shared"
        );
        assert_eq!(cache.route_of(&b).as_str(), "b.example");
        assert_eq!(cache.route_of(&a).as_str(), "a.example");
        let mut named = http::Request::get("http://a.example/x").body(()).unwrap();
        named.extensions_mut().insert(RouteId::new("primary"));
        assert_eq!(cache.route_of(&named).as_str(), "primary");
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
}
