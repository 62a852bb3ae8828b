//! Loading: a document (file or URL; JSON or YAML; Swagger 2.0, OpenAPI 3.0
//! or 3.1) becomes an [`ApiDocument`].
//!
//! - `document.rs`: bytes to a JSON value, the version, the paths' order.
//! - `refs.rs`: `$ref`s, local and to files next to the document.
//! - `operations.rs`: one [`crate::Operation`] per method and path.
//! - `swagger2.rs`: what Swagger 2.0 says differently (body / formData
//!   parameters, `consumes`, `collectionFormat`, `securityDefinitions`).

mod document;
mod operations;
pub(crate) mod refs;
mod swagger2;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::model::ApiDocument;

pub(crate) use refs::Resolver;

/// A document larger than this is refused (LocalAI's is 0.3 MiB, GitHub's
/// about 12 MiB).
pub const MAX_DOCUMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Fetching a document by URL gives up after this.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Model APIs cap function names at 64 characters, the source's prefix
/// included.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// How names are made: the rename map of `[apis.NAME]` and the length of the
/// prefix the tool names will carry.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Derived name → chosen name. A key that names no operation is an error.
    pub rename: BTreeMap<String, String>,
    /// Length of the prefix put before every tool name (`localai__` is 9):
    /// names are cut so that prefix + name fits in 64 characters.
    pub prefix_len: usize,
}

/// Why a document cannot be used. The message names the file or URL and,
/// for a problem inside the document, the JSON pointer of the place.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{origin}: cannot read the document: {reason}")]
    Unreadable { origin: String, reason: String },
    #[error("{origin}: not valid {format} at line {line}, column {column}: {reason}")]
    Syntax {
        origin: String,
        format: &'static str,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("{origin}: {pointer}: {message}")]
    Invalid {
        origin: String,
        pointer: String,
        message: String,
    },
    #[error("{origin}: rename: {message}")]
    Rename { origin: String, message: String },
}

impl LoadError {
    pub(crate) fn invalid(origin: &str, pointer: &str, message: impl Into<String>) -> Self {
        LoadError::Invalid {
            origin: origin.to_string(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
}

/// Loads a document from a file path or an `http(s)://` URL.
pub async fn load(config_spec: &str, options: &LoadOptions) -> Result<ApiDocument, LoadError> {
    if is_url(config_spec) {
        let text = document::fetch(config_spec).await?;
        parse(config_spec, &text, None, options)
    } else {
        let path = Path::new(config_spec).to_path_buf();
        let options = options.clone();
        tokio::task::spawn_blocking(move || load_file(&path, &options))
            .await
            .map_err(|error| LoadError::Unreadable {
                origin: config_spec.to_string(),
                reason: error.to_string(),
            })?
    }
}

/// Loads a document from a file; `$ref`s to other files are read next to it.
pub fn load_file(path: &Path, options: &LoadOptions) -> Result<ApiDocument, LoadError> {
    let origin = path.display().to_string();
    let text = document::read_file(path)?;
    parse(&origin, &text, path.parent(), options)
}

/// Builds the operations of a document already read. `origin` names it in
/// messages; `base_dir` is where `$ref`s to other files are looked for
/// (`None`: such references are an error).
pub fn parse(
    origin: &str,
    text: &str,
    base_dir: Option<&Path>,
    options: &LoadOptions,
) -> Result<ApiDocument, LoadError> {
    if options.prefix_len + 8 > MAX_TOOL_NAME_LEN {
        return Err(LoadError::Rename {
            origin: origin.to_string(),
            message: format!(
                "a prefix of {} characters leaves too little of the {MAX_TOOL_NAME_LEN} a tool name may have",
                options.prefix_len
            ),
        });
    }
    let parsed = document::parse_text(origin, text)?;
    let version = document::version(origin, &parsed.value)?;
    let base_dir = base_dir.map(|dir| {
        if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        }
    });
    let resolver = Resolver::new(origin, parsed.value, base_dir)?;
    operations::build(&resolver, version, &parsed.path_order, options)
}

fn is_url(spec: &str) -> bool {
    let lower = spec.get(..8).unwrap_or(spec).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}
