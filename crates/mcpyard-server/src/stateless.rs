//! The stateless era (protocol 2026-07-28) on Streamable HTTP.
//!
//! Wire format, as the specification draft and the official Python SDK
//! (`mcp` 2.3.0, `mcp_types` 2.3.0) put it:
//!
//! - There is no `initialize` and no `Mcp-Session-Id`: every request is a
//!   self-contained POST whose `params._meta` carries the envelope
//!   `io.modelcontextprotocol/protocolVersion` (string, required),
//!   `io.modelcontextprotocol/clientCapabilities` (object, required) and
//!   `io.modelcontextprotocol/clientInfo` (optional). A client may also put
//!   `io.modelcontextprotocol/logLevel` there to opt in to log messages for
//!   that request. Results are stamped by servers with
//!   `_meta["io.modelcontextprotocol/serverInfo"]`.
//! - The request mirrors body fields into headers: `MCP-Protocol-Version`
//!   (= the envelope version), `Mcp-Method` (= `method`) and, for
//!   `tools/call` / `prompts/get` / `resources/read`, `Mcp-Name`
//!   (= `params.name` / `params.uri`; a value that is not plain visible
//!   ASCII is sent as `=?base64?<standard base64 of UTF-8>?=`). A missing,
//!   duplicated or disagreeing header is `-32020 HeaderMismatch`.
//! - Errors of this validation ladder answer HTTP 400 with the JSON-RPC
//!   error in the body: a missing envelope key is `-32602`, an envelope
//!   version the server does not serve is `-32022 UnsupportedProtocolVersion`
//!   with `data: {"supported": [...], "requested": "..."}`. `-32601 Method
//!   not found` answers HTTP 404 (so a client can tell it from a legacy
//!   server's 404, the body says which); `-32021` (a needed client
//!   capability was not declared) answers 400. Other errors from a handler
//!   (e.g. `-32602` for an unknown resource) stay in-band with HTTP 200.
//! - `server/discover` is an ordinary request in this envelope; a client in
//!   "auto" mode sends it first and falls back to `initialize` on any error
//!   other than `-32022` listing only stateless versions.
//! - A POSTed notification is accepted with 202 and dropped (the era has no
//!   client-to-server notifications over HTTP: closing the response stream
//!   is the cancellation); batches and POSTed responses are `-32600`.
//!
//! A request takes this path when it has no `Mcp-Session-Id` and either its
//! `_meta` carries the protocol-version key or its `MCP-Protocol-Version`
//! header names a stateless era. It gets a one-request
//! [`Session::stateless`] that is never registered.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{HeaderMap, HeaderName, StatusCode};
use mcpyard_gateway::{Identity, Session};
use mcpyard_proto::envelope::{self, Envelope, PROTOCOL_VERSION_KEY};
pub(crate) use mcpyard_proto::envelope::{
    is_stateless_version, HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use mcpyard_proto::{codes, methods, ErrorObject, Message, RequestId};
use serde_json::{Map, Value};

use crate::accept::Accepts;
use crate::reply::Final;
use crate::reply::{self, json_response, Plan};
use crate::state::AppState;

const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Whether the message carries the per-request protocol-version key.
pub(crate) fn has_envelope(msg: &Message) -> bool {
    match msg {
        Message::Request { params, .. } | Message::Notification { params, .. } => {
            envelope::has_envelope(params.as_ref())
        }
        _ => false,
    }
}

/// A request turned away by the validation ladder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rejection(pub(crate) ErrorObject);

impl Rejection {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self(ErrorObject::new(code, message))
    }

    fn into_response(self, id: Option<RequestId>) -> Response {
        json_response(StatusCode::BAD_REQUEST, &Message::error(id, self.0))
    }
}

/// The ladder, first failure wins: envelope shape, headers against the
/// body, then the version.
pub(crate) fn validate(
    method: &str,
    params: Option<&Value>,
    headers: &HeaderMap,
) -> Result<Envelope, Rejection> {
    let meta = Envelope::required_keys(params).map_err(Rejection)?;
    check_headers(method, params, meta, headers)?;
    Envelope::from_meta(meta).map_err(Rejection)
}

fn check_headers(
    method: &str,
    params: Option<&Value>,
    meta: &Map<String, Value>,
    headers: &HeaderMap,
) -> Result<(), Rejection> {
    let mismatch = |what: &str| Rejection::new(HEADER_MISMATCH, format!("Header mismatch: {what}"));
    let single = |name: HeaderName| -> Result<Option<&str>, Rejection> {
        let mut values = headers.get_all(&name).iter();
        let first = values.next();
        if values.next().is_some() {
            return Err(mismatch(&format!("{name} appears more than once")));
        }
        first
            .map(|v| {
                v.to_str()
                    .map_err(|_| mismatch(&format!("{name} is not visible ASCII")))
            })
            .transpose()
    };
    let version = single(VERSION_HEADER)?;
    if version.is_none() || version.map(Value::from).as_ref() != meta.get(PROTOCOL_VERSION_KEY) {
        return Err(mismatch(
            "MCP-Protocol-Version does not match the request's protocol version",
        ));
    }
    if single(METHOD_HEADER)? != Some(method) {
        return Err(mismatch("Mcp-Method does not match the request's method"));
    }
    let name_key = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => Some("name"),
        methods::RESOURCES_READ => Some("uri"),
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => Some("taskId"),
        _ => None,
    };
    if let Some(key) = name_key {
        if let Some(body) = params.and_then(|p| p.get(key)).and_then(Value::as_str) {
            let header = single(NAME_HEADER)?.map(decode_header_value);
            if header.as_deref() != Some(body) {
                return Err(mismatch(&format!("Mcp-Name does not match params.{key}")));
            }
        }
    }
    Ok(())
}

/// `Mcp-Param-*` against the body (SEP-2243): each argument the tool's
/// schema marks with `x-mcp-header` is mirrored in its header when the body
/// has it, with the same value (a string as is, anything else as its JSON
/// text; `=?base64?...?=` decoded). A header whose value differs, is
/// missing, or does not decode is a header mismatch.
pub(crate) fn check_param_headers(
    mirrored: &[(String, String)],
    params: Option<&Value>,
    headers: &HeaderMap,
) -> Result<(), Rejection> {
    let arguments = params.and_then(|p| p.get("arguments"));
    for (argument, suffix) in mirrored {
        let header = format!("mcp-param-{}", suffix.to_ascii_lowercase());
        let sent = headers
            .get(&header)
            .map(|v| v.to_str().map(param_header_value));
        let body = arguments
            .and_then(|a| a.get(argument))
            .filter(|v| !v.is_null());
        let mismatch = || {
            Rejection::new(
                HEADER_MISMATCH,
                format!("Header mismatch: Mcp-Param-{suffix} does not match arguments.{argument}"),
            )
        };
        match (body, sent) {
            (None, None) => {}
            (Some(value), Some(Ok(Ok(text)))) => {
                let expected = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if text != expected {
                    return Err(mismatch());
                }
            }
            _ => return Err(mismatch()),
        }
    }
    Ok(())
}

/// Undoes the `=?base64?...?=` encoding of a mirrored header value. A value
/// that does not decode is returned as sent (it then fails to match).
fn decode_header_value(raw: &str) -> String {
    match strict_decode(raw) {
        Ok(Some(decoded)) => decoded,
        _ => raw.to_owned(),
    }
}

/// A mirrored header value: `Ok(None)` when it is not `=?base64?...?=`
/// encoded (a literal), `Err` when it is but does not decode (bad padding
/// or characters, or not UTF-8).
fn strict_decode(raw: &str) -> Result<Option<String>, ()> {
    let Some(b64) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| ())?;
    String::from_utf8(bytes).map(Some).map_err(|_| ())
}

/// A mirrored header's value, decoded; `Err` for an encoding that does not
/// decode.
fn param_header_value(raw: &str) -> Result<String, ()> {
    Ok(strict_decode(raw)?.unwrap_or_else(|| raw.to_owned()))
}

/// The HTTP status of a final answer in this era.
pub(crate) fn status_of(answer: &Final) -> StatusCode {
    let code = match answer {
        Final::One(Message::Error { error, .. }) => Some(error.code),
        _ => None,
    };
    match code {
        Some(codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Answers one POST of this era.
pub(crate) async fn post(
    state: &AppState,
    identity: Identity,
    headers: &HeaderMap,
    accepts: Accepts,
    msg: Message,
) -> Response {
    match msg {
        Message::Notification { method, .. } => {
            tracing::debug!(%method, "stateless-era notification acknowledged and dropped");
            StatusCode::ACCEPTED.into_response()
        }
        Message::Request { id, method, params } => {
            let envelope = match validate(&method, params.as_ref(), headers) {
                Ok(e) => e,
                Err(rejection) => return rejection.into_response(Some(id)),
            };
            if method == methods::TOOLS_CALL {
                let name = params
                    .as_ref()
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str);
                let mirrored = name
                    .map(|n| state.gateway.tool_param_headers(&identity, n))
                    .unwrap_or_default();
                if let Err(rejection) = check_param_headers(&mirrored, params.as_ref(), headers) {
                    return rejection.into_response(Some(id));
                }
            }
            let session = Session::stateless_as(identity, &envelope.version, envelope.capabilities);
            let request = (id, method, params);
            answer_alone(state, session, accepts, status_of, request).await
        }
        Message::Response { .. } | Message::Error { .. } => Rejection::new(
            codes::INVALID_REQUEST,
            "Body must be a single JSON-RPC request or notification",
        )
        .into_response(None),
    }
}

/// Answers one request on `session`, a session that lives for it alone
/// (this era's, or a sessionless request's of the session eras): closing
/// the connection cancels it, as nothing else could, and the session ends
/// with the answer.
pub(crate) async fn answer_alone(
    state: &AppState,
    session: Arc<Session>,
    accepts: Accepts,
    status_of: fn(&Final) -> StatusCode,
    (id, method, params): (RequestId, String, Option<Value>),
) -> Response {
    let gateway = state.gateway.clone();
    let plan = Plan {
        accepts,
        cancel_on_disconnect: true,
        keep_alive: state.opts.sse_keep_alive,
        ends_on_drain: (method == methods::SUBSCRIPTIONS_LISTEN).then(|| state.shutdown.clone()),
        status_of,
    };
    reply::reply(plan, move |related| async move {
        let answer = gateway
            .request(&session, id, &method, params, related)
            .await;
        // Anything still waiting on the session (a relayed request) is
        // released now.
        session.end();
        Final::One(answer.into_message())
    })
    .await
}

/// The answer to a batch in this era.
pub(crate) fn batch_rejected() -> Response {
    Rejection::new(
        codes::INVALID_REQUEST,
        "batches not supported: the body must be a single JSON-RPC request or notification",
    )
    .into_response(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    use mcpyard_proto::envelope::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY};
    use serde_json::json;

    fn envelope_params(version: &str) -> Value {
        json!({
            "name": "echo",
            "_meta": {
                PROTOCOL_VERSION_KEY: version,
                CLIENT_CAPABILITIES_KEY: {"sampling": {}},
                CLIENT_INFO_KEY: {"name": "t", "version": "1"},
            }
        })
    }

    #[test]
    fn mirrored_arguments_must_match_their_headers() {
        let mirrored = vec![("region".to_owned(), "Region".to_owned())];
        let call = |value: Value| Some(json!({"name": "t", "arguments": {"region": value}}));
        let ok = |p: Option<Value>, h: &[(&'static str, &str)]| {
            check_param_headers(&mirrored, p.as_ref(), &headers(h)).is_ok()
        };
        assert!(ok(call(json!("Hello")), &[("mcp-param-region", "Hello")]));
        // Base64 decoded, strictly; a value without both markers is literal.
        assert!(ok(
            call(json!("Hello")),
            &[("mcp-param-region", "=?base64?SGVsbG8=?=")]
        ));
        assert!(!ok(
            call(json!("Hello")),
            &[("mcp-param-region", "=?base64?SGVsbG8?=")]
        ));
        assert!(!ok(
            call(json!("Hello")),
            &[("mcp-param-region", "=?base64?SGVs!!!bG8=?=")]
        ));
        assert!(ok(
            call(json!("=?base64?SGVsbG8=")),
            &[("mcp-param-region", "=?base64?SGVsbG8=")]
        ));
        // Missing, different, or present for an argument the body lacks.
        assert!(!ok(call(json!("Hello")), &[]));
        assert!(!ok(call(json!("Hello")), &[("mcp-param-region", "Bye")]));
        assert!(!ok(
            Some(json!({"name": "t", "arguments": {}})),
            &[("mcp-param-region", "x")]
        ));
        assert!(ok(Some(json!({"name": "t", "arguments": {}})), &[]));
        // Not a string: its JSON text.
        assert!(ok(call(json!(42)), &[("mcp-param-region", "42")]));
        // A tool that mirrors nothing is not checked.
        assert!(check_param_headers(&[], call(json!("x")).as_ref(), &HeaderMap::new()).is_ok());
    }

    fn headers<K: http::header::IntoHeaderName + Clone>(pairs: &[(K, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).expect("test header"));
        }
        h
    }

    fn good_headers() -> HeaderMap {
        headers(&[
            (VERSION_HEADER, "2026-07-28"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "echo"),
        ])
    }

    #[test]
    fn a_well_formed_request_passes() {
        let p = envelope_params("2026-07-28");
        let env = validate("tools/call", Some(&p), &good_headers()).expect("valid");
        assert_eq!(env.version, "2026-07-28");
        assert_eq!(env.capabilities, json!({"sampling": {}}));
    }

    #[test]
    fn missing_envelope_keys_are_invalid_params() {
        let p = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}});
        let err = validate("ping", Some(&p), &good_headers()).expect_err("missing caps");
        assert_eq!(err.0.code, codes::INVALID_PARAMS);
        assert!(err.0.message.contains(CLIENT_CAPABILITIES_KEY));
        let err = validate("ping", None, &good_headers()).expect_err("no meta");
        assert_eq!(err.0.code, codes::INVALID_PARAMS);
    }

    #[test]
    fn header_mismatches_are_rejected() {
        let p = envelope_params("2026-07-28");
        let cases = [
            headers(&[(METHOD_HEADER, "tools/call"), (NAME_HEADER, "echo")]),
            headers(&[
                (VERSION_HEADER, "2025-11-25"),
                (METHOD_HEADER, "tools/call"),
                (NAME_HEADER, "echo"),
            ]),
            headers(&[
                (VERSION_HEADER, "2026-07-28"),
                (METHOD_HEADER, "tools/list"),
                (NAME_HEADER, "echo"),
            ]),
            headers(&[
                (VERSION_HEADER, "2026-07-28"),
                (METHOD_HEADER, "tools/call"),
                (NAME_HEADER, "other"),
            ]),
            headers(&[
                (VERSION_HEADER, "2026-07-28"),
                (METHOD_HEADER, "tools/call"),
            ]),
            headers(&[
                (VERSION_HEADER, "2026-07-28"),
                (METHOD_HEADER, "tools/call"),
                (METHOD_HEADER, "tools/call"),
                (NAME_HEADER, "echo"),
            ]),
        ];
        for h in cases {
            let err = validate("tools/call", Some(&p), &h).expect_err("mismatch");
            assert_eq!(err.0.code, HEADER_MISMATCH, "{h:?}");
        }
    }

    #[test]
    fn base64_names_are_decoded() {
        let p = json!({"name": "Hello, 世界", "_meta": {
            PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}});
        let h = headers(&[
            (VERSION_HEADER, "2026-07-28"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ]);
        assert!(validate("tools/call", Some(&p), &h).is_ok());
    }

    #[test]
    fn unknown_versions_name_the_supported_ones() {
        let p = envelope_params("1999-01-01");
        let h = headers(&[
            (VERSION_HEADER, "1999-01-01"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "echo"),
        ]);
        let err = validate("tools/call", Some(&p), &h).expect_err("unsupported");
        assert_eq!(err.0.code, UNSUPPORTED_PROTOCOL_VERSION);
        let data = err.0.data.expect("data");
        assert_eq!(data["requested"], json!("1999-01-01"));
        assert_eq!(data["supported"], json!(["2026-07-28"]));
    }

    #[test]
    fn statuses_follow_the_era_table() {
        let e = |c: i64| Final::One(Message::error(Some(1.into()), ErrorObject::new(c, "m")));
        assert_eq!(status_of(&e(-32601)), StatusCode::NOT_FOUND);
        assert_eq!(status_of(&e(-32022)), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(&e(-32602)), StatusCode::OK);
        assert_eq!(
            status_of(&Final::One(Message::response(1.into(), json!({})))),
            StatusCode::OK
        );
    }
}
