//! What a test holds: [`ChaosServer::builder`], [`ChaosServerBuilder`] and the
//! running server's [`ChaosHandle`].

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::DEFAULT_MAX_BODY_BYTES;
use super::accept::accept_loop;
use super::state::State;
use crate::fault::Fault;
use crate::journal::JournalEntry;
use crate::wire::{Provider, UnknownRoute};

/// Entry point: `ChaosServer::builder().start().await`.
#[derive(Debug)]
pub struct ChaosServer;

impl ChaosServer {
    /// A builder binding `127.0.0.1:0` with an 8 MiB body cap.
    pub fn builder() -> ChaosServerBuilder {
        ChaosServerBuilder {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            shutdown_grace: Duration::from_secs(1),
            key_faults: Vec::new(),
        }
    }
}

/// Configures and starts a [`ChaosServer`].
#[derive(Debug, Clone)]
pub struct ChaosServerBuilder {
    addr: SocketAddr,
    max_body_bytes: usize,
    shutdown_grace: Duration,
    key_faults: Vec<(String, Fault)>,
}

impl ChaosServerBuilder {
    /// Address to bind (default `127.0.0.1:0`: a free port on loopback).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Largest request body read; a larger one is answered `413` without being buffered.
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max;
        self
    }

    /// How long shutdown waits for open responses before closing their connections (default 1 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Every request carrying API key `key` gets `fault` (after any script,
    /// before its `x-chaos-fault` header): see [`ChaosHandle::fault_for_key`].
    pub fn fault_for_key(mut self, key: impl Into<String>, fault: Fault) -> Self {
        self.key_faults.push((key.into(), fault));
        self
    }

    /// Binds and starts serving on the current tokio runtime. The server is
    /// accepting when this returns: no wait is needed before the first request.
    pub async fn start(self) -> io::Result<ChaosHandle> {
        let listener = TcpListener::bind(self.addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::new(self.max_body_bytes, CancellationToken::new()));
        for (key, fault) in self.key_faults {
            state.set_key_fault(&key, Some(fault));
        }
        let task = tokio::spawn(accept_loop(listener, state.clone(), self.shutdown_grace));
        tracing::debug!(target: "seawall::chaos", %addr, "seawall-chaos listening");
        Ok(ChaosHandle {
            addr,
            state,
            task: Some(task),
        })
    }
}

/// A running server. Dropping it shuts the server down (without waiting);
/// [`shutdown`](Self::shutdown) waits for the end.
#[derive(Debug)]
pub struct ChaosHandle {
    addr: SocketAddr,
    state: Arc<State>,
    task: Option<JoinHandle<()>>,
}

impl ChaosHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every journal row so far, in arrival order.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.state.journal.snapshot()
    }

    /// Waits until the request sent with `x-chaos-request-id: request_id` has
    /// ended (completed, cut, disconnected or rejected) and returns its row.
    /// Wrap it in `tokio::time::timeout`: it waits as long as the row stays open.
    pub async fn wait_for_request(&self, request_id: &str) -> JournalEntry {
        self.state
            .journal
            .wait_ended(|row| row.request_id.as_deref() == Some(request_id))
            .await
    }

    /// The rows matching `matches`, in arrival order, once none of them is
    /// still in flight (a client's disconnect reaches the server a moment
    /// after the client has moved on), or as they stand after `within`.
    pub async fn settled_journal(
        &self,
        within: Duration,
        matches: impl Fn(&JournalEntry) -> bool,
    ) -> Vec<JournalEntry> {
        match tokio::time::timeout(within, self.state.journal.wait_settled(&matches)).await {
            Ok(rows) => rows,
            Err(_) => self.journal().into_iter().filter(|r| matches(r)).collect(),
        }
    }

    /// Replaces the script of `route` (a provider name,
    /// `openai`/`anthropic`/`gemini`/`openai_responses`, or a served path):
    /// the next requests on that provider get these faults in order, whatever
    /// their header says; once the script is used up, headers rule again.
    pub fn script(&self, route: &str, faults: Vec<Fault>) -> Result<(), UnknownRoute> {
        let provider: Provider = route.parse()?;
        self.state.set_script(provider, faults);
        Ok(())
    }

    /// Every request carrying API key `key` — `Authorization: Bearer KEY`,
    /// `x-api-key: KEY`, `x-goog-api-key: KEY` or `?key=KEY` — gets `fault`
    /// until [`clear_key_faults`](Self::clear_key_faults): one server walls
    /// key A and serves key B, as two accounts of one provider. A route's
    /// script still comes first; the key's fault wins over the request's
    /// `x-chaos-fault` header. The journal row's `fault_source` is `key`.
    pub fn fault_for_key(&self, key: &str, fault: Fault) {
        self.state.set_key_fault(key, Some(fault));
    }

    /// Forgets every fault set per API key (a [`reset`](Self::reset) keeps
    /// them: they are the server's configuration).
    pub fn clear_key_faults(&self) {
        self.state.clear_key_faults();
    }

    /// Clears the journal, every script and every `random` sequence.
    pub fn reset(&self) {
        self.state.reset();
    }

    /// Stops accepting, lets open responses end (up to the shutdown grace), and waits.
    pub async fn shutdown(mut self) {
        self.state.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ChaosHandle {
    fn drop(&mut self) {
        self.state.shutdown.cancel();
    }
}
