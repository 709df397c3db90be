use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use seawall_core::RouteId;
use tower_layer::Layer;

use crate::{Budget, RetryBudget, RetryPolicy};

/// Retries classified, retryable failures within the operation's deadline
/// and a shared budget. See the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct RetryBudgetLayer {
    policy: RetryPolicy,
    budget: Budget,
    seed: Option<u64>,
}

impl RetryBudgetLayer {
    /// A ladder following `policy`, spending from `budget` (shared with
    /// every clone of the budget).
    pub fn new(policy: RetryPolicy, budget: Budget) -> Self {
        RetryBudgetLayer {
            policy,
            budget,
            seed: None,
        }
    }

    /// Draws jitter (and generated idempotency keys) from a random number
    /// generator seeded with `seed`, for reproducible tests. Without it the
    /// thread-local generator is used.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
}

impl<S> Layer<S> for RetryBudgetLayer {
    type Service = RetryBudget<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let random = match self.seed {
            Some(seed) => Random::Seeded(Mutex::new(SmallRng::seed_from_u64(seed))),
            None => Random::Thread,
        };
        RetryBudget::new(
            inner,
            Arc::new(Shared {
                policy: self.policy.clone(),
                budget: self.budget.clone(),
                random,
                route: OnceLock::new(),
            }),
        )
    }
}

/// What every clone of the service shares: one `Arc`, one reference-count
/// bump per clone.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) policy: RetryPolicy,
    pub(crate) budget: Budget,
    pub(crate) random: Random,
    /// The route of the first request, so that later requests to the same
    /// route share its name instead of allocating their own.
    route: OnceLock<RouteId>,
}

impl Shared {
    /// The route a request goes to: [`RouteId::of_request`], without its
    /// allocation when the route is the one this service called first (a
    /// client talks to one provider). Other routes cost their own name.
    pub(crate) fn route_of<B>(&self, request: &http::Request<B>) -> RouteId {
        let name = RouteId::name_of_request(request);
        match self.route.get() {
            Some(known) if known.as_str() == name => known.clone(),
            Some(_) => RouteId::of_request(request),
            None => self
                .route
                .get_or_init(|| RouteId::of_request(request))
                .clone(),
        }
    }
}

/// Where jitter comes from. Only retries draw from it, so the seeded
/// generator's lock is never taken on the success path.
#[derive(Debug)]
pub(crate) enum Random {
    Thread,
    Seeded(Mutex<SmallRng>),
}

impl Random {
    pub(crate) fn with<T>(&self, draw: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        match self {
            Random::Thread => draw(&mut rand::rng()),
            Random::Seeded(rng) => draw(&mut *rng.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }
}
