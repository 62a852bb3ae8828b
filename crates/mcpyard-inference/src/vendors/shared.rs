//! What the vendors' modules share: how a listing is read, and how a
//! failure is told.

use std::time::Duration;

use serde_json::Value;

use crate::backend::{Backend, BackendError};
use crate::error::ToolError;

use super::model::Capability;

pub(super) type Listed = Vec<(String, Vec<Capability>, Option<u64>)>;

pub(super) fn ids(v: &Value, list_key: &str, id_keys: &[&str]) -> Vec<(String, Option<u64>)> {
    v.get(list_key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| {
                    let id = id_keys
                        .iter()
                        .find_map(|k| m.get(*k).and_then(Value::as_str))?;
                    Some((id.to_owned(), m.get("size").and_then(Value::as_u64)))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn require_list(
    backend: &Backend,
    path: &str,
    v: &Value,
    key: &str,
) -> Result<(), BackendError> {
    match v.get(key) {
        Some(Value::Array(_)) => Ok(()),
        // Ollama answers `{"models": null}` when it has none.
        Some(Value::Null) => Ok(()),
        _ => Err(backend.malformed(path, format!("expected a `{key}` array"))),
    }
}

/// Capabilities guessed from a model's name, for servers whose API does
/// not state them.
pub fn capabilities_from_name(id: &str) -> Vec<Capability> {
    let n = id.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| n.contains(w));
    if any(&["embed", "bge-", "minilm", "e5-", "gte-"]) {
        return vec![Capability::Embeddings];
    }
    if any(&["whisper", "parakeet", "transcri", "moonshine"]) {
        return vec![Capability::Transcription];
    }
    if any(&["tts", "kokoro", "piper", "bark", "speech"]) {
        return vec![Capability::Speech];
    }
    if any(&[
        "stable-diffusion",
        "stablediffusion",
        "sdxl",
        "sd-turbo",
        "flux",
        "dall-e",
    ]) {
        return vec![Capability::Image];
    }
    let mut caps = vec![Capability::Chat];
    if any(&[
        "llava",
        "vision",
        "-vl",
        "vl-",
        "moondream",
        "minicpm-v",
        "gemma3",
        "pixtral",
        "smolvlm",
    ]) {
        caps.push(Capability::Vision);
    }
    caps
}

/// A model worth pulling and what it can do.
pub(super) type Suggestion = (&'static str, &'static [Capability]);

/// A download that did not finish, and why.
pub(super) fn pull_failed(backend: &Backend, model: &str, reason: String) -> ToolError {
    ToolError::PullFailed {
        model: model.to_owned(),
        backend: backend.name().to_owned(),
        reason,
    }
}

/// Each probe request's timeout: servers are local, and a port that takes
/// longer than this is not an inference server worth waiting for.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(800);
