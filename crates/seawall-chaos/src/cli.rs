//! The command line: `seawall-chaos --addr 127.0.0.1:8080`.
//!
//! [`Args`] and [`serve`] are public so that another binary (the `seawall`
//! CLI's `chaos` subcommand) runs exactly the same server.

use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;

use clap::Parser;

use crate::fault::{self, Fault};
use crate::server::{ChaosServer, DEFAULT_MAX_BODY_BYTES, MAX_KEY};

/// What `--help` says before the faults.
const FAULTS_INTRO: &str = r#"FAULTS
  Pick one per request with the header `x-chaos-fault: name;key=value;...`
  (absent = ok). Every fault answers in the shape of the endpoint called:
    OpenAI     POST /v1/chat/completions            ("stream": true for SSE)
    Anthropic  POST /v1/messages                    ("stream": true for SSE)
    Gemini     POST /v1beta/models/M:generateContent
               POST /v1beta/models/M:streamGenerateContent?alt=sse
    OpenAI Responses  POST /v1/responses            ("stream": true for SSE)
  The answer is `w1 w2 w3 ...` (token i = "w{i}"), so what a client delivered
  can be checked exactly. Examples use B='{"model":"gpt-x","stream":true,"messages":[]}'.

"#;

/// What `--help` says after the faults.
const FAULTS_OUTRO: &str = r#"
SCRIPTS AND JOURNAL
  Queue faults per route (openai, anthropic, gemini, openai_responses or a path),
  used in order whatever the header says ("fail twice, then ok"):
    curl localhost:8080/_chaos/script -d '{"route":"openai","faults":["status;code=503","status;code=503","ok"]}'
  Every request is journaled (add `x-chaos-request-id: ID` to find yours):
    curl localhost:8080/_chaos/journal                # at most 1000 rows a GET
    curl 'localhost:8080/_chaos/journal?since=1000'   # the rows after cursor 1000
  Page on with since = the last row's "cursor" (the order rows entered the
  journal), not its "seq" (arrival order: a slow body is journaled late).
    curl -X POST localhost:8080/_chaos/reset

FAULTS BY API KEY
  One server can play two accounts: every request carrying a key gets that
  key's fault (after any script, before the x-chaos-fault header). The key is
  read from `Authorization: Bearer KEY`, `x-api-key: KEY`, `x-goog-api-key: KEY`
  or `?key=KEY`. Set at start with --fault-for-key (repeatable), or at any time:
    seawall-chaos --fault-for-key 'sk-a=status;code=429;retry_after=48489;kind=insufficient_quota'
    curl localhost:8080/_chaos/key -d '{"key":"sk-a","fault":"status;code=401"}'
    curl localhost:8080/_chaos/key -d '{"key":"sk-a","fault":null}'
  A reset keeps them; the journal row's fault_source says "key".
"#;

/// Every fault with its parameters and an example `curl`, as `--help` prints
/// it: written from the fault table, so it lists exactly the faults parsed.
pub fn faults_help() -> String {
    format!("{FAULTS_INTRO}{}{FAULTS_OUTRO}", fault::help_entries())
}

/// Command-line arguments of `seawall-chaos`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "seawall-chaos",
    version,
    about = "A fault-injecting LLM provider server (OpenAI chat and Responses, Anthropic, Gemini wire formats).",
    after_help = "Run with --help for every fault and an example curl for each.",
    after_long_help = faults_help()
)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Largest request body read; larger bodies are answered 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// KEY=FAULT: every request carrying API key KEY (Authorization:
    /// Bearer, x-api-key, x-goog-api-key or ?key=) gets FAULT, e.g.
    /// 'sk-a=status;code=401'. Repeatable, one per key; a key is 1 to 512
    /// bytes, as the server reads them.
    #[arg(long, value_parser = KeyFaultParser)]
    pub fault_for_key: Vec<(String, Fault)>,
}

/// `KEY=FAULT`, the fault parsed. A key the server would never look up
/// (over [`MAX_KEY`] bytes) is refused rather than set to match nothing.
/// No message quotes the value: it is an API key, or holds one.
fn parse_key_fault(text: &str) -> Result<(String, Fault), String> {
    let (key, fault) = text
        .split_once('=')
        .ok_or_else(|| "expected KEY=FAULT: no `=` in the value".to_owned())?;
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(format!(
            "the key is {} bytes; a key is 1 to {MAX_KEY} bytes",
            key.len()
        ));
    }
    let fault = fault.parse::<Fault>().map_err(|e| e.to_string())?;
    Ok((key.to_owned(), fault))
}

/// `--fault-for-key`'s parser: [`parse_key_fault`], its refusal reported
/// without the value. clap's own wording for a refused value quotes it
/// (`invalid value 'sk-…' for …`), which would print the key.
#[derive(Clone)]
struct KeyFaultParser;

impl clap::builder::TypedValueParser for KeyFaultParser {
    type Value = (String, Fault);

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let refused = |why: &str| {
            let flag = arg.map_or_else(|| "--fault-for-key".to_owned(), ToString::to_string);
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value for '{flag}': {why}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| refused("the value is not UTF-8"))?;
        parse_key_fault(text).map_err(|why| refused(&why))
    }
}

/// Serves until SIGINT (Ctrl-C) or, on Unix, SIGTERM ([`stopped`]),
/// printing the URL once listening and a line once stopped.
pub async fn serve(args: Args) -> io::Result<()> {
    serve_until(args, stopped()).await
}

/// Resolves when the process is asked to stop: SIGINT (Ctrl-C) or, on
/// Unix, SIGTERM (docker, systemd, `timeout`, a test harness's
/// terminate), so either ends with a clean shutdown rather than a kill.
/// Never, where no handler can be installed. The `seawall` CLI's commands
/// stop on it too. Call it inside a Tokio runtime.
pub fn stopped() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // Installed now, not at the first poll: a signal that comes before
        // the caller awaits (right after the start-up line) still stops
        // it, where the default action would kill it.
        let handlers = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            match handlers {
                (Ok(mut interrupt), Ok(mut terminate)) => tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                },
                (Ok(mut one), Err(_)) | (Err(_), Ok(mut one)) => {
                    one.recv().await;
                }
                (Err(_), Err(_)) => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Serves until `stop` completes, printing the URL once listening and a
/// line once the server has shut down.
pub async fn serve_until(args: Args, stop: impl Future<Output = ()>) -> io::Result<()> {
    let mut builder = ChaosServer::builder()
        .addr(args.addr)
        .max_body_bytes(args.max_body_bytes);
    for (key, fault) in args.fault_for_key {
        builder = builder.fault_for_key(key, fault);
    }
    let handle = builder.start().await?;
    // Written, not `println!`: a closed stdout (a pipe nobody reads) would
    // panic there, and the server is of use without its start-up line.
    let _ = writeln!(
        io::stdout(),
        "seawall-chaos listening on {}",
        handle.base_url()
    );
    stop.await;
    handle.shutdown().await;
    let _ = writeln!(io::stdout(), "seawall-chaos stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FAULT_NAMES;

    #[test]
    fn long_help_lists_every_fault_with_a_curl() {
        let err = Args::try_parse_from(["seawall-chaos", "--help"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        let help = err.to_string();
        for name in FAULT_NAMES {
            let example = format!("x-chaos-fault: {name}");
            assert!(
                help.contains(&example),
                "--help lacks an example curl for `{name}`"
            );
        }
        assert!(help.contains("--addr"));
    }

    #[test]
    fn readme_lists_every_fault_with_a_curl() {
        let readme = include_str!("../README.md");
        for name in FAULT_NAMES {
            let example = format!("x-chaos-fault: {name}");
            assert!(
                readme.contains(&example),
                "README lacks an example curl for `{name}`"
            );
        }
    }

    #[test]
    fn args_parse() {
        let args = Args::try_parse_from([
            "seawall-chaos",
            "--addr",
            "127.0.0.1:9999",
            "--max-body-bytes",
            "10",
        ])
        .unwrap();
        assert_eq!(args.addr.port(), 9999);
        assert_eq!(args.max_body_bytes, 10);
        assert!(args.fault_for_key.is_empty());
    }

    #[test]
    fn faults_by_key_parse_and_bad_ones_are_refused() {
        let args = Args::try_parse_from([
            "seawall-chaos",
            "--fault-for-key",
            "sk-a=status;code=401",
            "--fault-for-key",
            "sk-b=status;code=429;retry_after=2",
        ])
        .unwrap();
        let keys: Vec<_> = args.fault_for_key.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["sk-a", "sk-b"]);
        assert_eq!(args.fault_for_key[0].1.to_string(), "status;code=401");
        for bad in ["sk-a", "=status;code=401", "sk-a=no_such_fault"] {
            assert!(
                Args::try_parse_from(["seawall-chaos", "--fault-for-key", bad]).is_err(),
                "{bad}"
            );
        }
    }

    /// A refused `--fault-for-key` names the flag, not the key; a key the
    /// server could never match (over `MAX_KEY` bytes) is refused.
    #[test]
    fn a_refused_key_fault_does_not_show_the_key() {
        let long = format!("sk-secret{}=ok", "k".repeat(MAX_KEY));
        for bad in ["sk-secret", long.as_str()] {
            let err = Args::try_parse_from(["seawall-chaos", "--fault-for-key", bad]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
            let message = err.to_string();
            assert!(message.contains("--fault-for-key"), "{message}");
            assert!(!message.contains("sk-secret"), "{message}");
        }
        let at_bound = format!("{}=ok", "k".repeat(MAX_KEY));
        assert!(Args::try_parse_from(["seawall-chaos", "--fault-for-key", &at_bound]).is_ok());
    }
}
