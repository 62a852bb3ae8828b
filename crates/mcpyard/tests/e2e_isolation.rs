//! What one identity does stays its own, and what a source says passes the
//! guardrails, whatever the path.
//!
//! In process, two identities (bob, alice) on one gateway in front of
//! server-everything and a Python SDK 1.x server that logs, reports
//! progress and elicits while it works (both over stdio):
//! - tasks server-everything runs itself are bob's alone;
//! - a resource denied to alice stays denied under every spelling of its
//!   URI, a rule naming a template covers the URIs it describes, and a URI
//!   no source can own is not tried on every upstream;
//! - the log and progress of bob's call reach bob only, redacted, and so
//!   does the elicitation it makes;
//! - a tool listed to bob that alice calls through `mcpyard__call_tool` is
//!   recorded as refused by its rule.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcpyard_gateway::governance::{Effect, Policy, Rule};
use mcpyard_gateway::{
    Exposure, GatewayConfig, Guard, GuardConfig, Identity, IdentityKind, SourceSpec, UpstreamSpec,
};
use mcpyard_proto::Message;
use mcpyard_testkit::InProcessClient;
use serde_json::{json, Value};
use support::*;

const WAIT: Duration = Duration::from_secs(60);
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";

fn stdio(name: &str, command: String, args: Vec<String>) -> SourceSpec {
    SourceSpec::mcp(UpstreamSpec {
        name: name.into(),
        prefix: None,
        transport: mcpyard_client::TransportSpec::Stdio {
            command,
            args,
            env: Default::default(),
            inherit_env: vec![],
            cwd: None,
        },
        timeout: Duration::from_secs(30),
        list_timeout: Duration::from_secs(30),
        max_in_flight: 8,
        sampling: None,
        http_auth: None,
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Alice (group interns) may not read the architecture document nor any
/// dynamic text resource (named by its template), nor use the chatty
/// server, nor add numbers. Everyone else may use everything.
fn policy() -> Policy {
    Policy {
        default: Effect::Allow,
        rules: vec![
            Rule {
                effect: Effect::Deny,
                groups: strings(&["interns"]),
                resources: strings(&[
                    "demo://resource/static/document/architecture.md",
                    "demo://resource/dynamic/text/{resourceId}",
                ]),
                ..Rule::default()
            },
            Rule {
                effect: Effect::Deny,
                groups: strings(&["interns"]),
                sources: strings(&["chatty"]),
                ..Rule::default()
            },
            Rule {
                effect: Effect::Deny,
                groups: strings(&["interns"]),
                tools: strings(&["every__get-sum"]),
                ..Rule::default()
            },
        ],
    }
}

struct Pair {
    bob: InProcessClient,
    alice: InProcessClient,
    outcomes: Arc<Outcomes>,
}

async fn pair() -> Pair {
    let mut everything = stdio(
        "every",
        node().display().to_string(),
        vec![everything_js().display().to_string()],
    );
    everything.exposure = Exposure::default();
    let chatty = stdio(
        "chatty",
        tool("venv1/bin/python").display().to_string(),
        vec![support_file("py_chatty_server.py").display().to_string()],
    );
    let guard = Guard::new(GuardConfig {
        redact_builtin: true,
        ..GuardConfig::default()
    })
    .expect("guardrails");
    let outcomes = Arc::new(Outcomes::default());
    let first = InProcessClient::start_with(
        GatewayConfig {
            sources: vec![everything, chatty],
            outer_layers: vec![outcomes.clone()],
            policy: Some(Arc::new(policy())),
            guard: Some(Arc::new(guard)),
            ..GatewayConfig::default()
        },
        WAIT,
    )
    .await;
    let bob = first
        .join_as(Identity::named(
            IdentityKind::ApiKey,
            "bob",
            strings(&["staff"]),
        ))
        .await;
    let alice = first
        .join_as(Identity::named(
            IdentityKind::ApiKey,
            "alice",
            strings(&["interns"]),
        ))
        .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let names: Vec<String> = bob
            .tools()
            .await
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        if names.iter().any(|n| n == "every__simulate-research-query")
            && names.iter().any(|n| n == "chatty__chatty")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sources did not list: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Pair {
        bob,
        alice,
        outcomes,
    }
}

/// Everything a channel received so far.
fn drain(rx: &mut tokio::sync::mpsc::Receiver<Message>) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    while let Ok(m) = rx.try_recv() {
        if let Message::Notification { method, params } = m {
            seen.push((method, params.unwrap_or_default()));
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_an_upstream_runs_belong_to_the_identity_that_started_them() {
    let Pair { bob, alice, .. } = pair().await;
    let created = bob
        .request(
            "tools/call",
            json!({"name": "every__simulate-research-query", "arguments": {"topic": "gateways"}, "task": {"ttl": 60000}}),
            None,
        )
        .await;
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();

    let listed = |result: &Value| -> Vec<String> {
        result["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["taskId"].as_str().map(str::to_owned))
            .collect()
    };
    let bobs = bob.request("tasks/list", json!({}), None).await;
    assert!(listed(&bobs).contains(&task_id), "{bobs}");
    let alices = alice.request("tasks/list", json!({}), None).await;
    assert!(!listed(&alices).contains(&task_id), "{alices}");

    let unknown = alice
        .try_request("tasks/get", json!({"taskId": "no-such-task"}), None)
        .await
        .unwrap_err();
    for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
        let refused = alice
            .try_request(method, json!({"taskId": task_id}), None)
            .await
            .unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (unknown.code, unknown.message.as_str()),
            "{method}"
        );
    }
    // Bob's task ran on, untouched, and its report is his.
    let mut status = Value::Null;
    for _ in 0..300 {
        status = bob
            .request("tasks/get", json!({"taskId": task_id}), None)
            .await;
        if status["status"] != json!("working") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status["status"], json!("completed"), "{status}");
    let report = bob
        .request("tasks/result", json!({"taskId": task_id}), None)
        .await;
    assert!(report.to_string().contains("gateways"), "{report}");
    bob.gateway().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_resource_stays_denied_under_every_spelling_of_its_uri() {
    let Pair {
        bob,
        alice,
        outcomes,
    } = pair().await;
    let not_found = |uri: &str| format!("Resource not found: {uri}");
    let spellings = [
        (
            "DEMO://resource/static/document/architecture.md",
            "demo://resource/static/document/architecture.md",
        ),
        (
            "Demo://Resource/static/document/architecture.md",
            "demo://resource/static/document/architecture.md",
        ),
        (
            "demo://resource/static/document/./architecture.md",
            "demo://resource/static/document/architecture.md",
        ),
        (
            "demo://resource/static/document/x/../architecture.md",
            "demo://resource/static/document/architecture.md",
        ),
        (
            "demo://resource/dynamic/blob/../text/1",
            "demo://resource/dynamic/text/1",
        ),
        // The rule names the template: every URI it describes is covered.
        (
            "demo://resource/dynamic/text/1",
            "demo://resource/dynamic/text/1",
        ),
    ];
    for (spelling, normal) in spellings {
        let read = bob
            .request("resources/read", json!({"uri": spelling}), None)
            .await;
        assert_eq!(read["contents"][0]["uri"], json!(normal), "{read}");
        let refused = alice
            .try_request("resources/read", json!({"uri": spelling}), None)
            .await
            .expect_err(spelling);
        assert_eq!(refused.message, not_found(normal), "{spelling}");
        let refused = alice
            .try_request("resources/subscribe", json!({"uri": spelling}), None)
            .await
            .expect_err(spelling);
        assert_eq!(refused.message, not_found(normal), "{spelling}");
    }
    assert!(
        outcomes
            .of("demo://resource/dynamic/text/1")
            .iter()
            .any(|o| o == "refused by Some(0)"),
        "{:?}",
        outcomes.0.lock().unwrap()
    );

    // A string that is no URI is refused as such; one no source can own
    // is not found, and reaches no upstream.
    let bad = alice
        .try_request("resources/read", json!({"uri": "not a uri"}), None)
        .await
        .unwrap_err();
    assert_eq!(bad.code, -32602, "{bad:?}");
    let nowhere = bob
        .try_request("resources/read", json!({"uri": "nowhere://x/y"}), None)
        .await
        .unwrap_err();
    assert_eq!(nowhere.message, not_found("nowhere://x/y"));
    assert!(
        outcomes.of("nowhere://x/y").is_empty(),
        "sent to upstreams: {:?}",
        outcomes.of("nowhere://x/y")
    );
    bob.gateway().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_source_says_during_a_call_reaches_its_caller_only_and_redacted() {
    let Pair { bob, alice, .. } = pair().await;
    let (alice_tx, mut alice_stream) = tokio::sync::mpsc::channel(1024);
    assert!(alice.session().attach_stream(alice_tx));
    let (bob_tx, mut bob_stream) = tokio::sync::mpsc::channel(1024);
    assert!(bob.session().attach_stream(bob_tx));
    for client in [&bob, &alice] {
        client
            .request("logging/setLevel", json!({"level": "debug"}), None)
            .await;
    }

    let (tx, mut related) = tokio::sync::mpsc::channel(1024);
    let said = format!("the key {AWS_KEY}");
    let result = bob
        .request(
            "tools/call",
            json!({"name": "chatty__chatty", "arguments": {"said": said}, "_meta": {"progressToken": "p1"}}),
            Some(tx),
        )
        .await;
    assert_eq!(result["isError"], json!(false), "{result}");
    // Give a stray broadcast the time to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut bobs = drain(&mut related);
    bobs.extend(drain(&mut bob_stream));
    let alices = drain(&mut alice_stream);

    // server-everything's own logs outside any call may reach her (she may
    // use that server); nothing of bob's call may.
    assert!(
        alices
            .iter()
            .all(|(_, p)| !p.to_string().contains("working on")),
        "alice heard bob's call: {alices:?}"
    );
    let logs: Vec<&Value> = bobs
        .iter()
        .filter(|(m, p)| m == "notifications/message" && p.to_string().contains("working on"))
        .map(|(_, p)| p)
        .collect();
    assert_eq!(logs.len(), 1, "bob hears his call's log: {bobs:?}");
    let progress: Vec<&Value> = bobs
        .iter()
        .filter(|(m, _)| m == "notifications/progress")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(progress.len(), 1, "{bobs:?}");
    for (what, seen) in [("log", logs[0]), ("progress", progress[0])] {
        let text = seen.to_string();
        assert!(!text.contains(AWS_KEY), "{what} not redacted: {text}");
        assert!(text.contains("[REDACTED:aws_access_key]"), "{what}: {text}");
    }
    bob.gateway().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_through_call_tool_is_recorded_with_its_rule() {
    let Pair {
        bob,
        alice,
        outcomes,
    } = pair().await;
    let through = alice
        .call(
            "mcpyard__call_tool",
            json!({"name": "every__get-sum", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(through["isError"], json!(true), "{through}");
    assert!(
        outcomes
            .of("every__get-sum")
            .iter()
            .any(|o| o == "refused by Some(2)"),
        "{:?}",
        outcomes.0.lock().unwrap()
    );
    bob.gateway().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_relayed_to_the_caller_is_redacted() {
    let Pair { bob, .. } = pair().await;
    // Bob's client can answer forms.
    bob.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "test", "version": "0"}}),
        None,
    )
    .await;
    let (tx, mut related) = tokio::sync::mpsc::channel(1024);
    let (_, call) = bob.spawn_call(
        json!({"name": "chatty__confirm", "arguments": {"said": format!("the key {AWS_KEY}")}}),
        Some(tx),
    );
    let asked = tokio::time::timeout(WAIT, async {
        loop {
            match related.recv().await {
                Some(Message::Request { id, method, params }) => break (id, method, params),
                Some(_) => continue,
                None => panic!("the call ended without asking"),
            }
        }
    })
    .await
    .expect("the elicitation came");
    let (id, method, params) = asked;
    assert_eq!(method, "elicitation/create");
    let text = params.unwrap_or_default().to_string();
    assert!(!text.contains(AWS_KEY), "not redacted: {text}");
    assert!(text.contains("[REDACTED:aws_access_key]"), "{text}");
    bob.gateway()
        .receive(
            bob.session(),
            Message::response(id, json!({"action": "decline"})),
        )
        .await;
    let answer = tokio::time::timeout(WAIT, call)
        .await
        .expect("the call ended")
        .expect("call task")
        .expect("an answer");
    assert!(
        serde_json::to_string(&answer.to_value())
            .unwrap()
            .contains("elicitation decline"),
        "{answer:?}"
    );
    bob.gateway().shutdown().await;
}

const ALICE_KEY: &str = "alice-key-4c1e98b2";
const BOB_KEY: &str = "bob-key-77d0a5f3";

/// The gateway binary's configuration of the same two identities and
/// policy, for the Python SDK 2.x over HTTP and stdio.
fn binary_config() -> String {
    format!(
        "[inference]
enabled = false

{}expose = \"*\"

[servers.chatty]
command = {}
args = [{}]

[[auth.keys]]
name = \"bob\"
groups = [\"staff\"]
key_sha256 = \"{}\"

[[auth.keys]]
name = \"alice\"
groups = [\"interns\"]
key_sha256 = \"{}\"

[auth.stdio]
name = \"alice\"
groups = [\"interns\"]

[[policy.rules]]
action = \"deny\"
groups = [\"interns\"]
resources = [\"demo://resource/static/document/architecture.md\", \"demo://resource/dynamic/text/{{resourceId}}\"]

[[policy.rules]]
action = \"deny\"
groups = [\"interns\"]
sources = [\"chatty\"]

[[policy.rules]]
action = \"deny\"
groups = [\"interns\"]
tools = [\"every__get-sum\"]
",
        everything_stdio("every"),
        path_str(&tool("venv1/bin/python")),
        path_str(&support_file("py_chatty_server.py")),
        sha256_hex(BOB_KEY),
        sha256_hex(ALICE_KEY),
    )
}

fn python_walk(args: &[String]) -> Value {
    let mut all = vec![support_file("py_governance_check.py").display().to_string()];
    all.extend(args.iter().cloned());
    run_python(&tool("venv/bin/python"), &all, Duration::from_secs(120))
}

/// What the walk saw of one identity: bob may use everything, alice not
/// what the policy keeps from her; secrets never come through.
fn assert_walk(walk: &Value, may_use_everything: bool, modern: bool) {
    let names = |key: &str| -> Vec<String> {
        walk[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let version = walk["protocolVersion"].as_str().unwrap_or_default();
    assert_eq!(version == "2026-07-28", modern, "{walk}");
    let tools = names("tools");
    let templates = names("templates");
    assert!(tools.iter().any(|t| t == "every__echo"), "{walk}");
    let echo = walk["echo"]["text"].as_str().unwrap_or_default();
    assert!(
        !echo.contains(AWS_KEY) && echo.contains("[REDACTED:aws_access_key]"),
        "{walk}"
    );
    let dynamic_text = "demo://resource/dynamic/text/{resourceId}";
    if may_use_everything {
        for t in ["every__get-sum", "chatty__chatty"] {
            assert!(tools.iter().any(|n| n == t), "{t}: {walk}");
        }
        assert!(templates.iter().any(|t| t == dynamic_text), "{walk}");
        assert_eq!(walk["sum"]["ok"], json!(true), "{walk}");
        assert_eq!(walk["chatty"]["ok"], json!(true), "{walk}");
        for message in walk["progress"].as_array().into_iter().flatten() {
            let m = message.as_str().unwrap_or_default();
            assert!(!m.contains(AWS_KEY), "progress not redacted: {walk}");
        }
        for (uri, read) in walk["reads"].as_object().expect("reads") {
            assert_eq!(read["ok"], json!(true), "{uri}: {walk}");
        }
    } else {
        for t in ["every__get-sum", "chatty__chatty"] {
            assert!(!tools.iter().any(|n| n == t), "{t}: {walk}");
        }
        assert!(!templates.iter().any(|t| t == dynamic_text), "{walk}");
        for refused in ["sum", "chatty"] {
            let error = walk[refused]["error"].as_str().unwrap_or_default();
            assert!(error.contains("Unknown tool"), "{refused}: {walk}");
        }
        for (uri, read) in walk["reads"].as_object().expect("reads") {
            let error = read["error"].as_str().unwrap_or_default();
            assert!(error.contains("Resource not found"), "{uri}: {walk}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_meets_the_same_governance_in_each_era_over_http_and_stdio() {
    let dir = scratch();
    let config = binary_config();
    let gw = Gateway::start(&config, dir.path()).await;
    let url = gw.url();
    for (mode, modern) in [("auto", true), ("legacy", false)] {
        for (key, everything) in [(BOB_KEY, true), (ALICE_KEY, false)] {
            let walk = python_walk(&[mode.into(), "http".into(), url.clone(), key.into()]);
            assert_walk(&walk, everything, modern);
        }
        // The stdio door, as the configured identity alice.
        let cfg = dir.path().join("mcpyard.toml");
        let walk = python_walk(&[
            mode.into(),
            "stdio".into(),
            env!("CARGO_BIN_EXE_mcpyard").into(),
            "stdio".into(),
            "--config".into(),
            cfg.display().to_string(),
        ]);
        assert_walk(&walk, false, modern);
    }
}

/// Opens a session as `key`; its id.
async fn open_session(http: &reqwest::Client, url: &str, key: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = http
        .post(url)
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("initialize");
    assert_eq!(r.status(), 200);
    r.headers()["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_opening_sessions_cannot_push_out_anothers() {
    let dir = scratch();
    let config = format!("max_sessions = 5\n{}", binary_config());
    let gw = Gateway::start(&config, dir.path()).await;
    let http = reqwest::Client::new();
    let url = gw.url();
    let alices = open_session(&http, &url, ALICE_KEY).await;
    for _ in 0..20 {
        open_session(&http, &url, BOB_KEY).await;
    }
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let r = http
        .post(&url)
        .bearer_auth(ALICE_KEY)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &alices)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&ping)
        .send()
        .await
        .expect("ping");
    assert_eq!(
        r.status(),
        200,
        "alice's session was ended by bob's: {}",
        r.text().await.unwrap_or_default()
    );
}
