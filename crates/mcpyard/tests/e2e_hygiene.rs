//! The binary's hygiene as a careless or hostile user would probe it: an API
//! key given only by the environment or a flag, the environment stdio
//! upstreams see, and the processes left behind by an impatient stop.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// ---- the API key ----------------------------------------------------------

/// `mcpyard serve` on a free loopback port with `args` and `env` added to a
/// clean environment (no inherited key or config).
async fn serve(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.env_remove("MCPYARD_API_KEY")
        .env_remove("MCPYARD_CONFIG")
        .env("RUST_LOG", "info")
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let proc = Proc::spawn("mcpyard", cmd, &dir.join(format!("mcpyard-{port}.log")));
    wait_port(port, Duration::from_secs(30)).await;
    (proc, port)
}

/// The HTTP status of an `initialize` POSTed to /mcp with `bearer`, if any.
async fn initialize_status(port: u16, bearer: Option<&str>) -> u16 {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}
    })
    .to_string();
    let auth = bearer
        .map(|k| format!("Authorization: Bearer {k}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        // The status line is all that is needed.
        while !head.windows(2).any(|w| w == b"\r\n") {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        std::io::Result::Ok(head)
    };
    let head = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .expect("the gateway answered within 10 s")
        .expect("an HTTP exchange with the gateway");
    let line = String::from_utf8_lossy(&head);
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {line}"))
}

/// Runs `mcpyard call mcpyard__status --url URL` with `env`; true on success.
fn call_status(port: u16, env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.env_remove("MCPYARD_API_KEY")
        .env_remove("MCPYARD_CONFIG")
        .env_remove("RUST_LOG")
        .args(["call", "mcpyard__status", "--url"])
        .arg(format!("http://127.0.0.1:{port}/mcp"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(60));
    (ok, format!("{stdout}{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_variable_alone_protects_the_gateway() {
    let dir = scratch();
    let (proc, port) = serve(dir.path(), &[], &[("MCPYARD_API_KEY", "var-key-1")]).await;
    assert_eq!(initialize_status(port, None).await, 401);
    assert_eq!(initialize_status(port, Some("wrong")).await, 401);
    assert_eq!(initialize_status(port, Some("var-key-1")).await, 200);
    // `mcpyard call` sends the same variable, and is refused without it.
    let (ok, out) = call_status(port, &[("MCPYARD_API_KEY", "var-key-1")]);
    assert!(ok, "{out}");
    let (ok, out) = call_status(port, &[]);
    assert!(!ok, "a call without the key succeeded: {out}");
    let log = proc.log_text();
    assert!(
        log.contains("authentication on") && log.contains("MCPYARD_API_KEY"),
        "{log}"
    );
    assert!(!log.contains("var-key-1"), "the key reached the log: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_flag_protects_the_gateway_and_wins_over_file_and_variable() {
    let dir = scratch();
    let (proc, port) = serve(dir.path(), &["--api-key", "flag-key-1"], &[]).await;
    assert_eq!(initialize_status(port, None).await, 401);
    assert_eq!(initialize_status(port, Some("flag-key-1")).await, 200);
    let (ok, out) = call_status(port, &[("MCPYARD_API_KEY", "flag-key-1")]);
    assert!(ok, "{out}");
    assert!(
        !proc.log_text().contains("flag-key-1"),
        "{}",
        proc.log_text()
    );
    drop(proc);

    // Precedence: --api-key, then the file's `api_key`, then the variable.
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, "api_key = \"${FILE_KEY}\"\n").unwrap();
    let cfg = cfg.display().to_string();
    let env = [("MCPYARD_API_KEY", "var-key-2"), ("FILE_KEY", "file-key-2")];
    let (_file_wins, port) = serve(dir.path(), &["--config", &cfg], &env).await;
    assert_eq!(initialize_status(port, Some("var-key-2")).await, 401);
    assert_eq!(initialize_status(port, Some("file-key-2")).await, 200);
    let (_flag_wins, port) = serve(
        dir.path(),
        &["--config", &cfg, "--api-key", "flag-key-2"],
        &env,
    )
    .await;
    assert_eq!(initialize_status(port, Some("file-key-2")).await, 401);
    assert_eq!(initialize_status(port, Some("flag-key-2")).await, 200);

    // No key anywhere: the log says so.
    let (open, port) = serve(dir.path(), &[], &[]).await;
    assert_eq!(initialize_status(port, None).await, 200);
    assert!(
        open.log_text().contains("authentication off"),
        "{}",
        open.log_text()
    );
}

// ---- the environment of stdio upstreams ------------------------------------

const GATEWAY_KEY: &str = "gw-key-env-test";

/// The gateway's environment: its own key, another server's secret and a
/// variable meant to be shared.
const GATEWAY_ENV: [(&str, &str); 3] = [
    ("MCPYARD_API_KEY", GATEWAY_KEY),
    ("HYGIENE_OTHER_SECRET", "other-secret-1"),
    ("HYGIENE_SHARED_TOKEN", "shared-token-1"),
];

/// The environment a stdio upstream sees, from server-everything's `get-env`.
async fn upstream_env(gw: &Gateway, server: &str) -> serde_json::Map<String, serde_json::Value> {
    let client = connect(
        mcpyard_client::TransportSpec::StreamableHttp {
            url: gw.url(),
            headers: vec![("Authorization".into(), format!("Bearer {GATEWAY_KEY}"))],
        },
        std::sync::Arc::new(Recorder::default()),
        json!({}),
    )
    .await;
    let tool = format!("{server}__get-env");
    wait_for_tools(&client, &[&tool], Duration::from_secs(60)).await;
    let result = call(&client, &tool, json!({})).await;
    assert_ne!(result["isError"], true, "{result}");
    client.shutdown().await;
    let env: serde_json::Value =
        serde_json::from_str(first_text(&result)).unwrap_or_else(|e| panic!("{e}: {result}"));
    env.as_object().cloned().expect("get-env returns an object")
}

fn assert_no_gateway_secret(env: &serde_json::Map<String, serde_json::Value>) {
    let all = serde_json::Value::Object(env.clone()).to_string();
    for (name, value) in [GATEWAY_ENV[0], GATEWAY_ENV[1]] {
        assert!(
            !env.contains_key(name) && !all.contains(value),
            "{name} reached the upstream: {all}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_upstreams_do_not_inherit_the_gateways_secrets() {
    let dir = scratch();
    let config = format!(
        "{}env = {{ GIVEN = \"given-value-1\" }}\n",
        everything_stdio("plain")
    );
    let gw = Gateway::start_with_env(&config, dir.path(), &GATEWAY_ENV).await;
    let env = upstream_env(&gw, "plain").await;
    assert_no_gateway_secret(&env);
    assert!(!env.contains_key("HYGIENE_SHARED_TOKEN"), "{env:?}");
    assert_eq!(env.get("GIVEN"), Some(&json!("given-value-1")), "{env:?}");
    assert_eq!(
        env.get("PATH").and_then(|p| p.as_str()),
        std::env::var("PATH").ok().as_deref(),
        "{env:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inherit_env_passes_only_the_named_variables() {
    let dir = scratch();
    let config = format!(
        "{}inherit_env = [\"HYGIENE_SHARED_*\", \"HYGIENE_NOT_SET\"]\n",
        everything_stdio("opted")
    );
    let gw = Gateway::start_with_env(&config, dir.path(), &GATEWAY_ENV).await;
    let env = upstream_env(&gw, "opted").await;
    assert_eq!(
        env.get("HYGIENE_SHARED_TOKEN"),
        Some(&json!("shared-token-1")),
        "{env:?}"
    );
    assert!(!env.contains_key("HYGIENE_NOT_SET"), "{env:?}");
    assert_no_gateway_secret(&env);
}

// ---- an impatient stop ------------------------------------------------------

/// Kills a process group on drop: what a failed test would leave behind.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 > 1 {
            // SAFETY: killpg of a group this test found under its own gateway.
            unsafe { libc::killpg(self.0, libc::SIGKILL) };
        }
    }
}

/// The process group of `pid`, from /proc.
fn pgrp(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's `)`: state, ppid, pgrp.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// The processes of group `group`.
fn group_members(group: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| pgrp(*pid) == Some(group))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_leaves_no_process_of_an_upstream_behind() {
    let dir = scratch();
    // The shell stays (waiting for its background `sleep`) after stdin
    // closes, so the graceful stop would still be waiting when the second
    // signal comes.
    let config = format!(
        "[servers.spawner]\ncommand = \"sh\"\nargs = [\"-c\", {}, {}, {}]\n",
        toml_str("sleep 300 & \"$0\" \"$1\"; wait"),
        path_str(&node()),
        path_str(&everything_js()),
    );
    let mut gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["spawner__echo"], Duration::from_secs(60)).await;
    client.shutdown().await;

    let sleeper = descendants(gw.proc.pid())
        .into_iter()
        .find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep\x00300"))
        })
        .expect("the upstream's grandchild runs");
    let group = pgrp(sleeper).expect("the grandchild's process group");
    let _guard = GroupGuard(group);
    assert_ne!(group, gw.proc.pid(), "the upstream has a group of its own");

    // SAFETY: plain kill(2) of the gateway this test started.
    unsafe { libc::kill(gw.proc.pid(), libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gw.proc.log_text().contains("shutting down") {
        assert!(Instant::now() < deadline, "no shutdown after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time for the handler to listen again; well inside the 2 s the
    // upstream is given to exit on its own.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // SAFETY: as above.
    unsafe { libc::kill(gw.proc.pid(), libc::SIGTERM) };

    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = gw.proc.child.try_wait().expect("poll the gateway") {
            break status;
        }
        assert!(Instant::now() < deadline, "the gateway did not exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(130), "{}", gw.proc.log_text());
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_alive(group) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !group_alive(group),
        "processes of the upstream's group {group} outlived the gateway: {:?}",
        group_members(group)
    );
}

// ---- logs -----------------------------------------------------------------

/// A session id is the client's credential for its session: ending the
/// session for idleness is logged without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_ids_stay_out_of_the_log() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, "session_idle_timeout = \"1s\"\n").expect("write config");
    let (proc, port) = serve(
        dir.path(),
        &["--config", cfg.to_str().expect("utf-8 path")],
        &[],
    )
    .await;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .expect("answered within 10 s")
        .expect("read the answer");
    let session_id = answer
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').map(|(_, v)| v.trim().to_owned()))
                .flatten()
        })
        .unwrap_or_else(|| panic!("no Mcp-Session-Id in {answer}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !proc.log_text().contains("without use") {
        assert!(
            Instant::now() < deadline,
            "the idle session was not ended:\n{}",
            proc.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = proc.log_text();
    assert!(
        !log.contains(&session_id),
        "the session id is in the log:\n{log}"
    );
}

/// A file that listens beyond loopback without a key, served on loopback
/// with `--api-key`: no warning says the gateway is open, since it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_does_not_call_a_gateway_open_that_the_flag_protects() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, "listen = \"0.0.0.0:7117\"\n").expect("write config");
    let (proc, port) = serve(
        dir.path(),
        &[
            "--config",
            cfg.to_str().expect("utf-8 path"),
            "--api-key",
            "flag-key-9",
        ],
        &[],
    )
    .await;
    assert_eq!(initialize_status(port, None).await, 401);
    let log = proc.log_text();
    assert!(log.contains("authentication on"), "{log}");
    assert!(!log.contains("no API key is set"), "{log}");
}
