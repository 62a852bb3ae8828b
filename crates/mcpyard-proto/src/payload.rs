//! A response's result: a parsed value, or JSON text written out as it is.
//! The text form lets the gateway answer with JSON it already holds (a list
//! page assembled from the catalogue's items) without parsing it into a
//! value only to write it back.

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

#[derive(Debug, Clone)]
pub enum Payload {
    Value(Value),
    /// JSON text, written as it is.
    Text(Box<RawValue>),
}

impl Payload {
    /// The result as a value (the text form is parsed).
    pub fn into_value(self) -> Value {
        match self {
            Payload::Value(v) => v,
            Payload::Text(raw) => parse(&raw),
        }
    }

    /// The result as a value, parsing the text form into a copy.
    pub fn to_value(&self) -> std::borrow::Cow<'_, Value> {
        match self {
            Payload::Value(v) => std::borrow::Cow::Borrowed(v),
            Payload::Text(raw) => std::borrow::Cow::Owned(parse(raw)),
        }
    }

    /// The parsed value, if the result is held as one.
    pub fn as_value_mut(&mut self) -> Option<&mut Value> {
        match self {
            Payload::Value(v) => Some(v),
            Payload::Text(_) => None,
        }
    }
}

fn parse(raw: &RawValue) -> Value {
    // Checked when it was made, so it parses.
    serde_json::from_str(raw.get()).unwrap_or_default()
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Value(value)
    }
}

/// Equal when they hold the same JSON value, whatever the form.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Payload::Value(a), Payload::Value(b)) => a == b,
            (Payload::Text(a), Payload::Text(b)) if a.get() == b.get() => true,
            _ => *self.to_value() == *other.to_value(),
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Value(v) => v.serialize(s),
            Payload::Text(raw) => raw.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_written_as_it_is_and_reads_as_its_value() {
        let text = r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"x"}"#;
        let payload = Payload::Text(RawValue::from_string(text.to_owned()).expect("JSON"));
        assert_eq!(serde_json::to_string(&payload).unwrap(), text);
        let value =
            json!({"nextCursor": "x", "tools": [{"name": "a", "inputSchema": {"type": "object"}}]});
        assert_eq!(payload, Payload::Value(value.clone()));
        assert_eq!(*payload.to_value(), value);
        assert_eq!(payload.into_value(), value);
    }
}
