//! The HTTP door as clients of other gateways use it, through the binary
//! over real sockets: clients that never keep a session id (the curl
//! sequence Lemonade's own test sends, and the official Python SDK with the
//! id dropped), the endpoint at `/api/v1/mcp`, strict `Host` parsing, the
//! flood limit grouped by address prefix with a global cap (clients bound
//! to several loopback addresses), and `/metrics` behind its own credential.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// No local-model discovery: these tests are about the front door.
const QUIET: &str = "[inference]\nenabled = false\n";
const ALICE_KEY: &str = "alice-key-4b1f0e";
const BOB_KEY: &str = "bob-key-9c2d77";
const METRICS_TOKEN: &str = "metrics-token-63aa1d";
const WAIT: Duration = Duration::from_secs(60);

/// One HTTP/1.1 answer, read whole (`Connection: close`).
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: plain JSON, or the first `data:`
    /// line of an event stream.
    fn json(&self) -> Value {
        let text = if self.body.trim_start().starts_with('{') || self.body.starts_with('[') {
            self.body.clone()
        } else {
            self.body
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .unwrap_or_default()
                .to_owned()
        };
        serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// A request written by hand, as curl would send it, from `from` (a
/// loopback address to bind the client socket to) to the gateway's port.
async fn raw(from: IpAddr, port: u16, head: &str, body: &str) -> Answer {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(SocketAddr::new(from, 0))
        .unwrap_or_else(|e| panic!("bind {from}: {e}"));
    let mut tcp = socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .expect("connect to the gateway");
    let request = format!(
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.expect("send");
    let mut bytes = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut bytes))
        .await
        .expect("the gateway answered in time")
        .expect("read the answer");
    parse_answer(&String::from_utf8_lossy(&bytes))
}

fn parse_answer(text: &str) -> Answer {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// `curl -s -X POST URL -H 'Content-Type: application/json' -H 'Accept:
/// application/json, text/event-stream' [-H 'Authorization: Bearer KEY']
/// -d BODY`.
async fn curl_post(port: u16, path: &str, key: Option<&str>, body: &str) -> Answer {
    let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: curl/7.88.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}"
    );
    raw(LOOPBACK, port, &head, body).await
}

async fn curl(port: u16, method: &str, path: &str, extra: &str) -> Answer {
    let head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}");
    raw(LOOPBACK, port, &head, "").await
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize(id: u64) -> String {
    rpc(
        id,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}),
    )
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Two keys; alice may not use `every__get-sum`.
fn governed_config(extra: &str) -> String {
    format!(
        r#"{QUIET}
{extra}

[[auth.keys]]
name = "alice"
groups = ["users"]
key_env = "ALICE_KEY"

[[auth.keys]]
name = "bob"
groups = ["admins"]
key_env = "BOB_KEY"

[policy]
[[policy.rules]]
action = "deny"
groups = ["users"]
tools = ["every__get-sum"]

{}"#,
        everything_stdio("every")
    )
}

async fn start_governed(extra: &str, dir: &std::path::Path) -> Gateway {
    Gateway::start_with_env(
        &governed_config(extra),
        dir,
        &[
            ("ALICE_KEY", ALICE_KEY),
            ("BOB_KEY", BOB_KEY),
            ("METRICS_TOKEN", METRICS_TOKEN),
        ],
    )
    .await
}

/// Waits until `key`'s sessionless `tools/list` shows `tool`.
async fn wait_listed(port: u16, key: &str, tool: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let answer = curl_post(port, "/mcp", Some(key), &rpc(2, "tools/list", json!({}))).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let names = tool_names(&answer.json());
        if names.iter().any(|n| n == tool) {
            return names;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{tool} never listed: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// ---- 1. clients that keep no session id

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_clients_are_served_when_sessions_are_optional() {
    let dir = scratch();
    let gw = start_governed("[http]\nsessions = \"optional\"\n", dir.path()).await;
    let port = gw.port;

    // Lemonade's quick test: initialize, then tools/list and tools/call,
    // never sending the Mcp-Session-Id the first answer carried.
    let init = curl_post(port, "/mcp", Some(ALICE_KEY), &initialize(1)).await;
    assert_eq!(init.status, 200, "{init:?}");
    assert_eq!(
        init.json()["result"]["serverInfo"]["name"],
        "mcpyard",
        "{init:?}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let note = curl_post(port, "/mcp", Some(ALICE_KEY), &initialized).await;
    assert_eq!(note.status, 202, "{note:?}");
    let names = wait_listed(port, ALICE_KEY, "every__echo").await;
    // Governance holds without a session: alice's policy hides get-sum...
    assert!(!names.iter().any(|n| n == "every__get-sum"), "{names:?}");
    let echo = curl_post(
        port,
        "/mcp",
        Some(ALICE_KEY),
        &rpc(
            3,
            "tools/call",
            json!({"name": "every__echo", "arguments": {"message": "hi"}}),
        ),
    )
    .await;
    assert_eq!(echo.status, 200, "{echo:?}");
    assert_eq!(
        echo.json()["result"]["content"][0]["text"],
        "Echo: hi",
        "{echo:?}"
    );
    // ... and refuses it as an unknown tool, while bob may call it.
    let sum = json!({"name": "every__get-sum", "arguments": {"a": 2, "b": 3}});
    let refused = curl_post(
        port,
        "/mcp",
        Some(ALICE_KEY),
        &rpc(4, "tools/call", sum.clone()),
    )
    .await;
    assert_eq!(refused.json()["error"]["code"], -32602, "{refused:?}");
    let summed = curl_post(port, "/mcp", Some(BOB_KEY), &rpc(4, "tools/call", sum)).await;
    assert_eq!(
        summed.json()["result"]["content"][0]["text"],
        everything_sum_text(2, 3),
        "{summed:?}"
    );
    // Authentication still applies.
    let anonymous = curl_post(port, "/mcp", None, &rpc(5, "tools/list", json!({}))).await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");

    // A request to the client cannot reach one that keeps no session: the
    // upstream is answered -32601 (as for a client without the capability),
    // and server-everything's tool fails with it.
    let sampling = curl_post(
        port,
        "/mcp",
        Some(BOB_KEY),
        &rpc(9, "tools/call", json!({"name": "every__trigger-sampling-request", "arguments": {"prompt": "hi", "maxTokens": 5}})),
    )
    .await;
    let result = &sampling.json()["result"];
    assert_eq!(result["isError"], true, "{sampling:?}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("sampling/createMessage")),
        "{sampling:?}"
    );

    // What needs a session says so.
    let subscribe = curl_post(
        port,
        "/mcp",
        Some(ALICE_KEY),
        &rpc(
            6,
            "resources/subscribe",
            json!({"uri": "demo://resource/static/document/architecture.md"}),
        ),
    )
    .await;
    assert_eq!(subscribe.status, 400, "{subscribe:?}");
    let error = &subscribe.json()["error"];
    assert_eq!(error["code"], -32600, "{subscribe:?}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("needs a session"),
        "{subscribe:?}"
    );
    let task = curl_post(
        port,
        "/mcp",
        Some(ALICE_KEY),
        &rpc(7, "tasks/list", json!({})),
    )
    .await;
    assert_eq!(task.status, 400, "{task:?}");
    let auth = format!("Authorization: Bearer {ALICE_KEY}\r\n");
    let stream = curl(
        port,
        "GET",
        "/mcp",
        &format!("{auth}Accept: text/event-stream\r\n"),
    )
    .await;
    assert_eq!(stream.status, 405, "{stream:?}");
    assert!(stream.body.contains("session"), "{stream:?}");
    let end = curl(port, "DELETE", "/mcp", &auth).await;
    assert_eq!(end.status, 400, "{end:?}");
    assert!(end.body.contains("session"), "{end:?}");

    // A client that does keep the id still gets its session.
    let id = init
        .header("mcp-session-id")
        .expect("a session id is still issued");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json\r\n{auth}Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    );
    let in_session = raw(LOOPBACK, port, &head, &rpc(8, "ping", json!({}))).await;
    assert_eq!(in_session.status, 200, "{in_session:?}");
    assert_eq!(in_session.json()["result"], json!({}), "{in_session:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_without_a_session_id_is_served_when_sessions_are_optional() {
    let dir = scratch();
    let gw = start_governed("[http]\nsessions = \"optional\"\n", dir.path()).await;
    wait_listed(gw.port, ALICE_KEY, "every__echo").await;
    let out = run_python(
        &tool("venv/bin/python"),
        &[
            support_file("py_sessionless_check.py")
                .display()
                .to_string(),
            gw.url(),
            ALICE_KEY.to_owned(),
        ],
        Duration::from_secs(90),
    );
    // initialize issued an id; the SDK never saw it, and sent none.
    assert!(out["session_ids_dropped"].as_u64() >= Some(1), "{out}");
    assert!(out["requests"].as_u64() >= Some(4), "{out}");
    assert_eq!(out["requests_naming_a_session"], json!(0), "{out}");
    assert_eq!(out["echo"], json!("Echo: from python"), "{out}");
    let tools = out["tools"].as_array().expect("tools");
    assert!(tools.contains(&json!("every__echo")), "{out}");
    assert!(!tools.contains(&json!("every__get-sum")), "{out}");
    assert_eq!(
        out["sum_error"],
        json!("Unknown tool: every__get-sum"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stay_required_by_default() {
    let dir = scratch();
    let gw = Gateway::start(QUIET, dir.path()).await;
    let port = gw.port;
    let answer = curl_post(port, "/mcp", None, &rpc(2, "tools/list", json!({}))).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(answer.body.contains("Mcp-Session-Id"), "{answer:?}");
}

// ---- 2. the same endpoint at /api/v1/mcp

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_is_served_at_api_v1_mcp_too() {
    let dir = scratch();
    let gw = Gateway::start(QUIET, dir.path()).await;
    let port = gw.port;
    let init = curl_post(port, "/api/v1/mcp", None, &initialize(1)).await;
    assert_eq!(init.status, 200, "{init:?}");
    let id = init.header("mcp-session-id").expect("a session").to_owned();
    let head = format!(
        "POST /api/v1/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    );
    let listed = raw(LOOPBACK, port, &head, &rpc(2, "tools/list", json!({}))).await;
    assert!(
        tool_names(&listed.json()).contains(&"mcpyard__status".to_owned()),
        "{listed:?}"
    );
    // One session whichever path it is used on, ended by DELETE.
    let ended = curl(
        port,
        "DELETE",
        "/mcp",
        &format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"),
    )
    .await;
    assert_eq!(ended.status, 200, "{ended:?}");
    let gone = raw(LOOPBACK, port, &head, &rpc(3, "ping", json!({}))).await;
    assert_eq!(gone.status, 404, "{gone:?}");
}

// ---- 3. Host parsed strictly

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_anything_after_the_address_or_port_is_refused() {
    let dir = scratch();
    let gw = Gateway::start(QUIET, dir.path()).await;
    let port = gw.port;
    let with_host = |host: String| {
        format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json\r\n")
    };
    let mut let_in = Vec::new();
    for host in [
        "[::1]evil.com".to_owned(),
        format!("[::1]:{port}evil.com"),
        "[::1]:evil.com".to_owned(),
        "[::1]]".to_owned(),
        "[evil.com]".to_owned(),
        "[127.0.0.1]".to_owned(),
        format!("127.0.0.1:{port}:{port}"),
        "127.0.0.1:".to_owned(),
        "127.0.0.1:99999".to_owned(),
        "localhost@evil.com".to_owned(),
        "localhost:80@evil.com".to_owned(),
        "[::1".to_owned(),
    ] {
        let answer = raw(LOOPBACK, port, &with_host(host.clone()), &initialize(1)).await;
        if answer.status != 403 {
            let_in.push((host, answer.status));
        }
    }
    assert!(let_in.is_empty(), "hosts not refused with 403: {let_in:?}");
    for host in [
        format!("[::1]:{port}"),
        "[::1]".to_owned(),
        format!("127.0.0.1:{port}"),
        "localhost".to_owned(),
        format!("LOCALHOST:{port}"),
    ] {
        let answer = raw(LOOPBACK, port, &with_host(host.clone()), &initialize(1)).await;
        assert_eq!(answer.status, 200, "{host}: {answer:?}");
    }
    // The same parser reads an Origin's authority.
    let head = format!(
        "{}Origin: http://[::1]evil.com\r\n",
        with_host(format!("127.0.0.1:{port}"))
    );
    let answer = raw(LOOPBACK, port, &head, &initialize(1)).await;
    assert_eq!(answer.status, 403, "{answer:?}");
}

// ---- 4. the flood limit by address prefix, and across all addresses

/// Starts a gateway with `limits` (the `[limits]` table's lines) and sends
/// `rounds` requests from each of `addresses` (127.0.0.2, ...), in turn;
/// how many got through (any status but 429).
async fn flood(limits: &str, addresses: u8, rounds: usize) -> usize {
    let dir = scratch();
    let gw = Gateway::start(&format!("{QUIET}[limits]\n{limits}"), dir.path()).await;
    let port = gw.port;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
    );
    let mut through = 0;
    for _ in 0..rounds {
        for last in 2..2 + addresses {
            let from = IpAddr::from([127, 0, 0, last]);
            let answer = raw(from, port, &head, "not even JSON").await;
            if answer.status != 429 {
                through += 1;
            }
        }
    }
    through
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flood_limit_groups_addresses_by_prefix_and_caps_them_all() {
    let per_address = "http_requests_per_address = \"1/s\"\nhttp_burst_per_address = 20\n";
    // Each address alone may send 20 at once; a /24 is one client.
    let through = flood(
        &format!("{per_address}http_address_prefix_v4 = 24\n"),
        20,
        4,
    )
    .await;
    assert!(
        (20..=25).contains(&through),
        "20 addresses of one /24 got {through} of 80 through a burst of 20"
    );
    // Each address (/32 by default) may send 20; all of them together 30.
    let total = "http_requests_total = \"1/s\"\nhttp_burst_total = 30\n";
    let through = flood(&format!("{per_address}{total}"), 20, 4).await;
    assert!(
        (30..=35).contains(&through),
        "20 addresses got {through} of 80 through a global burst of 30"
    );
}

// ---- 5. /metrics behind a credential of its own

async fn scrape(port: u16, bearer: Option<&str>) -> Answer {
    let auth = bearer.map_or(String::new(), |b| format!("Authorization: Bearer {b}\r\n"));
    curl(port, "GET", "/metrics", &auth).await
}

/// bob calls get-sum (which alice may not use), so the metrics name it.
async fn bob_uses_get_sum(gw: &Gateway) {
    let bob = connect(
        mcpyard_client::TransportSpec::StreamableHttp {
            url: gw.url(),
            headers: vec![("Authorization".into(), format!("Bearer {BOB_KEY}"))],
        },
        std::sync::Arc::new(Recorder::default()),
        json!({}),
    )
    .await;
    wait_for_tools(&bob, &["every__get-sum"], WAIT).await;
    let summed = call(&bob, "every__get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(first_text(&summed), everything_sum_text(2, 3), "{summed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_not_shown_to_every_api_key() {
    let dir = scratch();
    let gw = start_governed("[metrics]\nenabled = true\n", dir.path()).await;
    bob_uses_get_sum(&gw).await;
    let alice = scrape(gw.port, Some(ALICE_KEY)).await;
    assert!(
        alice.status == 403 && !alice.body.contains("get-sum"),
        "alice read the metrics of a tool she may not use: {} {}",
        alice.status,
        alice
            .body
            .lines()
            .filter(|l| l.contains("get-sum"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let bob = scrape(gw.port, Some(BOB_KEY)).await;
    assert_eq!(bob.status, 403, "{bob:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_answer_their_own_token_only() {
    let dir = scratch();
    let gw = start_governed(
        "[metrics]\nenabled = true\ntoken = \"${METRICS_TOKEN}\"\n",
        dir.path(),
    )
    .await;
    bob_uses_get_sum(&gw).await;
    for (who, bearer) in [
        ("alice", Some(ALICE_KEY)),
        ("bob", Some(BOB_KEY)),
        ("nobody", None),
    ] {
        let answer = scrape(gw.port, bearer).await;
        assert_eq!(answer.status, 401, "{who}: {answer:?}");
        assert!(!answer.body.contains("get-sum"), "{who}: {answer:?}");
    }
    let scraper = scrape(gw.port, Some(METRICS_TOKEN)).await;
    assert_eq!(scraper.status, 200, "{scraper:?}");
    assert!(scraper.body.contains("every__get-sum"), "{}", scraper.body);
    // The metrics token opens nothing else.
    let call = curl_post(
        gw.port,
        "/mcp",
        Some(METRICS_TOKEN),
        &rpc(2, "tools/list", json!({})),
    )
    .await;
    assert_eq!(call.status, 401, "{call:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_a_listener_of_their_own_take_the_token_too() {
    let dir = scratch();
    let metrics_port = free_port();
    let gw = Gateway::start_with_env(
        &format!(
            "{QUIET}[metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\ntoken = \"${{METRICS_TOKEN}}\"\n"
        ),
        dir.path(),
        &[("METRICS_TOKEN", METRICS_TOKEN)],
    )
    .await;
    wait_port(metrics_port, WAIT).await;
    let without = scrape(metrics_port, None).await;
    assert_eq!(without.status, 401, "{without:?}");
    let wrong = scrape(metrics_port, Some("not-the-token")).await;
    assert_eq!(wrong.status, 401, "{wrong:?}");
    let with = scrape(metrics_port, Some(METRICS_TOKEN)).await;
    assert_eq!(with.status, 200, "{with:?}");
    assert!(with.body.contains("mcpyard_"), "{}", with.body);
    // Without keys, /mcp stays open: the token guards the metrics only.
    let listed = curl_post(gw.port, "/mcp", None, &initialize(1)).await;
    assert_eq!(listed.status, 200, "{listed:?}");
}
