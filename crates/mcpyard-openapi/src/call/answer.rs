//! The API's answer as one envelope in `structuredContent`
//! (`{ok, status_code, elapsed_ms, data | text | events | base64 |
//! saved_path, …}`) plus its text rendering; a non-2xx answer is an
//! `isError` result with the same envelope. Nothing past
//! `max_response_bytes` is read; the router's size layer, whose result
//! limit for this source it is, cuts the result to it and says so.

use std::time::Instant;

use base64::Engine as _;
use mcpyard_gateway::CallContext;
use serde_json::{json, Map, Value};

use crate::{Operation, ResponseKind};

use super::{events, CallError, Caller};

/// A binary answer up to this size is returned inline; a larger one is
/// saved under the output folder.
pub(crate) const INLINE_BINARY_BYTES: usize = 1024 * 1024;

pub(crate) async fn read(
    caller: &Caller,
    op: &Operation,
    mut response: reqwest::Response,
    ctx: &CallContext,
    started: Instant,
) -> Result<Value, CallError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase())
        .unwrap_or_default();
    let kind = classify(&content_type, op.response);
    let mut envelope = Map::new();
    envelope.insert("ok".into(), json!(status.is_success()));
    envelope.insert("status_code".into(), json!(status.as_u16()));
    let mut extra_blocks = Vec::new();
    let truncated;
    if kind == ResponseKind::EventStream {
        let collected = events::collect(caller, response, ctx).await?;
        truncated = collected.truncated;
        envelope.insert("events".into(), Value::Array(collected.events));
    } else {
        let cap = caller.config.max_response_bytes;
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| caller.failure(&e))? {
            let room = cap.saturating_sub(body.len() as u64) as usize;
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break; // the rest is never read: dropping the answer closes it
            }
            body.extend_from_slice(&chunk);
        }
        truncated = cut;
        if !body.is_empty() {
            describe_body(
                caller,
                op,
                kind,
                &content_type,
                body,
                truncated,
                &mut envelope,
                &mut extra_blocks,
            )
            .await?;
        }
    }
    if !content_type.is_empty() {
        envelope.insert("content_type".into(), json!(content_type));
    }
    envelope.insert(
        "elapsed_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    tracing::info!(
        api = %caller.config.name,
        operation = %op.name,
        status = status.as_u16(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        truncated,
        "API call answered"
    );
    let mut rendering = envelope.clone();
    // The bytes travel once, in their own block.
    if rendering.remove("base64").is_some() {
        rendering.insert("base64".into(), json!("(in the next content block)"));
    }
    let mut content = vec![json!({"type": "text", "text": Value::Object(rendering).to_string()})];
    content.extend(extra_blocks);
    let mut result = json!({
        "content": content,
        "structuredContent": Value::Object(envelope),
    });
    if !status.is_success() {
        result["isError"] = json!(true);
    }
    Ok(result)
}

/// What the answer is, from its `Content-Type`, else from the document.
fn classify(content_type: &str, declared: ResponseKind) -> ResponseKind {
    let ct = content_type;
    if ct.is_empty() {
        return declared;
    }
    if ct == "text/event-stream" {
        ResponseKind::EventStream
    } else if ct == "application/json" || ct.ends_with("+json") || ct.ends_with("/json") {
        ResponseKind::Json
    } else if ct.starts_with("text/")
        || ct.ends_with("+xml")
        || ct.ends_with("/xml")
        || matches!(
            ct,
            "application/javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/x-ndjson"
        )
    {
        ResponseKind::Text
    } else {
        ResponseKind::Binary
    }
}

#[allow(clippy::too_many_arguments)]
async fn describe_body(
    caller: &Caller,
    op: &Operation,
    kind: ResponseKind,
    content_type: &str,
    body: Vec<u8>,
    truncated: bool,
    envelope: &mut Map<String, Value>,
    blocks: &mut Vec<Value>,
) -> Result<(), CallError> {
    let kind = match kind {
        // Undeclared and unlabelled: JSON if it parses, text if it is
        // UTF-8, else bytes.
        ResponseKind::Unknown | ResponseKind::EventStream => match std::str::from_utf8(&body) {
            Ok(_) => ResponseKind::Json,
            Err(_) => ResponseKind::Binary,
        },
        k => k,
    };
    match kind {
        ResponseKind::Json => match serde_json::from_slice::<Value>(&body) {
            Ok(data) if !truncated => {
                envelope.insert("data".into(), data);
            }
            _ => {
                envelope.insert(
                    "text".into(),
                    json!(String::from_utf8_lossy(&body).into_owned()),
                );
            }
        },
        ResponseKind::Text => {
            envelope.insert(
                "text".into(),
                json!(String::from_utf8_lossy(&body).into_owned()),
            );
        }
        _ => {
            let mime = if content_type.is_empty() {
                "application/octet-stream".to_owned()
            } else {
                content_type.to_owned()
            };
            envelope.insert("mime_type".into(), json!(mime));
            envelope.insert("size_bytes".into(), json!(body.len()));
            if body.len() <= INLINE_BINARY_BYTES {
                let data = base64::engine::general_purpose::STANDARD.encode(&body);
                blocks.push(if mime.starts_with("image/") {
                    json!({"type": "image", "data": data, "mimeType": mime})
                } else if mime.starts_with("audio/") {
                    json!({"type": "audio", "data": data, "mimeType": mime})
                } else {
                    json!({"type": "resource", "resource": {
                        "uri": format!("openapi://{}/{}", caller.config.name, op.name),
                        "mimeType": mime,
                        "blob": data,
                    }})
                });
                envelope.insert("base64".into(), json!(data));
            } else {
                let path = caller
                    .sandbox
                    .write_output(&op.name, extension(&mime), &body)
                    .await
                    .map_err(|e| CallError::Failed {
                        api: caller.config.name.clone(),
                        what: format!("the answer ({} bytes) could not be saved: {e}", body.len()),
                    })?;
                envelope.insert("saved_path".into(), json!(path.display().to_string()));
            }
        }
    }
    Ok(())
}

/// The file extension for a saved answer.
fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        "image/gif" => "gif",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "video/mp4" => "mp4",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        _ => "bin",
    }
}
