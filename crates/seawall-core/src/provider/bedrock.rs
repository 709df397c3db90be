//! Amazon Bedrock's runtime errors: whatever model answers behind it
//! (Claude's messages through `InvokeModel`, `Converse`), Bedrock names
//! the error in its `x-amzn-ErrorType` header and says it in a
//! `{"message"}` body, the model's own error shape nowhere.
//!
//! Only its error answers are read here: its event streams
//! (`application/vnd.amazon.eventstream`) are binary frames seawall's
//! stream guard does not decode.

use serde::Deserialize;

use super::{Declared, Verdict};
use crate::text::contains_ci;
use crate::{Class, Code};
use seawall_internal::json::{Text, from_bytes};

/// The header Bedrock names its error in:
/// `ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`.
pub const ERROR_TYPE: &str = "x-amzn-errortype";

/// The exception an `x-amzn-ErrorType` value names: the part before any
/// `:` (the namespace URI Bedrock appends) and after any `#` (a Smithy
/// shape id's namespace), as the AWS SDKs read it.
fn exception(header: &[u8]) -> Option<&str> {
    let header = std::str::from_utf8(header).ok()?;
    let name = header.split(':').next().unwrap_or(header);
    let name = name.rsplit('#').next().unwrap_or(name).trim();
    (!name.is_empty()).then_some(name)
}

#[derive(Deserialize)]
struct BedrockError<'a> {
    #[serde(borrow, default, alias = "Message")]
    message: Option<Text<'a>>,
}

/// What Bedrock declared: the header's exception and the body's message
/// (none when the body is not Bedrock's JSON).
pub(super) fn parse_error<'a>(header: &'a [u8], body: &'a [u8]) -> Declared<'a> {
    Declared {
        error_type: exception(header).map(Into::into),
        message: from_bytes::<BedrockError<'_>>(body)
            .ok()
            .and_then(|e| e.message)
            .map(|t| t.0),
        ..Declared::default()
    }
}

/// Bedrock's exceptions, by the runtime's API reference; any other is left
/// to the status.
pub(super) fn error_rule(d: &Declared<'_>) -> Option<Verdict> {
    use Class::*;
    let message = d.message.as_deref().unwrap_or("");
    let verdict = match d.error_type.as_deref()? {
        // The account's daily token quota ("Too many tokens per day, please
        // wait before trying again."), the same 429 and exception as a
        // rate limit: no wait of the retry ladder's lifts it before the day
        // is out, and a route on another account or region takes the
        // request.
        "ThrottlingException" if contains_ci(message, "per day") => {
            Verdict::Fixed(Permanent, Code::QuotaExhausted)
        }
        "ThrottlingException" => Verdict::RateLimit,
        // A 400 "Your request exceeds the service quota for your account":
        // the account's, not the request's.
        "ServiceQuotaExceededException" => Verdict::Fixed(Permanent, Code::QuotaExhausted),
        // Claude's own words ("prompt is too long: 210000 tokens > 200000
        // maximum") or Bedrock's ("Input is too long for requested model.").
        "ValidationException"
            if super::anthropic::says_context_too_long(message)
                || contains_ci(message, "input is too long") =>
        {
            Verdict::Fixed(Permanent, Code::ContextTooLong)
        }
        // Any other: the body's own words decide, as the layer's provider
        // reads them (400 is `bad_request` there too). `ValidationException`
        // is AWS's name for every bad request, also of a service in another
        // provider's shape behind AWS whose body says more ("maximum
        // context length").
        "ValidationException" => return None,
        // A 424, "The request failed due to an error while processing the
        // model" (in a stream, `ModelStreamErrorException`): the model
        // failed, not the request, and the 4xx rule blamed the request.
        "ModelErrorException" | "ModelStreamErrorException" => {
            Verdict::Fixed(Transient, Code::ProviderUnavailable)
        }
        // A 429 while the model is not ready to serve (the AWS SDKs retry it
        // up to five times): no rate of the caller's.
        "ModelNotReadyException" => Verdict::Fixed(Transient, Code::ProviderUnavailable),
        // A 408: "Processing time exceeded the model timeout length".
        "ModelTimeoutException" => Verdict::Fixed(Transient, Code::Timeout),
        "InternalServerException" | "ServiceUnavailableException" => {
            Verdict::Fixed(Transient, Code::ProviderUnavailable)
        }
        // The model's access not granted to the account, a role without
        // `bedrock:InvokeModel`: the route's credentials.
        "AccessDeniedException" => Verdict::Fixed(Permanent, Code::Auth),
        "ResourceNotFoundException" => Verdict::Fixed(Permanent, Code::NotFound),
        _ => return None,
    };
    Some(verdict)
}

#[cfg(test)]
mod tests {
    use super::super::tests::cx;
    use super::super::{Provider, classify_bedrock_error};
    use super::exception;
    use crate::{Class, Code};

    const THROTTLED: &[u8] =
        b"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/";

    /// A daily token quota is a wall, its type and message kept; the same
    /// exception for requests is a rate limit.
    #[test]
    fn a_daily_quota_is_a_wall() {
        let day = br#"{"message":"Too many tokens per day, please wait before trying again."}"#;
        let f = classify_bedrock_error(Provider::Anthropic, THROTTLED, day, cx(429));
        assert_eq!(
            (f.class(), f.code()),
            (Class::Permanent, Code::QuotaExhausted)
        );
        assert_eq!(f.provider_type(), Some("ThrottlingException"));
        assert_eq!(
            f.message(),
            Some("Too many tokens per day, please wait before trying again.")
        );
        let rate = br#"{"message":"Too many requests, please wait before trying again."}"#;
        let f = classify_bedrock_error(Provider::OpenAi, THROTTLED, rate, cx(429));
        assert_eq!(f.code(), Code::RateLimited);
    }

    /// An exception the table does not name is read as the provider's wire
    /// reads the body; a plain HTTP service keeps its status alone.
    #[test]
    fn what_the_table_does_not_name_is_the_wires() {
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let f = classify_bedrock_error(Provider::Anthropic, b"SomethingNew", anthropic, cx(500));
        assert_eq!(f.code(), Code::Overloaded);
        let too_long = br#"{"message":"Input is too long for requested model."}"#;
        let f = classify_bedrock_error(Provider::Http, b"ValidationException", too_long, cx(400));
        assert_eq!(f.code(), Code::BadRequest);
    }

    #[test]
    fn the_exception_is_the_headers_first_part() {
        for (header, name) in [
            (
                &b"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"[..],
                Some("ThrottlingException"),
            ),
            (b"ValidationException", Some("ValidationException")),
            (
                b"com.amazonaws.bedrock#AccessDeniedException",
                Some("AccessDeniedException"),
            ),
            (b"", None),
            (b"\xff", None),
        ] {
            assert_eq!(exception(header), name);
        }
    }
}
