//! The `mcpyard` binary: parse the command line, run the subcommand, turn
//! an error into a message on stderr and a non-zero exit code.

mod allocator;
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
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> ExitCode {
    allocator::set_purge_delay();
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
    runtime.spawn(allocator::purge_freed_pages());
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // `{:#}` prints the whole cause chain on one line.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// mimalloc asks for transparent huge pages on its arena, so at idle a few
/// MiB of heap held whole 2 MiB pages: 15.7 MiB of anonymous memory instead
/// of 3.7 (BENCHMARKS.md, section 1, "Instructions per call, and four
/// cuts"). The gateway's heap is small and its calls short, so 4 KiB pages
/// cost it nothing measurable. It is set before
/// `main`, among the program's initialisers, because the allocator's first
/// pages are touched before `main` runs. The setting is inherited by the
/// stdio servers the gateway starts, as by any child.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static NO_TRANSPARENT_HUGE_PAGES: extern "C" fn() = {
    extern "C" fn no_transparent_huge_pages() {
        // SAFETY: prctl with PR_SET_THP_DISABLE reads no memory of ours; a
        // kernel without it answers EINVAL, which changes nothing.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
    no_transparent_huge_pages
};
