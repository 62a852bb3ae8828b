//! File arguments of multipart and binary bodies: a `data:` URL, `base64:`,
//! an `http(s)://` URL fetched here (size-capped, timed, no redirect to
//! another host) or a path read through the gateway's sandbox.

use std::time::Duration;

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use mcpyard_gateway::Sandbox;

use super::CallError;

/// The largest file argument, however it is given.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// How long fetching a file argument by URL may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A file argument's bytes with what is known of them.
#[derive(Debug, Clone)]
pub(crate) struct FileArgument {
    pub(crate) bytes: Vec<u8>,
    pub(crate) file_name: String,
    pub(crate) mime_type: Option<String>,
}

/// Resolves one file argument (`argument` names it in messages).
pub(crate) async fn resolve(
    argument: &str,
    value: &str,
    sandbox: &Sandbox,
    fetcher: &reqwest::Client,
) -> Result<FileArgument, CallError> {
    if let Some(rest) = value.strip_prefix("data:") {
        let (head, payload) = rest.split_once(',').ok_or_else(|| {
            CallError::File(format!(
                "`{argument}` is a data URL without a comma: send `data:<type>;base64,<data>`"
            ))
        })?;
        let Some(mime) = head.strip_suffix(";base64") else {
            return Err(CallError::File(format!(
                "`{argument}` is a data URL without `;base64,`: send `data:<type>;base64,<data>`"
            )));
        };
        let mime = Some(mime.to_owned()).filter(|m| !m.is_empty());
        let bytes = decode(argument, payload)?;
        let file_name = format!("{argument}{}", extension(mime.as_deref()));
        return Ok(FileArgument {
            bytes,
            file_name,
            mime_type: mime,
        });
    }
    if let Some(payload) = value.strip_prefix("base64:") {
        let bytes = decode(argument, payload)?;
        let mime_type = sniff(&bytes).map(str::to_owned);
        let file_name = format!("{argument}{}", extension(mime_type.as_deref()));
        return Ok(FileArgument {
            bytes,
            file_name,
            mime_type,
        });
    }
    if value.starts_with("http://") || value.starts_with("https://") {
        return fetch(argument, value, fetcher).await;
    }
    let bytes = sandbox
        .read_input(value)
        .await
        .map_err(|e| CallError::File(format!("`{argument}`: {e}")))?;
    let file_name = std::path::Path::new(value)
        .file_name()
        .map_or_else(|| argument.to_owned(), |n| n.to_string_lossy().into_owned());
    let mime_type = sniff(&bytes)
        .or_else(|| by_extension(&file_name))
        .map(str::to_owned);
    Ok(FileArgument {
        bytes,
        mime_type,
        file_name,
    })
}

/// Leading bytes (at an offset) that name a file's type: the formats the
/// APIs mcpyard fronts take (images, audio, video, documents, 3D models).
const MAGIC: &[(usize, &[u8], &str)] = &[
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xFF\xD8\xFF", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (8, b"WAVE", "audio/wav"),
    (0, b"fLaC", "audio/flac"),
    (0, b"OggS", "audio/ogg"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\x1A\x45\xDF\xA3", "video/webm"),
    (4, b"ftyp", "video/mp4"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"glTF", "model/gltf-binary"),
    (0, b"PK\x03\x04", "application/zip"),
];

/// The MIME type the bytes announce, if they are of a format in [`MAGIC`].
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    MAGIC
        .iter()
        .find(|(at, magic, _)| bytes.get(*at..at + magic.len()) == Some(*magic))
        .map(|(_, _, mime)| *mime)
}

/// The MIME type a file name's extension names (what [`extension`] gives
/// the other way, plus the common names of the same types).
fn by_extension(file_name: &str) -> Option<&'static str> {
    let (_, ext) = file_name.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "json" => "application/json",
        "glb" => "model/gltf-binary",
        _ => return None,
    })
}

/// Decodes base64, refusing what would decode past the cap before
/// decoding it.
fn decode(argument: &str, payload: &str) -> Result<Vec<u8>, CallError> {
    let cleaned: String = payload
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let decoded = cleaned.len() as u64 / 4 * 3;
    if decoded > MAX_FILE_BYTES {
        return Err(CallError::File(format!(
            "`{argument}` decodes to about {decoded} bytes, over the limit of {MAX_FILE_BYTES} bytes for a file argument"
        )));
    }
    BASE64
        .decode(cleaned.as_bytes())
        .map_err(|e| CallError::File(format!("`{argument}` is not valid base64 ({e})")))
}

/// The client that fetches file arguments: redirects only within the
/// URL's own host, so a URL cannot bounce the gateway elsewhere.
pub(crate) fn fetcher() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_host = attempt
            .previous()
            .first()
            .is_some_and(|first| first.host_str() == attempt.url().host_str());
        if attempt.previous().len() > 5 || !same_host {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .redirect(policy)
        .timeout(FETCH_TIMEOUT)
        .build()
        .unwrap_or_default()
}

async fn fetch(
    argument: &str,
    url: &str,
    fetcher: &reqwest::Client,
) -> Result<FileArgument, CallError> {
    let failed = |what: String| CallError::File(format!("`{argument}`: fetching the file {what}"));
    let mut response = fetcher
        .get(url)
        .send()
        .await
        .map_err(|e| failed(format!("failed ({})", e.without_url())))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(failed(format!(
            "was redirected to another host ({status}): give the final URL"
        )));
    }
    if !status.is_success() {
        return Err(failed(format!("failed: the server answered {status}")));
    }
    if response.content_length().unwrap_or(0) > MAX_FILE_BYTES {
        return Err(failed(format!(
            "failed: it is over the limit of {MAX_FILE_BYTES} bytes"
        )));
    }
    let mime_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
    let file_name = response
        .url()
        .path_segments()
        .and_then(|mut s| s.next_back().map(str::to_owned))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| argument.to_owned());
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| failed(format!("failed ({})", e.without_url())))?
    {
        if (bytes.len() + chunk.len()) as u64 > MAX_FILE_BYTES {
            return Err(failed(format!(
                "failed: it is over the limit of {MAX_FILE_BYTES} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(FileArgument {
        bytes,
        file_name,
        mime_type,
    })
}

/// A file extension for a MIME type, for the names of uploaded parts.
fn extension(mime: Option<&str>) -> &'static str {
    match mime {
        Some("image/png") => ".png",
        Some("image/jpeg") => ".jpg",
        Some("image/webp") => ".webp",
        Some("image/gif") => ".gif",
        Some("audio/wav" | "audio/x-wav") => ".wav",
        Some("audio/flac") => ".flac",
        Some("video/mp4") => ".mp4",
        Some("video/webm") => ".webm",
        Some("model/gltf-binary") => ".glb",
        Some("audio/mpeg") => ".mp3",
        Some("audio/ogg") => ".ogg",
        Some("application/pdf") => ".pdf",
        Some("text/plain") => ".txt",
        Some("application/json") => ".json",
        _ => "",
    }
}
