//! Where tokens live between runs: the [`TokenStore`] hooks, keyed by
//! upstream and optional identity.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{OAuthError, Secret};

/// Whose tokens for which upstream. `identity` is `None` for the
/// upstream's one operator credential; a gateway that knows who is calling
/// can keep one set per person.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TokenKey {
    /// The upstream's configured name.
    pub upstream: String,
    /// The person the tokens belong to, if not the operator.
    pub identity: Option<String>,
}

impl TokenKey {
    /// The operator's credential for `upstream`.
    pub fn upstream(upstream: impl Into<String>) -> Self {
        Self {
            upstream: upstream.into(),
            identity: None,
        }
    }
}

/// Tokens from the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The bearer token.
    pub access_token: Secret,
    /// The refresh token, if the server issued one (rotated on refresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the token endpoint issued it, in seconds since the Unix epoch:
    /// a short-lived token is refreshed a quarter of its life early, not
    /// the usual 30 s early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obtained_at: Option<u64>,
    /// The scopes granted (or, when the server did not say, asked for).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A client registered dynamically, kept so it is not registered again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The authorization server that issued it.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// Its secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How it authenticates at the token endpoint (metadata name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

/// What a [`TokenStore`] keeps for one [`TokenKey`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCredentials {
    /// The current tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
    /// A dynamically registered client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<RegisteredClient>,
}

/// Load / save hooks for credentials. Loaded before the first request,
/// saved after every change (new tokens, a rotated refresh token, a
/// registration). Implementations must keep the values private (a file
/// only the user can read, a keyring...).
#[async_trait]
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// The credentials kept for `key`, if any.
    async fn load(&self, key: &TokenKey) -> Result<Option<StoredCredentials>, OAuthError>;
    /// Replaces what is kept for `key`.
    async fn save(&self, key: &TokenKey, credentials: &StoredCredentials)
        -> Result<(), OAuthError>;
    /// Forgets `key` (a refresh token the server revoked, a logout).
    async fn clear(&self, key: &TokenKey) -> Result<(), OAuthError>;

    /// For a store that several processes share: waits until this one
    /// alone may refresh `key`'s tokens, and holds that until the lock is
    /// released (or its own timeout ends). A refresh token that the server
    /// rotates is then used once, and a process that waited reads the
    /// tokens the other obtained. `None`: one process uses the store, and
    /// the client's own lock suffices.
    async fn lock_refresh(
        &self,
        _key: &TokenKey,
    ) -> Result<Option<Box<dyn TokenLock>>, OAuthError> {
        Ok(None)
    }
}

/// Held while one process refreshes a shared store's tokens
/// ([`TokenStore::lock_refresh`]).
#[async_trait]
pub trait TokenLock: Send {
    /// Lets the next process refresh.
    async fn release(self: Box<Self>);
}

/// A [`TokenStore`] in memory: tokens last as long as the process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<HashMap<TokenKey, StoredCredentials>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, key: &TokenKey) -> Result<Option<StoredCredentials>, OAuthError> {
        Ok(self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned())
    }

    async fn save(
        &self,
        key: &TokenKey,
        credentials: &StoredCredentials,
    ) -> Result<(), OAuthError> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), credentials.clone());
        Ok(())
    }

    async fn clear(&self, key: &TokenKey) -> Result<(), OAuthError> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        Ok(())
    }
}
