//! The parts of a `WWW-Authenticate: Bearer ...` challenge that matter
//! here (RFC 6750 section 3, RFC 9728 section 5.1).

/// A Bearer challenge.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<Vec<String>>,
    pub(crate) error: Option<String>,
}

impl BearerChallenge {
    /// Reads the first Bearer challenge of a header value; `None` when there
    /// is none.
    pub(crate) fn parse(header: &str) -> Option<Self> {
        // A DPoP challenge (RFC 9449 section 7.1) carries the same
        // parameters.
        let (start, scheme) = match find_scheme(header, "bearer") {
            Some(start) => (start, "bearer"),
            None => (find_scheme(header, "dpop")?, "dpop"),
        };
        let mut rest = &header[start + scheme.len()..];
        let mut challenge = BearerChallenge::default();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim();
            if name.contains(' ') {
                // The next word has no `=` right after it: another scheme starts.
                break;
            }
            rest = rest[eq + 1..].trim_start();
            let value;
            if let Some(quoted) = rest.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                out.push(escaped);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => out.push(c),
                    }
                }
                value = out;
                rest = &quoted[end.min(quoted.len())..];
            } else {
                let end = rest.find([',', ' ']).unwrap_or(rest.len());
                value = rest[..end].to_owned();
                rest = &rest[end..];
            }
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => {
                    challenge.scope = Some(value.split_whitespace().map(str::to_owned).collect());
                }
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        Some(challenge)
    }

    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Where the auth-scheme `scheme` starts (as a whole word), ignoring case.
fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',' | b'\t');
        let after = lower.as_bytes().get(at + scheme.len());
        let after_ok = after.is_none_or(|c| *c == b' ' || *c == b'\t');
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::BearerChallenge;

    #[test]
    fn reads_quoted_and_bare_parameters() {
        let c = BearerChallenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" word""#,
        )
        .unwrap();
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.unwrap(), ["mcp:basic", "mcp:write"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        let bare = BearerChallenge::parse("Bearer realm=mcp,error=invalid_token").unwrap();
        assert_eq!(bare.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn finds_bearer_among_other_schemes() {
        let c = BearerChallenge::parse(r#"Basic realm="x", Bearer scope="a""#).unwrap();
        assert_eq!(c.scope.unwrap(), ["a"]);
        assert!(BearerChallenge::parse(r#"Basic realm="bearer""#).is_none());
        assert_eq!(
            BearerChallenge::parse("Bearer"),
            Some(BearerChallenge::default())
        );
    }
}
