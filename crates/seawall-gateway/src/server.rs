//! Serving: one hyper connection task per client, graceful shutdown with a
//! grace period, and `run` for the `seawall gateway` command.

use std::future::Future;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use seawall_internal::millis;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::args::GatewayArgs;
use crate::gateway::{Gateway, GatewayError};

/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

impl Gateway {
    /// Serves on `listener` until `shutdown` resolves; then stops
    /// accepting, lets in-flight answers finish for up to the configured
    /// grace period ([`Config::shutdown_grace`](crate::Config)), and cuts
    /// whatever is left.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let router = self.router();
        let graceful = GracefulShutdown::new();
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, _peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(err) => {
                            // Out of descriptors, or a connection reset
                            // before accept: keep serving the others.
                            tracing::warn!(target: "seawall::gateway", error = %err, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let service = TowerToHyperService::new(router.clone());
                    let connection = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_READ_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    let connection = graceful.watch(connection);
                    connections.spawn(async move {
                        let _ = connection.await;
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        let grace = self.config().shutdown_grace;
        tracing::info!(
            target: "seawall::gateway",
            in_flight = self.stats().in_flight,
            grace_ms = millis(grace),
            "shutting down: no new connections, in-flight answers may finish"
        );
        let drained = tokio::time::timeout(grace, async {
            graceful.shutdown().await;
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                target: "seawall::gateway",
                cut = connections.len(),
                "grace period over: cutting the connections still open"
            );
            connections.abort_all();
            while connections.join_next().await.is_some() {}
        }
        Ok(())
    }
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Runs `seawall gateway`: builds the gateway from `args`, listens, and
/// serves until SIGINT/SIGTERM (then drains within the grace period).
pub async fn run(args: GatewayArgs) -> Result<(), GatewayError> {
    let gateway = Gateway::new(args.to_config()?)?;
    let addr = gateway.config().listen;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| GatewayError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("seawall gateway: listening on http://{bound}");
    gateway
        .serve(listener, shutdown_signal())
        .await
        .map_err(|source| GatewayError::Bind { addr, source })
}
