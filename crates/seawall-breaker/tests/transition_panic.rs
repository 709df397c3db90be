//! A transition callback that panics changes nothing in the breaker: the
//! change it was told of stands, the call that made it goes on, and a
//! warning says what happened. Before, the panic unwound from the middle
//! of an admission (the half-open trial slot it had taken was never given
//! back, nor a cooldown's probe it had claimed) or out of a body's poll.
//!
//! A test binary of its own: tracing caches whether a callsite is wanted
//! process-wide, and another test hitting the same warning on another
//! thread without a subscriber could hide it from this one's.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Plan, Provider, ROUTE, route, send};
use seawall_breaker::{
    BreakDuration, Breaker, BreakerHandle, BreakerLayer, BreakerState, Transition, Trip,
};
use seawall_core::{Code, Failure};
use tower::Layer;
use tracing_subscriber::prelude::*;

/// The fields of every warning on `seawall::breaker`.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

impl Warnings {
    fn taken(&self) -> Vec<BTreeMap<String, String>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() == "seawall::breaker" && *meta.level() == tracing::Level::WARN {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            self.0.lock().unwrap().push(fields);
        }
    }
}

/// A breaker whose transition callback notes each change, then panics on
/// those `panics_on` picks; with the warnings it logs.
fn build(
    panics_on: fn(&Transition<'_>) -> bool,
) -> (
    Breaker<Provider>,
    BreakerHandle,
    Provider,
    Arc<Mutex<Vec<String>>>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let layer = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(5),
            max: Duration::from_secs(60),
            jitter: 0.0,
        })
        .half_open_trials(1)
        .close_after(2)
        .on_transition(move |t| {
            record.lock().unwrap().push(format!("{}->{}", t.from, t.to));
            if panics_on(t) {
                panic!("the callback broke on {}->{}", t.from, t.to);
            }
        });
    let provider = Provider::new();
    let handle = layer.handle();
    (layer.layer(provider.clone()), handle, provider, seen)
}

fn with_warnings(test: impl AsyncFnOnce(Warnings)) {
    let warnings = Warnings::default();
    let subscriber = tracing_subscriber::registry().with(warnings.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(test(warnings));
}

#[test]
fn a_callback_that_panics_on_every_change_changes_nothing() {
    with_warnings(async |warnings| {
        let (service, handle, provider, seen) = build(|_| true);
        // Tripped where a body is read: the caller sees its stream's end,
        // not the callback's panic.
        assert_eq!(
            send(&service, Plan::DropsMidStream).await,
            Some(Code::StreamInterrupted)
        );
        assert_eq!(handle.state(&route()), BreakerState::Open);
        assert_eq!(send(&service, Plan::Ok).await, Some(Code::CircuitOpen));

        // The break over, the one trial slot is taken as the change is
        // announced, and given back when the trial ends: each of the two
        // successes to close gets it in turn.
        tokio::time::advance(Duration::from_secs(5)).await;
        let calls = provider.calls();
        assert_eq!(send(&service, Plan::Ok).await, None);
        assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
        assert_eq!(send(&service, Plan::Ok).await, None);
        assert_eq!(handle.state(&route()), BreakerState::Closed);
        assert_eq!(provider.calls(), calls + 2);
        assert_eq!(
            *seen.lock().unwrap(),
            ["closed->open", "open->half_open", "half_open->closed"]
        );

        let warnings = warnings.taken();
        let said: Vec<_> = warnings
            .iter()
            .map(|w| (w["from"].as_str(), w["to"].as_str()))
            .collect();
        assert_eq!(
            said,
            [
                ("closed", "open"),
                ("open", "half_open"),
                ("half_open", "closed")
            ]
        );
        let first = &warnings[0];
        assert_eq!(first["route"], ROUTE);
        assert_eq!(first["panic"], "the callback broke on closed->open");
    });
}

/// A route walled by a quota while its breaker was open: the first call
/// after both ends is the cooldown's probe and the breaker's trial. The
/// callback panicking as it takes the trial left the cooldown's word
/// claimed for a probe that never went out, and the trial slot taken.
#[test]
fn a_callback_that_panics_on_the_trial_gives_back_neither_probe_nor_slot() {
    with_warnings(async |warnings| {
        let (service, handle, provider, _) = build(|t| t.to == BreakerState::HalfOpen);
        // A call of the closed spell, held while the route trips, comes
        // back with a quota wall of a second.
        let wall = Failure::new(Code::QuotaExhausted).with_retry_after(Duration::from_secs(1));
        let held = {
            let service = service.clone();
            let plan = Plan::HeldThenFail(wall);
            tokio::spawn(async move { send(&service, plan).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(
            send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await,
            Some(Code::Overloaded)
        );
        provider.release(1);
        assert_eq!(held.await.unwrap(), Some(Code::QuotaExhausted));
        assert_eq!(handle.state(&route()), BreakerState::Open);
        assert_eq!(
            handle.cooldown(&route()),
            // A wall's cooldown is never shorter than a minute where no
            // reset is known (`DEFAULT_QUOTA_COOLDOWN`): a header's
            // second does not shorten it.
            Some((Code::QuotaExhausted, Some(Duration::from_secs(60))))
        );

        tokio::time::advance(Duration::from_secs(61)).await;
        let calls = provider.calls();
        assert_eq!(send(&service, Plan::Ok).await, None);
        assert_eq!(handle.state(&route()), BreakerState::HalfOpen);
        assert_eq!(handle.cooldown(&route()), None);
        assert_eq!(send(&service, Plan::Ok).await, None);
        assert_eq!(handle.state(&route()), BreakerState::Closed);
        assert_eq!(provider.calls(), calls + 2);
        let warnings = warnings.taken();
        let panicked: Vec<_> = warnings
            .iter()
            .filter(|w| w.contains_key("panic"))
            .collect();
        assert_eq!(panicked.len(), 1, "{warnings:?}");
        assert_eq!(panicked[0]["to"], "half_open");
    });
}
