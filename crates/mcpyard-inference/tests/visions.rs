//! Visions' own `tools/call` of its image-analysis tool (`visions.analyze`)
//! sent to `analyze_image`: its argument object as its clients build it
//! (Socket.IO routing fields, `numCtx`, `prompt` as a message array, the
//! `preprocessing` object), against a faithful Ollama fixture that checks
//! the native and the OpenAI-compatible chat requests.

mod support;

#[path = "support/media_fixture.rs"]
mod media_fixture;

use axum::response::Response;
use base64::Engine as _;
use mcpyard_inference::BackendKind;
use serde_json::{json, Value};
use support::recording_fixture::{completion, json_response, not_found, raw, serve, Fixture};
use support::{config_with, is_error, text, Harness};

const VISION_MODEL: &str = "llama3.2-vision";

fn ollama_with_vision(_f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    let tag = json!({"name": VISION_MODEL, "model": VISION_MODEL, "size": 7_900_000_000u64,
                     "digest": "abc", "details": {"format": "gguf", "family": "mllama"}});
    match (method, path) {
        ("GET", "/") => raw(200, "text/plain; charset=utf-8", "Ollama is running"),
        ("GET", "/api/ps" | "/api/tags") => json_response(200, json!({"models": [tag]})),
        ("POST", "/api/show") => json_response(
            200,
            json!({"modelfile": "", "parameters": "", "template": "", "details": {},
                   "capabilities": ["completion", "vision"]}),
        ),
        ("GET", "/v1/models") => json_response(
            200,
            json!({"object": "list", "data": [{"id": VISION_MODEL, "object": "model", "owned_by": "library"}]}),
        ),
        ("POST", "/api/chat") => native_chat(body),
        ("POST", "/v1/chat/completions") => completion(body),
        _ => not_found(),
    }
}

/// Ollama's native chat: images as bare base64 in each message's `images`,
/// settings in `options`, and a streamed answer as NDJSON.
fn native_chat(body: &Value) -> Response {
    let Some(messages) = body["messages"].as_array() else {
        return json_response(400, json!({"error": "messages is required"}));
    };
    for m in messages {
        if !m["content"].is_string() {
            return json_response(400, json!({"error": "content must be a string"}));
        }
        for img in m["images"].as_array().into_iter().flatten() {
            let bare = img.as_str().unwrap_or("");
            if bare.starts_with("data:")
                || base64::engine::general_purpose::STANDARD
                    .decode(bare)
                    .is_err()
            {
                return json_response(400, json!({"error": "images must be bare base64"}));
            }
        }
    }
    let line = |content: &str, done: bool| {
        let mut l = json!({"model": body["model"], "created_at": "2026-12-01T00:00:00Z",
                           "message": {"role": "assistant", "content": content}, "done": done});
        if done {
            l["done_reason"] = json!("stop");
            l["prompt_eval_count"] = json!(600);
            l["eval_count"] = json!(9);
        }
        l
    };
    if body["stream"] == json!(false) {
        return json_response(200, line("A red square on a blue background.", true));
    }
    let lines = [
        line("A red square ", false),
        line("on a blue background.", false),
        line("", true),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    raw(200, "application/x-ndjson", text)
}

fn png_b64() -> String {
    base64::engine::general_purpose::STANDARD.encode(media_fixture::png(32, 32, [200, 20, 20]))
}

/// A gateway whose backend of `kind` is the fixture.
async fn gateway(kind: BackendKind) -> (Fixture, Harness) {
    let (f, port) = serve(ollama_with_vision).await;
    let h = Harness::new(config_with(kind, &format!("http://127.0.0.1:{port}"))).await;
    (f, h)
}

/// The arguments of `visions.analyze` exactly as Visions documents them.
fn visions_arguments() -> Value {
    json!({
        "requestId": "abc-123",
        "model": VISION_MODEL,
        "task": "describe",
        "stream": true,
        "roomId": "room-abc",
        "event": "vision",
        "numCtx": 16384,
        "prompt": [{"role": "user", "content": "What do you see?"}],
        "images": [{"data": png_b64(), "mimeType": "image/png", "name": "photo.png"}],
        "preprocessing": {"enabled": true, "variants": {"grayscale": true, "clahe": true}}
    })
}

#[tokio::test]
async fn visions_request_is_served_with_its_context_size_and_streamed() {
    let (f, h) = gateway(BackendKind::Ollama).await;
    let (r, notes) = h
        .call_with_progress("analyze_image", visions_arguments())
        .await;
    assert!(!is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("A red square on a blue background."),
        "{}",
        text(&r)
    );
    // The model's tokens came as progress.
    let shown: Vec<&str> = notes.iter().filter_map(|n| n["message"].as_str()).collect();
    assert!(shown.contains(&"on a blue background."), "{notes:?}");

    // numCtx became Ollama's options.num_ctx on its native chat.
    let sent = f.requests("POST", "/api/chat");
    assert_eq!(sent.len(), 1, "{:?}", f.paths());
    let body = &sent[0].body;
    assert_eq!(body["options"]["num_ctx"], 16384, "{body}");
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], VISION_MODEL);
    let user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["images"].is_array()))
        .expect("a message with the images");
    assert!(
        user["content"]
            .as_str()
            .is_some_and(|c| c.contains("What do you see?")),
        "the prompt array's text goes with the images: {user}"
    );
    // The original, then the grayscale and CLAHE variants.
    assert_eq!(user["images"].as_array().map(Vec::len), Some(3), "{user:#}");
    let sent_labels = &r["structuredContent"]["images"][0]["sent"];
    assert_eq!(sent_labels[0], "original");
    assert_eq!(sent_labels[1], "grayscale");
    assert!(
        sent_labels[2].as_str().is_some_and(|l| l.contains("CLAHE")),
        "{sent_labels}"
    );
    // The Socket.IO routing fields are not used, and the result says so.
    let notes = r["structuredContent"]["notes"].to_string();
    for field in ["requestId", "roomId", "event"] {
        assert!(notes.contains(field), "{notes}");
    }

    // Without a progress token there is nowhere to stream to: one answer.
    let r = h.call("analyze_image", visions_arguments()).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["content"],
        "A red square on a blue background."
    );
    assert_eq!(
        r["structuredContent"]["usage"]["completion_tokens"], 9,
        "{r}"
    );
    let sent = f.requests("POST", "/api/chat");
    assert_eq!(sent[1].body["stream"], false);
    assert_eq!(sent[1].body["options"]["num_ctx"], 16384);
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn visions_request_without_num_ctx_streams_through_the_openai_route() {
    let (f, h) = gateway(BackendKind::Ollama).await;
    let mut args = visions_arguments();
    args.as_object_mut().expect("object").remove("numCtx");
    let (r, notes) = h.call_with_progress("analyze_image", args.clone()).await;
    assert!(!is_error(&r), "{r}");
    assert!(!notes.is_empty(), "streamed as progress");
    let sent = f.requests("POST", "/v1/chat/completions");
    assert_eq!(sent.len(), 1, "{:?}", f.paths());
    assert_eq!(sent[0].body["stream"], true);

    // `stream: false` is one answer, progress token or not.
    args["stream"] = json!(false);
    let (r, notes) = h.call_with_progress("analyze_image", args).await;
    assert!(!is_error(&r), "{r}");
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        f.requests("POST", "/v1/chat/completions")[1].body["stream"],
        false
    );
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn num_ctx_on_a_server_that_sets_it_at_load_time_is_reported_not_sent() {
    let (f, h) = gateway(BackendKind::Openai).await;
    let r = h.call("analyze_image", visions_arguments()).await;
    assert!(!is_error(&r), "{r}");
    let sent = f.requests("POST", "/v1/chat/completions");
    assert_eq!(sent.len(), 1, "{:?}", f.paths());
    assert!(sent[0].body.get("num_ctx").is_none() && sent[0].body.get("options").is_none());
    let notes = r["structuredContent"]["notes"].to_string();
    assert!(notes.contains("numCtx"), "{notes}");
    h.gateway().shutdown().await;
}
