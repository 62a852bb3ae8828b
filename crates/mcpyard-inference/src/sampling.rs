//! The sampling bridge: an upstream MCP server's `sampling/createMessage`
//! answered by a local chat model, for upstreams whose policy allows it
//! (the gateway decides when; this decides how). The request becomes the
//! same chat completion the `chat` tool makes, with the model and token cap
//! the upstream's policy (`mcpyard_client::SamplingPolicy`) settled.

use async_trait::async_trait;
use mcpyard_gateway::{CallContext, Sampler, SamplingRequest, SamplingUsage};
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::source::InferenceSource;
use crate::tools::{chat, Args, Call};

#[async_trait]
impl Sampler for InferenceSource {
    async fn create_message(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        Ok(self.create_message_measured(request, related).await?.0)
    }

    /// The chat tool's answer, with the model and tokens it reported.
    async fn create_message_measured(
        &self,
        request: SamplingRequest,
        _related: Option<RequestId>,
    ) -> Result<(Value, Option<SamplingUsage>), ErrorObject> {
        let params = &request.params;
        let messages = chat_messages(params)?;
        // Already lowered to the cap by the policy.
        let max_tokens = request.summary.max_tokens_granted;
        let mut args = json!({"messages": messages, "max_tokens": max_tokens});
        if let Some(model) = &request.model {
            args["model"] = json!(model);
        }
        if let Some(t) = params.get("temperature").filter(|t| t.is_number()) {
            args["temperature"] = t.clone();
        }
        if let Some(stop) = params.get("stopSequences").filter(|s| s.is_array()) {
            args["stop"] = stop.clone();
        }
        let args = Args::new(args).map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
        let call = Call::new(CallContext::detached(CancellationToken::new()));
        let result = chat::run(self.engine(), args, &call)
            .await
            .map_err(|e| ErrorObject::internal(format!("the local model could not answer: {e}")))?;
        let answer = &result["structuredContent"];
        let text = answer["content"]
            .as_str()
            .or_else(|| answer["reasoning"].as_str())
            .unwrap_or_default();
        let model = answer["model"].as_str().unwrap_or_default().to_owned();
        let stop_reason = match answer["finish_reason"].as_str() {
            Some("length") => "maxTokens",
            Some("stop") if params.get("stopSequences").is_some() => "stopSequence",
            _ => "endTurn",
        };
        let usage = SamplingUsage {
            model: model.clone(),
            prompt_tokens: answer["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
            completion_tokens: answer["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        };
        let result = json!({
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": model,
            "stopReason": stop_reason,
        });
        Ok((result, Some(usage)))
    }
}

/// MCP sampling messages (text, image and audio content, one block or a
/// list) as OpenAI chat messages, the system prompt first.
fn chat_messages(params: &Value) -> Result<Vec<Value>, ErrorObject> {
    let list = params
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| ErrorObject::invalid_params("`messages` must be an array"))?;
    let mut out = Vec::with_capacity(list.len() + 1);
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        out.push(json!({"role": "system", "content": system}));
    }
    for m in list {
        let role = match m.get("role").and_then(Value::as_str) {
            Some(r @ ("user" | "assistant")) => r,
            _ => {
                return Err(ErrorObject::invalid_params(
                    "each message needs role user or assistant",
                ))
            }
        };
        let blocks: Vec<&Value> = match m.get("content") {
            Some(Value::Array(items)) => items.iter().collect(),
            Some(one) => vec![one],
            None => Vec::new(),
        };
        let mut parts = Vec::new();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => parts.push(
                    json!({"type": "text", "text": block["text"].as_str().unwrap_or_default()}),
                ),
                Some("image") => {
                    let mime = block["mimeType"].as_str().unwrap_or("image/png");
                    let data = block["data"].as_str().unwrap_or_default();
                    parts.push(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}));
                }
                other => {
                    return Err(ErrorObject::invalid_params(format!(
                        "content of type {} cannot be sent to a local chat model",
                        other.unwrap_or("(none)")
                    )))
                }
            }
        }
        // Plain text stays a string: not every local server takes parts.
        let content = match parts.as_slice() {
            [one] if one["type"] == "text" => one["text"].clone(),
            _ => Value::Array(parts),
        };
        out.push(json!({"role": role, "content": content}));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_messages_become_chat_messages() {
        let p = json!({
            "systemPrompt": "be brief",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "user", "content": [
                    {"type": "text", "text": "what is this"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"}
                ]}
            ]
        });
        let m = chat_messages(&p).unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(
            m[2]["content"][1]["image_url"]["url"],
            json!("data:image/png;base64,AAAA")
        );
    }

    #[test]
    fn unusable_requests_are_invalid_params() {
        assert!(chat_messages(&json!({})).is_err());
        assert!(chat_messages(
            &json!({"messages": [{"role": "tool", "content": {"type": "text", "text": "x"}}]})
        )
        .is_err());
        assert!(chat_messages(
            &json!({"messages": [{"role": "user", "content": {"type": "audio", "data": "x"}}]})
        )
        .is_err());
    }
}
