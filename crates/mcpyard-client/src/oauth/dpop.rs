//! DPoP (RFC 9449, the SEP-1932 extension): tokens bound to a key of the
//! client's, each request carrying a fresh proof signed with it. The key is
//! an ES256 (P-256) pair made when the client is, held in memory only: after
//! a restart the bound tokens are useless and new ones are obtained.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::OAuthError;

/// The only algorithm offered.
pub(crate) const ALGORITHM: &str = "ES256";

/// The client's DPoP key and the nonces the servers asked for.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    jwk: Value,
    /// The authorization server's latest `DPoP-Nonce`.
    pub(crate) as_nonce: Mutex<Option<String>>,
    /// The MCP server's latest `DPoP-Nonce`.
    pub(crate) rs_nonce: Mutex<Option<String>>,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("jwk", &self.jwk)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new P-256 key pair.
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let rng = SystemRandom::new();
        let failed = |_| OAuthError::Config("cannot make a DPoP key".into());
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).map_err(failed)?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| OAuthError::Config("cannot make a DPoP key".into()))?;
        // The public key is the uncompressed point: 0x04 || x || y.
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            pair,
            rng,
            jwk,
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        })
    }

    /// A proof for one request: `method` and `url` (its query and fragment
    /// left out), bound to `access_token` (`ath`) for a resource request,
    /// with the server's `nonce` when it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, OAuthError> {
        let htu = match url::Url::parse(url) {
            Ok(mut u) => {
                u.set_query(None);
                u.set_fragment(None);
                u.to_string()
            }
            Err(_) => url.to_owned(),
        };
        let mut jti = [0u8; 16];
        self.rng
            .fill(&mut jti)
            .map_err(|_| OAuthError::Config("no randomness for a DPoP proof".into()))?;
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu,
            "iat": now_secs(),
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| OAuthError::Config("cannot sign a DPoP proof".into()))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }

    pub(crate) fn nonce(slot: &Mutex<Option<String>>) -> Option<String> {
        slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_nonce(slot: &Mutex<Option<String>>, nonce: &str) {
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(nonce.to_owned());
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::DpopKey;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    use serde_json::Value;

    #[test]
    fn a_proof_is_signed_by_the_key_it_names() {
        let key = DpopKey::generate().expect("key");
        let proof = key
            .proof(
                "POST",
                "https://rs.example/mcp?x=1",
                Some("tok"),
                Some("n1"),
            )
            .expect("proof");
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |s: &str| -> Value {
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).expect("b64")).expect("json")
        };
        let header = decode(parts[0]);
        let claims = decode(parts[1]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://rs.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert!(claims["ath"].is_string());
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().unwrap())
            .unwrap();
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().unwrap())
            .unwrap();
        let point = [&[4u8][..], &x, &y].concat();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies");
        let again = key
            .proof("POST", "https://rs.example/mcp", None, None)
            .unwrap();
        assert_ne!(
            decode(again.split('.').nth(1).unwrap())["jti"],
            claims["jti"]
        );
    }
}
