//! `list_models`: what each inference server has loaded, downloaded and
//! could download, with capabilities and a recommended chat model. The
//! result also carries the flat lists Lemonade's MCP endpoint returns
//! (`loaded`, `available`, `suggested_to_pull`, `recommended_chat_model`),
//! and a second text block with the structured content as JSON, which
//! Lemonade's clients parse.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args::{input_schema, Args};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use crate::backend::Origin;
use crate::engine::{Inference, Listing};
use crate::error::ToolError;
use crate::vendors::{BackendModels, Capability, ModelInfo, ModelState};

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
    /// List the models on disk that are not loaded (default true).
    #[serde(default = "yes")]
    include_available: bool,
    /// List the models that could be downloaded (default true).
    #[serde(default = "yes")]
    include_suggested: bool,
}

fn yes() -> bool {
    true
}

fn definition() -> Value {
    // One entry of the flat lists, in Lemonade's terms.
    let flat = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "model_name": {"type": "string"},
                "backend": {"type": "string"},
                "type": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
                "size_gb": {"type": "number"}
            },
            "required": ["model_name", "backend", "type", "labels"]
        }
    });
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
                },
                "loaded": flat,
                "available": flat,
                "suggested_to_pull": flat,
                "recommended_chat_model": {"type": "string", "description": "The recommended chat model's id, empty when there is none."}
            },
            "required": ["backends", "recommended_chat", "loaded", "available", "suggested_to_pull", "recommended_chat_model"]
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
        let ListModelsArgs {
            refresh,
            include_available,
            include_suggested,
        } = args.parse()?;
        let mut listing = inf.listing(refresh).await;
        // Chosen from everything, before the lists are trimmed: it is still
        // the model to use.
        let recommended = listing.recommended_chat().cloned();
        for b in &mut listing.backends {
            if !include_available {
                b.downloaded.clear();
            }
            if !include_suggested {
                b.suggested.clear();
            }
        }
        let text = summary(inf, &listing, recommended.as_ref());
        let flat = |pick: fn(&BackendModels) -> &[ModelInfo]| -> Vec<Value> {
            listing
                .backends
                .iter()
                .flat_map(|b| pick(b).iter().map(lemonade_entry))
                .collect()
        };
        let structured = json!({
            "backends": listing.backends,
            "recommended_chat": recommended.as_ref().map(|m| json!({"backend": m.backend, "model": m.id, "state": m.state})),
            "loaded": flat(|b| &b.loaded),
            "available": flat(|b| &b.downloaded),
            "suggested_to_pull": flat(|b| &b.suggested),
            "recommended_chat_model": recommended.as_ref().map_or("", |m| m.id.as_str()),
        });
        let json_text = serde_json::to_string(&structured)
            .map_err(|e| ToolError::InvalidArguments(format!("listing not serializable: {e}")))?;
        Ok(json!({
            "content": [{"type": "text", "text": text}, {"type": "text", "text": json_text}],
            "structuredContent": structured
        }))
    })
}

/// A model as Lemonade's lists name it: `type` is its main use in
/// Lemonade's words (`llm`, `embedding`, `transcription`, `image`, `tts`),
/// `labels` what it can do.
fn lemonade_entry(m: &ModelInfo) -> Value {
    let kind = if m.has(Capability::Chat) {
        "llm"
    } else if m.has(Capability::Embeddings) {
        "embedding"
    } else if m.has(Capability::Transcription) {
        "transcription"
    } else if m.has(Capability::Image) {
        "image"
    } else if m.has(Capability::Speech) {
        "tts"
    } else {
        "other"
    };
    let mut entry = json!({
        "model_name": m.id,
        "backend": m.backend,
        "type": kind,
        "labels": m.capabilities,
    });
    if let Some(bytes) = m.size {
        entry["size_gb"] = json!((bytes as f64 / 1e9 * 100.0).round() / 100.0);
    }
    entry
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

fn summary(inf: &Inference, listing: &Listing, recommended: Option<&ModelInfo>) -> String {
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
    match recommended {
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
