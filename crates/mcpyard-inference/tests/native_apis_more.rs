//! LocalAI's, LM Studio's, llama-server's and vLLM's own APIs, and the
//! order in which discovery tells servers apart, against faithful HTTP
//! fixtures: each answers with the shapes the real server documents and
//! records every request, so the tests check exactly what mcpyard sent.

mod support;

use std::sync::atomic::Ordering;

use axum::response::Response;
use serde_json::{json, Value};
use support::recording_fixture::{completion, embeddings, json_response, raw, serve, Fixture};
use support::{config_with, is_error, text, Harness};

use mcpyard_inference::{identify, BackendKind, InferenceConfig};

fn user_says(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|a| a.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default()
}

fn progress_values(notes: &[Value]) -> Vec<f64> {
    notes
        .iter()
        .filter_map(|n| n["progress"].as_f64())
        .collect()
}

// --------------------------------------------------------------- LocalAI

/// The models a fresh LocalAI has installed; `qwen3-0.6b` is in memory.
const LOCALAI_INSTALLED: [&str; 2] = ["qwen3-0.6b", "whisper-base"];
/// What its gallery can install (anything else fails while processing).
const LOCALAI_GALLERY: [&str; 3] = [
    "qwen3-0.6b",
    "nomic-embed-text-v1.5",
    "llama-3.2-1b-instruct",
];

fn localai_installed(f: &Fixture) -> Vec<String> {
    let mut all: Vec<String> = LOCALAI_INSTALLED.iter().map(|s| (*s).to_owned()).collect();
    all.extend(f.downloaded.lock().expect("lock").iter().cloned());
    all
}

/// A job status as `GET /models/jobs/{uuid}` reports it (LocalAI's
/// `OpStatus`, the error as a string).
fn localai_status(model: &str, processed: bool, message: &str, progress: f64) -> Value {
    json!({
        "deletion": false, "file_name": format!("{model}.gguf"), "processed": processed,
        "message": message, "progress": progress, "file_size": "462.9 MiB",
        "downloaded_size": format!("{:.1} MiB", 462.9 * progress / 100.0),
        "gallery_element_name": model, "cancelled": false, "cancellable": !processed
    })
}

fn localai(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    // Every OpenAI route is also served without the `/v1` prefix.
    let route = path.strip_prefix("/v1").unwrap_or(path);
    match (method, route) {
        // The web UI, not Ollama's heartbeat (that one is behind a flag).
        ("GET", "/") => raw(
            200,
            "text/html; charset=utf-8",
            "<!DOCTYPE html><html><head><title>LocalAI API</title></head><body></body></html>",
        ),
        ("GET", "/.well-known/localai.json") => json_response(
            200,
            json!({
                "version": "v3.9.0",
                "endpoints": {"models": "/v1/models", "chat_completions": "/v1/chat/completions", "embeddings": "/v1/embeddings",
                              "tts": "/tts", "transcription": "/v1/audio/transcriptions"},
                "endpoint_groups": {"monitoring": {"system": "/system", "version": "/version"}}
            }),
        ),
        ("GET", "/system") => json_response(
            200,
            json!({"backends": ["llama-cpp", "whisper"], "loaded_models": [{"id": "qwen3-0.6b"}]}),
        ),
        ("GET", "/readyz") | ("GET", "/healthz") => raw(200, "text/plain", "OK"),
        ("GET", "/models") => {
            let data: Vec<Value> = localai_installed(f)
                .iter()
                .map(|id| json!({"id": id, "object": "model"}))
                .collect();
            json_response(200, json!({"object": "list", "data": data}))
        }
        ("POST", "/models/apply") => {
            let Some(id) = body["id"]
                .as_str()
                .filter(|_| body.as_object().map(|o| o.len()) == Some(1))
            else {
                return json_response(
                    400,
                    json!({"error": {"code": 400, "message": format!("unexpected apply body {body}")}}),
                );
            };
            let mut jobs = f.jobs.lock().expect("lock");
            let uuid = format!("0b7c3e52-5f1a-11f0-9c2d-{:012x}", jobs.len() + 1);
            jobs.insert(uuid.clone(), (id.to_owned(), 0));
            json_response(
                200,
                json!({"uuid": uuid, "status": format!("http://127.0.0.1/models/jobs/{uuid}")}),
            )
        }
        ("GET", p) if p.starts_with("/models/jobs/") => {
            let uuid = &p["/models/jobs/".len()..];
            let mut jobs = f.jobs.lock().expect("lock");
            let Some((model, polls)) = jobs.get_mut(uuid) else {
                return json_response(
                    500,
                    json!({"error": {"code": 500, "message": "could not find any status for ID", "type": ""}}),
                );
            };
            *polls += 1;
            let model = model.clone();
            if !LOCALAI_GALLERY.contains(&model.as_str()) {
                let reason = format!("no model found with name \"{model}\"");
                return match *polls {
                    1 => json_response(200, localai_status(&model, false, "queued", 0.0)),
                    _ => {
                        let mut s = localai_status(&model, true, &format!("error: {reason}"), 0.0);
                        s["error"] = json!(reason);
                        json_response(200, s)
                    }
                };
            }
            let status = match *polls {
                1 => localai_status(&model, false, "queued", 0.0),
                2 => localai_status(&model, false, "processing", 37.5),
                3 => localai_status(&model, false, "processing", 81.2),
                _ => {
                    let mut installed = f.downloaded.lock().expect("lock");
                    if !installed.contains(&model) {
                        installed.push(model.clone());
                    }
                    localai_status(&model, true, "completed", 100.0)
                }
            };
            json_response(200, status)
        }
        ("POST", "/chat/completions") => {
            let model = body["model"].as_str().unwrap_or("");
            if !localai_installed(f).iter().any(|m| m == model) {
                return json_response(
                    500,
                    json!({"error": {"code": 500, "message": format!("could not load model: {model}"), "type": ""}}),
                );
            }
            completion(body)
        }
        ("POST", "/embeddings") => embeddings(body),
        _ => json_response(404, json!({"message": "Not Found"})),
    }
}

/// An older LocalAI, before `/.well-known/localai.json`.
fn localai_old(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    if path == "/.well-known/localai.json" {
        return json_response(404, json!({"message": "Not Found"}));
    }
    localai(f, method, path, body)
}

#[tokio::test]
async fn localai_identified_by_its_well_known_document_or_system_route() {
    let client = mcpyard_inference::http_client();
    let (f, port) = serve(localai).await;
    assert_eq!(identify(&client, port).await, Some(BackendKind::Localai));
    assert_eq!(f.requests("GET", "/.well-known/localai.json").len(), 1);

    let (g, port) = serve(localai_old).await;
    assert_eq!(identify(&client, port).await, Some(BackendKind::Localai));
    assert_eq!(g.requests("GET", "/system").len(), 1, "{:?}", g.paths());
}

#[tokio::test]
async fn localai_listing_and_downloads_through_the_gallery_jobs_api() {
    let (f, port) = serve(localai).await;
    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;

    // Loaded (`/system`) versus downloaded (`/v1/models`).
    let r = h.call("list_models", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "localai", "{r}");
    assert_eq!(b["origin"], "discovered");
    assert_eq!(b["healthy"], true);
    assert_eq!(ids(&b["loaded"]), ["qwen3-0.6b"], "{b}");
    assert_eq!(b["loaded"][0]["state"], "loaded");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat"]));
    assert_eq!(ids(&b["downloaded"]), ["whisper-base"], "{b}");
    assert_eq!(b["downloaded"][0]["state"], "downloaded");
    assert_eq!(b["downloaded"][0]["capabilities"], json!(["transcription"]));
    // Suggested: only what is not installed yet.
    assert_eq!(ids(&b["suggested"]), ["nomic-embed-text-v1.5"], "{b}");
    assert_eq!(b["suggested"][0]["state"], "suggested");
    assert_eq!(b["suggested"][0]["capabilities"], json!(["embeddings"]));
    assert_eq!(
        r["structuredContent"]["recommended_chat"],
        json!({"backend": "localai", "model": "qwen3-0.6b", "state": "loaded"})
    );
    let summary = text(&r);
    assert!(
        summary.contains("LocalAI") && summary.contains("nomic-embed-text-v1.5 [embeddings]"),
        "{summary}"
    );
    assert!(!f.requests("GET", "/system").is_empty());
    assert!(!f.requests("GET", "/v1/models").is_empty());

    // A model that is not installed: nothing is downloaded without
    // `allow_download`, and the error says how.
    let ask =
        json!({"model": "llama-3.2-1b-instruct", "messages": user_says("hi"), "max_tokens": 5});
    let r = h.call("chat", ask.clone()).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("allow_download: true") && t.contains("`localai` (LocalAI)"),
        "{t}"
    );
    let r = h.call("embed", json!({"input": "a sentence"})).await;
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).contains("allow_download: true` to download `nomic-embed-text-v1.5`"),
        "{}",
        text(&r)
    );
    assert!(
        f.requests("POST", "/models/apply").is_empty(),
        "a download happened by surprise"
    );

    // With allow_download: applied from the gallery, the job polled until
    // processed, with growing progress, then the model is used.
    let mut allowed = ask.clone();
    allowed["allow_download"] = json!(true);
    let (r, notes) = h.call_with_progress("chat", allowed).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "llama-3.2-1b-instruct");
    let applies = f.requests("POST", "/models/apply");
    assert_eq!(applies.len(), 1);
    assert_eq!(applies[0].body, json!({"id": "llama-3.2-1b-instruct"}));
    let uuid = "0b7c3e52-5f1a-11f0-9c2d-000000000001";
    assert_eq!(
        f.requests("GET", &format!("/models/jobs/{uuid}")).len(),
        4,
        "polled until processed, and no further: {:?}",
        f.paths()
    );
    let values = progress_values(&notes);
    assert!(
        values.starts_with(&[37.5, 81.2, 100.0]),
        "the job's progress, then the tokens: {values:?}"
    );
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "progress must grow: {values:?}"
    );
    assert_eq!(notes[0]["total"], 100.0, "{notes:?}");
    assert!(
        notes.iter().any(|n| n["message"]
            .as_str()
            .is_some_and(|m| m.contains("llama-3.2-1b-instruct: processing"))),
        "{notes:?}"
    );
    let chats = f.requests("POST", "/v1/chat/completions");
    let sent = &chats.last().expect("a chat request").body;
    assert_eq!(sent["model"], "llama-3.2-1b-instruct");
    assert_eq!(sent["max_tokens"], 5);
    assert_eq!(sent["stream"], true);
    assert!(sent.get("allow_download").is_none(), "{sent}");
    assert!(text(&r).contains("Hello from the fixture."), "{r}");

    // No model named: the suggested one with the capability is pulled.
    let r = h
        .call(
            "embed",
            json!({"input": ["a", "b"], "allow_download": true}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "nomic-embed-text-v1.5");
    let applies = f.requests("POST", "/models/apply");
    assert_eq!(applies.len(), 2);
    assert_eq!(applies[1].body, json!({"id": "nomic-embed-text-v1.5"}));
    assert_eq!(
        f.requests("POST", "/v1/embeddings")[0].body,
        json!({"model": "nomic-embed-text-v1.5", "input": ["a", "b"]})
    );

    // The downloads now show as downloaded, and are no longer suggested.
    let r = h.call("list_models", json!({"refresh": true})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(
        ids(&b["downloaded"]),
        [
            "whisper-base",
            "llama-3.2-1b-instruct",
            "nomic-embed-text-v1.5"
        ],
        "{b}"
    );
    assert!(ids(&b["suggested"]).is_empty(), "{b}");

    // A job that fails says why, in LocalAI's words.
    let r = h
        .call(
            "chat",
            json!({"model": "no-such-model", "allow_download": true, "messages": user_says("hi")}),
        )
        .await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("Downloading `no-such-model` from backend `localai` failed")
            && t.contains("no model found with name \"no-such-model\""),
        "{t}"
    );
    let chats_for_missing = f
        .requests("POST", "/v1/chat/completions")
        .into_iter()
        .filter(|s| s.body["model"] == "no-such-model")
        .count();
    assert_eq!(chats_for_missing, 0, "no chat after a failed download");
    h.gateway().shutdown().await;
}

// ------------------------------------------------------------- LM Studio

fn lmstudio(_f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    match (method, path) {
        ("GET", "/api/v1/models") => json_response(
            200,
            json!({"models": [
                {"type": "llm", "publisher": "qwen", "key": "qwen/qwen3-4b", "display_name": "Qwen3 4B",
                 "architecture": "qwen3", "quantization": {"name": "Q4_K_M", "bits_per_weight": 4},
                 "size_bytes": 2497280256u64, "params_string": "4B",
                 "loaded_instances": [{"id": "qwen/qwen3-4b", "config": {"context_length": 4096, "eval_batch_size": 512, "flash_attention": false, "offload_kv_cache_to_gpu": true}}],
                 "max_context_length": 32768, "format": "gguf",
                 "capabilities": {"vision": false, "trained_for_tool_use": true}, "description": null},
                {"type": "llm", "publisher": "google", "key": "google/gemma-3-4b", "display_name": "Gemma 3 4B",
                 "architecture": "gemma3", "quantization": {"name": "Q4_K_M", "bits_per_weight": 4},
                 "size_bytes": 3340000000u64, "params_string": "4B", "loaded_instances": [],
                 "max_context_length": 131072, "format": "gguf",
                 "capabilities": {"vision": true, "trained_for_tool_use": false}, "description": null},
                {"type": "embedding", "publisher": "nomic-ai", "key": "text-embedding-nomic-embed-text-v1.5",
                 "display_name": "Nomic Embed Text v1.5", "quantization": {"name": "Q4_K_M", "bits_per_weight": 4},
                 "size_bytes": 84106624u64, "params_string": null, "loaded_instances": [],
                 "max_context_length": 2048, "format": "gguf"}
            ]}),
        ),
        ("GET", "/v1/models") => json_response(
            200,
            json!({"object": "list", "data": [
                {"id": "qwen/qwen3-4b", "object": "model", "owned_by": "organization_owner"},
                {"id": "google/gemma-3-4b", "object": "model", "owned_by": "organization_owner"},
                {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "owned_by": "organization_owner"}
            ]}),
        ),
        ("POST", "/v1/chat/completions") => completion(body),
        ("POST", "/v1/embeddings") => embeddings(body),
        // LM Studio answers any other route with an `error` body.
        _ => json_response(
            200,
            json!({"error": format!("Unexpected endpoint or method. ({method} {path})")}),
        ),
    }
}

#[tokio::test]
async fn lmstudio_loaded_instances_and_capabilities() {
    let (f, port) = serve(lmstudio).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(identify(&client, port).await, Some(BackendKind::Lmstudio));

    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "lmstudio", "{r}");
    assert_eq!(ids(&b["loaded"]), ["qwen/qwen3-4b"], "{b}");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat", "tools"]));
    assert_eq!(b["loaded"][0]["size"], 2497280256u64);
    assert_eq!(
        ids(&b["downloaded"]),
        ["google/gemma-3-4b", "text-embedding-nomic-embed-text-v1.5"],
        "{b}"
    );
    assert_eq!(
        b["downloaded"][0]["capabilities"],
        json!(["chat", "vision"])
    );
    assert_eq!(b["downloaded"][1]["capabilities"], json!(["embeddings"]));
    // mcpyard cannot download through LM Studio: nothing to suggest.
    assert_eq!(b["suggested"], json!([]));
    assert_eq!(b["recommended_chat"], "qwen/qwen3-4b");

    // The loaded model answers chats; the downloaded embedding model
    // (loaded on first use by LM Studio) answers embeddings.
    let r = h.call("chat", json!({"messages": user_says("hi")})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "qwen/qwen3-4b");
    let r = h.call("embed", json!({"input": "x"})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        f.requests("POST", "/v1/embeddings")[0].body,
        json!({"model": "text-embedding-nomic-embed-text-v1.5", "input": "x"})
    );

    // A missing model is never downloaded through LM Studio.
    let r = h
        .call("chat", json!({"model": "openai/gpt-oss-20b", "allow_download": true, "messages": user_says("hi")}))
        .await;
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).contains("none of the servers found has a download API"),
        "{}",
        text(&r)
    );
    assert!(
        f.paths().iter().all(|p| !p.contains("/download")),
        "{:?}",
        f.paths()
    );
    h.gateway().shutdown().await;
}

// ---------------------------------------------------------- llama-server

const LLAMA_MODEL: &str = "gemma-3-4b-it-Q4_K_M.gguf";

fn llama_server(f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    let loading = || {
        json_response(
            503,
            json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
        )
    };
    let ready = f.ready.load(Ordering::SeqCst);
    match (method, path) {
        ("GET", "/health") | ("GET", "/v1/health") if ready => {
            json_response(200, json!({"status": "ok"}))
        }
        // The model list is served while loading too.
        ("GET", "/v1/models") | ("GET", "/models") => json_response(
            200,
            json!({
                "models": [{"name": LLAMA_MODEL, "model": LLAMA_MODEL, "modified_at": "", "size": "", "digest": "",
                            "type": "model", "description": "", "tags": [""], "capabilities": ["completion", "multimodal"],
                            "parameters": "", "details": {"parent_model": "", "format": "gguf", "family": "", "families": [""],
                            "parameter_size": "", "quantization_level": ""}}],
                "object": "list",
                "data": [{"id": LLAMA_MODEL, "object": "model", "created": 1754000000, "owned_by": "llamacpp",
                          "meta": {"vocab_type": 1, "n_vocab": 262144, "n_ctx_train": 131072, "n_embd": 2560,
                                   "n_params": 3880263168u64, "size": 2489757696u64}}]
            }),
        ),
        _ if !ready => loading(),
        ("GET", "/") => raw(
            200,
            "text/html; charset=utf-8",
            "<!doctype html><html><head><title>llama.cpp - chat</title></head></html>",
        ),
        ("GET", "/props") => json_response(
            200,
            json!({
                "default_generation_settings": {"id": 0, "n_ctx": 4096, "speculative": false, "is_processing": false,
                                                "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95}},
                "total_slots": 1, "model_alias": LLAMA_MODEL, "model_path": format!("/models/{LLAMA_MODEL}"),
                "modalities": {"vision": true, "audio": false},
                "chat_template": "{{ bos_token }}{% for message in messages %}...{% endfor %}",
                "bos_token": "<bos>", "eos_token": "<eos>", "build_info": "b6115-4227c9be"
            }),
        ),
        ("POST", "/v1/chat/completions") => completion(body),
        _ => json_response(
            404,
            json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}),
        ),
    }
}

#[tokio::test]
async fn llama_server_single_model_with_props_modalities() {
    let (f, port) = serve(llama_server).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(identify(&client, port).await, Some(BackendKind::Llamacpp));
    assert_eq!(f.requests("GET", "/props").len(), 1, "{:?}", f.paths());
    assert!(
        f.requests("GET", "/v1/models").is_empty(),
        "told apart by /props before the model list"
    );

    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    assert!(!is_error(&r), "{r}");
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "llamacpp", "{r}");
    // The one model it serves is loaded; `/props` adds what it sees.
    assert_eq!(ids(&b["loaded"]), [LLAMA_MODEL], "{b}");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat", "vision"]));
    assert_eq!(b["downloaded"], json!([]));
    assert_eq!(b["suggested"], json!([]));

    // Sampling settings reach the server as the client gave them.
    let settings = json!({
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 42,
        "stop": ["\n\n", "END"],
        "max_tokens": 16,
        "chat_template_kwargs": {"enable_thinking": false},
    });
    let mut args = settings.clone();
    args["messages"] = user_says("hi");
    let r = h.call("chat", args).await;
    assert!(!is_error(&r), "{r}");
    let sent = &f.requests("POST", "/v1/chat/completions")[0].body;
    assert_eq!(sent["model"], LLAMA_MODEL);
    for (key, value) in settings.as_object().unwrap() {
        assert_eq!(&sent[key], value, "{key} in {sent}");
    }
    assert_eq!(sent["stream"], false);
    // `stop` may be one string too.
    let r = h
        .call("chat", json!({"messages": user_says("hi"), "stop": "END"}))
        .await;
    assert!(!is_error(&r), "{r}");
    let sent = &f.requests("POST", "/v1/chat/completions")[1].body;
    assert_eq!(sent["stop"], "END", "{sent}");
    h.gateway().shutdown().await;
}

#[tokio::test]
async fn llama_server_still_loading_its_model() {
    let (f, port) = serve(llama_server).await;
    f.ready.store(false, Ordering::SeqCst);
    let client = reqwest::Client::new();
    let health = client
        .get(format!("http://127.0.0.1:{port}/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 503);

    // `/props` answers 503 while loading; the model list's `owned_by`
    // still says llama-server.
    let mc = mcpyard_inference::http_client();
    assert_eq!(identify(&mc, port).await, Some(BackendKind::Llamacpp));

    let h = Harness::new(config_with(
        BackendKind::Llamacpp,
        &format!("http://127.0.0.1:{port}"),
    ))
    .await;
    let r = h.call("list_models", json!({})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["healthy"], true, "{r}");
    assert_eq!(ids(&b["loaded"]), [LLAMA_MODEL], "{b}");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat"]));

    let r = h.call("chat", json!({"messages": user_says("hi")})).await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("HTTP 503") && t.contains("Loading model"), "{t}");

    // Loaded: the same call now works, and vision shows.
    f.ready.store(true, Ordering::SeqCst);
    let health = client
        .get(format!("http://127.0.0.1:{port}/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 200);
    let r = h.call("chat", json!({"messages": user_says("hi")})).await;
    assert!(!is_error(&r), "{r}");
    let r = h.call("list_models", json!({"refresh": true})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(
        b["loaded"][0]["capabilities"],
        json!(["chat", "vision"]),
        "{b}"
    );
    h.gateway().shutdown().await;
}

// ------------------------------------------------------------------ vLLM

fn vllm(_f: &Fixture, method: &str, path: &str, body: &Value) -> Response {
    match (method, path) {
        ("GET", "/health") => raw(200, "application/json", ""),
        ("GET", "/version") => json_response(200, json!({"version": "0.10.1"})),
        ("GET", "/v1/models") => json_response(
            200,
            json!({"object": "list", "data": [{
                "id": "Qwen/Qwen3-0.6B", "object": "model", "created": 1754000000, "owned_by": "vllm",
                "root": "Qwen/Qwen3-0.6B", "parent": null, "max_model_len": 40960,
                "permission": [{"id": "modelperm-3c1d2f", "object": "model_permission", "created": 1754000000,
                                "allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
                                "allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
                                "organization": "*", "group": null, "is_blocking": false}]
            }]}),
        ),
        ("POST", "/v1/chat/completions") => {
            if body["model"] != "Qwen/Qwen3-0.6B" {
                return json_response(
                    404,
                    json!({"object": "error", "message": format!("The model `{}` does not exist.", body["model"].as_str().unwrap_or("")),
                           "type": "NotFoundError", "param": null, "code": 404}),
                );
            }
            completion(body)
        }
        _ => json_response(404, json!({"detail": "Not Found"})),
    }
}

#[tokio::test]
async fn vllm_listed_models_are_loaded() {
    let (f, port) = serve(vllm).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(identify(&client, port).await, Some(BackendKind::Vllm));

    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h.call("list_models", json!({})).await;
    let b = &r["structuredContent"]["backends"][0];
    assert_eq!(b["kind"], "vllm", "{r}");
    assert_eq!(ids(&b["loaded"]), ["Qwen/Qwen3-0.6B"], "{b}");
    assert_eq!(b["loaded"][0]["capabilities"], json!(["chat"]));
    assert_eq!(b["downloaded"], json!([]));
    assert_eq!(b["suggested"], json!([]));

    let r = h.call("chat", json!({"messages": user_says("hi")})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["model"], "Qwen/Qwen3-0.6B");

    // Another model cannot be fetched through vLLM, even when allowed.
    let r = h
        .call(
            "chat",
            json!({"model": "Qwen/Qwen3-8B", "allow_download": true, "messages": user_says("hi")}),
        )
        .await;
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).contains("Model `Qwen/Qwen3-8B` is not available"),
        "{}",
        text(&r)
    );
    let chats = f.requests("POST", "/v1/chat/completions");
    assert_eq!(chats.len(), 1, "only the served model was asked");
    h.gateway().shutdown().await;
}

// ------------------------------------------------------- discovery order

/// Lemonade's health route and an Ollama heartbeat on the same port.
fn lemonade_imitating_ollama(_f: &Fixture, method: &str, path: &str, _body: &Value) -> Response {
    match (method, path) {
        ("GET", "/api/v1/health") => json_response(
            200,
            json!({"status": "ok", "version": "9.1.0", "model_loaded": null, "all_models_loaded": []}),
        ),
        ("GET", "/") => raw(200, "text/plain; charset=utf-8", "Ollama is running"),
        ("GET", "/api/tags") => json_response(200, json!({"models": []})),
        ("GET", "/v1/models") => json_response(200, json!({"object": "list", "data": []})),
        _ => json_response(404, json!({"detail": "Not Found"})),
    }
}

/// An OpenAI-compatible server with nothing native; `owned_by` is what the
/// fixture's `owner` says (absent when `None`).
fn plain_openai(f: &Fixture, method: &str, path: &str, _body: &Value) -> Response {
    match (method, path) {
        ("GET", "/v1/models") => {
            let mut m = json!({"id": "some-model", "object": "model", "created": 1});
            if let Some(o) = f.owner.lock().expect("lock").clone() {
                m["owned_by"] = json!(o);
            }
            json_response(200, json!({"object": "list", "data": [m]}))
        }
        _ => json_response(404, json!({"error": "not found"})),
    }
}

#[tokio::test]
async fn discovery_order_and_owned_by_fallbacks() {
    let client = mcpyard_inference::http_client();

    let (f, port) = serve(lemonade_imitating_ollama).await;
    assert_eq!(identify(&client, port).await, Some(BackendKind::Lemonade));
    assert!(f.requests("GET", "/").is_empty(), "{:?}", f.paths());

    let cases = [
        (Some("me"), BackendKind::Openai),
        (Some("organization_owner"), BackendKind::Openai),
        (None, BackendKind::Openai),
        (Some("vLLM"), BackendKind::Vllm),
        (Some("llamacpp"), BackendKind::Llamacpp),
        (Some("lemonade"), BackendKind::Lemonade),
    ];
    for (owner, want) in cases {
        let (f, port) = serve(plain_openai).await;
        *f.owner.lock().expect("lock") = owner.map(str::to_owned);
        assert_eq!(
            identify(&client, port).await,
            Some(want),
            "owned_by {owner:?}"
        );
        // Every native probe was tried before the model list decided.
        let paths = f.paths();
        for probe in [
            "GET /api/v1/health",
            "GET /",
            "GET /props",
            "GET /api/v1/models",
            "GET /.well-known/localai.json",
            "GET /system",
            "GET /v1/models",
        ] {
            assert!(
                paths.iter().any(|p| p == probe),
                "{probe} not probed: {paths:?}"
            );
        }
        assert_eq!(paths.last().map(String::as_str), Some("GET /v1/models"));
    }
}

#[tokio::test]
async fn several_servers_discovered_at_once() {
    let (_a, localai_port) = serve(localai).await;
    let (_b, lmstudio_port) = serve(lmstudio).await;
    let (_c, llama_port) = serve(llama_server).await;
    let (_d, vllm_port) = serve(vllm).await;
    let (e, openai_port) = serve(plain_openai).await;
    *e.owner.lock().expect("lock") = Some("me".into());
    let (_g, vllm2_port) = serve(vllm).await;
    let dead = support::free_port();
    let ports = vec![
        localai_port,
        lmstudio_port,
        dead,
        llama_port,
        vllm_port,
        openai_port,
        vllm2_port,
    ];
    let h = Harness::new(InferenceConfig {
        discover_ports: ports,
        ..InferenceConfig::default()
    })
    .await;
    let started = std::time::Instant::now();
    let r = h.call("list_models", json!({})).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "probes run side by side"
    );
    let backends = r["structuredContent"]["backends"]
        .as_array()
        .expect("backends")
        .clone();
    let got: Vec<(String, String)> = backends
        .iter()
        .map(|b| {
            (
                b["backend"].as_str().unwrap_or("").to_owned(),
                b["kind"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("localai".to_owned(), "localai"),
        ("lmstudio".to_owned(), "lmstudio"),
        ("llamacpp".to_owned(), "llamacpp"),
        ("vllm".to_owned(), "vllm"),
        ("openai".to_owned(), "openai"),
        (format!("vllm-{vllm2_port}"), "vllm"),
    ]
    .into_iter()
    .map(|(n, k)| (n, k.to_owned()))
    .collect();
    assert_eq!(got, want, "{r}");
    assert!(backends.iter().all(|b| b["healthy"] == true), "{r}");
    assert!(backends.iter().all(|b| b["url"]
        .as_str()
        .is_some_and(|u| u.starts_with("http://127.0.0.1:"))));
    // The loaded tool-calling chat model wins the recommendation.
    assert_eq!(
        r["structuredContent"]["recommended_chat"],
        json!({"backend": "lmstudio", "model": "qwen/qwen3-4b", "state": "loaded"})
    );
    h.gateway().shutdown().await;
}

/// LocalAI serving Ollama's routes, root text included (a LocalAI option).
fn localai_with_ollama_root(f: &Fixture, m: &str, p: &str, b: &Value) -> Response {
    match (m, p) {
        ("GET", "/") => raw(200, "text/plain; charset=UTF-8", "Ollama is running"),
        ("GET", "/api/tags") => json_response(
            200,
            json!({"models": [{"name": "qwen3-0.6b:latest", "model": "qwen3-0.6b:latest", "digest": "sha256:00"}]}),
        ),
        ("GET", "/api/ps") => json_response(
            200,
            json!({"models": [{"name": "qwen3-0.6b:latest", "model": "qwen3-0.6b:latest"}]}),
        ),
        _ => localai(f, m, p, b),
    }
}

#[tokio::test]
async fn localai_imitating_ollama_is_still_localai() {
    let (f, port) = serve(localai_with_ollama_root).await;
    let client = mcpyard_inference::http_client();
    assert_eq!(
        identify(&client, port).await,
        Some(BackendKind::Localai),
        "{:?}",
        f.paths()
    );
}

/// An older LocalAI: a job has no status for its first poll (500), then
/// fails the way Go marshals an error (`error: {}`, the reason in `message`).
fn localai_older_jobs(f: &Fixture, m: &str, p: &str, b: &Value) -> Response {
    if m == "GET" && p.starts_with("/models/jobs/") {
        let polls = f.requests("GET", p).len();
        if polls <= 1 {
            return json_response(
                500,
                json!({"error": {"code": 500, "message": "could not find any status for ID", "type": ""}}),
            );
        }
        return json_response(
            200,
            json!({"deletion": false, "processed": true, "progress": 0.0,
                   "message": "error: no model found with name \"gone-model\"", "error": {}}),
        );
    }
    localai(f, m, p, b)
}

#[tokio::test]
async fn an_older_localai_job_is_waited_for_and_its_failure_explained() {
    let (f, port) = serve(localai_older_jobs).await;
    let h = Harness::new(InferenceConfig {
        discover_ports: vec![port],
        ..InferenceConfig::default()
    })
    .await;
    let r = h
        .call(
            "chat",
            json!({"model": "gone-model", "allow_download": true, "messages": user_says("hi")}),
        )
        .await;
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(
        t.contains("no model found with name") && t.contains("gone-model"),
        "{t}"
    );
    let polls: Vec<String> = f
        .paths()
        .into_iter()
        .filter(|p| p.contains("/models/jobs/"))
        .collect();
    assert_eq!(polls.len(), 2, "the early 500 was waited out: {polls:?}");
}
