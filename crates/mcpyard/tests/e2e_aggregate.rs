//! The gateway in front of real MCP servers from the registries, all at once:
//! server-everything over stdio, Streamable HTTP and legacy SSE,
//! server-filesystem and mcp-server-time.

mod support;

use std::sync::Arc;
use std::time::Duration;

use mcpyard_client::RequestOptions;
use serde_json::{json, Value};
use support::*;

fn fleet_config(http_port: u16, sse_port: u16, files: &std::path::Path) -> String {
    let node = path_str(&node());
    format!(
        r#"
[servers.every]
command = {node}
args = [{everything}]

[servers.everyhttp]
url = "http://127.0.0.1:{http_port}/mcp"

[servers.everysse]
url = "http://127.0.0.1:{sse_port}/sse"
transport = "sse"

[servers.fs]
command = {node}
args = [{filesystem}, {files}]

[servers.time]
command = {python}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
"#,
        everything = path_str(&everything_js()),
        filesystem = path_str(&filesystem_js()),
        files = path_str(files),
        python = path_str(&tool("venv-time/bin/python")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_real_server_is_listed_and_callable_through_one_endpoint() {
    let dir = scratch();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hello from the filesystem server").unwrap();
    let (_http, http_port) = start_everything("streamableHttp", dir.path()).await;
    let (_sse, sse_port) = start_everything("sse", dir.path()).await;
    let gw = Gateway::start(&fleet_config(http_port, sse_port, &files), dir.path()).await;

    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({"sampling": {}})).await;
    let tools = wait_for_tools(
        &client,
        &[
            "mcpyard__status",
            "mcpyard__docs",
            "every__echo",
            "everyhttp__get-sum",
            "everysse__echo",
            "fs__read_text_file",
            "time__get_current_time",
        ],
        Duration::from_secs(60),
    )
    .await;
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert!(
            name.len() <= 128
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)),
            "tool name {name} breaks the spec's naming rule"
        );
        assert!(t["inputSchema"].is_object(), "{name} has no inputSchema");
    }

    let r = call(&client, "every__echo", json!({"message": "via stdio"})).await;
    assert!(first_text(&r).contains("via stdio"), "{r}");
    let r = call(&client, "everyhttp__get-sum", json!({"a": 2, "b": 3})).await;
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(first_text(&r), everything_sum_text(2, 3), "{r}");
    let r = call(&client, "everysse__echo", json!({"message": "via sse"})).await;
    assert!(first_text(&r).contains("via sse"), "{r}");
    let path = files.join("hello.txt");
    let r = call(
        &client,
        "fs__read_text_file",
        json!({"path": path.display().to_string()}),
    )
    .await;
    assert!(
        first_text(&r).contains("hello from the filesystem server"),
        "{r}"
    );
    let r = call(
        &client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    assert_current_utc_time(&r);

    let status = call(&client, "mcpyard__status", json!({})).await;
    let sources = status["structuredContent"]["sources"].as_array().unwrap();
    let upstreams: Vec<&Value> = sources
        .iter()
        .filter(|s| s["kind"] == json!("mcp"))
        .collect();
    assert_eq!(upstreams.len(), 5, "{status}");
    assert!(
        upstreams.iter().all(|s| s["healthy"] == json!(true)),
        "{status}"
    );
    // The local models source is listed too (healthy or not: no server here).
    assert!(
        sources.iter().any(|s| s["name"] == json!("local")),
        "{status}"
    );

    // Resources and prompts of the upstreams are merged too.
    let resources = client
        .list_all("resources/list", "resources")
        .await
        .unwrap();
    let uri = resources
        .iter()
        .find_map(|r| r["uri"].as_str().filter(|u| u.starts_with("demo://")))
        .expect("server-everything resources are listed")
        .to_owned();
    let read = client
        .request(
            "resources/read",
            Some(json!({"uri": uri})),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        read["contents"].as_array().is_some_and(|c| !c.is_empty()),
        "{read}"
    );
    let prompts = client.list_all("prompts/list", "prompts").await.unwrap();
    assert!(
        prompts
            .iter()
            .any(|p| p["name"] == json!("every__simple-prompt")),
        "{prompts:?}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_sampling_reach_the_client_that_made_the_call() {
    let dir = scratch();
    let (_http, http_port) = start_everything("streamableHttp", dir.path()).await;
    let config = format!(
        "[servers.every]\ncommand = {}\nargs = [{}]\n\n[servers.everyhttp]\nurl = \"http://127.0.0.1:{http_port}/mcp\"\n",
        path_str(&node()),
        path_str(&everything_js()),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({"sampling": {}})).await;
    wait_for_tools(
        &client,
        &[
            "every__trigger-long-running-operation",
            "everyhttp__trigger-long-running-operation",
            "every__trigger-sampling-request",
            "everyhttp__trigger-sampling-request",
        ],
        Duration::from_secs(60),
    )
    .await;

    for (server, token) in [("every", "tok-stdio"), ("everyhttp", "tok-http")] {
        let r = client
            .request(
                "tools/call",
                Some(json!({
                    "name": format!("{server}__trigger-long-running-operation"),
                    "arguments": {"duration": 1, "steps": 3},
                    "_meta": {"progressToken": token},
                })),
                RequestOptions::default(),
            )
            .await
            .unwrap();
        assert!(first_text(&r).contains("completed"), "{r}");
        let progress: Vec<Value> = recorder
            .notifications_named("notifications/progress")
            .into_iter()
            .filter(|p| p["progressToken"] == json!(token))
            .collect();
        assert_eq!(progress.len(), 3, "progress for {server}: {progress:?}");
        assert_eq!(progress[2]["progress"], json!(3));
    }

    for server in ["every", "everyhttp"] {
        let r = call(
            &client,
            &format!("{server}__trigger-sampling-request"),
            json!({"prompt": "say hi", "maxTokens": 10}),
        )
        .await;
        assert!(
            serde_json::to_string(&r).unwrap().contains(SAMPLED_TEXT),
            "sampling via {server} not answered by the client: {r}"
        );
    }
    let sampled = recorder
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "sampling/createMessage")
        .count();
    assert_eq!(sampled, 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_sampling_gets_an_error_not_a_hang() {
    let dir = scratch();
    let config = format!(
        "[servers.every]\ncommand = {}\nargs = [{}]\n",
        path_str(&node()),
        path_str(&everything_js()),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__trigger-sampling-request"],
        Duration::from_secs(60),
    )
    .await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        client.request(
            "tools/call",
            Some(json!({"name": "every__trigger-sampling-request", "arguments": {"prompt": "x"}})),
            RequestOptions::default(),
        ),
    )
    .await
    .expect("the call must not hang");
    // The gateway refuses the upstream's request at once with -32601 (not a
    // timeout), and server-everything turns that into a tool error.
    let r = outcome.expect("the upstream answers the call");
    assert_eq!(r["isError"], json!(true), "{r}");
    assert_eq!(
        first_text(&r),
        "MCP error -32601: Method not found: sampling/createMessage",
        "{r}"
    );
    client.shutdown().await;
}
