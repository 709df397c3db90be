//! The ways of asking that a model refused, remembered across answers.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use seawall_core::RouteId;

use crate::continuation::Styles;

/// At most this many routes and models are remembered: the model is the
/// caller's to name in each request, and the table must not grow with
/// every name. Past it, an answer learns for itself, as without the table.
const MAX_LEARNED: usize = 1024;

/// The longest model name learned for ([`seawall_core::MAX_KEPT_NAME`]):
/// longer names learn nothing.
const MAX_MODEL_NAME: usize = seawall_core::MAX_KEPT_NAME;

/// A route, and the model a request names (none for a request that names
/// none).
type Key = (RouteId, Option<Box<str>>);

/// The styles continuations ask in after a refusal (a model that refuses
/// prefill, or a request ending with a model turn, answers it with a 400
/// every time), per route and model, shared by the clones of one
/// [`Resume`](crate::Resume) service: a later interrupted answer starts
/// with them instead of paying the same refused request (and a retry
/// budget token) again. A style is learned only once a continuation asked
/// in it was answered: a 400 the user turn gets too was about something
/// else.
///
/// Keyed by the request's route and the model it names because that is
/// what refuses: one endpoint serves models that take a prefill and
/// models that refuse it (Claude 4.5 and 4.6 on the same API), and the
/// same model name on another endpoint (a proxy, a compatible server) may
/// take what the provider refuses.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    styles: Mutex<HashMap<Key, Styles>>,
}

impl Learned {
    /// The styles learned for `model` on `route`, else `configured`.
    pub(crate) fn styles(
        &self,
        route: &RouteId,
        model: Option<&str>,
        configured: Styles,
    ) -> Styles {
        // A panic elsewhere while the table was held leaves it whole: an
        // insert of `Copy` values.
        let table = self.styles.lock().unwrap_or_else(PoisonError::into_inner);
        if table.is_empty() {
            return configured;
        }
        table
            .get(&(route.clone(), model.map(Box::from)))
            .copied()
            .unwrap_or(configured)
    }

    /// Later answers for `model` on `route` ask in `styles`.
    pub(crate) fn learn(&self, route: RouteId, model: Option<&str>, styles: Styles) {
        if model.is_some_and(|model| model.len() > MAX_MODEL_NAME) {
            return;
        }
        let mut table = self.styles.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (route, model.map(Box::from));
        if table.len() < MAX_LEARNED || table.contains_key(&key) {
            table.insert(key, styles);
        }
    }
}

#[cfg(test)]
mod tests {
    use seawall_core::provider::Provider;

    use super::*;

    #[test]
    fn a_refusal_is_remembered_per_route_and_model_within_a_bound() {
        let learned = Learned::default();
        let route = RouteId::new("api.example:443");
        let configured = Styles::default();
        let asked = configured.asking_in_a_user_turn(Provider::Anthropic);
        learned.learn(route.clone(), Some("claude-new"), asked);
        assert_eq!(
            learned.styles(&route, Some("claude-new"), configured),
            asked
        );
        assert_eq!(
            learned.styles(&route, Some("claude-old"), configured),
            configured
        );
        let other = RouteId::new("proxy.example:443");
        assert_eq!(
            learned.styles(&other, Some("claude-new"), configured),
            configured
        );
        for n in 0..2 * MAX_LEARNED {
            learned.learn(route.clone(), Some(&format!("m{n}")), asked);
        }
        assert_eq!(learned.styles.lock().unwrap().len(), MAX_LEARNED);
    }

    /// A model name past any real one's length is not kept.
    #[test]
    fn an_overlong_model_name_learns_nothing() {
        let learned = Learned::default();
        let route = RouteId::new("api.example:443");
        let configured = Styles::default();
        let asked = configured.asking_in_a_user_turn(Provider::Anthropic);
        let long = "m".repeat(MAX_MODEL_NAME + 1);
        learned.learn(route.clone(), Some(&long), asked);
        assert!(learned.styles.lock().unwrap().is_empty());
        let longest = "m".repeat(MAX_MODEL_NAME);
        learned.learn(route.clone(), Some(&longest), asked);
        assert_eq!(learned.styles(&route, Some(&longest), configured), asked);
    }
}
