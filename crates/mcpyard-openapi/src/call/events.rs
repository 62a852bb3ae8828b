//! A `text/event-stream` answer: each event's `data:` payload collected
//! (JSON-parsed when it is JSON) and, when the client asked for progress,
//! sent as a progress notification as it arrives.

use futures::StreamExt;
use mcpyard_client::sse::SseDecoder;
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
    let cap = caller.config.max_response_bytes;
    let mut decoder = SseDecoder::new(usize::try_from(cap).unwrap_or(usize::MAX));
    let mut body = std::pin::pin!(response.bytes_stream());
    let (mut seen, mut truncated) = (0u64, false);
    let mut events = Vec::new();
    // Bytes past the cap are never read: the stream ends there.
    while !truncated {
        let Some(chunk) = body.next().await else {
            break;
        };
        let chunk = chunk.map_err(|e| caller.failure(&e))?;
        let keep = cap.saturating_sub(seen).min(chunk.len() as u64) as usize;
        truncated = keep < chunk.len();
        seen += keep as u64;
        let Ok(decoded) = decoder.feed(&chunk[..keep]) else {
            truncated = true;
            break;
        };
        for event in decoded {
            if event.data.is_empty() {
                continue;
            }
            let value = serde_json::from_str::<Value>(&event.data)
                .unwrap_or(Value::String(event.data.clone()));
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
    }
    Ok(Events { events, truncated })
}
