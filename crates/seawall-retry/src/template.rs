//! What a later attempt is made from: a copy of the first request's head,
//! taken before the first attempt consumes the request.

use std::mem;

use http::Request;
use seawall_core::recording::{ReplayBody, clone_head};
use seawall_core::{Deadline, RequestFacts, RouteId};

/// Marks a request as owned by a ladder, so an inner ladder does not retry
/// it again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OuterLadder;

/// The first request's head and a replay handle of its body.
pub(crate) struct Template<B> {
    head: Request<ReplayBody<B>>,
    /// The extensions, kept as values when they hold nothing but what the
    /// ladder knows; `None` when `head` carries a copy of the whole map.
    known: Option<Known>,
}

/// The extensions a ladder usually finds: the operation's deadline, a
/// caller's route, the request's facts (the ladder's own, or a caller's),
/// and an outer ladder's mark, which every retry gets anyway. Copying a
/// map costs an allocation per value and two for the map on every call;
/// keeping these values costs none (each is `Copy` or an `Arc` clone), and
/// the map is rebuilt only for a retry.
struct Known {
    deadline: Option<Deadline>,
    route: Option<RouteId>,
    facts: Option<RequestFacts>,
}

impl<B> Template<B> {
    /// The template of `first`, whose body `body` replays. Call it before
    /// the first request is marked.
    pub(crate) fn of(first: &mut Request<ReplayBody<B>>, body: ReplayBody<B>) -> Self {
        let extensions = first.extensions();
        let deadline = extensions.get::<Deadline>();
        let route = extensions.get::<RouteId>();
        let facts = extensions.get::<RequestFacts>();
        let known = usize::from(deadline.is_some())
            + usize::from(route.is_some())
            + usize::from(facts.is_some())
            + usize::from(extensions.get::<OuterLadder>().is_some());
        if extensions.len() != known {
            return Template {
                head: clone_head(first, body),
                known: None,
            };
        }
        let known = Known {
            deadline: deadline.copied(),
            route: route.cloned(),
            facts: facts.cloned(),
        };
        // Copy the head without the map: set it aside for the copy.
        let extensions = mem::take(first.extensions_mut());
        let head = clone_head(first, body);
        *first.extensions_mut() = extensions;
        Template {
            head,
            known: Some(known),
        }
    }

    /// The body to replay.
    pub(crate) fn body(&self) -> &ReplayBody<B> {
        self.head.body()
    }

    /// The request of a later attempt, with `body`, marked as this ladder's.
    pub(crate) fn request(&self, body: ReplayBody<B>) -> Request<ReplayBody<B>> {
        let mut request = clone_head(&self.head, body);
        let extensions = request.extensions_mut();
        if let Some(known) = &self.known {
            if let Some(deadline) = known.deadline {
                extensions.insert(deadline);
            }
            if let Some(route) = &known.route {
                extensions.insert(route.clone());
            }
            if let Some(facts) = &known.facts {
                extensions.insert(facts.clone());
            }
        }
        extensions.insert(OuterLadder);
        request
    }
}
