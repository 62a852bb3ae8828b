//! Ollama: loaded models from `/api/ps`, downloaded ones from `/api/tags`,
//! capabilities from `/api/show` (cached), pulls through `/api/pull`;
//! recognised by the "Ollama is running" of its root.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::model::Capability;
use super::shared::{
    capabilities_from_name, ids, pull_failed, require_list, Listed, Suggestion, PROBE_TIMEOUT,
};
use crate::backend::{Backend, BackendError};
use crate::error::ToolError;
use crate::progress::Reporter;

/// Per-backend cache of capability lookups (`/api/show`), which do not
/// change for a given model name while the server runs.
#[derive(Debug, Default)]
pub(crate) struct ShowCache {
    map: Mutex<HashMap<(String, String), Vec<Capability>>>,
}

/// Small, common models worth pulling.
pub(super) const SUGGESTIONS: &[Suggestion] = &[
    ("qwen3:0.6b", &[Capability::Chat, Capability::Tools]),
    ("llama3.2:3b", &[Capability::Chat, Capability::Tools]),
    ("qwen2.5vl:3b", &[Capability::Chat, Capability::Vision]),
    ("nomic-embed-text", &[Capability::Embeddings]),
];

pub(super) async fn list(
    backend: &Backend,
    show: &ShowCache,
) -> Result<(Listed, Listed), BackendError> {
    let ps = backend.get_json("/api/ps").await?;
    require_list(backend, "/api/ps", &ps, "models")?;
    let tags = backend.get_json("/api/tags").await?;
    require_list(backend, "/api/tags", &tags, "models")?;
    let loaded = ids(&ps, "models", &["name", "model"]);
    let downloaded = ids(&tags, "models", &["name", "model"]);
    let mut names: Vec<String> = loaded
        .iter()
        .chain(&downloaded)
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    names.dedup();
    let caps =
        futures::future::join_all(names.iter().map(|n| capabilities(backend, show, n))).await;
    let caps: HashMap<&str, Vec<Capability>> = names.iter().map(String::as_str).zip(caps).collect();
    let with_caps = |list: Vec<(String, Option<u64>)>| -> Listed {
        list.into_iter()
            .map(|(id, size)| {
                let c = caps.get(id.as_str()).cloned().unwrap_or_default();
                (id, c, size)
            })
            .collect()
    };
    Ok((with_caps(loaded), with_caps(downloaded)))
}

/// `/api/show`'s `capabilities`, cached; the name heuristic when the
/// server is too old to say.
async fn capabilities(backend: &Backend, show: &ShowCache, model: &str) -> Vec<Capability> {
    let key = (backend.base_url().to_owned(), model.to_owned());
    if let Some(c) = show.map.lock().expect("show cache poisoned").get(&key) {
        return c.clone();
    }
    let caps = match backend
        .post_json("/api/show", &json!({"model": model}))
        .await
    {
        Ok(v) => match v.get("capabilities").and_then(Value::as_array) {
            Some(list) => {
                let mut caps = Vec::new();
                for c in list.iter().filter_map(Value::as_str) {
                    let cap = match c {
                        "completion" => Capability::Chat,
                        "vision" => Capability::Vision,
                        "embedding" => Capability::Embeddings,
                        "tools" => Capability::Tools,
                        _ => continue,
                    };
                    if !caps.contains(&cap) {
                        caps.push(cap);
                    }
                }
                caps
            }
            None => capabilities_from_name(model),
        },
        Err(e) => {
            tracing::debug!(error = %e, model, "no capabilities from /api/show");
            return capabilities_from_name(model);
        }
    };
    show.map
        .lock()
        .expect("show cache poisoned")
        .insert(key, caps.clone());
    caps
}

/// Downloads `model` with `/api/pull`, its progress summed over layers.
pub(super) async fn pull(
    backend: &Backend,
    model: &str,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let fail = |reason: String| pull_failed(backend, model, reason);
    let body = json!({"model": model, "stream": true});
    let mut stream = backend.post_ndjson("/api/pull", &body, None).await?;
    // Bytes done per layer, so the sum grows across layers.
    let mut layers: HashMap<String, (u64, u64)> = HashMap::new();
    let mut success = false;
    loop {
        let item = tokio::select! {
            item = stream.next() => item,
            _ = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let Some(line) = item else { break };
        let line = line?;
        if let Some(err) = line.get("error").and_then(Value::as_str) {
            return Err(fail(err.to_owned()));
        }
        let status = line.get("status").and_then(Value::as_str).unwrap_or("");
        if status == "success" {
            success = true;
        }
        if let (Some(digest), Some(total)) = (
            line.get("digest").and_then(Value::as_str),
            line.get("total").and_then(Value::as_u64),
        ) {
            let done = line.get("completed").and_then(Value::as_u64).unwrap_or(0);
            layers.insert(digest.to_owned(), (done.min(total), total));
        }
        let done: u64 = layers.values().map(|(d, _)| d).sum();
        let total: u64 = layers.values().map(|(_, t)| t).sum();
        let value = if success {
            total.max(1) as f64 + 1.0
        } else {
            done as f64
        };
        let total = (total > 0).then_some(total as f64 + 1.0);
        reporter
            .report(value, total, &format!("{model}: {status}"))
            .await;
    }
    if !success {
        return Err(fail(
            "the server ended the download without `success`".into(),
        ));
    }
    Ok(())
}

/// Whether `probe` is Ollama (asked after LocalAI, which imitates this root).
pub(super) async fn identify(probe: &Backend) -> bool {
    probe
        .get_text_within("/", PROBE_TIMEOUT)
        .await
        .is_ok_and(|text| text.contains("Ollama is running"))
}
