//! A continuation answered in another wire format (a fallback route of
//! another provider), over loopback against seawall-chaos: the route
//! builds the continuation of its own request from the [`Continuation`]
//! the layer marks it with, says the format it answered in with
//! [`AnsweredIn`], and the caller reads one answer in its own format,
//! every token once.

mod formats;

use formats::{chaos, path};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::types::responses::ResponseStreamEvent;
use bytes::Bytes;
use http_body::Body;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seawall_chaos::{ChaosHandle, Fault, REQUEST_ID_HEADER, answer_text};
use seawall_classify::ClassifyLayer;
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Code, Failure, RequestFacts};
use seawall_resume::{AnsweredIn, Continuation, ResumeLayer, ResumeRequestBody, Resumed};
use seawall_stream::StreamGuardLayer;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::{Item, Scanner};
use serde_json::{Value, json};
use tower::{Service, ServiceBuilder, ServiceExt};

type Answer = http::Response<UnsyncBoxBody<Bytes, BoxError>>;

/// The caller's request: an OpenAI caller also asks for the usage chunk
/// (`choices: []`), which a translated continuation must not break.
fn conversation(provider: Provider) -> Value {
    let mut body = formats::conversation(provider);
    if provider == Provider::OpenAi {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn boxed<RB>(response: http::Response<RB>) -> Answer
where
    RB: Body<Data = Bytes> + Send + 'static,
    RB::Error: Into<BoxError>,
{
    response.map(|body| body.map_err(Into::into).boxed_unsync())
}

type Attempt<B> = tower::util::BoxCloneService<http::Request<B>, Answer, BoxError>;

/// One attempt in `provider`'s format: guard, classifier, client.
fn attempt<B>(provider: Provider) -> Attempt<B>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    attempt_delivering(provider, false)
}

/// [`attempt`], its guard delivering a refusal or a filter as the
/// answer's finish when `policy` (a gateway's setting).
fn attempt_delivering<B>(provider: Provider, policy: bool) -> Attempt<B>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    let client: Client<HttpConnector, B> = Client::builder(TokioExecutor::new()).build_http();
    let guard = StreamGuardLayer::interactive()
        .idle_timeout(Duration::from_secs(5))
        .deliver_policy_outcomes(policy);
    let service = ServiceBuilder::new()
        .map_err(Into::<BoxError>::into)
        .map_response(boxed)
        .layer(guard)
        .layer(ClassifyLayer::for_provider(provider))
        .service(client);
    tower::util::BoxCloneService::new(service)
}

/// The original to the primary; a continuation to the other route, which
/// continues its own request in its own format and says so.
#[derive(Clone)]
struct Failover<P, O> {
    primary: P,
    other: O,
    other_provider: Provider,
    other_base: String,
    id: String,
    /// Mark the other route's answers with [`AnsweredIn`].
    mark: bool,
    /// The other route's own request, which it continues.
    template: Value,
}

impl Service<http::Request<ResumeRequestBody<Full<Bytes>>>>
    for Failover<Attempt<ResumeRequestBody<Full<Bytes>>>, Attempt<Full<Bytes>>>
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<ResumeRequestBody<Full<Bytes>>>) -> Self::Future {
        let Some(continuation) = request.extensions().get::<Continuation>().cloned() else {
            return self.primary.call(request);
        };
        let provider = self.other_provider;
        // A continuation the route cannot build is not sent: a verdict on
        // this request (as `seawall chat` answers it).
        let body = match continuation.body(provider, &self.template) {
            Ok(body) => body,
            Err(error) => {
                let failure = Failure::new(Code::BadRequest).with_message(&error.to_string());
                return Box::pin(std::future::ready(Err(failure.into())));
            }
        };
        let mut other = http::Request::post(format!("{}{}", self.other_base, path(provider)))
            .header("content-type", "application/json")
            .header(REQUEST_ID_HEADER, format!("{}/other", self.id))
            // The facts keep what the caller's body said; a Gemini body
            // says nothing of a stream (its path does): the head says it.
            .header("accept", "text/event-stream")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        *other.extensions_mut() = request.into_parts().0.extensions;
        // The facts the layer put in are the caller's request's.
        if let Some(facts) = other.extensions().get::<RequestFacts>() {
            let moved = facts.moved_to(&other);
            other.extensions_mut().insert(moved);
        }
        let mark = self.mark;
        let call = self.other.call(other);
        Box::pin(async move {
            let mut response = call.await?;
            if mark {
                response.extensions_mut().insert(AnsweredIn(provider));
            }
            Ok(response)
        })
    }
}

#[derive(Debug, Default)]
struct Read {
    text: String,
    finish: Option<String>,
    error: Option<BoxError>,
    /// Events of the caller's format that did not decode as JSON, or are
    /// another format's (an Anthropic event name in an OpenAI stream).
    strange: usize,
    /// Anthropic: text block starts, stops, and the indices deltas name.
    starts: usize,
    stops: usize,
    indices: std::collections::BTreeSet<u64>,
    /// Anthropic: each block event's type and index, in order.
    blocks: Vec<(String, u64)>,
    /// OpenAI: `[DONE]` markers, the chunks' ids, and chunks without one.
    done: usize,
    ids: std::collections::BTreeSet<String>,
    without_id: usize,
    /// Responses API: every event's `sequence_number`, the items text
    /// deltas name, and the text the terminal response says whole.
    sequence: Vec<u64>,
    items: std::collections::BTreeSet<String>,
    whole: Option<String>,
    /// Responses API: every event as async-openai's typed reader reads it,
    /// or why it could not.
    typed: Vec<Result<ResponseStreamEvent, String>>,
    resumed: Option<Resumed>,
}

/// The primary scripted with `first` in `caller`'s format, the other
/// route with `then` in its own; read as the caller reads. Gives the
/// read and both servers, for their journals.
async fn run(
    (caller, first): (Provider, &[&str]),
    (other, then): (Provider, &[&str]),
    id: &str,
    mark: bool,
) -> (Read, ChaosHandle, ChaosHandle) {
    let (primary, backup) = routes((caller, first), (other, then)).await;
    let route = attempt::<Full<Bytes>>(other);
    let bases = (primary.base_url(), backup.base_url());
    let read = run_with(&bases, caller, (other, route), id, mark).await;
    (read, primary, backup)
}

/// [`run`], the servers' base URLs (the primary's, the other route's)
/// and the other route's service given.
async fn run_with(
    bases: &(String, String),
    caller: Provider,
    (other, route): (Provider, Attempt<Full<Bytes>>),
    id: &str,
    mark: bool,
) -> Read {
    let template = conversation(other);
    run_with_template(bases, caller, (other, route, template), id, mark).await
}

/// [`run_with`], the other route's own request given.
async fn run_with_template(
    (primary_base, other_base): &(String, String),
    caller: Provider,
    (other, route, template): (Provider, Attempt<Full<Bytes>>, Value),
    id: &str,
    mark: bool,
) -> Read {
    let primary = attempt::<ResumeRequestBody<Full<Bytes>>>(caller);
    let failover = Failover {
        primary,
        other: route,
        other_provider: other,
        other_base: other_base.clone(),
        id: id.to_owned(),
        mark,
        template,
    };
    let service = ServiceBuilder::new()
        .layer(ResumeLayer::new())
        .service(failover);
    let request = http::Request::post(format!("{primary_base}{}", path(caller)))
        .header("content-type", "application/json")
        .header(REQUEST_ID_HEADER, id)
        .body(Full::new(Bytes::from(conversation(caller).to_string())))
        .unwrap();
    let response = service.oneshot(request).await.unwrap();
    let mut read = Read {
        resumed: response.extensions().get::<Resumed>().cloned(),
        ..Read::default()
    };
    let mut body = std::pin::pin!(response.into_body());
    let mut scanner = Scanner::default();
    let mut decoder = Decoder::new(caller);
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Err(error) => {
                read.error = Some(error);
                break;
            }
        };
        scanner
            .feed(&data, |item| {
                if let Item::Event(event) = &item {
                    if event.data == b"[DONE]" {
                        read.done += 1;
                    } else {
                        match serde_json::from_slice::<Value>(event.data) {
                            Ok(json) => {
                                let kind = json.get("type").and_then(Value::as_str);
                                let responses = kind.is_some_and(|k| k.starts_with("response."));
                                let foreign = match caller {
                                    Provider::Anthropic => kind.is_none() || responses,
                                    Provider::OpenAiResponses => !responses,
                                    _ => kind.is_some(),
                                };
                                if caller == Provider::OpenAiResponses {
                                    let typed = serde_json::from_slice(event.data)
                                        .map_err(|e| format!("{kind:?}: {e}"));
                                    read.typed.push(typed);
                                }
                                if let Some(seq) = json["sequence_number"].as_u64() {
                                    read.sequence.push(seq);
                                }
                                if kind == Some("response.output_text.delta") {
                                    read.items
                                        .insert(json["item_id"].as_str().unwrap_or("").to_owned());
                                }
                                if kind == Some("response.completed") {
                                    read.whole = json
                                        .pointer("/response/output/0/content/0/text")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned);
                                }
                                read.strange += usize::from(foreign);
                                match json["type"].as_str() {
                                    Some("content_block_start") => read.starts += 1,
                                    Some("content_block_stop") => read.stops += 1,
                                    Some("content_block_delta") => {
                                        read.indices.insert(json["index"].as_u64().unwrap_or(99));
                                    }
                                    _ => {}
                                }
                                if let Some(block) = kind.filter(|k| k.starts_with("content_block"))
                                {
                                    let index = json["index"].as_u64().unwrap_or(99);
                                    read.blocks.push((block.to_owned(), index));
                                }
                                if let Some(id) = json["id"].as_str() {
                                    read.ids.insert(id.to_owned());
                                } else if caller == Provider::OpenAi {
                                    read.without_id += 1;
                                }
                            }
                            Err(_) => read.strange += 1,
                        }
                    }
                }
                match decoder.decode(item) {
                    Signal::Content { text, finish, .. } => {
                        if let Some(text) = text {
                            read.text.push_str(&text);
                        }
                        if let Some(f) = finish {
                            read.finish = Some(f.reason.into_owned());
                        }
                    }
                    Signal::Finish(f) => read.finish = Some(f.reason.into_owned()),
                    _ => {}
                }
            })
            .unwrap();
    }
    read
}

fn script(chaos: &ChaosHandle, provider: Provider, faults: &[&str]) {
    let faults = faults.iter().map(|f| f.parse::<Fault>().unwrap()).collect();
    chaos.script(provider.as_str(), faults).unwrap();
}

/// Two fault servers: the primary answering in `caller`'s format with
/// `first`, the other route in `other`'s with `then`.
async fn routes(
    (caller, first): (Provider, &[&str]),
    (other, then): (Provider, &[&str]),
) -> (ChaosHandle, ChaosHandle) {
    let (primary, backup) = (chaos().await, chaos().await);
    script(&primary, caller, first);
    script(&backup, other, then);
    (primary, backup)
}

#[tokio::test]
async fn a_continuation_answered_in_another_format_reads_as_the_callers_one_answer() {
    for (caller, other) in [
        (Provider::OpenAi, Provider::Anthropic),
        (Provider::Anthropic, Provider::OpenAi),
        (Provider::OpenAi, Provider::Gemini),
        (Provider::Gemini, Provider::Anthropic),
        (Provider::OpenAiResponses, Provider::Anthropic),
        (Provider::Anthropic, Provider::OpenAiResponses),
    ] {
        let id = format!("{}-{}", caller.as_str(), other.as_str());
        let (read, primary, backup) = run(
            (caller, &["reset_after;tokens=400;total=600"]),
            (other, &["ok;tokens=600"]),
            &id,
            true,
        )
        .await;
        let pair = format!("{} → {}", caller.as_str(), other.as_str());
        assert!(
            read.error.is_none(),
            "{pair}: {:?} {:?}",
            read.resumed.as_ref().map(|r| r.report()),
            backup.journal()
        );
        assert_eq!(read.text, answer_text(600), "{pair}");
        assert_eq!(
            read.strange, 0,
            "{pair}: every event in the caller's format"
        );
        let complete = match caller {
            Provider::Anthropic => "end_turn",
            Provider::Gemini => "STOP",
            Provider::OpenAiResponses => "completed",
            _ => "stop",
        };
        assert_eq!(read.finish.as_deref(), Some(complete), "{pair}");
        // The other route was asked for the rest, in its own format: it
        // wrote only the 200 tokens after the cut.
        let rows = backup.journal();
        assert_eq!(rows.len(), 1, "{pair}");
        assert_eq!(
            Some(rows[0].path.as_str()),
            path(other).split('?').next(),
            "{pair}"
        );
        assert_eq!(rows[0].tokens_written, 200, "{pair}: a continuation");
        assert_eq!(primary.journal().len(), 1, "{pair}");
        let report = read.resumed.unwrap().report();
        assert_eq!(report.resumed(), 1, "{pair}");
        assert_eq!(report.resumes[0].answered_in, Some(other), "{pair}");
        assert_eq!(
            report.finish.as_ref().map(|f| f.kind.completes_task()),
            Some(true),
            "{pair}"
        );
        match caller {
            Provider::Anthropic => {
                // One text block, opened once and closed once.
                assert_eq!((read.starts, read.stops), (1, 1), "{pair}");
                assert_eq!(read.indices.len(), 1, "{pair}");
            }
            Provider::OpenAi => {
                assert_eq!(read.done, 1, "{pair}");
                assert_eq!(read.ids.len(), 1, "{pair}: one completion id");
            }
            Provider::OpenAiResponses => {
                let expected: Vec<u64> = (0..read.sequence.len() as u64).collect();
                assert_eq!(read.sequence, expected, "{pair}: numbered as one stream");
                assert_eq!(read.items.len(), 1, "{pair}: one item");
                assert_eq!(
                    read.whole.as_deref(),
                    Some(answer_text(600).as_str()),
                    "{pair}"
                );
            }
            _ => {}
        }
    }
}

/// A Responses API caller reading the stream into async-openai's typed
/// events reads every one of them, the translated end (its usage whole,
/// with both detail objects) included.
#[tokio::test]
async fn a_translated_responses_stream_reads_as_async_openais_events() {
    for other in [Provider::Anthropic, Provider::OpenAi, Provider::Gemini] {
        let caller = Provider::OpenAiResponses;
        let id = format!("typed-{}", other.as_str());
        let (read, _primary, _backup) = run(
            (caller, &["reset_after;tokens=400;total=600"]),
            (other, &["ok;tokens=600"]),
            &id,
            true,
        )
        .await;
        let pair = format!("{} → {}", caller.as_str(), other.as_str());
        assert!(read.error.is_none(), "{pair}: {:?}", read.error);
        assert_eq!(read.text, answer_text(600), "{pair}");
        assert_eq!(read.resumed.unwrap().report().resumed(), 1, "{pair}");
        let failed: Vec<&String> = read.typed.iter().filter_map(|e| e.as_ref().err()).collect();
        assert!(failed.is_empty(), "{pair}: {failed:#?}");
        let Some(Ok(ResponseStreamEvent::ResponseCompleted(end))) = read.typed.last() else {
            panic!("{pair}: no typed terminal event: {:?}", read.typed.last());
        };
        let usage = end.response.usage.as_ref();
        assert!(
            usage.is_some_and(|u| u.output_tokens > 0),
            "{pair}: the continuation's usage is said: {usage:?}"
        );
    }
}

/// The other route's answer cut in turn: resumed again (on the same
/// route, still in its format), nothing shown twice.
#[tokio::test]
async fn a_translated_continuation_cut_again_is_resumed_again() {
    let (read, _, backup) = run(
        (Provider::OpenAi, &["reset_after;tokens=100;total=300"]),
        (
            Provider::Anthropic,
            &["reset_after;tokens=200;total=300", "ok;tokens=300"],
        ),
        "twice",
        true,
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(300));
    let report = read.resumed.unwrap().report();
    assert_eq!(report.resumed(), 2);
    let written: Vec<u32> = backup.journal().iter().map(|r| r.tokens_written).collect();
    assert_eq!(written, [100, 100]);
}

/// Without the marker the layer reads the other route's answer in the
/// caller's format, finds nothing it can read, and ends with the
/// interruption: never a guess, never a duplicate.
#[tokio::test]
async fn an_unmarked_answer_in_another_format_ends_with_the_interruption() {
    let (read, _, _) = run(
        (Provider::OpenAi, &["reset_after;tokens=40;total=60"]),
        (Provider::Anthropic, &["ok;tokens=60"]),
        "unmarked",
        false,
    )
    .await;
    assert_eq!(read.text, answer_text(40));
    let error = read.error.expect("still cut");
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some(answer_text(40).as_str())
    );
}

/// A continuation that carries a tool call in another format cannot be
/// said to the caller: the text before it is, then the interruption.
#[tokio::test]
async fn a_tool_call_in_another_format_ends_with_the_interruption() {
    let (read, _, _) = run(
        (Provider::OpenAi, &["reset_after;tokens=40;total=60"]),
        (
            Provider::Anthropic,
            &["tool_call_reset_after;tokens=50;total=60"],
        ),
        "tool",
        true,
    )
    .await;
    assert_eq!(read.text, answer_text(50));
    let error = read.error.expect("ends cut");
    let failure = Failure::find(&*error).unwrap();
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some(answer_text(50).as_str()),
        "everything shown is delivered"
    );
    assert_eq!(
        read.resumed.unwrap().report().gave_up,
        Some("another_format")
    );
}

/// The other route repeats the last five delivered words first, as models
/// do: trimmed by its own format's rule, said once in the caller's.
#[tokio::test]
async fn a_repeat_in_another_format_is_trimmed_before_it_is_said() {
    for (caller, other) in [
        (Provider::OpenAi, Provider::Anthropic),
        (Provider::Anthropic, Provider::OpenAi),
    ] {
        let pair = format!("{} → {}", caller.as_str(), other.as_str());
        let (read, _, _) = run(
            (caller, &["reset_after;tokens=40;total=60"]),
            (other, &["repeat_tail;words=5;tokens=60"]),
            "repeat",
            true,
        )
        .await;
        assert!(read.error.is_none(), "{pair}: {:?}", read.error);
        assert_eq!(read.text, answer_text(60), "{pair}");
        let report = read.resumed.unwrap().report();
        assert_eq!(report.resumed(), 1, "{pair}");
        assert_eq!(
            report.resumes[0].trimmed_chars,
            " w36 w37 w38 w39 w40".len() as u64,
            "{pair}"
        );
    }
}

/// An Anthropic model that refuses prefill (Claude 4.6 and later answer
/// it with a 400) on the other route: the next continuation asks it in a
/// user turn, as the layer does for an Anthropic caller, and the answer
/// is whole.
#[tokio::test]
async fn a_prefill_refused_on_another_format_is_asked_in_a_user_turn_next() {
    let (primary, backup) = routes(
        (Provider::OpenAi, &["reset_after;tokens=40;total=60"]),
        (Provider::Anthropic, &["ok;tokens=60"]),
    )
    .await;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let chaos_route = attempt::<Full<Bytes>>(Provider::Anthropic);
    // A server that refuses a prefill and continues the text of the
    // assistant turn a user turn asks it to continue (played by chaos,
    // given that text as the prefill it continues).
    let refusing = tower::service_fn(move |request: http::Request<Full<Bytes>>| {
        let route = chaos_route.clone();
        let seen = seen.clone();
        async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let mut json: Value = serde_json::from_slice(&bytes)?;
            let messages = json["messages"].as_array_mut().unwrap();
            let last = messages.last().unwrap().clone();
            seen.lock()
                .unwrap()
                .push(last["role"].as_str().unwrap().to_owned());
            if last["role"] == "assistant" {
                let refused = Failure::new(Code::BadRequest)
                    .with_status(400)
                    .with_message("Prefilling assistant messages is not supported for this model.");
                return Err(Box::new(refused) as BoxError);
            }
            messages.pop();
            let turn = messages.last_mut().unwrap();
            assert_eq!(turn["role"], "assistant", "the text is the model's turn");
            let delivered = turn["content"].as_str().unwrap().trim_end().to_owned();
            turn["content"] = json!(delivered);
            let request =
                http::Request::from_parts(parts, Full::new(Bytes::from(json.to_string())));
            route.oneshot(request).await
        }
    });
    let read = run_with(
        &(primary.base_url(), backup.base_url()),
        Provider::OpenAi,
        (
            Provider::Anthropic,
            tower::util::BoxCloneService::new(refusing),
        ),
        "refused",
        true,
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(60));
    assert_eq!(*asked.lock().unwrap(), ["assistant", "user"]);
    let report = read.resumed.unwrap().report();
    assert_eq!(report.resumes.len(), 2);
    assert_eq!(report.resumes[0].failed, Some(Code::BadRequest));
    assert!(report.resumes[1].spliced);
}

/// A server that answers its n-th connection with `replies[n]`, raw: a 200
/// event stream of those bytes, each part its own write, then a clean
/// close (no terminator added, none checked).
async fn hostile(replies: Vec<Vec<String>>) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        for parts in replies {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let _ = seawall_test::raw::read_request(&mut socket).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        connection: close\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            for part in parts {
                let _ = socket.write_all(part.as_bytes()).await;
                let _ = socket.flush().await;
                // Each part its own frame to the client.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = socket.shutdown().await;
        }
    });
    base
}

/// A `caller` answer from the hostile server at `primary`, continued
/// (marked) by a fault server that answers six tokens in `other`'s
/// format.
async fn continued_on_chaos(primary: String, caller: Provider, other: Provider, id: &str) -> Read {
    let backup = chaos().await;
    script(&backup, other, &["ok;tokens=6"]);
    let route = attempt::<Full<Bytes>>(other);
    run_with(
        &(primary, backup.base_url()),
        caller,
        (other, route),
        id,
        true,
    )
    .await
}

/// An OpenAI chunk of completion `id` with `choice` as its one choice.
fn openai_chunk(id: &str, choice: Value) -> String {
    let chunk = json!({"id": id, "object": "chat.completion.chunk", "created": 7,
        "model": "gpt-x", "choices": [choice]});
    format!("data: {chunk}\n\n")
}

/// An OpenAI chunk that says `text`.
fn openai_text(id: &str, text: &str) -> String {
    openai_chunk(
        id,
        json!({"index": 0, "delta": {"content": text}, "finish_reason": null}),
    )
}

/// The report's finish, as the record says it.
fn finish_kind(read: &Read) -> Option<seawall_core::FinishKind> {
    let report = read.resumed.as_ref()?.report();
    report.finish.as_ref().map(|f| f.kind)
}

/// A Gemini continuation whose last event ends the stream without its
/// blank line: Google's reader (and the guard) take it as an event, so
/// its text is said, not dropped under a `stop`.
#[tokio::test]
async fn a_gemini_continuations_unended_last_event_is_said() {
    let primary = chaos().await;
    script(
        &primary,
        Provider::OpenAi,
        &["reset_after;tokens=4;total=6"],
    );
    let event = |text: &str, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": [{"text": text}], "role": "model"},
            "index": 0});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        json!({"candidates": [candidate], "modelVersion": "gemini-x"}).to_string()
    };
    let other = hostile(vec![vec![
        format!("data: {}\r\n\r\n", event(" w5", None)),
        format!("data: {}", event(" w6", Some("STOP"))),
    ]])
    .await;
    let route = attempt::<Full<Bytes>>(Provider::Gemini);
    let read = run_with(
        &(primary.base_url(), other),
        Provider::OpenAi,
        (Provider::Gemini, route),
        "gemini-unended",
        true,
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(6), "no token dropped");
    assert_eq!(read.finish.as_deref(), Some("stop"));
    assert_eq!(read.done, 1);
    assert_eq!(read.strange, 0);
}

/// An Anthropic caller that saw its text block closed before the cut:
/// the continuation's text goes in a block of its own, and that block is
/// the one its stop closes.
#[tokio::test]
async fn text_after_a_closed_block_is_closed_at_its_own_index() {
    let event = |name: &str, json: Value| format!("event: {name}\ndata: {json}\n\n");
    let mut cut = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude-x", "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for word in ["w1", " w2", " w3", " w4"] {
        cut.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": word}}),
        ));
    }
    // Closed, then cut before its `message_delta`.
    cut.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    let primary = hostile(vec![vec![cut.concat()]]).await;
    let read = continued_on_chaos(
        primary,
        Provider::Anthropic,
        Provider::OpenAi,
        "closed-block",
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(6));
    assert_eq!(read.finish.as_deref(), Some("end_turn"));
    // Every delta and stop names the block open at the time; each block
    // opened once and closed once.
    let mut open = None;
    for (kind, index) in &read.blocks {
        match kind.as_str() {
            "content_block_start" => {
                assert_eq!(open, None, "{:?}", read.blocks);
                open = Some(*index);
            }
            "content_block_delta" => assert_eq!(open, Some(*index), "{:?}", read.blocks),
            _ => assert_eq!(open.take(), Some(*index), "{:?}", read.blocks),
        }
    }
    assert_eq!(open, None, "{:?}", read.blocks);
    assert_eq!((read.starts, read.stops), (2, 2), "{:?}", read.blocks);
}

/// An OpenAI continuation that streams a refusal (`delta.refusal`) and
/// ends it with `stop`, its guard delivering policy outcomes: the caller
/// is told a refusal, never a normal finish.
#[tokio::test]
async fn a_refusal_in_another_format_is_said_as_a_refusal() {
    let primary = chaos().await;
    script(
        &primary,
        Provider::Anthropic,
        &["reset_after;tokens=4;total=6"],
    );
    let id = "chatcmpl-refused";
    let other = hostile(vec![vec![
        [
            openai_chunk(
                id,
                json!({"index": 0, "delta": {"role": "assistant", "content": ""},
                    "finish_reason": null}),
            ),
            openai_text(id, " w5"),
            openai_chunk(
                id,
                json!({"index": 0, "delta": {"refusal": "I can't help with that."},
                    "finish_reason": null}),
            ),
            openai_chunk(
                id,
                json!({"index": 0, "delta": {}, "finish_reason": "stop"}),
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat(),
    ]])
    .await;
    let route = attempt_delivering::<Full<Bytes>>(Provider::OpenAi, true);
    let read = run_with(
        &(primary.base_url(), other),
        Provider::Anthropic,
        (Provider::OpenAi, route),
        "refused",
        true,
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(5));
    assert_eq!(read.finish.as_deref(), Some("refusal"));
    assert_eq!(finish_kind(&read), Some(seawall_core::FinishKind::Refused));
}

/// An OpenAI stream that opens with a comment (OpenRouter's
/// `: OPENROUTER PROCESSING`) before its first chunk: the continued
/// chunks still take the original's id, creation time and model.
#[tokio::test]
async fn chunks_said_after_a_leading_comment_take_the_originals_id() {
    let id = "gen-or-1";
    let mut chunks = vec![openai_chunk(
        id,
        json!({"index": 0, "delta": {"role": "assistant", "content": ""},
            "finish_reason": null}),
    )];
    for word in ["w1", " w2", " w3", " w4"] {
        chunks.push(openai_text(id, word));
    }
    let primary = hostile(vec![vec![
        ": OPENROUTER PROCESSING\n\n".to_owned(),
        chunks.concat(),
    ]])
    .await;
    let read = continued_on_chaos(
        primary,
        Provider::OpenAi,
        Provider::Anthropic,
        "comment-first",
    )
    .await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.text, answer_text(6));
    assert_eq!(read.ids.iter().collect::<Vec<_>>(), [id]);
    assert_eq!(read.without_id, 0, "every chunk names its completion");
}

/// A route whose own request must not be continued (extended thinking),
/// or whose budget the delivered text spent: it builds no continuation,
/// asks its server nothing, and the record says why as the layer says it
/// for the caller's own request.
#[tokio::test]
async fn a_route_that_declines_to_continue_is_given_up_for_its_reason() {
    let anthropic = |extra: Value| {
        let mut template = conversation(Provider::Anthropic);
        if let (Some(template), Value::Object(extra)) = (template.as_object_mut(), extra) {
            template.extend(extra);
        }
        template
    };
    for (template, reason) in [
        (
            anthropic(json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})),
            "extended_thinking",
        ),
        (anthropic(json!({"max_tokens": 10})), "max_tokens"),
    ] {
        let (primary, backup) = routes(
            (Provider::OpenAi, &["reset_after;tokens=40;total=60"]),
            (Provider::Anthropic, &["ok;tokens=60"]),
        )
        .await;
        let route = attempt::<Full<Bytes>>(Provider::Anthropic);
        let read = run_with_template(
            &(primary.base_url(), backup.base_url()),
            Provider::OpenAi,
            (Provider::Anthropic, route, template),
            reason,
            true,
        )
        .await;
        assert_eq!(read.text, answer_text(40), "{reason}");
        let error = read.error.expect("still cut");
        let failure = Failure::find(&*error).unwrap();
        assert_eq!(failure.code(), Code::StreamInterrupted, "{reason}");
        assert_eq!(
            failure.interrupted().unwrap().delivered_text.as_deref(),
            Some(answer_text(40).as_str()),
            "{reason}"
        );
        let report = read.resumed.unwrap().report();
        assert_eq!(report.gave_up, Some(reason));
        assert!(backup.journal().is_empty(), "{reason}: nothing asked");
    }
}
