//! `omni`: one multimodal turn, Lemonade's `lemonade_omni` on any local
//! server. A chat model may call this source's image and speech tools
//! (through the gateway, as the calling client, with its policy); the
//! result is the model's text, then every image and clip those calls made
//! as native content blocks, or as files in `output_dir`. The client's own
//! function tools (`tools`) are offered too and their calls come back in
//! a `tool_calls:` block, not run.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Number, Value};

use super::agent::{self, offered_tools, run_loop, Run};
use super::args::{blank_is_none, input_schema, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC};
use super::call::Call;
use super::def::SOURCE_NAME;
use super::def::{ToolDef, ToolFuture};
use super::media::{prepare_output, write_output};
use crate::engine::Inference;
use crate::error::ToolError;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "omni",
    definition,
    call,
};

/// Model turns at most: enough for a few images and a clip.
const ITERATIONS: u64 = 6;
const SECONDS: u64 = 300;
const DEFAULT_TOKENS: u64 = 4096;

/// `omni`'s arguments: `lemonade_omni`'s.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OmniArgs {
    /// The conversation, OpenAI style; the last user message is the request.
    messages: Vec<Map<String, Value>>,
    /// Write the images and audio into this folder inside the output folder ([inference] output_dir) instead of returning them inline; the result lists the paths.
    #[serde(default, deserialize_with = "blank_is_none")]
    output_dir: Option<String>,
    #[schemars(range(min = 0))]
    temperature: Option<Number>,
    #[schemars(range(min = 0, max = 1))]
    top_p: Option<Number>,
    /// Completion tokens at most, over all turns.
    #[schemars(range(min = 1))]
    max_tokens: Option<u64>,
    /// Where the model stops: a string or an array of strings.
    stop: Option<Value>,
    seed: Option<i64>,
    #[schemars(range(min = -2, max = 2))]
    presence_penalty: Option<Number>,
    #[schemars(range(min = -2, max = 2))]
    frequency_penalty: Option<Number>,
    /// The client's own OpenAI function tools: offered to the model, and a call to one comes back as a `tool_calls:` block for the client to run.
    tools: Option<Vec<Map<String, Value>>>,
    /// "auto", "none", "required" or {"type": "function", "function": {"name": ...}}.
    tool_choice: Option<Value>,
    response_format: Option<Map<String, Value>>,
    chat_template_kwargs: Option<Map<String, Value>>,
    /// The chat model that plans the turn (a collection name of Lemonade's works when Lemonade serves it).
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

fn definition() -> Value {
    json!({
        "name": "omni",
        "title": "One multimodal turn",
        "description": "One turn on a local model that may draw images (generate_image) and speak (speak) while answering: returns its text, then each image and audio clip it made as native content blocks (or as files in `output_dir`). Calls of the client's own `tools` come back in a `tool_calls:` block. For plain text, use chat.",
        "inputSchema": input_schema::<OmniArgs>(),
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false},
        "execution": {"taskSupport": "optional"},
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(run(inf, args, call))
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let args: OmniArgs = args.parse()?;
    if !args
        .messages
        .iter()
        .any(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    {
        return Err(ToolError::InvalidArguments(
            "`messages` needs a user message: the request".into(),
        ));
    }
    if args.max_tokens == Some(0) {
        return Err(ToolError::InvalidArguments(
            "`max_tokens` must be an integer of at least 1".into(),
        ));
    }
    // Decided before the model runs, so a bad folder costs no generation.
    let target = prepare_output(inf.files().output_dir(), None, args.output_dir.as_deref()).await?;
    let media_tools = [
        format!("{SOURCE_NAME}__generate_image"),
        format!("{SOURCE_NAME}__speak"),
    ];
    let offered = offered_tools(&media_tools, call).map_err(|_| {
        ToolError::InvalidArguments(format!(
            "omni needs `{}` or `{}`, and this client may call neither",
            media_tools[0], media_tools[1]
        ))
    })?;

    let mut chat = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            chat.insert(key.to_owned(), v);
        }
    };
    put("model", args.model.map(Value::String));
    put(
        "allow_download",
        args.allow_download.then_some(Value::Bool(true)),
    );
    put("temperature", args.temperature.map(Value::Number));
    put("top_p", args.top_p.map(Value::Number));
    put("stop", args.stop);
    put("seed", args.seed.map(Value::from));
    put("presence_penalty", args.presence_penalty.map(Value::Number));
    put(
        "frequency_penalty",
        args.frequency_penalty.map(Value::Number),
    );
    put("tool_choice", args.tool_choice);
    put("response_format", args.response_format.map(Value::Object));
    put(
        "chat_template_kwargs",
        args.chat_template_kwargs.map(Value::Object),
    );
    let client_tools = args
        .tools
        .unwrap_or_default()
        .into_iter()
        .map(Value::Object)
        .collect();
    let outcome = run_loop(
        inf,
        call,
        Run {
            messages: args.messages.into_iter().map(Value::Object).collect(),
            offered: &offered,
            client_tools,
            chat,
            max_iterations: ITERATIONS,
            max_seconds: SECONDS,
            max_tokens: args.max_tokens.unwrap_or(DEFAULT_TOKENS),
        },
    )
    .await?;

    // The text first, always, so clients that read by position find it.
    let mut content = vec![json!({"type": "text", "text": outcome.shown_answer()})];
    let mut paths = Vec::new();
    match &target {
        None => content.extend(outcome.media.iter().cloned()),
        Some(target) => {
            for (i, block) in outcome.media.iter().enumerate() {
                let (bytes, ext) = agent::media_bytes(block)?;
                let kind = block["type"].as_str().unwrap_or("media");
                let path = write_output(target, "omni", i, ext, &bytes).await?;
                let shown = path.display().to_string();
                content.push(json!({"type": "text", "text": format!("{kind} -> {shown}")}));
                paths.push(shown);
            }
            content.push(json!({"type": "text", "text": json!({"paths": paths}).to_string()}));
        }
    }
    if !outcome.client_tool_calls.is_empty() {
        let calls = serde_json::to_string(&outcome.client_tool_calls).unwrap_or_default();
        content.push(json!({"type": "text", "text": format!("tool_calls: {calls}")}));
    }
    let mut structured = outcome.structured(&paths);
    // Lemonade's name for the calls of the client's own tools.
    structured["app_tool_calls"] = json!(outcome.client_tool_calls);
    Ok(json!({"content": content, "structuredContent": structured}))
}
