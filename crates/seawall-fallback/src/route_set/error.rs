//! What a route set refuses to be built from.

use seawall_core::RouteId;

use crate::route_set::choose::MAX_MEMBERS;

/// A route set that cannot work as configured: refused when it is built,
/// never found out by a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteSetError {
    /// No members.
    #[error("a route set needs at least one member")]
    Empty,
    /// Two members with one route name: the breaker and the receipts could
    /// not tell them apart.
    #[error(
        "two members of the route set are named {0}; give each key or deployment its own RouteId"
    )]
    Duplicate(RouteId),
    /// More members than the set takes.
    #[error("a route set takes at most {MAX_MEMBERS} members, not {0}")]
    TooMany(usize),
    /// A member's origin is not a scheme and a host.
    #[error("member {route}: bad origin: {why}")]
    Origin {
        /// The member.
        route: RouteId,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl RouteSetError {
    /// The stable snake_case name of the error.
    pub const fn code(&self) -> &'static str {
        match self {
            RouteSetError::Empty => "route_set_empty",
            RouteSetError::Duplicate(_) => "route_set_duplicate",
            RouteSetError::TooMany(_) => "route_set_too_many",
            RouteSetError::Origin { .. } => "route_set_bad_origin",
        }
    }
}
