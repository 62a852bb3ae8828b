//! The one error type of routing: each variant says whose fault it is (the
//! client's request, a source, the gateway), and [`From<RouteError> for
//! ErrorObject`] is the single place it becomes a JSON-RPC error.
//!
//! A tool's own `isError` result is not a routing error: it is a result.

use std::time::Duration;

use mcpyard_client::ClientError;
use mcpyard_proto::{codes, methods, ErrorObject, Payload};
use serde_json::json;

use crate::call::{ItemKind, RATE_LIMITED};

/// Why a routed request got no result.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    // The client's request.
    /// The params are not what the method takes.
    #[error("{0}")]
    InvalidParams(String),
    /// The method is not served (or not in the request's era).
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    /// No source offers a tool or prompt of this name.
    #[error("Unknown {kind}: {name}")]
    UnknownName { kind: &'static str, name: String },
    /// No source has this resource.
    #[error("Resource not found: {uri}")]
    ResourceNotFound { uri: String },
    /// The client cancelled the call (or its session ended).
    #[error("{what} was cancelled")]
    Cancelled { what: String },
    /// The policy does not let this identity use the item (rule `rule`,
    /// or the default when `None`). The client is told no more than for an
    /// unknown name; the rule is for the log and the audit.
    #[error("{}", denied_message(*kind, name))]
    Denied {
        kind: ItemKind,
        name: String,
        rule: Option<usize>,
    },
    /// A rate limit refused the call; it may be retried after `retry_after`.
    #[error("rate limit `{limit}` reached; retry after {:.3} s", retry_after.as_secs_f64())]
    Limited {
        limit: String,
        retry_after: Duration,
    },

    // A source.
    /// The source answered with a JSON-RPC error of its own: passed on as
    /// it is, since it speaks to the client's request (a bad argument...).
    #[error("{error}")]
    Refused { server: String, error: ErrorObject },
    /// The source is down or still connecting.
    #[error("upstream server `{server}` is unavailable{reason}")]
    Unavailable { server: String, reason: String },
    /// The source did not answer within its timeout.
    #[error("source `{server}` did not answer {method} within {after:?}")]
    TimedOut {
        server: String,
        method: String,
        after: Duration,
    },
    /// The connection to the source or its protocol failed; the details
    /// (an HTTP body...) went to the log, not to the client.
    #[error("upstream server `{server}` failed: {kind}")]
    Failed { server: String, kind: &'static str },
    /// The source has as many calls in flight as it may, and none ended
    /// within the wait.
    #[error("source `{server}` is busy: {limit} calls in flight, none ended within {waited:?}; try again later")]
    Busy {
        server: String,
        limit: usize,
        waited: Duration,
    },

    // The gateway.
    #[error("{0}")]
    Internal(String),
    /// The gateway refused the request in protocol terms (a task limit, a
    /// malformed `task`), already in wire form.
    #[error("{0}")]
    Protocol(ErrorObject),
}

impl RouteError {
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams(message.into())
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }

    /// What the MCP client library reported for a request to upstream
    /// `source`. What the upstream said in a failed HTTP exchange, or the
    /// transport's own message, is logged here and kept from the client.
    pub(crate) fn from_client(source: &str, method: &str, error: ClientError) -> Self {
        let server = source.to_owned();
        match error {
            ClientError::Rpc(error) => Self::Refused { server, error },
            ClientError::Timeout(after) => Self::TimedOut {
                server,
                method: method.to_owned(),
                after,
            },
            ClientError::Cancelled => Self::Cancelled {
                what: method.to_owned(),
            },
            ClientError::Closed | ClientError::NotReady { .. } => Self::Unavailable {
                server,
                reason: ": the connection closed".into(),
            },
            other => {
                let kind = match &other {
                    ClientError::Http { .. } => "its HTTP answer was an error status",
                    ClientError::Protocol(_) => "it broke the MCP protocol",
                    ClientError::Spawn { .. } => "it could not be started",
                    _ => "the connection to it failed",
                };
                tracing::warn!(%server, method, error = %other, "upstream request failed");
                Self::Failed { server, kind }
            }
        }
    }

    /// Whose fault it is, for logs and metrics.
    pub fn fault(&self) -> Fault {
        match self {
            Self::InvalidParams(_)
            | Self::MethodNotFound(_)
            | Self::UnknownName { .. }
            | Self::ResourceNotFound { .. }
            | Self::Cancelled { .. }
            | Self::Denied { .. }
            | Self::Limited { .. } => Fault::Client,
            Self::Refused { .. }
            | Self::Unavailable { .. }
            | Self::TimedOut { .. }
            | Self::Failed { .. }
            | Self::Busy { .. } => Fault::Source,
            Self::Internal(_) => Fault::Gateway,
            Self::Protocol(e) if e.code == codes::INVALID_PARAMS => Fault::Client,
            Self::Protocol(_) => Fault::Gateway,
        }
    }
}

/// A layer's refusal of a call: an `isError` result for a tool (a model
/// can fix its call), invalid params for a prompt.
pub(crate) fn refusal(method: &str, message: String) -> Result<Payload, RouteError> {
    if method == methods::TOOLS_CALL {
        Ok(json!({"content": [{"type": "text", "text": message}], "isError": true}).into())
    } else {
        Err(RouteError::invalid_params(message))
    }
}

/// Who a [`RouteError`] is down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Client,
    Source,
    Gateway,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Source => "source",
            Self::Gateway => "gateway",
        }
    }
}

impl From<RouteError> for ErrorObject {
    fn from(e: RouteError) -> Self {
        let message = e.to_string();
        match e {
            RouteError::InvalidParams(_) | RouteError::UnknownName { .. } => {
                ErrorObject::invalid_params(message)
            }
            RouteError::MethodNotFound(method) => ErrorObject::method_not_found(&method),
            RouteError::ResourceNotFound { uri } => {
                ErrorObject::new(codes::RESOURCE_NOT_FOUND, message).with_data(json!({"uri": uri}))
            }
            RouteError::Cancelled { .. } => ErrorObject::new(codes::REQUEST_TIMEOUT, message),
            // Word for word what an unknown name gets: a refusal must not
            // tell the client that the item exists.
            RouteError::Denied { kind, name, .. } => match kind {
                ItemKind::Resource => RouteError::ResourceNotFound { uri: name }.into(),
                kind => RouteError::UnknownName {
                    kind: kind.as_str(),
                    name,
                }
                .into(),
            },
            RouteError::Limited { limit, retry_after } => ErrorObject::new(RATE_LIMITED, message)
                .with_data(json!({
                    "reason": "rate_limited",
                    "limit": limit,
                    "retryAfter": retry_after_seconds(retry_after),
                })),
            RouteError::Refused { error, .. } => error,
            RouteError::Unavailable { server, .. }
            | RouteError::TimedOut { server, .. }
            | RouteError::Failed { server, .. } => {
                ErrorObject::internal(message).with_data(json!({"server": server}))
            }
            RouteError::Busy { server, limit, .. } => ErrorObject::internal(message)
                .with_data(json!({"server": server, "reason": "busy", "maxInFlight": limit})),
            RouteError::Internal(_) => ErrorObject::internal(message),
            RouteError::Protocol(error) => error,
        }
    }
}

fn denied_message(kind: ItemKind, name: &str) -> String {
    match kind {
        ItemKind::Resource => format!("Resource not found: {name}"),
        kind => format!("Unknown {}: {name}", kind.as_str()),
    }
}

/// Seconds, rounded up to the millisecond so a client that waits this long
/// finds a token.
fn retry_after_seconds(after: Duration) -> f64 {
    (after.as_micros().div_ceil(1000)) as f64 / 1000.0
}

impl From<ErrorObject> for RouteError {
    fn from(error: ErrorObject) -> Self {
        Self::Protocol(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstreams_http_body_stays_out_of_the_clients_error() {
        let e = RouteError::from_client(
            "api",
            "tools/call",
            ClientError::Http {
                status: 502,
                body: "secret-token=abc upstream stack trace".into(),
            },
        );
        assert_eq!(e.fault(), Fault::Source);
        let wire = ErrorObject::from(e);
        assert_eq!(wire.code, codes::INTERNAL_ERROR);
        assert!(wire.message.contains("`api`"), "{}", wire.message);
        assert!(wire.message.contains("HTTP"), "{}", wire.message);
        assert!(!wire.to_string().contains("secret-token"), "{wire}");
        assert_eq!(wire.data, Some(json!({"server": "api"})));
    }

    #[test]
    fn an_upstreams_own_json_rpc_error_passes_through() {
        let own = ErrorObject::invalid_params("`a` must be a number");
        let e = RouteError::from_client("calc", "tools/call", ClientError::Rpc(own.clone()));
        assert_eq!(ErrorObject::from(e), own);
    }

    #[test]
    fn a_refusal_reads_exactly_as_an_unknown_name() {
        let unknown = ErrorObject::from(RouteError::UnknownName {
            kind: "tool",
            name: "a__x".into(),
        });
        let denied = RouteError::Denied {
            kind: ItemKind::Tool,
            name: "a__x".into(),
            rule: Some(2),
        };
        assert_eq!(denied.to_string(), "Unknown tool: a__x");
        assert_eq!(ErrorObject::from(denied), unknown);
        let missing = ErrorObject::from(RouteError::ResourceNotFound {
            uri: "x://y".into(),
        });
        let denied = ErrorObject::from(RouteError::Denied {
            kind: ItemKind::Resource,
            name: "x://y".into(),
            rule: None,
        });
        assert_eq!(denied, missing);
    }

    #[test]
    fn a_limited_call_says_which_limit_and_when_to_retry() {
        let wire = ErrorObject::from(RouteError::Limited {
            limit: "per-identity".into(),
            retry_after: Duration::from_micros(250_400),
        });
        assert_eq!(wire.code, RATE_LIMITED);
        assert!(wire.message.contains("per-identity"), "{}", wire.message);
        assert_eq!(
            wire.data,
            Some(json!({"reason": "rate_limited", "limit": "per-identity", "retryAfter": 0.251}))
        );
    }

    #[test]
    fn client_faults_are_invalid_params_or_not_found() {
        let unknown = RouteError::UnknownName {
            kind: "tool",
            name: "nope".into(),
        };
        assert_eq!(unknown.fault(), Fault::Client);
        let wire = ErrorObject::from(unknown);
        assert_eq!(
            (wire.code, wire.message.as_str()),
            (codes::INVALID_PARAMS, "Unknown tool: nope")
        );
        let missing = ErrorObject::from(RouteError::ResourceNotFound {
            uri: "x://y".into(),
        });
        assert_eq!(missing.code, codes::RESOURCE_NOT_FOUND);
    }
}
