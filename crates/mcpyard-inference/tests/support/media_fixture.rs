//! A faithful HTTP fixture of a LocalAI-style server for the media tools:
//! `/v1/models`, `/system`, `/v1/audio/transcriptions` (multipart),
//! `/v1/images/generations`, `/v1/audio/speech` and vision
//! `/v1/chat/completions`. Each route checks what it receives the way the
//! OpenAI API defines it (answering 400 with the reason otherwise),
//! records it for the test, and answers with the documented shapes.
#![allow(dead_code)] // each test uses a part

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;
use serde_json::{json, Value};

/// How the fixture misbehaves, when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Normal,
    /// Every generation route answers HTTP 500.
    Fail500,
    /// Generation routes answer 200 with a truncated JSON body.
    Malformed,
    /// Images are answered as URLs to this server, not base64.
    UrlImages,
}

/// One part of a multipart upload.
#[derive(Debug, Clone)]
pub(crate) struct FormPart {
    pub(crate) name: String,
    pub(crate) filename: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) data: Vec<u8>,
}

/// One request the fixture received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) content_type: String,
    pub(crate) json: Value,
    pub(crate) form: Vec<FormPart>,
}

impl Seen {
    pub(crate) fn part(&self, name: &str) -> Option<&FormPart> {
        self.form.iter().find(|p| p.name == name)
    }

    pub(crate) fn field(&self, name: &str) -> Option<String> {
        self.part(name)
            .map(|p| String::from_utf8_lossy(&p.data).into_owned())
    }
}

#[derive(Clone)]
struct St {
    seen: Arc<Mutex<Vec<Seen>>>,
    mode: Arc<Mutex<Mode>>,
    port: u16,
}

/// The running fixture; its task ends with the test's runtime.
pub(crate) struct MediaFixture {
    pub(crate) port: u16,
    st: St,
}

impl MediaFixture {
    pub(crate) async fn start(mode: Mode) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("addr").port();
        let st = St {
            seen: Arc::default(),
            mode: Arc::new(Mutex::new(mode)),
            port,
        };
        let app = Router::new()
            .route("/v1/models", get(models))
            .route("/system", get(system))
            .route("/v1/audio/transcriptions", post(transcriptions))
            .route("/v1/images/generations", post(images))
            .route("/generated/{name}", get(generated))
            .route("/v1/audio/speech", post(speech))
            .route("/v1/chat/completions", post(chat))
            .fallback(|| async { text(404, "text/plain", "404 page not found") })
            // Vision requests carry megabytes of data URLs, as real
            // servers accept.
            .layer(DefaultBodyLimit::max(256 * 1024 * 1024))
            .with_state(st.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { port, st }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn set_mode(&self, mode: Mode) {
        *self.st.mode.lock().expect("lock") = mode;
    }

    /// Requests received on `path`, in order.
    pub(crate) fn requests(&self, path: &str) -> Vec<Seen> {
        self.st
            .seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }
}

fn text(status: u16, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body.into())
        .expect("response")
}

fn json_response(status: u16, v: Value) -> Response {
    text(status, "application/json", v.to_string())
}

fn bad_request(why: impl Into<String>) -> Response {
    json_response(
        400,
        json!({"error": {"message": why.into(), "type": "invalid_request_error"}}),
    )
}

/// The misbehaviour of the current mode, if any.
fn failure(st: &St) -> Option<Response> {
    match *st.mode.lock().expect("lock") {
        Mode::Fail500 => Some(json_response(
            500,
            json!({"error": {"message": "backend crashed: out of memory", "code": 500}}),
        )),
        Mode::Malformed => Some(text(
            200,
            "application/json",
            "{\"created\": 1, \"data\": [",
        )),
        _ => None,
    }
}

fn record(st: &St, path: &str, headers: &HeaderMap, json: Value, form: Vec<FormPart>) {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    st.seen.lock().expect("lock").push(Seen {
        path: path.to_owned(),
        content_type,
        json,
        form,
    });
}

/// LocalAI's model list: one model per capability.
async fn models() -> Response {
    let ids = [
        "whisper-1",
        "stablediffusion",
        "tts-1",
        "llava-1.6-mistral",
        "qwen3-0.6b",
    ];
    let data: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "object": "model"}))
        .collect();
    json_response(200, json!({"object": "list", "data": data}))
}

async fn system() -> Response {
    json_response(
        200,
        json!({"backends": ["whisper", "stablediffusion", "kokoro", "llama-cpp"],
               "loaded_models": [{"id": "whisper-1"}, {"id": "stablediffusion"}, {"id": "tts-1"}, {"id": "llava-1.6-mistral"}]}),
    )
}

const FORM_FIELDS: [&str; 6] = [
    "file",
    "model",
    "language",
    "prompt",
    "response_format",
    "temperature",
];

async fn transcriptions(State(st): State<St>, headers: HeaderMap, mut mp: Multipart) -> Response {
    let mut form = Vec::new();
    loop {
        match mp.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or("").to_owned();
                let filename = field.file_name().map(str::to_owned);
                let content_type = field.content_type().map(str::to_owned);
                let data = match field.bytes().await {
                    Ok(b) => b.to_vec(),
                    Err(e) => return bad_request(format!("unreadable part: {e}")),
                };
                form.push(FormPart {
                    name,
                    filename,
                    content_type,
                    data,
                });
            }
            Ok(None) => break,
            Err(e) => return bad_request(format!("not a multipart form: {e}")),
        }
    }
    record(
        &st,
        "/v1/audio/transcriptions",
        &headers,
        Value::Null,
        form.clone(),
    );
    if let Some(r) = failure(&st) {
        return r;
    }
    if let Some(p) = form
        .iter()
        .find(|p| !FORM_FIELDS.contains(&p.name.as_str()))
    {
        return bad_request(format!("unknown field {}", p.name));
    }
    let Some(file) = form.iter().find(|p| p.name == "file") else {
        return bad_request("file is required");
    };
    if file.filename.is_none() || file.content_type.is_none() || file.data.is_empty() {
        return bad_request("file must be a file part with a filename and a content type");
    }
    let field = |n: &str| {
        form.iter()
            .find(|p| p.name == n)
            .map(|p| String::from_utf8_lossy(&p.data).into_owned())
    };
    if field("model").is_none_or(|m| m.is_empty()) {
        return bad_request("model is required");
    }
    match field("response_format").as_deref().unwrap_or("json") {
        "json" => json_response(200, json!({"text": "Hello world, this is a test."})),
        "verbose_json" => json_response(
            200,
            json!({
                "task": "transcribe", "language": "english", "duration": 2.5,
                "text": "Hello world, this is a test.",
                "segments": [
                    {"id": 0, "seek": 0, "start": 0.0, "end": 1.2, "text": " Hello world,", "tokens": [50364, 2425], "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 0.9, "no_speech_prob": 0.01},
                    {"id": 1, "seek": 0, "start": 1.2, "end": 2.5, "text": " this is a test.", "tokens": [341, 307], "temperature": 0.0, "avg_logprob": -0.25, "compression_ratio": 0.9, "no_speech_prob": 0.01}
                ]
            }),
        ),
        "text" => text(
            200,
            "text/plain; charset=utf-8",
            "Hello world, this is a test.\n",
        ),
        "srt" => text(
            200,
            "text/plain; charset=utf-8",
            "1\n00:00:00,000 --> 00:00:02,500\nHello world, this is a test.\n\n",
        ),
        "vtt" => text(
            200,
            "text/vtt; charset=utf-8",
            "WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nHello world, this is a test.\n\n",
        ),
        other => bad_request(format!("unsupported response_format {other}")),
    }
}

/// A small PNG of one colour.
pub(crate) fn png(w: u32, h: u32, rgb: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb(rgb));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("encode png");
    out
}

async fn images(State(st): State<St>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return bad_request("body is not JSON");
    };
    record(
        &st,
        "/v1/images/generations",
        &headers,
        v.clone(),
        Vec::new(),
    );
    if let Some(r) = failure(&st) {
        return r;
    }
    if v["prompt"].as_str().is_none_or(str::is_empty) || v["model"].as_str().is_none() {
        return bad_request("prompt and model are required");
    }
    let n = v["n"].as_u64().unwrap_or(1);
    let url_mode = *st.mode.lock().expect("lock") == Mode::UrlImages;
    if !url_mode && v["response_format"] != json!("b64_json") {
        return bad_request("this test expects response_format b64_json");
    }
    let data: Vec<Value> = (0..n)
        .map(|i| {
            if url_mode {
                json!({"url": format!("http://localhost:{}/generated/img-{i}.png", st.port)})
            } else {
                let b = base64::engine::general_purpose::STANDARD.encode(png(
                    8,
                    8,
                    [i as u8 * 60, 20, 200],
                ));
                json!({"b64_json": b})
            }
        })
        .collect();
    json_response(200, json!({"created": 1767225600, "data": data}))
}

async fn generated(Path(name): Path<String>) -> Response {
    if !name.starts_with("img-") {
        return text(404, "text/plain", "no such image");
    }
    text(200, "image/png", png(8, 8, [0, 255, 0]))
}

/// A short valid WAV: 16-bit mono PCM at 24 kHz.
pub(crate) fn wav(samples: usize) -> Vec<u8> {
    let data_len = (samples * 2) as u32;
    let mut out = Vec::with_capacity(44 + samples * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&24_000u32.to_le_bytes());
    out.extend_from_slice(&48_000u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..samples {
        let s = ((i as f32 * 0.05).sin() * 8000.0) as i16;
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

async fn speech(State(st): State<St>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return bad_request("body is not JSON");
    };
    record(&st, "/v1/audio/speech", &headers, v.clone(), Vec::new());
    if let Some(r) = failure(&st) {
        return r;
    }
    if v["model"].as_str().is_none() || v["input"].as_str().is_none_or(str::is_empty) {
        return bad_request("model and input are required");
    }
    match v["response_format"].as_str().unwrap_or("mp3") {
        "wav" => text(200, "audio/wav", wav(240)),
        other => bad_request(format!("this test serves wav only, not {other}")),
    }
}

async fn chat(State(st): State<St>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return bad_request("body is not JSON");
    };
    record(&st, "/v1/chat/completions", &headers, v.clone(), Vec::new());
    if let Some(r) = failure(&st) {
        return r;
    }
    let Some(messages) = v["messages"].as_array() else {
        return bad_request("messages is required");
    };
    // Every image part must be an OpenAI vision part with a base64 data
    // URL of an image type (Ollama and llama-server take nothing else).
    for m in messages {
        if let Some(parts) = m["content"].as_array() {
            for p in parts {
                match p["type"].as_str() {
                    Some("text") if p["text"].is_string() => {}
                    Some("image_url") => {
                        let url = p["image_url"]["url"].as_str().unwrap_or("");
                        if !url.starts_with("data:image/") || !url.contains(";base64,") {
                            return bad_request(format!(
                                "image_url must be a base64 data URL, got {:.40}",
                                url
                            ));
                        }
                    }
                    _ => return bad_request(format!("bad content part {p}")),
                }
            }
        }
    }
    json_response(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": v["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "A red square on a blue background."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 600, "completion_tokens": 9, "total_tokens": 609}
        }),
    )
}
