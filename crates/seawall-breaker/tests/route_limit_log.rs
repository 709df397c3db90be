//! Past the route limit, the routes that go unguarded are said once, not
//! once per call: a flood of authorities is not a flood of log lines.
//!
//! A test binary of its own: tracing caches whether a callsite is wanted
//! process-wide, and another test hitting the same warning on another
//! thread without a subscriber could hide it from this one's.

use std::convert::Infallible;

use seawall_breaker::BreakerLayer;
use tower::{Layer, ServiceExt, service_fn};

#[test]
fn the_route_limit_is_said_once() {
    let recorder = seawall_test::trace::Recorder::new();
    let _guard = recorder.install();
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
    assert_eq!(recorder.warnings_of("seawall::breaker").len(), 1);
}
