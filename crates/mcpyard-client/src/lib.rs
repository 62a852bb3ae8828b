//! An MCP client that speaks to a server over stdio (a supervised child
//! process), Streamable HTTP or legacy HTTP+SSE. The gateway uses it for its
//! upstreams; it is also usable on its own.
//!
//! # Connecting
//!
//! A [`TransportSpec`] says where the server is; [`McpClient::connect`]
//! opens the transport and runs the handshake, bounded by
//! [`ConnectOptions::connect_timeout`]. The [`ClientHandler`] answers what the
//! server sends unasked; [`NoopHandler`] answers pings and refuses the rest.
//!
//! A stdio server is a child process. It inherits only [`MINIMAL_ENV`] from
//! the parent, so that secrets in the parent's environment do not leak to
//! it: name anything else it needs in `inherit_env`, or set it in `env`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//! use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, TransportSpec};
//!
//! let spec = TransportSpec::Stdio {
//!     command: "npx".into(),
//!     args: vec!["-y".into(), "@modelcontextprotocol/server-everything".into()],
//!     env: BTreeMap::new(),
//!     inherit_env: vec![],
//!     cwd: None,
//! };
//! let client = McpClient::connect(spec, Arc::new(NoopHandler), ConnectOptions::default()).await?;
//! println!("{}", client.initialize_result()["serverInfo"]);
//! client.shutdown().await; // stdin closed, then the process group killed and reaped
//! # Ok(()) }
//! ```
//!
//! Streamable HTTP (protocol 2025-03-26 and later) and legacy HTTP+SSE
//! (2024-11-05) take a URL and extra headers (an `Authorization` header, for
//! instance); header values never appear in [`TransportSpec::describe`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use std::sync::Arc;
//! use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, TransportSpec};
//!
//! let http = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::connect(http, Arc::new(NoopHandler), ConnectOptions::default()).await?;
//! client.shutdown().await; // DELETE of the session
//!
//! let sse = TransportSpec::Sse { url: "http://127.0.0.1:3001/sse".into(), headers: vec![] };
//! let client = McpClient::connect(sse, Arc::new(NoopHandler), ConnectOptions::default()).await?;
//! client.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! One `initialize` per connection, or with [`EraPolicy::Auto`] and a
//! server that offers it, the 2026-07-28 era: no session, an envelope on
//! every request, `input_required` answers resolved through the handler.
//! Over Streamable HTTP, a server that
//! forgot the session (it restarted: 404, or the 400 of servers built on the
//! TypeScript SDK) gets a new one transparently and the request is sent
//! again; [`ClientHandler::on_session_restarted`] tells the application,
//! since what it learned in the old session may be stale.
//!
//! # Listing and calling tools
//!
//! Results are the server's JSON as it sent it: the crate does not model
//! every result type, so a server newer than the crate still works.
//! [`McpClient::list_all`] follows `nextCursor` through every page.
//!
//! ```no_run
//! # async fn demo(client: mcpyard_client::McpClient) -> Result<(), mcpyard_client::ClientError> {
//! use mcpyard_client::RequestOptions;
//! use mcpyard_proto::methods;
//! use serde_json::json;
//!
//! let tools = client.list_all(methods::TOOLS_LIST, "tools").await?;
//! for tool in &tools {
//!     println!("{}", tool["name"]);
//! }
//! let result = client
//!     .request(
//!         methods::TOOLS_CALL,
//!         Some(json!({"name": "echo", "arguments": {"message": "hi"}})),
//!         RequestOptions::default(),
//!     )
//!     .await?;
//! println!("{}", result["content"]);
//! # Ok(()) }
//! ```
//!
//! # Handling server requests
//!
//! Sampling, elicitation and roots requests, and every notification
//! (progress, log messages, list changes), reach the [`ClientHandler`]. Only
//! advertise in [`ConnectOptions::capabilities`] what the handler answers.
//!
//! ```no_run
//! use async_trait::async_trait;
//! use mcpyard_client::ClientHandler;
//! use mcpyard_proto::{methods, ErrorObject, RequestId};
//! use serde_json::{json, Value};
//!
//! struct Roots;
//!
//! #[async_trait]
//! impl ClientHandler for Roots {
//!     async fn on_request(
//!         &self,
//!         method: &str,
//!         _params: Option<Value>,
//!         _related: Option<RequestId>,
//!     ) -> Result<Value, ErrorObject> {
//!         match method {
//!             methods::PING => Ok(json!({})),
//!             methods::ROOTS_LIST => Ok(json!({"roots": [{"uri": "file:///srv/project"}]})),
//!             other => Err(ErrorObject::method_not_found(other)),
//!         }
//!     }
//!
//!     async fn on_notification(&self, method: &str, params: Option<Value>, _: Option<RequestId>) {
//!         // Keep it quick: later answers wait for it (see the trait's docs).
//!         println!("{method}: {params:?}");
//!     }
//! }
//! ```
//!
//! # Timeouts and cancellation
//!
//! A request waits as long as [`RequestOptions::timeout`] allows (none: as
//! long as the connection lives) and stops early when its
//! [`RequestOptions::cancel`] token is cancelled. Either way the server is
//! told with `notifications/cancelled`, so it can stop the work, and the
//! call fails with [`ClientError::Timeout`] or [`ClientError::Cancelled`].
//!
//! ```no_run
//! # async fn demo(client: mcpyard_client::McpClient) -> Result<(), mcpyard_client::ClientError> {
//! use std::time::Duration;
//! use mcpyard_client::{ClientError, RequestOptions};
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! let cancel = CancellationToken::new();
//! let options = RequestOptions { timeout: Some(Duration::from_secs(10)), cancel: Some(cancel.clone()) };
//! // Elsewhere, `cancel.cancel()` gives up on the request.
//! let params = json!({"name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 5}});
//! match client.request("tools/call", Some(params), options).await {
//!     Ok(result) => println!("{result}"),
//!     Err(ClientError::Timeout(after)) => println!("no answer within {after:?}"),
//!     Err(ClientError::Cancelled) => println!("given up"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod client;
mod error;
mod handler;
mod link;
pub mod oauth;
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
pub use transport::{kill_stdio_process_groups, HttpAuth, Refusal};
