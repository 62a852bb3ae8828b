//! Request bodies: their media type, kind and fields as arguments.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::describe::{self, Hints};
use crate::load::refs::Location as At;
use crate::load::{LoadError, Resolver};
use crate::model::{Argument, BodyKind, BodyShape, RequestBody};
use crate::schema::{Direction, SchemaBuilder};

use super::context::Context;
use super::parameters::claim;
use super::servers::strings;

/// Appended to the description of every file argument.
pub(crate) const FILE_GUIDANCE: &str = "A file: a `data:<mime>;base64,...` URL, `base64:...`, an `http(s)://` URL, or a path under the gateway's input roots.";

/// A body as the document declares it, before it becomes arguments.
pub(super) struct BodySource {
    pub(super) media_type: String,
    pub(super) kind: BodyKind,
    pub(super) required: bool,
    pub(super) schema_at: At,
    pub(super) schema: Value,
    pub(super) description: Option<String>,
    /// Swagger 2.0's `in: body` parameter name.
    pub(super) parameter: Option<String>,
}

pub(super) fn build_body(
    context: &Context<'_>,
    input: &mut SchemaBuilder<'_>,
    source: BodySource,
    taken: &mut HashSet<String>,
    properties: &mut Map<String, Value>,
    required: &mut Vec<String>,
    hints: &mut Hints,
) -> Result<RequestBody, LoadError> {
    let resolver = context.resolver;
    hints.request_object = source
        .schema
        .get("$ref")
        .and_then(Value::as_str)
        .map(|reference| {
            reference
                .rsplit('/')
                .next()
                .unwrap_or(reference)
                .replace("~1", "/")
        });
    let mut file_arguments = Vec::new();

    let fields = match source.kind {
        BodyKind::Json | BodyKind::Form | BodyKind::Multipart => object_fields(
            resolver,
            &source.schema_at,
            &source.schema,
            Direction::Request,
        )?,
        _ => None,
    };
    if let Some(fields) = fields {
        let mut arguments = Vec::new();
        let mut body_properties = Map::new();
        for field in &fields.fields {
            let mut schema = input.convert_inside(&field.owner, &field.at, &field.schema)?;
            let is_file = is_file_schema(resolver, &field.at, &field.schema);
            let argument = claim(taken, &field.name, Some("body"));
            if is_file && source.kind != BodyKind::Json {
                schema = file_schema(&schema);
                file_arguments.push(argument.clone());
            } else {
                describe::ensure_description(&mut schema, &describe::field_guidance(&field.name));
            }
            let is_required = source.required && fields.required.contains(&field.name);
            if is_required {
                required.push(argument.clone());
            }
            hints.body_fields.push(argument.clone());
            properties.insert(argument.clone(), schema.clone());
            body_properties.insert(field.name.clone(), schema);
            arguments.push(Argument {
                argument,
                wire: field.name.clone(),
            });
        }
        let required_fields: Vec<&String> = fields
            .fields
            .iter()
            .map(|field| &field.name)
            .filter(|name| fields.required.contains(name))
            .collect();
        return Ok(RequestBody {
            media_type: source.media_type,
            kind: source.kind,
            required: source.required,
            shape: BodyShape::Fields(arguments),
            parameter: source.parameter,
            file_arguments,
            schema: json!({ "type": "object", "properties": body_properties, "required": required_fields }),
        });
    }

    let argument = claim(taken, "body", None);
    let mut schema = match source.kind {
        BodyKind::Binary => {
            file_arguments.push(argument.clone());
            file_schema(
                &json!({ "description": format!("The request body ({}).", source.media_type) }),
            )
        }
        BodyKind::Text => json!({ "type": "string" }),
        _ => input.convert(&source.schema_at, &source.schema)?,
    };
    let guidance = describe::body_guidance(&source.media_type, source.description.as_deref());
    describe::ensure_description(&mut schema, &guidance);
    if source.required {
        required.push(argument.clone());
    }
    hints.whole_body = Some(argument.clone());
    properties.insert(argument.clone(), schema.clone());
    Ok(RequestBody {
        media_type: source.media_type,
        kind: source.kind,
        required: source.required,
        shape: BodyShape::Whole(argument),
        parameter: source.parameter,
        file_arguments,
        schema,
    })
}

pub(super) struct Field {
    pub(super) name: String,
    /// The object schema the field is a property of.
    pub(super) owner: At,
    pub(super) at: At,
    pub(super) schema: Value,
}

pub(super) struct Fields {
    pub(super) fields: Vec<Field>,
    pub(super) required: Vec<String>,
}

/// The top-level properties of an object body (through `$ref`s and `allOf`),
/// or `None` when the body is not such an object (arrays, scalars, unions,
/// free-form maps).
pub(super) fn object_fields<'a>(
    resolver: &'a Resolver,
    at: &At,
    schema: &'a Value,
    direction: Direction,
) -> Result<Option<Fields>, LoadError> {
    let left_out = match direction {
        Direction::Request => "readOnly",
        Direction::Response => "writeOnly",
    };
    let mut fields = Fields {
        fields: Vec::new(),
        required: Vec::new(),
    };
    let mut pending = vec![(at.clone(), schema)];
    let mut seen = HashSet::new();
    while let Some((at, schema)) = pending.pop() {
        let (at, schema) = resolver.follow(at, schema)?;
        if !seen.insert(at.clone()) {
            continue;
        }
        if schema.get("oneOf").is_some() || schema.get("anyOf").is_some() {
            return Ok(None);
        }
        match schema.get("type") {
            None => {}
            Some(Value::String(kind)) if kind == "object" => {}
            Some(_) => return Ok(None),
        }
        if let Some(Value::Object(properties)) = schema.get("properties") {
            let properties_at = at.child("properties");
            for (name, property) in properties {
                if property.get(left_out).and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                if !fields.fields.iter().any(|field| &field.name == name) {
                    fields.fields.push(Field {
                        name: name.clone(),
                        owner: at.clone(),
                        at: properties_at.child(name),
                        schema: property.clone(),
                    });
                }
            }
        }
        for name in strings(schema.get("required")) {
            if !fields.required.contains(&name) {
                fields.required.push(name);
            }
        }
        if let Some(Value::Array(parts)) = schema.get("allOf") {
            let parts_at = at.child("allOf");
            // Reversed so that the first part's fields come first.
            for (index, part) in parts.iter().enumerate().rev() {
                pending.push((parts_at.child(&index.to_string()), part));
            }
        }
    }
    Ok((!fields.fields.is_empty()).then_some(fields))
}

pub(super) fn is_file_schema(resolver: &Resolver, at: &At, schema: &Value) -> bool {
    let Ok((_, schema)) = resolver.follow(at.clone(), schema) else {
        return false;
    };
    let binary = |schema: &Value| {
        schema.get("type").and_then(Value::as_str) == Some("file")
            || schema.get("format").and_then(Value::as_str) == Some("binary")
            || schema.get("contentMediaType").is_some()
    };
    binary(schema) || schema.get("items").is_some_and(binary)
}

/// A file argument: a string (or a list of them) that names where the file is.
pub(super) fn file_schema(converted: &Value) -> Value {
    let description = converted
        .get("description")
        .and_then(Value::as_str)
        .map(|description| {
            let description = description.trim_end();
            if description.ends_with(['.', '!', '?']) {
                format!("{description} {FILE_GUIDANCE}")
            } else {
                format!("{description}. {FILE_GUIDANCE}")
            }
        })
        .unwrap_or_else(|| FILE_GUIDANCE.to_string());
    if converted.get("type").and_then(Value::as_str) == Some("array") {
        json!({ "type": "array", "items": { "type": "string" }, "description": description })
    } else {
        json!({ "type": "string", "description": description })
    }
}

/// A media type without its parameters, lower-cased (`application/json`
/// for `Application/JSON; charset=utf-8`).
pub(super) fn essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

pub(super) fn is_json(media_type: &str) -> bool {
    let essence = essence(media_type);
    essence == "application/json" || essence.ends_with("+json") || essence.ends_with("/json")
}

pub(super) fn body_kind(media_type: &str, schema: &Value) -> BodyKind {
    let essence = essence(media_type);
    let binary_schema = schema.get("format").and_then(Value::as_str) == Some("binary")
        || schema.get("type").and_then(Value::as_str) == Some("file");
    if is_json(&essence) {
        BodyKind::Json
    } else if essence.starts_with("multipart/") {
        BodyKind::Multipart
    } else if essence == "application/x-www-form-urlencoded" {
        BodyKind::Form
    } else if essence.starts_with("text/") || essence == "application/xml" {
        BodyKind::Text
    } else if essence == "*/*" && !binary_schema {
        BodyKind::Json
    } else {
        BodyKind::Binary
    }
}

/// JSON first, then multipart, form, text, anything else.
pub(super) fn choose_request_media(content: &Map<String, Value>) -> Option<(&String, &Value)> {
    let rank = |media_type: &str| {
        let essence = media_type.to_ascii_lowercase();
        if is_json(&essence) {
            0
        } else if essence.starts_with("multipart/form-data") {
            1
        } else if essence.starts_with("application/x-www-form-urlencoded") {
            2
        } else if essence.starts_with("text/") {
            3
        } else {
            4
        }
    };
    content
        .iter()
        .min_by_key(|(media_type, _)| rank(media_type))
}
