//! LM Studio: models from its native `/api/v1/models`, loaded when they
//! have `loaded_instances`, with capabilities as it states them; recognised
//! by those `loaded_instances`. No downloads through its API.

use serde_json::Value;

use super::model::Capability;
use super::shared::{require_list, Listed, PROBE_TIMEOUT};
use crate::backend::{Backend, BackendError};

pub(super) async fn list(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let v = backend.get_json("/api/v1/models").await?;
    let list_key = if v.get("models").is_some() {
        "models"
    } else {
        "data"
    };
    require_list(backend, "/api/v1/models", &v, list_key)?;
    let mut loaded = Vec::new();
    let mut downloaded = Vec::new();
    for m in v
        .get(list_key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = m.get("key").or_else(|| m.get("id")).and_then(Value::as_str) else {
            continue;
        };
        let mut caps = Vec::new();
        if m.get("type").and_then(Value::as_str) == Some("embedding") {
            caps.push(Capability::Embeddings);
        } else {
            caps.push(Capability::Chat);
            let c = m.get("capabilities");
            let flag = |k: &str| c.and_then(|c| c.get(k)).and_then(Value::as_bool) == Some(true);
            if flag("vision") {
                caps.push(Capability::Vision);
            }
            if flag("trained_for_tool_use") {
                caps.push(Capability::Tools);
            }
        }
        let size = m.get("size_bytes").and_then(Value::as_u64);
        let is_loaded = m
            .get("loaded_instances")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty());
        if is_loaded {
            loaded.push((id.to_owned(), caps, size));
        } else {
            downloaded.push((id.to_owned(), caps, size));
        }
    }
    Ok((loaded, downloaded))
}

/// Whether `probe` is LM Studio (which answers unknown routes with 200 and
/// an `error` object, so only the shape of its model list tells).
pub(super) async fn identify(probe: &Backend) -> bool {
    let Ok(v) = probe.get_json_within("/api/v1/models", PROBE_TIMEOUT).await else {
        return false;
    };
    let entries = v
        .get("models")
        .or_else(|| v.get("data"))
        .and_then(Value::as_array);
    entries.is_some_and(|e| e.iter().any(|m| m.get("loaded_instances").is_some()))
}
