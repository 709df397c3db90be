//! gRPC statuses, wherever they arrive.
//!
//! A gRPC answer is HTTP 200 whatever happened; the outcome is
//! `grpc-status` (with `grpc-message` and `grpc-status-details-bin`), sent
//! in the response headers when the call fails before any message
//! (trailers-only) and in the trailers after the messages otherwise — the
//! normal case for streaming calls, and for unary errors behind many
//! proxies. [`status_failure`] reads either map the same way.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use http::HeaderMap;
use http::response::Parts;
use seawall_core::Failure;
use seawall_core::hint::{MAX_RETRY_HINT, RetryHint};
use seawall_core::provider::{
    ErrorContext, GRPC_UNKNOWN, QuotaWall, StatusDetails, classify_grpc_details,
    grpc_message_bytes, grpc_status_code,
};
use std::time::{Duration, SystemTime};

use crate::error_context;

/// What a map of headers or trailers says of the call.
#[derive(Debug)]
pub(crate) enum Status {
    /// No `grpc-status` in it.
    Absent,
    /// `grpc-status: 0`.
    Ok,
    /// Any other status, classified.
    Failed(Failure),
}

/// The failure a response head carries in `grpc-status` (trailers-only),
/// if any.
pub(crate) fn head_failure(parts: &Parts, quota_wall: QuotaWall) -> Option<Failure> {
    match status_failure(&parts.headers, error_context(parts, quota_wall)) {
        // Trailers-only: nothing was generated, whatever HTTP's 200 says.
        Status::Failed(failure) => Some(failure.with_nothing_generated()),
        Status::Absent | Status::Ok => None,
    }
}

/// The fields that carry a call's status: in the head of a trailers-only
/// answer, in the trailers otherwise.
const STATUS_FIELDS: [&str; 4] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "grpc-retry-pushback-ms",
];

/// Copies the status `trailers` carry into `headers`, where a
/// trailers-only answer carries it, unless the head has a status of its
/// own (tonic reads a head's status and never waits for trailers then).
pub(crate) fn status_into_head(headers: &mut HeaderMap, trailers: &HeaderMap) {
    if headers.contains_key("grpc-status") || !trailers.contains_key("grpc-status") {
        return;
    }
    for name in STATUS_FIELDS
        .into_iter()
        .filter(|name| trailers.contains_key(*name))
    {
        headers.remove(name);
        for value in trailers.get_all(name) {
            headers.append(name, value.clone());
        }
    }
}

/// A proxy's answer on a gRPC route, with no `grpc-status`, that the
/// HTTP table misreads: a 403, which gRPC (and tonic) read as
/// `PERMISSION_DENIED` — this call's authorization (a gateway's policy on
/// this method, a firewall's on this payload), judged as that status is:
/// refused as made, the route left open. Read as HTTP's `auth` it would
/// cool the route for every call ([`seawall_core::AUTH_COOLDOWN`]). Anything else is
/// left to the HTTP table (a 429's rate limit and its `Retry-After`, a
/// 503's pushback).
pub(crate) fn proxy_failure(parts: &Parts, cx: ErrorContext) -> Option<Failure> {
    const PERMISSION_DENIED: u32 = 7;
    (parts.status == http::StatusCode::FORBIDDEN).then(|| {
        classify_grpc_details(PERMISSION_DENIED, None, StatusDetails::default(), cx)
            .with_message("a 403 without a grpc-status: PERMISSION_DENIED for this call")
    })
}

/// Whether the head answers the call already: a `grpc-status` in the
/// headers (trailers-only) means the body holds nothing more to wait for.
pub(crate) fn head_has_status(parts: &Parts) -> bool {
    parts.headers.contains_key(&GRPC_STATUS)
}

/// `grpc-status`, looked for in every answer's head the classifier hands
/// on: named by a `HeaderName`, the lookup parses no name each time.
static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// The longest first message held back whole: tonic's default decode
/// limit (4 MiB). A longer one goes on at its prefix, as it comes (a client
/// at its default limit refuses it there, at once): holding it would keep
/// megabytes per call and refuse it only after it all came.
pub(crate) const FIRST_MESSAGE_HOLD: usize = 4 * 1024 * 1024;

/// The bytes a message takes with its 5-byte prefix, once the prefix is
/// in `bytes`.
pub(crate) fn message_length(bytes: &[u8]) -> Option<usize> {
    let prefix = bytes.get(..5)?;
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
    usize::try_from(5 + u64::from(length)).ok()
}

/// Whether an answer's first bytes are ready to hand on: they hold its
/// first whole message (the 5-byte prefix — a compression flag, then the
/// length, big-endian — and as many bytes as the length says), or the
/// message is longer than `cap`, which is not held whole here: it goes on
/// as it comes (a client past its own limit refuses it at the prefix).
pub(crate) fn first_message_ready(bytes: &[u8], cap: usize) -> bool {
    match message_length(bytes) {
        None => bytes.len() >= cap,
        Some(whole) => bytes.len() >= whole || whole > cap,
    }
}

/// tonic's reading of `grpc-status-details-bin`: the standard alphabet,
/// padded or not.
const TONIC_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Whether `map` carries `grpc-status-details-bin` that tonic cannot
/// decode. tonic 0.14's `Status::from_header_map` panics on such details
/// (in the caller's task): a hostile server must not get that far.
pub(crate) fn details_unreadable(map: &HeaderMap) -> bool {
    map.get(DETAILS)
        .is_some_and(|value| TONIC_BASE64.decode(value.as_bytes()).is_err())
}

/// Makes the `grpc-status-details-bin` of `map` readable for tonic (see
/// [`details_unreadable`]): details in the URL-safe alphabet or with white
/// space are written again in the standard one; details that are no
/// base64 at all are dropped (the status and message stay).
pub(crate) fn readable_details(map: &mut HeaderMap) {
    if !details_unreadable(map) {
        return;
    }
    let decoded = map.get(DETAILS).and_then(|v| decode_details(v.as_bytes()));
    match decoded.and_then(|bytes| http::HeaderValue::from_str(&STANDARD_NO_PAD.encode(bytes)).ok())
    {
        Some(value) => {
            map.insert(DETAILS, value);
        }
        None => {
            map.remove(DETAILS);
        }
    }
}

const DETAILS: &str = "grpc-status-details-bin";

/// The status the trailers of a `status` response carry.
pub(crate) fn trailers_status(status: u16, trailers: &HeaderMap, quota_wall: QuotaWall) -> Status {
    map_status(Some(status), trailers, quota_wall)
}

/// The status `map` carries, its hints read from the same map.
fn map_status(status: Option<u16>, map: &HeaderMap, quota_wall: QuotaWall) -> Status {
    let now = SystemTime::now();
    let cx = ErrorContext {
        status,
        hint: RetryHint::from_headers(map, now),
        quota_wall,
        now,
    };
    status_failure(map, cx)
}

/// Reads `grpc-status`, `grpc-message` and the `google.rpc.RetryInfo`,
/// `google.rpc.QuotaFailure` and `google.rpc.ErrorInfo` in
/// `grpc-status-details-bin` from `map`
/// (headers or trailers). A delay in `RetryInfo` is a hint like
/// `grpc-retry-pushback-ms`; the header wins where both are sent.
pub(crate) fn status_failure(map: &HeaderMap, cx: ErrorContext) -> Status {
    let Some(value) = map.get("grpc-status") else {
        return Status::Absent;
    };
    let mut status = grpc_status_code(value.as_bytes());
    let raw_message = map
        .get("grpc-message")
        .map(|v| grpc_message_bytes(v.as_bytes()));
    // tonic reads an OK whose message is not UTF-8 as UNKNOWN: an answer
    // handed on as a success reaches the caller as an error, so it is no
    // success here either. (A failed status keeps its code, the message
    // read leniently: seawall's verdict is what the caller gets then.)
    if status == 0
        && raw_message
            .as_ref()
            .is_some_and(|bytes| std::str::from_utf8(bytes).is_err())
    {
        status = GRPC_UNKNOWN;
    }
    if status == 0 {
        return Status::Ok;
    }
    let message = raw_message.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let decoded = map
        .get("grpc-status-details-bin")
        .and_then(|v| decode_details(v.as_bytes()));
    let details = decoded.as_deref().map(status_details).unwrap_or_default();
    // The rest of the map as the server sent it, the details as sent:
    // for a caller that reads them itself (a tonic client's
    // `Status::metadata` and `Status::details`, through `seawall::tonic`).
    let failure =
        classify_grpc_details(status, message.as_deref(), details, cx).with_status_metadata(map);
    Status::Failed(match decoded {
        Some(decoded) if !decoded.is_empty() => failure.with_status_details(decoded),
        _ => failure,
    })
}

/// The failure a `tonic::Status` in `error`'s source chain amounts to: a
/// client layer below the classification (an interceptor, tonic's own
/// services) that answers with a status says what the same status on the
/// wire would, and is read from the map tonic itself would send it in.
/// `None` when there is none, and when the status only wraps a broken
/// connection: tonic's channel reports a read that failed (an HTTP/2
/// reset, a closed connection) as `Unknown` or `Internal` with the
/// transport error as its source, which the transport reading judges as
/// what it is (retryable), not as a server's verdict.
#[cfg(feature = "tonic")]
pub(crate) fn tonic_status_failure(
    error: &(dyn std::error::Error + 'static),
    quota_wall: QuotaWall,
) -> Option<Failure> {
    let status = seawall_internal::error::links(error)
        .find_map(|link| link.downcast_ref::<tonic::Status>())?;
    if std::error::Error::source(status)
        .is_some_and(|source| crate::transport_failure(source).is_some())
    {
        return None;
    }
    let mut map = HeaderMap::new();
    status.add_header(&mut map).ok()?;
    match map_status(None, &map, quota_wall) {
        Status::Failed(failure) => Some(failure),
        Status::Absent | Status::Ok => None,
    }
}

/// The bytes of a base64 `grpc-status-details-bin`, `None` when it is not
/// base64. Senders differ on padding and alphabet; both are accepted.
fn decode_details(encoded: &[u8]) -> Option<Vec<u8>> {
    let trimmed: Vec<u8> = encoded
        .iter()
        .copied()
        .filter(|b| *b != b'=' && !b.is_ascii_whitespace())
        .collect();
    STANDARD_NO_PAD
        .decode(&trimmed)
        .or_else(|_| URL_SAFE_NO_PAD.decode(&trimmed))
        .ok()
}

/// What the details (a `google.rpc.Status`) say about retrying: the
/// `retry_delay` of a `google.rpc.RetryInfo` (capped at
/// [`MAX_RETRY_HINT`]), the `quota_id`s of a `google.rpc.QuotaFailure` and
/// the quota a `google.rpc.ErrorInfo`'s metadata names.
/// Anything malformed reads as nothing said.
fn status_details(status: &[u8]) -> StatusDetails {
    let mut details = StatusDetails::default();
    // google.rpc.Status: 3 = repeated google.protobuf.Any details.
    for (number, field) in Fields::new(status) {
        if let (3, Field::Bytes(any)) = (number, field) {
            read_detail(any, &mut details);
        }
    }
    details
}

const RETRY_INFO: &[u8] = b"type.googleapis.com/google.rpc.RetryInfo";
const QUOTA_FAILURE: &[u8] = b"type.googleapis.com/google.rpc.QuotaFailure";
const ERROR_INFO: &[u8] = b"type.googleapis.com/google.rpc.ErrorInfo";

/// A `google.protobuf.Any` (1 = type URL, 2 = value): a `RetryInfo`'s
/// delay, a `QuotaFailure`'s quota ids or an `ErrorInfo`'s quota, into
/// `details`.
fn read_detail(any: &[u8], details: &mut StatusDetails) {
    let (mut url, mut value) = (None, None);
    for (number, field) in Fields::new(any) {
        match (number, field) {
            (1, Field::Bytes(bytes)) => url = Some(bytes),
            (2, Field::Bytes(bytes)) => value = Some(bytes),
            _ => {}
        }
    }
    let Some(value) = value else { return };
    match url {
        Some(RETRY_INFO) => details.retry_delay = retry_info_delay(value),
        Some(QUOTA_FAILURE) => {
            // QuotaFailure: 1 = repeated Violation; Violation: 5 = quota_id.
            for (number, field) in Fields::new(value) {
                let (1, Field::Bytes(violation)) = (number, field) else {
                    continue;
                };
                for (number, field) in Fields::new(violation) {
                    if let (5, Field::Bytes(id)) = (number, field) {
                        details.add_quota_id(&String::from_utf8_lossy(id));
                    }
                }
            }
        }
        Some(ERROR_INFO) => error_info_quota(value, details),
        _ => {}
    }
}

/// What an `ErrorInfo`'s metadata says of the quota met, as over REST
/// (`RATE_LIMIT_EXCEEDED` names it there, often with no `QuotaFailure`):
/// `quota_limit` names the limit as a violation's `quota_id` does, a
/// per-day one a wall until the day's end; `quota_limit_value` is its
/// value, zero a wall with no end.
fn error_info_quota(error_info: &[u8], details: &mut StatusDetails) {
    // ErrorInfo: 3 = map<string, string> metadata, each entry a message
    // of 1 = key, 2 = value.
    for (number, field) in Fields::new(error_info) {
        let (3, Field::Bytes(entry)) = (number, field) else {
            continue;
        };
        let (mut key, mut value) = (None, None);
        for (number, field) in Fields::new(entry) {
            match (number, field) {
                (1, Field::Bytes(bytes)) => key = Some(bytes),
                (2, Field::Bytes(bytes)) => value = Some(bytes),
                _ => {}
            }
        }
        let Some(value) = value else { continue };
        match key {
            Some(b"quota_limit") => details.add_quota_id(&String::from_utf8_lossy(value)),
            Some(b"quota_limit_value") => details.add_quota_value(&String::from_utf8_lossy(value)),
            _ => {}
        }
    }
}

/// A `RetryInfo`'s delay.
fn retry_info_delay(retry_info: &[u8]) -> Option<Duration> {
    // RetryInfo: 1 = google.protobuf.Duration retry_delay.
    let delay = Fields::new(retry_info).find_map(|(number, field)| match (number, field) {
        (1, Field::Bytes(delay)) => Some(delay),
        _ => None,
    })?;
    let (mut seconds, mut nanos) = (0u64, 0u64);
    for (number, field) in Fields::new(delay) {
        match (number, field) {
            (1, Field::Varint(v)) => seconds = v,
            (2, Field::Varint(v)) => nanos = v,
            _ => {}
        }
    }
    // Negative values (two's complement, so huge here) are no delay.
    if seconds > i64::MAX as u64 || nanos >= 1_000_000_000 {
        return None;
    }
    let delay = Duration::from_secs(seconds).saturating_add(Duration::from_nanos(nanos));
    Some(delay.min(MAX_RETRY_HINT))
}

/// One field of a protobuf message, as far as these readers care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// A fixed-width field, skipped.
    Fixed,
}

/// The fields of a protobuf message; stops at the first malformed byte.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(message: &'a [u8]) -> Self {
        Fields { rest: message }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.rest.split_first()?;
            self.rest = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(taken)
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u64, Field<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let parsed = (|| {
            let key = self.varint()?;
            let field = match key & 7 {
                0 => Field::Varint(self.varint()?),
                1 => {
                    self.take(8)?;
                    Field::Fixed
                }
                2 => {
                    let len = usize::try_from(self.varint()?).ok()?;
                    Field::Bytes(self.take(len)?)
                }
                5 => {
                    self.take(4)?;
                    Field::Fixed
                }
                _ => return None,
            };
            Some((key >> 3, field))
        })();
        if parsed.is_none() {
            self.rest = &[];
        }
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn percent_decode(raw: &[u8]) -> String {
        String::from_utf8_lossy(&grpc_message_bytes(raw)).into_owned()
    }
    use base64::engine::general_purpose::STANDARD;
    use seawall_test::proto::{bytes_field, status_with_detail, varint};

    #[test]
    fn percent_decoding_is_lenient() {
        assert_eq!(
            percent_decode(b"quota%20exceeded%3A%20try%20later"),
            "quota exceeded: try later"
        );
        assert_eq!(percent_decode(b"caf%C3%A9"), "café");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(percent_decode(b"%zz%4"), "%zz%4");
        assert_eq!(percent_decode(b"%FF"), "\u{FFFD}");
    }

    /// A `google.rpc.Status` with one `RetryInfo` detail, as servers send it.
    fn status_with_delay(seconds: u64, nanos: u64) -> Vec<u8> {
        let mut duration = Vec::new();
        varint(1 << 3, &mut duration);
        varint(seconds, &mut duration);
        varint(2 << 3, &mut duration);
        varint(nanos, &mut duration);
        let mut retry_info = Vec::new();
        bytes_field(1, &duration, &mut retry_info);
        status_with_detail(8, b"slow down", RETRY_INFO, &retry_info)
    }

    fn any(type_url: &[u8], value: &[u8]) -> Vec<u8> {
        let mut any = Vec::new();
        bytes_field(1, type_url, &mut any);
        bytes_field(2, value, &mut any);
        any
    }

    /// Gemini's per-day quota over gRPC: the `google.rpc.Status` the REST
    /// API renders as JSON, a `QuotaFailure` naming a per-day quota beside
    /// a `RetryInfo` of 26 s that speaks of the per-minute window. The
    /// same verdict as REST: a wall, no hint.
    #[test]
    fn a_per_day_quota_failure_is_a_wall_as_over_rest() {
        let status = |quota_id: &[u8]| {
            // QuotaFailure { violations: [{ quota_metric: 4, quota_id: 5 }] }
            let mut violation = Vec::new();
            bytes_field(4, b"generate_content_free_tier_requests", &mut violation);
            bytes_field(5, quota_id, &mut violation);
            let mut quota_failure = Vec::new();
            bytes_field(1, &violation, &mut quota_failure);
            let mut status = status_with_delay(26, 0);
            bytes_field(3, &any(QUOTA_FAILURE, &quota_failure), &mut status);
            STANDARD.encode(status)
        };
        let failure = |encoded: String| {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", "8".parse().unwrap());
            trailers.insert("grpc-status-details-bin", encoded.parse().unwrap());
            match trailers_status(200, &trailers, QuotaWall::default()) {
                Status::Failed(failure) => failure,
                other => panic!("{other:?}"),
            }
        };
        let day = failure(status(b"GenerateRequestsPerDayPerProjectPerModel-FreeTier"));
        assert_eq!(day.code(), seawall_core::Code::QuotaExhausted);
        assert_eq!(day.action(), seawall_core::Action::Surface);
        assert_eq!(day.retry_after(), None);
        let minute = failure(status(
            b"GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
        ));
        assert_eq!(minute.code(), seawall_core::Code::RateLimited);
        assert_eq!(minute.retry_after(), Some(Duration::from_secs(26)));
    }

    /// Gemini's 429 whose `ErrorInfo` names the quota (metadata
    /// `quota_limit`, `quota_limit_value`), over gRPC: a limit of zero or
    /// a per-day limit is a wall, as over REST; a per-minute limit of 60
    /// stays a rate limit with its delay.
    #[test]
    fn error_info_naming_the_quota_is_a_wall_as_over_rest() {
        let failure = |limit: &[u8], value: &[u8]| {
            // ErrorInfo { reason: 1, domain: 2, metadata: 3 (map entries:
            // key 1, value 2) }
            let mut error_info = Vec::new();
            bytes_field(1, b"RATE_LIMIT_EXCEEDED", &mut error_info);
            bytes_field(2, b"googleapis.com", &mut error_info);
            for (key, value) in [
                (&b"quota_unit"[..], &b"1/min/{project}/{region}"[..]),
                (b"quota_limit", limit),
                (b"quota_limit_value", value),
            ] {
                let mut entry = Vec::new();
                bytes_field(1, key, &mut entry);
                bytes_field(2, value, &mut entry);
                bytes_field(3, &entry, &mut error_info);
            }
            let mut status = status_with_delay(26, 0);
            bytes_field(3, &any(ERROR_INFO, &error_info), &mut status);
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", "8".parse().unwrap());
            trailers.insert(
                "grpc-status-details-bin",
                STANDARD.encode(status).parse().unwrap(),
            );
            match trailers_status(200, &trailers, QuotaWall::default()) {
                Status::Failed(failure) => failure,
                other => panic!("{other:?}"),
            }
        };
        let minute = b"GenerateContentRequestsPerMinutePerProjectPerRegion";
        let zero = failure(minute, b"0");
        assert_eq!(zero.code(), seawall_core::Code::QuotaExhausted);
        assert_eq!(zero.action(), seawall_core::Action::Surface);
        assert_eq!((zero.retry_after(), zero.reset_at()), (None, None));
        let day = failure(b"GenerateRequestsPerDayPerProjectPerModel", b"250");
        assert_eq!(day.code(), seawall_core::Code::QuotaExhausted);
        assert_eq!(day.retry_after(), None);
        assert!(day.reset_at().is_some(), "lifts at the day's end");
        let sixty = failure(minute, b"60");
        assert_eq!(sixty.code(), seawall_core::Code::RateLimited);
        assert_eq!(sixty.retry_after(), Some(Duration::from_secs(26)));
    }

    /// What the base64 details `encoded` say, as the status read does.
    fn details_of(encoded: &[u8]) -> StatusDetails {
        decode_details(encoded)
            .as_deref()
            .map(status_details)
            .unwrap_or_default()
    }

    #[test]
    fn the_details_are_kept_as_sent() {
        let status = status_with_delay(3, 0);
        for encoded in [STANDARD.encode(&status), URL_SAFE_NO_PAD.encode(&status)] {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", "14".parse().unwrap());
            trailers.insert("grpc-status-details-bin", encoded.parse().unwrap());
            let Status::Failed(failure) = trailers_status(200, &trailers, QuotaWall::default())
            else {
                panic!("a failed status");
            };
            assert_eq!(failure.status_details(), Some(&status[..]), "{encoded}");
        }
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "14".parse().unwrap());
        trailers.insert("grpc-status-details-bin", "!!!".parse().unwrap());
        let Status::Failed(failure) = trailers_status(200, &trailers, QuotaWall::default()) else {
            panic!("a failed status");
        };
        assert_eq!(failure.status_details(), None, "not base64: nothing kept");
    }

    #[test]
    fn retry_info_is_read_with_or_without_padding() {
        let status = status_with_delay(26, 500_000_000);
        for encoded in [STANDARD.encode(&status), STANDARD_NO_PAD.encode(&status)] {
            assert_eq!(
                details_of(encoded.as_bytes()).retry_delay,
                Some(Duration::from_millis(26_500))
            );
        }
        let huge = STANDARD.encode(status_with_delay(u32::MAX.into(), 0));
        assert_eq!(
            details_of(huge.as_bytes()).retry_delay,
            Some(MAX_RETRY_HINT)
        );
        let negative = STANDARD.encode(status_with_delay(u64::MAX, 0));
        assert_eq!(details_of(negative.as_bytes()).retry_delay, None);
    }

    #[test]
    fn malformed_details_are_no_delay() {
        let status = status_with_delay(3, 0);
        for bad in [
            b"!!!not base64".to_vec(),
            STANDARD.encode(&status[..status.len() - 3]).into_bytes(),
            STANDARD.encode([0xff; 12]).into_bytes(),
            Vec::new(),
        ] {
            assert_eq!(
                details_of(&bad).retry_delay,
                None,
                "{}",
                String::from_utf8_lossy(&bad)
            );
        }
    }

    #[test]
    fn details_tonic_cannot_read_are_written_again_or_dropped() {
        let status = status_with_delay(1, 0);
        let mut map = HeaderMap::new();
        // URL-safe, padded with white space: written in tonic's alphabet.
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode(&status);
        map.insert(DETAILS, format!(" {url_safe} ").parse().unwrap());
        assert!(details_unreadable(&map));
        readable_details(&mut map);
        assert!(!details_unreadable(&map));
        let kept = map.get(DETAILS).unwrap().as_bytes();
        assert_eq!(TONIC_BASE64.decode(kept).unwrap(), status);
        // No base64 at all: dropped, nothing else touched.
        map.insert(DETAILS, "!!not base64!!".parse().unwrap());
        map.insert("grpc-status", "0".parse().unwrap());
        readable_details(&mut map);
        assert!(map.get(DETAILS).is_none());
        assert_eq!(map.get("grpc-status").unwrap(), "0");
    }

    #[test]
    fn the_first_message_is_ready_whole_or_past_the_cap() {
        let message = [&[0, 0, 0, 0, 3][..], b"abc"].concat();
        for held in 0..message.len() {
            assert!(!first_message_ready(&message[..held], 1024), "{held}");
        }
        assert!(first_message_ready(&message, 1024));
        // A prefix that promises more than the cap goes on at once.
        assert!(first_message_ready(&[0, 0, 0x10, 0, 0], 1024));
        assert!(
            first_message_ready(&[0, 0, 0], 2),
            "past the cap before a prefix"
        );
    }

    #[test]
    fn a_status_in_trailers_reads_like_one_in_headers() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "8".parse().unwrap());
        trailers.insert("grpc-message", "quota%20low".parse().unwrap());
        trailers.insert(
            "grpc-status-details-bin",
            STANDARD_NO_PAD
                .encode(status_with_delay(2, 0))
                .parse()
                .unwrap(),
        );
        let Status::Failed(failure) = trailers_status(200, &trailers, QuotaWall::default()) else {
            panic!("a failed status");
        };
        assert_eq!(failure.code(), seawall_core::Code::RateLimited);
        assert_eq!(failure.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(failure.message(), Some("quota low"));

        trailers.insert("grpc-status", "0".parse().unwrap());
        assert!(matches!(
            trailers_status(200, &trailers, QuotaWall::default()),
            Status::Ok
        ));
        assert!(matches!(
            trailers_status(200, &HeaderMap::new(), QuotaWall::default()),
            Status::Absent
        ));
    }
}
