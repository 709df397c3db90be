//! seawall under reqwest, and under async-openai.
//!
//! Most Rust code that calls an LLM provider does it with
//! [reqwest](https://docs.rs/reqwest), often through
//! [async-openai](https://docs.rs/async-openai). This crate puts seawall's
//! layers underneath both:
//!
//! - [`ReqwestService`]: a `tower::Service<http::Request<B>>` over a
//!   `reqwest::Client`. The request body is streamed into reqwest, the
//!   response body comes out frame by frame as reqwest delivers it (so the
//!   stream guard above sees the real timing), and reqwest's errors become
//!   [`Error`]s whose source chain `ClassifyLayer` reads: connect, reset,
//!   timeout and body errors are `transport`/`timeout`, retryable, with the
//!   evidence of what arrived (a refused certificate or a proxy that asks
//!   for credentials: `transport`, permanent); a URI reqwest cannot send
//!   and a request body that fails mid-send are permanent `bad_request`s
//!   naming the problem.
//! - [`client_builder`]: a `reqwest::ClientBuilder` that follows no
//!   redirects, retries nothing and has no timeouts, with TLS on rustls and
//!   ring.
//! - With the `async-openai` feature (on by default), [`OpenAiService`] for
//!   `async_openai::Client::with_http_service`, and [`scope`], which gets
//!   seawall's [`Failure`](seawall_core::Failure) and
//!   [`Receipt`](seawall_core::Receipt) of a call back out of async-openai.
//!
//! # The story
//!
//! A team moved their assistant onto async-openai and got its retry for
//! free: 429s and 5xx retried with backoff, `Retry-After` honoured. It even
//! reads a 429's body: one typed `insufficient_quota` is returned at once.
//! Then the account reached its daily request limit. The provider answered
//! `429` with `Retry-After: 48489` and an error typed `requests`, as any
//! rate limit's is; async-openai slept out the hint, which it does not cap,
//! so every request from every user hung for thirteen hours before its next
//! try, and again after it, until the on-call engineer found thousands of
//! tasks asleep. Underneath, reqwest 0.13 retried protocol NACKs
//! on its own, and a `timeout(30 s)` set on the client cut off the long
//! answers of the reasoning model mid-stream — with the user already
//! reading them. Three layers each owned a piece of the policy, and none
//! knew about the others.
//!
//! With this crate async-openai builds the request, seawall decides
//! everything else, and reqwest only moves bytes: a hint past the quota
//! wall's threshold (60 s by default) is a wall whatever the error's type,
//! one attempt and a `quota_exhausted` the caller can read from
//! [`Outcome::code`] (when it resets: [`Outcome::failure`]'s `reset_at`);
//! a stream cut after content is an interruption with the delivered text,
//! not a restart.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use seawall::classify::ClassifyLayer;
//! use seawall::core::{Failure, Receipt};
//! use seawall::stack::Stack;
//! use seawall_reqwest::ReqwestService;
//! use tower::ServiceExt;
//!
//! let client = ReqwestService::new(seawall_reqwest::client()?);
//! let service = Stack::interactive().build(&ClassifyLayer::openai(), client);
//! let request = http::Request::post("http://127.0.0.1:8080/v1/chat/completions")
//!     .header("content-type", "application/json")
//!     .body(Full::new(Bytes::from(r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#)))?;
//! match service.oneshot(request).await {
//!     Ok(response) => println!("{:?}", response.extensions().get::<Receipt>()),
//!     Err(err) => println!("{:?}", Failure::find(&*err).map(|f| (f.code(), f.action()))),
//! }
//! # Ok(()) }
//! ```
//!
//! # One deadline, one ladder
//!
//! Every bound and every retry decision belongs to seawall's layers above
//! the client; reqwest's own must stay off, or they fight:
//!
//! - **`ClientBuilder::timeout`** bounds the whole exchange, body included,
//!   for every request alike. It cuts a long stream after content (a
//!   `timeout` the guard reports as an interruption) and cannot know the
//!   operation's deadline. Use `DeadlineLayer` (total and per attempt) and
//!   the stream guard's first-byte / first-content / idle bounds instead.
//! - **`read_timeout`** is an idle bound per read that a keep-alive comment
//!   resets; the stream guard's idle bound counts content, not pings. If you
//!   set either anyway, set it longer than seawall's bounds: it then only
//!   fires when they failed to, and surfaces as `timeout` (retryable before
//!   content).
//! - **reqwest 0.13's retry** (protocol NACKs by default, or a
//!   `retry::for_host` policy) is a ladder under the ladder, invisible to
//!   the receipt and the retry budget. [`client_builder`] sets
//!   `retry::never()`.
//! - **Redirects** would send the request, API key included, to another
//!   host; [`client_builder`] sets `redirect::Policy::none()` and the
//!   classifier fails a 3xx as `redirected`. A builder of your own:
//!   [`ReqwestService::from_builder`] sets the same policy on it, last.
//!   Over a client of your own that follows them ([`ReqwestService::new`]),
//!   [`ReqwestService`] fails an answer that came from another URL than
//!   the one sent as `redirected` too ([`Error::Redirected`]): a 302
//!   followed is a `GET` without the body, and its answer is not the
//!   request's. So is a redirect its policy stopped (too many, a
//!   `Location` of a scheme reqwest does not follow); a `Location` that
//!   is no URL at all (a port out of range) is not followed, and the 3xx
//!   arrives as it would without redirects. But reqwest keeps
//!   only the final URL: a redirect that ends back at the URL sent (a
//!   `302` to itself, or through a login page and back) cannot be seen
//!   there, and the `GET`'s answer is handed over as the request's.
//! - async-openai's retry: see [`openai`](crate::openai#one-ladder).
//!
//! A `connect_timeout` is harmless (it bounds only the connect, well under
//! any attempt bound) but not needed: the per-attempt deadline covers it.
//!
//! # TLS: one crypto provider
//!
//! rustls picks its provider from its cargo features. reqwest's and
//! async-openai's default `rustls` features pull in aws-lc-rs; the rest of
//! the workspace (hyper-rustls in `seawall chat`) uses ring. With both
//! built into one binary rustls cannot choose, and the first client that
//! asks for the default panics. This crate uses reqwest's
//! `rustls-no-provider` feature and async-openai without default features,
//! so aws-lc-rs is never built (`cargo tree -p seawall-reqwest
//! --all-features -i aws-lc-rs` finds nothing).
//!
//! A `reqwest::Client` built with reqwest's own TLS needs a process default
//! provider, or reqwest panics ("No rustls crypto provider is configured"):
//! [`client_builder`]'s client is one (its TLS settings, a corporate root
//! or a client identity, are read only by reqwest's own TLS), and
//! async-openai's `Client::new()` and `Client::with_config()` build
//! one, before `with_http_service` replaces it (async-openai keeps it only
//! to build requests). [`tls_config`] builds a rustls configuration over
//! ring explicitly, for a builder that must not depend on a default (then
//! reqwest reads none of that builder's TLS settings). So this crate's
//! constructors — [`client_builder`],
//! [`client`], [`ReqwestService::new`], `OpenAiService::new` and
//! `openai_client` — install ring as the process default, unless one is
//! installed already ([`install_crypto_provider`], idempotent). What that
//! covers is an order of evaluation:
//!
//! - **Fine**: the stack built first, as async-openai documents its
//!   middleware —
//!   `let stack = ..build(.., ReqwestService::new(seawall_reqwest::client()?));`
//!   then `Client::with_config(config).with_http_service(OpenAiService::new(stack))`.
//!   The receiver `Client::with_config(config)` is evaluated before the
//!   argument `OpenAiService::new(stack)`, so it is the stack's
//!   constructors that installed the provider, not the adapter's.
//! - **Fine, in any process**: `seawall_reqwest::openai_client(config, stack)`
//!   (feature `async-openai`), which installs before calling
//!   `with_config`, whatever the stack is built on; or
//!   `async_openai::Client::build(seawall_reqwest::client()?, config)
//!   .with_http_service(OpenAiService::new(stack))`, whose `build` makes no
//!   client of reqwest's own. `Client::build` alone sends through
//!   async-openai's own executor, its retry included, over that client:
//!   the stack is bypassed.
//! - **Panics** in a fresh process: `Client::new()` or
//!   `Client::with_config(config)` run before anything of this crate —
//!   including with the stack built inline, inside the
//!   `with_http_service(..)` argument (the receiver runs first). No
//!   constructor here can help there: call [`install_crypto_provider`]
//!   first, or build in one of the orders above.
//!
//! A process that wants another default provider installs it before the
//! first of these calls; they keep the one they find.
//!
//! # Differences from async-openai's `ReqwestService` and `OpenAIRetryLayer`
//!
//! async-openai's middleware rebuilds the request from its factory for each
//! attempt and retries 429/5xx/connect errors by status; a 429's body is
//! read, and only an error typed `insufficient_quota` (or a body that is
//! not JSON) ends the retry there.
//! Any other 429 (and a 5xx) waits out its `Retry-After` whatever its
//! length; a stream that dies after its headers, an empty 200, a refusal
//! or a cut stream are not its concern. Here the request is built once and
//! its body replayed by seawall — up to the replay cap, past which a
//! streamed body (a multipart upload) is sent once and not retried (see
//! [`openai`](crate::openai#one-ladder)) — failures are classified by the
//! provider's table (one attempt at a quota wall, at a refusal, at a 400),
//! the stream is guarded, and the verdict comes back through [`scope`].
//! Differences from reqwest's own retry: see above — it is off.
#![deny(missing_docs)]

mod body;
mod client;
mod error;
#[cfg(feature = "async-openai")]
pub mod openai;
mod service;

pub use body::ResponseBody;
pub use client::{client, client_builder, crypto_provider, install_crypto_provider, tls_config};
pub use error::Error;
pub use service::{ReqwestService, ResponseFuture};

#[cfg(feature = "async-openai")]
pub use openai::{OpenAiLayer, OpenAiService, Outcome, openai_client, scope};

/// The reqwest this crate is built against.
pub use reqwest;

/// The async-openai this crate is built against (feature `async-openai`).
#[cfg(feature = "async-openai")]
pub use async_openai;
