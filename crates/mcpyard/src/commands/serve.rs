//! `mcpyard serve`: the gateway over HTTP until a signal.

use std::net::SocketAddr;

use anyhow::Context as _;
use mcpyard_gateway::Gateway;
use mcpyard_server::{serve_http_on, AuthOptions, SessionMode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::reload::{DoorKeys, Reload};
use super::shutdown;
use crate::compose::{self, Purpose};
use crate::config::{ApiKey, Settings, API_KEY_VAR};

pub(super) async fn run(
    mut settings: Settings,
    listen: Option<SocketAddr>,
    api_key_flag: Option<String>,
    reload: Reload,
) -> anyhow::Result<()> {
    let listen = listen.unwrap_or(settings.http.listen);
    let api_key = ApiKey::with_flag(api_key_flag, settings.api_key.take());
    // Bind before starting upstreams: a port in use should fail fast and
    // leave no child process behind.
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let metrics_listener = compose::bind_metrics(&settings, true).await?;
    let options = compose::http_options(&mut settings, addr, api_key.as_ref());
    log_authentication(&options.auth, api_key.as_ref(), addr);

    let gateway = Gateway::start(compose::gateway(&mut settings, Purpose::Serve)?)
        .await
        .context("cannot start the gateway")?;
    let token = CancellationToken::new();
    shutdown::cancel_on_signal(token.clone());
    reload.start(
        &gateway,
        Some(DoorKeys::of(&options.auth, api_key.as_ref())),
    );
    if let Some(listener) = metrics_listener {
        compose::spawn_metrics(listener, &gateway, options.metrics_token.clone(), &token);
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
