//! `generate_image`: text to image with a local image model through
//! `POST /v1/images/generations`, answered as MCP image blocks, or written
//! as files inside the output folder.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Number, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use super::media::{b64, backend_call, media_block, prepare_output, tool_result, write_output};
use crate::backend::Backend;
use crate::config::BackendKind;
use crate::engine::Inference;
use crate::error::ToolError;
use crate::imaging;
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "generate_image",
    definition,
    call,
};

/// Images per call: local generation is slow, and each image is megabytes
/// in the result.
const MAX_IMAGES: u64 = 8;

/// `generate_image`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GenerateArgs {
    /// What the image shows.
    #[schemars(length(min = 1))]
    prompt: String,
    /// What the image must not show.
    #[serde(default, deserialize_with = "blank_is_none")]
    negative_prompt: Option<String>,
    /// How many images (some servers make only one).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_IMAGES))]
    n: u64,
    /// WIDTHxHEIGHT in pixels, e.g. `512x512`.
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(pattern(r"^[0-9]+x[0-9]+$"))]
    size: Option<String>,
    /// Diffusion steps (more: slower, finer).
    #[schemars(range(min = 1, max = 500))]
    steps: Option<u64>,
    /// How closely to follow the prompt (classifier-free guidance).
    #[schemars(range(min = 0, max = 50))]
    cfg_scale: Option<Number>,
    /// Seed for a reproducible image.
    seed: Option<i64>,
    /// Write the image (n = 1) to this file inside the output folder ([inference] output_dir) instead of returning it. Relative paths resolve inside that folder; existing files are not overwritten.
    #[serde(default, deserialize_with = "blank_is_none")]
    output_path: Option<String>,
    /// Write the images as new files in this folder inside the output folder (`.` for the folder itself) instead of returning them.
    output_dir: Option<String>,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

fn one() -> u64 {
    1
}

fn definition() -> Value {
    json!({
        "name": "generate_image",
        "title": "Generate an image with a local model",
        "description": "Generates images from a text prompt with a local image model (Stable Diffusion, FLUX...). Returns them as images, or writes them into the output folder when `output_path` or `output_dir` is given and returns the paths.",
        "inputSchema": input_schema::<GenerateArgs>(),
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "images": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "mimeType": {"type": "string"},
                        "bytes": {"type": "integer"},
                        "path": {"type": "string"},
                        "revised_prompt": {"type": "string"}
                    },
                    "required": ["mimeType", "bytes"]
                }},
                "paths": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["model", "backend", "images", "paths"]
        },
        "annotations": {
            "title": "Generate an image with a local model",
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

/// One generated image.
#[derive(Debug)]
struct Generated {
    bytes: Vec<u8>,
    /// The server's own base64, reused for the result when it decoded
    /// cleanly (saves encoding again).
    b64: Option<String>,
    mime: &'static str,
    revised_prompt: Option<String>,
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let GenerateArgs {
        prompt,
        negative_prompt: negative,
        n,
        size,
        steps,
        cfg_scale,
        seed,
        output_path,
        output_dir,
        model,
        allow_download,
    } = args.parse()?;
    if prompt.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`prompt` is required: describe the image".into(),
        ));
    }
    if n < 1 {
        return Err(ToolError::InvalidArguments(
            "`n` must be an integer of at least 1".into(),
        ));
    }
    if n > MAX_IMAGES {
        return Err(ToolError::InvalidArguments(format!(
            "`n` must be at most {MAX_IMAGES}"
        )));
    }
    if let Some(s) = &size {
        let ok = s.split_once('x').is_some_and(|(w, h)| {
            w.parse::<u32>().is_ok_and(|w| w > 0) && h.parse::<u32>().is_ok_and(|h| h > 0)
        });
        if !ok {
            return Err(ToolError::InvalidArguments(
                "`size` must be WIDTHxHEIGHT in pixels, e.g. `512x512`".into(),
            ));
        }
    }
    if steps == Some(0) {
        return Err(ToolError::InvalidArguments(
            "`steps` must be an integer of at least 1".into(),
        ));
    }
    if output_path.is_some() && n != 1 {
        return Err(ToolError::InvalidArguments(
            "`output_path` names one file: use it with n = 1, or pass `output_dir` for several images".into(),
        ));
    }
    // The target is checked before generating, so a bad path costs nothing.
    let target = prepare_output(
        inf.files().output_dir(),
        output_path.as_deref(),
        output_dir.as_deref(),
    )
    .await?;

    let resolved = inf
        .resolve(
            &model_request(&model, allow_download),
            Capability::Image,
            call,
        )
        .await?;
    let backend = &resolved.backend;
    let mut body = Map::new();
    body.insert("model".into(), json!(resolved.model));
    body.insert("n".into(), json!(n));
    body.insert("response_format".into(), json!("b64_json"));
    if let Some(s) = &size {
        body.insert("size".into(), json!(s));
    }
    if let Some(s) = seed {
        body.insert("seed".into(), json!(s));
    }
    if let Some(c) = cfg_scale {
        body.insert("cfg_scale".into(), Value::Number(c));
    }
    if backend.kind() == BackendKind::Localai {
        // LocalAI reads the negative prompt after a `|` in the prompt, and
        // the step count as `step`.
        let p = match &negative {
            Some(neg) => format!("{prompt}|{neg}"),
            None => prompt.clone(),
        };
        body.insert("prompt".into(), json!(p));
        if let Some(s) = steps {
            body.insert("step".into(), json!(s));
        }
    } else {
        body.insert("prompt".into(), json!(prompt));
        if let Some(neg) = &negative {
            body.insert("negative_prompt".into(), json!(neg));
        }
        if let Some(s) = steps {
            body.insert("steps".into(), json!(s));
        }
    }
    let path = backend.v1("/images/generations");
    let answer = backend_call(inf, call, backend.post_json(&path, &Value::Object(body))).await?;
    let images = collect_images(inf, call, backend, &path, answer).await?;

    let mut content = Vec::new();
    let mut listed = Vec::new();
    let mut paths = Vec::new();
    for (i, img) in images.into_iter().enumerate() {
        let mut entry = json!({"mimeType": img.mime, "bytes": img.bytes.len()});
        if let Some(r) = &img.revised_prompt {
            entry["revised_prompt"] = json!(r);
        }
        match &target {
            Some(t) => {
                let written =
                    write_output(t, "image", i + 1, imaging::extension(img.mime), &img.bytes)
                        .await?;
                let shown = written.display().to_string();
                entry["path"] = json!(shown);
                paths.push(shown);
            }
            None => {
                let data = img.b64.unwrap_or_else(|| b64(&img.bytes));
                content.push(media_block("image", data, img.mime));
            }
        }
        listed.push(entry);
    }
    let count = listed.len();
    let summary = if paths.is_empty() {
        format!(
            "{count} image{} from `{}` on backend `{}`.",
            if count == 1 { "" } else { "s" },
            resolved.model,
            backend.name()
        )
    } else {
        format!(
            "Wrote {count} image{} from `{}` on backend `{}`:\n{}",
            if count == 1 { "" } else { "s" },
            resolved.model,
            backend.name(),
            paths.join("\n")
        )
    };
    content.insert(0, json!({"type": "text", "text": summary}));
    Ok(tool_result(
        content,
        json!({
            "model": resolved.model,
            "backend": backend.name(),
            "images": listed,
            "paths": paths,
        }),
    ))
}

/// The images of an answer `{"created": .., "data": [{"b64_json": ..} |
/// {"url": ..}]}`, each checked to be an image.
async fn collect_images(
    inf: &Inference,
    call: &Call,
    backend: &Backend,
    path: &str,
    mut answer: Value,
) -> Result<Vec<Generated>, ToolError> {
    let Some(Value::Array(data)) = answer.get_mut("data").map(Value::take) else {
        return Err(backend
            .malformed(path, "no `data` array in the answer")
            .into());
    };
    if data.is_empty() {
        return Err(backend
            .malformed(path, "the answer's `data` holds no image")
            .into());
    }
    let mut out = Vec::with_capacity(data.len());
    for (i, mut item) in data.into_iter().enumerate() {
        let revised_prompt = item
            .get("revised_prompt")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (bytes, b64) = match (item.get_mut("b64_json").map(Value::take), item.get("url")) {
            (Some(Value::String(s)), _) => {
                let clean = base64::engine::general_purpose::STANDARD.decode(&s);
                match clean {
                    Ok(bytes) => (bytes, Some(s)),
                    // Some servers wrap lines: decode without whitespace.
                    Err(_) => {
                        let compact: String =
                            s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(&compact)
                            .map_err(|e| {
                                backend.malformed(
                                    path,
                                    format!("`data[{i}].b64_json` is not valid base64 ({e})"),
                                )
                            })?;
                        (bytes, None)
                    }
                }
            }
            (_, Some(Value::String(url))) => {
                (fetch_url(inf, call, backend, path, i, url).await?, None)
            }
            _ => {
                return Err(backend
                    .malformed(
                        path,
                        format!("`data[{i}]` has neither `b64_json` nor `url`"),
                    )
                    .into())
            }
        };
        let mime = imaging::sniff(&bytes).ok_or_else(|| {
            backend.malformed(
                path,
                format!(
                    "`data[{i}]` is not an image (it starts with: {})",
                    crate::backend::excerpt(&bytes[..bytes.len().min(16)])
                ),
            )
        })?;
        out.push(Generated {
            bytes,
            b64,
            mime,
            revised_prompt,
        });
    }
    Ok(out)
}

/// An image the server answered with a URL to: a `data:` URL, a path, or
/// an absolute URL on the same server (other hosts are not contacted).
async fn fetch_url(
    inf: &Inference,
    call: &Call,
    backend: &Backend,
    path: &str,
    i: usize,
    url: &str,
) -> Result<Vec<u8>, ToolError> {
    if let Some(rest) = url.strip_prefix("data:") {
        let payload = rest.split_once(";base64,").map(|(_, p)| p).ok_or_else(|| {
            backend.malformed(
                path,
                format!("`data[{i}].url` is a data URL without base64"),
            )
        })?;
        return base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| {
                backend
                    .malformed(path, format!("`data[{i}].url` holds invalid base64 ({e})"))
                    .into()
            });
    }
    let route = if url.starts_with('/') {
        url.to_owned()
    } else {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| backend.malformed(path, format!("`data[{i}].url` is not a URL ({e})")))?;
        if !same_server(backend.base_url(), &parsed) {
            return Err(backend
                .malformed(
                    path,
                    format!(
                        "`data[{i}].url` points at another server ({url}); mcpyard only fetches images from {}",
                        backend.base_url()
                    ),
                )
                .into());
        }
        match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_owned(),
        }
    };
    let (bytes, _) = backend_call(inf, call, backend.get_bytes(&route)).await?;
    Ok(bytes.into())
}

/// Whether `url` is on the backend at `root`: the same port, and the same
/// host or both loopback (servers often name themselves `localhost` or
/// `0.0.0.0` while mcpyard uses 127.0.0.1).
fn same_server(root: &str, url: &reqwest::Url) -> bool {
    let Ok(root) = reqwest::Url::parse(root) else {
        return false;
    };
    let local = |h: Option<&str>| {
        matches!(
            h,
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1" | "0.0.0.0")
        )
    };
    root.port_or_known_default() == url.port_or_known_default()
        && (root.host_str() == url.host_str() || (local(root.host_str()) && local(url.host_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_backend_itself_is_fetched_from() {
        let u = |s: &str| reqwest::Url::parse(s).expect("url");
        assert!(same_server(
            "http://127.0.0.1:8080",
            &u("http://localhost:8080/generated/a.png")
        ));
        assert!(same_server(
            "http://127.0.0.1:8080",
            &u("http://127.0.0.1:8080/a.png")
        ));
        assert!(!same_server(
            "http://127.0.0.1:8080",
            &u("http://127.0.0.1:9090/a.png")
        ));
        assert!(!same_server(
            "http://127.0.0.1:8080",
            &u("http://example.com:8080/a.png")
        ));
    }
}
