//! `mcpyard-bench-inference`: what mcpyard costs in front of a local
//! inference server, in two phases.
//!
//! - `chat`: a real OpenAI-compatible server (llama-cpp-python on the tiny
//!   generated model) answers the same chat request `POST`ed directly and
//!   sent through mcpyard as `tools/call local__chat`, one call at a time,
//!   the two paths interleaved; latency percentiles of each and the
//!   gateway's added latency.
//! - `image`: a large PNG goes base64 through `local__analyze_image` to a
//!   vision stand-in (`vision-standin`), without and with a grayscale
//!   variant, while mcpyard's resident memory is sampled every few
//!   milliseconds; baseline, peak and peak − baseline, also as multiples
//!   of the image's size.
//!
//! Children are stopped and reaped when each phase ends, fails or panics
//! (and killed by the kernel if this process dies).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use bytes::Bytes;
use clap::Parser;
use mcpyard_bench::children::ChildGuard;
use mcpyard_bench::conn::McpConn;
use mcpyard_bench::inference_report::{
    signed_percentile_us, ChatRun, ImageCall, ImageMode, ImageRun, InferenceRun,
};
use mcpyard_bench::memtrace::RssTrace;
use mcpyard_bench::openai::{content_of, OpenAiConn};
use mcpyard_bench::procfs::{self, Machine};
use mcpyard_bench::stats::Percentiles;
use mcpyard_bench::{llama, report, testimage};
use serde_json::{json, Value};

/// How long mcpyard and the stand-in get to print their address.
const START_WAIT: Duration = Duration::from_secs(20);
/// How long mcpyard gets to list the inference tools.
const READY_WAIT: Duration = Duration::from_secs(60);
/// One call's timeout: a tiny model answers in milliseconds, a large image
/// is decoded and re-encoded in well under a second.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Quiet time before each traced image call (the baseline) and after it.
const BEFORE: Duration = Duration::from_millis(300);
const AFTER: Duration = Duration::from_millis(700);

#[derive(Debug, Parser)]
#[command(about = "Benchmark mcpyard's inference tools: chat latency and image memory")]
struct Args {
    /// Which phases to run, in order: `chat`, `image`.
    #[arg(long, value_delimiter = ',', default_value = "chat,image")]
    phases: Vec<String>,
    /// Chat calls measured on each path.
    #[arg(long, default_value_t = 200)]
    chat_calls: usize,
    /// Unmeasured chat calls on each path first.
    #[arg(long, default_value_t = 20)]
    chat_warmup: usize,
    /// `max_tokens` of each chat call.
    #[arg(long, default_value_t = 4)]
    max_tokens: u32,
    /// `seed` of each chat call (temperature is 0).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Side in pixels of the square noise PNG (1826: about 10 MB).
    #[arg(long, default_value_t = 1826)]
    image_side: u32,
    /// Traced calls per image mode.
    #[arg(long, default_value_t = 3)]
    image_repeats: usize,
    /// Milliseconds between two memory samples.
    #[arg(long, default_value_t = 10)]
    sample_ms: u64,
    /// Write the results (image traces included) as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The mcpyard binary (default: `mcpyard` next to this binary).
    #[arg(long)]
    mcpyard: Option<PathBuf>,
    /// The workspace root, for `.tools/venv-llama` and the model generator.
    #[arg(long)]
    root: Option<PathBuf>,
    /// A label stored in the JSON (a commit, a note).
    #[arg(long)]
    label: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for p in &args.phases {
        if !["chat", "image"].contains(&p.as_str()) {
            bail!("unknown phase `{p}` (expected chat or image)");
        }
    }
    if args.chat_calls == 0 || args.image_repeats == 0 || args.sample_ms == 0 {
        bail!("--chat-calls, --image-repeats and --sample-ms must be positive");
    }
    if args.image_side == 0 || args.image_side > 8192 {
        bail!("--image-side must be between 1 and 8192");
    }
    let here = std::env::current_exe()
        .context("cannot find this binary")?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let root = args
        .root
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let mcpyard = args.mcpyard.clone().unwrap_or_else(|| here.join("mcpyard"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;

    let loadavg_1m_before = procfs::loadavg_1m();
    let mut run = InferenceRun {
        label: args.label.clone(),
        unix_time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        machine: Machine::read(),
        loadavg_1m_before,
        loadavg_1m_after: None,
        chat: None,
        image: None,
    };
    // Children are started from the main thread, which lives until they
    // are reaped: their parent-death signal follows the thread that forked.
    for phase in &args.phases {
        match phase.as_str() {
            "chat" => run.chat = Some(chat_phase(&args, &rt, &root, &mcpyard)?),
            _ => run.image = Some(image_phase(&args, &rt, &here, &mcpyard)?),
        }
    }
    run.loadavg_1m_after = procfs::loadavg_1m();
    drop(rt);

    println!("{}", run.markdown());
    if let Some(out) = &args.out {
        report::write_json(out, &run)?;
    }
    Ok(())
}

/// Starts mcpyard with `config` (TOML) written in `dir`.
fn start_mcpyard(mcpyard: &Path, dir: &Path, config: &str) -> anyhow::Result<ChildGuard> {
    let path = dir.join("mcpyard.toml");
    std::fs::write(&path, config).context("cannot write the mcpyard config")?;
    let mut cmd = Command::new(mcpyard);
    cmd.arg("serve")
        .arg("--config")
        .arg(&path)
        .args(["--listen", "127.0.0.1:0"]);
    ChildGuard::start("mcpyard", cmd, "listening on", START_WAIT)
        .with_context(|| format!("starting {}", mcpyard.display()))
}

/// Runs `measure` on the runtime; on failure, adds what the children
/// that died wrote.
fn measured<T>(
    rt: &tokio::runtime::Runtime,
    children: &mut [&mut ChildGuard],
    measure: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let result = rt.block_on(measure);
    if result.is_err() {
        for c in children.iter_mut() {
            if let Err(dead) = c.check_alive() {
                eprintln!("{dead:#}");
            }
        }
    }
    result
}

fn chat_phase(
    args: &Args,
    rt: &tokio::runtime::Runtime,
    root: &Path,
    mcpyard: &Path,
) -> anyhow::Result<ChatRun> {
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let python = llama::python(root)?;
    let model = llama::make_tiny_model(&python, root, dir.path())?;
    let mut server = llama::start(&python, &model, dir.path())?;
    eprintln!("chat: llama_cpp.server on {}", server.addr());
    let config = format!(
        "[inference]\nbackends = [{{ name = \"llama\", kind = \"openai\", url = \"http://{}\" }}]\n",
        server.addr()
    );
    let mut gateway = start_mcpyard(mcpyard, dir.path(), &config)?;
    let (addrs, pids) = (
        (server.addr(), gateway.addr()),
        (server.pid(), gateway.pid()),
    );
    measured(
        rt,
        &mut [&mut gateway, &mut server],
        measure_chat(args, addrs, pids),
    )
}

async fn measure_chat(
    args: &Args,
    (server, gateway): (std::net::SocketAddr, std::net::SocketAddr),
    (server_pid, gateway_pid): (u32, u32),
) -> anyhow::Result<ChatRun> {
    wait_for_tool(gateway, "local__chat").await?;
    let messages = json!([{"role": "user", "content": "Say hello to the world."}]);
    let mut tool_args = json!({
        "model": llama::MODEL,
        "messages": messages,
        "max_tokens": args.max_tokens,
        "temperature": 0,
        "seed": args.seed,
    });
    let tool_args_bytes = tool_args.to_string().into_bytes();
    // mcpyard sends `stream: false` when the client asked for no progress:
    // the direct request says the same, so both ask the server one thing.
    if let Some(o) = tool_args.as_object_mut() {
        o.insert("stream".into(), json!(false));
    }
    let direct_body = Bytes::from(tool_args.to_string());

    let mut direct = OpenAiConn::open(server, CALL_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("direct: {}", e.label()))?;
    let mut mcp = McpConn::open(gateway, CALL_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("mcpyard: {}", e.label()))?;

    let total = args.chat_warmup + args.chat_calls;
    eprintln!(
        "chat: {} warm-up + {} measured calls per path, interleaved",
        args.chat_warmup, args.chat_calls
    );
    let mut d_ns = Vec::with_capacity(args.chat_calls);
    let mut g_ns = Vec::with_capacity(args.chat_calls);
    let mut same_text = 0;
    let mut cpu0 = None;
    let mut rss_before = None;
    for i in 0..total {
        if i == args.chat_warmup {
            cpu0 = Some(cpu_of(&[gateway_pid, server_pid]));
            rss_before = procfs::rss_kib(gateway_pid);
        }
        // Alternate which path goes first, so neither always follows the
        // other's work.
        let (mut dt, mut gt) = (Duration::ZERO, Duration::ZERO);
        let (mut d_text, mut g_text) = (String::new(), String::new());
        for path in if i % 2 == 0 { [0, 1] } else { [1, 0] } {
            let t = Instant::now();
            if path == 0 {
                let answer = direct
                    .chat(direct_body.clone())
                    .await
                    .map_err(|e| anyhow::anyhow!("direct call {i}: {}", e.label()))?;
                dt = t.elapsed();
                d_text = content_of(&answer).to_owned();
            } else {
                let result = mcp
                    .call_tool("local__chat", &tool_args_bytes)
                    .await
                    .map_err(|e| anyhow::anyhow!("mcpyard call {i}: {}", e.label()))?;
                gt = t.elapsed();
                let v: Value = serde_json::from_str(&result).context("tool result")?;
                if v.pointer("/structuredContent/model") != Some(&json!(llama::MODEL)) {
                    bail!(
                        "mcpyard call {i}: not answered by {}: {result}",
                        llama::MODEL
                    );
                }
                g_text = v
                    .pointer("/structuredContent/content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
            }
        }
        if i >= args.chat_warmup {
            d_ns.push(nanos(dt));
            g_ns.push(nanos(gt));
            same_text += usize::from(d_text == g_text);
        }
    }
    let cpu1 = cpu_of(&[gateway_pid, server_pid]);
    let calls = args.chat_calls as f64;
    let mut cpu_us_per_call = std::collections::BTreeMap::new();
    if let Some(cpu0) = cpu0 {
        for (name, i, per) in [("mcpyard", 0, calls), ("server", 1, 2.0 * calls)] {
            if let (Some(a), Some(b)) = (cpu0[i], cpu1[i]) {
                cpu_us_per_call.insert(name.to_owned(), (b - a) * 1e6 / per);
            }
        }
    }
    let mut paired: Vec<i64> = g_ns
        .iter()
        .zip(&d_ns)
        .map(|(&g, &d)| g as i64 - d as i64)
        .collect();
    paired.sort_unstable();
    let (dp, gp) = (Percentiles::of(d_ns), Percentiles::of(g_ns));
    eprintln!(
        "chat: p50 direct {:.0} µs, through mcpyard {:.0} µs",
        dp.p50_us, gp.p50_us
    );
    Ok(ChatRun {
        model: llama::MODEL.to_owned(),
        messages,
        max_tokens: args.max_tokens,
        seed: args.seed,
        warmup_calls: args.chat_warmup,
        calls: args.chat_calls,
        added_p50_us: gp.p50_us - dp.p50_us,
        added_p90_us: gp.p90_us - dp.p90_us,
        added_p99_us: gp.p99_us - dp.p99_us,
        paired_added_p10_us: signed_percentile_us(&paired, 10.0),
        paired_added_p50_us: signed_percentile_us(&paired, 50.0),
        paired_added_p90_us: signed_percentile_us(&paired, 90.0),
        direct: dp,
        mcpyard: gp,
        same_text,
        cpu_us_per_call,
        mcpyard_rss_kib_before: rss_before,
        mcpyard_rss_kib_after: procfs::rss_kib(gateway_pid),
    })
}

/// The two ways the image is sent: name, `preprocess: ["grayscale"]`,
/// images the stand-in must receive.
const IMAGE_MODES: [(&str, bool, usize); 2] = [("original", false, 1), ("grayscale", true, 2)];

fn image_phase(
    args: &Args,
    rt: &tokio::runtime::Runtime,
    here: &Path,
    mcpyard: &Path,
) -> anyhow::Result<ImageRun> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let png = testimage::noise_png(args.image_side, args.seed)?;
    let data = b64.encode(&png);
    eprintln!(
        "image: {} × {} PNG, {} bytes, base64 {} bytes",
        args.image_side,
        args.image_side,
        png.len(),
        data.len()
    );
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let bin = here.join("vision-standin");
    let mut cmd = Command::new(&bin);
    cmd.args(["--listen", "127.0.0.1:0"]);
    let mut standin = ChildGuard::start("vision-standin", cmd, "listening on", START_WAIT)
        .with_context(|| format!("starting {}", bin.display()))?;
    // The MCP request carries the image as base64 (4/3 of its size) plus
    // JSON: both caps are raised well above it.
    let config = format!(
        "max_body_size = \"64MiB\"\n\n[inference]\nmax_base64_bytes = \"64MiB\"\nbackends = [{{ name = \"vision\", kind = \"openai\", url = \"http://{}\" }}]\n",
        standin.addr()
    );
    let mut modes = Vec::new();
    for mode in IMAGE_MODES {
        // A fresh mcpyard per mode: memory an earlier call left with the
        // allocator would otherwise hide part of this mode's cost.
        let mut gateway = start_mcpyard(mcpyard, dir.path(), &config)?;
        let (addr, pid) = (gateway.addr(), gateway.pid());
        modes.push(measured(
            rt,
            &mut [&mut gateway, &mut standin],
            measure_image_mode(args, addr, pid, mode, &data),
        )?);
    }
    Ok(ImageRun {
        image_bytes: png.len(),
        image_width: args.image_side,
        image_height: args.image_side,
        base64_bytes: data.len(),
        sample_period_ms: args.sample_ms,
        modes,
    })
}

/// `local__analyze_image` arguments for one inline PNG.
fn image_args(b64: &str, preprocess: bool) -> Vec<u8> {
    // Base64 needs no JSON escaping.
    let pre = if preprocess {
        r#","preprocess":["grayscale"]"#
    } else {
        ""
    };
    format!(
        r#"{{"images":[{{"data":"{b64}","mimeType":"image/png","name":"noise.png"}}],"max_tokens":16{pre}}}"#
    )
    .into_bytes()
}

async fn measure_image_mode(
    args: &Args,
    gateway: std::net::SocketAddr,
    pid: u32,
    (name, pre, images): (&str, bool, usize),
    data: &str,
) -> anyhow::Result<ImageMode> {
    wait_for_tool(gateway, "local__analyze_image").await?;
    let mut mcp = McpConn::open(gateway, CALL_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("mcpyard: {}", e.label()))?;
    // Warm-up with a small image: the first call sets up the backend's
    // connection, the model listing and the blocking-thread pool.
    let small =
        base64::engine::general_purpose::STANDARD.encode(testimage::noise_png(64, args.seed)?);
    mcp.call_tool("local__analyze_image", &image_args(&small, pre))
        .await
        .map_err(|e| anyhow::anyhow!("warm-up: {}", e.label()))?;
    tokio::time::sleep(AFTER).await;
    let idle_kib = procfs::rss_kib(pid);

    let period = Duration::from_millis(args.sample_ms);
    let body = image_args(data, pre);
    let mut calls = Vec::with_capacity(args.image_repeats);
    for r in 0..args.image_repeats {
        let origin = Instant::now();
        let trace = RssTrace::start(pid, period, origin);
        tokio::time::sleep(BEFORE).await;
        // The high-water mark then covers this call only.
        let hwm_reset = procfs::reset_peak_rss(pid).is_ok();
        let sent = origin.elapsed();
        let result = mcp
            .call_tool("local__analyze_image", &body)
            .await
            .map_err(|e| anyhow::anyhow!("{name} call {r}: {}", e.label()))?;
        let answered = origin.elapsed();
        tokio::time::sleep(AFTER).await;
        let samples = trace.stop();
        let hwm = procfs::peak_rss_kib(pid).filter(|_| hwm_reset);
        let v: Value = serde_json::from_str(&result).context("tool result")?;
        let answer = v
            .pointer("/structuredContent/content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let expected = format!("stand-in saw {images} image(s)");
        if !answer.starts_with(&expected) {
            bail!("{name} call {r}: expected `{expected}`, got: {answer}");
        }
        let sent_ms = sent.as_secs_f64() * 1e3;
        let mut before: Vec<u64> = samples
            .iter()
            .filter(|s| s.t_ms < sent_ms)
            .map(|s| s.kib)
            .collect();
        before.sort_unstable();
        let Some(&baseline_kib) = before.get(before.len() / 2) else {
            bail!("{name} call {r}: no memory sample before the call");
        };
        let peak_sampled_kib = samples.iter().map(|s| s.kib).max().unwrap_or(0);
        let call = ImageCall {
            baseline_kib,
            peak_sampled_kib,
            peak_hwm_kib: hwm,
            peak_kib: peak_sampled_kib.max(hwm.unwrap_or(0)),
            after_kib: samples.last().map_or(0, |s| s.kib),
            duration_ms: (answered - sent).as_secs_f64() * 1e3,
            sent_ms,
            answered_ms: answered.as_secs_f64() * 1e3,
            answer,
            trace: samples,
        };
        eprintln!(
            "image {name} {}: baseline {} KiB, peak {} KiB (+{} KiB), after {} KiB, {:.0} ms",
            r + 1,
            call.baseline_kib,
            call.peak_kib,
            call.added_kib(),
            call.after_kib,
            call.duration_ms
        );
        calls.push(call);
    }
    Ok(ImageMode {
        name: name.to_owned(),
        request_bytes: body.len(),
        idle_kib,
        calls,
    })
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn cpu_of(pids: &[u32]) -> Vec<Option<f64>> {
    pids.iter().map(|&p| procfs::cpu_seconds(p)).collect()
}

/// Waits until mcpyard lists `tool` (it reaches its backends in the
/// background).
async fn wait_for_tool(addr: std::net::SocketAddr, tool: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + READY_WAIT;
    let mut last = String::from("no answer");
    while Instant::now() < deadline {
        match McpConn::open(addr, CALL_TIMEOUT).await {
            Ok(mut c) => match c.list_tools().await {
                Ok(tools) if tools.iter().any(|t| t == tool) => {
                    eprintln!("mcpyard ready on {addr} with {tool}");
                    return Ok(());
                }
                Ok(tools) => last = format!("tools/list has no {tool}: {tools:?}"),
                Err(e) => last = e.label(),
            },
            Err(e) => last = e.label(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("mcpyard on {addr} did not list {tool} within {READY_WAIT:?}: {last}")
}
