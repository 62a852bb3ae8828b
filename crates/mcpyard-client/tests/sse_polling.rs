//! SSE polling (SEP-1699) against servers built on the Python SDK 2.x: a
//! server that closes a call's SSE stream before the answer (with a `retry`
//! hint) is resumed with GET and `Last-Event-ID`, and a stream that never
//! delivers ends the call with a clear error long before its timeout.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{first_text, PyServer};
use mcpyard_client::{
    ClientError, ConnectOptions, McpClient, NoopHandler, RequestOptions, TransportSpec,
};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

async fn connect(url: String) -> McpClient {
    let spec = TransportSpec::StreamableHttp {
        url,
        headers: vec![],
    };
    let options = ConnectOptions {
        label: "polling-test".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    };
    McpClient::connect(spec, Arc::new(NoopHandler), options)
        .await
        .expect("connect")
}

async fn call(client: &McpClient, name: &str) -> Result<Value, ClientError> {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": {}})),
            RequestOptions::default().with_timeout(LIMIT),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stream_is_resumed_for_the_answer() {
    let server = PyServer::start("py2_polling_server.py", &["{port}", "500"]);
    let client = connect(server.url()).await;
    let start = Instant::now();
    let result = call(&client, "later").await.expect("later");
    assert_eq!(first_text(&result), "answered after the stream closed");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_retry_hint_does_not_hold_the_call() {
    // The server asks for 60 s between reconnections: the client waits at
    // most its own ceiling.
    let server = PyServer::start("py2_polling_server.py", &["{port}", "60000"]);
    let client = connect(server.url()).await;
    let start = Instant::now();
    let result = call(&client, "later").await.expect("later");
    assert_eq!(first_text(&result), "answered after the stream closed");
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_delivers_fails_the_call_early() {
    let server = PyServer::start("py2_polling_server.py", &["{port}", "200"]);
    let client = connect(server.url()).await;
    let start = Instant::now();
    let err = call(&client, "never")
        .await
        .expect_err("no answer ever comes");
    let took = start.elapsed();
    assert!(
        matches!(&err, ClientError::Transport(why) if why.contains("delivered nothing")),
        "{err}"
    );
    assert!(took < LIMIT / 2, "failed only after {took:?}");
    // The connection itself is still good.
    let result = call(&client, "later").await.expect("later");
    assert_eq!(first_text(&result), "answered after the stream closed");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_fixture_reconnection_tool_answers() {
    // The fixture the gateway's own conformance run uses as its upstream
    // (retry 500 ms, an event store).
    let python = common::workspace_root().join(".tools/venv/bin/python");
    let fixture = common::workspace_root().join("fixtures/conformance-server/server.py");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = std::process::Command::new(python)
        .arg(&fixture)
        .args(["--port", &port.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the fixture");
    let _reaped = common::Reaped(child);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let start = Instant::now();
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the fixture did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let client = connect(format!("http://127.0.0.1:{port}/mcp")).await;
    let start = Instant::now();
    let result = call(&client, "test_reconnection")
        .await
        .expect("test_reconnection");
    assert_eq!(
        first_text(&result),
        "Reconnection test completed successfully"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    client.shutdown().await;
}
