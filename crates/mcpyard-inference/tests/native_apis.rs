//! Ollama's and Lemonade's native APIs, and servers that answer badly,
//! against faithful HTTP fixtures that check exactly what mcpyard sends
//! (paths, JSON bodies, headers) and answer with the documented shapes.

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use serde_json::{json, Value};
use support::recording_fixture::{
    completion, embeddings, json_response, not_found, raw, serve, Fixture,
};
use support::{config_with, is_error, text, Harness};

use mcpyard_inference::{identify, BackendKind, BackendSpec, InferenceConfig};

// ---------------------------------------------------------------- Ollama

fn ollama(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    let tag = |name: &str, size: u64| {
        json!({"name": name, "model": name, "modified_at": "2026-01-01T00:00:00Z", "size": size,
               "digest": "abc", "details": {"format": "gguf", "family": "qwen3"}})
    };
    match (method, path) {
        ("GET", "/") => raw(200, "text/plain; charset=utf-8", "Ollama is running"),
        ("GET", "/api/ps") => json_response(200, json!({"models": [tag("qwen3:0.6b", 523000000)]})),
        ("GET", "/api/tags") => {
            let mut models = vec![
                tag("qwen3:0.6b", 523000000),
                tag("nomic-embed-text:latest", 274302450),
            ];
            for p in f.downloaded.lock().expect("lock").iter() {
                models.push(tag(p, 2019393189));
            }
            json_response(200, json!({"models": models}))
        }
        ("POST", "/api/show") => {
            let caps = match body["model"].as_str() {
                Some("qwen3:0.6b") => json!(["completion", "tools", "thinking"]),
                Some("nomic-embed-text:latest") => json!(["embedding"]),
                Some("llama3.2:3b") => json!(["completion", "tools"]),
                _ => return json_response(404, json!({"error": "model not found"})),
            };
            json_response(
                200,
                json!({"modelfile": "", "parameters": "", "template": "", "details": {}, "capabilities": caps}),
            )
        }
        ("POST", "/api/pull") => {
            if body != &json!({"model": "llama3.2:3b", "stream": true}) {
                return json_response(
                    400,
                    json!({"error": format!("unexpected pull body {body}")}),
                );
            }
            f.downloaded
                .lock()
                .expect("lock")
                .push("llama3.2:3b".into());
            let lines = [
                json!({"status": "pulling manifest"}),
                json!({"status": "pulling dde5aa3fc5ff", "digest": "sha256:dde5", "total": 2000, "completed": 500}),
                json!({"status": "pulling dde5aa3fc5ff", "digest": "sha256:dde5", "total": 2000, "completed": 2000}),
                json!({"status": "pulling 966de95ca8a6", "digest": "sha256:966d", "total": 100, "completed": 100}),
                json!({"status": "verifying sha256 digest"}),
                json!({"status": "writing manifest"}),
                json!({"status": "success"}),
            ];
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            raw(200, "application/x-ndjson", text)
        }
        ("POST", "/v1/chat/completions") => completion(body),
        ("POST", "/v1/embeddings") => embeddings(body),
        _ => not_found(),
    }
}

#[tokio::test]
async fn ollama_native_api_listing_capabilities_and_pull() {
    let (f, port) = serve(ollama).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(identify(&client, port).await, Some(BackendKind::Ollama));

    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "ollama", "{r}");
    assert_eq!(b["origin"], "discovered");
    assert_eq!(b["loaded"][0]["id"], "qwen3:0.6b");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat", "tools"]));
    // A loaded model is not repeated among the downloaded ones.
    assert_eq!(b["downloaded"].as_array().map(Vec::len), Some(1), "{b}");
    assert_eq!(b["downloaded"][0]["id"], "nomic-embed-text:latest");
    assert_eq!(b["downloaded"][0]["capabilities"], json!(["embeddings"]));
    let suggested: Vec<&str> = b["suggested"]
        .as_array()
        .expect("suggested")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(
        suggested.contains(&"llama3.2:3b") && !suggested.contains(&"qwen3:0.6b"),
        "{suggested:?}"
    );
    // `nomic-embed-text` is downloaded as `:latest`: not suggested again.
    assert!(!suggested.contains(&"nomic-embed-text"), "{suggested:?}");
    assert_eq!(
        r["structuredContent"]["recommended_chat"]["model"],
        "qwen3:0.6b"
    );
    let shows: Vec<Value> = f
        .requests("POST", "/api/show")
        .into_iter()
        .map(|s| s.body)
        .collect();
    assert!(shows.contains(&json!({"model": "qwen3:0.6b"})), "{shows:?}");
    assert!(
        shows.contains(&json!({"model": "nomic-embed-text:latest"})),
        "{shows:?}"
    );

    // Capabilities are cached: a second listing asks /api/show nothing new.
    let before = f.requests("POST", "/api/show").len();
    h.call("list_models", json!({})).await;
    assert_eq!(f.requests("POST", "/api/show").len(), before);

    // An embedding call goes to the downloaded embedding model.
    let r = h.call("embed", json!({"input": ["a", "b"]})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "nomic-embed-text:latest");
    assert_eq!(
        f.requests("POST", "/v1/embeddings")[0].body,
        json!({"model": "nomic-embed-text:latest", "input": ["a", "b"]})
    );

    // A model that is not there: no download without allow_download.
    let ask = json!({"model": "llama3.2:3b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5});
    let r = h.call("chat", ask.clone()).await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("allow_download: true"), "{}", text(&r));
    assert!(
        f.requests("POST", "/api/pull").is_empty(),
        "a download happened by surprise"
    );

    // With allow_download: pulled with progress, then used.
    let mut allowed = ask.clone();
    allowed["allow_download"] = json!(true);
    let (r, notes) = h.call_with_progress("chat", allowed).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "llama3.2:3b");
    assert_eq!(f.requests("POST", "/api/pull").len(), 1);
    assert!(notes.len() >= 3, "{notes:?}");
    let values: Vec<f64> = notes
        .iter()
        .filter_map(|n| n["progress"].as_f64())
        .collect();
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "progress must grow: {values:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n["message"].as_str().is_some_and(|m| m.contains("pulling"))),
        "{notes:?}"
    );
    let chat = f.requests("POST", "/v1/chat/completions");
    let sent = &chat.last().expect("a chat request").body;
    assert_eq!(sent["model"], "llama3.2:3b");
    assert_eq!(sent["max_tokens"], 5);
    assert_eq!(
        sent["stream"], true,
        "a client asking for progress gets a stream"
    );
    assert!(
        sent.get("allow_download").is_none(),
        "mcpyard's own arguments stay out: {sent}"
    );
    assert!(text(&r).contains("Hello from the fixture."));
    h.gateway().shutdown().await;
}

// -------------------------------------------------------------- Lemonade

fn lemonade(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    match (method, path) {
        ("GET", "/api/v1/health") => json_response(
            200,
            json!({
                "status": "ok", "version": "9.1.0", "model_loaded": "Qwen3-0.6B-GGUF",
                "all_models_loaded": [{"model_name": "Qwen3-0.6B-GGUF", "checkpoint": "unsloth/Qwen3-0.6B-GGUF:Q4_0", "type": "llm", "device": "cpu", "recipe": "llamacpp", "backend_url": "http://127.0.0.1:8001/v1"}]
            }),
        ),
        // Lemonade imitates Ollama's routes, but not the root page.
        ("GET", "/api/tags") => json_response(200, json!({"models": []})),
        ("GET", "/api/v1/models") => {
            let mut data = vec![
                json!({"id": "Qwen3-0.6B-GGUF", "object": "model", "owned_by": "lemonade", "checkpoint": "unsloth/Qwen3-0.6B-GGUF:Q4_0", "recipe": "llamacpp", "labels": ["reasoning", "tool-calling"], "downloaded": true}),
                json!({"id": "Whisper-Tiny", "object": "model", "owned_by": "lemonade", "checkpoint": "ggerganov/whisper.cpp:ggml-tiny.bin", "recipe": "whispercpp", "labels": ["audio", "transcription"], "downloaded": true}),
            ];
            for p in f.downloaded.lock().expect("lock").iter() {
                data.push(json!({"id": p, "object": "model", "owned_by": "lemonade", "recipe": "llamacpp", "labels": ["vision"], "downloaded": true}));
            }
            json_response(200, json!({"object": "list", "data": data}))
        }
        ("POST", "/api/v1/pull") => {
            let name = body["model_name"].as_str().unwrap_or("");
            if body.as_object().map(|o| o.len()) != Some(2) || body["stream"] != json!(true) {
                return json_response(
                    400,
                    json!({"error": format!("unexpected pull body {body}")}),
                );
            }
            if name == "Broken-Model" {
                return raw(200, "text/event-stream", "event: error\ndata: {\"error\":\"Model Broken-Model not found in the registry\"}\n\n");
            }
            f.downloaded.lock().expect("lock").push(name.to_owned());
            let events = "event: progress\ndata: {\"file\":\"model.gguf\",\"file_index\":1,\"total_files\":2,\"bytes_downloaded\":1073741824,\"bytes_total\":2684354560,\"percent\":40}\n\n\
                          event: progress\ndata: {\"file\":\"model.gguf\",\"file_index\":1,\"total_files\":2,\"bytes_downloaded\":2684354560,\"bytes_total\":2684354560,\"percent\":100}\n\n\
                          event: progress\ndata: {\"file\":\"mmproj.gguf\",\"file_index\":2,\"total_files\":2,\"bytes_downloaded\":1024,\"bytes_total\":1024,\"percent\":100}\n\n\
                          event: complete\ndata: {\"file_index\":2,\"total_files\":2,\"percent\":100}\n\n";
            raw(200, "text/event-stream", events)
        }
        ("GET", "/v1/models") => json_response(
            200,
            json!({"object": "list", "data": [{"id": "Qwen3-0.6B-GGUF", "owned_by": "lemonade"}]}),
        ),
        ("POST", "/v1/chat/completions") => completion(body),
        _ => not_found(),
    }
}

#[tokio::test]
async fn lemonade_native_api_listing_and_pull() {
    let (f, port) = serve(lemonade).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(identify(&client, port).await, Some(BackendKind::Lemonade));
    assert!(
        f.requests("GET", "/").is_empty(),
        "Lemonade is told apart before the Ollama probe"
    );

    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "lemonade", "{r}");
    assert_eq!(b["loaded"][0]["id"], "Qwen3-0.6B-GGUF");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat", "tools"]));
    assert_eq!(b["downloaded"][0]["id"], "Whisper-Tiny");
    assert_eq!(b["downloaded"][0]["capabilities"], json!(["transcription"]));
    let suggested: Vec<&str> = b["suggested"]
        .as_array()
        .expect("suggested")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(
        suggested.contains(&"Gemma-3-4b-it-GGUF") && !suggested.contains(&"Whisper-Tiny"),
        "{suggested:?}"
    );

    // No chat model named: the loaded one.
    let r = h
        .call(
            "chat",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "Qwen3-0.6B-GGUF");

    // A pull with SSE progress, then a chat on the new model.
    let (r, notes) = h
        .call_with_progress("chat", json!({"model": "Gemma-3-4b-it-GGUF", "allow_download": true, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        f.requests("POST", "/api/v1/pull")[0].body,
        json!({"model_name": "Gemma-3-4b-it-GGUF", "stream": true})
    );
    let values: Vec<f64> = notes
        .iter()
        .filter_map(|n| n["progress"].as_f64())
        .collect();
    // The download's steps, then the streamed tokens, still growing.
    assert_eq!(values, vec![40.0, 100.0, 200.0, 201.0, 202.0], "{notes:?}");
    assert_eq!(notes[0]["total"], 200.0);
    assert_eq!(r["structuredContent"]["model"], "Gemma-3-4b-it-GGUF");

    // A failed pull says why.
    let r = h
        .call("chat", json!({"model": "Broken-Model", "allow_download": true, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("Downloading `Broken-Model` from backend `lemonade` failed: Model Broken-Model not found"), "{}", text(&r));
    h.gateway().shutdown().await;
}

// ----------------------------------------------------- answers gone wrong

fn broken(_f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    match (method, path) {
        ("GET", "/v1/models") => json_response(200, json!({"object": "list", "data": [{"id": "m1", "object": "model", "owned_by": "someone"}]})),
        ("POST", "/v1/chat/completions") if body["stream"] == json!(true) => raw(
            200,
            "text/event-stream",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {broken\n\n",
        ),
        ("POST", "/v1/chat/completions") => raw(200, "application/json", "{\"choices\": [{\"message\": "),
        ("POST", "/v1/embeddings") => raw(500, "text/plain", "internal kaboom in the embedding kernel"),
        _ => not_found(),
    }
}

fn wrong_shape(_f: &Fixture, method: &str, path: &str, _body: &Value) -> Response {
    match (method, path) {
        ("GET", "/v1/models") => json_response(200, json!({"data": "not a list"})),
        _ => not_found(),
    }
}

#[tokio::test]
async fn malformed_answers_and_http_errors_become_tool_errors() {
    let (_f, port) = serve(broken).await;
    let url = format!("http://127.0.0.1:{port}");
    let h = Harness::new(config_with(BackendKind::Openai, &url)).await;
    let msgs = json!([{"role": "user", "content": "hi"}]);

    let r = h
        .call("chat", json!({"model": "m1", "messages": msgs}))
        .await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("malformed answer to /v1/chat/completions") && t.contains("not JSON"),
        "{t}"
    );

    let (r, _) = h
        .call_with_progress("chat", json!({"model": "m1", "messages": msgs}))
        .await;
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).contains("a stream chunk is not JSON"),
        "{}",
        text(&r)
    );

    let r = h.call("embed", json!({"model": "m1", "input": "x"})).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("HTTP 500") && t.contains("internal kaboom") && t.contains("see its own log"),
        "{t}"
    );

    let (_g, port2) = serve(wrong_shape).await;
    let h2 = Harness::new(config_with(
        BackendKind::Vllm,
        &format!("http://127.0.0.1:{port2}/v1"),
    ))
    .await;
    let r = h2.call("list_models", json!({})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["healthy"], false, "{r}");
    assert!(
        b["error"]
            .as_str()
            .is_some_and(|e| e.contains("expected a `data` array")),
        "{b}"
    );
    let r = h2.call("chat", json!({"messages": msgs})).await;
    assert!(is_error(&r) && text(&r).contains("malformed"), "{r}");
    h.gateway().shutdown().await;
    h2.gateway().shutdown().await;
}

/// Sets a flag when dropped: the body stream is dropped when the client
/// closes the connection.
struct OnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A server that streams one token, then keeps generating nothing forever.
fn endless(f: &Fixture, method: &str, path: &str, _body: &Value) -> Response {
    match (method, path) {
        ("GET", "/v1/models") => json_response(200, json!({"data": [{"id": "slow"}]})),
        ("POST", "/v1/chat/completions") => {
            let guard = OnDrop(f.closed.clone());
            let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"}}]}\n\n";
            let stream = futures::stream::unfold((0u8, guard), move |(step, guard)| async move {
                if step > 0 {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Some((
                    Ok::<_, std::io::Error>(Bytes::from_static(first.as_bytes())),
                    (step + 1, guard),
                ))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .expect("response")
        }
        _ => not_found(),
    }
}

#[tokio::test]
async fn cancelling_a_streamed_chat_closes_the_backend_stream() {
    let (f, port) = serve(endless).await;
    let h = Harness::new(config_with(
        BackendKind::Openai,
        &format!("http://127.0.0.1:{port}"),
    ))
    .await;
    let answer = h
        .call_then_cancel(
            "chat",
            json!({"messages": [{"role": "user", "content": "go on forever"}]}),
        )
        .await;
    assert!(
        answer.is_none(),
        "a cancelled request was answered: {answer:?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !f.closed.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the backend stream stayed open"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    h.gateway().shutdown().await;
}

fn keyed(_f: &Fixture, method: &str, path: &str, _body: &Value) -> Response {
    // The recorded request tells the test which header came.
    match (method, path) {
        ("GET", "/v1/models") => json_response(200, json!({"data": [{"id": "m"}]})),
        _ => not_found(),
    }
}

fn locked(_f: &Fixture, _method: &str, _path: &str, _body: &Value) -> Response {
    json_response(401, json!({"error": "invalid api key"}))
}

#[tokio::test]
async fn api_keys_come_from_the_environment_and_never_show() {
    const VAR: &str = "MCPYARD_TEST_INFERENCE_KEY";
    std::env::set_var(VAR, "sk-test-secret-42");
    let (f, port) = serve(keyed).await;
    let (_g, locked_port) = serve(locked).await;
    let spec = |name: &str, port: u16| BackendSpec {
        name: name.to_owned(),
        kind: BackendKind::Openai,
        url: format!("http://127.0.0.1:{port}"),
        api_key_env: Some(VAR.to_owned()),
    };
    let h = Harness::new(InferenceConfig {
        backends: vec![spec("keyed", port), spec("locked", locked_port)],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    let seen = f.requests("GET", "/v1/models");
    assert_eq!(seen[0].auth.as_deref(), Some("Bearer sk-test-secret-42"));
    let locked = &r["structuredContent"]["backends"][1];
    assert_eq!(locked["healthy"], false, "{r}");
    assert!(
        locked["error"].as_str().is_some_and(|e| e.contains(VAR)),
        "{locked}"
    );
    assert!(
        !r.to_string().contains("sk-test-secret-42"),
        "the key leaked: {r}"
    );
    let st = h.status().await;
    assert!(
        !st.to_string().contains("sk-test-secret-42"),
        "the key leaked: {st}"
    );
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn a_port_nobody_listens_on_is_not_a_server() {
    let port = support::free_port();
    let client = mcpyard_inference::http_client();
    let started = std::time::Instant::now();
    assert_eq!(identify(&client, port).await, None);
    assert!(started.elapsed() < Duration::from_secs(3));
}

// ------------------------------------------- Lemonade's MCP clients' calls

/// The JSON in the second text block of a result, which Lemonade's MCP
/// clients parse.
fn json_block(r: &Value) -> Value {
    let block = r["content"][1]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no second text block: {r}"));
    serde_json::from_str(block).unwrap_or_else(|e| panic!("not JSON ({e}): {block}"))
}

#[tokio::test]
async fn lemonade_list_models_arguments_and_json_block() {
    let (_f, port) = serve(lemonade).await;
    let url = format!("http://127.0.0.1:{port}");
    let h = Harness::new(config_with(BackendKind::Lemonade, &url)).await;
    // lemonade_list_models' own call.
    let r = h
        .call(
            "list_models",
            json!({"include_available": true, "include_suggested": true}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let listing = json_block(&r);
    assert_eq!(
        listing, r["structuredContent"],
        "the block is the structured content"
    );
    assert_eq!(
        listing["recommended_chat_model"], "Qwen3-0.6B-GGUF",
        "{listing}"
    );
    assert_eq!(listing["loaded"][0]["model_name"], "Qwen3-0.6B-GGUF");
    assert_eq!(listing["loaded"][0]["type"], "llm");
    assert_eq!(listing["available"][0]["model_name"], "Whisper-Tiny");
    assert_eq!(listing["available"][0]["type"], "transcription");
    assert!(
        listing["suggested_to_pull"]
            .as_array()
            .is_some_and(|s| s.iter().any(|m| m["model_name"] == "Gemma-3-4b-it-GGUF")),
        "{listing}"
    );
    assert_eq!(listing["backends"][0]["kind"], "lemonade");

    // Leaving out what is on disk and what could be pulled.
    let r = h
        .call(
            "list_models",
            json!({"include_available": false, "include_suggested": false}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let listing = json_block(&r);
    assert_eq!(listing["available"], json!([]), "{listing}");
    assert_eq!(listing["suggested_to_pull"], json!([]), "{listing}");
    assert_eq!(listing["backends"][0]["downloaded"], json!([]), "{listing}");
    assert_eq!(listing["backends"][0]["suggested"], json!([]), "{listing}");
    assert_eq!(listing["loaded"][0]["model_name"], "Qwen3-0.6B-GGUF");
    assert!(!text(&r).contains("Whisper-Tiny"), "{}", text(&r));
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn lemonade_chat_arguments_stream_and_penalties() {
    let (f, port) = serve(lemonade).await;
    let url = format!("http://127.0.0.1:{port}");
    let h = Harness::new(config_with(BackendKind::Lemonade, &url)).await;
    // lemonade_chat's call as its clients send it, with `stream`.
    let call = |stream: bool| {
        json!({"model": "Qwen3-0.6B-GGUF", "messages": [{"role": "user", "content": "hi"}],
               "max_tokens": 16, "temperature": 0.2, "stream": stream,
               "presence_penalty": 0.5, "frequency_penalty": 0.25})
    };
    let (r, notes) = h.call_with_progress("chat", call(true)).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "Hello from the fixture.");
    assert_eq!(notes.len(), 2, "the tokens came as progress: {notes:?}");
    let sent = f.requests("POST", "/v1/chat/completions");
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(sent[0].body["presence_penalty"], 0.5);
    assert_eq!(sent[0].body["frequency_penalty"], 0.25);

    // `stream: false`: one answer, even for a client that asked for progress.
    let (r, notes) = h.call_with_progress("chat", call(false)).await;
    assert!(!is_error(&r), "{r}");
    assert!(notes.is_empty(), "{notes:?}");
    let sent = f.requests("POST", "/v1/chat/completions");
    assert_eq!(sent[1].body["stream"], false);
    h.gateway().shutdown().await;
}
