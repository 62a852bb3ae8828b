//! A response's result: a parsed value, or JSON text written out as it is.
//! The text form lets the gateway answer with JSON it already holds (a list
//! page assembled from the catalogue's items, an upstream's result read off
//! the wire) without parsing it into a value only to write it back.

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
    /// A result read off the wire, kept as its text unless that spans lines:
    /// every door writes a message on one line (stdio, SSE `data:`), and
    /// JSON text is only reflowed by parsing it.
    pub fn from_text(raw: Box<RawValue>) -> Self {
        match memchr::memchr2(b'\n', b'\r', raw.get().as_bytes()).is_some() {
            true => Payload::Value(parse(&raw)),
            false => Payload::Text(raw),
        }
    }

    /// The JSON text, when the result is held as text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Payload::Value(_) => None,
            Payload::Text(raw) => Some(raw.get()),
        }
    }

    /// Whether the result may hold `word` as (part of) a member name or a
    /// string: [`Payload::may_hold_any`] of one word.
    pub fn may_hold(&self, word: &str) -> bool {
        self.may_hold_any(&[word])
    }

    /// Whether the result may hold one of `words` as (part of) a member
    /// name or a string. False only when it is text that holds none of them
    /// as written and has no escape that could spell one otherwise (`\u`
    /// for any character; `\/`, `\"`, `\\` and the like for what the
    /// words have of those); a value must be looked into.
    pub fn may_hold_any(&self, words: &[&str]) -> bool {
        let Payload::Text(raw) = self else {
            return true;
        };
        let text = raw.get().as_bytes();
        let holds = |word: &str| holds(text, word.as_bytes());
        if words.iter().any(|word| holds(word)) {
            return true;
        }
        if memchr::memchr(b'\\', text).is_none() {
            return false;
        }
        let short_escapes = |word: &&str| {
            word.bytes()
                .any(|b| b < 0x20 || matches!(b, b'"' | b'\\' | b'/'))
        };
        holds("\\u") || words.iter().any(short_escapes)
    }

    /// Whether it is a tool result that reports an error (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.may_hold("isError") && self.to_value().get("isError") == Some(&Value::Bool(true))
    }

    /// Adds `members`, which the result's object does not have, in front
    /// of its own: text is written around, not parsed. Nothing happens to
    /// a result that is not an object.
    pub fn add_members(&mut self, members: Vec<(&str, Value)>) {
        let Payload::Text(raw) = self else {
            if let Some(obj) = self.value_mut().as_object_mut() {
                obj.extend(members.into_iter().map(|(k, v)| (k.to_owned(), v)));
            }
            return;
        };
        let Some(rest) = raw.get().trim_start().strip_prefix('{') else {
            return;
        };
        let mut text = String::with_capacity(raw.get().len() + 64 * members.len());
        text.push('{');
        for (i, (key, value)) in members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&Value::from(*key).to_string());
            text.push(':');
            text.push_str(&value.to_string());
        }
        if !members.is_empty() && !rest.trim_start().starts_with('}') {
            text.push(',');
        }
        text.push_str(rest);
        if let Ok(raw) = RawValue::from_string(text) {
            *self = Payload::Text(raw);
        }
    }

    /// The result as a value to change: the text form is parsed, once.
    pub fn value_mut(&mut self) -> &mut Value {
        if let Payload::Text(raw) = self {
            *self = Payload::Value(parse(raw));
        }
        match self {
            Payload::Value(v) => v,
            Payload::Text(_) => unreachable!("made a value above"),
        }
    }

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
}

/// Whether `word` is in `text`. A long text is searched with memchr's
/// `memmem`; for a short one, building that search costs more than
/// comparing at each place one of the word's bytes occurs: its first
/// capital or punctuation, which JSON's usual member names and words have
/// few of (`content`, `type`, `text` are full of the first bytes of
/// `ttlMs` and `task`), else its first byte.
fn holds(text: &[u8], word: &[u8]) -> bool {
    const SHORT: usize = 256;
    if word.is_empty() {
        return true;
    }
    if text.len() > SHORT {
        return memchr::memmem::find(text, word).is_some();
    }
    let anchor = word
        .iter()
        .position(|b| !b.is_ascii_lowercase())
        .unwrap_or(0);
    memchr::memchr_iter(word[anchor], text)
        .any(|at| at >= anchor && text[at - anchor..].starts_with(word))
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

    fn text(json: &str) -> Payload {
        Payload::from_text(RawValue::from_string(json.to_owned()).expect("JSON"))
    }

    #[test]
    fn text_on_several_lines_is_parsed_so_that_it_is_written_on_one() {
        let payload = text("{\n  \"content\": []\n}");
        assert!(payload.text().is_none());
        assert_eq!(
            serde_json::to_string(&payload).unwrap(),
            r#"{"content":[]}"#
        );
        assert_eq!(
            text(r#"{"content": []}"#).text(),
            Some(r#"{"content": []}"#)
        );
    }

    #[test]
    fn a_word_is_ruled_out_of_text_only_when_no_escape_could_spell_it() {
        assert!(!text(r#"{"content":[]}"#).may_hold("isError"));
        assert!(text(r#"{"isError":false}"#).may_hold("isError"));
        assert!(text(r#"{"\u0069sError":true}"#).may_hold("isError"));
        assert!(Payload::Value(json!({})).may_hold("isError"));
        assert!(!text(r#"{"a/b":1}"#).may_hold("a/c"));
        assert!(text(r#"{"a\/c":1}"#).may_hold("a/c"));
        assert!(!text(r#"{"a\nc":1}"#).may_hold("isError"));
        assert!(text(r#"{"ttlMs":1}"#).may_hold_any(&["resultType", "ttlMs"]));
        assert!(!text(r#"{"content":[]}"#).may_hold_any(&["resultType", "ttlMs"]));
    }

    #[test]
    fn a_word_is_found_wherever_it_is_and_only_there() {
        let words = [
            "ttlMs",
            "task",
            "isError",
            "io.model/serverInfo",
            "a_b",
            "T",
            "x",
        ];
        let texts = [
            r#"{"content":[{"type":"text","text":"ttlMs"}]}"#,
            r#"{"ttlM":1,"tMs":2,"task_":3}"#,
            "Ms ttlMsX",
            "isErro isError",
            "io.model/serverInf io.model/serverInfo",
            "a_ ab a_b",
            "T",
            "",
            "xx",
            "ttMs tlMs",
        ];
        for text in texts {
            for word in words {
                let naive = text
                    .as_bytes()
                    .windows(word.len())
                    .any(|w| w == word.as_bytes());
                assert_eq!(
                    holds(text.as_bytes(), word.as_bytes()),
                    naive,
                    "{word} in {text}"
                );
            }
        }
    }

    #[test]
    fn a_word_is_found_in_short_and_long_text_alike() {
        let long = format!("{}isError", "is".repeat(300));
        for haystack in ["isError", "iisError", &long] {
            assert!(holds(haystack.as_bytes(), b"isError"), "{haystack}");
            assert!(!holds(haystack.as_bytes(), b"isErrors"), "{haystack}");
        }
        assert!(!holds(b"isErro", b"isError"));
        assert!(!holds(b"", b"isError"));
    }

    #[test]
    fn an_error_is_read_however_its_member_is_spelled() {
        assert!(text(r#"{"content":[],"isError":true}"#).is_error());
        assert!(text(r#"{"content":[],"\u0069sError":true}"#).is_error());
        assert!(!text(r#"{"content":[],"isError":false}"#).is_error());
        assert!(!text(r#"{"content":[{"type":"text","text":"isError"}]}"#).is_error());
        assert!(Payload::Value(json!({"isError": true})).is_error());
    }

    #[test]
    fn members_are_added_to_text_without_parsing_it() {
        let members = || {
            vec![
                ("resultType", json!("complete")),
                ("_meta", json!({"a": 1})),
            ]
        };
        let mut payload = text(r#" {"content":[{"type":"text","text":"x"}]}"#);
        payload.add_members(members());
        assert_eq!(
            payload.text(),
            Some(
                r#"{"resultType":"complete","_meta":{"a":1},"content":[{"type":"text","text":"x"}]}"#
            )
        );
        let mut empty = text("{ }");
        empty.add_members(members());
        assert_eq!(
            empty.text(),
            Some(r#"{"resultType":"complete","_meta":{"a":1} }"#)
        );
        let mut value = Payload::Value(json!({"content": []}));
        value.add_members(members());
        assert_eq!(
            value,
            Payload::Value(json!({"content": [], "resultType": "complete", "_meta": {"a": 1}}))
        );
        let mut array = text("[1]");
        array.add_members(members());
        assert_eq!(array.text(), Some("[1]"));
    }

    #[test]
    fn a_value_to_change_is_parsed_from_the_text_once() {
        let mut payload = text(r#"{"content":[]}"#);
        payload.value_mut()["isError"] = json!(true);
        assert!(payload.text().is_none());
        assert_eq!(
            payload,
            Payload::Value(json!({"content": [], "isError": true}))
        );
    }
}
