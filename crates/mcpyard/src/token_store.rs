//! OAuth tokens kept between runs: one JSON file per upstream (and
//! identity, when there is one) under the XDG state folder, readable by the
//! user alone (file 0600, folders 0700), replaced atomically (a temporary
//! file renamed over the old one, so a crash leaves the old tokens or the
//! new ones, never half of each).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use mcpyard_client::oauth::{OAuthError, StoredCredentials, TokenKey, TokenStore};

/// Where tokens live: `$XDG_STATE_HOME/mcpyard/oauth`, else
/// `$HOME/.local/state/mcpyard/oauth`. `None` when neither is set (or is
/// not an absolute path, which the XDG spec says to ignore).
pub(crate) fn default_dir(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |v: String| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let state = lookup("XDG_STATE_HOME").and_then(absolute).or_else(|| {
        lookup("HOME")
            .and_then(absolute)
            .map(|h| h.join(".local/state"))
    })?;
    Some(state.join("mcpyard").join("oauth"))
}

/// A [`TokenStore`] over files in one folder.
#[derive(Debug, Clone)]
pub(crate) struct FileTokenStore {
    dir: PathBuf,
}

impl FileTokenStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The file of `key`: `NAME.json`, or `NAME@IDENTITY.json` with the
    /// identity percent-encoded (upstream names are already file-safe:
    /// letters, digits, `_` and `-`).
    pub(crate) fn path(&self, key: &TokenKey) -> PathBuf {
        let name = match &key.identity {
            None => key.upstream.clone(),
            Some(id) => format!("{}@{}", key.upstream, encode(id)),
        };
        self.dir.join(format!("{name}.json"))
    }

    /// Creates the folder (and its `mcpyard` parent) for the user alone,
    /// and takes the others' access away from one that exists.
    fn ensure_dir(&self) -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        for dir in [Some(self.dir.as_path()), self.dir.parent()]
            .into_iter()
            .flatten()
        {
            let mode = std::fs::metadata(dir)?.permissions().mode();
            if mode & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        Ok(())
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.ensure_dir()?;
        let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            // A leftover temporary file of a crashed run may be older and
            // wider: make sure of the mode whatever `open` found.
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// Characters other than letters, digits, `-`, `_` and `.` as `%XX`.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A store error naming the file, never its contents.
fn store_error(what: &str, path: &Path, e: impl std::fmt::Display) -> OAuthError {
    OAuthError::Store(format!("cannot {what} {}: {e}", path.display()))
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, key: &TokenKey) -> Result<Option<StoredCredentials>, OAuthError> {
        let path = self.path(key);
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error("read", &path, e)),
        };
        // serde_json's message quotes no input, only line and column.
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| store_error("parse", &path, e))
    }

    async fn save(
        &self,
        key: &TokenKey,
        credentials: &StoredCredentials,
    ) -> Result<(), OAuthError> {
        let path = self.path(key);
        let bytes = serde_json::to_vec_pretty(credentials)
            .map_err(|e| store_error("encode the tokens for", &path, e))?;
        let store = self.clone();
        let target = path.clone();
        tokio::task::spawn_blocking(move || store.write_atomically(&target, &bytes))
            .await
            .map_err(|e| store_error("write", &path, e))?
            .map_err(|e| store_error("write", &path, e))
    }

    async fn clear(&self, key: &TokenKey) -> Result<(), OAuthError> {
        let path = self.path(key);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error("remove", &path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpyard_client::oauth::{Secret, TokenSet};

    fn credentials(access: &str, refresh: &str) -> StoredCredentials {
        StoredCredentials {
            tokens: Some(TokenSet {
                access_token: Secret::new(access),
                refresh_token: Some(Secret::new(refresh)),
                expires_at: Some(1_900_000_000),
                obtained_at: None,
                scopes: vec!["mcp:tools".into()],
            }),
            client: None,
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn tokens_round_trip_in_a_private_file() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join("mcpyard/oauth");
        let store = FileTokenStore::new(dir.clone());
        let key = TokenKey::upstream("kc");
        assert_eq!(store.load(&key).await.unwrap(), None);

        store
            .save(&key, &credentials("at-1", "rt-1"))
            .await
            .unwrap();
        let file = dir.join("kc.json");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&state.path().join("mcpyard")), 0o700);
        assert_eq!(
            store.load(&key).await.unwrap(),
            Some(credentials("at-1", "rt-1"))
        );

        // Replaced whole, no temporary file left behind.
        store
            .save(&key, &credentials("at-2", "rt-2"))
            .await
            .unwrap();
        assert_eq!(
            store.load(&key).await.unwrap(),
            Some(credentials("at-2", "rt-2"))
        );
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["kc.json"]);

        store.clear(&key).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), None);
        store.clear(&key).await.unwrap();
    }

    #[tokio::test]
    async fn identities_get_files_of_their_own() {
        let state = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(state.path().to_owned());
        let alice = TokenKey {
            upstream: "gh".into(),
            identity: Some("alice@example.test/../x".into()),
        };
        store.save(&alice, &credentials("a", "b")).await.unwrap();
        store
            .save(&TokenKey::upstream("gh"), &credentials("c", "d"))
            .await
            .unwrap();
        assert_eq!(
            store.path(&alice),
            state.path().join("gh@alice%40example.test%2F..%2Fx.json")
        );
        assert_eq!(
            store.load(&alice).await.unwrap(),
            Some(credentials("a", "b"))
        );
    }

    #[tokio::test]
    async fn a_folder_open_to_others_is_closed() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join("oauth");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let store = FileTokenStore::new(dir.clone());
        store
            .save(&TokenKey::upstream("s"), &credentials("a", "b"))
            .await
            .unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[tokio::test]
    async fn a_damaged_file_is_an_error_that_shows_no_content() {
        let state = tempfile::tempdir().unwrap();
        let store = FileTokenStore::new(state.path().to_owned());
        let key = TokenKey::upstream("s");
        std::fs::write(
            store.path(&key),
            "{\"tokens\": {\"access_token\": \"leak-me\"",
        )
        .unwrap();
        let e = store.load(&key).await.unwrap_err().to_string();
        assert!(e.contains("s.json"), "{e}");
        assert!(!e.contains("leak-me"), "{e}");
    }

    #[test]
    fn the_folder_follows_xdg() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            default_dir(&env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Some(PathBuf::from("/s/mcpyard/oauth"))
        );
        assert_eq!(
            default_dir(&env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/state/mcpyard/oauth"))
        );
        assert_eq!(default_dir(&env(&[])), None);
    }
}
