//! Client errors, by who is at fault.

use std::time::Duration;

use mcpyard_proto::ErrorObject;

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
    /// The transport is closed; no more requests can be sent.
    #[error("connection closed")]
    Closed,
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
    /// Authorization toward the server failed (OAuth); see
    /// [`OAuthError::LoginRequired`](crate::oauth::OAuthError::LoginRequired)
    /// for the case where a person must log in again.
    #[error("authorization: {0}")]
    Auth(#[from] crate::oauth::OAuthError),
}
