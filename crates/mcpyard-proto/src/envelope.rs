//! The per-request envelope of the stateless era (protocol 2026-07-28).
//!
//! There is no `initialize` in that era: every request says in its
//! `params._meta` which protocol version it speaks
//! (`io.modelcontextprotocol/protocolVersion`, required), what the client
//! can do (`io.modelcontextprotocol/clientCapabilities`, required) and,
//! optionally, who it is and which log messages it wants. A request is of
//! that era exactly when it carries the version key, whatever the transport.
//!
//! The keys belong to the hop they travel on: a gateway reads them and never
//! passes a client's envelope to an upstream whose connection was opened in
//! another era ([`strip`]).

use serde_json::{json, Map, Value};

use crate::error::{codes, ErrorObject};
use crate::version::{LATEST_STATEFUL, SUPPORTED};

/// The prefix of every envelope key (reserved by the specification).
pub const KEY_PREFIX: &str = "io.modelcontextprotocol/";
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Set by servers on every result of the era.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A header disagrees with the body, or a required one is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// The server needs a client capability the request did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// The envelope's protocol version is not one the server serves.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// What the envelope of one request says.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub version: String,
    pub capabilities: Value,
}

/// Whether `version` is a supported era without `initialize`.
pub fn is_stateless_version(version: &str) -> bool {
    SUPPORTED.contains(&version) && version > LATEST_STATEFUL
}

/// The supported eras without `initialize`, oldest first.
pub fn stateless_versions() -> Vec<&'static str> {
    SUPPORTED
        .iter()
        .copied()
        .filter(|v| is_stateless_version(v))
        .collect()
}

/// Whether a request's params carry the envelope, i.e. the request is of
/// the stateless era.
pub fn has_envelope(params: Option<&Value>) -> bool {
    crate::meta(params).is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY))
}

impl Envelope {
    /// The first step of validation: `_meta` is an object holding both
    /// required keys. Returns it for the checks that follow (a transport
    /// compares its headers with it before the version is looked at).
    pub fn required_keys(params: Option<&Value>) -> Result<&Map<String, Value>, ErrorObject> {
        let meta = crate::meta(params).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "params._meta must be an object carrying {PROTOCOL_VERSION_KEY:?} and {CLIENT_CAPABILITIES_KEY:?}"
            ))
        })?;
        let missing: Vec<&str> = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY]
            .into_iter()
            .filter(|k| !meta.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            return Err(ErrorObject::invalid_params(format!(
                "params._meta is missing the required key(s): {}",
                missing.join(", ")
            )));
        }
        Ok(meta)
    }

    /// The version and capabilities of an envelope whose keys are present:
    /// a version this side does not serve is -32022 naming the ones it does.
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Self, ErrorObject> {
        let Some(version) = meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str) else {
            return Err(ErrorObject::invalid_params(format!(
                "{PROTOCOL_VERSION_KEY} must be a string"
            )));
        };
        if !is_stateless_version(version) {
            return Err(ErrorObject::new(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(json!({"supported": stateless_versions(), "requested": version})));
        }
        let capabilities = meta
            .get(CLIENT_CAPABILITIES_KEY)
            .cloned()
            .unwrap_or_default();
        if !capabilities.is_object() {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                format!("{CLIENT_CAPABILITIES_KEY} must be an object"),
            ));
        }
        Ok(Self {
            version: version.to_owned(),
            capabilities,
        })
    }

    /// Both steps at once, for transports with nothing to compare.
    pub fn from_params(params: Option<&Value>) -> Result<Self, ErrorObject> {
        Self::from_meta(Self::required_keys(params)?)
    }
}

/// Removes the envelope keys from a request's `_meta` (and `_meta` itself
/// when nothing else is left), keeping what the next hop needs, such as the
/// progress token.
pub fn strip(params: &mut Value) {
    let Some(p) = params.as_object_mut() else {
        return;
    };
    let Some(meta) = p.get_mut("_meta").and_then(Value::as_object_mut) else {
        return;
    };
    meta.retain(|k, _| !k.starts_with(KEY_PREFIX));
    if meta.is_empty() {
        p.remove("_meta");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(version: &str) -> Value {
        json!({"name": "echo", "_meta": {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            CLIENT_INFO_KEY: {"name": "t", "version": "1"},
            "progressToken": 7,
        }})
    }

    #[test]
    fn a_well_formed_envelope_is_read() {
        let p = params("2026-07-28");
        assert!(has_envelope(Some(&p)));
        let env = Envelope::from_params(Some(&p)).expect("valid");
        assert_eq!(env.version, "2026-07-28");
        assert_eq!(env.capabilities, json!({"sampling": {}}));
    }

    #[test]
    fn missing_keys_are_invalid_params() {
        let p = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}});
        let err = Envelope::from_params(Some(&p)).expect_err("no capabilities");
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert!(err.message.contains(CLIENT_CAPABILITIES_KEY));
        assert_eq!(
            Envelope::from_params(None).expect_err("no meta").code,
            codes::INVALID_PARAMS
        );
    }

    #[test]
    fn unknown_versions_name_the_supported_ones() {
        let err = Envelope::from_params(Some(&params("1999-01-01"))).expect_err("old");
        assert_eq!(err.code, UNSUPPORTED_PROTOCOL_VERSION);
        let data = err.data.expect("data");
        assert_eq!(data["requested"], json!("1999-01-01"));
        assert_eq!(data["supported"], json!(["2026-07-28"]));
        // A handshake-era version in an envelope is not served either.
        let err = Envelope::from_params(Some(&params("2025-11-25"))).expect_err("stateful");
        assert_eq!(err.code, UNSUPPORTED_PROTOCOL_VERSION);
    }

    #[test]
    fn only_stateless_eras_count() {
        assert!(is_stateless_version("2026-07-28"));
        assert!(!is_stateless_version("2025-11-25"));
        assert!(!is_stateless_version("2099-01-01"));
    }

    #[test]
    fn strip_keeps_what_is_not_the_envelope() {
        let mut p = params("2026-07-28");
        strip(&mut p);
        assert_eq!(p, json!({"name": "echo", "_meta": {"progressToken": 7}}));
        let mut p = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}, "uri": "x"});
        strip(&mut p);
        assert_eq!(p, json!({"uri": "x"}));
        let mut untouched = json!({"name": "echo"});
        strip(&mut untouched);
        assert_eq!(untouched, json!({"name": "echo"}));
    }
}
