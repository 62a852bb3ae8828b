//! An MCP client that speaks to a server over stdio (a supervised child
//! process), Streamable HTTP or legacy HTTP+SSE. The gateway uses it for its
//! upstreams; it is also usable on its own.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use mcpyard_client::{McpClient, TransportSpec, ConnectOptions, NoopHandler};
//! use std::sync::Arc;
//! let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::connect(spec, Arc::new(NoopHandler), ConnectOptions::default()).await?;
//! let tools = client.list_all("tools/list", "tools").await?;
//! # Ok(()) }
//! ```

mod client;
mod error;
mod handler;
mod link;
mod spec;
mod transport;

pub use client::{
    ConnectOptions, McpClient, RequestOptions, LEGACY_SSE_PROTOCOL_VERSION, MAX_LIST_PAGES,
};
pub use error::ClientError;
pub use handler::{ClientHandler, NoopHandler};
pub use link::MAX_MESSAGE_BYTES;
pub use spec::TransportSpec;
