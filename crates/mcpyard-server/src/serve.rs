//! Running the HTTP transports on a TCP listener until shutdown.

use std::future::IntoFuture;
use std::io;

use axum::serve::ListenerExt;
use mcpyard_gateway::Gateway;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::options::HttpOptions;
use crate::router;

/// Binds `opts.listen` and serves until `shutdown` is cancelled.
pub async fn serve_http(
    gateway: Gateway,
    opts: HttpOptions,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let listener = TcpListener::bind(opts.listen).await?;
    serve_http_on(listener, gateway, opts, shutdown).await
}

/// Serves on an already bound listener (its address replaces
/// `opts.listen`). After `shutdown`, open streams are ended, in-flight
/// requests get `opts.shutdown_grace` to finish, then this returns.
pub async fn serve_http_on(
    listener: TcpListener,
    gateway: Gateway,
    mut opts: HttpOptions,
    shutdown: CancellationToken,
) -> io::Result<()> {
    opts.listen = listener.local_addr()?;
    let grace = opts.shutdown_grace;
    tracing::info!(addr = %opts.listen, "serving MCP over HTTP");
    let app = router::build(gateway, opts, shutdown.clone());
    // Without TCP_NODELAY an answer written in pieces waits ~40 ms on
    // Nagle's algorithm and the peer's delayed ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .into_future();
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        r = server => r,
        _ = deadline => {
            tracing::warn!(?grace, "connections still open after the shutdown grace period");
            Ok(())
        }
    }
}
