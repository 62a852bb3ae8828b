//! The 2026-07-28 era on a connection: telling a server of that era alone, and the envelope every request carries.

use mcpyard_proto::envelope::{CLIENT_CAPABILITIES_KEY, UNSUPPORTED_PROTOCOL_VERSION};
use mcpyard_proto::Payload;
use serde_json::{Map, Value};

use crate::ClientError;
use crate::{RequestOptions, MODERN_PROTOCOL_VERSION};

/// JSON-RPC codes with which a server of the 2026-07-28 era alone turns
/// `initialize` away: -32022 (it serves none of the handshake's versions),
/// -32020 (the request lacks the `MCP-Protocol-Version` header that era
/// requires) and -32601 (it has no `initialize` method).
pub(super) const HANDSHAKE_REFUSALS: [i64; 3] = [UNSUPPORTED_PROTOCOL_VERSION, -32020, -32601];

/// Starts the error of a handshake the server answered with the 2026-07-28
/// version itself: that era is negotiated with `server/discover` instead.
pub(super) const ANSWERED_MODERN: &str = "the initialize result names 2026-07-28";

/// Whether `initialize` was refused in a way that says the server speaks
/// only the 2026-07-28 era: one of [`HANDSHAKE_REFUSALS`] (over HTTP
/// possibly a 4xx whose body is the JSON-RPC error), an HTTP 404 or 405 (no
/// handshake endpoint for a POST without a session), or an `initialize`
/// result that names 2026-07-28.
pub(super) fn refuses_the_handshake(e: &ClientError) -> bool {
    let code = match e {
        ClientError::Rpc(err) => Some(err.code),
        ClientError::Http {
            status: 404 | 405, ..
        } => return true,
        ClientError::Http { status, body } if (400..500).contains(status) => {
            serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64))
        }
        ClientError::Protocol(why) => return why.starts_with(ANSWERED_MODERN),
        _ => None,
    };
    code.is_some_and(|c| HANDSHAKE_REFUSALS.contains(&c))
}

/// Whether a `server/discover` result offers the 2026-07-28 era.
pub(super) fn offers_modern(discovered: &Value) -> bool {
    discovered
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| {
            versions
                .iter()
                .any(|v| v.as_str() == Some(MODERN_PROTOCOL_VERSION))
        })
}

/// The connection's envelope, with the request's own capabilities when it
/// declares some.
pub(super) fn request_envelope<'a>(
    envelope: &'a Map<String, Value>,
    options: &RequestOptions,
) -> std::borrow::Cow<'a, Map<String, Value>> {
    match &options.capabilities {
        None => std::borrow::Cow::Borrowed(envelope),
        Some(capabilities) => {
            let mut own = envelope.clone();
            own.insert(CLIENT_CAPABILITIES_KEY.into(), capabilities.clone());
            std::borrow::Cow::Owned(own)
        }
    }
}

/// `params` with the envelope's keys in its `_meta`, next to whatever the
/// caller put there (a progress token); the envelope of this hop replaces
/// any the caller forwarded.
pub(super) fn with_envelope(params: Option<Value>, envelope: &Map<String, Value>) -> Value {
    let mut params = match params {
        Some(Value::Object(p)) => p,
        None | Some(Value::Null) => Map::new(),
        // Not an object: the server will say what is wrong with it.
        Some(other) => return other,
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        for (key, value) in envelope {
            meta.insert(key.clone(), value.clone());
        }
    }
    Value::Object(params)
}

/// The `subscriptions/listen` filter for the lists the server says may
/// change; `None` when none may.
pub(super) fn listen_filter(capabilities: &Value) -> Option<Value> {
    let mut filter = Map::new();
    for (capability, flag) in [
        ("tools", "toolsListChanged"),
        ("prompts", "promptsListChanged"),
        ("resources", "resourcesListChanged"),
    ] {
        if capabilities[capability]["listChanged"].as_bool() == Some(true) {
            filter.insert(flag.into(), Value::Bool(true));
        }
    }
    (!filter.is_empty()).then_some(Value::Object(filter))
}

/// Whether a 2026-07-28 answer asks the client for input first
/// (`resultType: "input_required"`); an answer held as text without those
/// words is not parsed to tell.
pub(super) fn asks_for_input(answer: &Payload) -> bool {
    answer.may_hold("input_required")
        && answer.to_value().get("resultType").and_then(Value::as_str) == Some("input_required")
}
