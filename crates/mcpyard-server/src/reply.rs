//! Answering one POST: plain JSON when the final answer is the first thing
//! the gateway produces (the fast path), an SSE stream when a related
//! message (progress, a request to the client) comes first.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use mcpyard_gateway::Outbound;
use mcpyard_proto::{ErrorObject, Message};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::accept::Accepts;
use crate::sse::{self, to_json, EventIds};

/// How many related messages may wait for a slow reader before the gateway
/// is slowed down (bounded on purpose: a client that stops reading must not
/// make the gateway buffer without end).
const RELATED_CAPACITY: usize = 64;

/// How to answer one POST.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) accepts: Accepts,
    /// Stop the work when the client goes away. True in the stateless era,
    /// where closing the response stream is the cancellation signal; the
    /// session eras say a disconnect is not a cancellation.
    pub(crate) cancel_on_disconnect: bool,
    pub(crate) keep_alive: Duration,
    /// Set for an answer that may stream without end (a listen stream): it
    /// ends with a retry hint when the gateway drains. Otherwise the call
    /// in flight runs to its answer, within the drain's grace period: a
    /// session's answer cut short has nowhere else to go.
    pub(crate) ends_on_drain: Option<CancellationToken>,
    /// HTTP status of a plain-JSON final answer (the stateless era maps
    /// some JSON-RPC errors to 4xx).
    pub(crate) status_of: fn(&Final) -> StatusCode,
}

/// A POST's final answer, written to the body or the stream straight from
/// the messages.
#[derive(Debug)]
pub(crate) enum Final {
    One(Message),
    /// A batch's answers, one array.
    Batch(Vec<Message>),
}

impl Serialize for Final {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Final::One(m) => m.serialize(s),
            Final::Batch(ms) => ms.serialize(s),
        }
    }
}

impl Final {
    /// The answer as JSON text: one message as [`Message::to_vec`] writes
    /// it (as its `Serialize` would, faster), a batch through serde.
    fn to_json(&self) -> Vec<u8> {
        match self {
            Final::One(m) => m.to_vec(),
            Final::Batch(ms) => serde_json::to_vec(ms).unwrap_or_default(),
        }
    }
}

/// The usual status: every JSON-RPC answer, error or not, is HTTP 200.
pub(crate) fn always_ok(_: &Final) -> StatusCode {
    StatusCode::OK
}

/// Runs `work` (given the related stream when the client accepts SSE) and
/// answers with its final JSON in the form the plan and the emissions call
/// for.
///
/// The work is polled right here, not spawned: a task and a cross-thread
/// wake-up per call cost more than the forwarding itself. It moves to a task
/// of its own only when the answer becomes a stream, or when the client goes
/// away in an era where a disconnect is not a cancellation.
pub(crate) async fn reply<F, Fut>(plan: Plan, work: F) -> Response
where
    F: FnOnce(Option<Outbound>) -> Fut,
    Fut: Future<Output = Final> + Send + 'static,
{
    let (tx, rx) = if plan.accepts.sse {
        let (tx, rx) = mpsc::channel(RELATED_CAPACITY);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    // The work gets a clone: the sender kept here closes the channel only
    // after `last_related`, so the work's end does not wake this task.
    let mut work = Work::Inline {
        future: Some(Box::pin(work(tx.clone()))),
        detach_on_drop: !plan.cancel_on_disconnect,
    };
    let Some(mut rx) = rx else {
        let v = work.join().await;
        return final_response((plan.status_of)(&v), &v);
    };
    let mut rx_open = true;
    let first = loop {
        tokio::select! {
            biased;
            m = rx.recv(), if rx_open => match m {
                Some(m) => break First::Related(m),
                None => rx_open = false,
            },
            v = work.join() => break First::Final(v),
        }
    };
    let streaming = match first {
        First::Final(v) => {
            let last = last_related(&mut rx);
            drop(tx);
            match last {
                // Sent just before the work ended: it still precedes the answer.
                Some(m) => Streaming::new(rx, None, Some(m), Some(v)),
                None if plan.accepts.json => return final_response((plan.status_of)(&v), &v),
                None => Streaming::new(rx, None, None, Some(v)),
            }
        }
        First::Related(m) => {
            // The stream ends when the work's sender is gone.
            drop(tx);
            work.spawn(plan.cancel_on_disconnect);
            Streaming::new(rx, Some(work), Some(m), None)
        }
    };
    let events = futures::stream::unfold(streaming, |mut s| async move {
        s.next_event().await.map(|e| (Ok(e), s))
    });
    match plan.ends_on_drain {
        Some(drain) => sse::response(sse::until_shutdown(events, drain), plan.keep_alive),
        None => sse::response(events, plan.keep_alive),
    }
}

/// A related message sent just before the work ended, if any. The channel
/// is then asked once more with a waker that does nothing: it takes this
/// task's waker off the channel, so closing the channel afterwards does not
/// wake the task (which is running: it would be polled again for nothing).
fn last_related(rx: &mut mpsc::Receiver<Message>) -> Option<Message> {
    if let Ok(m) = rx.try_recv() {
        return Some(m);
    }
    match rx.poll_recv(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(m) => m,
        Poll::Pending => None,
    }
}

enum First {
    Related(Message),
    Final(Final),
}

type WorkFuture = Pin<Box<dyn Future<Output = Final> + Send>>;

/// The work of one POST: polled inline while the answer may still be plain
/// JSON, spawned once it streams.
enum Work {
    Inline {
        /// `None` once finished.
        future: Option<WorkFuture>,
        /// Finish the work in the background if the client goes away.
        detach_on_drop: bool,
    },
    Spawned {
        handle: JoinHandle<Final>,
        abort_on_drop: bool,
    },
}

impl Work {
    /// Waits for the final answer. Cancel safe; call once it has not
    /// returned yet.
    async fn join(&mut self) -> Final {
        match self {
            Work::Inline { future, .. } => {
                let Some(f) = future.as_mut() else {
                    return internal_error();
                };
                let outcome = AssertUnwindSafe(f).catch_unwind().await;
                *future = None;
                outcome.unwrap_or_else(|_| {
                    tracing::error!("request handling panicked");
                    internal_error()
                })
            }
            Work::Spawned { handle, .. } => match handle.await {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(error = %e, "request handling task failed");
                    internal_error()
                }
            },
        }
    }

    /// Moves unfinished inline work to a task of its own.
    fn spawn(&mut self, abort_on_drop: bool) {
        if let Work::Inline { future, .. } = self {
            if let Some(f) = future.take() {
                *self = Work::Spawned {
                    handle: tokio::spawn(f),
                    abort_on_drop,
                };
            }
        }
    }
}

fn internal_error() -> Final {
    Final::One(Message::error(
        None,
        ErrorObject::internal("internal error"),
    ))
}

impl Drop for Work {
    fn drop(&mut self) {
        match self {
            Work::Inline {
                future,
                detach_on_drop,
            } => {
                if let Some(f) = future.take() {
                    if *detach_on_drop {
                        // The client left: finish the work anyway (a
                        // disconnect is not a cancellation in this era).
                        tokio::spawn(f);
                    }
                }
            }
            Work::Spawned {
                handle,
                abort_on_drop,
            } => {
                if *abort_on_drop {
                    handle.abort();
                }
            }
        }
    }
}

/// State of an SSE answer: related messages until the final answer, then
/// the final answer, then the end.
struct Streaming {
    rx: mpsc::Receiver<Message>,
    rx_open: bool,
    work: Option<Work>,
    pending: VecDeque<Message>,
    final_value: Option<Final>,
    done: bool,
    ids: EventIds,
}

impl Streaming {
    fn new(
        rx: mpsc::Receiver<Message>,
        work: Option<Work>,
        first: Option<Message>,
        final_value: Option<Final>,
    ) -> Self {
        Self {
            rx,
            rx_open: true,
            work,
            pending: first.into_iter().collect(),
            final_value,
            done: false,
            ids: EventIds::default(),
        }
    }

    async fn next_event(&mut self) -> Option<Event> {
        if let Some(m) = self.pending.pop_front() {
            return Some(self.ids.message(&m));
        }
        if self.done {
            return None;
        }
        loop {
            if let Some(v) = self.final_value.take() {
                // Whatever was sent before the work ended goes first.
                if let Ok(m) = self.rx.try_recv() {
                    self.final_value = Some(v);
                    return Some(self.ids.message(&m));
                }
                self.done = true;
                return Some(self.ids.json(&v));
            }
            let Streaming {
                rx, rx_open, work, ..
            } = self;
            let work = work.as_mut()?;
            tokio::select! {
                biased;
                m = rx.recv(), if *rx_open => match m {
                    Some(m) => return Some(self.ids.message(&m)),
                    None => *rx_open = false,
                },
                v = work.join() => self.final_value = Some(v),
            }
        }
    }
}

/// A JSON body with the given status.
pub(crate) fn json_response<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    json_text_response(status, to_json(body))
}

/// A POST's final answer as a plain JSON answer.
fn final_response(status: StatusCode, answer: &Final) -> Response {
    json_text_response(status, answer.to_json())
}

/// JSON text already written, with the given status.
fn json_text_response(status: StatusCode, text: impl Into<axum::body::Body>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        text.into(),
    )
        .into_response()
}

/// A JSON-RPC error with id `null` as an HTTP answer with `status`.
pub(crate) fn rpc_error_response(status: StatusCode, code: i64, message: &str) -> Response {
    json_response(
        status,
        &Message::error(None, ErrorObject::new(code, message)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpyard_proto::RequestId;
    use serde_json::json;
    use serde_json::Value;

    fn plan(json: bool, sse: bool) -> Plan {
        Plan {
            accepts: Accepts { json, sse },
            cancel_on_disconnect: false,
            keep_alive: Duration::from_secs(15),
            ends_on_drain: None,
            status_of: always_ok,
        }
    }

    async fn body_text(r: Response) -> String {
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20)
            .await
            .expect("body");
        String::from_utf8(bytes.to_vec()).expect("utf-8")
    }

    fn content_type(r: &Response) -> String {
        r.headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    fn ok() -> Final {
        Final::One(Message::response(RequestId::Number(1), json!({"ok": 1})))
    }

    #[tokio::test]
    async fn final_first_is_plain_json_when_json_is_accepted() {
        let r = reply(plan(true, true), |_| async { ok() }).await;
        assert_eq!(content_type(&r), "application/json");
        assert_eq!(
            body_text(r).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{"ok":1}}"#
        );
    }

    #[tokio::test]
    async fn final_first_is_sse_when_only_sse_is_accepted() {
        let r = reply(plan(false, true), |_| async { ok() }).await;
        assert_eq!(content_type(&r), "text/event-stream");
        let text = body_text(r).await;
        assert!(text.contains("event: message"), "{text}");
        assert!(
            text.contains(r#"data: {"jsonrpc":"2.0","id":1,"result":{"ok":1}}"#),
            "{text}"
        );
        assert!(text.contains("id: 1"), "{text}");
    }

    #[tokio::test]
    async fn related_first_switches_to_sse_in_order() {
        let r = reply(plan(true, true), |related| async move {
            let tx = related.expect("sse accepted, so a related stream is given");
            for i in 0..3 {
                let p = json!({"progressToken": "t", "progress": i});
                tx.send(Message::notification("notifications/progress", Some(p)))
                    .await
                    .expect("reader alive");
            }
            Final::One(Message::response(
                RequestId::Number(9),
                json!({"done": true}),
            ))
        })
        .await;
        assert_eq!(content_type(&r), "text/event-stream");
        let text = body_text(r).await;
        let datas: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(datas.len(), 4, "{text}");
        assert!(datas[0].contains(r#""progress":0"#));
        assert!(datas[2].contains(r#""progress":2"#));
        assert!(datas[3].contains(r#""done":true"#));
        assert!(text.contains("id: 4"), "{text}");
    }

    #[tokio::test]
    async fn json_only_clients_get_no_related_stream() {
        let r = reply(plan(true, false), |related| async move {
            Final::One(Message::response(
                RequestId::Number(1),
                json!({"related_given": related.is_some()}),
            ))
        })
        .await;
        assert_eq!(
            body_text(r).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{"related_given":false}}"#
        );
    }

    #[tokio::test]
    async fn a_panicking_handler_becomes_an_internal_error() {
        let r = reply(plan(true, true), |_| async {
            if std::hint::black_box(true) {
                panic!("deliberate panic in a test handler");
            }
            ok()
        })
        .await;
        let v: Value = serde_json::from_str(&body_text(r).await).expect("json");
        assert_eq!(v["error"]["code"], json!(-32603));
        assert_eq!(v["id"], Value::Null);
    }
}
