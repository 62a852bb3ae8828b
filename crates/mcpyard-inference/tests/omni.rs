//! `omni`, the counterpart of Lemonade's `lemonade_omni`: one turn in
//! which a local model may call the gateway's image and speech tools, and
//! whose result carries the text plus every image and clip those calls
//! produced. Driven with `lemonade_omni`'s own arguments against a scripted
//! OpenAI-compatible fixture that also serves images and speech.

mod support;

#[path = "support/media_fixture.rs"]
mod media_fixture;

use axum::body::Body;
use axum::response::Response;
use base64::Engine as _;
use mcpyard_inference::BackendKind;
use serde_json::{json, Value};
use support::recording_fixture::{json_response, not_found, serve, Fixture};
use support::{config_with, is_error, text, Harness};

fn png() -> Vec<u8> {
    media_fixture::png(8, 8, [250, 220, 0])
}

fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
    ]})
}

/// The planner's script: draw, then speak, then answer; or, when the
/// client offered its own `get_weather`, call that.
fn planner_reply(turn: usize, body: &Value) -> Value {
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    if offered.contains(&"get_weather") {
        return tool_call("w1", "get_weather", json!({"city": "Paris"}));
    }
    match turn {
        1 => tool_call(
            "c1",
            "local__generate_image",
            json!({"prompt": "a lemon car"}),
        ),
        2 => tool_call(
            "c2",
            "local__speak",
            json!({"input": "A lemon-shaped car."}),
        ),
        _ => json!({"role": "assistant", "content": "Here is your lemon car."}),
    }
}

fn omni_backend(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    match (method, path) {
        ("GET", "/v1/models") => json_response(
            200,
            json!({"object": "list", "data": [
                {"id": "qwen3-0.6b", "object": "model"},
                {"id": "sd-turbo", "object": "model"},
                {"id": "kokoro", "object": "model"}
            ]}),
        ),
        ("POST", "/v1/chat/completions") => {
            let turn = f.requests("POST", "/v1/chat/completions").len();
            json_response(
                200,
                json!({"id": "c", "object": "chat.completion", "model": body["model"],
                       "choices": [{"index": 0, "message": planner_reply(turn, body), "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}}),
            )
        }
        ("POST", "/v1/images/generations") => json_response(
            200,
            json!({"created": 1, "data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode(png())}]}),
        ),
        ("POST", "/v1/audio/speech") => Response::builder()
            .status(200)
            .header("content-type", "audio/wav")
            .body(Body::from(media_fixture::wav(240)))
            .expect("response"),
        _ => not_found(),
    }
}

async fn harness(dir: &tempfile::TempDir) -> (Fixture, Harness) {
    let (f, port) = serve(omni_backend).await;
    let mut config = config_with(BackendKind::Openai, &format!("http://127.0.0.1:{port}"));
    config.output_dir = Some(dir.path().join("out"));
    (f, Harness::new(config).await)
}

#[tokio::test]
async fn omni_returns_the_text_and_the_images_and_speech_its_tools_made() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (f, h) = harness(&dir).await;
    // lemonade_omni's call as its documentation gives it.
    let r = h
        .call(
            "omni",
            json!({"messages": [{"role": "user", "content": "Generate an image of a lemon car, then read out a one-line description."}],
                   "temperature": 0.3, "max_tokens": 256}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let content = r["content"].as_array().expect("content");
    assert_eq!(content[0]["text"], "Here is your lemon car.", "{r}");
    let kinds: Vec<&str> = content.iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(kinds, ["text", "image", "audio"], "{r}");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(content[1]["data"].as_str().unwrap_or(""))
            .expect("base64"),
        png()
    );
    assert_eq!(content[2]["mimeType"], "audio/wav");

    // The planner was offered the image and speech tools, with the turn's settings.
    let chats = f.requests("POST", "/v1/chat/completions");
    assert_eq!(chats.len(), 3);
    let offered: Vec<&str> = chats[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"local__generate_image") && offered.contains(&"local__speak"),
        "{offered:?}"
    );
    assert_eq!(chats[0].body["temperature"], 0.3);
    assert_eq!(f.requests("POST", "/v1/images/generations").len(), 1);
    assert_eq!(f.requests("POST", "/v1/audio/speech").len(), 1);
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn omni_writes_artifacts_to_output_dir_and_passes_app_tool_calls_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_f, h) = harness(&dir).await;
    let r = h
        .call(
            "omni",
            json!({"messages": [{"role": "user", "content": "Draw and say a lemon car."}], "output_dir": "omni"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let content = r["content"].as_array().expect("content");
    assert!(
        content.iter().all(|b| b["type"] == "text"),
        "nothing inline: {r}"
    );
    let paths: Value = serde_json::from_str(
        content
            .last()
            .and_then(|b| b["text"].as_str())
            .expect("a last block"),
    )
    .expect("the last block is JSON");
    let paths: Vec<&str> = paths["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(paths.len(), 2, "{r}");
    let out = std::fs::canonicalize(dir.path().join("out/omni")).expect("the folder exists");
    for p in &paths {
        assert!(std::path::Path::new(p).starts_with(&out), "{p}");
    }
    assert_eq!(std::fs::read(paths[0]).expect("the image"), png());
    assert!(
        text(&r).contains(&format!("image -> {}", paths[0])),
        "{}",
        text(&r)
    );

    // A tool of the client's own is not run here: its call comes back.
    let r = h
        .call(
            "omni",
            json!({"messages": [{"role": "user", "content": "Weather in Paris?"}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
                   "tool_choice": "auto"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let shown = text(&r);
    assert!(
        shown.contains("tool_calls: ") && shown.contains("get_weather"),
        "{shown}"
    );
    assert_eq!(
        r["structuredContent"]["app_tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    h.gateway().shutdown().await;
}
