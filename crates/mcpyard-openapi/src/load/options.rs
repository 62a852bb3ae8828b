//! What loading a document allows, and why it can fail.

use std::collections::BTreeMap;
use std::time::Duration;

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
    /// `position` is ` at line L, column C`, or empty when the parser
    /// gives none.
    #[error("{origin}: not valid {format}{position}: {reason}")]
    Syntax {
        origin: String,
        format: &'static str,
        position: String,
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
    #[error("{origin}: a prefix of {prefix_len} characters leaves too little of the {MAX_TOOL_NAME_LEN} a tool name may have")]
    PrefixTooLong { origin: String, prefix_len: usize },
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
