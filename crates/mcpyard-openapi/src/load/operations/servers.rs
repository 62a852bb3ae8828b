//! Servers, WebSocket endpoints and security schemes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::load::refs::Location as At;
use crate::load::{swagger2, LoadError, Resolver};
use crate::model::{DocVersion, SecurityRequirement, SecurityScheme};

pub(super) fn is_websocket(operation: &Value, path: &str, servers: &[String]) -> bool {
    let mentions = |key: &str| {
        operation
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|text| text.to_ascii_lowercase().contains("websocket"))
    };
    mentions("summary")
        || mentions("description")
        || operation.get("x-websocket").and_then(Value::as_bool) == Some(true)
        || path.starts_with("/ws/")
        || servers
            .iter()
            .any(|server| server.starts_with("ws://") || server.starts_with("wss://"))
}

pub(super) fn security_schemes(
    resolver: &Resolver,
    version: DocVersion,
) -> Result<BTreeMap<String, SecurityScheme>, LoadError> {
    let root = resolver.root();
    let (pointer, definitions) = match version {
        DocVersion::Swagger2 => ("#/securityDefinitions", root.get("securityDefinitions")),
        _ => (
            "#/components/securitySchemes",
            root.pointer("/components/securitySchemes"),
        ),
    };
    let mut schemes = BTreeMap::new();
    let Some(Value::Object(definitions)) = definitions else {
        return Ok(schemes);
    };
    let at = At {
        doc: 0,
        pointer: pointer.into(),
    };
    for (name, definition) in definitions {
        let (_, definition) = resolver.follow(at.child(name), definition)?;
        let scheme = match version {
            DocVersion::Swagger2 => swagger2::security_scheme(definition),
            _ => match definition.get("type").and_then(Value::as_str) {
                Some("http") => {
                    match definition
                        .get("scheme")
                        .and_then(Value::as_str)
                        .map(str::to_ascii_lowercase)
                        .as_deref()
                    {
                        Some("bearer") => SecurityScheme::Bearer,
                        Some("basic") => SecurityScheme::Basic,
                        other => {
                            SecurityScheme::Unsupported(format!("http {}", other.unwrap_or("?")))
                        }
                    }
                }
                Some("apiKey") => swagger2::api_key(definition),
                Some("oauth2") | Some("openIdConnect") => SecurityScheme::OAuth2,
                other => SecurityScheme::Unsupported(other.unwrap_or("unknown").to_string()),
            },
        };
        schemes.insert(name.clone(), scheme);
    }
    Ok(schemes)
}

pub(super) fn security_requirements(list: &Value) -> Vec<SecurityRequirement> {
    let Value::Array(alternatives) = list else {
        return Vec::new();
    };
    alternatives
        .iter()
        .filter_map(Value::as_object)
        .map(|alternative| SecurityRequirement {
            schemes: alternative
                .iter()
                .map(|(name, scopes)| (name.clone(), strings(Some(scopes))))
                .collect(),
        })
        .collect()
}

/// `servers` URLs with their variables' defaults filled in.
pub(super) fn server_urls(servers: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(servers)) = servers else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|server| {
            let mut url = server.get("url")?.as_str()?.to_string();
            if let Some(Value::Object(variables)) = server.get("variables") {
                for (name, variable) in variables {
                    let default = variable
                        .get("default")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    url = url.replace(&format!("{{{name}}}"), default);
                }
            }
            Some(url)
        })
        .collect()
}

/// Swagger 2.0's `consumes` / `produces`: the operation's own list, else
/// the document's.
pub(super) fn own_or_inherited(operation: &Value, key: &str, inherited: &[String]) -> Vec<String> {
    let own = strings(operation.get(key));
    if own.is_empty() {
        inherited.to_vec()
    } else {
        own
    }
}

pub(super) fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}
