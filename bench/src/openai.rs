//! The direct path to an OpenAI-compatible server: one keep-alive HTTP/1.1
//! connection (hyper's low-level client, as for MCP in [`crate::conn`]),
//! `POST /v1/chat/completions` with a JSON body, the answer checked to be
//! a chat completion.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{header, StatusCode};
use serde_json::Value;

use crate::conn::{CallError, Http1Conn};

/// One connection to an OpenAI-compatible server.
#[derive(Debug)]
pub struct OpenAiConn {
    http: Http1Conn,
}

impl OpenAiConn {
    /// Connects to `addr`.
    pub async fn open(addr: SocketAddr, timeout: Duration) -> Result<Self, CallError> {
        Ok(OpenAiConn {
            http: Http1Conn::open(addr, timeout).await?,
        })
    }

    /// Posts a chat completion request (`body`, encoded JSON) and returns
    /// the answer, checked to have a `choices[0].message`.
    pub async fn chat(&mut self, body: Bytes) -> Result<Value, CallError> {
        let req = self
            .http
            .post_json("/v1/chat/completions")
            .header(header::ACCEPT, "application/json");
        let (status, _, bytes) = self.http.exchange(req, body).await?;
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
