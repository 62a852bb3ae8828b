//! An MCP client that speaks to a server over stdio (a supervised child
//! process), Streamable HTTP or legacy HTTP+SSE. The gateway uses it for its
//! upstreams; it is also usable on its own.
//!
//! One `initialize` per connection, or with [`EraPolicy::Auto`] and a
//! server that offers it, the 2026-07-28 era: no session, an envelope on
//! every request, `input_required` answers resolved through the handler.
//! Over Streamable HTTP, a server that
//! forgot the session (it restarted: 404, or the 400 of servers built on the
//! TypeScript SDK) gets a new one transparently and the request is sent
//! again; [`ClientHandler::on_session_restarted`] tells the application,
//! since what it learned in the old session may be stale. Requests take a
//! timeout and a cancellation token; a request given up on is cancelled at
//! the server with `notifications/cancelled`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use mcpyard_client::{McpClient, TransportSpec, ConnectOptions, NoopHandler};
//! use std::sync::Arc;
//! let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::connect(spec, Arc::new(NoopHandler), ConnectOptions::default()).await?;
//! let tools = client.list_all(mcpyard_proto::methods::TOOLS_LIST, "tools").await?;
//! # Ok(()) }
//! ```

mod client;
mod error;
mod handler;
mod link;
mod spec;
mod transport;

pub use client::{
    ConnectOptions, EraPolicy, McpClient, RequestOptions, LEGACY_SSE_PROTOCOL_VERSION,
    MAX_INPUT_ROUNDS, MAX_LIST_PAGES, MODERN_PROTOCOL_VERSION,
};
pub use error::ClientError;
pub use handler::{ClientHandler, NoopHandler};
pub use link::MAX_MESSAGE_BYTES;
pub use spec::{TransportSpec, MINIMAL_ENV};
pub use transport::kill_stdio_process_groups;
