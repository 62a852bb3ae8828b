//! The hook through which an HTTP transport gets its `Authorization`
//! header and reports the server's refusals (401, 403). OAuth
//! (`oauth::OAuthClient`, feature `oauth`) is one implementation;
//! an application can bring its own.

use std::fmt;

use async_trait::async_trait;

use crate::ClientError;

/// A server's refusal of a request, as [`HttpAuth::challenged`] sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Refusal<'a> {
    /// 401, or 403 with `insufficient_scope`.
    pub status: u16,
    /// The `WWW-Authenticate` header, if any.
    pub www_authenticate: Option<&'a str>,
    /// The `Authorization` value the refused request carried, so that a
    /// refusal of credentials already replaced is told from a new one.
    pub sent: Option<&'a str>,
    /// How many times this request has been refused, this time included:
    /// 2 means the credentials obtained after its first refusal were
    /// refused too.
    pub attempt: u32,
    /// The `DPoP-Nonce` header (RFC 9449 section 9), if any: with a
    /// `use_dpop_nonce` challenge, the nonce the next proof must carry.
    pub dpop_nonce: Option<&'a str>,
}

/// Supplies credentials to the HTTP transports and reacts to refusals.
///
/// Every HTTP request (POST, the GET stream, DELETE) carries the header
/// [`authorization`](HttpAuth::authorization) returns. When the server
/// answers 401, or 403 naming `insufficient_scope`, the transport calls
/// [`challenged`](HttpAuth::challenged) and sends the request once more only
/// if it returns `Ok(true)`; the implementation bounds how often that
/// happens per request with [`Refusal::attempt`] (no loop), and the
/// transport stops after a few attempts anyway.
#[async_trait]
pub trait HttpAuth: Send + Sync + fmt::Debug {
    /// The `Authorization` header value for the next request (`Bearer ...`),
    /// or `None` to send none yet (the server will say what it wants).
    async fn authorization(&self) -> Result<Option<String>, ClientError>;

    /// The server refused a request. `Ok(true)`: new credentials are ready,
    /// send the request again; `Ok(false)`: give up and report the refusal;
    /// `Err`: report this instead.
    async fn challenged(&self, refusal: Refusal<'_>) -> Result<bool, ClientError>;

    /// The `DPoP` header (RFC 9449 proof) of one request that carries
    /// `authorization` (as [`authorization`](HttpAuth::authorization) gave
    /// it), for its `method` and `url`. The default: none (Bearer tokens).
    async fn proof(
        &self,
        _method: &str,
        _url: &str,
        _authorization: &str,
    ) -> Result<Option<String>, ClientError> {
        Ok(None)
    }

    /// A request that carried credentials was not refused. The default does
    /// nothing: `oauth::OAuthClient` bounds its retries
    /// per request ([`Refusal::attempt`]) and needs no such signal, but an
    /// implementation that tracks credentials across requests may.
    fn accepted(&self) {}
}
