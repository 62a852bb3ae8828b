//! `mcpyard serve`: the gateway over HTTP until a signal.

use std::net::SocketAddr;

use anyhow::Context as _;
use mcpyard_gateway::Gateway;
use mcpyard_server::{serve_http_on, HttpOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::shutdown;
use crate::config::Settings;

pub(super) async fn run(settings: Settings, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    let listen = listen.unwrap_or(settings.listen);
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

    let gateway = Gateway::start(settings.gateway)
        .await
        .context("cannot start the gateway")?;
    let token = CancellationToken::new();
    shutdown::cancel_on_signal(token.clone());

    let options = HttpOptions {
        listen: addr,
        api_key: settings.api_key,
        allowed_hosts: settings.allowed_hosts,
        allowed_origins: settings.allowed_origins,
        max_body_bytes,
        batch: settings.limits.batch,
        max_connections: settings.limits.max_connections,
        header_read_timeout: settings.limits.header_read_timeout,
        body_read_timeout: settings.limits.body_read_timeout,
        keep_alive_timeout: settings.limits.keep_alive_timeout,
        ..HttpOptions::default()
    };
    // Printed whatever the log level: scripts and users wait for this line
    // (with `--listen 127.0.0.1:0` it is the only way to learn the port).
    eprintln!("mcpyard listening on http://{addr}/mcp");
    let served = serve_http_on(listener, gateway.clone(), options, token.clone()).await;
    token.cancel();
    shutdown::stop_gateway(&gateway).await;
    served.context("the HTTP server failed")
}
