//! Policy and rate limits on every kind of source and every path.
//!
//! In process, two identities on one gateway (server-everything over stdio,
//! the local-model tools on a scripted OpenAI-compatible fixture): they see
//! different tools, prompts, resources and search results, and what one may
//! not use is answered as an unknown name on every path (direct, through
//! `mcpyard__call_tool`, through the agent, as a task), never reaching its
//! source, while the layers outside the policy see the refusal.
//!
//! Over HTTP, the binary with a `[policy]`, `[[limits.rate]]` and a
//! per-address flood limit in front of server-everything and an API (the
//! Python OpenAPI peer): the Python SDK client hits the rate limit and reads
//! `retryAfter`; a raw flood gets 429 with `Retry-After`; `/health` is not
//! limited.

mod support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpyard_gateway::governance::{Condition, Effect, Policy, Rule};
use mcpyard_gateway::{
    Exposure, GatewayConfig, Identity, IdentityKind, Layer, Listing, Next, RouteFuture, RoutedCall,
    SourceSpec, UpstreamSpec,
};
use mcpyard_testkit::InProcessClient;
use serde_json::{json, Value};
use support::*;

const WAIT: Duration = Duration::from_secs(30);

/// Counts the calls the policy let through, by target.
#[derive(Debug, Default)]
struct Reached(Mutex<HashMap<String, usize>>);

impl Reached {
    fn count(&self, target: &str) -> usize {
        self.0.lock().unwrap().get(target).copied().unwrap_or(0)
    }
}

impl Layer for Reached {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        *self
            .0
            .lock()
            .unwrap()
            .entry(call.target.clone())
            .or_default() += 1;
        next.run(call)
    }
}

fn everything() -> SourceSpec {
    let mut spec = SourceSpec::mcp(UpstreamSpec {
        name: "every".into(),
        prefix: None,
        transport: mcpyard_client::TransportSpec::Stdio {
            command: node().display().to_string(),
            args: vec![everything_js().display().to_string()],
            env: Default::default(),
            inherit_env: vec![],
            cwd: None,
        },
        timeout: Duration::from_secs(20),
        list_timeout: Duration::from_secs(20),
        max_in_flight: 8,
        sampling: None,
        http_auth: None,
    });
    // Two tools listed, the rest hidden: reachable through the search tools.
    spec.exposure = Exposure {
        listing: Listing::Only(vec!["echo".into(), "get-sum".into()]),
        ..Exposure::default()
    };
    spec
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Interns may not use get-sum nor get-tiny-image, any prompt or demo
/// resource, nor echo with a secret; of the local-model tools only the
/// agent (first match wins). Everyone else may use everything.
fn policy() -> Policy {
    let interns = strings(&["interns"]);
    Policy {
        default: Effect::Allow,
        rules: vec![
            Rule {
                effect: Effect::Deny,
                groups: interns.clone(),
                tools: strings(&["every__get-sum", "every__get-tiny-image"]),
                prompts: strings(&["every__*"]),
                resources: strings(&["demo://*"]),
                ..Rule::default()
            },
            Rule {
                effect: Effect::Deny,
                groups: interns.clone(),
                tools: strings(&["every__echo"]),
                when: Some(Condition::compile("arguments.message.contains('secret')").unwrap()),
                ..Rule::default()
            },
            Rule {
                effect: Effect::Allow,
                groups: interns.clone(),
                tools: strings(&["local__agent"]),
                ..Rule::default()
            },
            Rule {
                effect: Effect::Deny,
                groups: interns,
                tools: strings(&["local__*"]),
                ..Rule::default()
            },
        ],
    }
}

fn names(items: &Value, key: &str, field: &str) -> Vec<String> {
    items[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i[field].as_str().map(str::to_owned))
        .collect()
}

async fn wait_for_lists(client: &InProcessClient) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let tools = client.request("tools/list", json!({}), None).await;
        let listed = names(&tools, "tools", "name");
        let prompts = client.request("prompts/list", json!({}), None).await;
        if listed.iter().any(|n| n == "every__echo")
            && listed.iter().any(|n| n == "local__agent")
            && !names(&prompts, "prompts", "name").is_empty()
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sources did not list in time: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_identities_see_and_reach_different_things_on_every_path() {
    let model = support::scripted_model(vec![
        // The intern's agent run: the model asks for a tool it may not use.
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "every__get-sum", "arguments": "{\"a\": 1, \"b\": 2}"}}
        ]}),
        json!({"role": "assistant", "content": "could not add"}),
    ])
    .await
    .0;
    let inference = support::scripted_inference(model);
    let outcomes = Arc::new(Outcomes::default());
    let reached = Arc::new(Reached::default());
    let ops = InProcessClient::start_with(
        GatewayConfig {
            sources: vec![everything(), inference.into_source_spec()],
            outer_layers: vec![outcomes.clone()],
            layers: vec![reached.clone()],
            policy: Some(Arc::new(policy())),
            ..GatewayConfig::default()
        },
        WAIT,
    )
    .await;
    wait_for_lists(&ops).await;
    let ops = ops
        .join_as(Identity::named(
            IdentityKind::ApiKey,
            "ops-bot",
            strings(&["ops"]),
        ))
        .await;
    let intern = ops
        .join_as(Identity::named(
            IdentityKind::ApiKey,
            "ian",
            strings(&["interns"]),
        ))
        .await;

    // tools/list: the intern's lacks what it may not use.
    let ops_tools = names(
        &ops.request("tools/list", json!({}), None).await,
        "tools",
        "name",
    );
    let intern_tools = names(
        &intern.request("tools/list", json!({}), None).await,
        "tools",
        "name",
    );
    for name in [
        "every__echo",
        "every__get-sum",
        "local__agent",
        "local__chat",
    ] {
        assert!(
            ops_tools.iter().any(|t| t == name),
            "{name} not in {ops_tools:?}"
        );
    }
    assert!(
        intern_tools.iter().any(|t| t == "every__echo"),
        "{intern_tools:?}"
    );
    assert!(
        intern_tools.iter().any(|t| t == "local__agent"),
        "{intern_tools:?}"
    );
    for name in ["every__get-sum", "local__chat", "local__embed"] {
        assert!(
            !intern_tools.iter().any(|t| t == name),
            "{name} in {intern_tools:?}"
        );
    }

    // Search over the hidden tools, and mcpyard__call_tool.
    let search = |c: &'static str| json!({"query": c});
    let ops_hits = ops
        .call("mcpyard__search_tools", search("tiny image"))
        .await
        .to_string();
    let intern_hits = intern
        .call("mcpyard__search_tools", search("tiny image"))
        .await
        .to_string();
    assert!(ops_hits.contains("every__get-tiny-image"), "{ops_hits}");
    assert!(
        !intern_hits.contains("every__get-tiny-image"),
        "{intern_hits}"
    );
    let via = |name: &str| json!({"name": name, "arguments": {}});
    let ops_image = ops
        .call("mcpyard__call_tool", via("every__get-tiny-image"))
        .await;
    assert_ne!(ops_image["isError"], json!(true), "{ops_image}");
    let refused = intern
        .call("mcpyard__call_tool", via("every__get-tiny-image"))
        .await;
    let unknown = intern
        .call("mcpyard__call_tool", via("every__no-such-tool"))
        .await;
    assert_eq!(refused["isError"], json!(true), "{refused}");
    assert_eq!(
        first_text(&refused).replace("every__get-tiny-image", "X"),
        first_text(&unknown).replace("every__no-such-tool", "X"),
        "a refused tool must read as an unknown one"
    );
    // ...while the layers outside the policy (the audit, the metrics) see
    // the refusal, and the source never sees the call.
    assert!(
        outcomes
            .of("every__get-tiny-image")
            .last()
            .is_some_and(|o| o.starts_with("refused by")),
        "{:?}",
        outcomes.of("every__get-tiny-image")
    );
    assert_eq!(reached.count("every__get-tiny-image"), 1, "only ops' call");

    // A direct call: the same JSON-RPC error as an unknown tool; the outer
    // layers see the refusal and its rule, the source never sees the call.
    let sum = json!({"name": "every__get-sum", "arguments": {"a": 1, "b": 2}});
    let ops_sum = ops.request("tools/call", sum.clone(), None).await;
    assert_eq!(first_text(&ops_sum), everything_sum_text(1, 2));
    let reached_before = reached.count("every__get-sum");
    let refused = intern
        .try_request("tools/call", sum.clone(), None)
        .await
        .unwrap_err();
    let unknown = intern
        .try_request(
            "tools/call",
            json!({"name": "every__get-nothing", "arguments": {}}),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, unknown.code);
    assert_eq!(refused.message, "Unknown tool: every__get-sum");
    assert_eq!(refused.data, unknown.data);
    assert_eq!(
        outcomes.of("every__get-sum").last().map(String::as_str),
        Some("refused by Some(0)")
    );
    assert_eq!(reached.count("every__get-sum"), reached_before);

    // A condition over the arguments: the same tool, allowed or refused.
    let echo = |m: &str| json!({"name": "every__echo", "arguments": {"message": m}});
    let said = intern.request("tools/call", echo("hello"), None).await;
    assert!(first_text(&said).contains("hello"), "{said}");
    let refused = intern
        .try_request("tools/call", echo("my secret"), None)
        .await
        .unwrap_err();
    assert_eq!(refused.message, "Unknown tool: every__echo");
    assert_eq!(
        outcomes.of("every__echo").last().map(String::as_str),
        Some("refused by Some(1)")
    );
    let said = ops.request("tools/call", echo("my secret"), None).await;
    assert!(first_text(&said).contains("secret"), "{said}");

    // As a task: refused at once, no task created.
    // (The gateway runs tasks for the local-model tools itself.)
    let as_task = json!({"name": "local__list_models", "arguments": {}, "task": {"ttl": 60000}});
    let refused = intern
        .try_request("tools/call", as_task.clone(), None)
        .await
        .unwrap_err();
    assert_eq!(refused.message, "Unknown tool: local__list_models");
    let tasks = intern.request("tasks/list", json!({}), None).await;
    assert_eq!(tasks["tasks"], json!([]), "{tasks}");
    let created = ops.request("tools/call", as_task, None).await;
    assert!(created["task"]["taskId"].is_string(), "{created}");

    // Through the agent: the inner call is the intern's, and refused.
    let reached_before = reached.count("every__get-sum");
    let agent = intern
        .call(
            "local__agent",
            json!({"prompt": "add 1 and 2", "tools": ["every__*"]}),
        )
        .await;
    assert_eq!(first_text(&agent), "could not add", "{agent}");
    assert_eq!(
        outcomes.of("every__get-sum").last().map(String::as_str),
        Some("refused by Some(0)")
    );
    assert_eq!(
        reached.count("every__get-sum"),
        reached_before,
        "the agent's inner call got through"
    );
    // The local-model tools the rule keeps from the intern.
    let refused = intern
        .try_request(
            "tools/call",
            json!({"name": "local__chat", "arguments": {"prompt": "hi"}}),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.message, "Unknown tool: local__chat");
    assert_eq!(
        outcomes.of("local__chat").last().map(String::as_str),
        Some("refused by Some(3)")
    );

    // Prompts: listed for one, unknown for the other.
    let ops_prompts = names(
        &ops.request("prompts/list", json!({}), None).await,
        "prompts",
        "name",
    );
    let intern_prompts = names(
        &intern.request("prompts/list", json!({}), None).await,
        "prompts",
        "name",
    );
    assert!(!ops_prompts.is_empty());
    assert!(intern_prompts.is_empty(), "{intern_prompts:?}");
    let prompt = json!({"name": ops_prompts[0], "arguments": {}});
    let refused = intern
        .try_request("prompts/get", prompt, None)
        .await
        .unwrap_err();
    let unknown = intern
        .try_request("prompts/get", json!({"name": "every__no-prompt"}), None)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code, refused.data.clone()),
        (unknown.code, unknown.data)
    );
    assert_eq!(
        refused.message,
        format!("Unknown prompt: {}", ops_prompts[0])
    );

    // Resources and templates.
    let ops_resources = names(
        &ops.request("resources/list", json!({}), None).await,
        "resources",
        "uri",
    );
    let intern_resources = names(
        &intern.request("resources/list", json!({}), None).await,
        "resources",
        "uri",
    );
    assert!(!ops_resources.is_empty());
    assert!(intern_resources.is_empty(), "{intern_resources:?}");
    let ops_templates = ops
        .request("resources/templates/list", json!({}), None)
        .await;
    let intern_templates = intern
        .request("resources/templates/list", json!({}), None)
        .await;
    assert!(!names(&ops_templates, "resourceTemplates", "uriTemplate").is_empty());
    assert_eq!(
        intern_templates["resourceTemplates"],
        json!([]),
        "{intern_templates}"
    );
    let uri = &ops_resources[0];
    let read = ops
        .request("resources/read", json!({"uri": uri}), None)
        .await;
    assert!(read["contents"].is_array(), "{read}");
    let refused = intern
        .try_request("resources/read", json!({"uri": uri}), None)
        .await
        .unwrap_err();
    let missing = intern
        .try_request("resources/read", json!({"uri": "nowhere://x"}), None)
        .await
        .unwrap_err();
    assert_eq!(refused.code, missing.code);
    assert_eq!(refused.message, format!("Resource not found: {uri}"));
    assert_eq!(refused.data, Some(json!({"uri": uri})));
    let refused = intern
        .try_request("resources/subscribe", json!({"uri": uri}), None)
        .await
        .unwrap_err();
    assert_eq!(refused.code, missing.code);

    ops.gateway().shutdown().await;
}

/// The Python OpenAPI peer: (process, port).
async fn start_api_peer(dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("openapi_peer.py"))
        .arg(port.to_string());
    let p = Proc::spawn("openapi peer", cmd, &dir.join("peer.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port)
}

const PY_CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

async def call(s, name, args):
    try:
        r = await s.call_tool(name, args)
        return {"text": r.content[0].text if r.content else "", "isError": r.isError}
    except McpError as e:
        return {"code": e.error.code, "message": e.error.message, "data": e.error.data}

async def main(url):
    out = {}
    async with streamablehttp_client(url) as (r, w, _):
        async with ClientSession(r, w) as s:
            await s.initialize()
            out["tools"] = [t.name for t in (await s.list_tools()).tools]
            out["echo"] = [await call(s, "every__echo", {"message": "hi %d" % i}) for i in range(3)]
            out["sum"] = await call(s, "every__get-sum", {"a": 1, "b": 2})
            out["upload"] = await call(s, "peer__upload_file", {})
            out["unknown"] = await call(s, "peer__no_such_operation", {})
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"#;

/// One raw HTTP/1.1 request on its own connection: (status, Retry-After).
fn raw_request(port: u16, request: &str) -> (u16, Option<String>) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let retry_after = answer.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("retry-after:")
            .map(|v| v.trim().to_owned())
    });
    (status, retry_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_rate_limit_says_when_to_retry_and_a_flood_gets_429() {
    let dir = scratch();
    let (_peer, api_port) = start_api_peer(dir.path()).await;
    let config = format!(
        r#"
[inference]
enabled = false

[limits]
http_requests_per_address = "20/s"
http_burst_per_address = 40

[[limits.rate]]
name = "echo-per-identity"
rate = "2/min"
tools = ["every__echo"]

[policy]
default = "allow"
[[policy.rules]]
action = "deny"
tools = ["every__get-sum", "peer__upload_file"]

{}
[apis.peer]
spec = "http://127.0.0.1:{api_port}/openapi.json"
expose = "*"
"#,
        everything_stdio("every")
    );
    let gw = Gateway::start(&config, dir.path()).await;
    // The sources list in the background: wait for both.
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo", "peer__get_image"], WAIT).await;
    drop(client);

    let script = dir.path().join("client.py");
    std::fs::write(&script, PY_CLIENT).unwrap();
    let out = run_python(
        &tool("venv1/bin/python"),
        &[script.display().to_string(), gw.url()],
        Duration::from_secs(60),
    );
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"every__echo") && tools.contains(&"peer__get_image"),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"every__get-sum") && !tools.contains(&"peer__upload_file"),
        "{tools:?}"
    );
    let echo = out["echo"].as_array().unwrap();
    assert_eq!(echo[0]["text"], json!("Echo: hi 0"), "{out}");
    assert_eq!(echo[1]["text"], json!("Echo: hi 1"), "{out}");
    let limited = &echo[2];
    assert_eq!(limited["code"], json!(-32029), "{out}");
    assert!(
        limited["message"]
            .as_str()
            .unwrap()
            .contains("echo-per-identity"),
        "{out}"
    );
    assert_eq!(
        limited["data"]["limit"],
        json!("echo-per-identity"),
        "{out}"
    );
    let retry_after = limited["data"]["retryAfter"].as_f64().unwrap();
    assert!(
        retry_after > 20.0 && retry_after <= 30.0,
        "one call every 30 s: {out}"
    );
    // Refused tools of an MCP server and of an API read as unknown ones.
    assert_eq!(out["sum"]["code"], out["unknown"]["code"], "{out}");
    assert_eq!(
        out["sum"]["message"],
        json!("Unknown tool: every__get-sum"),
        "{out}"
    );
    assert_eq!(
        out["upload"]["message"],
        json!("Unknown tool: peer__upload_file"),
        "{out}"
    );
    assert_eq!(out["upload"]["data"], out["unknown"]["data"], "{out}");

    // A flood from one address: 429 with Retry-After, before any parsing.
    let port = gw.port;
    let statuses = tokio::task::spawn_blocking(move || {
        let body = "not even JSON";
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let answers: Vec<_> = (0..80).map(|_| raw_request(port, &request)).collect();
        let health = raw_request(
            port,
            &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
        );
        (answers, health)
    })
    .await
    .unwrap();
    let (answers, health) = statuses;
    let flooded: Vec<_> = answers.iter().filter(|(s, _)| *s == 429).collect();
    assert!(!flooded.is_empty(), "no 429 in {answers:?}");
    assert!(
        flooded.iter().all(|(_, r)| r
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|s| s >= 1)),
        "{flooded:?}"
    );
    // The ones let through were parsed (and answered a JSON-RPC parse error).
    assert!(answers.iter().any(|(s, _)| *s == 200), "{answers:?}");
    assert_eq!(health.0, 200, "/health is not limited");
}

/// The stdio front door: the same policy and limits, through the binary.
#[test]
fn the_stdio_door_applies_the_policy_and_the_limits() {
    use std::process::Stdio;
    let dir = scratch();
    let config = dir.path().join("mcpyard.toml");
    std::fs::write(
        &config,
        r#"
[inference]
enabled = false

[[limits.rate]]
name = "status"
rate = "1/min"
tools = ["mcpyard__status"]

[policy]
[[policy.rules]]
action = "deny"
tools = ["mcpyard__docs"]
"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpyard"))
        .arg("stdio")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcpyard stdio");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mcpyard__docs", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "mcpyard__nope", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "mcpyard__status", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "mcpyard__status", "arguments": {}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    for request in &requests {
        stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
        // One at a time, so the two status calls meet the bucket in order.
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(stdin);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcpyard stdio did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let answers: HashMap<i64, Value> = reader
        .join()
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|a| Some((a["id"].as_i64()?, a)))
        .collect();
    let listed = names(&answers[&2]["result"], "tools", "name");
    assert!(listed.iter().any(|n| n == "mcpyard__status"), "{listed:?}");
    assert!(!listed.iter().any(|n| n == "mcpyard__docs"), "{listed:?}");
    let (refused, unknown) = (&answers[&3]["error"], &answers[&4]["error"]);
    assert_eq!(refused["code"], unknown["code"], "{answers:?}");
    assert_eq!(refused["message"], json!("Unknown tool: mcpyard__docs"));
    assert!(answers[&5]["result"].is_object(), "{answers:?}");
    assert_eq!(answers[&6]["error"]["code"], json!(-32029), "{answers:?}");
    assert_eq!(answers[&6]["error"]["data"]["limit"], json!("status"));
}
