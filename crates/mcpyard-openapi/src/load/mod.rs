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
mod options;
pub(crate) mod refs;
mod swagger2;

use std::path::Path;

use crate::model::ApiDocument;

pub use options::{LoadError, LoadOptions, FETCH_TIMEOUT, MAX_DOCUMENT_BYTES, MAX_TOOL_NAME_LEN};
pub(crate) use refs::Resolver;

/// Loads a document from a file path or an `http(s)://` URL. A URL's user,
/// password and query are left out of the origin and of messages.
pub async fn load(config_spec: &str, options: &LoadOptions) -> Result<ApiDocument, LoadError> {
    if is_url(config_spec) {
        let origin = url_for_messages(config_spec);
        let text = document::fetch(config_spec, &origin).await?;
        parse(&origin, &text, None, options)
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
        return Err(LoadError::PrefixTooLong {
            origin: origin.to_string(),
            prefix_len: options.prefix_len,
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

/// A URL as messages show it: without user and password, and without the
/// query, either of which may carry a credential.
fn url_for_messages(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let path = match path.find(['?', '#']) {
        Some(cut) if path[cut..].starts_with('?') => format!("{}?…", &path[..cut]),
        Some(cut) => path[..cut].to_string(),
        None => path.to_string(),
    };
    format!("{scheme}://{host}{path}")
}

fn is_url(spec: &str) -> bool {
    let lower = spec.get(..8).unwrap_or(spec).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

#[cfg(test)]
mod tests {
    use super::url_for_messages;

    #[test]
    fn urls_in_messages_carry_no_credentials() {
        assert_eq!(
            url_for_messages("http://127.0.0.1:8080/swagger/doc.json"),
            "http://127.0.0.1:8080/swagger/doc.json"
        );
        assert_eq!(
            url_for_messages("https://user:secret@api.example/doc.yaml?key=s3cret#x"),
            "https://api.example/doc.yaml?…"
        );
        assert_eq!(url_for_messages("https://host?token=abc"), "https://host?…");
    }
}
