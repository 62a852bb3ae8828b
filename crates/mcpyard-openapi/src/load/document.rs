//! From bytes to a JSON value: reading a file or a URL (size-capped), JSON or
//! YAML (sniffed), and which specification the document follows.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{LoadError, FETCH_TIMEOUT, MAX_DOCUMENT_BYTES};
use crate::model::DocVersion;

/// A document's value and the order of its `paths` as written (the JSON
/// value keeps keys sorted).
#[derive(Debug)]
pub(super) struct ParsedText {
    pub(super) value: Value,
    pub(super) path_order: Vec<String>,
}

pub(super) fn read_file(path: &Path) -> Result<String, LoadError> {
    let unreadable = |reason: String| LoadError::Unreadable {
        origin: path.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|error| unreadable(error.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(error.to_string()))?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(unreadable(format!(
            "larger than {} MiB",
            MAX_DOCUMENT_BYTES / 1024 / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".to_string()))
}

pub(super) async fn fetch(url: &str) -> Result<String, LoadError> {
    let unreadable = |reason: String| LoadError::Unreadable {
        origin: url.to_string(),
        reason,
    };
    let client = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|error| unreadable(error.to_string()))?;
    // reqwest's errors repeat the URL, which is already the origin.
    let mut response = client
        .get(url)
        .header(
            http::header::ACCEPT,
            "application/json, application/yaml;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|error| unreadable(error.without_url().to_string()))?;
    if !response.status().is_success() {
        return Err(unreadable(format!("HTTP status {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| unreadable(error.without_url().to_string()))?
    {
        if (bytes.len() + chunk.len()) as u64 > MAX_DOCUMENT_BYTES {
            return Err(unreadable(format!(
                "larger than {} MiB",
                MAX_DOCUMENT_BYTES / 1024 / 1024
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".to_string()))
}

/// JSON when the text starts with `{`, else YAML (of which JSON is a subset,
/// but the JSON parser is faster and its messages clearer).
pub(super) fn parse_text(origin: &str, text: &str) -> Result<ParsedText, LoadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        let syntax = |error: serde_json::Error| LoadError::Syntax {
            origin: origin.to_string(),
            format: "JSON",
            line: error.line(),
            column: error.column(),
            reason: strip_position(&error.to_string()),
        };
        let value: Value = serde_json::from_str(text).map_err(syntax)?;
        let path_order = serde_json::from_str::<PathsInOrder>(text)
            .map(|paths| paths.paths.0)
            .unwrap_or_default();
        Ok(ParsedText { value, path_order })
    } else {
        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).map_err(|error| {
            let (line, column) = error
                .location()
                .map(|location| (location.line(), location.column()))
                .unwrap_or((0, 0));
            LoadError::Syntax {
                origin: origin.to_string(),
                format: "YAML",
                line,
                column,
                reason: strip_position(&error.to_string()),
            }
        })?;
        let path_order = match &yaml {
            serde_yaml_ng::Value::Mapping(root) => match root.get("paths") {
                Some(serde_yaml_ng::Value::Mapping(paths)) => {
                    paths.keys().filter_map(yaml_key).collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        Ok(ParsedText {
            value: yaml_to_json(yaml),
            path_order,
        })
    }
}

/// Which specification, from `swagger` / `openapi`. OpenAPI 3.2 is read as
/// 3.1, which it extends.
pub(super) fn version(origin: &str, root: &Value) -> Result<DocVersion, LoadError> {
    let Some(object) = root.as_object() else {
        return Err(LoadError::invalid(
            origin,
            "#",
            "not an OpenAPI document: the top level is not an object",
        ));
    };
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if let Some(swagger) = object.get("swagger") {
        let swagger = text(swagger);
        return if swagger == "2.0" || swagger == "2" {
            Ok(DocVersion::Swagger2)
        } else {
            Err(LoadError::invalid(
                origin,
                "#/swagger",
                format!("unknown version `swagger: {swagger}`; mcpyard reads Swagger 2.0 and OpenAPI 3.0, 3.1"),
            ))
        };
    }
    if let Some(openapi) = object.get("openapi") {
        let openapi = text(openapi);
        return if openapi.starts_with("3.0") {
            Ok(DocVersion::OpenApi30)
        } else if openapi.starts_with("3.1") || openapi.starts_with("3.2") {
            Ok(DocVersion::OpenApi31)
        } else {
            Err(LoadError::invalid(
                origin,
                "#/openapi",
                format!("unknown version `openapi: {openapi}`; mcpyard reads Swagger 2.0 and OpenAPI 3.0, 3.1"),
            ))
        };
    }
    Err(LoadError::invalid(
        origin,
        "#",
        "not an OpenAPI document: it has neither `openapi` nor `swagger`",
    ))
}

/// The parsers' messages end with the position, which we print on our own.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

fn yaml_key(key: &serde_yaml_ng::Value) -> Option<String> {
    match key {
        serde_yaml_ng::Value::String(text) => Some(text.clone()),
        serde_yaml_ng::Value::Number(number) => Some(number.to_string()),
        serde_yaml_ng::Value::Bool(flag) => Some(flag.to_string()),
        serde_yaml_ng::Value::Null => Some("null".to_string()),
        _ => None,
    }
}

/// YAML keys may be numbers (`200:` under `responses`): they become strings.
fn yaml_to_json(yaml: serde_yaml_ng::Value) -> Value {
    match yaml {
        serde_yaml_ng::Value::Null => Value::Null,
        serde_yaml_ng::Value::Bool(flag) => Value::Bool(flag),
        serde_yaml_ng::Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                Value::from(integer)
            } else if let Some(integer) = number.as_u64() {
                Value::from(integer)
            } else {
                number
                    .as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        serde_yaml_ng::Value::String(text) => Value::String(text),
        serde_yaml_ng::Value::Sequence(items) => {
            Value::Array(items.into_iter().map(yaml_to_json).collect())
        }
        serde_yaml_ng::Value::Mapping(mapping) => {
            let mut object = Map::new();
            for (key, value) in mapping {
                if let Some(key) = yaml_key(&key) {
                    object.insert(key, yaml_to_json(value));
                }
            }
            Value::Object(object)
        }
        serde_yaml_ng::Value::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

#[derive(Deserialize)]
struct PathsInOrder {
    #[serde(default)]
    paths: KeysInOrder,
}

#[derive(Default)]
struct KeysInOrder(Vec<String>);

impl<'de> Deserialize<'de> for KeysInOrder {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeysVisitor;
        impl<'de> Visitor<'de> for KeysVisitor {
            type Value = KeysInOrder;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeysInOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(KeysInOrder(keys))
            }
        }
        deserializer.deserialize_map(KeysVisitor)
    }
}
