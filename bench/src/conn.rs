//! One MCP session over one keep-alive HTTP/1.1 connection (hyper's
//! low-level client, so the load generator adds no pool or retry logic of
//! its own to what is measured).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The era this client speaks.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// Largest answer read; an echo reply is a few hundred bytes.
const MAX_ANSWER: usize = 1 << 20;

/// Why one call did not give the expected echo.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CallError {
    /// The connection failed or timed out: it is not usable any more.
    Transport(String),
    /// An HTTP status other than 200.
    Status(u16),
    /// A JSON-RPC error answer.
    Rpc(i64),
    /// An answer that is not the echo of what was sent.
    WrongAnswer(String),
}

impl CallError {
    /// Whether the connection must be replaced before the next call.
    pub fn is_fatal(&self) -> bool {
        matches!(self, CallError::Transport(_))
    }

    /// A short label to count errors by kind.
    pub fn label(&self) -> String {
        match self {
            CallError::Transport(e) => format!("transport: {e}"),
            CallError::Status(s) => format!("HTTP {s}"),
            CallError::Rpc(c) => format!("JSON-RPC error {c}"),
            CallError::WrongAnswer(w) => format!("wrong answer: {w}"),
        }
    }
}

/// One HTTP/1.1 keep-alive connection over hyper's low-level client (no
/// pool, no redirects): what every benchmark client sends on.
#[derive(Debug)]
pub(crate) struct Http1Conn {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    driver: JoinHandle<()>,
    timeout: Duration,
}

impl Drop for Http1Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Http1Conn {
    /// Connects to `addr` (`TCP_NODELAY`); `timeout` bounds the connection
    /// and, later, each exchange.
    pub(crate) async fn open(addr: SocketAddr, timeout: Duration) -> Result<Self, CallError> {
        let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| CallError::Transport("connect timed out".into()))?
            .map_err(|e| CallError::Transport(format!("connect: {e}")))?;
        tcp.set_nodelay(true)
            .map_err(|e| CallError::Transport(format!("nodelay: {e}")))?;
        let (sender, conn) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| CallError::Transport(format!("handshake: {e}")))?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let host = HeaderValue::from_str(&addr.to_string())
            .map_err(|_| CallError::Transport("bad address".into()))?;
        Ok(Self {
            sender,
            host,
            driver,
            timeout,
        })
    }

    /// A JSON POST to `path` on this connection's host.
    pub(crate) fn post_json(&self, path: &str) -> http::request::Builder {
        Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, "application/json")
    }

    /// Sends `req` and reads the whole answer (at most 1 MiB), within the
    /// timeout.
    pub(crate) async fn exchange(
        &mut self,
        req: http::request::Builder,
        body: Bytes,
    ) -> Result<(StatusCode, http::HeaderMap, Bytes), CallError> {
        let req = req
            .body(Full::new(body))
            .map_err(|e| CallError::Transport(format!("request: {e}")))?;
        let exchange = async {
            self.sender
                .ready()
                .await
                .map_err(|e| CallError::Transport(format!("not ready: {e}")))?;
            let resp = self
                .sender
                .send_request(req)
                .await
                .map_err(|e| CallError::Transport(format!("send: {e}")))?;
            let (parts, body) = resp.into_parts();
            let bytes = Limited::new(body, MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| CallError::Transport(format!("body: {e}")))?
                .to_bytes();
            Ok((parts.status, parts.headers, bytes))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Transport("timed out".into()))?
    }
}

/// Where sessions are opened, and the credential they present.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// `Authorization` sent on every request, when the server wants a key.
    pub authorization: Option<HeaderValue>,
}

impl Endpoint {
    /// An endpoint without authentication.
    pub fn open(addr: SocketAddr) -> Self {
        Endpoint {
            addr,
            authorization: None,
        }
    }

    /// An endpoint that sends `Authorization: Bearer <key>`.
    pub fn with_bearer(addr: SocketAddr, key: &str) -> anyhow::Result<Self> {
        let mut v = HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| anyhow::anyhow!("the key is not a valid header value"))?;
        v.set_sensitive(true);
        Ok(Endpoint {
            addr,
            authorization: Some(v),
        })
    }
}

/// A connected, initialised MCP session.
#[derive(Debug)]
pub struct McpConn {
    http: Http1Conn,
    authorization: Option<HeaderValue>,
    session: Option<HeaderValue>,
    next_id: u64,
}

#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(default)]
    id: Option<u64>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow, default)]
    content: Vec<Content<'a>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(default)]
    text: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ToolList {
    tools: Vec<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    name: String,
}

impl McpConn {
    /// Connects and runs the MCP handshake: `initialize`, then
    /// `notifications/initialized`, keeping the session id.
    pub async fn open(addr: SocketAddr, timeout: Duration) -> Result<Self, CallError> {
        Self::open_at(&Endpoint::open(addr), timeout).await
    }

    /// [`McpConn::open`] presenting the endpoint's credential, if any.
    pub async fn open_at(endpoint: &Endpoint, timeout: Duration) -> Result<Self, CallError> {
        let mut c = McpConn {
            http: Http1Conn::open(endpoint.addr, timeout).await?,
            authorization: endpoint.authorization.clone(),
            session: None,
            next_id: 0,
        };
        c.initialize().await?;
        Ok(c)
    }

    async fn initialize(&mut self) -> Result<(), CallError> {
        let id = self.id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcpyard-bench","version":"{}"}}}}}}"#,
            env!("CARGO_PKG_VERSION")
        );
        let (status, headers, bytes) = self.post(body.into()).await?;
        if status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        self.session = headers.get("mcp-session-id").cloned();
        answer_for(&bytes, id, headers.get(header::CONTENT_TYPE))?;
        let (status, _, _) = self
            .post(Bytes::from_static(
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ))
            .await?;
        if status != StatusCode::ACCEPTED && status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        Ok(())
    }

    /// Sends request `method` with `params` (an encoded JSON object) and
    /// returns the answer's raw `result`.
    pub async fn request(&mut self, method: &str, params: &str) -> Result<String, CallError> {
        let id = self.id();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{params}}}"#,
            serde_json::Value::from(method)
        );
        let (status, headers, bytes) = self.post(body.into()).await?;
        if status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        answer_for(&bytes, id, headers.get(header::CONTENT_TYPE))
    }

    /// The names from one `tools/list` page.
    pub async fn list_tools(&mut self) -> Result<Vec<String>, CallError> {
        let result = self.request("tools/list", "{}").await?;
        let list: ToolList = serde_json::from_str(&result)
            .map_err(|e| CallError::WrongAnswer(format!("tools/list result: {e}")))?;
        Ok(list.tools.into_iter().map(|t| t.name).collect())
    }

    /// Calls `echo` with `message` and checks the answer is that message.
    pub async fn call_echo(&mut self, message: &str) -> Result<(), CallError> {
        let id = self.id();
        // `message` is made by the bench from digits and letters: no escaping needed.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{message}"}}}}}}"#
        );
        let (status, headers, bytes) = self.post(body.into()).await?;
        if status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        let result = answer_for(&bytes, id, headers.get(header::CONTENT_TYPE))?;
        let call: CallResult<'_> = serde_json::from_str(&result)
            .map_err(|e| CallError::WrongAnswer(format!("not a tool result: {e}")))?;
        if call.is_error {
            return Err(CallError::WrongAnswer("isError: true".into()));
        }
        match call.content.as_slice() {
            [Content {
                kind: "text",
                text: Some(t),
            }] if t == message => Ok(()),
            _ => Err(CallError::WrongAnswer("not the echoed message".into())),
        }
    }

    /// Calls tool `name` with `arguments` (an encoded JSON object) and
    /// returns the raw `result`, which must not be an `isError` result.
    pub async fn call_tool(&mut self, name: &str, arguments: &[u8]) -> Result<String, CallError> {
        let id = self.id();
        let head = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":"#,
            serde_json::Value::from(name)
        );
        let mut body = Vec::with_capacity(head.len() + arguments.len() + 2);
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(arguments);
        body.extend_from_slice(b"}}");
        let (status, headers, bytes) = self.post(body.into()).await?;
        if status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        let result = answer_for(&bytes, id, headers.get(header::CONTENT_TYPE))?;
        let call: CallResult<'_> = serde_json::from_str(&result)
            .map_err(|e| CallError::WrongAnswer(format!("not a tool result: {e}")))?;
        if call.is_error {
            let text = call
                .content
                .iter()
                .filter_map(|c| c.text.as_deref())
                .collect::<Vec<_>>()
                .join(" ");
            return Err(CallError::WrongAnswer(format!("isError: true: {text}")));
        }
        Ok(result)
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    async fn post(
        &mut self,
        body: Bytes,
    ) -> Result<(StatusCode, http::HeaderMap, Bytes), CallError> {
        let mut req = self
            .http
            .post_json("/mcp")
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if let Some(a) = &self.authorization {
            req = req.header(header::AUTHORIZATION, a.clone());
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s.clone());
        }
        self.http.exchange(req, body).await
    }
}

/// The raw `result` of the answer to `id`, from a JSON body or from the
/// `data:` lines of an event stream.
fn answer_for(
    body: &[u8],
    id: u64,
    content_type: Option<&HeaderValue>,
) -> Result<String, CallError> {
    let is_sse = content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        return result_of(body, id);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| CallError::WrongAnswer("event stream is not UTF-8".into()))?;
    // Events are separated by blank lines; an event's data is its `data:`
    // lines joined by newlines.
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        let data = data.join("\n");
        if let Ok(r) = result_of(data.as_bytes(), id) {
            return Ok(r);
        }
    }
    Err(CallError::WrongAnswer(
        "no answer in the event stream".into(),
    ))
}

fn result_of(body: &[u8], id: u64) -> Result<String, CallError> {
    let a: Answer<'_> = serde_json::from_slice(body)
        .map_err(|e| CallError::WrongAnswer(format!("not a JSON-RPC answer: {e}")))?;
    if let Some(e) = a.error {
        return Err(CallError::Rpc(e.code));
    }
    if a.id != Some(id) {
        return Err(CallError::WrongAnswer("answer to another id".into()));
    }
    a.result
        .map(|r| r.get().to_owned())
        .ok_or_else(|| CallError::WrongAnswer("no result".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_answer_from_an_event_stream() {
        let body = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":1}}\n\n";
        let ct = HeaderValue::from_static("text/event-stream");
        assert_eq!(answer_for(body, 7, Some(&ct)).unwrap(), r#"{"ok":1}"#);
        assert!(answer_for(body, 8, Some(&ct)).is_err());
    }

    #[test]
    fn an_error_answer_is_reported_with_its_code() {
        let body = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(answer_for(body, 3, None), Err(CallError::Rpc(-32602)));
    }
}
