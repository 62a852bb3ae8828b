//! Loading documents: the LocalAI Swagger 2.0 document, documents written
//! for these tests (tests/documents/, also used by the calling tests against
//! a mock server), and bad documents.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use mcpyard_openapi::{
    default_listing, load, load_file, parse, ApiDocument, BodyKind, BodyShape, DocVersion,
    LoadError, LoadOptions, Location, ResponseKind, SecurityRequirement, SecurityScheme, Style,
    UNDESCRIBED,
};
use serde_json::{json, Value};

fn localai_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/openapi/localai-swagger.json")
}

fn options(prefix: &str) -> LoadOptions {
    LoadOptions {
        rename: BTreeMap::new(),
        prefix_len: prefix.len(),
    }
}

fn documents() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/documents")
}

fn test_document(name: &str) -> ApiDocument {
    let doc = load_file(&documents().join(name), &options("test__"))
        .unwrap_or_else(|error| panic!("{name} loads: {error}"));
    assert_schemas_compile(&doc);
    for operation in doc
        .operations
        .iter()
        .filter(|operation| !operation.websocket)
    {
        assert!(
            operation.tool_description.contains("Inputs: "),
            "{}",
            operation.tool_description
        );
        assert!(
            operation.tool_description.contains("Answer: "),
            "{}",
            operation.tool_description
        );
    }
    doc
}

fn by_name<'a>(doc: &'a ApiDocument, name: &str) -> &'a mcpyard_openapi::Operation {
    doc.operations
        .iter()
        .find(|operation| operation.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = doc
                .operations
                .iter()
                .map(|operation| operation.name.as_str())
                .collect();
            panic!("no operation {name} among {names:?}")
        })
}

fn required(operation: &mcpyard_openapi::Operation) -> Vec<&str> {
    operation.input_schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn localai() -> ApiDocument {
    load_file(&localai_path(), &options("localai__")).expect("LocalAI's document loads")
}

/// Every input schema compiles as Draft 2020-12 and accepts nothing unknown.
fn assert_schemas_compile(doc: &ApiDocument) {
    for operation in &doc.operations {
        let validator =
            jsonschema::draft202012::new(&operation.input_schema).unwrap_or_else(|error| {
                panic!(
                    "{}: input schema does not compile: {error}\n{:#}",
                    operation.name, operation.input_schema
                )
            });
        assert!(
            !validator.is_valid(&json!({ "surely_not_an_argument_xyz": 1 })),
            "{}: unknown arguments are refused",
            operation.name
        );
        if let Some(output) = &operation.output_schema {
            jsonschema::draft202012::new(output).unwrap_or_else(|error| {
                panic!(
                    "{}: output schema does not compile: {error}",
                    operation.name
                )
            });
        }
    }
}

fn operation<'a>(doc: &'a ApiDocument, method: &str, path: &str) -> &'a mcpyard_openapi::Operation {
    doc.operations
        .iter()
        .find(|operation| operation.method.as_str() == method && operation.path == path)
        .unwrap_or_else(|| panic!("{method} {path} is an operation"))
}

/// The names a person reviewed: LocalAI's document has no `operationId`;
/// its operations take LocalAiMCP's names (the curated names in
/// `curated.rs`), which its users already know.
#[test]
fn localai_operations_become_123_distinct_reviewed_names() {
    let doc = localai();
    assert_eq!(doc.version, DocVersion::Swagger2);
    assert_eq!(doc.title, "LocalAI API");
    let paths: HashSet<&str> = doc
        .operations
        .iter()
        .map(|operation| operation.path.as_str())
        .collect();
    assert_eq!(paths.len(), 114);
    assert_eq!(doc.operations.len(), 123);
    let names: HashSet<&str> = doc
        .operations
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    assert_eq!(names.len(), 123, "names are distinct");
    for name in &names {
        assert!(
            name.len() + "localai__".len() <= 64,
            "{name} fits with its prefix"
        );
        assert!(name.chars().all(|character| character.is_ascii_lowercase()
            || character.is_ascii_digit()
            || character == '_'));
    }
    let listing: String = doc
        .operations
        .iter()
        .map(|operation| {
            format!(
                "{:<7}{:<52}{}\n",
                operation.method.as_str(),
                operation.path,
                operation.name
            )
        })
        .collect();
    insta::assert_snapshot!("localai_names", listing);
}

#[test]
fn localai_schemas_compile_and_descriptions_state_inputs_and_answer() {
    let doc = localai();
    assert_schemas_compile(&doc);
    let websockets: Vec<&str> = doc
        .operations
        .iter()
        .filter(|operation| operation.websocket)
        .map(|operation| operation.path.as_str())
        .collect();
    assert_eq!(
        websockets,
        [
            "/audio/transformations/stream",
            "/ws/backend-logs/{modelId}"
        ]
    );
    for operation in doc
        .operations
        .iter()
        .filter(|operation| !operation.websocket)
    {
        let description = &operation.tool_description;
        assert!(
            description.contains("Inputs: "),
            "{}: {description}",
            operation.name
        );
        assert!(
            description.contains("Answer: "),
            "{}: {description}",
            operation.name
        );
        for required in operation.input_schema["required"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let required = required.as_str().unwrap();
            assert!(
                description.contains(&format!("`{required}` (required)")),
                "{}: names its required input {required}: {description}",
                operation.name
            );
        }
        // Every argument says what it is.
        for (argument, schema) in operation.input_schema["properties"].as_object().unwrap() {
            let described = schema
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|text| !text.is_empty());
            assert!(
                described,
                "{}: `{argument}` has a description",
                operation.name
            );
        }
    }
}

#[test]
fn localai_chat_completions_flattens_the_request_object() {
    let doc = localai();
    let chat = operation(&doc, "POST", "/v1/chat/completions");
    assert_eq!(chat.name, "chat");
    let body = chat.body.as_ref().expect("a body");
    assert_eq!(body.kind, BodyKind::Json);
    assert_eq!(body.media_type, "application/json");
    let BodyShape::Fields(fields) = &body.shape else {
        panic!(
            "the request object's fields are arguments: {:?}",
            body.shape
        )
    };
    let names: Vec<&str> = fields.iter().map(|field| field.argument.as_str()).collect();
    assert!(
        names.contains(&"model") && names.contains(&"messages"),
        "{names:?}"
    );
    assert_eq!(chat.response, ResponseKind::Json);
    assert!(
        chat.tool_description.contains("`schema.OpenAIRequest`"),
        "{}",
        chat.tool_description
    );
    let output = chat.output_schema.as_ref().expect("an output schema");
    assert!(
        output["properties"]["data"]["properties"]
            .get("choices")
            .is_some(),
        "{output:#}"
    );
    let validator = jsonschema::draft202012::new(&chat.input_schema).unwrap();
    // The document marks `file` (for whisper) required in its request object; kept as written.
    assert!(validator.is_valid(
        &json!({ "model": "m", "file": "", "messages": [{ "role": "user", "content": "hi" }] })
    ));
    assert!(!validator.is_valid(&json!({ "model": 3 })));
}

#[test]
fn localai_multipart_and_binary_operations() {
    let doc = localai();
    let profile = operation(&doc, "POST", "/api/voice-profiles");
    let body = profile.body.as_ref().unwrap();
    assert_eq!(body.kind, BodyKind::Multipart);
    assert_eq!(body.file_arguments, ["audio"]);
    let required: Vec<&str> = profile.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        required,
        ["audio", "consent_confirmed", "name", "transcript"]
    );
    assert_eq!(
        profile.input_schema["properties"]["consent_confirmed"]["type"],
        "boolean"
    );

    let speech = operation(&doc, "POST", "/v1/audio/speech");
    assert_eq!(speech.response, ResponseKind::Binary);
    assert!(
        speech.tool_description.contains("audio/x-wav"),
        "{}",
        speech.tool_description
    );
    assert!(speech.tool_description.contains("saved_path"));

    // A path parameter the document does not declare is still an argument.
    let job = operation(&doc, "GET", "/backends/jobs/{uuid}");
    assert!(job.input_schema["properties"]["uuid"]["description"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{UNDESCRIBED}.")));
    assert_eq!(job.parameters.len(), 1);
    assert_eq!(job.parameters[0].location, Location::Path);
    assert_eq!(job.input_schema["required"], json!(["uuid"]));
}

#[test]
fn localai_default_listing_is_the_curated_common_operations() {
    let doc = localai();
    let listing =
        default_listing(&doc).expect("123 operations are more than the default lists whole");
    assert_eq!(listing.len(), 10, "{listing:?}");
    for name in [
        "chat",
        "embed",
        "list_models",
        "get_system_info",
        "transcribe_audio",
    ] {
        assert!(
            listing.iter().any(|listed| listed == name),
            "{name} in {listing:?}"
        );
    }
    // Recognised by its paths when the title changes, by its title when paths move.
    let mut renamed = doc.clone();
    renamed.title = "My inference box".into();
    assert_eq!(
        default_listing(&renamed).map(|listing| listing.len()),
        Some(10)
    );
    let mut unknown = doc.clone();
    unknown.title = "Something else".into();
    unknown
        .operations
        .retain(|operation| operation.path != "/system");
    assert_eq!(default_listing(&unknown), Some(Vec::new()));
    unknown.operations.truncate(40);
    assert_eq!(default_listing(&unknown), None);
}

fn parse_error(text: &str) -> LoadError {
    parse("/srv/localai.json", text, None, &options("x__")).expect_err("the document is refused")
}

#[test]
fn a_broken_ref_names_the_file_and_the_pointer() {
    let error = parse_error(
        r##"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/v1/chat": {"post": {
            "requestBody": {"$ref": "#/components/schemas/Nope"}, "responses": {"200": {"description": "ok"}}}}}}"##,
    );
    assert_eq!(
        error.to_string(),
        "/srv/localai.json: #/paths/~1v1~1chat/post/requestBody: $ref `#/components/schemas/Nope` points nowhere"
    );
    // Inside a schema, deep down.
    let error = parse_error(
        r##"{"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"post": {
            "parameters": [{"in": "body", "name": "b", "schema": {"type": "object", "properties": {"x": {"$ref": "#/definitions/X"}}}}],
            "responses": {"200": {"description": "ok"}}}}}}"##,
    );
    assert_eq!(
        error.to_string(),
        "/srv/localai.json: #/paths/~1a/post/parameters/0/schema/properties/x: $ref `#/definitions/X` points nowhere"
    );
}

#[test]
fn documents_that_are_not_openapi_are_refused_with_the_place() {
    let cases = [
        (
            r#"{"openapi": "4.0.0", "paths": {}}"#,
            "/srv/localai.json: #/openapi: unknown version `openapi: 4.0.0`",
        ),
        (
            r#"{"swagger": "1.2", "paths": {}}"#,
            "/srv/localai.json: #/swagger: unknown version `swagger: 1.2`",
        ),
        (
            r#"{"name": "package.json, not an API"}"#,
            "/srv/localai.json: #: not an OpenAPI document",
        ),
        ("[1, 2]", "/srv/localai.json: #: not an OpenAPI document"),
        (
            "{\n  \"openapi\": \"3.1.0\",\n  \"paths\": {,}\n}",
            "/srv/localai.json: not valid JSON at line 3, column",
        ),
        (
            "openapi: 3.1.0\npaths:\n  /a: [\n",
            "/srv/localai.json: not valid YAML at line",
        ),
        (
            r#"{"openapi": "3.1.0", "paths": []}"#,
            "/srv/localai.json: #/paths: `paths` is not an object",
        ),
    ];
    for (text, expected) in cases {
        let message = parse_error(text).to_string();
        assert!(
            message.starts_with(expected),
            "{message:?} starts with {expected:?}"
        );
    }
    let missing =
        load_file(Path::new("/nonexistent/mcpyard/api.yaml"), &options("x__")).unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("/nonexistent/mcpyard/api.yaml: cannot read the document:"),
        "{missing}"
    );
}

fn accepts(schema: &Value, instance: Value) -> bool {
    jsonschema::draft202012::new(schema)
        .expect("compiles")
        .is_valid(&instance)
}

#[test]
fn swagger2_tree_document() {
    let doc = test_document("swagger2-trees.json");
    assert_eq!(doc.version, DocVersion::Swagger2);
    assert_eq!(doc.servers, ["/api"]);
    assert_eq!(doc.security_schemes["basic"], SecurityScheme::Basic);
    assert_eq!(
        doc.security_schemes["api_key"],
        SecurityScheme::ApiKey {
            location: Location::Header,
            name: "X-API-Key".into()
        }
    );
    let names: Vec<&str> = doc
        .operations
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "list_trees",
            "plant_tree",
            "get_tree",
            "update_tree",
            "delete_tree",
            "create_tree_attachment",
            "get_tree_render",
            "list_tree_events",
            "create_session"
        ]
    );

    // Query styles from collectionFormat; the Accept header is the gateway's.
    let list = by_name(&doc, "list_trees");
    let styles: Vec<(&str, Style, bool)> = list
        .parameters
        .iter()
        .map(|parameter| {
            (
                parameter.name.wire.as_str(),
                parameter.style,
                parameter.explode,
            )
        })
        .collect();
    assert_eq!(
        styles,
        [
            ("depth", Style::Form, true),
            ("tag", Style::Form, true),
            ("fields", Style::Form, false)
        ]
    );
    assert_eq!(
        list.security.as_deref(),
        Some(
            &[SecurityRequirement {
                schemes: vec![("api_key".into(), vec![])]
            }][..]
        )
    );

    // The recursive body: a `$defs` entry, not an endless inlining.
    let plant = by_name(&doc, "plant_tree");
    let schema = &plant.input_schema;
    assert_eq!(
        schema["properties"]["children"]["items"]["$ref"],
        "#/$defs/Node"
    );
    assert!(schema["$defs"]["Node"]["properties"]["children"].is_object());
    assert!(
        schema["properties"].get("id").is_none(),
        "readOnly fields are not inputs: {schema:#}"
    );
    assert_eq!(
        schema["properties"]["weight"]["type"],
        json!(["number", "null"])
    );
    assert_eq!(schema["properties"]["weight"]["exclusiveMinimum"], 0);
    assert_eq!(schema["properties"]["name"]["examples"], json!(["root"]));
    assert!(accepts(
        schema,
        json!({ "name": "a", "children": [{ "name": "b", "children": [{ "name": "c" }] }] })
    ));
    assert!(
        !accepts(
            schema,
            json!({ "name": "a", "children": [{ "children": [] }] })
        ),
        "a nested node needs a name"
    );
    assert!(
        plant.tool_description.contains("`Node`"),
        "{}",
        plant.tool_description
    );
    // Output schemas are cut short: a cycle there accepts anything.
    assert_eq!(
        plant.output_schema.as_ref().unwrap()["properties"]["data"]["properties"]["children"]
            ["items"],
        json!({})
    );

    // `id` in the path and in the body.
    let update = by_name(&doc, "update_tree");
    assert_eq!(required(update), ["id", "body_id", "name"]);
    assert_eq!(update.input_schema["properties"]["id"]["type"], "integer");
    assert_eq!(
        update.input_schema["properties"]["body_id"]["type"],
        "string"
    );
    let Some(BodyShape::Fields(fields)) = update.body.as_ref().map(|body| &body.shape) else {
        panic!("fields")
    };
    assert!(fields
        .iter()
        .any(|field| field.argument == "body_id" && field.wire == "id"));

    let get = by_name(&doc, "get_tree");
    let headers: Vec<&str> = get
        .parameters
        .iter()
        .filter(|parameter| parameter.location == Location::Header)
        .map(|parameter| parameter.name.wire.as_str())
        .collect();
    assert_eq!(headers, ["X-Request-Id"]);

    assert!(
        by_name(&doc, "delete_tree").security == Some(Vec::new()),
        "security: [] is none"
    );

    let attach = by_name(&doc, "create_tree_attachment");
    let body = attach.body.as_ref().unwrap();
    assert_eq!(
        (body.kind, body.media_type.as_str()),
        (BodyKind::Multipart, "multipart/form-data")
    );
    assert_eq!(body.file_arguments, ["file"]);
    assert_eq!(required(attach), ["id", "file"]);
    assert!(attach.input_schema["properties"]["file"]["description"]
        .as_str()
        .unwrap()
        .contains("data:"));

    let render = by_name(&doc, "get_tree_render");
    assert_eq!(render.response, ResponseKind::Binary);
    assert!(
        render.tool_description.contains("`image/png`"),
        "{}",
        render.tool_description
    );
    assert_eq!(
        by_name(&doc, "list_tree_events").response,
        ResponseKind::EventStream
    );
    assert!(by_name(&doc, "list_tree_events")
        .tool_description
        .contains("`events`"));

    let login = by_name(&doc, "create_session");
    let body = login.body.as_ref().unwrap();
    assert_eq!(body.kind, BodyKind::Form);
    assert_eq!(
        login.security.as_deref(),
        Some(
            &[SecurityRequirement {
                schemes: vec![("basic".into(), vec![])]
            }][..]
        )
    );
}

#[test]
fn openapi31_list_document_in_yaml() {
    let doc = test_document("openapi31-lists.yaml");
    assert_eq!(doc.version, DocVersion::OpenApi31);
    assert_eq!(doc.servers, ["http://127.0.0.1:4010/v1"]);
    assert_eq!(doc.security_schemes["bearer"], SecurityScheme::Bearer);
    let names: Vec<&str> = doc
        .operations
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "list_lists",
            "create_list",
            "get_list",
            "delete_list",
            "upload_picture",
            "get_picture",
            "put_picture",
            "stream_completion",
            "get_note"
        ]
    );

    let list = by_name(&doc, "list_lists");
    let filter = &list.parameters[0];
    assert_eq!((filter.style, filter.explode), (Style::DeepObject, true));
    assert_eq!(
        list.input_schema["properties"]["filter"]["properties"]["kind"]["const"],
        "linked"
    );

    let create = by_name(&doc, "create_list");
    let schema = &create.input_schema;
    assert_eq!(required(create), ["value"]);
    assert_eq!(
        schema["properties"]["label"]["type"],
        json!(["string", "null"])
    );
    assert!(accepts(
        schema,
        json!({ "value": 1, "next": { "value": 2, "next": { "value": 3, "next": null } } })
    ));
    assert!(!accepts(
        schema,
        json!({ "value": 1, "next": { "value": "two" } })
    ));
    assert!(schema["$defs"].get("ListNode").is_some());

    assert_eq!(by_name(&doc, "delete_list").security, Some(Vec::new()));
    assert_eq!(
        by_name(&doc, "get_list").security.as_ref().map(Vec::len),
        Some(1)
    );

    let upload = by_name(&doc, "upload_picture");
    let body = upload.body.as_ref().unwrap();
    assert_eq!(body.kind, BodyKind::Multipart);
    assert_eq!(body.file_arguments, ["picture"]);

    assert_eq!(by_name(&doc, "get_picture").response, ResponseKind::Binary);
    let put = by_name(&doc, "put_picture");
    let body = put.body.as_ref().unwrap();
    assert_eq!(
        (body.kind, &body.shape),
        (BodyKind::Binary, &BodyShape::Whole("body".into()))
    );
    assert_eq!(body.file_arguments, ["body"]);
    assert_eq!(required(put), ["name", "body"]);

    assert_eq!(
        by_name(&doc, "stream_completion").response,
        ResponseKind::EventStream
    );
    assert_eq!(by_name(&doc, "get_note").response, ResponseKind::Text);
}

#[test]
fn openapi30_security_schemes_and_overrides() {
    let doc = test_document("openapi30-secure.json");
    assert_eq!(doc.version, DocVersion::OpenApi30);
    let scheme = |name: &str| doc.security_schemes[name].clone();
    assert_eq!(scheme("bearerAuth"), SecurityScheme::Bearer);
    assert_eq!(scheme("basicAuth"), SecurityScheme::Basic);
    assert_eq!(
        scheme("headerKey"),
        SecurityScheme::ApiKey {
            location: Location::Header,
            name: "X-API-Key".into()
        }
    );
    assert_eq!(
        scheme("queryKey"),
        SecurityScheme::ApiKey {
            location: Location::Query,
            name: "api_key".into()
        }
    );
    assert_eq!(
        scheme("cookieKey"),
        SecurityScheme::ApiKey {
            location: Location::Cookie,
            name: "session".into()
        }
    );

    let security = |method: &str, path: &str| -> Vec<Vec<String>> {
        operation(&doc, method, path)
            .security
            .iter()
            .flatten()
            .map(|requirement| {
                requirement
                    .schemes
                    .iter()
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .collect()
    };
    assert_eq!(security("GET", "/me"), [["bearerAuth"]]);
    assert_eq!(security("GET", "/admin/stats"), [["basicAuth"]]);
    assert_eq!(security("GET", "/reports"), [["headerKey"], ["queryKey"]]);
    assert_eq!(security("GET", "/session"), [["cookieKey"]]);
    assert!(security("GET", "/health").is_empty());
    assert_eq!(security("POST", "/items"), [["bearerAuth", "headerKey"]]);

    // The API key the scheme supplies is not an argument.
    assert!(operation(&doc, "GET", "/reports").parameters.is_empty());
    // A $ref'd parameter, request body and response.
    let me = operation(&doc, "GET", "/me");
    assert_eq!(me.parameters[0].name.wire, "verbose");
    assert_eq!(
        me.input_schema["properties"]["verbose"]["description"],
        "Say more."
    );
    let items = operation(&doc, "POST", "/items");
    assert_eq!(required(items), ["name"]);
    let properties = &items.input_schema["properties"];
    assert_eq!(properties["note"]["type"], json!(["string", "null"]));
    assert_eq!(properties["color"]["enum"], json!(["red", "green", null]));
    assert_eq!(properties["price"]["exclusiveMinimum"], 0);
    assert!(properties["price"].get("minimum").is_none());
    assert_eq!(properties["name"]["examples"], json!(["lamp"]));
    assert_eq!(items.response, ResponseKind::Json);
    assert_eq!(
        items.output_schema.as_ref().unwrap()["properties"]["data"]["properties"]["name"]["type"],
        "string"
    );
}

#[test]
fn references_to_another_file_next_to_the_document() {
    let doc = test_document("openapi30-external.yaml");
    let get = by_name(&doc, "get_pet");
    assert_eq!(get.parameters[0].name.wire, "petId");
    assert_eq!(
        get.input_schema["properties"]["petId"]["description"],
        "The pet's id."
    );
    let update = by_name(&doc, "update_pet");
    assert_eq!(required(update), ["petId", "name"]);
    let owner = &update.input_schema["properties"]["owner"];
    assert_eq!(
        owner["properties"]["pets"]["items"]["$ref"], "#/$defs/Pet",
        "{owner:#}"
    );
    assert!(accepts(
        &update.input_schema,
        json!({ "petId": 1, "name": "rex", "owner": { "name": "ann", "pets": [{ "name": "rex" }] } })
    ));

    // Read as text without a folder, the other file cannot be followed.
    let text = std::fs::read_to_string(documents().join("openapi30-external.yaml")).unwrap();
    let error = parse("pets.yaml", &text, None, &options("x__"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("pets.yaml: #/paths/~1pets~1{petId}/"),
        "{error}"
    );
    assert!(error.contains(": $ref to `shared/common.yaml`: references to other files are followed only for a document read from a file"), "{error}");
    // A file that is not there.
    let broken = text.replace("shared/common.yaml", "shared/missing.yaml");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pets.yaml");
    std::fs::write(&path, broken).unwrap();
    let error = load_file(&path, &options("x__")).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{}: #/paths/~1pets~1{{petId}}/", path.display())),
        "{error}"
    );
    assert!(
        error.contains(": $ref to `shared/missing.yaml`: cannot read it"),
        "{error}"
    );
}

#[test]
fn rename_map_and_name_length() {
    let path = documents().join("swagger2-trees.json");
    let mut rename = BTreeMap::new();
    rename.insert("plant_tree".to_string(), "sow".to_string());
    let doc = load_file(
        &path,
        &LoadOptions {
            rename: rename.clone(),
            prefix_len: 6,
        },
    )
    .unwrap();
    assert!(doc
        .operations
        .iter()
        .any(|operation| operation.name == "sow" && operation.path == "/trees"));

    rename.insert("plant_trees".to_string(), "x".to_string());
    let error = load_file(
        &path,
        &LoadOptions {
            rename,
            prefix_len: 6,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("rename: `plant_trees` names no operation of the document (similar names:"),
        "{error}"
    );

    // A long prefix leaves 14 characters: names are cut, stay unique and stable.
    let short = load_file(&path, &options(&"p".repeat(50))).unwrap();
    let names: HashSet<&str> = short
        .operations
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    assert_eq!(names.len(), short.operations.len());
    assert!(names.iter().all(|name| name.len() <= 14), "{names:?}");
    let again = load_file(&path, &options(&"p".repeat(50))).unwrap();
    assert!(again
        .operations
        .iter()
        .zip(&short.operations)
        .all(|(a, b)| a.name == b.name));
}

/// Serves `routes` (path → status and body) over HTTP/1.1 on a loopback
/// port, one request per connection, until the returned task is aborted.
async fn serve(routes: Vec<(&'static str, u16, String)>) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut head = Vec::new();
            let mut buffer = [0u8; 1024];
            while !head.windows(4).any(|window| window == b"\r\n\r\n") {
                match socket.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => head.extend_from_slice(&buffer[..read]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let (status, body) = routes
                .iter()
                .find(|(route, _, _)| *route == path)
                .map(|(_, status, body)| (*status, body.clone()))
                .unwrap_or((404, "not here".to_string()));
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (base, task)
}

#[tokio::test]
async fn load_reads_urls_and_files() {
    let lists = std::fs::read_to_string(documents().join("openapi31-lists.yaml")).unwrap();
    let external = std::fs::read_to_string(documents().join("openapi30-external.yaml")).unwrap();
    let (base, server) = serve(vec![
        ("/openapi.yaml", 200, lists),
        ("/pets.yaml", 200, external),
        ("/broken", 500, "oops".into()),
    ])
    .await;

    let doc = load(&format!("{base}/openapi.yaml"), &options("x__"))
        .await
        .expect("loads over HTTP");
    assert_eq!(doc.origin, format!("{base}/openapi.yaml"));
    assert_eq!(doc.operations.len(), 9);

    let missing = load(&format!("{base}/nothing.json"), &options("x__"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        missing,
        format!("{base}/nothing.json: cannot read the document: HTTP status 404 Not Found")
    );
    let failing = load(&format!("{base}/broken"), &options("x__"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        failing.ends_with("HTTP status 500 Internal Server Error"),
        "{failing}"
    );
    let relative = load(&format!("{base}/pets.yaml"), &options("x__"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        relative.contains(
            "references to other files are followed only for a document read from a file"
        ),
        "{relative}"
    );
    server.abort();

    let refused = load(&format!("{base}/openapi.yaml"), &options("x__"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.starts_with(&format!("{base}/openapi.yaml: cannot read the document:")),
        "{refused}"
    );

    let path = documents().join("swagger2-trees.json");
    let doc = load(path.to_str().unwrap(), &options("x__"))
        .await
        .expect("loads a file");
    assert_eq!(doc.operations.len(), 9);
}

/// A long chain of references, cycles through several schemas and a loop of
/// aliases: loading neither overflows the stack nor inlines forever, and
/// the schemas validate deep instances.
#[test]
fn pathological_references_stay_finite() {
    let mut schemas = serde_json::Map::new();
    let chain = 3_000;
    for index in 0..chain {
        let next = if index + 1 < chain {
            json!({ "$ref": format!("#/components/schemas/S{}", index + 1) })
        } else {
            json!({ "type": "string" })
        };
        schemas.insert(
            format!("S{index}"),
            json!({ "type": "object", "properties": { "next": next } }),
        );
    }
    schemas.insert(
        "A".into(),
        json!({ "type": "object", "properties": { "b": { "$ref": "#/components/schemas/B" } } }),
    );
    schemas.insert(
        "B".into(),
        json!({ "type": "object", "properties": { "c": { "$ref": "#/components/schemas/C" } } }),
    );
    schemas.insert("C".into(), json!({ "type": "object", "properties": { "a": { "$ref": "#/components/schemas/A" }, "n": { "type": "integer" } } }));
    let body = |schema: &str| {
        json!({
            "requestBody": { "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } },
            "responses": { "200": { "description": "ok", "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } } }
        })
    };
    let document = json!({
        "openapi": "3.1.0",
        "info": { "title": "deep", "version": "1" },
        "paths": { "/chain": { "post": body("S0") }, "/cycle": { "post": body("A") } },
        "components": { "schemas": schemas },
    });
    let doc = parse("deep.json", &document.to_string(), None, &options("x__")).expect("loads");
    assert_schemas_compile(&doc);

    // An instance 200 levels deep goes through dozens of `$defs`.
    let chain_schema = &doc.operations[0].input_schema;
    let mut instance = json!({});
    let mut wrong = json!({ "next": 5 });
    for _ in 0..200 {
        instance = json!({ "next": instance });
        wrong = json!({ "next": wrong });
    }
    let validator = jsonschema::draft202012::new(chain_schema).unwrap();
    assert!(validator.is_valid(&instance));
    assert!(
        !validator.is_valid(&wrong),
        "200 levels down, `next` is an object"
    );

    let cycle = &doc.operations[1].input_schema;
    assert!(accepts(
        cycle,
        json!({ "b": { "c": { "a": { "b": { "c": { "n": 1 } } } } } })
    ));
    assert!(!accepts(
        cycle,
        json!({ "b": { "c": { "a": { "b": { "c": { "n": "one" } } } } } })
    ));

    let mut looping = document.clone();
    looping["components"]["schemas"]["S5"] = json!({ "$ref": "#/components/schemas/S6" });
    looping["components"]["schemas"]["S6"] = json!({ "$ref": "#/components/schemas/S5" });
    let error = parse("loop.json", &looping.to_string(), None, &options("x__"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("loop.json: #/components/schemas/S"),
        "{error}"
    );
    assert!(error.ends_with("$ref chain loops"), "{error}");
}

/// Parameters merged from the path item and the operation (the operation's
/// win), a path item that is a `$ref`, bodies that stay whole.
#[test]
fn parameters_merge_and_bodies_stay_whole_when_not_objects() {
    let document = json!({
        "openapi": "3.0.3",
        "info": { "title": "merge", "version": "1" },
        "paths": {
            "/things/{id}": {
                "parameters": [
                    { "name": "id", "in": "path", "required": true, "schema": { "type": "string" }, "description": "From the path item." },
                    { "name": "trace", "in": "header", "schema": { "type": "string" } }
                ],
                "post": {
                    "operationId": "addThings",
                    "parameters": [
                        { "name": "id", "in": "path", "required": true, "schema": { "type": "integer" }, "description": "From the operation." },
                        { "name": "id", "in": "query", "schema": { "type": "boolean" } },
                        { "name": "body", "in": "query", "schema": { "type": "string" } },
                        { "name": "Authorization", "in": "header", "schema": { "type": "string" } },
                        { "name": "prefs", "in": "cookie", "content": { "application/json": { "schema": { "type": "object" } } } }
                    ],
                    "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "array", "items": { "type": "string" } } } } },
                    "responses": { "204": { "description": "done" } }
                },
                "put": {
                    "operationId": "setThing",
                    "requestBody": { "content": { "application/json": { "schema": { "oneOf": [{ "type": "string" }, { "type": "object" }] } } } },
                    "responses": { "default": { "description": "whatever" } }
                },
                "patch": {
                    "operationId": "noteThing",
                    "requestBody": { "required": true, "content": { "text/plain": { "schema": { "type": "string" } } } },
                    "responses": { "200": { "description": "ok" } }
                }
            },
            "/aliased": { "$ref": "#/paths/~1things~1{id}" }
        }
    });
    let doc = parse("merge.json", &document.to_string(), None, &options("x__")).expect("loads");
    assert_schemas_compile(&doc);
    let add = operation(&doc, "POST", "/things/{id}");
    let wires: Vec<(&str, &str, Location)> = add
        .parameters
        .iter()
        .map(|parameter| {
            (
                parameter.name.argument.as_str(),
                parameter.name.wire.as_str(),
                parameter.location,
            )
        })
        .collect();
    assert_eq!(
        wires,
        [
            ("id", "id", Location::Path),
            ("query_id", "id", Location::Query),
            ("body", "body", Location::Query),
            ("trace", "trace", Location::Header),
            ("prefs", "prefs", Location::Cookie),
        ]
    );
    assert_eq!(
        add.input_schema["properties"]["id"]["type"], "integer",
        "the operation's wins"
    );
    assert_eq!(
        add.input_schema["properties"]["id"]["description"],
        "From the operation."
    );
    let body = add.body.as_ref().unwrap();
    assert_eq!(
        body.shape,
        BodyShape::Whole("body_2".into()),
        "`body` is a query parameter already"
    );
    assert_eq!(required(add), ["id", "body_2"]);
    assert_eq!(add.input_schema["properties"]["body_2"]["type"], "array");
    assert_eq!(add.response, ResponseKind::Unknown);

    let set = operation(&doc, "PUT", "/things/{id}");
    assert_eq!(
        set.body.as_ref().unwrap().shape,
        BodyShape::Whole("body".into())
    );
    assert!(required(set) == ["id"], "an optional body is optional");
    let note = operation(&doc, "PATCH", "/things/{id}");
    assert_eq!(note.body.as_ref().unwrap().kind, BodyKind::Text);

    // The aliased path item has the same operations (and operationIds):
    // the shorter path keeps the names, the other gets the method added.
    assert_eq!(doc.operations.len(), 6);
    let names = |path: &str| -> Vec<&str> {
        doc.operations
            .iter()
            .filter(|operation| operation.path == path)
            .map(|operation| operation.name.as_str())
            .collect()
    };
    assert_eq!(names("/aliased"), ["set_thing", "add_things", "note_thing"]);
    assert_eq!(
        names("/things/{id}"),
        ["set_thing_put", "add_things_post", "note_thing_patch"]
    );
}
