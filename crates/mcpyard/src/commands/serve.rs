//! `mcpyard serve`: the gateway over HTTP until a signal.

use std::net::SocketAddr;

use anyhow::Context as _;
use mcpyard_gateway::Gateway;
use mcpyard_server::{serve_http_on, serve_metrics, AuthOptions, HttpOptions, SessionMode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::shutdown;
use crate::config::{ApiKey, MetricsSettings, Settings, API_KEY_VAR};

pub(super) async fn run(
    settings: Settings,
    listen: Option<SocketAddr>,
    api_key_flag: Option<String>,
) -> anyhow::Result<()> {
    let listen = listen.unwrap_or(settings.listen);
    let api_key = ApiKey::with_flag(api_key_flag, settings.api_key);
    let max_body_bytes = usize::try_from(settings.max_body_bytes)
        .context("max_body_size: too large for this machine")?;
    // Bind before starting upstreams: a port in use should fail fast and
    // leave no child process behind.
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;

    let mut auth = api_key
        .as_ref()
        .map(|k| AuthOptions::single_key(k.value.clone()))
        .unwrap_or_default();
    auth.keys.extend(settings.auth.keys);
    auth.oauth = settings.auth.oauth;
    log_authentication(&auth, api_key.as_ref(), addr);
    let metrics_listener = match settings.metrics {
        MetricsSettings::Apart(at) => Some(
            TcpListener::bind(at)
                .await
                .with_context(|| format!("metrics.listen: cannot listen on {at}"))?,
        ),
        _ => None,
    };

    let gateway = Gateway::start(settings.gateway)
        .await
        .context("cannot start the gateway")?;
    let token = CancellationToken::new();
    shutdown::cancel_on_signal(token.clone());

    let options = HttpOptions {
        listen: addr,
        auth,
        streamable: settings.front_doors.streamable,
        legacy_sse: settings.front_doors.legacy_sse,
        sessions: settings.front_doors.sessions,
        allowed_hosts: settings.allowed_hosts,
        allowed_origins: settings.allowed_origins,
        max_body_bytes,
        batch: settings.limits.batch,
        max_connections: settings.limits.max_connections,
        header_read_timeout: settings.limits.header_read_timeout,
        body_read_timeout: settings.limits.body_read_timeout,
        keep_alive_timeout: settings.limits.keep_alive_timeout,
        per_address: settings.limits.per_address,
        address_prefix: settings.limits.address_prefix,
        total_rate: settings.limits.total_rate,
        metrics_route: settings.metrics == MetricsSettings::WithMcp,
        metrics_token: settings.metrics_token.clone(),
        ..HttpOptions::default()
    };
    if let Some(listener) = metrics_listener {
        let (gateway, token) = (gateway.clone(), token.clone());
        let credential = settings.metrics_token;
        tokio::spawn(async move {
            if let Err(e) = serve_metrics(listener, gateway, credential, token).await {
                tracing::warn!(error = %e, "the metrics listener failed");
            }
        });
    }
    if options.sessions == SessionMode::Optional {
        tracing::info!("[http] sessions = \"optional\": requests without Mcp-Session-Id are served on their own");
    }
    // Printed whatever the log level: scripts and users wait for this line
    // (with `--listen 127.0.0.1:0` it is the only way to learn the port).
    eprintln!("mcpyard listening on http://{addr}/mcp");
    let served = serve_http_on(listener, gateway.clone(), options, token.clone()).await;
    token.cancel();
    shutdown::stop_gateway(&gateway).await;
    served.context("the HTTP server failed")
}

/// Says whether clients must authenticate, and by which setting (never a
/// key itself).
fn log_authentication(auth: &AuthOptions, shorthand: Option<&ApiKey>, addr: SocketAddr) {
    if auth.is_required() {
        let names: Vec<&str> = auth.keys.iter().map(|k| k.name.as_str()).collect();
        tracing::info!(
            keys = %names.join(", "),
            shorthand_key_set_by = shorthand.map(|k| k.source.to_string()),
            oauth_issuer = auth.oauth.as_ref().map(|o| o.issuer.as_str()),
            "authentication on: every route but GET /health needs `Authorization: Bearer <key or access token>`"
        );
    } else if addr.ip().is_loopback() {
        tracing::info!(
            "authentication off: no API key is set (--api-key, `api_key`, {API_KEY_VAR} or [[auth.keys]]) and no [auth.oauth]"
        );
    } else {
        tracing::warn!(
            "authentication off on a non-loopback address: anyone who can reach {addr} can use every upstream; set an API key (--api-key, `api_key`, {API_KEY_VAR} or [[auth.keys]]) or [auth.oauth]"
        );
    }
}
