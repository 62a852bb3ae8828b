//! The `agent` tool's loop against a scripted OpenAI-compatible fixture:
//! the model asks for a catalogue tool, the gateway runs it, the result goes
//! back to the model, which then answers. The fixture checks each request.

mod support;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use mcpyard_inference::BackendKind;
use serde_json::{json, Value};
use support::*;

/// The chat requests the fixture received, and what it answers: a queue of
/// assistant messages, one per request.
#[derive(Clone, Default)]
struct Script {
    seen: Arc<Mutex<Vec<Value>>>,
    replies: Arc<Mutex<Vec<Value>>>,
}

async fn models() -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": "scripted-chat", "object": "model", "owned_by": "fixture"}]}),
    )
}

async fn chat(State(script): State<Script>, Json(body): Json<Value>) -> Json<Value> {
    script.seen.lock().unwrap().push(body);
    let message = {
        let mut replies = script.replies.lock().unwrap();
        if replies.is_empty() {
            json!({"role": "assistant", "content": "out of script"})
        } else {
            replies.remove(0)
        }
    };
    Json(json!({
        "id": "c", "object": "chat.completion", "model": "scripted-chat",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}
    }))
}

async fn fixture(replies: Vec<Value>) -> (Script, String) {
    let script = Script {
        replies: Arc::new(Mutex::new(replies)),
        ..Script::default()
    };
    let app = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (script, url)
}

fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    ]})
}

#[tokio::test]
async fn the_agent_calls_an_allowed_catalogue_tool_and_answers_with_its_result() {
    let (script, url) = fixture(vec![
        tool_call("c1", "mcpyard__docs", r#"{"page": "overview"}"#),
        json!({"role": "assistant", "content": "mcpyard merges servers into one catalogue."}),
    ])
    .await;
    let h = Harness::new(config_with(BackendKind::Openai, &url)).await;
    let r = h
        .call(
            "agent",
            json!({"prompt": "What is mcpyard?", "tools": ["mcpyard__*"]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "mcpyard merges servers into one catalogue.");
    let s = &r["structuredContent"];
    assert_eq!(s["stopped"], json!("answered"));
    assert_eq!(s["tool_calls"][0]["tool"], json!("mcpyard__docs"));
    assert_eq!(s["tool_calls"][0]["isError"], json!(false));
    assert_eq!(s["usage"]["completion_tokens"], json!(14));

    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    // Only the allowed tools were offered, never the agent itself.
    let offered: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"mcpyard__docs") && offered.contains(&"mcpyard__status"),
        "{offered:?}"
    );
    assert!(
        offered.iter().all(|n| n.starts_with("mcpyard__")),
        "{offered:?}"
    );
    // The tool's real result went back to the model.
    let last = seen[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], json!("tool"));
    assert_eq!(last["tool_call_id"], json!("c1"));
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("mcpyard overview"),
        "{last}"
    );
}

#[tokio::test]
async fn a_tool_outside_the_allow_list_is_never_called_and_the_loop_is_bounded() {
    let (script, url) = fixture(vec![
        tool_call("c1", "mcpyard__status", "{}"),
        tool_call("c2", "mcpyard__docs", "{not json"),
        tool_call("c3", "mcpyard__docs", "{}"),
    ])
    .await;
    let h = Harness::new(config_with(BackendKind::Openai, &url)).await;
    let r = h
        .call(
            "agent",
            json!({"prompt": "go", "tools": ["mcpyard__docs"], "max_iterations": 2}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let s = &r["structuredContent"];
    assert_eq!(s["stopped"], json!("iterations"), "{r}");
    let calls = s["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(
        calls.iter().all(|c| c["isError"] == json!(true)),
        "{calls:?}"
    );
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "max_iterations bounds the model turns");
    let tool_msgs: Vec<String> = seen[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == json!("tool"))
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        tool_msgs[0].contains("not one of the tools you may call"),
        "{tool_msgs:?}"
    );
    assert!(text(&r).contains("iteration limit"), "{r}");
}

#[tokio::test]
async fn an_agent_without_a_task_or_with_unknown_tools_says_what_to_fix() {
    let (_script, url) = fixture(vec![]).await;
    let h = Harness::new(config_with(BackendKind::Openai, &url)).await;
    let r = h.call("agent", json!({"tools": ["mcpyard__docs"]})).await;
    assert!(is_error(&r) && text(&r).contains("prompt"), "{r}");
    let r = h
        .call("agent", json!({"prompt": "x", "tools": ["nothing__*"]}))
        .await;
    assert!(is_error(&r) && text(&r).contains("tools/list"), "{r}");
}
