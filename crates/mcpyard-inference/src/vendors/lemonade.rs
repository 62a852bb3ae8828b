//! Lemonade: loaded models from `/api/v1/health`, downloaded ones from
//! `/api/v1/models` with their `labels`, pulls through `/api/v1/pull`
//! (server-sent events); recognised by the `all_models_loaded` of its
//! health answer.

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::model::Capability;
use super::shared::{
    capabilities_from_name, pull_failed, require_list, Listed, Suggestion, PROBE_TIMEOUT,
};
use crate::backend::{Backend, BackendError};
use crate::error::ToolError;
use crate::progress::Reporter;

/// Small, common models worth pulling, one per kind of job.
pub(super) const SUGGESTIONS: &[Suggestion] = &[
    ("Qwen3-0.6B-GGUF", &[Capability::Chat, Capability::Tools]),
    (
        "Gemma-3-4b-it-GGUF",
        &[Capability::Chat, Capability::Vision],
    ),
    ("nomic-embed-text-v1-GGUF", &[Capability::Embeddings]),
    ("Whisper-Tiny", &[Capability::Transcription]),
    ("kokoro-v1", &[Capability::Speech]),
    ("SD-Turbo", &[Capability::Image]),
];

pub(super) async fn list(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let health = backend.get_json("/api/v1/health").await?;
    let models = backend.get_json("/api/v1/models").await?;
    require_list(backend, "/api/v1/models", &models, "data")?;
    let entries = models
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let caps_of = |id: &str| -> Vec<Capability> {
        entries
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
            .map(capabilities)
            .unwrap_or_else(|| capabilities_from_name(id))
    };
    let mut loaded_ids: Vec<String> = health
        .get("all_models_loaded")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("model_name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(m) = health.get("model_loaded").and_then(Value::as_str) {
        if !m.is_empty() && !loaded_ids.iter().any(|l| l == m) {
            loaded_ids.push(m.to_owned());
        }
    }
    let loaded = loaded_ids
        .into_iter()
        .map(|id| {
            let c = caps_of(&id);
            (id, c, None)
        })
        .collect();
    let downloaded = entries
        .iter()
        // Older servers list downloaded models only and have no flag.
        .filter(|m| m.get("downloaded").and_then(Value::as_bool) != Some(false))
        .filter_map(|m| {
            let id = m.get("id").and_then(Value::as_str)?;
            Some((
                id.to_owned(),
                capabilities(m),
                m.get("size").and_then(Value::as_u64),
            ))
        })
        .collect();
    Ok((loaded, downloaded))
}

/// Lemonade states capabilities as `labels` (and the `recipe` tells
/// speech, image and transcription engines apart).
fn capabilities(m: &Value) -> Vec<Capability> {
    let labels: Vec<&str> = m
        .get("labels")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let recipe = m.get("recipe").and_then(Value::as_str).unwrap_or("");
    let has = |l: &str| labels.iter().any(|x| x.eq_ignore_ascii_case(l));
    let mut caps = Vec::new();
    if has("embeddings") || has("embedding") {
        caps.push(Capability::Embeddings);
    } else if has("transcription") || has("audio") || recipe.contains("whisper") {
        caps.push(Capability::Transcription);
    } else if has("tts") || has("speech") || recipe.contains("kokoro") {
        caps.push(Capability::Speech);
    } else if has("image") || recipe.starts_with("sd") {
        caps.push(Capability::Image);
    } else if !has("reranking") {
        caps.push(Capability::Chat);
        if has("vision") {
            caps.push(Capability::Vision);
        }
        if has("tool-calling") || has("tools") {
            caps.push(Capability::Tools);
        }
    }
    caps
}

/// Downloads `model` with `/api/v1/pull`, its progress counted per file.
pub(super) async fn pull(
    backend: &Backend,
    model: &str,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let fail = |reason: String| pull_failed(backend, model, reason);
    let body = json!({"model_name": model, "stream": true});
    let mut stream = backend.post_sse("/api/v1/pull", &body, None).await?;
    let mut total = 100.0;
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            _ = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let Some(ev) = item else {
            return Err(fail(
                "the server ended the download without `complete`".into(),
            ));
        };
        let ev = ev?;
        let data: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
        match ev.event.as_str() {
            "complete" => {
                reporter
                    .report(total, Some(total), &format!("{model}: complete"))
                    .await;
                return Ok(());
            }
            "error" => {
                let reason = data
                    .get("error")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| crate::backend::excerpt(ev.data.as_bytes()));
                return Err(fail(reason));
            }
            _ => {
                let num = |k: &str| data.get(k).and_then(Value::as_f64);
                let files = num("total_files").unwrap_or(1.0).max(1.0);
                let index = num("file_index").unwrap_or(1.0).max(1.0);
                let percent = num("percent").unwrap_or(0.0).clamp(0.0, 100.0);
                let value = (index - 1.0) * 100.0 + percent;
                total = files * 100.0;
                let file = data.get("file").and_then(Value::as_str).unwrap_or("");
                reporter
                    .report(
                        value,
                        Some(total),
                        &format!("{model}: {file} {percent:.0}%"),
                    )
                    .await;
            }
        }
    }
}

/// Whether `probe` is Lemonade. This is the first question asked of a
/// port, so its error also tells whether anything listens there.
pub(super) async fn identify(probe: &Backend) -> Result<bool, BackendError> {
    probe
        .get_json_within("/api/v1/health", PROBE_TIMEOUT)
        .await
        .map(|v| v.get("all_models_loaded").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemonade_labels_map_to_capabilities() {
        let m = json!({"id": "x", "labels": ["vision", "tool-calling"], "recipe": "llamacpp"});
        assert_eq!(
            capabilities(&m),
            vec![Capability::Chat, Capability::Vision, Capability::Tools]
        );
        let w = json!({"id": "Whisper-Tiny", "labels": ["audio"], "recipe": "whispercpp"});
        assert_eq!(capabilities(&w), vec![Capability::Transcription]);
        let e = json!({"id": "e", "labels": ["embeddings"]});
        assert_eq!(capabilities(&e), vec![Capability::Embeddings]);
    }
}
