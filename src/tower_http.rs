//! tower-http interop: seawall's verdict as tower-http's failure class.
//!
//! tower-http's `TraceLayer` (and any layer built on its `classify` module)
//! records failures by their class. Its own classifiers know status codes
//! (`ServerErrorsAsFailures`) or gRPC codes; around a seawall stack every
//! failure is a service error carrying a [`Failure`], and a stream that
//! breaks after content fails in its body. [`SeawallClassifier`] reads both
//! and names them by seawall's stable code, so a trace says `quota_exhausted`
//! or `stream_interrupted` instead of "an error".
//!
//! ```
//! use seawall::tower_http::{FailureClass, SeawallClassifier};
//! use tower_http::trace::TraceLayer;
//!
//! let trace = TraceLayer::new(SeawallClassifier).on_failure(
//!     |class: FailureClass, latency: std::time::Duration, _span: &tracing::Span| {
//!         tracing::warn!(code = class.code_str(), ?latency, "call failed");
//!     },
//! );
//! # let _ = trace;
//! ```
//!
//! A 2xx answer (or a 304, the answer to a conditional request) is always
//! classified at its end of stream: an interruption after content is the
//! body's error, and it is the one failure a client most needs to see.
//!
//! A gRPC answer (`content-type: application/grpc…`) is HTTP 200 whatever
//! happened: its outcome is `grpc-status`, in the headers of a
//! trailers-only answer (a handler's error before any message) and in the
//! trailers otherwise (a status after messages, as a seawall bound that
//! fires mid-stream under `seawall::tonic::GrpcStatusLayer::server` sends
//! it). A status other than OK in either is a failure, named by the code
//! seawall gives that status (`UNAVAILABLE` is `provider_unavailable`,
//! `DEADLINE_EXCEEDED` `timeout`). As tower-http's `GrpcErrorsAsFailures`
//! reads it, an answer whose trailers carry no `grpc-status` is no failure.
//!
//! A `cancelled` failure (a caller that stopped waiting, a gRPC
//! `CANCELLED`) reaches `on_failure` too, although seawall's own spans do
//! not mark it an error and its metrics count it apart: tower-http's
//! classifier has to give every error a failure class. An `on_failure`
//! that should agree with seawall's spans passes over
//! `FailureClass::Failure(Code::Cancelled)`.

use std::any::Any;
use std::fmt;
use std::time::SystemTime;

use http::{HeaderMap, Request, Response, StatusCode};
use seawall_core::hint::RetryHint;
use seawall_core::provider::{
    ErrorContext, GRPC_UNKNOWN, QuotaWall, classify_grpc, grpc_message_bytes, grpc_status_code,
};
use seawall_core::{BoxError, Code, Failure};

/// The most of an unclassified error's chain its class says, in bytes.
const ERROR_TEXT_BYTES: usize = 4096;
use tower_http::classify::{ClassifiedResponse, ClassifyEos, ClassifyResponse, MakeClassifier};

/// Classifies responses and errors of a seawall stack by seawall's code.
/// See the [module docs](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeawallClassifier;

/// What failed, as [`SeawallClassifier`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureClass {
    /// A seawall [`Failure`], by its stable code; with the `classify`
    /// feature, also an error seawall's classifier names (a transport's,
    /// tower's `Overloaded` or `Elapsed`) by the code it gives it.
    Failure(Code),
    /// A response that is not a success and carries no seawall verdict (no
    /// seawall layer below the trace).
    Status(StatusCode),
    /// An error that carries no seawall verdict.
    Error(String),
}

impl FailureClass {
    /// The stable name to record: the seawall code, `http_<status>`, or
    /// `unclassified`.
    pub fn code_str(&self) -> String {
        match self {
            FailureClass::Failure(code) => code.as_str().to_owned(),
            FailureClass::Status(status) => format!("http_{}", status.as_u16()),
            FailureClass::Error(_) => "unclassified".to_owned(),
        }
    }

    fn of_error<E: fmt::Display + 'static>(error: &E) -> FailureClass {
        let any: &dyn Any = error;
        let failure = any
            .downcast_ref::<BoxError>()
            .and_then(|boxed| Failure::find(&**boxed))
            .or_else(|| any.downcast_ref::<Failure>())
            .or_else(|| Failure::find(layer_error(any)?));
        if let Some(failure) = failure {
            return FailureClass::Failure(failure.code());
        }
        // tower's own refusals (`LoadShed`'s `Overloaded`, `Timeout`'s
        // `Elapsed`) and a transport's errors, named as seawall's
        // classifier names them below the trace.
        #[cfg(feature = "classify")]
        if let Some(failure) = any
            .downcast_ref::<BoxError>()
            .map(|boxed| -> &(dyn std::error::Error + 'static) { &**boxed })
            .or_else(|| layer_error(any))
            .and_then(seawall_classify::transport_failure)
        {
            return FailureClass::Failure(failure.code());
        }
        // An HTTP client's error names the URL it failed on, keys and all
        // (`?key=`): shown as every failure message is.
        // The whole chain, bounded: a wrapper's own text names only its
        // part (`transport failed`), the cause is its source's.
        let text = match any
            .downcast_ref::<BoxError>()
            .map(|boxed| -> &(dyn std::error::Error + 'static) { &**boxed })
            .or_else(|| layer_error(any))
        {
            Some(error) => seawall_internal::error::chain_text(error, ERROR_TEXT_BYTES),
            None => error.to_string(),
        };
        FailureClass::Error(seawall_core::without_url_secrets(&text).into_owned())
    }
}

/// A seawall layer's own error type, seen through: tower-http hands the
/// classifier the concrete error of the service it wraps, which for a
/// breaker directly inside is `BreakerError` (its refusal or the inner
/// failure as its source), not a box.
fn layer_error(any: &dyn Any) -> Option<&(dyn std::error::Error + 'static)> {
    #[cfg(feature = "breaker")]
    if let Some(error) = any.downcast_ref::<seawall_breaker::BreakerError>() {
        return Some(error);
    }
    let _ = any;
    None
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureClass::Failure(code) => f.write_str(code.as_str()),
            FailureClass::Status(status) => write!(f, "http {status}"),
            FailureClass::Error(message) => f.write_str(message),
        }
    }
}

impl MakeClassifier for SeawallClassifier {
    type Classifier = SeawallClassifier;
    type FailureClass = FailureClass;
    type ClassifyEos = SeawallEos;

    fn make_classifier<B>(&self, _request: &Request<B>) -> Self::Classifier {
        SeawallClassifier
    }
}

impl ClassifyResponse for SeawallClassifier {
    type FailureClass = FailureClass;
    type ClassifyEos = SeawallEos;

    fn classify_response<B>(
        self,
        response: &Response<B>,
    ) -> ClassifiedResponse<FailureClass, SeawallEos> {
        let status = response.status();
        let grpc = is_grpc(response.headers());
        // A trailers-only answer: the call's status is in the headers.
        if grpc && let Some(failure) = grpc_failure(response.headers(), status) {
            return ClassifiedResponse::Ready(Err(failure));
        }
        // A 304 is an answer too: seawall delivers one to a conditional
        // `GET` or `HEAD` as a success.
        if seawall_core::is_answer_status(status) {
            ClassifiedResponse::RequiresEos(SeawallEos {
                grpc: grpc.then_some(status),
            })
        } else {
            ClassifiedResponse::Ready(Err(FailureClass::Status(status)))
        }
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> FailureClass {
        FailureClass::of_error(error)
    }
}

/// Classifies the end of a 2xx (or 304) body: a clean end is a success,
/// a body error is named by its seawall code, and so is a gRPC answer's
/// `grpc-status` in its trailers when it is not OK.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeawallEos {
    /// The HTTP status of a gRPC answer, whose trailers carry the call's
    /// status; `None` for any other answer.
    grpc: Option<StatusCode>,
}

impl ClassifyEos for SeawallEos {
    type FailureClass = FailureClass;

    fn classify_eos(self, trailers: Option<&HeaderMap>) -> Result<(), FailureClass> {
        match (self.grpc, trailers) {
            (Some(status), Some(trailers)) => match grpc_failure(trailers, status) {
                Some(failure) => Err(failure),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> FailureClass {
        FailureClass::of_error(error)
    }
}

/// Whether `headers` are a gRPC answer's: `content-type` is
/// `application/grpc`, alone or with a suffix (`+proto`, `; charset…`).
fn is_grpc(headers: &HeaderMap) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.as_bytes().get(..GRPC.len()))
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(GRPC))
}

/// The failure the `grpc-status` in `map` (a trailers-only answer's
/// headers, or trailers) says, named by seawall's table of gRPC statuses;
/// `None` for OK and for a map without a status.
fn grpc_failure(map: &HeaderMap, status: StatusCode) -> Option<FailureClass> {
    let value = map.get("grpc-status")?;
    // As tonic reads it: one digit, or two from 10 to 16; anything else is
    // UNKNOWN, which its caller gets as an error.
    let mut code = grpc_status_code(value.as_bytes());
    let message = map
        .get("grpc-message")
        .map(|value| String::from_utf8(grpc_message_bytes(value.as_bytes())));
    // tonic reads an OK whose message is not UTF-8 as UNKNOWN.
    if code == 0 && matches!(message, Some(Err(_))) {
        code = GRPC_UNKNOWN;
    }
    if code == 0 {
        return None;
    }
    let message = message.map(|message| {
        message.unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    });
    let now = SystemTime::now();
    let cx = ErrorContext {
        status: Some(status.as_u16()),
        hint: RetryHint::from_headers(map, now),
        quota_wall: QuotaWall::default(),
        now,
    };
    Some(FailureClass::Failure(
        classify_grpc(code, message.as_deref(), cx).code(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_named_by_their_seawall_code() {
        let boxed: BoxError = Box::new(Failure::new(Code::QuotaExhausted));
        assert_eq!(
            SeawallClassifier.classify_error(&boxed),
            FailureClass::Failure(Code::QuotaExhausted)
        );
        assert_eq!(
            SeawallEos::default()
                .classify_error(&Failure::new(Code::StreamInterrupted))
                .code_str(),
            "stream_interrupted"
        );
        let other: BoxError = "boom".into();
        assert_eq!(
            SeawallClassifier.classify_error(&other).code_str(),
            "unclassified"
        );
        #[cfg(feature = "breaker")]
        {
            // A breaker's own error, its failure inside.
            let inner: BoxError = Box::new(Failure::new(Code::Overloaded));
            let breaker = seawall_breaker::BreakerError::Inner(inner);
            assert_eq!(
                SeawallClassifier.classify_error(&breaker),
                FailureClass::Failure(Code::Overloaded)
            );
        }
        #[cfg(feature = "classify")]
        {
            // tower's own refusals, named as seawall's classifier names
            // them.
            let shed: BoxError = Box::new(tower::load_shed::error::Overloaded::new());
            assert_eq!(
                SeawallClassifier.classify_error(&shed),
                FailureClass::Failure(Code::Overloaded)
            );
            let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
            assert_eq!(
                SeawallEos::default().classify_error(&elapsed).code_str(),
                "timeout"
            );
        }
        let io = std::io::Error::other("reset");
        assert_eq!(
            SeawallClassifier.classify_error(&io),
            FailureClass::Error("reset".into())
        );
        // A wrapper names only its part: the class says the whole chain.
        let attached = seawall_core::Receipt::default().attach("connection reset".into());
        assert_eq!(
            SeawallClassifier.classify_error(&attached),
            FailureClass::Error("failed before any call was sent: connection reset".into())
        );
    }

    #[test]
    fn success_waits_for_the_end_of_the_body_and_errors_keep_their_status() {
        let ok = Response::builder().status(200).body(()).unwrap();
        assert!(matches!(
            SeawallClassifier.classify_response(&ok),
            ClassifiedResponse::RequiresEos(_)
        ));
        let bad = Response::builder().status(502).body(()).unwrap();
        match SeawallClassifier.classify_response(&bad) {
            ClassifiedResponse::Ready(Err(class)) => assert_eq!(class.code_str(), "http_502"),
            _ => panic!("a 502 is a failure"),
        }
        // A 304 is the answer to a conditional request, delivered by
        // seawall as a success; any other 3xx is not.
        let not_modified = Response::builder().status(304).body(()).unwrap();
        assert!(matches!(
            SeawallClassifier.classify_response(&not_modified),
            ClassifiedResponse::RequiresEos(_)
        ));
        let moved = Response::builder().status(301).body(()).unwrap();
        match SeawallClassifier.classify_response(&moved) {
            ClassifiedResponse::Ready(Err(class)) => assert_eq!(class.code_str(), "http_301"),
            _ => panic!("a 301 is a failure"),
        }
    }

    /// A gRPC answer's head: `status`, gRPC's content type and `fields`.
    fn grpc_head(status: u16, fields: &[(&str, &str)]) -> Response<()> {
        let mut builder = Response::builder()
            .status(status)
            .header("content-type", "application/grpc");
        for (name, value) in fields {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    fn map(fields: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            map.append(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_trailers_only_grpc_status_is_a_failure_named_by_seawall() {
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[("grpc-status", "14")], "provider_unavailable"),
            (&[("grpc-status", "4")], "timeout"),
            (&[("grpc-status", "16")], "auth"),
            (&[("grpc-status", "1")], "cancelled"),
            // tonic's own time bound, as its server sends it.
            (
                &[("grpc-status", "1"), ("grpc-message", "Timeout%20expired")],
                "timeout",
            ),
            // Unreadable: UNKNOWN to tonic's caller.
            (&[("grpc-status", "ok")], "unknown"),
        ];
        for (fields, code) in cases {
            match SeawallClassifier.classify_response(&grpc_head(200, fields)) {
                ClassifiedResponse::Ready(Err(class)) => {
                    assert_eq!(class.code_str(), code, "{fields:?}")
                }
                _ => panic!("{fields:?} is a failure"),
            }
        }
        // OK in the head: the body's end decides, as for any 2xx.
        let ok = grpc_head(200, &[("grpc-status", "0")]);
        assert!(matches!(
            SeawallClassifier.classify_response(&ok),
            ClassifiedResponse::RequiresEos(_)
        ));
        // Not a gRPC answer: a `grpc-status` field says nothing.
        let json = Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .header("grpc-status", "14")
            .body(())
            .unwrap();
        assert!(matches!(
            SeawallClassifier.classify_response(&json),
            ClassifiedResponse::RequiresEos(_)
        ));
    }

    #[test]
    fn a_grpc_status_in_the_trailers_is_the_calls_outcome() {
        let ClassifiedResponse::RequiresEos(eos) =
            SeawallClassifier.classify_response(&grpc_head(200, &[]))
        else {
            panic!("a gRPC answer waits for its trailers");
        };
        assert_eq!(
            eos.classify_eos(Some(&map(&[("grpc-status", "4")]))),
            Err(FailureClass::Failure(Code::Timeout))
        );
        assert_eq!(
            eos.classify_eos(Some(&map(&[
                ("grpc-status", "14"),
                ("grpc-message", "lost%20the%20leader")
            ])))
            .map_err(|class| class.code_str()),
            Err("provider_unavailable".to_owned())
        );
        // An OK whose message is not UTF-8 reaches tonic's caller as UNKNOWN.
        assert_eq!(
            eos.classify_eos(Some(&map(&[("grpc-status", "0"), ("grpc-message", "%FF")]))),
            Err(FailureClass::Failure(Code::Unknown))
        );
        assert_eq!(
            eos.classify_eos(Some(&map(&[("grpc-status", "0")]))),
            Ok(())
        );
        // No status in the trailers, or no trailers: as tower-http's
        // `GrpcErrorsAsFailures` reads them, no failure.
        assert_eq!(eos.classify_eos(Some(&map(&[]))), Ok(()));
        assert_eq!(eos.classify_eos(None), Ok(()));

        // An answer that is not gRPC: its trailers' fields are not read.
        let plain = Response::builder().status(200).body(()).unwrap();
        let ClassifiedResponse::RequiresEos(eos) = SeawallClassifier.classify_response(&plain)
        else {
            panic!("a 2xx waits for its end");
        };
        assert_eq!(
            eos.classify_eos(Some(&map(&[("grpc-status", "4")]))),
            Ok(())
        );
    }
}
