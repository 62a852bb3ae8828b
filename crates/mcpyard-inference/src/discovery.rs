//! Which inference servers to use: the configured ones, plus (when
//! discovery is on) whatever answers on the usual loopback ports, told
//! apart by what each server's native API says about itself (each
//! vendor's file in `vendors/` knows how to recognise it).
//!
//! The discovered set is cached; it is probed again when a caller asks
//! (`list_models` with `refresh: true`), when a backend stops answering,
//! and while nothing has been found.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use crate::backend::{http_client, Backend, Origin};
use crate::config::{BackendSpec, InferenceConfig};
use crate::vendors::{accepts_connections, identify, PROBE_TIMEOUT};

/// The backends in use.
#[derive(Debug)]
pub(crate) struct Registry {
    config: Arc<InferenceConfig>,
    /// Built when a backend first needs it: a gateway that finds no
    /// server never builds an HTTP client (and its TLS settings) at all.
    client: OnceLock<reqwest::Client>,
    configured: Vec<Arc<Backend>>,
    /// `None` until probed, and again after [`Registry::invalidate`].
    discovered: tokio::sync::Mutex<Option<Vec<Arc<Backend>>>>,
    /// What the last probe of the loopback ports found, for the status.
    last_probe: Mutex<Option<Probe>>,
}

/// One probe of the discovery ports.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub(crate) at: SystemTime,
    /// (port, the kind of server found there)
    pub(crate) found: Vec<(u16, String)>,
}

/// How long a check that a discovered server still listens may take.
const STILL_THERE_TIMEOUT: Duration = Duration::from_secs(2);

impl Registry {
    pub(crate) fn new(config: Arc<InferenceConfig>) -> Self {
        let client = OnceLock::new();
        let configured = config
            .backends
            .iter()
            .map(|spec| {
                Arc::new(Backend::from_spec(
                    spec,
                    client.get_or_init(http_client).clone(),
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
            last_probe: Mutex::new(None),
        }
    }

    fn client(&self) -> &reqwest::Client {
        self.client.get_or_init(http_client)
    }

    /// What the last probe found; `None` before the first.
    pub(crate) fn last_probe(&self) -> Option<Probe> {
        self.last_probe
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether every discovered server still accepts connections; if one
    /// does not, the set is forgotten so the next call probes again. A
    /// connection, not a request: a server busy generating still accepts.
    pub(crate) async fn discovered_still_listen(&self) -> bool {
        let found: Vec<Arc<Backend>> = self.discovered.lock().await.clone().unwrap_or_default();
        for backend in &found {
            let Some(address) = backend.base_url().strip_prefix("http://") else {
                continue;
            };
            if !accepts_connections(address, STILL_THERE_TIMEOUT).await {
                tracing::info!(
                    backend = backend.name(),
                    "a discovered inference server stopped listening"
                );
                self.invalidate().await;
                return false;
            }
        }
        true
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
            // Probed every few seconds while nothing answers: quiet then.
            if found.is_empty() {
                tracing::debug!(ports = ?self.config.discover_ports, "no inference server discovered");
            } else {
                tracing::info!(
                    found = found.len(),
                    ports = ?self.config.discover_ports,
                    "inference servers discovered"
                );
            }
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
        let probes = self.config.discover_ports.iter().map(|&port| async move {
            // Nothing listening, the usual answer on most ports: a
            // refused connection settles it without an HTTP client.
            let address = format!("127.0.0.1:{port}");
            if !accepts_connections(&address, PROBE_TIMEOUT).await {
                return (port, None);
            }
            (port, identify(self.client(), port).await)
        });
        let results = futures::future::join_all(probes).await;
        let found = results
            .iter()
            .filter_map(|(port, kind)| kind.as_ref().map(|k| (*port, k.as_str().to_owned())))
            .collect();
        *self
            .last_probe
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Probe {
            at: SystemTime::now(),
            found,
        });
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
                self.client().clone(),
                self.config.request_timeout,
                Origin::Discovered,
            )));
        }
        out
    }
}
