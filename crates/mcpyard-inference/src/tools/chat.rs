//! `chat`: an OpenAI-style chat completion on a local model. Streams the
//! answer into progress notifications when the client asked for progress,
//! and stops generating when the call is cancelled.

use serde_json::{json, Map, Value};

use super::{model_properties, Args, Call, ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::models::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "chat",
    definition,
    call,
};

/// Arguments passed to the server as they are.
const PASSTHROUGH: [&str; 9] = [
    "tools",
    "tool_choice",
    "response_format",
    "seed",
    "stop",
    "temperature",
    "top_p",
    "max_tokens",
    "chat_template_kwargs",
];

fn definition() -> Value {
    let mut props = json!({
        "messages": {
            "type": "array",
            "minItems": 1,
            "description": "The conversation, OpenAI style: [{\"role\": \"system\"|\"user\"|\"assistant\"|\"tool\", \"content\": ...}].",
            "items": {
                "type": "object",
                "properties": {
                    "role": {"type": "string", "enum": ["system", "user", "assistant", "tool", "developer"]},
                    "content": {"description": "Text, or an array of content parts (text, image_url)."},
                    "tool_calls": {"type": "array"},
                    "tool_call_id": {"type": "string"},
                    "name": {"type": "string"}
                },
                "required": ["role"]
            }
        },
        "tools": {"type": "array", "items": {"type": "object"}, "description": "OpenAI function tools the model may call."},
        "tool_choice": {"description": "\"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}."},
        "response_format": {"type": "object", "description": "{\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": {...}}."},
        "seed": {"type": "integer"},
        "stop": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "temperature": {"type": "number", "minimum": 0},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
        "chat_template_kwargs": {"type": "object", "description": "Passed to the chat template (e.g. {\"enable_thinking\": false})."}
    });
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), model_properties()) {
        p.extend(extra);
    }
    json!({
        "name": "chat",
        "title": "Chat with a local model",
        "description": "Runs a chat completion on a local model (OpenAI-style messages, tools, JSON output). Returns the assistant's text, and a `tool_calls:` block when the model calls tools. Without `model`, a loaded chat model is used.",
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": ["messages"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "content": {"type": ["string", "null"]},
                "reasoning": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "items": {"type": "object"}},
                "finish_reason": {"type": ["string", "null"]},
                "usage": {"type": ["object", "null"]}
            },
            "required": ["model", "backend", "content", "tool_calls", "finish_reason", "usage"]
        },
        "annotations": {
            "title": "Chat with a local model",
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": false
        },
        "execution": {"taskSupport": "optional"}
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(run(inf, args, call))
}

/// The assistant's answer, however it arrived.
#[derive(Debug, Default)]
struct Answer {
    model: Option<String>,
    content: String,
    reasoning: String,
    tool_calls: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

pub(crate) async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let messages = check_messages(args.get("messages"))?;
    let mut body = Map::new();
    for key in PASSTHROUGH {
        if let Some(v) = args.get(key) {
            body.insert(key.to_owned(), v.clone());
        }
    }
    check_passthrough(&args)?;
    let req = args.model_request()?;
    let resolved = inf.resolve(&req, Capability::Chat, call).await?;
    body.insert("model".into(), json!(resolved.model));
    body.insert("messages".into(), messages);
    let stream = call.progress.is_active();
    body.insert("stream".into(), json!(stream));
    let body = Value::Object(body);
    let backend = &resolved.backend;
    let path = backend.v1("/chat/completions");

    let outcome = if stream {
        streamed(backend, &path, &body, call).await
    } else {
        match backend.post_json(&path, &body).await {
            Ok(v) => parse_completion(&v).ok_or_else(|| {
                backend
                    .malformed(&path, "no `choices[0].message` in the answer")
                    .into()
            }),
            Err(e) => Err(e.into()),
        }
    };
    let answer = match outcome {
        Ok(a) => a,
        Err(ToolError::Backend(e)) => {
            inf.note_failure(&e).await;
            return Err(ToolError::Backend(e));
        }
        Err(e) => return Err(e),
    };
    Ok(result(answer, &resolved.model, backend.name()))
}

fn check_messages(v: Option<&Value>) -> Result<Value, ToolError> {
    let list = v.and_then(Value::as_array).ok_or_else(|| {
        ToolError::InvalidArguments(
            "`messages` is required: an array such as [{\"role\": \"user\", \"content\": \"Hello\"}]".into(),
        )
    })?;
    if list.is_empty() {
        return Err(ToolError::InvalidArguments(
            "`messages` must not be empty".into(),
        ));
    }
    for (i, m) in list.iter().enumerate() {
        if m.get("role").and_then(Value::as_str).is_none() {
            return Err(ToolError::InvalidArguments(format!(
                "`messages[{i}]` must be an object with a string `role` (system, user, assistant or tool)"
            )));
        }
    }
    Ok(Value::Array(list.clone()))
}

fn check_passthrough(args: &Args) -> Result<(), ToolError> {
    args.number("temperature")?;
    args.number("top_p")?;
    args.integer("max_tokens", 1)?;
    args.integer("seed", i64::MIN)?;
    args.object("response_format")?;
    args.object("chat_template_kwargs")?;
    if let Some(t) = args.get("tools") {
        if !t.is_array() {
            return Err(ToolError::InvalidArguments(
                "`tools` must be an array of {\"type\": \"function\", \"function\": {...}}".into(),
            ));
        }
    }
    if let Some(s) = args.get("stop") {
        let ok = s.is_string() || s.as_array().is_some_and(|a| a.iter().all(Value::is_string));
        if !ok {
            return Err(ToolError::InvalidArguments(
                "`stop` must be a string or an array of strings".into(),
            ));
        }
    }
    Ok(())
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        // Some servers answer content as parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn parse_completion(v: &Value) -> Option<Answer> {
    let choice = v.get("choices")?.get(0)?;
    let msg = choice.get("message")?;
    let reasoning = text_of(
        msg.get("reasoning_content")
            .or_else(|| msg.get("reasoning")),
    );
    Some(Answer {
        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
        content: text_of(msg.get("content")),
        reasoning,
        tool_calls: msg
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: v.get("usage").filter(|u| u.is_object()).cloned(),
    })
}

async fn streamed(
    backend: &crate::backend::Backend,
    path: &str,
    body: &Value,
    call: &Call,
) -> Result<Answer, ToolError> {
    let mut stream = backend.post_chat_stream(path, body).await?;
    let mut answer = Answer::default();
    loop {
        // Dropping the stream on cancel closes the connection, which makes
        // the server stop generating.
        let next = tokio::select! {
            n = stream.next() => n,
            _ = call.ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let Some(chunk) = next else { break };
        let chunk = chunk?;
        if answer.model.is_none() {
            answer.model = chunk
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            answer.usage = Some(u.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            answer.finish_reason = Some(f.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        let text = text_of(delta.get("content"));
        let thought = text_of(
            delta
                .get("reasoning_content")
                .or_else(|| delta.get("reasoning")),
        );
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            merge_tool_calls(&mut answer.tool_calls, calls);
        }
        answer.content.push_str(&text);
        answer.reasoning.push_str(&thought);
        let shown = if text.is_empty() { thought } else { text };
        if !shown.is_empty() {
            call.progress.advance(&shown).await;
        }
    }
    Ok(answer)
}

/// Streamed tool calls come in pieces keyed by `index`: the id and name
/// once, the arguments as string fragments.
fn merge_tool_calls(acc: &mut Vec<Value>, deltas: &[Value]) {
    for d in deltas {
        // Without an index, a piece with an id starts a new call.
        let index = match d.get("index").and_then(Value::as_u64) {
            Some(i) => i as usize,
            None if d.get("id").is_some() || acc.is_empty() => acc.len(),
            None => acc.len() - 1,
        };
        while acc.len() <= index {
            acc.push(
                json!({"id": null, "type": "function", "function": {"name": "", "arguments": ""}}),
            );
        }
        let slot = &mut acc[index];
        if let Some(id) = d.get("id").and_then(Value::as_str) {
            slot["id"] = json!(id);
        }
        if let Some(f) = d.get("function") {
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                let cur = slot["function"]["name"].as_str().unwrap_or("").to_owned();
                slot["function"]["name"] = json!(cur + name);
            }
            if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                let cur = slot["function"]["arguments"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                slot["function"]["arguments"] = json!(cur + a);
            }
        }
    }
}

fn result(answer: Answer, model: &str, backend: &str) -> Value {
    let mut content = Vec::new();
    let text = if !answer.content.trim().is_empty() {
        answer.content.clone()
    } else if !answer.reasoning.trim().is_empty() {
        format!("(reasoning) {}", answer.reasoning)
    } else if answer.tool_calls.is_empty() {
        "(the model returned no text)".to_owned()
    } else {
        String::new()
    };
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    if !answer.tool_calls.is_empty() {
        let pretty = serde_json::to_string_pretty(&answer.tool_calls).unwrap_or_default();
        content.push(json!({"type": "text", "text": format!("tool_calls:\n{pretty}")}));
    }
    let opt = |s: &str| if s.is_empty() { Value::Null } else { json!(s) };
    json!({
        "content": content,
        "structuredContent": {
            "model": answer.model.unwrap_or_else(|| model.to_owned()),
            "backend": backend,
            "content": opt(&answer.content),
            "reasoning": opt(&answer.reasoning),
            "tool_calls": answer.tool_calls,
            "finish_reason": answer.finish_reason,
            "usage": answer.usage,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_tool_call_pieces_are_joined() {
        let mut acc = Vec::new();
        merge_tool_calls(
            &mut acc,
            &[
                json!({"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": "{\"ci"}}),
            ],
        );
        merge_tool_calls(
            &mut acc,
            &[json!({"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}})],
        );
        assert_eq!(acc[0]["id"], "c1");
        assert_eq!(acc[0]["function"]["name"], "get_weather");
        assert_eq!(acc[0]["function"]["arguments"], "{\"city\":\"Paris\"}");
    }

    #[test]
    fn reasoning_is_shown_when_content_is_empty() {
        let a = parse_completion(&json!({
            "choices": [{"message": {"role": "assistant", "content": "", "reasoning_content": "thinking"}, "finish_reason": "length"}]
        }))
        .expect("parses");
        let r = result(a, "m", "b");
        assert_eq!(r["content"][0]["text"], "(reasoning) thinking");
        assert_eq!(r["structuredContent"]["finish_reason"], "length");
        assert_eq!(r["structuredContent"]["content"], Value::Null);
    }

    #[test]
    fn bad_messages_say_what_is_expected() {
        assert!(check_messages(None)
            .unwrap_err()
            .to_string()
            .contains("role"));
        assert!(check_messages(Some(&json!([{"content": "x"}])))
            .unwrap_err()
            .to_string()
            .contains("messages[0]"));
    }
}
