//! The cooldowns one route keeps for single models: a rate limit or quota
//! wall the provider keeps per model ([`Failure::cools`]) holds back only
//! the calls for that model, while the route's other models are called.
//!
//! A few at a time ([`MAX_MODELS_COOLING`]): past them, a model's wall
//! cools the whole route, as a wall whose model is not known does. A route
//! whose models all meet walls at once is best left alone anyway, and the
//! memory a flood of model names can pin stays bounded.
//!
//! [`Failure::cools`]: seawall_core::Failure::cools

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use seawall_core::Code;

/// The most models one route keeps cooling on their own. Past them a
/// model's wall cools the route (the breaker's docs say so).
pub const MAX_MODELS_COOLING: usize = 8;

/// One model's cooldown on its route.
struct Cooling {
    /// Shared with the refusals it makes: a refusal names its model
    /// without allocating.
    model: Arc<str>,
    /// Its end, on the breaker's millisecond clock (`COOL_FOREVER`: until
    /// a reset).
    until: u64,
    /// What cooled it, and whether its time left names no return (a hint
    /// at the clamp): as the route's own cooldown word says them.
    code: Code,
    at_clamp: bool,
}

/// What [`ModelCooldowns::cool`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cooled {
    /// The model cools until the new end.
    Longer,
    /// The model already cooled as long or longer: nothing changed.
    Kept,
    /// Every place is taken by a model still cooling: cool the route.
    Full,
}

/// The per-model cooldowns of one route.
#[derive(Default)]
pub(crate) struct ModelCooldowns {
    /// How many places hold a cooldown, ended or not: while none does, an
    /// admission reads this word alone, takes no lock and asks no request
    /// for its model.
    held: AtomicUsize,
    places: Mutex<[Option<Cooling>; MAX_MODELS_COOLING]>,
}

impl ModelCooldowns {
    fn places(&self) -> MutexGuard<'_, [Option<Cooling>; MAX_MODELS_COOLING]> {
        // A panic while a place was written left a place or none: either
        // is a state to read.
        self.places.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether any model may be cooling: one relaxed load.
    pub(crate) fn any(&self) -> bool {
        self.held.load(Ordering::Relaxed) != 0
    }

    /// `model`'s cooldown at `now`: (its name as kept, what cooled it,
    /// its end, at the clamp), while it runs. Ended ones are dropped on
    /// the way.
    pub(crate) fn cooling(&self, model: &str, now: u64) -> Option<(Arc<str>, Code, u64, bool)> {
        let mut found = None;
        self.each(now, |cooling| {
            if &*cooling.model == model {
                found = Some((
                    Arc::clone(&cooling.model),
                    cooling.code,
                    cooling.until,
                    cooling.at_clamp,
                ));
            }
        });
        found
    }

    /// Every model cooling at `now`, as [`cooling`](Self::cooling) gives
    /// one.
    pub(crate) fn all(&self, now: u64) -> Vec<(Arc<str>, Code, u64, bool)> {
        let mut all = Vec::new();
        self.each(now, |cooling| {
            all.push((
                Arc::clone(&cooling.model),
                cooling.code,
                cooling.until,
                cooling.at_clamp,
            ));
        });
        all
    }

    /// Calls `f` with each cooldown still running at `now`, dropping the
    /// ended ones.
    fn each(&self, now: u64, mut f: impl FnMut(&Cooling)) {
        let mut places = self.places();
        for place in places.iter_mut() {
            match place {
                Some(cooling) if now >= cooling.until => {
                    *place = None;
                    self.held.fetch_sub(1, Ordering::Relaxed);
                }
                Some(cooling) => f(cooling),
                None => {}
            }
        }
    }

    /// Cools `model` until `until` (kept when it already cools longer),
    /// taking a free or ended place; `keep` is asked under the lock, last
    /// (a reset since the call was admitted: nothing is learnt).
    pub(crate) fn cool(
        &self,
        model: &str,
        until: u64,
        code: Code,
        at_clamp: bool,
        now: u64,
        keep: impl FnOnce() -> bool,
    ) -> Cooled {
        let mut places = self.places();
        if !keep() {
            return Cooled::Kept;
        }
        let mut free = None;
        for (index, place) in places.iter_mut().enumerate() {
            match place {
                Some(cooling) if &*cooling.model == model => {
                    if cooling.until >= until && now < cooling.until {
                        return Cooled::Kept;
                    }
                    cooling.until = until;
                    cooling.code = code;
                    cooling.at_clamp = at_clamp;
                    return Cooled::Longer;
                }
                Some(cooling) if now >= cooling.until => free = free.or(Some(index)),
                None => free = free.or(Some(index)),
                Some(_) => {}
            }
        }
        let Some(index) = free else {
            return Cooled::Full;
        };
        if places[index].is_none() {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
        places[index] = Some(Cooling {
            model: model.into(),
            until,
            code,
            at_clamp,
        });
        Cooled::Longer
    }

    /// Ends every model's cooldown (a reset of the route).
    pub(crate) fn clear(&self) {
        let mut places = self.places();
        *places = Default::default();
        self.held.store(0, Ordering::Relaxed);
    }
}
