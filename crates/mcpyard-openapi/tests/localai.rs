//! LocalAI's own document against a real HTTP server on 127.0.0.1 that
//! records every request, as LocalAI's users and LocalAiMCP's clients use
//! it: the configured key on every call, LocalAiMCP's tool names, and its
//! way of calling hidden tools.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpyard_openapi::{load_file, ApiDocument, LoadOptions};
use serde_json::{json, Value};
use support::*;

const KEY: &str = "sk-localai-SECRET-4411";

fn localai_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/openapi/localai-swagger.json")
}

fn localai() -> ApiDocument {
    load_file(
        &localai_path(),
        &LoadOptions {
            rename: BTreeMap::new(),
            prefix_len: "localai__".len(),
        },
    )
    .expect("LocalAI's document loads")
}

fn name_of(doc: &ApiDocument, method: &str, path: &str) -> String {
    doc.operations
        .iter()
        .find(|op| op.method.as_str() == method && op.path == path)
        .unwrap_or_else(|| panic!("{method} {path} is an operation"))
        .name
        .clone()
}

fn tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("in")).expect("input root");
    dir
}

/// The README's example: `[apis.localai] auth = { bearer = "${KEY}" }`.
async fn localai_behind(server: &Recorder, dir: &Path) -> (Harness, ApiDocument) {
    let doc = localai();
    let mut c = config("localai", dir);
    c.base_url = Some(server.url.clone());
    c.auth.bearer = Some(KEY.to_owned());
    (Harness::new(c, doc.clone()).await, doc)
}

/// LocalAI's document declares `BearerAuth` and no operation lists
/// `security`: the configured key must still reach LocalAI, as
/// `Authorization: Bearer`, and never show in a result.
#[tokio::test]
async fn the_configured_key_reaches_localai_although_no_operation_lists_security() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let (h, doc) = localai_behind(&server, dir.path()).await;
    for (method, path, args) in [
        ("GET", "/system", json!({})),
        ("GET", "/v1/models", json!({})),
        (
            "POST",
            "/v1/tokenize",
            json!({"model": "m", "content": "hello"}),
        ),
    ] {
        server.clear();
        let r = h.call(&name_of(&doc, method, path), args).await;
        assert!(!is_error(&r), "{method} {path}: {r}");
        let seen = server.only();
        assert_eq!(seen.path, path);
        assert_eq!(
            seen.header("authorization").as_deref(),
            Some(format!("Bearer {KEY}").as_str()),
            "{method} {path} went out without the key"
        );
        assert!(!r.to_string().contains(KEY), "{r}");
    }
}

/// LocalAiMCP's semantic names are LocalAI's tool names here too.
#[test]
fn localai_tools_carry_localaimcp_names() {
    let doc = localai();
    for (method, path, name) in [
        ("POST", "/v1/chat/completions", "chat"),
        ("GET", "/system", "get_system_info"),
        ("POST", "/v1/audio/speech", "text_to_speech"),
        ("POST", "/tts", "text_to_speech_legacy"),
        ("POST", "/v1/audio/transcriptions", "transcribe_audio"),
        ("POST", "/v1/images/generations", "generate_image"),
        ("POST", "/v1/embeddings", "embed"),
        ("GET", "/v1/models", "list_models"),
        ("POST", "/v1/detokenize", "detokenize"),
        ("POST", "/models/apply", "install_model"),
        ("GET", "/ws/backend-logs/{modelId}", "stream_backend_logs"),
    ] {
        assert_eq!(name_of(&doc, method, path), name, "{method} {path}");
    }
    // A rename of the configuration still wins, keyed by the name shown.
    let renamed = load_file(
        &localai_path(),
        &LoadOptions {
            rename: BTreeMap::from([("chat".to_owned(), "talk".to_owned())]),
            prefix_len: "localai__".len(),
        },
    )
    .expect("loads with a rename");
    assert_eq!(name_of(&renamed, "POST", "/v1/chat/completions"), "talk");
}

/// LocalAiMCP's `execute_additional_tool` shape through `mcpyard__call_tool`:
/// `tool_name` for the name, and the body wrapped as `{"request": {...}}`
/// (the Swagger body parameter's name); the same wrapper on a direct call.
#[tokio::test]
async fn localaimcp_calls_reach_localai_with_tool_name_and_a_wrapped_request() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let (h, doc) = localai_behind(&server, dir.path()).await;
    let detokenize = format!("localai__{}", name_of(&doc, "POST", "/v1/detokenize"));
    let client: &mcpyard_testkit::InProcessClient = &h;
    let r = client
        .call(
            "mcpyard__call_tool",
            json!({"tool_name": detokenize, "arguments": {"request": {"model": "m", "tokens": [1, 42]}}}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.path, "/v1/detokenize");
    let body: Value = serde_json::from_slice(&seen.body).expect("a JSON body");
    assert_eq!(body, json!({"model": "m", "tokens": [1, 42]}));

    server.clear();
    let chat = name_of(&doc, "POST", "/v1/chat/completions");
    let r = h
        .call(
            &chat,
            json!({"request": {"model": "m", "file": "", "messages": [{"role": "user", "content": "hi"}]}}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let body: Value = serde_json::from_slice(&server.only().body).expect("a JSON body");
    assert_eq!(body["messages"][0]["content"], json!("hi"));
    assert_eq!(body["model"], json!("m"));
}
