//! Streams over real sockets: the session GET stream, a request from the
//! gateway to the client answered by POST, the legacy HTTP+SSE transport
//! and shutdown with streams open.

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use mcpyard_gateway::{Gateway, GatewayConfig};
use mcpyard_proto::Message;
use mcpyard_server::{serve_http_on, HttpOptions};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A gateway served on 127.0.0.1:0, stopped when dropped.
struct Server {
    addr: SocketAddr,
    gateway: Gateway,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
    http: reqwest::Client,
}

impl Server {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let gateway = Gateway::start(GatewayConfig::default())
            .await
            .expect("gateway starts");
        let shutdown = CancellationToken::new();
        let opts = HttpOptions {
            shutdown_grace: Duration::from_secs(2),
            ..HttpOptions::default()
        };
        let task = tokio::spawn(serve_http_on(
            listener,
            gateway.clone(),
            opts,
            shutdown.clone(),
        ));
        Self {
            addr,
            gateway,
            shutdown,
            task: Some(task),
            http: reqwest::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    fn post(&self, path: &str, body: &str) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_owned())
    }

    async fn initialize(&self) -> String {
        let r = self.post("/mcp", INIT).send().await.expect("initialize");
        assert_eq!(r.status(), 200);
        r.headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("session id")
            .to_owned()
    }

    async fn open_get(&self, sid: &str) -> reqwest::Response {
        self.http
            .get(self.url("/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .send()
            .await
            .expect("GET /mcp")
    }

    async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let done = tokio::time::timeout(WAIT, task).await;
            let served = done.expect("server stops within the grace period");
            served.expect("server task").expect("server result");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Reads SSE events (`event`, `data`) off a response body.
struct Events {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl Events {
    fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next event that has data (keep-alive comments are skipped), or
    /// `None` when the stream ended.
    async fn next(&mut self) -> Option<(String, String)> {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some(end) = self.buf.find("\n\n") {
                    let block: String = self.buf.drain(..end + 2).collect();
                    let mut event = "message".to_owned();
                    let mut data = Vec::new();
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("event:") {
                            event = v.trim().to_owned();
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push(v.trim_start().to_owned());
                        }
                    }
                    if !data.is_empty() {
                        return Some((event, data.join("\n")));
                    }
                    continue;
                }
                match self.body.next().await {
                    Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                    Some(Err(_)) | None => return None,
                }
            }
        })
        .await
        .expect("an SSE event or the end of the stream within the timeout")
    }
}

#[tokio::test]
async fn get_stream_carries_session_messages_and_a_second_get_is_409() {
    let server = Server::start().await;
    let sid = server.initialize().await;
    let resp = server.open_get(&sid).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut events = Events::new(resp);

    let second = server.open_get(&sid).await;
    assert_eq!(second.status(), 409);

    let session = server.gateway.session(&sid).expect("registered session");
    let note = Message::notification("notifications/tools/list_changed", None);
    assert!(session.send(note, None).await, "the GET stream takes it");
    let (event, data) = events.next().await.expect("an event");
    assert_eq!(event, "message");
    let v: Value = serde_json::from_str(&data).expect("JSON data");
    assert_eq!(v["method"], json!("notifications/tools/list_changed"));

    // DELETE ends the session, and with it the stream.
    let del = server
        .http
        .delete(server.url("/mcp"))
        .header("mcp-session-id", &sid)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(del.status(), 200);
    assert!(
        events.next().await.is_none(),
        "stream ends with the session"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_gateway_request_to_the_client_is_answered_by_a_posted_response() {
    let server = Server::start().await;
    let sid = server.initialize().await;
    let mut events = Events::new(server.open_get(&sid).await);
    let session = server.gateway.session(&sid).expect("registered session");

    let asking = tokio::spawn(async move {
        session
            .request_client(
                "sampling/createMessage",
                Some(json!({"messages": [], "maxTokens": 5})),
                None,
                WAIT,
            )
            .await
    });
    let (_, data) = events.next().await.expect("the request arrives");
    let req: Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(req["method"], json!("sampling/createMessage"));
    let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": "hi"}, "model": "m"}});
    let posted = server
        .post("/mcp", &answer.to_string())
        .header("mcp-session-id", &sid)
        .send()
        .await
        .expect("POST the response");
    assert_eq!(posted.status(), 202);
    let result = tokio::time::timeout(WAIT, asking)
        .await
        .expect("resolved in time")
        .expect("task")
        .expect("the client's result");
    assert_eq!(result["content"]["text"], json!("hi"));
    server.stop().await;
}

#[tokio::test]
async fn legacy_sse_round_trip() {
    let server = Server::start().await;
    let resp = server
        .http
        .get(server.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(resp.status(), 200);
    let mut events = Events::new(resp);
    let (event, endpoint) = events.next().await.expect("endpoint event");
    assert_eq!(event, "endpoint");
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");
    let sid = endpoint
        .trim_start_matches("/messages?sessionId=")
        .to_owned();

    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let posted = server.post(&endpoint, init).send().await.expect("POST");
    assert_eq!(posted.status(), 202);
    let (event, data) = events.next().await.expect("the answer");
    assert_eq!(event, "message");
    let v: Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(v["id"], json!(1));
    assert_eq!(v["result"]["protocolVersion"], json!("2024-11-05"));

    let ping = r#"{"jsonrpc":"2.0","id":"two","method":"ping"}"#;
    assert_eq!(
        server
            .post(&endpoint, ping)
            .send()
            .await
            .expect("POST")
            .status(),
        202
    );
    let (_, data) = events.next().await.expect("the ping answer");
    assert_eq!(
        serde_json::from_str::<Value>(&data).expect("JSON")["id"],
        json!("two")
    );

    let bad = server.post(&endpoint, "{oops").send().await.expect("POST");
    assert_eq!(bad.status(), 400);
    let unknown = server
        .post("/messages?sessionId=nope", ping)
        .send()
        .await
        .expect("POST");
    assert_eq!(unknown.status(), 404);

    // Dropping the stream ends the session.
    drop(events);
    let ended = tokio::time::timeout(WAIT, async {
        while server.gateway.session(&sid).is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ended.is_ok(), "session ends when its SSE stream is dropped");
    let after = server.post(&endpoint, ping).send().await.expect("POST");
    assert_eq!(after.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_returns() {
    let server = Server::start().await;
    let sid = server.initialize().await;
    let mut get_stream = Events::new(server.open_get(&sid).await);
    let legacy = server
        .http
        .get(server.url("/sse"))
        .send()
        .await
        .expect("GET /sse");
    let mut legacy = Events::new(legacy);
    assert_eq!(legacy.next().await.expect("endpoint").0, "endpoint");
    server.shutdown.cancel();
    assert!(get_stream.next().await.is_none());
    assert!(legacy.next().await.is_none());
    server.stop().await;
}

#[tokio::test]
async fn health_over_a_socket() {
    let server = Server::start().await;
    let r = server
        .http
        .get(server.url("/health"))
        .send()
        .await
        .expect("GET /health");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.expect("JSON"),
        json!({"status": "ok"})
    );
    server.stop().await;
}
