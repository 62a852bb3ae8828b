//! The HTTP routes and the layers every request goes through.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::{Json, Router};
use mcpyard_gateway::Gateway;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;

use crate::options::HttpOptions;
use crate::{legacy_sse, metrics, security, streamable};

/// What every handler can reach.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub(crate) gateway: Gateway,
    pub(crate) opts: Arc<HttpOptions>,
    /// Cancelled when the server shuts down: long-lived streams end then.
    pub(crate) shutdown: CancellationToken,
}

/// The gateway's HTTP routes: Streamable HTTP on `/mcp`, legacy HTTP+SSE on
/// `/sse` + `/messages` (when enabled) and `GET /health`, behind the
/// origin / host / API key checks and the body size cap.
pub fn router(gateway: Gateway, opts: HttpOptions) -> Router {
    build(gateway, opts, CancellationToken::new())
}

pub(crate) fn build(gateway: Gateway, opts: HttpOptions, shutdown: CancellationToken) -> Router {
    let max_body = opts.max_body_bytes;
    let legacy = opts.legacy_sse;
    let state = AppState {
        gateway,
        opts: Arc::new(opts),
        shutdown,
    };
    let mut routes = Router::new()
        .route(
            "/mcp",
            post(streamable::post)
                .get(streamable::get)
                .delete(streamable::delete),
        )
        .route("/health", get(health));
    if state.opts.metrics_route {
        routes = routes.merge(metrics::route());
    }
    if legacy {
        routes = routes
            .route("/sse", get(legacy_sse::open))
            .route("/messages", post(legacy_sse::post));
    }
    routes
        // Both caps agree: tower-http answers 413 up front from
        // Content-Length, axum's extractor when a chunked body grows too big.
        .layer(DefaultBodyLimit::max(max_body))
        .layer(RequestBodyLimitLayer::new(max_body))
        // Outermost, so nothing (not even the size check) answers a
        // request that fails the origin, host or key checks.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}
