//! `seawall_breakers_open` counts the routes open or isolated while their
//! breaker lives. A layer dropped with a route open (a client rebuilt on a
//! configuration reload, one of a fleet's clients let go) takes its route
//! out of the count, once, when the last of what shares it goes: before,
//! the process-wide gauge stayed up for ever.
#![cfg(feature = "metrics")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{Plan, Provider, route, send};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use seawall_breaker::{BreakerLayer, BreakerState, Trip};
use seawall_core::metric_names::BREAKERS_OPEN;
use seawall_core::{Code, Failure};
use tower::{Layer, ServiceExt};

/// A recorder that keeps `seawall_breakers_open` alone, readable at any
/// time without resetting it.
struct OpenRoutes(Arc<AtomicU64>);

impl OpenRoutes {
    fn new() -> Self {
        OpenRoutes(Arc::new(AtomicU64::new(0.0_f64.to_bits())))
    }

    fn read(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}

impl Recorder for OpenRoutes {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        if key.name() == BREAKERS_OPEN {
            Gauge::from_arc(Arc::clone(&self.0))
        } else {
            Gauge::noop()
        }
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

fn one_failure_trips() -> BreakerLayer {
    BreakerLayer::new().trip(Trip::Consecutive { failures: 1 })
}

/// Every clone of the service, every service of the layer, the layer and
/// its handle share the route: it leaves the count when the last goes,
/// and only then.
#[tokio::test(start_paused = true)]
async fn an_open_route_leaves_the_count_with_its_last_owner() {
    let open = OpenRoutes::new();
    let _recording = metrics::set_default_local_recorder(&open);
    let layer = one_failure_trips();
    let handle = layer.handle();
    let provider = Provider::new();
    let service = layer.layer(provider.clone());
    let clone = service.clone();
    let other = layer.layer(provider.clone());
    assert_eq!(
        send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await,
        Some(Code::Overloaded)
    );
    assert_eq!(handle.state(&route()), BreakerState::Open);
    assert_eq!(open.read(), 1.0);

    drop((service, clone, layer, handle));
    // `other` still shares the route, and it is still open.
    assert_eq!(open.read(), 1.0);
    drop(other);
    assert_eq!(open.read(), 0.0);
}

/// A call in flight holds its route: a layer dropped under it leaves the
/// route counted until the call ends.
#[tokio::test(start_paused = true)]
async fn a_call_in_flight_keeps_its_route_counted_until_it_ends() {
    let open = OpenRoutes::new();
    let _recording = metrics::set_default_local_recorder(&open);
    let layer = one_failure_trips();
    let provider = Provider::new();
    let service = layer.layer(provider.clone());
    let held = tokio::spawn(service.clone().oneshot(common::request(Plan::Hold)));
    while provider.calls() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        send(&service, Plan::Fail(Failure::new(Code::Overloaded))).await,
        Some(Code::Overloaded)
    );
    assert_eq!(open.read(), 1.0);

    drop((service, layer));
    assert_eq!(open.read(), 1.0);
    provider.release(1);
    let answered = held.await.expect("the held call ends");
    assert!(answered.is_ok(), "the held call answers");
    drop(answered);
    assert_eq!(open.read(), 0.0);
}

/// An isolated route is counted as an open one, and leaves the count the
/// same way; a route closed again is not taken out twice.
#[tokio::test(start_paused = true)]
async fn an_isolated_route_leaves_the_count_and_a_closed_one_is_not_taken_out() {
    let open = OpenRoutes::new();
    let _recording = metrics::set_default_local_recorder(&open);

    let layer = one_failure_trips();
    let handle = layer.handle();
    handle.isolate(&route());
    assert_eq!(open.read(), 1.0);
    drop((layer, handle));
    assert_eq!(open.read(), 0.0);

    let layer = one_failure_trips();
    let handle = layer.handle();
    handle.isolate(&route());
    handle.reset(&route());
    assert_eq!(handle.state(&route()), BreakerState::Closed);
    assert_eq!(open.read(), 0.0);
    drop((layer, handle));
    assert_eq!(open.read(), 0.0);
}
