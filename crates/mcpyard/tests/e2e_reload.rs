//! A live reload under a live session: `mcpyard serve` watches its file;
//! a server is added (Python SDK 1.x), another's exposure changes without
//! a restart (server-everything, TypeScript SDK), one is changed and so
//! restarted, one removed (its child reaped), and a file that does not
//! validate is refused while the running configuration keeps serving.
//! Each step is seen by the same handshake-era session (the project's
//! client) and by the Python SDK 2.x in its default mode (2026-07-28).

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::*;

const BASE: &str = "[inference]\nenabled = false\n\n[metrics]\nenabled = true\n\n";

/// A stdio server started through a shell that appends its pid (the
/// server's own, after `exec`) to `pid_file`: one line per process, the
/// second era's connection included.
fn server_with_pid(name: &str, argv: &[String], pid_file: &Path, extra: &str) -> String {
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "echo $$$$ >> '{}'; exec {}",
        pid_file.display(),
        quoted.join(" ")
    );
    format!("[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n{extra}\n")
}

fn everything(pid_file: &Path, extra: &str) -> String {
    let argv = [path_str_raw(&node()), path_str_raw(&everything_js())];
    server_with_pid("one", &argv, pid_file, extra)
}

fn py1(pid_file: &Path, extra: &str) -> String {
    let argv = [
        path_str_raw(&tool("venv1/bin/python")),
        path_str_raw(&support_file("py1_server.py")),
    ];
    server_with_pid("two", &argv, pid_file, extra)
}

fn path_str_raw(p: &Path) -> String {
    p.display().to_string()
}

/// Every pid written to `file`, once it has `at_least` of them.
fn pids(file: &Path, at_least: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.len() >= at_least {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {pids:?}, not {at_least} pids",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) until every one of `pids` has exited.
async fn wait_for_exit(pids: &[i32], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < deadline, "{what} ({pids:?}) still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Writes the config as an editor does: a new file renamed over the old.
fn save(path: &Path, text: &str) {
    let new = path.with_extension("toml.new");
    std::fs::write(&new, text).expect("write the new config");
    std::fs::rename(&new, path).expect("rename it over the config");
}

/// Polls `tools/list` until `done` holds for the names listed.
async fn wait_until(
    client: &mcpyard_client::McpClient,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let listed = tool_names(client).await;
        if done(&listed) {
            return listed;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not seen within 40 s; listed: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The Python SDK 2.x in its default mode: the tools it is listed and the
/// text of each call.
fn modern_view(url: &str, calls: &[&str]) -> Value {
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(support_file("py_tools_view.py")).arg(url);
    for call in calls {
        cmd.args(["--call", call]);
    }
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(150));
    assert!(ok, "py_tools_view failed:\n{stdout}\n{stderr}");
    let summary: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    summary
}

fn modern_tools(summary: &Value) -> Vec<String> {
    summary["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect()
}

async fn wait_for_log(gateway: &Gateway, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gateway.proc.log_text().contains(text) {
        assert!(
            Instant::now() < deadline,
            "no `{text}` in the log:\n{}",
            gateway.proc.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `mcpyard_config_reloads_total{outcome="…"}` from `/metrics`.
async fn reloads(gateway: &Gateway, outcome: &str) -> u64 {
    let url = format!("http://127.0.0.1:{}/metrics", gateway.port);
    let text = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("body");
    let sample = format!("mcpyard_config_reloads_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&sample))
        .map_or(0, |n| n.trim().parse().expect("a count"))
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_config_adds_changes_and_removes_servers_under_a_live_session() {
    let dir = scratch();
    let (one_pid, two_pid) = (dir.path().join("one.pid"), dir.path().join("two.pid"));
    let gateway = Gateway::start(&format!("{BASE}{}", everything(&one_pid, "")), dir.path()).await;
    let config = dir.path().join("mcpyard.toml");
    let recorder = Arc::new(Recorder::default());
    let client = gateway.client(recorder.clone(), json!({})).await;
    let before = wait_for_tools(&client, &["one__echo"], Duration::from_secs(40)).await;
    let one = pids(&one_pid, 1);
    let everything_tools = before
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("one__")))
        .count();
    assert!(everything_tools > 3, "{before:?}");

    // Added: a Python SDK 1.x server joins; the session is told and uses it.
    save(
        &config,
        &format!("{BASE}{}{}", everything(&one_pid, ""), py1(&two_pid, "")),
    );
    wait_for_tools(
        &client,
        &["one__echo", "two__reverse"],
        Duration::from_secs(40),
    )
    .await;
    wait_for_log(&gateway, "reloaded: sources added: two").await;
    let reversed = call(&client, "two__reverse", json!({"text": "mcpyard"})).await;
    assert_eq!(text_of(&reversed), "draypcm");
    let echoed = call(&client, "one__echo", json!({"message": "still here"})).await;
    assert!(text_of(&echoed).contains("still here"), "{echoed}");
    assert!(
        !recorder
            .notifications_named("notifications/tools/list_changed")
            .is_empty(),
        "the session was not told that the tools changed"
    );
    assert_eq!(pids(&one_pid, 1), one, "an unchanged server was restarted");
    assert!(alive(one[0]));
    let url = gateway.url();
    let modern = tokio::task::spawn_blocking({
        let url = url.clone();
        move || modern_view(&url, &["two__ask_name"])
    })
    .await
    .unwrap();
    assert!(
        modern_tools(&modern).contains(&"two__reverse".to_owned()),
        "{modern}"
    );
    // Its elicitation answered by the client, through the gateway.
    assert_eq!(modern["results"]["two__ask_name"], "hello ada", "{modern}");
    // Each with its second connection, if the 2026-07-28 client got one.
    let one = pids(&one_pid, 1);
    let two = pids(&two_pid, 1);

    // Changed: `one` shows only `echo` (kept running), `two` gets another
    // environment (restarted).
    save(
        &config,
        &format!(
            "{BASE}{}{}",
            everything(&one_pid, "expose = [\"echo\"]"),
            py1(&two_pid, "env = { RELOADED = \"1\" }")
        ),
    );
    wait_until(&client, "one exposing echo alone", |listed| {
        listed.iter().filter(|n| n.starts_with("one__")).count() == 1
            && listed.contains(&"one__echo".to_owned())
    })
    .await;
    wait_for_log(&gateway, "sources restarted: two").await;
    wait_for_log(&gateway, "sources exposed anew: one").await;
    // A new process, and the old ones gone.
    pids(&two_pid, two.len() + 1);
    wait_for_exit(&two, "the old `two`").await;
    wait_for_tools(&client, &["two__reverse"], Duration::from_secs(40)).await;
    let reversed = call(&client, "two__reverse", json!({"text": "abc"})).await;
    assert_eq!(text_of(&reversed), "cba");
    assert_eq!(
        pids(&one_pid, 1),
        one,
        "a server whose exposure changed was restarted"
    );
    // (A second connection to a server of the handshake era alone ends
    // once it found that out: the first one is the one that serves.)
    assert!(alive(one[0]), "{one:?}");

    // Removed: `two` leaves every list and its child is reaped.
    save(
        &config,
        &format!("{BASE}{}", everything(&one_pid, "expose = [\"echo\"]")),
    );
    wait_until(&client, "two gone", |listed| {
        !listed.iter().any(|n| n.starts_with("two__"))
    })
    .await;
    wait_for_log(&gateway, "sources removed: two").await;
    wait_for_exit(&pids(&two_pid, 1), "the removed `two`").await;
    let gone = client
        .request(
            "tools/call",
            Some(json!({"name": "two__reverse", "arguments": {"text": "x"}})),
            Default::default(),
        )
        .await;
    assert!(gone.is_err(), "a removed server's tool answered: {gone:?}");
    let modern = tokio::task::spawn_blocking({
        let url = url.clone();
        move || modern_view(&url, &[])
    })
    .await
    .unwrap();
    let listed = modern_tools(&modern);
    assert!(!listed.iter().any(|n| n.starts_with("two__")), "{modern}");
    assert_eq!(
        listed.iter().filter(|n| n.starts_with("one__")).count(),
        1,
        "{modern}"
    );

    // Governed: a policy added to the file holds for the live session at
    // once, without restarting anything.
    save(
        &config,
        &format!(
            "{BASE}{}\n[policy]\ndefault = \"allow\"\n[[policy.rules]]\naction = \"deny\"\ntools = [\"mcpyard__docs\"]\n",
            everything(&one_pid, "expose = [\"echo\"]")
        ),
    );
    wait_until(&client, "the docs tool denied", |listed| {
        !listed.contains(&"mcpyard__docs".to_owned()) && listed.contains(&"one__echo".to_owned())
    })
    .await;
    wait_for_log(&gateway, "policy, rate limits and guardrails replaced").await;
    let denied = client
        .request(
            "tools/call",
            Some(json!({"name": "mcpyard__docs", "arguments": {}})),
            Default::default(),
        )
        .await;
    assert!(denied.is_err(), "a denied tool answered: {denied:?}");

    // Refused: a file that does not validate changes nothing; a listen
    // address is applied only by a restart, which the log says.
    save(&config, "lisen = 1\n");
    wait_for_log(
        &gateway,
        "has an error; the running configuration stays as it is",
    )
    .await;
    let echoed = call(&client, "one__echo", json!({"message": "after a bad file"})).await;
    assert!(text_of(&echoed).contains("after a bad file"), "{echoed}");
    assert_eq!(
        tool_names(&client)
            .await
            .iter()
            .filter(|n| n.starts_with("one__"))
            .count(),
        1
    );
    let status = call(&client, "mcpyard__status", json!({})).await;
    let config_status = &status["structuredContent"]["config"];
    assert_eq!(
        config_status["lastReload"]["outcome"], "refused",
        "{status}"
    );
    assert!(
        config_status["lastReload"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("lisen")),
        "{status}"
    );
    assert!(
        config_status["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("mcpyard.toml")),
        "{status}"
    );
    // The status page says it too.
    let page = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/", gateway.port))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("GET /")
        .text()
        .await
        .expect("the page");
    assert!(page.contains("id=\"last-reload\" class=\"down\""), "{page}");
    save(
        &config,
        &format!(
            "listen = \"127.0.0.1:1\"\n{BASE}{}",
            everything(&one_pid, "expose = [\"echo\"]")
        ),
    );
    wait_for_log(&gateway, "`listen` changed").await;
    // The policy is gone with it: the docs tool is back.
    wait_until(&client, "the docs tool allowed again", |listed| {
        listed.contains(&"mcpyard__docs".to_owned())
    })
    .await;
    assert!(reloads(&gateway, "applied").await >= 5);
    assert!(reloads(&gateway, "refused").await >= 1);
    assert_eq!(pids(&one_pid, 1), one);
    client.shutdown().await;
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// A POST to `/mcp` as `key` (none: no credential), in `session` if given:
/// the status and, on 200, the session id the answer names.
async fn post_as(
    gateway: &Gateway,
    key: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> (u16, Option<String>) {
    let mut req = reqwest::Client::new()
        .post(gateway.url())
        .timeout(Duration::from_secs(20))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let answer = req.send().await.expect("POST /mcp");
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (answer.status().as_u16(), session)
}

fn keys(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| {
            format!(
                "[[auth.keys]]\nname = \"{n}\"\nkey_env = \"KEY_{}\"\n",
                n.to_uppercase()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_replaces_the_api_keys_and_a_key_taken_out_is_refused_at_once() {
    let dir = scratch();
    let (alice, bob) = ("alice-key-7f3a", "bob-key-91c2");
    let gateway = Gateway::start_with_env(
        &format!("{BASE}{}", keys(&["alice"])),
        dir.path(),
        &[("KEY_ALICE", alice), ("KEY_BOB", bob)],
    )
    .await;
    let config = dir.path().join("mcpyard.toml");
    let (status, session) = post_as(&gateway, Some(alice), None, INIT).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    assert_eq!(post_as(&gateway, Some(bob), None, INIT).await.0, 401);
    // Alice's browser signs in to the status page.
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let signed_in = browser
        .post(format!("{base}/ui/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={alice}"))
        .send()
        .await
        .expect("POST /ui/login");
    assert!(
        signed_in.status().is_redirection(),
        "{}",
        signed_in.status()
    );
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = |cookie: String| {
        let browser = browser.clone();
        let url = format!("{base}/ui");
        async move {
            let r = browser
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .expect("GET /ui");
            r.status().as_u16()
        }
    };
    assert_eq!(page(cookie.clone()).await, 200);

    // bob in, alice out: her next request is refused, her session with it;
    // bob is let in without a restart.
    save(&config, &format!("{BASE}{}", keys(&["bob"])));
    wait_for_log(&gateway, "reloaded: API keys replaced").await;
    assert_eq!(
        post_as(&gateway, Some(alice), Some(&session), LIST).await.0,
        401,
        "a key taken out still opens its session"
    );
    assert_eq!(post_as(&gateway, Some(alice), None, INIT).await.0, 401);
    assert_eq!(page(cookie).await, 401, "her browser is still signed in");
    let (status, bobs) = post_as(&gateway, Some(bob), None, INIT).await;
    assert_eq!(status, 200, "a key put in is refused");
    let bobs = bobs.expect("a session id");
    assert_eq!(post_as(&gateway, Some(bob), Some(&bobs), LIST).await.0, 200);

    // A file without keys would open the door to anyone: that waits for a
    // restart, and the running keys stay.
    save(&config, BASE);
    wait_for_log(&gateway, "turns authentication on or off").await;
    assert_eq!(post_as(&gateway, None, None, INIT).await.0, 401);
    assert_eq!(post_as(&gateway, Some(bob), None, INIT).await.0, 200);
    let log = gateway.proc.log_text();
    assert!(
        !log.contains(alice) && !log.contains(bob),
        "a key reached the log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_added_to_the_file_reaches_a_live_stdio_session_of_the_python_sdk() {
    let dir = scratch();
    let config = dir.path().join("mcpyard.toml");
    let marker = dir.path().join("listed.json");
    let base = "[inference]\nenabled = false\n";
    std::fs::write(&config, base).expect("write the config");
    let command = json!([
        env!("CARGO_BIN_EXE_mcpyard"),
        "stdio",
        "--config",
        config.display().to_string()
    ]);
    let mut cmd = Command::new(tool("venv/bin/python"));
    cmd.arg(support_file("py_reload_stdio.py"))
        .arg(command.to_string())
        .arg(&marker)
        .arg("two__reverse")
        .arg(json!({"text": "reload"}).to_string())
        .env("RUST_LOG", "mcpyard=debug,info");
    let session = tokio::task::spawn_blocking(move || run(cmd, Duration::from_secs(150)));

    // Once the session has listed the tools, a server is added to the file.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the SDK listed nothing in 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid_file = dir.path().join("two.pid");
    save(&config, &format!("{base}\n{}", py1(&pid_file, "")));

    let (ok, stdout, stderr) = session.await.expect("the SDK's run");
    assert!(ok, "py_reload_stdio failed:\n{stdout}\n{stderr}");
    let summary: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert_eq!(summary["ok"], true, "{summary}\n{stderr}");
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    let before = summary["before"].as_array().expect("before");
    assert!(!before.contains(&json!("two__reverse")), "{summary}");
    assert!(before.contains(&json!("mcpyard__status")), "{summary}");
    assert_eq!(summary["result"], "daoler", "{summary}\n{stderr}");
    assert!(
        stderr.contains("reloaded: sources added: two"),
        "the reload was not logged:\n{stderr}"
    );
    // The session ended, and with it the gateway and its child.
    wait_for_exit(&pids(&pid_file, 1), "the added server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_guardrails_redact_what_a_running_server_relays() {
    let dir = scratch();
    let pid_file = dir.path().join("chatty.pid");
    let argv = [
        path_str_raw(&tool("venv1/bin/python")),
        path_str_raw(&support_file("py_chatty_server.py")),
    ];
    let chatty = server_with_pid("chatty", &argv, &pid_file, "");
    let gateway = Gateway::start(&format!("{BASE}{chatty}"), dir.path()).await;
    let config = dir.path().join("mcpyard.toml");
    let recorder = Arc::new(Recorder::default());
    let client = gateway.client(recorder.clone(), json!({})).await;
    wait_for_tools(&client, &["chatty__chatty"], Duration::from_secs(40)).await;
    client
        .request(
            "logging/setLevel",
            Some(json!({"level": "debug"})),
            Default::default(),
        )
        .await
        .expect("logging/setLevel");
    let pid = pids(&pid_file, 1);
    let logged = |needle: &str| {
        recorder
            .notifications_named("notifications/message")
            .iter()
            .map(|p| p.to_string())
            .filter(|p| p.contains(needle))
            .count()
    };

    // No detector knows the id yet: it is relayed as said.
    call(&client, "chatty__chatty", json!({"said": "EMP-123456"})).await;
    wait_until_true("the first log relayed", || logged("EMP-123456") == 1).await;

    save(
        &config,
        &format!(
            "{BASE}{chatty}\n[guardrails]\npatterns = [{{ name = \"employee_id\", regex = 'EMP-\\d{{6}}' }}]\n"
        ),
    );
    wait_for_log(&gateway, "policy, rate limits and guardrails replaced").await;
    call(&client, "chatty__chatty", json!({"said": "EMP-654321"})).await;
    wait_until_true("the second log relayed", || {
        logged("[REDACTED:employee_id]") == 1
    })
    .await;
    assert_eq!(logged("EMP-654321"), 0, "the new detector did not hold");
    assert_eq!(pids(&pid_file, 1), pid, "the server was restarted");
    client.shutdown().await;
}

async fn wait_until_true(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
