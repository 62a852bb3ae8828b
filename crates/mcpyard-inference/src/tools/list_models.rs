//! `list_models`: what each inference server has loaded, downloaded and
//! could download, with capabilities and a recommended chat model.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{input_schema, Args, Call, ToolDef, ToolFuture};
use crate::backend::Origin;
use crate::engine::{Inference, Listing};
use crate::error::ToolError;
use crate::vendors::{ModelInfo, ModelState};

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "list_models",
    definition,
    call,
};

/// `list_models`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListModelsArgs {
    /// Probe again for servers started or stopped since the last call.
    #[serde(default)]
    refresh: bool,
}

fn definition() -> Value {
    let model = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "backend": {"type": "string"},
            "state": {"type": "string", "enum": ["loaded", "downloaded", "suggested"]},
            "capabilities": {"type": "array", "items": {"type": "string", "enum": ["chat", "vision", "embeddings", "transcription", "image", "speech", "tools"]}},
            "size": {"type": "integer"}
        },
        "required": ["id", "backend", "state", "capabilities"]
    });
    json!({
        "name": "list_models",
        "title": "List local models",
        "description": "Lists the local inference servers (Ollama, llama.cpp, LM Studio, Lemonade, LocalAI, vLLM, any OpenAI-compatible one) and their models: loaded (answer at once), downloaded (load on first use) and suggested (need `allow_download: true`), with what each can do, and a recommended chat model.",
        "inputSchema": input_schema::<ListModelsArgs>(),
        "outputSchema": {
            "type": "object",
            "properties": {
                "backends": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "backend": {"type": "string"},
                        "kind": {"type": "string"},
                        "url": {"type": "string"},
                        "origin": {"type": "string", "enum": ["configured", "discovered"]},
                        "healthy": {"type": "boolean"},
                        "error": {"type": "string"},
                        "loaded": {"type": "array", "items": model},
                        "downloaded": {"type": "array", "items": model},
                        "suggested": {"type": "array", "items": model},
                        "recommended_chat": {"type": "string"}
                    },
                    "required": ["backend", "kind", "url", "healthy", "loaded", "downloaded", "suggested"]
                }},
                "recommended_chat": {
                    "type": ["object", "null"],
                    "properties": {"backend": {"type": "string"}, "model": {"type": "string"}, "state": {"type": "string"}}
                }
            },
            "required": ["backends", "recommended_chat"]
        },
        "annotations": {
            "title": "List local models",
            "readOnlyHint": true,
            "idempotentHint": true,
            "openWorldHint": false
        }
    })
}

fn call<'a>(inf: &'a Inference, args: Args, _call: &'a Call) -> ToolFuture<'a> {
    Box::pin(async move {
        let ListModelsArgs { refresh } = args.parse()?;
        let listing = inf.listing(refresh).await;
        let text = summary(inf, &listing);
        let recommended = listing
            .recommended_chat()
            .map(|m| json!({"backend": m.backend, "model": m.id, "state": m.state}));
        let backends = serde_json::to_value(&listing.backends)
            .map_err(|e| ToolError::InvalidArguments(format!("listing not serializable: {e}")))?;
        Ok(json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"backends": backends, "recommended_chat": recommended}
        }))
    })
}

fn names(models: &[ModelInfo]) -> String {
    if models.is_empty() {
        return "none".to_owned();
    }
    models
        .iter()
        .map(|m| {
            let caps: Vec<&str> = m.capabilities.iter().map(|c| c.as_str()).collect();
            format!("{} [{}]", m.id, caps.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn summary(inf: &Inference, listing: &Listing) -> String {
    if listing.backends.is_empty() {
        return format!(
            "No local inference server found. {}",
            inf.no_backend_advice()
        );
    }
    let mut out = Vec::new();
    for b in &listing.backends {
        let origin = match b.origin {
            Origin::Configured => "configured",
            Origin::Discovered => "discovered",
        };
        let head = format!(
            "Backend `{}` ({} at {}, {origin})",
            b.backend,
            b.kind.display_name(),
            b.url
        );
        if !b.healthy {
            out.push(format!(
                "{head}: not answering. {}",
                b.error.as_deref().unwrap_or("")
            ));
            continue;
        }
        let mut s = format!(
            "{head}:\n  loaded: {}\n  downloaded: {}",
            names(&b.loaded),
            names(&b.downloaded)
        );
        if !b.suggested.is_empty() {
            s.push_str(&format!(
                "\n  suggested (download with allow_download: true): {}",
                names(&b.suggested)
            ));
        }
        out.push(s);
    }
    match listing.recommended_chat() {
        Some(m) => {
            let state = match m.state {
                ModelState::Loaded => "loaded",
                ModelState::Downloaded => "downloaded",
                ModelState::Suggested => "suggested: needs allow_download: true",
            };
            out.push(format!(
                "Recommended chat model: `{}` on `{}` ({state}).",
                m.id, m.backend
            ));
        }
        None => out.push("No chat model is available.".to_owned()),
    }
    out.join("\n")
}
