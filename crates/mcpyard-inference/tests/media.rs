//! The media tools (transcribe_audio, generate_image, speak,
//! analyze_image) through a real gateway, against a faithful fixture of an
//! OpenAI-compatible media server that checks what mcpyard sends:
//! multipart uploads, JSON bodies, vision data URLs, one image per
//! preprocessing variant; and the output sandbox, which nothing escapes.

mod support;

#[path = "support/media_fixture.rs"]
mod media_fixture;

use std::io::Cursor;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use mcpyard_inference::BackendKind;
use media_fixture::{png, wav, MediaFixture, Mode};
use serde_json::{json, Value};
use support::{config_with, is_error, text, Harness};

/// A gateway whose inference source uses the fixture, with an input root
/// and an output folder in a temporary directory.
struct Env {
    fixture: MediaFixture,
    harness: Harness,
    dir: tempfile::TempDir,
}

impl Env {
    async fn new(kind: BackendKind, mode: Mode) -> Self {
        Self::with_cap(kind, mode, 4 * 1024 * 1024).await
    }

    async fn with_cap(kind: BackendKind, mode: Mode, max_base64_bytes: u64) -> Self {
        let fixture = MediaFixture::start(mode).await;
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("in")).expect("mkdir in");
        let mut config = config_with(kind, &fixture.url());
        config.input_roots = vec![dir.path().join("in")];
        config.output_dir = Some(dir.path().join("out"));
        config.max_base64_bytes = max_base64_bytes;
        let harness = Harness::new(config).await;
        Self {
            fixture,
            harness,
            dir,
        }
    }

    fn input(&self, name: &str) -> PathBuf {
        self.dir.path().join("in").join(name)
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    async fn call(&self, tool: &str, args: Value) -> Value {
        self.harness.call(tool, args).await
    }
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A 64×32 JPEG with colour gradients in both directions.
fn photo_jpeg() -> Vec<u8> {
    let img = image::RgbImage::from_fn(64, 32, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 8) as u8, 255 - (x * 2) as u8])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Jpeg)
        .expect("encode jpeg");
    out
}

/// The bytes of a `data:<mime>;base64,` URL, checking its MIME type.
fn data_url_bytes(url: &str, mime: &str) -> Vec<u8> {
    let prefix = format!("data:{mime};base64,");
    let b = url
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("expected a {mime} data URL, got {:.40}", url));
    STANDARD.decode(b).expect("valid base64")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                out.extend(files_in(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn the_media_tools_are_listed_with_task_support() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let tools = env.harness.tools().await;
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == format!("local__{name}"))
            .cloned()
            .unwrap_or_else(|| panic!("local__{name} is listed"))
    };
    for name in [
        "transcribe_audio",
        "speak",
        "generate_image",
        "analyze_image",
    ] {
        let t = find(name);
        assert_eq!(t["inputSchema"]["type"], "object", "{name}");
        assert!(t["annotations"].is_object(), "{name}");
    }
    for name in ["generate_image", "analyze_image"] {
        assert_eq!(find(name)["execution"]["taskSupport"], "optional", "{name}");
    }
}

// ------------------------------------------------------------ transcribe

#[tokio::test]
async fn transcription_is_the_openai_multipart_upload() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let audio = wav(4000);
    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_base64": b64(&audio), "filename": "meeting", "language": "en",
                   "prompt": "Names: Ada", "temperature": 0.2}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["content"][0]["text"], "Hello world, this is a test.");
    let sc = &r["structuredContent"];
    assert_eq!(sc["model"], "whisper-1", "a transcription model was chosen");
    assert_eq!(sc["response"]["text"], "Hello world, this is a test.");
    assert_eq!(sc["response_format"], "json");

    let seen = env.fixture.requests("/v1/audio/transcriptions");
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert!(
        s.content_type.starts_with("multipart/form-data; boundary="),
        "{}",
        s.content_type
    );
    let file = s.part("file").expect("a file part");
    assert_eq!(file.filename.as_deref(), Some("meeting.wav"));
    assert_eq!(file.content_type.as_deref(), Some("audio/wav"));
    assert_eq!(file.data, audio, "the audio arrives byte for byte");
    assert_eq!(s.field("model").as_deref(), Some("whisper-1"));
    assert_eq!(s.field("language").as_deref(), Some("en"));
    assert_eq!(s.field("prompt").as_deref(), Some("Names: Ada"));
    assert_eq!(s.field("response_format").as_deref(), Some("json"));
    assert_eq!(s.field("temperature").as_deref(), Some("0.2"));
}

#[tokio::test]
async fn transcription_from_a_file_in_every_format() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let audio = wav(1000);
    std::fs::write(env.input("talk.wav"), &audio).expect("write input");
    let path = env.input("talk.wav").to_string_lossy().into_owned();

    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_path": path, "response_format": "verbose_json"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let segments = r["structuredContent"]["response"]["segments"]
        .as_array()
        .expect("segments kept");
    assert_eq!(segments.len(), 2);
    assert_eq!(segments[1]["end"], 2.5);
    let seen = env.fixture.requests("/v1/audio/transcriptions");
    let file = seen[0].part("file").expect("file part");
    assert_eq!(file.filename.as_deref(), Some("talk.wav"));
    assert_eq!(file.data, audio);

    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_path": path, "response_format": "srt"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("1\n00:00:00,000 --> 00:00:02,500"),
        "{}",
        text(&r)
    );
    assert!(r["structuredContent"]["response"].is_string());

    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_path": path, "response_format": "vtt"}),
        )
        .await;
    assert!(text(&r).starts_with("WEBVTT"), "{r}");
    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_path": path, "response_format": "text"}),
        )
        .await;
    assert_eq!(r["content"][0]["text"], "Hello world, this is a test.");
    let formats: Vec<String> = env
        .fixture
        .requests("/v1/audio/transcriptions")
        .iter()
        .filter_map(|s| s.field("response_format"))
        .collect();
    assert_eq!(formats, ["verbose_json", "srt", "vtt", "text"]);
}

#[tokio::test]
async fn bad_audio_inputs_are_refused_before_any_upload() {
    let env = Env::with_cap(BackendKind::Localai, Mode::Normal, 1024).await;
    std::fs::write(env.dir.path().join("secret.wav"), wav(10)).expect("write");
    let cases = [
        (
            json!({"audio_base64": "A".repeat(4000)}),
            "max_base64_bytes",
        ),
        (
            json!({"audio_base64": b64(b"this is plain text, not audio at all")}),
            "wav, mp3",
        ),
        (json!({"audio_base64": "@@@@not base64@@@@"}), "base64"),
        (
            json!({"audio_path": env.dir.path().join("secret.wav").to_string_lossy()}),
            "input_roots",
        ),
        (
            json!({"audio_path": env.input("missing.wav").to_string_lossy()}),
            "Cannot open",
        ),
        (json!({}), "audio_path"),
        (
            json!({"audio_base64": b64(&wav(10)), "response_format": "docx"}),
            "response_format",
        ),
        (
            json!({"audio_base64": b64(&wav(10)), "model": "no-such-model"}),
            "no-such-model",
        ),
    ];
    for (args, expect) in cases {
        let r = env.call("transcribe_audio", args.clone()).await;
        assert!(is_error(&r), "{args} should fail: {r}");
        assert!(
            text(&r).contains(expect),
            "{args}: expected `{expect}` in {}",
            text(&r)
        );
    }
    assert!(env.fixture.requests("/v1/audio/transcriptions").is_empty());
}

// --------------------------------------------------------- generate_image

#[tokio::test]
async fn generated_images_come_back_as_image_blocks() {
    let env = Env::new(BackendKind::Openai, Mode::Normal).await;
    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "negative_prompt": "blurry", "n": 2, "size": "64x64",
                   "steps": 4, "cfg_scale": 1.5, "seed": 42}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let blocks: Vec<&Value> = r["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|b| b["type"] == "image")
        .collect();
    assert_eq!(blocks.len(), 2);
    for b in &blocks {
        assert_eq!(b["mimeType"], "image/png");
        let bytes = STANDARD
            .decode(b["data"].as_str().expect("data"))
            .expect("base64");
        let img = image::load_from_memory(&bytes).expect("a real PNG");
        assert_eq!((img.width(), img.height()), (8, 8));
    }
    assert_eq!(
        r["structuredContent"]["images"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(r["structuredContent"]["paths"], json!([]));
    let seen = env.fixture.requests("/v1/images/generations");
    assert_eq!(
        seen[0].json,
        json!({"model": "stablediffusion", "prompt": "a cat", "negative_prompt": "blurry", "n": 2,
               "size": "64x64", "steps": 4, "cfg_scale": 1.5, "seed": 42, "response_format": "b64_json"})
    );
    assert!(
        files_in(&env.out()).is_empty(),
        "nothing written without an output argument"
    );
}

#[tokio::test]
async fn localai_gets_its_own_prompt_and_step_fields() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "negative_prompt": "blurry", "steps": 4}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let body = &env.fixture.requests("/v1/images/generations")[0].json;
    assert_eq!(body["prompt"], "a cat|blurry");
    assert_eq!(body["step"], 4);
    assert!(
        body.get("negative_prompt").is_none() && body.get("steps").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn image_urls_on_the_same_server_are_fetched() {
    let env = Env::new(BackendKind::Localai, Mode::UrlImages).await;
    let r = env
        .call("generate_image", json!({"prompt": "a leaf"}))
        .await;
    assert!(!is_error(&r), "{r}");
    let block = r["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "image"))
        .expect("an image block");
    let bytes = STANDARD
        .decode(block["data"].as_str().expect("data"))
        .expect("base64");
    let img = image::load_from_memory(&bytes).expect("png").to_rgb8();
    assert_eq!(img.get_pixel(0, 0).0, [0, 255, 0], "the fetched image");
}

#[tokio::test]
async fn generated_files_go_into_the_output_folder() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "n": 2, "output_dir": "."}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let root = std::fs::canonicalize(env.out()).expect("output folder exists");
    let paths: Vec<PathBuf> = r["structuredContent"]["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|p| PathBuf::from(p.as_str().expect("string")))
        .collect();
    assert_eq!(paths.len(), 2);
    for (i, p) in paths.iter().enumerate() {
        assert!(p.starts_with(&root), "{}", p.display());
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        assert!(
            name.starts_with("image-") && name.ends_with(&format!("-{}.png", i + 1)),
            "{name}"
        );
        assert!(
            text(&r).contains(&p.display().to_string()),
            "the text lists {}",
            p.display()
        );
        image::load_from_memory(&std::fs::read(p).expect("written")).expect("a PNG");
    }
    assert!(r["content"]
        .as_array()
        .expect("content")
        .iter()
        .all(|b| b["type"] == "text"));

    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "output_path": "cats/one.png"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let one = root.join("cats/one.png");
    assert_eq!(
        r["structuredContent"]["paths"],
        json!([one.display().to_string()])
    );
    let first = std::fs::read(&one).expect("written");
    let again = env
        .call(
            "generate_image",
            json!({"prompt": "a dog", "output_path": "cats/one.png"}),
        )
        .await;
    assert!(
        is_error(&again) && text(&again).contains("already exists"),
        "{again}"
    );
    assert_eq!(
        std::fs::read(&one).expect("still there"),
        first,
        "never overwritten"
    );

    let abs = root.join("abs.png");
    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "output_path": abs.to_string_lossy()}),
        )
        .await;
    assert!(
        !is_error(&r),
        "an absolute path inside the folder is fine: {r}"
    );
    assert!(abs.is_file());

    let r = env
        .call(
            "generate_image",
            json!({"prompt": "a cat", "n": 2, "output_path": "two.png"}),
        )
        .await;
    assert!(is_error(&r) && text(&r).contains("n = 1"), "{r}");
}

#[tokio::test]
async fn sandbox_escapes_are_refused_and_nothing_is_written() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::create_dir_all(env.out()).expect("mkdir out");
    std::fs::write(outside.join("target.png"), b"keep").expect("write");
    std::os::unix::fs::symlink(&outside, env.out().join("link")).expect("dir symlink");
    std::os::unix::fs::symlink(outside.join("target.png"), env.out().join("existing.png"))
        .expect("file symlink");
    let abs_outside = outside.join("abs.png").to_string_lossy().into_owned();
    let cases = [
        json!({"output_path": "../escape.png"}),
        json!({"output_path": "sub/../../escape.png"}),
        json!({"output_path": abs_outside}),
        json!({"output_path": "link/evil.png"}),
        json!({"output_path": "link/deeper/evil.png"}),
        json!({"output_path": "existing.png"}),
        json!({"output_dir": "link"}),
        json!({"output_dir": "../elsewhere"}),
        json!({"output_dir": outside.to_string_lossy()}),
    ];
    for extra in cases {
        let mut args = json!({"prompt": "a cat"});
        args.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        let r = env.call("generate_image", args).await;
        assert!(is_error(&r), "{extra} must be refused: {r}");
        assert!(
            text(&r).contains("output folder") || text(&r).contains("symbolic link"),
            "{extra}: {}",
            text(&r)
        );
    }
    for (tool, args) in [
        (
            "speak",
            json!({"input": "hi", "output_path": "../speech.wav"}),
        ),
        (
            "speak",
            json!({"input": "hi", "output_path": "link/speech.wav"}),
        ),
    ] {
        let r = env.call(tool, args.clone()).await;
        assert!(is_error(&r), "{args}: {r}");
    }
    assert_eq!(files_in(&outside), vec![outside.join("target.png")]);
    assert_eq!(
        std::fs::read(outside.join("target.png")).expect("read"),
        b"keep"
    );
    assert!(!env.dir.path().join("escape.png").exists());
    assert!(!env.dir.path().join("speech.wav").exists());
    assert!(!env.dir.path().join("elsewhere").exists());
    assert!(
        env.fixture.requests("/v1/images/generations").is_empty(),
        "refused before generating"
    );
    assert!(env.fixture.requests("/v1/audio/speech").is_empty());
}

// ------------------------------------------------------------------ speak

#[tokio::test]
async fn speech_comes_back_as_an_audio_block_or_a_file() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let r = env
        .call(
            "speak",
            json!({"input": "Hello there", "voice": "af_heart", "speed": 1.25}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let audio = r["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "audio"))
        .expect("an audio block");
    assert_eq!(audio["mimeType"], "audio/wav");
    let bytes = STANDARD
        .decode(audio["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(bytes, wav(240));
    assert_eq!(
        env.fixture.requests("/v1/audio/speech")[0].json,
        json!({"model": "tts-1", "input": "Hello there", "voice": "af_heart", "response_format": "wav", "speed": 1.25})
    );

    let r = env
        .call(
            "speak",
            json!({"input": "Hello", "output_path": "hello.wav"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let written = std::fs::canonicalize(env.out())
        .expect("out")
        .join("hello.wav");
    assert_eq!(std::fs::read(&written).expect("written"), wav(240));
    assert_eq!(
        r["structuredContent"]["path"],
        written.display().to_string()
    );
    assert!(r["content"]
        .as_array()
        .expect("content")
        .iter()
        .all(|b| b["type"] == "text"));
}

// ---------------------------------------------------------- analyze_image

#[tokio::test]
async fn each_preprocessing_variant_is_its_own_image() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let jpeg = photo_jpeg();
    let r = env
        .call(
            "analyze_image",
            json!({
                "images": [{"data": b64(&jpeg), "mimeType": "image/jpeg", "name": "photo.jpg"}],
                "preprocess": ["grayscale", {"type": "equalize", "clip_limit": 3}, {"type": "resize", "max_side": 16}]
            }),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "A red square on a blue background.");
    let sc = &r["structuredContent"];
    assert_eq!(
        sc["model"], "llava-1.6-mistral",
        "a vision model was chosen"
    );
    assert_eq!(sc["task"], "describe");
    assert_eq!(sc["images"][0]["width"], 64);
    assert_eq!(sc["images"][0]["sent"].as_array().map(Vec::len), Some(4));

    let seen = env.fixture.requests("/v1/chat/completions");
    assert_eq!(seen.len(), 1);
    let body = &seen[0].json;
    assert_eq!(body["model"], "llava-1.6-mistral");
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["messages"][0]["content"]
        .as_str()
        .expect("system")
        .contains("describe"));
    let user = &body["messages"][1];
    assert_eq!(user["role"], "user");
    let urls: Vec<&str> = user["content"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == "image_url")
        .map(|p| p["image_url"]["url"].as_str().expect("url"))
        .collect();
    assert_eq!(urls.len(), 4, "original + 3 variants");
    assert_eq!(
        data_url_bytes(urls[0], "image/jpeg"),
        jpeg,
        "the original as sent"
    );
    let original = image::load_from_memory(&jpeg).expect("jpeg").to_rgb8();

    let gray = image::load_from_memory(&data_url_bytes(urls[1], "image/png"))
        .expect("png")
        .to_rgb8();
    assert_eq!(gray.dimensions(), (64, 32));
    assert!(
        gray.pixels().all(|p| p[0] == p[1] && p[1] == p[2]),
        "grayscale: R = G = B"
    );
    assert!(
        original.pixels().any(|p| p[0] != p[2]),
        "the original has colour"
    );

    let eq = image::load_from_memory(&data_url_bytes(urls[2], "image/png"))
        .expect("png")
        .to_rgb8();
    assert_eq!(eq.dimensions(), (64, 32));
    let changed = eq
        .pixels()
        .zip(original.pixels())
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        changed > 64 * 32 / 2,
        "equalisation changed {changed} pixels"
    );

    let small = image::load_from_memory(&data_url_bytes(urls[3], "image/png")).expect("png");
    assert_eq!(
        (small.width(), small.height()),
        (16, 8),
        "resize: max side 16"
    );

    let labels: Vec<&str> = user["content"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(labels[0], "Describe this image.");
    assert!(
        labels[1].contains("photo.jpg") && labels[1].contains("original"),
        "{labels:?}"
    );
    assert!(labels[2].contains("grayscale"), "{labels:?}");
}

#[tokio::test]
async fn compare_and_ocr_have_their_own_instructions() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let red = png(20, 10, [255, 0, 0]);
    std::fs::write(env.input("blue.png"), png(10, 20, [0, 0, 255])).expect("write");
    let blue_path = env.input("blue.png").to_string_lossy().into_owned();

    let one = env
        .call(
            "analyze_image",
            json!({"task": "compare", "images": [{"data": b64(&red)}]}),
        )
        .await;
    assert!(
        is_error(&one) && text(&one).contains("at least two"),
        "{one}"
    );

    let r = env
        .call(
            "analyze_image",
            json!({"task": "compare", "keep_original": false, "preprocess": ["grayscale"],
                   "images": [{"data": b64(&red), "name": "red"}, {"path": blue_path}]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let body = &env.fixture.requests("/v1/chat/completions")[0].json;
    assert!(body["messages"][0]["content"]
        .as_str()
        .expect("system")
        .contains("compare"));
    let parts = body["messages"][1]["content"].as_array().expect("parts");
    assert_eq!(parts[0]["text"], "Compare these 2 images.");
    let urls: Vec<&str> = parts
        .iter()
        .filter(|p| p["type"] == "image_url")
        .filter_map(|p| p["image_url"]["url"].as_str())
        .collect();
    assert_eq!(urls.len(), 2, "one grayscale variant each, no originals");
    assert!(urls.iter().all(|u| u.starts_with("data:image/png;base64,")));
    assert_eq!(r["structuredContent"]["images"][1]["name"], "blue.png");

    let r = env
        .call(
            "analyze_image",
            json!({"task": "ocr", "images": [{"data": b64(&red)}], "max_tokens": 200,
                   "messages": [{"role": "user", "content": "Only the first line, please."}],
                   "messages_position": "after"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let body = &env.fixture.requests("/v1/chat/completions")[1].json;
    assert!(body["messages"][0]["content"]
        .as_str()
        .expect("system")
        .contains("exactly"));
    assert_eq!(body["max_tokens"], 200);
    let msgs = body["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 3);
    assert_eq!(
        msgs[2]["content"], "Only the first line, please.",
        "appended after the images"
    );
}

#[tokio::test]
async fn bad_images_are_named_in_the_error() {
    let env = Env::with_cap(BackendKind::Localai, Mode::Normal, 64 * 1024).await;
    let good = json!({"data": b64(&png(4, 4, [1, 2, 3]))});
    let mut truncated = png(32, 32, [9, 9, 9]);
    truncated.truncate(truncated.len() / 2);
    std::fs::write(env.dir.path().join("secret.png"), png(4, 4, [0, 0, 0])).expect("write");
    let cases = [
        (
            json!({"data": b64(b"definitely not an image"), "name": "broken.png"}),
            vec!["images[1]", "broken.png", "PNG, JPEG or WebP"],
        ),
        (
            json!({"data": b64(&truncated), "name": "cut.png"}),
            vec!["images[1]", "cut.png", "could not be decoded"],
        ),
        (
            json!({"data": "A".repeat(200_000)}),
            vec!["images[1].data", "max_base64_bytes"],
        ),
        (
            json!({"path": env.dir.path().join("secret.png").to_string_lossy()}),
            vec!["input_roots"],
        ),
        (
            json!({"path": env.input("nope.png").to_string_lossy()}),
            vec!["Cannot open"],
        ),
        (
            json!({"url": "http://example.com/a.png"}),
            vec!["images[1]", "url"],
        ),
    ];
    for (bad, expects) in cases {
        let r = env
            .call(
                "analyze_image",
                json!({"images": [good.clone(), bad.clone()]}),
            )
            .await;
        assert!(is_error(&r), "{bad}: {r}");
        for e in expects {
            assert!(
                text(&r).contains(e),
                "{bad}: expected `{e}` in {}",
                text(&r)
            );
        }
    }
    let r = env
        .call(
            "analyze_image",
            json!({"images": [good.clone()], "preprocess": ["sharpen"]}),
        )
        .await;
    assert!(is_error(&r) && text(&r).contains("sharpen"), "{r}");
    let r = env
        .call(
            "analyze_image",
            json!({"images": [good], "model": "missing-vision-model"}),
        )
        .await;
    assert!(
        is_error(&r) && text(&r).contains("missing-vision-model"),
        "{r}"
    );
    assert!(env.fixture.requests("/v1/chat/completions").is_empty());
}

// --------------------------------------------------------- backend errors

#[tokio::test]
async fn backend_errors_become_tool_errors() {
    let env = Env::new(BackendKind::Localai, Mode::Fail500).await;
    let image = json!({"images": [{"data": b64(&png(4, 4, [1, 2, 3]))}]});
    let calls = [
        ("generate_image", json!({"prompt": "a cat"})),
        ("transcribe_audio", json!({"audio_base64": b64(&wav(10))})),
        ("speak", json!({"input": "hi"})),
        ("analyze_image", image.clone()),
    ];
    for (tool, args) in &calls {
        let r = env.call(tool, args.clone()).await;
        assert!(is_error(&r), "{tool}: {r}");
        let t = text(&r);
        assert!(
            t.contains("HTTP 500") && t.contains("out of memory"),
            "{tool}: {t}"
        );
    }
    env.fixture.set_mode(Mode::Malformed);
    for (tool, args) in &calls {
        let r = env.call(tool, args.clone()).await;
        assert!(is_error(&r), "{tool}: {r}");
        let t = text(&r);
        assert!(
            t.contains("malformed") || t.contains("expected audio"),
            "{tool}: {t}"
        );
    }
    assert!(files_in(&env.out()).is_empty());
}

#[tokio::test]
async fn a_large_photo_goes_through_every_variant() {
    let env = Env::with_cap(BackendKind::Localai, Mode::Normal, 32 * 1024 * 1024).await;
    // A noisy 1800×1200 JPEG: megabytes of pixels, like a phone photo.
    let mut state = 7u32;
    let img = image::RgbImage::from_fn(1800, 1200, |x, y| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let n = (state >> 24) as u8 / 4;
        image::Rgb([(x / 10) as u8 ^ n, (y / 7) as u8, 90 + n])
    });
    let mut jpeg = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
        .expect("encode jpeg");
    std::fs::write(env.input("big.jpg"), &jpeg).expect("write");
    let started = std::time::Instant::now();
    let r = env
        .call(
            "analyze_image",
            json!({"images": [{"path": env.input("big.jpg").to_string_lossy()}],
                   "preprocess": ["grayscale", "equalize", {"type": "resize", "max_side": 512}]}),
        )
        .await;
    // Generous: a debug build of the codecs is slow; release is far faster.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert!(!is_error(&r), "{r}");
    let body = &env.fixture.requests("/v1/chat/completions")[0].json;
    let urls: Vec<&str> = body["messages"][1]["content"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| p["image_url"]["url"].as_str())
        .collect();
    assert_eq!(urls.len(), 4);
    let small = image::load_from_memory(&data_url_bytes(urls[3], "image/png")).expect("png");
    assert_eq!((small.width(), small.height()), (512, 341));
    assert_eq!(data_url_bytes(urls[0], "image/jpeg"), jpeg);
}

/// Lemonade's `lemonade_transcribe_audio` answers two text blocks, the
/// transcript and the server's whole answer as JSON, which its clients
/// parse for segments and timestamps.
#[tokio::test]
async fn transcription_returns_the_servers_answer_as_a_json_block() {
    let env = Env::new(BackendKind::Localai, Mode::Normal).await;
    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_base64": b64(&wav(4000)), "response_format": "verbose_json"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let blocks = r["content"].as_array().expect("content");
    assert_eq!(blocks.len(), 2, "{r}");
    assert_eq!(blocks[0]["text"], "Hello world, this is a test.");
    let answer: Value = serde_json::from_str(blocks[1]["text"].as_str().expect("a text block"))
        .expect("the second block is JSON");
    assert_eq!(
        answer["segments"][1]["text"], " this is a test.",
        "{answer}"
    );
    assert_eq!(answer, r["structuredContent"]["response"]);

    // A plain-text format still gives a JSON block of the OpenAI shape.
    let r = env
        .call(
            "transcribe_audio",
            json!({"audio_base64": b64(&wav(4000)), "response_format": "srt"}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let answer: Value =
        serde_json::from_str(r["content"][1]["text"].as_str().expect("a second block"))
            .expect("JSON");
    assert!(
        answer["text"]
            .as_str()
            .is_some_and(|t| t.contains("00:00:02,500")),
        "{answer}"
    );
}
