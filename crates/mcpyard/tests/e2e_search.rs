//! Exposure and the search tools in front of a real server: server-everything
//! with only some tools listed, the rest found by `mcpyard__search_tools`
//! and called through `mcpyard__call_tool` (arguments checked before
//! anything is sent), by our client and by the official Python SDK.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{ClientError, McpClient, RequestOptions};
use serde_json::{json, Value};
use support::*;
use tokio_util::sync::CancellationToken;

const SEARCH_TOOLS: [&str; 3] = [
    "mcpyard__list_tools",
    "mcpyard__search_tools",
    "mcpyard__call_tool",
];

/// server-everything over stdio, every message the gateway sends it
/// copied to `wire` on the way, so a test can tell what reached it.
fn everything_recorded(name: &str, expose: &str, wire: &Path) -> String {
    let pipeline = format!(
        "tee -a '{}' | exec '{}' '{}'",
        wire.display(),
        node().display(),
        everything_js().display()
    );
    format!(
        "[inference]\nenabled = false\n\n[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nexpose = {expose}\n",
        toml_str(pipeline)
    )
}

fn names(tools: &[Value]) -> BTreeSet<String> {
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn call_with(client: &McpClient, params: Value) -> Value {
    client
        .request(
            "tools/call",
            Some(params),
            RequestOptions {
                timeout: Some(Duration::from_secs(60)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .expect("tools/call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_tools_are_searched_checked_and_called_through_the_gateway() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let config = everything_recorded("every", r#"["echo", "get-sum", "nope-*"]"#, &wire);
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({})).await;

    // tools/list: the two exposed tools, the gateway's own, the search three.
    let tools = wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;
    let expected: BTreeSet<String> = [
        "every__echo",
        "every__get-sum",
        "mcpyard__status",
        "mcpyard__docs",
    ]
    .into_iter()
    .chain(SEARCH_TOOLS)
    .map(str::to_owned)
    .collect();
    assert_eq!(names(&tools), expected, "{tools:?}");

    // A goal in plain words finds the hidden tool, with its full schema.
    let found = call(
        &client,
        "mcpyard__search_tools",
        json!({"query": "run a slow operation that reports its progress", "limit": 3}),
    )
    .await;
    assert_eq!(found["isError"], json!(false), "{found}");
    let hits = found["structuredContent"]["tools"]
        .as_array()
        .expect("hits");
    assert_eq!(
        hits[0]["name"],
        json!("every__trigger-long-running-operation"),
        "{found}"
    );
    assert_eq!(hits[0]["source"], json!("every"));
    assert!(
        hits[0]["inputSchema"]["properties"]["steps"].is_object(),
        "{found}"
    );
    // An exact name is the one hit; a pattern matches names.
    let exact = call(
        &client,
        "mcpyard__search_tools",
        json!({"query": "every__get-env"}),
    )
    .await;
    assert_eq!(
        exact["structuredContent"]["tools"].as_array().map(Vec::len),
        Some(1)
    );
    let pattern = call(
        &client,
        "mcpyard__search_tools",
        json!({"query": "every__toggle-*"}),
    )
    .await;
    assert_eq!(
        names(pattern["structuredContent"]["tools"].as_array().unwrap()),
        BTreeSet::from([
            "every__toggle-simulated-logging".into(),
            "every__toggle-subscriber-updates".into()
        ])
    );

    // Called through call_tool: progress reaches the client, then the result.
    let r = call_with(
        &client,
        json!({
            "name": "mcpyard__call_tool",
            "arguments": {"name": "every__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}},
            "_meta": {"progressToken": "via-search"},
        }),
    )
    .await;
    assert_ne!(r["isError"], json!(true), "{r}");
    assert!(first_text(&r).contains("completed"), "{r}");
    let progress: Vec<Value> = recorder
        .notifications_named("notifications/progress")
        .into_iter()
        .filter(|p| p["progressToken"] == json!("via-search"))
        .collect();
    assert_eq!(progress.len(), 3, "{progress:?}");

    // Invalid arguments: each error listed with the schema; nothing sent.
    let invalid = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__get-structured-content", "arguments": {"location": "Paris", "extra": 1}}),
    )
    .await;
    assert_eq!(invalid["isError"], json!(true), "{invalid}");
    let message = first_text(&invalid);
    assert!(
        message.contains("/location") && message.contains("Paris"),
        "{message}"
    );
    assert!(message.contains("Expected schema"), "{message}");
    let missing = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__get-structured-content"}),
    )
    .await;
    assert!(
        first_text(&missing).contains("\"location\" is a required property"),
        "{missing}"
    );
    let sent = std::fs::read_to_string(&wire).expect("wire log");
    assert!(
        sent.contains("trigger-long-running-operation"),
        "the wire log records calls"
    );
    assert!(
        !sent.contains("get-structured-content"),
        "an invalid call reached the server"
    );

    // A listed tool is refused with the way to call it; an unknown name
    // points to search.
    let listed = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__echo", "arguments": {"message": "x"}}),
    )
    .await;
    assert_eq!(listed["isError"], json!(true));
    assert!(
        first_text(&listed).contains("call it directly as `every__echo`"),
        "{listed}"
    );
    let unknown = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__nothing"}),
    )
    .await;
    assert_eq!(unknown["isError"], json!(true));
    assert!(
        first_text(&unknown).contains("mcpyard__search_tools"),
        "{unknown}"
    );

    // Hidden is not forbidden: the hidden tool answers a direct call.
    let direct = call(
        &client,
        "every__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert_ne!(direct["isError"], json!(true), "{direct}");
    assert!(std::fs::read_to_string(&wire)
        .unwrap()
        .contains("get-structured-content"));

    // Status: per source, listed and hidden counts and the name that matched nothing.
    let status = call(&client, "mcpyard__status", json!({})).await;
    let every = &status["structuredContent"]["sources"][0];
    assert_eq!(every["tools_listed"], json!(2), "{status}");
    assert!(
        every["tools_hidden"].as_u64().unwrap_or(0) >= 10,
        "{status}"
    );
    assert_eq!(every["expose_unmatched"], json!(["nope-*"]), "{status}");
    assert!(first_text(&status).contains("nope-*"), "{status}");
    assert!(
        gw.proc
            .log_text()
            .contains("match none of the source's tools"),
        "the unmatched name is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expose_none_lists_no_upstream_tool_and_list_tools_pages_through_them_all() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let config = format!(
        "page_size = 4\n{}",
        everything_recorded("every", "\"none\"", &wire)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_tools(&client, &SEARCH_TOOLS, Duration::from_secs(60)).await;
    let expected: BTreeSet<String> = ["mcpyard__status", "mcpyard__docs"]
        .into_iter()
        .chain(SEARCH_TOOLS)
        .map(str::to_owned)
        .collect();
    assert_eq!(names(&tools), expected);

    let status = call(&client, "mcpyard__status", json!({})).await;
    let hidden = status["structuredContent"]["sources"][0]["tools_hidden"]
        .as_u64()
        .unwrap();
    assert_eq!(
        status["structuredContent"]["sources"][0]["tools_listed"],
        json!(0)
    );
    let mut seen = Vec::new();
    let mut arguments = json!({});
    for _ in 0..50 {
        let page = call(&client, "mcpyard__list_tools", arguments.clone()).await;
        assert_eq!(page["isError"], json!(false), "{page}");
        let items = page["structuredContent"]["tools"].as_array().unwrap();
        assert!(items.len() <= 4);
        seen.extend(items.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        assert!(first_text(&page).contains("[every]"), "{page}");
        match page["structuredContent"]["nextCursor"].as_str() {
            Some(c) => arguments = json!({"cursor": c}),
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, hidden, "{seen:?}");
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>().len(),
        seen.len(),
        "a tool listed twice"
    );
    assert!(seen.contains(&"every__echo".to_owned()));
    let bad = call(&client, "mcpyard__list_tools", json!({"cursor": "bogus"})).await;
    assert_eq!(bad["isError"], json!(true));

    // The echo tool is hidden but answers a direct call and a call_tool.
    let direct = call(&client, "every__echo", json!({"message": "hi"})).await;
    assert!(first_text(&direct).contains("hi"), "{direct}");
    let via = call(
        &client,
        "mcpyard__call_tool",
        json!({"name": "every__echo", "arguments": {"message": "via"}}),
    )
    .await;
    assert!(first_text(&via).contains("via"), "{via}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_tools_off_lists_no_search_tools_even_with_tools_hidden() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let config = format!(
        "search_tools = false\n{}",
        everything_recorded("every", "[\"echo\"]", &wire)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;
    assert_eq!(
        names(&tools),
        BTreeSet::from([
            "every__echo".into(),
            "mcpyard__status".into(),
            "mcpyard__docs".into()
        ])
    );
    let refused = client
        .request(
            "tools/call",
            Some(json!({"name": "mcpyard__search_tools", "arguments": {"query": "sum"}})),
            RequestOptions::default(),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let direct = call(&client, "every__get-sum", json!({"a": 2, "b": 3})).await;
    assert!(first_text(&direct).contains('5'), "{direct}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_finds_a_hidden_tool_by_a_goal_and_calls_it_with_progress() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let config = everything_recorded("every", "[\"echo\"]", &wire);
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &SEARCH_TOOLS, Duration::from_secs(60)).await;
    let summary = run_python(
        &tool("venv/bin/python"),
        &[
            support_file("py_search_check.py").display().to_string(),
            gw.url(),
            "a slow operation that reports progress".into(),
            json!({"duration": 1, "steps": 3}).to_string(),
        ],
        Duration::from_secs(120),
    );
    let listed = summary["listed"].as_array().expect("listed");
    assert!(
        listed.contains(&json!("mcpyard__search_tools")),
        "{summary}"
    );
    assert!(
        !listed.contains(&json!("every__trigger-long-running-operation")),
        "{summary}"
    );
    assert_eq!(
        summary["called"],
        json!("every__trigger-long-running-operation"),
        "{summary}"
    );
    assert_eq!(summary["isError"], json!(false), "{summary}");
    assert!(
        summary["text"]
            .as_str()
            .unwrap_or_default()
            .contains("completed"),
        "{summary}"
    );
    assert_eq!(
        summary["progress"].as_array().map(Vec::len),
        Some(3),
        "{summary}"
    );
}

/// The messages the gateway sent server-everything, once `needle` is among
/// them (within 10 s).
async fn wire_once_it_has(wire: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sent = std::fs::read_to_string(wire).unwrap_or_default();
        if sent.contains(needle) {
            return sent;
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never reached the server; it got:\n{sent}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the server was told to cancel its `tools/call` of `tool`:
/// a `notifications/cancelled` naming that very request's id.
async fn assert_told_to_cancel(wire: &Path, tool: &str) {
    let sent = wire_once_it_has(wire, "notifications/cancelled").await;
    let messages: Vec<Value> = sent
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let call_id = messages
        .iter()
        .find(|m| m["method"] == json!("tools/call") && m["params"]["name"] == json!(tool))
        .map(|m| m["id"].clone())
        .unwrap_or_else(|| panic!("no call of {tool} in:\n{sent}"));
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == json!("notifications/cancelled")
                && m["params"]["requestId"] == call_id),
        "no cancellation of request {call_id} in:\n{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_as_a_task_runs_the_hidden_tool_and_gives_its_result() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let gw = Gateway::start(
        &everything_recorded("every", r#"["echo"]"#, &wire),
        dir.path(),
    )
    .await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;

    let created = call_with(
        &client,
        json!({
            "name": "mcpyard__call_tool",
            "arguments": {"name": "every__get-sum", "arguments": {"a": 20, "b": 22}},
            "task": {"ttl": 60000},
        }),
    )
    .await;
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a CreateTaskResult: {created}"))
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let task = client
            .request(
                "tasks/get",
                Some(json!({"taskId": task_id})),
                RequestOptions::default(),
            )
            .await
            .expect("tasks/get");
        let status = task["status"].as_str().unwrap_or("").to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            break status;
        }
        assert!(Instant::now() < deadline, "the task never finished: {task}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, "completed");
    let result = client
        .request(
            "tasks/result",
            Some(json!({"taskId": task_id})),
            RequestOptions::default(),
        )
        .await
        .expect("tasks/result");
    assert_ne!(result["isError"], json!(true), "{result}");
    assert_eq!(first_text(&result), everything_sum_text(20, 22), "{result}");
    assert!(
        std::fs::read_to_string(&wire)
            .unwrap()
            .contains("\"get-sum\""),
        "the hidden tool was called on the server"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_tool_request_cancels_the_hidden_tool_upstream() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let gw = Gateway::start(
        &everything_recorded("every", r#"["echo"]"#, &wire),
        dir.path(),
    )
    .await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;

    let token = CancellationToken::new();
    let cancel = token.clone();
    let started = Instant::now();
    let call = client.request(
        "tools/call",
        Some(json!({
            "name": "mcpyard__call_tool",
            "arguments": {"name": "every__trigger-long-running-operation", "arguments": {"duration": 30, "steps": 30}},
        })),
        RequestOptions {
            timeout: Some(Duration::from_secs(60)),
            cancel: Some(token),
            ..RequestOptions::default()
        },
    );
    let cancel_once_running = async {
        wire_once_it_has(&wire, "trigger-long-running-operation").await;
        cancel.cancel();
    };
    let (answer, ()) = tokio::join!(call, cancel_once_running);
    assert!(matches!(answer, Err(ClientError::Cancelled)), "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the cancelled call ran {:?}",
        started.elapsed()
    );
    assert_told_to_cancel(&wire, "trigger-long-running-operation").await;
    // The connection still serves calls after the cancellation.
    let sum = call_with(
        &client,
        json!({"name": "mcpyard__call_tool", "arguments": {"name": "every__get-sum", "arguments": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(first_text(&sum), everything_sum_text(1, 2), "{sum}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_timeout_applies_to_a_call_through_call_tool() {
    let dir = scratch();
    let wire = dir.path().join("wire.jsonl");
    let config = format!(
        "{}timeout = \"1s\"\n",
        everything_recorded("every", r#"["echo"]"#, &wire)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;

    let started = Instant::now();
    let answer = client
        .request(
            "tools/call",
            Some(json!({
                "name": "mcpyard__call_tool",
                "arguments": {"name": "every__trigger-long-running-operation", "arguments": {"duration": 20, "steps": 20}},
            })),
            RequestOptions {
                timeout: Some(Duration::from_secs(60)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await;
    let elapsed = started.elapsed();
    match answer {
        Err(ClientError::Rpc(e)) => assert!(
            e.message.contains("every") && e.message.contains("within"),
            "{e}"
        ),
        other => panic!("expected the server's timeout, got {other:?}"),
    }
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(10),
        "the 1 s timeout took {elapsed:?}"
    );
    // The server was told to stop working on it.
    assert_told_to_cancel(&wire, "trigger-long-running-operation").await;
    client.shutdown().await;
}
