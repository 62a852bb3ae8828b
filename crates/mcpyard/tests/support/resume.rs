//! The GET stream of a Streamable HTTP session read event by event, and
//! opened again with `Last-Event-ID`: the resumption tests' helpers.

#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one event may take to arrive.
const EVENT_WITHIN: Duration = Duration::from_secs(10);

/// A JSON-RPC message straight to `url` in a 2025-11-25 session (when
/// given); the HTTP status, the session id issued and the JSON answer.
pub async fn rpc(url: &str, session: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .timeout(Duration::from_secs(30))
        .json(&body);
    if let Some(id) = session {
        request = request.header("Mcp-Session-Id", id);
    }
    let answer = request.send().await.expect("an answer");
    let status = answer.status().as_u16();
    let issued = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = answer.text().await.unwrap_or_default();
    let json = messages(&text).pop().unwrap_or_default();
    (status, issued, json)
}

/// The messages of a POST's answer: its JSON, or each event of its stream.
pub fn messages(text: &str) -> Vec<Value> {
    match serde_json::from_str(text) {
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    }
}

/// Opens a 2025-11-25 session at `url`; its id.
pub async fn open_session(url: &str) -> String {
    open_session_with(url, json!({})).await
}

/// Opens a 2025-11-25 session at `url` whose client declares
/// `capabilities`; its id.
pub async fn open_session_with(url: &str, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "resume-test", "version": "1"}}});
    let (status, session, answer) = rpc(url, None, init).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(rpc(url, Some(&session), initialized).await.0, 202);
    session
}

/// Calls `watch__touch` (the misbehaving server in `watching` mode): an
/// update for each subscribed resource goes to the session's stream.
pub async fn touch(url: &str, session: &str, id: u64) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "watch__touch", "arguments": {}}});
    let (status, _, answer) = rpc(url, Some(session), call).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["result"]["content"].is_array(), "{answer}");
}

/// Subscribes `session` to `uri` through `url`, once its upstream listed
/// its tools.
pub async fn subscribe(url: &str, session: &str, uri: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                          "params": {"uri": uri}});
        let (status, _, answer) = rpc(url, Some(session), call).await;
        if status == 200 && answer.get("result").is_some() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "subscribed within 30 s: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One session's GET stream, read an event at a time.
pub struct Stream {
    response: reqwest::Response,
    read: String,
}

impl Stream {
    /// Opens the GET stream of `session` at `url`, resuming after `last`
    /// when given. The stream just dropped may not be seen closed yet
    /// (409): opening is tried again for a few seconds.
    pub async fn open(url: &str, session: &str, last: Option<&str>) -> Stream {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut request = reqwest::Client::new()
                .get(url)
                .header("Accept", "text/event-stream")
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
            if let Some(last) = last {
                request = request.header("Last-Event-ID", last);
            }
            let response = tokio::time::timeout(Duration::from_secs(10), request.send())
                .await
                .expect("the GET stream answers within 10 s")
                .expect("the GET stream opens");
            match response.status().as_u16() {
                200 => {
                    return Stream {
                        response,
                        read: String::new(),
                    }
                }
                409 if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                status => panic!("the GET stream opened with {status}"),
            }
        }
    }

    /// The next event with an id: (id, its JSON), within 10 s.
    pub async fn next(&mut self) -> (String, Value) {
        let deadline = Instant::now() + EVENT_WITHIN;
        loop {
            while let Some(end) = self.read.find("\n\n") {
                let block: String = self.read.drain(..end + 2).collect();
                let field = |name: &str| {
                    block.lines().find_map(|l| {
                        l.strip_prefix(name)
                            .and_then(|v| v.strip_prefix(':'))
                            .map(|v| v.trim().to_owned())
                    })
                };
                if let (Some(id), Some(data)) = (field("id"), field("data")) {
                    let json = serde_json::from_str(&data).expect("an event's data is JSON");
                    return (id, json);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let chunk = tokio::time::timeout(left, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("an event within {EVENT_WITHIN:?}; read: {}", self.read))
                .expect("the stream is read")
                .expect("the stream stays open");
            self.read += &String::from_utf8_lossy(&chunk).replace("\r\n", "\n");
        }
    }

    /// Whether an event with an id arrives within `wait`.
    pub async fn quiet_for(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.next()).await.is_err()
    }
}
