//! RFC 9728 protected-resource metadata: where a client that got a 401
//! learns which authorization server issues tokens for this resource.

use serde_json::{json, Value};

use super::JwtVerifier;

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata URL for `resource` (RFC 9728 §3.1: the well-known segment
/// goes between the host and the resource's path).
pub(crate) fn metadata_url(resource: &str) -> String {
    match reqwest::Url::parse(resource) {
        Ok(url) => format!(
            "{}{WELL_KNOWN}{}",
            url.origin().ascii_serialization(),
            url.path().trim_end_matches('/')
        ),
        Err(_) => format!("{}{WELL_KNOWN}", resource.trim_end_matches('/')),
    }
}

/// The paths the document is served on: the one for the resource's path,
/// and the bare well-known path that clients of earlier drafts try.
pub(crate) fn metadata_paths(resource: &str) -> Vec<String> {
    let path = reqwest::Url::parse(resource)
        .map(|u| u.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let mut paths = vec![format!("{WELL_KNOWN}{path}")];
    if !path.is_empty() {
        paths.push(WELL_KNOWN.to_owned());
    }
    paths
}

/// The metadata document.
pub(crate) fn metadata_document(jwt: &JwtVerifier) -> Value {
    let mut doc = json!({
        "resource": jwt.resource(),
        "authorization_servers": [jwt.issuer()],
        "bearer_methods_supported": ["header"],
        "resource_name": "mcpyard",
    });
    if !jwt.required_scopes().is_empty() {
        doc["scopes_supported"] = json!(jwt.required_scopes());
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_well_known_segment_goes_before_the_path() {
        assert_eq!(
            metadata_url("http://127.0.0.1:7117/mcp"),
            "http://127.0.0.1:7117/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_paths("http://127.0.0.1:7117/mcp"),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            metadata_paths("https://gw.example/"),
            ["/.well-known/oauth-protected-resource"]
        );
    }
}
