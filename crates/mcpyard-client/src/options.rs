//! The settings of a connection and of one request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::HttpAuth;

/// The protocol version the legacy HTTP+SSE transport always asks for.
pub const LEGACY_SSE_PROTOCOL_VERSION: &str = "2024-11-05";

/// Most pages [`McpClient::list_all`] follows before it stops.
pub const MAX_LIST_PAGES: usize = 1000;

/// The protocol version of the era without `initialize`.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// Most times a request answered `input_required` is retried.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// Which protocol era [`McpClient::connect`] speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EraPolicy {
    /// `initialize` and a session, as every server before 2026-07-28 wants.
    Handshake,
    /// Ask with `server/discover` first and speak 2026-07-28 when the server
    /// offers it; fall back to the handshake otherwise. The legacy SSE
    /// transport always uses the handshake.
    Auto,
    /// The handshake first; 2026-07-28 (`server/discover`) only for a server
    /// that refuses it the ways a server of that era alone does: -32022 (it
    /// serves none of the handshake's versions), -32020 (the
    /// `MCP-Protocol-Version` header that era requires is missing), -32601
    /// (no `initialize` method), each possibly as the body of an HTTP 4xx,
    /// an HTTP 404 or 405, or an `initialize` result naming 2026-07-28. The
    /// new era is tried on a new connection, since the refused one may be
    /// bound to the handshake. The default, and what a gateway wants: a
    /// server of both eras keeps what only the handshake era has (a session
    /// for its own requests, log messages, `resources/subscribe`), and one
    /// of the new era alone still works.
    #[default]
    HandshakeFirst,
}

/// Settings for [`McpClient::connect`].
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// `clientInfo.name` sent in `initialize`.
    pub client_name: String,
    /// `clientInfo.version` sent in `initialize`.
    pub client_version: String,
    /// `capabilities` sent in `initialize`: declare here what a custom
    /// [`ClientHandler`] answers itself. The [`ClientBuilder`] adds the
    /// capability of each typed handler it was given (roots, elicitation,
    /// sampling).
    pub capabilities: Value,
    /// The protocol version to ask for (the legacy SSE transport always asks
    /// for [`LEGACY_SSE_PROTOCOL_VERSION`]).
    pub protocol_version: String,
    /// How long opening the transport plus the handshake may take.
    pub connect_timeout: Duration,
    /// A label for logs (the server's configured name); stderr lines of a
    /// child process are logged under it.
    pub label: String,
    /// Whether to try the 2026-07-28 era first.
    pub era: EraPolicy,
    /// How long a request may wait for its answer when its
    /// [`RequestOptions::timeout`] is not set; `None` (the default): as
    /// long as the connection lives. Past it the request fails with
    /// [`ClientError::Timeout`] and the server gets `notifications/cancelled`.
    pub request_timeout: Option<Duration>,
    /// Credentials for the HTTP transports (an
    /// `oauth::OAuthClient` with the `oauth` feature,
    /// or an application's own [`HttpAuth`]); ignored by stdio.
    pub http_auth: Option<Arc<dyn HttpAuth>>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            client_name: "mcpyard".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            capabilities: Value::Object(Default::default()),
            protocol_version: "2025-11-25".into(),
            connect_timeout: Duration::from_secs(30),
            label: "upstream".into(),
            era: EraPolicy::HandshakeFirst,
            request_timeout: None,
            http_auth: None,
        }
    }
}

/// Per-request settings. Build them with the `with_*` methods, or as a
/// struct with `..RequestOptions::default()`.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Fail with [`ClientError::Timeout`] (and cancel upstream) after this;
    /// `None`: the client's [`ConnectOptions::request_timeout`].
    pub timeout: Option<Duration>,
    /// When the request must be answered, for a caller that has a deadline
    /// already (a gateway forwarding a call): wins over `timeout`, which
    /// then only names the limit in the error.
    pub deadline: Option<tokio::time::Instant>,
    /// Cancelling this token cancels the request upstream.
    pub cancel: Option<CancellationToken>,
    /// Called with every `notifications/progress` the server sends about
    /// this request: the client gives the request a `_meta.progressToken`
    /// of its own and routes the progress carrying it here instead of to
    /// the [`ClientHandler`]. Called on the client's reader, in order: keep
    /// it quick (push into a channel for slow work).
    pub progress: Option<ProgressCallback>,
    /// In the 2026-07-28 era, the client capabilities this request declares
    /// in place of the connection's (a gateway passes on what its own
    /// client declared, so that the server asks only for what it can get).
    /// Ignored in the handshake era, where `initialize` declared them once.
    pub capabilities: Option<Value>,
}

impl RequestOptions {
    /// Fails the request with [`ClientError::Timeout`] after `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Fails the request with [`ClientError::Timeout`] at `deadline`.
    pub fn with_deadline(mut self, deadline: tokio::time::Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// When the request must be answered: its deadline, else `timeout`
    /// from now.
    pub(crate) fn due(&self) -> Option<tokio::time::Instant> {
        self.deadline
            .or_else(|| self.timeout.map(|t| tokio::time::Instant::now() + t))
    }

    /// The limit a timed-out request names: its timeout, else what its
    /// deadline left it from `start`.
    pub(crate) fn limit(&self, start: tokio::time::Instant) -> Duration {
        self.timeout
            .or_else(|| self.deadline.map(|d| d.saturating_duration_since(start)))
            .unwrap_or_default()
    }

    /// Cancels the request when `cancel` is cancelled.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Declares `capabilities` for this request in the 2026-07-28 era.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Calls `callback` with the request's progress.
    pub fn with_progress(mut self, callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(callback));
        self
    }
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Receives the progress of one request (see [`RequestOptions::progress`]).
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// One `notifications/progress` about a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the work is; grows with every notification.
    pub progress: f64,
    /// The total `progress` will reach, when the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}
