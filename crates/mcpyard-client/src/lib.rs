//! An MCP client that speaks to a server over stdio (a supervised child
//! process), Streamable HTTP or legacy HTTP+SSE. The gateway uses it for its
//! upstreams; it is also usable on its own.
//!
//! # Connecting
//!
//! A [`TransportSpec`] says where the server is; [`McpClient::builder`]
//! takes it with the handlers and settings, and [`ClientBuilder::connect`]
//! (or [`McpClient::connect`], with one [`ClientHandler`] for everything)
//! opens the transport and runs the handshake, bounded by
//! [`ConnectOptions::connect_timeout`].
//!
//! A stdio server is a child process. It inherits only [`MINIMAL_ENV`] from
//! the parent, so that secrets in the parent's environment do not leak to
//! it: name anything else it needs in `inherit_env`, or set it in `env`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//! use mcpyard_client::{McpClient, TransportSpec};
//!
//! let spec = TransportSpec::Stdio {
//!     command: "npx".into(),
//!     args: vec!["-y".into(), "@modelcontextprotocol/server-everything".into()],
//!     env: BTreeMap::new(),
//!     inherit_env: vec![],
//!     cwd: None,
//! };
//! let client = McpClient::builder(spec)
//!     .request_timeout(Duration::from_secs(60))
//!     .connect()
//!     .await?;
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
//! # The life of a client
//!
//! A client is [`ClientState::Disconnected`] when built,
//! [`ClientState::Initializing`] while [`McpClient::open`] runs the
//! handshake, [`ClientState::Ready`] once it succeeded and
//! [`ClientState::Closed`] for good once the connection ended
//! ([`McpClient::state`] says which). A request made in any state but
//! `Ready` fails at once with [`ClientError::NotReady`], which names the
//! state; one in flight when the connection dies fails with
//! [`ClientError::Closed`]. [`McpClient::connect`] and
//! [`ClientBuilder::connect`] build and open in one step.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use mcpyard_client::{ClientState, McpClient, TransportSpec};
//!
//! let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::builder(spec).build();
//! assert_eq!(client.state(), ClientState::Disconnected);
//! client.open().await?;
//! assert_eq!(client.state(), ClientState::Ready);
//! client.shutdown().await;
//! assert_eq!(client.state(), ClientState::Closed);
//! # Ok(()) }
//! ```
//!
//! One `initialize` per connection, or the 2026-07-28 era: no session, an
//! envelope on every request, `input_required` answers resolved through the
//! handlers. The default policy ([`EraPolicy::HandshakeFirst`]) tries
//! `initialize` and turns to `server/discover` when the server refuses it
//! the ways a server of the new era alone does (-32022, -32020, -32601, HTTP
//! 404 or 405); [`EraPolicy::Auto`] asks with `server/discover` first. In
//! that era over Streamable HTTP every request carries `Mcp-Method` (and
//! `Mcp-Name`), a tool call mirrors the arguments its input schema marks
//! with `x-mcp-header` into `Mcp-Param-*` headers, and a tool whose marks are
//! invalid is left out of `tools/list` and never called.
//!
//! Over Streamable HTTP the connection heals itself (see
//! [`McpClient::open`] for the whole policy): a server that forgot the
//! session (it restarted: 404, or the 400 of servers built on the
//! TypeScript SDK) gets a new one transparently and the request is sent
//! again, [`ClientHandler::on_session_restarted`] telling the application,
//! since what it learned in the old session may be stale; a response stream
//! that breaks or that the server closes before the answer (SSE polling) is
//! resumed with GET and `Last-Event-ID` when the server numbered its events,
//! after the server's `retry` hint (at most 5 s), and a resumed stream that
//! delivers no message for 15 s fails the request; the server's own stream is reopened with a backoff of 1 s
//! doubling to 30 s. A stdio child that exits or a legacy SSE stream that
//! ends closes the client: build a new one.
//!
//! # Calling the server
//!
//! Results are the server's JSON as it sent it: the crate does not model
//! every result type, so a server newer than the crate still works. Every
//! MCP request has its method ([`McpClient::list_tools`],
//! [`McpClient::call_tool`], [`McpClient::read_resource`],
//! [`McpClient::subscribe`], [`McpClient::get_prompt`],
//! [`McpClient::complete`], [`McpClient::call_tool_as_task`] and
//! [`McpClient::task_result`]...); [`McpClient::request`] sends any other.
//! Lists follow `nextCursor` through every page.
//!
//! ```no_run
//! # async fn demo(client: mcpyard_client::McpClient) -> Result<(), mcpyard_client::ClientError> {
//! use mcpyard_client::RequestOptions;
//! use serde_json::json;
//!
//! for tool in client.list_tools().await? {
//!     println!("{}", tool["name"]);
//! }
//! let result = client
//!     .call_tool("echo", json!({"message": "hi"}), RequestOptions::default())
//!     .await?;
//! println!("{}", result["content"]);
//! let prompt = client
//!     .get_prompt("simple_prompt", json!({}), RequestOptions::default())
//!     .await?;
//! println!("{}", prompt["messages"]);
//! # Ok(()) }
//! ```
//!
//! # Timeouts, cancellation and progress
//!
//! A request waits as long as [`RequestOptions::timeout`] allows, else the
//! client's default ([`ClientBuilder::request_timeout`]; none: as long as
//! the connection lives), and stops early when its
//! [`RequestOptions::cancel`] token is cancelled. Either way the server is
//! told with `notifications/cancelled`, so it can stop the work, and the
//! call fails with [`ClientError::Timeout`] or [`ClientError::Cancelled`].
//! With a progress callback the request carries a `progressToken` and the
//! server's `notifications/progress` for it reach the callback.
//!
//! ```no_run
//! # async fn demo(client: mcpyard_client::McpClient) -> Result<(), mcpyard_client::ClientError> {
//! use std::time::Duration;
//! use mcpyard_client::{ClientError, RequestOptions};
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//!
//! let cancel = CancellationToken::new();
//! let options = RequestOptions::default()
//!     .with_timeout(Duration::from_secs(10))
//!     .with_cancel(cancel.clone())
//!     .with_progress(|p| println!("{} of {:?}", p.progress, p.total));
//! // Elsewhere, `cancel.cancel()` gives up on the request.
//! let arguments = json!({"duration": 30, "steps": 5});
//! match client.call_tool("trigger-long-running-operation", arguments, options).await {
//!     Ok(result) => println!("{result}"),
//!     Err(ClientError::Timeout(after)) => println!("no answer within {after:?}"),
//!     Err(ClientError::Cancelled) => println!("given up"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! # Handling server requests
//!
//! What the server asks of the client goes to the handlers given to the
//! [`ClientBuilder`], and the client advertises a capability exactly when
//! a handler for it is set: [`ClientBuilder::roots`] (`roots/list`),
//! [`ClientBuilder::elicitation`] (`elicitation/create`) and
//! [`ClientBuilder::sampling`] (`sampling/createMessage`, under a
//! [`SamplingPolicy`]: allowed models, a token cap, and a reviewer that
//! sees a [`SamplingSummary`] without the text before the [`Sampler`]
//! sees the request; see the [`sampling`] module). Notifications (log
//! messages, list changes, progress without a callback) and any other
//! request reach the [`ClientHandler`] ([`NoopHandler`] by default: pings
//! answered, the rest refused).
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use mcpyard_client::{ClientHandler, ElicitationHandler, McpClient, NoopHandler, Root, TransportSpec};
//! use mcpyard_proto::{ErrorObject, RequestId};
//! use serde_json::{json, Value};
//!
//! struct Decline;
//!
//! #[async_trait]
//! impl ElicitationHandler for Decline {
//!     async fn elicit(&self, _params: Value, _related: Option<RequestId>) -> Result<Value, ErrorObject> {
//!         Ok(json!({"action": "decline"}))
//!     }
//! }
//!
//! struct Logs;
//!
//! #[async_trait]
//! impl ClientHandler for Logs {
//!     async fn on_request(&self, method: &str, params: Option<Value>, related: Option<RequestId>)
//!         -> Result<Value, ErrorObject> {
//!         NoopHandler.on_request(method, params, related).await
//!     }
//!
//!     async fn on_notification(&self, method: &str, params: Option<Value>, _: Option<RequestId>) {
//!         // Keep it quick: later answers wait for it (see the trait's docs).
//!         println!("{method}: {params:?}");
//!     }
//! }
//!
//! let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::builder(spec)
//!     .handler(Arc::new(Logs))
//!     .roots(vec![Root::new("file:///srv/project").named("project")])
//!     .elicitation(Decline)
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod client;
mod connection;
mod error;
mod handler;
mod link;
pub mod oauth;
mod options;
pub mod sampling;
/// The `text/event-stream` decoder the transports use, with its size cap,
/// for other readers of event streams.
pub mod sse {
    pub use crate::transport::sse_decoder::{EventTooLarge, SseDecoder, SseEvent};
}
mod spec;
mod state;
mod tool_headers;
mod transport;

pub use client::{ClientBuilder, McpClient};
pub use error::ClientError;
pub use handler::{ClientHandler, ElicitationHandler, NoopHandler, Root, RootsHandler};
pub use link::MAX_MESSAGE_BYTES;
pub use options::{
    ConnectOptions, EraPolicy, Progress, ProgressCallback, RequestOptions,
    LEGACY_SSE_PROTOCOL_VERSION, MAX_INPUT_ROUNDS, MAX_LIST_PAGES, MODERN_PROTOCOL_VERSION,
};
pub use sampling::{
    Review, Sampler, SamplingPolicy, SamplingRequest, SamplingReviewer, SamplingSummary,
};
pub use spec::{TransportSpec, MINIMAL_ENV};
pub use state::ClientState;
pub use transport::{kill_stdio_process_groups, HttpAuth, Refusal};
