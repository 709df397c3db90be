//! Arguments out of range or that do not fit together are usage errors
//! (exit 2, a message naming the flag), never a panic or a run that
//! quietly measures something else.

use std::process::Command;

/// Runs `seawall` with `args`: the exit code and stderr.
fn seawall(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_seawall"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn numbers_past_any_timer_are_refused() {
    for (args, flag) in [
        (&["replay", "--scale", "1e20"][..], "--scale"),
        // So small that the stacks' delays round to zero nanoseconds.
        (&["replay", "--scale", "1e-6"][..], "--scale"),
        (&["fleet", "--duration", "1e20"][..], "--duration"),
        (&["fleet", "--outage", "1e300"][..], "--outage"),
    ] {
        let (code, log) = seawall(args);
        assert_eq!(code, Some(2), "{args:?}: {log}");
        assert!(log.contains(flag), "{args:?}: {log}");
        assert!(!log.contains("panicked"), "{args:?}: {log}");
    }
}

/// An outage the run does not outlast measures no recovery: refused
/// rather than a table of `never`.
#[test]
fn a_fleet_run_must_outlast_its_outage() {
    let (code, log) = seawall(&["fleet", "--duration", "60", "--clients", "10"]);
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("--duration"), "{log}");
}

/// The backoff comparison reads its own flags only: the outage and chart
/// flags beside it are refused, not dropped.
#[test]
fn the_backoff_comparison_refuses_flags_it_does_not_read() {
    let svg = std::env::temp_dir().join("seawall-usage-test.svg");
    let svg = svg.to_str().unwrap();
    for args in [
        &["fleet", "--backoff", "none", "--svg", svg][..],
        &["fleet", "--backoff", "none", "--duration", "60"][..],
        &["fleet", "--backoff", "none", "--trials", "0"][..],
    ] {
        let (code, log) = seawall(args);
        assert_eq!(code, Some(2), "{args:?}: {log}");
    }
}

/// `--trials` belongs to the backoff comparison: without `--backoff` it
/// was read by nothing, and the run measured something else than asked.
#[test]
fn trials_need_the_backoff_comparison() {
    let (code, log) = seawall(&["fleet", "--trials", "5", "--clients", "10"]);
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("--backoff"), "{log}");
}

/// A fallback's provider without the route it speaks for: no fallback
/// would be built, and the run would go primary-only.
#[test]
fn a_fallback_provider_needs_its_route() {
    let (code, log) = seawall(&[
        "chat",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:1",
        "--model",
        "m",
        "--fallback-provider",
        "anthropic",
        "hi",
    ]);
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("--fallback-base-url"), "{log}");
}

/// A flag the parser refuses is one clear line and exit 2, never a
/// backtrace.
#[test]
fn bad_flags_are_one_clear_line_not_a_backtrace() {
    let (code, log) = seawall(&[
        "chat",
        "--provider",
        "openai",
        "--base-url",
        "ftp://x",
        "--model",
        "m",
        "hi",
    ]);
    assert_eq!(code, Some(2));
    assert!(log.contains("expected an http:// or https:// URL"), "{log}");
    assert!(!log.contains("panicked"));
}

/// A zero deadline, attempt bound or answer cap can only fail: refused as
/// a usage error naming the flag, not a run that ends in `deadline_exceeded`
/// or `answer_too_large` and blames the provider.
#[test]
fn zero_bounds_on_chat_are_refused() {
    for (flag, value) in [
        ("--deadline", "0"),
        ("--deadline", "0ms"),
        ("--attempt-timeout", "0s"),
        ("--max-answer-bytes", "0"),
        ("--max-answer-bytes", "0MiB"),
    ] {
        let (code, log) = seawall(&[
            "chat",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:1",
            "--model",
            "m",
            flag,
            value,
            "hi",
        ]);
        assert_eq!(code, Some(2), "{flag} {value}: {log}");
        assert!(log.contains(flag), "{flag} {value}: {log}");
        assert!(log.contains("than zero"), "{flag} {value}: {log}");
    }
}

/// A fleet run is bounded to what it can keep: a day of virtual time (its
/// figures are kept per 100 ms), a rate the simulation runs as asked
/// (under its floor, the table would measure another rate), latencies it
/// waits for, and an outage of at least one 100 ms slot.
#[test]
fn fleet_runs_past_what_the_simulation_keeps_are_refused() {
    for (args, flag) in [
        (&["fleet", "--duration", "31536000"][..], "--duration"),
        (&["fleet", "--duration", "86401"][..], "--duration"),
        (&["fleet", "--rate", "1e-9"][..], "--rate"),
        (&["fleet", "--rate", "inf"][..], "--rate"),
        // The run waits for answers in proportion to the latencies.
        (
            &["fleet", "--latency-ms", "60001", "--clients", "1"][..],
            "--latency-ms",
        ),
        (
            &["fleet", "--error-latency-ms", "600000", "--clients", "1"][..],
            "--error-latency-ms",
        ),
        // Shorter than the 100 ms the figures are kept per: no operation
        // starts in it, and the amplification read 0.00x.
        (
            &["fleet", "--outage", "0.05", "--clients", "1"][..],
            "--outage",
        ),
        (
            &["fleet", "--outage", "0", "--clients", "1"][..],
            "--outage",
        ),
        // Each flag within its bound, their product not: every operation
        // in flight is held in memory, and these once ran out of it (run
        // only with the check in place: without it they would eat memory).
        (
            &["fleet", "--clients", "10000", "--rate", "1000"][..],
            "--clients",
        ),
        (
            &["fleet", "--clients", "10000", "--latency-ms", "60000"][..],
            "in flight",
        ),
    ] {
        let (code, log) = seawall(args);
        assert_eq!(code, Some(2), "{args:?}: {log}");
        assert!(log.contains(flag), "{args:?}: {log}");
    }
}

/// A gateway given a bad configuration is a usage error (exit 2, the flag
/// named), as every other bad argument; an address already taken is the
/// machine's failure, not the arguments' (exit 1).
#[test]
fn a_bad_gateway_configuration_is_a_usage_error_a_taken_port_is_not() {
    let route = "a=openai@http://127.0.0.1:1";
    let (code, log) = seawall(&["gateway", "--route", route, "--route-key", "no-equals"]);
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("--route-key"), "{log}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let (code, log) = seawall(&["gateway", "--route", route, "--listen", &listen]);
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("cannot listen"), "{log}");
    // Why, said once: the error names the address, its source the reason.
    assert_eq!(log.matches("in use").count(), 1, "{log}");
}
