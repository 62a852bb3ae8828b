//! The HTTP+SSE transport of protocol 2024-11-05: `GET /sse` opens a stream
//! whose first event (`endpoint`) names where to POST; every answer and
//! server message then travels on that stream as a `message` event. With
//! shared state, a POST that reaches another replica is handed to the one
//! holding the stream.

use std::collections::HashMap;
use std::convert::Infallible;

use axum::extract::{Extension, Query, State};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderMap, StatusCode};
use mcpyard_gateway::{Gateway, Identity, Session};
use mcpyard_proto::{Body, Message};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::accept::is_json_content;
use crate::batch::{self, Batch};
use crate::reply::{json_response, rpc_error_response};
use crate::sse::{self, EventIds};
use crate::state::AppState;
use crate::streamable::read_body;

/// Messages waiting for a slow reader of the stream.
const STREAM_CAPACITY: usize = 256;

/// Ends the session when the stream is dropped (the client went away), on
/// every replica: no other can answer it without the stream.
struct EndOnDrop {
    gateway: Gateway,
    id: String,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.gateway.end_session(&self.id);
        if let (true, Ok(runtime)) = (
            self.gateway.state().shared(),
            tokio::runtime::Handle::try_current(),
        ) {
            let (gateway, id) = (self.gateway.clone(), std::mem::take(&mut self.id));
            runtime.spawn(async move { gateway.delete_session(&id).await });
        }
    }
}

/// `GET /sse`: creates and registers a session whose stream is this one.
pub(crate) async fn open(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
) -> Response {
    let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
    let session = Session::new_as(identity, Some(tx));
    if !state.gateway.register_session(session.clone())
        || !state.gateway.share_session(&session).await
    {
        return crate::streamable::too_many_sessions();
    }
    state.gateway.hold_stream(&session);
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/messages?sessionId={}", session.id()));
    let guard = EndOnDrop {
        gateway: state.gateway.clone(),
        id: session.id().to_owned(),
    };
    let shutdown = state.shutdown.clone();
    let until = async move {
        tokio::select! {
            _ = session.ended() => {}
            _ = shutdown.cancelled() => {}
        }
    };
    let mut ids = EventIds::default();
    let messages = ReceiverStream::new(rx).map(move |m| {
        // Owned by the stream: dropping the stream ends the session.
        let _ = &guard;
        Ok::<_, Infallible>(ids.message(&m))
    });
    let events = futures::stream::iter([Ok(endpoint)])
        .chain(messages)
        .take_until(Box::pin(until));
    sse::response(events, state.opts.sse_keep_alive)
}

/// `POST /messages?sessionId=ID`: accepted with 202, answered on the stream.
pub(crate) async fn post(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let Some(id) = query.get("sessionId") else {
        return rpc_error_response(
            StatusCode::BAD_REQUEST,
            mcpyard_proto::codes::INVALID_REQUEST,
            "Bad Request: the sessionId query parameter is required",
        );
    };
    if !is_json_content(&headers) {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        )
            .into_response();
    }
    let body = match read_body(body, &headers, state.opts.max_body_bytes).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let session = match state.gateway.find_session(id).await {
        // Another identity's session is answered as one that does not exist.
        Some(s) if !s.is_ended() && s.admit(&identity) => s,
        _ => {
            return rpc_error_response(
                StatusCode::NOT_FOUND,
                mcpyard_proto::codes::INVALID_REQUEST,
                "Session not found: open a new /sse stream",
            )
        }
    };
    // The stream cannot tell which POST an id-less error belongs to, so a
    // body that cannot be read is refused on the POST itself.
    let parsed = match batch::parse(&body, state.opts.batch) {
        Err(e) => return json_response(StatusCode::BAD_REQUEST, &e.to_response()),
        Ok(parsed) => parsed,
    };
    if state.gateway.stream_elsewhere(&session) {
        return hand_to_stream(&state.gateway, &session, parsed).await;
    }
    let answers = match parsed {
        Body::Single(Err(e)) => return json_response(StatusCode::BAD_REQUEST, &e.to_response()),
        Body::Single(Ok(Message::Request { id, method, params })) => {
            let (gateway, session) = (state.gateway.clone(), session.clone());
            // No answer is what a request the client cancelled gets.
            futures::stream::once(async move {
                gateway
                    .request(&session, id, &method, params, None)
                    .await
                    .into_reply()
            })
            .filter_map(std::future::ready)
            .boxed()
        }
        Body::Single(Ok(msg)) => {
            // Handled before the 202 so their effect precedes the next POST.
            state.gateway.receive(&session, msg).await;
            return (StatusCode::ACCEPTED, "Accepted").into_response();
        }
        Body::Batch(items) => Batch::sort(&state.gateway, &session, items)
            .await
            .answers(
                state.gateway.clone(),
                session.clone(),
                None,
                state.opts.batch,
            )
            .boxed(),
    };
    // Answers go on the session's stream, not on this POST.
    tokio::spawn(async move {
        let mut answers = answers;
        while let Some(answer) = answers.next().await {
            if !session.send(answer, None).await {
                tracing::debug!(session = session.id(), "answer dropped: stream closed");
                break;
            }
        }
    });
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

/// A POST for a session whose stream another replica holds: each message
/// is handed there in order, and served there as if posted there. A body
/// with entries that cannot be read is refused whole, with their errors,
/// before anything is handed on.
async fn hand_to_stream(gateway: &Gateway, session: &Session, body: Body) -> Response {
    let items = match body {
        Body::Single(Err(e)) => return json_response(StatusCode::BAD_REQUEST, &e.to_response()),
        Body::Single(Ok(message)) => vec![Ok(message)],
        Body::Batch(items) => items,
    };
    let unreadable: Vec<Message> = items
        .iter()
        .filter_map(|item| item.as_ref().err().map(|e| e.to_response()))
        .collect();
    if !unreadable.is_empty() {
        return json_response(StatusCode::BAD_REQUEST, &unreadable);
    }
    for message in items.into_iter().flatten() {
        if let Err(why) = gateway.hand_to_stream(session, message).await {
            tracing::warn!(why, "a legacy client's message could not reach its stream");
            return rpc_error_response(
                StatusCode::NOT_FOUND,
                mcpyard_proto::codes::INVALID_REQUEST,
                "Session not found: its stream is gone; open a new /sse stream",
            );
        }
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
