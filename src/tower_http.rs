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
//! A 2xx answer is always classified at its end of stream: an interruption
//! after content is the body's error, and it is the one failure a client
//! most needs to see.

use std::any::Any;
use std::fmt;

use http::{HeaderMap, Request, Response, StatusCode};
use seawall_core::{BoxError, Code, Failure};
use tower_http::classify::{ClassifiedResponse, ClassifyEos, ClassifyResponse, MakeClassifier};

/// Classifies responses and errors of a seawall stack by seawall's code.
/// See the [module docs](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeawallClassifier;

/// What failed, as [`SeawallClassifier`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureClass {
    /// A seawall [`Failure`], by its stable code.
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
        match failure {
            Some(failure) => FailureClass::Failure(failure.code()),
            // An HTTP client's error names the URL it failed on, keys
            // and all (`?key=`): shown as every failure message is.
            None => FailureClass::Error(
                seawall_core::without_url_secrets(&error.to_string()).into_owned(),
            ),
        }
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
        if status.is_success() {
            ClassifiedResponse::RequiresEos(SeawallEos)
        } else {
            ClassifiedResponse::Ready(Err(FailureClass::Status(status)))
        }
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> FailureClass {
        FailureClass::of_error(error)
    }
}

/// Classifies the end of a 2xx body: a clean end is a success, a body
/// error is named by its seawall code.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeawallEos;

impl ClassifyEos for SeawallEos {
    type FailureClass = FailureClass;

    fn classify_eos(self, _trailers: Option<&HeaderMap>) -> Result<(), FailureClass> {
        Ok(())
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> FailureClass {
        FailureClass::of_error(error)
    }
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
            SeawallEos
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
        let io = std::io::Error::other("reset");
        assert_eq!(
            SeawallClassifier.classify_error(&io),
            FailureClass::Error("reset".into())
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
    }
}
