//! `catalog-client`: the catalogue benchmark's timings as a Rust client
//! sees them (`scripts/bench_catalog.py` runs it beside its Python
//! client). One session on one kept-alive HTTP/1.1 connection (hyper's
//! client): the first `tools/list` page, the whole paged listing and
//! `mcpyard__search_tools`, each from the request sent to its answer read
//! (the JSON-RPC envelope parsed, the result not). Prints one JSON line.
//!
//!     catalog-client --addr 127.0.0.1:PORT --tools N [--repeats 20]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use mcpyard_bench::conn::McpConn;
use mcpyard_bench::stats::Percentiles;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Parser)]
#[command(about = "Time tools/list pages, a full listing and searches through mcpyard")]
struct Args {
    /// The gateway's address (its MCP endpoint is `/mcp`).
    #[arg(long)]
    addr: SocketAddr,
    /// Tools the upstream offers (the searches name some of them).
    #[arg(long)]
    tools: usize,
    /// Pages and searches timed; a quarter as many full listings.
    #[arg(long, default_value_t = 20)]
    repeats: usize,
}

#[derive(Deserialize)]
struct Page {
    tools: Vec<serde::de::IgnoredAny>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut conn = McpConn::open(args.addr, Duration::from_secs(60))
        .await
        .map_err(|e| anyhow::anyhow!("opening a session: {}", e.label()))?;
    let (listed, pages, _) = list_all(&mut conn).await?;
    let mut page_times = Vec::new();
    for _ in 0..args.repeats {
        page_times.push(timed(conn.request("tools/list", "{}")).await?.0);
    }
    let mut full_times = Vec::new();
    for _ in 0..(args.repeats / 4).max(3) {
        full_times.push(list_all(&mut conn).await?.2);
    }
    let mut search_times = Vec::new();
    for i in 0..args.repeats {
        let query = format!("record tool {}", i * 37 % args.tools.max(1));
        let params = json!({"name": "mcpyard__search_tools", "arguments": {"query": query}});
        let (elapsed, _) = timed(conn.request("tools/call", &params.to_string())).await?;
        search_times.push(elapsed);
    }
    println!(
        "{}",
        json!({
            "listed": listed,
            "pages": pages,
            "page_ms_p50": p50_ms(page_times),
            "full_listing_ms_p50": p50_ms(full_times),
            "search_ms_p50": p50_ms(search_times),
        })
    );
    Ok(())
}

/// Every page of `tools/list`: (tools, pages, time spent waiting for them).
async fn list_all(conn: &mut McpConn) -> anyhow::Result<(usize, usize, Duration)> {
    let (mut tools, mut pages, mut waited) = (0, 0, Duration::ZERO);
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }).to_string(),
            None => "{}".to_owned(),
        };
        let (elapsed, result) = timed(conn.request("tools/list", &params)).await?;
        waited += elapsed;
        let page: Page = serde_json::from_str(&result).context("a tools/list result")?;
        tools += page.tools.len();
        pages += 1;
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((tools, pages, waited)),
        }
    }
}

async fn timed<T>(
    request: impl std::future::Future<Output = Result<T, mcpyard_bench::conn::CallError>>,
) -> anyhow::Result<(Duration, T)> {
    let started = Instant::now();
    let answer = request
        .await
        .map_err(|e| anyhow::anyhow!("request failed: {}", e.label()))?;
    Ok((started.elapsed(), answer))
}

fn p50_ms(times: Vec<Duration>) -> f64 {
    let nanos = times.iter().map(|t| t.as_nanos() as u64).collect();
    (Percentiles::of(nanos).p50_us / 10.0).round() / 100.0
}
