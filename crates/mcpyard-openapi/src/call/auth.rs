//! Credentials for one call, from the operation's `security` alternatives:
//! the first alternative whose every scheme has a configured value wins.

use base64::Engine as _;

use crate::{ApiAuth, ApiDocument, Location, Operation, SecurityScheme};

use super::CallError;

/// Where one credential goes on the wire.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Credential {
    /// A whole `Authorization` header value (`Bearer …`, `Basic …`).
    Authorization(String),
    Header(String, String),
    Query(String, String),
    Cookie(String, String),
}

impl std::fmt::Debug for Credential {
    // Where it goes, never the value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Authorization(_) => f.write_str("Authorization"),
            Self::Header(n, _) => write!(f, "Header({n})"),
            Self::Query(n, _) => write!(f, "Query({n})"),
            Self::Cookie(n, _) => write!(f, "Cookie({n})"),
        }
    }
}

/// The credentials the operation needs, or why it cannot be called.
pub(crate) fn credentials(
    api: &str,
    op: &Operation,
    doc: &ApiDocument,
    auth: &ApiAuth,
) -> Result<Vec<Credential>, CallError> {
    if op.security.is_empty() {
        return Ok(Vec::new());
    }
    'alternatives: for alternative in &op.security {
        let mut found = Vec::new();
        for (scheme, _scopes) in &alternative.schemes {
            match credential(scheme, doc.security_schemes.get(scheme), auth) {
                Some(c) => found.push(c),
                None => continue 'alternatives,
            }
        }
        return Ok(found);
    }
    // Name what the first alternative needs: that is what the document
    // lists first, so usually what the API expects.
    let missing: Vec<String> = op.security[0]
        .schemes
        .iter()
        .filter(|(s, _)| credential(s, doc.security_schemes.get(s), auth).is_none())
        .map(|(s, _)| {
            // The scheme's own key, or the generic one for its kind.
            let either = |generic: &str| {
                if s == generic {
                    format!("`auth.{generic}`")
                } else {
                    format!("`auth.{s}` or `auth.{generic}`")
                }
            };
            let kind = match doc.security_schemes.get(s) {
                Some(SecurityScheme::Bearer | SecurityScheme::OAuth2) => either("bearer"),
                Some(SecurityScheme::Basic) => format!("{} (user:password)", either("basic")),
                Some(SecurityScheme::Unsupported(t)) => {
                    format!("a scheme of type `{t}` that mcpyard cannot fill")
                }
                _ => format!("`auth.{s}`"),
            };
            format!("`{s}` ({kind})")
        })
        .collect();
    Err(CallError::MissingCredential(format!(
        "`{}` needs credentials for the security scheme {}, and none is configured: set it in [apis.{api}] auth, e.g. auth = {{ {} = \"${{VARIABLE}}\" }}. Nothing was sent.",
        op.name,
        missing.join(", "),
        op.security[0]
            .schemes
            .first()
            .map_or("bearer", |(s, _)| s.as_str())
    )))
}

fn credential(name: &str, scheme: Option<&SecurityScheme>, auth: &ApiAuth) -> Option<Credential> {
    let own = auth.schemes.get(name).cloned();
    match scheme? {
        SecurityScheme::Bearer | SecurityScheme::OAuth2 => own
            .or_else(|| auth.bearer.clone())
            .map(|t| Credential::Authorization(format!("Bearer {t}"))),
        SecurityScheme::Basic => own.or_else(|| auth.basic.clone()).map(|up| {
            Credential::Authorization(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(up)
            ))
        }),
        SecurityScheme::ApiKey { location, name } => own.map(|v| match location {
            Location::Query => Credential::Query(name.clone(), v),
            Location::Cookie => Credential::Cookie(name.clone(), v),
            Location::Header | Location::Path => Credential::Header(name.clone(), v),
        }),
        SecurityScheme::Unsupported(_) => None,
    }
}

/// Every form a configured secret can take on the wire or in a message, so
/// any text leaving the source can be scrubbed of them.
pub(crate) fn secret_forms(auth: &ApiAuth, headers: &[(String, String)]) -> Vec<String> {
    let mut values: Vec<String> = auth
        .bearer
        .iter()
        .chain(auth.basic.iter())
        .chain(auth.schemes.values())
        .cloned()
        .collect();
    // Configured headers carry keys too (`X-Api-Key`); other headers
    // (`X-Team`) are not secret and scrubbing them would garble answers.
    values.extend(
        headers
            .iter()
            .filter(|(n, _)| {
                let n = n.to_ascii_lowercase();
                [
                    "key", "token", "auth", "secret", "cookie", "session", "password",
                ]
                .iter()
                .any(|w| n.contains(w))
            })
            .map(|(_, v)| v.clone()),
    );
    let mut forms = Vec::new();
    for v in values.into_iter().filter(|v| v.len() >= 4) {
        forms.push(base64::engine::general_purpose::STANDARD.encode(&v));
        let encoded =
            percent_encoding::utf8_percent_encode(&v, super::request::COMPONENT).to_string();
        if encoded != v {
            forms.push(encoded);
        }
        forms.push(v);
    }
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}
