//! `cargo xtask ci`: the same steps `.ci/run` runs, in the same order, so a
//! green local run means a green CI run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// One CI step: a name for the log and the command line. A program under
/// `.ci/` is one of CI's scripts, run from the workspace root.
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
        name: "msrv",
        program: ".ci/msrv",
        args: &[],
        env: &[],
    },
    Step {
        name: "clippy",
        program: "cargo",
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
    },
    Step {
        name: "test",
        program: "cargo",
        args: &["test", "--workspace", "--all-features"],
        env: &[],
    },
    Step {
        name: "features",
        program: ".ci/features",
        args: &[],
        env: &[],
    },
    Step {
        name: "doc",
        program: "cargo",
        args: &["doc", "--workspace", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
    },
    Step {
        name: "fuzz",
        program: ".ci/fuzz",
        args: &[],
        env: &[],
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

/// The workspace root: xtask's parent directory.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
}

fn run(steps: &[Step]) -> ExitCode {
    let root = root();
    for step in steps {
        let program = if step.program.starts_with(".ci/") {
            root.join(step.program)
        } else {
            PathBuf::from(step.program)
        };
        eprintln!(
            "xtask: {} ({} {})",
            step.name,
            step.program,
            step.args.join(" ")
        );
        let status = Command::new(&program)
            .current_dir(root)
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
