//! A bounded soak: 2000 operations, 64 in flight, every attempt drawing from
//! chaos's `random;seed=S;p=0.3` mix, through one assembled stack (short
//! bounds, the preset's retry budget, a breaker tuned to trip under this
//! load, a healthy fallback route), with one caller in ten walking away
//! mid-stream.
//!
//! What must hold: every operation ends, as an answer or a classified
//! `Failure` (never a panic, never an unclassified error); no caller is
//! shown a token twice; the server sees every exchange end; and afterwards
//! the breaker is not stuck (no half-open trial leaked by a cancelled or
//! failed call): once chaos is healthy and the break has passed, healthy
//! calls go through and close it.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{Ask, Ending};
use seawall::breaker::{BreakDuration, BreakerLayer, BreakerState, Trip};
use seawall::core::provider::Provider;
use seawall::core::{Code, RouteId};
use seawall::retry::Budget;
use seawall_chaos::{Outcome, answer_text, repeats_a_token, token_numbers};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

const OPERATIONS: usize = 2000;
const IN_FLIGHT: usize = 64;
const RANDOM: &str = "random;seed=20240607;p=0.3";
/// The longest break the soak's breaker takes.
const MAX_BREAK: Duration = Duration::from_millis(200);

/// What one operation left, reduced to what the soak asserts.
#[derive(Debug)]
struct Op {
    ending: Ending,
    code: Option<Code>,
    unclassified: Option<String>,
    duplicated: bool,
    gap: bool,
}

fn ask(n: usize, fault: Option<&str>) -> Ask {
    let provider = [Provider::OpenAi, Provider::Anthropic, Provider::Gemini][n % 3];
    let stream = n % 4 != 3;
    Ask {
        provider,
        stream,
        id: format!("soak-{n}"),
        fault: fault.map(str::to_owned),
        // One caller in ten walks away after two content events.
        stop_after: (stream && n.is_multiple_of(10)).then_some(2),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_random_faults_at_64_in_flight() {
    let primary = common::chaos().await;
    let fallback = common::chaos().await;
    let baseline_tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();

    let opened = Arc::new(AtomicU32::new(0));
    let breaker = {
        let opened = Arc::clone(&opened);
        BreakerLayer::new()
            .trip(Trip::FailureRatio {
                ratio: 0.15,
                window: Duration::from_secs(1),
                buckets: 10,
                min_calls: 20,
            })
            .break_duration(BreakDuration {
                base: Duration::from_millis(50),
                max: MAX_BREAK,
                jitter: 0.0,
            })
            .half_open_trials(3)
            .close_after(3)
            .on_transition(move |t| {
                if t.to == BreakerState::Open {
                    opened.fetch_add(1, Ordering::Relaxed);
                }
            })
    };
    let stack = common::short_stack()
        .budget(Budget::ratio(0.2, 10, Duration::from_secs(10)))
        .breaker(breaker);
    let handle = stack.breaker_layer().handle();
    let primary_route = RouteId::new(primary.addr().to_string());

    let started = Instant::now();
    let soak = async {
        let slots = Arc::new(Semaphore::new(IN_FLIGHT));
        let mut tasks = JoinSet::new();
        for n in 0..OPERATIONS {
            let permit = Arc::clone(&slots)
                .acquire_owned()
                .await
                .expect("the semaphore stays open");
            let stack = stack.clone();
            let primary_base = primary.base_url();
            let fallback_base = fallback.base_url();
            tasks.spawn(async move {
                let ask = ask(n, Some(RANDOM));
                let seen =
                    common::through_base(&stack, &primary_base, Some(&fallback_base), &ask).await;
                drop(permit);
                Op {
                    ending: seen.ending.clone(),
                    code: seen.failure.as_ref().map(|f| f.code()),
                    unclassified: seen.unclassified.clone(),
                    duplicated: repeats_a_token(&seen.text),
                    gap: {
                        let k = token_numbers(&seen.text).count();
                        seen.text != answer_text(u32::try_from(k).unwrap_or(u32::MAX))
                    },
                }
            });
        }
        let mut results = Vec::with_capacity(OPERATIONS);
        while let Some(joined) = tasks.join_next().await {
            results.push(joined.expect("no operation panics"));
        }
        results
    };
    let results = tokio::time::timeout(Duration::from_secs(60), soak)
        .await
        .expect("the soak ends within its 60 s guard");
    let elapsed = started.elapsed();

    assert_eq!(results.len(), OPERATIONS, "every operation ended");
    let count = |f: &dyn Fn(&Op) -> bool| results.iter().filter(|r| f(r)).count();
    let unclassified: Vec<_> = results
        .iter()
        .filter_map(|r| r.unclassified.as_deref())
        .collect();
    assert!(
        unclassified.is_empty(),
        "unclassified errors: {unclassified:?}"
    );
    assert_eq!(count(&|r| r.duplicated), 0, "a caller saw a token twice");
    assert_eq!(count(&|r| r.gap), 0, "a caller's text is not w1..wk");
    for r in &results {
        match r.ending {
            Ending::FailedBeforeContent | Ending::FailedAfterContent => {
                assert!(r.code.is_some(), "a failure without a code: {r:?}")
            }
            // A 2xx the caller cannot read is a silent failure.
            Ending::Undecodable => panic!("an undecodable answer delivered as a success: {r:?}"),
            Ending::Ok | Ending::Cancelled => {}
        }
    }
    let cancelled = count(&|r| r.ending == Ending::Cancelled);
    assert!(cancelled > 0, "some callers walked away");

    // The server saw every exchange end.
    for chaos in [&primary, &fallback] {
        let rows = chaos
            .settled_journal(Duration::from_secs(3), |_| true)
            .await;
        assert!(
            rows.iter().all(|r| r.outcome != Outcome::InFlight),
            "a journal row stayed in flight"
        );
    }

    // No leaked half-open trial: once the provider is healthy and the
    // longest break has passed, healthy calls go through and close the
    // breaker. A trial leaked by a cancelled or failed call would keep the
    // route half-open with its places taken, refusing these calls.
    primary.reset();
    tokio::time::sleep(MAX_BREAK * 2).await;
    for n in 0..12 {
        let ask = ask(OPERATIONS + n, None);
        let seen = common::through_base(
            &stack,
            &primary.base_url(),
            None,
            &Ask {
                stop_after: None,
                ..ask
            },
        )
        .await;
        assert_eq!(
            seen.ending,
            Ending::Ok,
            "healthy call {n} after the soak: {:?} (breaker {:?})",
            seen.failure,
            handle.state(&primary_route)
        );
    }
    assert_eq!(handle.state(&primary_route), BreakerState::Closed);
    let after: Vec<_> = primary
        .journal()
        .into_iter()
        .filter(|r| {
            r.request_id.as_deref().is_some_and(|id| {
                id.strip_prefix("soak-")
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| n >= OPERATIONS)
            })
        })
        .collect();
    assert_eq!(
        after.len(),
        12,
        "each healthy call reached the provider once"
    );

    // No stuck task: with the stack's services and clients gone, the
    // runtime is back to the chaos servers' own tasks.
    drop(stack);
    let mut alive = usize::MAX;
    for _ in 0..200 {
        alive = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        if alive <= baseline_tasks {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        alive <= baseline_tasks,
        "{alive} tasks alive after the soak, {baseline_tasks} before"
    );

    println!(
        "soak: {OPERATIONS} operations in {elapsed:?}: ok {}, failed before content {}, \
         after content {}, cancelled {cancelled}, undecodable {}; breaker opened {} times",
        count(&|r| r.ending == Ending::Ok),
        count(&|r| r.ending == Ending::FailedBeforeContent),
        count(&|r| r.ending == Ending::FailedAfterContent),
        count(&|r| r.ending == Ending::Undecodable),
        opened.load(Ordering::Relaxed),
    );
    primary.shutdown().await;
    fallback.shutdown().await;
}
