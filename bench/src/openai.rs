//! The direct path to an OpenAI-compatible server: one keep-alive HTTP/1.1
//! connection (hyper's low-level client, as for MCP in [`crate::conn`]),
//! `POST /v1/chat/completions` with a JSON body, the answer checked to be
//! a chat completion.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::conn::CallError;

/// Largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// One connection to an OpenAI-compatible server.
#[derive(Debug)]
pub struct OpenAiConn {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    driver: JoinHandle<()>,
    timeout: Duration,
}

impl Drop for OpenAiConn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl OpenAiConn {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr, timeout: Duration) -> Result<Self, CallError> {
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
        Ok(OpenAiConn {
            sender,
            host,
            driver,
            timeout,
        })
    }

    /// Posts a chat completion request (`body`, encoded JSON) and returns
    /// the answer, checked to have a `choices[0].message`.
    pub async fn chat(&mut self, body: Bytes) -> Result<Value, CallError> {
        let req = Request::builder()
            .method(Method::POST)
            .uri("/v1/chat/completions")
            .header(header::HOST, self.host.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
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
            Ok::<_, CallError>((parts.status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Transport("timed out".into()))??;
        if status != StatusCode::OK {
            return Err(CallError::Status(status.as_u16()));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| CallError::WrongAnswer(format!("not JSON: {e}")))?;
        if answer.pointer("/choices/0/message").is_none() {
            return Err(CallError::WrongAnswer(
                "no choices[0].message in the answer".into(),
            ));
        }
        Ok(answer)
    }
}

/// The assistant's text in a chat completion (empty when there is none).
pub fn content_of(answer: &Value) -> &str {
    answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or("")
}
