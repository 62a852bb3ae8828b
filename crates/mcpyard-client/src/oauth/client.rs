//! The OAuth flows behind one [`OAuthClient`] per upstream.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use super::{OAuthConfig, OAuthError, Secret, TokenKey, TokenStore};
use crate::{ClientError, HttpAuth};

/// Carries a person through the authorization server's login page during a
/// connection: given the authorization URL, returns the redirect URL the
/// browser came back to (or just the `code`). Without one, a connection that
/// needs a person fails with [`OAuthError::LoginRequired`] and the login
/// happens apart ([`OAuthClient::begin_login`] / [`OAuthClient::finish_login`]).
#[async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Takes the person (or a test) to `authorization_url` and returns where
    /// the authorization server sent them back.
    async fn authorize(&self, authorization_url: &str) -> Result<String, OAuthError>;
}

/// A login started by [`OAuthClient::begin_login`]: open
/// [`authorization_url`](Self::authorization_url) in a browser, then hand the
/// redirect to [`OAuthClient::finish_login`]. Its `Debug` hides the PKCE
/// verifier and the state.
pub struct PendingLogin {
    /// Where the person logs in.
    pub authorization_url: String,
    pub(crate) state: Secret,
    pub(crate) verifier: Secret,
}

impl fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingLogin")
            .field("authorization_url", &"***")
            .finish_non_exhaustive()
    }
}

/// OAuth for one upstream: discovery, registration, grants, refresh and
/// step-up, with tokens kept in a [`TokenStore`]. Implements [`HttpAuth`],
/// so it is given to a connection through
/// [`ConnectOptions::http_auth`](crate::ConnectOptions::http_auth).
pub struct OAuthClient {
    server_url: String,
    key: TokenKey,
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// OAuth toward the MCP endpoint `server_url`, with tokens kept under `key`.
    pub fn new(
        server_url: &str,
        key: TokenKey,
        config: OAuthConfig,
        store: Arc<dyn TokenStore>,
    ) -> Result<Self, OAuthError> {
        Ok(Self {
            server_url: server_url.to_owned(),
            key,
            config,
            store,
            authorizer: None,
        })
    }

    /// Lets connections run the authorization-code login themselves.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The token store key.
    pub fn key(&self) -> &TokenKey {
        &self.key
    }

    /// Starts an authorization-code login: discovery, registration, PKCE.
    pub async fn begin_login(&self) -> Result<PendingLogin, OAuthError> {
        Err(OAuthError::Config("not implemented yet".into()))
    }

    /// Finishes a login with the redirect URL the browser came back to (or
    /// the pasted `code`): checks `state` and `iss`, exchanges the code and
    /// saves the tokens.
    pub async fn finish_login(
        &self,
        pending: PendingLogin,
        redirect: &str,
    ) -> Result<(), OAuthError> {
        let _ = (&pending.state, &pending.verifier, redirect);
        Err(OAuthError::Config("not implemented yet".into()))
    }

    /// A valid access token: the stored one, a refreshed one, or (client
    /// credentials, or with an [`Authorizer`]) a new one.
    pub async fn access_token(&self) -> Result<Secret, OAuthError> {
        Err(OAuthError::Config("not implemented yet".into()))
    }

    /// Forgets the stored tokens.
    pub async fn logout(&self) -> Result<(), OAuthError> {
        self.store.clear(&self.key).await
    }
}

#[async_trait]
impl HttpAuth for OAuthClient {
    async fn authorization(&self) -> Result<Option<String>, ClientError> {
        Ok(None)
    }

    async fn challenged(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, ClientError> {
        let _ = (status, www_authenticate, &self.server_url, &self.config);
        Ok(false)
    }
}
