//! A trailers-only gRPC OK (its status in the head, no body) whose
//! `grpc-status-details-bin` tonic does not read (tonic panics on it):
//! made readable and delivered, as the same details in trailers are, not
//! refused and the completed call asked for again. Base64 in another
//! alphabet is written again in the standard one; details no alphabet
//! decodes are dropped, the status kept.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use common::{Chunks, through};
use http::Response;
use seawall_classify::ClassifyLayer;
use seawall_test::proto::status_with_detail;

/// A `google.rpc.Status` whose bytes, in base64, need one of the
/// alphabet's last two characters (`+` or `/`, URL-safe `-` or `_`).
fn details() -> Vec<u8> {
    status_with_detail(0, b"ok", b"type.example/x", &[0xfb, 0xff, 0xbf, 0xfb, 0xef])
}

/// A trailers-only OK carrying `encoded` as its details.
fn trailers_only(encoded: &str) -> Response<Chunks> {
    Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", "0")
        .header("grpc-status-details-bin", encoded)
        .body(Chunks::new(Vec::<&'static [u8]>::new()))
        .unwrap()
}

#[tokio::test]
async fn a_trailers_only_ok_with_details_in_another_alphabet_is_delivered_readable() {
    let standard = STANDARD_NO_PAD.encode(details());
    assert!(standard.contains(['+', '/']), "{standard}");
    let url_safe = standard.replace('+', "-").replace('/', "_");
    let padded = format!("{}\t {}=", &standard[..4], &standard[4..]);
    for encoded in [url_safe, padded] {
        let response = through(&ClassifyLayer::grpc(), trailers_only(&encoded))
            .await
            .unwrap_or_else(|error| panic!("{encoded}: the OK is delivered: {error}"));
        let written = response
            .headers()
            .get("grpc-status-details-bin")
            .expect("the details are kept");
        assert_eq!(written.to_str().unwrap(), standard, "{encoded}");
    }
}

#[tokio::test]
async fn a_trailers_only_ok_with_details_no_alphabet_decodes_is_delivered_without_them() {
    for encoded in ["!!not base64!!", "a", "ab$d"] {
        let response = through(&ClassifyLayer::grpc(), trailers_only(encoded))
            .await
            .unwrap_or_else(|error| panic!("{encoded}: the OK is delivered: {error}"));
        let headers = response.headers();
        assert_eq!(
            headers.get("grpc-status-details-bin"),
            None,
            "{encoded}: dropped"
        );
        assert_eq!(headers.get("grpc-status").unwrap(), "0", "{encoded}");
    }
}
