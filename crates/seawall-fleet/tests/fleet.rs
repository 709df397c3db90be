//! The acceptance figures, on a smaller fleet than the README's run.

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
    // Outside the outage nothing fails under the fleet preset.
    assert_eq!(fleet.failed, 300 * 30, "{fleet:?}");
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
    let reports = aws::run(&config, &BackoffKind::ALL);
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
fn the_seawall_stack_is_the_shipped_preset() {
    use rand::SeedableRng;
    use seawall::breaker::BreakerLayer;
    use seawall::retry::{Budget, RetryPolicy};
    use seawall::stream::StreamGuardLayer;

    // The simulation assembles Stack::interactive() layer by layer (to seed
    // the retry layer's jitter): its settings must stay the preset's.
    let shipped = format!("{:?}", seawall::stack::Stack::interactive());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let settings = seawall_fleet::stacks::seawall_settings(&mut rng);
    for part in [
        format!("total: {:?}", settings.total),
        format!("per_attempt: {:?}", settings.per_attempt),
        format!("{:?}", settings.retry),
        format!("{:?}", RetryPolicy::interactive()),
        format!("{:?}", settings.budget),
        format!("{:?}", Budget::ratio(0.2, 10, Duration::from_secs(10))),
        // The default breaker; the simulation only fixes its jitter per client.
        format!("{:?}", BreakerLayer::new()),
        format!("{:?}", StreamGuardLayer::interactive()),
        "propagate: None".to_string(),
    ] {
        assert!(shipped.contains(&part), "{part}\nnot in\n{shipped}");
    }
}
