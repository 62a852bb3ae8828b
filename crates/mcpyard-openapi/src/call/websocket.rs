//! A WebSocket route as one bounded exchange: connect (with the same
//! credentials and headers as a request), send the opening messages,
//! collect up to `max_messages` or until the time limit, close.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::Operation;

use super::request::Prepared;
use super::{CallError, Caller};

/// The tool's own arguments of a WebSocket operation.
pub(crate) const MESSAGES: &str = "messages";
pub(crate) const MAX_MESSAGES: &str = "max_messages";
pub(crate) const TIME_LIMIT: &str = "time_limit_seconds";

const DEFAULT_MAX_MESSAGES: u64 = 20;
const DEFAULT_TIME_LIMIT: f64 = 10.0;

/// Adds the exchange's arguments to a WebSocket operation's input schema
/// (those the document already names are left as they are).
pub(crate) fn add_arguments(schema: &mut Value) {
    if !schema.is_object() {
        *schema = json!({"type": "object"});
    }
    let properties = schema
        .as_object_mut()
        .map(|s| s.entry("properties").or_insert_with(|| json!({})));
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    properties.entry(MESSAGES).or_insert_with(|| json!({
        "type": "array",
        "description": "The opening messages to send, in order: each a string (sent as is) or JSON (sent as its text).",
    }));
    properties.entry(MAX_MESSAGES).or_insert_with(|| json!({
        "type": "integer", "minimum": 1, "maximum": 1000,
        "description": format!("Stop after this many messages from the server (default {DEFAULT_MAX_MESSAGES})."),
    }));
    properties.entry(TIME_LIMIT).or_insert_with(|| json!({
        "type": "number", "exclusiveMinimum": 0, "maximum": 600,
        "description": format!("Stop collecting after this many seconds (default {DEFAULT_TIME_LIMIT}); the connection is then closed."),
    }));
}

pub(crate) async fn exchange(
    caller: &Caller,
    op: &Operation,
    prepared: Prepared,
    args: &Map<String, Value>,
    started: Instant,
) -> Result<Value, CallError> {
    let failed = |what: String| CallError::Failed {
        api: caller.config.name.clone(),
        what: caller.scrub(&what),
    };
    let url = if let Some(rest) = prepared.url.strip_prefix("http") {
        format!("ws{rest}")
    } else {
        prepared.url.clone()
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| failed(format!("the WebSocket URL is not valid ({e})")))?;
    for (name, value) in &prepared.headers {
        let (Ok(h), Ok(v)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) else {
            return Err(CallError::CannotSend(format!(
                "the header `{name}` cannot be sent: its name or value holds characters a header cannot carry"
            )));
        };
        request.headers_mut().insert(h, v);
    }
    let max_messages = args
        .get(MAX_MESSAGES)
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_MAX_MESSAGES);
    let limit = args
        .get(TIME_LIMIT)
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(DEFAULT_TIME_LIMIT)
        .min(caller.config.timeout.as_secs_f64());
    let ends_at = tokio::time::Instant::now() + Duration::from_secs_f64(limit);
    let connect = tokio::time::timeout_at(ends_at, tokio_tungstenite::connect_async(request));
    let (mut socket, response) = match connect.await {
        Err(_) => {
            return Err(failed(format!(
                "the WebSocket did not open within {limit} s"
            )))
        }
        Ok(Err(e)) => {
            return Err(failed(format!(
                "the WebSocket did not open ({})",
                ws_error(&e)
            )))
        }
        Ok(Ok(pair)) => pair,
    };
    let opening: Vec<Value> = match args.get(MESSAGES) {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Null) | None => Vec::new(),
        Some(one) => vec![one.clone()],
    };
    for m in opening {
        let text = match m {
            Value::String(s) => s,
            other => other.to_string(),
        };
        socket.send(Message::text(text)).await.map_err(|e| {
            failed(format!(
                "sending on the WebSocket failed ({})",
                ws_error(&e)
            ))
        })?;
    }
    let mut messages = Vec::new();
    let mut closed_by_peer = false;
    let cap = caller.config.max_response_bytes;
    let mut bytes = 0u64;
    while (messages.len() as u64) < max_messages {
        let next = match tokio::time::timeout_at(ends_at, socket.next()).await {
            Err(_) => break, // the time limit: what came so far is the answer
            Ok(None) => {
                closed_by_peer = true;
                break;
            }
            Ok(Some(m)) => m,
        };
        let message =
            next.map_err(|e| failed(format!("the WebSocket broke off ({})", ws_error(&e))))?;
        let value = match message {
            Message::Text(t) => {
                bytes += t.len() as u64;
                serde_json::from_str::<Value>(t.as_str()).unwrap_or_else(|_| json!(t.as_str()))
            }
            Message::Binary(b) => {
                bytes += b.len() as u64;
                json!({"base64": base64::engine::general_purpose::STANDARD.encode(&b)})
            }
            Message::Close(_) => {
                closed_by_peer = true;
                break;
            }
            _ => continue,
        };
        // Past the cap the size layer would cut it anyway: stop reading.
        if bytes > cap {
            break;
        }
        messages.push(value);
    }
    if !closed_by_peer {
        // Closing is a courtesy: a peer that does not answer the close is
        // dropped after a second.
        let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
    }
    let envelope = json!({
        "ok": true,
        "status_code": response.status().as_u16(),
        "messages": messages,
        "closed_by_server": closed_by_peer,
        "elapsed_ms": started.elapsed().as_millis() as u64,
    });
    tracing::info!(api = %caller.config.name, operation = %op.name, "WebSocket exchange done");
    Ok(json!({
        "content": [{"type": "text", "text": envelope.to_string()}],
        "structuredContent": envelope,
    }))
}

/// A WebSocket error without the URL (a query may hold a key).
fn ws_error(e: &tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error;
    match e {
        Error::Io(io) => io.kind().to_string(),
        Error::Http(response) => format!("the server answered {}", response.status()),
        Error::Url(_) => "the URL is not a WebSocket URL".to_owned(),
        Error::ConnectionClosed | Error::AlreadyClosed => "the connection was closed".to_owned(),
        other => other.to_string(),
    }
}
