//! The HTTP routes and the layers every request goes through.

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use http::StatusCode;
use mcpyard_gateway::Gateway;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;

use crate::auth::{self, Authenticator, MetricsToken};
use crate::options::HttpOptions;
use crate::reply::rpc_error_response;
use crate::state::AppState;
use crate::{legacy_sse, metrics, probes, security, streamable, ui};

/// Where Streamable HTTP is served: `/mcp`, and `/api/v1/mcp`, the path
/// Lemonade and Visions serve it at, so their clients need no change. Both
/// are the same endpoint: a session opened on one is used on the other.
pub(crate) const MCP_PATHS: [&str; 2] = ["/mcp", "/api/v1/mcp"];

/// The gateway's HTTP routes: Streamable HTTP on `/mcp` (and
/// `/api/v1/mcp`, see [`MCP_PATHS`]), legacy HTTP+SSE on
/// `/sse` + `/messages` (when enabled) and `GET /health`, behind the
/// origin / host / API key checks and the body size cap.
pub fn router(gateway: Gateway, opts: HttpOptions) -> Router {
    build(gateway, opts, CancellationToken::new())
}

pub(crate) fn build(gateway: Gateway, opts: HttpOptions, shutdown: CancellationToken) -> Router {
    routes(state(gateway, opts, shutdown))
}

/// What every handler reaches, from the gateway and the options.
pub(crate) fn state(gateway: Gateway, opts: HttpOptions, shutdown: CancellationToken) -> AppState {
    let auth = Arc::new(Authenticator::new(
        &opts.auth,
        &format!("http://{}/mcp", opts.listen),
    ));
    let metadata_paths: Arc<[String]> = auth
        .jwt()
        .map(|jwt| auth::metadata_paths(jwt.resource()))
        .unwrap_or_default()
        .into();
    let metrics_token = opts
        .metrics_token
        .as_deref()
        .map(|t| Arc::new(MetricsToken::new(t)));
    AppState {
        metrics_token,
        gateway,
        opts: Arc::new(opts),
        auth,
        metadata_paths,
        shutdown,
        ui_sessions: Arc::default(),
    }
}

/// The routes over `state`, behind the security guard and the body caps.
pub(crate) fn routes(state: AppState) -> Router {
    let max_body = state.opts.max_body_bytes;
    let (streamable_on, legacy_on) = (state.opts.streamable, state.opts.legacy_sse);
    let metadata_paths = state.metadata_paths.clone();
    let mut routes = Router::new()
        .route(probes::HEALTH_PATH, get(probes::health))
        .route(probes::READY_PATH, get(probes::ready))
        .merge(ui::routes());
    let endpoint = if streamable_on {
        post(streamable::post)
            .get(streamable::get)
            .delete(streamable::delete)
    } else {
        any(front_door_off)
    };
    for path in MCP_PATHS {
        routes = routes.route(path, endpoint.clone());
    }
    if state.opts.metrics_route {
        routes = routes.merge(metrics::route());
    }
    routes = if legacy_on {
        routes
            .route("/sse", get(legacy_sse::open))
            .route("/messages", post(legacy_sse::post))
    } else {
        routes
            .route("/sse", any(front_door_off))
            .route("/messages", any(front_door_off))
    };
    for path in metadata_paths.iter() {
        routes = routes.route(path, get(resource_metadata));
    }
    routes
        // Both caps agree: tower-http answers 413 up front from
        // Content-Length, axum's extractor when a chunked body grows too big.
        .layer(DefaultBodyLimit::max(max_body))
        .layer(RequestBodyLimitLayer::new(max_body))
        // Outermost, so nothing (not even the size check) answers a
        // request that fails the origin, host or credential checks.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            security::guard,
        ))
        .with_state(state)
}

/// A front door the configuration switched off.
async fn front_door_off() -> Response {
    rpc_error_response(
        StatusCode::FORBIDDEN,
        mcpyard_proto::codes::INVALID_REQUEST,
        "Forbidden: this transport is switched off in the gateway's configuration",
    )
}

/// RFC 9728 protected-resource metadata.
async fn resource_metadata(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Response {
    match state.auth.jwt() {
        Some(jwt) => Json(auth::metadata_document(jwt)).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
