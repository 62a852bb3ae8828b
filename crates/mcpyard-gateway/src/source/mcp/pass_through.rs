//! A 2026-07-28 client's call on a 2026-07-28 connection. When the server
//! answers `input_required`, the answer goes back to the client as the
//! server made it (its keys, its requests), rather than being answered by
//! the gateway's relay and asked again in its own words: the client retries
//! with `inputResponses` and the state, and the retry is routed like the
//! first request, through the same layers, to the same server.
//!
//! The server's `requestState` travels marked ([`STATE_MARK`] in front), so
//! the gateway tells it from its own states (which it checks itself, see
//! `downstream::round_trips`) and gives it back unmarked. The server checks
//! its own state, as it would for a direct client.
//!
//! The request declares the client's own capabilities, of those the
//! gateway relays, so that a server never asks for what the client cannot
//! give.

use mcpyard_proto::Payload;
use serde_json::{Map, Value};

use crate::source::CallContext;

/// Put in front of a server's `requestState` on its way to the client.
pub(crate) const STATE_MARK: char = '~';

/// What the gateway can pass on between the two hops.
const RELAYED: [&str; 3] = ["sampling", "elicitation", "roots"];

/// The extensions whose messages the gateway passes on.
const RELAYED_EXTENSIONS: [&str; 1] = [crate::tasks::EXTENSION];

/// Whether a client's `requestState` is a server's, passed through.
pub(crate) fn is_passed_state(params: &Value) -> bool {
    params
        .get("requestState")
        .and_then(Value::as_str)
        .is_some_and(|s| s.starts_with(STATE_MARK))
}

/// A retry's `requestState` as the server issued it.
pub(crate) fn restore_state(params: &mut Value) {
    if let Some(state) = params.get_mut("requestState") {
        if let Some(own) = state.as_str().and_then(|s| s.strip_prefix(STATE_MARK)) {
            *state = Value::String(own.to_owned());
        }
    }
}

/// An answer whose `requestState` is marked as the server's.
pub(crate) fn wrap_state(mut result: Payload) -> Payload {
    if !result.may_hold("requestState") {
        return result;
    }
    if let Some(state) = result.value_mut().get_mut("requestState") {
        if let Some(s) = state.as_str() {
            *state = Value::String(format!("{STATE_MARK}{s}"));
        }
    }
    result
}

/// The capabilities the call's client declared, of those the gateway relays.
pub(crate) fn capabilities(context: &CallContext) -> Value {
    let declared = context.client.session.negotiated().capabilities;
    let mut own = Map::new();
    for key in RELAYED {
        if let Some(v) = declared.get(key) {
            own.insert(key.to_owned(), v.clone());
        }
    }
    if let Some(declared) = declared.get("extensions").and_then(Value::as_object) {
        let extensions: Map<String, Value> = declared
            .iter()
            .filter(|(name, _)| RELAYED_EXTENSIONS.contains(&name.as_str()))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        if !extensions.is_empty() {
            own.insert("extensions".into(), Value::Object(extensions));
        }
    }
    Value::Object(own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_servers_state_goes_out_marked_and_comes_back_as_it_was() {
        let answer =
            wrap_state(json!({"resultType": "input_required", "requestState": "abc.1.x"}).into())
                .into_value();
        assert_eq!(answer["requestState"], "~abc.1.x");
        let mut retry = json!({"name": "t", "requestState": answer["requestState"]});
        assert!(is_passed_state(&retry));
        restore_state(&mut retry);
        assert_eq!(retry["requestState"], "abc.1.x");
        assert!(!is_passed_state(&retry));
        // The gateway's own states are not touched.
        let mut own = json!({"requestState": "abc.1.x"});
        restore_state(&mut own);
        assert_eq!(own["requestState"], "abc.1.x");
    }
}
