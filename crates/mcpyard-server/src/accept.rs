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
            let Ok(value) = value.to_str() else { continue };
            for item in value.split(',') {
                let mut parts = item.split(';');
                let media = parts.next().unwrap_or("").trim();
                let is = |name: &str| media.eq_ignore_ascii_case(name);
                let refused = parts.any(|p| {
                    let p = p.trim();
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                if refused {
                    continue;
                }
                if is("*/*") {
                    out.json = true;
                    out.sse = true;
                } else if is("application/json") || is("application/*") {
                    out.json = true;
                } else if is("text/event-stream") || is("text/*") {
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

/// Whether the body is declared as JSON (`application/json`, any params).
pub(crate) fn is_json_content(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
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
