//! What `expose = "default"` lists: every tool of a small document; for a
//! larger one, the common operations of documents mcpyard knows (chosen by
//! method and path, so renaming a tool keeps it listed), else none.

use crate::model::ApiDocument;

/// Documents of up to this many operations are listed whole.
pub const DEFAULT_LISTING_MAX_OPERATIONS: usize = 40;

/// A document mcpyard knows, recognised by its title and paths every
/// version of it has.
struct KnownDocument {
    title_contains: &'static str,
    characteristic_paths: &'static [&'static str],
    common: &'static [(&'static str, &'static str)],
}

const KNOWN: &[KnownDocument] = &[KnownDocument {
    title_contains: "localai",
    characteristic_paths: &["/v1/chat/completions", "/models/apply", "/system"],
    // What most calls to a local LocalAI are, within the token budget of
    // the default listing (≤ 30 % of the whole catalogue's schemas): the
    // OpenAI-shaped operations carry LocalAI's 57-field request object
    // (~2,500 tokens each), so the legacy completion, model installation
    // and the rarer media operations are left to search.
    common: &[
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/images/generations"),
        ("POST", "/v1/audio/speech"),
        ("POST", "/v1/audio/transcriptions"),
        ("GET", "/v1/models"),
        ("GET", "/system"),
        ("POST", "/v1/rerank"),
        ("POST", "/v1/tokenize"),
        ("GET", "/models/available"),
    ],
}];

/// `None`: every tool; `Some(names)`: those tools only (maybe none).
pub fn default_listing(doc: &ApiDocument) -> Option<Vec<String>> {
    if doc.operations.len() <= DEFAULT_LISTING_MAX_OPERATIONS {
        return None;
    }
    let title = doc.title.to_ascii_lowercase();
    let has_path = |path: &str| {
        doc.operations
            .iter()
            .any(|operation| operation.path == path)
    };
    let known = KNOWN.iter().find(|known| {
        title.contains(known.title_contains)
            || known.characteristic_paths.iter().all(|path| has_path(path))
    });
    let Some(known) = known else {
        return Some(Vec::new());
    };
    Some(
        doc.operations
            .iter()
            .filter(|operation| {
                known.common.iter().any(|(method, path)| {
                    operation.method.as_str() == *method && operation.path == *path
                })
            })
            .map(|operation| operation.name.clone())
            .collect(),
    )
}
