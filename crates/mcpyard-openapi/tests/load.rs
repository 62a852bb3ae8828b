//! Loading documents: the LocalAI Swagger 2.0 document, documents written
//! for these tests (tests/documents/, also used by the calling tests against
//! a mock server), and bad documents.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use mcpyard_openapi::{
    default_listing, load_file, parse, ApiDocument, BodyKind, BodyShape, DocVersion, LoadError,
    LoadOptions, Location, ResponseKind,
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

/// The names a person reviewed: LocalAI's document has no `operationId`,
/// so every one is derived from method and path.
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
    assert_eq!(chat.name, "create_chat_completion");
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
    assert_eq!(job.parameters.len(), 1);
    assert_eq!(job.parameters[0].location, Location::Path);
    assert_eq!(job.input_schema["required"], json!(["uuid"]));
}

#[test]
fn localai_default_listing_is_the_curated_common_operations() {
    let doc = localai();
    let listing =
        default_listing(&doc).expect("123 operations are more than the default lists whole");
    assert_eq!(listing.len(), 22, "{listing:?}");
    for name in [
        "create_chat_completion",
        "create_embedding",
        "list_models",
        "get_system",
        "create_audio_transcription",
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
        Some(22)
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
