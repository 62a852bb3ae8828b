//! `mcpyard-bench`: starts `echo-upstream` and mcpyard in front of it, then
//! measures the same MCP workload directly against the upstream and
//! through mcpyard, in one run: throughput at saturation, latency at a
//! fixed rate, CPU per call and mcpyard's resident memory. Prints a
//! Markdown table; `--out FILE` also writes the results as JSON.
//!
//! Everything is bounded: each phase has a deadline, every request a
//! timeout, and the child processes are stopped and reaped when the run
//! ends, fails or panics (and killed by the kernel if this process dies).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use clap::Parser;
use mcpyard_bench::children::ChildGuard;
use mcpyard_bench::conn::McpConn;
use mcpyard_bench::load::{self, CALL_TIMEOUT};
use mcpyard_bench::procfs::{self, Machine};
use mcpyard_bench::report::{self, Comparison, Memory, Run, TargetRun};
use mcpyard_bench::sampler::Sampler;

/// How long each child gets to print its address.
const START_WAIT: Duration = Duration::from_secs(20);
/// How long mcpyard gets to list the upstream's `echo` tool.
const READY_WAIT: Duration = Duration::from_secs(20);
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

#[derive(Debug, Parser)]
#[command(about = "Benchmark an MCP upstream directly and through mcpyard")]
struct Args {
    /// Concurrent keep-alive connections (one MCP session each).
    #[arg(short = 'c', long, default_value_t = 32)]
    connections: usize,
    /// Seconds measured in each phase.
    #[arg(short = 'd', long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of unmeasured load before each phase's window.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Calls per second in the fixed-rate (latency) phase.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Write the results as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The mcpyard binary (default: `mcpyard` next to this binary).
    #[arg(long)]
    mcpyard: Option<PathBuf>,
    /// The upstream binary (default: `echo-upstream` next to this binary).
    #[arg(long)]
    upstream: Option<PathBuf>,
    /// Which paths to measure, in order: `direct` (to the upstream),
    /// `passthrough` (through a byte-for-byte HTTP proxy: the floor any
    /// proxy pays here), `mcpyard`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "direct,passthrough,mcpyard"
    )]
    targets: Vec<String>,
    /// Worker threads of the load generator (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Worker threads of the upstream (default: one per core).
    #[arg(long)]
    upstream_threads: Option<usize>,
    /// A label stored in the JSON (a commit, a note).
    #[arg(long)]
    label: Option<String>,
    /// TOML appended to mcpyard's configuration, to measure what a setting
    /// costs (e.g. `--mcpyard-config $'[metrics]\nenabled = true'`).
    #[arg(long)]
    mcpyard_config: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let valid = |x: f64, min: f64| x.is_finite() && x >= min;
    if args.connections == 0 || !valid(args.duration, f64::MIN_POSITIVE) || !valid(args.warmup, 0.0)
    {
        bail!("--connections and --duration must be positive, --warmup not negative");
    }
    for t in &args.targets {
        if !["direct", "passthrough", "mcpyard"].contains(&t.as_str()) {
            bail!("unknown target `{t}` (expected direct, passthrough or mcpyard)");
        }
    }
    let here = std::env::current_exe()
        .context("cannot find this binary")?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let upstream_bin = args
        .upstream
        .clone()
        .unwrap_or_else(|| here.join("echo-upstream"));
    let mcpyard_bin = args.mcpyard.clone().unwrap_or_else(|| here.join("mcpyard"));
    let passthrough_bin = here.join("passthrough-proxy");

    // Children are started from the main thread, which lives until they
    // are reaped: their parent-death signal follows the thread that forked.
    let mut cmd = Command::new(&upstream_bin);
    cmd.args(["--listen", "127.0.0.1:0"]);
    if let Some(n) = args.upstream_threads {
        cmd.args(["--threads", &n.to_string()]);
    }
    let upstream = ChildGuard::start("echo-upstream", cmd, "listening on", START_WAIT)
        .with_context(|| format!("starting {}", upstream_bin.display()))?;
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let config = dir.path().join("mcpyard.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.echo]\nurl = \"http://{}/mcp\"\nprefix = \"\"\n\n{}\n",
            upstream.addr(),
            args.mcpyard_config.as_deref().unwrap_or_default()
        ),
    )
    .context("cannot write the mcpyard config")?;
    let mut cmd = Command::new(&mcpyard_bin);
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"]);
    let gateway = ChildGuard::start("mcpyard", cmd, "listening on", START_WAIT)
        .with_context(|| format!("starting {}", mcpyard_bin.display()))?;
    let passthrough = if args.targets.iter().any(|t| t == "passthrough") {
        let mut cmd = Command::new(&passthrough_bin);
        cmd.args(["--listen", "127.0.0.1:0", "--upstream"])
            .arg(upstream.addr().to_string());
        Some(
            ChildGuard::start("passthrough-proxy", cmd, "listening on", START_WAIT)
                .with_context(|| format!("starting {}", passthrough_bin.display()))?,
        )
    } else {
        None
    };

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build().context("cannot start the runtime")?;
    let result = rt.block_on(run(&args, &upstream, &gateway, passthrough.as_ref()));
    // Stop the load before the servers, so nothing is left talking to them.
    drop(rt);
    let run = match result {
        Ok(r) => r,
        Err(e) => {
            let mut children = vec![gateway, upstream];
            children.extend(passthrough);
            for c in &mut children {
                if let Err(dead) = c.check_alive() {
                    eprintln!("{dead:#}");
                }
            }
            return Err(e);
        }
    };
    drop(passthrough);
    drop(gateway);
    drop(upstream);
    drop(dir);

    println!("{}", run.markdown());
    if let Some(out) = &args.out {
        report::write_json(out, &run)?;
    }
    Ok(())
}

async fn run(
    args: &Args,
    upstream: &ChildGuard,
    gateway: &ChildGuard,
    passthrough: Option<&ChildGuard>,
) -> anyhow::Result<Run> {
    wait_for_echo("echo-upstream", upstream.addr()).await?;
    wait_for_echo("mcpyard", gateway.addr()).await?;
    let mut pids = vec![
        ("upstream".to_owned(), upstream.pid()),
        ("mcpyard".to_owned(), gateway.pid()),
    ];
    if let Some(p) = passthrough {
        wait_for_echo("passthrough-proxy", p.addr()).await?;
        pids.push(("passthrough".to_owned(), p.pid()));
    }
    let rss = |pids: &[(String, u32)]| -> BTreeMap<String, u64> {
        pids.iter()
            .filter_map(|(n, p)| procfs::rss_kib(*p).map(|k| (n.clone(), k)))
            .collect()
    };
    let mut memory = Memory {
        idle_kib: rss(&pids),
        sample_period_ms: u64::try_from(SAMPLE_PERIOD.as_millis()).unwrap_or(u64::MAX),
        ..Memory::default()
    };
    let loadavg_1m_before = procfs::loadavg_1m();
    let warmup = Duration::from_secs_f64(args.warmup);
    let duration = Duration::from_secs_f64(args.duration);

    let mut targets = Vec::new();
    for name in &args.targets {
        let addr = match (name.as_str(), passthrough) {
            ("direct", _) => upstream.addr(),
            ("passthrough", Some(p)) => p.addr(),
            _ => gateway.addr(),
        };
        eprintln!(
            "{name}: saturation, {} connections, {:.0} s + {:.0} s warm-up",
            args.connections, args.duration, args.warmup
        );
        let sampler = Sampler::start(pids.clone(), SAMPLE_PERIOD);
        let mut cpu_marks: Vec<BTreeMap<String, f64>> = Vec::new();
        let saturation = load::saturate(addr, args.connections, warmup, duration, || {
            let mut m: BTreeMap<String, f64> = pids
                .iter()
                .filter_map(|(n, p)| procfs::cpu_seconds(*p).map(|s| (n.clone(), s)))
                .collect();
            if let Some(s) = procfs::own_cpu_seconds() {
                m.insert("generator".to_owned(), s);
            }
            cpu_marks.push(m);
        })
        .await
        .with_context(|| format!("{name}: saturation phase"))?;
        memory
            .saturation_peak_kib
            .insert(name.clone(), sampler.stop().await);
        let cpu_us_per_call = match cpu_marks.as_slice() {
            [a, b] if saturation.ok > 0 => a
                .iter()
                // A proxy's CPU is only part of the calls that go through it.
                .filter(|(n, _)| ["generator", "upstream"].contains(&n.as_str()) || *n == name)
                .filter_map(|(n, s0)| {
                    let s1 = b.get(n)?;
                    let key = if n == name { "proxy" } else { n.as_str() };
                    Some((key.to_owned(), (s1 - s0) * 1e6 / saturation.ok as f64))
                })
                .collect(),
            _ => BTreeMap::new(),
        };
        eprintln!(
            "{name}: {:.0} calls/s, errors {:?}",
            saturation.requests_per_s, saturation.errors
        );

        eprintln!(
            "{name}: fixed rate {:.0} calls/s, {:.0} s + {:.0} s warm-up",
            args.rate, args.duration, args.warmup
        );
        let sampler = Sampler::start(pids.clone(), SAMPLE_PERIOD);
        let fixed_rate = load::fixed_rate(addr, args.connections, args.rate, warmup, duration)
            .await
            .with_context(|| format!("{name}: fixed-rate phase"))?;
        memory
            .fixed_rate_peak_kib
            .insert(name.clone(), sampler.stop().await);
        eprintln!(
            "{name}: p50 {:.0} µs, p99 {:.0} µs",
            fixed_rate.latency.p50_us, fixed_rate.latency.p99_us
        );
        targets.push(TargetRun {
            name: name.clone(),
            saturation,
            fixed_rate,
            cpu_us_per_call,
        });
    }
    memory.after_kib = rss(&pids);
    let find = |n: &str| targets.iter().find(|t| t.name == n);
    let comparison = match (find("direct"), find("mcpyard")) {
        (Some(d), Some(g)) => Some(Comparison::of(d, g)),
        _ => None,
    };
    let passthrough_comparison = match (find("direct"), find("passthrough")) {
        (Some(d), Some(p)) => Some(Comparison::of(d, p)),
        _ => None,
    };
    Ok(Run {
        label: args.label.clone(),
        unix_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        machine: Machine::read(),
        generator_threads: args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        loadavg_1m_before,
        loadavg_1m_after: procfs::loadavg_1m(),
        targets,
        memory,
        comparison,
        passthrough_comparison,
    })
}

/// Waits until `addr` answers an MCP session whose `tools/list` has `echo`
/// (mcpyard connects to its upstream in the background).
async fn wait_for_echo(name: &str, addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_WAIT;
    let mut last = String::from("no answer");
    while Instant::now() < deadline {
        match McpConn::open(addr, CALL_TIMEOUT).await {
            Ok(mut c) => match c.list_tools().await {
                Ok(tools) if tools.iter().any(|t| t == "echo") => {
                    eprintln!("{name} ready on {addr}: tools {}", tools.join(", "));
                    return match c.call_echo("ready").await {
                        Ok(()) => Ok(()),
                        Err(e) => bail!("{name}: echo does not answer right: {}", e.label()),
                    };
                }
                Ok(tools) => last = format!("tools/list has no echo: {tools:?}"),
                Err(e) => last = e.label(),
            },
            Err(e) => last = e.label(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{name} on {addr} not ready within {READY_WAIT:?}: {last}")
}
