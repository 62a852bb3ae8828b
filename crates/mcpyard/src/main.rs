//! The `mcpyard` binary: parse the command line, run the subcommand, turn
//! an error into a message on stderr and a non-zero exit code.

mod cli;
mod commands;
mod compose;
mod config;
mod logging;
mod shared_tokens;
mod token_store;
mod upstream_auth;

use std::process::ExitCode;

use clap::Parser;

/// Every call allocates a handful of small JSON buffers on whichever worker
/// thread runs it; mimalloc's per-thread free lists keep that cheap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // `{:#}` prints the whole cause chain on one line.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
