//! What the media tools share: inline base64 inputs checked against the
//! size cap before anything is decoded, recognising audio containers,
//! writing generated files only inside the output folder (the sandbox),
//! and backend calls that stop when the tool call is cancelled.

use std::future::Future;
use std::path::{Component, Path, PathBuf};

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::Call;
use crate::backend::BackendError;
use crate::engine::Inference;
use crate::error::ToolError;

/// Standard base64 with or without `=` padding (both are common).
const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// URL-safe base64, which some clients send.
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Base64 of `bytes` (standard alphabet, padded).
pub(super) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An MCP content block `{"type": kind, "data": data, "mimeType": mime}`.
/// Built by hand because `json!` would copy `data` (it serialises its
/// values by reference), and media data is megabytes.
pub(super) fn media_block(kind: &str, data: String, mime: &str) -> Value {
    let mut block = Map::with_capacity(3);
    block.insert("type".into(), Value::String(kind.to_owned()));
    block.insert("data".into(), Value::String(data));
    block.insert("mimeType".into(), Value::String(mime.to_owned()));
    Value::Object(block)
}

/// An OpenAI vision content part `{"type": "image_url", "image_url":
/// {"url": url}}`, moving the (large) URL in rather than copying it.
pub(super) fn image_url_part(url: String) -> Value {
    let mut inner = Map::with_capacity(1);
    inner.insert("url".into(), Value::String(url));
    let mut part = Map::with_capacity(2);
    part.insert("type".into(), Value::String("image_url".into()));
    part.insert("image_url".into(), Value::Object(inner));
    Value::Object(part)
}

/// A `CallToolResult` from content blocks and structured content, moving
/// both in (see [`media_block`] on why not `json!`).
pub(super) fn tool_result(content: Vec<Value>, structured: Value) -> Value {
    let mut result = Map::with_capacity(2);
    result.insert("content".into(), Value::Array(content));
    result.insert("structuredContent".into(), structured);
    Value::Object(result)
}

/// Decodes base64 (plain, or a `data:<mime>;base64,` URL) from an
/// argument named `what`, refusing it from the string's length alone when
/// it would decode past `max` bytes. Returns the bytes and the data URL's
/// MIME type, if any.
pub(super) fn decode_inline<'a>(
    data: &'a str,
    max: u64,
    what: &str,
) -> Result<(Vec<u8>, Option<&'a str>), ToolError> {
    let (mime, payload) = match data.strip_prefix("data:") {
        Some(rest) => match rest.split_once(',') {
            Some((head, payload)) if head.ends_with(";base64") => {
                let mime = head.trim_end_matches(";base64");
                (Some(mime).filter(|m| !m.is_empty()), payload)
            }
            _ => {
                return Err(ToolError::InvalidArguments(format!(
                    "`{what}` is a data URL without `;base64,`: send plain base64 or `data:<type>;base64,<data>`"
                )))
            }
        },
        None => (None, data),
    };
    // The cap is checked on the length before any allocation: counting
    // whitespace is a scan, not a copy.
    let spaces = payload.bytes().filter(u8::is_ascii_whitespace).count();
    let chars = (payload.len() - spaces) as u64;
    let decoded = chars / 4 * 3 + (chars % 4).saturating_sub(1);
    if decoded > max {
        return Err(ToolError::InvalidArguments(format!(
            "`{what}` decodes to about {decoded} bytes, over the limit of {max} bytes ([inference] max_base64_bytes): send a smaller file, a path under [inference] input_roots, or raise the limit"
        )));
    }
    if chars == 0 {
        return Err(ToolError::InvalidArguments(format!("`{what}` is empty")));
    }
    let cleaned: std::borrow::Cow<'_, str> = if spaces == 0 {
        payload.into()
    } else {
        payload
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
            .into()
    };
    let bytes = STANDARD_ANY_PAD
        .decode(cleaned.as_bytes())
        .or_else(|e| URL_SAFE_ANY_PAD.decode(cleaned.as_bytes()).map_err(|_| e))
        .map_err(|e| ToolError::InvalidArguments(format!("`{what}` is not valid base64 ({e})")))?;
    Ok((bytes, mime))
}

/// An audio container recognised from its first bytes: MIME type and
/// file extension.
pub(super) fn sniff_audio(b: &[u8]) -> Option<(&'static str, &'static str)> {
    if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WAVE" {
        Some(("audio/wav", "wav"))
    } else if b.starts_with(b"fLaC") {
        Some(("audio/flac", "flac"))
    } else if b.starts_with(b"OggS") {
        Some(("audio/ogg", "ogg"))
    } else if b.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        Some(("audio/webm", "webm"))
    } else if b.len() >= 8 && &b[4..8] == b"ftyp" {
        Some(("audio/mp4", "m4a"))
    } else if b.starts_with(b"ID3") {
        Some(("audio/mpeg", "mp3"))
    } else if b.len() >= 2 && b[0] == 0xFF && b[1] & 0xF6 == 0xF0 {
        // ADTS: sync word with layer bits 00.
        Some(("audio/aac", "aac"))
    } else if b.len() >= 2 && b[0] == 0xFF && b[1] & 0xE0 == 0xE0 {
        Some(("audio/mpeg", "mp3"))
    } else {
        None
    }
}

/// Runs a backend request, giving up when the call is cancelled (dropping
/// the request closes the connection) and noting unreachable servers so
/// discovery looks again.
pub(super) async fn backend_call<T>(
    inf: &Inference,
    call: &Call,
    fut: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, ToolError> {
    let r = tokio::select! {
        r = fut => r,
        _ = call.ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
    };
    match r {
        Ok(v) => Ok(v),
        Err(e) => {
            inf.note_failure(&e).await;
            Err(e.into())
        }
    }
}

/// Where a generated file goes, decided (and checked) before generating.
#[derive(Debug, Clone)]
pub(super) enum OutputTarget {
    /// This exact file, which does not exist yet.
    File(PathBuf),
    /// New files with generated names in this folder.
    Dir(PathBuf),
}

/// Checks `output_path` / `output_dir` against the output folder and
/// creates the folders they need inside it. Relative paths resolve inside
/// the folder; absolute ones must lie in it; `..` and symbolic links
/// are refused, so nothing can be written outside it.
pub(super) async fn prepare_output(
    output_dir_setting: &Path,
    output_path: Option<&str>,
    output_dir: Option<&str>,
) -> Result<Option<OutputTarget>, ToolError> {
    let (requested, is_file) = match (output_path, output_dir) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArguments(
                "pass `output_path` or `output_dir`, not both".into(),
            ))
        }
        (Some(p), None) => (p, true),
        (None, Some(d)) => (d, false),
    };
    let root = sandbox_root(output_dir_setting).await?;
    let rel = inside(&root, output_dir_setting, requested)?;
    let (dir_rel, file_name) = if is_file {
        let name = rel.file_name().map(PathBuf::from).ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "`output_path` `{requested}` names no file: give a file name such as `picture.png`"
            ))
        })?;
        let parent = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        (parent, Some(name))
    } else {
        (rel, None)
    };
    let dir = make_dirs(&root, &dir_rel, requested).await?;
    match file_name {
        None => Ok(Some(OutputTarget::Dir(dir))),
        Some(name) => {
            let path = dir.join(name);
            match tokio::fs::symlink_metadata(&path).await {
                Ok(m) if m.file_type().is_symlink() => Err(ToolError::File(format!(
                    "`{requested}` is a symbolic link: links are never followed in the output folder. Choose another name."
                ))),
                Ok(_) => Err(ToolError::File(format!(
                    "`{}` already exists: choose another `output_path` (files are never overwritten).",
                    path.display()
                ))),
                Err(_) => Ok(Some(OutputTarget::File(path))),
            }
        }
    }
}

/// The output folder, created if missing, as a canonical path.
async fn sandbox_root(setting: &Path) -> Result<PathBuf, ToolError> {
    tokio::fs::create_dir_all(setting).await.map_err(|e| {
        ToolError::File(format!(
            "Cannot create the output folder `{}`: {e}. Set [inference] output_dir to a writable folder.",
            setting.display()
        ))
    })?;
    tokio::fs::canonicalize(setting).await.map_err(|e| {
        ToolError::File(format!(
            "Cannot resolve the output folder `{}`: {e}.",
            setting.display()
        ))
    })
}

/// `requested` as a path relative to the output folder, made of plain
/// names only.
fn inside(root: &Path, setting: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let shown = || {
        format!(
            "give a name or a relative path; files are written only inside the output folder `{}`",
            root.display()
        )
    };
    let p = Path::new(requested);
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(ToolError::File(format!(
            "`{requested}` contains `..`: {}.",
            shown()
        )));
    }
    let rel = if p.is_absolute() {
        let configured = std::path::absolute(setting).unwrap_or_else(|_| setting.to_path_buf());
        p.strip_prefix(root)
            .or_else(|_| p.strip_prefix(&configured))
            .map_err(|_| {
                ToolError::File(format!(
                    "`{requested}` is outside the output folder: {}.",
                    shown()
                ))
            })?
    } else {
        p
    };
    Ok(rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect())
}

/// Creates `rel` under `root` one level at a time, refusing any level that
/// is a symbolic link or not a folder, so creation never leaves the root.
async fn make_dirs(root: &Path, rel: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let mut cur = root.to_path_buf();
    for part in rel.components() {
        cur.push(part);
        match tokio::fs::symlink_metadata(&cur).await {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(ToolError::File(format!(
                    "`{requested}` goes through the symbolic link `{}`: links are never followed in the output folder.",
                    cur.display()
                )))
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(ToolError::File(format!(
                    "`{}` is a file, not a folder: choose another path.",
                    cur.display()
                )))
            }
            Err(_) => match tokio::fs::create_dir(&cur).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(ToolError::File(format!(
                        "Cannot create `{}`: {e}.",
                        cur.display()
                    )))
                }
            },
        }
    }
    // A last check on the resolved folder, against a link swapped in
    // meanwhile.
    let real = tokio::fs::canonicalize(&cur)
        .await
        .map_err(|e| ToolError::File(format!("Cannot resolve `{}`: {e}.", cur.display())))?;
    if !real.starts_with(root) {
        return Err(ToolError::File(format!(
            "`{requested}` resolves outside the output folder `{}`.",
            root.display()
        )));
    }
    Ok(real)
}

/// Writes a new file (never replacing one: `create_new` also refuses a
/// symbolic link put there since the check).
pub(super) async fn write_new(path: &Path, bytes: &[u8]) -> Result<(), std::io::Error> {
    use tokio::io::AsyncWriteExt;
    let mut f = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .await?;
    f.write_all(bytes).await?;
    f.flush().await
}

/// Writes `bytes` to the target: the named file, or a new
/// `<stem>-<unix ms>-<index>.<ext>` file in the folder.
pub(super) async fn write_output(
    target: &OutputTarget,
    stem: &str,
    index: usize,
    ext: &str,
    bytes: &[u8],
) -> Result<PathBuf, ToolError> {
    let failed = |path: &Path, e: std::io::Error| {
        ToolError::File(format!("Cannot write `{}`: {e}.", path.display()))
    };
    match target {
        OutputTarget::File(path) => {
            write_new(path, bytes).await.map_err(|e| failed(path, e))?;
            Ok(path.clone())
        }
        OutputTarget::Dir(dir) => {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            for attempt in 0..100u32 {
                let name = if attempt == 0 {
                    format!("{stem}-{ms}-{index}.{ext}")
                } else {
                    format!("{stem}-{ms}-{index}-{attempt}.{ext}")
                };
                let path = dir.join(name);
                match write_new(&path, bytes).await {
                    Ok(()) => return Ok(path),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(failed(&path, e)),
                }
            }
            Err(ToolError::File(format!(
                "Too many files named `{stem}-{ms}-{index}*` in `{}`.",
                dir.display()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_checked_from_the_length() {
        // 8 chars of base64 decode to 6 bytes: over a 5-byte cap, refused
        // before decoding (the payload is not even valid base64).
        let e = decode_inline("!!!!!!!!", 5, "audio_base64").unwrap_err();
        assert!(e.to_string().contains("max_base64_bytes"), "{e}");
        let (b, mime) = decode_inline("data:audio/wav;base64,aGk=", 5, "x").expect("decodes");
        assert_eq!((b.as_slice(), mime), (&b"hi"[..], Some("audio/wav")));
        assert_eq!(decode_inline("aG\nk", 5, "x").expect("decodes").0, b"hi");
        assert!(decode_inline("a*b=", 5, "x").is_err());
        assert!(decode_inline("data:text/plain,hi", 5, "x").is_err());
    }

    #[test]
    fn audio_containers_are_recognised() {
        assert_eq!(
            sniff_audio(b"RIFF\0\0\0\0WAVEfmt ").map(|a| a.1),
            Some("wav")
        );
        assert_eq!(sniff_audio(b"ID3\x04").map(|a| a.1), Some("mp3"));
        assert_eq!(sniff_audio(&[0xFF, 0xFB, 0x90]).map(|a| a.1), Some("mp3"));
        assert_eq!(sniff_audio(&[0xFF, 0xF1, 0x50]).map(|a| a.1), Some("aac"));
        assert_eq!(sniff_audio(b"OggS\0").map(|a| a.0), Some("audio/ogg"));
        assert_eq!(sniff_audio(b"hello world"), None);
    }

    #[tokio::test]
    async fn outputs_stay_in_the_folder() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("out");
        let t = prepare_output(&out, Some("a/b/c.png"), None)
            .await
            .expect("nested relative path");
        let OutputTarget::File(p) = t.expect("a target") else {
            panic!("a file target");
        };
        assert!(p.starts_with(std::fs::canonicalize(&out).expect("canon")));
        for bad in ["../x.png", "a/../../x.png", "/etc/x.png"] {
            assert!(
                prepare_output(&out, Some(bad), None).await.is_err(),
                "{bad}"
            );
        }
        let abs_inside = out.join("d.png");
        assert!(
            prepare_output(&out, Some(&abs_inside.to_string_lossy()), None)
                .await
                .is_ok()
        );
        assert!(prepare_output(&out, None, Some("."))
            .await
            .is_ok_and(|t| matches!(t, Some(OutputTarget::Dir(_)))));
    }
}
