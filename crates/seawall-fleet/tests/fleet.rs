//! The acceptance figures, on a smaller fleet than the README's run.

mod common;

use std::time::Duration;

use seawall_fleet::aws::{self, AwsConfig, BackoffKind};
use seawall_fleet::{FleetConfig, OutageKind, StackKind, StackReport};

fn outage_config(stacks: Vec<StackKind>) -> FleetConfig {
    FleetConfig {
        clients: 300,
        duration: Duration::from_secs(110),
        outage_start: Duration::from_secs(40),
        outage_len: Duration::from_secs(30),
        stacks,
        ..FleetConfig::default()
    }
}

fn by_stack(reports: &[StackReport], kind: StackKind) -> &StackReport {
    reports.iter().find(|r| r.stack == kind).expect("stack ran")
}

#[test]
fn a_total_outage_amplifies_naive_retries_not_the_fleet_preset() {
    let reports = seawall_fleet::run(&outage_config(vec![
        StackKind::Naive,
        StackKind::SeawallFleet,
    ]));
    let naive = by_stack(&reports, StackKind::Naive);
    let fleet = by_stack(&reports, StackKind::SeawallFleet);
    assert!(naive.amplification >= 2.5, "{naive:?}");
    assert!(fleet.amplification <= 1.1, "{fleet:?}");
    // The capacity-limited provider is serving the fleet again within 2 s
    // of virtual time; the naive fleet's retries keep it over capacity.
    let recovered = fleet.recover_s.expect("the fleet preset recovers");
    assert!(recovered <= 2.0, "{fleet:?}");
    assert_eq!(fleet.over_capacity_s, Some(0.0), "{fleet:?}");
    let over = naive.over_capacity_s.unwrap_or(f64::INFINITY);
    assert!(over > 2.0, "{naive:?}");
    // Outside the outage the fleet preset fails only operations that find
    // a client's breaker still open in the first second after it: the
    // break (1 s less up to 20 % jitter, drawn per trip) can outlast a
    // period that began when the last probe failed.
    let outage_ops = 300 * 30;
    assert!(fleet.failed >= outage_ops, "{fleet:?}");
    assert!(fleet.failed <= outage_ops + 300, "{fleet:?}");
}

#[test]
fn a_brownout_is_refused_at_the_clients_own_rate() {
    let config = FleetConfig {
        outage: OutageKind::Brownout { capacity: 0.2 },
        ..outage_config(vec![StackKind::Naive, StackKind::SeawallFleet])
    };
    let reports = seawall_fleet::run(&config);
    let naive = by_stack(&reports, StackKind::Naive);
    let fleet = by_stack(&reports, StackKind::SeawallFleet);
    assert!(naive.amplification >= 2.5, "{naive:?}");
    assert!(fleet.amplification <= 1.1, "{fleet:?}");
    assert!(fleet.recover_s.is_some_and(|s| s <= 2.0), "{fleet:?}");
}

#[test]
fn the_same_seed_gives_the_same_table() {
    let config = FleetConfig {
        clients: 60,
        duration: Duration::from_secs(50),
        outage_start: Duration::from_secs(15),
        outage_len: Duration::from_secs(20),
        ..FleetConfig::default()
    };
    let first = seawall_fleet::run(&config);
    let again = seawall_fleet::run(&FleetConfig {
        threads: 1,
        ..config.clone()
    });
    assert_eq!(first, again);
    let table = |reports: &[StackReport]| -> Vec<String> {
        reports.iter().map(seawall_fleet::table_line).collect()
    };
    assert_eq!(table(&first), table(&again));
    let other = seawall_fleet::run(&FleetConfig { seed: 2, ..config });
    assert_ne!(first, other, "the seed drives the schedule and the jitter");
}

#[test]
fn the_aws_comparison_has_the_blogs_shape() {
    let config = AwsConfig {
        trials: 8,
        ..AwsConfig::default()
    };
    let reports = aws::run(&config, &BackoffKind::ALL).expect("the comparison runs");
    let get = |kind| reports.iter().find(|r| r.backoff == kind).expect("ran");
    let none = get(BackoffKind::None);
    let exp = get(BackoffKind::Exp);
    let equal = get(BackoffKind::Equal);
    let full = get(BackoffKind::Full);
    let decorrelated = get(BackoffKind::Decorrelated);
    let summary = format!("{reports:#?}");
    // No backoff: the most calls of all, the quickest completion.
    assert!(none.calls > exp.calls, "{summary}");
    // Exponential without jitter: the most calls and the longest completion
    // of the backoffs.
    for jittered in [equal, full, decorrelated] {
        assert!(exp.calls > jittered.calls, "{summary}");
        assert!(exp.completion_s > jittered.completion_s, "{summary}");
    }
    // Full jitter: the fewest calls; equal jitter slightly more, and slower.
    assert!(full.calls < equal.calls, "{summary}");
    assert!(full.calls <= decorrelated.calls, "{summary}");
    assert!(equal.completion_s > full.completion_s, "{summary}");
    // Decorrelated close to full.
    assert!(decorrelated.calls < full.calls * 1.35, "{summary}");
}

#[test]
fn the_seawall_stacks_are_the_presets_they_name() {
    use seawall::stack::Stack;
    use seawall_fleet::stacks;

    // `seawall` is Stack::interactive() as shipped; `seawall-fleet` the same
    // with the fleet budget and breaker, whose knobs the README shows.
    let shipped = format!("{:?}", Stack::interactive());
    assert_eq!(format!("{:?}", stacks::seawall_preset()), shipped);
    let fleet = format!("{:?}", stacks::seawall_fleet_preset());
    assert_ne!(fleet, shipped);
    assert_eq!(
        fleet,
        format!(
            "{:?}",
            Stack::interactive()
                .budget(stacks::fleet_budget())
                .breaker(stacks::fleet_breaker())
        )
    );
    for part in [
        "Consecutive { failures: 3 }",
        "base: 1s, max: 1s, jitter: 0.2",
    ] {
        assert!(fleet.contains(part), "{part}\nnot in\n{fleet}");
    }
}

/// A configuration the simulation cannot run is refused before it starts:
/// no clients, or an infinite rate, once looped for ever; a run of years
/// needed gigabytes of per-slot figures.
#[test]
fn unrunnable_configurations_are_refused_at_entry() {
    let small = common::small_fleet();
    for config in [
        FleetConfig {
            clients: 0,
            ..small.clone()
        },
        FleetConfig {
            rate: f64::INFINITY,
            ..small.clone()
        },
        FleetConfig {
            rate: seawall_fleet::MAX_RATE * 2.0,
            ..small.clone()
        },
        FleetConfig {
            duration: seawall_fleet::MAX_DURATION * 2,
            ..small.clone()
        },
        // The run waits for operations in flight in proportion to these.
        FleetConfig {
            latency: seawall_fleet::MAX_LATENCY + Duration::from_millis(1),
            ..small.clone()
        },
        FleetConfig {
            error_latency: seawall_fleet::MAX_LATENCY * 10,
            ..small.clone()
        },
        // Shorter than a slot: no operation starts in it, and its
        // amplification read 0.00x.
        FleetConfig {
            outage_len: Duration::from_millis(50),
            ..small.clone()
        },
        FleetConfig {
            outage_len: Duration::ZERO,
            ..small.clone()
        },
    ] {
        assert!(config.check().is_err(), "{config:?}");
        let (done, outcome) = std::sync::mpsc::channel();
        let described = format!("{config:?}");
        // On its own thread: a run that never ends fails the test by the
        // timeout below instead of hanging it.
        std::thread::spawn(move || {
            let ran = std::panic::catch_unwind(|| seawall_fleet::run(&config));
            let _ = done.send(ran.is_ok());
        });
        let ran = outcome
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("still running after 30 s: {described}"));
        assert!(!ran, "ran: {described}");
    }
    assert_eq!(small.check(), Ok(()));
    let slowest = FleetConfig {
        latency: seawall_fleet::MAX_LATENCY,
        error_latency: seawall_fleet::MAX_LATENCY,
        outage_len: seawall_fleet::SLOT,
        ..small
    };
    assert_eq!(slowest.check(), Ok(()));
}

/// A run cut short sees the same recovery as a longer one on the same
/// schedule, or says it ended too soon (`>` its horizon): windows running
/// past the end once read as a drop, and a recovery after the last
/// visible one printed `never`.
#[test]
fn a_recovery_past_the_runs_end_reads_as_later_not_never() {
    let config = |secs| FleetConfig {
        duration: Duration::from_secs(secs),
        outage_start: Duration::from_secs(60),
        outage_len: Duration::from_secs(30),
        ..outage_config(vec![StackKind::Naive, StackKind::Seawall])
    };
    let long = seawall_fleet::run(&config(180));
    let mut censored = 0;
    for secs in [100, 103, 106, 110] {
        let short = seawall_fleet::run(&config(secs));
        for (long, short) in long.iter().zip(&short) {
            let line = seawall_fleet::table_line(short);
            assert!(!line.contains("never"), "{line}");
            for (seen, cut) in [
                (long.recover_s, short.recover_s),
                (long.over_capacity_s, short.over_capacity_s),
            ] {
                let seen = seen.expect("the long run sees both settle");
                match cut {
                    Some(cut) => assert_eq!(cut, seen, "{secs} s: {short:?}"),
                    None => {
                        assert!(short.horizon_s < seen, "{secs} s: {short:?}");
                        assert!(line.contains(&format!(">{:.1}", short.horizon_s)), "{line}");
                        censored += 1;
                    }
                }
            }
        }
    }
    assert!(censored > 0, "no run ended before a recovery: {long:?}");
}

/// Every operation started is counted, however slow the provider: at its
/// slowest, three refused attempts outlast the 180 s the run once waited
/// after its end, and those operations vanished from every figure.
#[test]
fn the_slowest_provider_still_answers_every_operation_counted() {
    let config = FleetConfig {
        clients: 5,
        duration: Duration::from_secs(20),
        outage_start: Duration::from_secs(5),
        outage_len: Duration::from_secs(5),
        // No capacity: every attempt refused, each after a minute.
        headroom: 0.0,
        latency: seawall_fleet::MAX_LATENCY,
        error_latency: seawall_fleet::MAX_LATENCY,
        stacks: vec![StackKind::Naive, StackKind::Sdk],
        ..FleetConfig::default()
    };
    for report in seawall_fleet::run(&config) {
        assert_eq!(report.operations, 5 * 20, "{report:?}");
        assert_eq!(
            report.succeeded + report.failed,
            report.operations,
            "{report:?}"
        );
        assert_eq!(report.unfinished, 0, "{report:?}");
    }
}

/// A rate under the floor runs as the floor, for the provider's capacity
/// as for the clients' period: the two once read different rates.
#[test]
fn a_rate_under_the_floor_is_the_floor_everywhere() {
    let config = FleetConfig {
        clients: 10,
        rate: 1e-9,
        headroom: 2.0,
        ..FleetConfig::default()
    };
    assert_eq!(config.effective_rate(), seawall_fleet::MIN_RATE);
    assert_eq!(config.capacity(), 10.0 * seawall_fleet::MIN_RATE * 2.0);
    assert_eq!(config.provider().capacity, config.capacity());
}

/// Every operation in flight is held in memory until it ends, so the
/// flags' product is what a run holds: 10 000 clients at 1000 operations a
/// second, each flag within its own bound, once ran until memory ran out.
/// Refused before anything runs; the check alone is asserted first, so
/// that without it the test fails instead of running such a fleet.
#[test]
fn a_fleet_holding_too_many_operations_at_once_is_refused_at_entry() {
    let base = FleetConfig {
        clients: 10_000,
        rate: seawall_fleet::MAX_RATE,
        stacks: vec![StackKind::Naive],
        ..FleetConfig::default()
    };
    for config in [
        base.clone(),
        FleetConfig {
            latency: seawall_fleet::MAX_LATENCY,
            ..base.clone()
        },
        // Each flag's own extreme but the rate: 10 000 clients whose
        // operations last minutes.
        FleetConfig {
            rate: 1.0,
            latency: seawall_fleet::MAX_LATENCY,
            stacks: StackKind::ALL.to_vec(),
            ..base.clone()
        },
    ] {
        let why = config.check().expect_err("refused");
        assert!(why.contains("in flight"), "{why}");
        let ran = std::panic::catch_unwind(|| seawall_fleet::run(&config));
        assert!(ran.is_err(), "ran: {config:?}");
    }
    // The README's scale run is within the bound (checked, not run).
    let scale = FleetConfig {
        clients: 10_000,
        duration: Duration::from_secs(600),
        ..FleetConfig::default()
    };
    assert_eq!(scale.check(), Ok(()));
    let (_, held) = scale.in_flight().expect("stacks");
    assert!(held <= seawall_fleet::MAX_IN_FLIGHT as f64, "{held}");
}

/// With no success in the 30 s before the outage there is no level to
/// recover to: the recovery reads "not measured" (`null` with
/// `recover_measured: false`, `-` in the table), where it once read an
/// instant recovery (0.0) against a threshold of zero.
#[test]
fn a_recovery_without_a_baseline_is_not_measured() {
    let config = FleetConfig {
        clients: 1,
        rate: 0.01,
        duration: Duration::from_secs(180),
        outage_start: Duration::from_secs(60),
        outage_len: Duration::from_secs(30),
        stacks: StackKind::ALL.to_vec(),
        ..FleetConfig::default()
    };
    for report in seawall_fleet::run(&config) {
        assert_eq!(report.goodput_before, 0.0, "{report:?}");
        assert_eq!(report.recover_s, None, "{report:?}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["recover_s"], serde_json::Value::Null, "{json}");
        assert_eq!(json["recover_measured"], false, "{json}");
        let line = seawall_fleet::table_line(&report);
        let recover = line.split_whitespace().nth(6);
        assert_eq!(recover, Some("-"), "{line}");
        // The capacity settles whatever the goodput was: still measured.
        assert!(report.over_capacity_s.is_some(), "{report:?}");
    }
}
