//! Credentials for one call. Where the operation (or the document) lists
//! `security`, the first alternative whose every scheme has a configured
//! value wins; where the document says nothing, every credential the
//! operator configured for the API is sent (a document that declares a
//! scheme without requiring it, as LocalAI's does, still means its API
//! checks it). `plan` decides both for calls and for `mcpyard check`.

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
        f.write_str(&self.place())
    }
}

impl Credential {
    /// Where it goes, for `check` and debugging: never the value.
    fn place(&self) -> String {
        match self {
            Self::Authorization(v) => {
                let scheme = v.split(' ').next().unwrap_or_default();
                format!("header Authorization: {scheme}")
            }
            Self::Header(n, _) => format!("header {n}"),
            Self::Query(n, _) => format!("query {n}"),
            Self::Cookie(n, _) => format!("cookie {n}"),
        }
    }

    fn is_authorization(&self) -> bool {
        match self {
            Self::Authorization(_) => true,
            Self::Header(n, _) => n.eq_ignore_ascii_case("authorization"),
            Self::Query(..) | Self::Cookie(..) => false,
        }
    }
}

/// One credential of a call: the scheme it fills, the `auth` key its value
/// comes from, and where it goes.
#[derive(Debug, Clone)]
pub(crate) struct Filled {
    scheme: String,
    from: String,
    pub(crate) credential: Credential,
}

impl Filled {
    /// `BearerAuth (header Authorization: Bearer, from auth.bearer)`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} ({}, from auth.{})",
            self.scheme,
            self.credential.place(),
            self.from
        )
    }
}

/// What one operation's call carries.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    /// The operation's `security` names these (maybe none, `security: []`).
    Required(Vec<Filled>),
    /// The document is silent: every configured credential.
    Configured(Vec<Filled>),
    /// No alternative can be filled: the schemes of the first one that are
    /// not configured.
    Missing(Vec<String>),
}

/// The credentials `op` gets from `auth`.
pub(crate) fn plan(op: &Operation, doc: &ApiDocument, auth: &ApiAuth) -> Plan {
    let Some(alternatives) = &op.security else {
        return Plan::Configured(configured(doc, auth));
    };
    if alternatives.is_empty() {
        return Plan::Required(Vec::new());
    }
    'alternatives: for alternative in alternatives {
        let mut found = Vec::new();
        for (scheme, _scopes) in &alternative.schemes {
            match fill(scheme, doc.security_schemes.get(scheme), auth) {
                Some(filled) => found.push(filled),
                None => continue 'alternatives,
            }
        }
        return Plan::Required(found);
    }
    // Name what the first alternative needs: that is what the document
    // lists first, so usually what the API expects.
    Plan::Missing(
        alternatives[0]
            .schemes
            .iter()
            .filter(|(s, _)| fill(s, doc.security_schemes.get(s), auth).is_none())
            .map(|(s, _)| s.clone())
            .collect(),
    )
}

/// The credentials the operation needs, or why it cannot be called.
pub(crate) fn credentials(
    api: &str,
    op: &Operation,
    doc: &ApiDocument,
    auth: &ApiAuth,
) -> Result<Vec<Credential>, CallError> {
    let missing = match plan(op, doc, auth) {
        Plan::Required(filled) | Plan::Configured(filled) => {
            return Ok(filled.into_iter().map(|f| f.credential).collect())
        }
        Plan::Missing(missing) => missing,
    };
    let described: Vec<String> = missing
        .iter()
        .map(|s| {
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
                Some(SecurityScheme::ApiKey { location, name })
                    if *location == Location::Header
                        && name.eq_ignore_ascii_case("authorization") =>
                {
                    either("bearer")
                }
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
        described.join(", "),
        missing.first().map_or("bearer", String::as_str)
    )))
}

/// Every configured credential, for an operation the document says nothing
/// about: values given by scheme name first, then `bearer` / `basic` (in
/// that order) for the document's schemes of their kind, then (when no
/// scheme took them) as a plain `Authorization` header. One `Authorization`
/// at most.
fn configured(doc: &ApiDocument, auth: &ApiAuth) -> Vec<Filled> {
    let mut filled: Vec<Filled> = Vec::new();
    let mut add = |candidate: Filled| {
        let taken = |f: &Filled| {
            f.credential.is_authorization() && candidate.credential.is_authorization()
                || f.credential.place() == candidate.credential.place()
        };
        if !filled.iter().any(taken) {
            filled.push(candidate);
        }
    };
    let fills = |own: bool| {
        doc.security_schemes
            .iter()
            .filter(move |(name, _)| auth.schemes.contains_key(*name) == own)
            .filter_map(|(name, scheme)| fill(name, Some(scheme), auth))
    };
    let mut generic: Vec<Filled> = fills(false).collect();
    // A bearer token before a login, where both could take Authorization.
    generic.sort_by_key(|f| f.from != "bearer");
    for f in fills(true).chain(generic) {
        add(f);
    }
    if let Some(token) = &auth.bearer {
        add(Filled {
            scheme: "bearer token".into(),
            from: "bearer".into(),
            credential: Credential::Authorization(format!("Bearer {token}")),
        });
    }
    if let Some(login) = &auth.basic {
        add(Filled {
            scheme: "login".into(),
            from: "basic".into(),
            credential: basic(login),
        });
    }
    filled
}

/// The `auth` keys that name no scheme of the document: nothing can say
/// where their values go, so they are never sent.
pub(crate) fn unplaced(doc: &ApiDocument, auth: &ApiAuth) -> Vec<String> {
    auth.schemes
        .keys()
        .filter(|name| !doc.security_schemes.contains_key(*name))
        .cloned()
        .collect()
}

fn basic(login: &str) -> Credential {
    Credential::Authorization(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(login)
    ))
}

/// The value for scheme `name`: its own `auth` key, else the generic one
/// of its kind.
fn fill(name: &str, scheme: Option<&SecurityScheme>, auth: &ApiAuth) -> Option<Filled> {
    let own = auth.schemes.get(name).cloned();
    let from_own = |credential: Credential| Filled {
        scheme: name.to_owned(),
        from: name.to_owned(),
        credential,
    };
    let generic = |from: &str, credential: Credential| Filled {
        scheme: name.to_owned(),
        from: from.to_owned(),
        credential,
    };
    let bearer = |t: &str| Credential::Authorization(format!("Bearer {t}"));
    match scheme? {
        SecurityScheme::Bearer | SecurityScheme::OAuth2 => match own {
            Some(t) => Some(from_own(bearer(&t))),
            None => auth.bearer.as_deref().map(|t| generic("bearer", bearer(t))),
        },
        SecurityScheme::Basic => match own {
            Some(up) => Some(from_own(basic(&up))),
            None => auth.basic.as_deref().map(|up| generic("basic", basic(up))),
        },
        SecurityScheme::ApiKey {
            location,
            name: key,
        } => match (own, location) {
            (Some(v), Location::Query) => Some(from_own(Credential::Query(key.clone(), v))),
            (Some(v), Location::Cookie) => Some(from_own(Credential::Cookie(key.clone(), v))),
            (Some(v), Location::Header | Location::Path) => {
                Some(from_own(Credential::Header(key.clone(), v)))
            }
            // Swagger 2.0's way to say bearer: an API key on `Authorization`.
            (None, Location::Header) if key.eq_ignore_ascii_case("authorization") => {
                auth.bearer.as_deref().map(|t| generic("bearer", bearer(t)))
            }
            (None, _) => None,
        },
        SecurityScheme::Unsupported(_) => None,
    }
}

/// What `mcpyard check` says of an API's credentials: one line per group of
/// operations that carry the same ones, then the `auth` keys never sent.
/// Names schemes, `auth` keys and places; never a value.
pub fn credential_report(doc: &ApiDocument, auth: &ApiAuth) -> Vec<String> {
    // (what they get, why) -> how many operations, in first-seen order.
    let mut groups: Vec<(String, usize)> = Vec::new();
    for op in &doc.operations {
        let line = match plan(op, doc, auth) {
            Plan::Required(filled) if filled.is_empty() => {
                "need none (their `security` is empty)".to_owned()
            }
            Plan::Required(filled) => format!("get {}", list(&filled)),
            Plan::Configured(filled) if filled.is_empty() => {
                let declared: Vec<&str> = doc.security_schemes.keys().map(String::as_str).collect();
                if declared.is_empty() {
                    // An open API with nothing configured: nothing to say.
                    continue;
                } else {
                    format!(
                        "get none (the document lists no `security`; it declares {}: set `auth` if the API checks it)",
                        declared.join(", ")
                    )
                }
            }
            Plan::Configured(filled) => format!(
                "get {} (the document lists no `security` for them: what `auth` configures is sent)",
                list(&filled)
            ),
            Plan::Missing(missing) => format!(
                "cannot be called: they need {}, which `auth` does not configure",
                missing.join(" + ")
            ),
        };
        match groups.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => groups.push((line, 1)),
        }
    }
    let mut lines: Vec<String> = groups
        .into_iter()
        .map(|(line, n)| format!("{n} operation(s) {line}"))
        .collect();
    for name in unplaced(doc, auth) {
        lines.push(format!(
            "`auth.{name}` names no security scheme of the document, so nothing says where it goes: it is never sent"
        ));
    }
    lines
}

fn list(filled: &[Filled]) -> String {
    filled
        .iter()
        .map(Filled::describe)
        .collect::<Vec<_>>()
        .join(" + ")
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
            percent_encoding::utf8_percent_encode(&v, super::encode::COMPONENT).to_string();
        if encoded != v {
            forms.push(encoded);
        }
        forms.push(v);
    }
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}
