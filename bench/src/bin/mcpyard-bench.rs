//! `mcpyard-bench`: starts `echo-upstream` and the proxies in front of it,
//! then measures the same MCP workload directly against the upstream and
//! through each proxy, in one run: throughput at saturation, latency at a
//! fixed rate, CPU per call and the gateways' resident memory. Every
//! mcpyard target is a `mcpyard serve` of its own, with the default
//! configuration or with every governance layer on, in front of an HTTP
//! or a stdio `echo-upstream`. With `--rounds N` the targets are measured
//! in turn N times, so drift of the host falls on all of them alike.
//! Prints Markdown tables; `--out FILE` also writes the results as JSON.
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
use mcpyard_bench::conn::{CallError, Endpoint, McpConn};
use mcpyard_bench::load::{self, CALL_TIMEOUT};
use mcpyard_bench::procfs::{self, Machine};
use mcpyard_bench::report::{self, Comparison, Memory, Run, TargetRun};
use mcpyard_bench::sampler::Sampler;

/// How long each child gets to print its address.
const START_WAIT: Duration = Duration::from_secs(20);
/// How long mcpyard gets to list the upstream's `echo` tool.
const READY_WAIT: Duration = Duration::from_secs(20);
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);
/// The variable the governed gateways read their API key from.
const KEY_ENV: &str = "MCPYARD_BENCH_KEY";

/// A path to the upstream that the load can be sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Direct,
    Passthrough,
    Mcpyard {
        stdio: bool,
        governed: bool,
        /// `[state]` in the Redis of `--redis`.
        redis: bool,
    },
}

const TARGETS: [(&str, Kind); 8] = [
    ("direct", Kind::Direct),
    ("passthrough", Kind::Passthrough),
    (
        "mcpyard",
        Kind::Mcpyard {
            stdio: false,
            governed: false,
            redis: false,
        },
    ),
    (
        "mcpyard-governed",
        Kind::Mcpyard {
            stdio: false,
            governed: true,
            redis: false,
        },
    ),
    (
        "mcpyard-stdio",
        Kind::Mcpyard {
            stdio: true,
            governed: false,
            redis: false,
        },
    ),
    (
        "mcpyard-stdio-governed",
        Kind::Mcpyard {
            stdio: true,
            governed: true,
            redis: false,
        },
    ),
    (
        "mcpyard-redis",
        Kind::Mcpyard {
            stdio: false,
            governed: false,
            redis: true,
        },
    ),
    (
        "mcpyard-governed-redis",
        Kind::Mcpyard {
            stdio: false,
            governed: true,
            redis: true,
        },
    ),
];

fn kind_of(name: &str) -> Option<Kind> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

/// A proxy under test: its process and how to reach it.
struct Proxy {
    name: String,
    guard: ChildGuard,
    endpoint: Endpoint,
    governed: bool,
    /// The governed gateway's audit trail (rotated files beside it).
    audit: Option<PathBuf>,
}

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
    /// proxy pays here), `mcpyard` (default configuration, HTTP upstream),
    /// `mcpyard-governed` (API key, policy, rate limit, guardrails, size
    /// limits, audit and metrics all on), `mcpyard-stdio` and
    /// `mcpyard-stdio-governed` (the same with `echo-upstream --stdio` as a
    /// `command` server), `mcpyard-redis` and `mcpyard-governed-redis` (the
    /// first two with `[state]` in the Redis of `--redis`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "direct,passthrough,mcpyard"
    )]
    targets: Vec<String>,
    /// How many times the target list is measured, in turn (a,b,a,b);
    /// later rounds are named `NAME#2`, `NAME#3`, ...
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Worker threads of the load generator (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Worker threads of the upstream (default: one per core).
    #[arg(long)]
    upstream_threads: Option<usize>,
    /// A label stored in the JSON (a commit, a note).
    #[arg(long)]
    label: Option<String>,
    /// TOML appended to every mcpyard target's configuration (after the
    /// governance tables of the governed ones), to measure what a setting
    /// costs (e.g. `--mcpyard-config $'[metrics]\nenabled = true'`).
    #[arg(long)]
    mcpyard_config: Option<String>,
    /// The Redis the `*-redis` targets share state in (`redis://...`).
    #[arg(long)]
    redis: Option<String>,
    /// Print the governed targets' configuration tables, with the audit
    /// going to this file, and exit (for other harnesses measuring the same
    /// configuration; the key is read from `MCPYARD_BENCH_KEY`).
    #[arg(long, value_name = "AUDIT_FILE")]
    print_governance_config: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(audit) = &args.print_governance_config {
        print!("{}", governance_config(&audit.to_string_lossy()));
        return Ok(());
    }
    let valid = |x: f64, min: f64| x.is_finite() && x >= min;
    if args.connections == 0 || !valid(args.duration, f64::MIN_POSITIVE) || !valid(args.warmup, 0.0)
    {
        bail!("--connections and --duration must be positive, --warmup not negative");
    }
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    for (i, t) in args.targets.iter().enumerate() {
        if kind_of(t).is_none() {
            let known: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
            bail!(
                "unknown target `{t}` (expected one of {})",
                known.join(", ")
            );
        }
        if matches!(kind_of(t), Some(Kind::Mcpyard { redis: true, .. })) && args.redis.is_none() {
            bail!("target `{t}` needs --redis redis://HOST:PORT");
        }
        if args.targets[..i].contains(t) {
            bail!("target `{t}` is listed twice (use --rounds to measure it again)");
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
    let key = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let mut proxies = Vec::new();
    for name in &args.targets {
        let proxy = match kind_of(name) {
            Some(Kind::Passthrough) => {
                let mut cmd = Command::new(&passthrough_bin);
                cmd.args(["--listen", "127.0.0.1:0", "--upstream"])
                    .arg(upstream.addr().to_string());
                let guard = ChildGuard::start("passthrough-proxy", cmd, "listening on", START_WAIT)
                    .with_context(|| format!("starting {}", passthrough_bin.display()))?;
                Proxy {
                    name: name.clone(),
                    endpoint: Endpoint::open(guard.addr()),
                    guard,
                    governed: false,
                    audit: None,
                }
            }
            Some(Kind::Mcpyard {
                stdio,
                governed,
                redis,
            }) => {
                let server = if stdio {
                    let bin = std::path::absolute(&upstream_bin)
                        .context("cannot resolve the upstream binary's path")?;
                    format!(
                        "command = {}\nargs = [\"--stdio\"]",
                        toml_string(&bin.to_string_lossy())
                    )
                } else {
                    format!("url = \"http://{}/mcp\"", upstream.addr())
                };
                let audit = governed.then(|| dir.path().join(format!("{name}.audit.jsonl")));
                let governance = audit
                    .as_deref()
                    .map(|a| governance_config(&a.to_string_lossy()))
                    .unwrap_or_default();
                let state = match (&args.redis, redis) {
                    (Some(url), true) => format!(
                        "[state]\nbackend = \"redis\"\nurl = {}\nprefix = {}\n\n",
                        toml_string(url),
                        toml_string(&format!("bench-{name}"))
                    ),
                    _ => String::new(),
                };
                let config = dir.path().join(format!("{name}.toml"));
                std::fs::write(
                    &config,
                    format!(
                        "[servers.echo]\n{server}\nprefix = \"\"\n\n{state}{governance}{}\n",
                        args.mcpyard_config.as_deref().unwrap_or_default()
                    ),
                )
                .context("cannot write the mcpyard config")?;
                let mut cmd = Command::new(&mcpyard_bin);
                cmd.arg("serve")
                    .arg("--config")
                    .arg(&config)
                    .args(["--listen", "127.0.0.1:0"])
                    // The shorthand key from the environment would turn
                    // authentication on for the default targets too.
                    .env_remove("MCPYARD_API_KEY");
                if governed {
                    cmd.env(KEY_ENV, &key);
                }
                let guard = ChildGuard::start(name, cmd, "listening on", START_WAIT)
                    .with_context(|| format!("starting {}", mcpyard_bin.display()))?;
                let endpoint = if governed {
                    Endpoint::with_bearer(guard.addr(), &key)?
                } else {
                    Endpoint::open(guard.addr())
                };
                Proxy {
                    name: name.clone(),
                    guard,
                    endpoint,
                    governed,
                    audit,
                }
            }
            _ => continue,
        };
        proxies.push(proxy);
    }

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build().context("cannot start the runtime")?;
    let result = rt.block_on(run(&args, &upstream, &proxies));
    // Stop the load before the servers, so nothing is left talking to them.
    drop(rt);
    let run = match result {
        Ok(r) => r,
        Err(e) => {
            let mut children: Vec<ChildGuard> = proxies.into_iter().map(|p| p.guard).collect();
            children.push(upstream);
            for c in &mut children {
                if let Err(dead) = c.check_alive() {
                    eprintln!("{dead:#}");
                }
            }
            return Err(e);
        }
    };
    drop(proxies);
    drop(upstream);
    drop(dir);

    println!("{}", run.markdown());
    if let Some(out) = &args.out {
        report::write_json(out, &run)?;
    }
    Ok(())
}

/// The governed targets' tables: every layer on, none of them refusing a
/// call of the bench (its messages are a few letters and digits).
fn governance_config(audit_file: &str) -> String {
    format!(
        r#"[[auth.keys]]
name = "bench"
groups = ["bench"]
key_env = "{KEY_ENV}"

[policy]
default = "deny"

[[policy.rules]]
action = "allow"
tools = ["echo"]
when = "type(arguments.message) == string && size(arguments.message) < 1000"

[[limits.rate]]
name = "bench"
rate = "10000000/min"
per = ["identity"]

[guardrails]
redact = true

[[guardrails.deny]]
name = "never"
pattern = 'never-matches-[0-9]{{40}}'

[sizes]
max_arguments = "64KiB"
max_result = "1MiB"

[audit]
file = {}

[metrics]
enabled = true

"#,
        toml_string(audit_file)
    )
}

/// `s` as a TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

async fn run(args: &Args, upstream: &ChildGuard, proxies: &[Proxy]) -> anyhow::Result<Run> {
    let direct = Endpoint::open(upstream.addr());
    wait_for_echo("echo-upstream", &direct).await?;
    let mut pids = vec![("upstream".to_owned(), upstream.pid())];
    for p in proxies {
        wait_for_echo(&p.name, &p.endpoint).await?;
        if p.governed {
            refuses_without_key(&p.name, p.endpoint.addr).await?;
        }
        pids.push((p.name.clone(), p.guard.pid()));
        if matches!(kind_of(&p.name), Some(Kind::Mcpyard { stdio: true, .. })) {
            match procfs::children(p.guard.pid())
                .into_iter()
                .find(|(_, comm)| comm == "echo-upstream")
            {
                Some((pid, _)) => pids.push((format!("{}/upstream", p.name), pid)),
                None => eprintln!("{}: no echo-upstream child found", p.name),
            }
        }
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
    for round in 1..=args.rounds {
        for target in &args.targets {
            let name = if round == 1 {
                target.clone()
            } else {
                format!("{target}#{round}")
            };
            let endpoint = proxies
                .iter()
                .find(|p| p.name == *target)
                .map_or(&direct, |p| &p.endpoint);
            // A stdio upstream is the gateway's child: its CPU is the
            // upstream's, and never the proxy's.
            let stdio_upstream = format!("{target}/upstream");
            let upstream_proc = if pids.iter().any(|(n, _)| *n == stdio_upstream) {
                stdio_upstream.as_str()
            } else {
                "upstream"
            };
            eprintln!(
                "{name}: saturation, {} connections, {:.0} s + {:.0} s warm-up",
                args.connections, args.duration, args.warmup
            );
            let sampler = Sampler::start(pids.clone(), SAMPLE_PERIOD);
            let mut cpu_marks: Vec<BTreeMap<String, f64>> = Vec::new();
            let saturation = load::saturate(endpoint, args.connections, warmup, duration, || {
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
                [a, b] if saturation.ok > 0 => [
                    ("generator", "generator"),
                    ("upstream", upstream_proc),
                    // A proxy's CPU is only part of the calls that go through it.
                    ("proxy", target.as_str()),
                ]
                .into_iter()
                .filter_map(|(role, proc)| {
                    let (s0, s1) = (a.get(proc)?, b.get(proc)?);
                    Some((role.to_owned(), (s1 - s0) * 1e6 / saturation.ok as f64))
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
            let fixed_rate =
                load::fixed_rate(endpoint, args.connections, args.rate, warmup, duration)
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
                name,
                target: target.clone(),
                round,
                saturation,
                fixed_rate,
                cpu_us_per_call,
            });
        }
    }
    memory.after_kib = rss(&pids);
    let audit_records: BTreeMap<String, u64> = proxies
        .iter()
        .filter_map(|p| Some((p.name.clone(), audit_lines(p.audit.as_deref()?))))
        .collect();
    for (name, n) in &audit_records {
        eprintln!("{name}: {n} audit records");
    }
    let find = |n: &str| targets.iter().find(|t| t.name == n);
    let comparison = match (find("direct"), find("mcpyard")) {
        (Some(d), Some(g)) => Some(Comparison::of(d, g)),
        _ => None,
    };
    let passthrough_comparison = match (find("direct"), find("passthrough")) {
        (Some(d), Some(p)) => Some(Comparison::of(d, p)),
        _ => None,
    };
    let summary = report::summarize(&targets);
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
        rounds: args.rounds,
        targets,
        summary,
        memory,
        comparison,
        passthrough_comparison,
        audit_records,
    })
}

/// Lines of an audit trail and its rotated files (`FILE.1`, ...).
fn audit_lines(file: &Path) -> u64 {
    let count =
        |p: &Path| std::fs::read(p).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() as u64);
    let mut n = count(file);
    for i in 1.. {
        let rotated = PathBuf::from(format!("{}.{i}", file.display()));
        if !rotated.exists() {
            break;
        }
        n += count(&rotated);
    }
    n
}

/// Waits until `endpoint` answers an MCP session whose `tools/list` has
/// `echo` (mcpyard connects to its upstream in the background).
async fn wait_for_echo(name: &str, endpoint: &Endpoint) -> anyhow::Result<()> {
    let addr = endpoint.addr;
    let deadline = Instant::now() + READY_WAIT;
    let mut last = String::from("no answer");
    while Instant::now() < deadline {
        match McpConn::open_at(endpoint, CALL_TIMEOUT).await {
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

/// A governed gateway must turn away a session without its key: else the
/// run would measure a gateway with authentication off.
async fn refuses_without_key(name: &str, addr: SocketAddr) -> anyhow::Result<()> {
    match McpConn::open(addr, CALL_TIMEOUT).await {
        Err(CallError::Status(401)) => Ok(()),
        Err(e) => bail!(
            "{name}: a session without the key got {}, not HTTP 401",
            e.label()
        ),
        Ok(_) => bail!("{name}: a session without the key was accepted"),
    }
}
