//! `GET /metrics`: the gateway's Prometheus metrics, on the MCP listener
//! (behind its origin and host checks, and the metrics credential: see
//! `HttpOptions::metrics_token`) or on a listener of its own.

use std::io;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use mcpyard_gateway::{Gateway, METRICS_CONTENT_TYPE};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::MetricsToken;

/// Where the metrics are served.
pub(crate) const PATH: &str = "/metrics";

/// The route, for a router whose state gives the gateway.
pub(crate) fn route<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Gateway: axum::extract::FromRef<S>,
{
    Router::new().route(PATH, get(scrape))
}

async fn scrape(State(gateway): State<Gateway>) -> Response {
    match gateway.metrics_text() {
        Some(text) => ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], text).into_response(),
        None => (StatusCode::NOT_FOUND, "metrics are off\n").into_response(),
    }
}

/// Serves `GET /metrics` alone on `listener` until `shutdown`: to any
/// client without `token`, so bind it where only the scraper reaches; with
/// it, to `Authorization: Bearer <token>` only.
pub async fn serve_metrics(
    listener: TcpListener,
    gateway: Gateway,
    token: Option<String>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "serving metrics on /metrics");
    let mut app = route::<Gateway>().with_state(gateway);
    if let Some(token) = token {
        let token = Arc::new(MetricsToken::new(&token));
        app = app.layer(axum::middleware::from_fn_with_state(token, require_token));
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

async fn require_token(
    State(token): State<Arc<MetricsToken>>,
    request: Request,
    next: Next,
) -> Response {
    if token.admits(request.headers()) {
        next.run(request).await
    } else {
        MetricsToken::refuse()
    }
}
