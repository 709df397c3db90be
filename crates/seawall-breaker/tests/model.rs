//! The breaker against a plain reference model: random sequences of call
//! outcomes and clock advances must give the same admissions, refusals,
//! probe times and states.

use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use proptest::prelude::*;
use seawall_breaker::{BreakDuration, BreakerLayer, BreakerState, Trip};
use seawall_core::{BoxError, Code, Failure, RouteId};
use tower::{Layer, Service, ServiceExt};

#[derive(Debug, Clone, Copy)]
enum Op {
    Call(Outcome),
    Advance(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Success,
    Failure,
    Neutral,
}

const BUCKET_MS: u64 = 1_000;
const BUCKETS: u64 = 5;
const MIN_CALLS: usize = 4;
const BASE_MS: u64 = 3_000;
const MAX_MS: u64 = 20_000;
const CLOSE_AFTER: u32 = 2;

#[derive(Debug)]
enum State {
    Closed,
    Open { until: u64 },
    HalfOpen { successes: u32 },
}

/// The specification, written the slow and obvious way.
struct Model {
    now: u64,
    state: State,
    trips: u32,
    /// (bucket number, failed) of every recorded closed call.
    calls: Vec<(u64, bool)>,
}

impl Model {
    fn break_ms(trips: u32) -> u64 {
        (BASE_MS << (trips - 1).min(20)).min(MAX_MS)
    }

    /// Some(None) when admitted, Some(retry_after) when refused.
    fn call(&mut self, outcome: Outcome) -> Result<(), Option<u64>> {
        if let State::Open { until } = self.state {
            if self.now < until {
                return Err(Some(until - self.now));
            }
            self.state = State::HalfOpen { successes: 0 };
        }
        match &mut self.state {
            State::Closed => {
                if outcome == Outcome::Neutral {
                    return Ok(());
                }
                let bucket = self.now / BUCKET_MS;
                self.calls.push((bucket, outcome == Outcome::Failure));
                if outcome == Outcome::Failure {
                    let window: Vec<_> = self
                        .calls
                        .iter()
                        .filter(|(b, _)| bucket - b < BUCKETS)
                        .collect();
                    let failures = window.iter().filter(|(_, failed)| *failed).count();
                    if window.len() >= MIN_CALLS && failures * 2 >= window.len() {
                        self.trips = 1;
                        self.state = State::Open {
                            until: self.now + Self::break_ms(1),
                        };
                    }
                }
            }
            State::HalfOpen { successes } => match outcome {
                Outcome::Neutral => {}
                Outcome::Success => {
                    *successes += 1;
                    if *successes >= CLOSE_AFTER {
                        self.state = State::Closed;
                        self.trips = 0;
                        self.calls.clear();
                    }
                }
                Outcome::Failure => {
                    self.trips += 1;
                    self.state = State::Open {
                        until: self.now + Self::break_ms(self.trips),
                    };
                }
            },
            State::Open { .. } => unreachable!(),
        }
        Ok(())
    }

    fn state(&self) -> BreakerState {
        match self.state {
            State::Closed => BreakerState::Closed,
            State::Open { .. } => BreakerState::Open,
            State::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

/// A provider that answers as the request says.
#[derive(Clone)]
struct Provider;

impl Service<http::Request<Outcome>> for Provider {
    type Response = http::Response<Empty<Bytes>>;
    type Error = BoxError;
    type Future = std::future::Ready<Result<Self::Response, BoxError>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Outcome>) -> Self::Future {
        std::future::ready(match request.body() {
            Outcome::Success => Ok(http::Response::new(Empty::new())),
            Outcome::Failure => Err(Failure::new(Code::Overloaded).into()),
            Outcome::Neutral => Err(Failure::new(Code::ContextTooLong).into()),
        })
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => prop_oneof![
            3 => Just(Outcome::Failure),
            2 => Just(Outcome::Success),
            1 => Just(Outcome::Neutral),
        ]
        .prop_map(Op::Call),
        2 => (0u64..4_000).prop_map(Op::Advance),
    ];
    proptest::collection::vec(op, 1..200)
}

fn check(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let layer = BreakerLayer::new()
            .trip(Trip::FailureRatio {
                ratio: 0.5,
                window: Duration::from_millis(BUCKET_MS * BUCKETS),
                buckets: BUCKETS as u16,
                min_calls: MIN_CALLS as u32,
            })
            .half_open_trials(3)
            .close_after(CLOSE_AFTER)
            .break_duration(BreakDuration {
                base: Duration::from_millis(BASE_MS),
                max: Duration::from_millis(MAX_MS),
                jitter: 0.0,
            });
        let handle = layer.handle();
        let service = layer.layer(Provider);
        let route = RouteId::new("model.example");
        let mut model = Model {
            now: 0,
            state: State::Closed,
            trips: 0,
            calls: Vec::new(),
        };
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Advance(ms) => {
                    tokio::time::advance(Duration::from_millis(ms)).await;
                    model.now += ms;
                }
                Op::Call(outcome) => {
                    let request = http::Request::get("https://model.example/v1")
                        .body(outcome)
                        .unwrap();
                    let got = match service.clone().oneshot(request).await {
                        Ok(_) => Ok(()),
                        Err(error) => match error.as_open() {
                            Some(refusal) => {
                                Err(refusal.retry_after().map(|d| d.as_millis() as u64))
                            }
                            None => Ok(()),
                        },
                    };
                    let expected = model.call(outcome);
                    prop_assert_eq!(got, expected, "step {} {:?}", step, op);
                }
            }
            prop_assert_eq!(
                handle.state(&route),
                model.state(),
                "step {} {:?}",
                step,
                op
            );
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn breaker_agrees_with_the_reference_model(ops in ops()) {
        check(ops)?;
    }
}
