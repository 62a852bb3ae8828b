//! Guardrails, size limits and the audit trail through the gateway's front
//! doors, in front of real peers: server-everything (its echo tool hands
//! back whatever secret it is sent), a real HTTP API from its OpenAPI
//! document, the local-model agent on a scripted model, and a guardrail
//! check served over HTTP by a Python fixture. Secrets come back redacted
//! and reach no log; deny rules, the check and size limits refuse calls
//! before they leave; every call is a line of the audit file, which
//! rotates and which `mcpyard audit` reads back and filters. The direct
//! call, `mcpyard__call_tool`, a task, the agent and the stdio door all
//! meet the same layers.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use mcpyard_client::{RequestOptions, TransportSpec};
use serde_json::{json, Value};
use support::*;

const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const GITHUB_TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
const TICKET: &str = "TICKET-4321";

fn secret_message() -> String {
    format!("key {AWS_KEY} token {GITHUB_TOKEN} about {TICKET}")
}

fn assert_redacted(what: &str, value: &Value) {
    let shown = value.to_string();
    for secret in [AWS_KEY, GITHUB_TOKEN, TICKET] {
        assert!(!shown.contains(secret), "{what}: {secret} in {shown}");
    }
    for label in [
        "[REDACTED:aws_access_key]",
        "[REDACTED:github_token]",
        "[REDACTED:ticket]",
    ] {
        assert!(shown.contains(label), "{what}: no {label} in {shown}");
    }
}

/// The shared part of the configuration: the audit file (small, so it
/// rotates), a configured pattern, a deny rule and the size limits.
fn governance_tables(webhook: Option<(u16, &str)>) -> String {
    let mut config = r#"
[audit]
file = "audit.jsonl"
max_size = "2KiB"
keep = 50

[guardrails]
patterns = [{ name = "ticket", regex = "TICKET-[0-9]{4}" }]

[[guardrails.deny]]
name = "no-rm"
pattern = 'rm\s+-rf'
tools = ["every__*"]
message = "Ask for something narrower."

[sizes.sources.every.tools.echo]
max_arguments = 2000
max_result = 600
"#
    .to_owned();
    if let Some((port, fail)) = webhook {
        config += &format!(
            "\n[guardrails.webhook]\nurl = \"http://127.0.0.1:{port}/check\"\ntimeout = \"500ms\"\nfail = \"{fail}\"\n"
        );
    }
    config + "\n"
}

async fn start_webhook(dir: &Path) -> (Proc, u16, PathBuf) {
    let port = free_port();
    let log = dir.join("webhook-requests.jsonl");
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("guard_webhook.py"))
        .arg(port.to_string())
        .arg(&log);
    let p = Proc::spawn("guardrail check", cmd, &dir.join("webhook.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port, log)
}

async fn start_api_peer(dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("openapi_peer.py"))
        .arg(port.to_string());
    let p = Proc::spawn("openapi peer", cmd, &dir.join("peer.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port)
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The audit records, rotated files first, once `count` are written.
async fn audit_records(dir: &Path, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut records = Vec::new();
        let mut rotated: Vec<PathBuf> = (1..100)
            .map(|n| dir.join(format!("audit.jsonl.{n}")))
            .take_while(|p| p.exists())
            .collect();
        rotated.reverse();
        for file in rotated {
            records.extend(json_lines(&file));
        }
        records.extend(json_lines(&dir.join("audit.jsonl")));
        if records.len() >= count {
            return records;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} audit records, wanted {count}",
            records.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `mcpyard audit ARGS`: (success, stdout, stderr).
fn mcpyard_audit(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.arg("audit").args(args).env_remove("MCPYARD_CONFIG");
    run(cmd, Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guardrails_sizes_and_the_audit_on_a_real_server_and_a_real_api() {
    let dir = scratch();
    let (_webhook, webhook_port, webhook_log) = start_webhook(dir.path()).await;
    let (_peer, api_port) = start_api_peer(dir.path()).await;
    let config = format!(
        "[inference]\nenabled = false\n{}{}\n[apis.peer]\nspec = \"http://127.0.0.1:{api_port}/openapi.json\"\nexpose = \"*\"\nmax_response_bytes = 2000\n",
        governance_tables(Some((webhook_port, "closed"))),
        // echo is hidden: reached by name, or through call_tool.
        everything_stdio("every") + "expose = [\"get-sum\"]\n",
    );
    // Arguments are logged at trace level, redacted.
    let gw = Gateway::start_with_env(
        &config,
        dir.path(),
        &[("RUST_LOG", "mcpyard_gateway=trace,mcpyard=debug,info")],
    )
    .await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__get-sum", "peer__get_image"],
        Duration::from_secs(30),
    )
    .await;

    // A secret the upstream hands back is redacted, called directly or
    // through the search tools' call_tool.
    let echoed = call(&client, "every__echo", json!({"message": secret_message()})).await;
    assert_redacted("direct", &echoed);
    let via_search = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__echo", "arguments": {"message": secret_message()}}),
    )
    .await;
    assert_redacted("call_tool", &via_search);

    // A task (call_tool run by the gateway as a task) meets them too.
    let options = || RequestOptions {
        timeout: Some(Duration::from_secs(30)),
        ..RequestOptions::default()
    };
    let created = client
        .request(
            "tools/call",
            Some(json!({
                "name": "mcpyard__call_tool",
                "arguments": {"name": "every__echo", "arguments": {"message": secret_message()}},
                "task": {"ttl": 60000},
            })),
            options(),
        )
        .await
        .expect("a task");
    let task_id = created["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let result = client
        .request("tasks/result", Some(json!({"taskId": task_id})), options())
        .await
        .expect("the task's result");
    assert_redacted("task", &result);

    // A deny rule refuses before the check or the upstream see the call.
    let denied = call(&client, "every__echo", json!({"message": "then rm -rf /"})).await;
    assert_eq!(denied["isError"], json!(true), "{denied}");
    let said = mcpyard_testkit::text(&denied);
    assert!(
        said.contains("`no-rm`") && said.contains("narrower"),
        "{said}"
    );
    let denied_inner = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__echo", "arguments": {"message": "rm -rf ~"}}),
    )
    .await;
    assert!(
        mcpyard_testkit::text(&denied_inner).contains("`no-rm`"),
        "{denied_inner}"
    );

    // The external check refuses, changes, or (too slow, fail closed) fails.
    let refused = call(&client, "every__echo", json!({"message": "refuse-me"})).await;
    assert_eq!(refused["isError"], json!(true));
    assert!(
        mcpyard_testkit::text(&refused).contains("the check says no"),
        "{refused}"
    );
    let changed = call(&client, "every__echo", json!({"message": "modify-me"})).await;
    assert_eq!(
        first_text(&changed),
        "Echo: changed by the check",
        "{changed}"
    );
    let slow = call(&client, "every__echo", json!({"message": "slow-me"})).await;
    assert_eq!(slow["isError"], json!(true));
    assert!(
        mcpyard_testkit::text(&slow).contains("could not be made"),
        "{slow}"
    );
    let asked = json_lines(&webhook_log);
    let modify = asked
        .iter()
        .find(|r| r["arguments"]["message"] == "modify-me")
        .expect("the check was asked about modify-me");
    assert_eq!(modify["version"], 1);
    assert_eq!(modify["source"], "every");
    assert_eq!(modify["tool"], "every__echo");
    assert_eq!(modify["method"], "tools/call");
    assert!(
        modify["identity"].is_object() && modify["session"].is_string(),
        "{modify}"
    );
    // (call_tool itself is checked; the echo it was asked for was denied.)
    assert!(
        asked
            .iter()
            .filter(|r| r["tool"] == "every__echo")
            .all(|r| !r.to_string().contains("rm -rf")),
        "a denied call went on to the check"
    );

    // Sizes: arguments over the tool's limit are refused, a result over
    // it is cut; an API's max_response_bytes cuts its results the same way.
    let too_big = call(&client, "every__echo", json!({"message": "x".repeat(3000)})).await;
    assert_eq!(too_big["isError"], json!(true));
    assert!(
        mcpyard_testkit::text(&too_big).contains("max_arguments"),
        "{too_big}"
    );
    let cut = call(&client, "every__echo", json!({"message": "y".repeat(1500)})).await;
    assert!(serde_json::to_vec(&cut).unwrap().len() <= 600, "{cut}");
    assert!(mcpyard_testkit::text(&cut).contains("was cut"), "{cut}");
    let image = call(&client, "peer__get_image", json!({"size": 50000})).await;
    assert!(serde_json::to_vec(&image).unwrap().len() <= 2000, "{image}");
    let note = mcpyard_testkit::text(&image);
    assert!(note.contains("max_response_bytes"), "{note}");

    // The audit: every call a line, refusals with their rule, no argument
    // and no secret; the file rotated on the way.
    let records = audit_records(dir.path(), 11).await;
    let raw = records
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    for secret in [AWS_KEY, GITHUB_TOKEN, TICKET, "rm -rf", "refuse-me", "yyyy"] {
        assert!(!raw.contains(secret), "{secret} in the audit:\n{raw}");
    }
    assert!(
        dir.path().join("audit.jsonl.1").exists(),
        "the trail rotated"
    );
    let outcome_of = |tool: &str, nth: usize| -> (String, String) {
        let r = records
            .iter()
            .filter(|r| r["tool"] == tool)
            .nth(nth)
            .unwrap_or_else(|| panic!("record {nth} of {tool} in\n{raw}"));
        (
            r["outcome"].as_str().unwrap_or_default().to_owned(),
            r["reason"].as_str().unwrap_or_default().to_owned(),
        )
    };
    assert_eq!(outcome_of("every__echo", 0), ("ok".into(), "".into()));
    assert_eq!(outcome_of("mcpyard__call_tool", 0).0, "ok");
    let refusals: Vec<&str> = records
        .iter()
        .filter(|r| r["outcome"] == "refused")
        .filter_map(|r| r["reason"].as_str())
        .collect();
    assert_eq!(
        refusals,
        ["no-rm", "no-rm", "webhook", "webhook", "max_arguments"],
        "{raw}"
    );
    let echo = &records[0];
    assert_eq!(echo["source"], "every");
    assert_eq!(echo["method"], "tools/call");
    assert!(
        echo["session"].is_string() && echo["identity"].is_string(),
        "{echo}"
    );
    assert_eq!(echo["arguments_sha256"].as_str().map(str::len), Some(64));

    // `mcpyard audit` reads the rotated files too, and filters.
    let cfg = dir.path().join("mcpyard.toml");
    let cfg = cfg.to_str().unwrap();
    let (ok, out, err) = mcpyard_audit(&["--config", cfg, "--outcome", "refused", "--json"]);
    assert!(ok, "{err}");
    let listed: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed.len(), 5, "{out}");
    assert!(listed.iter().all(|r| r["outcome"] == "refused"));
    let (ok, out, err) = mcpyard_audit(&["--config", cfg, "--tool", "peer__*", "--since", "1h"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("TIME") && out.contains("peer__get_image"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    let (ok, out, _) = mcpyard_audit(&["--config", cfg, "--source", "every", "--json"]);
    assert!(ok);
    let times: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["time"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "oldest first across rotated files");
    let (ok, out, _) = mcpyard_audit(&["--config", cfg, "--identity", "nobody"]);
    assert!(ok && out.contains("no matching records"), "{out}");
    let (ok, _, err) = mcpyard_audit(&["--config", cfg, "--since", "someday"]);
    assert!(!ok && err.contains("--since"), "{err}");

    // No log holds a secret, though arguments are logged.
    client.shutdown().await;
    let log = gw.proc.log_text();
    assert!(
        log.contains("call arguments"),
        "arguments are logged at debug"
    );
    for secret in [AWS_KEY, GITHUB_TOKEN, TICKET] {
        assert!(!log.contains(secret), "{secret} in the gateway's log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_check_lets_calls_pass_when_told_to_fail_open() {
    let dir = scratch();
    let (_webhook, webhook_port, _) = start_webhook(dir.path()).await;
    let config = format!(
        "[inference]\nenabled = false\n{}{}",
        governance_tables(Some((webhook_port, "open"))),
        everything_stdio("every"),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(30)).await;
    let broken = call(&client, "every__echo", json!({"message": "break-me"})).await;
    assert_eq!(first_text(&broken), "Echo: break-me", "{broken}");
    let slow = call(&client, "every__echo", json!({"message": "slow-me"})).await;
    assert_eq!(first_text(&slow), "Echo: slow-me", "{slow}");
    // An answer is still obeyed.
    let refused = call(&client, "every__echo", json!({"message": "refuse-me"})).await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    client.shutdown().await;
    assert!(gw
        .proc
        .log_text()
        .contains("the call passes (fail = \"open\")"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_door_and_the_agents_inner_calls_meet_the_same_layers() {
    let dir = scratch();
    let arguments = json!({"message": secret_message()}).to_string();
    let (model, seen) = scripted_model(vec![
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "every__echo", "arguments": arguments}}
        ]}),
        json!({"role": "assistant", "content": "the echo came back"}),
    ])
    .await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"scripted\", kind = \"openai\", url = \"{model}\" }}]\ndiscover = false\n{}{}",
        governance_tables(None),
        everything_stdio("every"),
    );
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, &config).unwrap();
    let client = connect(
        TransportSpec::Stdio {
            command: env!("CARGO_BIN_EXE_mcpyard").into(),
            args: vec!["stdio".into(), "--config".into(), cfg.display().to_string()],
            env: [("RUST_LOG".to_owned(), "mcpyard=debug,info".to_owned())].into(),
            inherit_env: vec![],
            cwd: None,
        },
        Arc::new(Recorder::default()),
        json!({}),
    )
    .await;
    wait_for_tools(
        &client,
        &["every__echo", "local__agent"],
        Duration::from_secs(30),
    )
    .await;

    let direct = call(&client, "every__echo", json!({"message": secret_message()})).await;
    assert_redacted("stdio", &direct);

    // The agent's inner call is guarded too: the model never sees the secret.
    let agent = call(
        &client,
        "local__agent",
        json!({"prompt": "Echo the key.", "tools": ["every__*"]}),
    )
    .await;
    assert!(
        mcpyard_testkit::text(&agent).contains("the echo came back"),
        "{agent}"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:?}");
    // (The model's own call, with the secret it wrote, is in the history.)
    let tool_message = requests[1]["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
        .expect("the tool's answer went to the model");
    assert_redacted("what the model was sent", tool_message);

    client.shutdown().await;

    let records = audit_records(dir.path(), 3).await;
    let tools: Vec<&str> = records.iter().filter_map(|r| r["tool"].as_str()).collect();
    assert_eq!(
        tools,
        ["every__echo", "every__echo", "local__agent"],
        "direct, the agent's inner call, the agent"
    );
    assert!(records.iter().all(|r| r["outcome"] == "ok"), "{records:?}");
}
