//! The transports an [`McpClient`](crate::McpClient) can run over, behind one
//! enum: each reads messages into the [`Link`] and writes what the client
//! sends. Adding a transport means one file here and one arm below.

mod auth;
mod http_common;
mod http_response;
mod legacy_sse;
mod origin_pool;
mod outgoing;
mod scope;
pub(crate) mod sse_decoder;
mod stdin_pipe;
mod stdio;
mod streamable_http;

use std::sync::Arc;
use std::time::Duration;

use mcpyard_proto::Message;
use serde_json::Value;

pub use auth::{HttpAuth, Refusal};
#[cfg(feature = "oauth")]
pub(crate) use http_response::error_text;
pub(crate) use scope::SendScope;
pub use stdio::kill_stdio_process_groups;
pub(crate) use streamable_http::encode_header_value;

use crate::link::Link;
use crate::{ClientError, TransportSpec};

/// An open transport.
#[derive(Debug)]
pub(crate) enum Transport {
    Stdio(stdio::StdioTransport),
    StreamableHttp(streamable_http::StreamableHttpTransport),
    Sse(legacy_sse::LegacySseTransport),
}

impl Transport {
    /// Opens the transport (spawns the child, or opens the SSE stream and
    /// waits for its endpoint). The handshake is the client's business.
    pub(crate) async fn open(
        spec: TransportSpec,
        link: Link,
        connect_timeout: Duration,
        auth: Option<Arc<dyn HttpAuth>>,
    ) -> Result<Self, ClientError> {
        match spec {
            TransportSpec::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => Ok(Transport::Stdio(stdio::StdioTransport::spawn(
                &command,
                &args,
                &env,
                &inherit_env,
                cwd.as_deref(),
                link,
            )?)),
            TransportSpec::StreamableHttp { url, headers } => Ok(Transport::StreamableHttp(
                streamable_http::StreamableHttpTransport::new(
                    &url,
                    &headers,
                    connect_timeout,
                    link,
                    auth,
                )?,
            )),
            TransportSpec::Sse { url, headers } => Ok(Transport::Sse(
                legacy_sse::LegacySseTransport::open(&url, &headers, connect_timeout, link, auth)
                    .await?,
            )),
        }
    }

    /// Sends one message. `scope` is cancelled when the caller no longer
    /// waits for anything this message causes (its request finished), so a
    /// response stream opened for it can be dropped.
    ///
    /// Returns the answer itself when it came back as the plain body of the
    /// exchange and nothing else came with it (Streamable HTTP's usual case):
    /// the caller takes it directly instead of through the dispatcher.
    pub(crate) async fn send(
        &self,
        message: &Message,
        scope: &SendScope<'_>,
    ) -> Result<Option<Message>, ClientError> {
        self.send_with(message, scope, &[]).await
    }

    /// [`Transport::send`] with `headers` added to the HTTP request that
    /// carries the message (a tool call's `Mcp-Param-*`); other transports
    /// have no headers to carry them.
    pub(crate) async fn send_with(
        &self,
        message: &Message,
        scope: &SendScope<'_>,
        headers: &[(String, String)],
    ) -> Result<Option<Message>, ClientError> {
        match self {
            Transport::Stdio(t) => t.send(message).await.map(|()| None),
            Transport::StreamableHttp(t) => t.send(message, scope, headers).await,
            Transport::Sse(t) => t.send(message).await.map(|()| None),
        }
    }

    /// Called once `initialize` succeeded, with its result.
    pub(crate) fn initialized(&self, result: &Value) {
        if let Transport::StreamableHttp(t) = self {
            t.initialized(result);
        }
    }

    /// Streamable HTTP: in the 2026-07-28 era it carries no client
    /// notifications (abandoning a request's POST is its cancellation).
    pub(crate) fn is_streamable_http(&self) -> bool {
        matches!(self, Transport::StreamableHttp(_))
    }

    /// The child's pid (also its process group id), for stdio.
    pub(crate) fn process_id(&self) -> Option<u32> {
        match self {
            Transport::Stdio(t) => t.process_id(),
            _ => None,
        }
    }

    /// Ends the connection for good (see [`McpClient::shutdown`](crate::McpClient::shutdown)).
    pub(crate) async fn shutdown(&self) {
        match self {
            Transport::Stdio(t) => t.shutdown().await,
            Transport::StreamableHttp(t) => t.shutdown().await,
            Transport::Sse(t) => t.shutdown().await,
        }
    }
}
