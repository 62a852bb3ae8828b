//! One inference server and the HTTP helpers every tool uses to talk to
//! it: JSON in and out, multipart uploads, raw bytes (audio, images), and
//! streamed answers (SSE chat streams, NDJSON and SSE download progress).
//!
//! All backends share one `reqwest::Client` (rustls, `TCP_NODELAY`, pooled
//! connections), so a call never pays a new connection when the last one
//! is still open.

mod error;
mod stream;

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{RequestBuilder, Response};
use serde_json::Value;

pub(crate) use error::excerpt;
pub use error::BackendError;
pub use stream::SseEvent;
use stream::{LineSplitter, SseParser};

use crate::config::{BackendKind, BackendSpec};

/// Connect timeout for every backend request: servers are local, so a
/// connection that takes longer is not coming.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The HTTP client all backends share.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(Duration::from_secs(90))
        // Local servers: a system proxy must not see prompts or keys.
        .no_proxy()
        .build()
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "HTTP client with custom settings failed; using defaults");
            reqwest::Client::new()
        })
}

/// How a backend came to be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Configured,
    Discovered,
}

/// An API key. Its `Debug` shows nothing, so it cannot reach a log.
#[derive(Clone)]
struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// One inference server.
#[derive(Debug, Clone)]
pub struct Backend {
    name: String,
    kind: BackendKind,
    /// `scheme://host:port`, no trailing slash: native APIs live here.
    root: String,
    /// The OpenAI-compatible prefix, `/v1` unless the url gave another.
    openai_prefix: String,
    api_key: Option<ApiKey>,
    api_key_env: Option<String>,
    client: reqwest::Client,
    timeout: Duration,
    origin: Origin,
}

impl Backend {
    /// A backend from its configuration; the key is read from the
    /// environment variable the configuration names.
    pub fn from_spec(
        spec: &BackendSpec,
        client: reqwest::Client,
        timeout: Duration,
        origin: Origin,
    ) -> Self {
        let (root, openai_prefix) = split_url(&spec.url);
        let api_key = spec.api_key_env.as_deref().and_then(|var| {
            let key = std::env::var(var).ok().filter(|k| !k.is_empty());
            if key.is_none() {
                tracing::warn!(
                    backend = %spec.name,
                    variable = var,
                    "the API key variable is not set; calls go without a key"
                );
            }
            key.map(ApiKey)
        });
        Self {
            name: spec.name.clone(),
            kind: spec.kind,
            root,
            openai_prefix,
            api_key,
            api_key_env: spec.api_key_env.clone(),
            client,
            timeout,
            origin,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// `scheme://host:port` (no path).
    pub fn base_url(&self) -> &str {
        &self.root
    }

    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The timeout for one ordinary request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `host:port`, for messages.
    pub fn addr(&self) -> &str {
        self.root
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(&self.root)
    }

    /// The path of an OpenAI-compatible route: `v1("/chat/completions")`
    /// is `/v1/chat/completions` (or the configured prefix).
    pub fn v1(&self, route: &str) -> String {
        format!("{}{}", self.openai_prefix, route)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> RequestBuilder {
        let mut rb = self
            .client
            .request(method, format!("{}{}", self.root, path));
        if let Some(key) = &self.api_key {
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", key.0)) {
                v.set_sensitive(true);
                rb = rb.header(AUTHORIZATION, v);
            }
        }
        rb
    }

    /// `GET path` → JSON.
    pub async fn get_json(&self, path: &str) -> Result<Value, BackendError> {
        self.get_json_within(path, self.timeout).await
    }

    /// `GET path` → JSON, with its own timeout (probes use a short one).
    pub async fn get_json_within(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<Value, BackendError> {
        let rb = self.request(reqwest::Method::GET, path).timeout(timeout);
        let body = self.send(rb, path, timeout).await?;
        self.parse_json(path, &body)
    }

    /// `GET path` → text, with its own timeout.
    pub async fn get_text_within(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<String, BackendError> {
        let rb = self.request(reqwest::Method::GET, path).timeout(timeout);
        let body = self.send(rb, path, timeout).await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// `POST path` with a JSON body → JSON.
    pub async fn post_json(&self, path: &str, body: &Value) -> Result<Value, BackendError> {
        let rb = self
            .request(reqwest::Method::POST, path)
            .timeout(self.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(json_body(body));
        let bytes = self.send(rb, path, self.timeout).await?;
        self.parse_json(path, &bytes)
    }

    /// `POST path` with a multipart form (audio uploads...) → JSON.
    pub async fn post_multipart(
        &self,
        path: &str,
        form: reqwest::multipart::Form,
    ) -> Result<Value, BackendError> {
        let rb = self
            .request(reqwest::Method::POST, path)
            .timeout(self.timeout)
            .multipart(form);
        let bytes = self.send(rb, path, self.timeout).await?;
        self.parse_json(path, &bytes)
    }

    /// `POST path` with a JSON body → the raw body and its content type
    /// (speech audio, images).
    pub async fn post_bytes(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<(Bytes, Option<String>), BackendError> {
        let rb = self
            .request(reqwest::Method::POST, path)
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/json")
            .body(json_body(body));
        self.body_and_type(rb, path).await
    }

    /// `POST path` answered with Server-Sent Events. `timeout` bounds the
    /// whole stream; `None` leaves it to cancellation (downloads).
    pub async fn post_sse(
        &self,
        path: &str,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<SseStream, BackendError> {
        let lines = self.post_lines(path, body, timeout).await?;
        Ok(SseStream {
            lines,
            parser: SseParser::default(),
        })
    }

    /// `POST path` answered with newline-delimited JSON (Ollama's pull).
    pub async fn post_ndjson(
        &self,
        path: &str,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<NdjsonStream, BackendError> {
        Ok(NdjsonStream {
            lines: self.post_lines(path, body, timeout).await?,
        })
    }

    /// An OpenAI-style streamed completion: the JSON of each `data:` event
    /// until `data: [DONE]`.
    pub async fn post_chat_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<ChatStream, BackendError> {
        Ok(ChatStream {
            sse: self.post_sse(path, body, Some(self.timeout)).await?,
            done: false,
        })
    }

    async fn post_lines(
        &self,
        path: &str,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<BodyLines, BackendError> {
        let mut rb = self.request(reqwest::Method::POST, path).json(body);
        if let Some(t) = timeout {
            rb = rb.timeout(t);
        }
        let shown = timeout.unwrap_or(Duration::ZERO);
        let resp = self.start(rb, path, shown).await?;
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        Ok(BodyLines {
            content_type,
            backend: self.clone(),
            path: path.to_owned(),
            timeout: shown,
            resp: Some(resp),
            splitter: LineSplitter::default(),
            pending: VecDeque::new(),
        })
    }

    /// Sends and checks the status; the body is read by the caller.
    async fn start(
        &self,
        rb: RequestBuilder,
        path: &str,
        timeout: Duration,
    ) -> Result<Response, BackendError> {
        let resp = rb
            .send()
            .await
            .map_err(|e| self.map_reqwest(e, path, timeout))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.bytes().await.unwrap_or_default();
        Err(BackendError::Status {
            backend: self.name.clone(),
            kind: self.kind,
            addr: self.addr().to_owned(),
            path: path.to_owned(),
            status: status.as_u16(),
            excerpt: excerpt(&body),
            api_key_env: self.api_key_env.clone(),
        })
    }

    async fn send(
        &self,
        rb: RequestBuilder,
        path: &str,
        timeout: Duration,
    ) -> Result<Bytes, BackendError> {
        let resp = self.start(rb, path, timeout).await?;
        resp.bytes()
            .await
            .map_err(|e| self.map_reqwest(e, path, timeout))
    }

    fn parse_json(&self, path: &str, body: &[u8]) -> Result<Value, BackendError> {
        serde_json::from_slice(body).map_err(|e| {
            self.malformed(
                path,
                format!("not JSON ({e}); the body starts with: {}", excerpt(body)),
            )
        })
    }

    /// A [`BackendError::Malformed`] for this backend.
    pub fn malformed(&self, path: &str, detail: impl Into<String>) -> BackendError {
        BackendError::Malformed {
            backend: self.name.clone(),
            kind: self.kind,
            addr: self.addr().to_owned(),
            path: path.to_owned(),
            detail: detail.into(),
        }
    }

    fn map_reqwest(&self, e: reqwest::Error, path: &str, timeout: Duration) -> BackendError {
        if e.is_timeout() {
            return BackendError::Timeout {
                backend: self.name.clone(),
                kind: self.kind,
                addr: self.addr().to_owned(),
                path: path.to_owned(),
                after: timeout,
            };
        }
        if e.is_decode() {
            return self.malformed(path, root_cause(&e));
        }
        BackendError::Unreachable {
            backend: self.name.clone(),
            kind: self.kind,
            addr: self.addr().to_owned(),
            detail: root_cause(&e),
        }
    }
}

/// The innermost cause of an error ("Connection refused (os error 111)"),
/// which says more than reqwest's outer wording.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// `http://h:p/v1/` → (`http://h:p`, `/v1`); `http://h:p` → (…, `/v1`).
fn split_url(url: &str) -> (String, String) {
    let trimmed = url.trim().trim_end_matches('/');
    match reqwest::Url::parse(trimmed) {
        Ok(u) => {
            let root = u.origin().ascii_serialization();
            let path = u.path().trim_end_matches('/');
            let prefix = if path.is_empty() { "/v1" } else { path };
            (root, prefix.to_owned())
        }
        Err(_) => (trimmed.to_owned(), "/v1".to_owned()),
    }
}

/// Lines of a streamed body.
#[derive(Debug)]
struct BodyLines {
    content_type: String,
    backend: Backend,
    path: String,
    timeout: Duration,
    resp: Option<Response>,
    splitter: LineSplitter,
    pending: VecDeque<String>,
}

impl BodyLines {
    async fn next_line(&mut self) -> Option<Result<String, BackendError>> {
        loop {
            if let Some(l) = self.pending.pop_front() {
                return Some(Ok(l));
            }
            let resp = self.resp.as_mut()?;
            match resp.chunk().await {
                Ok(Some(chunk)) => match self.splitter.push(&chunk) {
                    Ok(lines) => self.pending.extend(lines),
                    Err(detail) => {
                        self.resp = None;
                        return Some(Err(self.backend.malformed(&self.path, detail)));
                    }
                },
                Ok(None) => {
                    self.resp = None;
                    self.pending.extend(self.splitter.finish());
                    // A stream ends with a blank line so a last event
                    // without one is still delivered.
                    self.pending.push_back(String::new());
                }
                Err(e) => {
                    self.resp = None;
                    return Some(Err(self.backend.map_reqwest(e, &self.path, self.timeout)));
                }
            }
        }
    }
}

/// A stream of Server-Sent Events; dropping it closes the connection.
#[derive(Debug)]
pub struct SseStream {
    lines: BodyLines,
    parser: SseParser,
}

impl SseStream {
    /// The next event; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Result<SseEvent, BackendError>> {
        loop {
            match self.lines.next_line().await {
                Some(Ok(line)) => {
                    if let Some(ev) = self.parser.line(&line) {
                        return Some(Ok(ev));
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                None => return self.parser.flush().map(Ok),
            }
        }
    }

    /// A malformed-answer error naming this stream's backend and route.
    pub fn malformed(&self, detail: impl Into<String>) -> BackendError {
        self.lines.backend.malformed(&self.lines.path, detail)
    }
}

/// The chunks of an OpenAI-style streamed completion.
#[derive(Debug)]
pub struct ChatStream {
    sse: SseStream,
    done: bool,
}

impl ChatStream {
    /// The next chunk's JSON; `None` after `data: [DONE]` or the end.
    pub async fn next(&mut self) -> Option<Result<Value, BackendError>> {
        if !self.done && self.sse.lines.content_type.starts_with("application/json") {
            self.done = true;
            return Some(self.whole_answer().await);
        }
        while !self.done {
            let ev = match self.sse.next().await? {
                Ok(ev) => ev,
                Err(e) => return Some(Err(e)),
            };
            let data = ev.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                self.done = true;
                return None;
            }
            return Some(serde_json::from_str(data).map_err(|e| {
                self.sse.malformed(format!(
                    "a stream chunk is not JSON ({e}): {}",
                    excerpt(data.as_bytes())
                ))
            }));
        }
        None
    }
}

impl ChatStream {
    /// A server that ignored `stream: true` and answered with one JSON
    /// completion: its message becomes a single chunk's delta.
    async fn whole_answer(&mut self) -> Result<Value, BackendError> {
        let mut body = String::new();
        while let Some(line) = self.sse.lines.next_line().await {
            body.push_str(&line?);
            body.push('\n');
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| {
            self.sse.malformed(format!(
                "not JSON ({e}); the body starts with: {}",
                excerpt(body.as_bytes())
            ))
        })?;
        let choice = v
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| self.sse.malformed("no `choices[0]` in the answer"))?;
        Ok(serde_json::json!({
            "model": v.get("model"),
            "usage": v.get("usage"),
            "choices": [{
                "index": 0,
                "delta": choice.get("message").cloned().unwrap_or_default(),
                "finish_reason": choice.get("finish_reason"),
            }],
        }))
    }
}

/// A stream of newline-delimited JSON values.
#[derive(Debug)]
pub struct NdjsonStream {
    lines: BodyLines,
}

impl NdjsonStream {
    /// The next value; blank lines are skipped.
    pub async fn next(&mut self) -> Option<Result<Value, BackendError>> {
        loop {
            let line = match self.lines.next_line().await? {
                Ok(l) => l,
                Err(e) => return Some(Err(e)),
            };
            if line.trim().is_empty() {
                continue;
            }
            return Some(serde_json::from_str(&line).map_err(|e| {
                self.lines.backend.malformed(
                    &self.lines.path,
                    format!("a line is not JSON ({e}): {}", excerpt(line.as_bytes())),
                )
            }));
        }
    }
}

/// Raw-body requests the media tools need besides the JSON helpers.
impl Backend {
    /// `POST path` with a multipart form → the raw body and its content
    /// type (transcripts come back as JSON, plain text, SRT or WebVTT).
    pub async fn post_multipart_bytes(
        &self,
        path: &str,
        form: reqwest::multipart::Form,
    ) -> Result<(Bytes, Option<String>), BackendError> {
        let rb = self
            .request(reqwest::Method::POST, path)
            .timeout(self.timeout)
            .multipart(form);
        self.body_and_type(rb, path).await
    }

    /// `GET path` → the raw body and its content type (a generated image
    /// the server answered with a URL to).
    pub async fn get_bytes(&self, path: &str) -> Result<(Bytes, Option<String>), BackendError> {
        let rb = self
            .request(reqwest::Method::GET, path)
            .timeout(self.timeout);
        self.body_and_type(rb, path).await
    }

    async fn body_and_type(
        &self,
        rb: RequestBuilder,
        path: &str,
    ) -> Result<(Bytes, Option<String>), BackendError> {
        let resp = self.start(rb, path, self.timeout).await?;
        let ct = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| self.map_reqwest(e, path, self.timeout))?;
        Ok((bytes, ct))
    }
}

/// A JSON body in a buffer of exactly its size: requests carrying images
/// are megabytes, and a growing buffer would hold up to twice that.
fn json_body(body: &Value) -> Vec<u8> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serialising a `Value` cannot fail (its keys are strings).
    let _ = serde_json::to_writer(&mut count, body);
    let mut out = Vec::with_capacity(count.0);
    let _ = serde_json::to_writer(&mut out, body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_root_and_openai_prefix() {
        assert_eq!(
            split_url("http://127.0.0.1:11434"),
            ("http://127.0.0.1:11434".into(), "/v1".into())
        );
        assert_eq!(
            split_url("http://localhost:8000/v1/"),
            ("http://localhost:8000".into(), "/v1".into())
        );
        assert_eq!(
            split_url("http://127.0.0.1:13305/api/v1"),
            ("http://127.0.0.1:13305".into(), "/api/v1".into())
        );
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let spec = BackendSpec {
            name: "b".into(),
            kind: BackendKind::Openai,
            url: "http://127.0.0.1:1".into(),
            api_key_env: Some("MCPYARD_INFERENCE_TEST_KEY_DEBUG".into()),
        };
        std::env::set_var("MCPYARD_INFERENCE_TEST_KEY_DEBUG", "sk-secret-123");
        let b = Backend::from_spec(
            &spec,
            reqwest::Client::new(),
            Duration::from_secs(1),
            Origin::Configured,
        );
        std::env::remove_var("MCPYARD_INFERENCE_TEST_KEY_DEBUG");
        let shown = format!("{b:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("***"));
    }
}
