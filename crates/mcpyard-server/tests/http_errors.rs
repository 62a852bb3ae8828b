//! The Streamable HTTP error model, row by row, driven through the router
//! without a socket.

use axum::body::Body;
use axum::Router;
use http::{HeaderMap, Method, Request, StatusCode};
use mcpyard_gateway::{Gateway, GatewayConfig};
use mcpyard_server::{router, AuthOptions, HttpOptions};
use serde_json::{json, Value};
use tower::ServiceExt;

const INIT_2025_06: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INIT_2025_03: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":"p-1","method":"ping"}"#;

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.text))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A test client for one router, with the headers a well-behaved client sends.
struct Client {
    app: Router,
}

impl Client {
    async fn new(opts: HttpOptions) -> Self {
        Self::with_gateway(GatewayConfig::default(), opts).await
    }

    async fn with_gateway(config: GatewayConfig, opts: HttpOptions) -> Self {
        let gateway = Gateway::start(config)
            .await
            .expect("gateway starts with an empty config");
        Self {
            app: router(gateway, opts),
        }
    }

    async fn default() -> Self {
        Self::new(HttpOptions::default()).await
    }

    fn request(method: Method, path: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:8484")
    }

    fn post() -> http::request::Builder {
        Self::request(Method::POST, "/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
    }

    async fn send(&self, req: http::request::Builder, body: &str) -> Answer {
        let req = req
            .body(Body::from(body.to_owned()))
            .expect("valid test request");
        let resp = self
            .app
            .clone()
            .oneshot(req)
            .await
            .expect("the router never fails");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24)
            .await
            .expect("body");
        Answer {
            status,
            headers,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    async fn post_json(&self, body: &str) -> Answer {
        self.send(Self::post(), body).await
    }

    async fn post_in(&self, session: &str, body: &str) -> Answer {
        self.send(Self::post().header("mcp-session-id", session), body)
            .await
    }

    /// Initializes a session and returns its id.
    async fn initialize(&self, init: &str) -> String {
        let a = self.post_json(init).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
        assert!(
            a.json()["result"]["protocolVersion"].is_string(),
            "{}",
            a.text
        );
        a.header("mcp-session-id")
            .expect("initialize issues Mcp-Session-Id")
            .to_owned()
    }
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not a JSON-RPC error: {v}"))
}

#[tokio::test]
async fn initialize_issues_a_session_and_ping_works_in_it() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    assert!(sid.len() >= 16, "session ids must be unguessable: {sid}");
    let a = c.post_in(&sid, PING).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.json(), json!({"jsonrpc":"2.0","id":"p-1","result":{}}));
}

#[tokio::test]
async fn not_json_is_parse_error_with_null_id_on_200() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    for a in [c.post_json("{nope").await, c.post_in(&sid, "{nope").await] {
        assert_eq!(a.status, StatusCode::OK);
        let v = a.json();
        assert_eq!(error_code(&v), -32700);
        assert_eq!(v["id"], Value::Null);
    }
}

#[tokio::test]
async fn empty_batch_is_invalid_request() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_03).await;
    let a = c.post_in(&sid, "[]").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(error_code(&a.json()), -32600);
    assert_eq!(a.json()["id"], Value::Null);
}

#[tokio::test]
async fn invalid_request_echoes_a_readable_id_and_nulls_an_unreadable_one() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    let a = c
        .post_in(&sid, r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(error_code(&a.json()), -32600);
    assert_eq!(a.json()["id"], json!(3));
    let a = c
        .post_in(&sid, r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#)
        .await;
    assert_eq!(error_code(&a.json()), -32600);
    assert_eq!(a.json()["id"], Value::Null);
}

#[tokio::test]
async fn unknown_method_is_method_not_found_on_200() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    let a = c
        .post_in(&sid, r#"{"jsonrpc":"2.0","id":5,"method":"no/such"}"#)
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(error_code(&a.json()), -32601);
    assert_eq!(a.json()["id"], json!(5));
}

#[tokio::test]
async fn batches_are_refused_on_new_era_sessions() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    let a = c.post_in(&sid, &format!("[{PING}]")).await;
    assert_eq!(a.status, StatusCode::OK);
    let v = a.json();
    assert_eq!(error_code(&v), -32600);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("batch")),
        "{v}"
    );
}

#[tokio::test]
async fn batches_are_answered_on_2025_03_26_sessions() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_03).await;
    let body = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},
                   {"jsonrpc":"2.0","method":"notifications/initialized"},
                   {"jsonrpc":"2.0","id":2,"method":"ping"},
                   7]"#;
    let a = c.post_in(&sid, body).await;
    assert_eq!(a.status, StatusCode::OK);
    let v = a.json();
    let answers = v.as_array().expect("a batch answer is an array");
    assert_eq!(answers.len(), 3, "{v}");
    let mut ids: Vec<Value> = answers.iter().map(|a| a["id"].clone()).collect();
    ids.sort_by_key(|v| v.to_string());
    assert_eq!(ids, vec![json!(1), json!(2), Value::Null]);
    assert!(answers
        .iter()
        .any(|a| a["id"].is_null() && error_code(a) == -32600));
}

#[tokio::test]
async fn initialize_in_a_batch_is_refused() {
    let c = Client::default().await;
    let a = c.post_json(&format!("[{INIT_2025_03}, {PING}]")).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(error_code(&a.json()), -32600);
    assert!(a.header("mcp-session-id").is_none());
}

#[tokio::test]
async fn notifications_and_responses_get_202_without_body() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_03).await;
    let a = c
        .post_in(
            &sid,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    assert!(a.text.is_empty());
    // A response to a request the gateway never made is still accepted.
    let a = c
        .post_in(&sid, r#"{"jsonrpc":"2.0","id":"mcpyard-99","result":{}}"#)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let a = c
        .post_in(
            &sid,
            r#"[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    assert!(a.text.is_empty());
}

#[tokio::test]
async fn missing_session_is_400_and_unknown_session_is_404() {
    let c = Client::default().await;
    let a = c.post_json(PING).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let a = c.post_in("no-such-session", PING).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unsupported_protocol_version_header_is_400() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    let a = c
        .send(
            Client::post()
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", "1999-01-01"),
            PING,
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    // The error answers the request: its id, not null.
    assert_eq!(a.json()["id"], json!("p-1"), "{}", a.text);
    assert_eq!(a.json()["error"]["code"], json!(-32022), "{}", a.text);
    let a = c
        .send(
            Client::post().header("mcp-protocol-version", "1999-01-01"),
            r#"{"jsonrpc":"2.0","id":301,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.json()["id"], json!(301), "{}", a.text);
    let a = c
        .send(
            Client::post()
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", "2025-06-18"),
            PING,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn foreign_origin_is_403_and_loopback_origin_passes() {
    let c = Client::default().await;
    let a = c
        .send(
            Client::post().header("origin", "http://evil.example"),
            INIT_2025_06,
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    let a = c
        .send(
            Client::post().header("origin", "http://localhost:6274"),
            INIT_2025_06,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn foreign_host_is_403_when_bound_to_loopback() {
    let c = Client::default().await;
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "attacker.example:8484")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let a = c.send(req, INIT_2025_06).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn oversize_body_is_413() {
    let c = Client::new(HttpOptions {
        max_body_bytes: 1024,
        ..HttpOptions::default()
    })
    .await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(4096)
    );
    let a = c.post_json(&big).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);

    // Streamed without a Content-Length: cut off while it is read.
    let chunks: Vec<Result<String, std::io::Error>> = (0..8).map(|_| Ok("x".repeat(512))).collect();
    let req = Client::post()
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .expect("valid test request");
    let resp = c
        .app
        .clone()
        .oneshot(req)
        .await
        .expect("the router never fails");
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn wrong_content_type_is_415_and_unacceptable_accept_is_406() {
    let c = Client::default().await;
    let req = Client::request(Method::POST, "/mcp")
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream");
    assert_eq!(
        c.send(req, INIT_2025_06).await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    let req = Client::request(Method::POST, "/mcp")
        .header("content-type", "application/json")
        .header("accept", "text/html");
    assert_eq!(
        c.send(req, INIT_2025_06).await.status,
        StatusCode::NOT_ACCEPTABLE
    );
}

#[tokio::test]
async fn sse_only_clients_get_the_answer_as_an_event() {
    let c = Client::default().await;
    let req = Client::request(Method::POST, "/mcp")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    let a = c.send(req, INIT_2025_06).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    assert!(a.header("mcp-session-id").is_some());
    let data = a
        .text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("one data line");
    let v: Value = serde_json::from_str(data).expect("event data is JSON");
    assert_eq!(v["id"], json!(1));
    assert!(a.text.contains("id: 1"), "events carry ids: {}", a.text);
}

#[tokio::test]
async fn get_without_session_is_405_with_allow() {
    let c = Client::default().await;
    let req = Client::request(Method::GET, "/mcp").header("accept", "text/event-stream");
    let a = c.send(req, "").await;
    assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(a.header("allow"), Some("POST, DELETE"));
    let sid = c.initialize(INIT_2025_06).await;
    let req = Client::request(Method::GET, "/mcp")
        .header("accept", "application/json")
        .header("mcp-session-id", &sid);
    assert_eq!(c.send(req, "").await.status, StatusCode::METHOD_NOT_ALLOWED);
    let req = Client::request(Method::GET, "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "unknown");
    assert_eq!(c.send(req, "").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_ends_the_session_then_it_is_404() {
    let c = Client::default().await;
    let sid = c.initialize(INIT_2025_06).await;
    let del = || Client::request(Method::DELETE, "/mcp").header("mcp-session-id", &sid);
    assert_eq!(c.send(del(), "").await.status, StatusCode::OK);
    assert_eq!(c.post_in(&sid, PING).await.status, StatusCode::NOT_FOUND);
    assert_eq!(c.send(del(), "").await.status, StatusCode::NOT_FOUND);
    let no_header = Client::request(Method::DELETE, "/mcp");
    assert_eq!(c.send(no_header, "").await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_new_session_is_503_while_every_session_is_in_use() {
    let c = Client::with_gateway(
        GatewayConfig {
            max_sessions: 1,
            ..GatewayConfig::default()
        },
        HttpOptions::default(),
    )
    .await;
    let first = c.initialize(INIT_2025_06).await;
    // Its open GET stream keeps the first session in use.
    let get = Client::request(Method::GET, "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-06-18")
        .body(Body::empty())
        .expect("valid test request");
    let stream = c
        .app
        .clone()
        .oneshot(get)
        .await
        .expect("the router never fails");
    assert_eq!(stream.status(), StatusCode::OK);

    let refused = c.post_json(INIT_2025_06).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.json()["error"]["code"], json!(-32603));
    assert!(refused.header("mcp-session-id").is_none());

    // Once the stream is gone the first session is idle and makes room.
    drop(stream);
    let second = c.post_json(INIT_2025_06).await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(c.post_in(&first, PING).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn api_key_is_required_except_for_health() {
    let c = Client::new(HttpOptions {
        auth: AuthOptions::single_key("sekrit-123"),
        ..HttpOptions::default()
    })
    .await;
    let a = c.post_json(INIT_2025_06).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert!(a
        .header("www-authenticate")
        .is_some_and(|v| v.starts_with("Bearer")));
    assert!(!a.text.contains("sekrit"));
    let wrong = Client::post().header("authorization", "Bearer sekrit-124");
    assert_eq!(
        c.send(wrong, INIT_2025_06).await.status,
        StatusCode::UNAUTHORIZED
    );
    let right = Client::post().header("authorization", "Bearer sekrit-123");
    assert_eq!(c.send(right, INIT_2025_06).await.status, StatusCode::OK);
    let legacy = Client::request(Method::GET, "/sse");
    assert_eq!(c.send(legacy, "").await.status, StatusCode::UNAUTHORIZED);
    let health = c.send(Client::request(Method::GET, "/health"), "").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.json(), json!({"status": "ok"}));
}

// ---- the stateless era (2026-07-28) ----

fn stateless_body(id: i64, method: &str, version: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": method,
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        }}
    })
    .to_string()
}

fn stateless_post(method: &str, version: &str) -> http::request::Builder {
    Client::post()
        .header("mcp-protocol-version", version)
        .header("mcp-method", method)
}

#[tokio::test]
async fn stateless_requests_are_served_without_a_session() {
    let c = Client::default().await;
    let body = stateless_body(11, "tools/list", "2026-07-28");
    let a = c
        .send(stateless_post("tools/list", "2026-07-28"), &body)
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json()["id"], json!(11));
    assert!(a.json()["result"]["tools"].is_array());
    assert!(a.header("mcp-session-id").is_none());
}

/// The era removed `initialize`, `ping`, `logging/setLevel` and the
/// resource subscriptions: they are unknown methods there, 404 with
/// -32601 and the request's id.
#[tokio::test]
async fn methods_the_stateless_era_removed_are_not_found() {
    let c = Client::default().await;
    for (id, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/list",
        "tasks/result",
    ]
    .into_iter()
    .enumerate()
    {
        let id = 100 + id as i64;
        let body = stateless_body(id, method, "2026-07-28");
        let a = c.send(stateless_post(method, "2026-07-28"), &body).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{method}: {}", a.text);
        assert_eq!(a.json()["error"]["code"], json!(-32601), "{method}");
        assert_eq!(a.json()["id"], json!(id), "{method}");
    }
}

#[tokio::test]
async fn listen_needs_the_stateless_era_a_filter_and_an_event_stream() {
    let c = Client::default().await;
    // In a session of an earlier era the method does not exist.
    let sid = c.initialize(INIT_2025_06).await;
    let in_session = c
        .post_in(&sid, r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}"#)
        .await;
    assert_eq!(error_code(&in_session.json()), -32601);

    let body = |notifications: Value| {
        let mut b: Value =
            serde_json::from_str(&stateless_body(2, "subscriptions/listen", "2026-07-28")).unwrap();
        b["params"]["notifications"] = notifications;
        b.to_string()
    };
    let no_filter = c
        .send(
            stateless_post("subscriptions/listen", "2026-07-28"),
            &body(json!("all")),
        )
        .await;
    assert_eq!(error_code(&no_filter.json()), -32602);
    // A client that takes JSON only cannot receive the stream.
    let json_only = Client::request(Method::POST, "/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen");
    let a = c
        .send(json_only, &body(json!({"toolsListChanged": true})))
        .await;
    assert_eq!(error_code(&a.json()), -32600, "{}", a.text);
}

#[tokio::test]
async fn stateless_unknown_method_is_404_with_a_jsonrpc_body() {
    let c = Client::default().await;
    let body = stateless_body(12, "no/such", "2026-07-28");
    let a = c.send(stateless_post("no/such", "2026-07-28"), &body).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&a.json()), -32601);
    assert_eq!(a.json()["id"], json!(12));
}

#[tokio::test]
async fn stateless_header_mismatch_is_400_minus_32020() {
    let c = Client::default().await;
    let body = stateless_body(13, "ping", "2026-07-28");
    let a = c
        .send(stateless_post("tools/list", "2026-07-28"), &body)
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&a.json()), -32020);
    assert_eq!(a.json()["id"], json!(13));
}

#[tokio::test]
async fn stateless_unknown_envelope_version_is_400_minus_32022() {
    let c = Client::default().await;
    // The header agrees with the envelope, and both name a version no one serves.
    let body = stateless_body(14, "ping", "2026-01-01");
    let req = Client::post().header("mcp-method", "ping");
    let a = c.send(req, &body).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_code(&a.json()),
        -32020,
        "header is required: {}",
        a.text
    );
    let a = c.send(stateless_post("ping", "2026-01-01"), &body).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let v = a.json();
    assert_eq!(error_code(&v), -32022, "{v}");
    let supported = v["error"]["data"]["supported"]
        .as_array()
        .expect("supported list");
    assert!(supported.contains(&json!("2026-07-28")), "{v}");
    assert_eq!(v["error"]["data"]["requested"], json!("2026-01-01"));
    // An envelope naming a session era is not a stateless request either.
    let body = stateless_body(15, "ping", "2025-11-25");
    let a = c.send(stateless_post("ping", "2025-11-25"), &body).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&a.json()), -32022, "{}", a.text);
    assert_eq!(
        a.json()["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
}

#[tokio::test]
async fn stateless_hint_without_envelope_is_invalid_params() {
    let c = Client::default().await;
    let a = c.send(stateless_post("ping", "2026-07-28"), PING).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&a.json()), -32602);
    let a = c
        .send(stateless_post("ping", "2026-07-28"), &format!("[{PING}]"))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&a.json()), -32600);
}

#[tokio::test]
async fn stateless_notifications_are_accepted() {
    let c = Client::default().await;
    let body = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
    let a = c
        .send(stateless_post("notifications/progress", "2026-07-28"), body)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    assert!(a.text.is_empty());
}
