//! One [`Operation`] per method and path: parameters (path-level and
//! operation-level merged), the body, the answer, credentials, servers, and
//! the tool's name, description, input and output schemas.
//!
//! Argument names: a parameter's own name (characters other than letters,
//! digits, `_`, `-` and `.` become `_`); when two parameters in different
//! places share one, the later gets its place in front (`query_id`); a body
//! field that collides with a parameter gets `body_` in front (`body_id`).
//! Headers that are the gateway's plumbing (Authorization, Content-Type,
//! Accept, Content-Length) and API keys the security schemes supply are not
//! arguments.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::refs::Location as At;
use super::{swagger2, LoadError, LoadOptions, Resolver, MAX_TOOL_NAME_LEN};
use crate::describe::{self, Hints};
use crate::model::{
    ApiDocument, Argument, BodyKind, DocVersion, Location, Operation, Parameter, RequestBody, Style,
};
use crate::naming::{self, NameSource};
use crate::schema::{self, Direction, SchemaBuilder};
use bodies::{body_kind, build_body, choose_request_media, is_json, BodySource};
use context::Context;
use parameters::{
    claim, is_supplied_elsewhere, parameter_key, parameter_schema, style_of, template_parameters,
};
use responses::{describe_answer, output_schema, response};
use servers::{
    is_websocket, own_or_inherited, security_requirements, security_schemes, server_urls, strings,
};

mod bodies;
mod context;
mod parameters;
mod responses;
mod servers;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// An operation before names are given, with what its description needs.
struct Draft {
    operation: Operation,
    hints: Hints,
    at: At,
}

pub(super) fn build(
    resolver: &Resolver,
    version: DocVersion,
    path_order: &[String],
    options: &LoadOptions,
) -> Result<ApiDocument, LoadError> {
    let root = resolver.root();
    let origin = resolver.origin(0).to_string();
    let security_schemes = security_schemes(resolver, version)?;
    let context = Context {
        resolver,
        version,
        consumes: strings(root.get("consumes")),
        produces: strings(root.get("produces")),
        security: root.get("security").map(security_requirements),
        security_schemes,
        output_schemas: RefCell::new(HashMap::new()),
    };
    let servers = match version {
        DocVersion::Swagger2 => swagger2::servers(root),
        _ => server_urls(root.get("servers")),
    };

    let mut drafts = Vec::new();
    if let Some(paths) = root.get("paths") {
        let Some(paths) = paths.as_object() else {
            return Err(LoadError::invalid(
                &origin,
                "#/paths",
                "`paths` is not an object",
            ));
        };
        let in_order: Vec<&String> = if path_order.len() == paths.len()
            && path_order.iter().all(|path| paths.contains_key(path))
        {
            path_order.iter().collect()
        } else {
            paths.keys().collect()
        };
        let paths_at = At {
            doc: 0,
            pointer: "#/paths".into(),
        };
        for path in in_order {
            let written_at = paths_at.child(path);
            let (item_at, item) = resolver.follow(written_at, &paths[path.as_str()])?;
            for method in METHODS {
                if let Some(operation) = item.get(method) {
                    let operation_at = item_at.child(method);
                    drafts.push(build_operation(
                        &context,
                        path,
                        &item_at,
                        item,
                        method,
                        operation_at,
                        operation,
                    )?);
                }
            }
        }
    }

    let max_len = MAX_TOOL_NAME_LEN - options.prefix_len;
    let methods: Vec<String> = drafts
        .iter()
        .map(|draft| draft.operation.method.to_string())
        .collect();
    let sources: Vec<NameSource<'_>> = drafts
        .iter()
        .zip(&methods)
        .map(|(draft, method)| NameSource {
            method,
            path: &draft.operation.path,
            operation_id: draft.operation.operation_id.as_deref(),
            websocket: draft.operation.websocket,
        })
        .collect();
    let mut names = naming::assign(&sources, max_len);
    let title = root
        .pointer("/info/title")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let known = crate::curated::names(title, |path| sources.iter().any(|s| s.path == path));
    naming::apply_known(&mut names, &sources, known, max_len);
    naming::apply_renames(&mut names, &options.rename, max_len).map_err(|message| {
        LoadError::Rename {
            origin: origin.clone(),
            message,
        }
    })?;

    let mut operations = Vec::with_capacity(drafts.len());
    for (mut draft, name) in drafts.into_iter().zip(names) {
        draft.operation.name = name;
        draft.operation.tool_description =
            describe::tool_description(&draft.operation, &draft.hints);
        schema::ensure_compiles(&mut draft.operation.input_schema).map_err(|error| {
            resolver.error(
                &draft.at,
                format!(
                    "the input schema made from this operation is not valid JSON Schema: {error}"
                ),
            )
        })?;
        operations.push(draft.operation);
    }

    Ok(ApiDocument {
        origin,
        version,
        title: title.to_string(),
        servers,
        security_schemes: context.security_schemes,
        operations,
    })
}

fn build_operation(
    context: &Context<'_>,
    path: &str,
    item_at: &At,
    item: &Value,
    method: &str,
    at: At,
    operation: &Value,
) -> Result<Draft, LoadError> {
    let resolver = context.resolver;
    if !operation.is_object() {
        return Err(resolver.error(&at, "an operation must be an object"));
    }
    let text = |key: &str| {
        operation
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let summary = text("summary").filter(|summary| !summary.trim().is_empty());
    let description = text("description").filter(|description| !description.trim().is_empty());

    let mut input = SchemaBuilder::new(resolver, context.version, Direction::Request);
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut hints = Hints::default();

    // Parameters: the path item's, then the operation's, which win.
    let mut raw: Vec<(At, &Value)> = Vec::new();
    for (owner_at, owner) in [(item_at, item), (&at, operation)] {
        if let Some(Value::Array(list)) = owner.get("parameters") {
            let list_at = owner_at.child("parameters");
            for (index, parameter) in list.iter().enumerate() {
                let (parameter_at, parameter) =
                    resolver.follow(list_at.child(&index.to_string()), parameter)?;
                let key = parameter_key(parameter);
                raw.retain(|(_, known)| parameter_key(known) != key);
                raw.push((parameter_at, parameter));
            }
        }
    }

    let mut parameters: Vec<Parameter> = Vec::new();
    let mut body_parameter: Option<(At, &Value)> = None;
    let mut form_parameters: Vec<&Value> = Vec::new();
    let mut form_at = at.child("parameters");
    for place in ["path", "query", "header", "cookie", "body", "formData"] {
        for (parameter_at, parameter) in raw
            .iter()
            .filter(|(_, parameter)| parameter.get("in").and_then(Value::as_str) == Some(place))
        {
            let Some(wire) = parameter.get("name").and_then(Value::as_str) else {
                return Err(resolver.error(parameter_at, "a parameter without a `name`"));
            };
            let location = match place {
                "path" => Location::Path,
                "query" => Location::Query,
                "header" => Location::Header,
                "cookie" => Location::Cookie,
                "body" => {
                    body_parameter = Some((parameter_at.clone(), *parameter));
                    continue;
                }
                _ => {
                    form_at = parameter_at.clone();
                    form_parameters.push(parameter);
                    continue;
                }
            };
            if is_supplied_elsewhere(context, location, wire) {
                continue;
            }
            let mut schema = parameter_schema(context, &mut input, parameter_at, parameter)?;
            let is_required = location == Location::Path
                || parameter.get("required").and_then(Value::as_bool) == Some(true);
            describe::ensure_description(
                &mut schema,
                &describe::parameter_guidance(wire, location, path),
            );
            let argument = claim(&mut taken, wire, Some(place));
            let (style, explode) = match context.version {
                DocVersion::Swagger2 => swagger2::style(parameter, location),
                _ => style_of(parameter, location),
            };
            if is_required {
                required.push(argument.clone());
            }
            properties.insert(argument.clone(), schema.clone());
            parameters.push(Parameter {
                name: Argument {
                    argument,
                    wire: wire.to_string(),
                },
                location,
                required: is_required,
                style,
                explode,
                schema,
            });
        }
    }
    // A path parameter the document forgot to declare is still needed.
    for wire in template_parameters(path) {
        let declared = parameters
            .iter()
            .any(|parameter| parameter.location == Location::Path && parameter.name.wire == wire);
        if !declared {
            let argument = claim(&mut taken, &wire, Some("path"));
            let schema = json!({
                "type": "string",
                "description": describe::parameter_guidance(&wire, Location::Path, path),
            });
            required.push(argument.clone());
            properties.insert(argument.clone(), schema.clone());
            parameters.push(Parameter {
                name: Argument { argument, wire },
                location: Location::Path,
                required: true,
                style: Style::Simple,
                explode: false,
                schema,
            });
        }
    }

    // The body.
    let body_source = match context.version {
        DocVersion::Swagger2 => {
            let consumes = own_or_inherited(operation, "consumes", &context.consumes);
            if let Some((parameter_at, parameter)) = body_parameter {
                let media_type = consumes
                    .iter()
                    .find(|media| is_json(media))
                    .or(consumes.first())
                    .cloned()
                    .unwrap_or_else(|| "application/json".to_string());
                let schema = parameter.get("schema").cloned().unwrap_or(json!({}));
                Some(BodySource {
                    kind: body_kind(&media_type, &schema),
                    media_type,
                    required: parameter.get("required").and_then(Value::as_bool) == Some(true),
                    schema_at: parameter_at.child("schema"),
                    schema,
                    description: parameter
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    parameter: parameter
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            } else if !form_parameters.is_empty() {
                let has_file = form_parameters
                    .iter()
                    .any(|parameter| parameter.get("type").and_then(Value::as_str) == Some("file"));
                let multipart = has_file
                    || consumes
                        .iter()
                        .any(|media| media.starts_with("multipart/form-data"));
                let media_type = if multipart {
                    "multipart/form-data"
                } else {
                    "application/x-www-form-urlencoded"
                };
                let required = form_parameters.iter().any(|parameter| {
                    parameter.get("required").and_then(Value::as_bool) == Some(true)
                });
                Some(BodySource {
                    media_type: media_type.to_string(),
                    kind: if multipart {
                        BodyKind::Multipart
                    } else {
                        BodyKind::Form
                    },
                    required,
                    schema: swagger2::form_schema(&form_parameters),
                    schema_at: form_at,
                    description: None,
                    parameter: None,
                })
            } else {
                None
            }
        }
        _ => match operation.get("requestBody") {
            Some(request_body) => {
                let (body_at, request_body) =
                    resolver.follow(at.child("requestBody"), request_body)?;
                let chosen = request_body
                    .get("content")
                    .and_then(Value::as_object)
                    .and_then(|content| choose_request_media(content));
                chosen.map(|(media_type, media)| {
                    let schema = media.get("schema").cloned().unwrap_or(json!({}));
                    BodySource {
                        kind: body_kind(media_type, &schema),
                        media_type: media_type.clone(),
                        required: request_body.get("required").and_then(Value::as_bool)
                            == Some(true),
                        schema_at: body_at.child("content").child(media_type).child("schema"),
                        schema,
                        description: request_body
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        parameter: None,
                    }
                })
            }
            None => None,
        },
    };
    let mut body = None;
    if let Some(source) = body_source {
        let built = build_body(
            context,
            &mut input,
            source,
            &mut taken,
            &mut properties,
            &mut required,
            &mut hints,
        )?;
        body = Some(built);
    }

    // The answer.
    let answer = response(context, &at, operation)?;
    hints.response_media_type = answer.media_type.clone();
    if let Some((schema_at, schema)) = &answer.schema {
        describe_answer(resolver, schema_at, schema, &mut hints);
    }

    let defs = input.finish()?;
    let mut input_schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        input_schema["required"] = json!(required);
    }
    if !defs.is_empty() {
        input_schema["$defs"] = Value::Object(defs.clone());
        if let Some(body) = &mut body {
            let body: &mut RequestBody = body;
            if let Value::Object(schema) = &mut body.schema {
                schema.insert("$defs".into(), Value::Object(defs));
            }
        }
    }

    let security = match operation.get("security") {
        Some(list) => Some(security_requirements(list)),
        None => context.security.clone(),
    };
    let operation_servers = match context.version {
        DocVersion::Swagger2 => Vec::new(),
        _ => {
            let own = server_urls(operation.get("servers"));
            if own.is_empty() {
                server_urls(item.get("servers"))
            } else {
                own
            }
        }
    };
    let websocket = is_websocket(operation, path, &operation_servers);
    let output_schema = output_schema(context, &answer, websocket)?;

    Ok(Draft {
        operation: Operation {
            name: String::new(),
            method: http::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                .expect("a known method"),
            path: path.to_string(),
            operation_id: text("operationId").filter(|id| !id.trim().is_empty()),
            summary,
            description,
            tags: strings(operation.get("tags")),
            deprecated: operation.get("deprecated").and_then(Value::as_bool) == Some(true),
            tool_description: String::new(),
            input_schema,
            output_schema: Some(output_schema),
            parameters,
            body,
            response: answer.kind,
            security,
            servers: operation_servers,
            websocket,
        },
        hints,
        at,
    })
}
