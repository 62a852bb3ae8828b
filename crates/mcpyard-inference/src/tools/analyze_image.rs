//! `analyze_image`: a vision model describes, compares or transcribes
//! (OCR) images. Images come inline (base64) or from files under the
//! input roots; optional preprocessing variants (grayscale, CLAHE
//! contrast equalisation, downscaling) are each sent as their own image
//! beside the original, in OpenAI's vision format (`image_url` content
//! parts with `data:` URLs). Visions' own call of its analysis tool is
//! accepted as it is (see `visions`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Number, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use super::media::{decode_inline, image_url_part};
use super::vision_chat::{self, Settings};
use super::visions::{routing_note, Preprocessing, PromptArg};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::imaging::{self, Variant, DEFAULT_CLIP_LIMIT, DEFAULT_TILES};
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "analyze_image",
    definition,
    call,
};

const MAX_IMAGES: usize = 16;
const MAX_VARIANTS: usize = 8;
/// The `resize` variant's size when none is given: what most vision
/// encoders work at or below.
const DEFAULT_MAX_SIDE: u32 = 1024;

/// `analyze_image`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AnalyzeArgs {
    /// describe: what the image shows; compare: similarities and differences between two or more images; ocr: the text in the image, transcribed exactly.
    #[serde(default)]
    task: Task,
    /// The images: inline {data (base64), mimeType, name} or local files {path} under [inference] input_roots. PNG, JPEG or WebP.
    #[schemars(length(min = 1, max = MAX_IMAGES))]
    images: Vec<ImageItem>,
    /// The question or instruction about the images (a task-specific default when omitted), or chat messages whose last user message is the instruction (Visions).
    prompt: Option<PromptArg>,
    /// Extra chat messages ({role, content}), e.g. earlier conversation or a follow-up, placed before or after the turn with the images (see messages_position).
    #[serde(default)]
    messages: Vec<ExtraMessage>,
    #[serde(default)]
    messages_position: Position,
    /// Variants made before the model sees each image, each sent as an extra image: `grayscale`, `equalize` (CLAHE contrast equalisation, helps faded or dark scans), `resize` (longer side at most max_side px). Strings or objects such as {"type": "equalize", "clip_limit": 3} or {"type": "resize", "max_side": 768}.
    #[serde(default)]
    #[schemars(length(max = MAX_VARIANTS))]
    preprocess: Vec<PreprocessItem>,
    /// Also send each original image (false: only the preprocessed variants).
    #[serde(default = "yes")]
    keep_original: bool,
    #[schemars(range(min = 1))]
    max_tokens: Option<u64>,
    #[schemars(range(min = 0))]
    temperature: Option<Number>,
    /// The model's context size in tokens. Sent to Ollama (`options.num_ctx`); other servers set it when they load the model.
    #[serde(rename = "numCtx")]
    #[schemars(range(min = 1))]
    num_ctx: Option<u64>,
    /// false: one answer at the end. Otherwise the answer streams into progress notifications when the client asked for progress.
    stream: Option<bool>,
    /// Visions' preprocessing: {"enabled": true, "variants": {"grayscale": true, "clahe": true}}; `clahe` is the `equalize` variant. Use this or `preprocess`.
    preprocessing: Option<Preprocessing>,
    /// Visions' Socket.IO routing; not used here.
    #[serde(rename = "requestId")]
    request_id: Option<Value>,
    /// Visions' Socket.IO routing; not used here.
    #[serde(rename = "roomId")]
    room_id: Option<Value>,
    /// Visions' Socket.IO routing; not used here.
    event: Option<Value>,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Task {
    #[default]
    Describe,
    Compare,
    Ocr,
}

impl Task {
    fn as_str(self) -> &'static str {
        match self {
            Task::Describe => "describe",
            Task::Compare => "compare",
            Task::Ocr => "ocr",
        }
    }
}

/// Where the extra messages go, relative to the turn with the images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Position {
    #[default]
    Before,
    After,
}

/// One image: inline base64 or a local file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "an image: {\"data\": base64, \"mimeType\": ...} or {\"path\": ...}"
)]
struct ImageItem {
    /// Base64 (or a data: URL); capped by [inference] max_base64_bytes.
    data: Option<String>,
    // Accepted as clients send it; the type is read from the bytes.
    #[serde(rename = "mimeType")]
    #[allow(dead_code)]
    mime_type: Option<String>,
    /// How the image is named to the model and in errors.
    name: Option<String>,
    path: Option<String>,
}

/// An extra chat message; keys beyond `role` and `content` go on as they came.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct ExtraMessage {
    role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<Value>,
    #[serde(flatten)]
    #[schemars(skip)]
    other: Map<String, Value>,
}

impl ExtraMessage {
    /// A message given as an object (a `prompt` array's); a missing or
    /// non-string role is refused later by `check_messages`.
    fn from_map(mut m: Map<String, Value>) -> Self {
        let role = match m.remove("role") {
            Some(Value::String(r)) => r,
            _ => String::new(),
        };
        let content = m.remove("content");
        Self {
            role,
            content,
            other: m,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum VariantKind {
    Grayscale,
    Equalize,
    Resize,
}

impl VariantKind {
    fn as_str(self) -> &'static str {
        match self {
            VariantKind::Grayscale => "grayscale",
            VariantKind::Equalize => "equalize",
            VariantKind::Resize => "resize",
        }
    }
}

/// A variant with its settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct VariantSpec {
    #[serde(rename = "type")]
    kind: VariantKind,
    #[schemars(range(min = 1, max = 40), extend("default" = DEFAULT_CLIP_LIMIT))]
    clip_limit: Option<f64>,
    #[schemars(range(min = 1, max = 64), extend("default" = DEFAULT_TILES))]
    tiles: Option<u64>,
    #[schemars(range(min = 16, max = 16384), extend("default" = DEFAULT_MAX_SIDE))]
    max_side: Option<u64>,
}

/// One `preprocess` entry: a variant's name, or a variant with settings.
#[derive(Debug)]
enum PreprocessItem {
    Name(VariantKind),
    Spec(VariantSpec),
}

// By hand rather than `#[serde(untagged)]`, whose error ("did not match any
// variant") would not say which name or key was wrong.
impl<'de> Deserialize<'de> for PreprocessItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(name) => serde_json::from_value(Value::String(name))
                .map(PreprocessItem::Name)
                .map_err(D::Error::custom),
            spec @ Value::Object(_) => serde_json::from_value(spec)
                .map(PreprocessItem::Spec)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "expected a variant name or an object such as {\"type\": \"resize\", \"max_side\": 768}",
            )),
        }
    }
}

impl JsonSchema for PreprocessItem {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PreprocessItem".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                generator.subschema_for::<VariantKind>(),
                generator.subschema_for::<VariantSpec>(),
            ]
        })
    }
}

fn definition() -> Value {
    json!({
        "name": "analyze_image",
        "title": "Analyze images with a local vision model",
        "description": "Describes an image, compares two or more, or transcribes their text (OCR), with a local vision model. Optional preprocessing (grayscale, contrast equalisation, resize) sends extra versions of each image to help with hard scans. Without `model`, a loaded vision model is used.",
        "inputSchema": input_schema::<AnalyzeArgs>(),
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "task": {"type": "string"},
                "content": {"type": "string"},
                "images": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "width": {"type": "integer"},
                        "height": {"type": "integer"},
                        "sent": {"type": "array", "items": {"type": "string"}}
                    }
                }},
                "finish_reason": {"type": ["string", "null"]},
                "usage": {"type": ["object", "null"]},
                "notes": {"type": "array", "items": {"type": "string"}, "description": "Arguments that were accepted but not used, and why."}
            },
            "required": ["model", "backend", "task", "content", "images", "notes"]
        },
        "annotations": {
            "title": "Analyze images with a local vision model",
            "readOnlyHint": true,
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

fn system_prompt(task: &str) -> &'static str {
    match task {
        "compare" => "You compare images. The images are numbered (Image 1, Image 2, ...); several versions of one image (original, grayscale, contrast-equalized, resized) show the same picture and count as one. Say what the images have in common, then every difference that matters (objects, people, positions, colours, text, quality), naming the images concerned. Be precise and do not invent details.",
        "ocr" => "You transcribe the text visible in images exactly as written: the same words, spelling, capitalisation, punctuation, numbers and line breaks, in reading order. Do not translate, correct, summarise or comment. Several versions of one image (original, grayscale, contrast-equalized, resized) show the same page: use them together to read it and transcribe it once. Write [illegible] for text that cannot be read. If there is no text, answer exactly: (no text)",
        _ => "You describe images accurately and concisely: the subject, the setting, notable details and any visible text. Several versions of one image (original, grayscale, contrast-equalized, resized) show the same picture: use them together and describe it once. Say when something is uncertain instead of guessing.",
    }
}

fn default_prompt(task: &str, count: usize) -> String {
    match task {
        "compare" => format!("Compare these {count} images."),
        "ocr" if count > 1 => "Transcribe the text in each image exactly.".into(),
        "ocr" => "Transcribe the text in this image exactly.".into(),
        _ if count > 1 => "Describe each of these images.".into(),
        _ => "Describe this image.".into(),
    }
}

/// One image as the model will see it.
#[derive(Debug)]
struct Prepared {
    mime: &'static str,
    width: u32,
    height: u32,
    /// (label, data URL), original first when kept.
    parts: Vec<(String, String)>,
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let AnalyzeArgs {
        task,
        images: items,
        prompt,
        mut messages,
        messages_position,
        preprocess,
        mut keep_original,
        max_tokens,
        temperature,
        num_ctx,
        stream,
        preprocessing,
        request_id,
        room_id,
        event,
        model,
        allow_download,
    } = args.parse()?;
    let task = task.as_str();
    let mut notes: Vec<String> = routing_note(&[
        ("requestId", request_id.is_some()),
        ("roomId", room_id.is_some()),
        ("event", event.is_some()),
    ])
    .into_iter()
    .collect();
    let (prompt, prompt_messages) = prompt.map(PromptArg::split).unwrap_or_default();
    messages.extend(prompt_messages.into_iter().map(ExtraMessage::from_map));
    let variants = match preprocessing {
        Some(_) if !preprocess.is_empty() => {
            return Err(ToolError::InvalidArguments(
                "pass `preprocess` or `preprocessing`, not both".into(),
            ))
        }
        Some(p) => {
            let mapped = p.map()?;
            keep_original = mapped.keep_original;
            notes.extend(mapped.notes);
            mapped.variants
        }
        None => variants(preprocess)?,
    };
    if items.is_empty() || items.len() > MAX_IMAGES {
        return Err(ToolError::InvalidArguments(format!(
            "`images` must be an array of 1 to {MAX_IMAGES} images: {{\"data\": base64, \"mimeType\": \"image/png\"}} or {{\"path\": \"/a/file.png\"}}"
        )));
    }
    if task == "compare" && items.len() < 2 {
        return Err(ToolError::InvalidArguments(
            "`task: compare` needs at least two images in `images`".into(),
        ));
    }
    if !keep_original && variants.is_empty() {
        return Err(ToolError::InvalidArguments(
            "`keep_original: false` needs at least one `preprocess` variant, or no image would be sent".into(),
        ));
    }
    let extra = check_messages(messages)?;
    let after = messages_position == Position::After;
    let prompt = prompt.unwrap_or_else(|| default_prompt(task, items.len()));
    if max_tokens == Some(0) {
        return Err(ToolError::InvalidArguments(
            "`max_tokens` must be an integer of at least 1".into(),
        ));
    }

    // Images are loaded and prepared one at a time, so at most one is
    // decoded in memory at once.
    let count = items.len();
    let mut prepared = Vec::with_capacity(count);
    let mut names = Vec::with_capacity(count);
    for (i, item) in items.into_iter().enumerate() {
        let (bytes, name) = load(inf, i, item).await?;
        let label = describe(i, name.as_deref());
        // Decoding and encoding are CPU work: off the async threads.
        let vs = variants.clone();
        let p = tokio::select! {
            r = tokio::task::spawn_blocking(move || prepare(bytes, &vs, keep_original)) => r,
            _ = call.ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let p = p
            .map_err(|e| {
                ToolError::InvalidArguments(format!("{label} could not be processed ({e})"))
            })?
            .map_err(|why| {
                ToolError::InvalidArguments(format!(
                    "{label} could not be decoded: {why}. Send a valid PNG, JPEG or WebP image."
                ))
            })?;
        prepared.push(p);
        names.push(name);
    }

    let resolved = inf
        .resolve(
            &model_request(&model, allow_download),
            Capability::Vision,
            call,
        )
        .await?;
    let backend = &resolved.backend;
    if num_ctx.is_some() && backend.kind() != crate::BackendKind::Ollama {
        notes.push(format!(
            "`numCtx` was not sent: {} sets the context size when it loads a model (only Ollama takes it per request)",
            backend.kind().display_name()
        ));
    }

    let mut summary = Vec::with_capacity(prepared.len());
    let mut parts = vec![json!({"type": "text", "text": prompt})];
    for (i, (p, name)) in prepared.into_iter().zip(names).enumerate() {
        let mut sent = Vec::with_capacity(p.parts.len());
        for (label, url) in p.parts {
            let who = match &name {
                Some(n) => format!("Image {} ({n}), {label}:", i + 1),
                None => format!("Image {}, {label}:", i + 1),
            };
            parts.push(json!({"type": "text", "text": who}));
            // The URL string moves into the request: no copy.
            parts.push(image_url_part(url));
            sent.push(label);
        }
        summary.push(json!({
            "name": name.unwrap_or_else(|| format!("image {}", i + 1)),
            "mimeType": p.mime,
            "width": p.width,
            "height": p.height,
            "sent": sent,
        }));
    }
    let mut messages = vec![json!({"role": "system", "content": system_prompt(task)})];
    // Built by hand: `json!` would copy `parts` and the image URLs in it.
    let mut user = Map::with_capacity(2);
    user.insert("role".into(), json!("user"));
    user.insert("content".into(), Value::Array(parts));
    let user = Value::Object(user);
    if after {
        messages.push(user);
        messages.extend(extra);
    } else {
        messages.extend(extra);
        messages.push(user);
    }
    let settings = Settings {
        max_tokens,
        temperature,
        num_ctx,
        stream: stream != Some(false) && call.progress.is_active(),
    };
    let answer = vision_chat::send(inf, call, backend, &resolved.model, messages, settings).await?;
    let shown = if answer.content.trim().is_empty() {
        "(the model returned no text)".to_owned()
    } else {
        answer.content.clone()
    };
    let mut content = vec![json!({"type": "text", "text": shown})];
    if !notes.is_empty() {
        content.push(json!({"type": "text", "text": format!("Note: {}.", notes.join("; "))}));
    }
    Ok(json!({
        "content": content,
        "structuredContent": {
            "model": answer.model.as_deref().unwrap_or(&resolved.model),
            "backend": backend.name(),
            "task": task,
            "content": answer.content,
            "images": summary,
            "finish_reason": answer.finish_reason,
            "usage": answer.usage,
            "notes": notes,
        }
    }))
}

/// How an image is named in errors: `images[0]` and its name.
fn describe(i: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("Image `images[{i}]` (`{n}`)"),
        None => format!("Image `images[{i}]`"),
    }
}

/// The bytes and name of `images[i]`.
async fn load(
    inf: &Inference,
    i: usize,
    item: ImageItem,
) -> Result<(Vec<u8>, Option<String>), ToolError> {
    let name = item.name.filter(|n| !n.trim().is_empty());
    match (item.data, item.path) {
        (Some(data), None) => {
            let what = format!("images[{i}].data");
            let (bytes, _) = decode_inline(&data, inf.config().max_base64_bytes, &what)?;
            Ok((bytes, name))
        }
        (None, Some(path)) => {
            let bytes = inf.files().read_input(&path).await?;
            let name = name.or_else(|| {
                std::path::Path::new(&path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            });
            Ok((bytes, name))
        }
        (Some(_), Some(_)) => Err(ToolError::InvalidArguments(format!(
            "`images[{i}]` has both `data` and `path`: pass one"
        ))),
        _ => Err(ToolError::InvalidArguments(format!(
            "`images[{i}]` needs `data` (base64 string) or `path` (string)"
        ))),
    }
}

/// Decodes once, then builds the data URLs: the original as sent (its
/// bytes base64-encoded, not re-encoded), then each variant as PNG.
fn prepare(bytes: Vec<u8>, variants: &[Variant], keep_original: bool) -> Result<Prepared, String> {
    let mime = imaging::sniff(&bytes).unwrap_or("application/octet-stream");
    if variants.is_empty() {
        // Decoded only to check it is a whole image: the pixels are freed
        // before the data URL is built, and the bytes go as they came.
        let (width, height) = {
            let img = imaging::decode(&bytes)?;
            (img.width(), img.height())
        };
        let url = imaging::data_url(mime, &bytes);
        drop(bytes);
        return Ok(Prepared {
            mime,
            width,
            height,
            parts: vec![("original".to_owned(), url)],
        });
    }
    let img = imaging::decode(&bytes)?;
    let (width, height) = (img.width(), img.height());
    let mut parts = Vec::with_capacity(variants.len() + 1);
    for v in variants {
        let shown = v.apply(&img);
        let url = imaging::png_data_url(&shown)?;
        parts.push((v.label(), url));
    }
    // The pixels go before the original's data URL is built, so the two
    // are never in memory together; the original still comes first.
    drop(img);
    if keep_original {
        parts.insert(0, ("original".to_owned(), imaging::data_url(mime, &bytes)));
    }
    drop(bytes);
    Ok(Prepared {
        mime,
        width,
        height,
        parts,
    })
}

/// The variants asked for, each checked to take only its own settings,
/// within their ranges.
fn variants(items: Vec<PreprocessItem>) -> Result<Vec<Variant>, ToolError> {
    let bad = |detail: String| ToolError::InvalidArguments(format!("`preprocess`: {detail}"));
    if items.len() > MAX_VARIANTS {
        return Err(bad(format!("at most {MAX_VARIANTS} variants")));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let spec = match item {
            PreprocessItem::Name(kind) => VariantSpec {
                kind,
                clip_limit: None,
                tiles: None,
                max_side: None,
            },
            PreprocessItem::Spec(spec) => spec,
        };
        let kind = spec.kind.as_str();
        let given = [
            ("clip_limit", spec.clip_limit.is_some()),
            ("tiles", spec.tiles.is_some()),
            ("max_side", spec.max_side.is_some()),
        ];
        let allowed: &[&str] = match spec.kind {
            VariantKind::Grayscale => &[],
            VariantKind::Equalize => &["clip_limit", "tiles"],
            VariantKind::Resize => &["max_side"],
        };
        if let Some((k, _)) = given.iter().find(|(k, set)| *set && !allowed.contains(k)) {
            return Err(bad(format!("`{kind}` (item {i}) takes no `{k}`")));
        }
        let variant = match spec.kind {
            VariantKind::Grayscale => Variant::Grayscale,
            VariantKind::Equalize => {
                let clip_limit = match spec.clip_limit {
                    None => DEFAULT_CLIP_LIMIT,
                    Some(c) if (1.0..=40.0).contains(&c) => c as f32,
                    Some(_) => {
                        return Err(bad(format!(
                            "`clip_limit` (item {i}) must be a number from 1 to 40"
                        )))
                    }
                };
                let tiles = match spec.tiles {
                    None => DEFAULT_TILES,
                    Some(t) if (1..=64).contains(&t) => t as u32,
                    Some(_) => {
                        return Err(bad(format!(
                            "`tiles` (item {i}) must be an integer from 1 to 64"
                        )))
                    }
                };
                Variant::Equalize { clip_limit, tiles }
            }
            VariantKind::Resize => {
                let max_side = match spec.max_side {
                    None => DEFAULT_MAX_SIDE,
                    Some(m) if (16..=16_384).contains(&m) => m as u32,
                    Some(_) => {
                        return Err(bad(format!(
                            "`max_side` (item {i}) must be an integer from 16 to 16384"
                        )))
                    }
                };
                Variant::Resize { max_side }
            }
        };
        out.push(variant);
    }
    Ok(out)
}

fn check_messages(list: Vec<ExtraMessage>) -> Result<Vec<Value>, ToolError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.into_iter().enumerate() {
        if !matches!(
            m.role.as_str(),
            "system" | "user" | "assistant" | "developer"
        ) {
            return Err(ToolError::InvalidArguments(format!(
                "`messages[{i}]` must have a `role` of system, user, assistant or developer"
            )));
        }
        let message = serde_json::to_value(m).map_err(|e| {
            ToolError::InvalidArguments(format!("`messages[{i}]` could not be read: {e}"))
        })?;
        out.push(message);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocess_accepts_strings_and_objects() {
        let parse_preprocess = |v: Option<&Value>| {
            let items = serde_json::from_value(v.cloned().unwrap_or_default())
                .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            variants(items)
        };
        let v = parse_preprocess(Some(&json!([
            "grayscale",
            {"type": "equalize", "clip_limit": 3, "tiles": 4},
            {"type": "resize", "max_side": 256},
            "resize"
        ])))
        .expect("parses");
        assert_eq!(
            v,
            vec![
                Variant::Grayscale,
                Variant::Equalize {
                    clip_limit: 3.0,
                    tiles: 4
                },
                Variant::Resize { max_side: 256 },
                Variant::Resize {
                    max_side: DEFAULT_MAX_SIDE
                },
            ]
        );
        for bad in [
            json!(["sharpen"]),
            json!([{"type": "resize", "max_side": 2}]),
            json!([{"type": "grayscale", "clip_limit": 2}]),
            json!("grayscale"),
        ] {
            assert!(parse_preprocess(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_task_has_its_own_system_prompt() {
        assert!(system_prompt("ocr").contains("exactly"));
        assert!(system_prompt("compare").contains("difference"));
        assert!(system_prompt("describe").contains("describe"));
        assert_eq!(default_prompt("compare", 3), "Compare these 3 images.");
    }
}
