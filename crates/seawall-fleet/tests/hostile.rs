//! Configurations out of range are refused with the crate's usual error, a
//! message saying what is wrong, before anything runs: a latency past any
//! timer once panicked at the provider's first request, and a backoff base
//! or network delay near `Duration::MAX` panicked inside the comparison.

mod common;

use std::time::Duration;

use seawall_fleet::aws::{self, AwsConfig, BackoffKind};
use seawall_fleet::{FleetConfig, OutageKind, Provider, ProviderConfig};
use tokio::time::Instant;

/// A script the provider follows: the default fleet's.
fn script() -> ProviderConfig {
    FleetConfig::default().provider()
}

/// Builds a provider on `config` and, when it is accepted, sends it one
/// request (its answer due after the latency; run it on the paused
/// clock): the request is where an unchecked latency panicked.
async fn provider(config: ProviderConfig) -> Result<(), String> {
    let mut provider = Provider::new(config, Instant::now())?;
    let response = tower::Service::call(&mut provider, http::Request::new(()))
        .await
        .expect("the provider answers");
    assert!(!response.status().is_informational());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_provider_script_out_of_range_is_refused() {
    let brownout = |capacity| OutageKind::Brownout { capacity };
    let cases = [
        (
            "latencies",
            ProviderConfig {
                latency: Duration::MAX,
                ..script()
            },
        ),
        (
            "latencies",
            ProviderConfig {
                // No capacity: every request refused, after `error_latency`.
                capacity: 0.0,
                error_latency: Duration::MAX,
                ..script()
            },
        ),
        (
            "latencies",
            ProviderConfig {
                latency: seawall_fleet::MAX_LATENCY + Duration::from_nanos(1),
                ..script()
            },
        ),
        (
            "outage",
            ProviderConfig {
                outage_start: Duration::from_nanos(1),
                outage_len: Duration::MAX,
                ..script()
            },
        ),
        (
            "capacity",
            ProviderConfig {
                capacity: f64::NAN,
                ..script()
            },
        ),
        (
            "capacity",
            ProviderConfig {
                capacity: f64::INFINITY,
                ..script()
            },
        ),
        (
            "capacity",
            ProviderConfig {
                capacity: -1.0,
                ..script()
            },
        ),
        (
            "reject_cost",
            ProviderConfig {
                reject_cost: f64::NAN,
                ..script()
            },
        ),
        (
            "reject_cost",
            ProviderConfig {
                reject_cost: f64::NEG_INFINITY,
                ..script()
            },
        ),
        (
            "reject_cost",
            ProviderConfig {
                reject_cost: -0.5,
                ..script()
            },
        ),
        (
            "brown-out",
            ProviderConfig {
                outage: brownout(f64::NAN),
                ..script()
            },
        ),
        (
            "brown-out",
            ProviderConfig {
                outage: brownout(1.5),
                ..script()
            },
        ),
        (
            "brown-out",
            ProviderConfig {
                outage: brownout(-0.1),
                ..script()
            },
        ),
    ];
    for (word, config) in cases {
        let why = config.check().expect_err("refused");
        assert!(why.contains(word), "{config:?}: {why}");
        assert_eq!(provider(config).await, Err(why), "{config:?}");
    }
    // The edges are scripts.
    for config in [
        script(),
        ProviderConfig {
            capacity: 0.0,
            reject_cost: 0.0,
            latency: seawall_fleet::MAX_LATENCY,
            error_latency: seawall_fleet::MAX_LATENCY,
            outage_start: Duration::ZERO,
            outage_len: Duration::MAX,
            outage: brownout(1.0),
            retry_after: Some(u32::MAX),
        },
        ProviderConfig {
            outage_start: Duration::MAX,
            outage_len: Duration::ZERO,
            outage: brownout(0.0),
            ..script()
        },
    ] {
        assert_eq!(provider(config).await, Ok(()), "{config:?}");
    }
}

/// A script `check` refuses asks nothing of the clock when it is read:
/// an outage ending past any time never ends.
#[test]
fn an_outage_past_any_time_reads_as_never_ending() {
    let config = ProviderConfig {
        outage_start: Duration::from_secs(1),
        outage_len: Duration::MAX,
        ..script()
    };
    assert_eq!(config.capacity_at(Duration::ZERO), config.capacity);
    assert_eq!(config.capacity_at(Duration::MAX), 0.0);
}

/// The fleet refuses, in its own check, every value its provider's script
/// would: a run does not find its provider refused halfway.
#[test]
fn a_fleet_whose_provider_is_refused_is_refused() {
    let small = common::small_fleet();
    for (word, config) in [
        (
            "headroom",
            FleetConfig {
                headroom: f64::NAN,
                ..small.clone()
            },
        ),
        (
            "headroom",
            FleetConfig {
                headroom: f64::INFINITY,
                ..small.clone()
            },
        ),
        (
            "headroom",
            FleetConfig {
                headroom: -1.0,
                ..small.clone()
            },
        ),
        // Finite, but its product with the fleet's load is not.
        (
            "capacity",
            FleetConfig {
                headroom: f64::MAX,
                rate: seawall_fleet::MAX_RATE,
                ..small.clone()
            },
        ),
        (
            "reject_cost",
            FleetConfig {
                reject_cost: f64::NAN,
                ..small.clone()
            },
        ),
        (
            "reject_cost",
            FleetConfig {
                reject_cost: -1.0,
                ..small.clone()
            },
        ),
        (
            "brown-out",
            FleetConfig {
                outage: OutageKind::Brownout { capacity: f64::NAN },
                ..small.clone()
            },
        ),
    ] {
        let why = config.check().expect_err("refused");
        assert!(why.contains(word), "{config:?}: {why}");
    }
    assert_eq!(small.check(), Ok(()));
    // Public and asked of any configuration: saturates, not panics.
    let slow = FleetConfig {
        latency: Duration::MAX,
        ..small
    };
    assert_eq!(slow.drain(), Duration::MAX);
}

/// A comparison small enough to run in a moment.
fn small() -> AwsConfig {
    AwsConfig {
        clients: 3,
        trials: 1,
        ..AwsConfig::default()
    }
}

#[test]
fn an_aws_comparison_out_of_range_is_refused() {
    let long = aws::MAX_DELAY + Duration::from_nanos(1);
    let cases = [
        (
            "clients",
            AwsConfig {
                clients: 0,
                ..small()
            },
        ),
        (
            "clients",
            AwsConfig {
                clients: usize::MAX,
                ..small()
            },
        ),
        (
            "trials",
            AwsConfig {
                trials: 0,
                ..small()
            },
        ),
        (
            "trials",
            AwsConfig {
                trials: usize::MAX,
                ..small()
            },
        ),
        // Each count within its own bound, the two together days of work.
        (
            "squared times trials",
            AwsConfig {
                clients: aws::MAX_CLIENTS,
                trials: 2,
                ..small()
            },
        ),
        (
            "squared times trials",
            AwsConfig {
                clients: 1_001,
                trials: 100,
                ..small()
            },
        ),
        (
            "base",
            AwsConfig {
                base: Duration::ZERO,
                ..small()
            },
        ),
        (
            "base",
            AwsConfig {
                base: Duration::MAX,
                ..small()
            },
        ),
        (
            "base",
            AwsConfig {
                base: long,
                ..small()
            },
        ),
        (
            "cap",
            AwsConfig {
                cap: Duration::MAX,
                ..small()
            },
        ),
        (
            "mean",
            AwsConfig {
                net_mean: Duration::MAX,
                ..small()
            },
        ),
        (
            "deviation",
            AwsConfig {
                net_sd: Duration::MAX,
                ..small()
            },
        ),
        (
            "deviation",
            AwsConfig {
                net_sd: long,
                ..small()
            },
        ),
    ];
    for (word, config) in cases {
        let why = config.check().expect_err("refused");
        assert!(why.contains(word), "{config:?}: {why}");
        // Refused before any trial runs (the counts above would run for
        // ever, or allocate without end).
        assert_eq!(aws::run(&config, &BackoffKind::ALL), Err(why), "{config:?}");
    }
}

/// The most work allowed is still allowed: the largest count of each at
/// the contention's bound.
#[test]
fn the_largest_counts_within_the_contention_bound_are_allowed() {
    for (clients, trials) in [(aws::MAX_CLIENTS, 1), (1_000, 100), (100, aws::MAX_TRIALS)] {
        let config = AwsConfig {
            clients,
            trials,
            ..AwsConfig::default()
        };
        assert_eq!(config.check(), Ok(()), "{config:?}");
    }
}

/// The longest delays allowed run, on the paused clock, in a moment.
#[test]
fn the_longest_delays_allowed_run() {
    let config = AwsConfig {
        base: aws::MAX_DELAY,
        cap: aws::MAX_DELAY,
        net_mean: aws::MAX_DELAY,
        net_sd: aws::MAX_DELAY,
        ..small()
    };
    assert_eq!(config.check(), Ok(()));
    let reports = aws::run(&config, &BackoffKind::ALL).expect("runs");
    assert_eq!(reports.len(), BackoffKind::ALL.len());
    for report in reports {
        assert!(report.calls >= 3.0, "{report:?}");
        assert!(report.completion_s.is_finite(), "{report:?}");
    }
    // Public, and a base past half of any duration is capped anyway.
    let backoff = BackoffKind::Exp.backoff(Duration::MAX, Duration::from_secs(2));
    assert_eq!(backoff.cap(), Duration::from_secs(2));
}
