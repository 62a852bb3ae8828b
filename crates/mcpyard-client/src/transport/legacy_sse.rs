//! Legacy HTTP+SSE (2024-11-05): a GET opens an event stream whose first
//! `endpoint` event names the URL to POST messages to; every answer and
//! every server message then arrives as a `message` event on that stream.
//! The stream ending ends the connection.

use std::sync::Arc;
use std::time::Duration;

use mcpyard_proto::Message;
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::Method;
use tokio::sync::oneshot;

use super::http_common::{
    body_kind, next_events, parse_url, send_authorized, status_error, BodyKind, HttpClient,
    StreamStop,
};
use super::http_response::HttpResponse;
use super::outgoing::Outgoing;
use super::sse_decoder::SseDecoder;
use crate::link::{deliver_body, Link, MAX_MESSAGE_BYTES};
use crate::{ClientError, HttpAuth};

/// A legacy SSE connection.
#[derive(Debug)]
pub(crate) struct LegacySseTransport {
    http: HttpClient,
    endpoint: reqwest::Url,
    link: Link,
    auth: Option<Arc<dyn HttpAuth>>,
}

impl LegacySseTransport {
    /// Opens the stream and waits for the `endpoint` event (the caller
    /// bounds the wait).
    pub(crate) async fn open(
        url: &str,
        headers: &[(String, String)],
        connect_timeout: Duration,
        link: Link,
        auth: Option<Arc<dyn HttpAuth>>,
    ) -> Result<Self, ClientError> {
        let url = parse_url(url)?;
        let http = HttpClient::new(&url, headers, connect_timeout)?;
        let resp = send_authorized(&http, auth.as_ref(), || {
            Ok(Outgoing::new(Method::GET, &url)
                .with(ACCEPT, HeaderValue::from_static("text/event-stream")))
        })
        .await?;
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        if body_kind(&resp) != BodyKind::EventStream {
            return Err(ClientError::Protocol(
                "the SSE URL did not answer with text/event-stream".into(),
            ));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        tokio::spawn(read_stream(resp, url, link.clone(), endpoint_tx));
        let endpoint = endpoint_rx.await.map_err(|_| {
            ClientError::Protocol("the SSE stream ended before an `endpoint` event".into())
        })??;
        Ok(Self {
            http,
            endpoint,
            link,
            auth,
        })
    }

    pub(crate) async fn send(&self, message: &Message) -> Result<(), ClientError> {
        let body = bytes::Bytes::from(message.to_vec());
        let resp = send_authorized(&self.http, self.auth.as_ref(), || {
            let req = Outgoing::new(Method::POST, &self.endpoint)
                .with(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body.clone());
            Ok(super::http_common::with_trace_context(req, message))
        })
        .await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(status_error(resp).await)
        }
    }

    pub(crate) async fn shutdown(&self) {
        // Closing the stream (the reader stops on the closed token) is how a
        // legacy client leaves.
        self.link.end("shut down").await;
    }
}

async fn read_stream(
    mut resp: HttpResponse,
    base: reqwest::Url,
    link: Link,
    endpoint_tx: oneshot::Sender<Result<reqwest::Url, ClientError>>,
) {
    let mut endpoint_tx = Some(endpoint_tx);
    let mut decoder = SseDecoder::new(MAX_MESSAGE_BYTES);
    let stop = link.closed().clone();
    let end = loop {
        match next_events(&mut resp, &mut decoder, &stop).await {
            Ok(events) => {
                for event in events {
                    match event.event.as_str() {
                        "endpoint" => {
                            // Resolved against the SSE URL: servers send a
                            // path such as `/message?sessionId=...`.
                            let endpoint = base.join(event.data.trim()).map_err(|e| {
                                ClientError::Protocol(format!("bad endpoint event: {e}"))
                            });
                            match endpoint_tx.take() {
                                Some(tx) => {
                                    let _ = tx.send(endpoint);
                                }
                                None => tracing::debug!(
                                    target: "mcpyard::upstream",
                                    server = link.label(),
                                    "ignoring a second endpoint event"
                                ),
                            }
                        }
                        "message" => {
                            deliver_body(&link, event.data.as_bytes(), None, "an event").await;
                        }
                        _ => {}
                    }
                }
            }
            Err(end) => break end,
        }
    };
    let reason = match end {
        StreamStop::Stopped => return,
        StreamStop::Ended => "the SSE stream ended".to_owned(),
        StreamStop::TooLarge(max) => format!("an event larger than {max} bytes"),
        StreamStop::Broken(e) => format!("the SSE stream broke: {e}"),
    };
    if let Some(tx) = endpoint_tx.take() {
        let _ = tx.send(Err(ClientError::Protocol(reason.clone())));
    }
    tracing::info!(target: "mcpyard::upstream", server = link.label(), "{reason}");
    link.end(reason).await;
}
