//! What one tool is: its definition and its implementation.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::args::Args;
use super::call::Call;
use crate::engine::Inference;
use crate::error::ToolError;

/// What a tool call returns: a `CallToolResult`, or an error that becomes
/// an `isError` result.
pub(crate) type ToolFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// One tool: its `tools/list` entry and its implementation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolDef {
    /// The unprefixed name.
    pub(crate) name: &'static str,
    /// The `Tool` object (name, description, schemas, annotations).
    pub(crate) definition: fn() -> Value,
    /// Serves a call with the (object) arguments.
    pub(crate) call: for<'a> fn(&'a Inference, Args, &'a Call) -> ToolFuture<'a>,
}

/// The source name; tools are exposed as `local__<tool>` by default.
pub const SOURCE_NAME: &str = "local";
