//! What calls the operations of one loaded document holds.

use std::sync::Arc;

use mcpyard_gateway::Sandbox;

use super::validate::InputCheck;
use crate::{ApiConfig, ApiDocument};

/// Calls the operations of one loaded document.
pub(crate) struct Caller {
    pub(crate) config: Arc<ApiConfig>,
    pub(crate) doc: Arc<ApiDocument>,
    pub(super) client: reqwest::Client,
    pub(crate) fetcher: reqwest::Client,
    pub(crate) sandbox: Sandbox,
    pub(super) checks: Vec<InputCheck>,
    /// Every form of every configured secret, longest first.
    pub(super) secrets: Vec<String>,
}

impl std::fmt::Debug for Caller {
    // Names the API, never its credentials or headers.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("api", &self.config.name)
            .field("operations", &self.doc.operations.len())
            .finish_non_exhaustive()
    }
}
