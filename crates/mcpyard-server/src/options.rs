//! Settings of the HTTP transports, with the safe defaults in one place.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::address::{AddressPrefix, AddressRate};
use crate::auth::AuthOptions;
use crate::batch::BatchLimits;

/// How the HTTP transports listen and whom they let in.
#[derive(Clone)]
pub struct HttpOptions {
    /// Address to bind. Loopback by default: a gateway that reaches local
    /// processes must not be open to the network unless asked to be.
    pub listen: SocketAddr,
    /// API keys and OAuth: when either is set, every route except
    /// `GET /health` (and the OAuth metadata) needs
    /// `Authorization: Bearer <key or access token>`.
    pub auth: AuthOptions,
    /// Extra `Host` values accepted besides loopback names (`name` or
    /// `name:port`). When bound to a non-loopback address and this is empty,
    /// any `Host` is accepted.
    pub allowed_hosts: Vec<String>,
    /// Extra `Origin` values accepted besides loopback origins
    /// (`https://app.example`); `*` accepts any origin.
    pub allowed_origins: Vec<String>,
    /// Largest request body accepted; bigger bodies get 413.
    pub max_body_bytes: usize,
    /// Caps on JSON-RPC batches (the stdio door takes the same value).
    pub batch: BatchLimits,
    /// Interval of keep-alive comments on SSE streams, so proxies and
    /// clients with idle-read timeouts keep them open.
    pub sse_keep_alive: Duration,
    /// Serve Streamable HTTP on `/mcp`; when off, `/mcp` answers 403.
    pub streamable: bool,
    /// Serve the 2024-11-05 HTTP+SSE transport on `/sse` and `/messages`;
    /// when off, those answer 403.
    pub legacy_sse: bool,
    /// How long `serve_http` waits for open connections after shutdown is
    /// requested before it returns anyway.
    pub shutdown_grace: Duration,
    /// Open connections at most; past it, new ones wait in the listen
    /// backlog until one closes.
    pub max_connections: usize,
    /// How long a client may take to send a request head, counted from
    /// its connection or from the first byte of a later request.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request body, counted from the
    /// end of its head.
    pub body_read_timeout: Duration,
    /// How long a connection may sit between requests before it is closed.
    /// Streams being answered (SSE) are not idle, however quiet.
    pub keep_alive_timeout: Duration,
    /// Requests one client may send, a client being every address of one
    /// [`HttpOptions::address_prefix`]; past it, 429 with `Retry-After`.
    /// `None`: no limit.
    pub per_address: Option<AddressRate>,
    /// Which addresses are one client for `per_address`: /32 for IPv4 and
    /// /64 for IPv6 by default.
    pub address_prefix: AddressPrefix,
    /// Requests all clients together may send; past it, 429 with
    /// `Retry-After` for everyone. `None`: no limit.
    pub total_rate: Option<AddressRate>,
    /// Serve `GET /metrics` (the gateway's Prometheus metrics) here, behind
    /// the same origin and host checks as `/mcp` and [`HttpOptions::metrics_token`].
    pub metrics_route: bool,
    /// The credential of `GET /metrics` (here and on a metrics listener of
    /// its own): when set, only `Authorization: Bearer <token>` reads the
    /// metrics, and the token opens nothing else. When unset and clients
    /// must authenticate, only identities in the [`METRICS_GROUP`] group
    /// read them: the metrics name every tool and how much each is used,
    /// which a key the policy keeps from a tool must not learn.
    pub metrics_token: Option<String>,
    /// Whether a request of the session eras must name a session.
    pub sessions: SessionMode,
}

/// The group whose identities may read `/metrics` when no
/// [`HttpOptions::metrics_token`] is set.
pub const METRICS_GROUP: &str = "metrics";

/// Whether Streamable HTTP clients of the session eras (2025-03-26 to
/// 2025-11-25) must keep the `Mcp-Session-Id` that `initialize` issued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionMode {
    /// Every request but `initialize` names a session, as the
    /// specification has it; one without gets 400.
    #[default]
    Required,
    /// A request without `Mcp-Session-Id` is served on its own, as
    /// stateless servers (rmcp's stateless mode, FastMCP's
    /// `stateless_http`, Lemonade) do, for clients that never keep the id.
    /// `initialize` still issues one for clients that do. What needs a
    /// session (the GET stream, `DELETE`, resource subscriptions, tasks)
    /// says so when asked without one.
    Optional,
}

/// 4 MiB: large enough for any tool call a model makes, small enough that a
/// hostile client cannot make the gateway buffer much.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 8484)),
            auth: AuthOptions::default(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            batch: BatchLimits::default(),
            sse_keep_alive: Duration::from_secs(15),
            streamable: true,
            legacy_sse: true,
            shutdown_grace: Duration::from_secs(5),
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(60),
            per_address: None,
            address_prefix: AddressPrefix::default(),
            total_rate: None,
            metrics_route: false,
            metrics_token: None,
            sessions: SessionMode::Required,
        }
    }
}

// Written by hand to choose what a log line shows (`AuthOptions` prints no
// key itself).
impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("listen", &self.listen)
            .field("auth", &self.auth)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("batch", &self.batch)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("streamable", &self.streamable)
            .field("legacy_sse", &self.legacy_sse)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("keep_alive_timeout", &self.keep_alive_timeout)
            .field("per_address", &self.per_address)
            .field("address_prefix", &self.address_prefix)
            .field("total_rate", &self.total_rate)
            .field("metrics_route", &self.metrics_route)
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| "<token>"),
            )
            .field("sessions", &self.sessions)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_api_key() {
        let opts = HttpOptions {
            auth: AuthOptions::single_key("s3cret-key"),
            metrics_token: Some("s3cret-token".into()),
            ..HttpOptions::default()
        };
        let shown = format!("{opts:?}");
        assert!(!shown.contains("s3cret-key"));
        assert!(!shown.contains("s3cret-token"));
        assert!(shown.contains("<key>"));
    }

    #[test]
    fn defaults_are_safe() {
        let opts = HttpOptions::default();
        assert!(opts.listen.ip().is_loopback());
        assert_eq!(opts.max_body_bytes, 4 * 1024 * 1024);
        assert!(!opts.auth.is_required());
        assert_eq!(opts.sessions, SessionMode::Required);
    }
}

/// A request body did not arrive within
/// [`HttpOptions::body_read_timeout`]: the error its reader meets.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub(crate) struct BodyTimedOut;
