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
    // Registered before returning, so that a signal sent as soon as the
    // caller says it is ready (its listen line) is caught, not fatal.
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for signals; stop with the shutdown of stdin or a kill");
            return;
        }
    };
    tokio::spawn(async move {
        let signal = signals.next().await;
        tracing::info!(
            signal,
            "shutting down (send the signal again to exit at once)"
        );
        token.cancel();
        signals.next().await;
        eprintln!("mcpyard: second signal, exiting without waiting");
        mcpyard_client::kill_stdio_process_groups();
        std::process::exit(130);
    });
}

/// SIGTERM and SIGINT, as one stream.
#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next signal's name (the log says which one stopped the gateway).
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn next(&mut self) -> &'static str {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
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
