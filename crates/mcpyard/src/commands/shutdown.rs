//! Process shutdown shared by `serve` and `stdio`: SIGINT/SIGTERM cancel
//! one token; afterwards the gateway stops its upstreams within a hard
//! deadline.

use std::time::Duration;

use mcpyard_gateway::Gateway;
use tokio_util::sync::CancellationToken;

/// How long the gateway may take to stop its upstreams (close stdin, wait,
/// kill the process group) before the process exits anyway.
const GATEWAY_STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Cancels `token` on the first SIGINT or SIGTERM. A second signal exits
/// at once, for a user who does not want to wait for the drain, killing
/// the process groups of the stdio upstreams first: their own children
/// would outlive us otherwise.
pub(super) fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        if let Err(e) = wait_for_signal().await {
            tracing::warn!(error = %e, "cannot listen for signals; stop with the shutdown of stdin or a kill");
            return;
        }
        tracing::info!("shutting down (send the signal again to exit at once)");
        token.cancel();
        if wait_for_signal().await.is_ok() {
            eprintln!("mcpyard: second signal, exiting without waiting");
            mcpyard_client::kill_stdio_process_groups();
            std::process::exit(130);
        }
    });
}

#[cfg(unix)]
async fn wait_for_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}

/// Stops the gateway's upstreams, giving up after the deadline.
pub(super) async fn stop_gateway(gateway: &Gateway) {
    if tokio::time::timeout(GATEWAY_STOP_DEADLINE, gateway.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            deadline = ?GATEWAY_STOP_DEADLINE,
            "upstreams did not stop in time; exiting anyway"
        );
    }
}
