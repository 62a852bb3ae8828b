//! What mcpyard knows about each kind of inference server, one file per
//! vendor: how to recognise it on a port, how to list its models with
//! their capabilities, which models to suggest, and how to pull one. This
//! file holds the shared model types and dispatches by [`BackendKind`].
//!
//! A model is loaded (in memory, answers at once), downloaded (on disk,
//! loaded on first use), or suggested (a small list of models worth
//! pulling, for servers with a pull API), each with its capabilities as the
//! server's API states them, or guessed from the name when the API says
//! nothing. Downloads only ever happen when a call passes
//! `allow_download: true`.

mod lemonade;
mod llamacpp;
mod lmstudio;
mod localai;
mod ollama;
mod openai;

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use ollama::ShowCache;

use crate::backend::{Backend, BackendError, Origin};
use crate::config::{BackendKind, BackendSpec};
use crate::error::ToolError;
use crate::progress::Reporter;

/// What a model can be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Chat,
    Vision,
    Embeddings,
    Transcription,
    Image,
    Speech,
    /// Chat with function calling.
    Tools,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Vision => "vision",
            Self::Embeddings => "embeddings",
            Self::Transcription => "transcription",
            Self::Image => "image",
            Self::Speech => "speech",
            Self::Tools => "tools",
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a model stands on its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelState {
    Loaded,
    Downloaded,
    Suggested,
}

/// One model of one backend.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// The id to pass as `model`.
    pub id: String,
    pub backend: String,
    pub state: ModelState,
    pub capabilities: Vec<Capability>,
    /// Size on disk in bytes, when the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ModelInfo {
    pub fn has(&self, c: Capability) -> bool {
        self.capabilities.contains(&c)
    }
}

/// Everything one backend has, or why it could not be asked.
#[derive(Debug, Clone, Serialize)]
pub struct BackendModels {
    pub backend: String,
    pub kind: BackendKind,
    pub url: String,
    pub origin: Origin,
    pub healthy: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// In memory now.
    pub loaded: Vec<ModelInfo>,
    /// On disk but not loaded (a loaded model is not repeated here).
    pub downloaded: Vec<ModelInfo>,
    /// Not on disk; pullable with `allow_download: true`.
    pub suggested: Vec<ModelInfo>,
    /// The best chat model of this backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommended_chat: Option<String>,
}

impl BackendModels {
    /// Loaded, then downloaded models.
    pub(crate) fn available(&self) -> impl Iterator<Item = &ModelInfo> {
        self.loaded.iter().chain(self.downloaded.iter())
    }
}

/// Asks one backend for its models.
pub(crate) async fn list_backend(
    backend: &Backend,
    show: &ShowCache,
) -> Result<BackendModels, BackendError> {
    let (loaded, downloaded) = match backend.kind() {
        BackendKind::Ollama => ollama::list(backend, show).await?,
        BackendKind::Lemonade => lemonade::list(backend).await?,
        BackendKind::Lmstudio => lmstudio::list(backend).await?,
        BackendKind::Localai => localai::list(backend).await?,
        BackendKind::Llamacpp => llamacpp::list(backend).await?,
        BackendKind::Vllm | BackendKind::Openai => (openai::list(backend).await?, Vec::new()),
    };
    let to_info = |id: String, caps: Vec<Capability>, size: Option<u64>, state| ModelInfo {
        id,
        backend: backend.name().to_owned(),
        state,
        capabilities: caps,
        size,
    };
    let loaded: Vec<ModelInfo> = loaded
        .into_iter()
        .map(|(id, caps, size)| to_info(id, caps, size, ModelState::Loaded))
        .collect();
    let downloaded: Vec<ModelInfo> = downloaded
        .into_iter()
        .filter(|(id, _, _)| !loaded.iter().any(|l| same_model(&l.id, id)))
        .map(|(id, caps, size)| to_info(id, caps, size, ModelState::Downloaded))
        .collect();
    let suggested: Vec<ModelInfo> = suggestions(backend.kind())
        .iter()
        .filter(|(id, _)| {
            !loaded
                .iter()
                .chain(downloaded.iter())
                .any(|m| same_model(&m.id, id))
        })
        .map(|(id, caps)| to_info((*id).to_owned(), caps.to_vec(), None, ModelState::Suggested))
        .collect();
    let mut out = BackendModels {
        backend: backend.name().to_owned(),
        kind: backend.kind(),
        url: backend.base_url().to_owned(),
        origin: backend.origin(),
        healthy: true,
        error: None,
        loaded,
        downloaded,
        suggested,
        recommended_chat: None,
    };
    out.recommended_chat = recommend_chat(&out).map(|m| m.id.clone());
    Ok(out)
}

/// The chat model to suggest: loaded before downloaded before suggested,
/// and one that calls tools before one that does not.
pub(crate) fn recommend_chat(models: &BackendModels) -> Option<&ModelInfo> {
    for group in [&models.loaded, &models.downloaded, &models.suggested] {
        let best = group
            .iter()
            .filter(|m| m.has(Capability::Chat))
            .max_by_key(|m| m.has(Capability::Tools) as u8);
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Whether two names are the same model (Ollama adds `:latest`).
pub(crate) fn same_model(a: &str, b: &str) -> bool {
    a == b
        || a.strip_suffix(":latest").is_some_and(|x| x == b)
        || b.strip_suffix(":latest").is_some_and(|x| x == a)
}

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

/// Models worth pulling, per server that can pull: small, common ones.
pub(crate) fn suggestions(kind: BackendKind) -> &'static [Suggestion] {
    match kind {
        BackendKind::Ollama => ollama::SUGGESTIONS,
        BackendKind::Lemonade => lemonade::SUGGESTIONS,
        BackendKind::Localai => localai::SUGGESTIONS,
        _ => &[],
    }
}

/// Downloads `model` through `backend`'s pull API, reporting progress.
pub(crate) async fn pull(
    backend: &Backend,
    model: &str,
    reporter: &Reporter,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    tracing::info!(
        backend = backend.name(),
        model,
        "pulling a model (allow_download)"
    );
    match backend.kind() {
        BackendKind::Ollama => ollama::pull(backend, model, reporter, cancel).await,
        BackendKind::Lemonade => lemonade::pull(backend, model, reporter, cancel).await,
        BackendKind::Localai => localai::pull(backend, model, reporter, cancel).await,
        other => Err(pull_failed(
            backend,
            model,
            format!(
                "{} has no download API; download the model with its own tools",
                other.display_name()
            ),
        )),
    }
}

/// A download that did not finish, and why.
fn pull_failed(backend: &Backend, model: &str, reason: String) -> ToolError {
    ToolError::PullFailed {
        model: model.to_owned(),
        backend: backend.name().to_owned(),
        reason,
    }
}

/// Each probe request's timeout: servers are local, and a port that takes
/// longer than this is not an inference server worth waiting for.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// What answers on `127.0.0.1:port`, if an inference server does. The
/// order matters: Lemonade and LocalAI imitate Ollama's routes, so they are
/// asked first.
pub async fn identify(client: &reqwest::Client, port: u16) -> Option<BackendKind> {
    let probe = Backend::from_spec(
        &BackendSpec {
            name: format!("port {port}"),
            kind: BackendKind::Openai,
            url: format!("http://127.0.0.1:{port}"),
            api_key_env: None,
        },
        client.clone(),
        PROBE_TIMEOUT,
        Origin::Discovered,
    );
    // Nothing listening: one failed connection settles it.
    match lemonade::identify(&probe).await {
        Ok(true) => return Some(BackendKind::Lemonade),
        Err(e) if e.is_unreachable() => return None,
        Err(BackendError::Timeout { .. }) => return None,
        _ => {}
    }
    if localai::identify(&probe).await {
        return Some(BackendKind::Localai);
    }
    if ollama::identify(&probe).await {
        return Some(BackendKind::Ollama);
    }
    if llamacpp::identify(&probe).await {
        return Some(BackendKind::Llamacpp);
    }
    if lmstudio::identify(&probe).await {
        return Some(BackendKind::Lmstudio);
    }
    openai::identify(&probe).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_suggest_capabilities() {
        assert_eq!(
            capabilities_from_name("nomic-embed-text"),
            vec![Capability::Embeddings]
        );
        assert_eq!(
            capabilities_from_name("whisper-large-v3"),
            vec![Capability::Transcription]
        );
        assert_eq!(
            capabilities_from_name("kokoro-v1"),
            vec![Capability::Speech]
        );
        assert_eq!(capabilities_from_name("sd-turbo"), vec![Capability::Image]);
        assert_eq!(
            capabilities_from_name("llava:7b"),
            vec![Capability::Chat, Capability::Vision]
        );
        assert_eq!(capabilities_from_name("qwen3:0.6b"), vec![Capability::Chat]);
    }

    #[test]
    fn ollama_latest_tag_matches_the_bare_name() {
        assert!(same_model("llama3.2", "llama3.2:latest"));
        assert!(same_model("llama3.2:latest", "llama3.2"));
        assert!(!same_model("llama3.2:1b", "llama3.2"));
    }
}
