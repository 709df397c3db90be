//! The command line: `seawall-chaos --addr 127.0.0.1:8080`.
//!
//! [`Args`] and [`serve`] are public so that another binary (the `seawall`
//! CLI's `chaos` subcommand) runs exactly the same server.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use clap::Parser;

use crate::server::{ChaosServer, DEFAULT_MAX_BODY_BYTES};

/// Every fault with an example `curl`, as `--help` prints it.
pub const FAULTS_HELP: &str = r#"FAULTS
  Pick one per request with the header `x-chaos-fault: name;key=value;...`
  (absent = ok). Every fault answers in the shape of the endpoint called:
    OpenAI     POST /v1/chat/completions            ("stream": true for SSE)
    Anthropic  POST /v1/messages                    ("stream": true for SSE)
    Gemini     POST /v1beta/models/M:generateContent
               POST /v1beta/models/M:streamGenerateContent?alt=sse
    OpenAI Responses  POST /v1/responses            ("stream": true for SSE)
  The answer is `w1 w2 w3 ...` (token i = "w{i}"), so what a client delivered
  can be checked exactly. Examples use B='{"model":"gpt-x","stream":true,"messages":[]}'.

  ok;tokens=N;delay_ms=N     healthy answer of N tokens (default 8), delay between tokens
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: ok;tokens=3;delay_ms=100' -d "$B"
  status;code=N              error response with the provider's real error body;
      retry_after=S retry_after_date=1 retry_after_ms=N x_should_retry=true|false
      kind=insufficient_quota|context_length|too_large_tpm|refusal|bad_args|overloaded|auth|not_found
    curl -i localhost:8080/v1/chat/completions -H 'x-chaos-fault: status;code=429;retry_after=2' -d "$B"
  empty                      200 without content (stream: finish marker only)
    curl -N localhost:8080/v1/messages -H 'x-chaos-fault: empty' -d '{"model":"claude-x","stream":true}'
  refusal;tokens=N           N tokens (default 0), then content_filter / refusal / SAFETY
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: refusal' -d "$B"
  length;tokens=N            N tokens, then finish_reason length / max_tokens / MAX_TOKENS
    curl -N 'localhost:8080/v1beta/models/gemini-x:streamGenerateContent?alt=sse' -H 'x-chaos-fault: length;tokens=4' -d '{}'
  hang_after_headers         200 and headers, then nothing until the client leaves
    curl -N -m 2 localhost:8080/v1/chat/completions -H 'x-chaos-fault: hang_after_headers' -d "$B"
  slow_first_byte;ms=N       headers, N ms of silence, then a healthy answer
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: slow_first_byte;ms=1500' -d "$B"
  frame_then_eof             the first frame (role chunk / message_start), then a clean end
    curl -N localhost:8080/v1/messages -H 'x-chaos-fault: frame_then_eof' -d '{"model":"claude-x","stream":true}'
  reset_after;tokens=N       N tokens, then an abrupt TCP reset (no finish, no [DONE])
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: reset_after;tokens=3' -d "$B"
  stall_after;tokens=N;ms=M  N tokens, M ms of silence (pings=1;ping_ms=P: keep-alives), then the rest
    curl -N localhost:8080/v1/messages -H 'x-chaos-fault: stall_after;tokens=2;ms=3000;pings=1' -d '{"model":"claude-x","stream":true}'
  stream_error_after;tokens=N  N tokens, then an in-stream error event, then close (tokens=0: before content)
    curl -N localhost:8080/v1/messages -H 'x-chaos-fault: stream_error_after;tokens=2' -d '{"model":"claude-x","stream":true}'
  truncate_after;tokens=N    N tokens, then a clean end without finish marker
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: truncate_after;tokens=5' -d "$B"
    curl -N localhost:8080/v1/responses -H 'x-chaos-fault: truncate_after;tokens=5' -d '{"model":"gpt-x","stream":true,"input":"hi"}'
  reset_before_headers       read the request, then reset the connection without answering
    curl -v localhost:8080/v1/chat/completions -H 'x-chaos-fault: reset_before_headers' -d "$B"
  random;seed=S;p=P          seeded draw per request: with probability P a failure, else ok
    curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: random;seed=7;p=0.3' -d "$B"
  The *_after faults take total=N (answer length, default 8) and delay_ms=N.

SCRIPTS AND JOURNAL
  Queue faults per route (openai, anthropic, gemini, openai_responses or a path),
  used in order whatever the header says ("fail twice, then ok"):
    curl localhost:8080/_chaos/script -d '{"route":"openai","faults":["status;code=503","status;code=503","ok"]}'
  Every request is journaled (add `x-chaos-request-id: ID` to find yours):
    curl localhost:8080/_chaos/journal
    curl -X POST localhost:8080/_chaos/reset
"#;

/// Command-line arguments of `seawall-chaos`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "seawall-chaos",
    version,
    about = "A fault-injecting LLM provider server (OpenAI chat and Responses, Anthropic, Gemini wire formats).",
    after_help = "Run with --help for every fault and an example curl for each.",
    after_long_help = FAULTS_HELP
)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Largest request body read; larger bodies are answered 413.
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
}

/// Serves until Ctrl-C, printing the URL once listening.
pub async fn serve(args: Args) -> io::Result<()> {
    serve_until(args, async {
        // If the signal cannot be installed there is no way to stop but killing.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
    .await
}

/// Serves until `stop` completes, printing the URL once listening.
pub async fn serve_until(args: Args, stop: impl Future<Output = ()>) -> io::Result<()> {
    let handle = ChaosServer::builder()
        .addr(args.addr)
        .max_body_bytes(args.max_body_bytes)
        .start()
        .await?;
    println!("seawall-chaos listening on {}", handle.base_url());
    stop.await;
    handle.shutdown().await;
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
    }
}
