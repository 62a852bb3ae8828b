//! What mcpyard knows about each kind of inference server, one file per
//! vendor: how to recognise it on a port, how to list its models with
//! their capabilities, which models to suggest, and how to pull one. This
//! file dispatches by [`BackendKind`]; the model types are in `model.rs`,
//! what the vendors share in `shared.rs`.
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
mod model;
mod ollama;
mod openai;
mod shared;

use tokio_util::sync::CancellationToken;

pub use model::{BackendModels, Capability, ModelInfo, ModelState};
pub(crate) use ollama::ShowCache;
pub use shared::capabilities_from_name;
pub(crate) use shared::PROBE_TIMEOUT;
use shared::{pull_failed, Suggestion};

use crate::backend::{Backend, BackendError, Origin};
use crate::config::{BackendKind, BackendSpec};
use crate::error::ToolError;
use crate::progress::Reporter;

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

/// Whether something accepts a TCP connection at `address` within
/// `timeout`.
pub(crate) async fn accepts_connections(address: &str, timeout: std::time::Duration) -> bool {
    matches!(
        tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await,
        Ok(Ok(_))
    )
}

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
