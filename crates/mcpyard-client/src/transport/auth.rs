//! The hook through which an HTTP transport gets its `Authorization`
//! header and reports the server's refusals (401, 403). OAuth
//! ([`crate::oauth::OAuthClient`], feature `oauth`) is one implementation;
//! an application can bring its own.

use std::fmt;

use async_trait::async_trait;

use crate::ClientError;

/// Supplies credentials to the HTTP transports and reacts to refusals.
///
/// Every HTTP request (POST, the GET stream, DELETE) carries the header
/// [`authorization`](HttpAuth::authorization) returns. When the server
/// answers 401 or 403, the transport calls [`challenged`](HttpAuth::challenged)
/// and sends the request once more only if it returns `Ok(true)`; the
/// implementation bounds how often that happens (no loop).
#[async_trait]
pub trait HttpAuth: Send + Sync + fmt::Debug {
    /// The `Authorization` header value for the next request (`Bearer ...`),
    /// or `None` to send none yet (the server will say what it wants).
    async fn authorization(&self) -> Result<Option<String>, ClientError>;

    /// The server refused a request: `status` is 401 or 403 and
    /// `www_authenticate` its `WWW-Authenticate` header, if any. `Ok(true)`:
    /// new credentials are ready, send the request again; `Ok(false)`: give
    /// up and report the refusal; `Err`: report this instead.
    async fn challenged(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<bool, ClientError>;
}
