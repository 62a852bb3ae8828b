//! What a connection's handles and its dispatcher share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mcpyard_proto::RequestId;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::link::{Answer, Answers};
use crate::tool_headers::ToolTable;
use crate::transport::Transport;
use crate::{ClientError, ClientHandler};
use crate::{Progress, ProgressCallback};

/// Closes the connection once the application dropped its last handle.
pub(super) struct Owner(pub(super) Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// What the dispatcher shares with the client handles.
pub(super) struct Shared {
    /// The requests awaiting their answer; the transport's link hands
    /// some over itself.
    pub(super) answers: Arc<Answers>,
    /// Cancelled once the connection is gone, after everything read before
    /// the end was dispatched.
    pub(super) closed: CancellationToken,
    pub(super) handler: Arc<dyn ClientHandler>,
    pub(super) label: String,
    /// The id of the open `subscriptions/listen` request (0: none): what
    /// arrives on it is delivered like a handshake-era notification, tied
    /// to no request.
    pub(super) listen_id: AtomicI64,
    /// Callbacks of requests made with [`RequestOptions::progress`], by
    /// the progress token the client gave each of them.
    pub(super) progress: Mutex<HashMap<String, ProgressCallback>>,
    pub(super) next_progress_token: AtomicI64,
    /// Why the transport ended, once it has (a stdio child's exit status
    /// and last stderr lines...).
    pub(super) close_reason: Mutex<Option<String>>,
}

impl Shared {
    /// `Closed` said with why the transport ended (a stdio child's exit
    /// status and last stderr lines), when it told: for a server that went
    /// away during the handshake.
    pub(super) fn explain(&self, error: ClientError) -> ClientError {
        let reason = self
            .close_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match (error, reason) {
            (ClientError::Closed, Some(reason)) => ClientError::Transport(reason),
            (e, _) => e,
        }
    }

    pub(super) fn progress(&self) -> std::sync::MutexGuard<'_, HashMap<String, ProgressCallback>> {
        // A poisoned map is still a valid map: the panic was elsewhere.
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a `notifications/progress` to the callback of the request
    /// whose token it carries; false when no callback waits for it.
    pub(super) fn deliver_progress(&self, params: Option<&Value>) -> bool {
        let Some(params) = params else { return false };
        let Some(token) = params.get("progressToken").and_then(Value::as_str) else {
            return false;
        };
        let Some(callback) = self.progress().get(token).cloned() else {
            return false;
        };
        let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
            return true;
        };
        callback(Progress {
            progress,
            total: params.get("total").and_then(Value::as_f64),
            message: params
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
        true
    }

    pub(super) fn resolve(&self, id: &RequestId, answer: Answer) {
        let sender = match id {
            RequestId::Number(n) => self.answers.waiting().remove(n),
            RequestId::String(_) => None,
        };
        match sender {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => tracing::debug!(
                target: "mcpyard::upstream",
                server = %self.label,
                "dropping an answer to unknown or finished request {id}"
            ),
        }
    }

    pub(super) fn is_listen_stream(&self, id: &RequestId) -> bool {
        let listen = self.listen_id.load(Ordering::Relaxed);
        listen != 0 && *id == RequestId::Number(listen)
    }

    /// Marks the connection closed and fails every pending request.
    pub(super) fn close(&self) {
        self.closed.cancel();
        let drained: Vec<_> = self.answers.waiting().drain().collect();
        for (_, tx) in drained {
            let _ = tx.send(Err(ClientError::Closed));
        }
    }
}

pub(super) struct Inner {
    pub(super) shared: Arc<Shared>,
    pub(super) transport: Transport,
    pub(super) next_id: AtomicI64,
    pub(super) init_result: OnceLock<Value>,
    /// In the 2026-07-28 era, the `_meta` keys every request carries.
    pub(super) envelope: OnceLock<Map<String, Value>>,
    /// The tools' `x-mcp-header` declarations, from `tools/list`.
    pub(super) tools: Mutex<ToolTable>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Stops the dispatcher and every transport task; the transport's own
        // Drop kills a child process.
        self.shared.close();
    }
}

/// Removes a request from the pending map however its call ends.
pub(super) struct PendingGuard<'a> {
    pub(super) shared: &'a Shared,
    pub(super) id: i64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.answers.waiting().remove(&self.id);
    }
}

/// Forgets a request's progress callback however its call ends.
pub(crate) struct ProgressGuard {
    pub(super) shared: Arc<Shared>,
    pub(super) token: String,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.shared.progress().remove(&self.token);
    }
}
