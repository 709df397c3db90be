//! What a later attempt is made from: a copy of the first request's head,
//! taken before the first attempt consumes the request.

use http::Request;
use seawall_core::recording::{HeadCopy, ReplayBody};

/// Marks a request as owned by a ladder, so an inner ladder does not retry
/// it again.
pub(crate) use seawall_core::recording::OuterLadder;

/// The first request's head and a replay handle of its body; each request
/// made from it is marked as this ladder's.
pub(crate) struct Template<B> {
    head: HeadCopy<ReplayBody<B>>,
}

impl<B> Template<B> {
    /// The template of `first`, whose body `body` replays. Call it before
    /// the first request is marked: an outer ladder's mark is left out,
    /// and every retry gets this ladder's.
    pub(crate) fn of(first: &mut Request<ReplayBody<B>>, body: ReplayBody<B>) -> Self {
        Template {
            head: HeadCopy::of_unmarked::<OuterLadder>(first, body),
        }
    }

    /// The body to replay.
    pub(crate) fn body(&self) -> &ReplayBody<B> {
        self.head.body()
    }

    /// The request of a later attempt, with `body`, marked as this ladder's.
    pub(crate) fn request(&self, body: ReplayBody<B>) -> Request<ReplayBody<B>> {
        let mut request = self.head.request(body);
        request.extensions_mut().insert(OuterLadder);
        request
    }
}
