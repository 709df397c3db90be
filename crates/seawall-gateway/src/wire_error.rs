//! Failures in the client's wire format: a JSON error body before content,
//! one final SSE error event after it.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use seawall::core::{Code, Failure, Receipt};

/// A JSON string literal.
fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

use crate::config::{Endpoint, Wire};
use crate::secret::{Redactor, may_end_at_cut};

/// The status Anthropic answers an error of type `ty` with (its API's
/// errors page: `billing_error` 402, `permission_error` 403, …), for a
/// type of Anthropic's.
fn anthropic_status(ty: &str) -> Option<StatusCode> {
    seawall_internal::anthropic_errors::status_of_type(ty)
        .and_then(|status| StatusCode::from_u16(status).ok())
}

/// The status a failure with seawall's `code` answers with where no
/// upstream status says otherwise: 503 for a route refused without a
/// call, 504 for a time bound, the status the providers give the same
/// error (429, 529, 400, 413, 401, 404), else 502.
fn code_status(code: Code) -> StatusCode {
    match code {
        code if code.is_refusal() => StatusCode::SERVICE_UNAVAILABLE,
        code if code.is_timeout() || code == Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::RateLimited | Code::QuotaExhausted => StatusCode::TOO_MANY_REQUESTS,
        // Anthropic's `overloaded_error` status.
        Code::Overloaded => StatusCode::from_u16(529).unwrap_or(StatusCode::BAD_GATEWAY),
        Code::ContextTooLong
        | Code::BadRequest
        | Code::BadArguments
        | Code::ContentFiltered
        | Code::Refused => StatusCode::BAD_REQUEST,
        Code::RequestTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Code::Auth => StatusCode::UNAUTHORIZED,
        Code::NotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_GATEWAY,
    }
}

/// OpenAI's `type` for an error whose provider named none (the gateway's
/// own refusals, a bare status): `insufficient_quota` for a quota wall
/// (`quota`), OpenAI's type for it, which SDKs that retry on their own
/// (async-openai) take as "do not retry" where they would sleep out the
/// wall's `Retry-After`; `requests` for another 429, as OpenAI types a
/// request-rate limit; `invalid_request_error` for another 4xx, as
/// OpenAI types every client error (a bad key's 401 too); else
/// `server_error`.
fn openai_type(status: StatusCode, quota: bool) -> &'static str {
    match status.as_u16() {
        _ if quota => "insufficient_quota",
        429 => "requests",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// Anthropic's `error.type` for an error whose provider named none of
/// Anthropic's types: the type Anthropic answers `status` with (its errors
/// page: 402 `billing_error`, 429 `rate_limit_error`, any other 4xx
/// `invalid_request_error`), and for a 5xx of no type of its own by
/// seawall's `code`: `overloaded_error` for an overload, `timeout_error`
/// for a time bound, else `api_error`. Always one of Anthropic's
/// `ErrorType`s: apps and SDKs match on that list.
fn anthropic_type(status: StatusCode, code: Code) -> &'static str {
    use seawall_internal::anthropic_errors::type_of_status;
    match type_of_status(status.as_u16()) {
        // A 5xx Anthropic names no type for: by what seawall met.
        "api_error" if code == Code::Overloaded => "overloaded_error",
        "api_error" if code.is_timeout() || code == Code::DeadlineExceeded => "timeout_error",
        ty => ty,
    }
}

/// The header naming the seawall code of a failure.
pub const CODE_HEADER: &str = "x-seawall-code";
/// The header counting the upstream calls behind an answer (attempts
/// seawall refused itself, a route's breaker open or its cooldown, are not
/// calls).
pub const ATTEMPTS_HEADER: &str = "x-seawall-attempts";
/// The header naming the route that served an answer, or whose answer
/// or refusal ended a ladder that failed (`<route>` or
/// `<route>; fallback`).
pub const SERVED_BY_HEADER: &str = "x-seawall-served-by";

/// One error as the client will see it.
#[derive(Debug, Clone)]
pub(crate) struct WireError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
    /// A route cooling after a quota wall: the wall's OpenAI `type`.
    pub quota: bool,
    pub attempts: Option<usize>,
    /// The provider's own error type and code, when it said them: the
    /// body's `type` and `code` (Anthropic's `error.type` and
    /// `error.details.error_code`), as clients branch on the provider's
    /// words (`context_length_exceeded`, `insufficient_quota`, the
    /// Anthropic SDK's exception for `enforced_spend_limit_reached`), and
    /// kept beside them as `provider_type` and `provider_code`.
    pub provider_type: Option<String>,
    pub provider_code: Option<String>,
    /// The status this error had when the provider's words were taken: a
    /// status the gateway set since (a route's own key refused, now a 502)
    /// is no answer of the provider's, and its words would mislead (an
    /// `invalid_api_key` sends the client to check a key that was fine).
    words_for: Option<StatusCode>,
    /// The provider's code came from an error it declared (an error
    /// status, or an error with its type: Azure's 400 `content_filter`
    /// has `"type": null`), not from a finish reason an answer ended with
    /// (an empty answer's `stop`), which is no error code of the
    /// provider's.
    code_declared: bool,
    /// The request member the error is about: OpenAI's `param`, written
    /// in every OpenAI-shaped error (`null` when none is named), as
    /// OpenAI writes it (`messages` on a context that is too long).
    pub param: Option<String>,
    /// The provider's id of the request that failed: passed on in the
    /// header the client's SDK reads it from (openai-python's
    /// `APIStatusError.request_id` reads `x-request-id`, anthropic's
    /// `request-id`), as a success's headers pass it.
    pub request_id: Option<HeaderValue>,
    /// The upstream's rate-limit headers (`x-ratelimit-*`,
    /// `anthropic-ratelimit-*`, `retry-after-ms`, …:
    /// `Failure::UPSTREAM_HEADERS_KEPT`) when this error is the
    /// upstream's answer passed on, as a success passes them: a client
    /// paces itself by them. Through a route with the gateway's own key
    /// they describe the gateway's account, which a success's headers
    /// show its clients all the same. Dropped where the gateway rewrites
    /// the status (a route's own key refused, a 502): they spoke of the
    /// provider's status, not of that one.
    pub upstream_headers: Option<http::HeaderMap>,
    /// For an error the provider declared with no error status of its own
    /// (an event in a stream, an error body in a 2xx) in one of
    /// Anthropic's types: the status `status` was set to from seawall's
    /// code, and the status Anthropic answers that type with, which
    /// Anthropic's wire answers in its place ([`status_on`](Self::status_on)).
    anthropic_status: Option<(StatusCode, StatusCode)>,
}

impl WireError {
    /// An error the gateway itself answers (auth, size, a bad request).
    pub(crate) fn gateway(status: StatusCode, code: Code, message: impl Into<String>) -> WireError {
        WireError {
            status,
            code: code.as_str(),
            message: message.into(),
            retry_after: None,
            quota: false,
            attempts: None,
            provider_type: None,
            provider_code: None,
            words_for: None,
            code_declared: false,
            param: None,
            request_id: None,
            upstream_headers: None,
            anthropic_status: None,
        }
    }

    /// This error about the request member `param` (OpenAI's `param`).
    pub(crate) fn about(mut self, param: &str) -> WireError {
        self.param = Some(param.to_owned());
        self
    }

    /// This error with the provider's own type, code and param from `failure`,
    /// bounded and scrubbed of the gateway's secrets like its message.
    pub(crate) fn with_provider_words(
        mut self,
        failure: &Failure,
        redactor: &Redactor,
    ) -> WireError {
        let word = |word: &str| {
            let bound = seawall::core::PROVIDER_WORD_BYTES;
            redactor.scrub(
                seawall::core::excerpt(word, bound),
                may_end_at_cut(word, bound),
            )
        };
        self.provider_type = failure.provider_type().map(word);
        self.provider_code = failure.provider_code().map(word);
        self.words_for = Some(self.status);
        self.code_declared = failure.provider_type().is_some()
            || failure.status().is_some_and(|status| status >= 400);
        self.param = failure.provider_param().map(word);
        self.request_id = failure
            .request_id()
            .and_then(|id| HeaderValue::from_str(id).ok());
        // Only with the upstream's own status: a refusal or a timeout of
        // the gateway's is no answer of the provider's to describe.
        if failure.status() == Some(self.status.as_u16()) {
            self.upstream_headers = failure.upstream_headers().cloned();
        }
        self
    }

    /// The `param` member's value: the member's name, or `null`.
    fn param_json(&self) -> String {
        self.param
            .as_deref()
            .map_or_else(|| "null".to_owned(), quote)
    }

    /// `,"provider_type":…,"provider_code":…`, each when the provider said it.
    fn provider_members(&self) -> String {
        let mut members = String::new();
        for (name, value) in [
            ("provider_type", &self.provider_type),
            ("provider_code", &self.provider_code),
        ] {
            if let Some(value) = value {
                members.push_str(&format!(",\"{name}\":{}", quote(value)));
            }
        }
        members
    }

    /// The provider's type and code where they answer this error: taken
    /// with the status it still has (not one the gateway set since).
    fn providers_words(&self) -> (Option<&str>, Option<&str>) {
        if self.words_for != Some(self.status) {
            return (None, None);
        }
        (self.provider_type.as_deref(), self.provider_code.as_deref())
    }

    /// Seawall's code as a [`Code`].
    fn seawall_code(&self) -> Code {
        self.code.parse().unwrap_or(Code::Unknown)
    }

    /// OpenAI's `type` and `code`: the provider's where its error said
    /// them; else OpenAI's type for `status` ([`openai_type`]) and
    /// seawall's code. A quota wall's type is `insufficient_quota`
    /// whoever said it (Anthropic's `rate_limit_error`, Gemini's
    /// `RESOURCE_EXHAUSTED`): async-openai stops retrying a 429 only on
    /// that type, and would sleep out the wall's `Retry-After` three
    /// times. A provider's code is taken only from an error it declared
    /// (`code_declared`): a finish reason (an empty answer's `stop`) is
    /// no error code of the provider's.
    fn openai_words(&self, status: StatusCode) -> (&str, &str) {
        let quota = self.quota || self.code == Code::QuotaExhausted.as_str();
        let (provider_type, provider_code) = self.providers_words();
        let code = match provider_code {
            Some(code) if self.code_declared => code,
            _ => self.code,
        };
        let ty = match provider_type {
            _ if quota => "insufficient_quota",
            Some(ty) => ty,
            None => openai_type(status, quota),
        };
        (ty, code)
    }

    /// Anthropic's `error.type` and `error.details.error_code`: the
    /// provider's type where it is one of Anthropic's, with its code as
    /// the details' (Anthropic's SDKs pick their exception by it, such as
    /// `EnforcedSpendLimitReachedError`); else the type Anthropic gives
    /// `status` ([`anthropic_type`]) and no details: a code said without
    /// one of Anthropic's types is no code of Anthropic's (a finish
    /// reason, a proxy's word).
    fn anthropic_words(&self, status: StatusCode) -> (&str, Option<&str>) {
        match self.providers_words() {
            (Some(ty), code) if anthropic_status(ty).is_some() => (ty, code),
            _ => (anthropic_type(status, self.seawall_code()), None),
        }
    }

    /// A failure of the stack before any content: the upstream status if
    /// there was one; else 503 when the ladder ended on a route refused
    /// without a call (a breaker open, a route cooling down: the gateway
    /// is unavailable for the time its `Retry-After` says) — but a route
    /// cooling after a quota wall or a rate limit answers as the wall or
    /// the limit did, 429; else 504 for a time bound, else 502.
    ///
    /// A ladder whose route was refused locally only after it had called
    /// it (the breaker opened on this operation's own failures) is still a
    /// 503 with the time left, and the message says what the route
    /// answered: the refusal alone would hide why the circuit opened.
    pub(crate) fn before_content(failure: &Failure, mut message: String) -> WireError {
        let code = failure.code();
        // A route cooling after a quota wall answers as the wall did (429
        // `insufficient_quota`), met now or remembered: a 503 with the
        // wall's time left has an SDK that retries every 5xx and ignores
        // `x-should-retry` (async-openai) sleep out the `Retry-After`,
        // hours for a spend cap. One cooling after a rate limit answers as
        // the limit did, 429 with the time left: the operation that met
        // the limit passed its 429 on, and an SDK raises the same error
        // for both (openai-python's `RateLimitError`, not a server error).
        // One cooling after its credentials were refused answers as the
        // refusal did (401, a 502 for a route's own key): a 503 has SDKs
        // that retry every 5xx sleep out a failure no wait mends.
        let cooled_as = match failure.cooled_by() {
            Some(cause @ (Code::QuotaExhausted | Code::RateLimited | Code::Auth))
                if code == Code::RouteCoolingDown =>
            {
                Some(cause)
            }
            _ => None,
        };
        if code.is_refusal()
            && let Some(receipt) = failure.receipt()
        {
            let n = receipt.calls();
            let last = receipt
                .attempts
                .iter()
                .rev()
                .filter_map(|attempt| attempt.code)
                .find(|code| !code.is_refusal());
            if let Some(last) = last {
                let attempts = if n == 1 { "attempt" } else { "attempts" };
                message.push_str(&format!(
                    "; refused after {n} {attempts} upstream, the last {last}"
                ));
            }
        }
        // The upstream's error status where it is one an HTTP client knows
        // (a 999 or a 1xx is no answer to pass on); else, for an error the
        // provider declared inside a 2xx (an event in a stream, an error
        // body), the status it answers the same error with unstreamed:
        // SDKs choose their exception, and whether to retry, by it.
        let status = failure
            .status()
            .filter(|s| (400..=599).contains(s))
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(code_status(cooled_as.unwrap_or(code)));
        // On Anthropic's wire, an error Anthropic declared answers as
        // Anthropic answers its type unstreamed: seawall's code folds types
        // whose statuses differ (a `billing_error`, 402, and a spend cap,
        // 429, are both `quota_exhausted`; a `permission_error`, 403, is
        // `auth`), and anthropic-python picks its exception by the status
        // alone: a credit wall answered 429 is a `RateLimitError`, which
        // retry wrappers keep retrying. Only where the status is seawall's
        // own pick: an upstream error status is passed on as it came, and a
        // route refused or cooling answers as seawall does.
        let passed_on = failure.status() == Some(status.as_u16());
        let anthropic_status = failure
            .provider_type()
            .filter(|_| !passed_on && !code.is_refusal() && cooled_as.is_none())
            .and_then(anthropic_status)
            .map(|anthropic| (status, anthropic));
        let retry_after = failure
            .retry_after()
            .map(|after| after.as_secs() + u64::from(after.subsec_nanos() > 0));
        WireError {
            status,
            code: code.as_str(),
            message,
            retry_after,
            quota: cooled_as == Some(Code::QuotaExhausted),
            attempts: failure.receipt().map(Receipt::calls),
            provider_type: None,
            provider_code: None,
            words_for: None,
            code_declared: false,
            param: None,
            request_id: None,
            upstream_headers: None,
            anthropic_status,
        }
    }

    /// The status this error answers with on `wire`: on Anthropic's, the
    /// status Anthropic gives the error's declared type where seawall
    /// picked one from its code, unless the gateway set another since (a
    /// route's own key refused, a 502); else `status`.
    pub(crate) fn status_on(&self, wire: Wire) -> StatusCode {
        match (wire, self.anthropic_status) {
            (Wire::Anthropic, Some((picked, anthropic))) if picked == self.status => anthropic,
            _ => self.status,
        }
    }

    /// The JSON error body in `wire`'s shape, in the provider's words,
    /// carrying the seawall code.
    ///
    /// OpenAI: `{"error":{"message","type","param","code","seawall_code"}}`
    /// (`type` and `code` the provider's where it said them, else an
    /// OpenAI type for the status ([`openai_type`]) and the seawall code;
    /// `param` the request member the error is about or `null`, as OpenAI
    /// always writes it). Anthropic:
    /// `{"type":"error","error":{"type","message","details","seawall_code"},"request_id"}`
    /// (`type` the provider's where it is one of Anthropic's, else
    /// Anthropic's type for the status ([`anthropic_type`]); `details`
    /// `{"error_code"}` when the provider said one beside its type;
    /// `request_id`, as Anthropic's error bodies carry it, when the
    /// provider named one). Both add `provider_type` and `provider_code`
    /// last inside the error when the provider said them.
    pub(crate) fn json(&self, wire: Wire) -> String {
        let request_id = self.request_id.as_ref().and_then(|id| id.to_str().ok());
        self.shaped(wire, self.status_on(wire), request_id)
    }

    /// The error in `wire`'s shape for an answer of `status`, with a
    /// top-level `request_id` on Anthropic's wire when one is given: its
    /// error bodies carry one, its in-stream error events none.
    fn shaped(&self, wire: Wire, status: StatusCode, request_id: Option<&str>) -> String {
        // Written by hand for a stable field order: the providers' own,
        // then seawall's.
        let message = quote(&self.message);
        let seawall = quote(self.code);
        let provider = self.provider_members();
        match wire {
            Wire::OpenAi => {
                let (ty, code) = self.openai_words(status);
                format!(
                    r#"{{"error":{{"message":{message},"type":{},"param":{},"code":{},"seawall_code":{seawall}{provider}}}}}"#,
                    quote(ty),
                    self.param_json(),
                    quote(code)
                )
            }
            Wire::Anthropic => {
                let (ty, error_code) = self.anthropic_words(status);
                let details = error_code.map_or_else(String::new, |code| {
                    format!(r#","details":{{"error_code":{}}}"#, quote(code))
                });
                format!(
                    r#"{{"type":"error","error":{{"type":{},"message":{message}{details},"seawall_code":{seawall}{provider}}}{}}}"#,
                    quote(ty),
                    request_id
                        .map_or_else(String::new, |id| format!(r#","request_id":{}"#, quote(id)))
                )
            }
        }
    }

    /// The final SSE event that ends a stream of `endpoint` interrupted
    /// after content; a Responses API stream's next event number is
    /// `sequence_number`. Its words are the body's, for the status the
    /// same error answers with unstreamed (the stream's own is a 200).
    ///
    /// The Responses API's is its documented `error` event (`code`,
    /// `message`, `param`, `sequence_number`: what async-openai reads), with
    /// the error also nested under `error`, as OpenAI's own production
    /// streams send it (what the Python SDK raises on).
    pub(crate) fn event(&self, endpoint: Endpoint, sequence_number: u64) -> Bytes {
        let status = code_status(self.seawall_code());
        let data = self.shaped(endpoint.wire(), status, None);
        Bytes::from(match endpoint {
            // Embeddings and token counts never stream: their wire's shape.
            Endpoint::ChatCompletions | Endpoint::Embeddings => format!("data: {data}\n\n"),
            Endpoint::Messages | Endpoint::CountTokens => {
                format!("event: error\ndata: {data}\n\n")
            }
            Endpoint::Responses => {
                let (ty, code) = self.openai_words(status);
                let (ty, code) = (quote(ty), quote(code));
                let (message, seawall) = (quote(&self.message), quote(self.code));
                let provider = self.provider_members();
                let param = self.param_json();
                format!(
                    "event: error\ndata: {{\"type\":\"error\",\"code\":{code},\"message\":{message},\
                     \"param\":{param},\"sequence_number\":{sequence_number},\"error\":{{\"type\":{ty},\
                     \"code\":{code},\"message\":{message},\"param\":{param},\
                     \"seawall_code\":{seawall}{provider}}}}}\n\n"
                )
            }
        })
    }

    /// The whole error response.
    pub(crate) fn response(&self, wire: Wire) -> Response {
        let status = self.status_on(wire);
        let mut response = Response::new(Body::from(self.json(wire)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        // First: the gateway's own headers below take their place.
        if let Some(upstream) = &self.upstream_headers {
            headers.extend(upstream.clone());
        }
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(CODE_HEADER, HeaderValue::from_static(self.code));
        // The gateway already ran its ladder: an SDK retrying on top would
        // multiply it.
        headers.insert("x-should-retry", HeaderValue::from_static("false"));
        if let Some(after) = self.retry_after {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(after));
        }
        if let Some(attempts) = self.attempts {
            headers.insert(ATTEMPTS_HEADER, HeaderValue::from(attempts));
        }
        if let Some(id) = &self.request_id {
            let name = match wire {
                Wire::OpenAi => "x-request-id",
                Wire::Anthropic => "request-id",
            };
            headers.insert(name, id.clone());
        }
        // A 401 carries a challenge (RFC 9110, 15.5.2): the gateway's
        // token, or a keyless route's provider refusing the client's own
        // key, both sent as a bearer credential.
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A breaker that opened on the operation's own failures: the answer
    /// names what the route said, not only the refusal.
    #[test]
    fn a_refusal_after_calls_names_what_the_route_answered() {
        use seawall::core::{Attempt, RouteId};
        use std::time::Duration;
        let route = RouteId::new("main");
        let mut receipt = Receipt::default();
        for code in [Code::EmptyResponse, Code::CircuitOpen] {
            receipt.push(Attempt::new(route.clone(), Some(code), Duration::ZERO));
        }
        let failure = Failure::new(Code::CircuitOpen)
            .with_retry_after(Duration::from_secs(4))
            .with_receipt(receipt);
        let error = WireError::before_content(&failure, "seawall: circuit_open".into());
        assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.code, "circuit_open");
        assert_eq!(error.retry_after, Some(4));
        assert_eq!(
            error.message,
            "seawall: circuit_open; refused after 1 attempt upstream, the last empty_response"
        );
        // x-seawall-attempts counts the one call, not the refusal.
        assert_eq!(error.attempts, Some(1));
        // Refused without a call: the refusal alone.
        let mut receipt = Receipt::default();
        receipt.push(Attempt::new(route, Some(Code::CircuitOpen), Duration::ZERO));
        let failure = Failure::new(Code::CircuitOpen).with_receipt(receipt);
        let error = WireError::before_content(&failure, "seawall: circuit_open".into());
        assert_eq!(error.message, "seawall: circuit_open");
        assert_eq!(error.attempts, Some(0), "no call made");
    }

    /// The upstream's error status goes on where a client knows it as
    /// one; a status past 599 (valid to `http`) or below 400 is a 502.
    #[test]
    fn only_an_error_status_is_passed_on() {
        for (upstream, answered) in [(429, 429), (529, 529), (999, 502), (600, 502), (302, 502)] {
            let failure = Failure::new(Code::Unknown).with_status(upstream);
            let error = WireError::before_content(&failure, "odd".into());
            assert_eq!(error.status.as_u16(), answered, "{upstream}");
        }
    }

    /// The body's words, in one wire's shape or the other, read as a
    /// client reads them.
    fn words(error: &WireError, wire: Wire) -> serde_json::Value {
        serde_json::from_str(&error.json(wire)).unwrap()
    }

    /// The data of an SSE event.
    fn event_data(event: &Bytes) -> serde_json::Value {
        let text = std::str::from_utf8(event).unwrap();
        let data = text.lines().find_map(|line| line.strip_prefix("data: "));
        serde_json::from_str(data.unwrap()).unwrap()
    }

    /// The provider's own type and code are the body's `type` and `code`,
    /// as an SDK and the apps on it read them (`e.code ==
    /// "context_length_exceeded"`), with seawall's code beside them, in
    /// every shape; the provider's words are also kept in their members.
    #[test]
    fn the_providers_type_and_code_are_the_bodys() {
        let failure = Failure::new(Code::ContextTooLong)
            .with_status(400)
            .with_provider_type("invalid_request_error")
            .with_provider_code("context_length_exceeded");
        let error = WireError::before_content(&failure, "too long".into())
            .with_provider_words(&failure, &Redactor::default());
        let openai = words(&error, Wire::OpenAi);
        assert_eq!(openai["error"]["code"], "context_length_exceeded");
        assert_eq!(openai["error"]["type"], "invalid_request_error");
        assert_eq!(openai["error"]["seawall_code"], "context_too_long");
        assert_eq!(openai["error"]["provider_code"], "context_length_exceeded");
        assert_eq!(openai["error"]["provider_type"], "invalid_request_error");
        let anthropic = words(&error, Wire::Anthropic);
        assert_eq!(anthropic["error"]["type"], "invalid_request_error");
        assert_eq!(anthropic["error"]["seawall_code"], "context_too_long");
        assert_eq!(anthropic["error"]["provider_type"], "invalid_request_error");
        for endpoint in [Endpoint::ChatCompletions, Endpoint::Responses] {
            let data = event_data(&error.event(endpoint, 3));
            assert_eq!(data["error"]["code"], "context_length_exceeded", "{data}");
            assert_eq!(data["error"]["type"], "invalid_request_error", "{data}");
            assert_eq!(data["error"]["seawall_code"], "context_too_long", "{data}");
        }
        let data = event_data(&error.event(Endpoint::Responses, 3));
        assert_eq!(data["code"], "context_length_exceeded");
        assert!(data.get("seawall_code").is_none(), "{data}");
        // None said: seawall's code, an OpenAI type, no provider member.
        let plain = WireError::before_content(&Failure::new(Code::Timeout), "slow".into());
        let openai = words(&plain, Wire::OpenAi);
        assert_eq!(openai["error"]["code"], "timeout");
        assert_eq!(openai["error"]["type"], "server_error");
        assert_eq!(openai["error"]["seawall_code"], "timeout");
        assert!(!plain.json(Wire::OpenAi).contains("provider_"));
        // A type said without a code (OpenAI's 500s: `"code":null`):
        // the provider's type, seawall's code.
        let failure = Failure::new(Code::ProviderUnavailable)
            .with_status(500)
            .with_provider_type("server_error");
        let error = WireError::before_content(&failure, "oops".into())
            .with_provider_words(&failure, &Redactor::default());
        let openai = words(&error, Wire::OpenAi);
        assert_eq!(openai["error"]["type"], "server_error");
        assert_eq!(openai["error"]["code"], "provider_unavailable");
    }

    /// OpenAI's own codes for its quota, rate and key errors pass as it
    /// said them: an app stops retrying on `insufficient_quota`.
    #[test]
    fn openais_codes_pass_as_said() {
        for (code, status, ty, said) in [
            (
                Code::QuotaExhausted,
                429,
                "insufficient_quota",
                "insufficient_quota",
            ),
            (Code::RateLimited, 429, "tokens", "rate_limit_exceeded"),
            (Code::Auth, 401, "invalid_request_error", "invalid_api_key"),
        ] {
            let failure = Failure::new(code)
                .with_status(status)
                .with_provider_type(ty)
                .with_provider_code(said);
            let error = WireError::before_content(&failure, "no".into())
                .with_provider_words(&failure, &Redactor::default());
            let openai = words(&error, Wire::OpenAi);
            assert_eq!(openai["error"]["type"], ty, "{openai}");
            assert_eq!(openai["error"]["code"], said, "{openai}");
            assert_eq!(openai["error"]["seawall_code"], code.as_str(), "{openai}");
        }
    }

    /// Anthropic's type and `details.error_code` pass as it said them:
    /// anthropic-python picks its exception by (status, error_code), an
    /// `EnforcedSpendLimitReachedError` for a spend limit.
    #[test]
    fn anthropics_type_and_details_pass_as_said() {
        for (code, status, ty, said) in [
            (
                Code::QuotaExhausted,
                429,
                "rate_limit_error",
                "enforced_spend_limit_reached",
            ),
            (
                Code::QuotaExhausted,
                402,
                "billing_error",
                "linked_organization_spend_limit_reached",
            ),
            (
                Code::Overloaded,
                529,
                "overloaded_error",
                "compaction_unavailable",
            ),
        ] {
            let failure = Failure::new(code)
                .with_status(status)
                .with_provider_type(ty)
                .with_provider_code(said)
                .with_request_id("req_1");
            let error = WireError::before_content(&failure, "walled".into())
                .with_provider_words(&failure, &Redactor::default());
            assert_eq!(error.status_on(Wire::Anthropic).as_u16(), status);
            let body = words(&error, Wire::Anthropic);
            assert_eq!(body["error"]["type"], ty, "{body}");
            assert_eq!(body["error"]["details"]["error_code"], said, "{body}");
            assert_eq!(body["error"]["seawall_code"], code.as_str(), "{body}");
            assert_eq!(body["error"]["message"], "walled", "{body}");
            assert_eq!(body["request_id"], "req_1", "{body}");
            // The in-stream event carries the same words.
            let data = event_data(&error.event(Endpoint::Messages, 0));
            assert_eq!(data["error"]["type"], ty, "{data}");
            assert_eq!(data["error"]["details"]["error_code"], said, "{data}");
        }
        // A type said without a code: no details.
        let failure = Failure::new(Code::Overloaded)
            .with_status(529)
            .with_provider_type("overloaded_error");
        let error = WireError::before_content(&failure, "busy".into())
            .with_provider_words(&failure, &Redactor::default());
        assert!(
            words(&error, Wire::Anthropic)["error"]
                .get("details")
                .is_none()
        );
    }

    /// A word that is no Anthropic type (a proxy's, OpenAI's), or a code
    /// said with none (a finish reason: `refusal`), does not stand in
    /// Anthropic's `error.type` or its details: Anthropic's type for the
    /// status does, the provider's words ride in their own members.
    #[test]
    fn anthropic_words_are_anthropics() {
        let failure = Failure::new(Code::QuotaExhausted)
            .with_status(429)
            .with_provider_type("insufficient_quota")
            .with_provider_code("insufficient_quota");
        let error = WireError::before_content(&failure, "walled".into())
            .with_provider_words(&failure, &Redactor::default());
        let body = words(&error, Wire::Anthropic);
        assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
        assert!(body["error"].get("details").is_none(), "{body}");
        assert_eq!(body["error"]["provider_type"], "insufficient_quota");
        let failure = Failure::new(Code::Refused).with_provider_code("refusal");
        let error = WireError::before_content(&failure, "no".into())
            .with_provider_words(&failure, &Redactor::default());
        let body = words(&error, Wire::Anthropic);
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert!(body["error"].get("details").is_none(), "{body}");
        // OpenAI's wire: a code with no type is a finish reason, not an
        // error code of the provider's: seawall's code.
        assert_eq!(words(&error, Wire::OpenAi)["error"]["code"], "refused");
        assert_eq!(
            words(&error, Wire::OpenAi)["error"]["provider_code"],
            "refusal"
        );
    }

    /// An empty answer's finish reason is no error code: `code` stays
    /// seawall's on OpenAI's wire, as in the in-stream event.
    #[test]
    fn an_empty_answer_is_not_coded_by_its_finish() {
        let failure = Failure::new(Code::EmptyResponse).with_provider_code("stop");
        let error = WireError::before_content(&failure, "empty".into())
            .with_provider_words(&failure, &Redactor::default());
        assert_eq!(
            words(&error, Wire::OpenAi)["error"]["code"],
            "empty_response"
        );
        let event = event_data(&error.event(Endpoint::Responses, 3));
        assert_eq!(event["code"], "empty_response", "{event}");
    }

    /// Azure's content filter 400 names its code with `"type": null`:
    /// the code is the provider's all the same, as Azure's docs have apps
    /// check it.
    #[test]
    fn a_code_declared_without_a_type_is_kept() {
        let failure = Failure::new(Code::ContentFiltered)
            .with_status(400)
            .with_provider_code("content_filter");
        let error = WireError::before_content(&failure, "filtered".into())
            .with_provider_words(&failure, &Redactor::default());
        let body = words(&error, Wire::OpenAi);
        assert_eq!(body["error"]["code"], "content_filter", "{body}");
        assert_eq!(body["error"]["seawall_code"], "content_filtered", "{body}");
    }

    /// A quota wall is `insufficient_quota` on OpenAI's wire whoever said
    /// it: async-openai stops retrying a 429 only on that type.
    #[test]
    fn a_quota_wall_is_insufficient_quota_on_openais_wire_whoever_said_it() {
        for ty in [
            "rate_limit_error",
            "RESOURCE_EXHAUSTED",
            "insufficient_quota",
        ] {
            let failure = Failure::new(Code::QuotaExhausted)
                .with_status(429)
                .with_provider_type(ty)
                .with_provider_code("enforced_spend_limit_reached");
            let error = WireError::before_content(&failure, "walled".into())
                .with_provider_words(&failure, &Redactor::default());
            let body = words(&error, Wire::OpenAi);
            assert_eq!(body["error"]["type"], "insufficient_quota", "{body}");
            assert_eq!(body["error"]["code"], "enforced_spend_limit_reached");
            assert_eq!(body["error"]["provider_type"], ty);
        }
    }

    /// A status the gateway set after the provider's words were taken (a
    /// route's own key refused: a 502) is no answer of the provider's: its
    /// words would send the client to check a key that was fine.
    #[test]
    fn a_rewritten_status_drops_the_providers_words() {
        let failure = Failure::new(Code::Auth)
            .with_status(401)
            .with_provider_type("authentication_error")
            .with_provider_code("invalid_api_key");
        let mut error = WireError::before_content(&failure, "refused".into())
            .with_provider_words(&failure, &Redactor::default());
        error.status = StatusCode::BAD_GATEWAY;
        let openai = words(&error, Wire::OpenAi);
        assert_eq!(openai["error"]["code"], "auth", "{openai}");
        assert_eq!(openai["error"]["type"], "server_error", "{openai}");
        let anthropic = words(&error, Wire::Anthropic);
        assert_eq!(anthropic["error"]["type"], "api_error", "{anthropic}");
        assert!(anthropic["error"].get("details").is_none());
    }

    /// The gateway's own failures (no word of a provider's): OpenAI's
    /// `code` is seawall's and its `type` one of OpenAI's for the status;
    /// Anthropic's `error.type` one of its documented types, for the
    /// status the answer has, or for a 5xx by seawall's code; the same in
    /// the in-stream event, for the status the error has unstreamed.
    #[test]
    fn the_gateways_own_failures_speak_each_wires_words() {
        let cooling = |cause| {
            Failure::new(Code::RouteCoolingDown)
                .with_cooled_by(cause)
                .with_retry_after(std::time::Duration::from_secs(30))
        };
        for (failure, status, openai_type, anthropic_type) in [
            (
                Failure::new(Code::CircuitOpen),
                503,
                "server_error",
                "api_error",
            ),
            (
                Failure::new(Code::DeadlineExceeded),
                504,
                "server_error",
                "timeout_error",
            ),
            (
                Failure::new(Code::FirstByteTimeout),
                504,
                "server_error",
                "timeout_error",
            ),
            (
                Failure::new(Code::EmptyResponse),
                502,
                "server_error",
                "api_error",
            ),
            (
                Failure::new(Code::BudgetExhausted),
                502,
                "server_error",
                "api_error",
            ),
            (
                Failure::new(Code::Overloaded).with_status(503),
                503,
                "server_error",
                "overloaded_error",
            ),
            (
                cooling(Code::QuotaExhausted),
                429,
                "insufficient_quota",
                "rate_limit_error",
            ),
            (
                cooling(Code::RateLimited),
                429,
                "requests",
                "rate_limit_error",
            ),
            // Cooling after refused credentials: as the refusal answered
            // (the gateway makes it a 502 for a route's own key).
            (
                cooling(Code::Auth),
                401,
                "invalid_request_error",
                "authentication_error",
            ),
            // Cooling after faults a wait may mend: unavailable.
            (
                cooling(Code::ProviderUnavailable),
                503,
                "server_error",
                "api_error",
            ),
            (
                Failure::new(Code::RequestTooLarge),
                413,
                "invalid_request_error",
                "request_too_large",
            ),
            (
                Failure::new(Code::NotFound),
                404,
                "invalid_request_error",
                "not_found_error",
            ),
            (
                Failure::new(Code::Unknown).with_status(422),
                422,
                "invalid_request_error",
                "invalid_request_error",
            ),
        ] {
            let code = failure.code().as_str();
            let error = WireError::before_content(&failure, "no".into())
                .with_provider_words(&failure, &Redactor::default());
            assert_eq!(error.status.as_u16(), status, "{code}");
            let openai = words(&error, Wire::OpenAi);
            assert_eq!(openai["error"]["code"], code, "{openai}");
            assert_eq!(openai["error"]["type"], openai_type, "{openai}");
            assert_eq!(openai["error"]["seawall_code"], code, "{openai}");
            let anthropic = words(&error, Wire::Anthropic);
            assert_eq!(anthropic["error"]["type"], anthropic_type, "{anthropic}");
            assert_eq!(anthropic["error"]["seawall_code"], code, "{anthropic}");
            let response = error.response(Wire::Anthropic);
            assert_eq!(response.headers()[CODE_HEADER], code);
        }
        // The gateway's own refusals before any route.
        let error = WireError::gateway(StatusCode::UNAUTHORIZED, Code::Auth, "token");
        assert_eq!(
            words(&error, Wire::OpenAi)["error"]["type"],
            "invalid_request_error"
        );
        assert_eq!(
            words(&error, Wire::Anthropic)["error"]["type"],
            "authentication_error"
        );
        // In a stream: by the status the code answers with unstreamed, not
        // the 502 an interrupted stream's error is built with.
        let error = WireError::gateway(StatusCode::BAD_GATEWAY, Code::DeadlineExceeded, "late");
        let data = event_data(&error.event(Endpoint::Messages, 0));
        assert_eq!(data["error"]["type"], "timeout_error", "{data}");
        let data = event_data(&error.event(Endpoint::Responses, 0));
        assert_eq!(data["error"]["type"], "server_error", "{data}");
        assert_eq!(data["code"], "deadline_exceeded", "{data}");
    }

    /// The provider's `param` is OpenAI's own member, in every OpenAI
    /// shape; none named is `null`, as OpenAI writes it, never left out.
    #[test]
    fn the_providers_param_is_written_or_null() {
        let failure = Failure::new(Code::ContextTooLong).with_provider_param("messages");
        let error = WireError::before_content(&failure, "too long".into())
            .with_provider_words(&failure, &Redactor::default());
        let openai: serde_json::Value = serde_json::from_str(&error.json(Wire::OpenAi)).unwrap();
        assert_eq!(openai["error"]["param"], "messages");
        let event = error.event(Endpoint::Responses, 3);
        let data = std::str::from_utf8(&event).unwrap().lines().nth(1).unwrap();
        let responses: serde_json::Value =
            serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(responses["param"], "messages");
        assert_eq!(responses["error"]["param"], "messages");
        let plain = WireError::before_content(&Failure::new(Code::Timeout), "slow".into());
        let openai: serde_json::Value = serde_json::from_str(&plain.json(Wire::OpenAi)).unwrap();
        assert!(openai["error"]["param"].is_null(), "{openai}");
        assert_eq!(openai["error"].as_object().unwrap().len(), 5, "{openai}");
    }

    /// Anthropic's error bodies carry the request's id at the top, beside
    /// `error`; its in-stream error events carry none.
    #[test]
    fn an_anthropic_error_body_names_its_request() {
        let failure =
            Failure::new(Code::Overloaded).with_request_id("req_011CSHoEeqs5C35K2UUqR7Fy");
        let error = WireError::before_content(&failure, "busy".into())
            .with_provider_words(&failure, &Redactor::default());
        assert_eq!(
            error.json(Wire::Anthropic),
            r#"{"type":"error","error":{"type":"overloaded_error","message":"busy","seawall_code":"overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#
        );
        let event = error.event(Endpoint::Messages, 0);
        assert!(!std::str::from_utf8(&event).unwrap().contains("request_id"));
        // OpenAI's body has no such member: its id is in the header only.
        assert!(!error.json(Wire::OpenAi).contains("request_id"));
        let unnamed = WireError::before_content(&Failure::new(Code::Overloaded), "busy".into());
        assert!(!unnamed.json(Wire::Anthropic).contains("request_id"));
    }

    /// An error Anthropic declared in its stream before content (status
    /// 200: no error status of its own) answers on Anthropic's wire with
    /// the status Anthropic gives its type, as anthropic-python picks its
    /// exception by it: a credit wall 402 (400 where it says so in an
    /// `invalid_request_error`), never a 429 `RateLimitError`; a
    /// `permission_error` 403, with no challenge. OpenAI's wire answers
    /// by seawall's code as before (its `insufficient_quota` is a 429).
    #[test]
    fn an_anthropic_error_in_a_stream_answers_with_anthropics_status() {
        let declared = |code: Code, ty: &str| {
            let failure = Failure::new(code).with_status(200).with_provider_type(ty);
            WireError::before_content(&failure, "walled".into())
                .with_provider_words(&failure, &Redactor::default())
        };
        for (code, ty, anthropic, openai) in [
            (Code::QuotaExhausted, "billing_error", 402, 429),
            (Code::QuotaExhausted, "invalid_request_error", 400, 429),
            (Code::QuotaExhausted, "rate_limit_error", 429, 429),
            (Code::Auth, "permission_error", 403, 401),
            (Code::Auth, "authentication_error", 401, 401),
            (Code::ProviderUnavailable, "api_error", 500, 502),
            (Code::Overloaded, "overloaded_error", 529, 529),
            (Code::ContextTooLong, "invalid_request_error", 400, 400),
        ] {
            let error = declared(code, ty);
            assert_eq!(error.status_on(Wire::Anthropic).as_u16(), anthropic, "{ty}");
            assert_eq!(error.status_on(Wire::OpenAi).as_u16(), openai, "{ty}");
            let response = error.response(Wire::Anthropic);
            assert_eq!(response.status().as_u16(), anthropic, "{ty}");
            assert_eq!(
                response
                    .headers()
                    .contains_key(http::header::WWW_AUTHENTICATE),
                anthropic == 401,
                "{ty}"
            );
            assert_eq!(error.response(Wire::OpenAi).status().as_u16(), openai);
        }
        // The declared type is the body's, beside seawall's code.
        let body = words(
            &declared(Code::QuotaExhausted, "billing_error"),
            Wire::Anthropic,
        );
        assert_eq!(body["error"]["type"], "billing_error");
        assert_eq!(body["error"]["seawall_code"], "quota_exhausted");
        assert_eq!(body["error"]["provider_type"], "billing_error");
        // A type not Anthropic's (a proxy's, or OpenAI's): seawall's code.
        let error = declared(Code::QuotaExhausted, "insufficient_quota");
        assert_eq!(
            error.status_on(Wire::Anthropic),
            StatusCode::TOO_MANY_REQUESTS
        );
        // The gateway's own status set since (a route's key refused, a
        // 502) stands.
        let mut error = declared(Code::Auth, "permission_error");
        error.status = StatusCode::BAD_GATEWAY;
        assert_eq!(error.status_on(Wire::Anthropic), StatusCode::BAD_GATEWAY);
        // An upstream error status is passed on as it came.
        let failure = Failure::new(Code::QuotaExhausted)
            .with_status(429)
            .with_provider_type("billing_error");
        let error = WireError::before_content(&failure, "walled".into());
        assert_eq!(
            error.status_on(Wire::Anthropic),
            StatusCode::TOO_MANY_REQUESTS
        );
        // A route cooling after a wall answers as seawall does.
        let failure = Failure::new(Code::RouteCoolingDown)
            .with_cooled_by(Code::QuotaExhausted)
            .with_provider_type("billing_error");
        let error = WireError::before_content(&failure, "cooling".into());
        assert_eq!(
            error.status_on(Wire::Anthropic),
            StatusCode::TOO_MANY_REQUESTS
        );
    }

    #[test]
    fn shapes() {
        let error = WireError::gateway(StatusCode::BAD_GATEWAY, Code::StreamInterrupted, "cut");
        assert_eq!(
            error.event(Endpoint::ChatCompletions, 0),
            r#"data: {"error":{"message":"cut","type":"server_error","param":null,"code":"stream_interrupted","seawall_code":"stream_interrupted"}}

"#
        );
        assert_eq!(
            error.event(Endpoint::Messages, 0),
            r#"event: error
data: {"type":"error","error":{"type":"api_error","message":"cut","seawall_code":"stream_interrupted"}}

"#
        );
        assert_eq!(
            error.event(Endpoint::Responses, 7),
            concat!(
                "event: error\n",
                r#"data: {"type":"error","code":"stream_interrupted","message":"cut","param":null,"#,
                r#""sequence_number":7,"error":{"type":"server_error","code":"stream_interrupted","#,
                r#""message":"cut","param":null,"seawall_code":"stream_interrupted"}}"#,
                "\n\n"
            )
        );
    }
}
