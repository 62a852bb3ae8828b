//! What the client does with messages the server sends unasked.

use async_trait::async_trait;
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::Value;

/// Receives server-to-client requests and notifications.
///
/// `related` is the id of the client's own request that the message belongs
/// to, when the transport can tell (Streamable HTTP: it arrived on that
/// request's response stream; progress: from the token).
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// A request from the server (sampling, elicitation, roots, ping). Runs
    /// in a task of its own; the result or error is sent back as the answer.
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject>;

    /// A notification from the server (progress, log message, list changed...).
    ///
    /// Awaited in arrival order, before any answer read after it is handed
    /// to its caller (so progress never trails its result): keep it quick,
    /// hand slow work to a task. One that takes longer than a tenth of a
    /// second is left to finish on its own while later messages go on.
    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    );

    /// The server forgot our session (it restarted, or the session expired)
    /// and the client started a new one. Whatever was learned in the old
    /// session (its lists, subscriptions) may be stale now.
    async fn on_session_restarted(&self) {}
}

/// Answers pings, refuses every other request, drops notifications.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopHandler;

#[async_trait]
impl ClientHandler for NoopHandler {
    async fn on_request(
        &self,
        method: &str,
        _params: Option<Value>,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        if method == mcpyard_proto::methods::PING {
            Ok(Value::Object(Default::default()))
        } else {
            Err(ErrorObject::method_not_found(method))
        }
    }

    async fn on_notification(&self, _: &str, _: Option<Value>, _: Option<RequestId>) {}
}
