//! Who is calling: API keys and OAuth 2.1 access tokens turned into an
//! [`Identity`] for every HTTP request, and the answers a request without
//! valid credentials gets (401 / 403 with `WWW-Authenticate`).
//!
//! - [`keys`]: named API keys with groups, compared as SHA-256 digests in
//!   constant time;
//! - [`jwt`]: JWT access tokens checked against the issuer's JWKS (mcpyard
//!   as an OAuth resource server);
//! - [`metadata`]: the RFC 9728 protected-resource metadata document.

mod jwt;
mod keys;
mod metadata;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcpyard_gateway::Identity;

pub(crate) use jwt::JwtVerifier;
pub(crate) use keys::ApiKeys;
pub use keys::{ApiKeySpec, KeySecret};
pub(crate) use metadata::{metadata_document, metadata_paths, metadata_url};

use crate::reply::rpc_error_response;

/// How HTTP clients authenticate. With neither keys nor OAuth, every
/// client is anonymous.
#[derive(Debug, Clone, Default)]
pub struct AuthOptions {
    /// API keys, each a named identity with groups.
    pub keys: Vec<ApiKeySpec>,
    /// OAuth 2.1 access tokens (JWTs) from one issuer.
    pub oauth: Option<OAuthOptions>,
    /// Where the serving front door keeps `keys`: a clone kept by the
    /// caller replaces them while it serves (a configuration reload).
    pub live_keys: LiveKeys,
}

/// The API keys a serving front door checks, replaceable while it serves.
/// Clones share them.
#[derive(Debug, Clone, Default)]
pub struct LiveKeys(mcpyard_gateway::Live<Arc<ApiKeys>>);

impl LiveKeys {
    /// Puts `specs` in place of the keys; whether that changed any key,
    /// name or group. A request checked from then on sees only the new
    /// keys: a key taken out is refused at once.
    pub fn replace(&self, specs: &[ApiKeySpec]) -> bool {
        let fresh = Arc::new(ApiKeys::new(specs));
        let old = self.0.set(fresh.clone());
        *old != *fresh
    }

    fn current(&self) -> Arc<ApiKeys> {
        self.0.get()
    }
}

/// The name of the one-key shorthand's key (see [`AuthOptions::single_key`]).
pub const DEFAULT_KEY_NAME: &str = "default";

impl AuthOptions {
    /// One key, named [`DEFAULT_KEY_NAME`], in every group: the
    /// `MCPYARD_API_KEY` shorthand.
    pub fn single_key(key: impl Into<String>) -> Self {
        Self {
            keys: vec![ApiKeySpec {
                name: DEFAULT_KEY_NAME.into(),
                groups: vec![mcpyard_gateway::EVERY_GROUP.into()],
                secret: KeySecret::Clear(key.into()),
            }],
            oauth: None,
            live_keys: LiveKeys::default(),
        }
    }

    /// Whether clients must present credentials.
    pub fn is_required(&self) -> bool {
        !self.keys.is_empty() || self.oauth.is_some()
    }
}

/// mcpyard as an OAuth 2.1 resource server.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier; tokens must carry it
    /// in `iss`, and the metadata document names it.
    pub issuer: String,
    /// Where the issuer's keys are; `None`: read `jwks_uri` from the
    /// issuer's metadata (`/.well-known/oauth-authorization-server`, then
    /// `/.well-known/openid-configuration`).
    pub jwks_url: Option<String>,
    /// This server's resource URL (RFC 8707 / 9728); `None`: the `/mcp`
    /// URL of the listen address.
    pub resource: Option<String>,
    /// The `aud` tokens must name; `None`: the resource URL.
    pub audience: Option<String>,
    /// Signature algorithms accepted (asymmetric only).
    pub algorithms: Vec<jsonwebtoken::Algorithm>,
    /// The claim that lists the subject's groups.
    pub groups_claim: String,
    /// Scopes every request needs; a token without them gets 403.
    pub required_scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// Least time between two fetches of the JWKS, so tokens with made-up
    /// key ids cannot make the gateway hammer the issuer.
    pub jwks_min_refresh: Duration,
    /// The JWKS is fetched again when older than this.
    pub jwks_max_age: Duration,
}

impl OAuthOptions {
    /// Settings with the defaults for everything but the issuer.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            jwks_url: None,
            resource: None,
            audience: None,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            groups_claim: "groups".into(),
            required_scopes: Vec::new(),
            leeway: Duration::from_secs(30),
            jwks_min_refresh: Duration::from_secs(10),
            jwks_max_age: Duration::from_secs(3600),
        }
    }
}

/// What is accepted unless configured: the asymmetric algorithms issuers use.
pub const DEFAULT_ALGORITHMS: [jsonwebtoken::Algorithm; 4] = [
    jsonwebtoken::Algorithm::RS256,
    jsonwebtoken::Algorithm::PS256,
    jsonwebtoken::Algorithm::ES256,
    jsonwebtoken::Algorithm::EdDSA,
];

/// The credentials checks of the HTTP front doors, built once.
#[derive(Debug)]
pub(crate) struct Authenticator {
    keys: LiveKeys,
    /// Whether credentials are asked for at all: fixed when serving starts,
    /// so replacing the keys never opens the doors nor closes them.
    required: bool,
    jwt: Option<JwtVerifier>,
    /// Where the metadata document is, for `WWW-Authenticate`.
    metadata_url: Option<String>,
}

/// Why a request's credentials were not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A credential that is no key and no valid token; the reason is for
    /// the client (it never repeats the credential).
    Invalid(String),
    /// A valid token without the scopes the endpoint needs.
    InsufficientScope,
}

impl Authenticator {
    /// `resource` is this server's `/mcp` URL, the default audience.
    pub(crate) fn new(opts: &AuthOptions, default_resource: &str) -> Self {
        let jwt = opts
            .oauth
            .as_ref()
            .map(|o| JwtVerifier::new(o.clone(), default_resource));
        let metadata_url = jwt.as_ref().map(|j| metadata_url(j.resource()));
        opts.live_keys.replace(&opts.keys);
        Self {
            keys: opts.live_keys.clone(),
            required: opts.is_required(),
            jwt,
            metadata_url,
        }
    }

    pub(crate) fn is_required(&self) -> bool {
        self.required
    }

    /// Whether `identity`, proved earlier, still holds: an API key's
    /// identity only while the key is still one of the keys (a reload may
    /// take it out).
    pub(crate) fn still_admits(&self, identity: &Identity) -> bool {
        identity.kind != mcpyard_gateway::IdentityKind::ApiKey || self.keys.current().has(identity)
    }

    pub(crate) fn jwt(&self) -> Option<&JwtVerifier> {
        self.jwt.as_ref()
    }

    /// The identity the request's bearer credential stands for.
    pub(crate) async fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, AuthFailure> {
        if !self.is_required() {
            return Ok(Identity::anonymous());
        }
        let token = bearer(headers).ok_or(AuthFailure::Missing)?;
        if let Some(identity) = self.keys.current().find(token) {
            return Ok(identity);
        }
        match &self.jwt {
            Some(jwt) => jwt.verify(token).await,
            None => Err(AuthFailure::Invalid("unknown API key".into())),
        }
    }

    /// The 401 or 403 for `failure`.
    pub(crate) fn refuse(&self, failure: &AuthFailure) -> Response {
        let (status, message, challenge) = match (failure, &self.metadata_url, &self.jwt) {
            (AuthFailure::Missing, Some(url), Some(jwt)) => (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <access token>".to_owned(),
                format!(
                    "Bearer resource_metadata=\"{url}\"{}",
                    scope_param(jwt.required_scopes())
                ),
            ),
            (AuthFailure::Invalid(why), Some(url), Some(_)) => (
                StatusCode::UNAUTHORIZED,
                format!("Unauthorized: {why}"),
                format!(
                    "Bearer resource_metadata=\"{url}\", error=\"invalid_token\", error_description=\"{}\"",
                    quotable(why)
                ),
            ),
            (AuthFailure::InsufficientScope, Some(url), Some(jwt)) => (
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: the token lacks a scope this endpoint needs ({})",
                    jwt.required_scopes().join(" ")
                ),
                format!(
                    "Bearer resource_metadata=\"{url}\", error=\"insufficient_scope\"{}",
                    scope_param(jwt.required_scopes())
                ),
            ),
            // API keys only: today's plain challenge.
            _ => (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send Authorization: Bearer <api key>".to_owned(),
                "Bearer realm=\"mcpyard\"".to_owned(),
            ),
        };
        let mut response =
            rpc_error_response(status, mcpyard_proto::codes::INVALID_REQUEST, &message);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
        response
    }
}

fn scope_param(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(", scope=\"{}\"", scopes.join(" "))
    }
}

/// Text safe inside a quoted header parameter.
fn quotable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
        .collect()
}

/// The credential of `GET /metrics` (see `HttpOptions::metrics_token`),
/// held as a digest and compared in constant time, as API keys are.
pub(crate) struct MetricsToken([u8; 32]);

impl MetricsToken {
    pub(crate) fn new(token: &str) -> Self {
        Self(keys::sha256(token))
    }

    /// Whether the request presents the token as its bearer credential.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        use subtle::ConstantTimeEq;
        bearer(headers).is_some_and(|presented| bool::from(keys::sha256(presented).ct_eq(&self.0)))
    }

    /// The 401 for a request without it.
    pub(crate) fn refuse() -> Response {
        let mut response = rpc_error_response(
            StatusCode::UNAUTHORIZED,
            mcpyard_proto::codes::INVALID_REQUEST,
            "Unauthorized: /metrics needs Authorization: Bearer <metrics token>",
        );
        response.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"mcpyard metrics\""),
        );
        response
    }
}

// By hand: the digest is nobody's business either.
impl fmt::Debug for MetricsToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetricsToken(<sha256>)")
    }
}

/// The credential of `Authorization: Bearer <credential>`.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    let credential = credential.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credential.is_empty()).then_some(credential)
}
