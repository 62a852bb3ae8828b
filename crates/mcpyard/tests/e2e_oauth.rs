//! OAuth toward upstreams, end to end against real counterparts: npm
//! `oidc-provider` as the authorization server (support/oauth_as.mjs) in
//! front of MCP servers built on the Python SDK that check each bearer
//! token's signature, issuer and audience (support/oauth_resource_server.py).
//!
//! Every run logs at `trace`, and each test ends by looking for the client
//! secret and every access and refresh token it saw in every log line,
//! error, status and command output: none may appear.

#[path = "support/replicas.rs"]
mod replicas;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{ClientError, McpClient, NoopHandler, RequestOptions, TransportSpec};
use serde_json::{json, Value};
use support::*;

const M2M_SECRET: &str = "m2m-secret-6b1f0c2e9d7a4e35";

/// The authorization server of one test.
struct AuthServer {
    /// Kept for its drop: the process group is stopped and reaped.
    _proc: Proc,
    port: u16,
}

impl AuthServer {
    async fn start(dir: &Path, access_ttl_secs: u32) -> AuthServer {
        let port = free_port();
        let mut cmd = Command::new(node());
        cmd.arg(support_file("oauth_as.mjs"))
            .arg(port.to_string())
            .env(
                "OIDC_PROVIDER_DIR",
                tool("npm-oauth/node_modules/oidc-provider"),
            )
            .env("AS_M2M_SECRET", M2M_SECRET)
            .env("AS_ACCESS_TTL", access_ttl_secs.to_string());
        let proc = Proc::spawn("oidc-provider", cmd, &dir.join("as.log"));
        wait_for_log(&proc, "listening", Duration::from_secs(30)).await;
        AuthServer { _proc: proc, port }
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Successful and failed grants by type, as the server counted them.
    fn stats(&self) -> Value {
        http_json("GET", &format!("{}/test/stats", self.issuer()), &[])
    }

    /// Revokes a refresh token at the revocation endpoint (RFC 7009), as
    /// its public client.
    fn revoke(&self, refresh_token: &str) {
        http_json(
            "POST",
            &format!("{}/token/revocation", self.issuer()),
            &[
                ("token", refresh_token),
                ("token_type_hint", "refresh_token"),
                ("client_id", "gateway-user"),
            ],
        );
    }
}

/// An MCP server behind the authorization server; its resource URL is
/// its `/mcp` endpoint.
struct ResourceServer {
    proc: Proc,
    port: u16,
}

impl ResourceServer {
    async fn start(dir: &Path, name: &str, issuer: &str) -> ResourceServer {
        let port = free_port();
        let mut cmd = Command::new(tool("venv/bin/python"));
        cmd.arg(support_file("oauth_resource_server.py"))
            .arg(port.to_string())
            .arg(issuer);
        let proc = Proc::spawn(name, cmd, &dir.join(format!("{name}.log")));
        wait_port(port, Duration::from_secs(30)).await;
        ResourceServer { proc, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// An HTTP request with Python's standard library (a form body for POST):
/// the JSON answer, or `{"status": N}` for an empty one.
fn http_json(method: &str, url: &str, form: &[(&str, &str)]) -> Value {
    let script = r#"
import json, sys, urllib.parse, urllib.request
method, url, form = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
data = urllib.parse.urlencode(form).encode() if method == "POST" else None
with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method), timeout=20) as r:
    body = r.read()
    print(body.decode() if body else json.dumps({"status": r.status}))
"#;
    let form: serde_json::Map<String, Value> = form
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script, method, url, &Value::Object(form).to_string()]);
    let (ok, out, err) = run(cmd, Duration::from_secs(30));
    assert!(ok, "{method} {url} failed: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The tokens of `upstream` in the store under `state` (XDG_STATE_HOME).
fn stored(state: &Path, upstream: &str) -> Value {
    let path = token_file(state, upstream);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no token file {}: {e}", path.display()));
    serde_json::from_str(&text).expect("token file is JSON")
}

fn token_file(state: &Path, upstream: &str) -> PathBuf {
    state.join(format!("mcpyard/oauth/{upstream}.json"))
}

/// Every token value in a stored file, to look for in the outputs.
fn tokens_in(stored: &Value) -> Vec<String> {
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|k| stored["tokens"][k].as_str())
        .map(str::to_owned)
        .collect()
}

/// The claims of a JWT (not verified: the resource server did that).
fn claims(jwt: &str) -> Value {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1).expect("a JWT has three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// What `whoami` answered (its text is a JSON object).
fn who_of(result: &Value) -> Value {
    serde_json::from_str(first_text(result)).unwrap_or_else(|e| panic!("not JSON ({e}): {result}"))
}

/// A tool call through the gateway: its result, or the error's text.
async fn try_call(client: &McpClient, name: &str) -> Result<Value, String> {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": {}})),
            RequestOptions {
                timeout: Some(Duration::from_secs(60)),
                ..RequestOptions::default()
            },
        )
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| {
            if r["isError"] == json!(true) {
                Err(first_text(&r).to_owned())
            } else {
                Ok(r)
            }
        })
}

/// The gateway's status of one source.
async fn source_status(client: &McpClient, name: &str) -> Value {
    let status = call(client, "mcpyard__status", json!({})).await;
    status["structuredContent"]["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == json!(name)).cloned())
        .unwrap_or_else(|| panic!("no source {name} in {status}"))
}

/// Waits until the gateway shows `name` in `state`; returns its status.
async fn wait_for_state(client: &McpClient, name: &str, state: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let s = source_status(client, name).await;
        if s["state"] == json!(state) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{name} not {state} within {within:?}: {s}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Fails when any secret appears in any of the texts (named for the message).
fn assert_no_secrets(texts: &[(&str, String)], secrets: &[String]) {
    assert!(!secrets.is_empty());
    for secret in secrets {
        assert!(
            secret.len() >= 16,
            "too short to look for: {}",
            secret.len()
        );
        for (what, text) in texts {
            assert!(
                !text.contains(secret.as_str()),
                "a secret ({}...) appears in {what}",
                &secret[..6]
            );
        }
    }
}

/// `mcpyard login` with a stand-in browser ($BROWSER) that follows the
/// authorization server's redirects back to the login's loopback port.
fn login_with_browser(config: &Path, state: &Path, server: &str) -> (bool, String, String) {
    login_with_browser_env(config, state, server, &[])
}

fn login_with_browser_env(
    config: &Path,
    state: &Path,
    server: &str,
    env: &[(&str, &str)],
) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.args(["--log-level", "trace", "login", server, "--config"])
        .arg(config)
        .args(["--timeout", "60s"])
        .envs(env.iter().copied())
        .env("XDG_STATE_HOME", state)
        .env("M2M_SECRET", M2M_SECRET)
        .env(
            "BROWSER",
            format!("python3 {}", support_file("oauth_browser.py").display()),
        );
    run(cmd, Duration::from_secs(90))
}

/// `mcpyard login --no-browser`: the URL it prints is opened by the
/// stand-in browser, which stops at the redirect; that address is pasted
/// on login's stdin, as a person on a machine without a browser does.
fn login_by_pasting(config: &Path, state: &Path, server: &str) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpyard"))
        .args([
            "--log-level",
            "trace",
            "login",
            server,
            "--no-browser",
            "--config",
        ])
        .arg(config)
        .args(["--timeout", "60s"])
        .env("XDG_STATE_HOME", state)
        .env("M2M_SECRET", M2M_SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpyard login");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).expect("read login's output");
        assert!(n > 0, "login ended before printing a URL: {seen}");
        seen += &line;
        if let Some(url) = line.trim().strip_prefix("http://") {
            break format!("http://{url}");
        }
    };
    let mut browser = Command::new("python3");
    browser
        .arg(support_file("oauth_browser.py"))
        .arg("--print-redirect")
        .arg(&url);
    let (ok, redirect, err) = run(browser, Duration::from_secs(60));
    assert!(ok, "the stand-in browser failed: {err}");
    let mut stdin = child.stdin.take().expect("piped stdin");
    writeln!(stdin, "{}", redirect.trim()).expect("paste the redirect");
    drop(stdin);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        let _ = tx.send(rest);
    });
    let rest = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("login finished within a minute");
    let status = child.wait().expect("reap login");
    (status.success(), seen + &rest)
}

fn gateway_env(state: &str) -> Vec<(&str, &str)> {
    vec![
        ("XDG_STATE_HOME", state),
        ("M2M_SECRET", M2M_SECRET),
        ("RUST_LOG", "trace"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_get_tokens_bound_to_each_server() {
    let dir = scratch();
    let state = dir.path().join("state");
    let auth = AuthServer::start(dir.path(), 3600).await;
    let basic = ResourceServer::start(dir.path(), "rs-basic", &auth.issuer()).await;
    let post = ResourceServer::start(dir.path(), "rs-post", &auth.issuer()).await;
    let config = format!(
        r#"
[servers.basic]
url = "{}"
[servers.basic.oauth]
grant = "client_credentials"
client_id = "gateway-m2m"
client_secret = "${{M2M_SECRET}}"

[servers.post]
url = "{}"
[servers.post.oauth]
grant = "client_credentials"
client_id = "gateway-post"
client_secret = "${{M2M_SECRET}}"
auth_method = "client_secret_post"
"#,
        basic.url(),
        post.url()
    );
    let state_str = state.display().to_string();
    let gw = Gateway::start_with_env(&config, dir.path(), &gateway_env(&state_str)).await;
    let client = gw.client(Arc::new(NoopHandler), json!({})).await;
    wait_for_tools(
        &client,
        &["basic__whoami", "post__whoami"],
        Duration::from_secs(30),
    )
    .await;

    let mut outputs = Vec::new();
    for (tool, server, client_id) in [
        ("basic__whoami", &basic, "gateway-m2m"),
        ("post__whoami", &post, "gateway-post"),
    ] {
        let result = call(&client, tool, json!({})).await;
        let who = &who_of(&result);
        assert_eq!(who["client_id"], json!(client_id), "{result}");
        assert_eq!(who["aud"], json!(server.url()), "{result}");
        assert_eq!(who["scope"], json!("mcp:tools"), "{result}");
        outputs.push((tool, result.to_string()));
    }
    let stats = auth.stats();
    assert!(
        stats["success"]["client_credentials"].as_u64() >= Some(2),
        "{stats}"
    );

    // The tokens are the audience's alone: `basic`'s token is refused by
    // `post`, which accepts its own.
    let basic_token = stored(&state, "basic")["tokens"]["access_token"]
        .as_str()
        .expect("an access token stored")
        .to_owned();
    assert_eq!(claims(&basic_token)["aud"], json!(basic.url()));
    let with_token = |url: String| TransportSpec::StreamableHttp {
        url,
        headers: vec![("Authorization".into(), format!("Bearer {basic_token}"))],
    };
    let refused = McpClient::connect(
        with_token(post.url()),
        Arc::new(NoopHandler),
        Default::default(),
    )
    .await
    .expect_err("a token for another server is refused");
    assert!(
        matches!(refused, ClientError::Http { status: 401, .. }),
        "{refused}"
    );
    wait_for_log(&post.proc, "InvalidAudienceError", Duration::from_secs(5)).await;
    let direct = McpClient::connect(
        with_token(basic.url()),
        Arc::new(NoopHandler),
        Default::default(),
    )
    .await
    .expect("its own server accepts it");
    direct.shutdown().await;

    let status = call(&client, "mcpyard__status", json!({}))
        .await
        .to_string();
    client.shutdown().await;
    let check = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
        cmd.args(["check", "--config"])
            .arg(dir.path().join("mcpyard.toml"))
            .env("M2M_SECRET", M2M_SECRET)
            .env("XDG_STATE_HOME", &state);
        let (ok, out, err) = run(cmd, Duration::from_secs(30));
        assert!(ok, "{err}");
        assert!(
            out.contains("oauth client_credentials, client `gateway-m2m`, secret set"),
            "{out}"
        );
        out + &err
    };
    let mut secrets = vec![M2M_SECRET.to_owned()];
    secrets.extend(tokens_in(&stored(&state, "basic")));
    secrets.extend(tokens_in(&stored(&state, "post")));
    let mut texts = outputs;
    texts.push(("the gateway's trace log", gw.proc.log_text()));
    texts.push(("the status", status));
    texts.push(("check", check));
    assert!(
        gw.proc.log_text().contains("TRACE"),
        "the gateway logged at trace"
    );
    assert_no_secrets(&texts, &secrets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_refreshed_with_rotation_and_a_revoked_one_asks_to_log_in_again() {
    let dir = scratch();
    let state = dir.path().join("state");
    // Access tokens live 3 s, so each wait past that makes the next call refresh.
    let auth = AuthServer::start(dir.path(), 3).await;
    let user_rs = ResourceServer::start(dir.path(), "rs-user", &auth.issuer()).await;
    let m2m_rs = ResourceServer::start(dir.path(), "rs-m2m", &auth.issuer()).await;
    let config = format!(
        r#"
[servers.user]
url = "{}"
[servers.user.oauth]
client_id = "gateway-user"
scopes = ["mcp:tools", "offline_access"]
redirect_port = 0

[servers.m2m]
url = "{}"
[servers.m2m.oauth]
grant = "client_credentials"
client_id = "gateway-m2m"
client_secret = "${{M2M_SECRET}}"
"#,
        user_rs.url(),
        m2m_rs.url()
    );
    let config_path = dir.path().join("mcpyard.toml");
    std::fs::write(&config_path, &config).expect("write config");
    let mut secrets = vec![M2M_SECRET.to_owned()];
    let mut texts: Vec<(&str, String)> = Vec::new();

    // A person logs in; the browser comes back to login's loopback port.
    let (ok, out, err) = login_with_browser(&config_path, &state, "user");
    assert!(ok, "login failed:\n{out}\n{err}");
    assert!(err.contains("Logged in to `user`"), "{err}");
    texts.push(("the first login's output", out + &err));
    let file = token_file(&state, "user");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let first = stored(&state, "user");
    let first_refresh = first["tokens"]["refresh_token"]
        .as_str()
        .expect("a refresh token was issued")
        .to_owned();
    secrets.extend(tokens_in(&first));
    let access = first["tokens"]["access_token"].as_str().unwrap();
    assert_eq!(claims(access)["aud"], json!(user_rs.url()));
    assert_eq!(claims(access)["sub"], json!("alice"));

    let state_str = state.display().to_string();
    let gw = Gateway::start_with_env(&config, dir.path(), &gateway_env(&state_str)).await;
    let client = gw.client(Arc::new(NoopHandler), json!({})).await;
    wait_for_tools(
        &client,
        &["user__whoami", "m2m__whoami"],
        Duration::from_secs(30),
    )
    .await;
    let who = call(&client, "user__whoami", json!({})).await;
    assert_eq!(who_of(&who)["sub"], json!("alice"), "{who}");
    texts.push(("a call's result", who.to_string()));

    // Past the access token's life, the next call refreshes it, and the
    // refresh token is rotated.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let who = call(&client, "user__whoami", json!({})).await;
    assert_eq!(who_of(&who)["sub"], json!("alice"), "{who}");
    let second = stored(&state, "user");
    secrets.extend(tokens_in(&second));
    let second_refresh = second["tokens"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(
        second_refresh, first_refresh,
        "the refresh token was rotated"
    );
    let stats = auth.stats();
    assert!(
        stats["success"]["refresh_token"].as_u64() >= Some(1),
        "{stats}"
    );

    // The refresh token is revoked: once the access token has expired, the
    // call says to log in again, the status too, and the other upstream
    // keeps working.
    auth.revoke(&second_refresh);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let refused = try_call(&client, "user__whoami")
        .await
        .expect_err("a revoked login cannot call");
    assert!(
        refused.contains("log in again: `mcpyard login user`"),
        "{refused}"
    );
    texts.push(("the refused call's error", refused));
    let status = wait_for_state(&client, "user", "login_required", Duration::from_secs(10)).await;
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains("mcpyard login user")),
        "{status}"
    );
    texts.push(("the status", status.to_string()));
    let other = call(&client, "m2m__whoami", json!({})).await;
    assert_eq!(who_of(&other)["client_id"], json!("gateway-m2m"), "{other}");
    let stats = auth.stats();
    assert!(
        stats["error"]["refresh_token"].as_u64() >= Some(1),
        "{stats}"
    );
    let check = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
        cmd.args(["--log-level", "trace", "check", "--connect", "--config"])
            .arg(&config_path)
            .env("M2M_SECRET", M2M_SECRET)
            .env("XDG_STATE_HOME", &state);
        let (ok, out, err) = run(cmd, Duration::from_secs(60));
        assert!(
            !ok,
            "check --connect reports the upstream waiting for a login"
        );
        assert!(out.contains("log in again: `mcpyard login user`"), "{out}");
        out + &err
    };
    texts.push(("check --connect", check));

    // Logging in again on a machine without a browser (the address pasted)
    // brings the upstream back without restarting the gateway.
    let (ok, output) = login_by_pasting(&config_path, &state, "user");
    assert!(ok, "the pasted login failed:\n{output}");
    texts.push(("the pasted login's output", output));
    let third = stored(&state, "user");
    secrets.extend(tokens_in(&third));
    wait_for_state(&client, "user", "up", Duration::from_secs(45)).await;
    let who = call(&client, "user__whoami", json!({})).await;
    assert_eq!(who_of(&who)["sub"], json!("alice"), "{who}");
    secrets.extend(tokens_in(&stored(&state, "user")));
    client.shutdown().await;

    texts.push(("the gateway's trace log", gw.proc.log_text()));
    assert!(
        gw.proc.log_text().contains("TRACE"),
        "the gateway logged at trace"
    );
    secrets.sort();
    secrets.dedup();
    assert_no_secrets(&texts, &secrets);
}

/// The values Redis holds, as `redis-cli` prints them.
fn redis_dump(url: &str) -> String {
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-u", url, "--raw"])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let keys = cli(&["KEYS", "*"]);
    let mut dump = keys.clone();
    for key in keys.lines().filter(|k| !k.is_empty()) {
        dump += &cli(&["DUMP", key]);
        dump += &cli(&["GET", key]);
    }
    dump
}

/// A team's replicas share one `mcpyard login` through Redis, sealed, and
/// refresh its rotated token one at a time: refreshing at once with one
/// refresh token would spend it twice, and the authorization server (which
/// takes a reused refresh token for a stolen one) would revoke the login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_login_and_refresh_its_rotated_token_once() {
    let dir = scratch();
    let state = dir.path().join("state");
    let auth = AuthServer::start(dir.path(), 3).await;
    let user_rs = ResourceServer::start(dir.path(), "rs-user", &auth.issuer()).await;
    let redis = replicas::Redis::start(dir.path(), None).await;
    let key_env = (
        "TEST_TOKEN_KEY",
        "8f1c2b3a4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8",
    );
    let config = format!(
        r#"
[state]
backend = "redis"
url = "{}"
token_key_env = "TEST_TOKEN_KEY"

[servers.user]
url = "{}"
[servers.user.oauth]
client_id = "gateway-user"
scopes = ["mcp:tools", "offline_access"]
redirect_port = 0
"#,
        redis.url(),
        user_rs.url()
    );
    let config_path = dir.path().join("mcpyard.toml");
    std::fs::write(&config_path, &config).expect("write config");

    // One login, for every replica: into Redis, no file on this machine.
    let (ok, out, err) = login_with_browser_env(&config_path, &state, "user", &[key_env]);
    assert!(ok, "login failed:\n{out}\n{err}");
    assert!(err.contains("tokens saved in the shared state"), "{err}");
    assert!(!token_file(&state, "user").exists(), "no token file");
    let sealed = redis_dump(&redis.url());
    assert!(sealed.contains("mcpyard:oauth:user"), "{sealed}");

    let state_str = state.display().to_string();
    let mut env = gateway_env(&state_str);
    env.push(key_env);
    let mut replicas = Vec::new();
    for i in 0..2 {
        let folder = dir.path().join(format!("replica-{i}"));
        std::fs::create_dir_all(&folder).expect("replica folder");
        let gateway = Gateway::start_with_env(&config, &folder, &env).await;
        let client = gateway.client(Arc::new(NoopHandler), json!({})).await;
        wait_for_tools(&client, &["user__whoami"], Duration::from_secs(30)).await;
        replicas.push((gateway, client));
    }
    // Past the access token's life, both replicas call at once, three
    // times: each time both need a fresh token.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(4)).await;
        let (a, b) = tokio::join!(
            try_call(&replicas[0].1, "user__whoami"),
            try_call(&replicas[1].1, "user__whoami"),
        );
        for who in [a, b] {
            let who = who.expect("both replicas still call");
            assert_eq!(who_of(&who)["sub"], json!("alice"), "{who}");
        }
    }
    let stats = auth.stats();
    assert!(
        stats["success"]["refresh_token"].as_u64() >= Some(3),
        "{stats}"
    );
    assert_eq!(
        stats["error"]["refresh_token"].as_u64().unwrap_or(0),
        0,
        "a refresh token was never spent twice: {stats}"
    );
    let reused: usize = replicas
        .iter()
        .map(|(g, _)| {
            g.proc
                .log_text()
                .matches("another process refreshed the tokens")
                .count()
        })
        .sum();
    assert!(reused >= 1, "a replica that waited used the other's tokens");

    // The tokens in Redis are sealed: their JSON is not there in clear.
    let stored = redis_dump(&redis.url());
    for clear in ["alice", "access_token", "refresh_token", key_env.1] {
        assert!(!stored.contains(clear), "{clear} in Redis: {stored}");
    }
    for (gateway, client) in replicas {
        client.shutdown().await;
        assert!(
            !gateway.proc.log_text().contains(key_env.1),
            "the key is not logged"
        );
    }
}
