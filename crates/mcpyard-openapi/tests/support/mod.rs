//! Test helpers: an HTTP server on 127.0.0.1 that records every request it
//! gets and answers by path, operations built by hand, and a real gateway
//! with one API source driven through `Gateway::request` like a transport.
#![allow(dead_code, unused_imports)] // each test uses a part

pub(crate) use mcpyard_testkit::text;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpyard_openapi::{
    ApiAuth, ApiConfig, ApiDocument, DocVersion, Location, Operation, Parameter, ResponseKind,
    Style,
};
use mcpyard_proto::Message;
use mcpyard_testkit::InProcessClient;
use serde_json::{json, Value};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The raw query string, as sent.
    pub(crate) query: Option<String>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ascii header").to_owned())
    }
}

#[derive(Debug, Default)]
struct Shared {
    seen: Mutex<Vec<Recorded>>,
    /// Set when a `/slow` request's handler is dropped: the client went away.
    slow_dropped: AtomicBool,
}

/// The recording server. Answers: `/json`, `/text`, `/events` (three
/// events, 100 ms apart), `/image` (a small PNG), `/pdf`, `/wav`, `/big` (2 MiB of bytes),
/// `/large` (100 KB of JSON), `/missing` (404 JSON), `/echo` (the request's
/// headers and query as JSON), `/slow` (never answers), `/files/blob` (a
/// file to fetch); anything else `{"ok": true}`.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) url: String,
    shared: Arc<Shared>,
    task: Arc<tokio::task::JoinHandle<()>>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if Arc::strong_count(&self.task) == 1 {
            self.task.abort();
        }
    }
}

pub(crate) const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-small-test-image";
pub(crate) const PDF: &[u8] = b"%PDF-1.4 tiny";
pub(crate) const BLOB: &[u8] = b"blob bytes \x00\x01\x02";

impl Recorder {
    pub(crate) async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            shared,
            task: Arc::new(task),
        }
    }

    /// Every request received so far, except file fetches.
    pub(crate) fn seen(&self) -> Vec<Recorded> {
        self.shared
            .seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|r| !r.path.starts_with("/files/"))
            .cloned()
            .collect()
    }

    /// The one request received (panics otherwise).
    pub(crate) fn only(&self) -> Recorded {
        let seen = self.seen();
        assert_eq!(seen.len(), 1, "expected exactly one request: {seen:#?}");
        seen.into_iter().next().expect("one")
    }

    pub(crate) fn clear(&self) {
        self.shared.seen.lock().expect("lock").clear();
    }

    pub(crate) fn slow_dropped(&self) -> bool {
        self.shared.slow_dropped.load(Ordering::SeqCst)
    }
}

struct DropFlag(Arc<Shared>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.slow_dropped.store(true, Ordering::SeqCst);
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .expect("request body");
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body: body.to_vec(),
    };
    shared.seen.lock().expect("lock").push(recorded);
    let json_answer = |status: StatusCode, v: Value| {
        (
            status,
            [("content-type", "application/json")],
            v.to_string(),
        )
            .into_response()
    };
    match parts.uri.path() {
        "/json" => json_answer(StatusCode::OK, json!({"hello": "world"})),
        "/text" => ([("content-type", "text/plain")], "plain words").into_response(),
        "/events" => {
            let events = futures::stream::unfold(0u32, |n| async move {
                if n == 3 {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                let chunk = if n == 2 {
                    "data: done\n\n".to_owned()
                } else {
                    format!("event: tick\ndata: {{\"n\": {}}}\n\n", n + 1)
                };
                Some((Ok::<_, std::convert::Infallible>(chunk), n + 1))
            });
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(events),
            )
                .into_response()
        }
        "/image" => ([("content-type", "image/png")], PNG).into_response(),
        "/pdf" => ([("content-type", "application/pdf")], PDF).into_response(),
        "/wav" => ([("content-type", "audio/wav")], b"RIFF....WAVE".as_slice()).into_response(),
        "/big" => (
            [("content-type", "application/octet-stream")],
            vec![7u8; 2 * 1024 * 1024],
        )
            .into_response(),
        "/large" => {
            let items: Vec<Value> = (0..5000)
                .map(|i| json!({"id": i, "name": "item"}))
                .collect();
            json_answer(StatusCode::OK, json!({ "items": items }))
        }
        "/missing" => json_answer(StatusCode::NOT_FOUND, json!({"error": "no such thing"})),
        "/echo" => {
            let headers: BTreeMap<String, String> = parts
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
                .collect();
            json_answer(
                StatusCode::OK,
                json!({"headers": headers, "query": parts.uri.query()}),
            )
        }
        "/slow" => {
            let _flag = DropFlag(shared.clone());
            tokio::time::sleep(Duration::from_secs(60)).await;
            json_answer(StatusCode::OK, json!({"late": true}))
        }
        "/files/blob" => ([("content-type", "application/octet-stream")], BLOB).into_response(),
        "/files/elsewhere" => (
            StatusCode::FOUND,
            [("location", "http://localhost:1/files/blob")],
        )
            .into_response(),
        _ => json_answer(StatusCode::OK, json!({"ok": true})),
    }
}

/// An operation with no parameters, no body, and no `security` in its
/// document.
pub(crate) fn op(name: &str, method: &str, path: &str) -> Operation {
    Operation {
        name: name.to_owned(),
        method: method.parse().expect("method"),
        path: path.to_owned(),
        operation_id: None,
        summary: None,
        description: None,
        tags: Vec::new(),
        deprecated: false,
        tool_description: format!("{method} {path}"),
        input_schema: json!({"type": "object", "properties": {}}),
        output_schema: None,
        parameters: Vec::new(),
        body: None,
        response: ResponseKind::Unknown,
        security: None,
        servers: Vec::new(),
        websocket: false,
    }
}

/// A parameter whose argument and wire names are the same.
pub(crate) fn param(name: &str, location: Location, style: Style, explode: bool) -> Parameter {
    Parameter {
        name: mcpyard_openapi::Argument {
            argument: name.to_owned(),
            wire: name.to_owned(),
        },
        location,
        required: location == Location::Path,
        style,
        explode,
        schema: json!({}),
    }
}

pub(crate) fn document(server: &str, operations: Vec<Operation>) -> ApiDocument {
    ApiDocument {
        origin: "test.yaml".to_owned(),
        version: DocVersion::OpenApi31,
        title: "Test API".to_owned(),
        servers: vec![server.to_owned()],
        security_schemes: BTreeMap::new(),
        operations,
    }
}

pub(crate) fn config(name: &str, dir: &Path) -> ApiConfig {
    ApiConfig {
        name: name.to_owned(),
        prefix: format!("{name}__"),
        spec: "test.yaml".to_owned(),
        base_url: None,
        auth: ApiAuth::default(),
        headers: BTreeMap::new(),
        timeout: Duration::from_secs(20),
        max_response_bytes: ApiConfig::DEFAULT_MAX_RESPONSE_BYTES,
        rename: BTreeMap::new(),
        input_roots: vec![dir.join("in")],
        output_dir: dir.join("out"),
    }
}

/// A running gateway with one API source, and one client session.
#[derive(Debug)]
pub(crate) struct Harness {
    client: InProcessClient,
    prefix: String,
}

impl std::ops::Deref for Harness {
    type Target = InProcessClient;
    fn deref(&self) -> &InProcessClient {
        &self.client
    }
}

impl Harness {
    pub(crate) async fn new(config: ApiConfig, doc: ApiDocument) -> Self {
        let prefix = config.prefix.clone();
        let source = mcpyard_openapi::OpenApiSource::with_document(config, doc);
        Self::with_source(&prefix, source).await
    }

    /// A gateway with this source, whose tools are named `<prefix><name>`.
    pub(crate) async fn with_source(prefix: &str, source: mcpyard_openapi::OpenApiSource) -> Self {
        let client =
            InProcessClient::start(vec![source.into_source_spec()], Duration::from_secs(30)).await;
        Self {
            client,
            prefix: prefix.to_owned(),
        }
    }

    /// Calls `<prefix><tool>` and returns the `CallToolResult`.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Value {
        self.client
            .call(&format!("{}{tool}", self.prefix), args)
            .await
    }

    /// Calls `<prefix><tool>` with a progress token; returns the result and
    /// the params of every progress notification sent meanwhile.
    pub(crate) async fn call_with_progress(&self, tool: &str, args: Value) -> (Value, Vec<Value>) {
        self.client
            .call_with_progress(&format!("{}{tool}", self.prefix), args)
            .await
    }

    /// Starts a call, waits until `ready` holds, then cancels it as a
    /// client would; returns the gateway's answer (none, for a cancelled
    /// request).
    pub(crate) async fn call_then_cancel(
        &self,
        tool: &str,
        args: Value,
        ready: impl Fn() -> bool,
    ) -> Option<Message> {
        let params = json!({"name": format!("{}{tool}", self.prefix), "arguments": args});
        let (id, call) = self.spawn_call(params, None);
        let waited = tokio::time::timeout(Duration::from_secs(10), async {
            while !ready() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "the request never reached the server");
        self.cancel_call(id, call).await
    }
}

/// A loopback port nothing listens on: bound, then closed.
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}
