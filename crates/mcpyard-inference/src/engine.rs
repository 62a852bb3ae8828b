//! The shared state every tool works with: the settings, the backends in
//! use, the model listing across them, and model selection (which model
//! serves a call, on which backend, downloading it only when the call
//! allows).

use std::sync::Arc;

use mcpyard_gateway::{Sandbox, SandboxKeys};
use serde::Serialize;

use crate::backend::{Backend, BackendError};
use crate::config::InferenceConfig;
use crate::discovery::Registry;
use crate::error::ToolError;
use crate::tools::Call;
use crate::vendors::{
    self, same_model, BackendModels, Capability, ModelInfo, ModelState, ShowCache,
};

/// Settings, backends and caches shared by the tools.
#[derive(Debug)]
pub(crate) struct Inference {
    config: Arc<InferenceConfig>,
    registry: Registry,
    show: ShowCache,
    files: Sandbox,
    /// The last listing, reused for a few seconds so that a burst of calls
    /// does not ask every backend for its models each time.
    recent: tokio::sync::Mutex<Option<(tokio::time::Instant, Listing)>>,
}

/// How long a listing is reused when every backend in it was healthy.
const LISTING_TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// The models of every backend.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Listing {
    pub(crate) backends: Vec<BackendModels>,
}

impl Listing {
    fn available(&self) -> impl Iterator<Item = &ModelInfo> {
        self.backends.iter().flat_map(|b| b.available())
    }

    /// The recommended chat model across backends, loaded first.
    pub(crate) fn recommended_chat(&self) -> Option<&ModelInfo> {
        let picks: Vec<&ModelInfo> = self
            .backends
            .iter()
            .filter_map(vendors::recommend_chat)
            .collect();
        let rank = |m: &&ModelInfo| {
            let state = match m.state {
                ModelState::Loaded => 3,
                ModelState::Downloaded => 2,
                ModelState::Suggested => 1,
            };
            state * 2 + m.has(Capability::Tools) as u8
        };
        let best = picks.iter().map(rank).max()?;
        picks.into_iter().find(|m| rank(m) == best)
    }

    /// "a (backend, loaded: chat), b (...)" or "none".
    pub(crate) fn describe_available(&self) -> String {
        let items: Vec<String> = self
            .available()
            .map(|m| {
                let caps: Vec<&str> = m.capabilities.iter().map(|c| c.as_str()).collect();
                let state = if m.state == ModelState::Loaded {
                    "loaded"
                } else {
                    "downloaded"
                };
                format!(
                    "{} ({} on `{}`: {})",
                    m.id,
                    state,
                    m.backend,
                    caps.join(", ")
                )
            })
            .collect();
        let mut text = if items.is_empty() {
            "none".to_owned()
        } else {
            items.join("; ")
        };
        for b in self.backends.iter().filter(|b| !b.healthy) {
            text.push_str(&format!(
                " (backend `{}` did not answer: {})",
                b.backend,
                b.error.as_deref().unwrap_or("unknown error")
            ));
        }
        text
    }
}

/// What a call asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelRequest {
    pub(crate) model: Option<String>,
    pub(crate) allow_download: bool,
}

/// The model that serves a call.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) backend: Arc<Backend>,
    pub(crate) model: String,
}

impl Inference {
    pub(crate) fn new(config: InferenceConfig) -> Self {
        let config = Arc::new(config);
        let files = Sandbox::new(
            config.input_roots.clone(),
            config.effective_output_dir(),
            config.max_base64_bytes,
        )
        .with_keys(SandboxKeys {
            input_roots: "[inference] input_roots".to_owned(),
            output_dir: "[inference] output_dir".to_owned(),
            max_input_bytes: "[inference] max_base64_bytes".to_owned(),
        });
        Self {
            registry: Registry::new(config.clone()),
            config,
            show: ShowCache::default(),
            files,
            recent: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) fn config(&self) -> &InferenceConfig {
        &self.config
    }

    /// Local input files and the output folder, within their limits.
    pub(crate) fn files(&self) -> &Sandbox {
        &self.files
    }

    /// The backends in use (see [`Registry::backends`]).
    pub(crate) async fn backends(&self, refresh: bool) -> Vec<Arc<Backend>> {
        self.registry.backends(refresh).await
    }

    /// Which servers are used, and how discovery found them.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Called with every backend failure: a server that stopped answering
    /// makes discovery probe again on the next call.
    pub(crate) async fn note_failure(&self, e: &BackendError) {
        *self.recent.lock().await = None;
        if e.is_unreachable() {
            self.registry.invalidate().await;
        }
    }

    /// Forgets the reused listing (a model was downloaded, a backend failed).
    pub(crate) async fn forget_listing(&self) {
        *self.recent.lock().await = None;
    }

    /// Every backend's models. A listing in which every backend was healthy
    /// is reused for [`LISTING_TTL`] unless `refresh` asks for a new one.
    pub(crate) async fn listing(&self, refresh: bool) -> Listing {
        if !refresh {
            if let Some((at, listing)) = self.recent.lock().await.as_ref() {
                if at.elapsed() < LISTING_TTL {
                    return listing.clone();
                }
            }
        }
        let listing = self.list_backends(refresh).await;
        let healthy = !listing.backends.is_empty() && listing.backends.iter().all(|b| b.healthy);
        *self.recent.lock().await = healthy.then(|| (tokio::time::Instant::now(), listing.clone()));
        listing
    }

    /// Every backend's models, asked concurrently. A backend that fails
    /// is listed as unhealthy with the reason.
    async fn list_backends(&self, refresh: bool) -> Listing {
        let backends = self.backends(refresh).await;
        let asked = futures::future::join_all(
            backends
                .iter()
                .map(|b| async move { (b, vendors::list_backend(b, &self.show).await) }),
        )
        .await;
        let mut out = Vec::new();
        for (b, r) in asked {
            match r {
                Ok(m) => out.push(m),
                Err(e) => {
                    self.note_failure(&e).await;
                    out.push(BackendModels {
                        backend: b.name().to_owned(),
                        kind: b.kind(),
                        url: b.base_url().to_owned(),
                        origin: b.origin(),
                        healthy: false,
                        error: Some(e.to_string()),
                        loaded: Vec::new(),
                        downloaded: Vec::new(),
                        suggested: Vec::new(),
                        recommended_chat: None,
                    });
                }
            }
        }
        Listing { backends: out }
    }

    /// What to tell a caller when there is no backend at all.
    pub(crate) fn no_backend_advice(&self) -> String {
        if self.config.discovery_enabled() {
            let ports: Vec<String> = self
                .config
                .discover_ports
                .iter()
                .map(u16::to_string)
                .collect();
            format!(
                "Nothing answered on 127.0.0.1 ports {}. Start one (Ollama: `ollama serve`; llama.cpp: `llama-server -m MODEL.gguf`; LM Studio: `lms server start`; Lemonade: `lemonade-server serve`; LocalAI: `local-ai run`; vLLM: `vllm serve MODEL`), or configure [inference] backends with its url.",
                ports.join(", ")
            )
        } else {
            "No backend is configured and discovery is off: add [[inference.backends]] entries or set [inference] discover = true.".to_owned()
        }
    }

    /// Picks the model and backend for a call needing `need`:
    /// the named model on the backend that has it, else a loaded model
    /// with the capability, else a downloaded one; a download happens only
    /// with `allow_download`.
    pub(crate) async fn resolve(
        &self,
        req: &ModelRequest,
        need: Capability,
        call: &Call,
    ) -> Result<Resolved, ToolError> {
        let backends = self.backends(false).await;
        if backends.is_empty() {
            return Err(ToolError::NoBackend(self.no_backend_advice()));
        }
        let listing = self.listing(false).await;
        if listing.backends.iter().all(|b| !b.healthy) {
            // Every server failed: the first one's error says what to fix.
            let first = listing.backends.first().and_then(|b| b.error.clone());
            return Err(ToolError::NoBackend(first.unwrap_or_default()));
        }
        let by_name = |name: &str| backends.iter().find(|b| b.name() == name).cloned();
        let pull_hint = |model: Option<&str>| -> String {
            let target = listing
                .backends
                .iter()
                .filter(|b| b.healthy && b.kind.can_pull())
                .find(|b| model.is_none_or(|m| b.suggested.iter().any(|s| same_model(&s.id, m))))
                .or_else(|| {
                    listing
                        .backends
                        .iter()
                        .find(|b| b.healthy && b.kind.can_pull())
                });
            match (target, model) {
                (Some(b), Some(_)) => format!(
                    " Pass `allow_download: true` to download it with `{}` ({}), or pick an available model.",
                    b.backend,
                    b.kind.display_name()
                ),
                (Some(b), None) => match b.suggested.iter().find(|s| s.has(need)) {
                    Some(s) => format!(
                        ", or pass `allow_download: true` to download `{}` with `{}` ({})",
                        s.id,
                        b.backend,
                        b.kind.display_name()
                    ),
                    None => String::new(),
                },
                (None, Some(_)) => " Load or download it with your inference server's own tools first (none of the servers found has a download API mcpyard can use).".to_owned(),
                (None, None) => String::new(),
            }
        };

        if let Some(name) = req.model.as_deref() {
            let mut found: Vec<&ModelInfo> = listing
                .available()
                .filter(|m| same_model(&m.id, name))
                .collect();
            found.sort_by_key(|m| m.state != ModelState::Loaded);
            if let Some(m) = found.first() {
                if let Some(backend) = by_name(&m.backend) {
                    return Ok(Resolved {
                        backend,
                        model: m.id.clone(),
                    });
                }
            }
            if !req.allow_download {
                return Err(ToolError::UnknownModel {
                    model: name.to_owned(),
                    available: listing.describe_available(),
                    pull: pull_hint(Some(name)),
                });
            }
            let target = listing
                .backends
                .iter()
                .filter(|b| b.healthy && b.kind.can_pull())
                .max_by_key(|b| b.suggested.iter().any(|s| same_model(&s.id, name)) as u8)
                .and_then(|b| by_name(&b.backend));
            let Some(backend) = target else {
                return Err(ToolError::UnknownModel {
                    model: name.to_owned(),
                    available: listing.describe_available(),
                    pull: pull_hint(Some(name)),
                });
            };
            vendors::pull(&backend, name, &call.progress, &call.ctx.cancel).await?;
            self.forget_listing().await;
            return Ok(Resolved {
                backend,
                model: name.to_owned(),
            });
        }

        for state in [ModelState::Loaded, ModelState::Downloaded] {
            let pick = listing
                .available()
                .filter(|m| m.state == state && m.has(need))
                .max_by_key(|m| (need == Capability::Chat && m.has(Capability::Tools)) as u8);
            if let Some(m) = pick {
                if let Some(backend) = by_name(&m.backend) {
                    return Ok(Resolved {
                        backend,
                        model: m.id.clone(),
                    });
                }
            }
        }
        if req.allow_download {
            let candidate = listing
                .backends
                .iter()
                .filter(|b| b.healthy && b.kind.can_pull())
                .find_map(|b| b.suggested.iter().find(|s| s.has(need)).map(|s| (b, s)));
            if let Some((b, s)) = candidate {
                if let Some(backend) = by_name(&b.backend) {
                    vendors::pull(&backend, &s.id, &call.progress, &call.ctx.cancel).await?;
                    self.forget_listing().await;
                    return Ok(Resolved {
                        backend,
                        model: s.id.clone(),
                    });
                }
            }
        }
        Err(ToolError::NoModel {
            capability: need,
            available: listing.describe_available(),
            pull: pull_hint(None),
        })
    }
}
