//! The tools and their dispatch table. A tool is one file here that
//! defines a `TOOL: ToolDef` (its definition and its call), plus one line
//! in [`TOOLS`].

mod agent;
mod analyze_image;
mod args;
pub(crate) mod chat;
mod embed;
mod generate_image;
mod list_models;
mod media;
mod speak;
mod transcribe_audio;

use std::future::Future;
use std::pin::Pin;

use mcpyard_gateway::CallContext;
use serde_json::Value;

pub(crate) use args::Args;

use crate::engine::Inference;
use crate::error::ToolError;
use crate::models::Reporter;

/// What a tool call returns: a `CallToolResult`, or an error that becomes
/// an `isError` result.
pub(crate) type ToolFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// What a call has besides its arguments: the gateway's context, and the
/// call's progress reporter (shared by everything the call does, so its
/// values keep growing).
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) ctx: CallContext,
    pub(crate) progress: Reporter,
}

impl Call {
    pub(crate) fn new(ctx: CallContext) -> Self {
        let progress = Reporter::new(ctx.progress.clone());
        Self { ctx, progress }
    }
}

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

/// Every tool the source offers.
pub(crate) const TOOLS: &[ToolDef] = &[
    list_models::TOOL,
    chat::TOOL,
    embed::TOOL,
    agent::TOOL,
    transcribe_audio::TOOL,
    generate_image::TOOL,
    speak::TOOL,
    analyze_image::TOOL,
];

/// The tool called `name`.
pub(crate) fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The JSON Schema of the `model` and `allow_download` arguments that
/// every model-using tool takes.
pub(crate) fn model_properties() -> Value {
    serde_json::json!({
        "model": {
            "type": "string",
            "description": "Model id as list_models shows it. Omit to use a loaded (else downloaded) model that can do the job."
        },
        "allow_download": {
            "type": "boolean",
            "default": false,
            "description": "Allow downloading the model when no server has it (Ollama, Lemonade, LocalAI). Downloads can be gigabytes: only set this when the user agreed."
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_is_named_after_its_entry() {
        for t in TOOLS {
            let def = (t.definition)();
            assert_eq!(def["name"], t.name);
            assert_eq!(def["inputSchema"]["type"], "object", "{}", t.name);
            assert!(def["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert!(def["annotations"].is_object());
        }
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
    }
}
