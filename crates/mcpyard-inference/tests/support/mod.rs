//! Test helpers: a real llama-cpp-python server on a tiny generated model,
//! and a real gateway with the inference source, driven through
//! `Gateway::request` like a transport would.
#![allow(dead_code, unused_imports)] // each test file uses a part

pub(crate) mod recording_fixture;

pub(crate) use mcpyard_testkit::{free_port, text, workspace_root};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpyard_inference::{BackendKind, BackendSpec, InferenceConfig, InferenceSource};
use mcpyard_proto::Message;
use mcpyard_testkit::InProcessClient;
use serde_json::{json, Value};

/// The Python of `.tools/venv-llama`; fails naming the install script.
pub(crate) fn llama_python() -> PathBuf {
    let py = workspace_root().join(".tools/venv-llama/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/install-test-deps.sh (it installs llama-cpp-python[server] and gguf into .tools/venv-llama)",
        py.display()
    );
    py
}

/// Writes the tiny random GGUF model into `dir`.
pub(crate) fn make_model(dir: &Path) -> PathBuf {
    let out = dir.join("tiny.gguf");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/make_tiny_model.py");
    let status = Command::new(llama_python())
        .arg(&script)
        .arg(&out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .status()
        .expect("run make_tiny_model.py");
    assert!(status.success(), "make_tiny_model.py failed: {status}");
    out
}

/// llama-cpp-python's OpenAI server with two aliases of the tiny model:
/// `tiny-chat` (ChatML with function calling) and `tiny-embed`
/// (embeddings). Killed and reaped on drop.
#[derive(Debug)]
pub(crate) struct LlamaServer {
    child: Option<Child>,
    pub(crate) port: u16,
    model: PathBuf,
    dir: PathBuf,
}

impl LlamaServer {
    pub(crate) async fn start(model: &Path, dir: &Path, port: u16) -> Self {
        let mut s = Self {
            child: None,
            port,
            model: model.to_owned(),
            dir: dir.to_owned(),
        };
        s.spawn().await;
        s
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn spawn(&mut self) {
        let cfg = self.dir.join(format!("llama-{}.json", self.port));
        let model = self.model.to_string_lossy();
        let config = json!({
            "host": "127.0.0.1",
            "port": self.port,
            "models": [
                {"model": model, "model_alias": "tiny-chat", "chat_format": "chatml-function-calling", "n_ctx": 2048, "verbose": false},
                {"model": model, "model_alias": "tiny-embed", "embedding": true, "n_ctx": 2048, "verbose": false}
            ]
        });
        std::fs::write(&cfg, config.to_string()).expect("write server config");
        let log = std::fs::File::create(self.dir.join(format!("llama-{}.log", self.port)))
            .expect("server log file");
        // A clean environment: the server reads its settings from variables
        // too, so a stray PORT or MODEL would become one.
        let mut cmd = Command::new(llama_python());
        cmd.args(["-m", "llama_cpp.server", "--config_file"])
            .arg(&cfg)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        self.child = Some(cmd.spawn().expect("start llama_cpp.server"));
        let deadline = Instant::now() + Duration::from_secs(90);
        let client = reqwest::Client::new();
        loop {
            let ok = client
                .get(format!("{}/v1/models", self.url()))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let log =
                    std::fs::read_to_string(self.dir.join(format!("llama-{}.log", self.port)))
                        .unwrap_or_default();
                panic!("llama_cpp.server exited with {status}:\n{log}");
            }
            assert!(
                Instant::now() < deadline,
                "llama_cpp.server did not answer within 90 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills the server (its whole process group) and reaps it.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id() as libc::pid_t;
            // SAFETY: signalling the process group this test created.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port.
    pub(crate) async fn restart(&mut self) {
        self.stop();
        self.spawn().await;
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A config with one configured backend.
pub(crate) fn config_with(kind: BackendKind, url: &str) -> InferenceConfig {
    InferenceConfig {
        backends: vec![BackendSpec {
            name: kind.as_str().to_owned(),
            kind,
            url: url.to_owned(),
            api_key_env: None,
        }],
        request_timeout: Duration::from_secs(60),
        ..InferenceConfig::default()
    }
}

/// A running gateway with the inference source, and one client session.
#[derive(Debug)]
pub(crate) struct Harness {
    client: InProcessClient,
}

impl std::ops::Deref for Harness {
    type Target = InProcessClient;
    fn deref(&self) -> &InProcessClient {
        &self.client
    }
}

impl Harness {
    pub(crate) async fn new(config: InferenceConfig) -> Self {
        let source = InferenceSource::new(config).expect("valid inference config");
        let client =
            InProcessClient::start(vec![source.into_source_spec()], Duration::from_secs(120)).await;
        Self { client }
    }

    /// Calls `local__<tool>` and returns the `CallToolResult`.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Value {
        self.client.call(&format!("local__{tool}"), args).await
    }

    /// Calls `local__<tool>` with a progress token; returns the result and
    /// the params of every progress notification sent meanwhile.
    pub(crate) async fn call_with_progress(&self, tool: &str, args: Value) -> (Value, Vec<Value>) {
        self.client
            .call_with_progress(&format!("local__{tool}"), args)
            .await
    }

    /// Calls with a progress token, waits for the first progress
    /// notification, then cancels the request as a client would. Returns
    /// the gateway's answer: none, as the specification wants for a
    /// cancelled request.
    pub(crate) async fn call_then_cancel(&self, tool: &str, args: Value) -> Option<Message> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let params = json!({"name": format!("local__{tool}"), "arguments": args, "_meta": {"progressToken": "c1"}});
        let (id, call) = self.spawn_call(params, Some(tx));
        let first = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("a progress notification within 30 s");
        assert!(first.is_some(), "the call ended before any progress");
        self.cancel_call(id, call).await
    }
}

pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}
