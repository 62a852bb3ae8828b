//! `search`: tool search, measured. Relevance (recall@k and MRR of the
//! relevance set, `bench/search-queries.json`) and speed over a generated
//! catalogue: index build, one search (p50/p95), and `tools/list` pages
//! through the gateway with part of the catalogue hidden. Prints Markdown.
//!
//!     cargo run --release -p mcpyard-bench --bin search

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use async_trait::async_trait;
use clap::Parser;
use mcpyard_bench::relevance::{workspace_root, RelevanceSet};
use mcpyard_gateway::{
    Gateway, GatewayConfig, ListItem, Listing, RouteError, Session, Source, SourceEvents,
    SourceLists, SourceRequest, SourceSpec, ToolIndex,
};
use mcpyard_proto::{Payload, RequestId};
use serde_json::{json, Value};

/// The gateway binary's allocator: a catalogue change allocates and frees
/// thousands of small items, and costs what it costs in `mcpyard`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(about = "Measure mcpyard's tool search: relevance and speed")]
struct Args {
    /// Tools in the generated catalogue.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Searches timed.
    #[arg(long, default_value_t = 2_000)]
    searches: usize,
    /// `tools/list` requests timed (each a first page, then a full walk).
    #[arg(long, default_value_t = 200)]
    lists: usize,
    /// Catalogue changes timed (each a list one tool longer, then the
    /// first list again).
    #[arg(long, default_value_t = 20)]
    changes: usize,
    /// Print the queries that miss the first five.
    #[arg(long)]
    misses: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let set = RelevanceSet::load(&workspace_root()).map_err(anyhow::Error::msg)?;
    let scores = set.score();
    println!(
        "## Search relevance ({} queries over {} tools)\n",
        scores.queries,
        set.index.len()
    );
    println!("| recall@1 | recall@5 | recall@10 | MRR |\n|---|---|---|---|");
    println!(
        "| {:.3} | {:.3} | {:.3} | {:.3} |\n",
        scores.recall_at_1, scores.recall_at_5, scores.recall_at_10, scores.mrr
    );
    if args.misses {
        for (query, top) in &scores.misses {
            println!("- miss: {query:?} → {}", top.join(", "));
        }
        println!();
    }

    let catalogue = generated(args.tools);
    let started = Instant::now();
    let index = ToolIndex::new(
        catalogue
            .iter()
            .map(|(source, tool)| (source.clone(), ListItem::tool(tool))),
    );
    let build = started.elapsed();
    let queries = generated_queries(args.searches);
    let mut times = Vec::with_capacity(queries.len());
    let mut found = 0;
    for q in &queries {
        let t = Instant::now();
        found += index.search(q, 5).len();
        times.push(t.elapsed());
    }
    if found == 0 {
        bail!("no generated query found anything: the benchmark measures nothing");
    }
    let (search_p50, search_p95) = percentiles(&mut times);

    let (page_p50, page_p95, walk_p50, walk_p95, change) =
        list_pages(catalogue, args.lists, args.changes).await?;
    println!("## Search and tools/list speed ({} tools)\n", args.tools);
    println!("| measure | p50 | p95 | goal |\n|---|---|---|---|");
    println!(
        "| search (5 hits) | {} | {} | ≤ 1 ms |",
        ms(search_p50),
        ms(search_p95)
    );
    println!(
        "| tools/list, first page (200) | {} | {} | ≤ 5 ms |",
        ms(page_p50),
        ms(page_p95)
    );
    println!(
        "| tools/list, every page | {} | {} | |",
        ms(walk_p50),
        ms(walk_p95)
    );
    println!(
        "| index build | {} | | once per catalogue change |",
        ms(build)
    );
    println!(
        "| catalogue change (view + index), p50 of {} | {} | | ≤ 20 ms |",
        args.changes,
        ms(change)
    );
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn percentiles(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    (at(0.50), at(0.95))
}

const VERBS: &[&str] = &[
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "send",
    "fetch",
    "sync",
    "export",
    "import",
    "archive",
    "restore",
    "approve",
    "cancel",
    "schedule",
    "render",
    "convert",
    "translate",
    "summarize",
];
const NOUNS: &[&str] = &[
    "invoice",
    "customer",
    "order",
    "ticket",
    "message",
    "channel",
    "repository",
    "issue",
    "pipeline",
    "deployment",
    "bucket",
    "object",
    "calendar",
    "event",
    "contact",
    "lead",
    "payment",
    "refund",
    "subscription",
    "report",
    "dashboard",
    "metric",
    "alert",
    "incident",
    "document",
    "folder",
    "image",
    "video",
    "transcript",
    "model",
    "dataset",
    "table",
    "query",
    "user",
    "group",
    "role",
    "permission",
    "secret",
    "certificate",
    "domain",
];
const WORDS: &[&str] = &[
    "quickly",
    "with",
    "filters",
    "by",
    "date",
    "owner",
    "status",
    "priority",
    "label",
    "region",
    "account",
    "project",
    "workspace",
    "team",
    "tags",
    "attachments",
    "history",
    "version",
    "draft",
    "shared",
    "public",
    "private",
    "recent",
    "archived",
    "pending",
    "failed",
];

/// A deterministic generator (xorshift), so runs compare.
struct Rng(u64);

impl Rng {
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        from[(self.0 % from.len() as u64) as usize]
    }
}

/// `n` tools across 100 sources, names and descriptions from a small
/// vocabulary, as a large real catalogue would repeat words.
fn generated(n: usize) -> Vec<(String, Value)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|i| {
            let source = format!("svc{}", i % 100);
            let (verb, noun) = (rng.pick(VERBS), rng.pick(NOUNS));
            let words: Vec<&str> = (0..12).map(|_| rng.pick(WORDS)).collect();
            let tool = json!({
                "name": format!("{source}__{verb}_{noun}_{i}"),
                "description": format!("{verb} a {noun} {}", words.join(" ")),
                "inputSchema": {"type": "object", "properties": {
                    format!("{noun}_id"): {"type": "string", "description": format!("The {noun} to {verb}.")},
                    rng.pick(WORDS): {"type": "string", "description": words[..4].join(" ")},
                }},
            });
            (source, tool)
        })
        .collect()
}

fn generated_queries(n: usize) -> Vec<String> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|_| {
            format!(
                "{} the {} {} {}",
                rng.pick(VERBS),
                rng.pick(NOUNS),
                rng.pick(WORDS),
                rng.pick(WORDS)
            )
        })
        .collect()
}

/// A source that publishes a fixed list and keeps its events, so a
/// catalogue change can be timed.
#[derive(Debug)]
struct Fixed {
    tools: Vec<Value>,
    events: Mutex<Option<SourceEvents>>,
}

#[async_trait]
impl Source for Fixed {
    fn name(&self) -> &str {
        "gen"
    }

    fn start(&self, events: SourceEvents) {
        events.publish(SourceLists::tools(self.tools.clone()));
        *self.events.lock().expect("lock") = Some(events);
    }

    async fn call(&self, _request: SourceRequest) -> Result<Payload, RouteError> {
        Ok(json!({"content": [], "isError": false}).into())
    }

    async fn status(&self) -> Value {
        json!({"name": "gen", "healthy": true})
    }
}

/// `tools/list` through the gateway over the catalogue, every other
/// tool hidden (so the search tools are listed too).
async fn list_pages(
    catalogue: Vec<(String, Value)>,
    lists: usize,
    changes: usize,
) -> anyhow::Result<(Duration, Duration, Duration, Duration, Duration)> {
    let tools: Vec<Value> = catalogue
        .into_iter()
        .map(|(_, mut t)| {
            let own = t["name"].as_str().unwrap_or_default().replace("__", "_");
            t["name"] = json!(own);
            t
        })
        .collect();
    let shown: Vec<String> = tools
        .iter()
        .step_by(2)
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let source = Arc::new(Fixed {
        tools: tools.clone(),
        events: Mutex::new(None),
    });
    let mut spec = SourceSpec::new(source.clone());
    spec.exposure.listing = Listing::Only(shown);
    let gateway = Gateway::start(GatewayConfig {
        sources: vec![spec],
        ..GatewayConfig::default()
    })
    .await?;
    let session = Session::new(None);
    let mut id = 0i64;
    let mut request = |cursor: Option<String>| {
        id += 1;
        let gateway = gateway.clone();
        let session = session.clone();
        async move {
            let params = cursor.map(|c| json!({"cursor": c}));
            let reply = gateway
                .request(&session, RequestId::Number(id), "tools/list", params, None)
                .await
                .into_message();
            serde_json::to_value(reply).context("reply")
        }
    };
    let mut first = Vec::new();
    let mut walks = Vec::new();
    let mut listed = 0;
    for _ in 0..lists {
        let t = Instant::now();
        let page = request(None).await?;
        first.push(t.elapsed());
        let t = Instant::now();
        let mut cursor: Option<String> = None;
        listed = 0;
        loop {
            let page = request(cursor.take()).await?;
            listed += page["result"]["tools"].as_array().map_or(0, Vec::len);
            match page["result"]["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        walks.push(t.elapsed());
        if page["result"]["tools"].as_array().is_none_or(Vec::is_empty) {
            bail!("tools/list returned nothing: {page}");
        }
    }
    if listed < tools.len() / 2 {
        bail!(
            "tools/list walked {listed} tools, expected about {}",
            tools.len() / 2
        );
    }
    // Catalogue changes: the source publishes a list one tool longer,
    // then the first list again, and so on.
    let events = source
        .events
        .lock()
        .expect("lock")
        .clone()
        .context("started")?;
    let mut longer = tools.clone();
    longer.push(json!({"name": "one_more", "inputSchema": {"type": "object"}}));
    let mut times = Vec::with_capacity(changes);
    for round in 0..changes.max(1) {
        // Made into items before the clock starts: a real source does that
        // page by page as the pages arrive.
        let lists = SourceLists::tools(if round % 2 == 0 {
            longer.clone()
        } else {
            tools.clone()
        });
        let t = Instant::now();
        events.publish(lists);
        times.push(t.elapsed());
    }
    gateway.shutdown().await;
    let (p50, p95) = percentiles(&mut first);
    let (w50, w95) = percentiles(&mut walks);
    let (change, _) = percentiles(&mut times);
    Ok((p50, p95, w50, w95, change))
}
