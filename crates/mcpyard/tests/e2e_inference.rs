//! Local models through the gateway, with real peers: a llama-cpp-python
//! server on a tiny generated model answers chat for the Python SDK and
//! server-everything's sampling requests (the sampling bridge); a vision
//! stand-in serves a task-augmented `analyze_image` polled to its result
//! by the Python SDK's tasks API.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

/// A 1×1 PNG.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_model_answers_sampling_for_a_client_that_cannot_and_chats_for_python() {
    let dir = scratch();
    let (_llama, port) = start_llama(dir.path()).await;
    let config = format!(
        "[audit]\nfile = \"audit.jsonl\"\n\n[inference]\nbackends = [{{ name = \"llama\", kind = \"openai\", url = \"http://127.0.0.1:{port}\" }}]\n\n{}[servers.every.sampling]\nmodels = [\"tiny-chat\"]\nmax_tokens = 8\n",
        everything_stdio("every"),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    // This client declares no sampling capability.
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__trigger-sampling-request", "local__chat"],
        Duration::from_secs(60),
    )
    .await;
    let secret_prompt = "the-words-of-the-prompt";
    let r = call(
        &client,
        "every__trigger-sampling-request",
        json!({"prompt": secret_prompt, "maxTokens": 50}),
    )
    .await;
    let text = first_text(&r);
    assert!(r["isError"] != json!(true), "{r}");
    assert!(
        text.contains("\"model\": \"tiny-chat\""),
        "answered by the local model: {text}"
    );
    assert!(text.contains("assistant"), "{text}");

    // The audit trail's record names server, model and token counts, with
    // a hash instead of the prompt.
    let trail = dir.path().join("audit.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let audit = loop {
        let text = std::fs::read_to_string(&trail).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|r| r["kind"] == "sampling");
        if let Some(record) = found {
            assert!(!text.contains(secret_prompt), "the prompt is in the trail");
            break record;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no sampling record in:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(audit["source"], "every", "{audit}");
    assert_eq!(audit["model"], "tiny-chat", "{audit}");
    assert_eq!(audit["outcome"], "ok", "{audit}");
    assert_eq!(audit["arguments_sha256"].as_str().map(str::len), Some(64));
    // The request asked for 50 tokens; the server's cap of 8 wins.
    let used = audit["completion_tokens"].as_u64().unwrap_or_default();
    assert!((1..=8).contains(&used), "over the cap of 8: {audit}");
    let log = gw.proc.log_text();
    assert!(
        !log.contains(secret_prompt),
        "the prompt leaked into the log"
    );
    client.shutdown().await;

    // A real MCP client (Python SDK 2.x, auto mode) chats with the local model.
    let summary = run_python(
        &tool("venv/bin/python"),
        &[
            root().join("scripts/py_client_check.py").display().to_string(),
            gw.url(),
            "auto".into(),
            "--tool".into(),
            "local__chat".into(),
            "--args".into(),
            json!({"messages": [{"role": "user", "content": "Say hi"}], "model": "tiny-chat", "max_tokens": 8}).to_string(),
            "--expect-tool".into(),
            "local__chat".into(),
        ],
        Duration::from_secs(120),
    );
    let call = &summary["call"];
    assert_eq!(
        call["structuredContent"]["model"],
        json!("tiny-chat"),
        "{summary}"
    );
    assert!(
        call["structuredContent"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{summary}"
    );
}

/// A client that can sample: with `mode = "always"` the local model still
/// answers and the client is never asked; with the default `fallback` the
/// client answers and the local model is not used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_can_sample_is_asked_unless_the_server_says_always() {
    let dir = scratch();
    let (_llama, port) = start_llama(dir.path()).await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"llama\", kind = \"openai\", url = \"http://127.0.0.1:{port}\" }}]\n\n{}[servers.local.sampling]\nmode = \"always\"\nmodels = [\"tiny-chat\"]\nmax_tokens = 8\n\n{}[servers.client.sampling]\nmodels = [\"tiny-chat\"]\nmax_tokens = 8\n",
        everything_stdio("local"),
        everything_stdio("client"),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({"sampling": {}})).await;
    wait_for_tools(
        &client,
        &[
            "local__trigger-sampling-request",
            "client__trigger-sampling-request",
        ],
        Duration::from_secs(60),
    )
    .await;
    let sampled_by_client = || {
        recorder
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == "sampling/createMessage")
            .count()
    };
    let audit_lines = |log: &str| {
        log.lines()
            .filter(|l| l.contains("sampling request answered by a local model"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };

    let r = call(
        &client,
        "local__trigger-sampling-request",
        json!({"prompt": "say hi", "maxTokens": 50}),
    )
    .await;
    assert_ne!(r["isError"], json!(true), "{r}");
    let said = first_text(&r);
    assert!(said.contains("\"model\": \"tiny-chat\""), "{said}");
    assert!(!said.contains(SAMPLED_TEXT), "{said}");
    assert_eq!(
        sampled_by_client(),
        0,
        "mode = always never asks the client"
    );
    let audit = audit_lines(&gw.proc.log_text());
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert!(audit[0].contains("server=local"), "{audit:?}");

    let r = call(
        &client,
        "client__trigger-sampling-request",
        json!({"prompt": "say hi", "maxTokens": 50}),
    )
    .await;
    assert_ne!(r["isError"], json!(true), "{r}");
    let said = first_text(&r);
    assert!(
        said.contains(SAMPLED_TEXT),
        "answered by the client: {said}"
    );
    assert!(!said.contains("tiny-chat"), "{said}");
    assert_eq!(sampled_by_client(), 1);
    assert_eq!(
        audit_lines(&gw.proc.log_text()).len(),
        1,
        "the local model was not used for the client that can sample"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_augmented_analyze_image_is_polled_to_its_result_by_the_python_sdk() {
    let dir = scratch();
    let (_vision, port) = start_vision_fixture(dir.path()).await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"vision\", kind = \"openai\", url = \"http://127.0.0.1:{port}\" }}]\n"
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let summary = python_task(
        &gw.url(),
        "local__analyze_image",
        &json!({
            "task": "describe",
            "images": [{"data": PIXEL_PNG, "mimeType": "image/png", "name": "pixel.png"}],
            "preprocess": ["grayscale"],
        }),
    );
    assert_eq!(summary["tasksCapability"], json!(true), "{summary}");
    let statuses = summary["statuses"].as_array().unwrap();
    assert_eq!(statuses.last(), Some(&json!("completed")), "{summary}");
    let task_id = summary["taskId"].as_str().unwrap();
    assert!(
        summary["listed"]
            .as_array()
            .unwrap()
            .contains(&json!(task_id)),
        "{summary}"
    );
    let result_text = summary["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    // The original and its grayscale variant reached the model.
    assert!(result_text.contains("fixture saw 2 image(s)"), "{summary}");
}

/// A client written for Lemonade's MCP endpoint, over HTTP, against a real
/// llama.cpp server: `lemonade_list_models`' and `lemonade_chat`'s own
/// arguments, and the JSON block such clients parse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lemonade_clients_calls_work_against_a_real_llama_cpp_server() {
    let dir = scratch();
    let (_llama, port) = start_llama(dir.path()).await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"llama\", kind = \"openai\", url = \"http://127.0.0.1:{port}\" }}]\n"
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["local__list_models", "local__chat"],
        Duration::from_secs(60),
    )
    .await;

    let r = call(
        &client,
        "local__list_models",
        json!({"include_available": true, "include_suggested": true}),
    )
    .await;
    assert_ne!(r["isError"], json!(true), "{r}");
    let block = r["content"][1]["text"].as_str().unwrap_or_default();
    let listing: Value = serde_json::from_str(block).unwrap_or_else(|e| panic!("{e}: {r}"));
    let loaded: Vec<&str> = listing["loaded"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["model_name"].as_str())
        .collect();
    assert!(loaded.contains(&"tiny-chat"), "{listing}");
    assert!(listing["recommended_chat_model"].is_string(), "{listing}");

    let r = call(
        &client,
        "local__chat",
        json!({"model": "tiny-chat", "messages": [{"role": "system", "content": "You are concise."},
               {"role": "user", "content": "Summarize MCP in one line."}],
               "max_tokens": 8, "temperature": 0.2, "stream": true,
               "presence_penalty": 0.1, "frequency_penalty": 0.1}),
    )
    .await;
    assert_ne!(r["isError"], json!(true), "{r}");
    assert_eq!(r["structuredContent"]["model"], "tiny-chat", "{r}");
    client.shutdown().await;
}

/// Visions' own `tools/call` of its analysis tool, sent by the Python SDK
/// 1.x over HTTP with a progress callback: its argument object as Visions
/// documents it, served by `analyze_image` with the CLAHE variant, the
/// answer streamed as progress and the unused Socket.IO fields noted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visions_own_request_is_served_for_the_python_sdk_with_progress() {
    const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main(url, name, arguments):
    progress = []
    async def on_progress(value, total, message):
        progress.append(message)
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(name, json.loads(arguments), progress_callback=on_progress)
            print(json.dumps({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True), "progress": progress}))

asyncio.run(main(*sys.argv[1:]))
"#;
    let dir = scratch();
    let (_vision, port) = start_vision_fixture(dir.path()).await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"vision\", kind = \"openai\", url = \"http://127.0.0.1:{port}\" }}]\n"
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let arguments = json!({
        "requestId": "abc-123", "model": "llava-vision-test", "task": "describe", "stream": true,
        "roomId": "room-abc", "event": "vision", "numCtx": 16384,
        "prompt": [{"role": "user", "content": "What do you see?"}],
        "images": [{"data": PIXEL_PNG, "mimeType": "image/png", "name": "photo.png"}],
        "preprocessing": {"enabled": true, "variants": {"grayscale": true, "clahe": true}}
    });
    let summary = run_python(
        &tool("venv1/bin/python"),
        &[
            "-c".to_owned(),
            CLIENT.to_owned(),
            gw.url(),
            "local__analyze_image".to_owned(),
            arguments.to_string(),
        ],
        Duration::from_secs(120),
    );
    let result = &summary["result"];
    assert_ne!(result["isError"], json!(true), "{summary}");
    // The original, grayscale and CLAHE versions reached the model.
    assert_eq!(
        result["content"][0]["text"], "fixture saw 3 image(s)",
        "{summary}"
    );
    assert!(
        summary["progress"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("fixture saw 3 image(s)"))),
        "the answer came as progress: {summary}"
    );
    let notes = result["structuredContent"]["notes"].to_string();
    assert!(
        notes.contains("requestId") && notes.contains("numCtx"),
        "{notes}"
    );
}

/// The local source's entry in `mcpyard__status`.
async fn local_status(client: &mcpyard_client::McpClient) -> Value {
    let status = call(client, "mcpyard__status", json!({})).await;
    status["structuredContent"]["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == "local")
        .cloned()
        .unwrap_or_else(|| panic!("no local source in {status}"))
}

async fn local_tools(client: &mcpyard_client::McpClient) -> Vec<String> {
    let mut names = tool_names(client).await;
    names.retain(|n| n.starts_with("local__"));
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_tools_are_listed_while_a_discovered_server_answers() {
    let dir = scratch();
    let port = free_port();
    // Discovery alone, as in the embedded default, on a port of the test.
    let gw = Gateway::start(
        &format!("[inference]\ndiscover_ports = [{port}]\n"),
        dir.path(),
    )
    .await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({})).await;
    wait_for_tools(&client, &["mcpyard__status"], Duration::from_secs(30)).await;

    // Nothing answers: no local tool is listed, and the status says what
    // was probed.
    assert_eq!(local_tools(&client).await, Vec::<String>::new());
    let local = local_status(&client).await;
    assert_eq!(local["discovery"]["ports"], json!([port]), "{local}");
    assert_eq!(
        local["discovery"]["last_probe"]["found"],
        json!([]),
        "{local}"
    );
    assert!(
        local["discovery"]["last_probe"]["at"].is_string(),
        "{local}"
    );

    // A server starts there: the tools appear, the session is told.
    let (llama, _) = start_llama_on(dir.path(), port).await;
    wait_for_tools(
        &client,
        &["local__chat", "local__list_models"],
        Duration::from_secs(60),
    )
    .await;
    assert!(
        !recorder
            .notifications_named("notifications/tools/list_changed")
            .is_empty(),
        "the session was not told"
    );
    let listed = call(&client, "local__list_models", json!({})).await;
    assert_ne!(listed["isError"], json!(true), "{listed}");
    assert!(listed.to_string().contains("tiny-chat"), "{listed}");
    let local = local_status(&client).await;
    assert_eq!(
        local["discovery"]["last_probe"]["found"][0]["port"],
        json!(port),
        "{local}"
    );

    // It stops: the tools go.
    drop(llama);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !local_tools(&client).await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the local tools stayed after their server stopped"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_changes_the_local_models_changes_who_answers_sampling() {
    let dir = scratch();
    let (_llama, port) = start_llama(dir.path()).await;
    let nothing_there = free_port();
    let config = |backend: u16| {
        format!(
            "[inference]\nbackends = [{{ name = \"llama\", kind = \"openai\", url = \"http://127.0.0.1:{backend}\" }}]\n\n{}[servers.every.sampling]\nmodels = [\"tiny-chat\"]\nmax_tokens = 8\n",
            everything_stdio("every"),
        )
    };
    let gw = Gateway::start(&config(nothing_there), dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__trigger-sampling-request"],
        Duration::from_secs(60),
    )
    .await;
    let sample = || {
        try_call(
            &client,
            "every__trigger-sampling-request",
            json!({"prompt": "hi", "maxTokens": 8}),
        )
    };
    // The local models' server is not there: sampling fails.
    let failed = sample().await;
    assert!(
        failed.is_err() || failed.as_ref().is_ok_and(|r| r["isError"] == json!(true)),
        "sampling answered without a model: {failed:?}"
    );

    // The file now names the running server: the same `every`, still
    // running, has its sampling answered by it.
    let path = dir.path().join("mcpyard.toml");
    let new = dir.path().join("mcpyard.toml.new");
    std::fs::write(&new, config(port)).unwrap();
    std::fs::rename(&new, &path).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !gw
        .proc
        .log_text()
        .contains("the local models answering upstreams' sampling replaced")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no reload in the log:\n{}",
            gw.proc.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = gw.proc.log_text();
    assert!(log.contains("sources restarted: local"), "{log}");
    assert!(
        !log.contains("restarted: every") && !log.contains(", every"),
        "{log}"
    );
    let answered = sample().await.expect("the sampling call");
    let text = first_text(&answered);
    assert!(text.contains("\"model\": \"tiny-chat\""), "{answered}");
    client.shutdown().await;
}
