//! Downstream transports of the mcpyard gateway.
//!
//! They only parse, authenticate and frame: every JSON-RPC request a client
//! sends is handed to [`mcpyard_gateway::Gateway::request`] together with the
//! client's session (notifications and responses to
//! [`mcpyard_gateway::Gateway::receive`]), and whatever the gateway answers
//! or emits is written back in the form the transport and the client's
//! protocol era call for.
//!
//! - Streamable HTTP on `/mcp` and `/api/v1/mcp` (sessions of 2025-03-26 to
//!   2025-11-25, optional with [`SessionMode::Optional`], and the stateless
//!   per-request era 2026-07-28), see [`router`] and [`serve_http`];
//! - legacy HTTP+SSE of 2024-11-05 on `/sse` + `/messages`, on the same router;
//! - newline-delimited JSON on stdio, see [`serve_stdio`];
//! - `GET /metrics` (Prometheus) on the same router when
//!   [`HttpOptions::metrics_route`] is set, or alone with [`serve_metrics`].

mod accept;
mod address;
mod auth;
mod batch;
mod conn;
mod flood;
mod front;
mod legacy_sse;
mod metrics;
mod options;
mod probes;
mod reply;
mod router;
mod security;
mod serve;
mod sessionless;
mod sse;
mod state;
mod stateless;
mod stdio;
mod streamable;
mod ui;

pub use address::{AddressPrefix, AddressRate};
pub use auth::{
    ApiKeySpec, AuthOptions, KeySecret, LiveKeys, OAuthOptions, DEFAULT_ALGORITHMS,
    DEFAULT_KEY_NAME,
};
pub use batch::{BatchLimits, DEFAULT_MAX_BATCH_ENTRIES, DEFAULT_MAX_BATCH_IN_FLIGHT};
/// The JWT signature algorithms [`OAuthOptions::algorithms`] names.
pub use jsonwebtoken::Algorithm as JwtAlgorithm;
pub use metrics::serve_metrics;
pub use options::{HttpOptions, SessionMode, DEFAULT_MAX_BODY_BYTES, METRICS_GROUP};
pub use router::router;
pub use serve::{serve_http, serve_http_on};
pub use stdio::{local_user, serve_stdio, serve_stdio_with, StdioOptions};
