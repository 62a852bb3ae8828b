//! What models each backend has: loaded (in memory, answers at once),
//! downloaded (on disk, loaded on first use), and suggested (a small list
//! of models worth pulling, for servers with a pull API), each with its
//! capabilities as the server's API states them, or guessed from the name
//! when the API says nothing. Also the downloads themselves, which only
//! ever happen when a call passes `allow_download: true`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, BackendError, Origin};
use crate::config::BackendKind;
use crate::error::ToolError;

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

/// Per-backend cache of capability lookups (`/api/show`), which do not
/// change for a given model name while the server runs.
#[derive(Debug, Default)]
pub(crate) struct ShowCache {
    map: Mutex<HashMap<(String, String), Vec<Capability>>>,
}

/// Asks one backend for its models.
pub(crate) async fn list_backend(
    backend: &Backend,
    show: &ShowCache,
) -> Result<BackendModels, BackendError> {
    let (loaded, downloaded) = match backend.kind() {
        BackendKind::Ollama => list_ollama(backend, show).await?,
        BackendKind::Lemonade => list_lemonade(backend).await?,
        BackendKind::Lmstudio => list_lmstudio(backend).await?,
        BackendKind::Localai => list_localai(backend).await?,
        BackendKind::Llamacpp => list_llamacpp(backend).await?,
        BackendKind::Vllm | BackendKind::Openai => (list_openai(backend).await?, Vec::new()),
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

type Listed = Vec<(String, Vec<Capability>, Option<u64>)>;

fn ids(v: &Value, list_key: &str, id_keys: &[&str]) -> Vec<(String, Option<u64>)> {
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

fn require_list(backend: &Backend, path: &str, v: &Value, key: &str) -> Result<(), BackendError> {
    match v.get(key) {
        Some(Value::Array(_)) => Ok(()),
        // Ollama answers `{"models": null}` when it has none.
        Some(Value::Null) => Ok(()),
        _ => Err(backend.malformed(path, format!("expected a `{key}` array"))),
    }
}

async fn list_openai(backend: &Backend) -> Result<Listed, BackendError> {
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

async fn list_llamacpp(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let mut models = list_openai(backend).await?;
    // `/props` says what the one loaded model takes besides text.
    if let Ok(props) = backend.get_json("/props").await {
        let modal = props.get("modalities");
        let flag = |k: &str| modal.and_then(|m| m.get(k)).and_then(Value::as_bool) == Some(true);
        for (_, caps, _) in &mut models {
            if flag("vision") && !caps.contains(&Capability::Vision) {
                caps.push(Capability::Vision);
            }
            if flag("audio") && !caps.contains(&Capability::Transcription) {
                caps.push(Capability::Transcription);
            }
        }
    }
    Ok((models, Vec::new()))
}

async fn list_ollama(
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
        futures::future::join_all(names.iter().map(|n| ollama_capabilities(backend, show, n)))
            .await;
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
async fn ollama_capabilities(backend: &Backend, show: &ShowCache, model: &str) -> Vec<Capability> {
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

async fn list_lemonade(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
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
            .map(lemonade_capabilities)
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
                lemonade_capabilities(m),
                m.get("size").and_then(Value::as_u64),
            ))
        })
        .collect();
    Ok((loaded, downloaded))
}

/// Lemonade states capabilities as `labels` (and the `recipe` tells
/// speech, image and transcription engines apart).
fn lemonade_capabilities(m: &Value) -> Vec<Capability> {
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

async fn list_lmstudio(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
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

async fn list_localai(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let all = list_openai(backend).await?;
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

/// Models worth pulling, per server that can pull: small, common ones.
pub(crate) fn suggestions(kind: BackendKind) -> &'static [(&'static str, &'static [Capability])] {
    use Capability::*;
    match kind {
        BackendKind::Ollama => &[
            ("qwen3:0.6b", &[Chat, Tools]),
            ("llama3.2:3b", &[Chat, Tools]),
            ("qwen2.5vl:3b", &[Chat, Vision]),
            ("nomic-embed-text", &[Embeddings]),
        ],
        BackendKind::Lemonade => &[
            ("Qwen3-0.6B-GGUF", &[Chat, Tools]),
            ("Gemma-3-4b-it-GGUF", &[Chat, Vision]),
            ("nomic-embed-text-v1-GGUF", &[Embeddings]),
            ("Whisper-Tiny", &[Transcription]),
            ("kokoro-v1", &[Speech]),
            ("SD-Turbo", &[Image]),
        ],
        BackendKind::Localai => &[
            ("qwen3-0.6b", &[Chat, Tools]),
            ("nomic-embed-text-v1.5", &[Embeddings]),
            ("whisper-base", &[Transcription]),
        ],
        _ => &[],
    }
}

/// Sends a call's progress notifications so that they only ever grow, as
/// the MCP spec requires, across everything the call does (a download,
/// then generated tokens) however the servers' own counters move.
#[derive(Debug)]
pub(crate) struct Reporter {
    progress: mcpyard_gateway::Progress,
    last: Mutex<f64>,
}

impl Reporter {
    pub(crate) fn new(progress: mcpyard_gateway::Progress) -> Self {
        Self {
            progress,
            last: Mutex::new(0.0),
        }
    }

    /// Whether the client asked for progress.
    pub(crate) fn is_active(&self) -> bool {
        self.progress.is_active()
    }

    /// Reports `value` when it is past the last value reported.
    pub(crate) async fn report(&self, value: f64, total: Option<f64>, message: &str) {
        let grew = {
            let mut last = self.last.lock().expect("progress lock poisoned");
            let grew = value.is_finite() && value > *last;
            if grew {
                *last = value;
            }
            grew
        };
        if grew {
            self.progress.report(value, total, Some(message)).await;
        }
    }

    /// Reports one step more than the last value (a generated token).
    pub(crate) async fn advance(&self, message: &str) {
        let value = {
            let mut last = self.last.lock().expect("progress lock poisoned");
            *last += 1.0;
            *last
        };
        self.progress.report(value, None, Some(message)).await;
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
    let fail = |reason: String| ToolError::PullFailed {
        model: model.to_owned(),
        backend: backend.name().to_owned(),
        reason,
    };
    match backend.kind() {
        BackendKind::Ollama => {
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
        BackendKind::Lemonade => {
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
        BackendKind::Localai => {
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
        other => Err(fail(format!(
            "{} has no download API; download the model with its own tools",
            other.display_name()
        ))),
    }
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

    #[test]
    fn lemonade_labels_map_to_capabilities() {
        let m = json!({"id": "x", "labels": ["vision", "tool-calling"], "recipe": "llamacpp"});
        assert_eq!(
            lemonade_capabilities(&m),
            vec![Capability::Chat, Capability::Vision, Capability::Tools]
        );
        let w = json!({"id": "Whisper-Tiny", "labels": ["audio"], "recipe": "whispercpp"});
        assert_eq!(lemonade_capabilities(&w), vec![Capability::Transcription]);
        let e = json!({"id": "e", "labels": ["embeddings"]});
        assert_eq!(lemonade_capabilities(&e), vec![Capability::Embeddings]);
    }
}
