//! PKCE (RFC 7636, S256 only) and the random values of a login.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::{OAuthError, Secret};

/// 32 random bytes, base64url: a PKCE verifier (43 characters), a `state`,
/// a JWT id.
pub(crate) fn random_token() -> Result<Secret, OAuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| OAuthError::Config(format!("no randomness from the system: {e}")))?;
    Ok(Secret::new(URL_SAFE_NO_PAD.encode(bytes)))
}

/// The S256 challenge of a verifier.
pub(crate) fn challenge(verifier: &Secret) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.expose().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::{challenge, random_token};
    use crate::oauth::Secret;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        let verifier = Secret::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(
            challenge(&verifier),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_enough_and_differ() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.expose().len(), 43);
        assert_ne!(a, b);
    }
}
