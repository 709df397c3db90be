//! Retry hints through the layer: a gRPC wait said only in
//! `grpc-message`, an HTTP-date read against the answer's `Date`, Azure's
//! `x-ms-retry-after-ms`, a `Retry-After` folded or sent twice.

mod common;

use std::time::Duration;

use common::{expect, found, response, through};
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, Code};

use Action::{Retry, Surface};
use Class::{Permanent, Transient};

const JSON: (&str, &str) = ("content-type", "application/json");
const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// A RESOURCE_EXHAUSTED whose wait is in its percent-encoded
/// `grpc-message` only (no `grpc-status-details-bin`, as a proxy that
/// drops it sends): the wait is the hint.
#[tokio::test]
async fn a_grpc_wait_said_only_in_its_message() {
    let error = through(
        &ClassifyLayer::grpc(),
        response(
            200,
            &[
                ("content-type", "application/grpc"),
                ("grpc-status", "8"),
                (
                    "grpc-message",
                    "Quota%20exceeded.%20Please%20retry%20in%2038.962214405s.",
                ),
            ],
            "",
        ),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    expect(Transient, Code::RateLimited, Retry)
        .after(Duration::new(38, 962_214_405))
        .check(
            "RESOURCE_EXHAUSTED, its wait in grpc-message",
            found(&error),
        );
}

/// An HTTP-date `Retry-After` read against the answer's `Date`: an answer
/// dated long before this machine's clock still says its 20 s wait (by
/// the local clock the date is long past: no hint at all).
#[tokio::test]
async fn an_http_date_is_read_against_the_answers_date() {
    let error = through(
        &ClassifyLayer::openai(),
        response(
            429,
            &[
                JSON,
                ("date", "Sun, 06 Nov 1994 08:49:37 GMT"),
                ("retry-after", "Sun, 06 Nov 1994 08:49:57 GMT"),
            ],
            RATE_LIMITED,
        ),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    expect(Transient, Code::RateLimited, Retry)
        .after(Duration::from_secs(20))
        .check("Retry-After 20 s past the answer's Date", found(&error));
}

/// Azure's `x-ms-retry-after-ms` alone on a 429 is its wait.
#[tokio::test]
async fn azures_millisecond_header_is_a_wait() {
    let error = through(
        &ClassifyLayer::openai(),
        response(429, &[JSON, ("x-ms-retry-after-ms", "26000")], RATE_LIMITED),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    expect(Transient, Code::RateLimited, Retry)
        .after(Duration::from_secs(26))
        .check("x-ms-retry-after-ms 26000", found(&error));
}

/// A `Retry-After` a proxy folded (`48489, 48489`) or sent on two lines
/// (the first no value) is the quota wall it says, not a blip.
#[tokio::test]
async fn a_folded_or_repeated_retry_after_is_a_wall() {
    let cases: [(&str, &[(&str, &str)]); 3] = [
        ("folded", &[JSON, ("retry-after", "48489, 48489")]),
        (
            "two lines",
            &[JSON, ("retry-after", "48489"), ("retry-after", "48489")],
        ),
        (
            "two lines, the first no value",
            &[JSON, ("retry-after", "soon"), ("retry-after", "48489")],
        ),
    ];
    for (name, headers) in cases {
        let error = through(
            &ClassifyLayer::openai(),
            response(429, headers, RATE_LIMITED),
        )
        .await
        .map(|_| ())
        .unwrap_err();
        expect(Permanent, Code::QuotaExhausted, Surface)
            .after(Duration::from_secs(48489))
            .check(name, found(&error));
    }
}
