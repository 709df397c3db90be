use std::sync::{Arc, OnceLock};

use seawall_core::RouteId;
use seawall_internal::random::Random;
use tower_layer::Layer;

use crate::{Budget, RetryBudget, RetryPolicy};

/// Retries classified, retryable failures within the operation's deadline
/// and a shared budget. See the [crate docs](crate).
///
/// It needs `ClassifyLayer` (seawall-classify) below it: a response is an
/// answer whatever its status, so without a classifier a 503 or a 429 is
/// delivered, not retried (and earns the budget nothing; the first one
/// warns that no classifier is below).
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

    /// Draws jitter from a random number generator seeded with `seed`, for
    /// reproducible tests. Without it the thread-local generator is used.
    /// Generated idempotency keys never come from the seeded generator:
    /// every service, replica and restart built with one seed would send
    /// the same keys, and a provider would answer one request with
    /// another's stored answer.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
}

impl<S> Layer<S> for RetryBudgetLayer {
    type Service = RetryBudget<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let random = Random::from_seed(self.seed);
        RetryBudget::new(
            inner,
            Arc::new(Shared {
                policy: self.policy.clone(),
                budget: self.budget.clone(),
                random,
                routes: OnceLock::new(),
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
    /// The route of each request, without allocating for the usual one.
    pub(crate) routes: OnceLock<RouteId>,
}
