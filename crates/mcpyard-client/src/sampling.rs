//! Sampling under a policy: what a server's `sampling/createMessage` must
//! pass before anything that can run a model (the [`Sampler`]) sees it.
//!
//! A [`SamplingPolicy`] picks the model from an allow-list, caps the tokens,
//! and hands a [`SamplingSummary`] of the request to an optional
//! [`SamplingReviewer`] that approves or refuses it. The summary says what
//! was asked (a hash of the request, model hints, token counts, message
//! count, roles, content kinds) and never what the messages say, so it can
//! be shown to a person, logged or audited without leaking the text.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcpyard_client::ClientError> {
//! use async_trait::async_trait;
//! use mcpyard_client::{McpClient, Review, Sampler, SamplingPolicy, SamplingRequest, TransportSpec};
//! use mcpyard_proto::{ErrorObject, RequestId};
//! use serde_json::{json, Value};
//!
//! struct Echo;
//!
//! #[async_trait]
//! impl Sampler for Echo {
//!     async fn create_message(
//!         &self,
//!         request: SamplingRequest,
//!         _related: Option<RequestId>,
//!     ) -> Result<Value, ErrorObject> {
//!         let model = request.model.unwrap_or_else(|| "echo".into());
//!         Ok(json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": model}))
//!     }
//! }
//!
//! let policy = SamplingPolicy::new(512)
//!     .allow_models(["qwen3:4b", "llama3.2"])
//!     .reviewer(|summary: mcpyard_client::SamplingSummary| async move {
//!         if summary.message_count > 20 {
//!             Review::Refuse("too long a conversation".into())
//!         } else {
//!             Review::Approve
//!         }
//!     });
//! let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
//! let client = McpClient::builder(spec).sampling(policy, Echo).connect().await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use mcpyard_proto::{ErrorObject, RequestId};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The JSON-RPC error code of a refused sampling request, as the MCP spec's
/// example of a user rejecting one.
pub const SAMPLING_REFUSED: i64 = -1;

/// Most model hints, and characters of each, a summary keeps: hints are
/// free text a server chooses, so they are bounded.
const MAX_HINTS: usize = 8;
const MAX_HINT_CHARS: usize = 64;

/// What a reviewer decided about a sampling request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// The request may go to the sampler.
    Approve,
    /// The request is refused; the reason is sent to the server in the
    /// error, so it must not carry anything private.
    Refuse(String),
}

/// Looks at a [`SamplingSummary`] and approves or refuses the request
/// before the sampler sees it (a person asked in a UI, a rule, a budget).
///
/// Any `Fn(SamplingSummary) -> impl Future<Output = Review>` is one.
#[async_trait]
pub trait SamplingReviewer: Send + Sync + 'static {
    /// Approves or refuses the request `summary` describes.
    async fn review(&self, summary: &SamplingSummary) -> Review;
}

#[async_trait]
impl<F, Fut> SamplingReviewer for F
where
    F: Fn(SamplingSummary) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Review> + Send,
{
    async fn review(&self, summary: &SamplingSummary) -> Review {
        (self)(summary.clone()).await
    }
}

/// Runs a model for the sampling requests a [`SamplingPolicy`] admitted.
#[async_trait]
pub trait Sampler: Send + Sync + 'static {
    /// Answers an admitted request with a `CreateMessageResult`
    /// (`role`, `content`, `model`, `stopReason`). Use
    /// [`SamplingRequest::model`] when it is set (it is the allowed model
    /// the policy picked) and at most the `maxTokens` of its params.
    /// `related` is the client's own request the server was serving, when
    /// the transport can tell.
    async fn create_message(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject>;

    /// [`Sampler::create_message`], with what the answer used when the
    /// sampler can tell (a local model counts its tokens), for an audit
    /// trail or metrics. By default: the answer, and `None`.
    async fn create_message_measured(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<(Value, Option<SamplingUsage>), ErrorObject> {
        Ok((self.create_message(request, related).await?, None))
    }

    /// The `sampling` capability to advertise (`{}`; `{"tools": {}}` for a
    /// sampler that handles tool use, protocol 2025-11-25).
    fn capability(&self) -> Value {
        json!({})
    }
}

/// A shared sampler, so the application keeps a handle on it.
#[async_trait]
impl<T: Sampler> Sampler for Arc<T> {
    async fn create_message(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        (**self).create_message(request, related).await
    }

    async fn create_message_measured(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<(Value, Option<SamplingUsage>), ErrorObject> {
        (**self).create_message_measured(request, related).await
    }

    fn capability(&self) -> Value {
        (**self).capability()
    }
}

impl std::fmt::Debug for dyn Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sampler")
    }
}

/// What an answered sampling request used: the model, and its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SamplingUsage {
    /// The model that answered.
    pub model: String,
    /// Tokens of the prompt, as the model counted them.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

/// What a server asked for in a `sampling/createMessage`, without the text:
/// safe to log, audit or show to a reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SamplingSummary {
    /// SHA-256 (hex) of the request's canonical JSON (keys sorted, no
    /// whitespace): the same request always hashes the same, so it can be
    /// matched in logs without being recorded.
    pub request_sha256: String,
    /// The names in `modelPreferences.hints` (at most 8, each cut at 64
    /// characters).
    pub model_hints: Vec<String>,
    /// The `maxTokens` the server asked for.
    pub max_tokens_requested: Option<u64>,
    /// The `maxTokens` the sampler gets: the request's, lowered to the
    /// policy's cap.
    pub max_tokens_granted: u64,
    /// How many messages the request carries.
    pub message_count: usize,
    /// The role of each message, in order (`user`, `assistant`, else
    /// `other`).
    pub roles: Vec<String>,
    /// The kinds of content blocks in the messages (`text`, `image`,
    /// `audio`, `tool_use`, `tool_result`, ..., else `other`), each once, in
    /// the order first seen.
    pub content_kinds: Vec<String>,
    /// Whether the request has a system prompt.
    pub has_system_prompt: bool,
    /// How many tools the request offers the model (protocol 2025-11-25).
    pub tool_count: usize,
    /// The request's `includeContext` (`none`, `thisServer`, `allServers`).
    pub include_context: Option<String>,
}

/// A sampling request a [`SamplingPolicy`] admitted, for the [`Sampler`].
#[derive(Clone)]
pub struct SamplingRequest {
    /// The request's params, `maxTokens` lowered to the policy's cap.
    pub params: Value,
    /// The allowed model to answer with: the first allowed model a hint of
    /// the request names (hints match as substrings, as the spec
    /// describes), else the first allowed model; `None` when the policy
    /// allows any model.
    pub model: Option<String>,
    /// What the request asks for, without the text.
    pub summary: SamplingSummary,
}

impl std::fmt::Debug for SamplingRequest {
    /// The summary only: the params carry the text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplingRequest")
            .field("model", &self.model)
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

/// What a server's sampling request must pass: an allow-list of models, a
/// token cap, and an optional reviewer that sees a [`SamplingSummary`]
/// before the sampler sees the request.
#[derive(Clone)]
pub struct SamplingPolicy {
    models: Vec<String>,
    max_tokens: u32,
    reviewer: Option<Arc<dyn SamplingReviewer>>,
}

impl std::fmt::Debug for SamplingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SamplingPolicy")
            .field("models", &self.models)
            .field("max_tokens", &self.max_tokens)
            .field("reviewer", &self.reviewer.is_some())
            .finish()
    }
}

impl SamplingPolicy {
    /// Any model, at most `max_tokens` tokens per answer (0 counts as 1),
    /// no reviewer.
    pub fn new(max_tokens: u32) -> Self {
        Self {
            models: Vec::new(),
            max_tokens: max_tokens.max(1),
            reviewer: None,
        }
    }

    /// Only these models may answer; the first is the default. Empty: any.
    pub fn allow_models(mut self, models: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.models = models.into_iter().map(Into::into).collect();
        self
    }

    /// Asks `reviewer` about every request before the sampler sees it.
    pub fn reviewer(mut self, reviewer: impl SamplingReviewer) -> Self {
        self.reviewer = Some(Arc::new(reviewer));
        self
    }

    /// The allowed models (empty: any).
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// The most tokens one answer may use.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// Describes a request's params without their text.
    pub fn summarize(&self, params: &Value) -> SamplingSummary {
        let messages = params
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut content_kinds: Vec<String> = Vec::new();
        for message in messages {
            let blocks: Vec<&Value> = match message.get("content") {
                Some(Value::Array(items)) => items.iter().collect(),
                Some(one) => vec![one],
                None => Vec::new(),
            };
            for block in blocks {
                let kind = content_kind(block.get("type").and_then(Value::as_str)).to_owned();
                if !content_kinds.contains(&kind) {
                    content_kinds.push(kind);
                }
            }
        }
        let max_tokens_requested = params.get("maxTokens").and_then(Value::as_u64);
        SamplingSummary {
            request_sha256: canonical_sha256(params),
            model_hints: model_hints(params)
                .take(MAX_HINTS)
                .map(|h| h.chars().take(MAX_HINT_CHARS).collect())
                .collect(),
            max_tokens_requested,
            max_tokens_granted: self.granted_tokens(max_tokens_requested),
            message_count: messages.len(),
            roles: messages
                .iter()
                .map(|m| match m.get("role").and_then(Value::as_str) {
                    Some(role @ ("user" | "assistant")) => role.to_owned(),
                    _ => "other".to_owned(),
                })
                .collect(),
            content_kinds,
            has_system_prompt: params
                .get("systemPrompt")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty()),
            tool_count: params
                .get("tools")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
            include_context: params
                .get("includeContext")
                .and_then(Value::as_str)
                .map(|c| c.chars().take(MAX_HINT_CHARS).collect()),
        }
    }

    /// The model to answer with (see [`SamplingRequest::model`]).
    pub fn pick_model(&self, params: &Value) -> Option<String> {
        model_hints(params)
            .find_map(|hint| self.models.iter().find(|m| m.contains(hint)))
            .or_else(|| self.models.first())
            .cloned()
    }

    fn granted_tokens(&self, requested: Option<u64>) -> u64 {
        let cap = u64::from(self.max_tokens);
        requested.unwrap_or(cap).clamp(1, cap)
    }

    /// Checks a request, lowers its `maxTokens` to the cap, picks its model
    /// and asks the reviewer. A refusal is a JSON-RPC error with code
    /// [`SAMPLING_REFUSED`] and the reviewer's reason; params that are not a
    /// sampling request are -32602.
    pub async fn admit(&self, mut params: Value) -> Result<SamplingRequest, ErrorObject> {
        if !params.get("messages").is_some_and(Value::is_array) {
            return Err(ErrorObject::invalid_params(
                "sampling/createMessage needs a `messages` array",
            ));
        }
        let summary = self.summarize(&params);
        if let Some(reviewer) = &self.reviewer {
            if let Review::Refuse(reason) = reviewer.review(&summary).await {
                tracing::debug!(
                    target: "mcpyard::sampling",
                    request_sha256 = %summary.request_sha256,
                    "sampling request refused by the reviewer"
                );
                return Err(ErrorObject::new(
                    SAMPLING_REFUSED,
                    format!("the client refused this sampling request: {reason}"),
                ));
            }
        }
        params["maxTokens"] = json!(summary.max_tokens_granted);
        let model = self.pick_model(&params);
        Ok(SamplingRequest {
            params,
            model,
            summary,
        })
    }
}

/// The names in a request's `modelPreferences.hints`.
fn model_hints(params: &Value) -> impl Iterator<Item = &str> {
    params
        .pointer("/modelPreferences/hints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|h| h.get("name").and_then(Value::as_str))
}

/// A content block's `type` as one of the kinds the spec defines.
fn content_kind(kind: Option<&str>) -> &'static str {
    match kind {
        Some("text") => "text",
        Some("image") => "image",
        Some("audio") => "audio",
        Some("tool_use") => "tool_use",
        Some("tool_result") => "tool_result",
        Some("resource") => "resource",
        Some("resource_link") => "resource_link",
        _ => "other",
    }
}

/// SHA-256 (hex) of `value` as canonical JSON: object keys sorted, no
/// whitespace, so the hash does not depend on how the server ordered keys.
fn canonical_sha256(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({
            "systemPrompt": "you are terse",
            "maxTokens": 4000,
            "includeContext": "thisServer",
            "modelPreferences": {"hints": [{"name": "claude"}, {"name": "qwen"}]},
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "the secret is hunter2"}},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "noted"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"}
                ]},
                {"role": "tool", "content": {"type": "mystery"}}
            ]
        })
    }

    #[test]
    fn the_summary_describes_the_request_and_never_carries_its_text() {
        let policy = SamplingPolicy::new(256).allow_models(["llama3", "qwen3:4b"]);
        let summary = policy.summarize(&request());
        assert_eq!(summary.model_hints, ["claude", "qwen"]);
        assert_eq!(summary.max_tokens_requested, Some(4000));
        assert_eq!(summary.max_tokens_granted, 256);
        assert_eq!(summary.message_count, 3);
        assert_eq!(summary.roles, ["user", "assistant", "other"]);
        assert_eq!(summary.content_kinds, ["text", "image", "other"]);
        assert!(summary.has_system_prompt);
        assert_eq!(summary.include_context.as_deref(), Some("thisServer"));
        assert_eq!(summary.request_sha256.len(), 64);
        let shown = format!("{summary:?} {}", serde_json::to_string(&summary).unwrap());
        for secret in ["hunter2", "noted", "terse", "AAAA"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_content() {
        let a = json!({"maxTokens": 5, "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]});
        let b: Value = serde_json::from_str(
            r#"{"messages":[{"content":{"text":"x","type":"text"},"role":"user"}],"maxTokens":5}"#,
        )
        .unwrap();
        let c = json!({"maxTokens": 5, "messages": [{"role": "user", "content": {"type": "text", "text": "y"}}]});
        assert_eq!(canonical_sha256(&a), canonical_sha256(&b));
        assert_ne!(canonical_sha256(&a), canonical_sha256(&c));
        // The canonical form of a known value, hashed elsewhere.
        let mut text = String::new();
        write_canonical(&json!({"b": [1, "é"], "a": null}), &mut text);
        assert_eq!(text, r#"{"a":null,"b":[1,"é"]}"#);
    }

    #[test]
    fn hints_pick_an_allowed_model_and_never_another() {
        let p = json!({"modelPreferences": {"hints": [{"name": "gpt-4"}, {"name": "qwen"}]}});
        let pick = |models: &[&str]| {
            SamplingPolicy::new(64)
                .allow_models(models.iter().copied())
                .pick_model(&p)
        };
        assert_eq!(pick(&["llama3", "qwen3:4b"]).as_deref(), Some("qwen3:4b"));
        assert_eq!(pick(&["llama3"]).as_deref(), Some("llama3"));
        assert_eq!(pick(&[]), None);
    }

    #[tokio::test]
    async fn admission_caps_tokens_and_the_reviewer_sees_only_the_summary() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let policy = SamplingPolicy::new(100)
            .allow_models(["qwen3:4b"])
            .reviewer(move |s: SamplingSummary| {
                log.lock().unwrap().push(s.clone());
                async move {
                    if s.content_kinds.contains(&"image".to_owned()) {
                        Review::Refuse("no images".into())
                    } else {
                        Review::Approve
                    }
                }
            });
        let refused = policy.admit(request()).await.unwrap_err();
        assert_eq!(refused.code, SAMPLING_REFUSED);
        assert_eq!(
            refused.message,
            "the client refused this sampling request: no images"
        );

        let small = json!({"maxTokens": 10, "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]});
        let admitted = policy.admit(small).await.unwrap();
        assert_eq!(admitted.params["maxTokens"], 10);
        assert_eq!(admitted.model.as_deref(), Some("qwen3:4b"));
        let big = json!({"maxTokens": 1000, "messages": []});
        assert_eq!(policy.admit(big).await.unwrap().params["maxTokens"], 100);
        let unasked = json!({"messages": []});
        assert_eq!(
            policy.admit(unasked).await.unwrap().params["maxTokens"],
            100
        );
        assert_eq!(seen.lock().unwrap().len(), 4);
        assert!(!format!("{admitted:?}").contains("hi\""));

        let bad = policy.admit(json!({"maxTokens": 1})).await.unwrap_err();
        assert_eq!(bad.code, mcpyard_proto::codes::INVALID_PARAMS);
    }
}
