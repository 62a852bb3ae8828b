//! `openapi-load`: how long mcpyard takes to turn an OpenAPI document into
//! tools, and the memory it needs while doing so.
//!
//! Documents: LocalAI's Swagger 2.0 document (the shared fixture) and
//! GitHub's published OpenAPI 3.0 description (npm `@octokit/openapi`,
//! over 1,000 operations, 13 MB), fetched with `npm pack` into a temporary
//! folder unless `--document` names files. Each document is measured in a
//! fresh child process (this binary again, with `--measure`), so that one
//! document's allocations do not count towards the next: the load time of
//! each run (the first is the cold one) and the peak resident memory above
//! the process's baseline (the kernel's high-water mark, reset first).
//!
//! Run: `cargo run --release -p mcpyard-bench --bin openapi-load`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context as _};
use clap::Parser;
use mcpyard_bench::procfs::{self, Machine};
use mcpyard_openapi::{load_file, LoadOptions};
use serde::{Deserialize, Serialize};

/// The version of GitHub's description the figures are for.
const OCTOKIT_PACKAGE: &str = "@octokit/openapi@23.0.2";

#[derive(Debug, Parser)]
struct Args {
    /// Documents to measure (default: LocalAI's and GitHub's).
    #[arg(long)]
    document: Vec<PathBuf>,
    /// Timed loads per document.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Internal: measure one document in this process and print JSON.
    #[arg(long, hide = true)]
    measure: Option<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Measurement {
    operations: usize,
    /// Milliseconds per run, the first being the cold one.
    runs_ms: Vec<f64>,
    baseline_kib: u64,
    peak_kib: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.measure {
        let measurement = measure(path, args.runs)?;
        println!("{}", serde_json::to_string(&measurement)?);
        return Ok(());
    }
    let _temporary;
    let documents = if args.document.is_empty() {
        let localai = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/openapi/localai-swagger.json");
        let folder = tempfile::tempdir()?;
        let github = fetch_github(folder.path())?;
        _temporary = folder;
        vec![localai, github]
    } else {
        args.document.clone()
    };

    let machine = Machine::read();
    println!(
        "# OpenAPI load ({} × {}, {} MiB, Linux {})\n",
        machine.nproc, machine.cpu_model, machine.mem_total_mib, machine.kernel
    );
    println!("| document | size | operations | cold load | warm load (median) | peak memory above baseline |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for document in &documents {
        let output = Command::new(std::env::current_exe()?)
            .arg("--measure")
            .arg(document)
            .arg("--runs")
            .arg(args.runs.to_string())
            .output()
            .context("running the measuring child")?;
        if !output.status.success() {
            bail!(
                "measuring {} failed: {}",
                document.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let measurement: Measurement = serde_json::from_slice(&output.stdout)?;
        let size_mib = std::fs::metadata(document)?.len() as f64 / 1024.0 / 1024.0;
        let mut warm = measurement.runs_ms[1..].to_vec();
        warm.sort_by(f64::total_cmp);
        let warm_median = warm.get(warm.len() / 2).copied().unwrap_or(f64::NAN);
        let name = document
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        println!(
            "| {name} | {size_mib:.1} MiB | {} | {:.0} ms | {warm_median:.0} ms | {:.1} MiB |",
            measurement.operations,
            measurement.runs_ms[0],
            measurement
                .peak_kib
                .saturating_sub(measurement.baseline_kib) as f64
                / 1024.0,
        );
    }
    Ok(())
}

fn measure(path: &Path, runs: usize) -> anyhow::Result<Measurement> {
    let pid = std::process::id();
    let baseline_kib = procfs::rss_kib(pid).context("reading VmRSS")?;
    procfs::reset_peak_rss(pid).context("resetting VmHWM")?;
    let options = LoadOptions {
        rename: BTreeMap::new(),
        prefix_len: "github__".len(),
    };
    let mut runs_ms = Vec::with_capacity(runs.max(2));
    let mut operations = 0;
    for _ in 0..runs.max(2) {
        let started = Instant::now();
        let doc = load_file(path, &options)?;
        runs_ms.push(started.elapsed().as_secs_f64() * 1e3);
        operations = doc.operations.len();
        drop(doc);
    }
    let peak_kib = procfs::peak_rss_kib(pid).context("reading VmHWM")?;
    Ok(Measurement {
        operations,
        runs_ms,
        baseline_kib,
        peak_kib,
    })
}

/// GitHub's description, from the npm package, unpacked under `folder`.
fn fetch_github(folder: &Path) -> anyhow::Result<PathBuf> {
    let status = Command::new("npm")
        .args(["pack", "--silent", OCTOKIT_PACKAGE, "--pack-destination"])
        .arg(folder)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running npm pack (npm is needed to fetch GitHub's description)")?;
    if !status.success() {
        bail!("npm pack {OCTOKIT_PACKAGE} failed");
    }
    let tarball = std::fs::read_dir(folder)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|extension| extension == "tgz"))
        .context("npm pack left no tarball")?;
    let member = "package/generated/api.github.com.json";
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(folder)
        .arg(member)
        .status()?;
    if !status.success() {
        bail!("unpacking {member} failed");
    }
    std::fs::remove_file(tarball)?;
    Ok(folder.join(member))
}
