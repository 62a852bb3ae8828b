//! OAuth failures. None of them carries a token or secret.

/// Why obtaining or using a token failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A person must log in (again): no usable token, and the refresh token
    /// was refused (`invalid_grant`) or there is none and the grant needs a
    /// browser. The gateway shows "log in again: `mcpyard login SERVER`".
    #[error("log in again: `mcpyard login {upstream}` ({reason})")]
    LoginRequired {
        /// The upstream's name (the token store key).
        upstream: String,
        /// What happened, e.g. "the refresh token was refused".
        reason: String,
    },
    /// The server's or authorization server's metadata could not be found
    /// or is unusable (issuer mismatch, no PKCE S256...).
    #[error("OAuth discovery: {0}")]
    Discovery(String),
    /// No way to register this client: says what to configure.
    #[error("OAuth client registration: {0}")]
    Registration(String),
    /// The token endpoint refused (`error` code and its description).
    #[error("token endpoint refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The OAuth error code, e.g. `invalid_client`.
        error: String,
        /// The server's `error_description`.
        description: Option<String>,
    },
    /// The authorization redirect was wrong (state or issuer mismatch, an
    /// `error` parameter, no code).
    #[error("authorization redirect: {0}")]
    Redirect(String),
    /// The server still refused after a fresh token, or after the allowed
    /// step-ups: no further attempt is made.
    #[error("the server refused the credentials: {0}")]
    Refused(String),
    /// The configuration cannot work (bad key, missing redirect URI...).
    #[error("OAuth configuration: {0}")]
    Config(String),
    /// An HTTP exchange with a metadata, registration or token endpoint failed.
    #[error("OAuth HTTP: {0}")]
    Http(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
}

impl OAuthError {
    /// Whether a person must log in again (see [`OAuthError::LoginRequired`]).
    pub fn is_login_required(&self) -> bool {
        matches!(self, OAuthError::LoginRequired { .. })
    }
}
