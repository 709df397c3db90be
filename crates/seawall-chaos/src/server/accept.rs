//! The accept loop: one task per connection, each request routed to the
//! admin routes or to a provider answer, and a graceful end on shutdown.

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::task::TaskTracker;

use super::state::State;
use super::{admin, answer, error_response};
use crate::body::{BodyCut, ChaosBody};
use crate::conn::{ChaosIo, ConnControl};
use crate::wire::Provider;

pub(super) async fn accept_loop(listener: TcpListener, state: Arc<State>, grace: Duration) {
    let tracker = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = state.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, _)) => {
                tracker.spawn(serve_connection(tcp, state.clone(), grace));
            }
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(target: "seawall::chaos", %error, "seawall-chaos accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

async fn serve_connection(tcp: TcpStream, state: Arc<State>, grace: Duration) {
    // Tokens are small writes: without NODELAY, Nagle would hold them back.
    let _ = tcp.set_nodelay(true);
    let control = Arc::new(ConnControl::default());
    let io = TokioIo::new(ChaosIo::new(tcp, control.clone()));
    let service = {
        let state = state.clone();
        service_fn(move |req| route(state.clone(), control.clone(), req))
    };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(target: "seawall::chaos", %error, "seawall-chaos connection ended");
            }
        }
        _ = state.shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, conn.as_mut()).await;
        }
    }
}

/// `/_chaos/*` to the admin routes, a provider path to its answer, anything else 404.
async fn route(
    state: Arc<State>,
    control: Arc<ConnControl>,
    req: Request<Incoming>,
) -> Result<http::Response<ChaosBody>, BodyCut> {
    let path = req.uri().path().to_owned();
    if path.starts_with("/_chaos/") || path == "/_chaos" {
        return Ok(admin::admin(&state, req).await);
    }
    let Some(provider) = Provider::for_path(&path) else {
        return Ok(error_response(
            404,
            "no_route",
            format!("seawall-chaos: no route for {path}"),
        ));
    };
    answer::answer(&state, control, provider, path, req).await
}
