//! The dispatcher: what the transport read, in order, to its place.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpyard_proto::{methods, Message, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, Semaphore};

use crate::link::{Answers, Inbound};
use crate::transport::SendScope;
use crate::ClientError;

use super::shared::{Inner, Shared};

/// How long the dispatcher waits for the handler to take a notification
/// before leaving it to a task of its own: the order of messages is kept for
/// a quick handler, and a slow one does not hold up answers read after.
pub(super) const NOTIFICATION_BUDGET: Duration = Duration::from_millis(100);

/// Most notifications still being handled in tasks of their own; past it,
/// more are dropped (a handler that never finishes must not pile up tasks).
pub(super) const MAX_DETACHED_NOTIFICATIONS: usize = 64;

/// The dispatcher: one per connection, in the order messages were read.
pub(super) async fn dispatch(
    mut rx: mpsc::Receiver<Inbound>,
    shared: Arc<Shared>,
    inner: Weak<Inner>,
) {
    let detached = Arc::new(Semaphore::new(MAX_DETACHED_NOTIFICATIONS));
    loop {
        let item = tokio::select! {
            biased;
            item = rx.recv() => item,
            () = shared.closed.cancelled() => None,
        };
        let Some(item) = item else { break };
        // However this item's turn ends (`continue`, `break`), it is through.
        let _through = Through(&shared.answers);
        match item {
            Inbound::Message { message, related } => match message {
                Message::Response { id, result } => shared.resolve(&id, Ok(result)),
                Message::Error {
                    id: Some(id),
                    error,
                } => shared.resolve(&id, Err(ClientError::Rpc(error))),
                Message::Error { id: None, error } => tracing::warn!(
                    target: "mcpyard::upstream",
                    server = %shared.label,
                    "the server reported an error for no request: {error}"
                ),
                Message::Notification { method, params } => {
                    // The listen stream's opening frame is bookkeeping of
                    // that stream, not news for the application.
                    if method == methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED {
                        continue;
                    }
                    if method == methods::NOTIFICATION_PROGRESS
                        && shared.deliver_progress(params.as_ref())
                    {
                        continue;
                    }
                    let related = related.filter(|id| !shared.is_listen_stream(id));
                    let handler = shared.handler.clone();
                    let mut handling = Box::pin(async move {
                        handler.on_notification(&method, params, related).await;
                    });
                    // While earlier notifications are still being handled
                    // the handler is slow already: no wait at all then.
                    let budget = if detached.available_permits() == MAX_DETACHED_NOTIFICATIONS {
                        NOTIFICATION_BUDGET
                    } else {
                        Duration::ZERO
                    };
                    tokio::select! {
                        biased;
                        () = &mut handling => {}
                        () = tokio::time::sleep(budget) => {
                            detach_notification(&shared, &detached, handling);
                        }
                        () = shared.closed.cancelled() => break,
                    }
                }
                Message::Request { id, method, params } => {
                    tokio::spawn(answer_server_request(
                        shared.clone(),
                        inner.clone(),
                        id,
                        method,
                        params,
                        related,
                    ));
                }
            },
            Inbound::Fail { id, error } => shared.resolve(&id, Err(error)),
            Inbound::SessionRestarted => {
                tokio::select! {
                    () = shared.handler.on_session_restarted() => {}
                    () = shared.closed.cancelled() => break,
                }
            }
            Inbound::Closed { reason } => {
                tracing::info!(target: "mcpyard::upstream", server = %shared.label, "connection closed: {reason}");
                *shared
                    .close_reason
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(reason);
                break;
            }
        }
    }
    shared.close();
}

/// Counts a queued item as dispatched when dropped.
struct Through<'a>(&'a Answers);

impl Drop for Through<'_> {
    fn drop(&mut self) {
        self.0.dispatched();
    }
}

/// Lets a notification the handler is slow to take finish in a task of its
/// own, so the reader goes on; past [`MAX_DETACHED_NOTIFICATIONS`] of them
/// it is dropped instead.
pub(super) fn detach_notification(
    shared: &Arc<Shared>,
    detached: &Arc<Semaphore>,
    handling: Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let Ok(permit) = detached.clone().try_acquire_owned() else {
        tracing::debug!(
            target: "mcpyard::upstream",
            server = %shared.label,
            "notification dropped: too many are still being handled"
        );
        return;
    };
    if detached.available_permits() == 0 {
        tracing::warn!(
            target: "mcpyard::upstream",
            server = %shared.label,
            "{MAX_DETACHED_NOTIFICATIONS} notifications still being handled: dropping more until they finish"
        );
    }
    let closed = shared.closed.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = handling => {}
            () = closed.cancelled() => {}
        }
        drop(permit);
    });
}

/// Runs the handler for a server-to-client request and sends its answer.
pub(super) async fn answer_server_request(
    shared: Arc<Shared>,
    inner: Weak<Inner>,
    id: RequestId,
    method: String,
    params: Option<Value>,
    related: Option<RequestId>,
) {
    let outcome = tokio::select! {
        outcome = shared.handler.on_request(&method, params, related) => outcome,
        () = shared.closed.cancelled() => return,
    };
    let reply = match outcome {
        Ok(result) => Message::response(id, result),
        Err(error) => Message::error(Some(id), error),
    };
    let Some(inner) = inner.upgrade() else { return };
    let scope = SendScope::Connection(&shared.closed);
    if let Err(e) = inner.transport.send(&reply, &scope).await {
        tracing::debug!(
            target: "mcpyard::upstream",
            server = %shared.label,
            "could not answer the server's {method}: {e}"
        );
    }
}
