//! Running the HTTP transports on a TCP listener until shutdown.

use std::io;

use mcpyard_gateway::Gateway;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::conn::{self, ConnectionLimits};
use crate::front::Front;
use crate::options::HttpOptions;
use crate::{flood, router};

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
    let limits = ConnectionLimits::of(&opts);
    tracing::info!(addr = %opts.listen, "serving MCP over HTTP");
    let flood = flood::Flood::new(&opts);
    let app = Front::new(router::state(gateway, opts, shutdown.clone()), flood);
    let server = conn::serve(listener, app, limits, shutdown.clone());
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = server => Ok(()),
        _ = deadline => {
            tracing::warn!(?grace, "connections still open after the shutdown grace period");
            Ok(())
        }
    }
}
