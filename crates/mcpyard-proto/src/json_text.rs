//! JSON text written as serde_json writes it compact, with strings copied
//! whole. serde_json looks up every byte of every string in its escape
//! table; nearly no string the gateway writes has anything to escape, and
//! a scan of the whole string with no early exit, which the compiler makes
//! wide, finds that out in a fraction of the time. A string that does need
//! escaping is written by serde_json.

use serde_json::Value;

/// Whether serde_json would escape a byte of `text`: a control character,
/// a quote or a backslash. Every byte is looked at (no early exit), which
/// the compiler turns into a few wide comparisons per 16 or 32 bytes.
fn needs_escape(text: &[u8]) -> bool {
    text.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// Appends `text` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    if needs_escape(text.as_bytes()) {
        // Writing into a vector cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
    } else {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

/// Appends `value` as compact JSON, byte for byte what serde_json writes.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let values = [
            json!(null),
            json!(true),
            json!([false, 0, -1, 1.5, 1e300, u64::MAX, i64::MIN, 0.1]),
            json!({}),
            json!([]),
            json!({"a": {"b": [{"c": "d"}, [], {}]}, "e": ""}),
            json!({"quote\"": "back\\slash", "nl": "a\nb\tc\u{1}", "del": "\u{7f}"}),
            json!({"é": "ü — 日本", "emoji": "🦀", "slash": "a/b"}),
            json!("</script>"),
        ];
        for value in values {
            let mut out = Vec::new();
            write_value(&mut out, &value);
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                serde_json::to_string(&value).expect("json"),
                "{value}"
            );
        }
    }

    #[test]
    fn an_escape_is_found_wherever_it_is() {
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 100] {
            let plain = "x".repeat(len);
            assert!(!needs_escape(plain.as_bytes()));
            for at in 0..len {
                for bad in [b'"', b'\\', 0x00, 0x1f] {
                    let mut bytes = plain.clone().into_bytes();
                    bytes[at] = bad;
                    assert!(needs_escape(&bytes), "{len} {at} {bad}");
                }
            }
        }
    }
}
