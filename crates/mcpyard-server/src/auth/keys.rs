//! API keys: each a named identity with groups. Keys are held only as
//! SHA-256 digests, and a presented key is hashed once and compared with
//! every digest in constant time, so neither timings nor memory give a key
//! away. (API keys are long random strings: a fast hash is enough; argon2
//! is for passwords people choose, and would cost milliseconds per request.)

use std::fmt;

use mcpyard_gateway::{Identity, IdentityKind};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// One API key.
#[derive(Clone)]
pub struct ApiKeySpec {
    /// The identity's name (in logs, the audit and policy rules).
    pub name: String,
    pub groups: Vec<String>,
    pub secret: KeySecret,
}

/// The key itself, or only its digest.
#[derive(Clone)]
pub enum KeySecret {
    /// The key as clients send it (read from the environment).
    Clear(String),
    /// SHA-256 of the key, so the configuration need not hold it.
    Sha256([u8; 32]),
}

// By hand: the derived form would print the key.
impl fmt::Debug for ApiKeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKeySpec")
            .field("name", &self.name)
            .field("groups", &self.groups)
            .field("secret", &self.secret)
            .finish()
    }
}

// By hand: the derived form would print the key.
impl fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeySecret::Clear(_) => "<key>",
            KeySecret::Sha256(_) => "<sha256>",
        })
    }
}

/// The configured keys, ready to check.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ApiKeys {
    keys: Vec<([u8; 32], Identity)>,
}

impl ApiKeys {
    pub(crate) fn new(specs: &[ApiKeySpec]) -> Self {
        let keys = specs
            .iter()
            .map(|spec| {
                let digest = match &spec.secret {
                    KeySecret::Clear(key) => sha256(key),
                    KeySecret::Sha256(digest) => *digest,
                };
                let identity =
                    Identity::named(IdentityKind::ApiKey, spec.name.clone(), spec.groups.clone());
                (digest, identity)
            })
            .collect();
        Self { keys }
    }

    /// Whether one of the keys stands for `identity` (its name and groups).
    pub(crate) fn has(&self, identity: &Identity) -> bool {
        self.keys.iter().any(|(_, known)| known == identity)
    }

    /// The identity of the key `presented`, if it is one.
    pub(crate) fn find(&self, presented: &str) -> Option<Identity> {
        let digest = sha256(presented);
        // Every digest is compared, match or not, so the time taken does
        // not say which key (or how many) came first.
        let mut found = None;
        for (key, identity) in &self.keys {
            if bool::from(key.ct_eq(&digest)) && found.is_none() {
                found = Some(identity);
            }
        }
        found.cloned()
    }
}

/// SHA-256 of `text`, as `printf %s KEY | sha256sum` prints it (in bytes).
pub(crate) fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, secret: KeySecret) -> ApiKeySpec {
        ApiKeySpec {
            name: name.into(),
            groups: vec![format!("{name}-group")],
            secret,
        }
    }

    #[test]
    fn clear_and_hashed_keys_name_their_identity() {
        let keys = ApiKeys::new(&[
            spec("alice", KeySecret::Clear("alice-key".into())),
            spec("bob", KeySecret::Sha256(sha256("bob-key"))),
        ]);
        let alice = keys.find("alice-key").expect("alice");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.kind, IdentityKind::ApiKey);
        assert_eq!(alice.groups, vec!["alice-group".to_owned()]);
        assert_eq!(keys.find("bob-key").expect("bob").name, "bob");
        for wrong in ["", "alice-ke", "alice-key ", "bob", "ALICE-KEY"] {
            assert!(keys.find(wrong).is_none(), "{wrong}");
        }
    }

    #[test]
    fn the_digest_is_the_one_sha256sum_prints() {
        // printf %s secret | sha256sum
        let hex: String = sha256("secret")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
    }
}
