//! Serving: one hyper connection task per client, graceful shutdown with a
//! grace period; a runtime per serving thread; and `run` for the `seawall
//! gateway` command.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use seawall_internal::millis;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::args::GatewayArgs;
use crate::gateway::{Gateway, GatewayError};
use crate::stall::StallBound;

/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a new connection may stay silent (send not a byte) before it
/// is dropped (see `Config::max_connections`): a connection holds one of
/// the capped slots from its accept, and connections that sent nothing
/// held every slot for [`HEADER_READ_TIMEOUT`] while clients with the
/// token waited in the backlog. Once a byte came, the connection runs
/// under hyper's bounds alone: a client still sending its first head
/// (slowly, or from far away) has [`HEADER_READ_TIMEOUT`] for it, as it
/// would for any later one, rather than being cut mid-head unanswered.
const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the answers cut at the end of the shutdown grace period have
/// to write their last words before their connections are dropped.
const CUT_FLUSH: Duration = Duration::from_secs(1);

impl Gateway {
    /// Serves on `listener` until `shutdown` resolves; then stops
    /// accepting, lets in-flight answers finish for up to the configured
    /// grace period ([`Config::shutdown_grace`](crate::Config)), and ends
    /// whatever is left in its own words: a stream with the final error
    /// event, a request not yet answered with a 503 (then, after a second
    /// for those to be written, drops the connections still open). A
    /// gateway (and its clones) that has cut its requests answers every
    /// later one with that 503: build a new one to serve again.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let router = self.router().fallback(Gateway::unknown_path);
        let graceful = GracefulShutdown::new();
        let mut connections = JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        let slots = Arc::clone(self.connection_slots());
        // A connection first, then a permit (`Config::max_connections`):
        // past the cap, the one accepted waits for a slot and the next
        // ones in the listener's backlog. Permit first, a thread of
        // `serve_per_thread` waiting in `accept` on its idle listener held
        // a slot no connection used, and the slots' fair queue handed it
        // the one a busy listener's connection freed. The future outlives
        // the loop's turns: dropped while it waits for a permit, it would
        // drop the connection it accepted.
        {
            let accept = || async {
                let accepted = listener.accept().await;
                let permit = match accepted {
                    Ok(_) => Some(Arc::clone(&slots).acquire_owned().await),
                    Err(_) => None,
                };
                (accepted, permit)
            };
            let mut next = std::pin::pin!(accept());
            loop {
                tokio::select! {
                    (accepted, permit) = &mut next => {
                        next.set(accept());
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
                        // The slots are never closed; were they, stop.
                        let Some(Ok(permit)) = permit else { break };
                        let _ = stream.set_nodelay(true);
                        // Set by the first byte read from the client.
                        let spoke = Arc::new(AtomicBool::new(false));
                        let service = TowerToHyperService::new(router.clone());
                        let stream = Spoke::new(stream, Arc::clone(&spoke));
                        let stream = StallBound::new(stream, self.config().client_stall);
                        let connection = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_READ_TIMEOUT)
                            .serve_connection(TokioIo::new(stream), service);
                        let connection = graceful.watch(connection);
                        connections.spawn(async move {
                            let mut connection = std::pin::pin!(connection);
                            tokio::select! {
                                _ = &mut connection => {}
                                () = tokio::time::sleep(FIRST_REQUEST_TIMEOUT) => {
                                    // Silent so far, it is dropped
                                    // (closed), its slot freed; one that
                                    // sent anything is hyper's to bound.
                                    if spoke.load(Ordering::Relaxed) {
                                        let _ = connection.await;
                                    }
                                }
                            }
                            drop(permit);
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                    () = &mut shutdown => break,
                }
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
                "grace period over: ending the answers still in flight"
            );
            // Each request in flight ends in its own words (a stream with
            // the final error event, a request not yet answered with a
            // 503); a connection that has not written it within
            // `CUT_FLUSH` (a client that stopped reading) is dropped.
            self.cut_all();
            let flushed = tokio::time::timeout(CUT_FLUSH, async {
                while connections.join_next().await.is_some() {}
            })
            .await;
            if flushed.is_err() {
                connections.abort_all();
                while connections.join_next().await.is_some() {}
            }
        }
        Ok(())
    }
}

/// A client's connection that sets `spoke` once a read from it returned
/// a byte: the first-request bound ([`FIRST_REQUEST_TIMEOUT`]) is for
/// connections that send nothing. Set at the read, not when hyper hands
/// over a parsed request: a head that arrives in parts over more than the
/// bound was cut unanswered, with hyper's [`HEADER_READ_TIMEOUT`] never
/// reached. Writes pass through.
#[derive(Debug)]
struct Spoke<T> {
    io: T,
    spoke: Arc<AtomicBool>,
}

impl<T> Spoke<T> {
    fn new(io: T, spoke: Arc<AtomicBool>) -> Self {
        Spoke { io, spoke }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Spoke<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.spoke.store(true, Ordering::Relaxed);
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Spoke<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
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

impl Gateway {
    /// Serves each listener on a thread of its own, each thread with its
    /// own single-threaded runtime and its own upstream connections, until
    /// `shutdown` resolves; then every thread drains as [`serve`] does.
    /// Breakers, the retry budget and the counters stay shared.
    ///
    /// This is how `seawall gateway --threads N` serves (one
    /// `SO_REUSEPORT` listener per thread, on Linux): a relayed stream is
    /// two tasks handing frames to each other, the upstream connection's
    /// and the client's, and on a work-stealing runtime every hand-off can
    /// wake another worker thread. With both tasks on one thread, as here,
    /// none does: less CPU and a lower median latency. What is given up
    /// is stealing: a busy or descheduled thread's connections wait for it
    /// while another idles (the kernel spreads new connections over the
    /// listeners), which shows in the tail.
    ///
    /// Returns the first error a thread met (a listener it could not
    /// take, a runtime it could not build), after all have stopped.
    ///
    /// [`serve`]: Gateway::serve
    pub async fn serve_per_thread(
        self,
        listeners: Vec<std::net::TcpListener>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (done, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let mut threads = 0;
        for (index, listener) in listeners.into_iter().enumerate() {
            let gateway = self.clone();
            let stopped = stopped.clone();
            let done = done.clone();
            let serve = move || {
                let _ = done.send(serve_on_own_runtime(gateway, listener, stopped));
            };
            std::thread::Builder::new()
                .name(format!("seawall-gateway-{index}"))
                .spawn(serve)?;
            threads += 1;
        }
        drop(done);
        let mut first_error = None;
        tokio::select! {
            () = shutdown => {}
            // A thread ended on its own: it could not serve. Stop the rest.
            Some(result) = ended.recv(), if threads > 0 => {
                threads -= 1;
                first_error = result.err();
            }
        }
        let _ = stop.send(true);
        while threads > 0 {
            let Some(result) = ended.recv().await else {
                break;
            };
            threads -= 1;
            if let Err(err) = result {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// One serving thread's life: a current-thread runtime serving `listener`
/// until `stopped` says so (or its sender is gone).
fn serve_on_own_runtime(
    gateway: Gateway,
    listener: std::net::TcpListener,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        gateway.serve(listener, shutdown).await
    })
}

/// `count` listeners on `addr`. On Linux, more than one share the address
/// with `SO_REUSEPORT` (the kernel spreads connections over them; only
/// sockets of the same user may join); elsewhere, one. Needs a runtime
/// (the sockets are made by tokio, then handed over as std listeners).
///
/// An address something already listens on is refused
/// (`AddrInUse`), shared or not: before the group binds a given port, a
/// socket without `SO_REUSEPORT` is bound to it and dropped, and that
/// bind fails where any socket listens, a second gateway's
/// `SO_REUSEPORT` group included, which the group's own sockets would
/// join without a word (the kernel then splits the connections between
/// two configurations). A process of the same user that binds the port
/// with `SO_REUSEPORT` after the group has is not seen: that is the
/// kernel's rule for such sockets.
pub fn listeners(
    addr: std::net::SocketAddr,
    count: usize,
) -> std::io::Result<Vec<std::net::TcpListener>> {
    let shared = cfg!(target_os = "linux") && count > 1;
    let socket = |addr: std::net::SocketAddr| -> std::io::Result<tokio::net::TcpSocket> {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // As tokio's own `TcpListener::bind`: a restarted gateway can
        // listen again while old connections linger in TIME_WAIT.
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        Ok(socket)
    };
    let listen = |addr: std::net::SocketAddr| -> std::io::Result<std::net::TcpListener> {
        let socket = socket(addr)?;
        #[cfg(target_os = "linux")]
        if shared {
            socket.set_reuseport(true)?;
        }
        socket.bind(addr)?;
        socket.listen(1024)?.into_std()
    };
    // Port 0 needs no probe: the kernel picks a port no group shares.
    if shared && addr.port() != 0 {
        socket(addr)?.bind(addr)?;
    }
    let first = listen(addr)?;
    // Port 0 resolves once: the others join the first's port.
    let bound = first.local_addr()?;
    let mut all = vec![first];
    while shared && all.len() < count {
        all.push(listen(bound)?);
    }
    Ok(all)
}

/// Runs `seawall gateway`: builds the gateway from `args`, listens, and
/// serves until SIGINT/SIGTERM (then drains within the grace period): on
/// the calling (multi-threaded) runtime, or, with `--threads N` on Linux,
/// on N threads each with its own runtime, listener and upstream
/// connections ([`Gateway::serve_per_thread`]).
pub async fn run(args: GatewayArgs) -> Result<(), GatewayError> {
    // `--threads` is honoured where `listeners` can share a port.
    let threads = args.threads.filter(|_| cfg!(target_os = "linux"));
    let gateway = Gateway::new(args.to_config()?)?;
    let addr = gateway.config().listen;
    let bind = |source| GatewayError::Bind { addr, source };
    let count = threads.map_or(1, usize::from);
    let mut listeners = listeners(addr, count).map_err(bind)?;
    let bound = listeners[0].local_addr().unwrap_or(addr);
    eprintln!("seawall gateway: listening on http://{bound}");
    // `--threads 1` too: one thread with its own single-threaded runtime.
    if threads.is_some() {
        return gateway
            .serve_per_thread(listeners, shutdown_signal())
            .await
            .map_err(bind);
    }
    let listener = TcpListener::from_std(listeners.remove(0)).map_err(bind)?;
    gateway
        .serve(listener, shutdown_signal())
        .await
        .map_err(bind)
}
