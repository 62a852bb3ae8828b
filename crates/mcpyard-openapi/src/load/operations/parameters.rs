//! Parameters: their schemas, styles and argument names.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::load::refs::Location as At;
use crate::load::{swagger2, LoadError};
use crate::model::{DocVersion, Location, SecurityScheme, Style};
use crate::schema::SchemaBuilder;

use super::context::Context;

pub(super) fn parameter_schema(
    context: &Context<'_>,
    input: &mut SchemaBuilder<'_>,
    at: &At,
    parameter: &Value,
) -> Result<Value, LoadError> {
    let mut schema = match context.version {
        DocVersion::Swagger2 => input.convert(at, &swagger2::parameter_schema(parameter))?,
        _ => {
            if let Some(schema) = parameter.get("schema") {
                input.convert(&at.child("schema"), schema)?
            } else if let Some((media_type, media)) = parameter
                .get("content")
                .and_then(Value::as_object)
                .and_then(|content| content.iter().next())
            {
                let schema_at = at.child("content").child(media_type).child("schema");
                input.convert(&schema_at, media.get("schema").unwrap_or(&json!({})))?
            } else {
                json!({})
            }
        }
    };
    if let Value::Object(object) = &mut schema {
        if let Some(description) = parameter.get("description").and_then(Value::as_str) {
            if !description.trim().is_empty() {
                object.insert("description".into(), json!(description));
            }
        }
        if parameter.get("deprecated").and_then(Value::as_bool) == Some(true) {
            object.insert("deprecated".into(), json!(true));
        }
        if let Some(example) = parameter.get("example") {
            object.entry("examples").or_insert_with(|| json!([example]));
        }
    }
    Ok(schema)
}

pub(super) fn style_of(parameter: &Value, location: Location) -> (Style, bool) {
    let style = match parameter.get("style").and_then(Value::as_str) {
        Some("form") => Style::Form,
        Some("simple") => Style::Simple,
        Some("label") => Style::Label,
        Some("matrix") => Style::Matrix,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        _ => match location {
            Location::Query | Location::Cookie => Style::Form,
            Location::Path | Location::Header => Style::Simple,
        },
    };
    let explode = parameter
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    (style, explode)
}

/// Headers that are the gateway's plumbing, never arguments.
const PLUMBING_HEADERS: [&str; 4] = ["authorization", "content-type", "accept", "content-length"];

/// Headers the gateway sets itself, and API keys a security scheme supplies.
pub(super) fn is_supplied_elsewhere(context: &Context<'_>, location: Location, wire: &str) -> bool {
    if location == Location::Header
        && PLUMBING_HEADERS.contains(&wire.to_ascii_lowercase().as_str())
    {
        return true;
    }
    context
        .security_schemes
        .values()
        .any(|scheme| match scheme {
            SecurityScheme::ApiKey {
                location: key_location,
                name,
            } => *key_location == location && name.eq_ignore_ascii_case(wire),
            _ => false,
        })
}

/// An argument name for a wire name, unique among the tool's arguments.
pub(super) fn claim(taken: &mut HashSet<String>, wire: &str, place: Option<&str>) -> String {
    let mut base: String = wire
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || "_-.".contains(character) {
                character
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() {
        base = "value".into();
    }
    base.truncate(60);
    let mut candidates = vec![base.clone()];
    if let Some(place) = place {
        candidates.push(format!("{place}_{base}"));
    }
    for candidate in candidates {
        if taken.insert(candidate.clone()) {
            return candidate;
        }
    }
    let mut number = 2;
    loop {
        let candidate = format!("{base}_{number}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        number += 1;
    }
}

pub(super) fn parameter_key(parameter: &Value) -> (String, String) {
    let field = |key: &str| {
        parameter
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (field("name"), field("in"))
}

pub(super) fn template_parameters(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let Some(length) = rest[start..].find('}') else {
            break;
        };
        let name = &rest[start + 1..start + length];
        if !name.is_empty() && !names.iter().any(|known| known == name) {
            names.push(name.to_string());
        }
        rest = &rest[start + length + 1..];
    }
    names
}
