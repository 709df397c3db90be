//! The two client stacks an incident runs through: the naive one (tower's
//! retry and timeout, a restarting caller) and the seawall preset.

use bytes::Bytes;
use http::HeaderValue;
use http_body::Body;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, Failure, FinishKind, Receipt, RouteId};
use seawall::fallback::FallbackLayer;
use seawall::resume::{ResumeLayer, Resumed};
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::{StreamGuardLayer, StreamReportHandle};
use seawall_chaos::{ChaosHandle, FAULT_HEADER, REQUEST_ID_HEADER};
use tower::{Service, ServiceExt};

use super::incidents::Incident;
use super::{Clock, Run};
use crate::app;
use crate::caller::{self, Delivery};
use crate::naive::{self, NaiveClient, NaivePolicy, StatusError};

/// The request an application sends for this incident, carrying `body`.
fn request(
    chaos: &ChaosHandle,
    incident: &Incident,
    id: &str,
    body: &serde_json::Value,
) -> http::Request<Full<Bytes>> {
    app::request(
        &chaos.base_url(),
        incident.provider,
        incident.stream,
        id,
        incident.every_attempt,
        body,
    )
}

pub(super) async fn run_naive(
    chaos: &ChaosHandle,
    incident: &Incident,
    id: &str,
    clock: Clock,
) -> Run {
    let client: NaiveClient = Client::builder(TokioExecutor::new()).build_http();
    let settings = NaivePolicy {
        api_attempts: 3,
        stream_attempts: 3,
        attempt_timeout: clock.secs(600.0),
        pause: clock.secs(1.0),
    };
    let body = app::conversation(incident.provider, incident.stream);
    let mut shown = Delivery::default();
    let mut outcome = "error";
    let mut code = None;
    // The caller's loop: restart the stream when it fails, whatever failed.
    for _ in 0..settings.stream_attempts {
        let opened = match naive::call(&client, settings, request(chaos, incident, id, &body)).await
        {
            Ok(opened) => opened,
            Err(err) => {
                code = Some(naive_code(&*err));
                continue;
            }
        };
        let read = async {
            if incident.stream {
                caller::read_stream(
                    opened.first,
                    opened.rest,
                    incident.provider,
                    incident.caller_stops_after,
                    |_| {},
                )
                .await
            } else {
                let mut whole = opened.first.map(Vec::from).unwrap_or_default();
                match opened.rest.collect().await {
                    Ok(rest) => whole.extend_from_slice(&rest.to_bytes()),
                    Err(err) => {
                        return Delivery {
                            error: Some(err.into()),
                            ..Delivery::default()
                        };
                    }
                }
                caller::read_unary(Full::new(Bytes::from(whole)), incident.provider).await
            }
        };
        match tokio::time::timeout(settings.attempt_timeout, read).await {
            Err(_) => code = Some("timeout".to_owned()),
            Ok(delivery) => {
                shown.text.push_str(&delivery.text);
                if delivery.cancelled {
                    outcome = "cancelled";
                    code = Some("cancelled".to_owned());
                    break;
                }
                match delivery.error {
                    Some(err) => code = Some(format!("stream_error: {}", short(&*err))),
                    None => {
                        outcome = "ok";
                        code = delivery.finish.filter(|f| {
                            !FinishKind::for_provider(incident.provider, f).completes_task()
                        });
                        break;
                    }
                }
            }
        }
    }
    Run {
        delivery: shown,
        outcome,
        code,
        resumed: 0,
        usage: None,
    }
}

fn naive_code(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(status) = e.downcast_ref::<StatusError>() {
            return format!("http_{}", status.0.as_u16());
        }
        if e.is::<tower::timeout::error::Elapsed>() {
            return "timeout".to_owned();
        }
        current = e.source();
    }
    "transport".to_owned()
}

fn short(err: &(dyn std::error::Error + 'static)) -> String {
    let text = err.to_string();
    text.chars().take(40).collect()
}

/// The seawall preset, with every duration in incident seconds.
fn seawall_stack(clock: Clock) -> Stack {
    Stack::interactive()
        .total_deadline(clock.secs(1200.0))
        .attempt_timeout(clock.secs(600.0))
        .retry_policy(
            RetryPolicy::interactive()
                .backoff(Backoff::exponential(clock.secs(0.25), clock.secs(8.0)))
                .min_attempt_time(clock.secs(1.0))
                .max_retry_after(clock.secs(60.0)),
        )
        .budget(Budget::unlimited())
        .stream_guard(
            StreamGuardLayer::interactive()
                .first_byte_timeout(clock.secs(15.0))
                .first_content_timeout(clock.secs(60.0))
                .idle_timeout(clock.secs(30.0)),
        )
}

pub(super) async fn run_seawall(
    chaos: &ChaosHandle,
    incident: &Incident,
    id: &str,
    clock: Clock,
) -> Run {
    let stack = seawall_stack(clock);
    let classify = ClassifyLayer::for_provider(incident.provider);
    if incident.fallback {
        let fallback_client = Client::builder(TokioExecutor::new()).build_http();
        let fallback = FallbackLayer::new(stack.attempt(&classify, fallback_client))
            .route(RouteId::new("fallback"))
            .rewrite(|req: &mut http::Request<ReplayBody<Full<Bytes>>>| {
                // The other route: the same server, healthy, tagged for the journal.
                req.headers_mut().remove(FAULT_HEADER);
                let tagged = req
                    .headers()
                    .get(REQUEST_ID_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(|id| format!("{id}:fallback"));
                if let Some(value) = tagged.and_then(|t| HeaderValue::from_str(&t).ok()) {
                    req.headers_mut().insert(REQUEST_ID_HEADER, value);
                }
            });
        let client = Client::builder(TokioExecutor::new()).build_http();
        let service = stack.build_with_fallback(&classify, client, fallback);
        call_seawall(service, chaos, incident, id).await
    } else if incident.resume {
        let client = Client::builder(TokioExecutor::new()).build_http();
        let service = stack.resume(ResumeLayer::new()).build(&classify, client);
        call_seawall(service, chaos, incident, id).await
    } else {
        let client = Client::builder(TokioExecutor::new()).build_http();
        let service = stack.build(&classify, client);
        call_seawall(service, chaos, incident, id).await
    }
}

fn failure_code(err: &BoxError) -> String {
    Failure::find(&**err).map_or_else(|| "unclassified".to_owned(), |f| f.code().to_string())
}

/// One operation through the seawall stack, read as the application reads
/// it.
async fn call_seawall<S, B>(service: S, chaos: &ChaosHandle, incident: &Incident, id: &str) -> Run
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let body = app::conversation(incident.provider, incident.stream);
    let response = match service.oneshot(request(chaos, incident, id, &body)).await {
        Ok(response) => response,
        Err(err) => {
            let usage = Failure::find(&*err)
                .and_then(Failure::receipt)
                .map(Receipt::usage);
            return Run {
                delivery: Delivery::default(),
                outcome: "error",
                code: Some(failure_code(&err)),
                resumed: 0,
                usage,
            };
        }
    };
    // The provider's own token counts; a stream's fill when its body ends.
    let receipt = response.extensions().get::<Receipt>().cloned();
    let report = response.extensions().get::<StreamReportHandle>().cloned();
    let resumed = response.extensions().get::<Resumed>().cloned();
    let delivery = if incident.stream {
        caller::read_stream(
            None,
            response.into_body(),
            incident.provider,
            incident.caller_stops_after,
            |_| {},
        )
        .await
    } else {
        caller::read_unary(response.into_body(), incident.provider).await
    };
    // Continuations are billed too: the whole operation's usage.
    let receipt = caller::whole_receipt(receipt, resumed.as_ref());
    let resumed = resumed.map_or(0, |r| r.count());
    let usage = receipt.as_ref().map(Receipt::usage);
    if delivery.cancelled {
        // The body was dropped: the guard's report says who closed it.
        let code = report
            .as_ref()
            .and_then(|r| r.get())
            .and_then(|r| r.code)
            .map_or_else(|| "cancelled".to_owned(), |c| c.to_string());
        return Run {
            delivery,
            outcome: "cancelled",
            code: Some(code),
            resumed,
            usage,
        };
    }
    if let Some(err) = &delivery.error {
        let code = Some(failure_code(err));
        return Run {
            delivery,
            outcome: "error",
            code,
            resumed,
            usage,
        };
    }
    let code = delivery
        .finish
        .clone()
        .filter(|f| !FinishKind::for_provider(incident.provider, f).completes_task());
    Run {
        delivery,
        outcome: "ok",
        code,
        resumed,
        usage,
    }
}
