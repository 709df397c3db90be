//! An async-openai `Client` with seawall underneath.
//!
//! ```sh
//! OPENAI_API_KEY=... cargo run --example async_openai --features reqwest,async-openai -- \
//!     --base-url http://127.0.0.1:8080/v1 --model gpt-x [--stream] "Say hi"
//! ```
//!
//! The base URL includes `/v1` (async-openai appends `/chat/completions`).
//! Against a local server (`cargo run -p seawall-chaos -- --addr
//! 127.0.0.1:8080`) any key will do.
//!
//! stdout carries exactly the answer text (as it arrives with `--stream`);
//! the last line of stderr is one JSON object,
//! `{"outcome":"ok"|"error","code":…,"attempts":N}`: `code` is seawall's
//! (null on success), `attempts` the upstream attempts of seawall's
//! `Receipt`. Exit status 0 only for a complete answer; 1 for a failure
//! before any text, 2 for bad arguments, 3 for an interruption after text,
//! 4 for an answer that was delivered but is not complete (cut by the token
//! limit, filtered).
//!
//! How the pieces fit:
//!
//! - `seawall::reqwest::client()`: a reqwest client that follows no
//!   redirects, has reqwest 0.13's own retry off and no `timeout` /
//!   `read_timeout` — the seawall stack's deadline and stream guard are the
//!   only bounds, and its ladder the only retry;
//! - `Stack::interactive()` over `ReqwestService`: the seawall stack;
//! - `OpenAiService`: the stack as async-openai's HTTP service (which also
//!   replaces async-openai's own retry);
//! - `seawall::reqwest::scope`: seawall's verdict and receipt of the call,
//!   which async-openai itself would not pass on.

use std::io::Write;
use std::process::ExitCode;

use futures_util::StreamExt;
use seawall::classify::ClassifyLayer;
use seawall::reqwest::async_openai::Client;
use seawall::reqwest::async_openai::config::OpenAIConfig;
use seawall::reqwest::async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
    FinishReason,
};
use seawall::reqwest::{OpenAiService, Outcome, ReqwestService};
use seawall::stack::Stack;

const USAGE: &str = "usage: async_openai --base-url URL --model MODEL [--stream] PROMPT
  URL includes /v1, e.g. http://127.0.0.1:8080/v1; the key comes from OPENAI_API_KEY";

struct Args {
    base_url: String,
    model: String,
    stream: bool,
    prompt: String,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut base_url, mut model, mut stream, mut prompt) = (None, None, false, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--base-url" => base_url = Some(args.next().ok_or("--base-url needs a URL")?),
            "--model" => model = Some(args.next().ok_or("--model needs a name")?),
            "--stream" => stream = true,
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            _ if prompt.is_some() => return Err("one PROMPT only (quote it)".into()),
            _ => prompt = Some(arg),
        }
    }
    let base_url: String = base_url.ok_or("--base-url is required")?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!(
            "--base-url `{base_url}` must start with http:// or https://"
        ));
    }
    Ok(Args {
        base_url: base_url.trim_end_matches('/').to_owned(),
        model: model.ok_or("--model is required")?,
        stream,
        prompt: prompt.ok_or("PROMPT is required")?,
    })
}

/// How the answer ended, as far as async-openai told us.
enum Ending {
    /// The finish reason async-openai reported (`None`: none came).
    Finished(Option<FinishReason>),
    /// async-openai returned an error.
    Failed,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("async_openai: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Ok(api_key) = std::env::var("OPENAI_API_KEY") else {
        eprintln!("async_openai: set OPENAI_API_KEY (any value for a local server)\n{USAGE}");
        return ExitCode::from(2);
    };

    let http = match seawall::reqwest::client() {
        Ok(http) => http,
        Err(error) => {
            eprintln!("async_openai: building the HTTP client: {error}");
            return ExitCode::from(1);
        }
    };
    let stack =
        Stack::interactive().build(&ClassifyLayer::openai(), ReqwestService::new(http.clone()));
    let config = OpenAIConfig::new()
        .with_api_base(&args.base_url)
        .with_api_key(api_key);
    // `Client::build` takes our reqwest client (async-openai builds its
    // requests with it); `with_http_service` sends them through seawall.
    let client = Client::build(http, config).with_http_service(OpenAiService::new(stack));

    let request = match CreateChatCompletionRequestArgs::default()
        .model(&args.model)
        .messages([ChatCompletionRequestUserMessage::from(args.prompt.as_str()).into()])
        .build()
    {
        Ok(request) => request,
        Err(error) => {
            eprintln!("async_openai: {error}");
            return ExitCode::from(2);
        }
    };

    let mut stdout = std::io::stdout();
    let mut shown = false;
    let (ending, outcome) = if args.stream {
        seawall::reqwest::scope(stream(&client, request, &mut stdout, &mut shown)).await
    } else {
        seawall::reqwest::scope(async {
            match client.chat().create(request).await {
                Ok(answer) => {
                    let choice = answer.choices.into_iter().next();
                    let finish = choice.as_ref().and_then(|c| c.finish_reason);
                    if let Some(text) = choice.and_then(|c| c.message.content) {
                        shown = !text.is_empty();
                        let _ = stdout.write_all(text.as_bytes());
                    }
                    Ending::Finished(finish)
                }
                Err(error) => {
                    eprintln!("async_openai: {error}");
                    Ending::Failed
                }
            }
        })
        .await
    };
    let _ = stdout.flush();
    report(&ending, &outcome, shown)
}

async fn stream(
    client: &Client<OpenAIConfig>,
    request: CreateChatCompletionRequest,
    stdout: &mut std::io::Stdout,
    shown: &mut bool,
) -> Ending {
    let mut chunks = match client.chat().create_stream(request).await {
        Ok(chunks) => chunks,
        Err(error) => {
            eprintln!("async_openai: {error}");
            return Ending::Failed;
        }
    };
    let mut finish = None;
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(chunk) => {
                for choice in chunk.choices {
                    if let Some(text) = choice.delta.content {
                        *shown |= !text.is_empty();
                        let _ = stdout.write_all(text.as_bytes());
                        let _ = stdout.flush();
                    }
                    finish = choice.finish_reason.or(finish);
                }
            }
            Err(error) => {
                eprintln!("async_openai: {error}");
                return Ending::Failed;
            }
        }
    }
    Ending::Finished(finish)
}

/// Prints the receipt line and picks the exit status.
fn report(ending: &Ending, outcome: &Outcome, shown: bool) -> ExitCode {
    let attempts = outcome.attempts();
    let (code, status) = match (ending, outcome.code()) {
        (_, Some(code)) => (Some(code.as_str()), if shown { 3 } else { 1 }),
        (Ending::Failed, None) => (Some("unknown"), if shown { 3 } else { 1 }),
        (Ending::Finished(Some(FinishReason::Stop | FinishReason::ToolCalls)), None) => (None, 0),
        (Ending::Finished(Some(FinishReason::Length)), None) => (Some("truncated"), 4),
        (Ending::Finished(Some(FinishReason::ContentFilter)), None) => {
            (Some("content_filtered"), 4)
        }
        (Ending::Finished(_), None) => (Some("truncated"), 4),
    };
    if let Some(text) = outcome.delivered_text() {
        eprintln!(
            "async_openai: interrupted after {} chars",
            text.chars().count()
        );
    }
    // Written by hand to keep the documented key order.
    let code = serde_json::to_string(&code).unwrap_or_else(|_| "null".into());
    let outcome = if status == 0 { "ok" } else { "error" };
    let line = format!(r#"{{"outcome":"{outcome}","code":{code},"attempts":{attempts}}}"#);
    eprintln!("{line}");
    ExitCode::from(status)
}
