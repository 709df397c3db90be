//! The built-in classifiers: one per provider wire format, gRPC and plain HTTP.

use http::response::Parts;
use seawall_core::provider::{
    ErrorContext, Provider, bedrock, classify_bedrock_error, classify_error,
};
use seawall_core::{Class, Code, Failure, Finish, FinishKind, RequestFacts};
use seawall_internal::json::{is_json_media, without_bom};

use crate::classifier::{Checked, Classifier, Inspection, SuccessContext};
use crate::{grpc, unary};

/// The classifier behind [`ClassifyLayer::openai`], [`::anthropic`],
/// [`::gemini`], [`::grpc`] and [`::http`].
///
/// | | non-2xx | 2xx head | 2xx body |
/// |---|---|---|---|
/// | `openai`, `anthropic`, `gemini` | the provider's error table | `application/json` is read | empty, refused, filtered; finish reason |
/// | `grpc` | `grpc-status` if present, else the status table | non-zero `grpc-status` fails | `grpc-status` in the trailers |
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

    /// The OpenAI Responses API (`POST /v1/responses`).
    pub const fn openai_responses() -> Self {
        ProviderClassifier {
            wire: Wire::Http(Provider::OpenAiResponses),
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

impl ProviderClassifier {
    /// Whose answers a request's 2xx body holds: the provider whose
    /// generation endpoint the path names, else the layer's. One client
    /// often calls more than one: OpenAI's serves chat completions and the
    /// Responses API, a gateway (LiteLLM, seawall's own) serves OpenAI's and
    /// Anthropic's wires side by side, Gemini serves an OpenAI-compatible
    /// endpoint. Read in the layer's shape, every answer of the other wire
    /// would be "another shape" on a generation endpoint: a failure, retried.
    /// A plain HTTP layer judges no answer.
    fn answer_provider(self, facts: &RequestFacts) -> Provider {
        match (self.provider(), facts.provider()) {
            (Provider::Http, _) => Provider::Http,
            (_, Some(named)) => named,
            (provider, None) => provider,
        }
    }
}

impl Classifier for ProviderClassifier {
    fn classify_response(&self, parts: &Parts, body: &[u8], cx: ErrorContext) -> Option<Failure> {
        let grpc = match self.wire {
            Wire::Grpc => {
                grpc::head_failure(parts, cx.quota_wall).or_else(|| grpc::proxy_failure(parts, cx))
            }
            Wire::Http(_) => None,
        };
        Some(grpc.unwrap_or_else(|| http_error(self.provider(), parts, body, cx)))
    }

    /// An error's body is read in the wire the request's path names, as a
    /// 2xx answer's is (else in the layer's; a plain HTTP layer keeps its
    /// own): Claude on Vertex AI (`…/publishers/anthropic/models/{m}:rawPredict`)
    /// says "prompt is too long" in Anthropic's shape under a Gemini layer,
    /// and read by Gemini's and OpenAI's tables it was a `bad_request`,
    /// never the `context_too_long` a larger-context route takes.
    fn classify_response_for(
        &self,
        parts: &Parts,
        body: &[u8],
        cx: ErrorContext,
        facts: &RequestFacts,
    ) -> Option<Failure> {
        match self.wire {
            Wire::Grpc => self.classify_response(parts, body, cx),
            Wire::Http(_) => Some(http_error(self.answer_provider(facts), parts, body, cx)),
        }
    }

    /// A provider's 2xx answer is read when it is JSON, and — on a
    /// generation endpoint, where every 2xx must be an answer, and on one
    /// whose every 2xx is JSON ([`RequestFacts::answers_json`]) — when it
    /// does not say what it is (no content type, `text/plain`, `text/html`,
    /// …): the read decides whether it is an answer, an event stream or
    /// neither. A compressed body nobody decoded is no answer.
    fn inspect_success(&self, parts: &Parts, cx: &SuccessContext<'_>) -> Inspection {
        match self.wire {
            Wire::Grpc => match grpc::head_failure(parts, cx.quota_wall) {
                Some(failure) => Inspection::Fail(failure),
                // An OK head is the server's completed answer, whatever
                // its details: tonic would panic on details it cannot
                // read, so where the response is handed on they are made
                // readable, as in trailers (written again from another
                // alphabet, dropped when no alphabet decodes them), not
                // refused and the completed call asked for again.
                None if grpc::head_has_status(parts) => Inspection::Deliver,
                // gRPC-Web sends its trailers inside the body, as a frame
                // of its own, which only its client layer (tonic-web's)
                // reads: handed on unjudged. Above that layer seawall sees
                // plain gRPC and judges it.
                None if media_type(parts).is_some_and(is_grpc_web) => Inspection::Deliver,
                // Only a gRPC answer keeps its status for the trailers.
                None if media_type(parts).is_some_and(seawall_internal::headers::is_grpc_media) => {
                    Inspection::AwaitTrailers
                }
                // A 2xx that is not gRPC (a captive portal's page, a proxy's
                // own answer) answers nothing the call asked: tonic would
                // read it as broken messages after seawall handed it on.
                None => {
                    let media = media_type(parts).map(String::from_utf8_lossy);
                    Inspection::Fail(Failure::new(Code::ProtocolViolation).with_message(&format!(
                        "the 2xx answer to a gRPC call is not gRPC (content-type {})",
                        media.as_deref().unwrap_or("missing")
                    )))
                }
            },
            Wire::Http(Provider::Http) => Inspection::Deliver,
            Wire::Http(_) => {
                let generation = cx.facts.is_generation();
                let json_only = cx.facts.answers_json();
                // Outside a generation, a 2xx that says it has no body (a
                // 204 or 205 to a `DELETE`, a `content-length: 0`) is a
                // success as it is, whatever its content type or coding
                // claims; only a generation must carry an answer, and an
                // endpoint that answers JSON its JSON.
                if !generation && declares_no_body(parts) {
                    return if json_only {
                        Inspection::Fail(no_json_answer())
                    } else {
                        Inspection::Deliver
                    };
                }
                if let Some(encoding) = undecoded_encoding(parts) {
                    return Inspection::Fail(Failure::new(Code::ProtocolViolation).with_message(
                        &format!(
                            "the 2xx answer is compressed ({encoding}) and nothing decoded it \
                             (a decompression layer between ClassifyLayer and the client decodes \
                             gzip, deflate and br; CanonicalEncodingLayer under it reads \
                             their other spellings)"
                        ),
                    ));
                }
                match media_type(parts) {
                    Some(media) if is_json_media(media) => Inspection::CheckBody,
                    // A unary request's answer is checked as one whatever
                    // its label says (the stream guard leaves it alone).
                    Some(media)
                        if media.eq_ignore_ascii_case(b"text/event-stream")
                            && !cx.facts.unary_requested()
                            && !json_only =>
                    {
                        Inspection::Deliver
                    }
                    _ if generation || json_only => Inspection::CheckBody,
                    _ => Inspection::Deliver,
                }
            }
        }
    }

    fn check_success(&self, parts: &Parts, body: &[u8], cx: &SuccessContext<'_>) -> Checked {
        let provider = self.answer_provider(cx.facts);
        let generation = cx.facts.is_generation();
        // Blanks where the endpoint always answers JSON: its answer is
        // missing, not a model's empty one (`empty_response`, a
        // generation's).
        if !generation
            && cx.facts.answers_json()
            && provider != Provider::Http
            && without_bom(body).iter().all(u8::is_ascii_whitespace)
        {
            return Checked::Fail(no_json_answer());
        }
        match unary::check(provider, body, generation, cx.facts.background_requested()) {
            checked @ Checked::Answer { .. } => checked,
            // A stored response read back or cancelled: a `failed` or
            // `cancelled` status is the object's data, recorded earlier,
            // not this call's failure (retried, it would read the same; a
            // breaker would blame the route now for it).
            Checked::Fail(_)
                if cx.facts.reads_stored()
                    && !without_bom(body).iter().all(u8::is_ascii_whitespace) =>
            {
                Checked::Deliver(None)
            }
            // The answer's own refusal or filter, delivered where asked: an
            // error the body declares instead of an answer (below) stays
            // one.
            // Billed as any answer: its usage is read too.
            Checked::Fail(failure) if cx.deliver_policy && failure.class() == Class::Policy => {
                Checked::Answer {
                    finish: Some(policy_finish(&failure)),
                    usage: failure.usage(),
                }
            }
            // Only where an answer must be: elsewhere a resource may carry
            // an `error` object of its own (a failed fine-tuning job, an
            // operation that finished in error), delivered as it is.
            checked if generation => match declared_error(provider, parts, body, cx.quota_wall) {
                Some(failure) => Checked::Fail(failure),
                None => checked,
            },
            checked => checked,
        }
    }
}

/// The failure of a 2xx with no body where the endpoint always answers
/// JSON ([`RequestFacts::answers_json`]): a proxy's or server's broken
/// answer, which the next attempt may not repeat.
#[cold]
fn no_json_answer() -> Failure {
    Failure::new(Code::ProtocolViolation)
        .with_message("the 2xx answer has no body where the endpoint always answers JSON")
}

/// The finish a policy verdict stands for, when it is delivered as the
/// answer it came in: the provider's reason, or seawall's code where no
/// reason said it (OpenAI's `message.refusal` ends in `stop`).
fn policy_finish(failure: &Failure) -> Finish {
    let kind = match failure.code() {
        Code::Refused => FinishKind::Refused,
        _ => FinishKind::Filtered,
    };
    Finish::new(
        kind,
        failure.provider_code().unwrap_or(failure.code().as_str()),
    )
}

/// A 2xx whose body declares an error where an answer would be: read as
/// the error it declares, its `code` as the status when it is an HTTP
/// status. OpenRouter answers this way once a generation has begun ("the
/// HTTP status will be 200 and the error in the body",
/// `{"error":{"code":502,"message":…}}`); judged as another shape it was
/// `protocol_violation`, retried at once whatever it said (a 402 for spent
/// credits, a 429 with its wait). Only a body whose `error` is an object,
/// and only once the body is no answer: `"error": null` says nothing.
/// Out of line: the answer path never calls it.
#[cold]
#[inline(never)]
fn declared_error(
    provider: Provider,
    parts: &Parts,
    body: &[u8],
    quota_wall: seawall_core::provider::QuotaWall,
) -> Option<Failure> {
    #[derive(serde::Deserialize)]
    struct Declaring {
        error: Option<Declared>,
    }
    #[derive(serde::Deserialize)]
    struct Declared {
        #[serde(default)]
        code: Status,
    }
    /// A number in the HTTP status range; anything else is none, stepped
    /// over where it lies (a body of 8 MiB may hold a `code` of a million
    /// elements: read into values, some 100 MiB).
    #[derive(Default)]
    struct Status(Option<u16>);
    impl<'de> serde::Deserialize<'de> for Status {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct StatusVisitor;
            impl<'de> serde::de::Visitor<'de> for StatusVisitor {
                type Value = Status;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("any JSON value")
                }
                fn visit_u64<E>(self, v: u64) -> Result<Status, E> {
                    let status = u16::try_from(v).ok();
                    Ok(Status(status.filter(|code| (400..600).contains(code))))
                }
                fn visit_i64<E>(self, _: i64) -> Result<Status, E> {
                    Ok(Status(None))
                }
                fn visit_f64<E>(self, _: f64) -> Result<Status, E> {
                    Ok(Status(None))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Status, E> {
                    Ok(Status(None))
                }
                fn visit_str<E>(self, _: &str) -> Result<Status, E> {
                    Ok(Status(None))
                }
                fn visit_unit<E>(self) -> Result<Status, E> {
                    Ok(Status(None))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Status, A::Error> {
                    while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                    Ok(Status(None))
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Status, A::Error> {
                    while map
                        .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                        .is_some()
                    {}
                    Ok(Status(None))
                }
            }
            deserializer.deserialize_any(StatusVisitor)
        }
    }
    memchr::memmem::find(body, b"\"error\"")?;
    let declared = serde_json::from_slice::<Declaring>(body).ok()?.error?;
    let status = declared.code.0;
    let cx = ErrorContext {
        status,
        ..crate::error_context(parts, quota_wall)
    };
    Some(classify_error(provider, body, cx))
}

/// An error answer in `provider`'s wire, unless Amazon Bedrock answered it:
/// Bedrock names its errors in a header of its own whatever model speaks
/// behind it (Claude's messages), its body no model's error shape.
fn http_error(provider: Provider, parts: &Parts, body: &[u8], cx: ErrorContext) -> Failure {
    match parts.headers.get(bedrock::ERROR_TYPE) {
        Some(error_type) => classify_bedrock_error(provider, error_type.as_bytes(), body, cx),
        None => classify_error(provider, body, cx),
    }
}

/// The media type of the answer, parameters dropped
/// ([`seawall_internal::headers::media_type`], the one reading of it the
/// crates share).
pub(crate) fn media_type(parts: &Parts) -> Option<&[u8]> {
    seawall_internal::headers::media_type(&parts.headers)
}

/// `application/grpc-web`, `application/grpc-web-text`, with or without a
/// suffix.
fn is_grpc_web(media: &[u8]) -> bool {
    media.len() >= 20 && media[..20].eq_ignore_ascii_case(b"application/grpc-web")
}

/// A 204 or 205, or a `content-length` of 0: no body, by the answer's
/// own word.
fn declares_no_body(parts: &Parts) -> bool {
    matches!(
        parts.status,
        http::StatusCode::NO_CONTENT | http::StatusCode::RESET_CONTENT
    ) || seawall_internal::headers::declared_length(&parts.headers) == Some(0)
}

/// A `content-encoding` other than `identity`: the bytes are not the answer
/// until something decodes them.
pub(crate) fn undecoded_encoding(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(http::header::CONTENT_ENCODING)?;
    let value = value.to_str().unwrap_or("unreadable").trim();
    (!value.is_empty() && !value.eq_ignore_ascii_case("identity")).then_some(value)
}
