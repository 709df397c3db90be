//! `seawall fleet` flags that reach the simulator's configurations are
//! refused at entry (exit 2, a message naming the flag): an unbounded
//! `--trials` once ran the backoff comparison for ever, and a headroom
//! whose capacity is infinite ran a provider that could not be one.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `seawall` with `args`: its exit code and stderr, or a failure of
/// the test if it is still running after a few seconds (a refusal is
/// immediate; the runs these flags once started were not).
fn seawall(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seawall"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("its output");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn fleet_flags_out_of_the_simulators_range_are_refused() {
    for (args, flag) in [
        (
            &[
                "fleet",
                "--backoff",
                "none",
                "--trials",
                "18446744073709551615",
            ][..],
            "--trials",
        ),
        (
            &["fleet", "--backoff", "none", "--trials", "10001"][..],
            "--trials",
        ),
        (
            &["fleet", "--backoff", "none", "--clients", "10001"][..],
            "--clients",
        ),
        (
            &[
                "fleet",
                "--headroom",
                "1e308",
                "--clients",
                "10",
                "--rate",
                "1000",
            ][..],
            "--headroom",
        ),
    ] {
        let (code, log) = seawall(args);
        assert_eq!(code, Some(2), "{args:?}: {log}");
        assert!(log.contains(flag), "{args:?}: {log}");
        assert!(!log.contains("panicked"), "{args:?}: {log}");
    }
}
