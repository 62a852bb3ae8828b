//! JSON-RPC batches (protocol 2025-03-26 and older), handled alike on every
//! door: a batch over the entry cap is refused whole before its entries are
//! built, and the requests of one batch run at most `max_in_flight` at once,
//! answered in batch order.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use mcpyard_gateway::{Gateway, Outbound, Session};
use mcpyard_proto::{methods, parse_body, Body, ErrorObject, Message, ParseError, RequestId};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// How big a batch may be and how much of it runs at once. One value serves
/// every door (HTTP, legacy SSE, stdio), so they all apply the same caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Most entries a batch may have; a larger one is refused whole with
    /// -32600, and none of its entries is handled.
    pub max_entries: usize,
    /// Most requests of one batch handled at once; the others wait their
    /// turn.
    pub max_in_flight: usize,
}

/// Enough for any client that batches by hand; a batch of thousands of
/// calls is an attack, not a use.
pub const DEFAULT_MAX_BATCH_ENTRIES: usize = 100;
/// Requests of one batch in flight at once.
pub const DEFAULT_MAX_BATCH_IN_FLIGHT: usize = 16;

impl Default for BatchLimits {
    fn default() -> Self {
        Self {
            max_entries: DEFAULT_MAX_BATCH_ENTRIES,
            max_in_flight: DEFAULT_MAX_BATCH_IN_FLIGHT,
        }
    }
}

/// Parses a body or a stdio line as [`parse_body`] does, except that a
/// batch of more than `limits.max_entries` entries is refused before any of
/// its entries is built: counting them costs one scan and no allocation.
pub(crate) fn parse(bytes: &[u8], limits: BatchLimits) -> Result<Body, ParseError> {
    if let Some(n) = count_entries(bytes) {
        if n > limits.max_entries {
            return Err(ParseError::Invalid {
                id: None,
                reason: format!(
                    "a batch may hold at most {} entries; this one has {n}",
                    limits.max_entries
                ),
            });
        }
    }
    parse_body(bytes)
}

/// The number of entries when `bytes` is a JSON array; `None` otherwise,
/// and for text that is not JSON (the full parse reports that).
fn count_entries(bytes: &[u8]) -> Option<usize> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'[' {
        return None;
    }
    // A vector of a zero-sized type never allocates, whatever its length.
    serde_json::from_slice::<Vec<IgnoredAny>>(bytes)
        .ok()
        .map(|v| v.len())
}

/// A batch's entries, sorted for handling.
#[derive(Debug)]
pub(crate) struct Batch {
    /// (id, method, params) of each request, in batch order.
    requests: Vec<(RequestId, String, Option<Value>)>,
    /// Answers already known: entries that are not valid messages, and
    /// `initialize`, which must not be batched.
    errors: Vec<Message>,
}

impl Batch {
    /// Handles the notifications and responses among `items` now, in order
    /// (their effect, such as a resolved sampling request, must be in place
    /// before the requests run and before the client's next message), and
    /// keeps the requests and the errors to answer.
    pub(crate) async fn sort(
        gateway: &Gateway,
        session: &Arc<Session>,
        items: Vec<Result<Message, ParseError>>,
    ) -> Self {
        let mut batch = Batch {
            requests: Vec::new(),
            errors: Vec::new(),
        };
        for item in items {
            match item {
                Err(e) => batch.errors.push(e.to_response()),
                Ok(m) if m.method() == Some(methods::INITIALIZE) => {
                    batch.errors.push(Message::error(
                        m.id().cloned(),
                        ErrorObject::invalid_request("initialize must not be sent in a batch"),
                    ))
                }
                Ok(Message::Request { id, method, params }) => {
                    batch.requests.push((id, method, params))
                }
                Ok(m) => gateway.receive(session, m).await,
            }
        }
        batch
    }

    /// Nothing to answer: the batch held only notifications and responses.
    pub(crate) fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.errors.is_empty()
    }

    /// The answers of the requests in batch order, at most
    /// `limits.max_in_flight` of them being worked on at once, then the
    /// errors. A request the client cancelled gets no answer.
    pub(crate) fn answers(
        self,
        gateway: Gateway,
        session: Arc<Session>,
        related: Option<Outbound>,
        limits: BatchLimits,
    ) -> impl Stream<Item = Message> + Send + 'static {
        let Batch { requests, errors } = self;
        futures::stream::iter(requests)
            .map(move |(id, method, params)| {
                let (gateway, session, related) =
                    (gateway.clone(), session.clone(), related.clone());
                async move {
                    gateway
                        .request(&session, id, &method, params, related)
                        .await
                        .into_reply()
                }
            })
            .buffered(limits.max_in_flight.max(1))
            .filter_map(std::future::ready)
            .chain(futures::stream::iter(errors))
    }
}

/// The stdio door's batch: notifications and responses handled now, the
/// answers written one line each by a task of `tasks`, in batch order.
pub(crate) async fn answer_on_lines(
    gateway: &Gateway,
    session: &Arc<Session>,
    out: &mpsc::Sender<Message>,
    tasks: &mut JoinSet<()>,
    items: Vec<Result<Message, ParseError>>,
    limits: BatchLimits,
) {
    let batch = Batch::sort(gateway, session, items).await;
    if batch.is_empty() {
        return;
    }
    let answers = batch.answers(gateway.clone(), session.clone(), None, limits);
    let out = out.clone();
    tasks.spawn(async move {
        let mut answers = std::pin::pin!(answers);
        while let Some(a) = answers.next().await {
            if out.send(a).await.is_err() {
                break;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_entries: usize) -> BatchLimits {
        BatchLimits {
            max_entries,
            ..BatchLimits::default()
        }
    }

    #[test]
    fn a_batch_over_the_cap_is_refused_naming_the_cap() {
        let three = br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","method":"c"}]"#;
        let err = parse(three, limits(2)).expect_err("over the cap");
        let answer = err.to_response().to_value();
        assert_eq!(answer["error"]["code"], serde_json::json!(-32600));
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("at most 2 entries"), "{message}");
        assert!(matches!(parse(three, limits(3)), Ok(Body::Batch(items)) if items.len() == 3));
    }

    #[test]
    fn only_arrays_are_counted() {
        assert_eq!(count_entries(b"  [1, {\"a\": [2, 3]}, \"x\"]"), Some(3));
        assert_eq!(count_entries(br#"{"jsonrpc":"2.0"}"#), None);
        assert_eq!(count_entries(b"[1, 2"), None);
        assert!(matches!(
            parse(b"[1, 2", limits(1)),
            Err(ParseError::NotJson(_))
        ));
    }
}
