//! What the two HTTP transports share: building the `reqwest` client,
//! reading capped bodies and event streams, and turning HTTP failures into
//! [`ClientError`]s without echoing secrets.

use std::sync::Arc;
use std::time::Duration;

use http_body::Body as _;

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use tokio_util::sync::CancellationToken;

use super::auth::Refusal;
use super::http_response::{chunk, transport_error, HttpResponse};
use super::origin_pool::OriginPool;
use super::outgoing::Outgoing;
use super::sse_decoder::{SseDecoder, SseEvent};
use crate::{ClientError, HttpAuth};

/// A safety net over [`HttpAuth::challenged`], which bounds its own retries:
/// one request is never sent more than this many times for authorization.
const MAX_AUTH_ATTEMPTS: u32 = 4;

/// How much of an error body is kept for [`ClientError::Http`].
const ERROR_BODY_PREVIEW: usize = 1024;

/// What a transport sends its requests with: one `reqwest::Client` per
/// [`McpClient`](crate::McpClient), whose pool keeps connections alive
/// across requests, and for the transport's own origin, when reqwest would
/// reach it directly, a pool of plain HTTP/1.1 connections
/// ([`OriginPool`]) that costs a fraction of reqwest's per request.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    reqwest: reqwest::Client,
    origin: Option<Arc<OriginPool>>,
}

impl HttpClient {
    /// A client for a transport whose server is at `url`; `headers` go with
    /// every request. `TCP_NODELAY` avoids the ~40 ms Nagle/delayed-ACK
    /// stall on small replies.
    pub(crate) fn new(
        url: &reqwest::Url,
        headers: &[(String, String)],
        connect_timeout: Duration,
    ) -> Result<Self, ClientError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ClientError::Transport(format!("invalid header name `{name}`")))?;
            // The value is never echoed: it may be a token.
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                ClientError::Transport(format!("invalid value for header `{name}`"))
            })?;
            value.set_sensitive(true);
            map.append(name, value);
        }
        let origin = OriginPool::for_url(url, &map, connect_timeout);
        let reqwest = reqwest::Client::builder()
            .default_headers(map)
            .tcp_nodelay(true)
            .connect_timeout(connect_timeout)
            // An MCP endpoint answers where it is; following redirects would
            // also carry custom headers (tokens) to another origin.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Transport(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { reqwest, origin })
    }

    async fn execute(&self, req: Outgoing) -> Result<HttpResponse, ClientError> {
        match &self.origin {
            Some(pool) if pool.serves(&req.url) => pool.execute(req).await,
            _ => Ok(self
                .reqwest
                .execute(req.into_reqwest())
                .await
                .map_err(transport_error)?
                .into()),
        }
    }
}

/// Sends the request `build` makes, with the `Authorization` header from
/// `auth`; on a 401, or a 403 naming `insufficient_scope`, asks `auth` for
/// new credentials and sends it again while `auth` says so (bounded).
pub(crate) async fn send_authorized(
    http: &HttpClient,
    auth: Option<&Arc<dyn HttpAuth>>,
    build: impl Fn() -> Result<Outgoing, ClientError>,
) -> Result<HttpResponse, ClientError> {
    let Some(auth) = auth else {
        return http.execute(build()?).await;
    };
    let mut attempts = 1;
    loop {
        let mut req = build()?;
        let sent = auth.authorization().await?;
        if let Some(sent) = &sent {
            let mut value = HeaderValue::from_str(sent)
                .map_err(|_| ClientError::Transport("invalid Authorization value".into()))?;
            value.set_sensitive(true);
            req.headers.insert(AUTHORIZATION, value);
            let proof = auth
                .proof(req.method.as_str(), req.url.as_str(), sent)
                .await?;
            if let Some(proof) = proof {
                let value = HeaderValue::from_str(&proof)
                    .map_err(|_| ClientError::Transport("invalid DPoP proof".into()))?;
                req.headers.insert("dpop", value);
            }
        }
        let resp = http.execute(req).await?;
        let status = resp.status().as_u16();
        let challenge = resp
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let dpop_nonce = resp
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let refused = status == 401
            || (status == 403
                && challenge
                    .as_deref()
                    .is_some_and(|c| c.contains("insufficient_scope")));
        if !refused {
            if sent.is_some() {
                auth.accepted();
            }
            return Ok(resp);
        }
        if attempts >= MAX_AUTH_ATTEMPTS {
            return Ok(resp);
        }
        let refusal = Refusal {
            status,
            www_authenticate: challenge.as_deref(),
            sent: sent.as_deref(),
            attempt: attempts,
            dpop_nonce: dpop_nonce.as_deref(),
        };
        if !auth.challenged(refusal).await? {
            return Ok(resp);
        }
        attempts += 1;
    }
}

/// A request's W3C trace context, sent in `_meta.traceparent` (by a tracing
/// gateway or the caller), is sent as the `traceparent` header too, so that
/// HTTP-level tracing at the server joins the same trace.
pub(crate) fn with_trace_context(req: Outgoing, message: &mcpyard_proto::Message) -> Outgoing {
    let mcpyard_proto::Message::Request { params, .. } = message else {
        return req;
    };
    let traceparent = params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("traceparent"))
        .and_then(serde_json::Value::as_str)
        .filter(|t| is_traceparent(t))
        .and_then(|t| HeaderValue::from_str(t).ok());
    match traceparent {
        Some(t) => req.with(TRACEPARENT, t),
        None => req,
    }
}

const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// `version-traceid-parentid-flags` in lowercase hex (W3C Trace Context).
fn is_traceparent(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() == 4
        && parts.iter().map(|p| p.len()).eq([2, 32, 16, 2])
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

pub(crate) fn parse_url(url: &str) -> Result<reqwest::Url, ClientError> {
    reqwest::Url::parse(url).map_err(|e| ClientError::Transport(format!("invalid URL: {e}")))
}

/// What a response body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    EventStream,
    Other,
}

pub(crate) fn body_kind(resp: &HttpResponse) -> BodyKind {
    let ct = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ct.starts_with("text/event-stream") {
        BodyKind::EventStream
    } else if ct.starts_with("application/json") || ct.contains("+json") {
        BodyKind::Json
    } else {
        BodyKind::Other
    }
}

/// Reads a whole body, failing with [`ClientError::Protocol`] past `cap`.
pub(crate) async fn read_capped(
    mut resp: HttpResponse,
    cap: usize,
) -> Result<Vec<u8>, ClientError> {
    let too_large = || ClientError::Protocol(format!("response body larger than {cap} bytes"));
    if resp.body().size_hint().lower() > cap as u64 {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = chunk(&mut resp).await? {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A non-success answer as [`ClientError::Http`], with the start of its body.
pub(crate) async fn status_error(mut resp: HttpResponse) -> ClientError {
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_PREVIEW {
        match chunk(&mut resp).await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_PREVIEW);
    ClientError::Http {
        status,
        body: String::from_utf8_lossy(&body).trim().to_owned(),
    }
}

/// Why an event stream stopped.
#[derive(Debug)]
pub(crate) enum StreamStop {
    /// The server ended it.
    Ended,
    /// Our side is no longer interested.
    Stopped,
    /// An event past the cap.
    TooLarge(usize),
    /// The connection broke.
    Broken(String),
}

/// Reads the next events of a stream; `Err` says why it stopped.
pub(crate) async fn next_events(
    resp: &mut HttpResponse,
    decoder: &mut SseDecoder,
    stop: &CancellationToken,
) -> Result<Vec<SseEvent>, StreamStop> {
    loop {
        let chunk = tokio::select! {
            chunk = chunk(resp) => chunk,
            () = stop.cancelled() => return Err(StreamStop::Stopped),
        };
        match chunk {
            Ok(Some(bytes)) => {
                let events = decoder
                    .feed(&bytes)
                    .map_err(|e| StreamStop::TooLarge(e.0))?;
                if !events.is_empty() {
                    return Ok(events);
                }
            }
            Ok(None) => return Err(StreamStop::Ended),
            Err(e) => return Err(StreamStop::Broken(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_traceparent;

    #[test]
    fn only_well_formed_trace_contexts_become_headers() {
        assert!(is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_traceparent(
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_traceparent("00-abc-def-01"));
        assert!(!is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx: y"
        ));
    }
}
