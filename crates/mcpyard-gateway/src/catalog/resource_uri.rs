//! Resource URIs as an upstream reads them: normalised (RFC 3986 section
//! 6.2.2: scheme and host case, percent-encoding, dot segments) before the
//! policy and the routing see them, and matched against URI templates
//! (RFC 6570) so that a rule or a route naming a template covers every URI
//! it describes.

use crate::RouteError;

/// The normal form of `uri`; a string that is not an absolute URI is the
/// client's error (it could name anything once an upstream reads it).
pub(crate) fn normalize(uri: &str) -> Result<String, RouteError> {
    fluent_uri::Uri::parse(uri)
        .map(|parsed| parsed.normalize().as_str().to_owned())
        .map_err(|e| RouteError::invalid_params(format!("`uri` is not a valid URI: {e}")))
}

/// Whether `uri` is one the URI template `template` describes. Simple
/// expressions (`{id}`) stand for one path segment's worth of text (no
/// `/`, `?` or `#`), reserved ones (`{+path}`, `{#frag}`) for any text, and
/// the prefixed forms for their own prefix followed by such text.
pub(crate) fn template_matches(template: &str, uri: &str) -> bool {
    match parse(template) {
        Some(parts) => matches_from(&parts, uri),
        None => false,
    }
}

/// The literal text before a template's first expression: a route prefers
/// the template that says most about the URI.
pub(crate) fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

#[derive(Debug, PartialEq)]
enum Part<'a> {
    Literal(&'a str),
    /// An expression: the characters its value may not contain (`None`:
    /// any), and the text its expansion starts with, if any.
    Expression {
        stop: Option<&'static [char]>,
        lead: Option<char>,
    },
}

const SEGMENT_STOP: &[char] = &['/', '?', '#'];
const QUERY_STOP: &[char] = &['#'];

fn parse(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}')?;
                let operator = rest[1..end].chars().next();
                let (stop, lead) = match operator {
                    Some('+') | Some('#') => (None, operator.filter(|c| *c == '#')),
                    Some('/') => (Some(QUERY_STOP), Some('/')),
                    Some('?') | Some('&') => (Some(QUERY_STOP), operator),
                    Some('.') | Some(';') => (Some(SEGMENT_STOP), operator),
                    _ => (Some(SEGMENT_STOP), None),
                };
                parts.push(Part::Expression { stop, lead });
                rest = &rest[end + 1..];
            }
            Some(at) => {
                parts.push(Part::Literal(&rest[..at]));
                rest = &rest[at..];
            }
            None => {
                parts.push(Part::Literal(rest));
                rest = "";
            }
        }
    }
    Some(parts)
}

/// Backtracking match; templates are short, so this stays cheap.
fn matches_from(parts: &[Part<'_>], text: &str) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return text.is_empty();
    };
    match first {
        Part::Literal(literal) => text
            .strip_prefix(literal)
            .is_some_and(|after| matches_from(rest, after)),
        Part::Expression { stop, lead } => {
            // An expression may expand to nothing (an undefined variable).
            if matches_from(rest, text) {
                return true;
            }
            let body = match lead {
                Some(c) => match text.strip_prefix(*c) {
                    Some(after) => after,
                    None => return false,
                },
                None => text,
            };
            let offset = text.len() - body.len();
            let allowed = match stop {
                Some(stop) => body.find(*stop).unwrap_or(body.len()),
                None => body.len(),
            };
            // Try the longest expansion first, shrinking one char at a time.
            body[..allowed]
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .rev()
                .any(|end| matches_from(rest, &text[offset + end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_case_dot_segments_and_percent_encoding() {
        for (raw, normal) in [
            (
                "DEMO://resource/static/document/architecture.md",
                "demo://resource/static/document/architecture.md",
            ),
            (
                "Demo://Resource/static/document/./architecture.md",
                "demo://resource/static/document/architecture.md",
            ),
            (
                "demo://resource/static/document/x/../architecture.md",
                "demo://resource/static/document/architecture.md",
            ),
            (
                "demo://resource/dynamic/blob/../text/1",
                "demo://resource/dynamic/text/1",
            ),
            ("file:///tmp/%7eme/a%2fb", "file:///tmp/~me/a%2Fb"),
            ("test://static-text", "test://static-text"),
        ] {
            assert_eq!(normalize(raw).unwrap(), normal, "{raw}");
        }
        // The path's case is the resource's own.
        assert_eq!(normalize("file:///Tmp/A").unwrap(), "file:///Tmp/A");
    }

    #[test]
    fn a_string_that_is_not_a_uri_is_refused() {
        for bad in ["", "no scheme", "demo://a b", "demo://x/{id}", "%%"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn templates_match_the_uris_they_describe() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert!(template_matches(t, "demo://resource/dynamic/text/1"));
        assert!(template_matches(t, "demo://resource/dynamic/text/"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/1/2"));
        assert!(!template_matches(t, "demo://resource/dynamic/blob/1"));
        assert!(template_matches(t, t), "the template names itself");
        let mid = "test://template/{id}/data";
        assert!(template_matches(mid, "test://template/42/data"));
        assert!(!template_matches(mid, "test://template/42/other"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches(
            "api://items{/id}{?q,page}",
            "api://items/7?q=x&page=2"
        ));
        assert!(template_matches("api://items{/id}{?q,page}", "api://items"));
        assert!(!template_matches("broken://{id", "broken://x"));
        assert_eq!(literal_prefix(mid), "test://template/");
    }
}
