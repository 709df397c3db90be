//! Past the route limit, the routes that go unguarded are said once, not
//! once per call: a flood of authorities is not a flood of log lines.
//!
//! A test binary of its own: tracing caches whether a callsite is wanted
//! process-wide, and another test hitting the same warning on another
//! thread without a subscriber could hide it from this one's.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use seawall_breaker::BreakerLayer;
use tower::{Layer, ServiceExt, service_fn};
use tracing_subscriber::prelude::*;

struct Warnings(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() == "seawall::breaker" && *meta.level() == tracing::Level::WARN {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn the_route_limit_is_said_once() {
    let warnings = Arc::new(AtomicUsize::new(0));
    let subscriber = tracing_subscriber::registry().with(Warnings(Arc::clone(&warnings)));
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let layer = BreakerLayer::new().max_routes(2);
    let handle = layer.handle();
    let service = layer.layer(service_fn(|_: http::Request<()>| async {
        Ok::<_, Infallible>(http::Response::new(
            http_body_util::Empty::<bytes::Bytes>::new(),
        ))
    }));
    runtime.block_on(async {
        for i in 0..50 {
            let request = http::Request::get(format!("https://host{i}.example/v1"))
                .body(())
                .unwrap();
            service.clone().oneshot(request).await.unwrap();
        }
    });
    assert_eq!(handle.routes().len(), 2);
    assert_eq!(warnings.load(Ordering::SeqCst), 1);
}
