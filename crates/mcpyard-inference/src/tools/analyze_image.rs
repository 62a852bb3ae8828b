//! `analyze_image`: a vision model describes, compares or transcribes
//! (OCR) images. Images come inline (base64) or from files under the
//! input roots; optional preprocessing variants (grayscale, CLAHE
//! contrast equalisation, downscaling) are each sent as their own image
//! beside the original, in OpenAI's vision format (`image_url` content
//! parts with `data:` URLs).

use serde_json::{json, Map, Value};

use super::media::{backend_call, decode_inline, image_url_part};
use super::{model_properties, Args, Call, ToolDef, ToolFuture};
use crate::engine::Inference;
use crate::error::ToolError;
use crate::imaging::{self, Variant, DEFAULT_CLIP_LIMIT, DEFAULT_TILES};
use crate::models::Capability;

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

const TASKS: [&str; 3] = ["describe", "compare", "ocr"];

fn definition() -> Value {
    let mut props = json!({
        "task": {
            "type": "string",
            "enum": TASKS,
            "default": "describe",
            "description": "describe: what the image shows; compare: similarities and differences between two or more images; ocr: the text in the image, transcribed exactly."
        },
        "images": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_IMAGES,
            "description": "The images: inline {data (base64), mimeType, name} or local files {path} under [inference] input_roots. PNG, JPEG or WebP.",
            "items": {
                "type": "object",
                "properties": {
                    "data": {"type": "string", "description": "Base64 (or a data: URL); capped by [inference] max_base64_bytes."},
                    "mimeType": {"type": "string"},
                    "name": {"type": "string", "description": "How the image is named to the model and in errors."},
                    "path": {"type": "string"}
                },
                "additionalProperties": false
            }
        },
        "prompt": {"type": "string", "description": "The question or instruction about the images; a task-specific default when omitted."},
        "messages": {
            "type": "array",
            "description": "Extra chat messages ({role, content}), e.g. earlier conversation or a follow-up, placed before or after the turn with the images (see messages_position).",
            "items": {"type": "object", "properties": {"role": {"type": "string"}, "content": {}}, "required": ["role"]}
        },
        "messages_position": {"type": "string", "enum": ["before", "after"], "default": "before"},
        "preprocess": {
            "type": "array",
            "maxItems": MAX_VARIANTS,
            "description": "Variants made before the model sees each image, each sent as an extra image: `grayscale`, `equalize` (CLAHE contrast equalisation, helps faded or dark scans), `resize` (longer side at most max_side px). Strings or objects such as {\"type\": \"equalize\", \"clip_limit\": 3} or {\"type\": \"resize\", \"max_side\": 768}.",
            "items": {
                "anyOf": [
                    {"type": "string", "enum": ["grayscale", "equalize", "resize"]},
                    {
                        "type": "object",
                        "properties": {
                            "type": {"type": "string", "enum": ["grayscale", "equalize", "resize"]},
                            "clip_limit": {"type": "number", "minimum": 1, "maximum": 40, "default": DEFAULT_CLIP_LIMIT},
                            "tiles": {"type": "integer", "minimum": 1, "maximum": 64, "default": DEFAULT_TILES},
                            "max_side": {"type": "integer", "minimum": 16, "maximum": 16384, "default": DEFAULT_MAX_SIDE}
                        },
                        "required": ["type"],
                        "additionalProperties": false
                    }
                ]
            }
        },
        "keep_original": {"type": "boolean", "default": true, "description": "Also send each original image (false: only the preprocessed variants)."},
        "max_tokens": {"type": "integer", "minimum": 1},
        "temperature": {"type": "number", "minimum": 0}
    });
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), model_properties()) {
        p.extend(extra);
    }
    json!({
        "name": "analyze_image",
        "title": "Analyze images with a local vision model",
        "description": "Describes an image, compares two or more, or transcribes their text (OCR), with a local vision model. Optional preprocessing (grayscale, contrast equalisation, resize) sends extra versions of each image to help with hard scans. Without `model`, a loaded vision model is used.",
        "inputSchema": {
            "type": "object",
            "properties": props,
            "required": ["images"],
            "additionalProperties": false
        },
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
                "usage": {"type": ["object", "null"]}
            },
            "required": ["model", "backend", "task", "content", "images"]
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

async fn run(inf: &Inference, mut args: Args, call: &Call) -> Result<Value, ToolError> {
    let task = args.string("task")?.unwrap_or_else(|| "describe".into());
    if !TASKS.contains(&task.as_str()) {
        return Err(ToolError::InvalidArguments(format!(
            "`task` must be one of {}",
            TASKS.join(", ")
        )));
    }
    // Taken out of the arguments so that each image's base64 text is freed
    // as soon as it is decoded (it can be megabytes).
    let items = match args.take("images") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_IMAGES => a,
        _ => {
            return Err(ToolError::InvalidArguments(format!(
                "`images` must be an array of 1 to {MAX_IMAGES} images: {{\"data\": base64, \"mimeType\": \"image/png\"}} or {{\"path\": \"/a/file.png\"}}"
            )))
        }
    };
    if task == "compare" && items.len() < 2 {
        return Err(ToolError::InvalidArguments(
            "`task: compare` needs at least two images in `images`".into(),
        ));
    }
    let variants = parse_preprocess(args.get("preprocess"))?;
    let keep_original = match args.get("keep_original") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ToolError::InvalidArguments(
                "`keep_original` must be true or false".into(),
            ))
        }
    };
    if !keep_original && variants.is_empty() {
        return Err(ToolError::InvalidArguments(
            "`keep_original: false` needs at least one `preprocess` variant, or no image would be sent".into(),
        ));
    }
    let extra = check_messages(args.get("messages"))?;
    let after = match args.string("messages_position")?.as_deref() {
        None | Some("before") => false,
        Some("after") => true,
        Some(_) => {
            return Err(ToolError::InvalidArguments(
                "`messages_position` must be `before` or `after`".into(),
            ))
        }
    };
    let prompt = args
        .string("prompt")?
        .unwrap_or_else(|| default_prompt(&task, items.len()));
    args.integer("max_tokens", 1)?;
    args.number("temperature")?;

    // Images are loaded and prepared one at a time, so at most one is
    // decoded in memory at once.
    let count = items.len();
    let mut prepared = Vec::with_capacity(count);
    let mut names = Vec::with_capacity(count);
    for (i, item) in items.into_iter().enumerate() {
        let (bytes, name) = load(inf, i, &item).await?;
        drop(item);
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
        .resolve(&args.model_request()?, Capability::Vision, call)
        .await?;
    let backend = &resolved.backend;

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
    let mut messages = vec![json!({"role": "system", "content": system_prompt(&task)})];
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
    let mut body = Map::new();
    body.insert("model".into(), json!(resolved.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(false));
    for key in ["max_tokens", "temperature"] {
        if let Some(v) = args.get(key) {
            body.insert(key.into(), v.clone());
        }
    }
    let path = backend.v1("/chat/completions");
    let answer = backend_call(inf, call, backend.post_json(&path, &Value::Object(body))).await?;
    let choice = answer
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| backend.malformed(&path, "no `choices[0]` in the answer"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| backend.malformed(&path, "no `choices[0].message` in the answer"))?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let shown = if content.trim().is_empty() {
        "(the model returned no text)".to_owned()
    } else {
        content.clone()
    };
    Ok(json!({
        "content": [{"type": "text", "text": shown}],
        "structuredContent": {
            "model": answer.get("model").and_then(Value::as_str).unwrap_or(&resolved.model),
            "backend": backend.name(),
            "task": task,
            "content": content,
            "images": summary,
            "finish_reason": choice.get("finish_reason").and_then(Value::as_str),
            "usage": answer.get("usage").filter(|u| u.is_object()),
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
    item: &Value,
) -> Result<(Vec<u8>, Option<String>), ToolError> {
    let Some(obj) = item.as_object() else {
        return Err(ToolError::InvalidArguments(format!(
            "`images[{i}]` must be an object: {{\"data\": base64, \"mimeType\": ...}} or {{\"path\": ...}}"
        )));
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "data" | "mimeType" | "name" | "path"))
    {
        return Err(ToolError::InvalidArguments(format!(
            "`images[{i}]` has an unknown key `{k}`; an image takes data, mimeType, name or path"
        )));
    }
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_owned);
    match (obj.get("data"), obj.get("path")) {
        (Some(Value::String(data)), None) => {
            let what = format!("images[{i}].data");
            let (bytes, _) = decode_inline(data, inf.config().max_base64_bytes, &what)?;
            Ok((bytes, name))
        }
        (None, Some(Value::String(path))) => {
            let bytes = inf.files().read_input(path).await?;
            let name = name.or_else(|| {
                std::path::Path::new(path)
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

fn parse_preprocess(v: Option<&Value>) -> Result<Vec<Variant>, ToolError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let bad = |detail: String| ToolError::InvalidArguments(format!("`preprocess`: {detail}"));
    let list = v.as_array().ok_or_else(|| {
        bad(
            "must be an array such as [\"grayscale\", {\"type\": \"resize\", \"max_side\": 768}]"
                .into(),
        )
    })?;
    if list.len() > MAX_VARIANTS {
        return Err(bad(format!("at most {MAX_VARIANTS} variants")));
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let (kind, obj) = match item {
            Value::String(s) => (s.as_str(), None),
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some(t) => (t, Some(o)),
                None => return Err(bad(format!("item {i} needs a string `type`"))),
            },
            _ => return Err(bad(format!("item {i} must be a string or an object"))),
        };
        let allowed: &[&str] = match kind {
            "grayscale" => &["type"],
            "equalize" => &["type", "clip_limit", "tiles"],
            "resize" => &["type", "max_side"],
            other => {
                return Err(bad(format!(
                    "unknown variant `{other}` (item {i}); use grayscale, equalize or resize"
                )))
            }
        };
        if let Some(k) = obj.and_then(|o| o.keys().find(|k| !allowed.contains(&k.as_str()))) {
            return Err(bad(format!("`{kind}` (item {i}) takes no `{k}`")));
        }
        let field = |k: &str| obj.and_then(|o| o.get(k));
        let variant = match kind {
            "grayscale" => Variant::Grayscale,
            "equalize" => {
                let clip_limit = match field("clip_limit") {
                    None => DEFAULT_CLIP_LIMIT,
                    Some(c) => match c.as_f64() {
                        Some(c) if (1.0..=40.0).contains(&c) => c as f32,
                        _ => {
                            return Err(bad(format!(
                                "`clip_limit` (item {i}) must be a number from 1 to 40"
                            )))
                        }
                    },
                };
                let tiles = match field("tiles") {
                    None => DEFAULT_TILES,
                    Some(t) => match t.as_u64() {
                        Some(t) if (1..=64).contains(&t) => t as u32,
                        _ => {
                            return Err(bad(format!(
                                "`tiles` (item {i}) must be an integer from 1 to 64"
                            )))
                        }
                    },
                };
                Variant::Equalize { clip_limit, tiles }
            }
            _ => {
                let max_side = match field("max_side") {
                    None => DEFAULT_MAX_SIDE,
                    Some(m) => match m.as_u64() {
                        Some(m) if (16..=16_384).contains(&m) => m as u32,
                        _ => {
                            return Err(bad(format!(
                                "`max_side` (item {i}) must be an integer from 16 to 16384"
                            )))
                        }
                    },
                };
                Variant::Resize { max_side }
            }
        };
        out.push(variant);
    }
    Ok(out)
}

fn check_messages(v: Option<&Value>) -> Result<Vec<Value>, ToolError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let list = v.as_array().ok_or_else(|| {
        ToolError::InvalidArguments(
            "`messages` must be an array of {\"role\": ..., \"content\": ...}".into(),
        )
    })?;
    for (i, m) in list.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        if !matches!(role, Some("system" | "user" | "assistant" | "developer")) {
            return Err(ToolError::InvalidArguments(format!(
                "`messages[{i}]` must have a `role` of system, user, assistant or developer"
            )));
        }
    }
    Ok(list.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocess_accepts_strings_and_objects() {
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
