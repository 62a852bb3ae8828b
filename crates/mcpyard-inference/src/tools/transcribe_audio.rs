//! `transcribe_audio`: speech to text with a local transcription model,
//! uploaded as the multipart form of OpenAI's
//! `POST /v1/audio/transcriptions`.

use reqwest::multipart::{Form, Part};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Number, Value};

use super::args::{
    blank_is_none, input_schema, model_request, Args, ALLOW_DOWNLOAD_DOC, MODEL_DOC,
};
use super::call::Call;
use super::def::{ToolDef, ToolFuture};
use super::media::{backend_call, decode_inline, sniff_audio};
use crate::backend::excerpt;
use crate::engine::Inference;
use crate::error::ToolError;
use crate::vendors::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "transcribe_audio",
    definition,
    call,
};

/// `transcribe_audio`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TranscribeArgs {
    /// A local audio file under the folders listed in [inference] input_roots.
    #[serde(default, deserialize_with = "blank_is_none")]
    audio_path: Option<String>,
    /// The audio itself, base64 (or a data: URL). Its decoded size is capped by [inference] max_base64_bytes.
    audio_base64: Option<String>,
    /// File name sent with the upload (its extension tells some servers the format), e.g. `meeting.mp3`.
    #[serde(default, deserialize_with = "blank_is_none")]
    filename: Option<String>,
    /// ISO-639-1 code of the spoken language (e.g. `en`); improves accuracy and speed.
    #[serde(default, deserialize_with = "blank_is_none")]
    language: Option<String>,
    /// Text to guide the style or spell names (previous segment, vocabulary).
    #[serde(default, deserialize_with = "blank_is_none")]
    prompt: Option<String>,
    /// json: the text; verbose_json: with timed segments; text, srt, vtt: the server's plain text, subtitles or WebVTT.
    #[serde(default)]
    response_format: Format,
    #[schemars(range(min = 0, max = 1))]
    temperature: Option<Number>,
    #[serde(default, deserialize_with = "blank_is_none")]
    #[schemars(description = MODEL_DOC)]
    model: Option<String>,
    #[serde(default)]
    #[schemars(description = ALLOW_DOWNLOAD_DOC)]
    allow_download: bool,
}

/// What the server answers with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Format {
    #[default]
    Json,
    Text,
    Srt,
    VerboseJson,
    Vtt,
}

impl Format {
    fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Text => "text",
            Format::Srt => "srt",
            Format::VerboseJson => "verbose_json",
            Format::Vtt => "vtt",
        }
    }
}

fn definition() -> Value {
    json!({
        "name": "transcribe_audio",
        "title": "Transcribe audio with a local model",
        "description": "Transcribes speech in an audio file (wav, mp3, flac, ogg/opus, webm, m4a) with a local speech-to-text model (Whisper and similar). Pass `audio_path` or `audio_base64`. Returns the transcript, then the server's full answer as JSON (also in structuredContent.response).",
        "inputSchema": input_schema::<TranscribeArgs>(),
        "outputSchema": {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "backend": {"type": "string"},
                "response_format": {"type": "string"},
                "text": {"type": "string"},
                "response": {"description": "The server's answer: JSON for json and verbose_json, the raw text otherwise."}
            },
            "required": ["model", "backend", "response_format", "text", "response"]
        },
        "annotations": {
            "title": "Transcribe audio with a local model",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        }
    })
}

fn call<'a>(inf: &'a Inference, args: Args, call: &'a Call) -> ToolFuture<'a> {
    Box::pin(run(inf, args, call))
}

async fn run(inf: &Inference, args: Args, call: &Call) -> Result<Value, ToolError> {
    let args: TranscribeArgs = args.parse()?;
    let format = args.response_format.as_str();
    let temperature = match &args.temperature {
        Some(t) => match t.as_f64() {
            Some(v) if (0.0..=1.0).contains(&v) => Some(t.to_string()),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "`temperature` must be between 0 and 1".into(),
                ))
            }
        },
        None => None,
    };
    let TranscribeArgs {
        audio_path,
        audio_base64,
        filename: hint,
        language,
        prompt,
        model,
        allow_download,
        ..
    } = args;

    // The audio, from exactly one source.
    let (bytes, source_name) = match (audio_path, audio_base64) {
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArguments(
                "pass `audio_path` or `audio_base64`, not both".into(),
            ))
        }
        (None, None) => {
            return Err(ToolError::InvalidArguments(
                "pass the audio as `audio_path` (a file under [inference] input_roots) or `audio_base64`".into(),
            ))
        }
        (Some(path), None) => {
            let bytes = inf.files().read_input(&path).await?;
            let name = std::path::Path::new(&path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            (bytes, name)
        }
        (None, Some(data)) => {
            let (bytes, _) = decode_inline(&data, inf.config().max_base64_bytes, "audio_base64")?;
            (bytes, None)
        }
    };
    let Some((mime, ext)) = sniff_audio(&bytes) else {
        return Err(ToolError::InvalidArguments(format!(
            "the audio is not a format transcription servers take (its first bytes: {}): send wav, mp3, flac, ogg/opus, webm or m4a",
            excerpt(&bytes[..bytes.len().min(16)])
        )));
    };
    let filename = upload_name(hint.as_deref().or(source_name.as_deref()), ext);

    let resolved = inf
        .resolve(
            &model_request(&model, allow_download),
            Capability::Transcription,
            call,
        )
        .await?;
    let backend = &resolved.backend;
    let path = backend.v1("/audio/transcriptions");
    let size = bytes.len();
    // `Part::bytes` takes the buffer: the audio is not copied again.
    let file = Part::bytes(bytes)
        .file_name(filename.clone())
        .mime_str(mime)
        .map_err(|e| ToolError::InvalidArguments(format!("bad content type: {e}")))?;
    let mut form = Form::new()
        .part("file", file)
        .text("model", resolved.model.clone())
        .text("response_format", format);
    if let Some(l) = language {
        form = form.text("language", l);
    }
    if let Some(p) = prompt {
        form = form.text("prompt", p);
    }
    if let Some(t) = temperature {
        form = form.text("temperature", t);
    }
    let (body, content_type) =
        backend_call(inf, call, backend.post_multipart_bytes(&path, form)).await?;
    let is_json = content_type
        .as_deref()
        .is_some_and(|c| c.to_ascii_lowercase().contains("json"));
    let (text, response) = if format == "json" || format == "verbose_json" || is_json {
        let v: Value = serde_json::from_slice(&body).map_err(|e| {
            backend.malformed(
                &path,
                format!("not JSON ({e}); the body starts with: {}", excerpt(&body)),
            )
        })?;
        let text = v
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| backend.malformed(&path, "no `text` string in the answer"))?
            .to_owned();
        (text, v)
    } else {
        let text = String::from_utf8(body.to_vec())
            .map_err(|_| backend.malformed(&path, "the transcript is not UTF-8 text"))?;
        (text.clone(), Value::String(text))
    };
    let shown = if text.trim().is_empty() {
        "(no speech recognised)".to_owned()
    } else {
        text.trim().to_owned()
    };
    tracing::debug!(model = %resolved.model, bytes = size, %filename, "transcribed");
    // The server's whole answer as a second block, as Lemonade's MCP
    // endpoint gives it: its clients parse it for segments and timings. A
    // plain-text answer is wrapped in the OpenAI shape so the block is
    // always a JSON object.
    let answer_json = match &response {
        Value::String(raw) => json!({"text": raw}).to_string(),
        other => other.to_string(),
    };
    Ok(json!({
        "content": [{"type": "text", "text": shown}, {"type": "text", "text": answer_json}],
        "structuredContent": {
            "model": resolved.model,
            "backend": backend.name(),
            "response_format": format,
            "text": text.trim(),
            "response": response,
        }
    }))
}

/// The upload's file name: the hint's (or the file's) base name, with the
/// detected format's extension when it has none.
fn upload_name(hint: Option<&str>, ext: &str) -> String {
    let base = hint
        .and_then(|h| h.rsplit(['/', '\\']).next())
        .map(|h| {
            h.chars()
                .filter(|c| !c.is_control() && *c != '"')
                .collect::<String>()
        })
        .filter(|h| !h.trim().is_empty() && h != "." && h != "..");
    match base {
        Some(b) if std::path::Path::new(&b).extension().is_some() => b,
        Some(b) => format!("{b}.{ext}"),
        None => format!("audio.{ext}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_names_keep_a_base_name_and_get_an_extension() {
        assert_eq!(upload_name(Some("/a/b/talk.mp3"), "wav"), "talk.mp3");
        assert_eq!(upload_name(Some("talk"), "wav"), "talk.wav");
        assert_eq!(upload_name(Some(".."), "wav"), "audio.wav");
        assert_eq!(upload_name(None, "flac"), "audio.flac");
    }
}
