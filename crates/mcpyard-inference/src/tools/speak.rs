//! `speak`: text to speech with a local voice model through
//! `POST /v1/audio/speech`, answered as an MCP audio block, or written as
//! a file inside the output folder.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Number, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use super::media::{
    b64, backend_call, media_block, prepare_output, sniff_audio, tool_result, write_output,
};
use crate::backend::excerpt;
use crate::engine::Inference;
use crate::error::ToolError;
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "speak",
    definition,
    call,
};

/// Characters per call: servers cap input (OpenAI at 4096); longer texts
/// belong in several calls anyway, each a manageable file.
const MAX_INPUT_CHARS: usize = 16_384;

/// `speak`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpeakArgs {
    /// The text to speak.
    #[schemars(length(min = 1, max = MAX_INPUT_CHARS))]
    input: String,
    /// Voice name as the server knows it (e.g. `alloy`, or a Kokoro voice such as `af_heart`). Omit for the server's default.
    #[serde(default, deserialize_with = "blank_is_none")]
    voice: Option<String>,
    /// Audio format (pcm: raw 16-bit little-endian samples).
    #[serde(default)]
    response_format: SpeechFormat,
    #[schemars(range(min = 0.25, max = 4.0), extend("default" = 1.0))]
    speed: Option<Number>,
    /// Write the audio to this file inside the output folder ([inference] output_dir) instead of returning it. Relative paths resolve inside that folder; existing files are not overwritten.
    #[serde(default, deserialize_with = "blank_is_none")]
    output_path: Option<String>,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SpeechFormat {
    #[default]
    Wav,
    Mp3,
    Opus,
    Flac,
    Pcm,
    Aac,
}

impl SpeechFormat {
    fn as_str(self) -> &'static str {
        match self {
            SpeechFormat::Wav => "wav",
            SpeechFormat::Mp3 => "mp3",
            SpeechFormat::Opus => "opus",
            SpeechFormat::Flac => "flac",
            SpeechFormat::Pcm => "pcm",
            SpeechFormat::Aac => "aac",
        }
    }
}

fn definition() -> Value {
    json!({
        "name": "speak",
        "title": "Speak text with a local voice model",
        "description": "Turns text into speech with a local text-to-speech model (Kokoro, Piper, Bark...). Returns the audio, or writes it into the output folder when `output_path` is given and returns the path.",
        "inputSchema": input_schema::<SpeakArgs>(),
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "mimeType": {"type": "string"},
                "bytes": {"type": "integer"},
                "path": {"type": ["string", "null"]}
            },
            "required": ["model", "backend", "mimeType", "bytes", "path"]
        },
        "annotations": {
            "title": "Speak text with a local voice model",
            "readOnlyHint": false,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": false
        }
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(run(inf, args, call))
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let SpeakArgs {
        input,
        voice,
        response_format,
        speed,
        output_path,
        model,
        allow_download,
    } = args.parse()?;
    if input.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "`input` is required: the text to speak".into(),
        ));
    }
    if input.chars().count() > MAX_INPUT_CHARS {
        return Err(ToolError::InvalidArguments(format!(
            "`input` is longer than {MAX_INPUT_CHARS} characters: split the text over several calls"
        )));
    }
    let format = response_format.as_str();
    if let Some(s) = &speed {
        if !s.as_f64().is_some_and(|v| (0.25..=4.0).contains(&v)) {
            return Err(ToolError::InvalidArguments(
                "`speed` must be between 0.25 and 4.0".into(),
            ));
        }
    }
    let target = prepare_output(inf.files().output_dir(), output_path.as_deref(), None).await?;

    let resolved = inf
        .resolve(
            &model_request(&model, allow_download),
            Capability::Speech,
            call,
        )
        .await?;
    let backend = &resolved.backend;
    let mut body = Map::new();
    body.insert("model".into(), json!(resolved.model));
    body.insert("input".into(), json!(input));
    body.insert("response_format".into(), json!(format));
    if let Some(v) = voice {
        body.insert("voice".into(), json!(v));
    }
    if let Some(s) = speed {
        body.insert("speed".into(), Value::Number(s));
    }
    let path = backend.v1("/audio/speech");
    let (audio, content_type) =
        backend_call(inf, call, backend.post_bytes(&path, &Value::Object(body))).await?;
    let ct = content_type
        .as_deref()
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    if audio.is_empty() || ct.contains("json") || ct.starts_with("text/") {
        return Err(backend
            .malformed(
                &path,
                format!(
                    "expected audio, got {} ({})",
                    if ct.is_empty() {
                        "no content type"
                    } else {
                        &ct
                    },
                    excerpt(&audio)
                ),
            )
            .into());
    }
    let mime = audio_mime(&audio, &ct, format);

    match target {
        Some(t) => {
            let ext = if format == "opus" { "ogg" } else { format };
            let written = write_output(&t, "speech", 1, ext, &audio).await?;
            let shown = written.display().to_string();
            Ok(json!({
                "content": [{"type": "text", "text": format!(
                    "Wrote {} bytes of {mime} from `{}` on backend `{}`:\n{shown}",
                    audio.len(), resolved.model, backend.name()
                )}],
                "structuredContent": {
                    "model": resolved.model,
                    "backend": backend.name(),
                    "mimeType": mime,
                    "bytes": audio.len(),
                    "path": shown,
                }
            }))
        }
        None => {
            let summary = format!(
                "{} bytes of {mime} from `{}` on backend `{}`.",
                audio.len(),
                resolved.model,
                backend.name()
            );
            let bytes = audio.len();
            let block = media_block("audio", b64(&audio), &mime);
            drop(audio);
            Ok(tool_result(
                vec![json!({"type": "text", "text": summary}), block],
                json!({
                    "model": resolved.model,
                    "backend": backend.name(),
                    "mimeType": mime,
                    "bytes": bytes,
                    "path": null,
                }),
            ))
        }
    }
}

/// The audio's MIME type: from its bytes when recognisable, else the
/// server's audio content type, else what the format implies.
fn audio_mime(audio: &[u8], content_type: &str, format: &str) -> String {
    if let Some((mime, _)) = sniff_audio(audio) {
        return mime.to_owned();
    }
    if content_type.starts_with("audio/") {
        return content_type.to_owned();
    }
    match format {
        "mp3" => "audio/mpeg",
        "opus" => "audio/ogg",
        "flac" => "audio/flac",
        "aac" => "audio/aac",
        // Raw samples: OpenAI's are 24 kHz, 16-bit, mono.
        "pcm" => "audio/L16;rate=24000;channels=1",
        _ => "audio/wav",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_come_from_the_bytes_first() {
        assert_eq!(
            audio_mime(b"RIFF\0\0\0\0WAVE", "audio/x-wav", "mp3"),
            "audio/wav"
        );
        assert_eq!(
            audio_mime(&[1, 2, 3], "audio/x-custom", "wav"),
            "audio/x-custom"
        );
        assert!(audio_mime(&[1, 2, 3], "", "pcm").starts_with("audio/L16"));
    }
}
