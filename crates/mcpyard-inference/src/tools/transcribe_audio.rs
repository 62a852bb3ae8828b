//! `transcribe_audio`: speech to text with a local transcription model,
//! uploaded as the multipart form of OpenAI's
//! `POST /v1/audio/transcriptions`.

use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

use super::media::{backend_call, decode_inline, sniff_audio};
use super::{model_properties, Args, Call, ToolDef, ToolFuture};
use crate::backend::excerpt;
use crate::engine::Inference;
use crate::error::ToolError;
use crate::models::Capability;

pub(crate) const TOOL: ToolDef = ToolDef {
    name: "transcribe_audio",
    definition,
    call,
};

const FORMATS: [&str; 5] = ["json", "text", "srt", "verbose_json", "vtt"];

fn definition() -> Value {
    let mut props = json!({
        "audio_path": {
            "type": "string",
            "description": "A local audio file under the folders listed in [inference] input_roots."
        },
        "audio_base64": {
            "type": "string",
            "description": "The audio itself, base64 (or a data: URL). Its decoded size is capped by [inference] max_base64_bytes."
        },
        "filename": {
            "type": "string",
            "description": "File name sent with the upload (its extension tells some servers the format), e.g. `meeting.mp3`."
        },
        "language": {"type": "string", "description": "ISO-639-1 code of the spoken language (e.g. `en`); improves accuracy and speed."},
        "prompt": {"type": "string", "description": "Text to guide the style or spell names (previous segment, vocabulary)."},
        "response_format": {
            "type": "string",
            "enum": FORMATS,
            "default": "json",
            "description": "json: the text; verbose_json: with timed segments; text, srt, vtt: the server's plain text, subtitles or WebVTT."
        },
        "temperature": {"type": "number", "minimum": 0, "maximum": 1}
    });
    if let (Some(p), Value::Object(extra)) = (props.as_object_mut(), model_properties()) {
        p.extend(extra);
    }
    json!({
        "name": "transcribe_audio",
        "title": "Transcribe audio with a local model",
        "description": "Transcribes speech in an audio file (wav, mp3, flac, ogg/opus, webm, m4a) with a local speech-to-text model (Whisper and similar). Pass `audio_path` or `audio_base64`. Returns the transcript; the server's full answer is in structuredContent.response.",
        "inputSchema": {
            "type": "object",
            "properties": props,
            "additionalProperties": false
        },
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
    let format = args
        .string("response_format")?
        .unwrap_or_else(|| "json".into());
    if !FORMATS.contains(&format.as_str()) {
        return Err(ToolError::InvalidArguments(format!(
            "`response_format` must be one of {}",
            FORMATS.join(", ")
        )));
    }
    let temperature = match args.number("temperature")? {
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
    let language = args.string("language")?;
    let prompt = args.string("prompt")?;
    let hint = args.string("filename")?;

    // The audio, from exactly one source.
    let (bytes, source_name) = match (args.string("audio_path")?, args.get("audio_base64")) {
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
        (None, Some(v)) => {
            let data = v.as_str().ok_or_else(|| {
                ToolError::InvalidArguments("`audio_base64` must be a string".into())
            })?;
            let (bytes, _) = decode_inline(data, inf.config().max_base64_bytes, "audio_base64")?;
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
        .resolve(&args.model_request()?, Capability::Transcription, call)
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
        .text("response_format", format.clone());
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
    Ok(json!({
        "content": [{"type": "text", "text": shown}],
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
