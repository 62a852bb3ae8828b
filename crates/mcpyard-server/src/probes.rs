//! The probes a load balancer or an orchestrator sends without
//! credentials: `/health` (alive) and `/ready` (ready for traffic).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::state::AppState;

/// Alive: the process answers.
pub(crate) const HEALTH_PATH: &str = "/health";
/// Ready for traffic: every source made its first report and the state
/// backend answers.
pub(crate) const READY_PATH: &str = "/ready";

/// Whether `path` is a probe a load balancer or an orchestrator sends
/// without credentials, which no flood limit may refuse.
pub(crate) fn is_probe(path: &str) -> bool {
    path == HEALTH_PATH || path == READY_PATH
}

pub(crate) async fn health() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

pub(crate) async fn ready(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    let gateway = &state.gateway;
    let sources = gateway.sources_reported();
    let backend = gateway.state().ping().await;
    let draining = state.shutdown.is_cancelled();
    let ok = sources && backend.is_ok() && !draining;
    let body = json!({
        "status": if ok { "ready" } else { "not ready" },
        "replica": gateway.replica(),
        "sources_reported": sources,
        "draining": draining,
        "state": {
            "backend": gateway.state().kind(),
            "reachable": backend.is_ok(),
            "error": backend.err().map(|e| e.to_string()),
        },
    });
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}
