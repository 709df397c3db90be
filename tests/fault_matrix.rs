//! Every chaos fault × {unary, streaming} × {OpenAI chat, the Responses
//! API, Anthropic, Gemini}, through the assembled stack
//! (`Stack::interactive()` with short bounds) against a real seawall-chaos
//! server over loopback.
//!
//! Each case states what the layers' documented contracts promise, and is
//! checked from two sides: the chaos server's journal (how many attempts
//! reached the provider, on which route, how each ended) and what the
//! caller read (outcome, code, action, receipt, the text itself). The chaos
//! answer numbers its tokens (`w1 w2 …`), so the caller's text must always
//! be exactly `w1 … wk` for some k: never a token twice, never a gap.
//!
//! Every case gets its own chaos servers and its own stack (fresh breaker
//! and budget), so the cases of one table run concurrently and stay
//! independent.

mod common;

use std::time::{Duration, Instant};

use common::{Ask, Ending, Seen};
use futures_util::stream::{self, StreamExt};
use seawall::core::provider::Provider;
use seawall::core::{Action, Code, FinishKind, RouteId, StopReason};
use seawall_chaos::{JournalEntry, Outcome, answer_text, repeats_a_token, token_numbers};

/// What the caller must end with.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// A complete read of `tokens` tokens with this kind of finish.
    Ok { tokens: u32, finish: FinishKind },
    /// A classified failure before any content reached the caller.
    Before { code: Code, action: Action },
    /// A classified body failure after `delivered` tokens reached the caller.
    After {
        code: Code,
        action: Action,
        delivered: u32,
    },
    /// The caller dropped the body mid-stream: one attempt, disconnected.
    Cancelled,
}

/// One row of the matrix.
#[derive(Debug, Clone)]
struct Case {
    name: &'static str,
    provider: Provider,
    stream: bool,
    /// The `x-chaos-fault` header: the fault of every attempt no script overrides.
    header: Option<&'static str>,
    /// Faults for the first attempts on the primary route, in order.
    script: &'static [&'static str],
    /// A healthy fallback route on a second chaos server.
    fallback: bool,
    /// The caller stops reading after this many content events.
    stop_after: Option<u64>,
    want: Want,
    /// Journal rows on the primary server.
    primary: usize,
    /// Journal rows on the fallback server.
    fallback_rows: usize,
    /// The receipt's stop reason.
    stop: StopReason,
    /// The code of every failed attempt in the receipt (they all fail alike).
    fails: Option<Code>,
}

/// The healthy answer's length (chaos default).
const FULL: u32 = 8;

fn ok() -> Want {
    Want::Ok {
        tokens: FULL,
        finish: FinishKind::Complete,
    }
}

fn base(provider: Provider, stream: bool) -> Case {
    Case {
        name: "",
        provider,
        stream,
        header: None,
        script: &[],
        fallback: false,
        stop_after: None,
        want: ok(),
        primary: 1,
        fallback_rows: 0,
        stop: StopReason::Succeeded,
        fails: None,
    }
}

/// The code a refusal is classified as: Gemini's `SAFETY` is a filter.
fn refusal_code(provider: Provider) -> Code {
    match provider {
        Provider::Gemini => Code::ContentFiltered,
        _ => Code::Refused,
    }
}

/// A 503 by the provider's table: Gemini's `UNAVAILABLE` is overload.
fn unavailable(provider: Provider) -> Code {
    match provider {
        Provider::Gemini => Code::Overloaded,
        _ => Code::ProviderUnavailable,
    }
}

/// What chaos's `stream_error_after` amounts to before content, by the
/// provider's table: Anthropic's `overloaded_error` (unary: 529) is
/// overload, Gemini's unary 503 `UNAVAILABLE` too; the others are errors
/// of the provider.
fn in_stream_error(provider: Provider, stream: bool) -> Code {
    match (provider, stream) {
        (Provider::Anthropic, _) | (Provider::Gemini, false) => Code::Overloaded,
        _ => Code::ProviderUnavailable,
    }
}

/// The matrix for one provider and one mode, from the documented contracts.
fn cases(provider: Provider, stream: bool) -> Vec<Case> {
    let b = || base(provider, stream);
    let mut cases = vec![
        Case { name: "ok", ..b() },
        // A short 429 is retried after its hint; the ladder then succeeds.
        Case {
            name: "429 retry_after=1 once, then ok",
            fails: Some(Code::RateLimited),
            script: &["status;code=429;retry_after=1", "ok"],
            primary: 2,
            ..b()
        },
        // A hint past the quota wall is permanent for that account, not for
        // the request: one call, no wait, and the fallback answers.
        Case {
            name: "429 quota wall (Retry-After 48489)",
            fails: Some(Code::QuotaExhausted),
            header: Some("status;code=429;retry_after=48489"),
            fallback: true,
            fallback_rows: 1,
            ..b()
        },
        // Without another route the wall is surfaced after one call.
        Case {
            name: "429 quota wall (Retry-After 48489), no fallback",
            fails: Some(Code::QuotaExhausted),
            header: Some("status;code=429;retry_after=48489"),
            want: Want::Before {
                code: Code::QuotaExhausted,
                action: Action::Surface,
            },
            stop: StopReason::NotRetryable,
            ..b()
        },
        Case {
            name: "503 once, then ok",
            fails: Some(unavailable(provider)),
            script: &["status;code=503", "ok"],
            primary: 2,
            ..b()
        },
        // The ladder gives up after max_attempts (3) on a transient failure;
        // the fallback serves the answer, once.
        Case {
            name: "503 every attempt, fallback",
            fails: Some(unavailable(provider)),
            header: Some("status;code=503"),
            fallback: true,
            primary: 3,
            fallback_rows: 1,
            ..b()
        },
        Case {
            name: "400 context_length",
            fails: Some(Code::ContextTooLong),
            header: Some("status;code=400;kind=context_length"),
            fallback: true,
            want: Want::Before {
                code: Code::ContextTooLong,
                action: Action::Surface,
            },
            stop: StopReason::NotRetryable,
            ..b()
        },
        // Rejected credentials condemn the route's key, not the request:
        // another route (another key) answers.
        Case {
            name: "401",
            fails: Some(Code::Auth),
            header: Some("status;code=401"),
            fallback: true,
            fallback_rows: 1,
            ..b()
        },
        // 200 with nothing in it is a transient failure, retried.
        Case {
            name: "empty once, then ok",
            fails: Some(Code::EmptyResponse),
            script: &["empty", "ok"],
            primary: 2,
            ..b()
        },
        // A refusal is policy: escalated, exactly one call, no fallback —
        // streamed or not, whichever way the provider words it.
        Case {
            name: "refusal",
            header: Some("refusal"),
            fallback: true,
            fails: Some(refusal_code(provider)),
            want: Want::Before {
                code: refusal_code(provider),
                action: Action::Escalate,
            },
            stop: StopReason::NotRetryable,
            ..b()
        },
        // A length cut is a delivered answer, marked truncated.
        Case {
            name: "length after 3 tokens",
            header: Some("length;tokens=3"),
            want: Want::Ok {
                tokens: 3,
                finish: FinishKind::Truncated,
            },
            ..b()
        },
        Case {
            name: "slow_first_byte 20 ms (< first byte bound)",
            header: Some("slow_first_byte;ms=20"),
            ..b()
        },
        Case {
            name: "stall 100 ms after 2 tokens (< idle)",
            header: Some("stall_after;tokens=2;ms=100"),
            ..b()
        },
        Case {
            name: "stall 100 ms after 2 tokens (< idle), pings",
            header: Some("stall_after;tokens=2;ms=100;pings=1;ping_ms=30"),
            ..b()
        },
        // Before content, an in-stream error is the error's own class
        // (unary: the provider's 5xx): retried.
        Case {
            name: "stream_error_after tokens=0 once, then ok",
            fails: Some(in_stream_error(provider, stream)),
            script: &["stream_error_after;tokens=0", "ok"],
            primary: 2,
            ..b()
        },
        Case {
            name: "reset_after tokens=0 once, then ok",
            fails: Some(Code::Transport),
            script: &["reset_after;tokens=0", "ok"],
            primary: 2,
            ..b()
        },
        // No response at all: transport, retried.
        Case {
            name: "reset_before_headers once, then ok",
            fails: Some(Code::Transport),
            script: &["reset_before_headers", "ok"],
            primary: 2,
            ..b()
        },
        Case {
            name: "reset_before_headers every attempt, fallback",
            fails: Some(Code::Transport),
            header: Some("reset_before_headers"),
            fallback: true,
            primary: 3,
            fallback_rows: 1,
            ..b()
        },
    ];
    if provider == Provider::Anthropic {
        cases.push(Case {
            name: "529 overloaded once, then ok",
            fails: Some(Code::Overloaded),
            script: &["status;code=529", "ok"],
            primary: 2,
            ..b()
        });
    }
    if stream {
        cases.extend(stream_cases(provider));
    } else {
        cases.extend(unary_cases(provider));
    }
    cases
}

/// Where a stream and a unary answer part ways: the stream guard holds a
/// stream back until first content and never replays after it.
fn stream_cases(provider: Provider) -> Vec<Case> {
    let b = || base(provider, true);
    let interrupted = |delivered| Want::After {
        code: Code::StreamInterrupted,
        action: Action::Surface,
        delivered,
    };
    vec![
        // Headers then silence: first_byte_timeout is route-shaped, so the
        // ladder fails over after ONE attempt.
        Case {
            name: "hang_after_headers, fallback",
            header: Some("hang_after_headers"),
            fallback: true,
            fails: Some(Code::FirstByteTimeout),
            fallback_rows: 1,
            ..b()
        },
        Case {
            name: "slow_first_byte 600 ms (> first byte bound), fallback",
            header: Some("slow_first_byte;ms=600"),
            fallback: true,
            fails: Some(Code::FirstByteTimeout),
            fallback_rows: 1,
            ..b()
        },
        // One frame, then a clean EOF before content: empty_response, retried.
        Case {
            name: "frame_then_eof once, then ok",
            fails: Some(Code::EmptyResponse),
            script: &["frame_then_eof", "ok"],
            primary: 2,
            ..b()
        },
        // After content nothing is replayed nor failed over: the caller
        // gets what was delivered and an interruption to resume from.
        Case {
            name: "reset_after 3 tokens, fallback",
            script: &["reset_after;tokens=3", "ok"],
            fallback: true,
            want: interrupted(3),
            ..b()
        },
        Case {
            name: "stall 700 ms after 2 tokens (> idle), fallback",
            script: &["stall_after;tokens=2;ms=700", "ok"],
            fallback: true,
            want: interrupted(2),
            ..b()
        },
        // Keep-alives do not reset the idle bound.
        Case {
            name: "stall 700 ms after 2 tokens (> idle), pings, fallback",
            script: &["stall_after;tokens=2;ms=700;pings=1;ping_ms=50", "ok"],
            fallback: true,
            want: interrupted(2),
            ..b()
        },
        Case {
            name: "stream_error_after 3 tokens, fallback",
            script: &["stream_error_after;tokens=3", "ok"],
            fallback: true,
            want: interrupted(3),
            ..b()
        },
        Case {
            name: "truncate_after 3 tokens, fallback",
            script: &["truncate_after;tokens=3", "ok"],
            fallback: true,
            want: Want::After {
                code: Code::Truncated,
                action: Action::Surface,
                delivered: 3,
            },
            ..b()
        },
        // A refusal after content: the text already shown stays shown, the
        // body ends with the policy verdict (escalate) and what was
        // delivered — never a silent clean end — and nothing is sent again
        // anywhere.
        Case {
            name: "refusal after 3 tokens",
            header: Some("refusal;tokens=3"),
            fallback: true,
            want: Want::After {
                code: refusal_code(provider),
                action: Action::Escalate,
                delivered: 3,
            },
            ..b()
        },
        // The caller goes away mid-stream: nobody is waiting, nothing is
        // retried.
        Case {
            name: "caller cancels after 5 content events",
            header: Some("ok;tokens=400;delay_ms=2"),
            fallback: true,
            stop_after: Some(5),
            want: Want::Cancelled,
            ..b()
        },
    ]
}

/// A unary answer has no stream guard: only the per-attempt bound times it,
/// and the classifier reads the whole body inside the attempt.
fn unary_cases(provider: Provider) -> Vec<Case> {
    let b = || base(provider, false);
    vec![
        // Zero bytes until the attempt bound, with another route to go to:
        // the silent route is left after ONE attempt.
        Case {
            name: "hang_after_headers, fallback",
            header: Some("hang_after_headers"),
            fallback: true,
            fails: Some(Code::Timeout),
            fallback_rows: 1,
            ..b()
        },
        // No first-byte bound on a unary answer: 600 ms fits the attempt.
        Case {
            name: "slow_first_byte 600 ms (< attempt bound), fallback",
            header: Some("slow_first_byte;ms=600"),
            fallback: true,
            ..b()
        },
        // The body broke while the classifier read it: transport, retried.
        Case {
            name: "reset_after 3 tokens once, then ok",
            fails: Some(Code::Transport),
            script: &["reset_after;tokens=3", "ok"],
            fallback: true,
            primary: 2,
            ..b()
        },
        // A JSON body has no keep-alives: the stall is silence within the attempt.
        Case {
            name: "stall 700 ms after 2 tokens (< attempt bound)",
            header: Some("stall_after;tokens=2;ms=700"),
            ..b()
        },
        Case {
            name: "stall 700 ms after 2 tokens, pings",
            header: Some("stall_after;tokens=2;ms=700;pings=1;ping_ms=50"),
            ..b()
        },
        Case {
            name: "stream_error_after 3 tokens once (a 5xx), then ok",
            fails: Some(in_stream_error(provider, false)),
            script: &["stream_error_after;tokens=3", "ok"],
            fallback: true,
            primary: 2,
            ..b()
        },
        // Policy first: a refusal that carries partial text is still a refusal.
        Case {
            name: "refusal after 3 tokens",
            header: Some("refusal;tokens=3"),
            fallback: true,
            fails: Some(refusal_code(provider)),
            want: Want::Before {
                code: refusal_code(provider),
                action: Action::Escalate,
            },
            stop: StopReason::NotRetryable,
            ..b()
        },
        // seawall-classify reads and checks a 2xx JSON answer that opens a
        // JSON object and fits the check cap; only longer bodies and bodies
        // that do not open an object pass unchecked. A body that opens an
        // object and ends before it is whole is `protocol_violation`: no
        // answer, nothing shown, retried.
        Case {
            name: "frame_then_eof once, then ok",
            fails: Some(Code::ProtocolViolation),
            script: &["frame_then_eof", "ok"],
            primary: 2,
            ..b()
        },
        Case {
            name: "truncate_after 3 tokens once, then ok",
            fails: Some(Code::ProtocolViolation),
            script: &["truncate_after;tokens=3", "ok"],
            primary: 2,
            ..b()
        },
    ]
}

impl Case {
    /// The receipt's codes, attempt by attempt: every failed attempt
    /// `fails`, a successful one `None`.
    fn attempt_codes(&self) -> Vec<Option<Code>> {
        let attempts = self.primary + self.fallback_rows;
        let succeeded = match self.want {
            Want::Before { .. } => 0,
            _ => 1,
        };
        let mut codes = vec![self.fails; attempts - succeeded];
        codes.extend(vec![None; succeeded]);
        codes
    }
}

/// What one case produced.
struct Run {
    seen: Seen,
    primary: Vec<JournalEntry>,
    fallback: Vec<JournalEntry>,
    primary_route: RouteId,
    elapsed: Duration,
}

async fn run(case: &Case) -> Run {
    let primary = common::chaos().await;
    let fallback = if case.fallback {
        Some(common::chaos().await)
    } else {
        None
    };
    if !case.script.is_empty() {
        let faults = case.script.iter().map(|f| common::fault(f)).collect();
        primary
            .script(case.provider.as_str(), faults)
            .expect("a provider route");
    }
    let ask = Ask {
        provider: case.provider,
        stream: case.stream,
        id: format!(
            "{}/{}/{}",
            case.provider.as_str(),
            if case.stream { "stream" } else { "unary" },
            case.name
        ),
        fault: case.header.map(str::to_owned),
        stop_after: case.stop_after,
    };
    let stack = common::short_stack();
    let started = Instant::now();
    let seen = common::through_stack(&stack, &primary, fallback.as_ref(), &ask).await;
    let elapsed = started.elapsed();
    let primary_rows = common::settled_rows(&primary, &ask.id).await;
    let fallback_rows = match &fallback {
        Some(f) => common::settled_rows(f, &ask.id).await,
        None => Vec::new(),
    };
    let primary_route = RouteId::new(primary.addr().to_string());
    primary.shutdown().await;
    if let Some(f) = fallback {
        f.shutdown().await;
    }
    Run {
        seen,
        primary: primary_rows,
        fallback: fallback_rows,
        primary_route,
        elapsed,
    }
}

/// One line of what happened, for the report.
fn observed(run: &Run) -> String {
    let seen = &run.seen;
    let failure = seen.failure.as_ref().map_or_else(
        || "-".to_owned(),
        |f| format!("{}/{}", f.code(), f.action()),
    );
    let receipt = seen.receipt.as_ref().map_or_else(
        || "none".to_owned(),
        |r| {
            format!(
                "{}x {:?} {} fb={}",
                r.attempts.len(),
                r.attempts
                    .iter()
                    .map(|a| a.code.map_or("ok", Code::as_str))
                    .collect::<Vec<_>>(),
                r.stop.map_or("-", StopReason::as_str),
                r.fallback
            )
        },
    );
    format!(
        "{:?} {failure} rows={}+{} receipt=[{receipt}] tokens={} finish={} {:?}",
        seen.ending,
        run.primary.len(),
        run.fallback.len(),
        token_numbers(&seen.text).count(),
        seen.finish.as_deref().unwrap_or("-"),
        run.elapsed,
    )
}

fn expected(case: &Case) -> String {
    format!(
        "{:?} rows={}+{} stop={}",
        case.want,
        case.primary,
        case.fallback_rows,
        case.stop.as_str()
    )
}

/// Every way `run` departs from `case`; empty when it matches.
fn check(case: &Case, run: &Run) -> Vec<String> {
    let mut bad = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            bad.push(what);
        }
    };
    let seen = &run.seen;

    // What reached the provider.
    expect(
        run.primary.len() == case.primary,
        format!("primary rows {} != {}", run.primary.len(), case.primary),
    );
    expect(
        run.fallback.len() == case.fallback_rows,
        format!(
            "fallback rows {} != {}",
            run.fallback.len(),
            case.fallback_rows
        ),
    );
    let unsettled = run
        .primary
        .iter()
        .chain(&run.fallback)
        .any(|r| r.outcome == Outcome::InFlight);
    expect(!unsettled, "a journal row is still in flight".to_owned());

    // What reached the caller: never a token twice, never a gap.
    let tokens: Vec<u32> = token_numbers(&seen.text).collect();
    expect(
        !repeats_a_token(&seen.text),
        format!("duplicated text: {:?}", seen.text),
    );
    let k = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
    expect(
        seen.text == answer_text(k),
        format!("text is not w1..w{k}: {:?}", seen.text),
    );
    expect(
        seen.unclassified.is_none(),
        format!("unclassified error: {:?}", seen.unclassified),
    );

    // Every outcome carries the ladder's receipt (in the response or in the
    // failure), and it agrees with the journal, route by route.
    match &seen.receipt {
        None => expect(false, "no receipt".to_owned()),
        Some(receipt) => {
            let rows = run.primary.len() + run.fallback.len();
            expect(
                receipt.attempts.len() == rows,
                format!("receipt attempts {} != rows {rows}", receipt.attempts.len()),
            );
            let routes: Vec<_> = receipt.attempts.iter().map(|a| a.route.clone()).collect();
            let mut want_routes = vec![run.primary_route.clone(); run.primary.len()];
            want_routes.extend(vec![common::fallback_route(); run.fallback.len()]);
            expect(
                routes == want_routes,
                format!("receipt routes {routes:?} != {want_routes:?}"),
            );
            let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
            let want_codes = case.attempt_codes();
            expect(
                codes == want_codes,
                format!("receipt codes {codes:?} != {want_codes:?}"),
            );
            expect(
                receipt.stop == Some(case.stop),
                format!("receipt stop {:?} != {:?}", receipt.stop, case.stop),
            );
            expect(
                receipt.fallback == (case.fallback_rows > 0),
                format!("receipt fallback flag {}", receipt.fallback),
            );
        }
    }

    match case.want {
        Want::Ok { tokens, finish } => {
            expect(
                seen.ending == Ending::Ok,
                format!("ending {:?} != Ok ({:?})", seen.ending, seen.failure),
            );
            expect(k == tokens, format!("{k} tokens != {tokens}"));
            let kind = if case.stream {
                seen.report
                    .as_ref()
                    .and_then(|r| r.finish.as_ref())
                    .map(|f| f.kind)
            } else {
                seen.classified_finish.as_ref().map(|f| f.kind)
            };
            expect(
                kind == Some(finish),
                format!("finish kind {kind:?} != {finish:?}"),
            );
            let served = seen.served_by.as_ref().map(|s| s.fallback);
            expect(
                served == Some(case.fallback_rows > 0) || !case.fallback,
                format!("served_by fallback {served:?}"),
            );
        }
        Want::Before { code, action } => {
            expect(
                seen.ending == Ending::FailedBeforeContent,
                format!("ending {:?} != FailedBeforeContent", seen.ending),
            );
            check_failure(seen, code, action, &mut expect);
            expect(k == 0, format!("{k} tokens reached the caller"));
        }
        Want::After {
            code,
            action,
            delivered,
        } => {
            expect(
                seen.ending == Ending::FailedAfterContent,
                format!("ending {:?} != FailedAfterContent", seen.ending),
            );
            check_failure(seen, code, action, &mut expect);
            expect(
                k == delivered,
                format!("{k} tokens != {delivered} delivered"),
            );
            let record = seen
                .failure
                .as_ref()
                .and_then(|f| f.interrupted())
                .and_then(|i| i.delivered_text.clone());
            expect(
                record.as_deref() == Some(seen.text.as_str()),
                format!("interrupted record {record:?} != caller text"),
            );
        }
        Want::Cancelled => {
            expect(
                seen.ending == Ending::Cancelled,
                format!("ending {:?} != Cancelled", seen.ending),
            );
            let outcomes: Vec<_> = run.primary.iter().map(|r| r.outcome).collect();
            expect(
                outcomes == [Outcome::ClientDisconnected],
                format!("journal outcomes {outcomes:?} != [ClientDisconnected]"),
            );
            let code = seen.report.as_ref().and_then(|r| r.code);
            expect(
                code == Some(Code::Cancelled),
                format!("stream report code {code:?} != cancelled"),
            );
        }
    }
    bad
}

fn check_failure(seen: &Seen, code: Code, action: Action, expect: &mut impl FnMut(bool, String)) {
    let Some(failure) = &seen.failure else {
        expect(false, "no Failure".to_owned());
        return;
    };
    expect(
        failure.code() == code,
        format!("code {} != {code}", failure.code()),
    );
    expect(
        failure.action() == action,
        format!("action {} != {action}", failure.action()),
    );
}

/// Runs a table concurrently and fails with every mismatch at once.
async fn run_table(cases: Vec<Case>) {
    let results: Vec<_> = stream::iter(cases)
        .map(|case| async move {
            let run = run(&case).await;
            let bad = check(&case, &run);
            (case, run, bad)
        })
        .buffer_unordered(12)
        .collect()
        .await;
    let mut failures = Vec::new();
    for (case, run, bad) in &results {
        let mode = if case.stream { "stream" } else { "unary" };
        let verdict = if bad.is_empty() { "ok" } else { "MISMATCH" };
        println!(
            "{:?} {mode} | {} | expected {} | observed {} | {verdict}",
            case.provider,
            case.name,
            expected(case),
            observed(run)
        );
        if !bad.is_empty() {
            failures.push(format!(
                "{:?} {mode} `{}`: {}",
                case.provider,
                case.name,
                bad.join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) broke their contract:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

async fn matrix(provider: Provider, stream: bool) {
    run_table(cases(provider, stream)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_stream() {
    matrix(Provider::OpenAi, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_unary() {
    matrix(Provider::OpenAi, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_stream() {
    matrix(Provider::Anthropic, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_unary() {
    matrix(Provider::Anthropic, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_stream() {
    matrix(Provider::Gemini, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_unary() {
    matrix(Provider::Gemini, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stream() {
    matrix(Provider::OpenAiResponses, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_unary() {
    matrix(Provider::OpenAiResponses, false).await;
}
