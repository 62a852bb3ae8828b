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
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::refs::Location as At;
use super::{swagger2, LoadError, LoadOptions, Resolver, MAX_TOOL_NAME_LEN};
use crate::describe::{self, Hints};
use crate::model::{
    ApiDocument, Argument, BodyKind, BodyShape, DocVersion, Location, Operation, Parameter,
    RequestBody, ResponseKind, SecurityRequirement, SecurityScheme, Style,
};
use crate::naming::{self, NameSource};
use crate::schema::{self, Direction, SchemaBuilder};

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const PLUMBING_HEADERS: [&str; 4] = ["authorization", "content-type", "accept", "content-length"];
/// Appended to the description of every file argument.
pub(crate) const FILE_GUIDANCE: &str = "A file: a `data:<mime>;base64,...` URL, `base64:...`, an `http(s)://` URL, or a path under the gateway's input roots.";

/// What the whole document gives every operation.
struct Context<'r> {
    resolver: &'r Resolver,
    version: DocVersion,
    consumes: Vec<String>,
    produces: Vec<String>,
    security: Option<Vec<SecurityRequirement>>,
    security_schemes: BTreeMap<String, SecurityScheme>,
    /// Output schemas by the referenced answer schema they were made from:
    /// large documents answer the same object from many operations.
    output_schemas: RefCell<HashMap<At, Value>>,
}

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

/// Names the JSON answer's object and top-level fields for the description.
fn describe_answer(resolver: &Resolver, at: &At, schema: &Value, hints: &mut Hints) {
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

fn reference_name(reference: &str) -> String {
    reference
        .rsplit('/')
        .next()
        .unwrap_or(reference)
        .replace("~1", "/")
        .replace("~0", "~")
}

/// A body as the document declares it, before it becomes arguments.
struct BodySource {
    media_type: String,
    kind: BodyKind,
    required: bool,
    schema_at: At,
    schema: Value,
    description: Option<String>,
    /// Swagger 2.0's `in: body` parameter name.
    parameter: Option<String>,
}

fn build_body(
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

struct Field {
    name: String,
    /// The object schema the field is a property of.
    owner: At,
    at: At,
    schema: Value,
}

struct Fields {
    fields: Vec<Field>,
    required: Vec<String>,
}

/// The top-level properties of an object body (through `$ref`s and `allOf`),
/// or `None` when the body is not such an object (arrays, scalars, unions,
/// free-form maps).
fn object_fields<'a>(
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

fn is_file_schema(resolver: &Resolver, at: &At, schema: &Value) -> bool {
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
fn file_schema(converted: &Value) -> Value {
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

fn parameter_schema(
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

fn style_of(parameter: &Value, location: Location) -> (Style, bool) {
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

/// Headers the gateway sets itself, and API keys a security scheme supplies.
fn is_supplied_elsewhere(context: &Context<'_>, location: Location, wire: &str) -> bool {
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
fn claim(taken: &mut HashSet<String>, wire: &str, place: Option<&str>) -> String {
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

fn parameter_key(parameter: &Value) -> (String, String) {
    let field = |key: &str| {
        parameter
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (field("name"), field("in"))
}

fn template_parameters(path: &str) -> Vec<String> {
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

fn is_json(media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json") || essence.ends_with("/json")
}

fn body_kind(media_type: &str, schema: &Value) -> BodyKind {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
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
fn choose_request_media(content: &Map<String, Value>) -> Option<(&String, &Value)> {
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

/// The declared 2xx answer.
struct Answer {
    kind: ResponseKind,
    media_type: Option<String>,
    /// Where the JSON answer's schema is, when there is one.
    schema: Option<(At, Value)>,
}

fn response(context: &Context<'_>, at: &At, operation: &Value) -> Result<Answer, LoadError> {
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

fn response_kind(media_type: &str) -> ResponseKind {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
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
fn output_schema(
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

fn build_output_schema(
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
fn strip_descriptions(schema: &mut Value) {
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

fn is_websocket(operation: &Value, path: &str, servers: &[String]) -> bool {
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

fn security_schemes(
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

fn security_requirements(list: &Value) -> Vec<SecurityRequirement> {
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
fn server_urls(servers: Option<&Value>) -> Vec<String> {
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
fn own_or_inherited(operation: &Value, key: &str, inherited: &[String]) -> Vec<String> {
    let own = strings(operation.get(key));
    if own.is_empty() {
        inherited.to_vec()
    } else {
        own
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}
