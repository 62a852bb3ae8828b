//! `chat`: an OpenAI-style chat completion on a local model. Streams the
//! answer into progress notifications when the client asked for progress,
//! and stops generating when the call is cancelled.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Number, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "chat",
    definition,
    call,
};

/// `chat`'s arguments. Everything but `model` and `allow_download` goes to
/// the server as it came.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChatArgs {
    /// The conversation, OpenAI style: [{"role": "system"|"user"|"assistant"|"tool", "content": ...}].
    #[schemars(length(min = 1))]
    messages: Vec<ChatMessage>,
    /// OpenAI function tools the model may call.
    tools: Option<Vec<Map<String, Value>>>,
    /// "auto", "none", "required" or {"type": "function", "function": {"name": ...}}.
    tool_choice: Option<Value>,
    /// {"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}.
    response_format: Option<Map<String, Value>>,
    seed: Option<i64>,
    stop: Option<Stop>,
    #[schemars(range(min = 0))]
    temperature: Option<Number>,
    #[schemars(range(min = 0, max = 1))]
    top_p: Option<Number>,
    #[schemars(range(min = 1))]
    max_tokens: Option<u64>,
    #[schemars(range(min = -2, max = 2))]
    presence_penalty: Option<Number>,
    #[schemars(range(min = -2, max = 2))]
    frequency_penalty: Option<Number>,
    /// false: one answer at the end. Otherwise the answer streams into progress notifications when the client asked for progress.
    stream: Option<bool>,
    /// Passed to the chat template (e.g. {"enable_thinking": false}).
    chat_template_kwargs: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

/// A chat message; other keys (such as `reasoning_content`) are passed on.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct ChatMessage {
    role: Role,
    /// Text, or an array of content parts (text, image_url).
    #[serde(
        default,
        deserialize_with = "kept",
        skip_serializing_if = "Option::is_none"
    )]
    content: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    other: Map<String, Value>,
}

/// A present `content` is sent back as it came, even `null` (some
/// servers want the key on an assistant message that only calls tools).
fn kept<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Role {
    System,
    User,
    Assistant,
    Tool,
    Developer,
}

/// Where the model stops: one string or several.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "a string or an array of strings")]
enum Stop {
    One(String),
    Many(Vec<String>),
}

fn definition() -> Value {
    json!({
        "name": "chat",
        "title": "Chat with a local model",
        "description": "Runs a chat completion on a local model (OpenAI-style messages, tools, JSON output). Returns the assistant's text, and a `tool_calls:` block when the model calls tools. Without `model`, a loaded chat model is used.",
        "inputSchema": input_schema::<ChatArgs>(),
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
pub(crate) struct Answer {
    pub(crate) model: Option<String>,
    pub(crate) content: String,
    pub(crate) reasoning: String,
    pub(crate) tool_calls: Vec<Value>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<Value>,
}

pub(crate) async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let args: ChatArgs = args.parse()?;
    let req = model_request(&args.model, args.allow_download);
    // Tokens stream to progress notifications, so only a client that asked
    // for progress gets them streamed, and only if it did not say no.
    let stream = args.stream != Some(false) && call.progress.is_active();
    let mut body = request_body(args)?;
    let resolved = inf.resolve(&req, Capability::Chat, call).await?;
    body.insert("model".into(), json!(resolved.model));
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

/// The body sent to the server, less `model` and `stream`: the arguments
/// as they came, once checked beyond what their types say.
fn request_body(args: ChatArgs) -> Result<Map<String, Value>, ToolError> {
    if args.messages.is_empty() {
        return Err(ToolError::InvalidArguments(
            "`messages` must not be empty".into(),
        ));
    }
    if args.max_tokens == Some(0) {
        return Err(ToolError::InvalidArguments(
            "`max_tokens` must be an integer of at least 1".into(),
        ));
    }
    let mut body = Map::new();
    put(&mut body, "tools", args.tools);
    put(&mut body, "tool_choice", args.tool_choice);
    put(&mut body, "response_format", args.response_format);
    put(&mut body, "seed", args.seed);
    put(&mut body, "stop", args.stop);
    put(&mut body, "temperature", args.temperature);
    put(&mut body, "top_p", args.top_p);
    put(&mut body, "max_tokens", args.max_tokens);
    put(&mut body, "presence_penalty", args.presence_penalty);
    put(&mut body, "frequency_penalty", args.frequency_penalty);
    put(&mut body, "chat_template_kwargs", args.chat_template_kwargs);
    put(&mut body, "messages", Some(args.messages));
    Ok(body)
}

/// Sets `key` to a given argument, as JSON again (it came as JSON, so it
/// converts back).
fn put<T: Serialize>(body: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(v) = value {
        body.insert(key.to_owned(), json!(v));
    }
}

/// The text of a message's `content`: a string, or the text of its parts.
pub(crate) fn text_of(v: Option<&Value>) -> String {
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

/// The answer of a non-streamed chat completion; `None` when it has no
/// `choices[0].message`.
pub(crate) fn parse_completion(v: &Value) -> Option<Answer> {
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

/// A streamed completion, each piece of text passed on as progress.
pub(crate) async fn streamed(
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
        let check_messages = |messages: Option<&Value>| {
            let mut args = json!({});
            if let Some(m) = messages {
                args["messages"] = m.clone();
            }
            Args::new(args)
                .and_then(Args::parse::<ChatArgs>)
                .and_then(request_body)
        };
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
