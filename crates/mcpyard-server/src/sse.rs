//! Server-Sent Events framing shared by every streaming answer.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use http::HeaderValue;
use mcpyard_proto::Message;
use serde::Serialize;

/// Compact JSON (no newlines: one `data:` line), written straight from a
/// message or a value.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    // Messages and values always serialise: their maps have string keys.
    serde_json::to_string(value).unwrap_or_default()
}

/// Numbers the events of one stream so each has an `id:`.
#[derive(Debug, Default)]
pub(crate) struct EventIds(u64);

impl EventIds {
    pub(crate) fn message(&mut self, msg: &Message) -> Event {
        self.json(msg)
    }

    /// A `message` event carrying any JSON (a message or a batch answer),
    /// written straight from it.
    pub(crate) fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> Event {
        self.0 += 1;
        Event::default()
            .event("message")
            .id(self.0.to_string())
            // Compact JSON has no newlines, so it is one `data:` line.
            .data(to_json(value))
    }
}

/// A `message` event with its `id` and its JSON text, already written.
pub(crate) fn message_event(id: String, json: String) -> Event {
    Event::default().event("message").id(id).data(json)
}

/// How soon a client should come back when the gateway closes its stream
/// to shut down: behind a load balancer, another replica answers.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// `events` until `shutdown`; a stream ended by it closes with a `retry:`
/// hint, so that the client reconnects soon (to another replica) rather
/// than after its own backoff.
pub(crate) fn until_shutdown<S>(
    events: S,
    shutdown: tokio_util::sync::CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    use futures::StreamExt;
    let ended = shutdown.clone();
    let farewell = futures::stream::once(async move { ended.is_cancelled() }).filter_map(
        |closing| async move {
            closing.then(|| {
                Ok(Event::default()
                    .retry(RECONNECT_AFTER)
                    .comment("the gateway is shutting down: reconnect"))
            })
        },
    );
    events
        .take_until(shutdown.cancelled_owned())
        .chain(farewell)
}

/// An SSE response with keep-alive comments and the header that stops
/// reverse proxies from buffering the stream.
pub(crate) fn response<S>(events: S, keep_alive: Duration) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut r = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response();
    r.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}
