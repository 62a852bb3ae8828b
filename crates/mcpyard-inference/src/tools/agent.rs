//! `agent`: a local model runs a bounded tool-calling loop over an
//! allow-list of the gateway's own catalogue (local tools and upstream MCP
//! tools alike), then answers. Every inner call goes through the gateway's
//! router as the client that called the agent, and is logged. Iterations,
//! time and tokens are bounded; images and audio the tools produce come
//! back as native content blocks, or as files in the output folder.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{blank_is_none, input_schema, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC};
use super::call::Call;
use super::chat;
use super::def::{ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "agent",
    definition,
    call,
};

const DEFAULT_ITERATIONS: u64 = 6;
const MAX_ITERATIONS: u64 = 20;
const DEFAULT_SECONDS: u64 = 120;
const MAX_SECONDS: u64 = 900;
const DEFAULT_TOKENS: u64 = 4096;
/// How much of one tool result the model sees.
const TOOL_RESULT_CHARS: usize = 16_000;

/// `agent`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    /// The task, as a user message.
    #[serde(default, deserialize_with = "blank_is_none")]
    prompt: Option<String>,
    /// Chat messages to start from (OpenAI style); `prompt` is appended after them.
    #[serde(default)]
    messages: Vec<Map<String, Value>>,
    /// System prompt for the local model.
    #[serde(default, deserialize_with = "blank_is_none")]
    system: Option<String>,
    /// Names of catalogue tools the model may call, as tools/list shows them; a trailing `*` matches a prefix (`fs__*`). Nothing else can be called.
    #[serde(default)]
    tools: Vec<String>,
    /// Model turns at most.
    #[serde(default = "default_iterations")]
    #[schemars(range(min = 1, max = MAX_ITERATIONS))]
    max_iterations: u64,
    /// Wall time at most.
    #[serde(default = "default_seconds")]
    #[schemars(range(min = 1, max = MAX_SECONDS))]
    max_seconds: u64,
    /// Completion tokens at most, over all turns.
    #[serde(default = "default_tokens")]
    #[schemars(range(min = 1))]
    max_tokens: u64,
    /// Write images and audio the tools produce to the output folder instead of returning them inline.
    #[serde(default)]
    save_media: bool,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

fn default_iterations() -> u64 {
    DEFAULT_ITERATIONS
}
fn default_seconds() -> u64 {
    DEFAULT_SECONDS
}
fn default_tokens() -> u64 {
    DEFAULT_TOKENS
}

fn definition() -> Value {
    json!({
        "name": "agent",
        "title": "Local agent",
        "description": "Runs a task on a local model that may call the listed tools of this gateway in a bounded loop (iterations, time and tokens capped), then returns its final answer plus any images or audio the tools produced.",
        "inputSchema": input_schema::<AgentArgs>(),
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true},
        "execution": {"taskSupport": "optional"},
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(run(inf, args, call))
}

/// A tool the model may call, under a name the chat API accepts.
pub(super) struct Offered {
    exposed: String,
    definition: Value,
}

/// Why the loop ended.
fn stop_text(reason: &str) -> &'static str {
    match reason {
        "iterations" => "the iteration limit was reached",
        "time" => "the time limit was reached",
        "tokens" => "the token budget was used up",
        "client_tools" => "the model called a tool of the client's",
        _ => "the model answered",
    }
}

/// One run of the tool-calling loop: what it starts from and its bounds.
pub(super) struct Run<'a> {
    pub(super) messages: Vec<Value>,
    /// Catalogue tools, run here through the gateway.
    pub(super) offered: &'a [Offered],
    /// The client's own function tools: a call to one ends the run and is
    /// handed back, not run.
    pub(super) client_tools: Vec<Value>,
    /// Chat arguments sent with every turn (`model`, `temperature`, ...).
    pub(super) chat: Map<String, Value>,
    pub(super) max_iterations: u64,
    pub(super) max_seconds: u64,
    pub(super) max_tokens: u64,
}

/// How a run went.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub(super) model: String,
    pub(super) answer: String,
    /// `answered`, `iterations`, `time`, `tokens` or `client_tools`.
    pub(super) stopped: &'static str,
    /// The images and audio the tools produced, in order.
    pub(super) media: Vec<Value>,
    /// Each catalogue tool call: iteration, tool, isError.
    pub(super) trace: Vec<Value>,
    /// (prompt, completion) tokens.
    pub(super) used: (u64, u64),
    /// The calls of the client's own tools, when the run ended on them.
    pub(super) client_tool_calls: Vec<Value>,
}

impl Outcome {
    /// The final answer, or why there is none.
    pub(super) fn shown_answer(&self) -> String {
        if self.answer.trim().is_empty() && self.client_tool_calls.is_empty() {
            format!("(no final answer: {})", stop_text(self.stopped))
        } else {
            self.answer.clone()
        }
    }

    /// Model turns taken.
    fn iterations(&self) -> u64 {
        self.trace
            .iter()
            .filter_map(|t| t["iteration"].as_u64())
            .max()
            .unwrap_or(0)
            .max(u64::from(matches!(
                self.stopped,
                "answered" | "client_tools"
            )))
    }

    /// The structured content of a run's result, with the files written.
    pub(super) fn structured(&self, files: &[String]) -> Value {
        json!({
            "model": self.model,
            "answer": self.answer,
            "stopped": self.stopped,
            "iterations": self.iterations(),
            "tool_calls": self.trace,
            "usage": {"prompt_tokens": self.used.0, "completion_tokens": self.used.1},
            "files": files,
        })
    }
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let args: AgentArgs = args.parse()?;
    let max_iterations = bounded("max_iterations", args.max_iterations, MAX_ITERATIONS)?;
    let max_seconds = bounded("max_seconds", args.max_seconds, MAX_SECONDS)?;
    let max_tokens = bounded("max_tokens", args.max_tokens, u64::MAX)?;
    let save_media = args.save_media;
    let messages = initial_messages(&args)?;
    let offered = offered_tools(&args.tools, call)?;
    let mut chat = Map::new();
    if let Some(model) = &args.model {
        chat.insert("model".into(), json!(model));
    }
    if args.allow_download {
        chat.insert("allow_download".into(), json!(true));
    }
    let outcome = run_loop(
        inf,
        call,
        Run {
            messages,
            offered: &offered,
            client_tools: Vec::new(),
            chat,
            max_iterations,
            max_seconds,
            max_tokens,
        },
    )
    .await?;

    let mut content = vec![json!({"type": "text", "text": outcome.shown_answer()})];
    let mut files = Vec::new();
    for block in &outcome.media {
        if save_media {
            files.push(save(inf, block).await?);
        } else {
            content.push(block.clone());
        }
    }
    if !files.is_empty() {
        content
            .push(json!({"type": "text", "text": format!("Files written: {}", files.join(", "))}));
    }
    Ok(json!({
        "content": content,
        "structuredContent": outcome.structured(&files),
    }))
}

/// The loop: a model turn, then every catalogue tool it called (through
/// the gateway, as the calling client), until it answers or a bound is
/// reached.
pub(super) async fn run_loop(
    inf: &Inference,
    call: &Call,
    run: Run<'_>,
) -> Result<Outcome, ToolError> {
    let Run {
        mut messages,
        offered,
        client_tools,
        chat: chat_args,
        max_iterations,
        max_seconds,
        max_tokens,
    } = run;
    let by_api_name: HashMap<String, &Offered> = offered
        .iter()
        .map(|o| {
            (
                o.definition["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                o,
            )
        })
        .collect();
    let client_names: Vec<&str> = client_tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let tools: Vec<Value> = offered
        .iter()
        .map(|o| o.definition.clone())
        .chain(client_tools.iter().cloned())
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(max_seconds);

    let mut out = Outcome {
        stopped: "iterations",
        ..Outcome::default()
    };
    for iteration in 1..=max_iterations {
        let left = max_tokens - out.used.1.min(max_tokens);
        if left == 0 {
            out.stopped = "tokens";
            break;
        }
        let mut turn = chat_args.clone();
        turn.insert("messages".into(), json!(messages));
        turn.insert("max_tokens".into(), json!(left));
        if !tools.is_empty() {
            turn.insert("tools".into(), json!(tools));
            turn.entry("tool_choice").or_insert(json!("auto"));
        }
        let reply = match tokio::time::timeout_at(
            deadline,
            chat::run(inf, Args::new(Value::Object(turn))?, call),
        )
        .await
        {
            Ok(r) => r?,
            Err(_) => {
                out.stopped = "time";
                break;
            }
        };
        let reply = &reply["structuredContent"];
        out.model = reply["model"].as_str().unwrap_or_default().to_owned();
        out.used.0 += reply["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
        out.used.1 += reply["usage"]["completion_tokens"].as_u64().unwrap_or(0);
        out.answer = reply["content"].as_str().unwrap_or_default().to_owned();
        let tool_calls = reply["tool_calls"].as_array().cloned().unwrap_or_default();
        if tool_calls.is_empty() {
            out.stopped = "answered";
            break;
        }
        // The client runs its own tools: hand those calls back.
        let (for_client, here): (Vec<Value>, Vec<Value>) = tool_calls
            .into_iter()
            .partition(|tc| client_names.contains(&tc["function"]["name"].as_str().unwrap_or("")));
        if !for_client.is_empty() {
            out.client_tool_calls = for_client;
            out.stopped = "client_tools";
            break;
        }
        messages
            .push(json!({"role": "assistant", "content": reply["content"], "tool_calls": here}));
        for tc in &here {
            let id = tc["id"].as_str().unwrap_or_default().to_owned();
            let api_name = tc["function"]["name"].as_str().unwrap_or_default();
            let (text, is_error) = match by_api_name.get(api_name) {
                None => (
                    format!("`{api_name}` is not one of the tools you may call."),
                    true,
                ),
                Some(tool) => {
                    let raw = tc["function"]["arguments"].as_str().unwrap_or("{}");
                    match serde_json::from_str::<Value>(if raw.trim().is_empty() { "{}" } else { raw }) {
                        Err(e) => (format!("The arguments are not valid JSON ({e}); call again with a JSON object."), true),
                        Ok(arguments) => {
                            tracing::info!(tool = %tool.exposed, iteration, "agent calls a tool");
                            let outcome = tokio::time::timeout_at(
                                deadline,
                                call.ctx.call_tool(&tool.exposed, arguments),
                            )
                            .await;
                            match outcome {
                                Err(_) => {
                                    out.stopped = "time";
                                    ("The time limit was reached during this call.".into(), true)
                                }
                                Ok(Err(e)) => (format!("error: {e}"), true),
                                Ok(Ok(result)) => digest(&result, &mut out.media),
                            }
                        }
                    }
                }
            };
            out.trace.push(json!({"iteration": iteration, "tool": by_api_name.get(api_name).map(|t| t.exposed.as_str()).unwrap_or(api_name), "isError": is_error}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
        }
        if out.stopped == "time" {
            break;
        }
    }
    Ok(out)
}

/// A limit the caller gave: at least 1, and no more than `max`.
fn bounded(key: &str, value: u64, max: u64) -> Result<u64, ToolError> {
    if value < 1 {
        return Err(ToolError::InvalidArguments(format!(
            "`{key}` must be an integer of at least 1"
        )));
    }
    Ok(value.min(max))
}

fn initial_messages(args: &AgentArgs) -> Result<Vec<Value>, ToolError> {
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(args.messages.iter().cloned().map(Value::Object));
    if let Some(prompt) = &args.prompt {
        messages.push(json!({"role": "user", "content": prompt}));
    }
    if !messages.iter().any(|m| m["role"] == "user") {
        return Err(ToolError::InvalidArguments(
            "give the task as `prompt` (or a user message in `messages`)".into(),
        ));
    }
    Ok(messages)
}

/// The catalogue tools the allow-list names, as chat API tools. The tools
/// that run a loop themselves (agent, omni) are never offered (no
/// recursion).
pub(super) fn offered_tools(patterns: &[String], call: &Call) -> Result<Vec<Offered>, ToolError> {
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    let allowed = |name: &str| {
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == p,
        })
    };
    let mut offered = Vec::new();
    for tool in call.ctx.tools() {
        let Some(name) = tool["name"].as_str() else {
            continue;
        };
        if !allowed(name) || name.ends_with("__agent") || name.ends_with("__omni") {
            continue;
        }
        // Chat APIs take [A-Za-z0-9_-]{1,64} as function names.
        let api_name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        offered.push(Offered {
            exposed: name.to_owned(),
            definition: json!({"type": "function", "function": {
                "name": api_name,
                "description": tool["description"].as_str().unwrap_or_default(),
                "parameters": tool.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            }}),
        });
    }
    if offered.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "no tool of the catalogue matches {patterns:?}; call tools/list for the names"
        )));
    }
    Ok(offered)
}

/// What the model sees of a tool result (its text, truncated), keeping the
/// images and audio aside for the final answer.
fn digest(result: &Value, media: &mut Vec<Value>) -> (String, bool) {
    let is_error = result["isError"] == json!(true);
    let mut text = String::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => {
                text.push_str(block["text"].as_str().unwrap_or_default());
                text.push('\n');
            }
            Some(kind @ ("image" | "audio")) => {
                media.push(block.clone());
                text.push_str(&format!("[{kind} #{} produced]\n", media.len()));
            }
            Some("resource") => {
                if let Some(t) = block["resource"]["text"].as_str() {
                    text.push_str(t);
                    text.push('\n');
                }
            }
            _ => {}
        }
    }
    if text.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            text = s.to_string();
        }
    }
    if text.len() > TOOL_RESULT_CHARS {
        let mut cut = TOOL_RESULT_CHARS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[truncated]");
    }
    (text, is_error)
}

/// Writes an image or audio block to the output folder.
pub(super) async fn save(inf: &Inference, block: &Value) -> Result<String, ToolError> {
    let (bytes, ext) = media_bytes(block)?;
    let stem = if block["type"] == "audio" {
        "agent-audio"
    } else {
        "agent-image"
    };
    let path = inf.files().write_output(stem, ext, &bytes).await?;
    Ok(path.display().to_string())
}

/// The bytes of an image or audio block, and the file extension of its
/// type.
pub(super) fn media_bytes(block: &Value) -> Result<(Vec<u8>, &str), ToolError> {
    let mime = block["mimeType"]
        .as_str()
        .unwrap_or("application/octet-stream");
    let ext = match mime {
        "audio/mpeg" => "mp3",
        "image/jpeg" => "jpg",
        other => other.rsplit('/').next().unwrap_or("bin"),
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str().unwrap_or_default())
        .map_err(|e| {
            ToolError::InvalidArguments(format!("a tool returned undecodable media: {e}"))
        })?;
    Ok((bytes, ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_digested_and_media_kept_aside() {
        let mut media = Vec::new();
        let (text, err) = digest(
            &json!({"content": [
                {"type": "text", "text": "sum is 5"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            ]}),
            &mut media,
        );
        assert!(!err);
        assert!(
            text.contains("sum is 5") && text.contains("[image #1 produced]"),
            "{text}"
        );
        assert_eq!(media.len(), 1);
        let long = "x".repeat(TOOL_RESULT_CHARS * 2);
        let (text, _) = digest(
            &json!({"content": [{"type": "text", "text": long}], "isError": true}),
            &mut media,
        );
        assert!(text.ends_with("[truncated]") && text.len() < TOOL_RESULT_CHARS + 20);
    }

    #[test]
    fn a_task_is_required() {
        let args = Args::new(json!({"system": "s"})).unwrap().parse().unwrap();
        assert!(initial_messages(&args).is_err());
        let args = Args::new(json!({"prompt": "p"})).unwrap().parse().unwrap();
        assert_eq!(initial_messages(&args).unwrap().len(), 1);
    }
}
