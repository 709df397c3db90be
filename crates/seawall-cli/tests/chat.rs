//! `seawall chat` against a real chaos server: what reaches stdout, the
//! receipt on stderr, and the exit status.

use clap::Parser;
use seawall_chaos::{ChaosHandle, ChaosServer, Fault, Outcome};
use seawall_cli::chat::{ChatArgs, run_with};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ChatArgs,
}

async fn chat(args: &[&str]) -> (u8, String, String) {
    chat_on(args, false).await
}

/// [`chat`], its stdout a terminal or not.
async fn chat_on(args: &[&str], terminal: bool) -> (u8, String, String) {
    let cli = Cli::try_parse_from(std::iter::once("chat").chain(args.iter().copied()))
        .expect("valid flags");
    let (mut out, mut log) = (Vec::new(), Vec::new());
    let status = run_with(cli.args, &mut out, &mut log, terminal).await;
    (
        status,
        String::from_utf8(out).unwrap(),
        String::from_utf8(log).unwrap(),
    )
}

fn receipt(log: &str) -> serde_json::Value {
    serde_json::from_str(log.lines().last().expect("a receipt line"))
        .expect("the last line is JSON")
}

#[tokio::test]
async fn a_complete_stream_is_exactly_the_answer_on_stdout() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let base = chaos.base_url();
    let (status, out, log) = chat(&[
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "m",
        "--stream",
        "hi",
    ])
    .await;
    assert_eq!(status, 0);
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
    let receipt = receipt(&log);
    assert_eq!(receipt["outcome"], "ok");
    assert_eq!(receipt["code"], serde_json::Value::Null);
    assert_eq!(receipt["attempts"], 1);
    assert_eq!(receipt["content_events"], 8);
    assert_eq!(receipt["finish_reason"], "stop");
    // The provider's own counts, from the stream's usage chunk.
    assert_eq!(receipt["billed"], 1);
    assert_eq!(receipt["output_tokens"], 8);
}

/// stdout as a terminal: one newline after the answer, before the receipt,
/// once content was shown or the chat succeeded; never after a failure that
/// showed nothing. Anything else (a pipe, a file, `run`) gets exactly the
/// answer.
#[tokio::test]
async fn only_a_terminal_gets_a_newline_after_the_answer() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let script = ["ok", "reset_after;tokens=3", "status;code=400"];
    let faults = script.iter().chain(&script);
    chaos
        .script("anthropic", faults.map(|f| f.parse().unwrap()).collect())
        .unwrap();
    let mut shown = Vec::new();
    for terminal in [true, false] {
        for _ in script {
            let (status, out, _) = chat_with_on(&chaos, "anthropic", &["--stream"], terminal).await;
            shown.push((status, out));
        }
    }
    let expected = [
        (0, "w1 w2 w3 w4 w5 w6 w7 w8\n"),
        (3, "w1 w2 w3\n"),
        (1, ""),
        (0, "w1 w2 w3 w4 w5 w6 w7 w8"),
        (3, "w1 w2 w3"),
        (1, ""),
    ];
    let shown: Vec<_> = shown.iter().map(|(s, o)| (*s, o.as_str())).collect();
    assert_eq!(shown, expected);
}

/// The binary: a pipe gets exactly the answer; a terminal (a pty, where
/// util-linux `script` is there to open one) gets it, a newline, then the
/// receipt on a line of its own.
#[tokio::test]
async fn the_binary_adds_a_newline_on_a_terminal_only() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let base = chaos.base_url();
    let bin = env!("CARGO_BIN_EXE_seawall");
    let args = [
        "chat",
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "m",
        "--stream",
        "hi",
    ];
    let piped = tokio::process::Command::new(bin)
        .args(args)
        .output()
        .await
        .unwrap();
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(piped.stdout).unwrap(),
        "w1 w2 w3 w4 w5 w6 w7 w8"
    );
    let command = std::iter::once(bin)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ");
    let on_a_terminal = |command: &str| {
        tokio::process::Command::new("script")
            .args(["-q", "-e", "-c", command, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
    };
    // Whether this machine can give a pseudo-terminal at all (not in a
    // container without /dev/ptmx, nor without `script`): asked apart,
    // so the binary printing nothing on one still fails.
    let probe = on_a_terminal("test -t 1").await;
    if !probe.is_ok_and(|probe| probe.status.success()) {
        eprintln!("no terminal to run the binary on: the pty half is skipped");
        return;
    }
    let pty = on_a_terminal(&command).await.unwrap();
    let screen = String::from_utf8_lossy(&pty.stdout);
    assert_eq!(pty.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains("w1 w2 w3 w4 w5 w6 w7 w8\r\n{\""),
        "{screen:?}"
    );
}

/// A stdout whose reader goes away after `room` bytes (`| head -c`): every
/// write after that fails with a broken pipe, and is counted.
struct ClosingPipe {
    room: usize,
    written: usize,
    refused: usize,
}

impl std::io::Write for ClosingPipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written >= self.room {
            self.refused += 1;
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        let n = buf.len().min(self.room - self.written);
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An answer that never reached stdout is no success, streamed or not:
/// exit 5, `output_failed`. A stream stops at the first failed write, and
/// its body is dropped: the provider stops generating (and billing) a
/// long answer nobody reads.
#[tokio::test]
async fn an_answer_stdout_cannot_take_is_a_failure_and_stops_the_stream() {
    for stream in [true, false] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        chaos
            .script(
                "openai",
                vec!["ok;tokens=600;delay_ms=1".parse::<Fault>().unwrap()],
            )
            .unwrap();
        let base = chaos.base_url();
        let mut args = vec!["chat", "--provider", "openai", "--base-url", &base];
        args.extend(["--model", "m", "hi"]);
        if stream {
            args.push("--stream");
        }
        let cli = Cli::try_parse_from(args).unwrap();
        let mut out = ClosingPipe {
            room: 20,
            written: 0,
            refused: 0,
        };
        let mut log = Vec::new();
        let status = run_with(cli.args, &mut out, &mut log, false).await;
        let log = String::from_utf8(log).unwrap();
        assert_eq!(status, 5, "stream {stream}: {log}");
        let receipt = receipt(&log);
        assert_eq!(receipt["outcome"], "error", "{log}");
        assert_eq!(receipt["code"], "output_failed", "{log}");
        assert!(log.contains("could not be written to stdout"), "{log}");
        // Not one write more once stdout refused one.
        assert_eq!(out.refused, 1, "stream {stream}: {log}");
        if stream {
            let rows = chaos
                .settled_journal(std::time::Duration::from_secs(10), |_| true)
                .await;
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].outcome, Outcome::ClientDisconnected, "{rows:?}");
            assert!(rows[0].tokens_written < 600, "{rows:?}");
        }
    }
}

#[tokio::test]
async fn an_interruption_after_content_exits_non_zero_with_what_was_delivered() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "anthropic",
            vec!["reset_after;tokens=3".parse::<Fault>().unwrap()],
        )
        .unwrap();
    let base = chaos.base_url();
    let (status, out, log) = chat(&[
        "--provider",
        "anthropic",
        "--base-url",
        &base,
        "--model",
        "c",
        "--stream",
        "hi",
    ])
    .await;
    assert_eq!(status, 3);
    assert_eq!(out, "w1 w2 w3");
    let receipt = receipt(&log);
    assert_eq!(receipt["code"], "stream_interrupted");
    assert_eq!(receipt["delivered_chars"], 8);
    assert_eq!(chaos.journal().len(), 1, "never replayed");
}

#[tokio::test]
async fn a_resumed_answer_s_receipt_counts_the_continuation() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    chaos
        .script(
            "anthropic",
            vec!["reset_after;tokens=3;total=8".parse::<Fault>().unwrap()],
        )
        .unwrap();
    let (status, out, log) = chat_with(&chaos, "anthropic", &["--stream", "--resume"]).await;
    assert_eq!(
        (status, out.as_str()),
        (0, "w1 w2 w3 w4 w5 w6 w7 w8"),
        "{log}"
    );
    let receipt = receipt(&log);
    assert_eq!(receipt["resumed"], 1, "{log}");
    // Two requests reached the provider, both answered 2xx: both billed,
    // and the continuation's tokens are in the count.
    assert_eq!(chaos.journal().len(), 2);
    assert_eq!(receipt["attempts"], 2, "{log}");
    assert_eq!(receipt["billed"], 2, "{log}");
    assert!(receipt["output_tokens"].as_u64() > Some(1), "{log}");
}

/// A unary answer is never resumed: `--resume` without `--stream` says it
/// is ignored, and the answer is delivered as without it.
#[tokio::test]
async fn resume_without_stream_is_ignored_and_says_so() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let (status, out, log) = chat_with(&chaos, "openai", &["--resume"]).await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert!(
        log.lines().any(|line| line
            == "seawall: --resume applies to streamed answers (--stream); \
                it is ignored for this unary request"),
        "{log}"
    );
    assert!(!log.contains("an interrupted stream is resumed"), "{log}");
    let receipt = receipt(&log);
    assert_eq!(receipt["outcome"], "ok", "{log}");
    let journal = chaos.journal();
    assert_eq!(journal.len(), 1);
    assert!(!journal[0].stream);
}

#[tokio::test]
async fn a_silent_primary_fails_over_to_another_provider() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let hang = || "hang_after_headers".parse::<Fault>().unwrap();
    chaos
        .script("openai", vec![hang(), hang(), hang()])
        .unwrap();
    let (status, out, log) = chat_falling_back(
        &chaos,
        "openai",
        ("anthropic", "claude-x"),
        &[
            "--stream",
            "--attempt-timeout",
            "300ms",
            "--deadline",
            "10s",
        ],
    )
    .await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
    let receipt = receipt(&log);
    assert_eq!(receipt["fallback"], true);
    // With a fallback route, one zero-byte timeout is enough: the silent
    // route is not asked a second time.
    assert_eq!(receipt["attempts"], 2);
    let paths: Vec<_> = chaos.journal().into_iter().map(|e| e.path).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v1/messages"]);
}

/// Streamed from Gemini, whose body says nothing of a stream (its path
/// does): the Anthropic fallback's stream is read as one, not checked as
/// a unary answer (`protocol_violation`, billed and not shown).
#[tokio::test]
async fn a_gemini_stream_fails_over_to_an_anthropic_stream() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let down = || "status;code=401".parse::<Fault>().unwrap();
    chaos.script("gemini", vec![down()]).unwrap();
    let (status, out, log) = chat_falling_back(
        &chaos,
        "gemini",
        ("anthropic", "claude-x"),
        &["--stream", "--deadline", "10s"],
    )
    .await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8", "{log}");
    let receipt = receipt(&log);
    assert_eq!(receipt["fallback"], true, "{log}");
    assert_eq!(receipt["billed"], 1, "{log}");
}

/// Not streamed: the fallback's whole answer is Anthropic's, checked as
/// Anthropic's (it was checked against the primary's OpenAI head, found
/// no `choices`, and failed as a protocol violation).
#[tokio::test]
async fn a_failing_primary_falls_back_to_another_providers_whole_answer() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let down = || "status;code=503".parse::<Fault>().unwrap();
    chaos
        .script("openai", vec![down(), down(), down()])
        .unwrap();
    let (status, out, log) = chat_falling_back(
        &chaos,
        "openai",
        ("anthropic", "claude-x"),
        &["--deadline", "10s"],
    )
    .await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8", "{log}");
    let receipt = receipt(&log);
    assert_eq!(receipt["fallback"], true, "{log}");
    let paths: Vec<_> = chaos.journal().into_iter().map(|e| e.path).collect();
    assert_eq!(
        paths.last().map(String::as_str),
        Some("/v1/messages"),
        "{paths:?}"
    );
}

#[tokio::test]
async fn an_unreachable_endpoint_is_one_clear_line_and_a_receipt() {
    let (status, out, log) = chat(&[
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:1",
        "--model",
        "m",
        "--deadline",
        "3s",
        "hi",
    ])
    .await;
    assert_eq!(status, 1);
    assert_eq!(out, "");
    // Where OPENAI_API_KEY is unset, a line says the call went out
    // without a key: not part of the failure's story.
    let lines: Vec<_> = log
        .lines()
        .filter(|line| !line.ends_with("goes out without an API key"))
        .collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[1].starts_with("seawall chat: transport"), "{log}");
    assert_eq!(receipt(&log)["code"], "transport");
}

/// [`chat_with`] with `flags` and one fallback route of `fallback` (its
/// model `fallback_model`) at the same server under another name
/// (`localhost`).
async fn chat_falling_back(
    chaos: &ChaosHandle,
    provider: &str,
    (fallback, fallback_model): (&str, &str),
    flags: &[&str],
) -> (u8, String, String) {
    let other = chaos.base_url().replace("127.0.0.1", "localhost");
    let mut extra = flags.to_vec();
    extra.extend_from_slice(&[
        "--fallback-base-url",
        &other,
        "--fallback-model",
        fallback_model,
        "--fallback-provider",
        fallback,
    ]);
    chat_with(chaos, provider, &extra).await
}

async fn chat_with(chaos: &ChaosHandle, provider: &str, extra: &[&str]) -> (u8, String, String) {
    chat_with_on(chaos, provider, extra, false).await
}

/// [`chat_with`], its stdout a terminal or not.
async fn chat_with_on(
    chaos: &ChaosHandle,
    provider: &str,
    extra: &[&str],
    terminal: bool,
) -> (u8, String, String) {
    let base = chaos.base_url();
    let mut args = vec!["--provider", provider, "--base-url", &base, "--model", "m"];
    args.extend_from_slice(extra);
    args.push("hi");
    chat_on(&args, terminal).await
}

#[tokio::test]
async fn the_responses_api_streams_and_answers_unary() {
    for name in ["openai-responses", "openai_responses"] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        let (status, out, log) = chat_with(&chaos, name, &["--stream"]).await;
        assert_eq!(status, 0, "{log}");
        assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
        let streamed = receipt(&log);
        assert_eq!(streamed["finish_reason"], "completed");
        assert_eq!(streamed["content_events"], 8);
        let (status, out, log) = chat_with(&chaos, name, &[]).await;
        assert_eq!(status, 0, "{log}");
        assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
        assert_eq!(receipt(&log)["finish_reason"], "completed");
        let journal = chaos.journal();
        let rows: Vec<_> = journal
            .iter()
            .map(|e| (e.path.as_str(), e.stream))
            .collect();
        assert_eq!(rows, [("/v1/responses", true), ("/v1/responses", false)]);
        assert!(log.contains("(openai_responses, "), "{log}");
    }
}

#[tokio::test]
async fn a_responses_answer_cut_by_the_token_limit_exits_4_streamed_or_not() {
    for stream in [true, false] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        chaos
            .script("openai_responses", vec!["length;tokens=3".parse().unwrap()])
            .unwrap();
        let flags: &[&str] = if stream { &["--stream"] } else { &[] };
        let (status, out, log) = chat_with(&chaos, "openai-responses", flags).await;
        assert_eq!(status, 4, "stream {stream}: {log}");
        assert_eq!(out, "w1 w2 w3");
        let receipt = receipt(&log);
        assert_eq!(receipt["finish_reason"], "max_output_tokens", "{log}");
        // No "ok": an error, `truncated`, permanent (the same request is
        // cut at the same limit again).
        assert_eq!(receipt["outcome"], "error", "{log}");
        assert_eq!(receipt["code"], "truncated", "{log}");
        assert_eq!(receipt["class"], "permanent", "{log}");
    }
}

/// A refusal or filter after some text is the same verdict streamed or
/// not: exit 4, the same code, and the text before it shown.
#[tokio::test]
async fn a_refused_answer_exits_4_with_its_text_streamed_or_not() {
    for provider in ["openai", "anthropic", "gemini", "openai_responses"] {
        let mut seen = Vec::new();
        for stream in [true, false] {
            let chaos = ChaosServer::builder().start().await.unwrap();
            chaos
                .script(provider, vec!["refusal;tokens=2".parse().unwrap()])
                .unwrap();
            let flags: &[&str] = if stream { &["--stream"] } else { &[] };
            let (status, out, log) = chat_with(&chaos, provider, flags).await;
            assert_eq!(status, 4, "{provider} stream {stream}: {log}");
            let receipt = receipt(&log);
            assert_eq!(receipt["outcome"], "error", "{log}");
            assert_eq!(receipt["class"], "policy", "{log}");
            seen.push((out, receipt["code"].clone()));
        }
        assert_eq!(
            seen[0].0, "w1 w2",
            "{provider}: the text before the verdict"
        );
        assert_eq!(seen[0], seen[1], "{provider}: streamed, then unary");
    }
}

#[tokio::test]
async fn the_fallback_may_speak_the_responses_api() {
    let chaos = ChaosServer::builder().start().await.unwrap();
    let status = || "status;code=500".parse::<Fault>().unwrap();
    chaos
        .script("openai", vec![status(), status(), status(), status()])
        .unwrap();
    let (status, out, log) = chat_falling_back(
        &chaos,
        "openai",
        ("openai-responses", "gpt-x"),
        &["--stream", "--deadline", "20s"],
    )
    .await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert_eq!(receipt(&log)["fallback"], true);
    let last = chaos.journal().pop().unwrap();
    assert_eq!(last.path, "/v1/responses");
}

/// Every exit status `chat` has, reached over loopback: the receipt is the
/// last line of stderr, with the status's code.
#[tokio::test]
async fn the_receipt_is_the_last_line_on_every_exit() {
    // Provider, fault, flags, exit status, receipt code.
    type Case = (
        &'static str,
        &'static str,
        &'static [&'static str],
        u8,
        Option<&'static str>,
    );
    let cases: [Case; 8] = [
        ("openai", "ok", &["--stream"], 0, None),
        ("openai", "status;code=400", &[], 1, Some("bad_request")),
        (
            "openai",
            "ok",
            &["--api-key-env", "SEAWALL_TEST_UNSET_VARIABLE"],
            2,
            Some("usage"),
        ),
        (
            "anthropic",
            "reset_after;tokens=3",
            &["--stream"],
            3,
            Some("stream_interrupted"),
        ),
        (
            "openai",
            "length;tokens=2",
            &["--stream"],
            4,
            Some("truncated"),
        ),
        ("openai", "length;tokens=2", &[], 4, Some("truncated")),
        (
            "openai",
            "refusal;tokens=2",
            &["--stream"],
            4,
            Some("refused"),
        ),
        ("openai", "refusal;tokens=2", &[], 4, Some("refused")),
    ];
    for (provider, fault, flags, exit, code) in cases {
        let chaos = ChaosServer::builder().start().await.unwrap();
        chaos
            .script(provider, vec![fault.parse::<Fault>().unwrap()])
            .unwrap();
        let (status, _out, log) = chat_with(&chaos, provider, flags).await;
        assert_eq!(status, exit, "{fault}: {log}");
        let receipt = receipt(&log);
        assert_eq!(receipt["code"].as_str(), code, "{fault}: {log}");
        // Only "ok" or "error": a delivered answer cut at the token limit
        // (exit 4) is an error, code `truncated`, with its finish reason
        // and a class.
        let outcome = if code.is_none() { "ok" } else { "error" };
        assert_eq!(receipt["outcome"], outcome, "{fault}: {log}");
        if code != Some("usage") {
            assert_eq!(receipt["class"].is_null(), code.is_none(), "{fault}: {log}");
        }
        if code == Some("truncated") {
            assert_eq!(receipt["finish_reason"], "length", "{fault}: {log}");
        }
    }
}

#[test]
fn a_rejected_flag_still_ends_with_a_receipt() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_seawall"))
        .args([
            "chat",
            "--provider",
            "nonesuch",
            "--base-url",
            "http://x",
            "--model",
            "m",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("unknown provider `nonesuch`"), "{stderr}");
    assert_eq!(receipt(&stderr)["code"], "usage", "{stderr}");
}

/// Without a key the call still goes out (a local server needs none), and
/// stderr says so, naming the variable it looked in; a variable set but
/// not UTF-8 is called that, not "not set".
#[cfg(unix)]
#[tokio::test]
async fn a_missing_or_garbled_key_is_said_on_stderr() {
    use std::os::unix::ffi::OsStrExt;
    let garbled = std::ffi::OsStr::from_bytes(b"sk-\xff");
    let chaos = ChaosServer::builder().start().await.unwrap();
    let base = chaos.base_url();
    let run = |key: Option<&std::ffi::OsStr>, flags: &[&str]| {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"));
        command.args(["chat", "--provider", "openai", "--base-url", &base]);
        command.args(["--model", "m"]).args(flags).arg("hi");
        command.env_remove("OPENAI_API_KEY");
        command.env_remove("SEAWALL_TEST_KEY");
        if let Some(key) = key {
            command
                .env("OPENAI_API_KEY", key)
                .env("SEAWALL_TEST_KEY", key);
        }
        command.output()
    };
    let keyless = format!("the request to {base} goes out without an API key");
    for (key, said) in [(None, "not set"), (Some(garbled), "not UTF-8")] {
        let output = run(key, &[]).await.unwrap();
        let log = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{log}");
        let line = format!("seawall: OPENAI_API_KEY is {said}: {keyless}");
        assert!(log.lines().any(|l| l == line), "{log}");
    }
    // A key to read: nothing to say.
    let output = run(Some("sk-a".as_ref()), &[]).await.unwrap();
    let log = String::from_utf8(output.stderr).unwrap();
    assert!(!log.contains("without an API key"), "{log}");
    // A variable named with --api-key-env must hold a key.
    let output = run(Some(garbled), &["--api-key-env", "SEAWALL_TEST_KEY"])
        .await
        .unwrap();
    let log = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{log}");
    assert!(
        log.contains("--api-key-env SEAWALL_TEST_KEY: the variable is not UTF-8"),
        "{log}"
    );
    assert_eq!(chaos.journal().len(), 3, "the keyless calls went out");
}

#[tokio::test]
async fn a_chain_of_fallbacks_is_tried_in_order_each_in_its_own_format() {
    // One chaos server plays three routes: OpenAI walled, Anthropic's key
    // rejected, Gemini healthy.
    let chaos = ChaosServer::builder().start().await.unwrap();
    let fault = |text: &str| text.parse::<Fault>().unwrap();
    chaos
        .script(
            "openai",
            vec![fault(
                "status;code=429;retry_after=48489;kind=insufficient_quota",
            )],
        )
        .unwrap();
    chaos
        .script("anthropic", vec![fault("status;code=401")])
        .unwrap();
    let base = chaos.base_url();
    let second = base.replace("127.0.0.1", "localhost");
    let (status, out, log) = chat(&[
        "--provider",
        "openai",
        "--base-url",
        &base,
        "--model",
        "gpt-x",
        "--stream",
        "--fallback-base-url",
        &second,
        "--fallback-model",
        "claude-x",
        "--fallback-base-url",
        &base,
        "--fallback-model",
        "gemini-x",
        "--fallback-provider",
        "anthropic",
        "--fallback-provider",
        "gemini",
        "hi",
    ])
    .await;
    assert_eq!(status, 0, "{log}");
    assert_eq!(out, "w1 w2 w3 w4 w5 w6 w7 w8");
    assert!(
        log.contains("seawall: the fallback route fallback2:"),
        "{log}"
    );
    let receipt = receipt(&log);
    assert_eq!(receipt["fallback"], true);
    assert_eq!(receipt["attempts"], 3);
    let paths: Vec<_> = chaos.journal().into_iter().map(|e| e.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/messages",
            "/v1beta/models/gemini-x:streamGenerateContent"
        ]
    );
}

#[tokio::test]
async fn fallback_flags_that_do_not_pair_are_a_usage_error() {
    let base = "http://127.0.0.1:1";
    for flags in [
        // Two routes, one model.
        &[
            "--fallback-base-url",
            base,
            "--fallback-base-url",
            base,
            "--fallback-model",
            "a",
        ][..],
        // Two providers for three routes.
        &[
            "--fallback-base-url",
            base,
            "--fallback-model",
            "a",
            "--fallback-base-url",
            base,
            "--fallback-model",
            "b",
            "--fallback-base-url",
            base,
            "--fallback-model",
            "c",
            "--fallback-provider",
            "openai",
            "--fallback-provider",
            "anthropic",
        ][..],
    ] {
        let mut args = vec!["--provider", "openai", "--base-url", base, "--model", "m"];
        args.extend_from_slice(flags);
        args.push("hi");
        let (status, out, log) = chat(&args).await;
        assert_eq!(status, 2, "{log}");
        assert!(out.is_empty());
        assert!(log.contains("fallback"), "{log}");
    }
}

/// Ctrl-C (or `timeout`'s SIGTERM) in the middle of a streamed answer ends
/// the chat as any interruption after content does: exit 3, the receipt
/// last on stderr with what was shown, never a bare kill.
#[cfg(unix)]
#[tokio::test]
async fn a_chat_stopped_by_a_signal_still_ends_with_its_receipt() {
    use tokio::io::AsyncReadExt;
    for signal in ["-INT", "-TERM"] {
        let chaos = ChaosServer::builder().start().await.unwrap();
        chaos
            .script("openai", vec!["ok;tokens=400;delay_ms=50".parse().unwrap()])
            .unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_seawall"))
            .args([
                "chat",
                "--provider",
                "openai",
                "--base-url",
                &chaos.base_url(),
                "--model",
                "m",
                "--stream",
                "hi",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 8];
        let shown =
            tokio::time::timeout(std::time::Duration::from_secs(10), stdout.read(&mut first))
                .await
                .expect("the answer starts")
                .unwrap();
        assert!(shown > 0);
        let pid = child.id().unwrap().to_string();
        let killed = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let mut log = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .await
            .unwrap();
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
            .await
            .expect("it ends")
            .unwrap();
        assert_eq!(status.code(), Some(3), "{signal}: {log}");
        let receipt = receipt(&log);
        assert_eq!(receipt["code"], "cancelled", "{log}");
        assert!(
            receipt["delivered_chars"].as_u64().unwrap_or(0) > 0,
            "{log}"
        );
    }
}
