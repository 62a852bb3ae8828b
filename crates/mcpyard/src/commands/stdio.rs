//! `mcpyard stdio`: the gateway for one client on stdin/stdout, until stdin
//! closes or a signal. Nothing but protocol lines may reach stdout.

use anyhow::Context as _;
use mcpyard_gateway::Gateway;
use mcpyard_server::{serve_metrics, serve_stdio_with, StdioOptions};
use tokio_util::sync::CancellationToken;

use super::shutdown;
use crate::config::{MetricsSettings, Settings};

pub(super) async fn run(settings: Settings) -> anyhow::Result<()> {
    let metrics_listener = match settings.metrics {
        MetricsSettings::Apart(at) => Some(
            tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("metrics.listen: cannot listen on {at}"))?,
        ),
        MetricsSettings::WithMcp => {
            tracing::warn!("[metrics] has no `listen`: the stdio door has no HTTP listener to serve /metrics on");
            None
        }
        MetricsSettings::Off => None,
    };
    let gateway = Gateway::start(settings.gateway)
        .await
        .context("cannot start the gateway")?;
    let token = CancellationToken::new();
    shutdown::cancel_on_signal(token.clone());
    if let Some(listener) = metrics_listener {
        let (gateway, token) = (gateway.clone(), token.clone());
        let credential = settings.metrics_token.clone();
        tokio::spawn(async move {
            if let Err(e) = serve_metrics(listener, gateway, credential, token).await {
                tracing::warn!(error = %e, "the metrics listener failed");
            }
        });
    }
    tracing::info!("mcpyard serving MCP on stdin/stdout");
    let options = StdioOptions {
        batch: settings.limits.batch,
        identity: settings.auth.stdio.clone(),
        ..StdioOptions::default()
    };
    let served = serve_stdio_with(
        gateway.clone(),
        tokio::io::stdin(),
        tokio::io::stdout(),
        options,
        token.clone(),
    )
    .await;
    token.cancel();
    shutdown::stop_gateway(&gateway).await;
    served.context("stdio transport failed")
}
