//! JSON-RPC 2.0 messages. Params and results stay `serde_json::Value` so that
//! fields from newer spec revisions pass through the gateway untouched; only
//! what routing needs (method, id) is read.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::ErrorObject;

/// A JSON-RPC request id: a string or an integer, kept as it was sent so it
/// can be echoed byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        id: RequestId,
        result: Value,
    },
    /// An error response; `id` is `None` when the request's id was unreadable.
    Error {
        id: Option<RequestId>,
        error: ErrorObject,
    },
}

/// Why a message could not be read, and the error to answer with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("Parse error: {0}")]
    NotJson(String),
    #[error("Invalid Request: {reason}")]
    Invalid {
        /// The id, when it could be read, so the error can echo it.
        id: Option<RequestId>,
        reason: String,
    },
}

impl ParseError {
    /// The JSON-RPC error response for this failure.
    pub fn to_response(&self) -> Message {
        match self {
            ParseError::NotJson(_) => Message::Error {
                id: None,
                error: ErrorObject::parse_error(self.to_string()),
            },
            ParseError::Invalid { id, .. } => Message::Error {
                id: id.clone(),
                error: ErrorObject::invalid_request(self.to_string()),
            },
        }
    }
}

impl Message {
    pub fn request(id: impl Into<RequestId>, method: &str, params: Option<Value>) -> Self {
        Message::Request {
            id: id.into(),
            method: method.to_owned(),
            params,
        }
    }

    pub fn notification(method: &str, params: Option<Value>) -> Self {
        Message::Notification {
            method: method.to_owned(),
            params,
        }
    }

    pub fn response(id: RequestId, result: Value) -> Self {
        Message::Response { id, result }
    }

    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Message::Error { id, error }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request { id, .. } | Message::Response { id, .. } => Some(id),
            Message::Error { id, .. } => id.as_ref(),
            Message::Notification { .. } => None,
        }
    }

    pub fn is_request(&self) -> bool {
        matches!(self, Message::Request { .. })
    }

    pub fn is_response(&self) -> bool {
        matches!(self, Message::Response { .. } | Message::Error { .. })
    }

    /// Reads one message from an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        let Value::Object(mut obj) = value else {
            return Err(ParseError::Invalid {
                id: None,
                reason: "a JSON-RPC message must be an object".into(),
            });
        };
        let id = match obj.remove("id") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => match serde_json::from_value::<RequestId>(v) {
                Ok(id) => Some(Some(id)),
                Err(_) => {
                    return Err(ParseError::Invalid {
                        id: None,
                        reason: "id must be a string or an integer".into(),
                    })
                }
            },
        };
        let invalid = |reason: &str| ParseError::Invalid {
            id: id.clone().flatten(),
            reason: reason.into(),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(invalid("jsonrpc must be \"2.0\""));
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return Err(invalid("method must be a string"));
            };
            let params = obj.remove("params");
            if let Some(p) = &params {
                if !p.is_object() && !p.is_array() {
                    return Err(invalid("params must be an object or an array"));
                }
            }
            return match id {
                None => Ok(Message::Notification { method, params }),
                Some(Some(id)) => Ok(Message::Request { id, method, params }),
                Some(None) => Err(invalid("a request id must not be null")),
            };
        }
        if let Some(error) = obj.remove("error") {
            let error: ErrorObject = serde_json::from_value(error)
                .map_err(|e| invalid(&format!("malformed error object: {e}")))?;
            return Ok(Message::Error {
                id: id.flatten(),
                error,
            });
        }
        if let Some(result) = obj.remove("result") {
            return match id {
                Some(Some(id)) => Ok(Message::Response { id, result }),
                _ => Err(invalid("a response needs an id")),
            };
        }
        Err(invalid("neither a request, a notification nor a response"))
    }

    /// Parses exactly one message from bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| ParseError::NotJson(e.to_string()))?;
        Self::from_value(value)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a Message always serialises")
    }

    pub fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a Message always serialises")
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request { id, method, params } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("method", method)?;
                if let Some(p) = params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Notification { method, params } => {
                map.serialize_entry("method", method)?;
                if let Some(p) = params {
                    map.serialize_entry("params", p)?;
                }
            }
            Message::Response { id, result } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("result", result)?;
            }
            Message::Error { id, error } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Message::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// A POST body: one message or a batch. Each batch entry is parsed on its
/// own so one bad entry gets its own error and the rest still run.
#[derive(Debug)]
pub enum Body {
    Single(Result<Message, ParseError>),
    Batch(Vec<Result<Message, ParseError>>),
}

/// Parses an HTTP body or a stdio line. A body that is not JSON at all, or an
/// empty batch, is an `Err` to answer with one error response.
pub fn parse_body(bytes: &[u8]) -> Result<Body, ParseError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| ParseError::NotJson(e.to_string()))?;
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(ParseError::Invalid {
                    id: None,
                    reason: "empty batch".into(),
                });
            }
            Ok(Body::Batch(
                items.into_iter().map(Message::from_value).collect(),
            ))
        }
        other => Ok(Body::Single(Message::from_value(other))),
    }
}

/// Reads `params._meta` of a request, if any.
pub fn meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use serde_json::json;

    fn round_trip(v: Value) -> Value {
        Message::from_value(v).unwrap().to_value()
    }

    #[test]
    fn request_round_trips_with_unknown_fields_in_params() {
        let v = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name":"x","arguments":{},"_meta":{"future":true}}});
        assert_eq!(round_trip(v.clone()), v);
    }

    #[test]
    fn string_ids_are_echoed_as_strings() {
        let m = Message::from_value(json!({"jsonrpc":"2.0","id":"a-1","method":"ping"})).unwrap();
        assert_eq!(m.id(), Some(&RequestId::String("a-1".into())));
        let reply = Message::response(m.id().unwrap().clone(), json!({}));
        assert_eq!(reply.to_value()["id"], json!("a-1"));
    }

    #[test]
    fn notification_has_no_id() {
        let m = Message::from_value(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .unwrap();
        assert!(matches!(m, Message::Notification { .. }));
        assert!(m.to_value().get("id").is_none());
    }

    #[test]
    fn not_json_is_parse_error_with_null_id() {
        let err = parse_body(b"{not json").unwrap_err();
        let resp = err.to_response().to_value();
        assert_eq!(resp["error"]["code"], json!(codes::PARSE_ERROR));
        assert_eq!(resp["id"], Value::Null);
    }

    #[test]
    fn empty_batch_is_invalid_request() {
        let err = parse_body(b"[]").unwrap_err();
        assert_eq!(
            err.to_response().to_value()["error"]["code"],
            json!(codes::INVALID_REQUEST)
        );
    }

    #[test]
    fn wrong_jsonrpc_version_is_invalid_request_echoing_id() {
        let err = Message::from_value(json!({"jsonrpc":"1.0","id":3,"method":"ping"})).unwrap_err();
        let resp = err.to_response().to_value();
        assert_eq!(resp["error"]["code"], json!(codes::INVALID_REQUEST));
        assert_eq!(resp["id"], json!(3));
    }

    #[test]
    fn non_object_is_invalid_request() {
        for v in [json!(1), json!("x"), json!(null), json!(true)] {
            let err = Message::from_value(v).unwrap_err();
            assert!(matches!(err, ParseError::Invalid { id: None, .. }));
        }
    }

    #[test]
    fn method_must_be_string_and_params_structured() {
        assert!(Message::from_value(json!({"jsonrpc":"2.0","id":1,"method":5})).is_err());
        assert!(
            Message::from_value(json!({"jsonrpc":"2.0","id":1,"method":"x","params":3})).is_err()
        );
    }

    #[test]
    fn null_request_id_is_rejected() {
        assert!(Message::from_value(json!({"jsonrpc":"2.0","id":null,"method":"x"})).is_err());
    }

    #[test]
    fn bad_id_type_is_invalid_request_with_null_id() {
        let err =
            Message::from_value(json!({"jsonrpc":"2.0","id":{"a":1},"method":"x"})).unwrap_err();
        assert_eq!(err.to_response().to_value()["id"], Value::Null);
    }

    #[test]
    fn batch_entries_parse_independently() {
        let Body::Batch(items) =
            parse_body(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#).unwrap()
        else {
            panic!("expected a batch");
        };
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
    }

    #[test]
    fn error_response_round_trips() {
        let v = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}});
        assert_eq!(round_trip(v.clone()), v);
        let v =
            json!({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"m","data":{"x":1}}});
        assert_eq!(round_trip(v.clone()), v);
    }

    #[test]
    fn response_without_id_is_invalid() {
        assert!(Message::from_value(json!({"jsonrpc":"2.0","result":{}})).is_err());
    }
}
