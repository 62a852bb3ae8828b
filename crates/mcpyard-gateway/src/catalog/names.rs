//! The names the catalogue lists items under, and what a tool's schema
//! asks to be mirrored in headers.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::call::ListKind;

/// The top-level arguments a tool's input schema marks with `x-mcp-header`,
/// with the header suffix each names.
pub(crate) fn mirrored_arguments(tool: &Value) -> Vec<(String, String)> {
    let Some(properties) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    properties
        .iter()
        .filter_map(|(name, schema)| {
            let suffix = schema.get("x-mcp-header")?.as_str()?;
            Some((name.clone(), suffix.to_owned()))
        })
        .collect()
}

/// The name an item is listed under: the source's prefix and its own name.
/// Tool names are made to follow the spec's rule, as some clients refuse a
/// whole list over one bad name: other characters become `_`, and a name
/// past 128 characters is cut to end in 8 hex digits of a hash of the whole,
/// which keeps it unique. Calls are routed by the original name.
pub(crate) fn exposed_name(kind: ListKind, prefix: &str, name: &str) -> String {
    let mut joined = String::with_capacity(prefix.len() + name.len());
    joined.push_str(prefix);
    joined.push_str(name);
    if kind != ListKind::Tools || is_valid_tool_name(&joined) {
        return joined;
    }
    let mut safe: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        safe.push('_');
    }
    if safe.len() > MAX_TOOL_NAME {
        let digest = Sha256::digest(joined.as_bytes());
        safe.truncate(MAX_TOOL_NAME - 9);
        safe.push('_');
        for byte in &digest[..4] {
            safe.push_str(&format!("{byte:02x}"));
        }
    }
    safe
}

const MAX_TOOL_NAME: usize = 128;

/// The spec's rule for tool names: 1 to 128 of `A-Z a-z 0-9 _ - .`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}
