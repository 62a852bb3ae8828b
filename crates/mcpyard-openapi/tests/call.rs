//! Calling operations through a real gateway against a real HTTP server on
//! 127.0.0.1 that records every request: what goes on the wire for each
//! parameter style and body kind, credentials, validation, answers, files,
//! WebSocket exchanges and cancellation.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use mcpyard_openapi::{
    Argument, BodyKind, BodyShape, Location, RequestBody, SecurityRequirement, SecurityScheme,
    Style,
};
use serde_json::{json, Value};
use support::*;

fn arg(name: &str) -> Argument {
    Argument {
        argument: name.to_owned(),
        wire: name.to_owned(),
    }
}

fn body(kind: BodyKind, media: &str, shape: BodyShape, files: &[&str]) -> RequestBody {
    RequestBody {
        media_type: media.to_owned(),
        kind,
        required: true,
        shape,
        parameter: None,
        file_arguments: files.iter().map(|f| f.to_string()).collect(),
        schema: json!({}),
    }
}

fn tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("in")).expect("input root");
    dir
}

#[tokio::test]
async fn parameters_go_on_the_wire_in_their_styles() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut o = op("styles", "GET", "/items/{id}/{label}/{matrix}");
    o.parameters = vec![
        param("id", Location::Path, Style::Simple, false),
        param("label", Location::Path, Style::Label, false),
        param("matrix", Location::Path, Style::Matrix, true),
        param("tags", Location::Query, Style::Form, true),
        param("ids", Location::Query, Style::Form, false),
        param("spaced", Location::Query, Style::SpaceDelimited, false),
        param("piped", Location::Query, Style::PipeDelimited, false),
        param("filter", Location::Query, Style::DeepObject, true),
        param("q", Location::Query, Style::Form, true),
        param("X-Trace", Location::Header, Style::Simple, false),
        param("session", Location::Cookie, Style::Form, false),
        param("prefs", Location::Cookie, Style::Form, false),
    ];
    o.response = mcpyard_openapi::ResponseKind::Json;
    let mut config = config("shop", dir.path());
    config.headers = BTreeMap::from([("X-Team".to_owned(), "blue".to_owned())]);
    let h = Harness::new(config, document(&server.url, vec![o])).await;
    let r = h
        .call(
            "styles",
            json!({
                "id": "a b/c", "label": [1, 2], "matrix": ["x", "y"],
                "tags": ["a", "b"], "ids": [1, 2], "spaced": ["x", "y"], "piped": ["x", "y"],
                "filter": {"color": "red", "size": {"min": 1}}, "q": "a&b=c é",
                "X-Trace": [1, 2], "session": "abc", "prefs": ["a", "b"],
            }),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.path, "/items/a%20b%2Fc/.1,2/;matrix=x;matrix=y");
    assert_eq!(
        seen.query.as_deref(),
        Some("tags=a&tags=b&ids=1,2&spaced=x%20y&piped=x|y&filter[color]=red&filter[size][min]=1&q=a%26b%3Dc%20%C3%A9")
    );
    assert_eq!(seen.header("x-trace").as_deref(), Some("1,2"));
    assert_eq!(
        seen.header("cookie").as_deref(),
        Some("session=abc; prefs=a,b")
    );
    assert_eq!(seen.header("x-team").as_deref(), Some("blue"));
    // The declared answer is asked for, so a server that negotiates sends it.
    assert_eq!(seen.header("accept").as_deref(), Some("application/json"));
    assert_eq!(r["structuredContent"]["data"], json!({"ok": true}));
    assert_eq!(r["structuredContent"]["status_code"], json!(200));
}

#[tokio::test]
async fn bodies_are_sent_in_their_media_types() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut json_op = op("patch_item", "PATCH", "/items/{id}");
    json_op.parameters = vec![param("id", Location::Path, Style::Simple, false)];
    json_op.body = Some(body(
        BodyKind::Json,
        "application/merge-patch+json",
        BodyShape::Fields(vec![
            Argument {
                argument: "body_id".into(),
                wire: "id".into(),
            },
            arg("tags"),
        ]),
        &[],
    ));
    let mut form_op = op("login", "POST", "/login");
    form_op.body = Some(body(
        BodyKind::Form,
        "application/x-www-form-urlencoded",
        BodyShape::Fields(vec![arg("user"), arg("scopes")]),
        &[],
    ));
    let mut text_op = op("note", "PUT", "/note");
    text_op.body = Some(body(
        BodyKind::Text,
        "text/plain",
        BodyShape::Whole("body".into()),
        &[],
    ));
    let h = Harness::new(
        config("shop", dir.path()),
        document(&server.url, vec![json_op, form_op, text_op]),
    )
    .await;

    let r = h
        .call("patch_item", json!({"id": 7, "body_id": 8, "tags": ["x"]}))
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("PATCH", "/items/7")
    );
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&seen.body).expect("json body"),
        json!({"id": 8, "tags": ["x"]})
    );
    server.clear();

    let r = h
        .call("login", json!({"user": "ann lee&co", "scopes": ["a", "b"]}))
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        String::from_utf8(seen.body).expect("utf8"),
        "scopes=a&scopes=b&user=ann%20lee%26co"
    );
    server.clear();

    let r = h.call("note", json!({"body": "hello\nworld"})).await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.header("content-type").as_deref(), Some("text/plain"));
    assert_eq!(seen.body, b"hello\nworld");
}

#[tokio::test]
async fn multipart_parts_carry_fields_and_files() {
    let server = Recorder::start().await;
    let dir = tempdir();
    std::fs::write(dir.path().join("in/voice.wav"), b"RIFF-wave-bytes").expect("write");
    let mut o = op("upload", "POST", "/upload");
    o.body = Some(body(
        BodyKind::Multipart,
        "multipart/form-data",
        BodyShape::Fields(vec![
            arg("image"),
            arg("audio"),
            arg("model"),
            arg("options"),
        ]),
        &["image", "audio"],
    ));
    let h = Harness::new(config("media", dir.path()), document(&server.url, vec![o])).await;
    let image = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    let audio = dir.path().join("in/voice.wav");
    let r = h
        .call(
            "upload",
            json!({"image": image, "audio": audio.to_string_lossy(), "model": "whisper-1", "options": {"beam": 2}}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let parts = multipart_parts(&server.only());
    assert_eq!(parts.len(), 4, "{parts:?}");
    let find = |name: &str| part(&parts, name);
    let (head, data) = find("image");
    assert!(head.contains("filename=\"image.png\""), "{head}");
    assert!(head.contains("Content-Type: image/png"), "{head}");
    assert_eq!(data, PNG);
    let (head, data) = find("audio");
    assert!(head.contains("filename=\"voice.wav\""), "{head}");
    assert_eq!(data, b"RIFF-wave-bytes");
    let (head, data) = find("model");
    assert!(!head.contains("filename"), "{head}");
    assert_eq!(data, b"whisper-1");
    let (head, data) = find("options");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    assert_eq!(data, br#"{"beam":2}"#);
}

/// The parts of a recorded multipart request: (headers, content).
fn multipart_parts(seen: &Recorded) -> Vec<(String, Vec<u8>)> {
    let content_type = seen.header("content-type").expect("content type");
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .expect("multipart content type");
    split_multipart(&seen.body, boundary)
}

/// The part named `name`.
fn part(parts: &[(String, Vec<u8>)], name: &str) -> (String, Vec<u8>) {
    parts
        .iter()
        .find(|(h, _)| h.contains(&format!("name=\"{name}\"")))
        .unwrap_or_else(|| panic!("part {name} in {parts:?}"))
        .clone()
}

/// The parts of a multipart body: (headers, content).
fn split_multipart(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delimiter = format!("--{boundary}");
    let text = body;
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = find(rest, delimiter.as_bytes()) {
        rest = &rest[start + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let end = find(rest, delimiter.as_bytes()).expect("a closing delimiter");
        let part = &rest[2..end - 2]; // after CRLF, before CRLF
        let split = find(part, b"\r\n\r\n").expect("part headers");
        parts.push((
            String::from_utf8_lossy(&part[..split]).into_owned(),
            part[split + 4..].to_vec(),
        ));
        rest = &rest[end..];
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[tokio::test]
async fn binary_bodies_take_base64_and_urls_on_the_same_host_only() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut o = op("put_blob", "PUT", "/blob");
    o.body = Some(body(
        BodyKind::Binary,
        "application/octet-stream",
        BodyShape::Whole("file".into()),
        &["file"],
    ));
    let h = Harness::new(config("store", dir.path()), document(&server.url, vec![o])).await;

    let r = h.call("put_blob", json!({"file": "base64:aGVsbG8="})).await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/octet-stream")
    );
    assert_eq!(seen.body, b"hello");
    server.clear();

    let url = format!("{}/files/blob", server.url);
    let r = h.call("put_blob", json!({"file": url})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(server.only().body, BLOB);
    server.clear();

    // A redirect to another host is not followed, and nothing is sent.
    let url = format!("{}/files/elsewhere", server.url);
    let r = h.call("put_blob", json!({"file": url})).await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("redirected"), "{r}");
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn file_paths_outside_the_input_roots_are_refused() {
    let server = Recorder::start().await;
    let dir = tempdir();
    std::fs::write(dir.path().join("secret.txt"), b"private").expect("write");
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        dir.path().join("in/link.txt"),
    )
    .expect("symlink");
    let mut o = op("put_blob", "PUT", "/blob");
    o.body = Some(body(
        BodyKind::Binary,
        "application/octet-stream",
        BodyShape::Whole("file".into()),
        &["file"],
    ));
    let h = Harness::new(config("store", dir.path()), document(&server.url, vec![o])).await;
    for path in [
        dir.path().join("secret.txt"),
        dir.path().join("in/../secret.txt"),
        dir.path().join("in/link.txt"),
    ] {
        let r = h
            .call("put_blob", json!({"file": path.to_string_lossy()}))
            .await;
        assert!(is_error(&r), "{r}");
        let t = text(&r);
        assert!(
            t.contains("input_roots") && t.contains("Nothing was sent"),
            "{t}"
        );
        assert!(!t.contains("private"), "{t}");
    }
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_anything_is_sent() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut o = op("list_items", "GET", "/items");
    o.parameters = vec![param("limit", Location::Query, Style::Form, true)];
    o.input_schema = json!({
        "type": "object",
        "properties": {"limit": {"type": "integer", "maximum": 100}, "kind": {"enum": ["a", "b"]}},
        "required": ["kind"],
    });
    let h = Harness::new(config("shop", dir.path()), document(&server.url, vec![o])).await;
    let r = h.call("list_items", json!({"limit": "ten"})).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("/limit:"), "{t}");
    assert!(
        t.contains("\"kind\" is a required property") || t.contains("kind"),
        "{t}"
    );
    assert!(
        t.contains("Expected schema:") && t.contains("\"maximum\":100"),
        "{t}"
    );
    assert!(t.contains("nothing was sent"), "{t}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());

    let r = h.call("list_items", json!({"limit": 5, "kind": "a"})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(server.only().query.as_deref(), Some("limit=5"));
}

const SECRETS: [&str; 5] = [
    "bearer-SECRET-1",
    "pw-SECRET-2",
    "hk-SECRET-3",
    "qk-SECRET-4",
    "ck-SECRET-5",
];

fn secured_document(server: &str) -> mcpyard_openapi::ApiDocument {
    let need = |names: &[&str]| SecurityRequirement {
        schemes: names.iter().map(|n| (n.to_string(), Vec::new())).collect(),
    };
    let with = |name: &str, alternatives: Vec<SecurityRequirement>| {
        let mut o = op(name, "GET", "/echo");
        o.security = Some(alternatives);
        o
    };
    let mut doc = document(
        server,
        vec![
            with("bearer", vec![need(&["bearerAuth"])]),
            with("basic", vec![need(&["basicAuth"])]),
            with("header_key", vec![need(&["headerKey"])]),
            with("query_key", vec![need(&["queryKey"])]),
            with("cookie_key", vec![need(&["cookieKey"])]),
            with("open", Vec::new()),
            with(
                "either",
                vec![need(&["unconfigured"]), need(&["headerKey", "queryKey"])],
            ),
            with("needs_missing", vec![need(&["unconfigured"])]),
        ],
    );
    doc.security_schemes = BTreeMap::from([
        ("bearerAuth".to_owned(), SecurityScheme::Bearer),
        ("basicAuth".to_owned(), SecurityScheme::Basic),
        (
            "headerKey".to_owned(),
            SecurityScheme::ApiKey {
                location: Location::Header,
                name: "X-API-Key".into(),
            },
        ),
        (
            "queryKey".to_owned(),
            SecurityScheme::ApiKey {
                location: Location::Query,
                name: "api_key".into(),
            },
        ),
        (
            "cookieKey".to_owned(),
            SecurityScheme::ApiKey {
                location: Location::Cookie,
                name: "sid".into(),
            },
        ),
        (
            "unconfigured".to_owned(),
            SecurityScheme::ApiKey {
                location: Location::Header,
                name: "X-Other".into(),
            },
        ),
    ]);
    doc
}

fn secured_config(dir: &std::path::Path) -> mcpyard_openapi::ApiConfig {
    let mut c = config("vault", dir);
    c.auth = mcpyard_openapi::ApiAuth {
        bearer: Some(SECRETS[0].into()),
        basic: Some(format!("ann:{}", SECRETS[1])),
        schemes: BTreeMap::from([
            ("headerKey".to_owned(), SECRETS[2].to_owned()),
            ("queryKey".to_owned(), SECRETS[3].to_owned()),
            ("cookieKey".to_owned(), SECRETS[4].to_owned()),
        ]),
    };
    c
}

fn assert_no_secret(what: &str, text: &str) {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ann:{}", SECRETS[1]));
    for s in SECRETS.iter().copied().chain([basic.as_str()]) {
        assert!(!text.contains(s), "{what} shows a credential: {text}");
    }
}

#[tokio::test]
async fn each_operation_gets_the_credentials_its_security_names() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let h = Harness::new(secured_config(dir.path()), secured_document(&server.url)).await;
    let mut results = Vec::new();
    for name in [
        "bearer",
        "basic",
        "header_key",
        "query_key",
        "cookie_key",
        "open",
        "either",
    ] {
        let r = h.call(name, json!({})).await;
        assert!(!is_error(&r), "{name}: {r}");
        results.push(r);
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 7);
    assert_eq!(
        seen[0].header("authorization").as_deref(),
        Some("Bearer bearer-SECRET-1")
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("ann:pw-SECRET-2");
    assert_eq!(
        seen[1].header("authorization"),
        Some(format!("Basic {basic}"))
    );
    assert_eq!(seen[2].header("x-api-key").as_deref(), Some("hk-SECRET-3"));
    assert_eq!(seen[3].query.as_deref(), Some("api_key=qk-SECRET-4"));
    assert_eq!(seen[4].header("cookie").as_deref(), Some("sid=ck-SECRET-5"));
    // `security: []`: nothing at all.
    assert!(seen[5].header("authorization").is_none() && seen[5].query.is_none());
    assert!(seen[5].header("x-api-key").is_none() && seen[5].header("cookie").is_none());
    // The first alternative lacks a credential: the second, both of its schemes.
    assert_eq!(seen[6].header("x-api-key").as_deref(), Some("hk-SECRET-3"));
    assert_eq!(seen[6].query.as_deref(), Some("api_key=qk-SECRET-4"));
    assert!(seen[6].header("x-other").is_none());
    // The server echoes what it got; the results never show it.
    for r in &results {
        assert_no_secret("a result", &r.to_string());
    }
    assert!(
        results[0].to_string().contains("[redacted]"),
        "{}",
        results[0]
    );

    server.clear();
    let r = h.call("needs_missing", json!({})).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("unconfigured") && t.contains("[apis.vault] auth"),
        "{t}"
    );
    assert!(t.contains("Nothing was sent"), "{t}");
    assert!(server.seen().is_empty());

    let status = h.status().await;
    assert_no_secret("the status", &status.to_string());
    let source = mcpyard_openapi::OpenApiSource::with_document(
        secured_config(dir.path()),
        secured_document(&server.url),
    );
    assert_no_secret("the source's debug form", &format!("{source:?}"));
    let api = api_status(&h, "vault").await;
    assert_eq!(api["kind"], json!("openapi"));
    assert_eq!(api["healthy"], json!(true));
    assert_eq!(api["operations"], json!(8));
    assert_eq!(api["document"]["title"], json!("Test API"));
    assert_eq!(api["document"]["version"], json!("openapi 3.1"));
    assert_eq!(api["base_url"], json!(server.url));
}

#[tokio::test]
async fn a_failed_connection_names_the_api_and_shows_no_key() {
    let dir = tempdir();
    let port = closed_port();
    let h = Harness::new(
        secured_config(dir.path()),
        secured_document(&format!("http://127.0.0.1:{port}")),
    )
    .await;
    for name in ["query_key", "bearer"] {
        let r = h.call(name, json!({})).await;
        assert!(is_error(&r), "{r}");
        let t = text(&r);
        assert!(
            t.contains("API `vault`") && t.contains("cannot connect"),
            "{t}"
        );
        assert_no_secret("a connection error", &r.to_string());
    }
}

#[tokio::test]
async fn answers_are_one_envelope_by_kind() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let ops = ["json", "text", "image", "pdf", "wav", "big", "missing"]
        .iter()
        .map(|p| op(p, "GET", &format!("/{p}")))
        .collect();
    let h = Harness::new(config("kinds", dir.path()), document(&server.url, ops)).await;

    let r = h.call("json", json!({})).await;
    let env = &r["structuredContent"];
    assert_eq!(env["ok"], json!(true));
    assert_eq!(env["data"], json!({"hello": "world"}));
    assert!(env["elapsed_ms"].is_u64(), "{env}");
    assert_eq!(
        serde_json::from_str::<Value>(&text(&r)).expect("text is the envelope"),
        *env
    );

    let r = h.call("text", json!({})).await;
    assert_eq!(r["structuredContent"]["text"], json!("plain words"));

    let r = h.call("image", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let image = r["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "image"))
        .expect("an image block");
    assert_eq!(image["mimeType"], json!("image/png"));
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(image["data"].as_str().expect("data"))
            .expect("base64"),
        PNG
    );
    assert_eq!(r["structuredContent"]["size_bytes"], json!(PNG.len()));

    let r = h.call("wav", json!({})).await;
    let audio = &r["content"][1];
    assert_eq!(audio["type"], json!("audio"), "{r}");
    assert_eq!(audio["mimeType"], json!("audio/wav"));

    let r = h.call("pdf", json!({})).await;
    let resource = &r["content"][1];
    assert_eq!(resource["type"], json!("resource"), "{r}");
    assert_eq!(resource["resource"]["mimeType"], json!("application/pdf"));
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(resource["resource"]["blob"].as_str().expect("blob"))
            .expect("base64"),
        PDF
    );
    // The text rendering does not carry the bytes twice.
    assert!(!text(&r).contains(resource["resource"]["blob"].as_str().expect("blob")));

    let r = h.call("big", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let env = &r["structuredContent"];
    let saved = std::path::PathBuf::from(env["saved_path"].as_str().expect("saved_path"));
    assert!(saved.starts_with(dir.path().join("out")), "{saved:?}");
    assert_eq!(
        std::fs::metadata(&saved).expect("saved file").len(),
        2 * 1024 * 1024
    );
    assert_eq!(env["size_bytes"], json!(2 * 1024 * 1024));
    assert_eq!(env["mime_type"], json!("application/octet-stream"));
    assert!(env.get("base64").is_none());

    let r = h.call("missing", json!({})).await;
    assert!(is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["ok"], json!(false));
    assert_eq!(r["structuredContent"]["status_code"], json!(404));
    assert_eq!(
        r["structuredContent"]["data"],
        json!({"error": "no such thing"})
    );
}

/// The note the router's size layer adds to a result it cut.
fn cut_note(r: &Value) -> String {
    r["content"]
        .as_array()
        .and_then(|blocks| blocks.last())
        .and_then(|b| b["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn an_answer_over_the_cap_is_cut_with_a_note() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut c = config("kinds", dir.path());
    c.max_response_bytes = 1000;
    let h = Harness::new(c, document(&server.url, vec![op("large", "GET", "/large")])).await;
    let r = h.call("large", json!({})).await;
    assert!(!is_error(&r), "{r}");
    // `max_response_bytes` is the size layer's limit for the source: the
    // whole result fits it, cut the same way as any source's.
    let size = serde_json::to_vec(&r).unwrap().len();
    assert!(size <= 1000, "{size} bytes");
    let env = &r["structuredContent"];
    assert_eq!(env["ok"], json!(true));
    assert!(env["text"].as_str().expect("cut text").ends_with("…[cut]"));
    assert!(env.get("data").is_none());
    let note = cut_note(&r);
    assert!(
        note.contains("max_response_bytes") && note.contains("Ask for less"),
        "{note}"
    );
}

#[tokio::test]
async fn an_event_stream_over_the_cap_is_cut_too() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut c = config("chat", dir.path());
    // The first event is 28 bytes on the wire: the cap falls in the second,
    // and reading stops there.
    c.max_response_bytes = 40;
    let h = Harness::new(
        c,
        document(&server.url, vec![op("stream", "GET", "/events")]),
    )
    .await;
    let r = h.call("stream", json!({})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["events"], json!([{"n": 1}]), "{r}");
    assert!(cut_note(&r).contains("max_response_bytes"), "{r}");
}

#[tokio::test]
async fn an_event_stream_is_collected_and_sent_as_progress() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let h = Harness::new(
        config("chat", dir.path()),
        document(&server.url, vec![op("stream", "GET", "/events")]),
    )
    .await;
    let (r, notes) = h.call_with_progress("stream", json!({})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["events"],
        json!([{"n": 1}, {"n": 2}, "done"])
    );
    let messages: Vec<&str> = notes.iter().filter_map(|n| n["message"].as_str()).collect();
    assert_eq!(
        messages,
        [r#"{"n": 1}"#, r#"{"n": 2}"#, "done"],
        "{notes:?}"
    );
    let progress: Vec<f64> = notes
        .iter()
        .filter_map(|n| n["progress"].as_f64())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);

    // Without a progress token: the same events, no notifications needed.
    let r = h.call("stream", json!({})).await;
    assert_eq!(
        r["structuredContent"]["events"].as_array().map(Vec::len),
        Some(3)
    );
}

#[tokio::test]
async fn cancelling_a_call_closes_its_request() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let h = Harness::new(
        config("slowpoke", dir.path()),
        document(&server.url, vec![op("slow", "GET", "/slow")]),
    )
    .await;
    let watched = server.clone();
    let answer = h
        .call_then_cancel("slow", json!({}), move || !watched.seen().is_empty())
        .await;
    assert!(
        answer.is_none(),
        "a cancelled request gets no answer: {answer:?}"
    );
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while !server.slow_dropped() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the server still holds the cancelled request"
    );
}

#[tokio::test]
async fn a_websocket_route_is_a_bounded_exchange() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        let seen = seen_tx.clone();
        // The error type is the handshake library's, not ours.
        #[allow(clippy::result_large_err)]
        let callback = move |req: &tokio_tungstenite::tungstenite::handshake::server::Request,
                             resp| {
            let key = req
                .headers()
                .get("x-api-key")
                .map(|v| v.to_str().unwrap_or("").to_owned());
            let _ = seen.send(format!("{} key={key:?}", req.uri()));
            Ok(resp)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(stream, callback)
            .await
            .expect("handshake");
        // Echo each opening message in capitals, then chatter on.
        for _ in 0..2 {
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                let _ = seen_tx.send(t.to_string());
                ws.send(Message::text(t.to_uppercase()))
                    .await
                    .expect("send");
            }
        }
        for i in 0..10 {
            if ws
                .send(Message::text(format!("{{\"tick\": {i}}}")))
                .await
                .is_err()
            {
                break;
            }
        }
        // Wait for the client's close.
        while let Some(Ok(m)) = ws.next().await {
            if m.is_close() {
                let _ = seen_tx.send("closed".into());
                break;
            }
        }
    });
    let dir = tempdir();
    let mut o = op("realtime", "GET", "/v1/realtime");
    o.websocket = true;
    o.parameters = vec![param("model", Location::Query, Style::Form, true)];
    o.security = Some(vec![SecurityRequirement {
        schemes: vec![("key".into(), Vec::new())],
    }]);
    let mut doc = document(&format!("http://{addr}"), vec![o]);
    doc.security_schemes = BTreeMap::from([(
        "key".to_owned(),
        SecurityScheme::ApiKey {
            location: Location::Header,
            name: "X-API-Key".into(),
        },
    )]);
    let mut c = config("voice", dir.path());
    c.auth.schemes = BTreeMap::from([("key".to_owned(), "ws-SECRET".to_owned())]);
    let h = Harness::new(c, doc).await;
    let tools = h.tools().await;
    let tool = tools
        .iter()
        .find(|t| t["name"] == "voice__realtime")
        .expect("the route is listed");
    let schema = &tool["inputSchema"]["properties"];
    assert!(
        schema["messages"].is_object() && schema["max_messages"].is_object(),
        "{schema}"
    );

    let r = h
        .call(
            "realtime",
            json!({"model": "tiny", "messages": ["hello", {"type": "start"}], "max_messages": 4, "time_limit_seconds": 5}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["structuredContent"]["messages"],
        json!(["HELLO", {"TYPE": "START"}, {"tick": 0}, {"tick": 1}])
    );
    assert_eq!(r["structuredContent"]["status_code"], json!(101));
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(s) = seen_rx.recv().await {
            seen.push(s);
            if seen.len() == 4 {
                break;
            }
        }
    })
    .await
    .expect("the server saw the exchange");
    assert_eq!(
        seen,
        [
            "/v1/realtime?model=tiny key=Some(\"ws-SECRET\")",
            "hello",
            "{\"type\":\"start\"}",
            "closed"
        ]
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("server task ends")
        .expect("server task");
}

#[tokio::test]
async fn the_base_url_comes_from_the_config_then_the_operation_then_the_document() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let dead = "http://127.0.0.1:1/nowhere";
    let mut own = op("own_server", "GET", "/json");
    own.servers = vec![format!("{}/v2", server.url)];
    let doc = document(dead, vec![own, op("doc_server", "GET", "/json")]);
    let h = Harness::new(config("servers", dir.path()), doc.clone()).await;
    let r = h.call("own_server", json!({})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(server.only().path, "/v2/json");
    let r = h.call("doc_server", json!({})).await;
    assert!(is_error(&r) && text(&r).contains("cannot connect"), "{r}");

    server.clear();
    let mut c = config("servers", dir.path());
    c.base_url = Some(format!("{}/v3/", server.url));
    let h = Harness::new(c, doc).await;
    for name in ["own_server", "doc_server"] {
        let r = h.call(name, json!({})).await;
        assert!(!is_error(&r), "{r}");
    }
    let paths: Vec<String> = server.seen().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v3/json", "/v3/json"]);

    // A relative server is resolved against the document's URL; read from
    // a file, it cannot be, and the message says what to set.
    server.clear();
    let mut doc = document("/v4", vec![op("relative", "GET", "/json")]);
    doc.origin = format!("{}/specs/openapi.json", server.url);
    let h = Harness::new(config("servers", dir.path()), doc.clone()).await;
    let r = h.call("relative", json!({})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(server.only().path, "/v4/json");
    doc.origin = "/etc/specs/openapi.json".into();
    let h = Harness::new(config("servers", dir.path()), doc).await;
    let r = h.call("relative", json!({})).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("`/v4` is relative") && t.contains("[apis.servers] base_url"),
        "{t}"
    );
}

#[tokio::test]
async fn a_slow_api_ends_in_an_error_result_at_its_timeout() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut c = config("slowpoke", dir.path());
    c.timeout = Duration::from_millis(500);
    let h = Harness::new(c, document(&server.url, vec![op("slow", "GET", "/slow")])).await;
    let started = std::time::Instant::now();
    let r = h.call("slow", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("slowpoke") && t.contains("time"), "{t}");
}

#[tokio::test]
async fn tools_are_listed_with_their_annotations() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let mut get = op("get_item", "GET", "/items/{id}");
    get.summary = Some("Get one item".into());
    get.output_schema = Some(json!({"type": "object"}));
    let doc = document(
        &server.url,
        vec![
            get,
            op("delete_item", "DELETE", "/items/{id}"),
            op("create_item", "POST", "/items"),
        ],
    );
    let h = Harness::new(config("shop", dir.path()), doc).await;
    let tools = h.tools().await;
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {tools:?}"))
            .clone()
    };
    let get = find("shop__get_item");
    assert_eq!(get["title"], json!("Get one item"));
    assert_eq!(get["description"], json!("GET /items/{id}"));
    assert_eq!(get["outputSchema"], json!({"type": "object"}));
    assert_eq!(
        get["annotations"],
        json!({"title": "Get one item", "readOnlyHint": true, "destructiveHint": false, "openWorldHint": true})
    );
    let delete = find("shop__delete_item");
    assert_eq!(delete["annotations"]["destructiveHint"], json!(true));
    assert_eq!(delete["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(delete["title"], json!("Delete item"));
    assert_eq!(
        find("shop__create_item")["annotations"]["readOnlyHint"],
        json!(false)
    );
}

#[tokio::test]
async fn a_document_that_does_not_load_is_retried_until_it_does() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let spec = dir.path().join("later.json");
    let mut c = config("later", dir.path());
    c.spec = spec.to_string_lossy().into_owned();
    c.base_url = Some(server.url.clone());
    let h = Harness::with_source("later__", mcpyard_openapi::OpenApiSource::new(c)).await;
    let source_status = |status: Value| {
        status["structuredContent"]["sources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["name"] == "later").cloned())
            .unwrap_or_else(|| panic!("the API in the status: {status}"))
    };
    // Loading runs in the background: wait for its first failure.
    let mut down = source_status(h.status().await);
    for _ in 0..100 {
        if !down["last_error"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        down = source_status(h.status().await);
    }
    assert_eq!(down["healthy"], json!(false), "{down}");
    let error = down["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("later.json"), "{down}");

    std::fs::write(
        &spec,
        r#"{"openapi": "3.0.3", "info": {"title": "Later", "version": "1"},
            "paths": {"/json": {"get": {"operationId": "getJson",
              "responses": {"200": {"description": "ok"}}}}}}"#,
    )
    .expect("write the document");
    let listed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let tools = h.tools().await;
            if let Some(t) = tools
                .iter()
                .find(|t| t["name"].as_str().is_some_and(|n| n.starts_with("later__")))
            {
                return t["name"].as_str().unwrap_or_default().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the document loads once it exists");
    let r = h
        .call(listed.trim_start_matches("later__"), json!({}))
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(server.only().path, "/json");
    let up = source_status(h.status().await);
    assert_eq!(up["healthy"], json!(true), "{up}");
    assert_eq!(up["last_error"], Value::Null, "{up}");
    assert_eq!(up["document"]["title"], json!("Later"));
}

/// A document in the loader's hands: what it makes of it is called as the
/// document declares.
const LISTS: &str = r##"
openapi: 3.1.0
info: { title: Lists, version: "1" }
servers: [{ url: "http://127.0.0.1:1/v1" }]
security: [{ bearer: [] }]
components:
  securitySchemes:
    bearer: { type: http, scheme: bearer }
    key: { type: apiKey, in: query, name: api_key }
  schemas:
    Node:
      type: object
      required: [value]
      properties:
        value: { type: integer }
        next: { oneOf: [{ $ref: "#/components/schemas/Node" }, { type: "null" }] }
paths:
  /lists:
    get:
      operationId: listLists
      parameters:
        - name: filter
          in: query
          style: deepObject
          explode: true
          schema: { type: object, properties: { min: { type: integer }, kind: { type: string } } }
        - { name: tags, in: query, schema: { type: array, items: { type: string } } }
      responses: { "200": { description: ok, content: { application/json: { schema: { type: object } } } } }
    post:
      operationId: createList
      requestBody:
        required: true
        content: { application/json: { schema: { $ref: "#/components/schemas/Node" } } }
      responses: { "201": { description: ok } }
  /lists/{listId}:
    delete:
      operationId: deleteList
      security: []
      parameters: [{ name: listId, in: path, required: true, schema: { type: string } }]
      responses: { "204": { description: gone } }
  /uploads:
    post:
      operationId: uploadPicture
      security: [{ key: [] }]
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: [picture]
              properties:
                picture: { type: string, format: binary }
                caption: { type: string }
      responses: { "200": { description: ok } }
  /pictures/{name}:
    put:
      operationId: putPicture
      parameters: [{ name: name, in: path, required: true, schema: { type: string } }]
      requestBody:
        required: true
        content: { application/octet-stream: { schema: { type: string, format: binary } } }
      responses: { "204": { description: ok } }
  /text:
    get:
      operationId: getNote
      responses: { "200": { description: ok, content: { text/plain: { schema: { type: string } } } } }
"##;

#[tokio::test]
async fn a_loaded_document_is_called_as_it_declares() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let options = mcpyard_openapi::LoadOptions {
        prefix_len: "lists__".len(),
        ..Default::default()
    };
    let doc =
        mcpyard_openapi::parse("lists.yaml", LISTS, None, &options).expect("the document loads");
    let schemas: BTreeMap<String, Value> = doc
        .operations
        .iter()
        .filter_map(|o| Some((o.name.clone(), o.output_schema.clone()?)))
        .collect();
    let mut c = config("lists", dir.path());
    c.base_url = Some(format!("{}/v1", server.url));
    c.auth.bearer = Some("tok-SECRET".into());
    c.auth.schemes = BTreeMap::from([("key".to_owned(), "k-SECRET".to_owned())]);
    let h = Harness::new(c, doc).await;

    let r = h
        .call(
            "list_lists",
            json!({"filter": {"min": 2, "kind": "linked"}, "tags": ["a", "b"]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.path, "/v1/lists");
    assert_eq!(
        seen.query.as_deref(),
        Some("filter[kind]=linked&filter[min]=2&tags=a&tags=b")
    );
    assert_eq!(
        seen.header("authorization").as_deref(),
        Some("Bearer tok-SECRET")
    );
    // The envelope fits the output schema the loader wrote.
    let schema = &schemas["list_lists"];
    let validator = jsonschema::validator_for(schema).expect("output schema compiles");
    assert!(
        validator.is_valid(&r["structuredContent"]),
        "{r} vs {schema}"
    );
    server.clear();

    let r = h
        .call(
            "create_list",
            json!({"value": 1, "next": {"value": 2, "next": null}}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        serde_json::from_slice::<Value>(&server.only().body).expect("json"),
        json!({"value": 1, "next": {"value": 2, "next": null}})
    );
    server.clear();

    // The recursive schema validates before sending: nothing goes out.
    let r = h
        .call("create_list", json!({"value": 1, "next": {"value": "two"}}))
        .await;
    assert!(is_error(&r) && text(&r).contains("/next"), "{r}");
    assert!(server.seen().is_empty());

    let r = h.call("delete_list", json!({"listId": "a b"})).await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("DELETE", "/v1/lists/a%20b")
    );
    assert!(
        seen.header("authorization").is_none(),
        "security: [] sends none"
    );
    server.clear();

    let picture = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    let r = h
        .call(
            "upload_picture",
            json!({"picture": picture, "caption": "hi"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.query.as_deref(), Some("api_key=k-SECRET"));
    assert!(seen.header("authorization").is_none());
    assert!(find(&seen.body, PNG).is_some() && find(&seen.body, b"name=\"caption\"").is_some());
    server.clear();

    let tools = h.tools().await;
    let put = tools
        .iter()
        .find(|t| t["name"] == "lists__put_picture")
        .expect("put_picture listed");
    let body_argument = put["inputSchema"]["required"]
        .as_array()
        .and_then(|r| r.iter().filter_map(Value::as_str).find(|a| *a != "name"))
        .expect("the body's argument")
        .to_owned();
    let r = h
        .call(
            "put_picture",
            json!({"name": "cat", body_argument: "base64:aGk="}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.path, "/v1/pictures/cat");
    assert_eq!(seen.body, b"hi");
    server.clear();

    let r = h.call("get_note", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let validator = jsonschema::validator_for(&schemas["get_note"]).expect("compiles");
    assert!(validator.is_valid(&r["structuredContent"]), "{r}");
}

#[tokio::test]
async fn a_swagger2_document_is_called_as_it_declares() {
    let server = Recorder::start().await;
    let dir = tempdir();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/documents/swagger2-trees.json");
    let options = mcpyard_openapi::LoadOptions {
        prefix_len: "trees__".len(),
        ..Default::default()
    };
    let doc = mcpyard_openapi::load_file(&path, &options).expect("the document loads");
    let name = |method: &str, path: &str| {
        doc.operations
            .iter()
            .find(|o| o.method.as_str() == method && o.path == path)
            .unwrap_or_else(|| panic!("{method} {path}"))
            .name
            .clone()
    };
    let (list, attach, login) = (
        name("GET", "/trees"),
        name("POST", "/trees/{id}/attachments"),
        name("POST", "/sessions"),
    );
    let mut c = config("trees", dir.path());
    c.base_url = Some(format!("{}/api", server.url));
    c.auth.schemes = BTreeMap::from([("api_key".to_owned(), "tree-SECRET".to_owned())]);
    let h = Harness::new(c, doc).await;

    let r = h
        .call(
            &list,
            json!({"depth": 2, "tag": ["oak", "elm"], "fields": ["id", "name"]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.path, "/api/trees");
    // collectionFormat multi repeats the name; csv joins with commas.
    assert_eq!(
        seen.query.as_deref(),
        Some("depth=2&tag=oak&tag=elm&fields=id,name")
    );
    assert_eq!(seen.header("x-api-key").as_deref(), Some("tree-SECRET"));
    server.clear();

    let r = h
        .call(
            &attach,
            json!({"id": 7, "file": "base64:aGk=", "note": "bark"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(seen.path, "/api/trees/7/attachments");
    let content_type = seen.header("content-type").expect("content type");
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .expect("multipart");
    let parts = split_multipart(&seen.body, boundary);
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(
        parts
            .iter()
            .any(|(h, d)| h.contains("name=\"file\"") && h.contains("filename=") && d == b"hi"),
        "{parts:?}"
    );
    assert!(
        parts
            .iter()
            .any(|(h, d)| h.contains("name=\"note\"") && d == b"bark"),
        "{parts:?}"
    );
    server.clear();

    // The form needs basic credentials, which are not configured.
    let r = h
        .call(&login, json!({"username": "ann", "remember": true}))
        .await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("`auth.basic` (user:password)") && t.contains("Nothing was sent"),
        "{t}"
    );
    assert!(server.seen().is_empty());

    let mut c = config("trees", dir.path());
    c.base_url = Some(format!("{}/api", server.url));
    c.auth.basic = Some("ann:tree-SECRET".into());
    let doc = mcpyard_openapi::load_file(&path, &options).expect("the document loads");
    let h = Harness::new(c, doc).await;
    let r = h
        .call(&login, json!({"username": "ann", "remember": true}))
        .await;
    assert!(!is_error(&r), "{r}");
    let seen = server.only();
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(seen.body, b"remember=true&username=ann");
    let basic = base64::engine::general_purpose::STANDARD.encode("ann:tree-SECRET");
    assert_eq!(seen.header("authorization"), Some(format!("Basic {basic}")));
    assert_no_secret("a result", &r.to_string());
}

/// The API's entry in `mcpyard__status`.
async fn api_status(h: &Harness, name: &str) -> Value {
    let status = h.status().await;
    status["structuredContent"]["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("the API in the status: {status}"))
        .clone()
}

#[tokio::test]
async fn an_api_that_does_not_answer_is_shown_unhealthy_and_the_probe_is_cached() {
    let dir = tempdir();
    let port = closed_port();
    let mut c = config("gone", dir.path());
    c.base_url = Some(format!("http://127.0.0.1:{port}"));
    let h = Harness::new(
        c,
        document("http://127.0.0.1:1", vec![op("get_json", "GET", "/json")]),
    )
    .await;
    let api = api_status(&h, "gone").await;
    assert_eq!(api["healthy"], json!(false), "{api}");
    assert_eq!(api["state"], json!("unreachable"), "{api}");
    let error = api["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("127.0.0.1:{port}")) && error.contains("base_url"),
        "{api}"
    );

    // One that answers (whatever the status) is healthy; the answer is
    // remembered, so a second status sends no second probe.
    let server = Recorder::start().await;
    let mut c = config("here", dir.path());
    c.base_url = Some(server.url.clone());
    let h = Harness::new(
        c,
        document(&server.url, vec![op("get_json", "GET", "/json")]),
    )
    .await;
    let api = api_status(&h, "here").await;
    assert_eq!(api["healthy"], json!(true), "{api}");
    assert_eq!(api["state"], json!("ready"), "{api}");
    let probes = server.seen().len();
    assert_eq!(probes, 1, "one probe: {:?}", server.seen());
    api_status(&h, "here").await;
    assert_eq!(server.seen().len(), probes, "the probe is cached");
}

#[tokio::test]
async fn file_parts_given_as_base64_or_a_path_carry_their_content_type() {
    let server = Recorder::start().await;
    let dir = tempdir();
    std::fs::write(dir.path().join("in/voice.wav"), b"no magic here").expect("write");
    std::fs::write(dir.path().join("in/notes.bin"), b"\x01\x02\x03").expect("write");
    let mut o = op("upload", "POST", "/upload");
    o.body = Some(body(
        BodyKind::Multipart,
        "multipart/form-data",
        BodyShape::Fields(vec![arg("image"), arg("audio"), arg("other")]),
        &["image", "audio", "other"],
    ));
    let h = Harness::new(config("media", dir.path()), document(&server.url, vec![o])).await;
    let image = format!(
        "base64:{}",
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    let audio = dir.path().join("in/voice.wav");
    let other = dir.path().join("in/notes.bin");
    let r = h
        .call(
            "upload",
            json!({"image": image, "audio": audio.to_string_lossy(), "other": other.to_string_lossy()}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let parts = multipart_parts(&server.only());
    let head = |name: &str| part(&parts, name).0;
    // Detected from the bytes, then from the file name; else the generic one.
    for (part, expected) in [
        ("image", "Content-Type: image/png"),
        ("image", "filename=\"image.png\""),
        ("audio", "Content-Type: audio/wav"),
        ("other", "Content-Type: application/octet-stream"),
    ] {
        assert!(head(part).contains(expected), "{}", head(part));
    }
}

#[test]
fn the_credential_report_says_what_each_operation_gets_and_never_a_value() {
    let mut doc = secured_document("http://127.0.0.1:1");
    doc.operations.push(op("silent", "GET", "/echo"));
    let mut auth = secured_config(std::path::Path::new("/nowhere")).auth;
    auth.schemes.insert("stray".into(), "st-SECRET-6".into());
    let lines = mcpyard_openapi::credential_report(&doc, &auth);
    let report = lines.join("\n");
    for expected in [
        "1 operation(s) get bearerAuth (header Authorization: Bearer, from auth.bearer)",
        "1 operation(s) get headerKey (header X-API-Key, from auth.headerKey) + queryKey (query api_key, from auth.queryKey)",
        "1 operation(s) need none (their `security` is empty)",
        "1 operation(s) cannot be called: they need unconfigured, which `auth` does not configure",
        // The silent one: every configured credential, one Authorization.
        "1 operation(s) get cookieKey (cookie sid, from auth.cookieKey) + headerKey (header X-API-Key, from auth.headerKey) + queryKey (query api_key, from auth.queryKey) + bearerAuth (header Authorization: Bearer, from auth.bearer) (the document lists no `security` for them",
        "`auth.stray` names no security scheme of the document",
    ] {
        assert!(report.contains(expected), "{expected}\nin\n{report}");
    }
    assert_no_secret("the report", &report);
    assert!(!report.contains("st-SECRET-6"), "{report}");
}
