//! The legacy HTTP+SSE transport (2024-11-05) against server-everything.

mod common;

use std::time::Duration;

use common::{first_text, names, start_everything, Recorder};
use mcpyard_client::{
    ClientError, ClientState, ConnectOptions, McpClient, RequestOptions, TransportSpec,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_legacy_sse_lists_and_calls() {
    let server = start_everything("sse");
    let spec = TransportSpec::Sse {
        url: format!("http://127.0.0.1:{}/sse", server.port),
        headers: vec![],
    };
    let options = ConnectOptions {
        label: "test-sse".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    };
    let client = McpClient::connect(spec, Recorder::new(), options)
        .await
        .expect("connect");
    assert_eq!(client.protocol_version(), "2024-11-05");

    let tools = client.list_all("tools/list", "tools").await.expect("list");
    assert!(names(&tools).contains(&"echo"));
    let echo = client
        .request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"message": "legacy"}})),
            RequestOptions::default(),
        )
        .await
        .expect("echo");
    assert!(first_text(&echo).contains("legacy"), "{echo}");

    // The server going away ends the stream: pending and later calls fail.
    drop(server);
    tokio::time::timeout(Duration::from_secs(10), client.closed())
        .await
        .expect("the stream's end closes the client");
    let after = client
        .request("ping", None, RequestOptions::default())
        .await;
    assert!(
        matches!(
            after,
            Err(ClientError::NotReady {
                state: ClientState::Closed
            })
        ),
        "{after:?}"
    );
}
