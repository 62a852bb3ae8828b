//! What every tool of the gateway's own answers with.

use serde_json::{json, Value};

/// The prefix of the gateway's own tools.
pub(crate) const PREFIX: &str = "mcpyard__";

/// A successful tool result with text and structured content.
pub(crate) fn result(text: String, structured: Option<Value>) -> Value {
    let mut r = json!({"content": [{"type": "text", "text": text}], "isError": false});
    if let Some(s) = structured {
        r["structuredContent"] = s;
    }
    r
}

/// A tool failure a model can act on.
pub(crate) fn tool_error(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}
