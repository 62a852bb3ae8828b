//! A hostile or careless client on the HTTP front door: many sessions opened
//! at once, connections that send half a request or nothing at all, a flood
//! of them. Each test runs a gateway on 127.0.0.1:0 and talks to it over
//! real sockets.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_gateway::{Gateway, GatewayConfig};
use mcpyard_server::{serve_http_on, HttpOptions};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A gateway served on 127.0.0.1:0, stopped when dropped.
struct Server {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Server {
    async fn start(config: GatewayConfig, opts: HttpOptions) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let gateway = Gateway::start(config).await.expect("gateway starts");
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve_http_on(
            listener,
            gateway.clone(),
            opts,
            shutdown.clone(),
        ));
        Self {
            addr,
            shutdown,
            task: Some(task),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &str,
) -> reqwest::RequestBuilder {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    req
}

/// `initialize`: the new session's id, or `None` when the gateway refused
/// it with 503 (every session in use).
async fn initialize(http: &reqwest::Client, url: &str) -> Option<String> {
    let r = post(http, url, None, INIT)
        .send()
        .await
        .expect("initialize");
    if r.status() == 503 {
        return None;
    }
    assert_eq!(r.status(), 200, "initialize");
    Some(
        r.headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned(),
    )
}

/// The number of live sessions, as the gateway's status tool reports it.
async fn status_sessions(http: &reqwest::Client, url: &str, session: &str) -> usize {
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcpyard__status","arguments":{}}}"#;
    let r = post(http, url, Some(session), call)
        .send()
        .await
        .expect("status call");
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("status answer");
    let n = v["result"]["structuredContent"]["sessions"]
        .as_u64()
        .unwrap_or_else(|| panic!("status reports sessions: {v}"));
    usize::try_from(n).expect("fits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_initializes_never_take_the_gateway_past_max_sessions() {
    const CAP: usize = 8;
    const CLIENTS: usize = 16;
    const EACH: usize = 25;
    let server = Server::start(
        GatewayConfig {
            max_sessions: CAP,
            ..GatewayConfig::default()
        },
        HttpOptions::default(),
    )
    .await;
    let url = server.url();
    let http = reqwest::Client::new();

    // A watcher whose session is never idle (its GET stream is open), so it
    // is never the one evicted, samples the live count during the storm.
    let watcher = initialize(&http, &url).await.expect("the first session");
    let stream = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &watcher)
        .send()
        .await
        .expect("GET stream");
    assert_eq!(stream.status(), 200);
    let storming = Arc::new(AtomicBool::new(true));
    let most_seen = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (http, url, watcher) = (http.clone(), url.clone(), watcher.clone());
        let (storming, most_seen) = (storming.clone(), most_seen.clone());
        tokio::spawn(async move {
            while storming.load(Ordering::Relaxed) {
                let n = status_sessions(&http, &url, &watcher).await;
                most_seen.fetch_max(n, Ordering::Relaxed);
            }
        })
    };

    let started = Instant::now();
    let mut clients = JoinSet::new();
    for _ in 0..CLIENTS {
        let url = url.clone();
        clients.spawn(async move {
            // One connection pool per client, as separate programs would have.
            let http = reqwest::Client::new();
            let mut ids = Vec::new();
            for _ in 0..EACH {
                ids.extend(initialize(&http, &url).await);
            }
            ids
        });
    }
    let mut issued = Vec::new();
    while let Some(ids) = tokio::time::timeout(Duration::from_secs(60), clients.join_next())
        .await
        .expect("the storm ends in time")
    {
        issued.extend(ids.expect("client task"));
    }
    storming.store(false, Ordering::Relaxed);
    sampler.await.expect("sampler");
    eprintln!(
        "{} sessions issued to {CLIENTS} clients in {:?}",
        issued.len(),
        started.elapsed()
    );
    assert!(
        issued.len() >= CAP,
        "sessions were issued: {}",
        issued.len()
    );

    // Live sessions as a client sees them: the ids that still answer.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let mut live = 1; // the watcher
    for id in &issued {
        let r = post(&http, &url, Some(id), ping)
            .send()
            .await
            .expect("ping");
        match r.status().as_u16() {
            200 => live += 1,
            404 => {}
            other => panic!("ping answered {other}"),
        }
    }
    let counted = status_sessions(&http, &url, &watcher).await;
    let most = most_seen.load(Ordering::Relaxed).max(counted);
    assert!(
        live <= CAP && counted <= CAP && most <= CAP,
        "max_sessions is {CAP}, yet {live} sessions answer, status counts {counted}, and {most} were seen live during the storm"
    );
    drop(stream);
    drop(server);
}
