//! Helpers for the OpenAPI tests: arguments built from a tool's input
//! schema, and Prism (a mock server that validates every request against
//! the document) on a loopback port.

#![allow(unreachable_pub)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::support::{free_port, node, root, tool, wait_port, Proc};

/// A small file as a `data:` URL: what a file argument accepts.
pub const FILE_ARGUMENT: &str = "data:application/octet-stream;base64,aGVsbG8gd29ybGQ=";

/// Deeper than this, objects get only their required fields and arrays
/// only their minimum: recursive schemas end.
const MAX_DEPTH: usize = 6;

/// An argument object for a tool, every property filled (optional ones
/// too), valid against `input_schema`.
pub fn example_arguments(input_schema: &Value) -> Value {
    Example { root: input_schema }.value(input_schema, 0, None)
}

struct Example<'a> {
    root: &'a Value,
}

impl Example<'_> {
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        let mut schema = schema;
        for _ in 0..32 {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let pointer = reference.strip_prefix('#').unwrap_or(reference);
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => panic!("unresolvable $ref {reference} in the input schema"),
            }
        }
        schema
    }

    fn value(&self, schema: &Value, depth: usize, name: Option<&str>) -> Value {
        let schema = self.resolve(schema);
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(first) = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.iter().find(|v| !v.is_null()))
        {
            return first.clone();
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
                // The first alternative that is not `null`.
                let chosen = alternatives
                    .iter()
                    .find(|a| self.resolve(a).get("type") != Some(&json!("null")))
                    .or(alternatives.first());
                if let Some(chosen) = chosen {
                    return self.value(chosen, depth, name);
                }
            }
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in parts {
                match self.value(part, depth, name) {
                    Value::Object(o) => merged.extend(o),
                    other if parts.len() == 1 => return other,
                    _ => {}
                }
            }
            if let Some(Value::Object(own)) = self.object(schema, depth) {
                merged.extend(own);
            }
            return Value::Object(merged);
        }
        if is_file(schema) {
            return json!(FILE_ARGUMENT);
        }
        let kind = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null"),
            _ if schema.get("properties").is_some() => "object",
            _ if schema.get("items").is_some() => "array",
            _ => "string",
        };
        match kind {
            "object" => self.object(schema, depth).unwrap_or_else(|| json!({})),
            "array" => {
                let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let count = if depth >= MAX_DEPTH { min } else { min.max(1) };
                let items = schema.get("items").cloned().unwrap_or(json!({}));
                Value::Array(
                    (0..count)
                        .map(|_| self.value(&items, depth + 1, name))
                        .collect(),
                )
            }
            "integer" => json!(number(schema, 1.0) as i64),
            "number" => json!(number(schema, 1.5)),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => json!(string(schema, name)),
        }
    }

    fn object(&self, schema: &Value, depth: usize) -> Option<Value> {
        let properties = schema.get("properties")?.as_object()?;
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (key, property) in properties {
            if depth >= MAX_DEPTH && !required.contains(&key.as_str()) {
                continue;
            }
            if property.get("readOnly") == Some(&json!(true)) {
                continue;
            }
            out.insert(key.clone(), self.value(property, depth + 1, Some(key)));
        }
        Some(Value::Object(out))
    }
}

/// A file argument: binary content (`format: binary`, a media type) or a
/// string whose description says it takes a `data:` URL (as mcpyard writes
/// file arguments).
fn is_file(schema: &Value) -> bool {
    let format = schema.get("format").and_then(Value::as_str);
    let says_file = schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| d.contains("`data:<mime>;base64,"));
    format == Some("binary")
        || schema.get("contentMediaType").is_some()
        || schema.get("type") == Some(&json!("file"))
        || says_file
}

fn number(schema: &Value, preferred: f64) -> f64 {
    let min = schema.get("minimum").and_then(Value::as_f64).or_else(|| {
        schema
            .get("exclusiveMinimum")
            .and_then(Value::as_f64)
            .map(|m| m + 1.0)
    });
    let max = schema.get("maximum").and_then(Value::as_f64).or_else(|| {
        schema
            .get("exclusiveMaximum")
            .and_then(Value::as_f64)
            .map(|m| m - 1.0)
    });
    let mut n = min.map_or(preferred, |m| m.max(preferred));
    if let Some(max) = max {
        n = n.min(max);
    }
    n
}

fn string(schema: &Value, name: Option<&str>) -> String {
    if let Some(example) = schema
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .or_else(|| schema.get("example"))
        .or_else(|| schema.get("default"))
        .and_then(Value::as_str)
    {
        return example.to_owned();
    }
    let text = match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => "2026-01-01T00:00:00Z".to_owned(),
        Some("date") => "2026-01-01".to_owned(),
        Some("time") => "12:00:00Z".to_owned(),
        Some("uuid") => "123e4567-e89b-12d3-a456-426614174000".to_owned(),
        Some("uri" | "url" | "uri-reference") => "http://127.0.0.1/example".to_owned(),
        Some("email") => "someone@example.com".to_owned(),
        Some("byte") => "aGVsbG8=".to_owned(),
        Some("ipv4") => "127.0.0.1".to_owned(),
        _ => name.map_or("example".to_owned(), |n| format!("example-{n}")),
    };
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |m| m as usize);
    let mut text = text;
    while text.len() < min {
        text.push('x');
    }
    text.truncate(max.max(1));
    text
}

/// Prism mocking `document` on a loopback port, rejecting (`--errors`)
/// every request the document does not allow. Its log has one
/// "Request received" line per request it saw.
pub async fn start_prism(document: &Path, dir: &Path, label: &str) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new(node());
    cmd.arg(tool("npm/node_modules/@stoplight/prism-cli/dist/index.js"))
        .args([
            "mock",
            "--errors",
            "--dynamic=false",
            "-h",
            "127.0.0.1",
            "-p",
        ])
        .arg(port.to_string())
        .arg(document);
    let p = Proc::spawn(
        &format!("prism {label}"),
        cmd,
        &dir.join(format!("prism-{label}.log")),
    );
    wait_port(port, Duration::from_secs(60)).await;
    (p, port)
}

/// Requests Prism has seen so far.
pub fn prism_requests(prism: &Proc) -> usize {
    prism.log_text().matches("Request received").count()
}

/// Requests Prism has found valid against its document so far.
pub fn prism_accepted(prism: &Proc) -> usize {
    prism
        .log_text()
        .matches("The request passed the validation rules")
        .count()
}

/// The LocalAI Swagger 2.0 document: `../shared` is a sibling of the
/// repository, here and in CI.
pub fn localai_document() -> std::path::PathBuf {
    let path = root().join("../shared/fixtures/openapi/localai-swagger.json");
    assert!(
        path.is_file(),
        "{} is missing: the shared fixtures sit next to the repository",
        path.display()
    );
    path
}

/// The copy of the LocalAI document Prism serves: with a top-level
/// `consumes: [application/json]`. Swagger 2.0 leaves an absent
/// `consumes` open and Prism then refuses every body (415); LocalAI's
/// server takes JSON there, and mcpyard sends it, from the original.
pub fn localai_document_for_prism(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(localai_document()).expect("read the LocalAI document");
    let mut document: Value = serde_json::from_str(&text).expect("LocalAI's document is JSON");
    document
        .as_object_mut()
        .expect("an object")
        .entry("consumes")
        .or_insert(json!(["application/json"]));
    let path = dir.join("localai-for-prism.json");
    std::fs::write(&path, document.to_string()).expect("write the copy for Prism");
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_fill_every_property_and_end_recursion() {
        let schema = json!({
            "type": "object",
            "properties": {
                "model": {"type": "string", "minLength": 12},
                "n": {"type": "integer", "minimum": 3, "maximum": 5},
                "mode": {"type": ["string", "null"], "enum": ["a", "b"]},
                "tree": {"$ref": "#/$defs/Node"},
                "file": {"type": "string", "format": "binary"}
            },
            "$defs": {"Node": {"type": "object", "required": ["v"],
                "properties": {"v": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        });
        let args = example_arguments(&schema);
        assert!(args["model"].as_str().unwrap().len() >= 12);
        assert_eq!(args["n"], 3);
        assert_eq!(args["mode"], "a");
        assert_eq!(args["file"], FILE_ARGUMENT);
        assert_eq!(args["tree"]["v"], 1);
        assert!(args["tree"]["children"][0]["children"].is_array());
    }
}
