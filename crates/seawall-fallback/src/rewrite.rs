use seawall_core::recording::ReplayBody;

/// Changes the fallback's copy of the request before it is sent: another
/// base URL, model header, API key or extension.
///
/// The body is the primary's, replayed. Reshaping it for another provider's
/// wire format is the fallback service's job (a layer inside it that maps
/// the request), since that needs the whole body and may fail. The request
/// facts a rewrite's new path calls for are read again after it; a layer
/// that moves the request to another provider's endpoint itself gives it
/// [`RequestFacts::moved_to`](seawall_core::RequestFacts::moved_to), or
/// the layers below read its answer as the primary's provider's.
pub trait Rewrite<B> {
    /// Rewrites the request in place.
    fn rewrite(&self, request: &mut http::Request<ReplayBody<B>>);
}

/// The default [`Rewrite`]: the fallback gets the primary's request as it
/// was.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unchanged;

impl<B> Rewrite<B> for Unchanged {
    fn rewrite(&self, _: &mut http::Request<ReplayBody<B>>) {}
}

impl<B, F> Rewrite<B> for F
where
    F: Fn(&mut http::Request<ReplayBody<B>>),
{
    fn rewrite(&self, request: &mut http::Request<ReplayBody<B>>) {
        self(request)
    }
}
