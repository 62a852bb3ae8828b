//! The HTTP exchanges of OAuth: metadata GETs, registration, the token
//! endpoint. A separate `reqwest::Client` without the upstream's configured
//! headers, so no token or API key reaches a metadata URL.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::dpop::{now_secs, DpopKey};
use super::{OAuthError, Secret, TokenSet};

/// Metadata and token answers are small; anything past this is refused.
const MAX_BODY: usize = 256 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) fn build() -> Result<reqwest::Client, OAuthError> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        // A redirect would carry form bodies (codes, secrets) elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| OAuthError::Http(format!("cannot build the HTTP client: {e}")))
}

/// A `reqwest` error without its URL (the query may carry a code).
pub(crate) fn http_error(e: reqwest::Error) -> OAuthError {
    OAuthError::Http(crate::transport::error_text(e))
}

async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, OAuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http_error)? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(OAuthError::Http(format!(
                "answer larger than {MAX_BODY} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// GETs a JSON document; `Ok(None)` for a 4xx (not there), an error for
/// anything else that is not a success.
pub(crate) async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &url::Url,
) -> Result<Option<T>, OAuthError> {
    let resp = http
        .get(url.as_str())
        .header(ACCEPT, "application/json")
        .send()
        .await
        .map_err(http_error)?;
    let status = resp.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(OAuthError::Http(format!("{url} answered {status}")));
    }
    let body = read_body(resp).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| OAuthError::Discovery(format!("{url} is not valid metadata: {e}")))
}

/// POSTs JSON (dynamic registration) and reads the JSON answer.
pub(crate) async fn post_json(
    http: &reqwest::Client,
    url: &url::Url,
    body: &Value,
) -> Result<Value, OAuthError> {
    let resp = http
        .post(url.as_str())
        .header(ACCEPT, "application/json")
        .json(body)
        .send()
        .await
        .map_err(http_error)?;
    let status = resp.status();
    let bytes = read_body(resp).await?;
    if !status.is_success() {
        let err = oauth_error(&bytes);
        return Err(OAuthError::Registration(format!(
            "{url} answered {status}: {}{}",
            err.error,
            err.error_description
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| OAuthError::Registration(format!("{url} answered invalid JSON: {e}")))
}

/// An OAuth error answer (RFC 6749 section 5.2).
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorAnswer {
    #[serde(default)]
    pub(crate) error: String,
    #[serde(default)]
    pub(crate) error_description: Option<String>,
}

fn oauth_error(body: &[u8]) -> ErrorAnswer {
    serde_json::from_slice::<ErrorAnswer>(body).unwrap_or(ErrorAnswer {
        error: "invalid_response".into(),
        error_description: None,
    })
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Secret,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<Value>,
    #[serde(default)]
    refresh_token: Option<Secret>,
    #[serde(default)]
    scope: Option<String>,
}

/// A form POST to a token endpoint. `basic` is the client id and secret
/// for HTTP Basic (client_secret_basic), already chosen by the caller. With
/// `dpop`, the request carries a DPoP proof (a DPoP-bound token is asked
/// for), and a `use_dpop_nonce` refusal is answered once with the nonce the
/// server gave.
pub(crate) async fn token_request(
    http: &reqwest::Client,
    endpoint: &url::Url,
    form: &[(&str, &str)],
    basic: Option<(&str, &Secret)>,
    dpop: Option<&DpopKey>,
) -> Result<RawToken, OAuthError> {
    let body = serde_urlencoded::to_string(form)
        .map_err(|e| OAuthError::Config(format!("cannot encode the token request: {e}")))?;
    let mut attempt = 0;
    let (status, bytes) = loop {
        attempt += 1;
        let mut req = http
            .post(endpoint.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body.clone());
        if let Some((id, secret)) = basic {
            // RFC 6749 section 2.3.1: both parts form-urlencoded before Basic.
            req = req.basic_auth(form_encode(id), Some(form_encode(secret.expose())));
        }
        if let Some(key) = dpop {
            let nonce = DpopKey::nonce(&key.as_nonce);
            req = req.header(
                "DPoP",
                key.proof("POST", endpoint.as_str(), None, nonce.as_deref())?,
            );
        }
        let resp = req.send().await.map_err(http_error)?;
        let status = resp.status();
        let nonce = resp
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = read_body(resp).await?;
        if let (Some(key), Some(nonce), false) = (dpop, &nonce, status.is_success()) {
            DpopKey::set_nonce(&key.as_nonce, nonce);
            if attempt == 1 && oauth_error(&bytes).error == "use_dpop_nonce" {
                continue;
            }
        }
        break (status, bytes);
    };
    if !status.is_success() {
        let err = oauth_error(&bytes);
        return Err(OAuthError::TokenRefused {
            error: if err.error.is_empty() {
                format!("HTTP {}", status.as_u16())
            } else {
                err.error
            },
            description: err.error_description,
        });
    }
    let answer: TokenAnswer = serde_json::from_slice(&bytes).map_err(|e| {
        // serde's message names the field, never the value.
        OAuthError::Http(format!("the token endpoint answered invalid JSON: {e}"))
    })?;
    Ok(RawToken {
        access_token: answer.access_token,
        token_type: answer.token_type,
        expires_in: answer.expires_in.as_ref().and_then(|v| match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }),
        refresh_token: answer.refresh_token,
        scope: answer.scope,
    })
}

/// A token endpoint's answer, before it becomes a [`TokenSet`].
pub(crate) struct RawToken {
    pub(crate) access_token: Secret,
    pub(crate) token_type: Option<String>,
    pub(crate) expires_in: Option<u64>,
    pub(crate) refresh_token: Option<Secret>,
    pub(crate) scope: Option<String>,
}

impl RawToken {
    /// Whether the token is bound to the client's DPoP key.
    pub(crate) fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// The stored form: `previous_refresh` is kept when the server did not
    /// rotate it, `asked` stands for the scopes when the server did not say.
    pub(crate) fn into_token_set(
        self,
        previous_refresh: Option<Secret>,
        asked: &[String],
    ) -> Result<TokenSet, OAuthError> {
        if let Some(t) = &self.token_type {
            // RFC 6749 7.1: the type is case-insensitive; a DPoP token is
            // taken only when one was asked for (`is_dpop`).
            if !t.eq_ignore_ascii_case("bearer") && !self.is_dpop() {
                return Err(OAuthError::Http(format!(
                    "the token endpoint issued a `{t}` token; only Bearer and DPoP are supported"
                )));
            }
        }
        let now = now_secs();
        Ok(TokenSet {
            access_token: self.access_token,
            refresh_token: self.refresh_token.or(previous_refresh),
            expires_at: self.expires_in.map(|s| now + s),
            obtained_at: Some(now),
            scopes: match self.scope {
                Some(s) => s.split_whitespace().map(str::to_owned).collect(),
                None => asked.to_vec(),
            },
        })
    }
}

fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
