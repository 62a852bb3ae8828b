//! OAuth toward HTTP MCP servers, as the MCP authorization specification
//! (2025-11-25 and later, with the 2025-03-26 fallbacks) describes it.
//!
//! The types here (configuration, token store hooks, errors) are always
//! compiled; the flows (`OAuthClient`) need the `oauth` cargo feature.
//!
//! An `OAuthClient` is given to a connection through
//! [`ConnectOptions::http_auth`](crate::ConnectOptions::http_auth): every HTTP
//! request then carries its bearer token, and a 401 or 403 from the server
//! runs discovery, registration and the grant as needed (see
//! [`HttpAuth`](crate::HttpAuth)).
//!
//! Tokens are kept through a [`TokenStore`] keyed by [`TokenKey`] (the
//! upstream and an optional identity); [`MemoryTokenStore`] keeps them for
//! the life of the process. A revoked or expired refresh token ends in
//! [`OAuthError::LoginRequired`].
//!
//! When the authorization server offers DPoP with ES256
//! (`dpop_signing_alg_values_supported`, RFC 9449), tokens are asked for
//! bound to a key the client makes and keeps in memory: each request then
//! carries `Authorization: DPoP ...` and a fresh proof
//! ([`HttpAuth::proof`](crate::HttpAuth::proof)), and a `use_dpop_nonce`
//! refusal, at the token endpoint or the server, is answered with the
//! server's nonce. A bound token kept in a store outlives the key: after a
//! restart it is refused and a new one obtained. Registration names the
//! client's `application_type` (SEP-837), an authorization response's `iss`
//! is checked against the issuer (RFC 9207), and
//! [`Grant::JwtBearer`] presents a workload's platform JWT (SEP-1933).

mod config;
mod error;
mod secret;
mod store;

#[cfg(feature = "oauth")]
mod client;
#[cfg(feature = "oauth")]
mod discovery;
#[cfg(feature = "oauth")]
mod dpop;
#[cfg(feature = "oauth")]
mod http;
#[cfg(feature = "oauth")]
mod pkce;
#[cfg(feature = "oauth")]
mod www_authenticate;

pub use config::{ClientAuthMethod, Grant, OAuthConfig, PrivateKeyJwt};
pub use error::OAuthError;
pub use secret::Secret;
pub use store::{
    MemoryTokenStore, RegisteredClient, StoredCredentials, TokenKey, TokenLock, TokenSet,
    TokenStore,
};

#[cfg(feature = "oauth")]
pub use client::{Authorizer, OAuthClient, PendingLogin};
