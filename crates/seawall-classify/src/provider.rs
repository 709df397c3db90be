//! The built-in classifiers: one per provider wire format, gRPC and plain HTTP.

use http::response::Parts;
use seawall_core::Failure;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};

use crate::classifier::{Checked, Classifier, Inspection};
use crate::{grpc, unary};

/// The classifier behind [`ClassifyLayer::openai`], [`::anthropic`],
/// [`::gemini`], [`::grpc`] and [`::http`].
///
/// | | non-2xx | 2xx head | 2xx body |
/// |---|---|---|---|
/// | `openai`, `anthropic`, `gemini` | the provider's error table | `application/json` is read | empty, refused, filtered; finish reason |
/// | `grpc` | `grpc-status` if present, else the status table | non-zero `grpc-status` fails | — |
/// | `http` | the status table (408/429/5xx transient, other 4xx permanent) | — | — |
///
/// The error tables live in [`seawall_core::provider`], shared with the
/// stream guard, which meets the same errors inside `200` streams.
///
/// [`ClassifyLayer::openai`]: crate::ClassifyLayer::openai
/// [`::anthropic`]: crate::ClassifyLayer::anthropic
/// [`::gemini`]: crate::ClassifyLayer::gemini
/// [`::grpc`]: crate::ClassifyLayer::grpc
/// [`::http`]: crate::ClassifyLayer::http
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderClassifier {
    wire: Wire,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Http(Provider),
    Grpc,
}

impl ProviderClassifier {
    /// OpenAI and OpenAI-compatible APIs.
    pub const fn openai() -> Self {
        ProviderClassifier {
            wire: Wire::Http(Provider::OpenAi),
        }
    }

    /// Anthropic messages.
    pub const fn anthropic() -> Self {
        ProviderClassifier {
            wire: Wire::Http(Provider::Anthropic),
        }
    }

    /// Gemini (Google AI and Vertex AI).
    pub const fn gemini() -> Self {
        ProviderClassifier {
            wire: Wire::Http(Provider::Gemini),
        }
    }

    /// gRPC services (tonic and others).
    pub const fn grpc() -> Self {
        ProviderClassifier { wire: Wire::Grpc }
    }

    /// Any HTTP service: the status decides.
    pub const fn http() -> Self {
        ProviderClassifier {
            wire: Wire::Http(Provider::Http),
        }
    }

    /// The error-body format this classifier reads.
    pub const fn provider(self) -> Provider {
        match self.wire {
            Wire::Http(provider) => provider,
            Wire::Grpc => Provider::Http,
        }
    }
}

impl Classifier for ProviderClassifier {
    fn classify_response(&self, parts: &Parts, body: &[u8], cx: ErrorContext) -> Option<Failure> {
        let grpc = match self.wire {
            Wire::Grpc => grpc::head_failure(parts, cx.quota_wall),
            Wire::Http(_) => None,
        };
        Some(grpc.unwrap_or_else(|| classify_error(self.provider(), body, cx)))
    }

    fn inspect_success(&self, parts: &Parts, quota_wall: QuotaWall) -> Inspection {
        match self.wire {
            Wire::Grpc => match grpc::head_failure(parts, quota_wall) {
                Some(failure) => Inspection::Fail(failure),
                None => Inspection::Deliver,
            },
            Wire::Http(Provider::Http) => Inspection::Deliver,
            Wire::Http(_) if is_json(parts) => Inspection::CheckBody,
            Wire::Http(_) => Inspection::Deliver,
        }
    }

    fn check_success(&self, _parts: &Parts, body: &[u8]) -> Checked {
        unary::check(self.provider(), body)
    }
}

/// `application/json`, with or without parameters. `text/event-stream` and
/// anything else is not read.
fn is_json(parts: &Parts) -> bool {
    let Some(value) = parts.headers.get(http::header::CONTENT_TYPE) else {
        return false;
    };
    let essence = value.as_bytes().split(|&b| b == b';').next().unwrap_or(&[]);
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}
