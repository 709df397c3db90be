#![deny(missing_docs)]
//! A fault-injecting LLM provider server: the real partner for integration tests.
//!
//! Mocks prove a layer calls its inner service; they cannot prove what happens
//! when a real socket hangs after the headers, a stream is reset after 400
//! tokens, or an SSE body ends without its finish marker. `seawall-chaos`
//! serves the OpenAI (chat completions and Responses), Anthropic and Gemini
//! wire formats over real HTTP/1.1 and fails on command:
//!
//! - `POST /v1/chat/completions` (OpenAI, unary and `"stream": true`),
//! - `POST /v1/responses` (OpenAI Responses API, unary and `"stream": true`),
//! - `POST /v1/messages` (Anthropic, unary and `"stream": true`),
//! - `POST /v1beta/models/{model}:generateContent` and
//!   `:streamGenerateContent?alt=sse` (Gemini).
//!
//! The answer is deterministic: token `i` is the word `w{i}` (with a leading
//! space after the first), so `ok;tokens=3` answers `w1 w2 w3` and a client can
//! check exactly what it delivered. A request picks a [`Fault`] with the
//! `x-chaos-fault` header (`reset_after;tokens=3`), a test scripts faults
//! per route ([`ChaosHandle::script`]), or sets one per API key
//! ([`ChaosHandle::fault_for_key`]: key A walled, key B served by one
//! server). Every request leaves a
//! [`JournalEntry`]: what was asked, which fault applied, how many bytes and
//! tokens went out, and how the response ended.
//!
//! ```
//! use seawall_chaos::{ChaosServer, Fault};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let chaos = ChaosServer::builder().start().await?;
//! // Fail twice, then answer: without the client's cooperation.
//! chaos
//!     .script("openai", vec![Fault::status(503), Fault::status(503), Fault::ok()])
//!     .expect("known route");
//! let url = format!("{}/v1/chat/completions", chaos.base_url());
//! assert!(url.starts_with("http://127.0.0.1:"));
//! assert!(chaos.journal().is_empty());
//! chaos.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The admin routes `GET /_chaos/journal`, `POST /_chaos/reset`,
//! `POST /_chaos/script` (`{"route":"openai","faults":["status;code=503","ok"]}`)
//! and `POST /_chaos/key` (`{"key":"sk-a","fault":"status;code=401"}`) do
//! the same over HTTP, for clients in other languages. The crate's README
//! lists every fault with an example `curl`.
//!
//! Memory stays bounded on a long-running server: the journal keeps the
//! last [`MAX_JOURNAL_ROWS`] rows, each of bounded size (a refused fault
//! header keeps only its first 128 bytes), and one journal GET answers one
//! page, `GET /_chaos/journal?since=N&limit=M`: at most `M` rows (default
//! and cap [`MAX_JOURNAL_PAGE`]) with a
//! [`cursor`](JournalEntry::cursor) above `N` (default 0), in `cursor`
//! order; a client reads on with `since` set to the last `cursor` it got.
//! Not the last `seq`: `seq` numbers arrivals, and a request whose body is
//! slow to arrive is journaled after requests that arrived later.

mod body;
pub mod cli;
mod conn;
mod fault;
mod journal;
mod plan;
mod random;
mod server;
mod wire;

pub use fault::{
    Answer, DEFAULT_PING_MS, DEFAULT_TOKENS, FAULT_NAMES, Fault, FaultParseError, MAX_FAULT_LEN,
    MAX_MS, MAX_TOKENS, StatusFault, StatusKind,
};
pub use journal::{
    FaultSource, JournalEntry, MAX_JOURNAL_PAGE, MAX_JOURNAL_ROWS, Outcome, body_hash,
};
pub use server::{
    APPLIED_HEADER, ChaosHandle, ChaosServer, ChaosServerBuilder, DEFAULT_MAX_BODY_BYTES,
    FAULT_HEADER, MAX_MODEL_LEN, REQUEST_ID_HEADER, SEQ_HEADER,
};
pub use wire::{Provider, UnknownRoute, answer_text, repeats_a_token, token_numbers};
