//! LocalAI: models from `/v1/models`, the loaded ones from `/system`,
//! pulls as gallery jobs (`/models/apply`, then `/models/jobs/{uuid}`
//! polled); recognised by its discovery document or `/system`.

use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::model::Capability;
use super::shared::{pull_failed, Listed, Suggestion, PROBE_TIMEOUT};
use crate::backend::{Backend, BackendError};
use crate::error::ToolError;
use crate::progress::Reporter;

/// Small, common gallery models worth pulling.
pub(super) const SUGGESTIONS: &[Suggestion] = &[
    ("qwen3-0.6b", &[Capability::Chat, Capability::Tools]),
    ("nomic-embed-text-v1.5", &[Capability::Embeddings]),
    ("whisper-base", &[Capability::Transcription]),
];

pub(super) async fn list(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let all = super::openai::list(backend).await?;
    let loaded_ids: Vec<String> = match backend.get_json("/system").await {
        Ok(v) => v
            .get("loaded_models")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).or_else(|| m.as_str()))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let (loaded, downloaded) = all
        .into_iter()
        .partition(|(id, _, _)| loaded_ids.contains(id));
    Ok((loaded, downloaded))
}

/// Downloads `model` as a gallery job, polled until it is processed.
pub(super) async fn pull(
    backend: &Backend,
    model: &str,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let fail = |reason: String| pull_failed(backend, model, reason);
    let job = backend
        .post_json("/models/apply", &json!({"id": model}))
        .await?;
    let uuid = job
        .get("uuid")
        .and_then(Value::as_str)
        .ok_or_else(|| backend.malformed("/models/apply", "no `uuid` in the answer"))?
        .to_owned();
    let path = format!("/models/jobs/{uuid}");
    // Older LocalAI answers the first polls with an error until the
    // job has a status: a few of those are waited out.
    let mut not_started = 0;
    loop {
        let status = match backend.get_json(&path).await {
            Ok(s) => s,
            Err(e) if not_started < 5 && !e.is_unreachable() => {
                not_started += 1;
                tracing::debug!(error = %e, "LocalAI job has no status yet");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = cancel.cancelled() => return Err(ToolError::Cancelled),
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        not_started = 5;
        if let Some(err) = status.get("error").filter(|e| !e.is_null()) {
            // Older versions send a failure as `error: {}` (a Go
            // error marshalled) with the reason in `message`.
            let reason = err
                .as_str()
                .filter(|r| !r.is_empty())
                .or_else(|| status.get("message").and_then(Value::as_str))
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            return Err(fail(reason));
        }
        let pct = status
            .get("progress")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let msg = status.get("message").and_then(Value::as_str).unwrap_or("");
        if status.get("processed").and_then(Value::as_bool) == Some(true) {
            reporter
                .report(100.0, Some(100.0), &format!("{model}: {msg}"))
                .await;
            return Ok(());
        }
        reporter
            .report(pct, Some(100.0), &format!("{model}: {msg}"))
            .await;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = cancel.cancelled() => return Err(ToolError::Cancelled),
        }
    }
}

/// Whether `probe` is LocalAI. Asked before Ollama: LocalAI can imitate
/// Ollama's API and its "Ollama is running" root, but real Ollama has
/// neither of these routes. Its discovery document lists its endpoints (LM
/// Studio answers unknown routes with 200 and an `error` object, so any
/// JSON is not enough).
pub(super) async fn identify(probe: &Backend) -> bool {
    if let Ok(v) = probe
        .get_json_within("/.well-known/localai.json", PROBE_TIMEOUT)
        .await
    {
        if v.get("endpoints").is_some() || v.get("endpoint_groups").is_some() {
            return true;
        }
    }
    probe
        .get_json_within("/system", PROBE_TIMEOUT)
        .await
        .is_ok_and(|v| v.get("loaded_models").is_some())
}
