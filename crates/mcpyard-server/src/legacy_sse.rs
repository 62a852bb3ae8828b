//! The HTTP+SSE transport of protocol 2024-11-05: `GET /sse` opens a stream
//! whose first event (`endpoint`) names where to POST; every answer and
//! server message then travels on that stream as a `message` event.

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

/// Ends the session when the stream is dropped (the client went away).
struct EndOnDrop {
    gateway: Gateway,
    id: String,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.gateway.end_session(&self.id);
    }
}

/// `GET /sse`: creates and registers a session whose stream is this one.
pub(crate) async fn open(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
) -> Response {
    let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
    let session = Session::new_as(identity, Some(tx));
    if !state.gateway.register_session(session.clone()) {
        return crate::streamable::too_many_sessions();
    }
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
    let session = match state.gateway.session(id) {
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
    let answers = match batch::parse(&body, state.opts.batch) {
        // The stream cannot tell which POST an id-less error belongs to, so
        // a body that cannot be read is refused on the POST itself.
        Err(e) | Ok(Body::Single(Err(e))) => {
            return json_response(StatusCode::BAD_REQUEST, &e.to_response())
        }
        Ok(Body::Single(Ok(Message::Request { id, method, params }))) => {
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
        Ok(Body::Single(Ok(msg))) => {
            // Handled before the 202 so their effect precedes the next POST.
            state.gateway.receive(&session, msg).await;
            return (StatusCode::ACCEPTED, "Accepted").into_response();
        }
        Ok(Body::Batch(items)) => Batch::sort(&state.gateway, &session, items)
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
