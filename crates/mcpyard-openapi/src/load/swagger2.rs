//! What Swagger 2.0 says differently from OpenAPI 3: a parameter carries its
//! schema in its own fields, the body is an `in: body` parameter or the
//! `formData` ones, media types come from `consumes` / `produces`, arrays
//! are serialised by `collectionFormat`, credentials are
//! `securityDefinitions`.

use serde_json::{json, Map, Value};

use crate::model::{Location, SecurityScheme, Style};

/// Keys of a Swagger 2.0 non-body parameter that are JSON Schema keywords.
const SCHEMA_KEYS: [&str; 17] = [
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
    "description",
];

/// The schema a non-body parameter describes with its own fields.
pub(super) fn parameter_schema(parameter: &Value) -> Value {
    let mut schema = Map::new();
    if let Value::Object(fields) = parameter {
        for key in SCHEMA_KEYS {
            if let Some(value) = fields.get(key) {
                schema.insert(key.to_string(), value.clone());
            }
        }
        for (key, value) in fields {
            if key == "x-example" {
                schema.insert("example".into(), value.clone());
            }
        }
    }
    Value::Object(schema)
}

/// `collectionFormat` as a style: `csv` (the default) is form without
/// exploding in the query and simple elsewhere, `multi` is form exploded.
/// `tsv` has no OpenAPI 3 equivalent; it is sent as `csv` would be.
pub(super) fn style(parameter: &Value, location: Location) -> (Style, bool) {
    let format = parameter
        .get("collectionFormat")
        .and_then(Value::as_str)
        .unwrap_or("csv");
    let is_array = parameter.get("type").and_then(Value::as_str) == Some("array");
    match (format, location) {
        ("multi", _) => (Style::Form, true),
        ("ssv", _) => (Style::SpaceDelimited, false),
        ("pipes", _) => (Style::PipeDelimited, false),
        (_, Location::Query | Location::Cookie) => (Style::Form, !is_array),
        _ => (Style::Simple, false),
    }
}

/// `securityDefinitions` entries.
pub(super) fn security_scheme(definition: &Value) -> SecurityScheme {
    match definition.get("type").and_then(Value::as_str) {
        Some("basic") => SecurityScheme::Basic,
        Some("oauth2") => SecurityScheme::OAuth2,
        Some("apiKey") => api_key(definition),
        other => SecurityScheme::Unsupported(other.unwrap_or("unknown").to_string()),
    }
}

/// `type: apiKey` (both versions).
pub(super) fn api_key(definition: &Value) -> SecurityScheme {
    let name = definition
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let location = match definition.get("in").and_then(Value::as_str) {
        Some("query") => Location::Query,
        Some("cookie") => Location::Cookie,
        _ => Location::Header,
    };
    SecurityScheme::ApiKey { location, name }
}

/// `schemes` + `host` + `basePath`; without a host, the base path alone
/// (resolved against the document's URL by the caller).
pub(super) fn servers(root: &Value) -> Vec<String> {
    let base_path = root
        .get("basePath")
        .and_then(Value::as_str)
        .unwrap_or("/")
        .trim_end_matches('/');
    let Some(host) = root.get("host").and_then(Value::as_str) else {
        return vec![if base_path.is_empty() {
            "/".to_string()
        } else {
            base_path.to_string()
        }];
    };
    let schemes: Vec<&str> = root
        .get("schemes")
        .and_then(Value::as_array)
        .map(|schemes| schemes.iter().filter_map(Value::as_str).collect())
        .filter(|schemes: &Vec<&str>| !schemes.is_empty())
        .unwrap_or_else(|| vec!["https"]);
    schemes
        .into_iter()
        .map(|scheme| format!("{scheme}://{host}{base_path}"))
        .collect()
}

/// The object schema of the `formData` parameters (as they appear in the
/// document, converted later like any schema).
pub(super) fn form_schema(parameters: &[&Value]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in parameters {
        let Some(name) = parameter.get("name").and_then(Value::as_str) else {
            continue;
        };
        properties.insert(name.to_string(), parameter_schema(parameter));
        if parameter.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(json!(name));
        }
    }
    json!({ "type": "object", "properties": properties, "required": required })
}
