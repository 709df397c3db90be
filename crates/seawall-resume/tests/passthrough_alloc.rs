//! An answer the layer cannot resume (a GET, a unary JSON completion)
//! passes through without a heap allocation: its body is wrapped in place,
//! not boxed, as every response of such a request goes through it.

use std::alloc::System;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::Body;
use http_body_util::Full;
use seawall_resume::{ResumeLayer, ResumeRequestBody};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::{Service, ServiceBuilder, ServiceExt, service_fn};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ANSWER: &[u8] = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[]}"#;

/// Allocations made while the layer's response future answers `request`
/// with a JSON `Full` body, and while that body is read to its end: the
/// call itself (the recording a generation keeps) is outside the count.
async fn allocations(request: http::Request<Full<Bytes>>) -> usize {
    let mut service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(service_fn(
            |_req: http::Request<ResumeRequestBody<Full<Bytes>>>| async {
                // Neither `Response::new` nor `Full::new` of static bytes
                // allocates: what is counted is the layer's.
                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                    Bytes::from_static(ANSWER),
                )))
            },
        ));
    let service = service.ready().await.unwrap();
    let future = service.call(request);
    let mut cx = Context::from_waker(Waker::noop());

    let region = Region::new(GLOBAL);
    let mut future = pin!(future);
    let Poll::Ready(response) = future.as_mut().poll(&mut cx) else {
        panic!("the inner service answered at once");
    };
    let body = response.unwrap().into_body();
    let mut body = pin!(body);
    assert_eq!(body.size_hint().exact(), Some(ANSWER.len() as u64));
    assert!(!body.is_end_stream());
    let mut read = 0;
    loop {
        match body.as_mut().poll_frame(&mut cx) {
            Poll::Ready(Some(frame)) => {
                read += frame.unwrap().into_data().unwrap().len();
            }
            Poll::Ready(None) => break,
            Poll::Pending => panic!("a `Full` body is never pending"),
        }
    }
    let allocations = region.change().allocations;
    assert_eq!(read, ANSWER.len());
    assert!(body.is_end_stream());
    allocations
}

#[tokio::test]
async fn a_passed_through_answer_allocates_nothing() {
    // A stored response read again: not a generation, never resumed.
    let get = || {
        http::Request::get("http://api.example/v1/responses/resp_1")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    // A unary completion: a generation, answered with JSON, not a stream.
    let unary = || {
        http::Request::post("http://api.example/v1/chat/completions")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap()
    };
    // Warm-up: lazily initialised statics.
    allocations(get()).await;
    allocations(unary()).await;
    assert_eq!(allocations(get()).await, 0, "a GET's answer");
    assert_eq!(allocations(unary()).await, 0, "a unary completion's answer");
}
