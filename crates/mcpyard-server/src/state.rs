//! What every HTTP handler can reach.

use std::sync::Arc;

use mcpyard_gateway::Gateway;
use tokio_util::sync::CancellationToken;

use crate::auth::{Authenticator, MetricsToken};
use crate::options::HttpOptions;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub(crate) gateway: Gateway,
    pub(crate) opts: Arc<HttpOptions>,
    pub(crate) auth: Arc<Authenticator>,
    /// Where the OAuth metadata document is served (none without OAuth):
    /// open to clients without credentials.
    pub(crate) metadata_paths: Arc<[String]>,
    /// Cancelled when the server shuts down: long-lived streams end then.
    pub(crate) shutdown: CancellationToken,
    /// The credential of `/metrics`, when one is set.
    pub(crate) metrics_token: Option<Arc<MetricsToken>>,
    /// The browsers signed in to the status page.
    pub(crate) ui_sessions: Arc<crate::ui::sessions::UiSessions>,
}

impl axum::extract::FromRef<AppState> for Gateway {
    fn from_ref(state: &AppState) -> Self {
        state.gateway.clone()
    }
}
