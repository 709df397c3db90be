//! `seawall-chaos`: serve the fault-injecting provider until Ctrl-C or
//! SIGTERM.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = seawall_chaos::cli::Args::parse();
    match seawall_chaos::cli::serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("seawall-chaos: {error}");
            ExitCode::FAILURE
        }
    }
}
