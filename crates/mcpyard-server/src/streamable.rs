//! Streamable HTTP on `/mcp` for the session eras (2025-03-26 to
//! 2025-11-25): POST carries messages, GET opens the session stream,
//! DELETE ends the session. Requests of the stateless era are recognised
//! here and handed to [`crate::stateless`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::header::ALLOW;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use mcpyard_gateway::{Gateway, Identity, Session, StreamRecorder};
use mcpyard_proto::{
    allows_batches, codes, is_supported, methods, Body, ErrorObject, Message, ParseError,
    RequestId, SUPPORTED,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::accept::{is_json_content, Accepts};
use crate::batch::{self, Batch, BatchLimits};
use crate::options::{BodyTimedOut, SessionMode};
use crate::reply::{self, always_ok, json_response, rpc_error_response, Final, Plan};
use crate::sse::{self, EventIds};
use crate::state::AppState;
use crate::{sessionless, stateless};

// Names, not text: a lookup by text parses and lowercases the name first.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The last event a client that reconnects its GET stream saw.
const LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static("last-event-id");

/// Messages waiting for a slow reader of a session stream.
const STREAM_CAPACITY: usize = 256;

/// A header's value as text; `Err` when present but not visible ASCII.
fn header_str<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h str>, ()> {
    headers
        .get(name)
        .map(|v| v.to_str().map_err(|_| ()))
        .transpose()
}

fn bad_request(message: &str) -> Response {
    rpc_error_response(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
}

pub(crate) fn too_many_sessions() -> Response {
    rpc_error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        codes::INTERNAL_ERROR,
        "Too many sessions: every session of the gateway is in use; try again later",
    )
}

/// A new session asked for while this replica drains: another one (behind
/// the same balancer) takes it.
fn draining() -> Response {
    let mut r = rpc_error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        codes::INTERNAL_ERROR,
        "The gateway is shutting down; try again (another replica may answer)",
    );
    r.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn session_not_found() -> Response {
    rpc_error_response(
        StatusCode::NOT_FOUND,
        codes::INVALID_REQUEST,
        "Session not found: it ended or never existed; send initialize again",
    )
}

fn unsupported_version(requested: &str, id: Option<RequestId>) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &Message::error(
            id,
            ErrorObject::new(
                stateless::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported MCP-Protocol-Version: {requested}"),
            )
            .with_data(json!({"supported": SUPPORTED, "requested": requested})),
        ),
    )
}

fn method_not_allowed() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(ALLOW, HeaderValue::from_static("POST, DELETE"))],
        "GET opens a session's stream: it needs the Mcp-Session-Id that initialize returned and Accept: text/event-stream",
    )
        .into_response()
}

/// A JSON-RPC answer to a body that could not be read.
fn parse_failure(e: &ParseError, status: StatusCode) -> Response {
    json_response(status, &e.to_response())
}

/// Checks the `MCP-Protocol-Version` header: absent is fine (2025-03-26 is
/// assumed, as the spec allows), unknown is 400, answered with the id of
/// the request in `body` when it has one.
fn check_version_header<'h>(
    headers: &'h HeaderMap,
    body: &[u8],
) -> Result<Option<&'h str>, Box<Response>> {
    match header_str(headers, &VERSION_HEADER) {
        Err(()) => Err(Box::new(bad_request(
            "MCP-Protocol-Version is not valid text",
        ))),
        Ok(Some(v)) if !is_supported(v) => Err(Box::new(unsupported_version(v, request_id(body)))),
        Ok(v) => Ok(v),
    }
}

/// The id of the single request in `body`, if it is one and has an id.
fn request_id(body: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct WithId {
        id: Option<RequestId>,
    }
    serde_json::from_slice::<WithId>(body).ok()?.id
}

/// The live session named by the request, or the error to answer. A
/// session of another identity is answered as one that does not exist.
async fn lookup(
    gateway: &Gateway,
    id: &str,
    identity: &Identity,
) -> Result<Arc<Session>, Box<Response>> {
    match gateway.find_session(id).await {
        Some(s) if !s.is_ended() && s.admit(identity) => Ok(s),
        _ => Err(Box::new(session_not_found())),
    }
}

pub(crate) async fn post(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    post_as(&state, identity, &headers, body).await
}

/// A POST to the endpoint, from `identity` (already admitted).
pub(crate) async fn post_as(
    state: &AppState,
    identity: Identity,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Response {
    let accepts = Accepts::from_headers(headers);
    if !accepts.any() {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "Accept must allow application/json and/or text/event-stream",
        )
            .into_response();
    }
    if !is_json_content(headers) {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        )
            .into_response();
    }
    let body = match read_body(body, headers, state.opts.max_body_bytes).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let version = match check_version_header(headers, &body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    match header_str(headers, &SESSION_HEADER) {
        Err(()) => bad_request("Mcp-Session-Id is not valid text"),
        Ok(Some(id)) => match lookup(&state.gateway, id, &identity).await {
            Ok(session) => post_in_session(state, session, accepts, body).await,
            Err(r) => *r,
        },
        Ok(None) => {
            let stateless_hint = version.is_some_and(stateless::is_stateless_version);
            post_without_session(state, identity, headers, accepts, body, stateless_hint).await
        }
    }
}

/// Bodies up to this size (by `Content-Length`) are collected the usual way.
const SMALL_BODY: usize = 64 * 1024;

/// Reads the whole body; a large one into one buffer sized from
/// `Content-Length`, so it is held once, not as received chunks plus a
/// joined copy.
pub(crate) async fn read_body(
    body: axum::body::Body,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Bytes, Box<Response>> {
    use futures::StreamExt;
    let hint = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    if hint > limit {
        return Err(too_large(limit));
    }
    // Small bodies: axum's own collection is the cheapest path.
    if hint <= SMALL_BODY {
        return axum::body::to_bytes(body, limit)
            .await
            .map_err(|e| unreadable(&e, limit));
    }
    let mut buf: Vec<u8> = Vec::new();
    // A body that arrives in one piece (the usual small request) is used as
    // it is, without a copy.
    let mut first: Option<Bytes> = None;
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(c) if buf.len() + first.as_ref().map_or(0, Bytes::len) + c.len() > limit => {
                return Err(too_large(limit))
            }
            Ok(c) if first.is_none() && buf.is_empty() => first = Some(c),
            Ok(c) => {
                if let Some(f) = first.take() {
                    buf.reserve_exact(hint.max(f.len() + c.len()));
                    buf.extend_from_slice(&f);
                }
                buf.extend_from_slice(&c);
            }
            Err(e) => return Err(unreadable(&e, limit)),
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

fn too_large(limit: usize) -> Box<Response> {
    Box::new(
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {limit} bytes"),
        )
            .into_response(),
    )
}

/// The answer to a body that failed while being read: too large, too slow
/// (the connection is closed after it), or broken off.
fn unreadable(e: &axum::Error, limit: usize) -> Box<Response> {
    let causes = std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    });
    for cause in causes {
        if cause.is::<http_body_util::LengthLimitError>() {
            return too_large(limit);
        }
        if cause.is::<BodyTimedOut>() {
            return Box::new(
                (
                    StatusCode::REQUEST_TIMEOUT,
                    [(http::header::CONNECTION, HeaderValue::from_static("close"))],
                    "the request body did not arrive in time",
                )
                    .into_response(),
            );
        }
    }
    Box::new(
        (
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )
            .into_response(),
    )
}

async fn post_without_session(
    state: &AppState,
    identity: Identity,
    headers: &HeaderMap,
    accepts: Accepts,
    body: Bytes,
    stateless_hint: bool,
) -> Response {
    // The stateless era answers a malformed body with 400; the session eras
    // keep every JSON-RPC error on HTTP 200.
    let error_status = if stateless_hint {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    // The raw body is not kept while the call runs (it can be megabytes).
    let parsed = batch::parse(&body, state.opts.batch);
    drop(body);
    match parsed {
        Err(e) | Ok(Body::Single(Err(e))) => parse_failure(&e, error_status),
        Ok(Body::Single(Ok(msg))) if stateless_hint || stateless::has_envelope(&msg) => {
            stateless::post(state, identity, headers, accepts, msg).await
        }
        Ok(Body::Single(Ok(Message::Request { id, method, params })))
            if method == methods::INITIALIZE =>
        {
            initialize(state, identity, accepts, id, params).await
        }
        Ok(Body::Batch(_)) if stateless_hint => stateless::batch_rejected(),
        Ok(Body::Batch(items))
            if items.iter().any(|m| {
                m.as_ref()
                    .is_ok_and(|m| m.method() == Some(methods::INITIALIZE))
            }) =>
        {
            json_response(
                StatusCode::OK,
                &Message::error(
                    None,
                    ErrorObject::invalid_request("initialize must not be sent in a batch"),
                ),
            )
        }
        Ok(body) if state.opts.sessions == SessionMode::Optional => {
            sessionless::post(state, identity, accepts, body).await
        }
        Ok(_) => {
            bad_request("Bad Request: Mcp-Session-Id header is required (send initialize first)")
        }
    }
}

/// `initialize` without a session: a new session is created, and issued in
/// `Mcp-Session-Id` when the gateway accepts the handshake.
async fn initialize(
    state: &AppState,
    identity: Identity,
    accepts: Accepts,
    id: RequestId,
    params: Option<Value>,
) -> Response {
    if state.shutdown.is_cancelled() {
        return draining();
    }
    let session = Session::new_as(identity, None);
    let answer = state
        .gateway
        .request(&session, id, methods::INITIALIZE, params, None)
        .await
        .into_message();
    let accepted = matches!(answer, Message::Response { .. });
    if accepted && !state.gateway.register_session(session.clone()) {
        session.end();
        return too_many_sessions();
    }
    if accepted && !state.gateway.share_session(&session).await {
        return too_many_sessions();
    }
    let mut response = if accepts.json {
        json_response(StatusCode::OK, &answer)
    } else {
        let mut ids = EventIds::default();
        let event = ids.message(&answer);
        sse::response(
            futures::stream::iter([Ok(event)]),
            state.opts.sse_keep_alive,
        )
    };
    if accepted {
        if let Ok(v) = HeaderValue::from_str(session.id()) {
            response.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    response
}

async fn post_in_session(
    state: &AppState,
    session: Arc<Session>,
    accepts: Accepts,
    body: Bytes,
) -> Response {
    let plan = Plan {
        accepts,
        cancel_on_disconnect: false,
        keep_alive: state.opts.sse_keep_alive,
        ends_on_drain: None,
        status_of: always_ok,
    };
    let gateway = state.gateway.clone();
    // The raw body is not kept while the call runs (it can be megabytes).
    let parsed = batch::parse(&body, state.opts.batch);
    drop(body);
    match parsed {
        Err(e) | Ok(Body::Single(Err(e))) => parse_failure(&e, StatusCode::OK),
        Ok(Body::Single(Ok(Message::Request { id, method, params }))) => {
            reply::reply(plan, move |related| async move {
                Final::One(
                    gateway
                        .request(&session, id, &method, params, related)
                        .await
                        .into_message(),
                )
            })
            .await
        }
        Ok(Body::Single(Ok(msg))) => {
            // Notifications and responses are handled before the 202 so that
            // their effect (initialized, a resolved sampling request) is in
            // place when the client's next POST arrives.
            gateway.receive(&session, msg).await;
            StatusCode::ACCEPTED.into_response()
        }
        Ok(Body::Batch(items)) => {
            if !allows_batches(&session.protocol_version()) {
                return json_response(
                    StatusCode::OK,
                    &Message::error(
                        None,
                        ErrorObject::invalid_request(
                            "batches not supported by the negotiated protocol version",
                        ),
                    ),
                );
            }
            post_batch(&gateway, session, plan, items, state.opts.batch).await
        }
    }
}

/// A batch of a 2025-03-26 session: each entry is answered on its own,
/// requests a few at a time, and the answers are sent back as one array.
async fn post_batch(
    gateway: &Gateway,
    session: Arc<Session>,
    plan: Plan,
    items: Vec<Result<Message, ParseError>>,
    limits: BatchLimits,
) -> Response {
    let batch = Batch::sort(gateway, &session, items).await;
    if batch.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    let gateway = gateway.clone();
    reply::reply(plan, move |related| async move {
        let answers = batch.answers(gateway, session, related, limits);
        Final::Batch(answers.collect().await)
    })
    .await
}

/// `GET /mcp`: the session stream for messages not tied to a request.
pub(crate) async fn get(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
) -> Response {
    if !Accepts::from_headers(&headers).sse {
        return method_not_allowed();
    }
    let id = match header_str(&headers, &SESSION_HEADER) {
        Ok(Some(id)) => id,
        Ok(None) => return method_not_allowed(),
        Err(()) => return bad_request("Mcp-Session-Id is not valid text"),
    };
    if let Err(r) = check_version_header(&headers, &[]) {
        return *r;
    }
    let session = match lookup(&state.gateway, id, &identity).await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
    if !session.attach_stream(tx) {
        return (
            StatusCode::CONFLICT,
            "Conflict: this session already has an open GET stream",
        )
            .into_response();
    }
    // The new stream is attached, and the other replicas told that this
    // one holds it, before the log is read: a message sent meanwhile waits
    // in it, and is logged only when written, after the replayed ones, so
    // none comes twice.
    let recorder = Arc::new(state.gateway.stream_recorder(session.clone()));
    recorder.hold().await;
    let replayed = match header_str(&headers, &LAST_EVENT_ID_HEADER) {
        Ok(Some(last)) => state.gateway.replay_stream(&session, last).await,
        _ => Vec::new(),
    };
    let replayed =
        futures::stream::iter(replayed).map(|(id, json)| Ok(sse::message_event(id, json)));
    let queued = Queued {
        rx,
        recorder: recorder.clone(),
    };
    let live = queued.then(move |m| {
        let recorder = recorder.clone();
        async move {
            // Logged before it becomes an event: a message the client does
            // not get because the connection breaks now can be replayed.
            let json = sse::to_json(&m);
            let id = recorder.record(&json).await;
            Ok(sse::message_event(id, json))
        }
    });
    let events = replayed
        .chain(live)
        .take_until(Box::pin(async move { session.ended().await }));
    sse::response(
        sse::until_shutdown(events, state.shutdown.clone()),
        state.opts.sse_keep_alive,
    )
}

/// The GET stream's queue. What is still in it when the stream closes
/// (the client went, the gateway shuts down) is logged, so that the
/// client gets it when it reconnects.
struct Queued {
    rx: mpsc::Receiver<Message>,
    recorder: Arc<StreamRecorder>,
}

impl futures::Stream for Queued {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        // Taken before the queue closes: a new GET stream of the session
        // can only attach once it has, so these come before its messages.
        let mut left = Vec::new();
        while let Ok(m) = self.rx.try_recv() {
            left.push(sse::to_json(&m));
        }
        self.recorder.record_unwritten(left);
    }
}

/// `DELETE /mcp`: the client ends its session.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
) -> Response {
    let id = match header_str(&headers, &SESSION_HEADER) {
        Ok(Some(id)) => id,
        Ok(None) => {
            return bad_request(
                "Bad Request: DELETE ends a session: it needs the Mcp-Session-Id that initialize returned",
            )
        }
        Err(()) => return bad_request("Mcp-Session-Id is not valid text"),
    };
    if let Err(r) = check_version_header(&headers, &[]) {
        return *r;
    }
    if let Err(r) = lookup(&state.gateway, id, &identity).await {
        return *r;
    }
    if state.gateway.delete_session(id).await {
        StatusCode::OK.into_response()
    } else {
        session_not_found()
    }
}
