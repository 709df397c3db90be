//! A base URL whose port `http` parses but reads as none (`:80800`) is a
//! usage error: without the check the request, with its key, went to the
//! scheme's default port (80 or 443) while the log named `:80800`.

use std::process::Command;

/// Runs `seawall chat` with `flags` before the prompt and a key set: the
/// exit code and stderr.
fn chat(flags: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_seawall"))
        .arg("chat")
        .args(["--provider", "openai", "--model", "m", "--deadline", "5s"])
        .args(flags)
        .arg("hi")
        .env("OPENAI_API_KEY", "sk-test-key-never-shown")
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The last line of stderr, as JSON: the receipt.
fn receipt(stderr: &str) -> serde_json::Value {
    let last = stderr.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| panic!("no receipt: {stderr}"))
}

#[test]
fn a_base_url_port_past_65535_is_a_usage_error() {
    for (flags, flag) in [
        (&["--base-url", "http://127.0.0.1:80800"][..], "--base-url"),
        (
            &["--base-url", "http://user:url-secret@127.0.0.1:65536/v1"][..],
            "--base-url",
        ),
        (&["--base-url", "http://127.0.0.1:"][..], "--base-url"),
        (
            &[
                "--base-url",
                "http://127.0.0.1:1",
                "--fallback-base-url",
                "http://127.0.0.1:80800",
                "--fallback-model",
                "m",
            ][..],
            "--fallback-base-url",
        ),
    ] {
        let (code, log) = chat(flags);
        assert_eq!(code, Some(2), "{flags:?}: {log}");
        assert!(
            log.contains(flag) && log.contains("port"),
            "{flags:?}: {log}"
        );
        assert!(!log.contains("url-secret"), "{log}");
        assert!(!log.contains("panicked"), "{log}");
        assert_eq!(receipt(&log)["code"], "usage", "{flags:?}: {log}");
    }
}
