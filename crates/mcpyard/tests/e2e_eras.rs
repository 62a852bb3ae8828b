//! Every front door in every era a default client speaks: the Python SDK 2.x
//! in its default (auto) mode, which negotiates 2026-07-28, and in legacy
//! mode, over Streamable HTTP, legacy HTTP+SSE and stdio, calling tools of
//! upstreams built on the TypeScript SDK (server-everything), the Python
//! SDK 1.x (a FastMCP server) and the Python SDK 2.x (mcp-server-time).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;

/// The three upstreams, one per SDK, as `[servers.*]` tables.
fn fleet_config() -> String {
    format!(
        "{}\n[servers.py1]\ncommand = {}\nargs = [{}]\n\n[servers.time]\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
        everything_stdio("every"),
        path_str(&tool("venv1/bin/python")),
        path_str(&support_file("py1_server.py")),
        path_str(&tool("venv-time/bin/python")),
    )
}

/// One call per upstream, each with the text its answer must contain.
fn calls() -> Value {
    json!([
        {"name": "every__echo", "arguments": {"message": "through every era"}, "expect": "through every era"},
        {"name": "py1__reverse", "arguments": {"text": "mcpyard"}, "expect": "draypcm"},
        {"name": "time__convert_time",
         "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
         "expect": "Asia/Tokyo"},
    ])
}

/// Runs scripts/py_client_check.py against `target` and returns its summary;
/// it fails unless every tool is listed and every call answers as expected.
fn python_sdk(target: &str, mode: &str, command: Option<&[String]>) -> Value {
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(root().join("scripts/py_client_check.py"))
        .arg(target)
        .arg(mode)
        .args(["--timeout", "60"])
        .args(["--expect-tool", "every__echo"])
        .args(["--expect-tool", "py1__reverse"])
        .args(["--expect-tool", "time__convert_time"])
        .args(["--calls", &calls().to_string()]);
    if let Some(argv) = command {
        cmd.args(["--command", &json!(argv).to_string()]);
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(120));
    assert!(
        ok,
        "python SDK ({mode}) through {target} failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Waits until the gateway lists a tool of each upstream.
async fn wait_for_fleet(gw: &Gateway) {
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__echo", "py1__reverse", "time__convert_time"],
        Duration::from_secs(60),
    )
    .await;
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_in_each_mode_calls_every_upstream_through_every_front_door() {
    let dir = scratch();
    let config = fleet_config();
    let gw = Gateway::start(&config, dir.path()).await;
    wait_for_fleet(&gw).await;
    let cfg = dir.path().join("mcpyard.toml");
    let stdio_argv = vec![
        env!("CARGO_BIN_EXE_mcpyard").to_owned(),
        "stdio".to_owned(),
        "--config".to_owned(),
        cfg.display().to_string(),
    ];
    let sse = format!("sse:http://127.0.0.1:{}/sse", gw.port);
    for mode in ["auto", "legacy"] {
        let http = python_sdk(&gw.url(), mode, None);
        let stdio = python_sdk("stdio", mode, Some(&stdio_argv));
        let legacy_sse = python_sdk(&sse, mode, None);
        if mode == "auto" {
            // The default mode speaks the newest era wherever it can.
            assert_eq!(http["protocolVersion"], "2026-07-28", "{http}");
            assert_eq!(stdio["protocolVersion"], "2026-07-28", "{stdio}");
        } else {
            assert_eq!(http["protocolVersion"], "2025-11-25", "{http}");
            assert_eq!(stdio["protocolVersion"], "2025-11-25", "{stdio}");
        }
        assert!(legacy_sse["ok"].as_bool().unwrap_or(false), "{legacy_sse}");
    }
}

/// A newline-delimited JSON-RPC peer on `mcpyard stdio`'s pipes.
struct StdioPeer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl StdioPeer {
    fn start(config: &std::path::Path, log: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcpyard"))
            .args(["stdio", "--config"])
            .arg(config)
            .env("RUST_LOG", "mcpyard=debug,info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).expect("log file"))
            .spawn()
            .expect("start mcpyard stdio");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").expect("write to mcpyard stdio");
        self.stdin.flush().expect("flush");
    }

    /// Every line up to and including the answer to `id`.
    fn until_answer(&self, id: &Value, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {id} within {timeout:?}; saw {seen:?}"));
            let done = line.get("id") == Some(id) && line.get("method").is_none();
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn envelope(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    })
}

/// The answers the stdio front door gives in the 2026-07-28 era, byte for
/// byte what the HTTP door gives: the era's result fields on every answer,
/// and the era's errors for a bad envelope.
#[test]
fn the_stdio_front_door_answers_the_stateless_era_as_http_does() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, "").expect("write config");
    let mut peer = StdioPeer::start(&cfg, &dir.path().join("stdio.log"));
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": envelope("2026-07-28")}}),
    );
    let discover = peer.until_answer(&json!(1), Duration::from_secs(30));
    let discover = &discover.last().expect("answer")["result"];
    assert!(
        discover["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{discover}"
    );
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": envelope("2026-07-28")}}));
    let list = peer.until_answer(&json!(2), Duration::from_secs(30));
    let list = &list.last().expect("answer")["result"];
    assert_eq!(list["resultType"], "complete", "{list}");
    assert!(list["ttlMs"].is_u64(), "{list}");
    assert_eq!(list["cacheScope"], "private", "{list}");
    assert_eq!(
        list["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpyard",
        "{list}"
    );
    assert!(
        list["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "mcpyard__status")),
        "{list}"
    );
    // An envelope of an era the gateway does not serve statelessly.
    peer.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
        "params": {"_meta": envelope("2025-06-18")}}));
    let refused = peer.until_answer(&json!(3), Duration::from_secs(30));
    let error = &refused.last().expect("answer")["error"];
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]), "{error}");
    // A handshake-era request on the same pipe is still answered in its era.
    peer.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let plain = peer.until_answer(&json!(4), Duration::from_secs(30));
    let plain = &plain.last().expect("answer")["result"];
    assert!(plain.get("resultType").is_none(), "{plain}");
}

/// An upstream's tool result, passed on as the text the upstream wrote,
/// still gets the 2026-07-28 era's members (and nothing of them in the
/// handshake era), on the stdio door as on the others.
#[test]
fn an_upstreams_result_gets_the_members_of_the_clients_era() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, everything_stdio("every")).expect("write config");
    let mut peer = StdioPeer::start(&cfg, &dir.path().join("stdio.log"));
    let echo = |id: u64, meta: Option<Value>| {
        let mut params = json!({"name": "every__echo", "arguments": {"message": "as written"}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    peer.send(echo(1, Some(envelope("2026-07-28"))));
    let modern = peer.until_answer(&json!(1), Duration::from_secs(60));
    let modern = &modern.last().expect("answer")["result"];
    assert_eq!(modern["resultType"], "complete", "{modern}");
    assert_eq!(
        modern["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpyard",
        "{modern}"
    );
    assert_eq!(modern["content"][0]["text"], "Echo: as written", "{modern}");

    peer.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    peer.until_answer(&json!(2), Duration::from_secs(30));
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    peer.send(echo(3, None));
    let plain = peer.until_answer(&json!(3), Duration::from_secs(30));
    let plain = &plain.last().expect("answer")["result"];
    assert_eq!(plain["content"][0]["text"], "Echo: as written", "{plain}");
    assert!(plain.get("resultType").is_none(), "{plain}");
    assert!(plain.get("_meta").is_none(), "{plain}");
}

/// A request the client cancelled gets no answer (the specification: the
/// receiver should not respond), and the pipe goes on serving others.
#[test]
fn a_cancelled_request_gets_no_answer() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, everything_stdio("every")).expect("write config");
    let mut peer = StdioPeer::start(&cfg, &dir.path().join("stdio.log"));
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    peer.until_answer(&json!(1), Duration::from_secs(30));
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // The first request waits for the upstream's first connection.
    peer.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    peer.until_answer(&json!(2), Duration::from_secs(60));
    peer.send(
        json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": {
        "name": "every__trigger-long-running-operation",
        "arguments": {"duration": 60, "steps": 60},
        "_meta": {"progressToken": "slow-progress"}}}),
    );
    // Cancel once the call is under way upstream (its first progress): a
    // cancellation that arrives before the request is known is void.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = peer
            .lines
            .recv_timeout(left)
            .expect("progress of the slow call");
        if line["method"] == "notifications/progress" {
            assert_eq!(line["params"]["progressToken"], "slow-progress", "{line}");
            break;
        }
    }
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow", "reason": "changed my mind"}}),
    );
    // A call that ends after the cancelled one has long been given up:
    // any answer to it would have been written by then.
    peer.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "every__trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 1}}}),
    );
    let seen = peer.until_answer(&json!(3), Duration::from_secs(30));
    assert!(
        seen.iter().all(|m| m.get("id") != Some(&json!("slow"))),
        "the cancelled request was answered: {seen:?}"
    );
}

/// Runs support/py_input_check.py as client `label` against `target`, in
/// the SDK's default mode.
fn python_input_check(
    target: &str,
    label: &str,
    calls: &Value,
    command: Option<&[String]>,
) -> Value {
    python_input_check_in(target, "auto", label, calls, command)
}

/// [`python_input_check`] in `mode` (auto or legacy).
fn python_input_check_in(
    target: &str,
    mode: &str,
    label: &str,
    calls: &Value,
    command: Option<&[String]>,
) -> Value {
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(support_file("py_input_check.py"))
        .arg(target)
        .arg(label)
        .arg(calls.to_string())
        .args(["--mode", mode]);
    if let Some(argv) = command {
        cmd.args(["--command", &json!(argv).to_string()]);
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(150));
    assert!(ok, "py_input_check {label} failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The tools that need the client, of a stdio upstream (Python SDK 1.x) and
/// of a Streamable HTTP one (server-everything), with what each answer must
/// contain for client `label`.
/// `all`: every tool; else only the HTTP upstreams', whose servers say
/// which call each of their requests belongs to (a stdio server cannot, so
/// concurrent clients of one stdio upstream may be asked for each other).
fn input_calls(label: &str, all: bool) -> (Value, Vec<String>) {
    let mut calls = vec![
        json!(["web__trigger-sampling-request", {"prompt": "hello"}]),
        json!(["web__trigger-elicitation-request", {}]),
        json!(["py1web__client_roots", {}]),
    ];
    let mut expected = vec![
        format!("sampled for {label}"),
        format!("user {label}"),
        format!("file:///work/{label}"),
    ];
    if all {
        calls.extend([
            json!(["py1__ask_model", {"prompt": "hello"}]),
            json!(["py1__ask_name", {}]),
            json!(["py1__client_roots", {}]),
        ]);
        expected.extend([
            format!("model said: sampled for {label}"),
            format!("hello user {label}"),
            format!("file:///work/{label}"),
        ]);
    }
    (Value::Array(calls), expected)
}

fn check_input_summary(summary: &Value, label: &str, all: bool) {
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    let (_, expected) = input_calls(label, all);
    let results = summary["results"].as_array().expect("results");
    assert_eq!(results.len(), expected.len(), "{summary}");
    for (result, want) in results.iter().zip(&expected) {
        assert_ne!(result["isError"], true, "{result}");
        let text: String = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        assert!(
            text.contains(want.as_str()),
            "{} should contain {want:?}: {text}",
            result["name"]
        );
    }
    for kind in ["sampling", "elicitation", "roots"] {
        assert!(
            summary["asked"]
                .as_array()
                .is_some_and(|a| a.contains(&json!(kind))),
            "the client was never asked for {kind}: {summary}"
        );
    }
}

/// 2026-07-28 has no session to carry a server's request: the gateway
/// answers with `input_required`, and the client's retry carries the
/// responses to the upstream call that waits for them: sampling,
/// elicitation and roots through a stdio and an HTTP upstream, over the
/// HTTP and the stdio front doors. Several clients at once each get their
/// own answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_need_the_client_round_trip_in_the_stateless_era() {
    let dir = scratch();
    let (_web, web_port) = start_everything("streamableHttp", dir.path()).await;
    let py1_port = free_port();
    let mut cmd = Command::new(tool("venv1/bin/python"));
    cmd.arg(support_file("py1_server.py"))
        .arg("http")
        .arg(py1_port.to_string());
    let _py1web = Proc::spawn("py1 http", cmd, &dir.path().join("py1-http.log"));
    wait_port(py1_port, Duration::from_secs(30)).await;
    let config = format!(
        "[servers.py1]\ncommand = {}\nargs = [{}]\n\n[servers.web]\nurl = \"http://127.0.0.1:{web_port}/mcp\"\n\n[servers.py1web]\nurl = \"http://127.0.0.1:{py1_port}/mcp\"\n",
        path_str(&tool("venv1/bin/python")),
        path_str(&support_file("py1_server.py")),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &[
            "py1__ask_model",
            "web__trigger-sampling-request",
            "py1web__client_roots",
        ],
        Duration::from_secs(60),
    )
    .await;
    client.shutdown().await;

    let url = gw.url();
    let clients: Vec<_> = ["A", "B", "C"]
        .into_iter()
        .map(|label| {
            let url = url.clone();
            std::thread::spawn(move || {
                let (calls, _) = input_calls(label, false);
                (label, python_input_check(&url, label, &calls, None))
            })
        })
        .collect();
    for handle in clients {
        let (label, summary) = handle.join().expect("client thread");
        check_input_summary(&summary, label, false);
    }
    let (calls, _) = input_calls("D", true);
    check_input_summary(&python_input_check(&url, "D", &calls, None), "D", true);

    let stdio_argv = vec![
        env!("CARGO_BIN_EXE_mcpyard").to_owned(),
        "stdio".to_owned(),
        "--config".to_owned(),
        dir.path().join("mcpyard.toml").display().to_string(),
    ];
    let (calls, _) = input_calls("S", true);
    let summary = python_input_check("stdio", "S", &calls, Some(&stdio_argv));
    check_input_summary(&summary, "S", true);
}

/// The server of the client crate's tests that serves 2026-07-28 (Python
/// SDK 2.x), as a `[servers.NAME]` table: over stdio, or at `url`.
fn modern_server() -> std::path::PathBuf {
    root().join("crates/mcpyard-client/tests/support/py2_modern_server.py")
}

/// An upstream of the 2026-07-28 era alone (it refuses `initialize`) is
/// spoken to in that era, over stdio and Streamable HTTP: its
/// `input_required` answers reach a 2026-07-28 client as the gateway's own
/// round trips and an older client as ordinary server requests; its list
/// changes come on a listen stream and reach the catalogue. A server of
/// both eras keeps the handshake, and what only that era has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_of_the_stateless_era_are_spoken_to_in_it() {
    let dir = scratch();
    let web_port = free_port();
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(modern_server())
        .arg("http")
        .arg(web_port.to_string())
        .arg("--modern-only");
    let _web = Proc::spawn("py2-modern http", cmd, &dir.path().join("modern-http.log"));
    wait_port(web_port, Duration::from_secs(30)).await;
    let config = format!(
        "[servers.modern]\ncommand = {}\nargs = [{}, \"stdio\", \"--modern-only\"]\n\n[servers.modernweb]\nurl = \"http://127.0.0.1:{web_port}/mcp\"\n\n[servers.both]\ncommand = {0}\nargs = [{1}, \"stdio\"]\n",
        path_str(&tool("venv/bin/python")),
        path_str(&modern_server()),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["modern__consult", "modernweb__consult", "both__reverse"],
        Duration::from_secs(60),
    )
    .await;
    let status = call(&client, "mcpyard__status", json!({})).await;
    for (name, era) in [
        ("modern", "2026-07-28"),
        ("modernweb", "2026-07-28"),
        ("both", "2025-11-25"),
    ] {
        let source = status["structuredContent"]["sources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("{name} in {status}"));
        assert_eq!(source["protocolVersion"], era, "{source}");
    }

    let calls = json!([
        ["modern__consult", {"question": "q"}],
        ["modernweb__consult", {"question": "q"}],
    ]);
    for (mode, label) in [("auto", "N"), ("legacy", "O")] {
        let summary = python_input_check_in(&gw.url(), mode, label, &calls, None);
        assert_eq!(summary["ok"], true, "{mode}: {summary}");
        for result in summary["results"].as_array().expect("results") {
            assert_ne!(result["isError"], true, "{mode}: {result}");
            assert_eq!(
                result["content"][0]["text"],
                format!("model said sampled for {label}; user is user {label}"),
                "{mode}: {result}"
            );
        }
    }

    // A list change announced on the upstream's listen stream.
    let grew = call(&client, "modern__grow", json!({})).await;
    assert_eq!(first_text(&grew), "grew", "{grew}");
    wait_for_tools(&client, &["modern__grown"], Duration::from_secs(30)).await;
    client.shutdown().await;
}

/// `py_tools_view.py` against `target` in `mode`: the tools listed and the
/// text of each call in `calls`.
fn tools_view(target: &str, mode: &str, calls: &[&str], command: Option<&[String]>) -> Value {
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(support_file("py_tools_view.py"))
        .arg(target)
        .args(["--mode", mode]);
    for call in calls {
        cmd.args(["--call", call]);
    }
    if let Some(argv) = command {
        cmd.args(["--command", &json!(argv).to_string()]);
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(150));
    assert!(
        ok,
        "py_tools_view {target} ({mode}) failed:\n{stdout}\n{stderr}"
    );
    let summary: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert_eq!(summary["ok"], true, "{target} ({mode}): {summary}");
    summary
}

/// The names of `summary`'s tools that start with `prefix`, without it.
fn tools_of(summary: &Value, prefix: &str) -> Vec<String> {
    summary["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str()?.strip_prefix(prefix))
        .map(str::to_owned)
        .collect()
}

/// A server of both eras may offer each something else (here: a tool that
/// asks with a server request to handshake clients, one that asks with
/// `input_required` to 2026-07-28 clients). Through the gateway, the
/// Python SDK 2.x in its default mode sees, and can use, what the server
/// offers a client of its own era, over HTTP and stdio upstreams and over
/// the HTTP and stdio front doors; in legacy mode what it offers the
/// handshake era; and a server of the handshake era alone the same tools in
/// both eras. The status names each server's second connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_era_sees_through_the_gateway_what_a_server_offers_that_era() {
    let dir = scratch();
    let two_eras = support_file("py_two_eras_server.py");
    let port = free_port();
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(&two_eras).arg("http").arg(port.to_string());
    let _web = Proc::spawn("two-eras http", cmd, &dir.path().join("two-eras.log"));
    wait_port(port, Duration::from_secs(30)).await;
    let direct_url = format!("http://127.0.0.1:{port}/mcp");
    let direct_modern = tools_view(&direct_url, "auto", &["ask_by_input"], None);
    let direct_legacy = tools_view(&direct_url, "legacy", &["ask_by_request"], None);
    assert_eq!(direct_modern["protocolVersion"], "2026-07-28");
    assert_eq!(tools_of(&direct_modern, ""), ["ask_by_input", "echo"]);
    assert_eq!(tools_of(&direct_legacy, ""), ["ask_by_request", "echo"]);

    let config = format!(
        "[servers.web]\nurl = \"{direct_url}\"\n\n[servers.both]\ncommand = {}\nargs = [{}, \"stdio\"]\n\n[servers.py1]\ncommand = {}\nargs = [{}]\n",
        path_str(&tool("venv/bin/python")),
        path_str(&two_eras),
        path_str(&tool("venv1/bin/python")),
        path_str(&support_file("py1_server.py")),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let url = gw.url();
    let calls = ["web__ask_by_input", "both__ask_by_input", "py1__reverse"];
    let modern = tools_view(&url, "auto", &calls, None);
    assert_eq!(modern["protocolVersion"], "2026-07-28", "{modern}");
    for server in ["web__", "both__"] {
        assert_eq!(
            tools_of(&modern, server),
            tools_of(&direct_modern, ""),
            "{modern}"
        );
    }
    // The server's own input request, answered by the client, reached it.
    assert_eq!(
        modern["results"]["web__ask_by_input"],
        "hello ada (by input)"
    );
    assert_eq!(
        modern["results"]["both__ask_by_input"],
        "hello ada (by input)"
    );

    let legacy_calls = ["web__ask_by_request", "both__ask_by_request"];
    let legacy = tools_view(&url, "legacy", &legacy_calls, None);
    assert_eq!(legacy["protocolVersion"], "2025-11-25", "{legacy}");
    for server in ["web__", "both__"] {
        assert_eq!(
            tools_of(&legacy, server),
            tools_of(&direct_legacy, ""),
            "{legacy}"
        );
    }
    assert_eq!(
        legacy["results"]["both__ask_by_request"],
        "hello ada (by request)"
    );
    // A server of the handshake era alone: the same tools to both eras.
    assert_eq!(tools_of(&modern, "py1__"), tools_of(&legacy, "py1__"));
    assert!(!tools_of(&modern, "py1__").is_empty(), "{modern}");

    let status = tools_view(&url, "legacy", &["mcpyard__status"], None);
    let text = status["results"]["mcpyard__status"]
        .as_str()
        .unwrap_or_default();
    for (server, state) in [("web", "up"), ("both", "up"), ("py1", "not_offered")] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("- {server} [")))
            .unwrap_or_else(|| panic!("no status line for {server}: {text}"));
        assert!(
            line.ends_with(&format!("2026-07-28 connection: {state}")),
            "{line}"
        );
    }

    // The stdio front door: the same catalogue for the same era.
    let stdio_argv = vec![
        env!("CARGO_BIN_EXE_mcpyard").to_owned(),
        "stdio".to_owned(),
        "--config".to_owned(),
        dir.path().join("mcpyard.toml").display().to_string(),
    ];
    let over_stdio = tools_view("stdio", "auto", &["both__ask_by_input"], Some(&stdio_argv));
    assert_eq!(over_stdio["protocolVersion"], "2026-07-28", "{over_stdio}");
    assert_eq!(
        tools_of(&over_stdio, "both__"),
        tools_of(&direct_modern, "")
    );
    assert_eq!(
        over_stdio["results"]["both__ask_by_input"],
        "hello ada (by input)"
    );
}
