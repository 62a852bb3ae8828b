//! Any OpenAI-compatible server (and vLLM, which is one): models from
//! `/v1/models`, capabilities guessed from their names, no downloads. Also
//! the last resort of identification: a server that answers `/v1/models`,
//! named by the `owned_by` of its models when that tells.

use serde_json::Value;

use super::shared::{capabilities_from_name, ids, require_list, Listed, PROBE_TIMEOUT};
use crate::backend::{Backend, BackendError};
use crate::config::BackendKind;

pub(super) async fn list(backend: &Backend) -> Result<Listed, BackendError> {
    let path = backend.v1("/models");
    let v = backend.get_json(&path).await?;
    require_list(backend, &path, &v, "data")?;
    Ok(ids(&v, "data", &["id"])
        .into_iter()
        .map(|(id, size)| {
            let caps = capabilities_from_name(&id);
            (id, caps, size)
        })
        .collect())
}

/// A server answering `/v1/models`: vLLM, llama.cpp or Lemonade when its
/// models' `owned_by` says so, else a plain OpenAI-compatible one.
pub(super) async fn identify(probe: &Backend) -> Option<BackendKind> {
    let models = probe
        .get_json_within("/v1/models", PROBE_TIMEOUT)
        .await
        .ok()?;
    let data = models.get("data").and_then(Value::as_array)?;
    let owner = data
        .iter()
        .filter_map(|m| m.get("owned_by").and_then(Value::as_str))
        .map(str::to_ascii_lowercase)
        .find_map(|o| match o.as_str() {
            "vllm" => Some(BackendKind::Vllm),
            "llamacpp" => Some(BackendKind::Llamacpp),
            "lemonade" => Some(BackendKind::Lemonade),
            _ => None,
        });
    Some(owner.unwrap_or(BackendKind::Openai))
}
