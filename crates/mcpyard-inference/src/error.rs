//! Why a tool call failed, worded for the model that made it: each message
//! says what to change (an argument, a model name, a server to start).
//! Every one becomes an `isError` result, never a JSON-RPC error.

use serde_json::{json, Value};

use crate::backend::BackendError;
use crate::vendors::Capability;

/// A tool call that could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool's input schema.
    #[error("Invalid arguments: {0}")]
    InvalidArguments(String),
    /// A backend failed (boxed: it is the largest variant by far).
    #[error("{0}")]
    Backend(Box<BackendError>),
    /// No inference server is configured or found.
    #[error("No local inference server is available. {0}")]
    NoBackend(String),
    /// The named model is on no backend.
    #[error("Model `{model}` is not available on any local inference server. Available models: {available}.{pull}")]
    UnknownModel {
        model: String,
        available: String,
        pull: String,
    },
    /// No model has the capability the tool needs, and none was named.
    #[error("No loaded or downloaded model can do {capability}. Available models: {available}. Pass `model` with one of them{pull}.")]
    NoModel {
        capability: Capability,
        available: String,
        pull: String,
    },
    /// A model download failed.
    #[error("Downloading `{model}` from backend `{backend}` failed: {reason}")]
    PullFailed {
        model: String,
        backend: String,
        reason: String,
    },
    /// A local file cannot be used as input, or an output cannot be written.
    #[error("{0}")]
    File(String),
    /// The call was cancelled.
    #[error("The call was cancelled.")]
    Cancelled,
}

impl From<BackendError> for ToolError {
    fn from(e: BackendError) -> Self {
        Self::Backend(Box::new(e))
    }
}

impl From<mcpyard_gateway::FileError> for ToolError {
    fn from(e: mcpyard_gateway::FileError) -> Self {
        Self::File(e.to_string())
    }
}

impl ToolError {
    /// The `CallToolResult` with `isError: true`.
    pub fn into_result(self) -> Value {
        error_result(&self.to_string())
    }
}

/// An `isError` result with one text block.
pub(crate) fn error_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}
