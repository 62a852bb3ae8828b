//! HTTP APIs as tools, end to end: the real gateway binary loads real
//! documents and calls real HTTP services: Prism (which rejects any
//! request its document does not allow), the llama.cpp OpenAI server,
//! mcpo serving mcp-server-time, and a small Python service with binary,
//! multipart, recursive and streaming operations.

#[path = "support/openapi.rs"]
mod openapi_support;
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use mcpyard_client::{McpClient, RequestOptions};
use mcpyard_openapi::{ApiDocument, LoadOptions};
use openapi_support::{
    example_arguments, localai_document, localai_document_for_prism, prism_accepted,
    prism_requests, start_prism,
};
use serde_json::{json, Value};
use support::*;

/// Every test turns the local-model tools off: they would probe loopback
/// ports and add tools of their own.
const NO_INFERENCE: &str = "[inference]\nenabled = false\n\n";

/// The gateway's search tools, listed whenever a tool is hidden.
const GATEWAY_TOOLS: [&str; 3] = [
    "mcpyard__list_tools",
    "mcpyard__search_tools",
    "mcpyard__call_tool",
];

/// The document as the gateway loads it with the prefix `prefix`.
fn load(document: &Path, prefix: &str) -> ApiDocument {
    mcpyard_openapi::load_file(
        document,
        &LoadOptions {
            prefix_len: prefix.len(),
            ..LoadOptions::default()
        },
    )
    .expect("load the document")
}

fn api_table(name: &str, document: &Path, base_url: &str, extra: &str) -> String {
    format!(
        "[apis.{name}]\nspec = {}\nbase_url = {}\n{extra}\n",
        path_str(document),
        toml_str(base_url)
    )
}

async fn list_tools(client: &McpClient) -> Vec<Value> {
    client
        .list_all("tools/list", "tools")
        .await
        .expect("tools/list")
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Waits until the gateway lists at least one tool starting with `prefix`.
async fn wait_for_prefix(client: &McpClient, prefix: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let tools = list_tools(client).await;
        if names(&tools).iter().any(|n| n.starts_with(prefix)) {
            return tools;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no `{prefix}` tool listed within a minute: {:?}",
            names(&tools)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The envelope of an API call's result.
fn envelope(result: &Value) -> &Value {
    &result["structuredContent"]
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// `tools/call` with a progress token; the result or the JSON-RPC error.
async fn call_with_progress(client: &McpClient, name: &str, args: Value) -> Value {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": args, "_meta": {"progressToken": "p-1"}})),
            RequestOptions {
                timeout: Some(Duration::from_secs(120)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("tools/call {name} failed: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn localai_becomes_123_tools_and_the_default_lists_a_curated_few() {
    let dir = scratch();
    let document = localai_document();
    let (_prism, port) = start_prism(
        &localai_document_for_prism(dir.path()),
        dir.path(),
        "localai",
    )
    .await;
    let base = format!("http://127.0.0.1:{port}");

    // Every operation listed.
    let all = dir.path().join("all");
    std::fs::create_dir_all(&all).unwrap();
    let config = format!(
        "{NO_INFERENCE}{}",
        api_table("localai", &document, &base, "expose = \"*\"")
    );
    let gw = Gateway::start(&config, &all).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_prefix(&client, "localai__").await;
    let api_names: Vec<String> = names(&tools)
        .into_iter()
        .filter(|n| n.starts_with("localai__"))
        .collect();
    assert_eq!(api_names.len(), 123, "{api_names:?}");
    let distinct: BTreeSet<&String> = api_names.iter().collect();
    assert_eq!(distinct.len(), 123, "names are not distinct");
    assert!(api_names.iter().all(|n| n.len() <= 64), "{api_names:?}");
    for name in GATEWAY_TOOLS {
        assert!(
            !api_names.iter().any(|n| n == name) && !names(&tools).iter().any(|n| n == name),
            "{name} is listed although nothing is hidden"
        );
    }
    drop(client);
    drop(gw);

    // The default: a curated list, plus the search tools for the rest.
    let defaults = dir.path().join("default");
    std::fs::create_dir_all(&defaults).unwrap();
    let config = format!(
        "{NO_INFERENCE}{}",
        api_table("localai", &document, &base, "")
    );
    let gw = Gateway::start(&config, &defaults).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_prefix(&client, "localai__").await;
    let listed = names(&tools);
    let listed_api = listed.iter().filter(|n| n.starts_with("localai__")).count();
    let loaded = load(&document, "localai__");
    let curated = mcpyard_openapi::default_listing(&loaded).expect("LocalAI has a curated list");
    let expected = loaded
        .operations
        .iter()
        .filter(|op| curated.iter().any(|c| c == &op.name))
        .count();
    assert!(
        (10..=30).contains(&expected),
        "the curated list has {expected} operations"
    );
    assert_eq!(listed_api, expected, "{listed:?}");
    for name in GATEWAY_TOOLS {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} missing: {listed:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_localai_http_operation_is_accepted_by_prism() {
    let dir = scratch();
    let document = localai_document();
    let (prism, port) = start_prism(
        &localai_document_for_prism(dir.path()),
        dir.path(),
        "localai",
    )
    .await;
    let config = format!(
        "{NO_INFERENCE}{}",
        api_table(
            "localai",
            &document,
            &format!("http://127.0.0.1:{port}"),
            "expose = \"*\""
        )
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_prefix(&client, "localai__").await;
    let loaded = load(&document, "localai__");
    let http_operations: Vec<_> = loaded
        .operations
        .iter()
        .filter(|op| !op.websocket)
        .collect();
    assert_eq!(http_operations.len(), 121);

    let mut failures = Vec::new();
    for op in http_operations {
        let name = format!("localai__{}", op.name);
        let tool = tools
            .iter()
            .find(|t| t["name"] == json!(name))
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let args = example_arguments(&tool["inputSchema"]);
        let (seen_before, accepted_before) = (prism_requests(&prism), prism_accepted(&prism));
        let result = call(&client, &name, args.clone()).await;
        let seen = prism_requests(&prism) - seen_before;
        let accepted = prism_accepted(&prism) - accepted_before;
        let status = envelope(&result)["status_code"].as_u64();
        // Prism cannot mock every answer (no response declared, a media
        // type it cannot write: a 500 after validation); the request
        // passing its validation is what this test is about.
        let answered = status.is_some_and(|s| (200..300).contains(&s))
            || (status == Some(500) && first_text(&result).contains("stoplight.io/prism/errors"));
        if seen != 1 || accepted != 1 || !answered {
            failures.push(format!(
                "{} {} ({name}) with {args}: {seen} request(s), {accepted} valid: {}",
                op.method,
                op.path,
                first_text(&result)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 121 operations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn localai_openai_operations_work_against_llama_cpp() {
    let dir = scratch();
    let (_llama, port) = start_llama(dir.path()).await;
    let document = localai_document();
    let config = format!(
        "{NO_INFERENCE}{}",
        api_table(
            "localai",
            &document,
            &format!("http://127.0.0.1:{port}"),
            "expose = \"*\""
        )
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({})).await;
    wait_for_prefix(&client, "localai__").await;
    let loaded = load(&document, "localai__");
    let tool = |method: &str, path: &str| {
        let op = loaded
            .operations
            .iter()
            .find(|op| op.method.as_str() == method && op.path == path)
            .unwrap_or_else(|| panic!("no {method} {path}"));
        format!("localai__{}", op.name)
    };

    let models = call(&client, &tool("GET", "/v1/models"), json!({})).await;
    assert!(!is_error(&models), "{models}");
    let ids: Vec<&str> = envelope(&models)["data"]["data"]
        .as_array()
        .expect("a model list")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"tiny-chat"), "{ids:?}");

    // LocalAI's document marks `file` (for whisper) required in every
    // OpenAI request; llama.cpp's server ignores it.
    let chat = tool("POST", "/v1/chat/completions");
    let answer = call(
        &client,
        &chat,
        json!({"model": "tiny-chat", "file": "", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}),
    )
    .await;
    assert!(!is_error(&answer), "{answer}");
    assert_eq!(envelope(&answer)["ok"], json!(true));
    assert!(
        envelope(&answer)["data"]["choices"][0]["message"].is_object(),
        "{answer}"
    );

    let completion = call(
        &client,
        &tool("POST", "/v1/completions"),
        json!({"model": "tiny-chat", "file": "", "prompt": "Once upon", "max_tokens": 4}),
    )
    .await;
    assert!(!is_error(&completion), "{completion}");
    assert!(
        envelope(&completion)["data"]["choices"][0]["text"].is_string(),
        "{completion}"
    );

    let embedding = call(
        &client,
        &tool("POST", "/v1/embeddings"),
        json!({"model": "tiny-embed", "file": "", "input": "a sentence"}),
    )
    .await;
    assert!(!is_error(&embedding), "{embedding}");
    let vector = envelope(&embedding)["data"]["data"][0]["embedding"]
        .as_array()
        .expect("an embedding");
    assert!(!vector.is_empty());

    // A streamed chat: the events gathered in the result, and each sent as
    // progress while it arrived.
    let streamed = call_with_progress(
        &client,
        &chat,
        json!({"model": "tiny-chat", "file": "", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 6, "stream": true}),
    )
    .await;
    assert!(!is_error(&streamed), "{streamed}");
    let events = envelope(&streamed)["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {streamed}"));
    assert!(events.len() >= 2, "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e.to_string().contains("chat.completion.chunk")),
        "{events:?}"
    );
    let progress = recorder.notifications_named("notifications/progress");
    assert!(
        progress
            .iter()
            .filter(|p| p["progressToken"] == json!("p-1"))
            .count()
            >= 2,
        "{progress:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcpo_service_turns_back_into_tools() {
    let dir = scratch();
    let port = free_port();
    let mut cmd = Command::new(tool("venv-mcpo/bin/mcpo"));
    cmd.args(["--host", "127.0.0.1", "--port", &port.to_string(), "--"])
        .arg(tool("venv-time/bin/python"))
        .args(["-m", "mcp_server_time", "--local-timezone", "UTC"]);
    let _mcpo = Proc::spawn("mcpo", cmd, &dir.path().join("mcpo.log"));
    wait_port(port, Duration::from_secs(60)).await;

    // The document comes from the service itself, at start.
    let config = format!(
        "{NO_INFERENCE}[apis.time]\nspec = \"http://127.0.0.1:{port}/openapi.json\"\nexpose = \"*\"\n"
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_prefix(&client, "time__").await;
    let time_tools: Vec<String> = names(&tools)
        .into_iter()
        .filter(|n| n.starts_with("time__"))
        .collect();
    assert_eq!(time_tools.len(), 2, "{time_tools:?}");
    let current = time_tools
        .iter()
        .find(|n| n.contains("current_time"))
        .unwrap_or_else(|| panic!("{time_tools:?}"));
    let result = call(&client, current, json!({"timezone": "UTC"})).await;
    assert!(!is_error(&result), "{result}");
    let datetime = envelope(&result)["data"]["datetime"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"));
    let then = iso8601_to_unix(datetime).expect("an ISO 8601 time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - then).abs() < 60, "{datetime}");

    let convert = time_tools
        .iter()
        .find(|n| n.contains("convert"))
        .unwrap_or_else(|| panic!("{time_tools:?}"));
    let result = call(
        &client,
        convert,
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    )
    .await;
    assert!(!is_error(&result), "{result}");
    assert!(
        envelope(&result)["data"]["target"]["datetime"]
            .as_str()
            .is_some_and(|t| t.contains("T21:00")),
        "{result}"
    );
}

/// The Python test peer: (process, port).
async fn start_peer(dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new("python3");
    cmd.arg(support_file("openapi_peer.py"))
        .arg(port.to_string());
    let p = Proc::spawn("openapi peer", cmd, &dir.join("peer.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port)
}

/// Requests the peer has served, asked over a plain HTTP/1.0 exchange.
fn peer_requests(port: u16) -> u64 {
    peer_get(port, "/count")["requests"].as_u64().unwrap()
}

/// `GET path` of the peer's own bookkeeping (not counted as a request).
fn peer_get(port: u16, path: &str) -> Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("reach the peer");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str::<Value>(body).unwrap()
}

/// The README's LocalAI example through the binary, against a real HTTP
/// service: the key arrives on an operation the document requires nothing
/// for, a `base64:` file part carries the type its bytes show, and the
/// status tells an API that answers from one whose base URL does not.
#[tokio::test(flavor = "multi_thread")]
async fn localai_key_file_types_and_reachability_through_the_binary() {
    use base64::Engine as _;
    let dir = scratch();
    let (_peer, port) = start_peer(dir.path()).await;
    let document = localai_document();
    let key = "sk-e2e-5c7d11";
    let config = format!(
        "{NO_INFERENCE}{}{}[apis.peer]\nspec = \"http://127.0.0.1:{port}/openapi.json\"\nexpose = \"*\"\n",
        api_table(
            "localai",
            &document,
            &format!("http://127.0.0.1:{port}"),
            r#"auth = { bearer = "${LOCALAI_API_KEY}" }"#
        ),
        api_table(
            "gone",
            &document,
            &format!("http://127.0.0.1:{}", free_port()),
            ""
        ),
    );
    let gw = Gateway::start_with_env(&config, dir.path(), &[("LOCALAI_API_KEY", key)]).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &[
            "localai__chat",
            "localai__get_system_info",
            "peer__upload_file",
        ],
        Duration::from_secs(60),
    )
    .await;

    // The peer is no LocalAI: it answers 404, after reading the header.
    call(&client, "localai__get_system_info", json!({})).await;
    assert_eq!(
        peer_get(port, "/last-authorization")["authorization"],
        json!(format!("Bearer {key}"))
    );

    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nrest-of-image");
    let upload = call(
        &client,
        "peer__upload_file",
        json!({"file": format!("base64:{png}"), "label": "typed"}),
    )
    .await;
    assert!(!is_error(&upload), "{upload}");
    let file = &envelope(&upload)["data"]["received"]["file"];
    assert_eq!(file["content_type"], json!("image/png"), "{upload}");

    let status = call(&client, "mcpyard__status", json!({})).await;
    let source = |name: &str| {
        status["structuredContent"]["sources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("{name} in {status}"))
            .clone()
    };
    assert_eq!(source("localai")["state"], json!("ready"), "{status}");
    assert_eq!(source("gone")["state"], json!("unreachable"), "{status}");
    assert_eq!(source("gone")["healthy"], json!(false), "{status}");
    assert!(!status.to_string().contains(key));
    assert!(!gw.proc.log_text().contains(key), "the key in the log");
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_multipart_recursive_and_streamed_answers_from_a_real_service() {
    let dir = scratch();
    let (_peer, port) = start_peer(dir.path()).await;
    let output = dir.path().join("output");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    std::fs::write(inputs.join("note.txt"), "from the input roots").unwrap();
    let config = format!(
        "[inference]\nenabled = false\ninput_roots = [{}]\noutput_dir = {}\n\n[apis.peer]\nspec = \"http://127.0.0.1:{port}/openapi.json\"\nexpose = \"*\"\n",
        path_str(&inputs),
        path_str(&output)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({})).await;
    wait_for_tools(
        &client,
        &[
            "peer__get_image",
            "peer__upload_file",
            "peer__count_nodes",
            "peer__stream_events",
        ],
        Duration::from_secs(60),
    )
    .await;

    // A small image comes back inline, as an image block.
    let small = call(&client, "peer__get_image", json!({"size": 64})).await;
    assert!(!is_error(&small), "{small}");
    let image = small["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == json!("image"))
        .unwrap_or_else(|| panic!("no image block: {small}"));
    assert_eq!(image["mimeType"], json!("image/png"));
    assert!(image["data"].as_str().is_some_and(|d| !d.is_empty()));

    // A large one is saved under the output folder.
    let size = 3 * 1024 * 1024;
    let large = call(&client, "peer__get_image", json!({"size": size})).await;
    assert!(!is_error(&large), "{large}");
    let saved = envelope(&large)["saved_path"]
        .as_str()
        .unwrap_or_else(|| panic!("not saved: {large}"));
    assert!(Path::new(saved).starts_with(&output), "{saved}");
    assert_eq!(std::fs::metadata(saved).unwrap().len(), size);
    assert_eq!(envelope(&large)["size_bytes"], json!(size));
    assert_eq!(envelope(&large)["mime_type"], json!("image/png"));

    // Multipart: a data: URL and a path under the input roots.
    let upload = call(
        &client,
        "peer__upload_file",
        json!({"file": "data:text/plain;base64,aGVsbG8=", "label": "greeting"}),
    )
    .await;
    assert!(!is_error(&upload), "{upload}");
    let received = &envelope(&upload)["data"]["received"];
    assert_eq!(received["file"]["text"], json!("hello"), "{upload}");
    assert_eq!(received["label"], json!("greeting"));
    let upload = call(
        &client,
        "peer__upload_file",
        json!({"file": inputs.join("note.txt").display().to_string(), "label": "note"}),
    )
    .await;
    assert!(!is_error(&upload), "{upload}");
    assert_eq!(
        envelope(&upload)["data"]["received"]["file"]["text"],
        json!("from the input roots")
    );

    // A recursive body.
    let tree =
        json!({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]});
    let counted = call(&client, "peer__count_nodes", tree).await;
    assert!(!is_error(&counted), "{counted}");
    assert_eq!(envelope(&counted)["data"]["nodes"], json!(4));

    // Server-sent events: gathered, and sent as progress while they came.
    let streamed = call_with_progress(&client, "peer__stream_events", json!({})).await;
    assert!(!is_error(&streamed), "{streamed}");
    let events = envelope(&streamed)["events"].as_array().unwrap();
    assert_eq!(events.len(), 3, "{streamed}");
    assert!(events[2].to_string().contains('2'), "{events:?}");
    let progress = recorder.notifications_named("notifications/progress");
    assert!(progress.len() >= 3, "{progress:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_arguments_send_nothing() {
    let dir = scratch();
    let (_peer, port) = start_peer(dir.path()).await;
    let config = format!(
        "{NO_INFERENCE}[apis.peer]\nspec = \"http://127.0.0.1:{port}/openapi.json\"\nexpose = \"*\"\n"
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["peer__get_image"], Duration::from_secs(60)).await;
    let before = peer_requests(port);
    for args in [json!({}), json!({"size": "large"}), json!({"size": 2})] {
        let result = call(&client, "peer__get_image", args.clone()).await;
        assert!(is_error(&result), "{args} was accepted: {result}");
        assert!(first_text(&result).contains("size"), "{result}");
    }
    let result = call(&client, "peer__count_nodes", json!({"children": []})).await;
    assert!(is_error(&result), "{result}");
    let result = call(
        &client,
        "peer__count_nodes",
        json!({"value": 1, "children": [{"children": []}]}),
    )
    .await;
    assert!(
        is_error(&result),
        "a nested node without a value was accepted: {result}"
    );
    assert_eq!(
        peer_requests(port),
        before,
        "a rejected call reached the service"
    );
}

/// A document whose operations each need one kind of credential.
const SECURED: &str = r##"openapi: 3.0.3
info: {title: Secured, version: "1.0"}
components:
  securitySchemes:
    token: {type: http, scheme: bearer}
    login: {type: http, scheme: basic}
    headerKey: {type: apiKey, in: header, name: X-Api-Key}
    queryKey: {type: apiKey, in: query, name: api_key}
  schemas:
    Ok:
      type: object
      properties: {ok: {type: boolean}}
      example: {ok: true}
x-responses: &ok
  "200":
    description: Done
    content: {application/json: {schema: {$ref: "#/components/schemas/Ok"}}}
  "401":
    description: No credentials
paths:
  /bearer: {get: {operationId: with_bearer, summary: Needs a bearer token, security: [{token: []}], responses: *ok}}
  /basic: {get: {operationId: with_basic, summary: Needs a login, security: [{login: []}], responses: *ok}}
  /header-key: {get: {operationId: with_header_key, summary: Needs a header key, security: [{headerKey: []}], responses: *ok}}
  /query-key: {get: {operationId: with_query_key, summary: Needs a query key, security: [{queryKey: []}], responses: *ok}}
  /open: {get: {operationId: open_door, summary: Needs nothing, security: [], responses: *ok}}
"##;

#[tokio::test(flavor = "multi_thread")]
async fn credentials_from_the_environment_reach_the_service_and_a_missing_one_sends_nothing() {
    let dir = scratch();
    let document = dir.path().join("secured.yaml");
    std::fs::write(&document, SECURED).unwrap();
    let (prism, port) = start_prism(&document, dir.path(), "secured").await;
    let config = format!(
        "{NO_INFERENCE}{}",
        api_table(
            "secured",
            &document,
            &format!("http://127.0.0.1:{port}"),
            "expose = \"*\"\nauth = { token = \"${TEST_TOKEN}\", login = \"${TEST_LOGIN}\", headerKey = \"${TEST_HEADER_KEY}\", queryKey = \"${TEST_QUERY_KEY:-}\" }"
        )
    );
    let secrets = [
        ("TEST_TOKEN", "tok-5f1d2c"),
        ("TEST_LOGIN", "ada:pw-8842"),
        ("TEST_HEADER_KEY", "hk-77aa31"),
    ];
    let gw = Gateway::start_with_env(&config, dir.path(), &secrets).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["secured__with_bearer"], Duration::from_secs(60)).await;

    for name in ["with_bearer", "with_basic", "with_header_key", "open_door"] {
        let before = prism_requests(&prism);
        let result = call(&client, &format!("secured__{name}"), json!({})).await;
        assert!(!is_error(&result), "{name}: {result}");
        assert_eq!(
            envelope(&result)["status_code"],
            json!(200),
            "{name}: {result}"
        );
        assert_eq!(prism_requests(&prism), before + 1, "{name}");
    }
    // Prism answers 401 without the credential; mcpyard must not get there.
    let before = prism_requests(&prism);
    let result = call(&client, "secured__with_query_key", json!({})).await;
    assert!(is_error(&result), "{result}");
    assert!(first_text(&result).contains("queryKey"), "{result}");
    assert_eq!(
        prism_requests(&prism),
        before,
        "a call without its credential was sent"
    );

    // No secret in the gateway's log or its status.
    let status = call(&client, "mcpyard__status", json!({})).await;
    let log = gw.proc.log_text();
    for (_, secret) in secrets {
        assert!(!log.contains(secret), "{secret} in the log");
        assert!(
            !status.to_string().contains(secret),
            "{secret} in the status"
        );
    }
}

/// Runs `mcpyard check` on `config`; (success, stdout, stderr).
fn check(dir: &Path, config: &str) -> (bool, String, String) {
    check_with_env(dir, config, &[])
}

/// `mcpyard check` with these variables set.
fn check_with_env(dir: &Path, config: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let file = dir.join("mcpyard.toml");
    std::fs::write(&file, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.arg("check").arg("--config").arg(&file);
    cmd.envs(env.iter().copied());
    run(cmd, Duration::from_secs(30))
}

/// A configuration of LocalAI's document (behind a port nothing answers
/// on: `check` starts nothing) with `extra` in its table.
fn localai_config(document: &Path, extra: &str) -> String {
    format!(
        "{NO_INFERENCE}{}",
        api_table("localai", document, "http://127.0.0.1:9", extra)
    )
}

/// LocalAiMCP's configuration words work here: its tool names in
/// `expose`, and `gateway-only` (none listed, all through search).
#[test]
fn localaimcp_names_and_gateway_only_are_accepted_at_start() {
    let dir = scratch();
    let document = localai_document();
    for expose in [
        r#"expose = ["chat", "get_system_info", "text_to_speech", "generate_image", "list_models"]"#,
        r#"expose = "gateway-only""#,
    ] {
        let (ok, stdout, stderr) = check(dir.path(), &localai_config(&document, expose));
        assert!(ok, "{expose}: {stdout}\n{stderr}");
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("localai"))
            .unwrap_or_else(|| panic!("{stdout}"));
        let listed = if expose.contains("gateway-only") {
            0
        } else {
            5
        };
        assert!(
            line.contains(&format!("{listed} listed")),
            "{expose}: {line}"
        );
    }
}

/// The README's LocalAI example: the document declares `BearerAuth` and no
/// operation lists `security`; `check` says every operation gets the key.
#[test]
fn check_says_which_operations_get_which_credential() {
    let dir = scratch();
    let document = localai_document();
    let secret = "sk-check-91ab27";
    let (ok, stdout, stderr) = check_with_env(
        dir.path(),
        &localai_config(&document, r#"auth = { bearer = "${LOCALAI_API_KEY}" }"#),
        &[("LOCALAI_API_KEY", secret)],
    );
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("credentials: 123 operation(s) get BearerAuth (header Authorization: Bearer, from auth.bearer)"),
        "{stdout}"
    );
    assert!(stdout.contains("no `security`"), "{stdout}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
}

#[test]
fn check_reports_each_api_and_its_thin_documentation() {
    let dir = scratch();
    let document = localai_document();
    let (ok, stdout, stderr) = check(dir.path(), &localai_config(&document, ""));
    assert!(ok, "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("localai"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("123 operations"), "{line}");
    let loaded = load(&document, "localai__");
    let audit = mcpyard_openapi::audit(&loaded);
    assert!(!audit.undescribed_fields.is_empty());
    assert!(
        stdout.contains(&format!(
            "{} inputs without a description",
            audit.undescribed_fields.len()
        )),
        "{stdout}"
    );

    // An `expose` name that matches nothing is an error at start.
    let (ok, _, stderr) = check(
        dir.path(),
        &localai_config(&document, "expose = [\"no_such_operation\"]"),
    );
    assert!(!ok);
    assert!(
        stderr.contains("apis.localai.expose[0]") && stderr.contains("no_such_operation"),
        "{stderr}"
    );
}

#[test]
fn bad_documents_fail_at_start_with_the_file_and_the_place() {
    let dir = scratch();
    let cases = [
        ("not-openapi.json", r#"{"hello": "world"}"#, ""),
        (
            "broken-ref.json",
            r##"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}}}}}}"##,
            "/paths/~1a/get",
        ),
        (
            "unknown-version.json",
            r#"{"openapi": "4.0.0", "info": {"title": "t", "version": "1"}, "paths": {}}"#,
            "/openapi",
        ),
    ];
    for (file, text, pointer) in cases {
        let document = dir.path().join(file);
        std::fs::write(&document, text).unwrap();
        let config = format!(
            "{NO_INFERENCE}{}",
            api_table("bad", &document, "http://127.0.0.1:9", "")
        );
        let (ok, stdout, stderr) = check(dir.path(), &config);
        assert!(!ok, "{file} passed check: {stdout}");
        assert!(stderr.contains(file), "{file}: {stderr}");
        assert!(stderr.contains(pointer), "{file}: no {pointer} in {stderr}");

        // `serve` refuses to start, saying the same.
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
        cmd.arg("serve")
            .arg("--config")
            .arg(dir.path().join("mcpyard.toml"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", free_port()));
        let (ok, _, stderr) = run(cmd, Duration::from_secs(30));
        assert!(!ok, "serve started with {file}");
        assert!(stderr.contains(file), "{file}: {stderr}");
    }
}
