//! Real clients through the gateway: the Python SDK 2.x (auto mode, which
//! speaks the 2026-07-28 stateless era, and legacy mode), the Python SDK 1.x
//! and the MCP Inspector CLI; the Python SDK 1.x following tasks that need
//! the user's input.

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

async fn fleet() -> (tempfile::TempDir, Gateway) {
    let dir = scratch();
    let config = format!(
        "{}\n[servers.time]\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
        everything_stdio("every"),
        path_str(&tool("venv-time/bin/python")),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__echo", "time__get_current_time"],
        Duration::from_secs(60),
    )
    .await;
    client.shutdown().await;
    (dir, gw)
}

fn python_check(url: &str, mode: &str) -> Value {
    let venv = if mode == "v1" { "venv1" } else { "venv" };
    let mut cmd = Command::new(tool(&format!("{venv}/bin/python")));
    cmd.arg(root().join("scripts/py_client_check.py"))
        .arg(url)
        .arg(mode)
        .args([
            "--expect-tool",
            "every__echo",
            "--expect-tool",
            "time__get_current_time",
        ])
        .args([
            "--tool",
            "every__echo",
            "--args",
            r#"{"message": "from python"}"#,
        ])
        .args(["--expect-text", "from python"]);
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(90));
    assert!(ok, "python SDK ({mode}) failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("summary not JSON ({e}): {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_clients_of_every_era_list_and_call() {
    let (_dir, gw) = fleet().await;
    let auto = python_check(&gw.url(), "auto");
    assert_eq!(auto["protocolVersion"], json!("2026-07-28"), "{auto}");
    let legacy = python_check(&gw.url(), "legacy");
    assert_eq!(legacy["protocolVersion"], json!("2025-11-25"), "{legacy}");
    let v1 = python_check(&gw.url(), "v1");
    assert!(
        v1["sdk"].as_str().is_some_and(|v| v.starts_with("1.")),
        "{v1}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_inspector_cli_lists_and_calls_tools() {
    let (_dir, gw) = fleet().await;
    let node_bin = node().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let inspector = tool("npm/node_modules/.bin/mcp-inspector");

    let mut cmd = Command::new(&inspector);
    cmd.env("PATH", &path)
        .args(["--cli", &gw.url(), "--method", "tools/list"]);
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(90));
    assert!(ok, "inspector tools/list failed:\n{stdout}\n{stderr}");
    let listed: Value = serde_json::from_str(&stdout).expect("inspector prints JSON");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"every__get-sum") && names.contains(&"time__get_current_time"),
        "{names:?}"
    );

    let mut cmd = Command::new(&inspector);
    cmd.env("PATH", &path).args([
        "--cli",
        &gw.url(),
        "--method",
        "tools/call",
        "--tool-name",
        "every__get-sum",
        "--tool-arg",
        "a=2",
        "b=3",
    ]);
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(90));
    assert!(ok, "inspector tools/call failed:\n{stdout}\n{stderr}");
    let called: Value = serde_json::from_str(&stdout).expect("inspector prints JSON");
    assert_ne!(called["isError"], json!(true), "{called}");
    assert_eq!(
        called["content"][0]["text"],
        json!(everything_sum_text(2, 3)),
        "{called}"
    );
}

/// A task whose call needs the user: the task shows `input_required`, the
/// elicitation (tagged with the task) reaches the client on its
/// `tasks/result`, and the answer reaches the tool. Both for a task the
/// gateway runs (an upstream without tasks) and one it passes through
/// (server-everything's own tasks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_answers_the_elicitation_a_task_waits_on() {
    let dir = scratch();
    let config = format!(
        "[servers.asker]\n{}\n{}",
        misbehaving("asking", &dir.path().join("x")),
        everything_stdio("every"),
    );
    let gw = Gateway::start(&config, dir.path()).await;

    let own = python_task(&gw.url(), "asker__ask", &json!({}));
    let statuses = own["statuses"].as_array().expect("statuses");
    assert!(statuses.contains(&json!("input_required")), "{own}");
    assert_eq!(statuses.last(), Some(&json!("completed")), "{own}");
    let asked = &own["elicitations"][0];
    assert_eq!(asked["message"], json!("Which colour?"), "{own}");
    assert_eq!(asked["relatedTask"]["taskId"], own["taskId"], "{own}");
    let answer = own["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(answer.contains("\"colour\": \"blue\""), "{own}");

    let passed = python_task(
        &gw.url(),
        "every__simulate-research-query",
        &json!({"topic": "rust", "ambiguous": true}),
    );
    let statuses = passed["statuses"].as_array().expect("statuses");
    assert!(statuses.contains(&json!("input_required")), "{passed}");
    assert_eq!(statuses.last(), Some(&json!("completed")), "{passed}");
    assert_eq!(
        passed["elicitations"][0]["relatedTask"]["taskId"], passed["taskId"],
        "{passed}"
    );
}

/// The 2026-07-28 way to hear of changes: the Python SDK 2.x opens a
/// `subscriptions/listen` stream, and gets the acknowledgment, a tool list
/// change of one upstream and an update of a resource of another, for which
/// the gateway subscribed that upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_listens_for_changes_in_the_stateless_era() {
    let dir = scratch();
    let config = format!(
        "[servers.grow]\n{}\n[servers.watch]\n{}",
        misbehaving("changing", &dir.path().join("x")),
        misbehaving("watching", &dir.path().join("y")),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let summary = run_python(
        &tool("venv/bin/python"),
        &[
            support_file("py_listen_check.py").display().to_string(),
            gw.url(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(summary["protocolVersion"], json!("2026-07-28"), "{summary}");
    assert_eq!(
        summary["honored"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["mem://a"]}),
        "{summary}"
    );
    assert_eq!(
        summary["upstreamSubscribed"],
        json!(["mem://a"]),
        "{summary}"
    );
    let events = summary["events"].as_array().expect("events");
    assert!(
        events.contains(&json!({"kind": "resourceUpdated", "uri": "mem://a"})),
        "{summary}"
    );
    assert!(
        events.contains(&json!({"kind": "toolsListChanged"})),
        "{summary}"
    );
    let tools = summary["tools"].as_array().expect("tools");
    assert!(tools.contains(&json!("grow__extra")), "{summary}");

    // The stream is gone with the client: the upstream is unsubscribed.
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(&client, "watch__touch", json!({})).await;
        if first_text(&r) == "[]" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still subscribed after the listen stream ended: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.shutdown().await;
}
