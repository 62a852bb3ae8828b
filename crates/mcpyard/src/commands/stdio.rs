//! `mcpyard stdio`: the gateway for one client on stdin/stdout, until stdin
//! closes or a signal. Nothing but protocol lines may reach stdout.

use anyhow::Context as _;
use mcpyard_gateway::Gateway;
use mcpyard_server::serve_stdio_with;
use tokio_util::sync::CancellationToken;

use super::reload::Reload;
use super::shutdown;
use crate::compose::{self, Purpose};
use crate::config::Settings;

pub(super) async fn run(mut settings: Settings, reload: Reload) -> anyhow::Result<()> {
    let metrics_listener = compose::bind_metrics(&settings, false).await?;
    let gateway = Gateway::start(compose::gateway(&mut settings, Purpose::Serve)?)
        .await
        .context("cannot start the gateway")?;
    let token = CancellationToken::new();
    shutdown::cancel_on_signal(token.clone());
    reload.start(&gateway, None);
    if let Some(listener) = metrics_listener {
        compose::spawn_metrics(
            listener,
            &gateway,
            settings.http.metrics_token.clone(),
            &token,
        );
    }
    tracing::info!("mcpyard serving MCP on stdin/stdout");
    let served = serve_stdio_with(
        gateway.clone(),
        tokio::io::stdin(),
        tokio::io::stdout(),
        settings.stdio,
        token.clone(),
    )
    .await;
    token.cancel();
    shutdown::stop_gateway(&gateway).await;
    served.context("stdio transport failed")
}
