//! Answering a provider request: read it, pick its fault, plan the response,
//! and keep its journal row — one `Exchange` from arrival to the last header.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use http::{Request, Response};
use hyper::body::Incoming;
use seawall_internal::millis;
use tokio::time::Instant;

use super::request::{self, Rejection, RequestShape, Unread};
use super::state::State;
use super::{
    APPLIED_HEADER, FAULT_HEADER, MAX_MODEL_LEN, REQUEST_ID_HEADER, SEQ_HEADER, json_response,
};
use crate::body::{BodyCut, ChaosBody, JournalLink};
use crate::conn::ConnControl;
use crate::fault::{Fault, StatusFault};
use crate::journal::{FaultSource, JournalEntry, Outcome, body_hash, unix_ms};
use crate::plan::{Plan, Step, plan};
use crate::wire::{self, Ctx, Provider};

/// Longest `x-chaos-request-id` recorded, in bytes.
const MAX_REQUEST_ID: usize = 256;

/// The most of a refused `x-chaos-fault` header a journal row keeps: enough
/// to tell which header it was, where the journal may hold
/// [`MAX_JOURNAL_ROWS`](crate::MAX_JOURNAL_ROWS) of them.
const MAX_REFUSED_FAULT_TEXT: usize = 128;

/// Longest path recorded, in bytes: room for any served route, a Gemini
/// one with a model of [`MAX_MODEL_LEN`] included, while a path naming a
/// longer (refused) model costs its row no more than this.
const MAX_JOURNAL_PATH: usize = MAX_MODEL_LEN + 256;

/// Answers one request on a provider route.
pub(super) async fn answer(
    state: &State,
    control: Arc<ConnControl>,
    provider: Provider,
    path: String,
    req: Request<Incoming>,
) -> Result<Response<ChaosBody>, BodyCut> {
    let mut exchange = Exchange::begin(state, provider, path, req.headers());
    // Taken before the body consumes the request, judged after it: a body
    // that is no request is the first thing reported.
    let header_fault = header_fault(req.headers());
    let key_fault =
        super::keys::api_key(req.headers(), req.uri()).and_then(|key| state.key_fault(key));
    let request = match exchange.read_request(req).await {
        Ok(request) => request,
        Err(Unread::Rejected(r)) => return Ok(exchange.reject(r)),
        Err(Unread::ClientGone(error)) => return Err(exchange.client_gone(&error)),
    };
    let header_fault = match header_fault {
        None => None,
        Some(HeaderFault {
            fault: Ok(fault), ..
        }) => Some(fault),
        Some(HeaderFault {
            raw,
            fault: Err(rejection),
        }) => {
            exchange.refused_header(&raw);
            return Ok(exchange.reject(rejection));
        }
    };
    let fault = exchange.choose_fault(key_fault, header_fault);
    let mut ctx = Ctx::new(
        provider,
        &request.model,
        exchange.seq(),
        request.include_usage,
        exchange.body_len(),
    );
    ctx.first_token = request.continues_after.saturating_add(1);
    ctx.json_array = request.json_array;
    match plan(&fault, &ctx, request.stream) {
        Plan::CloseBeforeHeaders => Err(exchange.close_before_headers(&control)),
        Plan::Error(status) => Ok(exchange.error(&request.model, &status)),
        Plan::Body {
            steps,
            end,
            exact_len,
        } => Ok(exchange.play(
            PlayedBody {
                steps,
                end,
                exact_len,
                ctx,
            },
            &request,
            control,
        )),
    }
}

/// The `x-chaos-fault` header as sent, and the fault it asks for.
struct HeaderFault {
    /// Its text; several values joined by `, `.
    raw: String,
    /// The fault, or why the request is refused: a malformed fault, or
    /// more than one header (which one was meant is anyone's guess).
    fault: Result<Fault, Rejection>,
}

/// The `x-chaos-fault` header, parsed, when sent.
fn header_fault(headers: &HeaderMap) -> Option<HeaderFault> {
    let values: Vec<String> = headers
        .get_all(FAULT_HEADER)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    match values.as_slice() {
        [] => None,
        [one] => Some(HeaderFault {
            raw: one.clone(),
            fault: one.parse::<Fault>().map_err(Rejection::from),
        }),
        many => Some(HeaderFault {
            raw: many.join(", "),
            fault: Err(Rejection {
                status: 400,
                code: "duplicate_fault_header",
                message: format!(
                    "{FAULT_HEADER}: more than one {FAULT_HEADER} header was sent ({}); \
                     send one fault at most",
                    many.len()
                ),
            }),
        }),
    }
}

/// A planned body and the context its frames are written with.
struct PlayedBody {
    steps: VecDeque<Step>,
    end: Outcome,
    exact_len: Option<u64>,
    ctx: Ctx,
}

/// One request from arrival to response: its journal row, filled as the
/// request is read, and journaled when the response is decided.
struct Exchange<'a> {
    state: &'a State,
    provider: Provider,
    arrived: Instant,
    /// `req_chaos{seq}`, in the provider's request-id header and error bodies.
    vendor_request_id: String,
    row: JournalEntry,
}

impl<'a> Exchange<'a> {
    fn begin(state: &'a State, provider: Provider, path: String, headers: &HeaderMap) -> Self {
        let arrived = Instant::now();
        let seq = state.next_seq();
        let request_id = headers.get(REQUEST_ID_HEADER).map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(MAX_REQUEST_ID)
                .collect::<String>()
        });
        Exchange {
            state,
            provider,
            arrived,
            vendor_request_id: format!("req_chaos{seq}"),
            row: JournalEntry {
                seq,
                // Numbered by the journal when the row is pushed.
                cursor: 0,
                arrived_unix_ms: unix_ms(SystemTime::now()),
                path: seawall_internal::excerpt(&path, MAX_JOURNAL_PATH).to_owned(),
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
            },
        }
    }

    fn seq(&self) -> u64 {
        self.row.seq
    }

    fn body_len(&self) -> usize {
        usize::try_from(self.row.body_bytes).unwrap_or(usize::MAX)
    }

    /// Reads the body and the fields the answer depends on, noting them in the row.
    async fn read_request(&mut self, req: Request<Incoming>) -> Result<RequestShape, Unread> {
        let (body, from_path) =
            request::read_body(self.provider, req, self.state.max_body_bytes).await?;
        self.row.body_hash = Some(body_hash(&body));
        self.row.body_bytes = body.len() as u64;
        let request =
            request::parse_request(self.provider, &body, from_path).map_err(Unread::Rejected)?;
        self.row.model = Some(request.model.clone());
        self.row.stream = request.stream;
        Ok(request)
    }

    /// The fault to apply: the route's script first, then the fault set for
    /// the request's API key, then the header, else `ok`; `random` drawn
    /// into the fault it stands for.
    fn choose_fault(&mut self, key_fault: Option<Fault>, header_fault: Option<Fault>) -> Fault {
        let (fault, source, attempt) = match self.state.next_scripted(self.provider) {
            Some((fault, attempt)) => (fault, FaultSource::Script, Some(attempt)),
            None => match (key_fault, header_fault) {
                (Some(fault), _) => (fault, FaultSource::Key, None),
                (None, Some(fault)) => (fault, FaultSource::Header, None),
                (None, None) => (Fault::ok(), FaultSource::Default, None),
            },
        };
        let fault = self.state.resolve(fault);
        self.row.fault = fault.to_string();
        self.row.fault_source = source;
        self.row.attempt = attempt;
        fault
    }

    /// A request refused over its `x-chaos-fault` header: the row keeps
    /// the start of the header's text (at most [`MAX_REFUSED_FAULT_TEXT`]
    /// bytes) as its fault, from the header, not a healthy default it never
    /// got.
    fn refused_header(&mut self, raw: &str) {
        self.row.fault = seawall_internal::excerpt(raw, MAX_REFUSED_FAULT_TEXT).to_owned();
        self.row.fault_source = FaultSource::Header;
    }

    /// The server's own refusal, in the provider's error shape.
    fn reject(self, r: Rejection) -> Response<ChaosBody> {
        let body = wire::rejection_body(
            self.provider,
            r.status,
            r.code,
            &r.message,
            &self.vendor_request_id,
        );
        let written = body.len();
        self.respond(json_response(r.status, body), written, false)
    }

    /// A `status` fault: the provider's error body and the retry hints asked for.
    fn error(self, model: &str, status: &StatusFault) -> Response<ChaosBody> {
        let body = wire::error_body(self.provider, model, &self.vendor_request_id, status);
        let written = body.len();
        let mut res = json_response(status.code, body);
        // Gemini sends its wait only in the body (`google.rpc.RetryInfo`,
        // which `error_body` writes): no hint header.
        if self.provider != Provider::Gemini {
            retry_hints(status, res.headers_mut());
        }
        self.respond(res, written, true)
    }

    /// The client left or broke the framing before the body was read.
    fn client_gone(self, error: &str) -> BodyCut {
        tracing::debug!(target: "seawall::chaos", %error, "seawall-chaos request body unreadable");
        self.end(Outcome::ClientDisconnected);
        BodyCut::Reset
    }

    /// `reset_before_headers`: the connection dies without a response.
    fn close_before_headers(self, control: &ConnControl) -> BodyCut {
        self.end(Outcome::CutByFault);
        control.kill();
        BodyCut::Reset
    }

    /// A 200 whose body plays `played`; the row stays open until the body ends.
    fn play(
        mut self,
        played: PlayedBody,
        request: &RequestShape,
        control: Arc<ConnControl>,
    ) -> Response<ChaosBody> {
        let mut headers = HeaderMap::new();
        if request.stream && !request.json_array {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        } else {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        self.tag(&mut headers, true);
        let link = JournalLink {
            journal: self.state.journal.clone(),
            seq: self.seq(),
            arrived: self.arrived,
        };
        let shutdown = self.state.shutdown.clone();
        self.row.status = Some(200);
        self.state.journal.push(self.row);
        let body = ChaosBody::played(
            played.steps,
            Arc::new(played.ctx),
            played.end,
            played.exact_len,
            link,
            control,
            shutdown,
        );
        let mut res = Response::new(body);
        *res.headers_mut() = headers;
        res
    }

    /// Journals a row whose whole response is `res`, an error of `written`
    /// bytes, and tags `res`.
    fn respond(
        mut self,
        mut res: Response<ChaosBody>,
        written: usize,
        with_fault: bool,
    ) -> Response<ChaosBody> {
        let status = res.status().as_u16();
        self.row.status = Some(status);
        self.row.bytes_written = written as u64;
        self.tag(res.headers_mut(), with_fault);
        self.end(Outcome::Rejected(status));
        res
    }

    /// Journals the row, ended with `outcome`.
    fn end(mut self, outcome: Outcome) {
        self.row.outcome = outcome;
        self.row.duration_ms = Some(millis(self.arrived.elapsed()));
        self.state.journal.push(self.row);
    }

    /// The provider's request-id header, `x-chaos-seq`, and (once a fault
    /// applies) `x-chaos-fault-applied`.
    fn tag(&self, headers: &mut HeaderMap, with_fault: bool) {
        if let (Some(name), Some(value)) = (
            request_id_header(self.provider),
            header_value(&self.vendor_request_id),
        ) {
            headers.insert(name, value);
        }
        headers.insert(SEQ_HEADER, HeaderValue::from(self.seq()));
        if with_fault && let Some(value) = header_value(&self.row.fault) {
            headers.insert(APPLIED_HEADER, value);
        }
    }
}

fn header_value(s: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(s).ok()
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

/// `retry-after`, `retry-after-ms` and `x-should-retry` of a `status` fault,
/// as OpenAI (and compatible servers) and Anthropic send them.
fn retry_hints(status: &StatusFault, headers: &mut HeaderMap) {
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
