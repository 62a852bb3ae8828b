//! Streamable HTTP (2025-03-26 and later): every message is a POST to one
//! endpoint, answered with JSON, an event stream, or 202; a GET stream
//! carries what the server sends unasked; DELETE ends the session.
//!
//! Messages that arrive on the response of a POST that carried our request
//! are tagged with that request's id (`related`), so the caller can route
//! progress and server-to-client requests back to the right place.
//! A session the server forgot (404 on a POST that carried it, or the 400
//! that servers built on the TypeScript SDK send) is re-initialised once, transparently, with the `initialize` params first
//! used, and the message is sent again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpyard_proto::{methods, Message, RequestId};
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::http_common::{
    body_kind, next_events, parse_url, read_capped, send_authorized, status_error, BodyKind,
    HttpClient, StreamStop,
};
use super::http_response::HttpResponse;
use super::outgoing::{header_value, Outgoing};
use super::scope::SendScope;
use super::sse_decoder::SseDecoder;
use crate::link::{deliver_body, Link, MAX_MESSAGE_BYTES};
use crate::{ClientError, HttpAuth};

// Header names as values, so that no request parses them again.
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// 2026-07-28: the request's method, mirrored from the body.
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// 2026-07-28: the tool, prompt or resource a request names, mirrored.
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// How many times a response stream that ended early is resumed.
const MAX_RESUMES: u32 = 10;
/// Longest wait before resuming a response stream the server closed: its
/// `retry` hint is honoured up to this, so a large hint cannot hold a call
/// past its time.
const MAX_RESUME_DELAY: Duration = Duration::from_secs(5);
/// How long the GET that resumes a response stream may wait for the
/// server's answer before it is sent once more: a pooled connection the
/// server was closing as the GET went out may swallow it unanswered.
const RESUME_ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// How long a resumed response stream may deliver no message before the
/// call fails: a server that closed the stream and never sends the answer
/// must not hold the call until its timeout.
pub(crate) const RESUMED_IDLE_LIMIT: Duration = Duration::from_secs(15);
/// Reconnection delay when the server did not set one.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Longest wait between two attempts to open the GET stream.
const MAX_GET_BACKOFF: Duration = Duration::from_secs(30);
/// How long the DELETE that ends the session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// A Streamable HTTP connection.
#[derive(Debug)]
pub(crate) struct StreamableHttpTransport {
    core: Arc<Core>,
    /// Serialises re-initialisation: concurrent 404s start one new session.
    reinit: tokio::sync::Mutex<()>,
    /// The `initialize` params, kept to start a new session the same way.
    init_params: RwLock<Option<Value>>,
    reinit_count: AtomicU64,
}

/// What the transport's background tasks share with it.
#[derive(Debug)]
struct Core {
    http: HttpClient,
    url: reqwest::Url,
    link: Link,
    /// Kept as the headers they are sent as: each request clones them
    /// rather than checking their text again.
    session: RwLock<Option<HeaderValue>>,
    protocol_version: RwLock<Option<HeaderValue>>,
    auth: Option<Arc<dyn HttpAuth>>,
}

impl Core {
    fn session(&self) -> Option<HeaderValue> {
        self.session
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_session(&self, session: Option<HeaderValue>) {
        *self.session.write().unwrap_or_else(|e| e.into_inner()) = session;
    }

    fn protocol_version(&self) -> Option<HeaderValue> {
        self.protocol_version
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A request to the endpoint, in the session and its version when
    /// there is one.
    fn request_in_session(&self, method: Method) -> Outgoing {
        let mut req = Outgoing::new(method, &self.url);
        if let Some(s) = self.session() {
            req = req.with(SESSION_HEADER, s);
        }
        if let Some(v) = self.protocol_version() {
            req = req.with(VERSION_HEADER, v);
        }
        req
    }

    async fn post(&self, message: &Message) -> Result<HttpResponse, ClientError> {
        self.post_with(message, &[]).await
    }

    /// POSTs `message` with `extra` headers (a tool call's `Mcp-Param-*`).
    async fn post_with(
        &self,
        message: &Message,
        extra: &[(String, String)],
    ) -> Result<HttpResponse, ClientError> {
        // Shared, not copied, by each attempt the authorization may make.
        let body = bytes::Bytes::from(message.to_vec());
        // A 2026-07-28 request stands alone: no session, its era and names
        // mirrored into headers for the server to route on. In the handshake
        // era the method and name go along too (a server that does not route
        // on them ignores them), with the session once there is one.
        let version = modern_version(message);
        let in_session = version.is_none() && message.method() != Some(methods::INITIALIZE);
        let routing = routing_headers(message, version)?;
        send_authorized(&self.http, self.auth.as_ref(), || {
            let mut req = if in_session {
                self.request_in_session(Method::POST)
            } else {
                Outgoing::new(Method::POST, &self.url)
            };
            for (name, value) in &routing {
                req = req.with(name.clone(), value.clone());
            }
            req = super::http_common::with_trace_context(req, message)
                .with(ACCEPT, ACCEPT_BOTH)
                .with(CONTENT_TYPE, JSON)
                .body(body.clone());
            for (name, value) in extra {
                req = req.with_text(name.as_str(), value)?;
            }
            Ok(req)
        })
        .await
    }

    /// GET on the endpoint, resuming after `last_id` when given.
    async fn get_stream(&self, last_id: Option<&str>) -> Result<HttpResponse, ClientError> {
        send_authorized(&self.http, self.auth.as_ref(), || {
            let mut req = self
                .request_in_session(Method::GET)
                .with(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Some(id) = last_id {
                req = req.with_text(LAST_EVENT_ID, id)?;
            }
            Ok(req)
        })
        .await
    }

    fn capture_session(&self, resp: &HttpResponse) {
        // Only visible ASCII: the id is sent back as it came.
        if let Some(s) = resp
            .headers()
            .get(SESSION_HEADER)
            .filter(|v| v.to_str().is_ok())
        {
            self.set_session(Some(s.clone()));
        }
    }
}

impl StreamableHttpTransport {
    pub(crate) fn new(
        url: &str,
        headers: &[(String, String)],
        connect_timeout: Duration,
        link: Link,
        auth: Option<Arc<dyn HttpAuth>>,
    ) -> Result<Self, ClientError> {
        let url = parse_url(url)?;
        let core = Core {
            http: HttpClient::new(&url, headers, connect_timeout)?,
            url,
            link,
            session: RwLock::new(None),
            protocol_version: RwLock::new(None),
            auth,
        };
        Ok(Self {
            core: Arc::new(core),
            reinit: tokio::sync::Mutex::new(()),
            init_params: RwLock::new(None),
            reinit_count: AtomicU64::new(0),
        })
    }

    pub(crate) async fn send(
        &self,
        message: &Message,
        scope: &SendScope<'_>,
        extra: &[(String, String)],
    ) -> Result<Option<Message>, ClientError> {
        let is_initialize = message.method() == Some(methods::INITIALIZE);
        if is_initialize {
            if let Message::Request { params, .. } = message {
                *self.init_params.write().unwrap_or_else(|e| e.into_inner()) = params.clone();
            }
        }
        let session = self.core.session();
        let mut resp = self.core.post_with(message, extra).await?;
        // Boxed, like the error body below: paths taken rarely stay out of
        // the future every call moves (BENCHMARKS.md, section 1, "Smaller
        // futures").
        if may_say_session_lost(resp.status()) && session.is_some() && !is_initialize {
            resp = Box::pin(self.resend_if_session_lost(resp, session.as_ref(), message)).await?;
        }
        if is_initialize && resp.status().is_success() {
            self.core.capture_session(&resp);
        }
        let related = match message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        if !resp.status().is_success() && modern_version(message).is_some() {
            // The era answers errors with a 4xx status and the JSON-RPC
            // error as the body: that error is the answer.
            return Box::pin(rpc_error_body(resp)).await.map(Some);
        }
        answer(&self.core, resp, related, scope).await
    }

    /// Remembers the negotiated version (sent as `MCP-Protocol-Version` from
    /// now on) and opens the GET stream for server-initiated messages.
    pub(crate) fn initialized(&self, result: &Value) {
        self.set_version(result);
        tokio::spawn(listen(self.core.clone()));
    }

    fn set_version(&self, result: &Value) {
        // The version was negotiated (one the client knows), so it makes a
        // valid header.
        let version = result.get("protocolVersion").and_then(Value::as_str);
        if let Some(v) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
            *self
                .core
                .protocol_version
                .write()
                .unwrap_or_else(|e| e.into_inner()) = Some(v);
        }
    }

    /// Ends the session with DELETE (a 405 means the server does not let
    /// clients end sessions, which is fine), then closes.
    pub(crate) async fn shutdown(&self) {
        if self.core.session().is_some() {
            let deleted = send_authorized(&self.core.http, self.core.auth.as_ref(), || {
                Ok(self
                    .core
                    .request_in_session(Method::DELETE)
                    .timeout(DELETE_TIMEOUT))
            });
            match deleted.await {
                Ok(r)
                    if r.status().is_success() || r.status() == StatusCode::METHOD_NOT_ALLOWED => {}
                Ok(r) => tracing::debug!(
                    target: "mcpyard::upstream",
                    server = self.core.link.label(),
                    "DELETE of the session answered {}",
                    r.status()
                ),
                Err(e) => tracing::debug!(
                    target: "mcpyard::upstream",
                    server = self.core.link.label(),
                    "DELETE of the session failed: {e}"
                ),
            }
            self.core.set_session(None);
        }
        self.core.link.end("shut down").await;
    }

    /// When the server forgot the session (restart, expiry), starts a new
    /// one and sends `message` again; `resp` has a status that
    /// [`may_say_session_lost`]. The spec says 404; servers built on the
    /// TypeScript SDK answer 400 and say why in the body.
    async fn resend_if_session_lost(
        &self,
        resp: HttpResponse,
        stale: Option<&HeaderValue>,
        message: &Message,
    ) -> Result<HttpResponse, ClientError> {
        if resp.status() == StatusCode::BAD_REQUEST {
            match status_error(resp).await {
                ClientError::Http { body, .. } if names_a_lost_session(&body) => {}
                other => return Err(other),
            }
        }
        self.reinitialize(stale).await?;
        self.core.post(message).await
    }

    /// Starts a new session after `stale` was refused, unless a concurrent
    /// caller already did.
    async fn reinitialize(&self, stale: Option<&HeaderValue>) -> Result<(), ClientError> {
        let _one_at_a_time = self.reinit.lock().await;
        if self.core.session().as_ref() != stale {
            return Ok(());
        }
        let params = self
            .init_params
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let n = self.reinit_count.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(
            target: "mcpyard::upstream",
            server = self.core.link.label(),
            "session expired; starting a new one"
        );
        self.core.set_session(None);
        // A string id cannot collide with the client's integer ids.
        let id = RequestId::String(format!("mcpyard-reinit-{n}"));
        let init = Message::request(id.clone(), methods::INITIALIZE, params);
        let resp = self.core.post(&init).await?;
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        self.core.capture_session(&resp);
        let result = match read_answer(&self.core, resp, &id).await? {
            Message::Response { result, .. } => result.into_value(),
            Message::Error { error, .. } => return Err(ClientError::Rpc(error)),
            _ => return Err(ClientError::Protocol("no answer to initialize".into())),
        };
        self.set_version(&result);
        let done = Message::notification(methods::NOTIFICATION_INITIALIZED, None);
        let resp = self.core.post(&done).await?;
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        self.core.link.session_restarted().await;
        Ok(())
    }
}

/// The protocol version of a 2026-07-28 request (`None` for any other
/// message): the era is read from the envelope in `params._meta`, so a
/// message is modern exactly when the server would treat it so.
fn modern_version(message: &Message) -> Option<&str> {
    let Message::Request { params, .. } = message else {
        return None;
    };
    mcpyard_proto::meta(params.as_ref())?
        .get(mcpyard_proto::envelope::PROTOCOL_VERSION_KEY)?
        .as_str()
}

/// The headers a server may route on: a 2026-07-28 request's `version`
/// (its [`modern_version`]);
/// `Mcp-Method` for every request and notification; `Mcp-Name` for the
/// requests that name a tool, prompt or resource. Made once per message,
/// whatever number of times it is sent; the methods that name something
/// go as static values, not copied.
fn routing_headers(
    message: &Message,
    version: Option<&str>,
) -> Result<Vec<(HeaderName, HeaderValue)>, ClientError> {
    let (method, params) = match message {
        Message::Request { method, params, .. } => (method, params.as_ref()),
        Message::Notification { method, .. } => (method, None),
        _ => return Ok(Vec::new()),
    };
    let mut headers = Vec::with_capacity(3);
    if let Some(version) = version {
        headers.push((VERSION_HEADER, header_value(&VERSION_HEADER, version)?));
    }
    let (named, name_key) = match method.as_str() {
        methods::TOOLS_CALL => (Some(methods::TOOLS_CALL), Some("name")),
        methods::PROMPTS_GET => (Some(methods::PROMPTS_GET), Some("name")),
        methods::RESOURCES_READ => (Some(methods::RESOURCES_READ), Some("uri")),
        _ => (None, None),
    };
    let method = match named {
        Some(method) => HeaderValue::from_static(method),
        None => header_value(&METHOD_HEADER, method)?,
    };
    headers.push((METHOD_HEADER, method));
    if let Some(name) = name_key.and_then(|k| params?.get(k)?.as_str()) {
        let encoded = encode_header_value(name);
        headers.push((NAME_HEADER, header_value(&NAME_HEADER, &encoded)?));
    }
    Ok(headers)
}

/// A header value as sent: visible ASCII (and inner spaces) verbatim,
/// anything else as `=?base64?<base64 of its UTF-8>?=`.
pub(crate) fn encode_header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value == value.trim()
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        use base64::Engine;
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// Reads the JSON-RPC error a 2026-07-28 server sent with a 4xx status; a
/// body that is not one (a server of an older era refusing the request)
/// is the HTTP error itself.
async fn rpc_error_body(resp: HttpResponse) -> Result<Message, ClientError> {
    let status = resp.status().as_u16();
    let is_json = body_kind(&resp) == BodyKind::Json;
    let body = read_capped(resp, MAX_MESSAGE_BYTES).await?;
    match Message::from_slice(&body) {
        Ok(m @ Message::Error { .. }) if is_json => Ok(m),
        _ => {
            let mut preview = String::from_utf8_lossy(&body).trim().to_owned();
            if preview.len() > 1024 {
                let cut = (0..=1024)
                    .rev()
                    .find(|i| preview.is_char_boundary(*i))
                    .unwrap_or(0);
                preview.truncate(cut);
            }
            Err(ClientError::Http {
                status,
                body: preview,
            })
        }
    }
}

/// Whether an answer's status may mean the server forgot the session: 404,
/// or 400 with a body that says so (see [`names_a_lost_session`]).
fn may_say_session_lost(status: StatusCode) -> bool {
    matches!(status, StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST)
}

/// Whether a 400 body says the session is unknown rather than the request
/// bad: the TypeScript SDK's "No valid session ID provided" and "Server not
/// initialized" (a restarted single-session server).
fn names_a_lost_session(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    body.contains("session id") || body.contains("not initialized")
}

/// Handles the answer to a POST: a JSON body that is exactly the answer to
/// the request is returned; other JSON is delivered before returning; an
/// event stream is read by a task of its own.
async fn answer(
    core: &Arc<Core>,
    resp: HttpResponse,
    related: Option<RequestId>,
    scope: &SendScope<'_>,
) -> Result<Option<Message>, ClientError> {
    let status = resp.status();
    if !status.is_success() {
        return Err(status_error(resp).await);
    }
    if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
        return Ok(None);
    }
    match body_kind(&resp) {
        BodyKind::EventStream => {
            tokio::spawn(read_response_stream(
                core.clone(),
                resp,
                related,
                scope.token(),
            ));
            Ok(None)
        }
        BodyKind::Json | BodyKind::Other => {
            let body = read_capped(resp, MAX_MESSAGE_BYTES).await?;
            if let (Some(id), Ok(m)) = (&related, Message::from_slice(&body)) {
                if m.is_response() && m.id() == Some(id) {
                    return Ok(Some(m));
                }
            }
            deliver_body(&core.link, &body, related.as_ref(), "a response body").await;
            Ok(None)
        }
    }
}

/// Reads the event stream answering one POST until the answer to `related`
/// came. A stream that ends before it is resumed with GET + Last-Event-ID
/// when the server gave event ids (SSE polling): after the server's `retry`
/// hint (at most [`MAX_RESUME_DELAY`]), at once without one, at most
/// [`MAX_RESUMES`] times. A resumed stream that delivers no message for
/// [`RESUMED_IDLE_LIMIT`] fails the request, as does a stream without ids.
async fn read_response_stream(
    core: Arc<Core>,
    mut resp: HttpResponse,
    related: Option<RequestId>,
    scope: CancellationToken,
) {
    let stop = scope;
    let mut decoder = SseDecoder::new(MAX_MESSAGE_BYTES);
    let mut resumes = 0;
    loop {
        let mut idle_until =
            (resumes > 0).then(|| tokio::time::Instant::now() + RESUMED_IDLE_LIMIT);
        let end = loop {
            let next = async {
                match idle_until {
                    Some(at) => {
                        tokio::time::timeout_at(at, next_events(&mut resp, &mut decoder, &stop))
                            .await
                            .ok()
                    }
                    None => Some(next_events(&mut resp, &mut decoder, &stop).await),
                }
            };
            let Some(next) = next.await else {
                if let Some(id) = related.clone() {
                    core.link
                        .fail(
                            id,
                            ClientError::Transport(format!(
                                "the server closed the response stream before the answer, and the resumed stream delivered nothing for {} s",
                                RESUMED_IDLE_LIMIT.as_secs()
                            )),
                        )
                        .await;
                }
                return;
            };
            match next {
                Ok(events) => {
                    for event in events.into_iter().filter(|e| e.event == "message") {
                        if idle_until.is_some() && !event.data.trim().is_empty() {
                            idle_until = Some(tokio::time::Instant::now() + RESUMED_IDLE_LIMIT);
                        }
                        let got = deliver_body(
                            &core.link,
                            event.data.as_bytes(),
                            related.as_ref(),
                            "an event",
                        )
                        .await;
                        if got.answers_related {
                            return;
                        }
                    }
                }
                Err(end) => break end,
            }
        };
        let Some(id) = related.clone() else { return };
        let why = match end {
            StreamStop::Stopped => return,
            StreamStop::TooLarge(max) => {
                core.link
                    .fail(
                        id,
                        ClientError::Protocol(format!("an event larger than {max} bytes")),
                    )
                    .await;
                return;
            }
            StreamStop::Ended => "the response stream ended before the answer".to_owned(),
            StreamStop::Broken(e) => format!("the response stream broke: {e}"),
        };
        let last_id = decoder.last_id().map(str::to_owned);
        if last_id.is_none() || resumes >= MAX_RESUMES {
            core.link.fail(id, ClientError::Transport(why)).await;
            return;
        }
        resumes += 1;
        let delay = decoder.retry().map_or(Duration::ZERO, |ms| {
            Duration::from_millis(ms).min(MAX_RESUME_DELAY)
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return,
        }
        let resume = || async {
            tokio::time::timeout(RESUME_ANSWER_WITHIN, core.get_stream(last_id.as_deref()))
                .await
                .unwrap_or_else(|_| {
                    Err(ClientError::Transport(format!(
                        "no answer to the GET that resumes the stream within {} s",
                        RESUME_ANSWER_WITHIN.as_secs()
                    )))
                })
        };
        let mut resumed = resume().await;
        if matches!(resumed, Err(ClientError::Transport(_))) {
            // A pooled connection the server closed while we waited (its
            // keep-alive may be as short as the hint): once more, afresh.
            resumed = resume().await;
        }
        match resumed {
            Ok(r) if r.status().is_success() && body_kind(&r) == BodyKind::EventStream => {
                resp = r;
                decoder = SseDecoder::new(MAX_MESSAGE_BYTES).with_last_id(last_id);
            }
            Ok(r) => {
                core.link.fail(id, status_error(r).await).await;
                return;
            }
            Err(e) => {
                core.link.fail(id, e).await;
                return;
            }
        }
    }
}

/// Reads the answer to a request we sent outside the client's bookkeeping
/// (re-initialisation), delivering anything else that came with it.
async fn read_answer(
    core: &Core,
    mut resp: HttpResponse,
    id: &RequestId,
) -> Result<Message, ClientError> {
    let find = |messages: Vec<Message>| {
        messages
            .into_iter()
            .find(|m| m.is_response() && m.id() == Some(id))
    };
    match body_kind(&resp) {
        BodyKind::EventStream => {
            let mut decoder = SseDecoder::new(MAX_MESSAGE_BYTES);
            let stop = core.link.closed().clone();
            loop {
                let events = next_events(&mut resp, &mut decoder, &stop)
                    .await
                    .map_err(|e| ClientError::Protocol(format!("initialize stream: {e:?}")))?;
                for event in events.into_iter().filter(|e| e.event == "message") {
                    let messages = parse_all(core, event.data.as_bytes()).await;
                    if let Some(m) = find(messages) {
                        return Ok(m);
                    }
                }
            }
        }
        _ => {
            let body = read_capped(resp, MAX_MESSAGE_BYTES).await?;
            find(parse_all(core, &body).await)
                .ok_or_else(|| ClientError::Protocol("no answer to initialize".into()))
        }
    }
}

/// Parses a body; the server's own messages in it go to the client, answers
/// are returned.
async fn parse_all(core: &Core, bytes: &[u8]) -> Vec<Message> {
    let mut answers = Vec::new();
    let Ok(body) = mcpyard_proto::parse_body(bytes) else {
        return answers;
    };
    let items = match body {
        mcpyard_proto::Body::Single(m) => vec![m],
        mcpyard_proto::Body::Batch(items) => items,
    };
    for m in items.into_iter().flatten() {
        if m.is_response() {
            answers.push(m);
        } else {
            core.link.deliver(m, None).await;
        }
    }
    answers
}

/// The GET stream: server-initiated messages. A 405 means the server offers
/// none; anything else that ends it is retried with backoff until the client
/// closes.
async fn listen(core: Arc<Core>) {
    let stop = core.link.closed().clone();
    let mut backoff = DEFAULT_RETRY;
    let mut last_id: Option<String> = None;
    loop {
        let resp = tokio::select! {
            r = core.get_stream(last_id.as_deref()) => r,
            () = stop.cancelled() => return,
        };
        let mut delay = backoff;
        match resp {
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(mut r) if r.status().is_success() && body_kind(&r) == BodyKind::EventStream => {
                backoff = DEFAULT_RETRY;
                let mut decoder = SseDecoder::new(MAX_MESSAGE_BYTES).with_last_id(last_id.clone());
                let end = loop {
                    match next_events(&mut r, &mut decoder, &stop).await {
                        Ok(events) => {
                            for e in events.into_iter().filter(|e| e.event == "message") {
                                deliver_body(&core.link, e.data.as_bytes(), None, "an event").await;
                            }
                        }
                        Err(end) => break end,
                    }
                };
                last_id = decoder.last_id().map(str::to_owned);
                if let Some(ms) = decoder.retry() {
                    delay = Duration::from_millis(ms);
                }
                match end {
                    StreamStop::Stopped => return,
                    other => tracing::debug!(
                        target: "mcpyard::upstream",
                        server = core.link.label(),
                        "server stream ended: {other:?}"
                    ),
                }
            }
            Ok(r) => {
                tracing::debug!(
                    target: "mcpyard::upstream",
                    server = core.link.label(),
                    "server stream refused: {}",
                    r.status()
                );
                backoff = (backoff * 2).min(MAX_GET_BACKOFF);
            }
            Err(e) => {
                tracing::debug!(
                    target: "mcpyard::upstream",
                    server = core.link.label(),
                    "server stream failed: {e}"
                );
                backoff = (backoff * 2).min(MAX_GET_BACKOFF);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        encode_header_value, modern_version, names_a_lost_session, routing_headers, METHOD_HEADER,
        NAME_HEADER, VERSION_HEADER,
    };
    use mcpyard_proto::Message;
    use serde_json::json;

    #[test]
    fn header_values_outside_visible_ascii_are_base64() {
        assert_eq!(encode_header_value("get_time"), "get_time");
        assert_eq!(encode_header_value("a b"), "a b");
        assert_eq!(encode_header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(encode_header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(
            encode_header_value("=?base64?x?="),
            "=?base64?PT9iYXNlNjQ/eD89?="
        );
    }

    #[test]
    fn only_requests_with_the_envelope_get_the_era_headers() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let call = Message::request(
            1,
            "tools/call",
            Some(json!({"name": "echo", "_meta": meta})),
        );
        let routing = |message: &Message| {
            let headers = routing_headers(message, modern_version(message)).expect("valid headers");
            headers
                .into_iter()
                .map(|(name, value)| (name, value.to_str().unwrap().to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(modern_version(&call), Some("2026-07-28"));
        assert_eq!(
            routing(&call),
            vec![
                (VERSION_HEADER, "2026-07-28".to_owned()),
                (METHOD_HEADER, "tools/call".to_owned()),
                (NAME_HEADER, "echo".to_owned()),
            ]
        );
        let read = Message::request(
            2,
            "resources/read",
            Some(json!({"uri": "file:///x", "_meta": meta})),
        );
        assert_eq!(routing(&read)[2].1, "file:///x");
        let legacy = Message::request(3, "tools/call", Some(json!({"name": "echo"})));
        assert_eq!(modern_version(&legacy), None);
        assert_eq!(
            routing(&legacy),
            vec![
                (METHOD_HEADER, "tools/call".to_owned()),
                (NAME_HEADER, "echo".to_owned()),
            ]
        );
        let initialized = Message::notification("notifications/initialized", None);
        assert_eq!(modern_version(&initialized), None);
        assert_eq!(
            routing(&initialized),
            vec![(METHOD_HEADER, "notifications/initialized".to_owned())]
        );
        let bad = Message::request(4, "tools/\ncall", None);
        let error = routing_headers(&bad, None).expect_err("a method that makes no header");
        assert!(error.to_string().contains("mcp-method"), "{error}");
    }

    #[test]
    fn lost_sessions_are_told_from_bad_requests() {
        assert!(names_a_lost_session(
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#
        ));
        assert!(names_a_lost_session(
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}"#
        ));
        assert!(!names_a_lost_session(
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#
        ));
    }
}
