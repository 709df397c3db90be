//! ResumeLayer over loopback against seawall-chaos: the caller reads one
//! answer, every token exactly once, through the layer's body.

mod common;
mod formats;

use common::quick_ladder;
use formats::{chaos, conversation, path};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use seawall_chaos::{
    ChaosHandle, FAULT_HEADER, Fault, REQUEST_ID_HEADER, answer_text, repeats_a_token,
};
use seawall_classify::ClassifyLayer;
use seawall_core::provider::Provider;
use seawall_core::{BoxError, Code, Deadline, Failure, Receipt};
use seawall_resume::{OpenAiStyle, ResumeLayer, ResumeReport, Resumed};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use seawall_stream::StreamGuardLayer;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::Scanner;
use serde_json::{Value, json};
use tower::{ServiceBuilder, ServiceExt};

/// What the caller read.
#[derive(Debug, Default)]
struct Read {
    text: String,
    /// Events that open a message (role chunk, `message_start`, …).
    openings: usize,
    /// In-stream error events the caller was shown.
    error_events: usize,
    undecodable: usize,
    finish: Option<String>,
    error: Option<BoxError>,
    report: Option<ResumeReport>,
    /// The response's own receipt: the answer the continuations extend.
    receipt: Option<Receipt>,
    upstream: usize,
    /// Responses API: every event's `sequence_number`, and the items text
    /// deltas (and whole items) named.
    sequence: Vec<u64>,
    items: std::collections::BTreeSet<String>,
    /// Anthropic: the block index of every text delta.
    indices: std::collections::BTreeSet<u64>,
    /// Responses API: the text each event that says the text whole
    /// claims (`output_text.done`, `content_part.done`, `output_item.done`,
    /// the terminal response's output), and the response ids named.
    whole: Vec<String>,
    response_ids: std::collections::BTreeSet<String>,
    /// Responses API: the id `response.created` named, and the one the
    /// terminal response (`completed`, `incomplete`, `failed`) named.
    opening_id: Option<String>,
    terminal_id: Option<String>,
}

impl Read {
    fn failure(&self) -> Option<&Failure> {
        self.error.as_ref().and_then(|e| Failure::find(&**e))
    }
}

struct Setup {
    provider: Provider,
    body: Value,
    /// Faults for the first attempts on the route, in order.
    script: Vec<&'static str>,
    /// The fault of every attempt after the script.
    header: Option<&'static str>,
    layer: ResumeLayer,
    /// The retry ladder under the layer.
    ladder: RetryBudgetLayer,
    deadline: Option<Duration>,
    /// The caller stops after this many content events.
    stop_after: Option<usize>,
    idle: Duration,
}

impl Setup {
    fn new(provider: Provider, script: &[&'static str]) -> Self {
        Setup {
            provider,
            body: conversation(provider),
            script: script.to_vec(),
            header: None,
            layer: ResumeLayer::new(),
            ladder: quick_ladder(),
            deadline: None,
            stop_after: None,
            idle: Duration::from_secs(5),
        }
    }

    async fn run(self, chaos: &ChaosHandle, id: &str) -> Read {
        let route = match self.provider {
            Provider::OpenAiResponses => "openai_responses",
            p => p.as_str(),
        };
        let faults = self
            .script
            .iter()
            .map(|f| f.parse::<Fault>().unwrap())
            .collect();
        chaos.script(route, faults).unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http();
        let service = ServiceBuilder::new()
            .layer(self.layer)
            .layer(self.ladder)
            .layer(StreamGuardLayer::interactive().idle_timeout(self.idle))
            .layer(ClassifyLayer::for_provider(self.provider))
            .service(client);
        let mut builder =
            http::Request::post(format!("{}{}", chaos.base_url(), path(self.provider)))
                .header("content-type", "application/json")
                .header(REQUEST_ID_HEADER, id);
        if let Some(fault) = self.header {
            builder = builder.header(FAULT_HEADER, fault);
        }
        let mut request = builder
            .body(Full::new(Bytes::from(self.body.to_string())))
            .unwrap();
        if let Some(d) = self.deadline {
            request.extensions_mut().insert(Deadline::after(d));
        }
        let mut read = match service.oneshot(request).await {
            Ok(response) => {
                let handle = response.extensions().get::<Resumed>().cloned();
                let receipt = response.extensions().get::<Receipt>().cloned();
                let mut read =
                    read_stream(self.provider, response.into_body(), self.stop_after).await;
                read.report = handle.map(|h| h.report());
                read.receipt = receipt;
                read
            }
            Err(error) => Read {
                error: Some(error),
                ..Read::default()
            },
        };
        let journal = chaos
            .settled_journal(Duration::from_secs(2), |row| {
                row.request_id.as_deref() == Some(id)
            })
            .await;
        read.upstream = journal.len();
        read
    }
}

/// Reads the body as a strict client would: every event must decode.
async fn read_stream<B>(provider: Provider, body: B, stop_after: Option<usize>) -> Read
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut scanner = Scanner::default();
    let mut decoder = Decoder::new(provider);
    let mut read = Read::default();
    let mut events = 0;
    loop {
        if stop_after.is_some_and(|n| events >= n) {
            break;
        }
        match body.frame().await {
            None => break,
            Some(Err(error)) => {
                read.error = Some(error.into());
                break;
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                scanner
                    .feed(&data, |item| {
                        if let seawall_stream::sse::Item::Event(event) = item {
                            let opening = event.name == b"message_start"
                                || event.name == b"response.created"
                                || (provider == Provider::OpenAi
                                    && memchr_find(event.data, b"\"role\":\"assistant\""));
                            read.openings += usize::from(opening);
                            if let Ok(json) = serde_json::from_slice::<Value>(event.data) {
                                if let Some(seq) = json["sequence_number"].as_u64() {
                                    read.sequence.push(seq);
                                }
                                if json["type"] == "response.output_text.delta" {
                                    read.items
                                        .insert(json["item_id"].as_str().unwrap_or("").to_owned());
                                }
                                // The message item's id where a whole item
                                // is said: the deltas' item's.
                                let item = match json["type"].as_str().unwrap_or("") {
                                    "response.output_item.done" => json.pointer("/item/id"),
                                    "response.completed" => json.pointer("/response/output/0/id"),
                                    _ => None,
                                };
                                if let Some(id) = item.and_then(Value::as_str) {
                                    read.items.insert(id.to_owned());
                                }
                                if json["type"] == "content_block_delta" {
                                    read.indices.insert(json["index"].as_u64().unwrap_or(99));
                                }
                                let claimed = match json["type"].as_str().unwrap_or("") {
                                    "response.output_text.done" => json.pointer("/text"),
                                    "response.content_part.done" => json.pointer("/part/text"),
                                    "response.output_item.done" => {
                                        json.pointer("/item/content/0/text")
                                    }
                                    "response.completed" => {
                                        json.pointer("/response/output/0/content/0/text")
                                    }
                                    _ => None,
                                };
                                if let Some(text) = claimed.and_then(Value::as_str) {
                                    read.whole.push(text.to_owned());
                                }
                                if let Some(id) =
                                    json.pointer("/response/id").and_then(Value::as_str)
                                {
                                    read.response_ids.insert(id.to_owned());
                                    match json["type"].as_str().unwrap_or("") {
                                        "response.created" => read.opening_id = Some(id.to_owned()),
                                        "response.completed"
                                        | "response.incomplete"
                                        | "response.failed" => {
                                            read.terminal_id = Some(id.to_owned())
                                        }
                                        _ => {}
                                    }
                                }
                            }
                        }
                        match decoder.decode(item) {
                            Signal::Content { text, finish, .. } => {
                                events += 1;
                                if let Some(text) = text {
                                    read.text.push_str(&text);
                                }
                                if let Some(f) = finish {
                                    read.finish = Some(f.reason.into_owned());
                                }
                            }
                            Signal::Finish(f) => read.finish = Some(f.reason.into_owned()),
                            Signal::Error(_) => read.error_events += 1,
                            Signal::Undecodable(_) => read.undecodable += 1,
                            _ => {}
                        }
                    })
                    .unwrap();
            }
        }
    }
    read
}

fn memchr_find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn assert_whole(read: &Read, tokens: u32) {
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.undecodable, 0);
    assert_eq!(read.error_events, 0, "an error event was shown");
    assert!(!repeats_a_token(&read.text), "a token was shown twice");
    assert_eq!(read.text, answer_text(tokens));
}

#[tokio::test]
async fn a_reset_stream_is_resumed_in_the_same_body_in_every_wire_format() {
    let chaos = chaos().await;
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let read = Setup::new(
            provider,
            &["reset_after;tokens=400;total=600", "ok;tokens=600"],
        )
        .run(&chaos, &format!("reset/{}", provider.as_str()))
        .await;
        assert_whole(&read, 600);
        assert_eq!(read.upstream, 2, "{}", provider.as_str());
        let report = read.report.unwrap();
        assert_eq!(report.resumed(), 1, "{}", provider.as_str());
        let resume = &report.resumes[0];
        assert_eq!(resume.attempt, 1);
        assert_eq!(resume.cause, Code::Transport);
        assert_eq!(resume.delivered_chars, answer_text(400).len() as u64);
        assert!(resume.route.is_some());
        assert_eq!(
            report.finish.as_ref().map(|f| f.kind.completes_task()),
            Some(true)
        );
        if provider != Provider::Gemini {
            assert_eq!(read.openings, 1, "{}: one preamble", provider.as_str());
        }
        if provider == Provider::Anthropic {
            assert_eq!(read.indices.len(), 1, "one text block");
        }
    }
}

#[tokio::test]
async fn the_responses_api_reads_as_one_numbered_stream() {
    let chaos = chaos().await;
    let read = Setup::new(
        Provider::OpenAiResponses,
        &["reset_after;tokens=40;total=60", "ok;tokens=60"],
    )
    .run(&chaos, "responses")
    .await;
    assert_whole(&read, 60);
    assert_eq!(read.upstream, 2);
    assert_eq!(read.report.as_ref().unwrap().resumed(), 1);
    assert_eq!(read.openings, 1, "one response.created");
    assert_eq!(read.items.len(), 1, "one item: {:?}", read.items);
    let expected: Vec<u64> = (0..read.sequence.len() as u64).collect();
    assert_eq!(read.sequence, expected, "numbered as one stream");
    assert_says_the_whole_answer(&read, 60, 4);
}

/// The Responses API's events that say the text whole (and the terminal
/// response an SDK's final response is: openai-python's
/// `get_final_response().output_text`) say the caller's whole text, not
/// the last continuation's part. `events` of them: the four, or only the
/// terminal response where the cut fell before the text's `*.done` events
/// and the continuation wrote none. The request stores its responses (the
/// API's default): the terminal response is the last continuation's own,
/// the stored response that holds the whole answer, the one to chain the
/// next turn from (`previous_response_id`); the opening events name the
/// original's.
fn assert_says_the_whole_answer(read: &Read, tokens: u32, events: usize) {
    assert_eq!(read.whole.len(), events, "{:?}", read.whole);
    for text in &read.whole {
        assert_eq!(*text, answer_text(tokens));
    }
    assert_eq!(read.response_ids.len(), 2, "{:?}", read.response_ids);
    assert!(read.opening_id.is_some() && read.terminal_id.is_some());
    assert_ne!(read.opening_id, read.terminal_id);
}

/// A request that stores no response (`"store": false`) has no stored
/// response to chain from: the answer keeps the one id it opened with,
/// the terminal response's too.
#[tokio::test]
async fn an_unstored_responses_answer_keeps_its_one_id() {
    let chaos = chaos().await;
    let mut setup = Setup::new(
        Provider::OpenAiResponses,
        &["reset_after;tokens=40;total=60", "ok;tokens=60"],
    );
    setup.body["store"] = Value::Bool(false);
    let read = setup.run(&chaos, "responses-unstored").await;
    assert_whole(&read, 60);
    assert_eq!(read.report.as_ref().unwrap().resumed(), 1);
    assert_eq!(read.response_ids.len(), 1, "{:?}", read.response_ids);
    assert_eq!(read.opening_id, read.terminal_id);
    assert!(read.terminal_id.is_some());
}

/// A continuation cut within its first few tokens — still being lined
/// up — and continued again: the second continuation still reads as the
/// rest of the one stream (one item, one run of sequence numbers).
#[tokio::test]
async fn a_continuation_cut_while_lining_up_is_continued_as_one_stream() {
    let chaos = chaos().await;
    let read = Setup::new(
        Provider::OpenAiResponses,
        &[
            "reset_after;tokens=40;total=60",
            "reset_after;tokens=42;total=60",
            "ok;tokens=60",
        ],
    )
    .run(&chaos, "responses-twice")
    .await;
    assert_whole(&read, 60);
    assert_eq!(read.upstream, 3);
    assert_eq!(read.report.as_ref().unwrap().resumed(), 2);
    assert_eq!(read.items.len(), 1, "one item: {:?}", read.items);
    let expected: Vec<u64> = (0..read.sequence.len() as u64).collect();
    assert_eq!(read.sequence, expected, "numbered as one stream");
    assert_says_the_whole_answer(&read, 60, 4);
}

#[tokio::test]
async fn a_cut_in_the_middle_of_an_event_shows_nothing_of_it() {
    let chaos = chaos().await;
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let read = Setup::new(
            provider,
            &["reset_mid_event;tokens=400;total=600", "ok;tokens=600"],
        )
        .run(&chaos, &format!("mid/{}", provider.as_str()))
        .await;
        assert_whole(&read, 600);
        assert_eq!(read.upstream, 2);
        assert_eq!(read.report.unwrap().resumed(), 1);
    }
}

#[tokio::test]
async fn truncation_an_in_stream_overload_and_an_idle_gap_are_resumed() {
    let chaos = chaos().await;
    let read = Setup::new(
        Provider::OpenAi,
        &["truncate_after;tokens=40;total=60", "ok;tokens=60"],
    )
    .run(&chaos, "truncated")
    .await;
    assert_whole(&read, 60);
    assert_eq!(read.report.unwrap().resumes[0].cause, Code::Truncated);
    // Incident 8b: `overloaded_error` after 50 tokens.
    let read = Setup::new(
        Provider::Anthropic,
        &["stream_error_after;tokens=50;total=200", "ok;tokens=200"],
    )
    .run(&chaos, "overloaded")
    .await;
    assert_whole(&read, 200);
    assert_eq!(read.upstream, 2);
    assert_eq!(read.report.unwrap().resumes[0].cause, Code::Overloaded);
    // An idle gap after content: the guard closes the stream, the layer
    // continues it.
    let mut setup = Setup::new(
        Provider::Gemini,
        &["stall_after;tokens=30;ms=3000;total=60", "ok;tokens=60"],
    );
    setup.idle = Duration::from_millis(100);
    let read = setup.run(&chaos, "idle").await;
    assert_whole(&read, 60);
    assert_eq!(read.report.unwrap().resumes[0].cause, Code::IdleTimeout);
}

/// A stream cut after its last token, before its finish: the model's
/// continuation is only a finish. The answer is complete; before, the
/// guard called the continuation `empty_response`, the ladder sent it
/// again, and the caller got the interruption after every attempt of every
/// resume.
#[tokio::test]
async fn a_cut_just_before_the_finish_ends_with_the_continuations_finish() {
    let chaos = chaos().await;
    for provider in [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::OpenAiResponses,
    ] {
        let read = Setup::new(
            provider,
            &["truncate_after;tokens=60;total=60", "ok;tokens=60"],
        )
        .run(&chaos, &format!("last/{}", provider.as_str()))
        .await;
        let name = provider.as_str();
        assert_whole(&read, 60);
        assert_eq!(read.upstream, 2, "{name}");
        assert!(read.finish.is_some(), "{name}: the finish was not shown");
        let report = read.report.clone().unwrap();
        assert_eq!(report.resumed(), 1, "{name}");
        assert_eq!(report.gave_up, None, "{name}");
        assert_eq!(
            report.finish.map(|f| f.kind),
            Some(seawall_core::FinishKind::Complete),
            "{name}"
        );
        if provider == Provider::OpenAiResponses {
            assert_says_the_whole_answer(&read, 60, 1);
        }
    }
}

#[tokio::test]
async fn a_continuation_that_repeats_the_last_five_words_is_trimmed() {
    let chaos = chaos().await;
    for provider in [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::OpenAiResponses,
    ] {
        let read = Setup::new(
            provider,
            &[
                "reset_after;tokens=400;total=600",
                "repeat_tail;words=5;tokens=600",
            ],
        )
        .run(&chaos, &format!("repeat/{}", provider.as_str()))
        .await;
        assert_whole(&read, 600);
        let report = read.report.clone().unwrap();
        assert_eq!(report.resumed(), 1);
        assert_eq!(
            report.resumes[0].trimmed_chars,
            " w396 w397 w398 w399 w400".len() as u64
        );
        // The whole-text events say the text once, the repeat cut.
        if provider == Provider::OpenAiResponses {
            assert_says_the_whole_answer(&read, 600, 4);
            assert_eq!(read.items.len(), 1, "one item: {:?}", read.items);
        }
    }
}

#[tokio::test]
async fn a_continuation_that_fails_before_content_is_tried_again() {
    let chaos = chaos().await;
    // The ladder inside retries the first 503; then the continuation's
    // stream dies before content twice (one resume's ladder), and the
    // next resume lands.
    let read = Setup::new(
        Provider::OpenAi,
        &[
            "reset_after;tokens=100;total=300",
            "status;code=503",
            "ok;tokens=300",
        ],
    )
    .run(&chaos, "retried")
    .await;
    assert_whole(&read, 300);
    assert_eq!(read.upstream, 3);
    let report = read.report.unwrap();
    assert_eq!(report.resumed(), 1);
    let read = Setup::new(
        Provider::OpenAi,
        &[
            "reset_after;tokens=100;total=300",
            "stream_error_after;tokens=0",
            "stream_error_after;tokens=0",
            "stream_error_after;tokens=0",
            "ok;tokens=300",
        ],
    )
    .run(&chaos, "second resume")
    .await;
    assert_whole(&read, 300);
    let report = read.report.unwrap();
    assert_eq!(report.resumes.len(), 2);
    assert!(report.resumes[0].failed.is_some());
    assert_eq!(report.resumes[1].failed, None);
}

/// A resume is paid for by the retry budget, as a retry is: with no token
/// left it is not sent, and the body ends with the interruption.
#[tokio::test]
async fn a_resume_the_retry_budget_cannot_pay_is_not_sent() {
    let chaos = chaos().await;
    let mut setup = Setup::new(
        Provider::OpenAi,
        &["reset_after;tokens=100;total=300", "ok;tokens=300"],
    );
    // One token, kept only while more than half is left: a resume's
    // charge leaves none.
    setup.ladder = RetryBudgetLayer::new(RetryPolicy::interactive(), Budget::grpc(1, 0.1));
    let read = setup.run(&chaos, "no budget").await;
    assert_eq!(read.upstream, 1, "no continuation was sent");
    let report = read.report.as_ref().unwrap();
    assert_eq!(report.gave_up, Some("budget"), "{report:?}");
    let failure = read.failure().expect("the interruption");
    assert_eq!(failure.code(), Code::StreamInterrupted, "{failure:?}");
}

#[tokio::test]
async fn the_whole_receipt_counts_what_the_continuations_cost() {
    let chaos = chaos().await;
    // The original stream is billed and cut; the continuation's ladder
    // meets a 503 (not billed) and then streams the rest (billed, with
    // the usage Anthropic's `message_delta` reports).
    let read = Setup::new(
        Provider::Anthropic,
        &[
            "reset_after;tokens=100;total=300",
            "status;code=503",
            "ok;tokens=300",
        ],
    )
    .run(&chaos, "receipt")
    .await;
    assert_whole(&read, 300);
    assert_eq!(read.upstream, 3);
    let (first, report) = (read.receipt.unwrap(), read.report.unwrap());
    assert_eq!((first.attempts.len(), first.billed_attempts()), (1, 1));
    let continuation = report.resumes[0].receipt.as_ref().expect("its receipt");
    let codes: Vec<_> = continuation.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::ProviderUnavailable), None]);
    assert_eq!(report.billed_attempts(), 1);
    let spent = report.usage();
    assert!(spent.output_tokens > 0, "{spent:?}");
    let whole = report.receipt(&first);
    assert_eq!(whole.attempts.len(), 3);
    assert_eq!(whole.billed_attempts(), 2);
    let mut expected = first.usage();
    expected += spent;
    assert_eq!(whole.usage(), expected);
    // Anthropic reports the input in `message_start` and the output with
    // the finish: the cut answer reported its input (counted in the
    // usage), not its whole count, and the receipt says so.
    assert!(
        first.attempts[0]
            .usage()
            .is_some_and(|u| u.input_tokens > 0)
    );
    assert!(!first.attempts[0].usage_is_whole());
    assert_eq!(whole.billed_without_usage(), 1);

    // An OpenAI stream reports its usage in its last chunk: the cut
    // answer was billed and reported nothing, and the receipt says so.
    let mut setup = Setup::new(
        Provider::OpenAi,
        &["reset_after;tokens=100;total=300", "ok;tokens=300"],
    );
    setup.body["stream_options"] = json!({"include_usage": true});
    let read = setup.run(&chaos, "receipt/openai").await;
    assert_whole(&read, 300);
    let whole = read.report.unwrap().receipt(&read.receipt.unwrap());
    assert_eq!(whole.billed_attempts(), 2);
    assert_eq!(whole.billed_without_usage(), 1);
    assert!(whole.usage().output_tokens > 0);
}

#[tokio::test]
async fn after_the_last_failed_resume_the_body_ends_with_the_interruption() {
    let chaos = chaos().await;
    let mut setup = Setup::new(Provider::OpenAi, &["reset_after;tokens=100;total=300"]);
    setup.header = Some("stream_error_after;tokens=0");
    let read = setup.run(&chaos, "exhausted").await;
    assert_eq!(read.text, answer_text(100));
    assert!(!repeats_a_token(&read.text));
    assert_eq!(read.error_events, 0);
    let failure = read.failure().expect("the interruption");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some(answer_text(100).as_str())
    );
    let report = read.report.unwrap();
    assert_eq!(report.resumes.len(), 2, "two resumes, the default bound");
    assert!(report.resumes.iter().all(|r| r.failed.is_some()));
    assert_eq!(report.gave_up, Some("max_resumes"));
    // The original, then three attempts of the ladder per resume.
    assert_eq!(read.upstream, 1 + 2 * 3);
}

#[tokio::test]
async fn a_second_interruption_resumes_from_everything_delivered() {
    let chaos = chaos().await;
    let read = Setup::new(
        Provider::Anthropic,
        &[
            "reset_after;tokens=100;total=300",
            "reset_mid_event;tokens=200;total=300",
            "repeat_tail;words=3;tokens=300",
        ],
    )
    .run(&chaos, "twice")
    .await;
    assert_whole(&read, 300);
    let report = read.report.unwrap();
    assert_eq!(report.resumed(), 2);
    assert_eq!(
        report.resumes[1].delivered_chars,
        answer_text(200).len() as u64
    );
}

#[tokio::test]
async fn a_continuation_that_restarts_cannot_be_aligned_and_ends_as_before() {
    let chaos = chaos().await;
    // A user turn after the delivered text: chaos answers from `w1`. The
    // 250 tokens delivered are longer than the longest repeat waited out
    // (1 KiB): by then the head is a restart, not a continuation.
    assert!(answer_text(250).len() > 1024);
    let mut setup = Setup::new(
        Provider::OpenAi,
        &["reset_after;tokens=250;total=400", "ok;tokens=400"],
    );
    setup.layer = ResumeLayer::new().openai_style(OpenAiStyle::AskToContinue { user_turn: true });
    let read = setup.run(&chaos, "restart").await;
    assert_eq!(read.text, answer_text(250));
    assert_eq!(read.error_events, 0);
    let failure = read.failure().expect("the interruption");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(
        failure.interrupted().unwrap().delivered_text.as_deref(),
        Some(answer_text(250).as_str())
    );
    assert_eq!(read.upstream, 2);
    let report = read.report.unwrap();
    assert_eq!(report.gave_up, Some("misaligned"));
    // Nothing of the continuation was spliced in.
    assert_eq!(report.resumed(), 0);
}

#[tokio::test]
async fn a_short_answer_restarted_verbatim_is_waited_out_and_trimmed_whole() {
    let chaos = chaos().await;
    // 100 tokens (under 1 KiB) restated word for word, then the rest: the
    // copy is waited out and trimmed, and the caller reads the answer once.
    let mut setup = Setup::new(
        Provider::OpenAi,
        &["reset_after;tokens=100;total=300", "ok;tokens=300"],
    );
    setup.layer = ResumeLayer::new().openai_style(OpenAiStyle::AskToContinue { user_turn: true });
    let read = setup.run(&chaos, "short restart").await;
    assert_whole(&read, 300);
    let report = read.report.unwrap();
    assert_eq!(report.resumed(), 1);
    assert_eq!(
        report.resumes[0].trimmed_chars,
        answer_text(100).chars().count() as u64
    );
}

#[tokio::test]
async fn verdicts_cancellation_deadline_and_tool_calls_are_not_resumed() {
    let chaos = chaos().await;
    // A refusal after content.
    let read = Setup::new(Provider::OpenAi, &["refusal;tokens=50"])
        .run(&chaos, "refusal")
        .await;
    assert_eq!(read.failure().map(Failure::code), Some(Code::Refused));
    assert_eq!(read.upstream, 1);
    assert_eq!(read.report.unwrap().resumes.len(), 0);
    // `length`: a clean, cut answer.
    let read = Setup::new(Provider::Anthropic, &["length;tokens=50"])
        .run(&chaos, "length")
        .await;
    assert!(read.error.is_none());
    assert_eq!(read.text, answer_text(50));
    assert_eq!(read.upstream, 1);
    // The caller stops reading.
    let mut setup = Setup::new(Provider::OpenAi, &["ok;tokens=400;delay_ms=1"]);
    setup.stop_after = Some(20);
    let read = setup.run(&chaos, "cancel").await;
    assert_eq!(read.upstream, 1);
    // The operation's deadline passes before the cut.
    let mut setup = Setup::new(
        Provider::OpenAi,
        &["reset_after;tokens=30;total=60;delay_ms=5"],
    );
    setup.deadline = Some(Duration::from_millis(50));
    let read = setup.run(&chaos, "deadline").await;
    assert_eq!(
        read.failure().map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert_eq!(read.upstream, 1);
    assert_eq!(read.report.unwrap().gave_up, Some("deadline"));
    // A tool call in flight, in every wire format.
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let read = Setup::new(provider, &["tool_call_reset_after;tokens=30"])
            .run(&chaos, &format!("tool/{}", provider.as_str()))
            .await;
        assert_eq!(
            read.failure().map(Failure::code),
            Some(Code::StreamInterrupted)
        );
        assert_eq!(read.upstream, 1, "{}", provider.as_str());
        assert_eq!(
            read.report.unwrap().gave_up,
            Some("tool_call"),
            "{}",
            provider.as_str()
        );
    }
    // Several choices.
    let mut setup = Setup::new(Provider::OpenAi, &["reset_after;tokens=30"]);
    setup.body["n"] = json!(2);
    let read = setup.run(&chaos, "n2").await;
    assert_eq!(read.upstream, 1);
    assert_eq!(read.report.unwrap().gave_up, Some("n_choices"));
}

/// A request over the resume cap is not resumed: a continuation is the
/// request parsed and written anew, and the cap bounds that, even for a
/// body the ladder keeps past its own cap as one whole frame.
#[tokio::test]
async fn a_request_over_the_replay_cap_surfaces_as_before() {
    let chaos = chaos().await;
    let mut setup = Setup::new(Provider::OpenAi, &["reset_after;tokens=30"]);
    setup.layer = ResumeLayer::new().max_replay_bytes(16);
    let read = setup.run(&chaos, "cap").await;
    assert_eq!(
        read.failure().map(Failure::code),
        Some(Code::StreamInterrupted)
    );
    assert_eq!(read.text, answer_text(30));
    assert_eq!(read.upstream, 1);
    assert_eq!(read.report.unwrap().gave_up, Some("replay_cap"));

    // Over the cap and whole: nothing was given up.
    let mut setup = Setup::new(Provider::OpenAi, &["ok;tokens=30"]);
    setup.layer = ResumeLayer::new().max_replay_bytes(16);
    let read = setup.run(&chaos, "cap-whole").await;
    assert!(read.failure().is_none());
    assert_eq!(read.report.unwrap().gave_up, None);
}
