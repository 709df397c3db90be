//! The fleet at scale: `cargo bench -p seawall-fleet --bench scale` runs
//! 10 000 clients for 10 virtual minutes through every stack and prints the
//! table and the real time it took. `FLEET_CLIENTS`, `FLEET_SECONDS` and
//! `FLEET_STACKS` (comma-separated) change the run.

use std::time::{Duration, Instant};

use seawall_fleet::{FleetConfig, StackKind};

fn main() {
    let var = |name: &str| std::env::var(name).ok();
    let clients = var("FLEET_CLIENTS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let seconds = var("FLEET_SECONDS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let stacks = var("FLEET_STACKS")
        .map(|v| v.split(',').filter_map(StackKind::parse).collect())
        .unwrap_or_else(|| StackKind::ALL.to_vec());
    let config = FleetConfig {
        clients,
        duration: Duration::from_secs(seconds),
        stacks,
        ..FleetConfig::default()
    };
    let started = Instant::now();
    let reports = seawall_fleet::run(&config);
    let took = started.elapsed();
    println!("{}", seawall_fleet::table_header());
    for report in &reports {
        println!("{}", seawall_fleet::table_line(report));
    }
    println!(
        "{clients} clients x {seconds} virtual s: {:.1} s real",
        took.as_secs_f64()
    );
}
