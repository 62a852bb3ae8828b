//! Requests of the session eras sent without `Mcp-Session-Id`, served on
//! their own when [`SessionMode::Optional`](crate::SessionMode) is set: the
//! way stateless servers (rmcp's stateless mode, FastMCP's
//! `stateless_http`, Lemonade) answer clients that never keep the id.
//!
//! Each request gets a session of its own, made as the request's
//! authenticated identity (so the policy, limits and audit apply as to any
//! other request), never registered and ended with its answer. It declares
//! no client capabilities: a request to the client (sampling, elicitation)
//! made while serving it is answered "not supported" to the upstream, as
//! nothing could carry the client's answer back. Disconnecting cancels the
//! request, as no `notifications/cancelled` could name it.
//!
//! What only makes sense within a session is refused with a `-32600` that
//! says so: resource subscriptions (their updates go to a session's
//! stream), tasks (they belong to the session that started them) and the
//! log level (a session's setting). A notification is accepted and dropped,
//! as is a response (no request of the gateway can be waiting for it).

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use mcpyard_gateway::{Identity, Session};
use mcpyard_proto::{methods, Body, ErrorObject, Message, RequestId};
use serde_json::Value;

use crate::accept::Accepts;
use crate::reply::{always_ok, json_response};
use crate::state::AppState;
use crate::stateless;

/// Answers one POST without a session (not `initialize`, and not of the
/// stateless era, which have their own paths).
pub(crate) async fn post(
    state: &AppState,
    identity: Identity,
    accepts: Accepts,
    body: Body,
) -> Response {
    let (id, method, params) = match body {
        Body::Single(Ok(Message::Request { id, method, params })) => (id, method, params),
        Body::Single(_) => return StatusCode::ACCEPTED.into_response(),
        Body::Batch(_) => {
            return refused(
                None,
                "a batch needs a session: send initialize and keep the Mcp-Session-Id it returns, or send the requests one by one",
            )
        }
    };
    if let Some(why) = needs_session(&method, params.as_ref()) {
        return refused(
            Some(id),
            &format!(
                "`{method}` needs a session ({why}): send initialize and keep the Mcp-Session-Id it returns"
            ),
        );
    }
    let session = Session::new_as(identity, None);
    stateless::answer_alone(state, session, accepts, always_ok, (id, method, params)).await
}

/// Why `method` cannot be served without a session, if it cannot.
fn needs_session(method: &str, params: Option<&Value>) -> Option<&'static str> {
    match method {
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
            Some("resource updates are sent on a session's GET stream")
        }
        methods::TASKS_GET
        | methods::TASKS_LIST
        | methods::TASKS_RESULT
        | methods::TASKS_CANCEL => Some("tasks belong to the session that started them"),
        methods::LOGGING_SET_LEVEL => Some("the log level is a setting of a session"),
        _ if params.is_some_and(|p| p.get("task").is_some()) => {
            Some("a task belongs to the session that started it")
        }
        _ => None,
    }
}

/// HTTP 400 with a JSON-RPC `-32600` answering `id`.
fn refused(id: Option<RequestId>, message: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &Message::error(id, ErrorObject::invalid_request(message)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_lives_in_a_session_is_named() {
        for method in [
            "resources/subscribe",
            "resources/unsubscribe",
            "tasks/get",
            "tasks/list",
            "tasks/result",
            "tasks/cancel",
            "logging/setLevel",
        ] {
            assert!(needs_session(method, None).is_some(), "{method}");
        }
        let task_call = json!({"name": "echo", "arguments": {}, "task": {"ttl": 1000}});
        assert!(needs_session("tools/call", Some(&task_call)).is_some());
        for method in [
            "tools/list",
            "tools/call",
            "resources/read",
            "prompts/get",
            "ping",
        ] {
            assert!(
                needs_session(method, Some(&json!({"name": "echo"}))).is_none(),
                "{method}"
            );
        }
    }
}
