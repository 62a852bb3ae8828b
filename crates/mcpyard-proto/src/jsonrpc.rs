//! JSON-RPC 2.0 messages. Params and results stay `serde_json::Value` (a
//! result may also be JSON text the gateway already holds, see [`Payload`])
//! so that fields from newer spec revisions pass through the gateway
//! untouched; only what routing needs (method, id) is read.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{json_text, ErrorObject, Payload};

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
        result: Payload,
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

    pub fn response(id: RequestId, result: impl Into<Payload>) -> Self {
        Message::Response {
            id,
            result: result.into(),
        }
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
        let Value::Object(obj) = value else {
            return Err(not_an_object());
        };
        Members::from_map(obj).into_message()
    }

    /// Parses exactly one message from bytes. The object's members are read
    /// in one pass, straight into the message: no map of the whole object
    /// is built first (what [`Message::from_value`] is given). A response's
    /// result is kept as its JSON text ([`Payload::Text`]), parsed only by
    /// whoever needs to look inside.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ParseError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let visitor = MembersVisitor {
            result_as_text: true,
        };
        let members = serde::Deserializer::deserialize_any(&mut de, visitor)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| ParseError::NotJson(e.to_string()))?;
        members.ok_or_else(not_an_object)?.into_message()
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a Message always serialises")
    }

    /// The message as compact JSON, as its `Serialize` writes it; written
    /// by hand, with strings copied whole ([`crate::json_text`]).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self {
            Message::Request { id, method, params } => {
                write_id(&mut out, Some(id));
                write_method(&mut out, method, params.as_ref());
            }
            Message::Notification { method, params } => {
                write_method(&mut out, method, params.as_ref());
            }
            Message::Response { id, result } => {
                write_id(&mut out, Some(id));
                out.extend_from_slice(br#","result":"#);
                match result {
                    Payload::Value(v) => json_text::write_value(&mut out, v),
                    Payload::Text(raw) => out.extend_from_slice(raw.get().as_bytes()),
                }
            }
            Message::Error { id, error } => {
                write_id(&mut out, id.as_ref());
                out.extend_from_slice(br#","error":"#);
                // Writing into a vector cannot fail; an error is rare.
                let _ = serde_json::to_writer(&mut out, error);
            }
        }
        out.push(b'}');
        out
    }
}

fn write_id(out: &mut Vec<u8>, id: Option<&RequestId>) {
    out.extend_from_slice(br#","id":"#);
    match id {
        Some(RequestId::Number(n)) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Some(RequestId::String(s)) => json_text::write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_method(out: &mut Vec<u8>, method: &str, params: Option<&Value>) {
    out.extend_from_slice(br#","method":"#);
    json_text::write_str(out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        json_text::write_value(out, params);
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
        d.deserialize_any(MembersVisitor {
            result_as_text: false,
        })?
        .ok_or_else(not_an_object)
        .and_then(Members::into_message)
        .map_err(serde::de::Error::custom)
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
    // One message, the usual body, is read in one pass; a batch as values
    // first, so that each entry fails on its own.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return Ok(Body::Single(match Message::from_slice(bytes) {
            Err(ParseError::NotJson(e)) => return Err(ParseError::NotJson(e)),
            parsed => parsed,
        }));
    }
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

fn not_an_object() -> ParseError {
    ParseError::Invalid {
        id: None,
        reason: "a JSON-RPC message must be an object".into(),
    }
}

/// The members of a message's object that say what it is; any other member
/// is ignored.
#[derive(Default)]
struct Members {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Payload>,
    error: Option<Value>,
}

impl Members {
    fn from_map(mut obj: Map<String, Value>) -> Self {
        Members {
            jsonrpc: obj.remove("jsonrpc"),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            result: obj.remove("result").map(Payload::Value),
            error: obj.remove("error"),
        }
    }

    fn into_message(self) -> Result<Message, ParseError> {
        let id = match self.id {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(RequestId::String(s))),
            Some(Value::Number(n)) if n.is_i64() => n.as_i64().map(|n| Some(RequestId::Number(n))),
            Some(_) => {
                return Err(ParseError::Invalid {
                    id: None,
                    reason: "id must be a string or an integer".into(),
                })
            }
        };
        let invalid = |reason: &str| ParseError::Invalid {
            id: id.clone().flatten(),
            reason: reason.into(),
        };
        if self.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
            return Err(invalid("jsonrpc must be \"2.0\""));
        }
        if let Some(method) = self.method {
            let Value::String(method) = method else {
                return Err(invalid("method must be a string"));
            };
            let params = self.params;
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
        if let Some(error) = self.error {
            let error: ErrorObject = serde_json::from_value(error)
                .map_err(|e| invalid(&format!("malformed error object: {e}")))?;
            return Ok(Message::Error {
                id: id.flatten(),
                error,
            });
        }
        if let Some(result) = self.result {
            return match id {
                Some(Some(id)) => Ok(Message::Response { id, result }),
                _ => Err(invalid("a response needs an id")),
            };
        }
        Err(invalid("neither a request, a notification nor a response"))
    }
}

/// Reads a message's members from its object; `None` for any other JSON
/// value (which is valid JSON, but not a message).
struct MembersVisitor {
    /// Keep a result as its text (only a deserializer reading JSON text
    /// can give it).
    result_as_text: bool,
}

impl<'de> serde::de::Visitor<'de> for MembersVisitor {
    type Value = Option<Members>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = Members::default();
        while let Some(key) = map.next_key::<MemberName>()? {
            let slot = match key {
                MemberName::Jsonrpc => &mut m.jsonrpc,
                MemberName::Id => &mut m.id,
                MemberName::Method => &mut m.method,
                MemberName::Params => &mut m.params,
                MemberName::Result if self.result_as_text => {
                    m.result = Some(Payload::from_text(map.next_value()?));
                    continue;
                }
                MemberName::Result => {
                    m.result = Some(Payload::Value(map.next_value()?));
                    continue;
                }
                MemberName::Error => &mut m.error,
                MemberName::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            // A repeated member: the last one counts, as in a parsed map.
            *slot = Some(map.next_value()?);
        }
        Ok(Some(m))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A member's name, read without allocating it.
enum MemberName {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for MemberName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl serde::de::Visitor<'_> for NameVisitor {
            type Value = MemberName;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, name: &str) -> Result<MemberName, E> {
                Ok(match name {
                    "jsonrpc" => MemberName::Jsonrpc,
                    "id" => MemberName::Id,
                    "method" => MemberName::Method,
                    "params" => MemberName::Params,
                    "result" => MemberName::Result,
                    "error" => MemberName::Error,
                    _ => MemberName::Other,
                })
            }
        }
        d.deserialize_str(NameVisitor)
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

    /// Reading bytes in one pass gives what reading them as a value first
    /// gives, for messages, near-messages and non-messages alike.
    #[test]
    fn bytes_read_in_one_pass_read_as_their_value_does() {
        let cases = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":null}]}}}"#,
            r#"{"method":"ping","jsonrpc":"2.0","id":"s-1","extra":{"deep":[1,2,3]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"b\u00e9"}]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":"not a number"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-4,"method":"m","params":3}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{}"#,
            r#""a string""#,
            r#"42"#,
            r#"null"#,
            r#"[{"jsonrpc":"2.0","method":"m"}]"#,
        ];
        for case in cases {
            let value: Value = serde_json::from_slice(case.as_bytes()).unwrap();
            assert_eq!(
                Message::from_slice(case.as_bytes()),
                Message::from_value(value.clone()),
                "{case}"
            );
            let via_serde = serde_json::from_value::<Message>(value).map_err(|e| e.to_string());
            let via_bytes = Message::from_slice(case.as_bytes()).map_err(|e| e.to_string());
            assert_eq!(via_serde, via_bytes, "{case}");
        }
        for broken in ["{", r#"{"jsonrpc":"2.0"} x"#, "", "nul"] {
            assert!(
                matches!(
                    Message::from_slice(broken.as_bytes()),
                    Err(ParseError::NotJson(_))
                ),
                "{broken}"
            );
        }
    }

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

    #[test]
    fn a_message_is_written_as_its_serialize_writes_it() {
        let raw = |text: &str| {
            Payload::Text(serde_json::value::RawValue::from_string(text.to_owned()).unwrap())
        };
        let messages = [
            Message::request(
                7,
                "tools/call",
                Some(
                    json!({"name": "echo", "arguments": {"message": "a\"b\\c\n", "n": [1, -2, 3.5]}}),
                ),
            ),
            Message::request(RequestId::String("s-1".into()), "ping", None),
            Message::request(RequestId::String("q\"uote".into()), "x/é", Some(json!([]))),
            Message::notification(
                "notifications/progress",
                Some(json!({"progressToken": 1, "progress": 0.5})),
            ),
            Message::notification("notifications/initialized", None),
            Message::response(
                RequestId::Number(-3),
                json!({"content": [{"type": "text", "text": "日本"}], "isError": false}),
            ),
            Message::response(
                RequestId::Number(4),
                raw(r#"{"tools":[],"nextCursor":"c"}"#),
            ),
            Message::error(
                Some(RequestId::Number(5)),
                ErrorObject::internal("boom").with_data(json!({"why": "x"})),
            ),
            Message::error(None, ErrorObject::parse_error("bad")),
        ];
        for message in messages {
            assert_eq!(
                String::from_utf8(message.to_vec()).unwrap(),
                serde_json::to_string(&message).unwrap(),
            );
        }
    }
}
