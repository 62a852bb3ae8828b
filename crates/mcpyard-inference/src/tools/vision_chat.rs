//! Sending a vision turn: OpenAI's chat route (streamed into progress or
//! not), or Ollama's native `/api/chat` when the caller sets the context
//! size, which Ollama takes per request only there (`options.num_ctx`; its
//! OpenAI-compatible route ignores it).

use serde_json::{json, Map, Value};

use super::chat::{parse_completion, streamed, text_of, Answer};
use super::media::backend_call;
use super::Call;
use crate::backend::Backend;
use crate::engine::Inference;
use crate::error::ToolError;

/// What goes to the model besides the messages.
#[derive(Debug, Default)]
pub(super) struct Settings {
    pub(super) max_tokens: Option<u64>,
    pub(super) temperature: Option<serde_json::Number>,
    /// Ollama's `num_ctx`; sent only to Ollama.
    pub(super) num_ctx: Option<u64>,
    /// Stream the tokens into progress notifications.
    pub(super) stream: bool,
}

/// Runs the turn on `backend` with `model`.
pub(super) async fn send(
    inf: &Inference,
    call: &Call,
    backend: &Backend,
    model: &str,
    messages: Vec<Value>,
    settings: Settings,
) -> Result<Answer, ToolError> {
    if settings.num_ctx.is_some() && backend.kind() == crate::BackendKind::Ollama {
        ollama_native(inf, call, backend, model, messages, &settings).await
    } else {
        openai(inf, call, backend, model, messages, &settings).await
    }
}

async fn openai(
    inf: &Inference,
    call: &Call,
    backend: &Backend,
    model: &str,
    messages: Vec<Value>,
    settings: &Settings,
) -> Result<Answer, ToolError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(settings.stream));
    if let Some(m) = settings.max_tokens {
        body.insert("max_tokens".into(), json!(m));
    }
    if let Some(t) = &settings.temperature {
        body.insert("temperature".into(), Value::Number(t.clone()));
    }
    let body = Value::Object(body);
    let path = backend.v1("/chat/completions");
    if settings.stream {
        let outcome = streamed(backend, &path, &body, call).await;
        if let Err(ToolError::Backend(e)) = &outcome {
            inf.note_failure(e).await;
        }
        return outcome;
    }
    let answer = backend_call(inf, call, backend.post_json(&path, &body)).await?;
    Ok(parse_completion(&answer)
        .ok_or_else(|| backend.malformed(&path, "no `choices[0].message` in the answer"))?)
}

/// Ollama's `/api/chat`: messages with string content and the images as
/// bare base64 in `images`, settings in `options`, NDJSON when streamed.
async fn ollama_native(
    inf: &Inference,
    call: &Call,
    backend: &Backend,
    model: &str,
    messages: Vec<Value>,
    settings: &Settings,
) -> Result<Answer, ToolError> {
    let mut options = Map::new();
    if let Some(n) = settings.num_ctx {
        options.insert("num_ctx".into(), json!(n));
    }
    if let Some(m) = settings.max_tokens {
        options.insert("num_predict".into(), json!(m));
    }
    if let Some(t) = &settings.temperature {
        options.insert("temperature".into(), Value::Number(t.clone()));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "messages".into(),
        Value::Array(messages.into_iter().map(native_message).collect()),
    );
    body.insert("stream".into(), json!(settings.stream));
    body.insert("options".into(), Value::Object(options));
    let body = Value::Object(body);
    let path = "/api/chat";
    let mut answer = Answer::default();
    if !settings.stream {
        let v = backend_call(inf, call, backend.post_json(path, &body)).await?;
        let message = v
            .get("message")
            .ok_or_else(|| backend.malformed(path, "no `message` in the answer"))?;
        answer.content = text_of(message.get("content"));
        finish(&mut answer, &v);
        return Ok(answer);
    }
    let mut lines = backend_call(
        inf,
        call,
        backend.post_ndjson(path, &body, Some(backend.timeout())),
    )
    .await?;
    loop {
        // Dropping the stream on cancel closes the connection, which makes
        // Ollama stop generating.
        let next = tokio::select! {
            n = lines.next() => n,
            _ = call.ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let line = match next {
            None => break,
            Some(Ok(line)) => line,
            Some(Err(e)) => {
                inf.note_failure(&e).await;
                return Err(e.into());
            }
        };
        if let Some(e) = line.get("error").and_then(Value::as_str) {
            return Err(backend
                .malformed(path, format!("Ollama stopped with an error: {e}"))
                .into());
        }
        let piece = text_of(line.get("message").and_then(|m| m.get("content")));
        if !piece.is_empty() {
            call.progress.advance(&piece).await;
            answer.content.push_str(&piece);
        }
        if line.get("done") == Some(&Value::Bool(true)) {
            finish(&mut answer, &line);
            break;
        }
    }
    Ok(answer)
}

/// The model, stop reason and token counts of Ollama's last answer line,
/// in OpenAI's names.
fn finish(answer: &mut Answer, last: &Value) {
    answer.model = last.get("model").and_then(Value::as_str).map(str::to_owned);
    answer.finish_reason = last
        .get("done_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let count = |k: &str| last.get(k).and_then(Value::as_u64).unwrap_or(0);
    if last.get("eval_count").is_some() {
        let (prompt, completion) = (count("prompt_eval_count"), count("eval_count"));
        answer.usage = Some(
            json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}),
        );
    }
}

/// An OpenAI vision message in Ollama's native form: text parts joined
/// into `content`, each `data:` image URL's base64 moved into `images`.
fn native_message(message: Value) -> Value {
    let Value::Object(mut m) = message else {
        return message;
    };
    if !m.get("content").is_some_and(Value::is_array) {
        return Value::Object(m);
    }
    if let Some(Value::Array(parts)) = m.remove("content") {
        let mut text = Vec::new();
        let mut images = Vec::new();
        for part in parts {
            let Value::Object(mut part) = part else {
                continue;
            };
            match part.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(Value::String(t)) = part.remove("text") {
                        text.push(t);
                    }
                }
                Some("image_url") => {
                    let url = match part.remove("image_url") {
                        Some(Value::Object(mut u)) => u.remove("url"),
                        Some(url @ Value::String(_)) => Some(url),
                        _ => None,
                    };
                    if let Some(Value::String(mut url)) = url {
                        if let Some(at) = url.find(";base64,") {
                            // In place: the image is not copied.
                            url.replace_range(..at + ";base64,".len(), "");
                            images.push(Value::String(url));
                        }
                    }
                }
                _ => {}
            }
        }
        m.insert("content".into(), Value::String(text.join("\n")));
        if !images.is_empty() {
            m.insert("images".into(), Value::Array(images));
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vision_parts_become_ollamas_images() {
        let m = native_message(json!({"role": "user", "content": [
            {"type": "text", "text": "What is it?"},
            {"type": "text", "text": "Image 1, original:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
        ]}));
        assert_eq!(
            m,
            json!({"role": "user", "content": "What is it?\nImage 1, original:", "images": ["iVBORw=="]})
        );
        let plain = json!({"role": "system", "content": "Be brief."});
        assert_eq!(native_message(plain.clone()), plain);
    }
}
