//! Which inference servers to use: the configured ones, plus (when
//! discovery is on) whatever answers on the usual loopback ports, told
//! apart by what each server's native API says about itself.
//!
//! The discovered set is cached; it is probed again when a caller asks
//! (`list_models` with `refresh: true`), when a backend stops answering,
//! and while nothing has been found.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::backend::{Backend, Origin};
use crate::config::{BackendKind, BackendSpec, InferenceConfig};

/// Each probe request's timeout: servers are local, and a port that takes
/// longer than this is not an inference server worth waiting for.
const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// The backends in use.
#[derive(Debug)]
pub(crate) struct Registry {
    config: Arc<InferenceConfig>,
    client: reqwest::Client,
    configured: Vec<Arc<Backend>>,
    /// `None` until probed, and again after [`Registry::invalidate`].
    discovered: tokio::sync::Mutex<Option<Vec<Arc<Backend>>>>,
}

impl Registry {
    pub(crate) fn new(config: Arc<InferenceConfig>, client: reqwest::Client) -> Self {
        let configured = config
            .backends
            .iter()
            .map(|spec| {
                Arc::new(Backend::from_spec(
                    spec,
                    client.clone(),
                    config.request_timeout,
                    Origin::Configured,
                ))
            })
            .collect();
        Self {
            config,
            client,
            configured,
            discovered: tokio::sync::Mutex::new(None),
        }
    }

    /// Configured backends, then discovered ones (probing when the cache is
    /// empty, stale, or `refresh` is asked).
    pub(crate) async fn backends(&self, refresh: bool) -> Vec<Arc<Backend>> {
        let mut all = self.configured.clone();
        if !self.config.discovery_enabled() {
            return all;
        }
        let mut cache = self.discovered.lock().await;
        let stale = refresh || cache.as_ref().is_none_or(Vec::is_empty);
        if stale {
            let found = self.probe_all().await;
            tracing::info!(
                found = found.len(),
                ports = ?self.config.discover_ports,
                "inference servers discovered"
            );
            *cache = Some(found);
        }
        for b in cache.iter().flatten() {
            if !all.iter().any(|c| c.base_url() == b.base_url()) {
                all.push(b.clone());
            }
        }
        all
    }

    /// Forgets the discovered set, so the next call probes again.
    pub(crate) async fn invalidate(&self) {
        if self.config.discovery_enabled() {
            *self.discovered.lock().await = None;
        }
    }

    async fn probe_all(&self) -> Vec<Arc<Backend>> {
        let probes = self
            .config
            .discover_ports
            .iter()
            .map(|&port| async move { (port, identify(&self.client, port).await) });
        let results = futures::future::join_all(probes).await;
        let mut out: Vec<Arc<Backend>> = Vec::new();
        for (port, kind) in results {
            let Some(kind) = kind else { continue };
            let mut name = kind.as_str().to_owned();
            if out.iter().any(|b| b.name() == name)
                || self.configured.iter().any(|b| b.name() == name)
            {
                name = format!("{name}-{port}");
            }
            let spec = BackendSpec {
                name,
                kind,
                url: format!("http://127.0.0.1:{port}"),
                api_key_env: None,
            };
            out.push(Arc::new(Backend::from_spec(
                &spec,
                self.client.clone(),
                self.config.request_timeout,
                Origin::Discovered,
            )));
        }
        out
    }
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
    match probe.get_json_within("/api/v1/health", PROBE_TIMEOUT).await {
        Ok(v) if v.get("all_models_loaded").is_some() => return Some(BackendKind::Lemonade),
        Err(e) if e.is_unreachable() => return None,
        Err(crate::BackendError::Timeout { .. }) => return None,
        _ => {}
    }
    // LocalAI before Ollama: LocalAI can imitate Ollama's API and its
    // "Ollama is running" root, but has no pull endpoint of Ollama's; real
    // Ollama has neither of these routes.
    // Its discovery document lists its endpoints (LM Studio answers unknown
    // routes with 200 and an `error` object, so any JSON is not enough).
    if let Ok(v) = probe
        .get_json_within("/.well-known/localai.json", PROBE_TIMEOUT)
        .await
    {
        if v.get("endpoints").is_some() || v.get("endpoint_groups").is_some() {
            return Some(BackendKind::Localai);
        }
    }
    if let Ok(v) = probe.get_json_within("/system", PROBE_TIMEOUT).await {
        if v.get("loaded_models").is_some() {
            return Some(BackendKind::Localai);
        }
    }
    if let Ok(text) = probe.get_text_within("/", PROBE_TIMEOUT).await {
        if text.contains("Ollama is running") {
            return Some(BackendKind::Ollama);
        }
    }
    if let Ok(v) = probe.get_json_within("/props", PROBE_TIMEOUT).await {
        if v.get("build_info").is_some() {
            return Some(BackendKind::Llamacpp);
        }
    }
    if let Ok(v) = probe.get_json_within("/api/v1/models", PROBE_TIMEOUT).await {
        let entries = v
            .get("models")
            .or_else(|| v.get("data"))
            .and_then(Value::as_array);
        if entries.is_some_and(|e| e.iter().any(|m| m.get("loaded_instances").is_some())) {
            return Some(BackendKind::Lmstudio);
        }
    }
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
