//! `[auth]`: who may use the HTTP front doors (named API keys, OAuth access
//! tokens) and who the stdio client is; `[http]`: which HTTP front doors are
//! on. Keys come from the environment or as SHA-256 digests, never as text
//! in the file unless the user accepts a warning.
//!
//! ```toml
//! [[auth.keys]]
//! name = "ci"
//! groups = ["readers"]
//! key_env = "MCPYARD_CI_KEY"        # or key_sha256 = "<printf %s KEY | sha256sum>"
//!
//! [auth.oauth]
//! issuer = "https://login.example"
//! required_scopes = ["mcp"]
//!
//! [http]
//! legacy_sse = false
//! sessions = "optional"             # serve requests without Mcp-Session-Id
//! ```

use std::time::Duration;

use mcpyard_gateway::{Identity, IdentityKind};
use mcpyard_server::{
    ApiKeySpec, HttpOptions, JwtAlgorithm, KeySecret, OAuthOptions, SessionMode, DEFAULT_KEY_NAME,
};
use serde::Deserialize;

use super::context::Context;
use super::expand;
use super::server;
use super::values::RawDuration;
use super::ConfigError;

/// `[auth]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    #[serde(default)]
    keys: Vec<RawKey>,
    oauth: Option<RawOAuth>,
    stdio: Option<RawStdio>,
}

/// `[[auth.keys]]`, as written: exactly one of `key_env`, `key_sha256`, `key`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    name: String,
    #[serde(default)]
    groups: Vec<String>,
    key_env: Option<String>,
    key_sha256: Option<String>,
    key: Option<String>,
}

/// `[auth.oauth]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    issuer: String,
    jwks_url: Option<String>,
    resource: Option<String>,
    audience: Option<String>,
    algorithms: Option<Vec<String>>,
    groups_claim: Option<String>,
    #[serde(default)]
    required_scopes: Vec<String>,
    leeway: Option<RawDuration>,
    jwks_min_refresh: Option<RawDuration>,
    jwks_max_age: Option<RawDuration>,
}

/// `[auth.stdio]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStdio {
    name: Option<String>,
    groups: Option<Vec<String>>,
}

/// `[http]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHttp {
    streamable: Option<bool>,
    legacy_sse: Option<bool>,
    /// `"required"` (the default) or `"optional"`.
    sessions: Option<String>,
}

/// The validated `[auth]`.
#[derive(Debug, Clone)]
pub(crate) struct Auth {
    pub(crate) keys: Vec<ApiKeySpec>,
    pub(crate) oauth: Option<OAuthOptions>,
    /// Who the stdio client is.
    pub(crate) stdio: Identity,
}

/// `[http]`: which HTTP front doors are on (a door that is off answers
/// 403), and whether Streamable HTTP clients must keep a session.
pub(crate) fn front_doors(
    ctx: &Context<'_>,
    raw: Option<&RawHttp>,
    http: &mut HttpOptions,
) -> Result<(), ConfigError> {
    let empty = RawHttp::default();
    let raw = raw.unwrap_or(&empty);
    if let Some(text) = raw.sessions.as_deref() {
        http.sessions = match ctx.expand("http.sessions", text)?.as_str() {
            "required" => SessionMode::Required,
            "optional" => SessionMode::Optional,
            _ => return Err(ctx.error("http.sessions", r#"expected "required" or "optional""#)),
        };
    }
    http.streamable = raw.streamable.unwrap_or(true);
    http.legacy_sse = raw.legacy_sse.unwrap_or(true);
    Ok(())
}

pub(crate) fn build(
    ctx: &Context<'_>,
    raw: Option<&RawAuth>,
    warnings: &mut Vec<String>,
) -> Result<Auth, ConfigError> {
    let empty = RawAuth::default();
    let raw = raw.unwrap_or(&empty);
    let mut keys: Vec<ApiKeySpec> = Vec::new();
    for (i, k) in raw.keys.iter().enumerate() {
        let at = format!("auth.keys[{i}]");
        let spec = key(ctx, &at, k, warnings)?;
        if keys.iter().any(|other| other.name == spec.name) {
            return Err(ctx.error(
                &format!("{at}.name"),
                format!("another key is already named `{}`", spec.name),
            ));
        }
        keys.push(spec);
    }
    let oauth = raw.oauth.as_ref().map(|o| oauth(ctx, o)).transpose()?;
    let stdio = match &raw.stdio {
        None => mcpyard_server::local_user(),
        Some(s) => {
            let local = mcpyard_server::local_user();
            let name = match &s.name {
                Some(n) => ctx.expand("auth.stdio.name", n)?,
                None => local.name,
            };
            let groups = s.groups.clone().unwrap_or(local.groups);
            Identity::named(IdentityKind::Local, name, groups)
        }
    };
    Ok(Auth { keys, oauth, stdio })
}

fn key(
    ctx: &Context<'_>,
    at: &str,
    raw: &RawKey,
    warnings: &mut Vec<String>,
) -> Result<ApiKeySpec, ConfigError> {
    let name = raw.name.trim();
    if name.is_empty() {
        return Err(ctx.error(&format!("{at}.name"), "must not be empty"));
    }
    if name == DEFAULT_KEY_NAME {
        return Err(ctx.error(
            &format!("{at}.name"),
            "`default` is the name of the key set by `api_key` or MCPYARD_API_KEY; choose another",
        ));
    }
    let secret = match (&raw.key_env, &raw.key_sha256, &raw.key) {
        (Some(var), None, None) => {
            let value = (ctx.lookup)(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                ctx.error(
                    &format!("{at}.key_env"),
                    format!("the variable `{var}` is not set"),
                )
            })?;
            KeySecret::Clear(value)
        }
        (None, Some(hex), None) => KeySecret::Sha256(parse_sha256(hex).ok_or_else(|| {
            ctx.error(
                &format!("{at}.key_sha256"),
                "expected 64 hexadecimal digits, as `printf %s KEY | sha256sum` prints them",
            )
        })?),
        (None, None, Some(text)) => {
            if !expand::has_reference(text) {
                warnings.push(format!(
                    "{}: `{at}.key` is written in clear in the file; use `key_env` or `key_sha256` instead",
                    ctx.file
                ));
            }
            let value = ctx.expand(&format!("{at}.key"), text)?;
            if value.is_empty() {
                return Err(ctx.error(&format!("{at}.key"), "must not be empty"));
            }
            KeySecret::Clear(value)
        }
        _ => return Err(ctx.error(at, "give exactly one of `key_env`, `key_sha256` or `key`")),
    };
    Ok(ApiKeySpec {
        name: name.to_owned(),
        groups: raw.groups.clone(),
        secret,
    })
}

fn oauth(ctx: &Context<'_>, raw: &RawOAuth) -> Result<OAuthOptions, ConfigError> {
    let url = |key: &str, value: &str| -> Result<String, ConfigError> {
        let value = ctx.expand(&format!("auth.oauth.{key}"), value)?;
        if value.starts_with("https://") || value.starts_with("http://") {
            Ok(value)
        } else {
            Err(ctx.error(&format!("auth.oauth.{key}"), "expected an http(s) URL"))
        }
    };
    let mut opts = OAuthOptions::new(url("issuer", &raw.issuer)?);
    opts.jwks_url = raw
        .jwks_url
        .as_deref()
        .map(|u| url("jwks_url", u))
        .transpose()?;
    opts.resource = raw
        .resource
        .as_deref()
        .map(|u| url("resource", u))
        .transpose()?;
    // The metadata document is served under the resource's path: keep it
    // to characters a route can hold as they are.
    if let Some(resource) = &opts.resource {
        let path_ok = url::Url::parse(resource).is_ok_and(|u| {
            u.query().is_none()
                && u.fragment().is_none()
                && u.path()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
        });
        if !path_ok {
            return Err(ctx.error(
                "auth.oauth.resource",
                "expected a URL without query or fragment whose path holds only letters, digits and / - _ .",
            ));
        }
    }
    opts.audience = raw
        .audience
        .as_deref()
        .map(|a| ctx.expand("auth.oauth.audience", a))
        .transpose()?;
    if let Some(names) = &raw.algorithms {
        let mut algorithms = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let key = format!("auth.oauth.algorithms[{i}]");
            let alg = name.parse::<JwtAlgorithm>().map_err(|_| {
                ctx.error(&key, "not a JWS algorithm (RS256, ES256, PS256, EdDSA...)")
            })?;
            if matches!(
                alg,
                JwtAlgorithm::HS256 | JwtAlgorithm::HS384 | JwtAlgorithm::HS512
            ) {
                return Err(ctx.error(
                    &key,
                    "symmetric algorithms are not accepted: the issuer's public keys are used",
                ));
            }
            algorithms.push(alg);
        }
        if algorithms.is_empty() {
            return Err(ctx.error("auth.oauth.algorithms", "must name at least one algorithm"));
        }
        opts.algorithms = algorithms;
    }
    if let Some(claim) = &raw.groups_claim {
        opts.groups_claim = claim.clone();
    }
    opts.required_scopes = raw.required_scopes.clone();
    let time = |key: &str, raw: &Option<RawDuration>, default: Duration| match raw {
        None => Ok(default),
        Some(RawDuration::Seconds(0)) => Ok(Duration::ZERO),
        Some(t) => server::duration(ctx, &format!("auth.oauth.{key}"), t),
    };
    opts.leeway = time("leeway", &raw.leeway, opts.leeway)?;
    opts.jwks_min_refresh = time(
        "jwks_min_refresh",
        &raw.jwks_min_refresh,
        opts.jwks_min_refresh,
    )?;
    opts.jwks_max_age = time("jwks_max_age", &raw.jwks_max_age, opts.jwks_max_age)?;
    Ok(opts)
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::toml;
    use super::*;

    #[test]
    fn keys_come_from_variables_digests_or_text_with_a_warning() {
        let s = toml(
            r#"
[[auth.keys]]
name = "ci"
groups = ["readers"]
key_env = "TOKEN"
[[auth.keys]]
name = "ops"
key_sha256 = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
[[auth.keys]]
name = "dev"
key = "in-clear"
"#,
        )
        .expect("valid");
        let keys = &s.http.auth.keys;
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[0].name, "ci");
        assert_eq!(keys[0].groups, ["readers"]);
        assert!(matches!(&keys[0].secret, KeySecret::Clear(k) if k == "tok-123"));
        assert!(matches!(keys[1].secret, KeySecret::Sha256(d) if d[0] == 0x2b && d[31] == 0x5b));
        assert!(s.warnings.iter().any(|w| w.contains("auth.keys[2].key")));
        assert!(!format!("{:?}", s.http.auth).contains("tok-123"));
    }

    #[test]
    fn bad_keys_are_named_in_the_error() {
        for (text, needle) in [
            ("[[auth.keys]]\nname = \"a\"\nkey_env = \"UNSET\"", "auth.keys[0].key_env"),
            ("[[auth.keys]]\nname = \"a\"\nkey_sha256 = \"abc\"", "auth.keys[0].key_sha256"),
            ("[[auth.keys]]\nname = \"a\"", "auth.keys[0]"),
            ("[[auth.keys]]\nname = \"default\"\nkey_env = \"TOKEN\"", "auth.keys[0].name"),
            (
                "[[auth.keys]]\nname = \"a\"\nkey_env = \"TOKEN\"\n[[auth.keys]]\nname = \"a\"\nkey_env = \"TOKEN\"",
                "auth.keys[1].name",
            ),
            ("[[auth.keys]]\nname = \"a\"\nkey_env = \"TOKEN\"\nkye = 1", "kye"),
        ] {
            let e = toml(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
            assert!(!e.contains("tok-123"), "{e}");
        }
    }

    #[test]
    fn oauth_settings_are_read_with_safe_defaults() {
        let s = toml(
            "[auth.oauth]\nissuer = \"http://127.0.0.1:9/\"\nrequired_scopes = [\"mcp\"]\nalgorithms = [\"ES256\"]\nleeway = \"5s\"\n",
        )
        .expect("valid");
        let o = s.http.auth.oauth.expect("oauth");
        assert_eq!(o.issuer, "http://127.0.0.1:9/");
        assert_eq!(o.algorithms, [JwtAlgorithm::ES256]);
        assert_eq!(o.required_scopes, ["mcp"]);
        assert_eq!(o.leeway, Duration::from_secs(5));
        assert_eq!(o.groups_claim, "groups");
        for (text, needle) in [
            ("[auth.oauth]\nissuer = \"x\"", "auth.oauth.issuer"),
            (
                "[auth.oauth]\nissuer = \"http://i\"\nresource = \"http://gw/mcp/{id}\"",
                "auth.oauth.resource",
            ),
            (
                "[auth.oauth]\nissuer = \"http://i\"\nalgorithms = [\"HS256\"]",
                "symmetric",
            ),
            (
                "[auth.oauth]\nissuer = \"http://i\"\nalgorithms = [\"none\"]",
                "algorithms[0]",
            ),
        ] {
            let e = toml(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn front_doors_are_on_unless_switched_off_and_stdio_is_the_local_user() {
        let s = toml("").expect("valid");
        assert!(s.http.streamable && s.http.legacy_sse);
        assert_eq!(s.http.sessions, SessionMode::Required);
        assert_eq!(s.stdio.identity.kind, IdentityKind::Local);
        assert!(s.stdio.identity.in_group("anything"));
        let s =
            toml("[http]\nlegacy_sse = false\n[auth.stdio]\nname = \"desk\"\ngroups = [\"dev\"]\n")
                .expect("valid");
        assert!(s.http.streamable && !s.http.legacy_sse);
        assert_eq!(s.stdio.identity.name, "desk");
        assert!(!s.stdio.identity.in_group("ops"));
    }

    #[test]
    fn sessions_are_required_unless_made_optional() {
        let s = toml(
            "[http]
sessions = \"optional\"\n",
        )
        .expect("valid");
        assert_eq!(s.http.sessions, SessionMode::Optional);
        let s = toml(
            "[http]
sessions = \"required\"\n",
        )
        .expect("valid");
        assert_eq!(s.http.sessions, SessionMode::Required);
        let e = toml(
            "[http]
sessions = \"sometimes\"\n",
        )
        .expect_err("not a mode")
        .to_string();
        assert!(e.contains("http.sessions") && e.contains("optional"), "{e}");
    }
}
