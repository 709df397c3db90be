//! `cargo xtask ci`: the same steps `.ci/run` runs, in the same order, so a
//! green local run means a green CI run.

use std::process::{Command, ExitCode};

/// One CI step: a name for the log and the command line.
struct Step {
    name: &'static str,
    program: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const CI: &[Step] = &[
    Step {
        name: "fmt",
        program: "cargo",
        args: &["fmt", "--all", "--check"],
        env: &[],
    },
    Step {
        name: "clippy",
        program: "cargo",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    Step {
        name: "test",
        program: "cargo",
        args: &["test", "--workspace"],
        env: &[],
    },
    Step {
        name: "doc",
        program: "cargo",
        args: &["doc", "--workspace", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
    },
];

fn main() -> ExitCode {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        Some("ci") => run(CI),
        _ => {
            eprintln!("usage: cargo xtask ci");
            ExitCode::from(2)
        }
    }
}

fn run(steps: &[Step]) -> ExitCode {
    for step in steps {
        eprintln!(
            "xtask: {} ({} {})",
            step.name,
            step.program,
            step.args.join(" ")
        );
        let status = Command::new(step.program)
            .args(step.args)
            .envs(step.env.iter().copied())
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("xtask: step `{}` failed: {s}", step.name);
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("xtask: could not start `{}`: {e}", step.program);
                return ExitCode::FAILURE;
            }
        }
    }
    eprintln!("xtask: all steps passed");
    ExitCode::SUCCESS
}
