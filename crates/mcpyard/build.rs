//! Puts the commit the binary is built from into `mcpyard --version`:
//! `MCPYARD_COMMIT` when a packager sets it, else `git rev-parse`, else
//! "unknown" (a source archive without its history).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MCPYARD_COMMIT");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = root.join(".git");
    // A new commit moves HEAD or the branch it names.
    for watched in ["HEAD", "refs/heads", "packed-refs"] {
        if git.join(watched).exists() {
            println!("cargo:rerun-if-changed={}", git.join(watched).display());
        }
    }
    let commit = std::env::var("MCPYARD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git_commit(&root))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=MCPYARD_COMMIT={}", commit.trim());
    pack_relative_relocations();
}

/// Relative relocations packed (`DT_RELR`): the loader reads a table of a
/// few KiB at start instead of 1.2 MB of `RELA` entries, all of which
/// stayed resident (BENCHMARKS.md, section 7). Only where the C library
/// that will load the binary reads them, glibc 2.36 and later: it is asked
/// here for a native build, and a cross build goes without.
fn pack_relative_relocations() {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    if env("TARGET") != env("HOST")
        || env("CARGO_CFG_TARGET_ENV") != "gnu"
        || env("CARGO_CFG_TARGET_OS") != "linux"
    {
        return;
    }
    if glibc_version().is_some_and(|version| version >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The version of the C library this build script runs on, when it is glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> Option<(u32, u32)> {
    extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().ok()?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> Option<(u32, u32)> {
    None
}

fn git_commit(root: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root)
        .output()
        .ok()?;
    let commit = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !commit.trim().is_empty()).then_some(commit)
}
