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
