//! `seawall gateway`: an OpenAI/Anthropic-compatible proxy that runs every
//! call through the seawall stack — the reference axum integration.
//!
//! Point an SDK's base URL at the gateway; it answers
//! `POST /v1/chat/completions`, `/v1/responses` and `/v1/embeddings`
//! (OpenAI wire) and `POST /v1/messages` and `/v1/messages/count_tokens`
//! (Anthropic wire), unary and `"stream": true` ([`Endpoint`]), and
//! `GET /v1/models`, `GET /v1/models/{id}` and `GET /healthz`. Each
//! model maps to an ordered list of routes ([`Config`]); the first is the
//! primary, the others its fallback chain, in order. One
//! [`seawall::stack::Stack`] per model is built at start-up and cloned per
//! request, so the breaker and the retry budget are shared by every
//! request.
//!
//! - **Bytes through**: healthy answers are the provider's own bytes, frame
//!   by frame (an event stream's frames already received leave in one
//!   write; none waits more than two scheduler turns); a stream is held
//!   back until its first content (the stack's stream guard), so anything
//!   that fails before it is retried or failed over invisibly.
//! - **Failures in the client's wire format**: before content, a JSON error
//!   with the upstream status (429 keeps `Retry-After`), the status an
//!   error declared inside a 2xx names, 429 for a route cooling after a
//!   wall or a limit (or for the model asked: a limit the provider keeps
//!   per model holds back that model alone, from its next request's first
//!   attempt, and the message names it), or 502/503/504 (the crate's README has the table), the
//!   seawall code in the body and in `x-seawall-code`, and
//!   `x-should-retry: false` (the ladder already ran). After content, one
//!   final SSE error event an SDK raises — never a silent EOF.
//! - **Headers**: `x-seawall-attempts` and `x-seawall-served-by` on every
//!   answer a route gave (a success, or a failure the ladder ended in); a
//!   refusal the gateway makes before any route (no token, a body it
//!   cannot read, a model no route serves) and its own endpoints
//!   (`/v1/models`, `/healthz`, `/metrics`) carry neither.
//! - **Who gets in**: loopback by default; when a route has its own key,
//!   clients need the gateway's token. A client's own key goes only to
//!   routes without one.
//! - **Bounded**: request bodies over the cap (8 MiB) get 413 unbuffered; a
//!   client that goes away cancels the upstream call; at most
//!   `max_connections` client connections are open at once (the next wait
//!   in the listener's backlog) and a refusal closes its connection;
//!   shutdown drains in-flight answers within a grace period.
//!
//! ```no_run
//! use seawall_gateway::{Config, Gateway};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = Config::from_routes(&["main=openai@https://api.openai.com"])?;
//! config.set_route_key("main", "OPENAI_API_KEY")?;
//! config.token_env = Some("SEAWALL_GATEWAY_TOKEN".into());
//! let gateway = Gateway::new(config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! gateway.serve(listener, seawall_gateway::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Tests reach a [seawall-chaos](https://docs.rs/seawall-chaos) upstream
//! through the gateway: the `x-chaos-fault` and `x-chaos-request-id`
//! headers are forwarded to every route a request tries.
#![deny(missing_docs)]

mod args;
pub mod config;
mod cut;
mod gateway;
mod relay;
mod secret;
mod server;
mod stall;
mod upstream;
mod wire_error;

pub use args::GatewayArgs;
pub use config::{Config, ConfigError, Endpoint, Preset, RouteConfig, StackPolicy, Wire};
pub use gateway::{
    CLIENT_TIMEOUT_HEADERS, Gateway, GatewayError, MIN_KEY_LEN, MIN_TOKEN_LEN,
    NODE_HEADERS_TIMEOUT_HEADER, TOKEN_HEADER,
};
pub use relay::Stats;
pub use server::{listeners, run, shutdown_signal};
pub use wire_error::{ATTEMPTS_HEADER, CODE_HEADER, SERVED_BY_HEADER};
