//! `seawall fleet`: a fleet of clients, each with its own stack, against
//! one simulated provider on tokio's paused clock (`seawall_fleet`).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use seawall_fleet::aws::{self, AwsConfig, BackoffKind};
use seawall_fleet::{FleetConfig, OutageKind, StackKind};

#[derive(clap::Args)]
pub(crate) struct FleetArgs {
    /// Clients, each with its own stack (budget and breaker): at most
    /// 10000. Default 1000, or 100 with --backoff.
    #[arg(long)]
    clients: Option<usize>,
    /// Operations per second per client.
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// Virtual seconds during which clients start operations.
    #[arg(long, default_value_t = 180.0)]
    duration: f64,
    /// When the outage starts, virtual seconds.
    #[arg(long, default_value_t = 60.0)]
    outage_start: f64,
    /// How long the outage lasts, virtual seconds: at least 0.1.
    #[arg(long, default_value_t = 30.0)]
    outage: f64,
    /// A brown-out at this share of capacity (0.2: 20 %) instead of a total
    /// outage.
    #[arg(long)]
    brownout: Option<f64>,
    /// Provider capacity as a multiple of the fleet's own load.
    #[arg(long, default_value_t = 1.2)]
    headroom: f64,
    /// Provider latency of a served request, milliseconds: at most 60000.
    #[arg(long, default_value_t = 200)]
    latency_ms: u64,
    /// Provider latency of a refusal, milliseconds: at most 60000.
    #[arg(long, default_value_t = 20)]
    error_latency_ms: u64,
    /// Capacity a refusal costs, as a share of a served request.
    #[arg(long, default_value_t = 0.25)]
    reject_cost: f64,
    /// A retry-after (seconds) on the provider's 429s.
    #[arg(long)]
    retry_after: Option<u32>,
    /// Stacks to compare, comma-separated: naive, sdk, seawall,
    /// seawall-fleet.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "naive,sdk,seawall,seawall-fleet"
    )]
    stacks: Vec<String>,
    /// The seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stacks simulated at once (default: the cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Run the AWS "Exponential Backoff and Jitter" comparison instead:
    /// none, exp, equal, full, decorrelated (comma-separated) or all. It
    /// reads --clients, --trials, --seed and --json only; the outage and
    /// chart flags are refused beside it.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with_all = [
            "rate", "duration", "outage_start", "outage", "brownout", "headroom",
            "latency_ms", "error_latency_ms", "reject_cost", "retry_after", "stacks",
            "threads", "svg",
        ]
    )]
    backoff: Vec<String>,
    /// Runs averaged in the backoff comparison (with --backoff only): at
    /// most 10000.
    #[arg(long, default_value_t = 100, requires = "backoff")]
    trials: usize,
    /// One JSON object per row instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw offered load vs capacity over time, per stack, into this SVG.
    #[arg(long)]
    svg: Option<std::path::PathBuf>,
}

fn seconds(value: f64, name: &str) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(value) {
        Ok(duration) if duration <= MAX_SECONDS => Ok(duration),
        _ => Err(format!(
            "--{name} must be a non-negative number of seconds, at most {}",
            MAX_SECONDS.as_secs()
        )),
    }
}

/// The longest virtual time a flag may name: the longest run the fleet
/// simulates (a day), whose figures it keeps per 100 ms slot.
const MAX_SECONDS: Duration = seawall_fleet::MAX_DURATION;

/// How long the run must go on after the outage ends: recovery is the
/// first second from which goodput holds for 5 s on end, so a run ending
/// 10 s after the outage shows recoveries up to 4 s (a later one reads
/// `>4.0`).
const AFTER_OUTAGE: Duration = Duration::from_secs(10);

fn usage(message: &str) -> ExitCode {
    eprintln!("seawall fleet: {message}");
    ExitCode::from(2)
}

pub(crate) fn run(args: FleetArgs) -> ExitCode {
    if !args.backoff.is_empty() {
        return run_aws(&args);
    }
    let config = match config(&args) {
        Ok(config) => config,
        Err(why) => return usage(&why),
    };
    let reports = seawall_fleet::run(&config);
    let mut out = std::io::stdout();
    let mut lines = Vec::new();
    if args.json {
        for report in &reports {
            lines.push(serde_json::to_string(report).expect("reports serialize"));
        }
    } else {
        lines.push(seawall_fleet::table_header());
        lines.extend(reports.iter().map(seawall_fleet::table_line));
    }
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    if let Some(path) = &args.svg {
        let svg = match seawall_fleet::svg::render(&reports) {
            Ok(svg) => svg,
            Err(err) => {
                eprintln!("seawall fleet: cannot draw the chart: {err}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(err) = std::fs::write(path, svg) {
            eprintln!("seawall fleet: cannot write {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The run `args` ask for, or why it cannot run (a usage error).
fn config(args: &FleetArgs) -> Result<FleetConfig, String> {
    let clients = args.clients.unwrap_or(1000);
    if !(1..=10_000).contains(&clients) {
        return Err("--clients must be between 1 and 10000".to_owned());
    }
    // Refused below the fleet's floor rather than run at the floor: the
    // table would measure another rate than the one asked for.
    if !(seawall_fleet::MIN_RATE..=seawall_fleet::MAX_RATE).contains(&args.rate) {
        return Err(format!(
            "--rate must be between {:e} and {} operations per second",
            seawall_fleet::MIN_RATE,
            seawall_fleet::MAX_RATE
        ));
    }
    if !(args.headroom.is_finite() && args.headroom >= 0.0) {
        return Err("--headroom must be a non-negative multiple".to_owned());
    }
    if !(args.reject_cost.is_finite() && args.reject_cost >= 0.0) {
        return Err("--reject-cost must be a non-negative share".to_owned());
    }
    let max_latency_ms = seawall_fleet::MAX_LATENCY.as_millis();
    for (value, flag) in [
        (args.latency_ms, "--latency-ms"),
        (args.error_latency_ms, "--error-latency-ms"),
    ] {
        if u128::from(value) > max_latency_ms {
            return Err(format!("{flag} must be at most {max_latency_ms}"));
        }
    }
    let mut stacks = Vec::new();
    for name in &args.stacks {
        match StackKind::parse(name.trim()) {
            Some(kind) => stacks.push(kind),
            None => return Err(format!("unknown stack {name:?}")),
        }
    }
    let outage = match args.brownout {
        None => OutageKind::Total,
        Some(share) if (0.0..=1.0).contains(&share) => OutageKind::Brownout { capacity: share },
        Some(_) => return Err("--brownout must be a share between 0 and 1".to_owned()),
    };
    let (duration, outage_start, outage_len) = match (
        seconds(args.duration, "duration"),
        seconds(args.outage_start, "outage-start"),
        seconds(args.outage, "outage"),
    ) {
        (Ok(d), Ok(s), Ok(l)) => (d, s, l),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(e),
    };
    if outage_len < seawall_fleet::SLOT {
        return Err(format!(
            "--outage must last at least {} s: the figures are kept per slot \
             of that length, and a shorter outage starts no operation",
            seawall_fleet::SLOT.as_secs_f64()
        ));
    }
    if outage_start + outage_len + AFTER_OUTAGE > duration {
        return Err(format!(
            "--duration ({} s) must run at least {} s past the outage's end ({} s): \
             recovery is measured after it",
            duration.as_secs_f64(),
            AFTER_OUTAGE.as_secs(),
            (outage_start + outage_len).as_secs_f64()
        ));
    }
    let defaults = FleetConfig::default();
    let config = FleetConfig {
        clients,
        rate: args.rate,
        duration,
        outage_start,
        outage_len,
        outage,
        headroom: args.headroom,
        latency: Duration::from_millis(args.latency_ms),
        error_latency: Duration::from_millis(args.error_latency_ms),
        reject_cost: args.reject_cost,
        retry_after: args.retry_after,
        seed: args.seed,
        stacks,
        threads: args.threads.unwrap_or(defaults.threads),
    };
    // A finite headroom may still make an infinite capacity with the
    // fleet's load, which the provider refuses: named here by its flag.
    if !config.capacity().is_finite() {
        return Err(format!(
            "--headroom ({}) × --clients × --rate must be a finite capacity",
            args.headroom
        ));
    }
    // Each flag's own bound does not bound their product: every operation
    // in flight is held in memory, and 10 000 clients at 1000 operations a
    // second (each flag allowed) would hold tens of millions of them.
    if let Some((kind, held)) = config.in_flight()
        && held > seawall_fleet::MAX_IN_FLIGHT as f64
    {
        return Err(format!(
            "--clients ({clients}) × --rate ({}) × the longest an operation can last \
             ({} s in the {} stack, from the latencies and --retry-after) is up to \
             {held:.0} operations in flight at once, over the {} a run holds: lower \
             --clients, --rate or the latencies",
            args.rate,
            config.longest_operation(kind).as_secs_f64(),
            kind.as_str(),
            seawall_fleet::MAX_IN_FLIGHT
        ));
    }
    // Every flag is checked above; this keeps the library's own refusal
    // (which `run` would panic on) a usage error should the two drift.
    config.check()?;
    Ok(config)
}

/// The comparison `args` ask for, or why it cannot run (a usage error).
fn aws_config(args: &FleetArgs) -> Result<AwsConfig, String> {
    let clients = args.clients.unwrap_or(100);
    if !(1..=aws::MAX_CLIENTS).contains(&clients) {
        return Err(format!(
            "--clients must be between 1 and {}",
            aws::MAX_CLIENTS
        ));
    }
    // The trials run one after another: an unbounded count is a run that
    // never ends.
    if !(1..=aws::MAX_TRIALS).contains(&args.trials) {
        return Err(format!(
            "--trials must be between 1 and {}",
            aws::MAX_TRIALS
        ));
    }
    let config = AwsConfig {
        clients,
        trials: args.trials,
        seed: args.seed,
        ..AwsConfig::default()
    };
    // The flags are checked above, in their own names; this keeps the
    // library's refusal a usage error should the two drift.
    config.check()?;
    Ok(config)
}

fn run_aws(args: &FleetArgs) -> ExitCode {
    let mut kinds = Vec::new();
    for name in &args.backoff {
        match name.trim() {
            "all" => kinds.extend(BackoffKind::ALL),
            name => match BackoffKind::parse(name) {
                Some(kind) => kinds.push(kind),
                None => return usage(&format!("unknown backoff {name:?}")),
            },
        }
    }
    let config = match aws_config(args) {
        Ok(config) => config,
        Err(why) => return usage(&why),
    };
    let reports = match aws::run(&config, &kinds) {
        Ok(reports) => reports,
        // Checked above; kept a usage error should the two drift.
        Err(why) => return usage(&why),
    };
    let mut out = std::io::stdout();
    let mut lines = Vec::new();
    if args.json {
        for report in &reports {
            lines.push(serde_json::to_string(report).expect("reports serialize"));
        }
    } else {
        lines.push(aws::table_header());
        lines.extend(reports.iter().map(aws::table_line));
    }
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: FleetArgs,
    }

    fn args(flags: &[&str]) -> FleetArgs {
        let line = std::iter::once("fleet").chain(flags.iter().copied());
        Cli::try_parse_from(line).expect("flags parse").args
    }

    /// Every flag within its own bound, their product past what a run
    /// holds in memory: 10 000 clients at 1000 operations a second once
    /// ran until memory ran out. A usage error (exit 2) naming the
    /// product, found before anything runs: the configuration is checked
    /// first, so that without the check the test fails instead of running
    /// such a fleet.
    #[test]
    fn a_fleet_holding_too_many_operations_at_once_is_a_usage_error() {
        for flags in [
            &["--clients", "10000", "--rate", "1000"][..],
            &[
                "--clients",
                "10000",
                "--rate",
                "1000",
                "--latency-ms",
                "60000",
            ][..],
            &["--clients", "10000", "--latency-ms", "60000"][..],
        ] {
            let why = config(&args(flags)).expect_err("refused");
            for part in ["--clients", "--rate", "in flight"] {
                assert!(why.contains(part), "{flags:?}: {why}");
            }
            let code = run(args(flags));
            assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::from(2)));
        }
        // The README's scale run still runs (checked, not run here).
        let scale = config(&args(&["--clients", "10000", "--duration", "600"]));
        assert!(scale.is_ok(), "{scale:?}");
    }
}
