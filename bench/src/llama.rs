//! A real OpenAI-compatible inference server for the chat benchmark:
//! llama-cpp-python's server (from `.tools/venv-llama`, made by
//! `scripts/install-test-deps.sh`) on the tiny random-weight model the
//! inference tests generate, served as `tiny-chat`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde_json::json;

use crate::children::ChildGuard;

/// The model name the server answers to.
pub const MODEL: &str = "tiny-chat";
/// The generator of the tiny model, relative to the workspace root.
const MAKE_MODEL: &str = "crates/mcpyard-inference/tests/support/make_tiny_model.py";
/// Loading the model and starting uvicorn takes about 3 s; a busy machine more.
const START_WAIT: Duration = Duration::from_secs(90);

/// The Python of `.tools/venv-llama` under `root`, or an error saying how
/// to install it.
pub fn python(root: &Path) -> anyhow::Result<PathBuf> {
    let p = root.join(".tools/venv-llama/bin/python");
    if !p.exists() {
        bail!(
            "{} is missing: run scripts/install-test-deps.sh (it installs llama-cpp-python's server)",
            p.display()
        );
    }
    Ok(p)
}

/// A command with a clean environment: the server reads its settings from
/// environment variables too, so an unrelated `PORT` or `MODEL` would
/// silently change it.
fn clean(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default());
    cmd
}

/// Writes the tiny model into `dir` and returns its path.
pub fn make_tiny_model(python: &Path, root: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let out = dir.join("tiny.gguf");
    let status = clean(python)
        .arg(root.join(MAKE_MODEL))
        .arg(&out)
        .status()
        .with_context(|| format!("cannot run {MAKE_MODEL}"))?;
    if !status.success() {
        bail!("{MAKE_MODEL} failed: {status}");
    }
    Ok(out)
}

/// Starts the server on `model`, serving it as [`MODEL`] with the ChatML
/// chat format the inference tests use, on a free loopback port.
pub fn start(python: &Path, model: &Path, dir: &Path) -> anyhow::Result<ChildGuard> {
    let port = free_port()?;
    let config = json!({
        "host": "127.0.0.1",
        "port": port,
        "models": [{
            "model": model.display().to_string(),
            "model_alias": MODEL,
            "chat_format": "chatml-function-calling",
            "n_ctx": 2048,
            "verbose": false
        }]
    });
    let path = dir.join("llama.json");
    std::fs::write(&path, config.to_string()).context("cannot write the llama config")?;
    let mut cmd = clean(python);
    cmd.args(["-m", "llama_cpp.server", "--config_file"])
        .arg(&path);
    ChildGuard::start("llama_cpp.server", cmd, "Uvicorn running on", START_WAIT)
}

/// A loopback port free right now (the server binds it a moment later).
fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr().context("no local address")?.port())
}
