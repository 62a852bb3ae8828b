//! JWT access tokens, checked as an OAuth 2.1 resource server does: the
//! signature against the issuer's JWKS (algorithms from an allow-list, the
//! key named by `kid`), `iss`, `aud` (this server's resource URL), `exp`
//! and `nbf` with a small leeway. The JWKS is fetched on first use, again
//! when it is old or a token names a key it lacks (a rotation), but never
//! more often than `jwks_min_refresh`. Tokens already verified are kept
//! until they expire, so the per-call cost is one hash and one map lookup.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mcpyard_gateway::{Identity, IdentityKind};
use serde_json::{Map, Value};

use super::keys::sha256;
use super::{AuthFailure, OAuthOptions};

/// Verified tokens kept at most; past it, expired ones are dropped, then all.
const VERIFIED_CAPACITY: usize = 4096;
/// How long the issuer may take to answer a JWKS or metadata request.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Checks access tokens for one issuer and one audience.
#[derive(Debug)]
pub(crate) struct JwtVerifier {
    opts: OAuthOptions,
    resource: String,
    audience: String,
    http: reqwest::Client,
    jwks: tokio::sync::Mutex<Jwks>,
    /// SHA-256 of a verified token -> its identity and `exp`.
    verified: Mutex<HashMap<[u8; 32], (Identity, u64)>>,
}

/// The issuer's keys as last fetched.
#[derive(Default)]
struct Jwks {
    url: Option<String>,
    keys: Vec<IssuerKey>,
    fetched: Option<Instant>,
    last_attempt: Option<Instant>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("url", &self.url)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
struct IssuerKey {
    kid: Option<String>,
    /// The key's own `alg`, when the JWKS gives one.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl JwtVerifier {
    pub(crate) fn new(opts: OAuthOptions, default_resource: &str) -> Self {
        let resource = opts
            .resource
            .clone()
            .unwrap_or_else(|| default_resource.to_owned());
        let audience = opts.audience.clone().unwrap_or_else(|| resource.clone());
        let jwks = Jwks {
            url: opts.jwks_url.clone(),
            ..Jwks::default()
        };
        Self {
            opts,
            resource,
            audience,
            http: reqwest::Client::builder()
                .timeout(FETCH_TIMEOUT)
                .build()
                .unwrap_or_default(),
            jwks: tokio::sync::Mutex::new(jwks),
            verified: Mutex::default(),
        }
    }

    pub(crate) fn resource(&self) -> &str {
        &self.resource
    }

    pub(crate) fn issuer(&self) -> &str {
        &self.opts.issuer
    }

    pub(crate) fn required_scopes(&self) -> &[String] {
        &self.opts.required_scopes
    }

    /// The identity `token` stands for, or why it is refused.
    pub(crate) async fn verify(&self, token: &str) -> Result<Identity, AuthFailure> {
        let digest = sha256(token);
        if let Some(identity) = self.remembered(&digest) {
            return Ok(identity);
        }
        let invalid = |why: &str| AuthFailure::Invalid(why.to_owned());
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("the token is not a JWT with a supported algorithm"))?;
        if !self.opts.algorithms.contains(&header.alg) {
            return Err(AuthFailure::Invalid(format!(
                "the token's algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.opts.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.opts.leeway.as_secs();
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| AuthFailure::Invalid(reason(e.kind()).to_owned()))?
            .claims;
        let identity = self.identity_of(&claims)?;
        let missing = self
            .opts
            .required_scopes
            .iter()
            .any(|s| !identity.scopes.contains(s));
        if missing {
            return Err(AuthFailure::InsufficientScope);
        }
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        self.remember(digest, &identity, exp);
        Ok(identity)
    }

    fn identity_of(&self, claims: &Map<String, Value>) -> Result<Identity, AuthFailure> {
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| AuthFailure::Invalid("the token has no subject".into()))?;
        let groups = string_list(claims.get(&self.opts.groups_claim));
        let mut identity = Identity::named(IdentityKind::Token, subject, groups);
        // `scope` (RFC 9068, space-separated) or `scp` (a list, Azure / Okta).
        identity.scopes = string_list(claims.get("scope").or_else(|| claims.get("scp")));
        Ok(identity)
    }

    fn remembered(&self, digest: &[u8; 32]) -> Option<Identity> {
        let verified = self.verified.lock().expect("token cache lock poisoned");
        let (identity, exp) = verified.get(digest)?;
        (now() <= exp.saturating_add(self.opts.leeway.as_secs())).then(|| identity.clone())
    }

    fn remember(&self, digest: [u8; 32], identity: &Identity, exp: u64) {
        let mut verified = self.verified.lock().expect("token cache lock poisoned");
        if verified.len() >= VERIFIED_CAPACITY {
            let now = now();
            verified.retain(|_, (_, exp)| *exp >= now);
            if verified.len() >= VERIFIED_CAPACITY {
                verified.clear();
            }
        }
        verified.insert(digest, (identity.clone(), exp));
    }

    /// The issuer's key for `kid`, fetching the JWKS when it is missing,
    /// old, or lacks the key (within the refresh rate limit).
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, AuthFailure> {
        let mut jwks = self.jwks.lock().await;
        let stale = jwks
            .fetched
            .is_none_or(|at| at.elapsed() >= self.opts.jwks_max_age);
        if stale {
            self.refresh(&mut jwks).await;
        }
        if find(&jwks.keys, kid).is_none() && !stale {
            self.refresh(&mut jwks).await;
        }
        let key = find(&jwks.keys, kid).ok_or_else(|| {
            AuthFailure::Invalid(match kid {
                Some(_) => "the token's key id is not among the issuer's keys".into(),
                None => "the token names no key id and the issuer has several keys".into(),
            })
        })?;
        if key.alg.is_some_and(|a| a != alg) {
            return Err(AuthFailure::Invalid(
                "the token's algorithm is not its key's".into(),
            ));
        }
        Ok(key.key.clone())
    }

    /// Fetches the JWKS unless the last attempt was too recent. A failure
    /// keeps the keys already known.
    async fn refresh(&self, jwks: &mut Jwks) {
        if jwks
            .last_attempt
            .is_some_and(|at| at.elapsed() < self.opts.jwks_min_refresh)
        {
            return;
        }
        jwks.last_attempt = Some(Instant::now());
        if jwks.url.is_none() {
            jwks.url = self.discover_jwks_url().await;
        }
        let Some(url) = jwks.url.clone() else {
            tracing::warn!(issuer = %self.opts.issuer, "the issuer's metadata names no jwks_uri");
            return;
        };
        match self.fetch_json(&url).await {
            Some(document) => {
                jwks.keys = parse_jwks(&document);
                jwks.fetched = Some(Instant::now());
                tracing::debug!(%url, keys = jwks.keys.len(), "fetched the issuer's keys");
            }
            None => tracing::warn!(%url, "cannot fetch the issuer's keys"),
        }
    }

    /// `jwks_uri` from the issuer's RFC 8414 or OpenID metadata.
    async fn discover_jwks_url(&self) -> Option<String> {
        let issuer = self.opts.issuer.trim_end_matches('/');
        let parsed = reqwest::Url::parse(issuer).ok()?;
        let origin = parsed.origin().ascii_serialization();
        let path = parsed.path().trim_end_matches('/');
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        for url in candidates {
            if let Some(uri) = self
                .fetch_json(&url)
                .await
                .and_then(|m| m.get("jwks_uri").and_then(Value::as_str).map(str::to_owned))
            {
                return Some(uri);
            }
        }
        None
    }

    async fn fetch_json(&self, url: &str) -> Option<Value> {
        let response = self.http.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }
}

/// The usable public keys of a JWKS; symmetric and unreadable keys are
/// skipped (an `oct` key would let anyone who read the JWKS sign tokens).
fn parse_jwks(document: &Value) -> Vec<IssuerKey> {
    let Some(keys) = document.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter_map(|jwk| {
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            let alg = jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse::<Algorithm>().ok());
            Some(IssuerKey {
                kid: jwk.common.key_id,
                alg,
                key,
            })
        })
        .collect()
}

/// The key named `kid`; without a kid, the only key there is.
fn find<'k>(keys: &'k [IssuerKey], kid: Option<&str>) -> Option<&'k IssuerKey> {
    match kid {
        Some(kid) => keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
        None if keys.len() == 1 => keys.first(),
        None => None,
    }
}

/// What a client is told about a token that failed validation.
fn reason(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet",
        ErrorKind::InvalidAudience => "the token is for another audience",
        ErrorKind::InvalidIssuer => "the token is from another issuer",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(_) => {
            "the token lacks a required claim (exp, iss, aud, sub)"
        }
        ErrorKind::InvalidAlgorithm => "the token's algorithm is not its key's",
        _ => "the token is not valid",
    }
}

/// A claim holding a list of strings, or one space-separated string.
fn string_list(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A JWKS endpoint on loopback that counts its fetches.
    async fn counting_jwks() -> (String, Arc<AtomicUsize>) {
        let fetches = Arc::new(AtomicUsize::new(0));
        let counter = fetches.clone();
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { axum::Json(json!({"keys": []})) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/jwks", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, fetches)
    }

    fn token_with_kid(kid: &str) -> String {
        use base64::Engine;
        let b64 = |v: Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
        };
        format!(
            "{}.{}.c2ln",
            b64(json!({"alg": "RS256", "typ": "JWT", "kid": kid})),
            b64(json!({"sub": "s"}))
        )
    }

    #[tokio::test]
    async fn unknown_key_ids_refetch_the_jwks_at_most_once_per_interval() {
        let (url, fetches) = counting_jwks().await;
        let mut opts = OAuthOptions::new("http://127.0.0.1:9");
        opts.jwks_url = Some(url.clone());
        opts.jwks_min_refresh = Duration::from_secs(60);
        let verifier = JwtVerifier::new(opts.clone(), "http://127.0.0.1:1/mcp");
        for kid in ["a", "b", "c", "d"] {
            let refused = verifier.verify(&token_with_kid(kid)).await;
            assert!(
                matches!(&refused, Err(AuthFailure::Invalid(why)) if why.contains("key id")),
                "{refused:?}"
            );
        }
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "made-up kids hammered the issuer"
        );

        opts.jwks_min_refresh = Duration::ZERO;
        let eager = JwtVerifier::new(opts, "http://127.0.0.1:1/mcp");
        for kid in ["a", "b", "c"] {
            assert!(eager.verify(&token_with_kid(kid)).await.is_err());
        }
        // Without the limit, each unknown kid costs a fetch (the first
        // one's is the fetch on first use).
        assert_eq!(fetches.load(Ordering::SeqCst), 1 + 3);
    }

    #[tokio::test]
    async fn algorithms_off_the_list_are_refused_before_any_fetch() {
        let (url, fetches) = counting_jwks().await;
        let mut opts = OAuthOptions::new("http://127.0.0.1:9");
        opts.jwks_url = Some(url);
        opts.algorithms = vec![Algorithm::ES256];
        let verifier = JwtVerifier::new(opts, "http://127.0.0.1:1/mcp");
        let refused = verifier.verify(&token_with_kid("a")).await;
        assert!(
            matches!(&refused, Err(AuthFailure::Invalid(why)) if why.contains("RS256")),
            "{refused:?}"
        );
        let refused = verifier.verify("not.a.jwt").await;
        assert!(matches!(refused, Err(AuthFailure::Invalid(_))));
        assert_eq!(fetches.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn scopes_and_groups_read_from_strings_or_lists() {
        assert_eq!(string_list(Some(&json!("a b  c"))), ["a", "b", "c"]);
        assert_eq!(string_list(Some(&json!(["x", 1, "y"]))), ["x", "y"]);
        assert!(string_list(Some(&json!(7))).is_empty());
        assert!(string_list(None).is_empty());
    }

    #[test]
    fn symmetric_keys_in_a_jwks_are_never_used() {
        let doc = json!({"keys": [
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "r", "alg": "RS256", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"},
                {"kty": "nonsense"}
        ]});
        let keys = parse_jwks(&doc);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("r"));
        assert_eq!(keys[0].alg, Some(Algorithm::RS256));
        assert!(
            find(&keys, None).is_some(),
            "the only key serves a token without kid"
        );
        assert!(find(&keys, Some("h")).is_none());
    }
}
