//! A recording HTTP fixture for the native-API tests: one handler function
//! plays a server (Ollama, LocalAI, vLLM, ...) on a loopback port, and every
//! request it receives is logged so a test can check exactly what mcpyard
//! sent. Also the OpenAI answers several of those servers share.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{json, Value};

/// One request a fixture received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) body: Value,
    pub(crate) auth: Option<String>,
}

/// Answers one request: the fixture (for its state), method, path and the
/// body parsed as JSON (`Null` when it is not JSON).
pub(crate) type Handler = fn(&Fixture, &str, &str, &Value) -> Response;

/// The server's log and the state its handler may keep between requests;
/// each handler uses the fields that its server needs.
#[derive(Clone)]
pub(crate) struct Fixture {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Models a download added (listed after the built-in ones).
    pub(crate) downloaded: Arc<Mutex<Vec<String>>>,
    /// Download jobs: uuid → (model, times polled).
    pub(crate) jobs: Arc<Mutex<HashMap<String, (String, u32)>>>,
    /// Whether the server finished loading its model (starts `true`).
    pub(crate) ready: Arc<AtomicBool>,
    /// What a generic server puts in `owned_by`.
    pub(crate) owner: Arc<Mutex<Option<String>>>,
    /// Set when a streamed answer's connection was dropped by the client.
    pub(crate) closed: Arc<AtomicBool>,
    handler: Handler,
}

impl Fixture {
    /// The requests received with this method and path, in order.
    pub(crate) fn requests(&self, method: &str, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|s| s.method == method && s.path == path)
            .cloned()
            .collect()
    }

    /// Every request received so far, as `METHOD /path`.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

async fn dispatch(
    State(f): State<Fixture>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    f.seen.lock().expect("lock").push(Seen {
        method: method.to_string(),
        path: uri.path().to_owned(),
        body: body.clone(),
        auth: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    (f.handler)(&f, method.as_str(), uri.path(), &body)
}

/// Serves `handler` on a fresh loopback port; the task ends with the test.
pub(crate) async fn serve(handler: Handler) -> (Fixture, u16) {
    let f = Fixture {
        seen: Arc::default(),
        downloaded: Arc::default(),
        jobs: Arc::default(),
        ready: Arc::new(AtomicBool::new(true)),
        owner: Arc::default(),
        closed: Arc::default(),
        handler,
    };
    let app = axum::Router::new().fallback(dispatch).with_state(f.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (f, port)
}

pub(crate) fn json_response(status: u16, v: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .expect("response")
}

pub(crate) fn raw(status: u16, content_type: &str, body: impl Into<String>) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body.into()))
        .expect("response")
}

/// Go's default 404, as Ollama answers it.
pub(crate) fn not_found() -> Response {
    raw(404, "text/plain", "404 page not found")
}

/// An OpenAI chat completion answer, checking the request is one: model
/// and messages present, `max_tokens` (never `max_completion_tokens`), and
/// none of mcpyard's own arguments.
pub(crate) fn completion(body: &Value) -> Response {
    if body["model"].as_str().is_none() || !body["messages"].is_array() {
        return json_response(400, json!({"error": "model and messages are required"}));
    }
    for key in ["max_completion_tokens", "allow_download"] {
        if body.get(key).is_some() {
            return json_response(400, json!({"error": format!("unknown field {key}")}));
        }
    }
    if body["stream"] == json!(true) {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let sse = [
            chunk(json!({"role": "assistant"}), Value::Null),
            chunk(json!({"content": "Hello from "}), Value::Null),
            chunk(json!({"content": "the fixture."}), Value::Null),
            chunk(json!({}), json!("stop")),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        return raw(200, "text/event-stream", sse);
    }
    json_response(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from the fixture."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
        }),
    )
}

/// An OpenAI embeddings answer: one small vector per input.
pub(crate) fn embeddings(body: &Value) -> Response {
    let n = body["input"].as_array().map_or(1, Vec::len);
    let data: Vec<Value> = (0..n)
        .map(|i| json!({"object": "embedding", "index": i, "embedding": [0.1, 0.2, 0.3]}))
        .collect();
    json_response(
        200,
        json!({"object": "list", "model": body["model"], "data": data}),
    )
}
