//! The 2026-07-28 era on any door: a request carrying the per-request
//! envelope is served on a one-request session built from it, and its
//! result is stamped with the era's fields; results from upstreams of that
//! era lose those fields on their way to older clients.

use std::sync::Arc;

use mcpyard_proto::{codes, envelope, methods, ErrorObject, Payload};
use serde_json::{json, Value};

use super::{is_log_level, Session};

/// The session a request is served on: the connection's own, or, for a
/// request carrying the 2026-07-28 envelope on a connection that is not
/// already of that era, a one-request session built from its envelope.
pub(crate) fn era_session(
    session: &Arc<Session>,
    params: Option<&Value>,
) -> Result<Arc<Session>, ErrorObject> {
    if session.is_stateless() || !mcpyard_proto::has_envelope(params) {
        return Ok(session.clone());
    }
    let envelope = mcpyard_proto::Envelope::from_params(params)?;
    Ok(Session::for_request(session, envelope))
}

/// A stateless request carries what `initialize` would have said in its
/// `_meta`; the transport took the version and capabilities, this takes the
/// rest.
pub(crate) fn adopt_request_envelope(session: &Session, params: Option<&Value>) {
    let Some(meta) = mcpyard_proto::meta(params) else {
        return;
    };
    let client_info = meta.get(envelope::CLIENT_INFO_KEY).cloned();
    let log_level = meta
        .get(envelope::LOG_LEVEL_KEY)
        .and_then(Value::as_str)
        .filter(|l| is_log_level(l))
        .map(str::to_owned);
    session.update(|n| {
        if let Some(info) = client_info {
            n.client_info = info;
        }
        if log_level.is_some() {
            n.log_level = log_level;
        }
    });
}

/// Results of the stateless era (2026-07-28) carry `resultType`; the
/// cacheable ones (lists, reads, discovery) a TTL and a cache scope; every
/// one names the server in `_meta`. Upstream results pass through an older
/// era, so the gateway adds what they lack.
pub(crate) fn stamp_stateless_result(method: &str, result: &mut Payload) {
    let members = stateless_members(method);
    // Text that has none of them gets them written in front of its own.
    let keys: Vec<&str> = members.iter().map(|(key, _)| *key).collect();
    if !result.may_hold_any(&keys) {
        result.add_members(members);
        return;
    }
    let Some(obj) = result.value_mut().as_object_mut() else {
        return;
    };
    for (key, value) in members {
        match (obj.get_mut(key), value) {
            (Some(Value::Object(meta)), Value::Object(ours)) if key == "_meta" => meta.extend(ours),
            (Some(_), _) => {}
            (None, value) => {
                obj.insert(key.to_owned(), value);
            }
        }
    }
}

/// The members [`stamp_stateless_result`] adds to a result that has none
/// of them (the gateway's own list pages are written with them).
pub(crate) fn stateless_members(method: &str) -> Vec<(&'static str, Value)> {
    let mut members = vec![("resultType", Value::String("complete".into()))];
    let cacheable = matches!(
        method,
        methods::SERVER_DISCOVER
            | methods::TOOLS_LIST
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
    );
    if cacheable {
        members.push(("ttlMs", json!(0)));
        // Lists may differ per client once exposure policy applies.
        members.push(("cacheScope", Value::String("private".into())));
    }
    members.push((
        "_meta",
        json!({ envelope::SERVER_INFO_KEY: super::announce::server_info() }),
    ));
    members
}

/// A result a 2026-07-28 upstream gave goes to a client of an older era
/// without that era's fields, and without the upstream's name in `_meta`.
pub(crate) fn unstamp_for_handshake_era(result: &mut Payload) {
    const STAMPS: [&str; 4] = [
        "resultType",
        "ttlMs",
        "cacheScope",
        envelope::SERVER_INFO_KEY,
    ];
    if !result.may_hold_any(&STAMPS) {
        return;
    }
    let Some(obj) = result.value_mut().as_object_mut() else {
        return;
    };
    if obj.get("resultType").and_then(Value::as_str) == Some("complete") {
        obj.remove("resultType");
    }
    obj.remove("ttlMs");
    obj.remove("cacheScope");
    if let Some(meta) = obj.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(envelope::SERVER_INFO_KEY);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
}

/// Whether the 2026-07-28 era has this request: its schema's client
/// requests and the tasks extension's. The era removed the others
/// (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`, the
/// 2025-11-25 `tasks/list` and `tasks/result`): they are unknown methods
/// there, which the HTTP door answers with 404.
pub(crate) fn has_method(method: &str) -> bool {
    matches!(
        method,
        methods::SERVER_DISCOVER
            | methods::COMPLETION_COMPLETE
            | methods::PROMPTS_GET
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
            | methods::SUBSCRIPTIONS_LISTEN
            | methods::TOOLS_CALL
            | methods::TOOLS_LIST
            | methods::TASKS_GET
            | methods::TASKS_UPDATE
            | methods::TASKS_CANCEL
    )
}

/// An error in the words of the 2026-07-28 era: an unknown resource is
/// invalid params there (SEP-2164), -32002 before.
pub(crate) fn error_for_modern_era(mut error: ErrorObject) -> ErrorObject {
    if error.code == codes::RESOURCE_NOT_FOUND {
        error.code = codes::INVALID_PARAMS;
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modern_era_has_none_of_the_methods_it_removed() {
        for removed in [
            methods::INITIALIZE,
            methods::PING,
            methods::LOGGING_SET_LEVEL,
            methods::RESOURCES_SUBSCRIBE,
            methods::RESOURCES_UNSUBSCRIBE,
            methods::TASKS_LIST,
            methods::TASKS_RESULT,
        ] {
            assert!(!has_method(removed), "{removed}");
        }
        assert!(has_method(methods::TOOLS_CALL));
        assert!(has_method(methods::TASKS_UPDATE));
    }

    #[test]
    fn an_unknown_resource_is_invalid_params_in_the_modern_era() {
        let e = ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found: x://y");
        let e = error_for_modern_era(e);
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert_eq!(e.message, "Resource not found: x://y");
        let other = error_for_modern_era(ErrorObject::internal("boom"));
        assert_eq!(other.code, codes::INTERNAL_ERROR);
    }
}
