//! A `text/event-stream` answer: each event's `data:` payload collected
//! (JSON-parsed when it is JSON) and, when the client asked for progress,
//! sent as a progress notification as it arrives.

use futures::StreamExt;
use mcpyard_gateway::CallContext;
use serde_json::Value;

use super::{CallError, Caller};

/// The events read, and whether the stream was cut at the byte cap.
#[derive(Debug)]
pub(crate) struct Events {
    pub(crate) events: Vec<Value>,
    pub(crate) truncated: bool,
}

/// How much of an event a progress message carries.
const PROGRESS_MESSAGE_CHARS: usize = 2000;

pub(crate) async fn collect(
    caller: &Caller,
    response: reqwest::Response,
    ctx: &CallContext,
) -> Result<Events, CallError> {
    use eventsource_stream::Eventsource as _;
    let cap = caller.config.max_response_bytes;
    // Bytes past the cap are never read: the stream ends there.
    let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cut_in_stream = cut.clone();
    let capped = response.bytes_stream().scan(0u64, move |seen, chunk| {
        let item = match chunk {
            Ok(c) if *seen >= cap && !c.is_empty() => {
                cut_in_stream.store(true, std::sync::atomic::Ordering::Relaxed);
                None
            }
            Ok(c) => {
                let keep = (cap - *seen).min(c.len() as u64) as usize;
                if keep < c.len() {
                    cut_in_stream.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                *seen += keep as u64;
                Some(Ok(c.slice(..keep)))
            }
            Err(e) => Some(Err(e)),
        };
        std::future::ready(item)
    });
    let mut events = Vec::new();
    let mut stream = std::pin::pin!(capped.eventsource());
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(eventsource_stream::EventStreamError::Transport(e)) => {
                return Err(caller.failure(&e));
            }
            Err(e) => {
                tracing::debug!(error = %e, "malformed event in an event stream");
                continue;
            }
        };
        if event.data.is_empty() {
            continue;
        }
        let value =
            serde_json::from_str::<Value>(&event.data).unwrap_or(Value::String(event.data.clone()));
        if ctx.progress.is_active() {
            let message: String = caller
                .scrub(&event.data)
                .chars()
                .take(PROGRESS_MESSAGE_CHARS)
                .collect();
            ctx.progress
                .report((events.len() + 1) as f64, None, Some(&message))
                .await;
        }
        events.push(value);
    }
    Ok(Events {
        events,
        truncated: cut.load(std::sync::atomic::Ordering::Relaxed),
    })
}
