//! The Streamable HTTP transport against server-everything, and against a
//! small faithful fixture for what server-everything does not do (404 for a
//! forgotten session, JSON answers, custom headers).

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use common::{first_text, names, start_everything, start_everything_on, Recorder};
use mcpyard_client::{ClientError, ConnectOptions, McpClient, RequestOptions, TransportSpec};
use serde_json::{json, Value};

fn options() -> ConnectOptions {
    ConnectOptions {
        label: "test-http".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_lists_calls_and_reports_progress() {
    let server = start_everything("streamableHttp");
    let spec = TransportSpec::StreamableHttp {
        url: format!("http://127.0.0.1:{}/mcp", server.port),
        headers: vec![],
    };
    let recorder = Recorder::new();
    let client = McpClient::connect(spec, recorder.clone(), options())
        .await
        .expect("connect");
    assert!(client.initialize_result()["serverInfo"]["name"].is_string());

    let tools = client.list_all("tools/list", "tools").await.expect("list");
    let names = names(&tools);
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );

    let echo = client
        .request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "over http"}})),
            RequestOptions::default(),
        )
        .await
        .expect("echo");
    assert!(first_text(&echo).contains("over http"), "{echo}");

    let sent_id = Arc::new(Mutex::new(None));
    let record = sent_id.clone();
    let done = client
        .request_with_id(
            "tools/call",
            Some(json!({
                "name": "trigger-long-running-operation",
                "arguments": {"duration": 1, "steps": 2},
                "_meta": {"progressToken": "tok-1"},
            })),
            RequestOptions {
                timeout: Some(Duration::from_secs(20)),
                cancel: None,
                ..RequestOptions::default()
            },
            move |id| *record.lock().expect("not poisoned") = Some(id),
        )
        .await
        .expect("long running operation")
        .into_value();
    assert!(first_text(&done).contains("completed"), "{done}");
    let id = sent_id
        .lock()
        .expect("not poisoned")
        .clone()
        .expect("on_sent ran");
    let progress = recorder.notifications("notifications/progress");
    assert_eq!(progress.len(), 2, "{progress:?}");
    for (n, p) in progress.iter().enumerate() {
        let params = p.params.as_ref().expect("params");
        assert_eq!(params["progressToken"], "tok-1");
        assert_eq!(params["progress"], json!(n + 1));
        // It came on the POST stream of our request.
        assert_eq!(p.related.as_ref(), Some(&id));
    }

    let timed_out = client
        .request(
            "tools/call",
            Some(json!({"name": "trigger-long-running-operation", "arguments": {"duration": 5, "steps": 5}})),
            RequestOptions {
                timeout: Some(Duration::from_millis(1)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await;
    assert!(
        matches!(timed_out, Err(ClientError::Timeout(_))),
        "{timed_out:?}"
    );

    // Messages the server sends unasked come on the GET stream, tied to no
    // request.
    client
        .request(
            "tools/call",
            Some(json!({"name": "toggle-simulated-logging", "arguments": {}})),
            RequestOptions::default(),
        )
        .await
        .expect("start simulated logging");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(12);
    let unrelated_log = loop {
        let logs = recorder.notifications("notifications/message");
        if let Some(log) = logs.into_iter().find(|l| l.related.is_none()) {
            break log;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no log message arrived on the GET stream"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(unrelated_log.params.expect("params")["level"].is_string());

    client.shutdown().await;
    assert!(client.is_closed());
}

/// A Streamable HTTP server reduced to what the session tests need. It
/// answers in JSON, issues a new session id per initialize, and can be told
/// to forget every session (as a restarted server would).
#[derive(Default)]
struct Fixture {
    initializes: AtomicUsize,
    session: Mutex<Option<String>>,
    forget: AtomicBool,
    seen: Mutex<Vec<Posted>>,
    deleted: Mutex<Vec<String>>,
}

/// What one POST carried: (method, session header, protocol version header,
/// api key header).
type Posted = (String, Option<String>, Option<String>, Option<String>);

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn fixture_post(State(fx): State<Arc<Fixture>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    let session = header(&headers, "mcp-session-id");
    fx.seen.lock().expect("not poisoned").push((
        method.clone(),
        session.clone(),
        header(&headers, "mcp-protocol-version"),
        header(&headers, "x-api-key"),
    ));
    if method == "initialize" {
        let n = fx.initializes.fetch_add(1, Ordering::SeqCst) + 1;
        let sid = format!("session-{n}");
        *fx.session.lock().expect("not poisoned") = Some(sid.clone());
        let result = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fixture", "version": "1"},
        }});
        return (
            [
                ("mcp-session-id", sid),
                ("content-type", "application/json".into()),
            ],
            result.to_string(),
        )
            .into_response();
    }
    if fx.forget.swap(false, Ordering::SeqCst) {
        *fx.session.lock().expect("not poisoned") = None;
    }
    let current = fx.session.lock().expect("not poisoned").clone();
    if session.is_none() || session != current {
        return (StatusCode::NOT_FOUND, "unknown session").into_response();
    }
    if msg.get("id").is_none() || msg.get("method").is_none() {
        return StatusCode::ACCEPTED.into_response();
    }
    let result = match method.as_str() {
        "huge" => {
            // Past the client's 16 MiB cap.
            let filler = "x".repeat(17 * 1024 * 1024);
            json!({"content": [{"type": "text", "text": filler}]})
        }
        "tools/call" => {
            json!({"content": [{"type": "text", "text": format!("called in {}", current.unwrap_or_default())}]})
        }
        _ => {
            let err = json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}});
            return ([("content-type", "application/json")], err.to_string()).into_response();
        }
    };
    let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result});
    ([("content-type", "application/json")], reply.to_string()).into_response()
}

async fn fixture_delete(State(fx): State<Arc<Fixture>>, headers: HeaderMap) -> StatusCode {
    if let Some(s) = header(&headers, "mcp-session-id") {
        fx.deleted.lock().expect("not poisoned").push(s);
    }
    StatusCode::OK
}

async fn start_fixture() -> (Arc<Fixture>, String, tokio::task::JoinHandle<()>) {
    let fx = Arc::new(Fixture::default());
    let app = Router::new()
        .route(
            "/mcp",
            post(fixture_post)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(fixture_delete),
        )
        .with_state(fx.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let url = format!("http://{}/mcp", listener.local_addr().expect("local addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (fx, url, task)
}

#[tokio::test]
async fn a_forgotten_session_is_reinitialised_and_the_call_resent() {
    let (fx, url, server) = start_fixture().await;
    let spec = TransportSpec::StreamableHttp {
        url,
        headers: vec![("X-Api-Key".into(), "secret-key".into())],
    };
    let client = McpClient::connect(spec, Recorder::new(), options())
        .await
        .expect("connect");
    let first = client
        .request(
            "tools/call",
            Some(json!({"name": "x"})),
            RequestOptions::default(),
        )
        .await
        .expect("first call");
    assert_eq!(first_text(&first), "called in session-1");

    fx.forget.store(true, Ordering::SeqCst);
    let second = client
        .request(
            "tools/call",
            Some(json!({"name": "x"})),
            RequestOptions::default(),
        )
        .await
        .expect("call after the server forgot the session");
    assert_eq!(first_text(&second), "called in session-2");
    assert_eq!(fx.initializes.load(Ordering::SeqCst), 2);

    let unknown = client
        .request("nope", None, RequestOptions::default())
        .await;
    assert!(
        matches!(unknown, Err(ClientError::Rpc(ref e)) if e.code == -32601),
        "{unknown:?}"
    );

    let huge = client
        .request("huge", None, RequestOptions::default())
        .await;
    assert!(matches!(huge, Err(ClientError::Protocol(_))), "{huge:?}");

    client.shutdown().await;
    assert_eq!(*fx.deleted.lock().expect("not poisoned"), ["session-2"]);

    let seen = fx.seen.lock().expect("not poisoned").clone();
    let methods: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call",
            "nope",
            "huge",
        ]
    );
    for (method, session, version, key) in &seen {
        assert_eq!(
            key.as_deref(),
            Some("secret-key"),
            "custom header on {method}"
        );
        if method == "initialize" {
            assert!(
                session.is_none() && version.is_none(),
                "{method}: {session:?} {version:?}"
            );
        } else {
            assert!(session.is_some(), "{method} carries the session");
            assert_eq!(version.as_deref(), Some("2025-11-25"), "{method}");
        }
    }
    server.abort();
}

/// server-everything (TypeScript SDK) answers a session it does not know
/// with 400 rather than 404; a restarted one must still be picked up again
/// without failing the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_typescript_server_gets_a_new_session_without_a_failed_call() {
    let server = start_everything("streamableHttp");
    let port = server.port;
    let spec = TransportSpec::StreamableHttp {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: vec![],
    };
    let recorder = Recorder::new();
    let client = McpClient::connect(spec, recorder.clone(), options())
        .await
        .expect("connect");
    let echo = |message: &'static str| {
        let client = client.clone();
        async move {
            client
                .request(
                    "tools/call",
                    Some(json!({"name": "echo", "arguments": {"message": message}})),
                    RequestOptions::default(),
                )
                .await
        }
    };
    let before = echo("before").await.expect("call before the restart");
    assert!(first_text(&before).contains("before"), "{before}");

    drop(server);
    let _restarted = start_everything_on("streamableHttp", port);
    let after = echo("after").await.expect("call after the restart");
    assert!(first_text(&after).contains("after"), "{after}");
    // The handler hears of it: lists learned in the old session may be stale.
    assert_eq!(recorder.session_restarts.load(Ordering::SeqCst), 1);
    client.shutdown().await;
}

#[tokio::test]
async fn http_errors_and_unreachable_servers_are_reported() {
    let (_fx, url, server) = start_fixture().await;
    let wrong = url.replace("/mcp", "/elsewhere");
    let err = McpClient::connect(
        TransportSpec::StreamableHttp {
            url: wrong,
            headers: vec![],
        },
        Recorder::new(),
        options(),
    )
    .await;
    assert!(
        matches!(err, Err(ClientError::Http { status: 404, .. })),
        "{err:?}"
    );
    server.abort();

    // Nothing listens on a port we just freed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let err = McpClient::connect(
        TransportSpec::StreamableHttp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: vec![],
        },
        Recorder::new(),
        options(),
    )
    .await;
    assert!(matches!(err, Err(ClientError::Transport(_))), "{err:?}");
}
