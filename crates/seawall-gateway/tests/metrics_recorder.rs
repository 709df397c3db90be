//! An app that nests the gateway's router and has a metrics recorder of
//! its own installs it before building the gateway: the gateway takes
//! nothing, seawall's metrics go to the app's recorder, and the gateway's
//! `/metrics` shows none of them. (Its own test binary: the recorder is
//! the whole process's.)
#![cfg(feature = "metrics")]

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use bytes::Bytes;
use common::*;
use http_body_util::BodyExt;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use seawall::core::metric_names::ATTEMPTS_TOTAL;
use seawall_chaos::ChaosServer;
use seawall_gateway::{Gateway, Wire};
use tower::ServiceExt;

/// The app's recorder: the names of the metrics recorded into it.
#[derive(Clone, Default)]
struct AppRecorder(Arc<Mutex<Vec<String>>>);

impl AppRecorder {
    fn saw(&self, name: &str) -> bool {
        self.0.lock().unwrap().iter().any(|seen| seen == name)
    }
    fn note(&self, key: &Key) {
        self.0.lock().unwrap().push(key.name().to_owned());
    }
}

impl Recorder for AppRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        self.note(key);
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        self.note(key);
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        self.note(key);
        Histogram::noop()
    }
}

async fn call(app: &Router, request: http::Request<axum::body::Body>) -> (http::StatusCode, Bytes) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    (
        status,
        response.into_body().collect().await.unwrap().to_bytes(),
    )
}

#[tokio::test]
async fn an_apps_own_recorder_installed_first_is_left_to_it() {
    let recorder = AppRecorder::default();
    metrics::set_global_recorder(recorder.clone()).expect("the app's recorder is the first");

    let chaos = ChaosServer::builder().start().await.unwrap();
    let gateway = Gateway::with_env(config(Wire::OpenAi, &[("main", &chaos)]), env).unwrap();
    let app = Router::new().nest("/llm", gateway.router());
    let bearer = format!("Bearer {TOKEN}");

    let request = http::Request::post("/llm/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", &bearer)
        .body(axum::body::Body::from(OPENAI_UNARY))
        .unwrap();
    let (status, _) = call(&app, request).await;
    assert_eq!(status, 200);
    assert!(
        recorder.saw(ATTEMPTS_TOTAL),
        "seawall's metrics go to the app's recorder"
    );

    // The gateway installed nothing: its /metrics has nothing to show.
    let request = http::Request::get("/llm/metrics")
        .header("authorization", &bearer)
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, body) = call(&app, request).await;
    assert_eq!(status, 404);
    assert!(!String::from_utf8_lossy(&body).contains("seawall_"));

    // And the app's recorder is still the process's.
    metrics::counter!("app_requests_total").increment(1);
    assert!(recorder.saw("app_requests_total"));
}
