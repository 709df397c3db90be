//! `seawall`: replay real LLM failure stories through a naive stack and
//! seawall, chat with any endpoint through the policies, run the chaos
//! server, or simulate a fleet.

#[cfg(feature = "fleet")]
mod fleet;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "seawall",
    version,
    about = "Make calls to LLM providers fail correctly."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay real failure stories against an in-process chaos server,
    /// through a naive stack and the seawall preset, side by side.
    Replay(ReplayArgs),
    /// Send one prompt to a real endpoint through the seawall policies:
    /// the answer on stdout, progress and a JSON receipt on stderr.
    ///
    /// stdout is exactly the answer: when it is not a terminal (a pipe, a
    /// file) nothing is added to it, not even a final newline; on a
    /// terminal one newline follows the answer.
    ///
    /// The receipt is always the last line of stderr. Exit status: 0 a
    /// complete answer; 1 a failure before any content; 2 bad arguments
    /// (receipt code `usage`); 3 interrupted after content (the receipt
    /// carries `delivered_chars`); 4 delivered but not complete (cut by the
    /// token limit, refused or filtered); 5 the answer could not be written
    /// to stdout (a closed pipe, a full disk: receipt code `output_failed`;
    /// a stream stops there). The receipt's `code` is a stable seawall
    /// failure code (`protocol_violation`, `redirected`, …), `usage`,
    /// `output_failed` or `unclassified`.
    ///
    /// Memory is bounded: a stream goes to stdout as it arrives and is only
    /// counted (the stream guard caps one line or event at 8 MiB); a unary
    /// answer is read up to --max-answer-bytes. Redirects are never
    /// followed (code `redirected`). Userinfo in a base URL is neither sent
    /// nor shown.
    Chat(seawall_cli::chat::ChatArgs),
    /// Run the chaos server (the same as the `seawall-chaos` binary).
    Chaos(seawall_chaos::cli::Args),
    /// Simulate a fleet of clients, each with its own stack, against one
    /// provider with a scripted outage, on a virtual clock: retry
    /// amplification, goodput, latency and recovery per stack (naive, sdk,
    /// seawall, seawall-fleet), or with --backoff the AWS "Exponential
    /// Backoff and Jitter" comparison.
    #[cfg(feature = "fleet")]
    Fleet(fleet::FleetArgs),
    /// Run an OpenAI/Anthropic-compatible proxy (axum) through the seawall
    /// policies: POST /v1/chat/completions, /v1/responses, /v1/embeddings
    /// (each also without /v1), /v1/messages, /v1/messages/count_tokens;
    /// GET /v1/models, /v1/models/{id}, /healthz, /metrics. Point
    /// OPENAI_BASE_URL at it.
    Gateway(seawall_gateway::GatewayArgs),
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Real milliseconds per incident second.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Print one JSON object per incident and stack instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return rejected(&err),
    };
    // The layers' own events (retries, fallbacks, breaker transitions,
    // stream reports) on stderr when RUST_LOG asks for them, e.g.
    // RUST_LOG=seawall=debug.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    // The fleet runs its own paused-clock runtimes, one per thread.
    #[cfg(feature = "fleet")]
    let cli = match cli.command {
        Command::Fleet(args) => return fleet::run(args),
        command => Cli { command },
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("seawall: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Replay(args) => replay(args).await,
            Command::Chat(args) => {
                // A terminal gets a newline after the answer, so the receipt
                // and the prompt start on their own lines; a pipe or a file
                // gets exactly the answer.
                let terminal = std::io::stdout().is_terminal();
                let status = seawall_cli::chat::run_with(
                    args,
                    &mut std::io::stdout(),
                    &mut std::io::stderr(),
                    terminal,
                )
                .await;
                ExitCode::from(status)
            }
            Command::Chaos(args) => match seawall_chaos::cli::serve(args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("seawall chaos: {err}");
                    ExitCode::FAILURE
                }
            },
            Command::Gateway(args) => match seawall_gateway::run(args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    // The whole chain: the gateway's error names its part
                    // (a configuration, an address) and its source why.
                    let text = seawall_internal::error::chain_text(&err, 4096);
                    if text.starts_with("seawall gateway") {
                        eprintln!("{text}");
                    } else {
                        eprintln!("seawall gateway: {text}");
                    }
                    gateway_exit(&err)
                }
            },
            #[cfg(feature = "fleet")]
            Command::Fleet(_) => unreachable!("handled before the runtime starts"),
        }
    });
    // Once the command has its verdict, nothing it left running (a name
    // lookup on a blocking thread) holds the process: a chat a signal
    // stopped has its signal handlers installed, and a second Ctrl-C
    // would not end it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    code
}

/// The argument parser's verdict: help and version on stdout, errors on
/// stderr. For `seawall chat`, an error's URLs lose their userinfo and the
/// JSON receipt (code `usage`) is the last line, as on every other exit.
fn rejected(err: &clap::Error) -> ExitCode {
    let chat = std::env::args_os().nth(1).is_some_and(|arg| arg == "chat");
    if !chat || !err.use_stderr() {
        err.exit();
    }
    let message = seawall_cli::chat::redact_userinfo(&err.render().to_string());
    let mut log = std::io::stderr();
    let _ = write!(log, "{message}");
    if !message.ends_with('\n') {
        let _ = writeln!(log);
    }
    let _ = writeln!(log, "{}", seawall_cli::chat::usage_receipt());
    ExitCode::from(2)
}

/// A gateway that did not start: 2 when what it was given is wrong (a
/// flag, the config file's contents, a missing variable, a setting that
/// would expose keys), as for every other bad argument; 1 when the machine
/// failed it (the config file unreadable, the address taken).
fn gateway_exit(err: &seawall_gateway::GatewayError) -> ExitCode {
    use seawall_gateway::ConfigError;
    use seawall_gateway::GatewayError;
    match err {
        GatewayError::Config(ConfigError::Parse(_) | ConfigError::Invalid(_))
        | GatewayError::MissingEnv { .. }
        | GatewayError::Unsafe(_) => ExitCode::from(2),
        GatewayError::Config(ConfigError::Read { .. }) | GatewayError::Bind { .. } => {
            ExitCode::FAILURE
        }
        // A reason added later (both enums are `#[non_exhaustive]`): the
        // machine's failing until it is placed above.
        _ => ExitCode::FAILURE,
    }
}

async fn replay(args: ReplayArgs) -> ExitCode {
    // An hour a second at most: an incident's longest wait (a quota
    // wall's reset, half a day) then still fits a timer. A microsecond a
    // second at least: the stacks' shortest delay (a quarter of a second)
    // is then still a nanosecond or more, not a zero that a backoff
    // growing from it refuses.
    if !(args.scale.is_finite() && (0.001..=3_600_000.0).contains(&args.scale)) {
        eprintln!("seawall replay: --scale must be a number of milliseconds from 0.001 to 3600000");
        return ExitCode::from(2);
    }
    let chaos = match seawall_chaos::ChaosServer::builder().start().await {
        Ok(chaos) => chaos,
        Err(err) => {
            eprintln!("seawall replay: cannot start the chaos server: {err}");
            return ExitCode::FAILURE;
        }
    };
    // A closed stdout (`| head`) ends the output quietly, not with a panic.
    let mut out = std::io::stdout();
    let mut open = args.json || writeln!(out, "{}", seawall_cli::replay::table_header()).is_ok();
    seawall_cli::replay::run(&chaos, args.scale, |row| {
        if !open {
            return;
        }
        let line = if args.json {
            serde_json::to_string(row).expect("rows serialize")
        } else {
            seawall_cli::replay::table_line(row)
        };
        open = writeln!(out, "{line}").is_ok();
    })
    .await;
    chaos.shutdown().await;
    ExitCode::SUCCESS
}
