//! `seawall replay`: real failure stories, replayed against a real server
//! through two client stacks side by side.
//!
//! A seawall-chaos server runs in-process on loopback and plays each
//! incident's faults. The **naive** stack is tower's own retry and timeout
//! with a policy that retries every error, and a caller that restarts a
//! failed stream — the configuration behind these incidents. The
//! **seawall** stack is the assembled preset. Every figure in a row comes
//! from running both: upstream attempts, billed generations and routes
//! from the chaos server's journal, duplicated text and tokens from what
//! the caller actually received, elapsed time from the clock.
//!
//! Incidents marked `resume` run the seawall stack with
//! [`Stack::resume`]: an interruption after content is continued in the
//! same body by `seawall::resume`'s layer, and the row says whether every
//! token reached the caller exactly once. Incident 8b runs both ways: as
//! the plain preset (the interruption surfaces with its prefix) and, as
//! `8b+`, resumed.
//!
//! Time is scaled: one incident second lasts `scale` real milliseconds
//! (default 1), so a 600 s timeout takes 0.6 s. Provider hints on the wire
//! (Retry-After) keep their real meaning.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::HeaderValue;
use http_body::Body;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::replay::ReplayBody;
use seawall::core::{BoxError, Failure, FinishKind, RouteId};
use seawall::fallback::FallbackLayer;
use seawall::resume::{ResumeLayer, Resumed};
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::{StreamGuardLayer, StreamReportHandle};
use seawall_chaos::{
    ChaosHandle, FAULT_HEADER, Fault, JournalEntry, REQUEST_ID_HEADER, repeats_a_token,
    token_numbers,
};
use serde::Serialize;
use tower::{Service, ServiceExt};

use crate::app;
use crate::caller::{self, Delivery};
use crate::naive::{self, NaiveClient, NaiveSettings, StatusError};

/// One incident: what the server does, and what the caller does.
#[derive(Debug, Clone)]
pub struct Incident {
    /// Its number in the table.
    pub number: &'static str,
    /// A stable key (journal ids, JSON rows).
    pub key: &'static str,
    /// What happened, in a few words.
    pub title: &'static str,
    /// Whose wire format.
    pub provider: Provider,
    /// A streamed request?
    pub stream: bool,
    /// Faults for the first attempts on the provider's route, in order.
    pub script: &'static [&'static str],
    /// The fault of every attempt after the script (none: healthy).
    pub every_attempt: Option<&'static str>,
    /// seawall gets a fallback route.
    pub fallback: bool,
    /// The caller stops reading after this many content events.
    pub caller_stops_after: Option<u64>,
    /// seawall resumes an interruption after content (`Stack::resume`).
    pub resume: bool,
}

/// The incidents, in the order of the table.
pub fn incidents() -> Vec<Incident> {
    let base = Incident {
        number: "",
        key: "",
        title: "",
        provider: Provider::OpenAi,
        stream: true,
        script: &[],
        every_attempt: None,
        fallback: false,
        caller_stops_after: None,
        resume: false,
    };
    vec![
        Incident {
            number: "1",
            key: "quota_wall",
            title: "429, Retry-After: 48489",
            stream: false,
            every_attempt: Some("status;code=429;retry_after=48489"),
            ..base.clone()
        },
        Incident {
            number: "2",
            key: "silent_stream",
            title: "headers, then zero bytes",
            every_attempt: Some("hang_after_headers"),
            fallback: true,
            ..base.clone()
        },
        Incident {
            number: "3",
            key: "reset_after_400",
            title: "stream reset after 400 tokens",
            script: &["reset_after;tokens=400;total=600"],
            every_attempt: Some("ok;tokens=600"),
            resume: true,
            ..base.clone()
        },
        Incident {
            number: "4",
            key: "empty_200",
            title: "HTTP 200, no content",
            stream: false,
            script: &["empty"],
            ..base.clone()
        },
        Incident {
            number: "5",
            key: "frame_then_eof",
            title: "one frame, then EOF",
            provider: Provider::Anthropic,
            script: &["frame_then_eof"],
            ..base.clone()
        },
        Incident {
            number: "6",
            key: "context_length",
            title: "400 context_length_exceeded",
            stream: false,
            every_attempt: Some("status;code=400;kind=context_length"),
            ..base.clone()
        },
        Incident {
            number: "7",
            key: "refusal",
            title: "a refusal",
            provider: Provider::Anthropic,
            every_attempt: Some("refusal"),
            ..base.clone()
        },
        Incident {
            number: "8a",
            key: "overloaded_before_content",
            title: "overloaded_error before content",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=0"],
            ..base.clone()
        },
        Incident {
            number: "8b",
            key: "overloaded_after_content",
            title: "overloaded_error after 50 tokens",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=50;total=200"],
            every_attempt: Some("ok;tokens=200"),
            ..base.clone()
        },
        Incident {
            number: "8b+",
            key: "overloaded_after_content_resumed",
            title: "overloaded after 50, resumed",
            provider: Provider::Anthropic,
            script: &["stream_error_after;tokens=50;total=200"],
            every_attempt: Some("ok;tokens=200"),
            resume: true,
            ..base.clone()
        },
        Incident {
            number: "9",
            key: "brief_503",
            title: "a brief 503, then success",
            provider: Provider::Gemini,
            script: &["status;code=503"],
            ..base.clone()
        },
        Incident {
            number: "10",
            key: "caller_cancels",
            title: "the caller cancels mid-stream",
            every_attempt: Some("ok;tokens=400;delay_ms=1"),
            caller_stops_after: Some(20),
            ..base
        },
    ]
}

/// One row of the table: one incident through one stack.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The incident's key.
    pub incident: String,
    /// The incident's number in the table.
    pub number: String,
    /// `naive` or `seawall`.
    pub stack: &'static str,
    /// Upstream attempts, from the server's journal.
    pub attempts: usize,
    /// Routes that received attempts, in first-use order.
    pub routes: Vec<String>,
    /// Elapsed, in incident seconds.
    pub elapsed_s: f64,
    /// Whether the caller was shown any part of the answer twice.
    pub duplicated: bool,
    /// Generations the provider started (journal rows answered 200).
    pub billed: usize,
    /// Content tokens the caller received.
    pub tokens: usize,
    /// `ok`, `error` or `cancelled`.
    pub outcome: &'static str,
    /// The failure code (seawall's, or the naive stack's own error), or the
    /// finish reason of a delivered answer that is not complete.
    pub code: Option<String>,
    /// Continuations the resume layer spliced into the answer.
    pub resumed: usize,
}

/// Runs every incident through both stacks, in order.
pub async fn run(chaos: &ChaosHandle, scale: f64, mut on_row: impl FnMut(&Row)) -> Vec<Row> {
    let mut rows = Vec::new();
    for incident in incidents() {
        for stack in [StackKind::Naive, StackKind::Seawall] {
            let row = run_incident(chaos, &incident, stack, scale).await;
            on_row(&row);
            rows.push(row);
        }
    }
    rows
}

/// Which client stack a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    /// tower retry + timeout, retrying everything, and a restarting caller.
    Naive,
    /// The seawall preset.
    Seawall,
}

impl StackKind {
    /// `naive` or `seawall`.
    pub const fn as_str(self) -> &'static str {
        match self {
            StackKind::Naive => "naive",
            StackKind::Seawall => "seawall",
        }
    }
}

/// Incident seconds to real time.
#[derive(Debug, Clone, Copy)]
struct Clock {
    ms_per_s: f64,
}

impl Clock {
    fn secs(self, incident_seconds: f64) -> Duration {
        Duration::from_secs_f64(incident_seconds * self.ms_per_s / 1000.0)
    }

    fn incident_seconds(self, real: Duration) -> f64 {
        (real.as_secs_f64() * 1000.0 / self.ms_per_s * 10.0).round() / 10.0
    }
}

/// What a stack run produced, before the journal is read.
struct Run {
    delivery: Delivery,
    outcome: &'static str,
    code: Option<String>,
    resumed: usize,
}

/// Runs one incident through one stack and reads the journal for it.
pub async fn run_incident(
    chaos: &ChaosHandle,
    incident: &Incident,
    stack: StackKind,
    scale: f64,
) -> Row {
    let clock = Clock { ms_per_s: scale };
    let route = incident.provider.as_str();
    let faults = incident
        .script
        .iter()
        .map(|f| f.parse::<Fault>().expect("incident faults are valid"))
        .collect();
    chaos.script(route, faults).expect("a provider route");
    let id = format!("{}/{}", incident.key, stack.as_str());
    let started = Instant::now();
    let run = match stack {
        StackKind::Naive => run_naive(chaos, incident, &id, clock).await,
        StackKind::Seawall => run_seawall(chaos, incident, &id, clock).await,
    };
    let elapsed = started.elapsed();
    chaos.script(route, Vec::new()).expect("a provider route");
    // Every attempt of the operation (the fallback's id is `{id}:fallback`),
    // once the server has seen each end.
    let journal = chaos
        .settled_journal(Duration::from_secs(2), |row| {
            row.request_id
                .as_deref()
                .is_some_and(|r| r.split(':').next() == Some(id.as_str()))
        })
        .await;
    let mut routes = Vec::new();
    for entry in &journal {
        let name = route_of(entry);
        if !routes.iter().any(|r| r == name) {
            routes.push(name.to_owned());
        }
    }
    Row {
        incident: incident.key.to_owned(),
        number: incident.number.to_owned(),
        stack: stack.as_str(),
        attempts: journal.len(),
        routes,
        elapsed_s: clock.incident_seconds(elapsed),
        duplicated: repeats_a_token(&run.delivery.text),
        billed: journal.iter().filter(|e| e.status == Some(200)).count(),
        tokens: token_numbers(&run.delivery.text).count(),
        outcome: run.outcome,
        code: run.code,
        resumed: run.resumed,
    }
}

fn route_of(entry: &JournalEntry) -> &'static str {
    match entry.request_id.as_deref() {
        Some(id) if id.ends_with(":fallback") => "fallback",
        _ => "primary",
    }
}

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

async fn run_naive(chaos: &ChaosHandle, incident: &Incident, id: &str, clock: Clock) -> Run {
    let client: NaiveClient = Client::builder(TokioExecutor::new()).build_http();
    let settings = NaiveSettings {
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

async fn run_seawall(chaos: &ChaosHandle, incident: &Incident, id: &str, clock: Clock) -> Run {
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
            return Run {
                delivery: Delivery::default(),
                outcome: "error",
                code: Some(failure_code(&err)),
                resumed: 0,
            };
        }
    };
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
    let resumed = resumed.map_or(0, |r| r.count());
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
        };
    }
    if let Some(err) = &delivery.error {
        let code = Some(failure_code(err));
        return Run {
            delivery,
            outcome: "error",
            code,
            resumed,
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
    }
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<3} {:<33} {:<8} {:>8}  {:<17} {:>9}  {:<4} {:>6} {:>6}  {:<9} {}",
        "#",
        "incident",
        "stack",
        "attempts",
        "routes",
        "elapsed_s",
        "dup",
        "billed",
        "tokens",
        "outcome",
        "code"
    )
}

/// One row of the table.
pub fn table_line(row: &Row) -> String {
    let title = incidents()
        .into_iter()
        .find(|i| i.key == row.incident)
        .map_or(row.incident.as_str(), |i| i.title);
    format!(
        "{:<3} {:<33} {:<8} {:>8}  {:<17} {:>9.1}  {:<4} {:>6} {:>6}  {:<9} {}",
        row.number,
        title,
        row.stack,
        row.attempts,
        row.routes.join(","),
        row.elapsed_s,
        if row.duplicated { "yes" } else { "no" },
        row.billed,
        row.tokens,
        row.outcome,
        row.code.as_deref().unwrap_or("-"),
    )
}

#[cfg(test)]
mod tests {
    use seawall_chaos::ChaosServer;

    use super::*;

    async fn row(key: &str) -> Row {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let incident = incidents().into_iter().find(|i| i.key == key).unwrap();
        run_incident(&chaos, &incident, StackKind::Seawall, 5.0).await
    }

    /// Incidents 3 and 8b with the resume layer: one answer, every token
    /// once, one continuation.
    #[tokio::test]
    async fn resumed_incidents_deliver_every_token_once() {
        for (key, tokens) in [
            ("reset_after_400", 600),
            ("overloaded_after_content_resumed", 200),
        ] {
            let row = row(key).await;
            assert!(!row.duplicated, "{key}");
            assert_eq!(
                (row.outcome, row.tokens, row.attempts, row.resumed),
                ("ok", tokens, 2, 1),
                "{key}"
            );
            assert_eq!(row.billed, 2, "{key}");
        }
        // Without the layer 8b surfaces with its prefix.
        let row = row("overloaded_after_content").await;
        assert_eq!((row.outcome, row.tokens, row.resumed), ("error", 50, 0));
    }
}
