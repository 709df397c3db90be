//! The server: accept loop, routing, fault choice, journal rows, shutdown.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER,
};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::body::{BodyCut, ChaosBody, JournalLink};
use crate::conn::{ChaosIo, ConnControl};
use crate::fault::{Fault, FaultParseError, StatusFault};
use crate::journal::{FaultSource, Journal, JournalEntry, Outcome, body_hash, lock, unix_ms};
use crate::plan::{Plan, plan};
use crate::random;
use crate::wire::{self, Ctx, Provider, UnknownRoute};

/// Request header selecting a fault.
pub const FAULT_HEADER: &str = "x-chaos-fault";
/// Request header whose value the journal row records, so a test can find its row.
pub const REQUEST_ID_HEADER: &str = "x-chaos-request-id";
/// Response header carrying the journal `seq` of the request.
pub const SEQ_HEADER: &str = "x-chaos-seq";
/// Response header naming the fault applied.
pub const APPLIED_HEADER: &str = "x-chaos-fault-applied";

/// Default request body cap: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Longest `x-chaos-request-id` recorded, in bytes.
const MAX_REQUEST_ID: usize = 256;
/// Cap for bodies of `/_chaos/*` requests.
const MAX_ADMIN_BODY: usize = 64 * 1024;

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
        }
    }
}

/// Configures and starts a [`ChaosServer`].
#[derive(Debug, Clone)]
pub struct ChaosServerBuilder {
    addr: SocketAddr,
    max_body_bytes: usize,
    shutdown_grace: Duration,
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

    /// Binds and starts serving on the current tokio runtime. The server is
    /// accepting when this returns: no wait is needed before the first request.
    pub async fn start(self) -> io::Result<ChaosHandle> {
        let listener = TcpListener::bind(self.addr).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let state = Arc::new(State {
            journal: Arc::new(Journal::default()),
            scripts: Mutex::new(HashMap::new()),
            randoms: Mutex::new(HashMap::new()),
            next_seq: AtomicU64::new(1),
            max_body_bytes: self.max_body_bytes,
            shutdown: shutdown.clone(),
        });
        let task = tokio::spawn(accept_loop(listener, state.clone(), self.shutdown_grace));
        tracing::debug!(%addr, "seawall-chaos listening");
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

struct Script {
    faults: VecDeque<Fault>,
    served: u32,
}

#[derive(Debug)]
pub(crate) struct State {
    journal: Arc<Journal>,
    scripts: Mutex<HashMap<Provider, Script>>,
    randoms: Mutex<HashMap<u64, u64>>,
    next_seq: AtomicU64,
    max_body_bytes: usize,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("left", &self.faults.len())
            .field("served", &self.served)
            .finish()
    }
}

impl State {
    fn set_script(&self, provider: Provider, faults: Vec<Fault>) {
        lock(&self.scripts).insert(
            provider,
            Script {
                faults: faults.into(),
                served: 0,
            },
        );
    }

    /// The next scripted fault for `provider` and its 1-based position.
    fn next_scripted(&self, provider: Provider) -> Option<(Fault, u32)> {
        let mut scripts = lock(&self.scripts);
        let script = scripts.get_mut(&provider)?;
        let fault = script.faults.pop_front()?;
        script.served += 1;
        Some((fault, script.served))
    }

    fn reset(&self) {
        self.journal.clear();
        lock(&self.scripts).clear();
        lock(&self.randoms).clear();
    }

    /// Resolves `random` into the next fault of its seed's sequence.
    fn resolve(&self, fault: Fault) -> Fault {
        match fault {
            Fault::Random { seed, p } => {
                let mut randoms = lock(&self.randoms);
                let state = randoms.entry(seed).or_insert(seed);
                random::draw(state, p)
            }
            other => other,
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, grace: Duration) {
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
                tracing::warn!(%error, "seawall-chaos accept failed");
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
        service_fn(move |req| handle(state.clone(), control.clone(), req))
    };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "seawall-chaos connection ended");
            }
        }
        _ = state.shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, conn.as_mut()).await;
        }
    }
}

/// What a request asked for, once its body is read.
struct RequestShape {
    model: String,
    stream: bool,
    include_usage: bool,
    /// The answer continues after this many tokens: the conversation ends
    /// with an assistant (or model) turn whose text ends in `wK`, the way a
    /// client resumes an interrupted stream.
    continues_after: u32,
}

#[derive(Deserialize)]
struct RequestFields {
    model: Option<String>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    /// OpenAI and Anthropic conversations.
    #[serde(default)]
    messages: Vec<Turn>,
    /// Gemini conversations.
    #[serde(default)]
    contents: Vec<Turn>,
    /// Responses API input: a string, or a list of items.
    #[serde(default)]
    input: Option<serde_json::Value>,
}

impl RequestFields {
    /// The turns of the conversation, in `provider`'s field. Responses input
    /// items that are not turns (tool calls, ...) count as turns of no role.
    fn turns(&mut self, provider: Provider) -> Vec<Turn> {
        match provider {
            Provider::OpenAi | Provider::Anthropic => std::mem::take(&mut self.messages),
            Provider::Gemini => std::mem::take(&mut self.contents),
            Provider::OpenAiResponses => match self.input.take() {
                Some(serde_json::Value::Array(items)) => items
                    .into_iter()
                    .map(|item| serde_json::from_value(item).unwrap_or_default())
                    .collect(),
                _ => Vec::new(),
            },
        }
    }
}

/// One conversation turn, in any of the four shapes: only what continuation needs.
#[derive(Default, Deserialize)]
struct Turn {
    #[serde(default)]
    role: String,
    /// OpenAI / Anthropic / Responses: a string or a list of content blocks (parts).
    #[serde(default)]
    content: Option<serde_json::Value>,
    /// Gemini: a list of parts.
    #[serde(default)]
    parts: Option<serde_json::Value>,
}

impl Turn {
    /// The text of the turn: the string content, or the `text` of its blocks/parts.
    fn text(&self) -> String {
        let blocks = match (&self.content, &self.parts) {
            (Some(serde_json::Value::String(text)), _) => return text.clone(),
            (Some(list), _) | (None, Some(list)) => list,
            (None, None) => return String::new(),
        };
        blocks
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.get("text").and_then(serde_json::Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `K` when the last turn is the assistant's (`assistant` or Gemini's `model`)
/// and its text ends with the token `wK`.
fn continues_after(turns: &[Turn]) -> u32 {
    let Some(last) = turns.last() else { return 0 };
    if last.role != "assistant" && last.role != "model" {
        return 0;
    }
    last.text()
        .split_whitespace()
        .last()
        .and_then(|token| token.strip_prefix('w'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

/// A refusal by the server itself, before any fault applies.
struct Rejection {
    status: u16,
    code: &'static str,
    message: String,
}

impl Rejection {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Rejection {
            status,
            code,
            message: message.into(),
        }
    }
}

impl From<FaultParseError> for Rejection {
    fn from(e: FaultParseError) -> Self {
        Rejection::new(400, e.code(), format!("{FAULT_HEADER}: {e}"))
    }
}

enum ReadError {
    TooLarge,
    Client(String),
}

async fn read_capped(req: Request<Incoming>, cap: usize) -> Result<Bytes, ReadError> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > cap as u64) {
        return Err(ReadError::TooLarge);
    }
    match Limited::new(req.into_body(), cap).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(ReadError::TooLarge),
        Err(e) => Err(ReadError::Client(e.to_string())),
    }
}

fn header_value(s: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(s).ok()
}

fn json_response(status: u16, body: String) -> Response<ChaosBody> {
    let mut res = Response::new(ChaosBody::full(body));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The provider's request-id header, when it has one.
fn request_id_header(provider: Provider) -> Option<HeaderName> {
    match provider {
        Provider::OpenAi | Provider::OpenAiResponses => {
            Some(HeaderName::from_static("x-request-id"))
        }
        Provider::Anthropic => Some(HeaderName::from_static("request-id")),
        Provider::Gemini => None,
    }
}

async fn handle(
    state: Arc<State>,
    control: Arc<ConnControl>,
    req: Request<Incoming>,
) -> Result<Response<ChaosBody>, BodyCut> {
    let path = req.uri().path().to_owned();
    if path.starts_with("/_chaos/") || path == "/_chaos" {
        return Ok(admin(&state, req).await);
    }
    let Some(provider) = Provider::for_path(&path) else {
        let body = serde_json::json!({"error": {"message": format!("seawall-chaos: no route for {path}"), "code": "no_route"}});
        return Ok(json_response(404, body.to_string()));
    };
    answer(&state, control, provider, path, req).await
}

async fn answer(
    state: &State,
    control: Arc<ConnControl>,
    provider: Provider,
    path: String,
    req: Request<Incoming>,
) -> Result<Response<ChaosBody>, BodyCut> {
    let arrived = Instant::now();
    let arrived_unix_ms = unix_ms(SystemTime::now());
    let seq = state.next_seq.fetch_add(1, Ordering::Relaxed);
    let vendor_request_id = format!("req_chaos{seq}");
    let request_id = req.headers().get(REQUEST_ID_HEADER).map(|v| {
        String::from_utf8_lossy(v.as_bytes())
            .chars()
            .take(MAX_REQUEST_ID)
            .collect::<String>()
    });
    let header_fault: Option<Result<Fault, FaultParseError>> = req
        .headers()
        .get(FAULT_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).parse());
    let query = req.uri().query().unwrap_or_default().to_owned();
    let mut row = JournalEntry {
        seq,
        arrived_unix_ms,
        path: path.clone(),
        provider: Some(provider),
        model: None,
        stream: false,
        request_id,
        body_hash: None,
        body_bytes: 0,
        fault: "ok".to_owned(),
        fault_source: FaultSource::Default,
        attempt: None,
        status: None,
        bytes_written: 0,
        tokens_written: 0,
        outcome: Outcome::InFlight,
        duration_ms: None,
    };

    let reject = |mut row: JournalEntry, r: Rejection| {
        let body = wire::rejection_body(provider, r.status, r.code, &r.message, &vendor_request_id);
        row.status = Some(r.status);
        row.bytes_written = body.len() as u64;
        row.outcome = Outcome::Rejected(r.status);
        row.duration_ms = Some(u64::try_from(arrived.elapsed().as_millis()).unwrap_or(u64::MAX));
        state.journal.push(row);
        let mut res = json_response(r.status, body);
        if let (Some(name), Some(value)) = (
            request_id_header(provider),
            header_value(&vendor_request_id),
        ) {
            res.headers_mut().insert(name, value);
        }
        res.headers_mut().insert(SEQ_HEADER, HeaderValue::from(seq));
        res
    };

    if req.method() != Method::POST {
        let r = Rejection::new(
            405,
            "method_not_allowed",
            format!("seawall-chaos: {path} takes POST"),
        );
        return Ok(reject(row, r));
    }
    let (model_in_path, stream_by_path) = match provider {
        Provider::Gemini => match gemini_route(&path, &query) {
            Ok(route) => (Some(route.0), Some(route.1)),
            Err(r) => return Ok(reject(row, r)),
        },
        _ => (None, None),
    };
    let body = match read_capped(req, state.max_body_bytes).await {
        Ok(body) => body,
        Err(ReadError::TooLarge) => {
            let r = Rejection::new(
                413,
                "request_too_large",
                format!(
                    "seawall-chaos: request body exceeds {} bytes",
                    state.max_body_bytes
                ),
            );
            return Ok(reject(row, r));
        }
        Err(ReadError::Client(error)) => {
            // The client is gone or broke the framing: nobody to answer.
            row.outcome = Outcome::ClientDisconnected;
            row.duration_ms =
                Some(u64::try_from(arrived.elapsed().as_millis()).unwrap_or(u64::MAX));
            state.journal.push(row);
            tracing::debug!(%error, "seawall-chaos request body unreadable");
            return Err(BodyCut::Reset);
        }
    };
    row.body_hash = Some(body_hash(&body));
    row.body_bytes = body.len() as u64;

    let request = match parse_request(provider, &body, model_in_path, stream_by_path) {
        Ok(request) => request,
        Err(r) => return Ok(reject(row, r)),
    };
    row.model = Some(request.model.clone());
    row.stream = request.stream;
    let header_fault = match header_fault.transpose() {
        Ok(fault) => fault,
        Err(e) => return Ok(reject(row, e.into())),
    };

    let (fault, source, attempt) = match state.next_scripted(provider) {
        Some((fault, attempt)) => (fault, FaultSource::Script, Some(attempt)),
        None => match header_fault {
            Some(fault) => (fault, FaultSource::Header, None),
            None => (Fault::ok(), FaultSource::Default, None),
        },
    };
    let fault = state.resolve(fault);
    let applied = fault.to_string();
    row.fault = applied.clone();
    row.fault_source = source;
    row.attempt = attempt;

    let mut ctx = Ctx::new(
        provider,
        &request.model,
        seq,
        request.include_usage,
        body.len(),
    );
    ctx.first_token = request.continues_after.saturating_add(1);
    let mut res = match plan(&fault, &ctx, request.stream) {
        Plan::CloseBeforeHeaders => {
            row.outcome = Outcome::CutByFault;
            row.duration_ms =
                Some(u64::try_from(arrived.elapsed().as_millis()).unwrap_or(u64::MAX));
            state.journal.push(row);
            control.kill();
            return Err(BodyCut::Reset);
        }
        Plan::Error(status) => {
            let body = wire::error_body(provider, &request.model, &vendor_request_id, &status);
            row.status = Some(status.code);
            row.bytes_written = body.len() as u64;
            row.outcome = Outcome::Rejected(status.code);
            row.duration_ms =
                Some(u64::try_from(arrived.elapsed().as_millis()).unwrap_or(u64::MAX));
            state.journal.push(row);
            let mut res = json_response(status.code, body);
            retry_hints(&status, res.headers_mut());
            res
        }
        Plan::Body {
            steps,
            end,
            exact_len,
        } => {
            row.status = Some(200);
            state.journal.push(row);
            let link = JournalLink {
                journal: state.journal.clone(),
                seq,
                arrived,
            };
            let body = ChaosBody::played(
                steps,
                Arc::new(ctx),
                end,
                exact_len,
                link,
                control,
                state.shutdown.clone(),
            );
            let mut res = Response::new(body);
            let headers = res.headers_mut();
            if request.stream {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            } else {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
            res
        }
    };
    let headers = res.headers_mut();
    if let (Some(name), Some(value)) = (
        request_id_header(provider),
        header_value(&vendor_request_id),
    ) {
        headers.insert(name, value);
    }
    headers.insert(SEQ_HEADER, HeaderValue::from(seq));
    if let Some(value) = header_value(&applied) {
        headers.insert(APPLIED_HEADER, value);
    }
    Ok(res)
}

/// `retry-after`, `retry-after-ms` and `x-should-retry` of a `status` fault.
fn retry_hints(status: &StatusFault, headers: &mut http::HeaderMap) {
    if let Some(secs) = status.retry_after {
        let value = if status.retry_after_date {
            httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(secs))
        } else {
            secs.to_string()
        };
        if let Some(value) = header_value(&value) {
            headers.insert(RETRY_AFTER, value);
        }
    }
    if let Some(ms) = status.retry_after_ms {
        headers.insert(
            HeaderName::from_static("retry-after-ms"),
            HeaderValue::from(ms),
        );
    }
    if let Some(retry) = status.x_should_retry {
        headers.insert(
            HeaderName::from_static("x-should-retry"),
            HeaderValue::from_static(if retry { "true" } else { "false" }),
        );
    }
}

/// `/v1beta/models/{model}:{action}` → (model, stream).
fn gemini_route(path: &str, query: &str) -> Result<(String, bool), Rejection> {
    let rest = path.strip_prefix("/v1beta/models/").unwrap_or_default();
    let not_found = || {
        Rejection::new(
            404,
            "no_route",
            format!(
                "seawall-chaos: expected /v1beta/models/{{model}}:generateContent or :streamGenerateContent, got {path}"
            ),
        )
    };
    let (model, action) = rest.split_once(':').ok_or_else(not_found)?;
    if model.is_empty() {
        return Err(not_found());
    }
    match action {
        "generateContent" => Ok((model.to_owned(), false)),
        "streamGenerateContent" => {
            if query.split('&').any(|kv| kv == "alt=sse") {
                Ok((model.to_owned(), true))
            } else {
                Err(Rejection::new(
                    400,
                    "sse_only",
                    "seawall-chaos: streamGenerateContent is served as SSE only; add ?alt=sse",
                ))
            }
        }
        _ => Err(not_found()),
    }
}

fn parse_request(
    provider: Provider,
    body: &[u8],
    model_in_path: Option<String>,
    stream_by_path: Option<bool>,
) -> Result<RequestShape, Rejection> {
    let invalid = |e: serde_json::Error| {
        Rejection::new(
            400,
            "invalid_json",
            format!("seawall-chaos: request body is not valid JSON: {e}"),
        )
    };
    match (model_in_path, stream_by_path) {
        (Some(model), Some(stream)) => {
            let mut fields: RequestFields = serde_json::from_slice(body).map_err(invalid)?;
            Ok(RequestShape {
                model,
                stream,
                include_usage: false,
                continues_after: continues_after(&fields.turns(provider)),
            })
        }
        _ => {
            let mut fields: RequestFields = serde_json::from_slice(body).map_err(invalid)?;
            let turns = fields.turns(provider);
            Ok(RequestShape {
                model: fields.model.unwrap_or_else(|| "chaos-model".to_owned()),
                stream: fields.stream,
                include_usage: provider == Provider::OpenAi
                    && fields.stream_options.is_some_and(|o| o.include_usage),
                continues_after: continues_after(&turns),
            })
        }
    }
}

#[derive(Deserialize)]
struct ScriptRequest {
    route: String,
    faults: Vec<String>,
}

async fn admin(state: &State, req: Request<Incoming>) -> Response<ChaosBody> {
    let error = |status: u16, code: &str, message: String| {
        json_response(
            status,
            serde_json::json!({"error": {"message": message, "code": code}}).to_string(),
        )
    };
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    match (method, path.as_str()) {
        (Method::GET, "/_chaos/journal") => json_response(
            200,
            serde_json::to_string(&state.journal.snapshot()).unwrap_or_else(|_| "[]".to_owned()),
        ),
        (Method::POST, "/_chaos/reset") => {
            state.reset();
            json_response(200, r#"{"reset":true}"#.to_owned())
        }
        (Method::POST, "/_chaos/script") => {
            let body = match read_capped(req, MAX_ADMIN_BODY).await {
                Ok(body) => body,
                Err(ReadError::TooLarge) => {
                    return error(
                        413,
                        "request_too_large",
                        format!("script exceeds {MAX_ADMIN_BODY} bytes"),
                    );
                }
                Err(ReadError::Client(e)) => return error(400, "unreadable_body", e),
            };
            let script: ScriptRequest = match serde_json::from_slice(&body) {
                Ok(script) => script,
                Err(e) => {
                    return error(
                        400,
                        "invalid_json",
                        format!(
                            "expected {{\"route\":\"openai\",\"faults\":[\"status;code=503\",\"ok\"]}}: {e}"
                        ),
                    );
                }
            };
            let provider: Provider = match script.route.parse() {
                Ok(provider) => provider,
                Err(e) => return error(400, "unknown_route", e.to_string()),
            };
            let mut faults = Vec::with_capacity(script.faults.len());
            for (i, text) in script.faults.iter().enumerate() {
                match text.parse::<Fault>() {
                    Ok(fault) => faults.push(fault),
                    Err(e) => return error(400, e.code(), format!("faults[{i}]: {e}")),
                }
            }
            let queued = faults.len();
            state.set_script(provider, faults);
            json_response(
                200,
                serde_json::json!({"route": provider.as_str(), "queued": queued}).to_string(),
            )
        }
        (method, path) => error(
            404,
            "no_route",
            format!("seawall-chaos: no admin route {method} {path}"),
        ),
    }
}
