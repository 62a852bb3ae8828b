//! The composition root: where validated [`Settings`] become running parts.
//! `config` reads and checks and starts nothing; this module opens the
//! audit trail, makes the metrics registry, lets the local models answer
//! upstreams' sampling requests, binds and serves the metrics listener and
//! hands each front door its options. `serve`, `stdio` and `check
//! --connect` start what it returns, and nothing else builds these parts.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use mcpyard_gateway::{AuditTrail, Gateway, GatewayConfig, Metrics};
use mcpyard_server::{serve_metrics, AuthOptions, HttpOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{ApiKey, MetricsSettings, Settings};

/// What the gateway is put together for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Serving clients: calls are recorded in the audit trail, if any.
    Serve,
    /// `check --connect`: the sources are started and asked what they
    /// offer; nothing is recorded.
    Check,
}

/// The gateway's configuration with its runtime parts. Takes it out of
/// `settings`.
pub(crate) fn gateway(settings: &mut Settings, purpose: Purpose) -> anyhow::Result<GatewayConfig> {
    let mut gateway = std::mem::take(&mut settings.gateway);
    if settings.metrics != MetricsSettings::Off {
        gateway.metrics = Some(Arc::new(Metrics::new()));
    }
    if let Some(models) = &settings.local_models {
        gateway.sampler = Some(Arc::new(models.clone()));
    }
    if let (Purpose::Serve, Some(file)) = (purpose, &settings.audit) {
        let mut trail = AuditTrail::open(file.clone())
            .with_context(|| format!("cannot open the audit file {}", file.path.display()))?;
        if gateway.state.shared() {
            trail = trail.naming_replica(&gateway.replica);
        }
        gateway.audit = Some(trail);
        tracing::info!(file = %file.path.display(), "audit trail on");
    }
    Ok(gateway)
}

/// The HTTP door's options, listening at `addr` (the address bound), with
/// the one-key shorthand first among the keys. Takes them out of
/// `settings`.
pub(crate) fn http_options(
    settings: &mut Settings,
    addr: SocketAddr,
    shorthand: Option<&ApiKey>,
) -> HttpOptions {
    let mut options = std::mem::take(&mut settings.http);
    options.listen = addr;
    if let Some(key) = shorthand {
        let mut keys = AuthOptions::single_key(key.value.clone()).keys;
        keys.append(&mut options.auth.keys);
        options.auth.keys = keys;
    }
    options
}

/// The listener of `/metrics` on an address of its own, when `[metrics]`
/// has a `listen`. `http_door`: whether the metrics can ride along on the
/// MCP listener instead (the stdio door has none).
pub(crate) async fn bind_metrics(
    settings: &Settings,
    http_door: bool,
) -> anyhow::Result<Option<TcpListener>> {
    match settings.metrics {
        MetricsSettings::Apart(at) => {
            Ok(Some(TcpListener::bind(at).await.with_context(|| {
                format!("metrics.listen: cannot listen on {at}")
            })?))
        }
        MetricsSettings::WithMcp if !http_door => {
            tracing::warn!("[metrics] has no `listen`: the stdio door has no HTTP listener to serve /metrics on");
            Ok(None)
        }
        MetricsSettings::WithMcp | MetricsSettings::Off => Ok(None),
    }
}

/// Serves `/metrics` on `listener` until `token` is cancelled.
pub(crate) fn spawn_metrics(
    listener: TcpListener,
    gateway: &Gateway,
    credential: Option<String>,
    token: &CancellationToken,
) {
    let (gateway, token) = (gateway.clone(), token.clone());
    tokio::spawn(async move {
        if let Err(e) = serve_metrics(listener, gateway, credential, token).await {
            tracing::warn!(error = %e, "the metrics listener failed");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::toml;
    use crate::config::KeySource;

    #[test]
    fn the_metrics_registry_exists_when_metrics_are_on() {
        let mut on = toml("[metrics]\nenabled = true\n").expect("valid");
        assert!(gateway(&mut on, Purpose::Check).unwrap().metrics.is_some());
        let mut off = toml("").expect("valid");
        assert!(gateway(&mut off, Purpose::Check).unwrap().metrics.is_none());
    }

    #[test]
    fn the_local_models_answer_sampling_when_they_are_on() {
        let mut on = toml("").expect("valid");
        assert!(on.local_models.is_some());
        assert!(gateway(&mut on, Purpose::Check).unwrap().sampler.is_some());
        let mut off = toml("[inference]\nenabled = false\n").expect("valid");
        assert!(gateway(&mut off, Purpose::Check).unwrap().sampler.is_none());
    }

    #[test]
    fn the_audit_trail_is_opened_to_serve_and_not_to_check() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("audit.jsonl");
        let text = format!("[audit]\nfile = \"{}\"\n", file.display());
        let mut checked = toml(&text).expect("valid");
        assert!(gateway(&mut checked, Purpose::Check)
            .unwrap()
            .audit
            .is_none());
        assert!(!file.exists());
        let mut served = toml(&text).expect("valid");
        assert!(gateway(&mut served, Purpose::Serve)
            .unwrap()
            .audit
            .is_some());
        assert!(file.exists());
    }

    #[test]
    fn the_shorthand_key_comes_first_and_the_door_listens_where_it_was_bound() {
        let mut s = toml("[[auth.keys]]\nname = \"ci\"\nkey_env = \"TOKEN\"\n").expect("valid");
        let shorthand = ApiKey {
            value: "from-the-flag".into(),
            source: KeySource::Flag,
        };
        let bound: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let options = http_options(&mut s, bound, Some(&shorthand));
        assert_eq!(options.listen, bound);
        let names: Vec<&str> = options.auth.keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, [mcpyard_server::DEFAULT_KEY_NAME, "ci"]);
    }
}
