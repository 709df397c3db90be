//! The admin routes, for clients in other languages: `GET /_chaos/journal`,
//! `POST /_chaos/reset`, `POST /_chaos/script` and `POST /_chaos/key`.
//!
//! `GET /_chaos/journal?since=N&limit=M` answers one page: at most `M`
//! rows (default and cap [`MAX_JOURNAL_PAGE`]) with a `cursor` above `N`
//! (default 0), in `cursor` order: the order rows entered the journal, so
//! paging on from the last `cursor` read misses no row (see
//! [`JournalEntry::cursor`](crate::JournalEntry::cursor)).

use http::{Method, Request, Response};
use hyper::body::Incoming;
use serde::Deserialize;

use super::request::{ReadError, read_capped};
use super::state::State;
use super::{error_response, json_response};
use crate::body::ChaosBody;
use crate::fault::Fault;
use crate::journal::MAX_JOURNAL_PAGE;
use crate::wire::Provider;

/// Cap for bodies of `/_chaos/*` requests.
const MAX_ADMIN_BODY: usize = 64 * 1024;

#[derive(Deserialize)]
struct KeyRequest {
    key: String,
    /// `None` (or `null`): the key's fault is removed.
    fault: Option<String>,
}

#[derive(Deserialize)]
struct ScriptRequest {
    route: String,
    faults: Vec<String>,
}

pub(super) async fn admin(state: &State, req: Request<Incoming>) -> Response<ChaosBody> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    match (method, path.as_str()) {
        (Method::GET, "/_chaos/journal") => match page_query(req.uri().query()) {
            Ok((since, limit)) => json_response(
                200,
                serde_json::to_string(&state.journal.page(since, limit))
                    .unwrap_or_else(|_| "[]".to_owned()),
            ),
            Err(message) => error_response(400, "invalid_query", message),
        },
        (Method::POST, "/_chaos/reset") => {
            state.reset();
            json_response(200, r#"{"reset":true}"#.to_owned())
        }
        (Method::POST, "/_chaos/script") => script(state, req).await,
        (Method::POST, "/_chaos/key") => key(state, req).await,
        (method, path) => error_response(
            404,
            "no_route",
            format!("seawall-chaos: no admin route {method} {path}"),
        ),
    }
}

/// `since` and `limit` of a journal GET, `limit` capped at
/// [`MAX_JOURNAL_PAGE`]; other parameters are ignored.
fn page_query(query: Option<&str>) -> Result<(u64, usize), String> {
    let (mut since, mut limit) = (0, MAX_JOURNAL_PAGE);
    for pair in query.unwrap_or_default().split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || format!("{name} must be a whole number, got {value:.32}");
        match name {
            "since" => since = value.parse().map_err(|_| bad())?,
            "limit" => limit = value.parse::<usize>().map_err(|_| bad())?,
            _ => {}
        }
    }
    Ok((since, limit.min(MAX_JOURNAL_PAGE)))
}

/// `POST /_chaos/script` `{"route":"openai","faults":["status;code=503","ok"]}`.
async fn script(state: &State, req: Request<Incoming>) -> Response<ChaosBody> {
    let script: ScriptRequest = match read_json(
        req,
        "script",
        r#"{"route":"openai","faults":["status;code=503","ok"]}"#,
    )
    .await
    {
        Ok(script) => script,
        Err(response) => return response,
    };
    let provider: Provider = match script.route.parse() {
        Ok(provider) => provider,
        Err(e) => return error_response(400, "unknown_route", e.to_string()),
    };
    let mut faults = Vec::with_capacity(script.faults.len());
    for (i, text) in script.faults.iter().enumerate() {
        match text.parse::<Fault>() {
            Ok(fault) => faults.push(fault),
            Err(e) => return error_response(400, e.code(), format!("faults[{i}]: {e}")),
        }
    }
    let queued = faults.len();
    state.set_script(provider, faults);
    json_response(
        200,
        serde_json::json!({"route": provider.as_str(), "queued": queued}).to_string(),
    )
}

/// `POST /_chaos/key` `{"key":"sk-a","fault":"status;code=401"}`: every
/// request with that API key gets the fault; `"fault": null` removes it.
async fn key(state: &State, req: Request<Incoming>) -> Response<ChaosBody> {
    let request: KeyRequest = match read_json(
        req,
        "key request",
        r#"{"key":"sk-a","fault":"status;code=401"}"#,
    )
    .await
    {
        Ok(request) => request,
        Err(response) => return response,
    };
    if request.key.is_empty() || request.key.len() > super::keys::MAX_KEY {
        return error_response(
            400,
            "invalid_key",
            format!("a key is 1 to {} bytes", super::keys::MAX_KEY),
        );
    }
    let fault = match request
        .fault
        .as_deref()
        .map(str::parse::<Fault>)
        .transpose()
    {
        Ok(fault) => fault,
        Err(e) => return error_response(400, e.code(), format!("fault: {e}")),
    };
    let set = fault.is_some();
    state.set_key_fault(&request.key, fault);
    json_response(200, serde_json::json!({ "set": set }).to_string())
}

/// An admin request's JSON body (`what` it is, in errors), capped at
/// [`MAX_ADMIN_BODY`]; an error answer names the shape expected (`example`).
async fn read_json<T: serde::de::DeserializeOwned>(
    req: Request<Incoming>,
    what: &str,
    example: &str,
) -> Result<T, Response<ChaosBody>> {
    let body = match read_capped(req, MAX_ADMIN_BODY).await {
        Ok(body) => body,
        Err(ReadError::TooLarge) => {
            return Err(error_response(
                413,
                "request_too_large",
                format!("{what} exceeds {MAX_ADMIN_BODY} bytes"),
            ));
        }
        Err(ReadError::Client(e)) => return Err(error_response(400, "unreadable_body", e)),
    };
    serde_json::from_slice(&body)
        .map_err(|e| error_response(400, "invalid_json", format!("expected {example}: {e}")))
}
