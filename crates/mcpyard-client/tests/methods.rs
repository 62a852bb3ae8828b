//! Every MCP method the client has a call for, against server-everything
//! over stdio: lists, prompts, completion, resources and subscriptions,
//! logging, ping, and a tool run as a task (protocol 2025-11-25).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{everything_bin, names, Recorder};
use mcpyard_client::{ConnectOptions, McpClient, RequestOptions, TransportSpec};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_has_a_call_that_works_against_server_everything() {
    let spec = TransportSpec::Stdio {
        command: everything_bin().display().to_string(),
        args: vec![],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    };
    let recorder = Recorder::new();
    let client = McpClient::builder(spec)
        .options(ConnectOptions {
            label: "test-methods".into(),
            ..ConnectOptions::default()
        })
        .handler(recorder.clone())
        .request_timeout(Duration::from_secs(20))
        .connect()
        .await
        .expect("connect");
    client.ping().await.expect("ping");

    let prompts = client.list_prompts().await.expect("prompts");
    let prompt_names = names(&prompts);
    assert!(prompt_names.contains(&"simple-prompt"), "{prompt_names:?}");
    let prompt = client
        .get_prompt("simple-prompt", json!({}), RequestOptions::default())
        .await
        .expect("get prompt");
    assert!(
        !prompt["messages"].as_array().expect("messages").is_empty(),
        "{prompt}"
    );
    let completion = client
        .complete(
            json!({"type": "ref/prompt", "name": "completable-prompt"}),
            "department",
            "Eng",
        )
        .await
        .expect("complete");
    assert_eq!(completion["values"], json!(["Engineering"]), "{completion}");

    let resources = client.list_resources().await.expect("resources");
    let uri = resources[0]["uri"]
        .as_str()
        .expect("a resource uri")
        .to_owned();
    let read = client
        .read_resource(&uri, RequestOptions::default())
        .await
        .expect("read");
    assert_eq!(read["contents"][0]["uri"], uri.as_str(), "{read}");
    let templates = client.list_resource_templates().await.expect("templates");
    assert!(!templates.is_empty());
    client.subscribe(&uri).await.expect("subscribe");
    client.unsubscribe(&uri).await.expect("unsubscribe");
    client.set_logging_level("debug").await.expect("log level");

    // A tool that only runs as a task.
    let created = client
        .call_tool_as_task(
            "simulate-research-query",
            json!({"topic": "rust"}),
            Some(Duration::from_secs(60)),
            RequestOptions::default(),
        )
        .await
        .expect("task created");
    let task_id = created["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id in {created}"))
        .to_owned();
    let status = client.get_task(&task_id).await.expect("tasks/get");
    assert_eq!(status["taskId"], task_id.as_str(), "{status}");
    let listed = client.list_tasks().await.expect("tasks/list");
    assert!(
        listed.iter().any(|t| t["taskId"] == task_id.as_str()),
        "{listed:?}"
    );
    let result = client
        .task_result(&task_id, RequestOptions::default())
        .await
        .expect("tasks/result");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: rust"), "{result}");

    // A second task, cancelled before it ends.
    let created = client
        .call_tool_as_task(
            "simulate-research-query",
            json!({"topic": "cancel me"}),
            None,
            RequestOptions::default(),
        )
        .await
        .expect("task created");
    let task_id = created["task"]["taskId"].as_str().expect("task id");
    let cancelled = client.cancel_task(task_id).await.expect("tasks/cancel");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    client.shutdown().await;
}
