//! The one-way path from a transport up to the client: every message a
//! transport reads is queued here, in the order it was read, and the client's
//! dispatcher takes it from there. Keeping the order matters: a progress
//! notification read before a response must reach the handler before the
//! response wakes the caller. An answer read while nothing waits in the
//! queue goes straight to its caller ([`Answers`]): nothing can precede it
//! then, and the dispatcher's task need not wake for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcpyard_proto::{Message, Payload, RequestId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::ClientError;

/// Room for messages read but not yet dispatched. A full queue slows the
/// reader down (backpressure) instead of growing without bound.
pub(crate) const INBOUND_CAPACITY: usize = 1024;

/// Largest JSON-RPC message (stdio line, HTTP body or SSE event) the client
/// accepts; past it the message is refused with [`ClientError::Protocol`]
/// (or, on stdio, where it cannot be tied to a request, skipped and logged).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What a transport hands up.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A message from the server. `related` is the id of our request on
    /// whose response stream it arrived, when the transport knows it.
    Message {
        message: Message,
        related: Option<RequestId>,
    },
    /// Our request `id` cannot get an answer (its stream broke, its answer
    /// was too large...).
    Fail { id: RequestId, error: ClientError },
    /// The server forgot the session and a new one was started.
    SessionRestarted,
    /// The transport is gone; nothing more will arrive.
    Closed { reason: String },
}

/// What a request of ours gets: its result, or why there is none.
pub(crate) type Answer = Result<Payload, ClientError>;

/// The requests awaiting their answer, by the id this client gave them,
/// and how many items of the queue are not yet dispatched.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    /// Hashed with foldhash, not SipHash: no peer chooses the keys.
    waiting: Mutex<foldhash::HashMap<i64, oneshot::Sender<Answer>>>,
    /// Pushed to the queue and not yet through the dispatcher.
    undispatched: AtomicUsize,
}

impl Answers {
    pub(crate) fn waiting(
        &self,
    ) -> MutexGuard<'_, foldhash::HashMap<i64, oneshot::Sender<Answer>>> {
        // A poisoned map is still a valid map: the panic was elsewhere.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the dispatcher once it is through with an item.
    pub(crate) fn dispatched(&self) {
        self.undispatched.fetch_sub(1, Ordering::Release);
    }

    /// Hands an answer straight to the request awaiting it, when nothing
    /// read before it is still in the queue or being dispatched; otherwise
    /// (or when no request awaits it) gives the message back.
    fn hand_over(&self, message: Message) -> Result<(), Message> {
        if self.undispatched.load(Ordering::Acquire) != 0 {
            return Err(message);
        }
        let (id, answer) = match message {
            Message::Response {
                id: RequestId::Number(id),
                result,
            } => (id, Ok(result)),
            Message::Error {
                id: Some(RequestId::Number(id)),
                error,
            } => (id, Err(error)),
            other => return Err(other),
        };
        let Some(tx) = self.waiting().remove(&id) else {
            return Err(match answer {
                Ok(result) => Message::response(RequestId::Number(id), result),
                Err(error) => Message::error(Some(RequestId::Number(id)), error),
            });
        };
        let _ = tx.send(answer.map_err(ClientError::Rpc));
        Ok(())
    }
}

/// A transport's handle on the inbound queue. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    tx: mpsc::Sender<Inbound>,
    closed: CancellationToken,
    label: Arc<str>,
    answers: Arc<Answers>,
}

impl Link {
    pub(crate) fn new(label: &str, closed: CancellationToken) -> (Self, mpsc::Receiver<Inbound>) {
        let (tx, rx) = mpsc::channel(INBOUND_CAPACITY);
        (
            Self {
                tx,
                closed,
                label: Arc::from(label),
                answers: Arc::default(),
            },
            rx,
        )
    }

    /// The answers awaited, shared with the client that reads the queue.
    pub(crate) fn answers(&self) -> &Arc<Answers> {
        &self.answers
    }

    /// The server's label, for logs.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Cancelled once the client is closed; transport tasks stop on it.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Queues a message from the server. Returns false when the client is
    /// gone (the reader can stop).
    pub(crate) async fn deliver(&self, message: Message, related: Option<RequestId>) -> bool {
        match self.answers.hand_over(message) {
            Ok(()) => true,
            Err(message) => self.push(Inbound::Message { message, related }).await,
        }
    }

    /// Fails one of our requests.
    pub(crate) async fn fail(&self, id: RequestId, error: ClientError) {
        self.push(Inbound::Fail { id, error }).await;
    }

    /// Says a new session replaced one the server forgot.
    pub(crate) async fn session_restarted(&self) {
        self.push(Inbound::SessionRestarted).await;
    }

    /// Says the transport is gone. Queued behind what was already read, so
    /// answers that made it out before the end are not lost.
    pub(crate) async fn end(&self, reason: impl Into<String>) {
        self.push(Inbound::Closed {
            reason: reason.into(),
        })
        .await;
    }

    async fn push(&self, item: Inbound) -> bool {
        // Counted before it is queued: an answer read after it must wait.
        self.answers.undispatched.fetch_add(1, Ordering::AcqRel);
        let sent = tokio::select! {
            sent = self.tx.send(item) => sent.is_ok(),
            () = self.closed.cancelled() => false,
        };
        if !sent {
            self.answers.dispatched();
        }
        sent
    }
}

/// What [`deliver_body`] queued.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// How many messages were queued.
    pub(crate) count: usize,
    /// Whether the answer to the `related` request was among them.
    pub(crate) answers_related: bool,
}

/// Parses a body, a line or an event's data and queues every JSON-RPC
/// message in it (moved, not copied). Input that is not JSON-RPC is logged
/// (truncated) and skipped: a server's stray output must not kill the
/// connection.
pub(crate) async fn deliver_body(
    link: &Link,
    bytes: &[u8],
    related: Option<&RequestId>,
    origin: &str,
) -> Delivered {
    let mut delivered = Delivered::default();
    let trimmed = trim_ascii(bytes);
    if trimmed.is_empty() {
        return delivered;
    }
    // The usual body is one message: held apart from a batch's, so that
    // it is queued without a vector around it.
    let (one, batch): (Option<Message>, Vec<Message>) = match mcpyard_proto::parse_body(trimmed) {
        Ok(mcpyard_proto::Body::Single(Ok(m))) => (Some(m), Vec::new()),
        Ok(mcpyard_proto::Body::Single(Err(e))) => {
            skip(link, origin, trimmed, &e.to_string());
            (None, Vec::new())
        }
        Ok(mcpyard_proto::Body::Batch(items)) => {
            let batch = items
                .into_iter()
                .filter_map(|item| match item {
                    Ok(m) => Some(m),
                    Err(e) => {
                        skip(link, origin, trimmed, &e.to_string());
                        None
                    }
                })
                .collect();
            (None, batch)
        }
        Err(e) => {
            skip(link, origin, trimmed, &e.to_string());
            (None, Vec::new())
        }
    };
    for m in one.into_iter().chain(batch) {
        let answers_related = m.is_response() && m.id() == related;
        if !link.deliver(m, related.cloned()).await {
            break;
        }
        delivered.count += 1;
        delivered.answers_related |= answers_related;
    }
    delivered
}

fn skip(link: &Link, origin: &str, bytes: &[u8], why: &str) {
    tracing::warn!(
        target: "mcpyard::upstream",
        server = link.label(),
        "skipping {origin} that is not a JSON-RPC message ({why}): {}",
        preview(bytes)
    );
}

/// The first 200 characters of some bytes, for logs.
pub(crate) fn preview(bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX * 4)]);
    let mut out: String = text.chars().take(MAX).collect();
    if out.len() < text.len() || bytes.len() > MAX * 4 {
        out.push('…');
    }
    out
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |p| p + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_truncates_long_input() {
        let long = "x".repeat(1000);
        let p = preview(long.as_bytes());
        assert_eq!(p.chars().count(), 201);
        assert!(p.ends_with('…'));
        assert_eq!(preview(b"short"), "short");
    }

    #[tokio::test]
    async fn garbage_is_skipped_and_messages_are_queued_in_order() {
        let (link, mut rx) = Link::new("t", CancellationToken::new());
        let got = deliver_body(&link, b"  not json \r\n", None, "a line").await;
        assert_eq!(got, Delivered::default());
        let got = deliver_body(
            &link,
            br#"[{"jsonrpc":"2.0","method":"a"},7,{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            Some(&RequestId::Number(1)),
            "a body",
        )
        .await;
        assert_eq!(
            got,
            Delivered {
                count: 2,
                answers_related: true
            }
        );
        let Some(Inbound::Message { message, related }) = rx.recv().await else {
            panic!("expected a message");
        };
        assert_eq!(message.method(), Some("a"));
        assert_eq!(related, Some(RequestId::Number(1)));
        let Some(Inbound::Message { message, .. }) = rx.recv().await else {
            panic!("expected a message");
        };
        assert!(message.is_response());
    }

    #[tokio::test]
    async fn an_answer_skips_the_queue_only_when_nothing_read_before_it_waits_there() {
        let (link, mut rx) = Link::new("t", CancellationToken::new());
        let awaited = |id: i64| {
            let (tx, rx) = oneshot::channel();
            link.answers().waiting().insert(id, tx);
            rx
        };
        let response =
            |id: i64| Message::response(RequestId::Number(id), serde_json::json!({"n": id}));

        // Nothing queued: the answer goes straight to its caller.
        let mut first = awaited(1);
        assert!(link.deliver(response(1), None).await);
        assert!(matches!(first.try_recv(), Ok(Ok(_))));
        assert!(rx.try_recv().is_err(), "nothing was queued");

        // A notification waits in the queue: the answer read after it
        // queues behind it, and its caller is not answered yet.
        let mut second = awaited(2);
        assert!(link.deliver(Message::notification("n", None), None).await);
        assert!(link.deliver(response(2), None).await);
        assert!(
            second.try_recv().is_err(),
            "answered ahead of the notification"
        );
        let Ok(Inbound::Message { message, .. }) = rx.try_recv() else {
            panic!("expected the notification");
        };
        assert_eq!(message.method(), Some("n"));
        link.answers().dispatched();
        let Ok(Inbound::Message { message, .. }) = rx.try_recv() else {
            panic!("expected the answer");
        };
        assert!(message.is_response());
        link.answers().dispatched();

        // Through the dispatcher again: an error answer skips the queue, an
        // answer nobody awaits goes to the dispatcher (which logs it).
        let mut third = awaited(3);
        let error = Message::error(
            Some(RequestId::Number(3)),
            mcpyard_proto::ErrorObject::internal("x"),
        );
        assert!(link.deliver(error, None).await);
        assert!(matches!(third.try_recv(), Ok(Err(ClientError::Rpc(_)))));
        assert!(link.deliver(response(4), None).await);
        assert!(matches!(rx.try_recv(), Ok(Inbound::Message { .. })));
    }
}
