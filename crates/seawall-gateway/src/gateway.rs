//! The gateway: routes and models resolved, stacks built once, the axum
//! handlers.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::Poll;

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use seawall::core::{AnswerBy, Code, Deadline, Failure, Receipt, RequestFacts};
use seawall::fallback::ServedBy;
use seawall::stream::StreamReportHandle;
use seawall_internal::json::RequestMembers;
use tower::ServiceExt;

use crate::config::{ANY_MODEL, Config, Endpoint, Wire};
use crate::cut::Cuts;
use crate::relay::{Counters, End, Relay, Stats, Tracker, describe};
use crate::secret::{Redactor, Secret};
use crate::upstream::{ClientCall, Shared, Target, Upstream, connection_options};
use crate::wire_error::{ATTEMPTS_HEADER, SERVED_BY_HEADER, WireError};

/// The header a client may present the gateway's token in instead of
/// `Authorization: Bearer`, leaving `Authorization` for its own key.
pub const TOKEN_HEADER: &str = "x-seawall-token";

/// How long a request body may go without a byte before it is refused
/// with a 408: between two reads (nginx's `client_body_timeout`), not
/// over the whole upload, whose time grows with its size (8 MiB at
/// 1 Mbit/s takes 67 s, and was refused). A client that stopped sending
/// holds its slot no longer than this.
const BODY_READ_GAP: std::time::Duration = std::time::Duration::from_secs(60);

/// The slowest a whole request body may arrive, in bytes a second, past
/// one [`BODY_READ_GAP`]: the gap alone bounds nothing (a byte every 59 s
/// held a connection for as long as the cap lasted), so the whole read is
/// bounded by [`body_read_bound`], a minute and the cap's worth at this
/// rate (18 min for the default 8 MiB), far past what a slow but honest
/// link takes.
const BODY_FLOOR_RATE: u64 = 8 * 1024;

/// How long a whole request body under a cap of `cap` bytes may take.
fn body_read_bound(cap: usize) -> std::time::Duration {
    let at_floor = std::time::Duration::from_secs(cap as u64 / BODY_FLOOR_RATE);
    BODY_READ_GAP.saturating_add(at_floor)
}

/// How reading a request body ended ([`read_body`]).
enum BodyRead {
    /// The body, whole.
    Whole(Bytes),
    /// Nothing came for [`BODY_READ_GAP`].
    Stopped,
    /// Not whole within this ([`body_read_bound`]).
    TooSlow(std::time::Duration),
    /// The body failed, or passed the cap (a [`LengthLimitError`]).
    Failed(axum::BoxError),
}

/// Reads `body` whole, up to `cap` bytes (past it, `Failed` with a
/// [`LengthLimitError`]), within [`BODY_READ_GAP`] of each frame and
/// [`body_read_bound`] of the start.
async fn read_body(body: &mut Unread, cap: usize) -> BodyRead {
    let bound = body_read_bound(cap);
    let mut limited = Limited::new(body, cap);
    let read = async {
        // Memory stays within the cap: `Limited` fails past it.
        let mut chunks: Vec<Bytes> = Vec::new();
        loop {
            match tokio::time::timeout(BODY_READ_GAP, limited.frame()).await {
                Err(_) => return BodyRead::Stopped,
                Ok(None) => break,
                Ok(Some(Err(err))) => return BodyRead::Failed(err),
                // Trailers are not read (as `collect().to_bytes()`).
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        chunks.push(data);
                    }
                }
            }
        }
        BodyRead::Whole(match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop().unwrap_or_default(),
            _ => {
                let mut whole = bytes::BytesMut::with_capacity(chunks.iter().map(Bytes::len).sum());
                for chunk in &chunks {
                    whole.extend_from_slice(chunk);
                }
                whole.freeze()
            }
        })
    };
    tokio::time::timeout(bound, read)
        .await
        .unwrap_or(BodyRead::TooSlow(bound))
}

/// How long, and how much, of a refused request's body is read and thrown
/// away while the refusal is written ([`drain`]).
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);
const DRAIN_BYTES: usize = 16 * 1024 * 1024;

/// Whether the client asked `Expect: 100-continue`: it sent no body yet
/// and is not asked for it if the request is refused (polling the body
/// would send the `100`).
fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Reads and throws away what is left of a refused request's body, for a
/// while, in the background, as the refusal is written. Dropped unread,
/// the bytes still coming make the kernel answer them with a reset once
/// the connection closes (RFC 9112, 9.6), which can erase the refusal
/// before the client reads it: a client that writes its whole body before
/// it reads (httpx, so openai-python and anthropic's SDK) saw a broken
/// connection instead of the 401 or 413, retried it, and sent the upload
/// again.
fn drain(body: Body, expects_continue: bool, cap: usize) {
    // Nothing left to read, or nothing to ask for: no task. Outside a
    // runtime (a router dropped by a test's thread) there is no one to
    // read it.
    if expects_continue || http_body::Body::is_end_stream(&body) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut left = DRAIN_BYTES.max(cap.saturating_mul(2));
    runtime.spawn(async move {
        let mut body = body;
        let read = async {
            while let Some(Ok(frame)) = body.frame().await {
                let n = frame.data_ref().map_or(0, Bytes::len);
                if n >= left {
                    break;
                }
                left -= n;
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, read).await;
    });
}

/// A request's body that is [drained](drain) if it is dropped before its
/// end: every refusal `Gateway::handle` returns before the body is whole
/// (a wrong token, an encoded or oversized body, one too slow) leaves it
/// so, and any refusal added later is covered without a call to
/// remember. A body read to its end, or that failed (the client went
/// away), is dropped as it is.
struct Unread {
    body: Body,
    ended: bool,
    expects_continue: bool,
    cap: usize,
}

impl Unread {
    fn new(body: Body, headers: &HeaderMap, cap: usize) -> Self {
        Self {
            body,
            ended: false,
            expects_continue: expects_continue(headers),
            cap,
        }
    }
}

impl http_body::Body for Unread {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.ended = true;
        }
        // Polled, the body asked for the rest with its `100 Continue`: the
        // client is sending it, and a refusal from here on drains it.
        self.expects_continue = false;
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Unread {
    fn drop(&mut self) {
        if !self.ended {
            drain(
                std::mem::take(&mut self.body),
                self.expects_continue,
                self.cap,
            );
        }
    }
}

/// `response` with `Connection: close`: hyper closes the connection once
/// it is written.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The name of a variable as an error shows it: a name of capitals,
/// digits and underscores as it is; anything else in its place, which may
/// be the key itself written where its variable's name belongs
/// (`key_env = "sk-…"`), is not shown.
fn shown_var(var: &str) -> String {
    let plain = !var.is_empty()
        && var.len() <= 64
        && !var.starts_with(|c: char| c.is_ascii_digit())
        && var
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if plain {
        var.to_owned()
    } else {
        "named (not shown: it is no variable's name in capitals; is it the key itself?)".to_owned()
    }
}

/// The headers in which the official OpenAI and Anthropic SDKs say how
/// long they wait for the server, in seconds (`"600.0"`, `"5"`): the
/// Python SDKs send their read timeout in `x-stainless-read-timeout`
/// (Anthropic's in `x-stainless-timeout` too); the TypeScript SDKs send
/// their timeout in `x-stainless-timeout`, in whole seconds, which bounds
/// the wait for the response to begin. Anthropic's sends it on every
/// Messages call (its default filled in); OpenAI's only for a timeout
/// given per request: its headers are built from the request's own
/// options, before the client's default is filled in, so a call with the
/// default states no wait (a stream asked for from Node is bounded by
/// Node's own wait for the head all the same). Where both come, the
/// shorter decides.
pub const CLIENT_TIMEOUT_HEADERS: [&str; 2] = ["x-stainless-read-timeout", "x-stainless-timeout"];

/// How long Node's built-in `fetch` (undici) waits for a response's head
/// by default (its `headersTimeout`), whatever timeout the SDK above it
/// was given: openai-node from 5.0 and Anthropic's TypeScript SDK from
/// 0.50 run on it, and past it both raise a timeout and send the whole
/// request again (twice by default). A call whose head is held past it is
/// run upstream three times, each generation billed, and ends in the
/// SDK's timeout error: a stream held until its first text (a reasoning
/// model thinking for minutes), or a whole answer that takes longer to
/// write. Older releases of both fetch with node-fetch over
/// `http.request`, which waits for a head as long as the SDK does.
const NODE_HEADERS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The header in which a Node client that changed undici's
/// `headersTimeout` (a dispatcher of its own) states it, in seconds, `0`
/// for none: the gateway then waits that long, not undici's default of
/// 300 s, before it hands a stream on or answers a whole call with a 504.
/// Stating it says the client is on undici, whatever its SDK. Never
/// forwarded upstream.
pub const NODE_HEADERS_TIMEOUT_HEADER: &str = "x-seawall-headers-timeout";

/// Whether the Vercel AI SDK on Node sent the call: its `user-agent`
/// names `ai-sdk/` and the runtime (`runtime/node.js/v20.20.2`, or
/// `runtime/Node.js/22` where Node gives `navigator.userAgent`). It sends
/// no `x-stainless-*` headers, fetches with Node's own `fetch` (undici),
/// and retries a timeout waiting for the head as any other network error
/// (`isRetryable`): a call held past undici's wait is run again whole.
fn ai_sdk_on_node(headers: &HeaderMap) -> bool {
    let Some(agent) = headers
        .get(http::header::USER_AGENT)
        .map(|agent| agent.as_bytes().to_ascii_lowercase())
    else {
        return false;
    };
    let has = |needle: &[u8]| agent.windows(needle.len()).any(|w| w == needle);
    has(b"ai-sdk/") && has(b"runtime/node.js/")
}

/// Whether a JavaScript SDK's own headers say it fetches with undici
/// (Node's built-in `fetch`), so that undici's 300 s wait for a head
/// bounds a whole answer too: openai-node from 5.0 (4.x fetches with
/// node-fetch), Anthropic's TypeScript SDK from 0.50.0 (its migration
/// guide: "relies on the builtin Web fetch API instead of `node-fetch`";
/// 0.41.0 was the last on node-fetch). Anthropic's is told apart by the
/// `anthropic-version` header it always sends: its versions are 0.x,
/// openai-node's 4 and up. An SDK not recognised reads as not on undici:
/// a whole answer cut at a bound its client never had is billed and lost,
/// where one left to the SDK's own timeout is at worst sent again.
fn sdk_on_undici(headers: &HeaderMap) -> bool {
    let js = headers
        .get("x-stainless-lang")
        .is_some_and(|lang| lang.as_bytes().eq_ignore_ascii_case(b"js"));
    // `major.minor`, from "5.23.2" or "0.50.0-alpha.1".
    let version = headers
        .get("x-stainless-package-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let mut parts = v.trim().split(['.', '-', '+']);
            let major: u32 = parts.next()?.parse().ok()?;
            let minor: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
            Some((major, minor))
        });
    let Some(version) = version.filter(|_| js) else {
        return false;
    };
    if headers.contains_key("anthropic-version") {
        version >= (0, 50)
    } else {
        version >= (5, 0)
    }
}

/// How long the client waits for the gateway's first byte, by its own
/// word ([`CLIENT_TIMEOUT_HEADERS`]), less a margin: its clock started
/// before the gateway's, and an answer that arrives as it gives up is an
/// answer it never reads. A missing, malformed or non-positive value reads
/// as none stated (`"0"` is how the TypeScript SDKs write a timeout under
/// a second). A call from Node (`x-stainless-runtime: node`) on undici
/// waits no longer than undici's wait for the head
/// ([`NODE_HEADERS_TIMEOUT`], or what [`NODE_HEADERS_TIMEOUT_HEADER`]
/// says), stated or not. A stream is handed on early and loses nothing,
/// so every Node stream is bounded. A whole answer cannot be handed on:
/// it ends in a 504 the SDK does not retry, one ladder run where the
/// SDK's own timeout would have run it three times over, but only for a
/// client known to be on undici ([`sdk_on_undici`], the Vercel AI SDK on
/// Node ([`ai_sdk_on_node`]), or the header stated, with or without
/// `x-stainless-runtime`): one on node-fetch would have waited, and its
/// answer is lost.
///
/// Past that wait the SDK raises a timeout and, by default, sends the
/// request again: a ladder that outlives the client is run again whole
/// (one SDK call with a 5 s timeout over a 429 with `Retry-After: 3` made
/// six upstream calls and ended in the SDK's timeout, the 429 never seen).
fn client_wait(headers: &HeaderMap, stream: bool) -> Option<std::time::Duration> {
    const MARGIN: std::time::Duration = std::time::Duration::from_secs(1);
    // A day: past that, the value is no bound anyone waits out.
    const LONGEST: f64 = 86_400.0;
    let seconds = |name: &str| -> Option<f64> {
        let seconds: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (!seconds.is_nan()).then_some(seconds)
    };
    // NaN too: no wait is stated.
    let stated = |name: &str| seconds(name).filter(|&s| s > 0.0);
    let bound = |seconds: f64| std::time::Duration::from_secs_f64(seconds.min(LONGEST));
    let said = CLIENT_TIMEOUT_HEADERS
        .into_iter()
        .filter_map(stated)
        .reduce(f64::min)
        .map(bound);
    // A client that states undici's bound is on undici, whatever else it
    // sends (the Vercel AI SDK sends no `x-stainless-runtime`).
    let stated_undici = headers.contains_key(NODE_HEADERS_TIMEOUT_HEADER);
    let on_undici = stated_undici || ai_sdk_on_node(headers);
    let on_node = on_undici
        || headers
            .get("x-stainless-runtime")
            .is_some_and(|runtime| runtime.as_bytes().eq_ignore_ascii_case(b"node"));
    let bounded = on_node && (stream || on_undici || sdk_on_undici(headers));
    // undici's `headersTimeout` as the client set it: `0` is none, as in
    // undici; a malformed or negative value is undici's default.
    let undici = match seconds(NODE_HEADERS_TIMEOUT_HEADER).filter(|&s| s >= 0.0) {
        _ if !bounded => None,
        Some(0.0) => None,
        Some(seconds) => Some(bound(seconds)),
        None => Some(NODE_HEADERS_TIMEOUT),
    };
    let wait = said.into_iter().chain(undici).min()?;
    Some(wait - (wait / 10).min(MARGIN))
}

/// The host of `base_url` when a request to it leaves this machine in
/// cleartext: an `http://` URL whose host is not loopback (`localhost`,
/// `127.0.0.0/8`, `::1`). A keyed route there is served all the same (a
/// provider on a private network behind its own encryption is one), with
/// a warning at start.
fn cleartext_host(base_url: &str) -> Option<String> {
    let uri: http::Uri = base_url.parse().ok()?;
    if !uri.scheme_str()?.eq_ignore_ascii_case("http") {
        return None;
    }
    let host = uri.host()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let name = bare.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    (!loopback).then(|| host.to_owned())
}

/// The shortest gateway token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// The shortest route key accepted: the redactor scrubs keys from error
/// text, and no shorter value can be told from ordinary words.
pub const MIN_KEY_LEN: usize = crate::secret::MIN_SECRET_LEN;

/// Why the gateway will not start. Messages name variables and routes,
/// never a key's or token's value. More reasons may come: a match on it
/// needs a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The configuration could not be read, or is invalid: its own words,
    /// and its [`source`](std::error::Error::source) (an unreadable
    /// file's io error).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A key or token variable is not set, or set but empty.
    #[error(
        "seawall gateway: {what}: the environment variable {var} is {}",
        if *empty { "set but empty" } else { "not set" }
    )]
    MissingEnv {
        /// Which setting needs it.
        what: String,
        /// The variable's name.
        var: String,
        /// Whether it is set, to an empty value.
        empty: bool,
    },
    /// The configuration would expose routes' keys.
    #[error("seawall gateway: {0}")]
    Unsafe(String),
    /// The address could not be bound.
    #[error("seawall gateway: cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why: the [`source`](std::error::Error::source).
        source: std::io::Error,
    },
}

#[derive(Clone)]
struct Model {
    wire: Wire,
    primary: Arc<Target>,
    /// One stack per endpoint of the wire, in [`Wire::endpoints`] order.
    services: Vec<(Endpoint, Upstream)>,
}

impl Model {
    fn service(&self, endpoint: Endpoint) -> Option<&Upstream> {
        self.services
            .iter()
            .find(|(served, _)| *served == endpoint)
            .map(|(_, service)| service)
    }
}

struct Inner {
    config: Config,
    token: Option<Secret>,
    models: HashMap<String, Model>,
    any: Option<Model>,
    counters: Arc<Counters>,
    redactor: Arc<Redactor>,
    /// The requests in flight, cut when the shutdown grace period is over.
    cuts: Cuts,
    /// A permit per open client connection (`Config::max_connections`),
    /// shared by every serving thread.
    pub(crate) connections: Arc<tokio::sync::Semaphore>,
}

/// The gateway: one seawall stack per model, built once; every request
/// clones it, so breakers and the retry budget are shared by all requests.
/// Cheap to clone.
///
/// # Upstream requests
///
/// Each route's request carries the client's body and a few of its
/// headers (content type, `accept`, the providers' version and beta
/// headers, never its cookies or credentials), the route's key or the
/// client's own, and `Via: 1.1 seawall` after any `Via` the client sent:
/// an HTTP-to-HTTP gateway names itself in each request it forwards (RFC
/// 9110, 7.6.3). Two seawall gateways in a chain both name themselves so;
/// neither takes that for a loop.
///
/// # Metrics
///
/// seawall's layers record through the `metrics` facade, into the recorder
/// installed for the whole process. With the `metrics` feature (on by
/// default), building the first gateway in a process installs a
/// Prometheus recorder, only if no recorder is installed yet, and
/// `GET /metrics` renders it; a thread named `seawall-upkeep` drains its
/// histogram samples every 5 s, so a gateway nobody scrapes does not grow.
/// An app that nests [`Gateway::router`] and
/// has a recorder of its own installs it *before* building the gateway:
/// the gateway then takes nothing, seawall's metrics go to the app's
/// recorder (their names in `seawall::core::metric_names`), and the
/// gateway's `/metrics` answers 404 rather than show them. A recorder
/// installed after the gateway was built is refused, as the `metrics`
/// facade refuses any second one.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("listen", &self.inner.config.listen)
            .field("models", &self.inner.config.models)
            .field("token", &self.inner.token)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the gateway, reading keys and the token from the process
    /// environment. The first one built installs the process's metrics
    /// recorder unless one is installed ([metrics](Gateway#metrics)).
    pub fn new(config: Config) -> Result<Gateway, GatewayError> {
        Gateway::with_env(config, |name| std::env::var(name).ok())
    }

    /// Builds the gateway, reading keys and the token with `env` (tests
    /// pass a map; the binary the process environment); the metrics
    /// recorder as [`Gateway::new`] does.
    pub fn with_env(
        config: Config,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Gateway, GatewayError> {
        config.validate()?;
        // The recorder must be in place before the first request records.
        #[cfg(feature = "metrics")]
        let _ = prometheus();
        let read = |what: String, var: &str| match env(var) {
            Some(value) if !value.is_empty() => Ok(Secret::new(value)),
            value => Err(GatewayError::MissingEnv {
                what,
                var: shown_var(var),
                empty: value.is_some(),
            }),
        };
        let mut redactor = Redactor::default();
        let token = match &config.token_env {
            Some(var) => {
                let token = read("the gateway token (token_env)".into(), var)?;
                if token.expose().len() < MIN_TOKEN_LEN {
                    return Err(GatewayError::Unsafe(format!(
                        "the gateway token in {var} is shorter than {MIN_TOKEN_LEN} characters"
                    )));
                }
                // As a route's key: a token read from a file written on
                // Windows ends in CR, pasted it may carry a space. No
                // client can send it as it is (a header's value loses its
                // trailing blanks), so every call would get a 401 while
                // /healthz said all was well.
                if !token.expose().bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(GatewayError::Config(crate::config::ConfigError::Invalid(
                        format!(
                            "the gateway token in {} holds a space, a line end or another \
                             character a header cannot carry",
                            shown_var(var)
                        ),
                    )));
                }
                redactor.push(&token);
                Some(token)
            }
            None => None,
        };
        let mut targets = HashMap::new();
        for route in &config.routes {
            let key = match &route.key_env {
                Some(var) => {
                    let key = read(format!("route `{}` key", route.name), var)?;
                    // A shorter value could not be scrubbed from error text
                    // without scrubbing ordinary words with it.
                    if key.expose().len() < MIN_KEY_LEN {
                        return Err(GatewayError::Unsafe(format!(
                            "route `{}`: the key in {var} is shorter than {MIN_KEY_LEN} \
                             characters: it could not be kept out of error messages",
                            route.name
                        )));
                    }
                    // A key read from a file written on Windows ends in CR;
                    // pasted, it may carry a space. No header carries it
                    // as it is: refused here, not on every request (as the
                    // client's bad request) or, on a fallback, never sent.
                    if !key.expose().bytes().all(|b| b.is_ascii_graphic()) {
                        return Err(GatewayError::Config(crate::config::ConfigError::Invalid(
                            format!(
                                "route `{}`: the key in {var} holds a space, a line end or \
                                 another character a header cannot carry",
                                route.name
                            ),
                        )));
                    }
                    if let Some(host) = cleartext_host(&route.base_url) {
                        tracing::warn!(
                            target: "seawall::gateway",
                            route = %route.name,
                            host = %host,
                            "the route's key goes over plain http:// to a host beyond this \
                             machine: whoever is on the way can read it; use https://"
                        );
                    }
                    redactor.push(&key);
                    Some(key)
                }
                None => None,
            };
            targets.insert(route.name.clone(), Arc::new(Target::new(route, key)));
        }
        if token.is_none() {
            if let Some(keyed) = config.routes.iter().find(|r| r.key_env.is_some()) {
                return Err(GatewayError::Unsafe(format!(
                    "route `{}` carries its own key: set --token-env (token_env) so only \
                     clients holding the gateway's token can spend it",
                    keyed.name
                )));
            }
            if !config.listen.ip().is_loopback() {
                return Err(GatewayError::Unsafe(format!(
                    "{} is not a loopback address: set --token-env (token_env) before \
                     listening beyond this machine",
                    config.listen
                )));
            }
        }
        let shared = Shared::new(config.policy.clone(), config.max_body_bytes);
        let mut models = HashMap::new();
        let mut any = None;
        for (name, routes) in &config.models {
            let primary = &targets[&routes[0]];
            let fallbacks: Vec<_> = routes[1..]
                .iter()
                .map(|r| Arc::clone(&targets[r]))
                .collect();
            let model = Model {
                wire: primary.wire,
                primary: Arc::clone(primary),
                services: primary
                    .wire
                    .endpoints()
                    .iter()
                    .map(|&endpoint| (endpoint, shared.model(endpoint, primary, &fallbacks)))
                    .collect(),
            };
            if name == ANY_MODEL {
                any = Some(model);
            } else {
                models.insert(name.clone(), model);
            }
        }
        let config_max_connections = config.max_connections;
        Ok(Gateway {
            inner: Arc::new(Inner {
                config,
                token,
                models,
                any,
                counters: Arc::default(),
                redactor: Arc::new(redactor),
                cuts: Cuts::default(),
                connections: Arc::new(tokio::sync::Semaphore::new(
                    config_max_connections.min(tokio::sync::Semaphore::MAX_PERMITS),
                )),
            }),
        })
    }

    /// Ends every request in flight, and every later one: a stream with
    /// the final error event, a request not yet answered with a 503.
    /// `serve` does this when its shutdown grace period is over.
    pub(crate) fn cut_all(&self) {
        self.inner.cuts.cut_all();
    }

    /// The permits for client connections, shared by every serving thread.
    pub(crate) fn connection_slots(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.inner.connections
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// How requests have ended so far.
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot()
    }

    /// The axum app: every [`Endpoint`] (`POST /v1/chat/completions`,
    /// `/v1/responses`, `/v1/embeddings`, `/v1/messages`,
    /// `/v1/messages/count_tokens`; OpenAI's also without `/v1`),
    /// `GET /v1/models` and `GET /v1/models/{id}` (each also without `/v1`),
    /// `GET /healthz`, `GET /metrics`
    /// (Prometheus text: seawall's metrics, `seawall::core::metric_names`;
    /// see [metrics](Gateway#metrics)). When the gateway has a token
    /// (`token_env`), every path but `/healthz` asks for it. Serve it with
    /// [`Gateway::serve`], or nest it in an app of your own. A wrong method
    /// on these paths is a 405 in the path's wire shape; a path it does not
    /// serve is left to the app (no fallback of its own, so merging it into
    /// an app with one does not panic): `serve` answers those with
    /// [`Gateway::unknown_path`]. Merging it into an app that routes one of
    /// these paths itself (`/models`, `/chat/completions` included) panics,
    /// as axum does for any overlap: nest it under a prefix instead.
    pub fn router(&self) -> Router {
        Router::new()
            .route(Endpoint::ChatCompletions.path(), post(chat_completions))
            .route(Endpoint::Responses.path(), post(responses))
            .route(Endpoint::Embeddings.path(), post(embeddings))
            .route(Endpoint::Messages.path(), post(messages))
            .route(Endpoint::CountTokens.path(), post(count_tokens))
            .route(MODELS_PATH, get(models))
            .route(MODEL_PATH, get(model))
            // OpenAI's endpoints also without `/v1`: an OpenAI SDK given the
            // gateway's bare address as its base URL calls them so.
            .route(
                unversioned(Endpoint::ChatCompletions),
                post(chat_completions),
            )
            .route(unversioned(Endpoint::Responses), post(responses))
            .route(unversioned(Endpoint::Embeddings), post(embeddings))
            .route(UNVERSIONED_MODELS_PATH, get(models))
            .route(UNVERSIONED_MODEL_PATH, get(model))
            .route("/healthz", get(health))
            .route(METRICS_PATH, get(metrics_text))
            // axum's own 405 has an empty body: an SDK shows only the
            // status. This one speaks the wire the path looks like.
            .method_not_allowed_fallback(wrong_method)
            // axum's default is 2 MB; the gateway's own cap rules (and is
            // checked without buffering past it, in `handle`).
            .layer(DefaultBodyLimit::max(self.inner.config.max_body_bytes))
            .with_state(self.clone())
    }

    async fn handle(&self, endpoint: Endpoint, request: Request) -> Response {
        // The client's wait began when it sent the request: the upload
        // counts against it (openai-node and anthropic's TypeScript SDK
        // arm their timer around the whole fetch).
        let entered = tokio::time::Instant::now();
        let inner = &*self.inner;
        let wire = endpoint.wire();
        let (parts, body) = request.into_parts();
        let refuse_with = |error: WireError| {
            inner.counters.refused();
            tracing::info!(
                target: "seawall::gateway",
                wire = wire.as_str(),
                endpoint = endpoint.path(),
                status = u16::from(error.status),
                code = error.code,
                "request refused"
            );
            // The connection is closed after a refusal: a client refused
            // before it showed a token keeps no connection open (one that
            // held many idle took every descriptor).
            closing(error.response(wire))
        };
        let refuse =
            |status, code, message: String| refuse_with(WireError::gateway(status, code, message));
        let cap = inner.config.max_body_bytes;
        // Every refusal before the body is whole drains it, by drop.
        let mut body = Unread::new(body, &parts.headers, cap);
        // No header holding the token is forwarded (`client_credential`).
        if !self.admits(&parts.headers) {
            return refuse(StatusCode::UNAUTHORIZED, Code::Auth, TOKEN_NEEDED.into());
        }
        // A compressed request body would be read as text that is not
        // UTF-8 ("not JSON"): say what is wrong instead. (No SDK
        // compresses its requests; the providers take none either.)
        if let Some(encoding) = parts
            .headers
            .get(http::header::CONTENT_ENCODING)
            .filter(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
        {
            let mut refused = refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::BadRequest,
                format!(
                    "the request body is encoded ({}): send it uncompressed",
                    String::from_utf8_lossy(encoding.as_bytes())
                ),
            );
            // Which codings a request body may have (RFC 9110, 12.5.3 and
            // 15.5.16): none but the identity.
            refused.headers_mut().insert(
                http::header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
            return refused;
        }
        let too_large =
            || format!("the request body is larger than the gateway's cap of {cap} bytes");
        let announced = seawall_internal::headers::declared_length(&parts.headers);
        if announced.is_some_and(|len| len > cap as u64) {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                Code::RequestTooLarge,
                too_large(),
            );
        }
        // Read through a borrow: a body past the cap is drained after.
        let bytes = match read_body(&mut body, cap).await {
            BodyRead::Whole(bytes) => bytes,
            BodyRead::Stopped => {
                return refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    Code::Timeout,
                    format!(
                        "the request body stopped arriving: nothing came for {} s",
                        BODY_READ_GAP.as_secs()
                    ),
                );
            }
            BodyRead::TooSlow(bound) => {
                return refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    Code::Timeout,
                    format!(
                        "the request body did not arrive within {} s (a minute, and {} KiB/s \
                         for the gateway's cap of {cap} bytes)",
                        bound.as_secs(),
                        BODY_FLOOR_RATE / 1024
                    ),
                );
            }
            BodyRead::Failed(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
                return refuse(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Code::RequestTooLarge,
                    too_large(),
                );
            }
            BodyRead::Failed(err) if client_went_away(&*err) => {
                inner.counters.went_away();
                tracing::info!(
                    target: "seawall::gateway",
                    wire = wire.as_str(),
                    endpoint = endpoint.path(),
                    "client went away before its request was whole"
                );
                // Nobody reads it.
                return StatusCode::BAD_REQUEST.into_response();
            }
            BodyRead::Failed(_) => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    Code::BadRequest,
                    "the request body could not be read".into(),
                );
            }
        };
        // Only `model` and `stream` are read: the rest of the body goes
        // upstream as the client sent it, never built into values.
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return refuse(
                StatusCode::BAD_REQUEST,
                Code::BadRequest,
                "the request body is not UTF-8 (JSON must be)".into(),
            );
        };
        let members = match RequestMembers::read(text) {
            Ok(members) => members,
            Err(err) => {
                // serde's words: where the JSON breaks, which member is
                // named twice or has the wrong type.
                return refuse(
                    StatusCode::BAD_REQUEST,
                    Code::BadRequest,
                    format!(
                        "the request body is not a JSON object naming a model: {}",
                        seawall::core::excerpt(&err.to_string(), 160)
                    ),
                );
            }
        };
        // A Responses call may name no model: a stored prompt
        // (`prompt.id`) names its own, and openai-python's
        // `responses.create` leaves `model` out. Only `*` can serve it,
        // as sent (no route renames a model not named).
        let model_name = members.model.as_ref().map(|m| m.0.clone().into_owned());
        let unnamed_response = model_name.is_none() && endpoint == Endpoint::Responses;
        if model_name.is_none() && !(unnamed_response && inner.any.is_some()) {
            let message = if unnamed_response {
                "the request names no \"model\": without one, a /v1/responses call is \
                 served only by a `*` model"
            } else {
                "the request names no \"model\""
            };
            return refuse(StatusCode::BAD_REQUEST, Code::BadRequest, message.into());
        }
        let shown_model = model_name.as_deref().unwrap_or("");
        let stream = members.stream.unwrap_or(false);
        // A background response runs and is stored upstream, to be
        // fetched, cancelled or streamed again by its id
        // (`/v1/responses/{id}`): the gateway relays none of those, since
        // an id does not say which route made it (any rung of a ladder
        // may have). Relayed, the answer would be billed and never read;
        // refused before any call instead.
        if endpoint == Endpoint::Responses && members.background.0 {
            return refuse_with(
                WireError::gateway(
                    StatusCode::BAD_REQUEST,
                    Code::BadRequest,
                    "the gateway cannot relay background responses: a response stored upstream \
                     cannot be fetched, cancelled or resumed through it; ask without \
                     \"background\": true",
                )
                .about("background"),
            );
        }
        let model_span = members.model_token(text);
        let named = model_name.as_ref().and_then(|name| inner.models.get(name));
        let Some(model) = named.or(inner.any.as_ref()) else {
            return refuse(
                StatusCode::NOT_FOUND,
                Code::NotFound,
                format!("no route serves model `{}`", excerpt(shown_model)),
            );
        };
        let Some(service) = model.service(endpoint) else {
            let paths: Vec<_> = model.wire.endpoints().iter().map(|e| e.path()).collect();
            return refuse(
                StatusCode::BAD_REQUEST,
                Code::BadRequest,
                format!(
                    "model `{}` is served over the {} wire format: call {}",
                    excerpt(shown_model),
                    model.wire.as_str(),
                    paths.join(" or ")
                ),
            );
        };
        let call = Arc::new(ClientCall {
            endpoint,
            body: bytes,
            model_span,
            names_model: model_name.is_some(),
            model: model_name.as_deref().map(Arc::from),
            query: parts.uri.query().map(str::to_owned),
            headers: ClientCall::forwarded_headers(&parts.headers),
            credential: client_credential(&parts.headers, wire, inner.token.as_ref()),
        });
        let mut tracker = Tracker::new(Arc::clone(&inner.counters), shown_model, endpoint, stream);
        let mut upstream = match model.primary.request(&call) {
            Ok(request) => request,
            Err(err) => {
                tracker.end(End::Failed, Some(Code::BadRequest.as_str()));
                let message = inner.redactor.scrub(&format!("seawall: {err}"), false);
                return WireError::gateway(StatusCode::BAD_REQUEST, Code::BadRequest, message)
                    .response(wire);
            }
        };
        let facts = model
            .primary
            .told_model(&call, RequestFacts::from_head(&upstream));
        upstream.extensions_mut().insert(facts);
        upstream.extensions_mut().insert(call);
        // The client's own wait bounds the wait for the answer to begin,
        // as an `AnswerBy`: the ladder plans within it (a `Retry-After` it
        // cannot wait out ends it at once, with that answer), and no
        // answer by then is a 504 before the client gives up. A stream
        // that began runs on: the client's read timeout bounds each read,
        // not the whole, and the body keeps the operation's own deadline.
        let wait = client_wait(&parts.headers, stream);
        if let Some(wait) = wait {
            upstream
                .extensions_mut()
                .insert(AnswerBy(Deadline::after_from(entered, wait)));
        }
        // If the client goes away, hyper drops this future (or, once
        // answering, the body): the upstream call is dropped with it and
        // the tracker counts `cancelled`. If the gateway's shutdown grace
        // runs out first, the client is told so (`Cuts`).
        let cut = inner.cuts.register();
        let mut call = std::pin::pin!(service.clone().oneshot(upstream));
        let called = std::future::poll_fn(|cx| match call.as_mut().poll(cx) {
            Poll::Ready(result) => Poll::Ready(Some(result)),
            Poll::Pending if cut.poll(cx) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        })
        .await;
        let Some(called) = called else {
            tracker.end(End::Failed, Some(Code::ProviderUnavailable.as_str()));
            return shutting_down(wire);
        };
        match called {
            Ok(response) => {
                let (mut head, body) = response.into_parts();
                let attempts = head
                    .extensions
                    .get::<Receipt>()
                    .map_or(1, |r| r.calls().max(1));
                let served_by = match head.extensions.get::<ServedBy>() {
                    Some(served) if served.fallback => format!("{}; fallback", served.route),
                    Some(served) => served.route.to_string(),
                    None => model.primary.name.clone(),
                };
                tracker.answered(&served_by, attempts);
                // The stream guard's verdict, not a second reading of the
                // content type: it leaves its report handle on exactly the
                // answers it guards as streams (a type in capitals, or none
                // on a stream the request asked for, included).
                let sse = head.extensions.get::<StreamReportHandle>().is_some();
                if stream && !sse && head.status.is_success() {
                    // A server that ignores `"stream": true` answers whole
                    // (checked: a whole answer). The client's SDK reads an
                    // event stream and finds no event in JSON: an answer
                    // that shows nothing and ends as if done. Say so.
                    tracker.end(End::Failed, Some(Code::ProtocolViolation.as_str()));
                    let mut error = WireError::gateway(
                        StatusCode::BAD_GATEWAY,
                        Code::ProtocolViolation,
                        format!(
                            "seawall: the upstream `{served_by}` answered a stream request with \
                             one whole answer, not an event stream; ask without \"stream\": true"
                        ),
                    );
                    error.attempts = Some(attempts);
                    error.request_id = seawall::core::request_id_of(&head.headers)
                        .and_then(|id| HeaderValue::from_str(id).ok());
                    let mut response = error.response(wire);
                    if let Ok(value) = HeaderValue::from_str(&served_by) {
                        response.headers_mut().insert(SERVED_BY_HEADER, value);
                    }
                    return response;
                }
                strip_upstream_headers(&mut head.headers);
                head.headers
                    .insert(ATTEMPTS_HEADER, HeaderValue::from(attempts));
                // The ladder ran for this answer too: Anthropic's SDK
                // sends a whole call again when its 2xx body breaks while
                // it reads it (a new generation, billed), unless told not
                // to.
                head.headers
                    .insert("x-should-retry", HeaderValue::from_static("false"));
                if let Ok(value) = HeaderValue::from_str(&served_by) {
                    head.headers.insert(SERVED_BY_HEADER, value);
                }
                head.extensions = http::Extensions::new();
                // An answer that may carry no body is whole with its head:
                // hyper's server writes no body for it and drops the one it
                // is given unpolled, so a relay would never see its end and
                // a delivered answer would be counted cancelled.
                if body_forbidden(&parts.method, head.status) {
                    tracker.end(End::Served, None);
                    return Response::from_parts(head, Body::empty());
                }
                let relay = Relay::new(body, endpoint, sse, tracker, Arc::clone(&inner.redactor))
                    .cut_by(cut);
                Response::from_parts(head, Body::new(relay))
            }
            Err(err) => {
                let failure = Failure::find(&*err);
                let mut message = describe(failure, &err, &inner.redactor);
                // Whose bound it was: the client's own timeout (its
                // `AnswerBy`), not the route's or the gateway's deadline.
                if let (Some(wait), Some(failure)) = (wait, failure)
                    && AnswerBy::passed(failure)
                {
                    message.push_str(&format!(
                        "; that is the client's own timeout, {:.1} s less a margin to answer \
                         before it gives up",
                        wait.as_secs_f64()
                    ));
                }
                let mut error = match failure {
                    Some(failure) => WireError::before_content(failure, message)
                        .with_provider_words(failure, &inner.redactor),
                    None => WireError::gateway(StatusCode::BAD_GATEWAY, Code::Unknown, message),
                };
                // The route whose failure this is, the one whose answer (or
                // refusal) goes back: not the receipt's last attempt, which
                // may be a fallback skipped without a call (cooling down)
                // after the primary's answer. The receipt's last only where
                // the failure names no route.
                let answered_by = failure
                    .and_then(Failure::route)
                    .map(|route| route.as_str())
                    .or_else(|| {
                        failure
                            .and_then(Failure::receipt)
                            .and_then(|receipt| receipt.attempts.as_slice().last())
                            .map(|attempt| attempt.route.as_str())
                    });
                // A route's own key refused upstream is the gateway's
                // credential, not the client's: a 401 or 403 would send
                // the client to check a token the gateway accepted.
                let keyed = |route: &str| {
                    inner
                        .config
                        .routes
                        .iter()
                        .any(|r| r.name == route && r.key_env.is_some())
                };
                if matches!(
                    error.status,
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
                ) && answered_by.is_some_and(keyed)
                {
                    error.status = StatusCode::BAD_GATEWAY;
                    // Passed on only with the upstream's own status: they
                    // spoke of the refusal, not of the 502 it now is.
                    error.upstream_headers = None;
                }
                // The route whose answer (or refusal) is returned, as a
                // success names the route that served it: which route
                // failed is what an operator asks first. Beside
                // `x-seawall-attempts`, which counts every attempt. Built
                // once: the log line says it as the header does.
                let served_by = answered_by.map(|route| {
                    if route == model.primary.name {
                        route.to_owned()
                    } else {
                        format!("{route}; fallback")
                    }
                });
                // The upstream calls, as `x-seawall-attempts` counts them:
                // no refusal of seawall's, no call never sent.
                if let Some(receipt) = failure.and_then(Failure::receipt) {
                    tracker.answered(served_by.as_deref().unwrap_or("-"), receipt.calls());
                }
                tracker.end(End::Failed, Some(error.code));
                let mut response = error.response(wire);
                if let Some(value) = served_by.and_then(|s| HeaderValue::from_str(&s).ok()) {
                    response.headers_mut().insert(SERVED_BY_HEADER, value);
                }
                response
            }
        }
    }
}

/// Whether an answer to `method` with `status` has no body by HTTP's own
/// rules (RFC 9110, 6.4.1): a 1xx, a 204, a 304, any answer to a `HEAD`.
fn body_forbidden(method: &http::Method, status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || method == http::Method::HEAD
}

/// A request the gateway could not answer before its shutdown grace ran
/// out: 503, and unlike the ladder's own answers, worth sending again (to
/// another instance; this one no longer listens).
fn shutting_down(wire: Wire) -> Response {
    let message = "seawall: the gateway is shutting down and its grace period for requests \
                   in flight is over; send the request again";
    let mut response = WireError::gateway(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::ProviderUnavailable,
        message,
    )
    .response(wire);
    let headers = response.headers_mut();
    headers.insert("x-should-retry", HeaderValue::from_static("true"));
    // The SDKs wait this out before they send it again: time for a
    // replacement to take the port in a rolling restart.
    headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("2"));
    headers.insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// What a client without the gateway's token is told.
const TOKEN_NEEDED: &str = "the gateway needs its token: send `Authorization: Bearer <token>` \
     (or `x-api-key: <token>`, or `x-seawall-token: <token>`)";

impl Gateway {
    /// Whether a request with `headers` may use the gateway: it has no
    /// token, or the request presents it.
    fn admits(&self, headers: &HeaderMap) -> bool {
        self.inner
            .token
            .as_ref()
            .is_none_or(|token| presents_token(headers, token))
    }

    /// The 401 in `wire`'s shape for a request to a `GET` route that does
    /// not present the gateway's token; `None` when it may go on.
    fn refusal(&self, wire: Wire, headers: &HeaderMap) -> Option<Response> {
        if self.admits(headers) {
            return None;
        }
        self.inner.counters.refused();
        // Closed, as `handle`'s refusals are: hyper's header timer bounds
        // only the idle time between requests, so a client without a token
        // asking every few seconds would keep its connections for ever.
        Some(closing(
            WireError::gateway(StatusCode::UNAUTHORIZED, Code::Auth, TOKEN_NEEDED).response(wire),
        ))
    }

    /// `GET /v1/models`: the models the configuration names, in OpenAI's
    /// list shape, or Anthropic's when the request carries
    /// `anthropic-version` (each lists its own wire's models). Clients
    /// such as chat front ends read it to offer models; models served only
    /// through `*` cannot be listed.
    fn models(&self, headers: &HeaderMap) -> Response {
        let wire = wire_of_call(MODELS_PATH, headers);
        if let Some(refusal) = self.refusal(wire, headers) {
            return refusal;
        }
        let mut names: Vec<&str> = self
            .inner
            .models
            .iter()
            .filter(|(_, model)| model.wire == wire)
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        let data: Vec<_> = names.iter().map(|id| model_entry(wire, id)).collect();
        let body = match wire {
            Wire::OpenAi => serde_json::json!({ "object": "list", "data": data }),
            Wire::Anthropic => serde_json::json!({
                "data": data,
                "has_more": false,
                "first_id": names.first(),
                "last_id": names.last(),
            }),
        };
        json_response(&body)
    }

    /// `GET /v1/models/{id}`: the model as the list shows it, in the same
    /// wire, when a request naming it would be served over that wire (a
    /// model the configuration names, or any name when `*` is routed over
    /// it); else 404 `not_found` in the wire's shape.
    /// `None`: an id that is no UTF-8 once percent-decoded.
    fn model(&self, id: Option<&str>, headers: &HeaderMap) -> Response {
        let wire = wire_of_call(MODELS_PATH, headers);
        if let Some(refusal) = self.refusal(wire, headers) {
            return refusal;
        }
        let Some(id) = id else {
            let message = format!(
                "no route serves a model whose id is not UTF-8 once percent-decoded \
                 (over the {} wire format)",
                wire.as_str()
            );
            return WireError::gateway(StatusCode::NOT_FOUND, Code::NotFound, message)
                .response(wire);
        };
        let inner = &*self.inner;
        let served = inner
            .models
            .get(id)
            .or(inner.any.as_ref())
            .is_some_and(|model| model.wire == wire);
        if !served {
            let message = format!(
                "no route serves model `{}` over the {} wire format",
                excerpt(id),
                wire.as_str()
            );
            return WireError::gateway(StatusCode::NOT_FOUND, Code::NotFound, message)
                .response(wire);
        }
        json_response(&model_entry(wire, id))
    }
}

/// One model as `wire`'s models list shows it.
fn model_entry(wire: Wire, id: &str) -> serde_json::Value {
    match wire {
        Wire::OpenAi => serde_json::json!({
            "id": id, "object": "model", "created": 0, "owned_by": "seawall",
        }),
        Wire::Anthropic => serde_json::json!({
            "type": "model", "id": id, "display_name": id,
            "created_at": "1970-01-01T00:00:00Z",
        }),
    }
}

/// A 200 with `body` as JSON.
fn json_response(body: &serde_json::Value) -> Response {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        Bytes::from(body.to_string()),
    )
        .into_response()
}

/// At most 64 bytes of a client-given name, for messages.
fn excerpt(text: &str) -> &str {
    seawall::core::excerpt(text, 64)
}

/// Whether a header carries the gateway's token: `Authorization: Bearer`
/// (OpenAI SDKs' `api_key`), `x-api-key` (Anthropic SDKs' `api_key`) or
/// `x-seawall-token`. These are where a client can be told to put the
/// token, not every header that may carry a credential
/// (`seawall_internal::headers::CREDENTIAL_HEADERS`).
fn presents_token(headers: &HeaderMap, token: &Secret) -> bool {
    let bearer = headers.get(http::header::AUTHORIZATION).and_then(bearer);
    bearer.is_some_and(|value| token.matches(value))
        || ["x-api-key", TOKEN_HEADER].into_iter().any(|name| {
            headers
                .get(name)
                .is_some_and(|value| token.matches(value.as_bytes()))
        })
}

/// The credentials of an `Authorization: Bearer <credentials>` value; the
/// scheme is case-insensitive (RFC 9110, 11.1) and is followed by one or
/// more spaces (11.4). With exactly one read, a token after two was
/// refused, and, with the token also in `x-seawall-token`, not seen as
/// the gateway's by `client_credential` and forwarded.
fn bearer(value: &HeaderValue) -> Option<&[u8]> {
    let value = value.as_bytes();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.starts_with(b" ") {
        return None;
    }
    Some(rest.trim_ascii_start())
}

/// The client's own key, forwarded only to routes without a key of their
/// own: `x-api-key` for Anthropic (else `Authorization`), `Authorization`
/// for OpenAI — never a header holding the gateway's token: not the one
/// that carried it, nor another (an Anthropic SDK given the token as both
/// its `api_key` and its `auth_token` sends it in both). Which header a
/// wire's SDKs send their key in, not every header that may carry a
/// credential: the others are never forwarded
/// (`ClientCall::forwarded_headers`).
fn client_credential(
    headers: &HeaderMap,
    wire: Wire,
    token: Option<&Secret>,
) -> Option<(HeaderName, HeaderValue)> {
    let own = |name: HeaderName| {
        let value = headers.get(&name)?;
        let held = bearer(value).unwrap_or(value.as_bytes());
        if token.is_some_and(|token| token.matches(held)) {
            return None;
        }
        Some((name, value.clone()))
    };
    let credential = match wire {
        Wire::Anthropic => {
            own(HeaderName::from_static("x-api-key")).or_else(|| own(http::header::AUTHORIZATION))
        }
        Wire::OpenAi => own(http::header::AUTHORIZATION),
    };
    credential.map(|(name, mut value)| {
        value.set_sensitive(true);
        (name, value)
    })
}

/// What of the upstream's answer head does not cross the gateway:
/// hop-by-hop headers, with every header the upstream's `Connection`
/// names (RFC 9110, 7.6.1); the length (the body is relayed frame by
/// frame); cookies; what speaks of the upstream's origin, not the
/// gateway's (`alt-svc`, `strict-transport-security`) or of the account
/// behind a route's key (`openai-organization`, `openai-project`,
/// Anthropic's `anthropic-organization-id`); and any
/// `x-seawall-*` header, which only the gateway sets.
fn strip_upstream_headers(headers: &mut HeaderMap) {
    for name in connection_options(headers) {
        headers.remove(name);
    }
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "set-cookie",
        "alt-svc",
        "strict-transport-security",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
    ] {
        headers.remove(name);
    }
    let ours: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("x-seawall-"))
        .cloned()
        .collect();
    for name in ours {
        headers.remove(name);
    }
}

async fn chat_completions(State(gateway): State<Gateway>, request: Request) -> Response {
    gateway.handle(Endpoint::ChatCompletions, request).await
}

async fn responses(State(gateway): State<Gateway>, request: Request) -> Response {
    gateway.handle(Endpoint::Responses, request).await
}

async fn embeddings(State(gateway): State<Gateway>, request: Request) -> Response {
    gateway.handle(Endpoint::Embeddings, request).await
}

async fn messages(State(gateway): State<Gateway>, request: Request) -> Response {
    gateway.handle(Endpoint::Messages, request).await
}

async fn count_tokens(State(gateway): State<Gateway>, request: Request) -> Response {
    gateway.handle(Endpoint::CountTokens, request).await
}

async fn models(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    gateway.models(&headers)
}

async fn model(
    State(gateway): State<Gateway>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    // An id whose percent-encoding is no UTF-8 (`%FF`) names no model:
    // answered by `model` (the token first, then 404 in the wire's
    // shape), not with axum's plain-text 400.
    gateway.model(id.as_ref().ok().map(|Path(id)| id.as_str()), &headers)
}

/// Where the gateway serves its metrics.
const METRICS_PATH: &str = "/metrics";

/// Where the gateway lists its models.
const MODELS_PATH: &str = "/v1/models";
const UNVERSIONED_MODELS_PATH: &str = "/models";
/// Where the gateway describes one model (both SDKs' `models.retrieve`);
/// the rest of the path is its id, which may hold a `/`.
const MODEL_PATH: &str = "/v1/models/{*id}";
const UNVERSIONED_MODEL_PATH: &str = "/models/{*id}";

/// An OpenAI endpoint's path without `/v1`.
fn unversioned(endpoint: Endpoint) -> &'static str {
    endpoint.unversioned_path().unwrap_or(endpoint.path())
}

/// The wire a call speaks where the path does not say (the models list, a
/// path the gateway does not serve): Anthropic's when
/// the path is under `/v1/messages` or the client sends
/// `anthropic-version` (every Anthropic SDK does, also at a wrong path:
/// a base URL ending in `/v1` calls `/v1/v1/messages`), else OpenAI's.
fn wire_of_call(path: &str, headers: &HeaderMap) -> Wire {
    if path.starts_with(Endpoint::Messages.path()) || headers.contains_key("anthropic-version") {
        Wire::Anthropic
    } else {
        Wire::OpenAi
    }
}

impl Gateway {
    /// The answer to a path the gateway does not serve: 404 `not_found` in
    /// the wire the call speaks (Anthropic's under `/v1/messages` or with
    /// an `anthropic-version` header, else OpenAI's). `serve` uses it as
    /// its router's fallback; an app that merges
    /// [`router`](Gateway::router) may too.
    pub async fn unknown_path(uri: http::Uri, headers: HeaderMap, body: Body) -> Response {
        drain(body, expects_continue(&headers), 0);
        let path = uri.path();
        let message = format!(
            "the gateway serves no {:?}: POST /v1/chat/completions, /v1/responses, \
             /v1/embeddings (each also without /v1), /v1/messages, /v1/messages/count_tokens; \
             GET /v1/models, /v1/models/{{id}} (each also without /v1), /healthz, /metrics",
            excerpt(path)
        );
        closing(
            WireError::gateway(StatusCode::NOT_FOUND, Code::NotFound, message)
                .response(wire_of_call(path, &headers)),
        )
    }
}

async fn wrong_method(
    method: http::Method,
    uri: http::Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    drain(body, expects_continue(&headers), 0);
    let path = uri.path();
    // The endpoints take POST; the rest of what is served, GET.
    let endpoint = [Wire::OpenAi, Wire::Anthropic]
        .into_iter()
        .flat_map(Wire::endpoints)
        .any(|e| e.path() == path || e.unversioned_path() == Some(path));
    let takes = if endpoint { "POST" } else { "GET" };
    let message = format!(
        "{:?} is not served at {:?}: use {takes}",
        excerpt(method.as_str()),
        excerpt(path)
    );
    closing(
        WireError::gateway(StatusCode::METHOD_NOT_ALLOWED, Code::BadRequest, message)
            .response(wire_of_call(path, &headers)),
    )
}

async fn health(State(gateway): State<Gateway>) -> Response {
    let body = serde_json::json!({ "status": "ok", "stats": gateway.stats() });
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        Bytes::from(body.to_string()),
    )
        .into_response()
}

#[cfg(feature = "metrics")]
/// The process's Prometheus recorder, installed by the first gateway: the
/// layers record through the `metrics` facade into it. `None` when another
/// recorder was installed first (the embedding app's own).
fn prometheus() -> Option<&'static metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<Option<metrics_exporter_prometheus::PrometheusHandle>> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = metrics_exporter_prometheus::PrometheusBuilder::new()
                .set_buckets(seawall::core::metric_names::SECONDS_BUCKETS)
                .ok()?;
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            // Each family's `# HELP` and `# TYPE` lines, and its unit: the
            // recorder keeps what it is told from now on.
            seawall::core::metric_names::describe();
            // A recorder built so runs no upkeep of its own: each histogram
            // sample (every operation's duration, every stream's first
            // byte) waits in its bucket until drained, and with no scrape
            // they would pile up for the process's life. A thread, not a
            // task: the gateway may serve on runtimes of its own.
            let upkeep = handle.clone();
            let _ = std::thread::Builder::new()
                .name(METRICS_UPKEEP_THREAD.into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(METRICS_UPKEEP_EVERY);
                        upkeep.run_upkeep();
                    }
                });
            Some(handle)
        })
        .as_ref()
}

/// The name of the thread that drains the recorder's histogram samples.
#[cfg(feature = "metrics")]
const METRICS_UPKEEP_THREAD: &str = "seawall-upkeep";

/// How often it drains them (metrics-exporter-prometheus's own upkeep
/// task runs every 5 s).
#[cfg(feature = "metrics")]
const METRICS_UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// `GET /metrics`: the Prometheus text exposition of seawall's metrics,
/// for a client holding the gateway's token when it has one (the metrics
/// tell the routes' names, traffic and failures).
async fn metrics_text(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    match gateway.refusal(wire_of_call(METRICS_PATH, &headers), &headers) {
        Some(refusal) => refusal,
        None => metrics_exposition(),
    }
}

/// The Prometheus text of the gateway's recorder.
#[cfg(feature = "metrics")]
fn metrics_exposition() -> Response {
    match prometheus() {
        Some(handle) => {
            handle.run_upkeep();
            (
                [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                handle.render(),
            )
                .into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            "another metrics recorder is installed in this process",
        )
            .into_response(),
    }
}

/// What `GET /metrics` says without the `metrics` feature.
#[cfg(not(feature = "metrics"))]
fn metrics_exposition() -> Response {
    (StatusCode::NOT_FOUND, "built without the `metrics` feature").into_response()
}

/// Whether reading the request body failed because the client went away:
/// the connection ended before the body did (hyper: a body error over an
/// `UnexpectedEof`, or an incomplete message).
fn client_went_away(error: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind;
    seawall_internal::error::links(error).any(|link| {
        link.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
            // A client that closed with a reset (killed, or with unread
            // data in its socket) went away as surely as one that sent
            // its FIN.
            || link.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    ErrorKind::UnexpectedEof
                        | ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::BrokenPipe
                )
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_wait_is_read_and_kept_short_of() {
        use std::time::Duration;
        let wait = |value: &'static str| {
            client_wait(&headers(&[("x-stainless-read-timeout", value)]), false)
        };
        assert_eq!(wait("600.0"), Some(Duration::from_secs(599)));
        assert_eq!(wait("5"), Some(Duration::from_millis(4500)));
        assert_eq!(wait(" 0.5 "), Some(Duration::from_millis(450)));
        // Past a day: a day.
        assert_eq!(wait("1e12"), Some(Duration::from_secs(86_399)));
        assert_eq!(wait("inf"), Some(Duration::from_secs(86_399)));
        for value in ["0", "-3", "NaN", "soon", ""] {
            assert_eq!(wait(value), None, "{value:?}");
        }
        assert_eq!(client_wait(&HeaderMap::new(), false), None);
        // The TypeScript SDKs' header; where both come, the shorter.
        let both = |read: &'static str, total: &'static str| {
            client_wait(
                &headers(&[
                    ("x-stainless-read-timeout", read),
                    ("x-stainless-timeout", total),
                ]),
                false,
            )
        };
        assert_eq!(
            client_wait(&headers(&[("x-stainless-timeout", "5")]), false),
            Some(Duration::from_millis(4500))
        );
        assert_eq!(both("600.0", "5"), Some(Duration::from_millis(4500)));
        assert_eq!(both("5", "600"), Some(Duration::from_millis(4500)));
        assert_eq!(both("soon", "5"), Some(Duration::from_millis(4500)));
        assert_eq!(both("5", "0"), Some(Duration::from_millis(4500)));
    }

    /// A stream from Node waits no longer than undici's own wait for the
    /// head, stated or not; a shorter stated wait still decides, another
    /// runtime keeps the stated, and a client that changed undici's bound
    /// says so. A whole answer is bounded so only for a client known to be
    /// on undici.
    #[test]
    fn a_node_call_waits_no_longer_than_undici() {
        use std::time::Duration;
        let call = |extra: &[(&'static str, &'static str)], stream: bool| {
            let mut pairs = vec![("x-stainless-runtime", "node")];
            pairs.extend_from_slice(extra);
            client_wait(&headers(&pairs), stream)
        };
        let node = |extra: &[(&'static str, &'static str)]| call(extra, true);
        let timeout = |t| ("x-stainless-timeout", t);
        assert_eq!(node(&[timeout("600")]), Some(Duration::from_secs(299)));
        // openai-node with its default timeout states none.
        assert_eq!(node(&[]), Some(Duration::from_secs(299)));
        assert_eq!(node(&[timeout("100")]), Some(Duration::from_secs(99)));
        assert_eq!(node(&[timeout("5")]), Some(Duration::from_millis(4500)));
        // undici's bound as the client set it; 0 is none, as in undici.
        let undici = |t| (NODE_HEADERS_TIMEOUT_HEADER, t);
        assert_eq!(
            node(&[timeout("600"), undici("900")]),
            Some(Duration::from_secs(599))
        );
        assert_eq!(node(&[undici("400")]), Some(Duration::from_secs(399)));
        assert_eq!(
            node(&[timeout("600"), undici("0")]),
            Some(Duration::from_secs(599))
        );
        assert_eq!(node(&[undici("0")]), None);
        for odd in ["-1", "soon", "NaN"] {
            assert_eq!(
                node(&[undici(odd)]),
                Some(Duration::from_secs(299)),
                "{odd}"
            );
        }
        // A whole answer: the header stated says the client is on undici.
        assert_eq!(
            call(&[timeout("600"), undici("400")], false),
            Some(Duration::from_secs(399))
        );
        assert_eq!(
            call(&[undici("soon")], false),
            Some(Duration::from_secs(299))
        );
        assert_eq!(call(&[undici("0")], false), None);
        // A whole answer from an SDK unknown keeps the stated wait.
        assert_eq!(
            call(&[timeout("600")], false),
            Some(Duration::from_secs(599))
        );
        assert_eq!(call(&[], false), None);
        let elsewhere = |runtime: &'static str, stream: bool| {
            client_wait(
                &headers(&[
                    ("x-stainless-runtime", runtime),
                    ("x-stainless-timeout", "600"),
                ]),
                stream,
            )
        };
        for stream in [true, false] {
            assert_eq!(elsewhere("deno", stream), Some(Duration::from_secs(599)));
            assert_eq!(elsewhere("CPython", stream), Some(Duration::from_secs(599)));
            assert_eq!(
                client_wait(&headers(&[("x-stainless-timeout", "600")]), stream),
                Some(Duration::from_secs(599))
            );
            // Stating undici's bound says the client is on undici, with
            // no `x-stainless-runtime` (the Vercel AI SDK sends none).
            assert_eq!(
                client_wait(&headers(&[(NODE_HEADERS_TIMEOUT_HEADER, "100")]), stream),
                Some(Duration::from_secs(99))
            );
            assert_eq!(
                client_wait(&headers(&[(NODE_HEADERS_TIMEOUT_HEADER, "0")]), stream),
                None
            );
        }
    }

    /// The Vercel AI SDK on Node names itself and its runtime in its
    /// `user-agent` and fetches with undici: its calls, whole or streamed,
    /// are bounded by undici's wait. The same SDK in a browser or on
    /// another runtime, or another client on Node, is not.
    #[test]
    fn the_ai_sdk_on_node_waits_no_longer_than_undici() {
        use std::time::Duration;
        let agent =
            |ua: &'static str, stream: bool| client_wait(&headers(&[("user-agent", ua)]), stream);
        for ua in [
            "ai/6.0.333 ai-sdk/provider-utils/4.0.66 runtime/node.js/v20.20.2",
            "ai/5.0.30 ai-sdk/provider-utils/3.0.7 runtime/Node.js/22",
            "my-app/1.0 ai/6.0.1 ai-sdk/openai/3.0.1 ai-sdk/provider-utils/4.0.1 runtime/node.js/22",
        ] {
            for stream in [true, false] {
                assert_eq!(agent(ua, stream), Some(Duration::from_secs(299)), "{ua}");
            }
            // Its own timeout, stated, still wins when shorter.
            let pairs = [("user-agent", ua), ("x-stainless-timeout", "10")];
            assert_eq!(
                client_wait(&headers(&pairs), false),
                Some(Duration::from_secs(9))
            );
        }
        for ua in [
            "ai/6.0.333 ai-sdk/provider-utils/4.0.66 runtime/Mozilla/5.0",
            "ai/6.0.333 ai-sdk/provider-utils/4.0.66 runtime/Deno/2.1",
            "node-fetch/1.0 runtime/node.js/v20.20.2",
            "curl/8.5.0",
        ] {
            assert_eq!(agent(ua, true), None, "{ua}");
            assert_eq!(agent(ua, false), None, "{ua}");
        }
    }

    /// A whole answer from Node is bounded by undici's wait only where the
    /// SDK's own headers say it runs on undici: openai-node from 5.0,
    /// Anthropic's TypeScript SDK (its `anthropic-version`) from 0.50.0.
    /// Earlier releases fetch with node-fetch, which has no such wait.
    #[test]
    fn a_whole_answer_is_bounded_only_for_an_sdk_on_undici() {
        use std::time::Duration;
        let whole = |lang: &'static str, version: &'static str, anthropic: bool| {
            let mut pairs = vec![
                ("x-stainless-runtime", "node"),
                ("x-stainless-lang", lang),
                ("x-stainless-package-version", version),
                ("x-stainless-timeout", "600"),
            ];
            if anthropic {
                pairs.push(("anthropic-version", "2023-06-01"));
            }
            client_wait(&headers(&pairs), false)
        };
        let undici = Some(Duration::from_secs(299));
        let stated = Some(Duration::from_secs(599));
        for version in ["5.0.0", "5.23.2", "6.1.0", "5.0.0-alpha.1", " 10.2 "] {
            assert_eq!(whole("js", version, false), undici, "openai-node {version}");
        }
        for version in [
            "4.104.0",
            "4.0.0-beta.1",
            "3.3.0",
            "0.99.0",
            "",
            "five",
            "v5.0.0",
        ] {
            assert_eq!(whole("js", version, false), stated, "openai-node {version}");
        }
        for version in ["0.50.0", "0.52.0", "0.71.2", "1.0.0"] {
            assert_eq!(whole("js", version, true), undici, "anthropic {version}");
        }
        for version in ["0.41.0", "0.34.0-alpha.0", "0.5.0", "0.9.1"] {
            assert_eq!(whole("js", version, true), stated, "anthropic {version}");
        }
        // Another language's SDK at a like version says nothing of undici.
        assert_eq!(whole("python", "5.0.0", false), stated);
        assert_eq!(whole("JS", "5.0.0", false), undici);
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
            .collect()
    }

    /// One or more spaces between the scheme and the token (RFC 9110,
    /// 11.4: `1*SP`): with two, the client was refused with a 401, and a
    /// token also sent in `x-seawall-token` was forwarded upstream as the
    /// client's own key.
    #[test]
    fn a_bearer_token_after_more_than_one_space_is_the_token() {
        let secret = Secret::new("gateway-token-0123456789".into());
        let token = Some(&secret);
        for value in [
            "Bearer  gateway-token-0123456789",
            "bearer    gateway-token-0123456789",
        ] {
            let sent = headers(&[("authorization", value)]);
            assert!(presents_token(&sent, &secret), "{value:?}");
            assert_eq!(client_credential(&sent, Wire::OpenAi, token), None);
            let sent = headers(&[
                ("x-seawall-token", "gateway-token-0123456789"),
                ("authorization", value),
            ]);
            assert!(presents_token(&sent, &secret), "{value:?}");
            for wire in [Wire::OpenAi, Wire::Anthropic] {
                assert_eq!(client_credential(&sent, wire, token), None, "{value:?}");
            }
        }
        // No space, or no credentials: not a bearer token.
        for value in ["Bearergateway-token-0123456789", "Bearer", "Bearer   "] {
            let sent = headers(&[("authorization", value)]);
            assert!(!presents_token(&sent, &secret), "{value:?}");
        }
    }

    #[test]
    fn the_gateway_token_is_never_forwarded() {
        let secret = Secret::new("gateway-token-0123456789".into());
        let token = Some(&secret);
        let presents = |sent: &HeaderMap| presents_token(sent, &secret);
        let sent = headers(&[("authorization", "Bearer gateway-token-0123456789")]);
        assert!(presents(&sent));
        assert_eq!(client_credential(&sent, Wire::OpenAi, token), None);
        // The scheme in any case (RFC 9110, 11.1).
        for sent in [
            headers(&[("authorization", "bearer gateway-token-0123456789")]),
            headers(&[("authorization", "BEARER gateway-token-0123456789")]),
        ] {
            assert!(presents(&sent));
            assert_eq!(client_credential(&sent, Wire::OpenAi, token), None);
        }
        // Token in its own header: Authorization is the client's key.
        let sent = headers(&[
            ("x-seawall-token", "gateway-token-0123456789"),
            ("authorization", "Bearer sk-client"),
        ]);
        assert!(presents(&sent));
        let (name, value) = client_credential(&sent, Wire::OpenAi, token).unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("authorization", "Bearer sk-client")
        );
        assert!(value.is_sensitive());
        // Anthropic: the token as x-api-key (an SDK's api_key) stays here.
        let sent = headers(&[("x-api-key", "gateway-token-0123456789")]);
        assert!(presents(&sent));
        assert_eq!(client_credential(&sent, Wire::Anthropic, token), None);
        // Anthropic: the client's x-api-key first.
        let sent = headers(&[
            ("x-api-key", "sk-ant-client"),
            ("authorization", "Bearer gateway-token-0123456789"),
        ]);
        let (name, _) = client_credential(&sent, Wire::Anthropic, token).unwrap();
        assert_eq!(name, "x-api-key");
        // Anthropic: the token in both headers (an SDK given it as both
        // `api_key` and `auth_token`): neither is the client's key.
        let sent = headers(&[
            ("x-api-key", "gateway-token-0123456789"),
            ("authorization", "Bearer gateway-token-0123456789"),
        ]);
        assert!(presents(&sent));
        assert_eq!(client_credential(&sent, Wire::Anthropic, token), None);
        assert!(!presents(&headers(&[("authorization", "Bearer nope")])));
        assert!(!presents(&headers(&[(
            "authorization",
            "Basic gateway-token-0123456789"
        )])));
    }

    /// Nothing of the upstream's head that speaks of its hop, its origin
    /// or its account reaches the client; `x-seawall-*` is the gateway's.
    #[test]
    fn the_upstreams_hop_and_origin_headers_stay_behind() {
        let mut head = headers(&[
            ("connection", "keep-alive, x-hop-secret"),
            ("x-hop-secret", "upstream-only"),
            ("keep-alive", "timeout=5"),
            ("set-cookie", "s=1"),
            ("alt-svc", "h3=\":443\""),
            ("strict-transport-security", "max-age=1"),
            ("openai-organization", "org-route-account"),
            ("anthropic-organization-id", "org-route-account"),
            ("x-seawall-code", "forged"),
            ("content-type", "application/json"),
            ("x-request-id", "req_1"),
            ("retry-after", "3"),
        ]);
        strip_upstream_headers(&mut head);
        let mut left: Vec<_> = head.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["content-type", "retry-after", "x-request-id"]);
    }
}
