//! Trailers-only gRPC errors: `grpc-status` in the response headers.

use http::response::Parts;
use seawall_core::Failure;
use seawall_core::provider::{QuotaWall, classify_grpc};

use crate::error_context;

/// gRPC `UNKNOWN`, used when `grpc-status` is present but unreadable.
const UNKNOWN: u32 = 2;

/// The failure a response head carries in `grpc-status`, if any. Streams
/// whose status arrives in trailers are the stream guard's business.
pub(crate) fn head_failure(parts: &Parts, quota_wall: QuotaWall) -> Option<Failure> {
    let value = parts.headers.get("grpc-status")?;
    let status = value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .unwrap_or(UNKNOWN);
    if status == 0 {
        return None;
    }
    let message = parts
        .headers
        .get("grpc-message")
        .map(|v| percent_decode(v.as_bytes()));
    Some(classify_grpc(
        status,
        message.as_deref(),
        error_context(parts, quota_wall),
    ))
}

/// `grpc-message` is percent-encoded UTF-8. Malformed escapes are kept as
/// they are and invalid UTF-8 is replaced, never rejected.
fn percent_decode(raw: &[u8]) -> String {
    fn hex(byte: Option<&u8>) -> Option<u8> {
        (*byte? as char).to_digit(16).map(|d| d as u8)
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match (raw[i], hex(raw.get(i + 1)), hex(raw.get(i + 2))) {
            (b'%', Some(high), Some(low)) => {
                out.push(high << 4 | low);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

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
}
