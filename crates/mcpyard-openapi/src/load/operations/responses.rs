//! Answers: their kind, output schema and what the description says of them.

use serde_json::{json, Value};

use crate::describe::Hints;
use crate::load::refs::Location as At;
use crate::load::{LoadError, Resolver};
use crate::model::{DocVersion, ResponseKind};
use crate::schema::{Direction, SchemaBuilder};

use super::bodies::{essence, is_json, object_fields};
use super::context::Context;
use super::servers::own_or_inherited;

/// Names the JSON answer's object and top-level fields for the description.
pub(super) fn describe_answer(resolver: &Resolver, at: &At, schema: &Value, hints: &mut Hints) {
    let Ok((at, resolved)) = resolver.follow(at.clone(), schema) else {
        return;
    };
    let (item_at, item, is_list) = match resolved.get("items") {
        Some(items) if resolved.get("type").and_then(Value::as_str) == Some("array") => {
            (at.child("items"), items, true)
        }
        _ => (at, resolved, false),
    };
    let named = if is_list { item } else { schema };
    if let Some(reference) = named.get("$ref").and_then(Value::as_str) {
        hints.response_object = Some((reference_name(reference), is_list));
    }
    if let Ok(Some(fields)) = object_fields(resolver, &item_at, item, Direction::Response) {
        hints.response_fields = fields.fields.into_iter().map(|field| field.name).collect();
    }
}

pub(super) fn reference_name(reference: &str) -> String {
    reference
        .rsplit('/')
        .next()
        .unwrap_or(reference)
        .replace("~1", "/")
        .replace("~0", "~")
}

/// The declared 2xx answer.
pub(super) struct Answer {
    pub(super) kind: ResponseKind,
    pub(super) media_type: Option<String>,
    /// Where the JSON answer's schema is, when there is one.
    pub(super) schema: Option<(At, Value)>,
}

pub(super) fn response(
    context: &Context<'_>,
    at: &At,
    operation: &Value,
) -> Result<Answer, LoadError> {
    let resolver = context.resolver;
    let none = Answer {
        kind: ResponseKind::Unknown,
        media_type: None,
        schema: None,
    };
    let Some(responses) = operation.get("responses").and_then(Value::as_object) else {
        return Ok(none);
    };
    let Some(code) = responses
        .keys()
        .filter(|code| code.starts_with('2'))
        .min_by_key(|code| code.to_ascii_uppercase())
    else {
        return Ok(none);
    };
    let (response_at, response) =
        resolver.follow(at.child("responses").child(code), &responses[code])?;
    match context.version {
        DocVersion::Swagger2 => {
            let produces = own_or_inherited(operation, "produces", &context.produces);
            let schema = response.get("schema");
            let schema_is_file = schema
                .and_then(|schema| resolver.follow(response_at.child("schema"), schema).ok())
                .is_some_and(|(_, schema)| {
                    schema.get("type").and_then(Value::as_str) == Some("file")
                });
            let first = produces.first().cloned();
            if schema_is_file {
                return Ok(Answer {
                    kind: ResponseKind::Binary,
                    media_type: first,
                    schema: None,
                });
            }
            if let Some(stream) = produces
                .iter()
                .find(|media| media.starts_with("text/event-stream"))
            {
                return Ok(Answer {
                    kind: ResponseKind::EventStream,
                    media_type: Some(stream.clone()),
                    schema: None,
                });
            }
            if produces.is_empty() || produces.iter().any(|media| is_json(media)) {
                return Ok(match schema {
                    Some(schema) => Answer {
                        kind: ResponseKind::Json,
                        media_type: Some(
                            produces
                                .iter()
                                .find(|media| is_json(media))
                                .cloned()
                                .unwrap_or_else(|| "application/json".into()),
                        ),
                        schema: Some((response_at.child("schema"), schema.clone())),
                    },
                    None => none,
                });
            }
            let kind = response_kind(first.as_deref().unwrap_or_default());
            Ok(Answer {
                kind,
                media_type: first,
                schema: None,
            })
        }
        _ => {
            let Some(content) = response.get("content").and_then(Value::as_object) else {
                return Ok(none);
            };
            let rank = |media_type: &str| match response_kind(media_type) {
                ResponseKind::Json => 0,
                ResponseKind::EventStream => 1,
                ResponseKind::Text => 2,
                _ => 3,
            };
            let Some((media_type, media)) = content
                .iter()
                .min_by_key(|(media_type, _)| rank(media_type))
            else {
                return Ok(none);
            };
            let kind = response_kind(media_type);
            let schema = (kind == ResponseKind::Json)
                .then(|| media.get("schema"))
                .flatten()
                .map(|schema| {
                    (
                        response_at
                            .child("content")
                            .child(media_type)
                            .child("schema"),
                        schema.clone(),
                    )
                });
            Ok(Answer {
                kind,
                media_type: Some(media_type.clone()),
                schema,
            })
        }
    }
}

pub(super) fn response_kind(media_type: &str) -> ResponseKind {
    let essence = essence(media_type);
    if is_json(&essence) || essence == "*/*" {
        ResponseKind::Json
    } else if essence == "text/event-stream" {
        ResponseKind::EventStream
    } else if essence.starts_with("text/")
        || essence == "application/xml"
        || essence == "application/yaml"
    {
        ResponseKind::Text
    } else {
        ResponseKind::Binary
    }
}

/// The answer envelope a call produces: the fields every answer has, and
/// those of the answer the operation declares (`data` typed by its 2xx
/// JSON schema). Fields an undeclared answer brings are still allowed;
/// listing only the likely ones keeps `tools/list` small.
pub(super) fn output_schema(
    context: &Context<'_>,
    answer: &Answer,
    websocket: bool,
) -> Result<Value, LoadError> {
    let shared = answer
        .schema
        .as_ref()
        .filter(|_| !websocket)
        .and_then(|(at, schema)| {
            let only_ref = schema.as_object().filter(|object| object.len() == 1)?;
            let reference = only_ref.get("$ref")?.as_str()?;
            context.resolver.target(at, reference).ok()
        });
    if let Some(cached) = shared
        .as_ref()
        .and_then(|target| context.output_schemas.borrow().get(target).cloned())
    {
        return Ok(cached);
    }
    let envelope = build_output_schema(context, answer, websocket)?;
    if let Some(target) = shared {
        context
            .output_schemas
            .borrow_mut()
            .insert(target, envelope.clone());
    }
    Ok(envelope)
}

pub(super) fn build_output_schema(
    context: &Context<'_>,
    answer: &Answer,
    websocket: bool,
) -> Result<Value, LoadError> {
    let mut output = SchemaBuilder::new(context.resolver, context.version, Direction::Response);
    let mut data = match &answer.schema {
        Some((at, schema)) => output.convert(at, schema)?,
        None => json!({}),
    };
    let mut defs = output.finish()?;
    // The tool's description already names the answer's fields; the output
    // schema is for checking, so the document's prose stays out of it.
    strip_descriptions(&mut data);
    defs.values_mut().for_each(strip_descriptions);
    let mut properties = serde_json::Map::new();
    properties.insert(
        "ok".into(),
        json!({ "type": "boolean", "description": "Whether the status code is 2xx." }),
    );
    properties.insert("status_code".into(), json!({ "type": "integer" }));
    properties.insert("elapsed_ms".into(), json!({ "type": "integer" }));
    let binary = |properties: &mut serde_json::Map<String, Value>| {
        properties.insert(
            "base64".into(),
            json!({ "type": "string", "description": "A small binary answer." }),
        );
        properties.insert("mime_type".into(), json!({ "type": "string" }));
        properties.insert(
            "saved_path".into(),
            json!({ "type": "string", "description": "Where a large binary answer was saved." }),
        );
        properties.insert("size_bytes".into(), json!({ "type": "integer" }));
    };
    match (websocket, answer.kind) {
        (true, _) => {
            properties.insert(
                "messages".into(),
                json!({ "type": "array", "description": "Messages the WebSocket route sent." }),
            );
        }
        (false, ResponseKind::Json) => {
            properties.insert("data".into(), data);
        }
        (false, ResponseKind::Text) => {
            properties.insert("text".into(), json!({ "type": "string" }));
        }
        (false, ResponseKind::EventStream) => {
            properties.insert("events".into(), json!({ "type": "array", "description": "The `data:` payloads of the event stream, in order." }));
        }
        (false, ResponseKind::Binary) => binary(&mut properties),
        (false, ResponseKind::Unknown) => {
            properties.insert("data".into(), data);
            properties.insert("text".into(), json!({ "type": "string" }));
            properties.insert("events".into(), json!({ "type": "array" }));
            binary(&mut properties);
        }
    }
    let mut envelope = json!({
        "type": "object",
        "properties": properties,
        "required": ["ok", "status_code", "elapsed_ms"],
    });
    if !defs.is_empty() {
        envelope["$defs"] = Value::Object(defs);
    }
    Ok(envelope)
}

/// Removes `description` and `title` from a schema and its subschemas (not
/// from property names: a property may be called `description`).
pub(super) fn strip_descriptions(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    object.remove("description");
    object.remove("title");
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            (
                "properties" | "patternProperties" | "$defs" | "definitions",
                Value::Object(named),
            ) => named.values_mut().for_each(strip_descriptions),
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(list)) => {
                list.iter_mut().for_each(strip_descriptions)
            }
            (
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "if"
                | "then"
                | "else"
                | "propertyNames",
                value,
            ) => strip_descriptions(value),
            _ => {}
        }
    }
}
