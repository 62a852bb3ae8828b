//! How the client names itself and proves who it is to the authorization
//! server.

use serde_json::json;
use url::Url;

use crate::oauth::dpop::now_secs;
use crate::oauth::pkce;
use crate::oauth::{ClientAuthMethod, Grant, OAuthError, PrivateKeyJwt, RegisteredClient, Secret};

pub(super) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

pub(super) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

pub(super) const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

pub(super) const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";

pub(super) const CLIENT_ASSERTION_JWT: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The client as it authenticates at the token endpoint.
#[derive(Clone)]
pub(super) struct ClientCreds {
    pub(super) client_id: String,
    pub(super) secret: Option<Secret>,
    pub(super) method: ClientAuthMethod,
}

pub(super) fn grant_name(grant: &Grant) -> &'static str {
    match grant {
        Grant::ClientCredentials => "client_credentials",
        Grant::AuthorizationCode { .. } => "authorization_code",
        Grant::IdentityAssertion { .. } => "identity_assertion",
        Grant::JwtBearer { .. } => "jwt_bearer",
    }
}

/// How a client with what it has authenticates, given what the server offers.
/// Whether a redirect URI is a native application's (RFC 8252): a loopback
/// address over plain HTTP, or a scheme of the application's own.
pub(super) fn is_native_redirect(redirect_uri: &str) -> bool {
    let Ok(url) = Url::parse(redirect_uri) else {
        return false;
    };
    match url.scheme() {
        "https" => false,
        "http" => matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => true,
    }
}

pub(super) fn choose_method(
    has_key: bool,
    has_secret: bool,
    supported: Option<&[String]>,
) -> ClientAuthMethod {
    let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if has_key {
        ClientAuthMethod::PrivateKeyJwt
    } else if has_secret {
        if offers("client_secret_basic") {
            ClientAuthMethod::ClientSecretBasic
        } else if offers("client_secret_post") {
            ClientAuthMethod::ClientSecretPost
        } else if offers("none") {
            ClientAuthMethod::None
        } else {
            ClientAuthMethod::ClientSecretBasic
        }
    } else {
        ClientAuthMethod::None
    }
}

pub(super) fn registered_creds(
    reg: &RegisteredClient,
    supported: Option<&[String]>,
) -> ClientCreds {
    let method = reg
        .token_endpoint_auth_method
        .as_deref()
        .and_then(ClientAuthMethod::parse)
        .unwrap_or_else(|| choose_method(false, reg.client_secret.is_some(), supported));
    ClientCreds {
        client_id: reg.client_id.clone(),
        secret: reg.client_secret.clone(),
        method,
    }
}

pub(super) fn signing_key(
    key: &PrivateKeyJwt,
) -> Result<(jsonwebtoken::Algorithm, jsonwebtoken::EncodingKey), OAuthError> {
    use jsonwebtoken::{Algorithm, EncodingKey};
    let alg: Algorithm = key
        .algorithm
        .parse()
        .map_err(|_| OAuthError::Config(format!("unknown JWT algorithm `{}`", key.algorithm)))?;
    let pem = key.pem.expose().as_bytes();
    let encoding = match alg {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
        _ => {
            return Err(OAuthError::Config(format!(
                "`{}` is a shared-secret algorithm; private_key_jwt needs a key pair",
                key.algorithm
            )))
        }
    }
    // The parser's message says what is wrong with the PEM, not what is in it.
    .map_err(|e| OAuthError::Config(format!("the private key cannot be read: {e}")))?;
    Ok((alg, encoding))
}

/// RFC 7523 client assertion: issued by and about the client, for the
/// authorization server (its issuer identifier), short-lived, unique.
pub(super) fn client_assertion(
    key: &PrivateKeyJwt,
    client_id: &str,
    audience: &str,
) -> Result<Secret, OAuthError> {
    let (alg, encoding) = signing_key(key)?;
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = key.key_id.clone();
    let now = now_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": pkce::random_token()?.expose(),
    });
    jsonwebtoken::encode(&header, &claims, &encoding)
        .map(Secret::new)
        .map_err(|e| OAuthError::Config(format!("cannot sign the client assertion: {e}")))
}
