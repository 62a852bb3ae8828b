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

/// mimalloc's `mi_option_purge_delay` (the same place in its 2.x and 3.x
/// option lists; the sys crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Freed pages go back to the system at once rather than a second (ten
    // for whole arenas) later, and only if the allocator runs again after
    // that: loading 10,000 tools left 6.5 MB freed but resident for as long
    // as the gateway stayed quiet (BENCHMARKS.md, section 6). A steady
    // stream of calls frees no whole page: 1,000 calls made no `madvise`.
    // SAFETY: sets an option's value; mimalloc reads it at each purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Its default (1000 ms in mimalloc 3) and no other option's: the
        // place in the list is still the purge delay's.
        // SAFETY: reads an option's value.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }
}
