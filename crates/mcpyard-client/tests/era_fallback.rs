//! The default era policy (handshake first) against a server of the
//! 2026-07-28 era alone, built on the Python SDK 2.x: whichever way the
//! server turns `initialize` away, the client speaks `server/discover` and
//! the new era instead; a server of both eras keeps the handshake.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{first_text, PyServer};
use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, RequestOptions, TransportSpec};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(30);

async fn connect(server: &PyServer) -> McpClient {
    let spec = TransportSpec::StreamableHttp {
        url: server.url(),
        headers: vec![],
    };
    let options = ConnectOptions {
        label: "era-test".into(),
        connect_timeout: LIMIT,
        ..ConnectOptions::default()
    };
    McpClient::connect(spec, Arc::new(NoopHandler), options)
        .await
        .expect("connect")
}

async fn reverse(client: &McpClient) -> String {
    let result = client
        .request(
            "tools/call",
            Some(json!({"name": "reverse", "arguments": {"text": "abc"}})),
            RequestOptions::default().with_timeout(LIMIT),
        )
        .await
        .expect("reverse");
    first_text(&result).to_owned()
}

async fn falls_back(how: &str) {
    let flag = format!("--modern-only={how}");
    let server = PyServer::start("py2_modern_server.py", &["http", "{port}", &flag]);
    let client = connect(&server).await;
    assert!(client.is_modern(), "refused with {how}: not modern");
    assert_eq!(reverse(&client).await, "cba");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_version_falls_back_to_discover() {
    falls_back("32022").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_version_header_falls_back_to_discover() {
    falls_back("32020").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_initialize_method_falls_back_to_discover() {
    falls_back("32601").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_404_falls_back_to_discover() {
    falls_back("404").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_405_falls_back_to_discover() {
    falls_back("405").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_both_eras_keeps_the_handshake() {
    let server = PyServer::start("py2_modern_server.py", &["http", "{port}"]);
    let client = connect(&server).await;
    assert!(!client.is_modern());
    assert_eq!(reverse(&client).await, "cba");
    client.shutdown().await;
}
