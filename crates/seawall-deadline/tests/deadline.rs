//! DeadlineLayer behaviour, all on tokio's paused clock.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::{HeaderName, Request, Response};
use http_body_util::{BodyExt, Full, StreamBody};
use seawall_core::{Action, AnswerBy, Class, Code, Deadline, Failure, Progress};
use seawall_deadline::{DeadlineLayer, WireTimeout};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt, service_fn};

type Body = Full<Bytes>;

fn failure(err: &BoxError) -> &Failure {
    Failure::find(&**err).expect("a seawall Failure")
}

/// The deadline an upstream saw last.
type Seen = Arc<std::sync::Mutex<Option<Deadline>>>;

/// An upstream that answers at once and keeps the deadline each request
/// carried.
fn records_deadline() -> (
    Seen,
    impl tower::Service<Request<()>, Response = Response<Body>, Error = Infallible, Future: Send>
    + Clone,
) {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let record = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = Deadline::of(&req);
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    (seen, record)
}

/// An inner service that answers after `delay`, counting its calls.
fn answers_after(
    delay: Duration,
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<
    Request<()>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Body>, Infallible>>,
> + Clone {
    service_fn(move |_req: Request<()>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(delay).await;
            Ok(Response::new(Full::new(Bytes::from_static(b"ok"))))
        }
    })
}

#[tokio::test(start_paused = true)]
async fn total_deadline_fires_as_deadline_exceeded_and_surfaces() {
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = DeadlineLayer::new(Duration::from_secs(10))
        .layer(answers_after(Duration::from_secs(60), calls.clone()));
    let start = Instant::now();
    let err = svc.oneshot(Request::new(())).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::DeadlineExceeded);
    assert_eq!(failure.action(), Action::Surface);
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(10)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_response_in_time_passes_with_its_body() {
    let svc = DeadlineLayer::new(Duration::from_secs(10))
        .layer(answers_after(Duration::from_secs(3), Arc::default()));
    let response = svc.oneshot(Request::new(())).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ok");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_goes_into_the_extensions_and_only_shrinks() {
    let (seen, record) = records_deadline();
    let layer = DeadlineLayer::new(Duration::from_secs(10));
    let now = Instant::now();

    layer
        .layer(record.clone())
        .oneshot(Request::new(()))
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(now + Duration::from_secs(10)))
    );

    let mut earlier = Request::new(());
    earlier
        .extensions_mut()
        .insert(Deadline::at(now + Duration::from_secs(4)));
    layer.layer(record.clone()).oneshot(earlier).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(now + Duration::from_secs(4)))
    );

    let mut later = Request::new(());
    later
        .extensions_mut()
        .insert(Deadline::at(now + Duration::from_secs(40)));
    layer.layer(record).oneshot(later).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(now + Duration::from_secs(10)))
    );
}

#[tokio::test(start_paused = true)]
async fn an_expired_deadline_fails_at_once_without_calling_inner() {
    let calls = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    for layer in [
        DeadlineLayer::new(Duration::from_secs(10)),
        DeadlineLayer::per_attempt(Duration::from_secs(10)),
    ] {
        let mut request = Request::new(());
        request.extensions_mut().insert(Deadline::at(start));
        let err = layer
            .layer(answers_after(Duration::ZERO, calls.clone()))
            .oneshot(request)
            .await
            .unwrap_err();
        assert_eq!(failure(&err).code(), Code::DeadlineExceeded);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn per_attempt_bound_is_a_route_shaped_timeout_when_nothing_arrived() {
    let svc = DeadlineLayer::per_attempt(Duration::from_secs(30))
        .layer(answers_after(Duration::from_secs(600), Arc::default()));
    let start = Instant::now();
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(Deadline::at(start + Duration::from_secs(600)));
    let err = svc.oneshot(request).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.class(), Class::Transient);
    assert_eq!(failure.action(), Action::Retry);
    assert!(failure.is_route_shaped());
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(30)));
    assert_eq!(failure.evidence().bytes, 0);
}

/// The call a bound cut is dropped before its failure is handed up, the
/// future that yields it still held: what the layers below record of the
/// call's end comes before what the layers above record of the failure.
#[tokio::test(start_paused = true)]
async fn a_bound_that_fires_drops_the_call_before_it_answers() {
    struct Flag(Arc<AtomicUsize>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let upstream = {
        let dropped = dropped.clone();
        service_fn(move |_: Request<()>| {
            let flag = Flag(dropped.clone());
            async move {
                std::future::pending::<()>().await;
                drop(flag);
                Ok::<_, Infallible>(Response::new(Body::default()))
            }
        })
    };
    for layer in [
        DeadlineLayer::per_attempt(Duration::from_secs(30)),
        DeadlineLayer::new(Duration::from_secs(30)),
    ] {
        let before = dropped.load(Ordering::SeqCst);
        let mut service = layer.layer(upstream.clone());
        let service = service.ready().await.unwrap();
        // Called, not `oneshot` (which drops the future it finished).
        let mut future = std::pin::pin!(tower::Service::call(service, Request::new(())));
        let err = future.as_mut().await.unwrap_err();
        assert!(matches!(
            failure(&err).code(),
            Code::Timeout | Code::DeadlineExceeded
        ));
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            before + 1,
            "dropped when the bound fired"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn per_attempt_timeout_carries_the_progress_the_attempt_made() {
    // Bytes arrived (say, SSE keep-alives) but no content: the guard holds
    // the response back and records the bytes in the attempt's Progress.
    let trickle = service_fn(|req: Request<()>| {
        let progress = req.extensions().get::<Progress>().cloned().unwrap();
        async move {
            progress.add_bytes(17);
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(Response::new(Body::default()))
        }
    });
    let err = DeadlineLayer::per_attempt(Duration::from_secs(5))
        .layer(trickle)
        .oneshot(Request::new(()))
        .await
        .unwrap_err();
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.evidence().bytes, 17);
    assert!(!failure.is_route_shaped());
    assert_eq!(failure.action(), Action::Retry);
}

/// Two attempt bounds with no retry ladder above (one the caller's, one
/// a stack's): they bound the same attempt, so they count it in one
/// `Progress`. When the outer, shorter one cuts, it reads the bytes that
/// arrived, not a count the inner one started afresh and kept to itself.
#[tokio::test(start_paused = true)]
async fn an_outer_attempt_bound_reads_the_bytes_an_inner_one_saw_counted() {
    let trickle = service_fn(|req: Request<()>| {
        let progress = Progress::of_request(&req).expect("the attempt's progress");
        async move {
            progress.add_bytes(17);
            progress.add_content_events(1);
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(Response::new(Body::default()))
        }
    });
    let inner = DeadlineLayer::per_attempt(Duration::from_secs(30)).layer(trickle);
    let err = DeadlineLayer::per_attempt(Duration::from_secs(5))
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .unwrap_err();
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(5)));
    assert_eq!(failure.evidence().bytes, 17, "{failure:?}");
    assert_eq!(failure.evidence().content_events, 1);
    assert!(!failure.is_route_shaped());
}

#[tokio::test(start_paused = true)]
async fn per_attempt_inside_an_earlier_operation_deadline_fires_as_deadline_exceeded() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let inner = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = Deadline::of(&req);
            std::future::pending::<Result<Response<Body>, Infallible>>()
        })
    };
    let start = Instant::now();
    let mut request = Request::new(());
    let operation = Deadline::at(start + Duration::from_secs(7));
    request.extensions_mut().insert(operation);
    let err = DeadlineLayer::per_attempt(Duration::from_secs(30))
        .layer(inner)
        .oneshot(request)
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    assert_eq!(failure(&err).code(), Code::DeadlineExceeded);
    assert_eq!(*seen.lock().unwrap(), Some(operation));
}

#[tokio::test(start_paused = true)]
async fn per_attempt_narrows_the_deadline_the_attempt_sees() {
    let (seen, inner) = records_deadline();
    let start = Instant::now();
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(Deadline::at(start + Duration::from_secs(600)));
    DeadlineLayer::per_attempt(Duration::from_secs(30))
        .layer(inner)
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(30)))
    );
}

/// The response `layer` gives over an upstream that answers `body`.
async fn answer_under<B>(
    layer: DeadlineLayer,
    body: B,
) -> Response<seawall_deadline::DeadlineBody<B>> {
    let mut body = Some(body);
    let inner = service_fn(move |_req: Request<()>| {
        let body = body.take().expect("one call");
        async { Ok::<_, Infallible>(Response::new(body)) }
    });
    layer.layer(inner).oneshot(Request::new(())).await.unwrap()
}

/// A streamed body: one chunk, then silence.
fn one_chunk_then_silence()
-> StreamBody<impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>>> {
    StreamBody::new(
        stream::iter([Ok(http_body::Frame::data(Bytes::from_static(b"hello")))])
            .chain(stream::pending()),
    )
}

#[tokio::test(start_paused = true)]
async fn total_deadline_bounds_the_body_and_says_content_was_seen() {
    let start = Instant::now();
    let response = answer_under(
        DeadlineLayer::new(Duration::from_secs(10)),
        one_chunk_then_silence(),
    )
    .await;
    let mut body = std::pin::pin!(response.into_body());
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "hello");
    let err = body.frame().await.unwrap().unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::DeadlineExceeded);
    assert!(failure.evidence().content_seen);
    assert_eq!(failure.evidence().bytes, 5);
    assert_eq!(failure.action(), Action::Surface);
    assert!(
        body.frame().await.is_none(),
        "the body ends after its deadline"
    );
}

/// A streamed body whose frames are always ready: an upstream faster than
/// its reader.
fn always_ready()
-> StreamBody<impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>>> {
    StreamBody::new(stream::repeat_with(|| {
        Ok(http_body::Frame::data(Bytes::from_static(b"tok")))
    }))
}

#[tokio::test(start_paused = true)]
async fn total_deadline_bounds_a_body_that_is_always_ready() {
    let start = Instant::now();
    let response = answer_under(DeadlineLayer::new(Duration::from_secs(10)), always_ready()).await;
    let mut body = std::pin::pin!(response.into_body());
    // A slow reader: the timer never gets a `Pending` to fire on.
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "tok");
    tokio::time::advance(Duration::from_secs(11)).await;
    // The frame that was ready is still delivered, and so is the one
    // ready when the body is asked once more for its end (taken from
    // the body below, it is not thrown away)...
    for _ in 0..2 {
        let late = body.frame().await.unwrap().unwrap();
        assert_eq!(late.into_data().unwrap(), "tok");
    }
    // ...and the body then ends with the deadline's failure.
    let err = body
        .frame()
        .await
        .unwrap()
        .expect_err("the deadline passed while the body was read");
    let failure = failure(&err);
    assert_eq!(failure.code(), Code::DeadlineExceeded);
    assert_eq!(failure.action(), Action::Surface);
    assert_eq!(failure.evidence().elapsed, Some(Duration::from_secs(11)));
    assert_eq!(failure.evidence().bytes, 9);
    assert!(failure.evidence().content_seen);
    assert!(
        body.frame().await.is_none(),
        "the body ends after its deadline"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(11));
}

#[tokio::test(start_paused = true)]
async fn a_whole_answer_read_after_the_deadline_is_not_failed() {
    // A unary answer is in memory when the response is handed on (the
    // classifier read it); the caller reads it a moment after the deadline.
    // Its one frame is the whole answer: a failure in place of its end
    // would throw away an answer that arrived in time.
    let response = answer_under(
        DeadlineLayer::new(Duration::from_secs(10)),
        Full::new(Bytes::from_static(b"{\"answer\":42}")),
    )
    .await;
    tokio::time::advance(Duration::from_secs(11)).await;
    let body = response.into_body();
    let bytes = body.collect().await.expect("the whole answer").to_bytes();
    assert_eq!(bytes, "{\"answer\":42}");
}

/// A timer below an attempt's bound that fires with the operation's
/// deadline (a tonic channel enforcing the `grpc-timeout` written for
/// it): the failure is `deadline_exceeded`, not the inner `timeout`
/// polled first (which failed over after the operation was over). A
/// timeout below that fires before the bound stays what it is.
#[tokio::test(start_paused = true)]
async fn a_timer_below_firing_with_the_deadline_is_the_deadline() {
    for (inner_after, expected) in [(10, Code::DeadlineExceeded), (4, Code::Timeout)] {
        let inner = service_fn(move |_req: Request<()>| async move {
            tokio::time::sleep(Duration::from_secs(inner_after)).await;
            Err::<Response<Full<Bytes>>, BoxError>(Failure::new(Code::Timeout).into())
        });
        let err = tower::ServiceBuilder::new()
            .layer(DeadlineLayer::new(Duration::from_secs(10)))
            .layer(DeadlineLayer::per_attempt(Duration::from_secs(60)))
            .service(inner)
            .oneshot(Request::new(()))
            .await
            .expect_err("out of time");
        let failure = Failure::find(&*err).expect("a failure");
        assert_eq!(failure.code(), expected, "inner after {inner_after} s");
    }
}

/// A body that knows its end only when asked again (hyper's chunked and
/// HTTP/2 bodies, a stream guard handing on the frame that holds
/// `[DONE]`): its last frame, ready a moment after the deadline, then its
/// end (or its trailers, then its end) is a whole answer, not a failure.
/// It was failed, the end held back from the caller.
#[tokio::test(start_paused = true)]
async fn a_last_frame_read_after_the_deadline_then_the_end_is_whole() {
    for trailers in [false, true] {
        let mut frames = vec![
            Ok::<_, Infallible>(http_body::Frame::data(Bytes::from_static(b"data: a\n\n"))),
            Ok(http_body::Frame::data(Bytes::from_static(
                b"data: [DONE]\n\n",
            ))),
        ];
        if trailers {
            let mut map = http::HeaderMap::new();
            map.insert("grpc-status", http::HeaderValue::from_static("0"));
            frames.push(Ok(http_body::Frame::trailers(map)));
        }
        let body = StreamBody::new(stream::iter(frames));
        let response = answer_under(DeadlineLayer::new(Duration::from_secs(10)), body).await;
        let mut body = std::pin::pin!(response.into_body());
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "data: a\n\n");
        tokio::time::advance(Duration::from_secs(11)).await;
        let last = body.frame().await.unwrap().unwrap();
        assert_eq!(last.into_data().unwrap(), "data: [DONE]\n\n");
        if trailers {
            let frame = body
                .frame()
                .await
                .expect("the trailers")
                .expect("no failure");
            assert!(frame.is_trailers());
        }
        assert!(body.frame().await.is_none(), "a clean end ({trailers})");
    }
}

#[tokio::test(start_paused = true)]
async fn per_attempt_does_not_bound_a_body_that_is_always_ready() {
    let response = answer_under(
        DeadlineLayer::per_attempt(Duration::from_secs(5)),
        always_ready(),
    )
    .await;
    let mut body = std::pin::pin!(response.into_body());
    for _ in 0..5 {
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "tok");
        tokio::time::advance(Duration::from_secs(6)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn per_attempt_does_not_bound_a_long_healthy_stream() {
    let inner = service_fn(|_req: Request<()>| async {
        let ticks = stream::unfold(0u32, |n| async move {
            (n < 10).then_some(())?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            Some((
                Ok::<_, Infallible>(http_body::Frame::data(Bytes::from_static(b"x"))),
                n + 1,
            ))
        });
        Ok::<_, Infallible>(Response::new(StreamBody::new(ticks)))
    });
    let response = DeadlineLayer::per_attempt(Duration::from_secs(5))
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .unwrap();
    let start = Instant::now();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body.len(), 10);
    assert_eq!(start.elapsed(), Duration::from_secs(20));
}

#[tokio::test(start_paused = true)]
async fn remaining_time_is_written_on_the_wire() {
    let seen = Arc::new(std::sync::Mutex::new(http::HeaderMap::new()));
    let inner = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = req.headers().clone();
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    let start = Instant::now();
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(Deadline::at(start + Duration::from_millis(2500)));
    DeadlineLayer::new(Duration::from_secs(10))
        .propagate_grpc_timeout()
        .layer(inner.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap()["grpc-timeout"], "2500000u");

    // An attempt tells the server the operation's time left, not its own
    // bound (which covers only the wait for the answer to begin), and
    // nothing where no operation deadline is known.
    let attempt = || {
        DeadlineLayer::per_attempt(Duration::from_secs(3))
            .propagate_header(HeaderName::from_static("x-request-timeout-ms"))
            .layer(inner.clone())
    };
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(Deadline::at(Instant::now() + Duration::from_millis(8000)));
    attempt().oneshot(request).await.unwrap();
    assert_eq!(seen.lock().unwrap()["x-request-timeout-ms"], "8000");
    attempt().oneshot(Request::new(())).await.unwrap();
    assert!(!seen.lock().unwrap().contains_key("x-request-timeout-ms"));
}

/// `refresh` rewrites the caller's bound a total bound read off the wire
/// with the time left, and adds none to a request without one.
#[tokio::test(start_paused = true)]
async fn a_carried_bound_is_refreshed_and_none_is_added() {
    let seen = Arc::new(std::sync::Mutex::new(http::HeaderMap::new()));
    let inner = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = req.headers().clone();
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    let stack = |inner| {
        DeadlineLayer::new(Duration::from_secs(60))
            .read_incoming(WireTimeout::grpc())
            .layer(
                DeadlineLayer::per_attempt(Duration::from_secs(3))
                    .refresh(WireTimeout::grpc())
                    .layer(inner),
            )
    };
    let carried = Request::builder()
        .header("grpc-timeout", "8S")
        .body(())
        .unwrap();
    stack(inner.clone()).oneshot(carried).await.unwrap();
    // The operation's time left (the caller's 8 s), not the attempt's 3 s:
    // a gRPC deadline ends a stream that began in time too.
    let sent = seawall_deadline::parse_grpc_timeout(&seen.lock().unwrap()["grpc-timeout"])
        .expect("a grpc-timeout");
    assert!(
        sent > Duration::from_secs(7) && sent <= Duration::from_secs(8),
        "{sent:?}"
    );
    stack(inner).oneshot(Request::new(())).await.unwrap();
    assert!(!seen.lock().unwrap().contains_key("grpc-timeout"));
}

#[tokio::test(start_paused = true)]
async fn a_server_takes_its_deadline_from_the_caller() {
    let (seen, inner) = records_deadline();
    let start = Instant::now();
    let layer = DeadlineLayer::from_incoming(WireTimeout::grpc());
    let request = Request::builder()
        .header("grpc-timeout", "2S")
        .body(())
        .unwrap();
    layer.layer(inner.clone()).oneshot(request).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(2)))
    );

    let garbage = Request::builder()
        .header("grpc-timeout", "soon")
        .body(())
        .unwrap();
    layer.layer(inner.clone()).oneshot(garbage).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        None,
        "a malformed header sets no deadline"
    );

    // Our own bound caps a generous caller.
    let capped = DeadlineLayer::new(Duration::from_secs(1)).read_incoming(WireTimeout::grpc());
    let request = Request::builder()
        .header("grpc-timeout", "1H")
        .body(())
        .unwrap();
    capped.layer(inner).oneshot(request).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(1)))
    );
}

#[tokio::test(start_paused = true)]
async fn inner_errors_pass_through() {
    let inner = service_fn(|_req: Request<()>| async {
        Err::<Response<Body>, BoxError>(Box::new(Failure::new(Code::Overloaded)))
    });
    let err = DeadlineLayer::new(Duration::from_secs(10))
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .unwrap_err();
    assert_eq!(failure(&err).code(), Code::Overloaded);
}

/// An `AnswerBy` bounds the wait for the answer: the inner layers plan
/// within it, and no answer by then is `deadline_exceeded` then.
#[tokio::test(start_paused = true)]
async fn an_answer_by_bounds_the_wait_for_the_answer() {
    let (seen, record) = records_deadline();
    let start = Instant::now();
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(AnswerBy(Deadline::at(start + Duration::from_secs(3))));
    DeadlineLayer::new(Duration::from_secs(10))
        .layer(record)
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(3))),
        "the layers inside plan within it"
    );

    let calls = Arc::new(AtomicUsize::new(0));
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(AnswerBy(Deadline::at(start + Duration::from_secs(3))));
    let err = DeadlineLayer::new(Duration::from_secs(10))
        .layer(answers_after(Duration::from_secs(60), calls))
        .oneshot(request)
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert_eq!(failure(&err).code(), Code::DeadlineExceeded);
    assert!(
        AnswerBy::passed(failure(&err)),
        "the caller's bound, said so"
    );

    // An attempt's bound inside fires at the same instant: it says so too.
    let mut request = Request::new(());
    request.extensions_mut().insert(AnswerBy(Deadline::at(
        Instant::now() + Duration::from_secs(3),
    )));
    let err = DeadlineLayer::new(Duration::from_secs(10))
        .layer(
            DeadlineLayer::per_attempt(Duration::from_secs(20)).layer(answers_after(
                Duration::from_secs(60),
                Arc::new(AtomicUsize::new(0)),
            )),
        )
        .oneshot(request)
        .await
        .unwrap_err();
    assert!(AnswerBy::passed(failure(&err)), "{:?}", failure(&err));

    // The operation's deadline first: its own failure, not the caller's.
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(AnswerBy(Deadline::at(start + Duration::from_secs(30))));
    let err = DeadlineLayer::new(Duration::from_secs(2))
        .layer(answers_after(
            Duration::from_secs(60),
            Arc::new(AtomicUsize::new(0)),
        ))
        .oneshot(request)
        .await
        .unwrap_err();
    assert_eq!(failure(&err).code(), Code::DeadlineExceeded);
    assert!(!AnswerBy::passed(failure(&err)));
}

/// An answer that began in time is bounded by the operation's deadline
/// only, never by its `AnswerBy`, and the wire is told the operation's.
#[tokio::test(start_paused = true)]
async fn an_answer_that_began_runs_past_its_answer_by() {
    let start = Instant::now();
    let headers = Arc::new(std::sync::Mutex::new(http::HeaderMap::new()));
    let inner = {
        let headers = headers.clone();
        service_fn(move |req: Request<()>| {
            *headers.lock().unwrap() = req.headers().clone();
            async { Ok::<_, Infallible>(Response::new(one_chunk_then_silence())) }
        })
    };
    let mut request = Request::new(());
    request
        .extensions_mut()
        .insert(AnswerBy(Deadline::at(start + Duration::from_secs(3))));
    let response = DeadlineLayer::new(Duration::from_secs(10))
        .propagate_grpc_timeout()
        .layer(inner)
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(headers.lock().unwrap()["grpc-timeout"], "10000000u");
    let mut body = std::pin::pin!(response.into_body());
    body.frame().await.unwrap().unwrap();
    let err = body.frame().await.unwrap().unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(10), "not at 3 s");
    assert_eq!(failure(&err).code(), Code::DeadlineExceeded);
}

/// Between the total bound and an attempt, a retry ladder narrows the
/// `Deadline` to keep a fallback's reserve (and a caller's `AnswerBy`
/// narrows it too): with `carry_to_attempts`, the attempt still writes
/// what is left of the operation on the wire, which is what bounds a
/// stream that began in time.
#[tokio::test(start_paused = true)]
async fn an_attempt_writes_the_operations_time_not_a_narrowed_window() {
    let seen = Arc::new(std::sync::Mutex::new(http::HeaderMap::new()));
    let inner = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = req.headers().clone();
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    let attempt = DeadlineLayer::per_attempt(Duration::from_secs(3))
        .propagate_grpc_timeout()
        .layer(inner);
    // What a ladder keeping a fallback reserve does: the attempts run
    // under a window 4 s from now.
    let window = tower::ServiceBuilder::new()
        .map_request(|mut req: Request<()>| {
            let slot = req.extensions_mut().get_mut::<Deadline>().unwrap();
            *slot = Deadline::at(Instant::now() + Duration::from_secs(4));
            req
        })
        .service(attempt);
    let sent = |carry: bool| {
        let layer = DeadlineLayer::new(Duration::from_secs(10));
        let layer = if carry {
            layer.carry_to_attempts()
        } else {
            layer
        };
        let service = layer.layer(window.clone());
        let seen = seen.clone();
        async move {
            service.oneshot(Request::new(())).await.unwrap();
            let value = seen.lock().unwrap()["grpc-timeout"].clone();
            seawall_deadline::parse_grpc_timeout(&value).unwrap()
        }
    };
    assert_eq!(sent(true).await, Duration::from_secs(10));
    assert_eq!(
        sent(false).await,
        Duration::from_secs(4),
        "the window, without it"
    );
}

/// Two total bounds, the outer 60 s and the inner 30 s, around a call
/// whose caller waits 5 s for its answer to begin (`AnswerBy`): the inner
/// bound's operation is the earlier of the two operations' deadlines, not
/// the `AnswerBy` the outer narrowed the `Deadline` to. A stream that began
/// in time runs on past 5 s; an answer that never began fails as the
/// caller's bound; a request sent once the answer began is held to 30 s.
#[tokio::test(start_paused = true)]
async fn a_total_bound_inside_another_keeps_the_operations_deadline() {
    let start = Instant::now();
    let lifted = Arc::new(std::sync::Mutex::new(None));
    let stack = |inner: u64, answers: bool| {
        let lifted = lifted.clone();
        let upstream = service_fn(move |mut req: Request<()>| {
            AnswerBy::lift(&mut req);
            *lifted.lock().unwrap() = Deadline::of(&req);
            async move {
                if !answers {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
                // One frame every 2 s until 20 s.
                let ticks = stream::unfold(0u32, |n| async move {
                    (n < 9).then_some(())?;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    Some((
                        Ok::<_, Infallible>(http_body::Frame::data(Bytes::from_static(b"x"))),
                        n + 1,
                    ))
                });
                Ok::<_, Infallible>(Response::new(StreamBody::new(ticks)))
            }
        });
        DeadlineLayer::new(Duration::from_secs(60))
            .layer(DeadlineLayer::new(Duration::from_secs(inner)).layer(upstream))
    };
    let request = || {
        let mut request = Request::new(());
        request.extensions_mut().insert(AnswerBy(Deadline::at(
            Instant::now() + Duration::from_secs(5),
        )));
        request
    };

    let response = stack(30, true).oneshot(request()).await.unwrap();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the whole stream");
    assert_eq!(body.to_bytes().len(), 9);
    assert_eq!(start.elapsed(), Duration::from_secs(20));
    assert_eq!(
        *lifted.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(30))),
        "the inner bound's operation, not the outer's"
    );

    let start = Instant::now();
    let Err(err) = stack(30, false).oneshot(request()).await else {
        panic!("no answer began");
    };
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert!(AnswerBy::passed(failure(&err)), "{:?}", failure(&err));

    // An inner bound earlier than the `AnswerBy`: the request is held to
    // it once the answer began too, not to the outer's 60 s.
    let start = Instant::now();
    let Err(err) = stack(3, false).oneshot(request()).await else {
        panic!("no answer began");
    };
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert!(!AnswerBy::passed(failure(&err)), "the operation's deadline");
    assert_eq!(
        *lifted.lock().unwrap(),
        Some(Deadline::at(start + Duration::from_secs(3)))
    );
}

/// A total bound inside one that carries the operation's deadline to the
/// attempts (asked to, or read off the caller's wire) with an earlier
/// deadline of its own: the attempts write what is left of the earlier,
/// not the outer's whole bound the operation ends long before.
#[tokio::test(start_paused = true)]
async fn an_earlier_total_bound_inside_tightens_the_carried_deadline() {
    let seen = Arc::new(std::sync::Mutex::new(http::HeaderMap::new()));
    let inner = {
        let seen = seen.clone();
        service_fn(move |req: Request<()>| {
            *seen.lock().unwrap() = req.headers().clone();
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    let sent = |outer: DeadlineLayer, request: Request<()>| {
        let service = outer.layer(
            DeadlineLayer::new(Duration::from_secs(10)).layer(
                DeadlineLayer::per_attempt(Duration::from_secs(3))
                    .refresh(WireTimeout::grpc())
                    .layer(inner.clone()),
            ),
        );
        let seen = seen.clone();
        async move {
            service.oneshot(request).await.unwrap();
            let value = seen.lock().unwrap()["grpc-timeout"].clone();
            seawall_deadline::parse_grpc_timeout(&value).unwrap()
        }
    };
    let carried = Request::builder()
        .header("grpc-timeout", "60S")
        .body(())
        .unwrap();
    let outer = DeadlineLayer::new(Duration::from_secs(120)).read_incoming(WireTimeout::grpc());
    assert_eq!(sent(outer, carried).await, Duration::from_secs(10));
    let asked = Request::builder()
        .header("grpc-timeout", "60S")
        .body(())
        .unwrap();
    let outer = DeadlineLayer::new(Duration::from_secs(60)).carry_to_attempts();
    assert_eq!(sent(outer, asked).await, Duration::from_secs(10));
    // An inner bound later than the carried one loosens nothing.
    let carried = Request::builder()
        .header("grpc-timeout", "4S")
        .body(())
        .unwrap();
    let outer = DeadlineLayer::from_incoming(WireTimeout::grpc());
    assert_eq!(sent(outer, carried).await, Duration::from_secs(4));
}

/// A verdict the body below already reached when it is asked after the
/// deadline (a stream guard's `content_filtered` for a held `[DONE]`, its
/// `stream_interrupted` with the text delivered) is the caller's failure,
/// not a `deadline_exceeded` that loses its code and record.
#[tokio::test(start_paused = true)]
async fn a_verdict_ready_after_the_deadline_wins_over_the_clock() {
    let frames: [Result<http_body::Frame<Bytes>, BoxError>; 3] = [
        Ok(http_body::Frame::data(Bytes::from_static(b"data: a\n\n"))),
        Ok(http_body::Frame::data(Bytes::from_static(b"data: b\n\n"))),
        Err(Failure::new(Code::ContentFiltered).into()),
    ];
    let body = StreamBody::new(stream::iter(frames).chain(stream::pending()));
    let response = answer_under(DeadlineLayer::new(Duration::from_secs(10)), body).await;
    let mut body = std::pin::pin!(response.into_body());
    body.frame().await.unwrap().unwrap();
    tokio::time::advance(Duration::from_secs(11)).await;
    let late = body.frame().await.unwrap().unwrap();
    assert_eq!(late.into_data().unwrap(), "data: b\n\n");
    let err = body.frame().await.unwrap().unwrap_err();
    assert_eq!(failure(&err).code(), Code::ContentFiltered);
    assert!(body.frame().await.is_none(), "the body ends with it");
}

/// What each call to an upstream carried: its headers and its deadline.
type Calls = Arc<std::sync::Mutex<Vec<(http::HeaderMap, Option<Deadline>)>>>;

/// An upstream that answers at once and keeps what each call carried.
fn records_calls() -> (
    Calls,
    impl tower::Service<Request<()>, Response = Response<Body>, Error = Infallible, Future: Send>
    + Clone,
) {
    let calls = Calls::default();
    let record = {
        let calls = calls.clone();
        service_fn(move |req: Request<()>| {
            calls
                .lock()
                .unwrap()
                .push((req.headers().clone(), Deadline::of(&req)));
            async { Ok::<_, Infallible>(Response::new(Body::default())) }
        })
    };
    (calls, record)
}

/// A retry in miniature: sends a copy of the request it was given twice,
/// `gap` apart, as a retry layer sends the caller's request again.
fn twice<S, ResB>(
    gap: Duration,
    attempt: S,
) -> impl tower::Service<Request<()>, Response = Response<Body>, Error = BoxError> + Clone
where
    S: tower::Service<Request<()>, Response = Response<ResB>, Error = BoxError> + Clone,
{
    service_fn(move |request: Request<()>| {
        let attempt = attempt.clone();
        async move {
            attempt.clone().oneshot(request.clone()).await?;
            tokio::time::sleep(gap).await;
            attempt.oneshot(request).await?;
            Ok::<_, BoxError>(Response::new(Body::default()))
        }
    })
}

/// The two kinds of wire timeout, each with how its caller writes 500 ms,
/// 60 s, and garbage.
fn wires() -> [(WireTimeout, [&'static str; 3]); 2] {
    [
        (WireTimeout::grpc(), ["500m", "60S", "soon"]),
        (
            WireTimeout::millis(HeaderName::from_static("x-request-timeout-ms")),
            ["500", "60000", "-5"],
        ),
    ]
}

/// A request whose caller put its own bound, `value`, in `wire`'s header.
fn bound_by_caller(wire: &WireTimeout, value: &'static str) -> Request<()> {
    let name = match wire {
        WireTimeout::Grpc => "grpc-timeout",
        WireTimeout::Millis(name) => name.as_str(),
    };
    Request::builder().header(name, value).body(()).unwrap()
}

/// What `wire` says in `headers`.
fn sent(wire: &WireTimeout, headers: &http::HeaderMap) -> Duration {
    wire.read(headers)
        .expect("a well-formed timeout on the wire")
}

/// tonic's `set_timeout(500ms)` writes `grpc-timeout: 500m` and its
/// channel keeps no timer of its own: a total bound that writes the
/// header keeps the caller's shorter bound, on the wire and as the
/// operation's deadline. A longer one, or garbage, is replaced by its own.
#[tokio::test(start_paused = true)]
async fn a_total_bound_never_lengthens_the_callers_timeout_on_the_wire() {
    for (wire, [short, long, garbage]) in wires() {
        let (calls, record) = records_calls();
        let layer = DeadlineLayer::new(Duration::from_secs(10)).propagate(wire.clone());
        for (value, kept) in [
            (short, Duration::from_millis(500)),
            (long, Duration::from_secs(10)),
            (garbage, Duration::from_secs(10)),
        ] {
            let start = Instant::now();
            layer
                .layer(record.clone())
                .oneshot(bound_by_caller(&wire, value))
                .await
                .unwrap();
            let (headers, deadline) = calls.lock().unwrap().pop().expect("one call");
            assert_eq!(sent(&wire, &headers), kept, "{wire:?} {value}");
            assert_eq!(
                deadline,
                Some(Deadline::at(start + kept)),
                "{wire:?} {value}"
            );
            tokio::time::advance(Duration::from_secs(1)).await;
        }
    }
}

/// The example's composition: a total bound that carries the operation's
/// deadline to attempts that write it, told to read the caller's header
/// or not. The caller's shorter bound holds for every attempt, each told
/// what is left of it; a longer one, or garbage, gives way to the
/// operation's.
#[tokio::test(start_paused = true)]
async fn attempts_never_lengthen_the_callers_timeout_on_the_wire() {
    let carries = DeadlineLayer::new(Duration::from_secs(10)).carry_to_attempts();
    let both = |wire: &WireTimeout| [carries.clone(), carries.clone().read_incoming(wire.clone())];
    for (wire, [short, long, garbage]) in wires() {
        for total in both(&wire) {
            let (calls, record) = records_calls();
            let service = total.layer(twice(
                Duration::from_millis(200),
                DeadlineLayer::per_attempt(Duration::from_secs(2))
                    .propagate(wire.clone())
                    .layer(record),
            ));
            for (value, kept) in [
                (short, Duration::from_millis(500)),
                (long, Duration::from_secs(10)),
                (garbage, Duration::from_secs(10)),
            ] {
                let start = Instant::now();
                service
                    .clone()
                    .oneshot(bound_by_caller(&wire, value))
                    .await
                    .unwrap();
                let attempts = std::mem::take(&mut *calls.lock().unwrap());
                assert_eq!(attempts.len(), 2);
                let second = kept - Duration::from_millis(200);
                for ((headers, deadline), left) in attempts.iter().zip([kept, second]) {
                    assert_eq!(sent(&wire, headers), left, "{wire:?} {value}");
                    let deadline = deadline.expect("a deadline");
                    assert!(deadline <= Deadline::at(start + kept), "{wire:?} {value}");
                }
                tokio::time::advance(Duration::from_secs(1)).await;
            }
        }
    }
}

/// An attempt with no total bound outside to carry the operation's
/// deadline still writes the earlier of the caller's bound and the
/// operation's time left, not the later.
#[tokio::test(start_paused = true)]
async fn an_attempt_alone_never_lengthens_the_callers_timeout_on_the_wire() {
    for (wire, [short, long, garbage]) in wires() {
        let (calls, record) = records_calls();
        let attempt = DeadlineLayer::per_attempt(Duration::from_secs(2))
            .propagate(wire.clone())
            .layer(record);
        for (value, kept) in [
            (short, Duration::from_millis(500)),
            (long, Duration::from_secs(10)),
            (garbage, Duration::from_secs(10)),
        ] {
            let start = Instant::now();
            let mut request = bound_by_caller(&wire, value);
            request
                .extensions_mut()
                .insert(Deadline::at(start + Duration::from_secs(10)));
            attempt.clone().oneshot(request).await.unwrap();
            let (headers, deadline) = calls.lock().unwrap().pop().expect("one call");
            assert_eq!(sent(&wire, &headers), kept, "{wire:?} {value}");
            let bound = kept.min(Duration::from_secs(2));
            assert_eq!(
                deadline,
                Some(Deadline::at(start + bound)),
                "{wire:?} {value}"
            );
        }
    }
}
