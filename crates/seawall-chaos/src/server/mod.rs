//! The server, one job per module: the handle and its builder (`handle`),
//! the shared state behind them (`state`), the accept loop and routing
//! (`accept`), reading a provider request (`request`), answering it
//! (`answer`), faults chosen by the request's API key (`keys`), and the
//! `/_chaos/*` admin routes (`admin`).

mod accept;
mod admin;
mod answer;
mod handle;
mod keys;
mod request;
mod state;

use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};

use crate::body::ChaosBody;

pub use handle::{ChaosHandle, ChaosServer, ChaosServerBuilder};
pub(crate) use keys::MAX_KEY;

/// Request header selecting a fault.
pub const FAULT_HEADER: &str = "x-chaos-fault";
/// Request header whose value the journal row records, so a test can find its row.
pub const REQUEST_ID_HEADER: &str = "x-chaos-request-id";
/// Response header carrying the journal `seq` of the request.
pub const SEQ_HEADER: &str = "x-chaos-seq";
/// Response header naming the fault applied.
pub const APPLIED_HEADER: &str = "x-chaos-fault-applied";

/// Longest model name served, in bytes; a longer one (in the body, or in a
/// Gemini path) is refused with a 400 `model_too_long` in the provider's
/// error shape. Real model names are far shorter; the bound keeps journal
/// rows and token frames, which repeat the model, small.
pub const MAX_MODEL_LEN: usize = 256;

/// Default request body cap: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// A JSON response with `status` (500 if it is not a status code).
fn json_response(status: u16, body: String) -> Response<ChaosBody> {
    let mut res = Response::new(ChaosBody::full(body));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The `{"error":{"message":…,"code":…}}` body of the server's own routes.
fn error_response(status: u16, code: &str, message: String) -> Response<ChaosBody> {
    json_response(
        status,
        serde_json::json!({"error": {"message": message, "code": code}}).to_string(),
    )
}
