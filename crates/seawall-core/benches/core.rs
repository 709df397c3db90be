//! The error path's shared parts: classifying a provider error body, against
//! the usual alternative of parsing it into a `serde_json::Value` and
//! looking fields up; and reading every retry-hint header form.
//!
//! `cargo bench -p seawall-core --bench core`

use std::hint::black_box;
use std::time::SystemTime;

use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};

const OPENAI_429: &[u8] = br#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1.574s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

fn bench(c: &mut Criterion) {
    let cx = ErrorContext {
        status: Some(429),
        hint: RetryHint::default(),
        quota_wall: QuotaWall::default(),
        now: SystemTime::now(),
    };
    let mut group = c.benchmark_group("error_body");
    group.bench_function("seawall_classify_error", |b| {
        b.iter(|| classify_error(Provider::OpenAi, black_box(OPENAI_429), cx))
    });
    group.bench_function("serde_json_value_lookup", |b| {
        b.iter(|| {
            let value: serde_json::Value = serde_json::from_slice(black_box(OPENAI_429)).unwrap();
            let error = &value["error"];
            (
                error["type"].as_str().map(str::to_owned),
                error["code"].as_str().map(str::to_owned),
                error["message"].as_str().map(str::to_owned),
            )
        })
    });
    group.finish();

    let mut headers = HeaderMap::new();
    headers.insert(
        "retry-after",
        HeaderValue::from_static("Sun, 29 Nov 2026 12:00:30 GMT"),
    );
    headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
    headers.insert("x-should-retry", HeaderValue::from_static("true"));
    let now = httpdate::parse_http_date("Sun, 29 Nov 2026 12:00:00 GMT").unwrap();
    c.bench_function("retry_hint_from_headers", |b| {
        b.iter(|| RetryHint::from_headers(black_box(&headers), now))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
