//! Client errors, by who is at fault.

use std::time::Duration;

use mcpyard_proto::ErrorObject;

use crate::ClientState;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The child process could not be started.
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The program that was to run.
        command: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The connection failed or the peer went away.
    #[error("transport: {0}")]
    Transport(String),
    /// The connection closed while the request was waiting for its answer.
    #[error("connection closed")]
    Closed,
    /// The client is not [`ClientState::Ready`]: a request made before
    /// [`McpClient::open`](crate::McpClient::open) finished, or after the
    /// connection closed.
    #[error("the client is not ready: it is {state}")]
    NotReady {
        /// The state the client was in.
        state: ClientState,
    },
    /// An HTTP status the transport cannot handle.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body (at most 1 KiB).
        body: String,
    },
    /// The peer broke the protocol (garbage on stdout, bad handshake...).
    #[error("protocol: {0}")]
    Protocol(String),
    /// No answer in time; a `notifications/cancelled` was sent.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The caller cancelled; a `notifications/cancelled` was sent.
    #[error("cancelled")]
    Cancelled,
    /// The server answered with a JSON-RPC error.
    #[error("{0}")]
    Rpc(ErrorObject),
}
