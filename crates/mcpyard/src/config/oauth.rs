//! `[servers.NAME.oauth]`: how the gateway obtains tokens for an HTTP
//! upstream behind OAuth. Raw keys in, checked settings out; the flows
//! themselves are mcpyard-client's.
//!
//! The JSON forms other clients write are read too: Claude Code's and
//! Gemini CLI's `oauth` object (camelCase keys) and Cursor's `auth` object
//! (`CLIENT_ID`, `CLIENT_SECRET`, `scopes`).

use std::fmt;
use std::path::PathBuf;

use mcpyard_client::oauth::{ClientAuthMethod, Grant, OAuthConfig, PrivateKeyJwt, Secret};
use serde::Deserialize;

use super::context::Context;
use super::error::ConfigError;
use super::expand;

/// The loopback port `mcpyard login` receives the redirect on unless told
/// otherwise: fixed, so the redirect URI a provider has on file stays valid.
pub(crate) const DEFAULT_REDIRECT_PORT: u16 = 8976;

/// The path of the redirect URI on the loopback port.
pub(crate) const REDIRECT_PATH: &str = "/callback";

/// Scopes as a list, or as one space-separated string (Claude Code's form).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawScopes {
    List(Vec<String>),
    Text(String),
}

/// `[servers.NAME.oauth]` as written: mcpyard's keys, with the camelCase
/// spellings of Claude Code and Gemini CLI and the upper-case ones of
/// Cursor's `auth` object as aliases. Unknown keys are the formats' call
/// (an error in TOML, a warning in the other tools' JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct RawOAuth {
    /// Gemini CLI: `false` turns OAuth off for the server.
    pub(crate) enabled: Option<bool>,
    /// `authorization_code` (default: a person logs in with `mcpyard login`)
    /// or `client_credentials` (the gateway's own credential).
    #[serde(alias = "grantType", alias = "grant_type")]
    pub(crate) grant: Option<String>,
    #[serde(alias = "clientId", alias = "CLIENT_ID")]
    pub(crate) client_id: Option<String>,
    #[serde(alias = "clientSecret", alias = "CLIENT_SECRET")]
    pub(crate) client_secret: Option<String>,
    /// A PEM file (PKCS#8) holding the key for `private_key_jwt`.
    #[serde(alias = "privateKeyFile")]
    pub(crate) private_key_file: Option<String>,
    /// Its JWS algorithm (default `RS256`).
    #[serde(alias = "privateKeyAlgorithm")]
    pub(crate) private_key_algorithm: Option<String>,
    /// Its key id (`kid`), when the authorization server wants one.
    #[serde(alias = "privateKeyId")]
    pub(crate) private_key_id: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`.
    #[serde(alias = "authMethod", alias = "tokenEndpointAuthMethod")]
    pub(crate) auth_method: Option<String>,
    pub(crate) scopes: Option<RawScopes>,
    /// An HTTPS URL where this client's metadata document is published.
    #[serde(alias = "clientMetadataUrl")]
    pub(crate) client_metadata_url: Option<String>,
    /// The loopback port of the redirect URI; 0 picks a free one at login.
    /// Claude Code calls it `callbackPort`.
    #[serde(alias = "callbackPort", alias = "redirectPort")]
    pub(crate) redirect_port: Option<u16>,
    /// Gemini CLI's `redirectUri`: its port is taken.
    #[serde(alias = "redirectUri")]
    pub(crate) redirect_uri: Option<String>,
    /// The `resource` to ask tokens for, instead of the server URL.
    pub(crate) resource: Option<String>,
    /// `identity_assertion` (enterprise-managed authorization): the
    /// identity provider's token endpoint, this client's id and secret
    /// there, and the person's ID token it exchanges.
    pub(crate) idp_token_endpoint: Option<String>,
    pub(crate) idp_client_id: Option<String>,
    pub(crate) idp_client_secret: Option<String>,
    pub(crate) id_token: Option<String>,
}

/// Keys of the other tools' OAuth objects that mcpyard does without, with
/// why: a warning about one of them says so.
const DISCOVERED_KEYS: [&str; 4] = [
    "authorizationUrl",
    "tokenUrl",
    "authServerMetadataUrl",
    "audiences",
];

/// Why mcpyard does without the OAuth key `name`.
pub(crate) fn ignored_because(name: &str) -> &'static str {
    if DISCOVERED_KEYS.contains(&name) {
        "mcpyard discovers the authorization server from the MCP server's metadata"
    } else {
        "not a key mcpyard reads"
    }
}

/// The redirect port: given, or read from a loopback redirect URI.
fn redirect_port(ctx: &Context<'_>, key: &str, raw: &RawOAuth) -> Result<Option<u16>, ConfigError> {
    match (raw.redirect_port, &raw.redirect_uri) {
        (Some(_), Some(_)) => Err(ctx.error(
            key,
            "both a redirect port and `redirectUri` are given: keep one",
        )),
        (Some(port), None) => Ok(Some(port)),
        (None, Some(uri)) => loopback_port(uri).map(Some).ok_or_else(|| {
            ctx.error(
                &format!("{key}.redirectUri"),
                format!(
                    "expected http://127.0.0.1:PORT{REDIRECT_PATH} (or localhost): mcpyard \
                     receives the redirect on a loopback port"
                ),
            )
        }),
        (None, None) => Ok(None),
    }
}

/// The port of `http://127.0.0.1:PORT/...` or `http://localhost:PORT/...`.
fn loopback_port(uri: &str) -> Option<u16> {
    let u = url::Url::parse(uri).ok()?;
    let loopback = matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    (u.scheme() == "http" && loopback).then(|| u.port())?
}

/// Which grant obtains the upstream's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GrantKind {
    /// A person logs in once with `mcpyard login`; refreshed after that.
    AuthorizationCode,
    /// The gateway's own client credentials.
    ClientCredentials,
    /// An ID token from the company's identity provider, exchanged there
    /// for an assertion the MCP server's authorization server accepts.
    IdentityAssertion(IdentityAssertion),
}

/// The settings of [`GrantKind::IdentityAssertion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdentityAssertion {
    pub(crate) idp_token_endpoint: String,
    pub(crate) idp_client_id: String,
    pub(crate) idp_client_secret: Option<Hidden>,
    pub(crate) id_token: Hidden,
}

impl GrantKind {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            GrantKind::AuthorizationCode => "authorization_code",
            GrantKind::ClientCredentials => "client_credentials",
            GrantKind::IdentityAssertion(_) => "identity_assertion",
        }
    }
}

/// A value that must never be printed: a client secret, a private key.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Hidden(pub(crate) String);

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// The key of `private_key_jwt`, read from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrivateKey {
    pub(crate) file: PathBuf,
    pub(crate) pem: Hidden,
    pub(crate) algorithm: String,
    pub(crate) key_id: Option<String>,
}

/// Checked OAuth settings of one upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuthSettings {
    pub(crate) grant: GrantKind,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<Hidden>,
    pub(crate) private_key: Option<PrivateKey>,
    pub(crate) auth_method: Option<ClientAuthMethod>,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) redirect_port: u16,
    pub(crate) resource: Option<String>,
}

impl OAuthSettings {
    /// The library's configuration; `redirect_uri` is where a login
    /// receives the authorization server's redirect.
    pub(crate) fn client_config(&self, redirect_uri: String) -> OAuthConfig {
        OAuthConfig {
            grant: match &self.grant {
                GrantKind::ClientCredentials => Grant::ClientCredentials,
                GrantKind::AuthorizationCode => Grant::AuthorizationCode { redirect_uri },
                GrantKind::IdentityAssertion(a) => Grant::IdentityAssertion {
                    idp_token_endpoint: a.idp_token_endpoint.clone(),
                    idp_client_id: a.idp_client_id.clone(),
                    idp_client_secret: a.idp_client_secret.as_ref().map(|s| Secret::new(&s.0)),
                    id_token: Secret::new(&a.id_token.0),
                },
            },
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.as_ref().map(|s| Secret::new(&s.0)),
            private_key: self.private_key.as_ref().map(|k| PrivateKeyJwt {
                pem: Secret::new(&k.pem.0),
                algorithm: k.algorithm.clone(),
                key_id: k.key_id.clone(),
            }),
            auth_method: self.auth_method,
            client_metadata_url: self.client_metadata_url.clone(),
            scopes: self.scopes.clone(),
            resource: self.resource.clone(),
            // Authorization servers (oidc-provider, Keycloak) offer DPoP to
            // every client while many MCP servers behind them take Bearer
            // tokens only: a DPoP-bound token would lock the upstream out.
            dpop: false,
            ..OAuthConfig::default()
        }
    }

    /// The redirect URI for a login listening on `port`.
    pub(crate) fn redirect_uri(port: u16) -> String {
        format!("http://127.0.0.1:{port}{REDIRECT_PATH}")
    }

    /// One line for `check`: what is configured, never a secret's value.
    pub(crate) fn describe(&self) -> String {
        let mut parts = vec![format!("oauth {}", self.grant.as_str())];
        if let Some(id) = &self.client_id {
            parts.push(format!("client `{id}`"));
        } else if let Some(url) = &self.client_metadata_url {
            parts.push(format!("client metadata {url}"));
        } else {
            parts.push("client registered dynamically".into());
        }
        if self.client_secret.is_some() {
            parts.push("secret set".into());
        }
        if let Some(key) = &self.private_key {
            parts.push(format!(
                "private key {} ({})",
                key.file.display(),
                key.algorithm
            ));
        }
        if let Some(m) = self.auth_method {
            parts.push(m.as_str().into());
        }
        if let Some(scopes) = &self.scopes {
            parts.push(format!("scopes `{}`", scopes.join(" ")));
        }
        if let GrantKind::IdentityAssertion(a) = &self.grant {
            parts.push(format!("identity provider {}", a.idp_token_endpoint));
        }
        if self.grant == GrantKind::AuthorizationCode {
            parts.push(match self.redirect_port {
                0 => "redirect on a free loopback port".into(),
                p => format!("redirect {}", Self::redirect_uri(p)),
            });
        }
        parts.join(", ")
    }
}

/// Warnings about OAuth secrets written in clear in the file.
pub(crate) fn clear_secrets(file: &str, key: &str, raw: &RawOAuth) -> Vec<String> {
    raw.client_secret
        .iter()
        .filter(|s| !s.is_empty() && !expand::has_reference(s))
        .map(|_| {
            format!(
                "{file}: `{key}.client_secret` is written in clear in the file; use \"${{VAR}}\" and set the variable instead"
            )
        })
        .collect()
}

/// Checks `raw` (found at `key`, the `oauth` table's path).
pub(crate) fn build(
    ctx: &Context<'_>,
    key: &str,
    raw: RawOAuth,
) -> Result<OAuthSettings, ConfigError> {
    let field = |f: &str| format!("{key}.{f}");
    let redirect_port = redirect_port(ctx, key, &raw)?;
    let opt = |f: &str, v: Option<String>| -> Result<Option<String>, ConfigError> {
        v.map(|v| ctx.expand(&field(f), &v).map(|v| v.trim().to_owned()))
            .transpose()
            // An empty value (`${VAR:-}` with VAR unset) is no value.
            .map(|v| v.filter(|v| !v.is_empty()))
    };

    let assertion_keys = [
        ("idp_token_endpoint", raw.idp_token_endpoint),
        ("idp_client_id", raw.idp_client_id),
        ("idp_client_secret", raw.idp_client_secret),
        ("id_token", raw.id_token),
    ];
    let mut assertion = Vec::new();
    for (f, v) in assertion_keys {
        assertion.push((f, opt(f, v)?));
    }
    let grant = match opt("grant", raw.grant)?.as_deref() {
        None | Some("authorization_code") => GrantKind::AuthorizationCode,
        Some("client_credentials") => GrantKind::ClientCredentials,
        Some("identity_assertion") => {
            let mut take = |f: &str| {
                assertion
                    .iter_mut()
                    .find(|(k, _)| *k == f)
                    .and_then(|(_, v)| v.take())
            };
            let mut need = |f: &str| {
                take(f).ok_or_else(|| ctx.error(&field(f), "needed by the identity_assertion grant"))
            };
            let idp_token_endpoint = need("idp_token_endpoint")?;
            let idp_client_id = need("idp_client_id")?;
            let id_token = Hidden(need("id_token")?);
            GrantKind::IdentityAssertion(IdentityAssertion {
                idp_token_endpoint,
                idp_client_id,
                idp_client_secret: take("idp_client_secret").map(Hidden),
                id_token,
            })
        }
        Some(_) => {
            return Err(ctx.error(
                &field("grant"),
                "expected \"authorization_code\" (a person logs in with `mcpyard login`), \"client_credentials\" or \"identity_assertion\"",
            ))
        }
    };
    if let Some((f, _)) = assertion.iter().find(|(_, v)| v.is_some()) {
        return Err(ctx.error(&field(f), "is for the identity_assertion grant"));
    }
    let client_id = opt("client_id", raw.client_id)?;
    let client_secret = opt("client_secret", raw.client_secret)?.map(Hidden);
    let auth_method = match opt("auth_method", raw.auth_method)? {
        None => None,
        Some(m) => Some(ClientAuthMethod::parse(&m).ok_or_else(|| {
            ctx.error(
                &field("auth_method"),
                "expected client_secret_basic, client_secret_post, private_key_jwt or none",
            )
        })?),
    };

    let private_key = match opt("private_key_file", raw.private_key_file)? {
        None => {
            for (f, v) in [
                ("private_key_algorithm", &raw.private_key_algorithm),
                ("private_key_id", &raw.private_key_id),
            ] {
                if v.is_some() {
                    return Err(ctx.error(&field(f), "needs `private_key_file`"));
                }
            }
            None
        }
        Some(path) => {
            let k = field("private_key_file");
            let path = PathBuf::from(path);
            let path = match ctx.base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path,
            };
            let pem = std::fs::read_to_string(&path)
                .map_err(|e| ctx.error(&k, format!("cannot read {}: {e}", path.display())))?;
            if !pem.contains("-----BEGIN") || !pem.contains("PRIVATE KEY-----") {
                return Err(ctx.error(&k, "expected a PEM private key (PKCS#8)"));
            }
            let algorithm = opt("private_key_algorithm", raw.private_key_algorithm)?
                .unwrap_or_else(|| "RS256".into());
            const ALGORITHMS: [&str; 6] = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"];
            if !ALGORITHMS.contains(&algorithm.as_str()) {
                return Err(ctx.error(
                    &field("private_key_algorithm"),
                    format!("expected one of {}", ALGORITHMS.join(", ")),
                ));
            }
            Some(PrivateKey {
                file: path,
                pem: Hidden(pem),
                algorithm,
                key_id: opt("private_key_id", raw.private_key_id)?,
            })
        }
    };

    // What the chosen method needs must be there.
    match auth_method {
        Some(ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost)
            if client_secret.is_none() =>
        {
            return Err(ctx.error(&field("auth_method"), "needs `client_secret`"))
        }
        Some(ClientAuthMethod::PrivateKeyJwt) if private_key.is_none() => {
            return Err(ctx.error(&field("auth_method"), "needs `private_key_file`"))
        }
        Some(ClientAuthMethod::None) if client_secret.is_some() || private_key.is_some() => {
            return Err(ctx.error(
                &field("auth_method"),
                "`none` is for a public client: remove `client_secret` / `private_key_file`, or pick their method",
            ))
        }
        _ => {}
    }
    if client_secret.is_some() && private_key.is_some() {
        return Err(ctx.error(key, "set `client_secret` or `private_key_file`, not both"));
    }
    if (client_secret.is_some() || private_key.is_some()) && client_id.is_none() {
        return Err(ctx.error(
            &field("client_id"),
            "a client secret or key belongs to a pre-registered client: set its `client_id`",
        ));
    }
    if grant == GrantKind::ClientCredentials
        && (client_id.is_none() || (client_secret.is_none() && private_key.is_none()))
    {
        return Err(ctx.error(
            key,
            "the client_credentials grant needs `client_id` and `client_secret` (or `private_key_file` for private_key_jwt)",
        ));
    }

    let scopes = match raw.scopes {
        None => None,
        Some(RawScopes::Text(text)) => {
            let text = ctx.expand(&field("scopes"), &text)?;
            Some(text.split_whitespace().map(str::to_owned).collect())
        }
        Some(RawScopes::List(list)) => Some(
            list.iter()
                .enumerate()
                .map(|(i, s)| ctx.expand(&format!("{key}.scopes[{i}]"), s))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    if let Some(bad) = scopes
        .iter()
        .flatten()
        .position(|s| s.is_empty() || s.contains(char::is_whitespace) || s.contains('"'))
    {
        return Err(ctx.error(
            &format!("{key}.scopes[{bad}]"),
            "a scope is one non-empty word without spaces or quotes",
        ));
    }

    let client_metadata_url = opt("client_metadata_url", raw.client_metadata_url)?;
    if let Some(url) = &client_metadata_url {
        let ok = url::Url::parse(url)
            .map(|u| u.scheme() == "https" && u.path() != "/")
            .unwrap_or(false);
        if !ok {
            return Err(ctx.error(
                &field("client_metadata_url"),
                "expected an https:// URL with a path (the client ID metadata document)",
            ));
        }
    }
    let resource = opt("resource", raw.resource)?;
    if let Some(r) = &resource {
        if url::Url::parse(r).is_err() {
            return Err(ctx.error(&field("resource"), "expected an absolute URI"));
        }
    }
    if grant == GrantKind::ClientCredentials && redirect_port.is_some() {
        return Err(ctx.error(
            &field("redirect_port"),
            "is for the authorization_code grant (`mcpyard login`), not client_credentials",
        ));
    }

    Ok(OAuthSettings {
        grant,
        client_id,
        client_secret,
        private_key,
        auth_method,
        scopes,
        client_metadata_url,
        redirect_port: redirect_port.unwrap_or(DEFAULT_REDIRECT_PORT),
        resource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "SECRET" => Some("s3cret-value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn ctx(base: &Path) -> Context<'_> {
        Context {
            file: "m.toml",
            base_dir: Some(base),
            lookup: &lookup,
        }
    }

    fn ok(raw: RawOAuth) -> OAuthSettings {
        build(&ctx(Path::new("/nonexistent")), "servers.s.oauth", raw).unwrap()
    }

    fn err(raw: RawOAuth) -> String {
        build(&ctx(Path::new("/nonexistent")), "servers.s.oauth", raw)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_are_a_login_on_the_fixed_port_with_discovery() {
        let s = ok(RawOAuth::default());
        assert_eq!(s.grant, GrantKind::AuthorizationCode);
        assert_eq!(s.redirect_port, DEFAULT_REDIRECT_PORT);
        assert_eq!(s.client_id, None);
        assert_eq!(s.scopes, None);
        assert_eq!(
            OAuthSettings::redirect_uri(s.redirect_port),
            "http://127.0.0.1:8976/callback"
        );
    }

    #[test]
    fn client_credentials_with_a_secret_from_the_environment() {
        let s = ok(RawOAuth {
            grant: Some("client_credentials".into()),
            client_id: Some("gw".into()),
            client_secret: Some("${SECRET}".into()),
            auth_method: Some("client_secret_post".into()),
            scopes: Some(RawScopes::Text("read  write".into())),
            ..RawOAuth::default()
        });
        assert_eq!(s.grant, GrantKind::ClientCredentials);
        assert_eq!(s.client_secret, Some(Hidden("s3cret-value".into())));
        assert_eq!(s.auth_method, Some(ClientAuthMethod::ClientSecretPost));
        assert_eq!(s.scopes, Some(vec!["read".into(), "write".into()]));
        let shown = format!("{s:?} {}", s.describe());
        assert!(!shown.contains("s3cret-value"), "{shown}");
        assert!(shown.contains("secret set"), "{shown}");
    }

    #[test]
    fn a_private_key_is_read_from_its_file_relative_to_the_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("key.pem"),
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let s = build(
            &ctx(dir.path()),
            "servers.s.oauth",
            RawOAuth {
                grant: Some("client_credentials".into()),
                client_id: Some("gw".into()),
                private_key_file: Some("key.pem".into()),
                private_key_algorithm: Some("ES256".into()),
                ..RawOAuth::default()
            },
        )
        .unwrap();
        let key = s.private_key.as_ref().unwrap();
        assert_eq!(key.file, dir.path().join("key.pem"));
        assert_eq!(key.algorithm, "ES256");
        assert!(!format!("{s:?}").contains("MIIB"));
    }

    #[test]
    fn each_error_names_its_key() {
        let cases: Vec<(RawOAuth, &str, &str)> = vec![
            (
                RawOAuth {
                    grant: Some("password".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.grant`",
                "client_credentials",
            ),
            (
                RawOAuth {
                    grant: Some("client_credentials".into()),
                    client_id: Some("gw".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth`",
                "needs `client_id` and `client_secret`",
            ),
            (
                RawOAuth {
                    client_secret: Some("${SECRET}".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.client_id`",
                "pre-registered",
            ),
            (
                RawOAuth {
                    client_id: Some("gw".into()),
                    auth_method: Some("client_secret_jwt".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.auth_method`",
                "expected client_secret_basic",
            ),
            (
                RawOAuth {
                    client_id: Some("gw".into()),
                    auth_method: Some("client_secret_basic".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.auth_method`",
                "needs `client_secret`",
            ),
            (
                RawOAuth {
                    client_id: Some("gw".into()),
                    private_key_file: Some("missing.pem".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.private_key_file`",
                "cannot read",
            ),
            (
                RawOAuth {
                    private_key_id: Some("k1".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.private_key_id`",
                "needs `private_key_file`",
            ),
            (
                RawOAuth {
                    scopes: Some(RawScopes::List(vec!["a".into(), "b c".into()])),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.scopes[1]`",
                "one non-empty word",
            ),
            (
                RawOAuth {
                    client_metadata_url: Some("http://example.test/client.json".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.client_metadata_url`",
                "https://",
            ),
            (
                RawOAuth {
                    client_secret: Some("${NOPE}".into()),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.client_secret`",
                "`NOPE` is not set",
            ),
            (
                RawOAuth {
                    grant: Some("client_credentials".into()),
                    client_id: Some("gw".into()),
                    client_secret: Some("x".into()),
                    redirect_port: Some(9000),
                    ..RawOAuth::default()
                },
                "`servers.s.oauth.redirect_port`",
                "authorization_code",
            ),
        ];
        for (raw, key, msg) in cases {
            let e = err(raw);
            assert!(e.contains(key), "expected key {key} in: {e}");
            assert!(e.contains(msg), "expected {msg:?} in: {e}");
            assert!(!e.contains("s3cret-value"), "{e}");
        }
    }

    #[test]
    fn an_empty_variable_is_no_value() {
        let s = ok(RawOAuth {
            client_id: Some("${EMPTY:-}".into()),
            ..RawOAuth::default()
        });
        assert_eq!(s.client_id, None);
    }

    #[test]
    fn clear_secrets_are_warned_about() {
        let raw = RawOAuth {
            client_secret: Some("literal".into()),
            ..RawOAuth::default()
        };
        let w = clear_secrets("m.toml", "servers.s.oauth", &raw);
        assert_eq!(w.len(), 1);
        assert!(!w[0].contains("literal"), "{w:?}");
        let raw = RawOAuth {
            client_secret: Some("${SECRET}".into()),
            ..RawOAuth::default()
        };
        assert!(clear_secrets("m.toml", "servers.s.oauth", &raw).is_empty());
    }

    #[test]
    fn redirect_uris_give_their_loopback_port() {
        assert_eq!(loopback_port("http://127.0.0.1:7777/callback"), Some(7777));
        assert_eq!(loopback_port("http://localhost:7777/cb"), Some(7777));
        assert_eq!(loopback_port("http://localhost/cb"), None);
        assert_eq!(loopback_port("https://example.test:7777/cb"), None);
    }
}
