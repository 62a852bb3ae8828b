//! The OAuth client of each upstream, with its tokens in the file store
//! (or, for a team's replicas, in the shared state).
//!
//! A running gateway must see a `mcpyard login` made meanwhile: the
//! library's client reads the store once and keeps what it read, so after
//! it has said "log in again" the next attempt is made with a new client,
//! which reads the store afresh.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcpyard_client::oauth::{OAuthClient, OAuthError, TokenKey, TokenStore};
use mcpyard_client::{ClientError, HttpAuth, Refusal};

use crate::config::OAuthSettings;
use crate::shared_tokens::SharedTokenStore;
use crate::token_store::FileTokenStore;

/// Where upstream OAuth tokens are kept.
#[derive(Debug, Clone)]
pub(crate) enum TokenPlace {
    /// A file per upstream in this machine's state folder.
    Folder(PathBuf),
    /// Redis, shared by every replica, sealed.
    Shared(Arc<SharedTokenStore>),
}

impl TokenPlace {
    fn store(&self) -> Arc<dyn TokenStore> {
        match self {
            Self::Folder(dir) => Arc::new(FileTokenStore::new(dir.clone())),
            Self::Shared(store) => store.clone(),
        }
    }
}

impl std::fmt::Display for TokenPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Folder(dir) => write!(f, "under {}", dir.display()),
            Self::Shared(_) => f.write_str("in the shared state (Redis), sealed"),
        }
    }
}

/// The OAuth client of `upstream` at `url`; `redirect_uri` is where a login
/// receives the authorization server's redirect.
pub(crate) fn oauth_client(
    upstream: &str,
    url: &str,
    oauth: &OAuthSettings,
    tokens: &TokenPlace,
    redirect_uri: String,
) -> Result<OAuthClient, OAuthError> {
    OAuthClient::new(
        url,
        TokenKey::upstream(upstream),
        oauth.client_config(redirect_uri),
        tokens.store(),
    )
}

/// What the gateway gives an upstream's connections: its OAuth client,
/// made anew after it asked for a login (see the module's note).
#[derive(Debug)]
pub(crate) struct UpstreamAuth {
    upstream: String,
    url: String,
    oauth: OAuthSettings,
    tokens: TokenPlace,
    current: Mutex<Arc<OAuthClient>>,
}

impl UpstreamAuth {
    pub(crate) fn new(
        upstream: &str,
        url: &str,
        oauth: OAuthSettings,
        tokens: TokenPlace,
    ) -> Result<Self, OAuthError> {
        let client = oauth_client(
            upstream,
            url,
            &oauth,
            &tokens,
            OAuthSettings::redirect_uri(oauth.redirect_port),
        )?;
        Ok(Self {
            upstream: upstream.to_owned(),
            url: url.to_owned(),
            oauth,
            tokens,
            current: Mutex::new(Arc::new(client)),
        })
    }

    fn current(&self) -> Arc<OAuthClient> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// After a "log in again", the next attempt reads the store afresh.
    fn after<T>(&self, result: Result<T, ClientError>) -> Result<T, ClientError> {
        if matches!(&result, Err(ClientError::Auth(e)) if e.is_login_required()) {
            match oauth_client(
                &self.upstream,
                &self.url,
                &self.oauth,
                &self.tokens,
                OAuthSettings::redirect_uri(self.oauth.redirect_port),
            ) {
                Ok(fresh) => {
                    *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh)
                }
                Err(e) => {
                    tracing::warn!(server = %self.upstream, error = %e, "cannot renew the OAuth client")
                }
            }
        }
        result
    }
}

#[async_trait]
impl HttpAuth for UpstreamAuth {
    async fn authorization(&self) -> Result<Option<String>, ClientError> {
        let client = self.current();
        self.after(client.authorization().await)
    }

    async fn challenged(&self, refusal: Refusal<'_>) -> Result<bool, ClientError> {
        let client = self.current();
        self.after(client.challenged(refusal).await)
    }

    /// A DPoP-bound token's proof, from the same client as the token.
    async fn proof(
        &self,
        method: &str,
        url: &str,
        authorization: &str,
    ) -> Result<Option<String>, ClientError> {
        let client = self.current();
        self.after(client.proof(method, url, authorization).await)
    }
}
