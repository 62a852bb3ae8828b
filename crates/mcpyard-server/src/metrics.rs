//! `GET /metrics`: the gateway's Prometheus metrics, on the MCP listener
//! (behind its origin, host and key checks) or on a listener of its own.

use std::io;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use mcpyard_gateway::{Gateway, METRICS_CONTENT_TYPE};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The route, for a router whose state gives the gateway.
pub(crate) fn route<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Gateway: axum::extract::FromRef<S>,
{
    Router::new().route("/metrics", get(scrape))
}

async fn scrape(State(gateway): State<Gateway>) -> Response {
    match gateway.metrics_text() {
        Some(text) => ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], text).into_response(),
        None => (StatusCode::NOT_FOUND, "metrics are off\n").into_response(),
    }
}

impl axum::extract::FromRef<crate::router::AppState> for Gateway {
    fn from_ref(state: &crate::router::AppState) -> Self {
        state.gateway.clone()
    }
}

/// Serves `GET /metrics` alone on `listener` until `shutdown`, without
/// authentication: bind it where only the scraper reaches.
pub async fn serve_metrics(
    listener: TcpListener,
    gateway: Gateway,
    shutdown: CancellationToken,
) -> io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "serving metrics on /metrics");
    let app = route::<Gateway>().with_state(gateway);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
