//! What a request's `Accept` and `Content-Type` headers allow.

use http::header::{ACCEPT, CONTENT_TYPE};
use http::HeaderMap;

/// The answer forms a client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    /// Reads every `Accept` header. No header at all means anything goes
    /// (RFC 9110 §12.5.1). Media types with `q=0` are refused ones.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let mut values = headers.get_all(ACCEPT).iter().peekable();
        if values.peek().is_none() {
            return Self {
                json: true,
                sse: true,
            };
        }
        let mut out = Self {
            json: false,
            sse: false,
        };
        for value in values {
            // What the MCP SDKs send, as the specification writes it.
            if value.as_bytes() == b"application/json, text/event-stream" {
                out.json = true;
                out.sse = true;
                continue;
            }
            // A value that is not visible ASCII is skipped whole.
            if value.to_str().is_err() {
                continue;
            }
            // Split as bytes: for values this short, `str::split`'s searcher
            // costs more than a plain loop.
            for item in value.as_bytes().split(|&b| b == b',') {
                let mut parts = item.split(|&b| b == b';');
                let media = parts.next().unwrap_or_default().trim_ascii();
                if parts.any(refuses) {
                    continue;
                }
                let is = |name: &[u8]| media.eq_ignore_ascii_case(name);
                if is(b"*/*") {
                    out.json = true;
                    out.sse = true;
                } else if is(b"application/json") || is(b"application/*") {
                    out.json = true;
                } else if is(b"text/event-stream") || is(b"text/*") {
                    out.sse = true;
                }
            }
        }
        out
    }

    pub(crate) fn any(self) -> bool {
        self.json || self.sse
    }
}

/// Whether a media type's parameter gives it a weight of 0 (`q=0`): a
/// refused type.
fn refuses(param: &[u8]) -> bool {
    param
        .trim_ascii()
        .strip_prefix(b"q=")
        .and_then(|q| {
            std::str::from_utf8(q.trim_ascii())
                .ok()?
                .parse::<f32>()
                .ok()
        })
        .is_some_and(|q| q <= 0.0)
}

/// Whether the body is declared as JSON (`application/json`, any params).
pub(crate) fn is_json_content(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .filter(|v| v.to_str().is_ok())
        .and_then(|v| v.as_bytes().split(|&b| b == b';').next())
        .is_some_and(|m| m.trim_ascii().eq_ignore_ascii_case(b"application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn accepts(v: &str) -> Accepts {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_str(v).expect("test header"));
        Accepts::from_headers(&h)
    }

    #[test]
    fn reads_the_usual_accept_values() {
        assert_eq!(
            accepts("application/json, text/event-stream"),
            Accepts {
                json: true,
                sse: true
            }
        );
        assert_eq!(
            accepts("text/event-stream"),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accepts("application/json;charset=utf-8"),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert!(accepts("*/*").sse);
        assert!(!accepts("text/html").any());
        assert!(!accepts("application/json;q=0").json);
        assert!(!accepts("application/json; q=0.0 , text/html").json);
        assert!(
            accepts("application/json; q = 0").json,
            "a weight is written q=, no spaces"
        );
        assert!(accepts("application/json;q=0.5").json);
        assert!(accepts(" Application/JSON ,TEXT/*").sse);
        assert!(accepts("text/html, application/*;charset=x").json);
        assert!(!accepts("application/jsonx, text/event-streamy").any());
    }

    #[test]
    fn no_accept_header_accepts_everything() {
        let a = Accepts::from_headers(&HeaderMap::new());
        assert!(a.json && a.sse);
    }

    #[test]
    fn content_type_must_be_json() {
        let mut h = HeaderMap::new();
        assert!(!is_json_content(&h));
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        assert!(is_json_content(&h));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert!(!is_json_content(&h));
    }
}
