//! JSON with comments (JSONC), as VS Code writes `mcp.json` and
//! `settings.json`: `//` and `/* */` comments and trailing commas are
//! removed before the text goes to a strict JSON parser.
//!
//! Removed characters become spaces (newlines are kept), so the parser's
//! line and column numbers still point into the user's file.

/// Returns `text` without comments and trailing commas.
pub(crate) fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    // Index in `out` of a comma that may turn out to be trailing.
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                pending_comma = None;
                // Copy the string as is, escapes included.
                out.push(b);
                i += 1;
                while i < bytes.len() {
                    let c = bytes[i];
                    out.push(c);
                    i += 1;
                    if c == b'\\' && i < bytes.len() {
                        out.push(bytes[i]);
                        i += 1;
                    } else if c == b'"' {
                        break;
                    }
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    out.push(if bytes[i] == b'\n' { b'\n' } else { b' ' });
                    i += 1;
                }
                if i < bytes.len() {
                    out.extend_from_slice(b"  ");
                    i += 2;
                }
                continue;
            }
            b',' => pending_comma = Some(out.len()),
            b'}' | b']' => {
                if let Some(at) = pending_comma.take() {
                    out[at] = b' ';
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => pending_comma = None,
        }
        out.push(b);
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII bytes, and multi-byte UTF-8
    // sequences were copied whole (their bytes are all >= 0x80, never one
    // of the bytes matched above), so the result is still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn parse(text: &str) -> Value {
        serde_json::from_str(&strip(text)).unwrap()
    }

    #[test]
    fn plain_json_is_unchanged() {
        let t = r#"{"a": [1, 2], "b": "x"}"#;
        assert_eq!(strip(t), t);
    }

    #[test]
    fn comments_and_trailing_commas_go() {
        let v = parse(
            "{\n  // a comment\n  \"a\": 1, /* inline */ \"b\": [1, 2,],\n  /* multi\n line */\n  \"c\": {\"d\": 3,},\n}",
        );
        assert_eq!(v, json!({"a": 1, "b": [1, 2], "c": {"d": 3}}));
    }

    #[test]
    fn comment_markers_inside_strings_stay() {
        let v = parse(r#"{"url": "http://x/y", "s": "a /* b */ c", "q": "say \"//\","}"#);
        assert_eq!(
            v,
            json!({"url": "http://x/y", "s": "a /* b */ c", "q": "say \"//\","})
        );
    }

    #[test]
    fn line_numbers_are_kept() {
        let text = "{\n/* one\ntwo */\n\"a\": x\n}";
        let err = serde_json::from_str::<Value>(&strip(text)).unwrap_err();
        assert_eq!(err.line(), 4);
    }

    #[test]
    fn non_ascii_text_survives() {
        let v = parse("{\"é\": \"ü ✓\" // ß\n}");
        assert_eq!(v, json!({"é": "ü ✓"}));
    }
}
