//! Upstream OAuth tokens shared by every replica of a team's gateway: kept
//! in Redis, sealed with AES-256-GCM under a key from the environment (the
//! key of each entry is bound in as associated data, so one upstream's
//! entry cannot stand in for another's), and refreshed by one replica at a
//! time under a Redis lock, so that a rotated refresh token is used once.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use mcpyard_client::oauth::{OAuthError, StoredCredentials, TokenKey, TokenLock, TokenStore};
use mcpyard_gateway::state::RedisState;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

/// How long a refresh may hold the lock before it lapses (a replica that
/// died mid-refresh blocks the others no longer than this).
const LOCK_TTL: Duration = Duration::from_secs(15);
/// How often a replica waiting for the lock tries again.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// The 32-byte key, written as 64 hex digits or in base64.
pub(crate) fn parse_key(text: &str) -> Result<[u8; 32], String> {
    let text = text.trim();
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|e| e.to_string())?
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| "neither 64 hex digits nor base64".to_owned())?
    };
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("{} bytes, where 32 are needed", b.len()))
}

/// A [`TokenStore`] in Redis, sealed.
pub(crate) struct SharedTokenStore {
    redis: Arc<RedisState>,
    key: LessSafeKey,
    random: SystemRandom,
}

impl std::fmt::Debug for SharedTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTokenStore").finish_non_exhaustive()
    }
}

/// The Redis name of `key`'s entry (and of its refresh lock).
fn entry_name(key: &TokenKey) -> String {
    match &key.identity {
        None => key.upstream.clone(),
        Some(identity) => format!("{}@{identity}", key.upstream),
    }
}

fn store_error(what: &str, e: impl std::fmt::Display) -> OAuthError {
    OAuthError::Store(format!("cannot {what} the shared tokens: {e}"))
}

impl SharedTokenStore {
    pub(crate) fn new(redis: Arc<RedisState>, key: &[u8; 32]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, key).expect("AES-256 takes a 32-byte key");
        Self {
            redis,
            key: LessSafeKey::new(key),
            random: SystemRandom::new(),
        }
    }

    /// `nonce || ciphertext || tag`.
    fn seal(&self, name: &str, plain: &[u8]) -> Result<Vec<u8>, OAuthError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| store_error("seal", "no randomness"))?;
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| store_error("seal", "encryption failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    fn open(&self, name: &str, sealed: &[u8]) -> Result<Vec<u8>, OAuthError> {
        if sealed.len() < NONCE_LEN {
            return Err(store_error("read", "the entry is too short"));
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| store_error("read", "bad nonce"))?;
        let mut body = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut body)
            .map_err(|_| {
                store_error(
                    "open",
                    "sealed under another key (is token_key_env the same on every replica?)",
                )
            })?;
        Ok(plain.to_vec())
    }
}

#[async_trait]
impl TokenStore for SharedTokenStore {
    async fn load(&self, key: &TokenKey) -> Result<Option<StoredCredentials>, OAuthError> {
        let name = entry_name(key);
        let Some(sealed) = self
            .redis
            .get_bytes("oauth", &name)
            .await
            .map_err(|e| store_error("read", e))?
        else {
            return Ok(None);
        };
        let plain = self.open(&name, &sealed)?;
        // serde_json's message quotes no input, only line and column.
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|e| store_error("parse", e))
    }

    async fn save(
        &self,
        key: &TokenKey,
        credentials: &StoredCredentials,
    ) -> Result<(), OAuthError> {
        let name = entry_name(key);
        let plain = serde_json::to_vec(credentials).map_err(|e| store_error("encode", e))?;
        let sealed = self.seal(&name, &plain)?;
        self.redis
            .set_bytes("oauth", &name, &sealed)
            .await
            .map_err(|e| store_error("write", e))
    }

    async fn clear(&self, key: &TokenKey) -> Result<(), OAuthError> {
        self.redis
            .delete_bytes("oauth", &entry_name(key))
            .await
            .map_err(|e| store_error("remove", e))
    }

    async fn lock_refresh(&self, key: &TokenKey) -> Result<Option<Box<dyn TokenLock>>, OAuthError> {
        let name = format!("oauth-refresh:{}", entry_name(key));
        let holder = uuid::Uuid::new_v4().simple().to_string();
        let deadline = tokio::time::Instant::now() + LOCK_TTL;
        loop {
            let taken = self
                .redis
                .try_lock(&name, &holder, LOCK_TTL)
                .await
                .map_err(|e| store_error("lock", e))?;
            if taken {
                return Ok(Some(Box::new(RefreshLock {
                    redis: self.redis.clone(),
                    name,
                    holder,
                })));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(store_error(
                    "lock",
                    "another replica holds the refresh lock",
                ));
            }
            tokio::time::sleep(LOCK_POLL).await;
        }
    }
}

struct RefreshLock {
    redis: Arc<RedisState>,
    name: String,
    holder: String,
}

#[async_trait]
impl TokenLock for RefreshLock {
    async fn release(self: Box<Self>) {
        if let Err(e) = self.redis.unlock(&self.name, &self.holder).await {
            tracing::warn!(error = %e, "cannot release the token refresh lock; it lapses by itself");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_as_hex_or_base64_and_must_be_32_bytes() {
        let hex = "00".repeat(31) + "ff";
        assert_eq!(parse_key(&hex).expect("hex")[31], 0xff);
        let b64 = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        assert_eq!(parse_key(&b64).expect("base64"), [7u8; 32]);
        let short = base64::engine::general_purpose::STANDARD.encode([7u8; 16]);
        assert!(parse_key(&short).expect_err("short").contains("16 bytes"));
        assert!(parse_key("not a key!").is_err());
    }

    #[test]
    fn a_sealed_entry_opens_under_its_own_name_and_key_only() {
        let redis = RedisState::new(&mcpyard_gateway::state::RedisSettings {
            url: "redis://127.0.0.1:1".into(),
            password: None,
            prefix: "t".into(),
            timeout: Duration::from_secs(1),
            ca_file: None,
        })
        .expect("settings");
        let store = SharedTokenStore::new(redis.clone(), &[1u8; 32]);
        let sealed = store.seal("up", b"{\"tokens\":null}").expect("sealed");
        assert!(!sealed.windows(6).any(|w| w == b"tokens"), "not in clear");
        assert_eq!(
            store.open("up", &sealed).expect("opens"),
            b"{\"tokens\":null}"
        );
        assert!(store.open("other", &sealed).is_err(), "bound to its name");
        let stranger = SharedTokenStore::new(redis, &[2u8; 32]);
        let err = stranger.open("up", &sealed).expect_err("another key");
        assert!(err.to_string().contains("token_key_env"), "{err}");
    }
}
