//! The OAuth flows behind one [`OAuthClient`] per upstream.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{discover, Discovered};
use super::dpop::now_secs;
use super::dpop::{self, DpopKey};
use super::http::{self as oauth_http};
use super::www_authenticate::BearerChallenge;
use super::{
    Grant, OAuthConfig, OAuthError, Secret, StoredCredentials, TokenKey, TokenSet, TokenStore,
};
use crate::{ClientError, HttpAuth, Refusal};

mod creds;
mod register;
mod tokens;

use creds::{grant_name, signing_key, ClientCreds, JWT_BEARER};

/// A token this close to its expiry is refreshed before use.
const EXPIRY_MARGIN_SECS: u64 = 30;
/// How early a token expiring at `at` is refreshed: the usual margin, or a
/// quarter of its life when that is shorter, so a token issued for less
/// than the margin is still used instead of fetched again for every request.
fn expiry_margin(at: u64, obtained_at: Option<u64>) -> u64 {
    match obtained_at {
        Some(obtained) => EXPIRY_MARGIN_SECS.min(at.saturating_sub(obtained) / 4),
        None => EXPIRY_MARGIN_SECS,
    }
}

/// Carries a person through the authorization server's login page during a
/// connection: given the authorization URL, returns the redirect URL the
/// browser came back to (or just the `code`). Without one, a connection that
/// needs a person fails with [`OAuthError::LoginRequired`] and the login
/// happens apart ([`OAuthClient::begin_login`] / [`OAuthClient::finish_login`]).
#[async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Takes the person (or a test) to `authorization_url` and returns where
    /// the authorization server sent them back.
    async fn authorize(&self, authorization_url: &str) -> Result<String, OAuthError>;
}

/// A login started by [`OAuthClient::begin_login`]: open
/// [`authorization_url`](Self::authorization_url) in a browser, then hand the
/// redirect to [`OAuthClient::finish_login`]. Its `Debug` hides the PKCE
/// verifier and the state.
pub struct PendingLogin {
    /// Where the person logs in.
    pub authorization_url: String,
    pub(crate) state: Secret,
    pub(crate) verifier: Secret,
    discovered: Discovered,
    client: ClientCreds,
    scopes: Vec<String>,
    redirect_uri: String,
}

impl fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingLogin")
            .field("issuer", &self.discovered.server.issuer)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// What one upstream's flows know, behind one lock so that one flow runs
/// at a time.
#[derive(Default)]
struct State {
    loaded: bool,
    stored: StoredCredentials,
    discovered: Option<Discovered>,
    /// Scopes the server asked for last (WWW-Authenticate), kept for refreshes.
    wanted_scopes: Option<Vec<String>>,
}

/// OAuth for one upstream: discovery, registration, grants, refresh and
/// step-up, with tokens kept in a [`TokenStore`]. Implements [`HttpAuth`],
/// so it is given to a connection through
/// [`ConnectOptions::http_auth`](crate::ConnectOptions::http_auth).
///
/// A 401 runs discovery and the grant (or a refresh); a second 401 for the
/// same request (the fresh token refused too) is reported, not retried; a
/// 403 `insufficient_scope` asks for the union of the scopes held and those
/// named, for one request at most [`OAuthConfig::max_step_ups`] times
/// (counting its first token, if it needed one).
///
/// A machine's own credential (client credentials, pre-registered client):
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use mcpyard_client::oauth::{Grant, MemoryTokenStore, OAuthClient, OAuthConfig, Secret, TokenKey};
/// use mcpyard_client::{ConnectOptions, McpClient, NoopHandler, TransportSpec};
///
/// let url = "https://mcp.example.com/mcp";
/// let config = OAuthConfig {
///     grant: Grant::ClientCredentials,
///     client_id: Some("reporting-bot".into()),
///     client_secret: Some(Secret::new(std::env::var("REPORTING_BOT_SECRET")?)),
///     ..OAuthConfig::default()
/// };
/// let store = Arc::new(MemoryTokenStore::new());
/// let oauth = OAuthClient::new(url, TokenKey::upstream("reports"), config, store)?;
/// let options = ConnectOptions { http_auth: Some(Arc::new(oauth)), ..ConnectOptions::default() };
/// let spec = TransportSpec::StreamableHttp { url: url.into(), headers: vec![] };
/// let client = McpClient::connect(spec, Arc::new(NoopHandler), options).await?;
/// # Ok(()) }
/// ```
///
/// A person's login, done apart from any connection (the tokens land in the
/// store, where the connection's client finds them):
///
/// ```no_run
/// # async fn demo(oauth: mcpyard_client::oauth::OAuthClient) -> Result<(), mcpyard_client::oauth::OAuthError> {
/// let pending = oauth.begin_login().await?;
/// println!("open {}", pending.authorization_url);
/// // ... the browser comes back to the redirect URI (a loopback listener),
/// // or the person pastes the redirect URL or the code:
/// let redirect = "http://127.0.0.1:8976/callback?code=...&state=...";
/// oauth.finish_login(pending, redirect).await?;
/// # Ok(()) }
/// ```
pub struct OAuthClient {
    server_url: Url,
    key: TokenKey,
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    authorizer: Option<Arc<dyn Authorizer>>,
    http: reqwest::Client,
    state: Mutex<State>,
    /// The key DPoP-bound tokens are bound to (used when the authorization
    /// server offers DPoP with ES256).
    dpop: DpopKey,
    /// The access token issued as a DPoP token, if the current one is.
    dpop_bound: std::sync::Mutex<Option<String>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("key", &self.key)
            .field("grant", &grant_name(&self.config.grant))
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// OAuth toward the MCP endpoint `server_url`, with tokens kept under `key`.
    pub fn new(
        server_url: &str,
        key: TokenKey,
        config: OAuthConfig,
        store: Arc<dyn TokenStore>,
    ) -> Result<Self, OAuthError> {
        let server_url = Url::parse(server_url)
            .map_err(|e| OAuthError::Config(format!("invalid server URL: {e}")))?;
        if let Some(key) = &config.private_key {
            signing_key(key)?;
        }
        Ok(Self {
            server_url,
            key,
            config,
            store,
            authorizer: None,
            http: oauth_http::build()?,
            state: Mutex::new(State::default()),
            dpop: DpopKey::generate()?,
            dpop_bound: std::sync::Mutex::new(None),
        })
    }

    /// Lets connections run the authorization-code login themselves.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The token store key.
    pub fn key(&self) -> &TokenKey {
        &self.key
    }

    /// Starts an authorization-code login: discovery (asking the server
    /// without credentials to learn where its metadata is), registration,
    /// PKCE. Open the returned URL, then call [`finish_login`](Self::finish_login).
    pub async fn begin_login(&self) -> Result<PendingLogin, OAuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        let challenge = self.probe().await?;
        let discovered = self
            .discovered(&mut state, challenge.as_ref(), true)
            .await?;
        let scopes = self.scopes_for(&state, &discovered, challenge.and_then(|c| c.scope));
        self.begin(&mut state, discovered, scopes).await
    }

    /// Finishes a login with the redirect URL the browser came back to (or
    /// the pasted `code`): checks `state` and `iss`, exchanges the code and
    /// saves the tokens.
    pub async fn finish_login(
        &self,
        pending: PendingLogin,
        redirect: &str,
    ) -> Result<(), OAuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        let tokens = self.exchange_code(&pending, redirect).await?;
        self.set_tokens(&mut state, tokens).await
    }

    /// A valid access token: the stored one, a refreshed one, or (client
    /// credentials, identity assertion, or with an [`Authorizer`]) a new one.
    pub async fn access_token(&self) -> Result<Secret, OAuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        if let Some(token) = self.current(&mut state).await? {
            return Ok(token);
        }
        let challenge = self.probe().await?;
        self.obtain(&mut state, challenge.as_ref()).await?;
        self.current(&mut state)
            .await?
            .ok_or_else(|| OAuthError::Refused("no token was issued".into()))
    }

    /// Forgets the stored tokens (the client registration is kept).
    pub async fn logout(&self) -> Result<(), OAuthError> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        state.stored.tokens = None;
        self.store.save(&self.key, &state.stored).await
    }

    async fn load(&self, state: &mut State) -> Result<(), OAuthError> {
        if !state.loaded {
            state.stored = self.store.load(&self.key).await?.unwrap_or_default();
            state.loaded = true;
        }
        Ok(())
    }

    async fn save(&self, state: &State) -> Result<(), OAuthError> {
        self.store.save(&self.key, &state.stored).await
    }

    async fn set_tokens(&self, state: &mut State, tokens: TokenSet) -> Result<(), OAuthError> {
        tracing::debug!(
            target: "mcpyard::oauth",
            upstream = %self.key.upstream,
            expires_in = ?tokens.expires_at.map(|t| t.saturating_sub(now_secs())),
            refresh = tokens.refresh_token.is_some(),
            "new tokens"
        );
        state.stored.tokens = Some(tokens);
        self.save(state).await
    }

    /// The current access token, refreshed first when it is about to expire.
    async fn current(&self, state: &mut State) -> Result<Option<Secret>, OAuthError> {
        let Some(tokens) = &state.stored.tokens else {
            return Ok(None);
        };
        let fresh = tokens
            .expires_at
            .is_none_or(|at| at > now_secs() + expiry_margin(at, tokens.obtained_at));
        if fresh {
            return Ok(Some(tokens.access_token.clone()));
        }
        if tokens.refresh_token.is_some() {
            match self.refresh(state).await {
                Ok(()) => {}
                // Client credentials and assertions need no person: start over.
                Err(OAuthError::LoginRequired { .. })
                    if !matches!(self.config.grant, Grant::AuthorizationCode { .. }) => {}
                Err(e) => return Err(e),
            }
        } else {
            state.stored.tokens = None;
        }
        Ok(state.stored.tokens.as_ref().map(|t| t.access_token.clone()))
    }

    /// An unauthenticated request to the server, for the challenge of its
    /// 401 (where its metadata is, which scopes it wants).
    async fn probe(&self) -> Result<Option<BearerChallenge>, OAuthError> {
        let resp = self
            .http
            .post(self.server_url.as_str())
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .json(&json!({"jsonrpc": "2.0", "id": "mcpyard-oauth-probe", "method": "ping"}))
            .send()
            .await
            .map_err(oauth_http::http_error)?;
        Ok(resp
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(BearerChallenge::parse))
    }

    async fn discovered(
        &self,
        state: &mut State,
        challenge: Option<&BearerChallenge>,
        again: bool,
    ) -> Result<Discovered, OAuthError> {
        if !again {
            if let Some(d) = &state.discovered {
                return Ok(d.clone());
            }
        }
        let found = discover(
            &self.http,
            &self.server_url,
            challenge.and_then(|c| c.resource_metadata.as_deref()),
        )
        .await?;
        let found = match &self.config.resource {
            Some(r) => Discovered {
                resource: r.clone(),
                ..found
            },
            None => found,
        };
        state.discovered = Some(found.clone());
        Ok(found)
    }

    /// Scopes to ask for: configured, else the challenge's, else the
    /// resource's `scopes_supported`, else none.
    fn scopes_for(
        &self,
        state: &State,
        discovered: &Discovered,
        challenged: Option<Vec<String>>,
    ) -> Vec<String> {
        if let Some(s) = &self.config.scopes {
            return s.clone();
        }
        challenged
            .or_else(|| state.wanted_scopes.clone())
            .or_else(|| discovered.resource_scopes.clone())
            .unwrap_or_default()
    }

    /// Obtains tokens by the configured grant (or a refresh).
    async fn obtain(
        &self,
        state: &mut State,
        challenge: Option<&BearerChallenge>,
    ) -> Result<(), OAuthError> {
        let discovered = self.discovered(state, challenge, false).await?;
        let scopes = self.scopes_for(state, &discovered, challenge.and_then(|c| c.scope.clone()));
        state.wanted_scopes = Some(scopes.clone()).filter(|s| !s.is_empty());
        let tokens = match &self.config.grant {
            Grant::ClientCredentials => {
                let client = self.client(state, &discovered).await?;
                let mut form = vec![("grant_type", "client_credentials".to_owned())];
                self.token(&discovered, &client, &mut form, &scopes).await?
            }
            Grant::IdentityAssertion {
                idp_token_endpoint,
                idp_client_id,
                idp_client_secret,
                id_token,
            } => {
                let assertion = self
                    .identity_assertion(
                        &discovered,
                        idp_token_endpoint,
                        idp_client_id,
                        idp_client_secret.as_ref(),
                        id_token,
                        &scopes,
                    )
                    .await?;
                let client = self.client(state, &discovered).await?;
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.expose().to_owned()),
                ];
                self.token(&discovered, &client, &mut form, &scopes).await?
            }
            Grant::JwtBearer { assertion } => {
                let client = self.client(state, &discovered).await?;
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.expose().to_owned()),
                ];
                self.token(&discovered, &client, &mut form, &scopes).await?
            }
            Grant::AuthorizationCode { .. } => {
                let Some(authorizer) = &self.authorizer else {
                    return Err(self.login_required("no token yet"));
                };
                let pending = self.begin(state, discovered, scopes).await?;
                let redirect = authorizer.authorize(&pending.authorization_url).await?;
                self.exchange_code(&pending, &redirect).await?
            }
        };
        self.set_tokens(state, tokens).await
    }

    fn login_required(&self, reason: &str) -> OAuthError {
        OAuthError::LoginRequired {
            upstream: self.key.upstream.clone(),
            reason: reason.to_owned(),
        }
    }

    async fn on_refusal(&self, refusal: Refusal<'_>) -> Result<bool, OAuthError> {
        // RFC 9449 section 9: the server wants its nonce in the proof; the
        // request is sent again with it, unless the proof carried that very
        // nonce already (no loop).
        if let (Some(nonce), Some(challenge)) = (refusal.dpop_nonce, refusal.www_authenticate) {
            let known = DpopKey::nonce(&self.dpop.rs_nonce);
            if challenge.contains("use_dpop_nonce") && known.as_deref() != Some(nonce) {
                DpopKey::set_nonce(&self.dpop.rs_nonce, nonce);
                return Ok(true);
            }
        }
        let challenge = refusal
            .www_authenticate
            .and_then(BearerChallenge::parse)
            .unwrap_or_default();
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        let current = state
            .stored
            .tokens
            .as_ref()
            .map(|t| self.authorization_value(t.access_token.expose()));
        if current.is_some() && current.as_deref() != refusal.sent {
            // Another request already replaced the refused credentials.
            return Ok(true);
        }
        if refusal.status == 403 && challenge.is_insufficient_scope() {
            if refusal.attempt > self.config.max_step_ups {
                return Err(OAuthError::Refused(format!(
                    "still insufficient scope after {} step-up(s)",
                    self.config.max_step_ups
                )));
            }
            let mut scopes = state
                .stored
                .tokens
                .as_ref()
                .map(|t| t.scopes.clone())
                .unwrap_or_default();
            for s in challenge.scope.iter().flatten() {
                if !scopes.contains(s) {
                    scopes.push(s.clone());
                }
            }
            tracing::debug!(target: "mcpyard::oauth", upstream = %self.key.upstream, scopes = %scopes.join(" "), "stepping up");
            let widened = BearerChallenge {
                scope: Some(scopes),
                ..challenge
            };
            self.obtain(&mut state, Some(&widened)).await?;
            return Ok(true);
        }
        if refusal.attempt > 1 {
            return Err(OAuthError::Refused(
                "the server refused a token it had just been issued".into(),
            ));
        }
        // A token that worked before was refused (expired, revoked): a
        // refresh first, else the grant again; a person's login is needed
        // when neither works.
        if state
            .stored
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh_token.is_some())
        {
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(true),
                Err(OAuthError::LoginRequired { .. }) if self.can_obtain_alone() => {}
                Err(e) => return Err(e),
            }
        }
        state.stored.tokens = None;
        if refusal.sent.is_some() {
            // The metadata may have changed along with the token.
            state.discovered = None;
        }
        self.obtain(&mut state, Some(&challenge)).await?;
        Ok(true)
    }

    /// Whether tokens are asked for bound to the DPoP key: the
    /// authorization server offers DPoP with ES256.
    fn uses_dpop(&self, discovered: &Discovered) -> bool {
        self.config.dpop
            && discovered
                .server
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|algs| algs.iter().any(|a| a == dpop::ALGORITHM))
    }

    /// Whether `token` is the DPoP-bound one.
    fn is_dpop_bound(&self, token: &str) -> bool {
        self.dpop_bound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_deref()
            == Some(token)
    }

    /// The `Authorization` value for `token`: the DPoP scheme for a bound
    /// token, Bearer otherwise.
    fn authorization_value(&self, token: &str) -> String {
        if self.is_dpop_bound(token) {
            format!("DPoP {token}")
        } else {
            format!("Bearer {token}")
        }
    }

    fn can_obtain_alone(&self) -> bool {
        self.authorizer.is_some() || !matches!(self.config.grant, Grant::AuthorizationCode { .. })
    }
}

#[async_trait]
impl HttpAuth for OAuthClient {
    async fn authorization(&self) -> Result<Option<String>, ClientError> {
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        Ok(self
            .current(&mut state)
            .await?
            .map(|t| self.authorization_value(t.expose())))
    }

    async fn proof(
        &self,
        method: &str,
        url: &str,
        authorization: &str,
    ) -> Result<Option<String>, ClientError> {
        let Some(token) = authorization.strip_prefix("DPoP ") else {
            return Ok(None);
        };
        if !self.is_dpop_bound(token) {
            return Ok(None);
        }
        let nonce = DpopKey::nonce(&self.dpop.rs_nonce);
        Ok(Some(
            self.dpop
                .proof(method, url, Some(token), nonce.as_deref())
                .map_err(ClientError::from)?,
        ))
    }

    async fn challenged(&self, refusal: Refusal<'_>) -> Result<bool, ClientError> {
        Ok(self.on_refusal(refusal).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::creds::{choose_method, is_native_redirect, ClientCreds};
    use super::{OAuthClient, PendingLogin};
    use crate::oauth::discovery::{Discovered, ServerMetadata};
    use crate::oauth::ClientAuthMethod;
    use crate::oauth::{MemoryTokenStore, OAuthConfig, OAuthError, Secret, TokenKey};

    fn pending(iss_promised: bool) -> PendingLogin {
        PendingLogin {
            authorization_url: "https://as.example/authorize".into(),
            state: Secret::new("the-state"),
            verifier: Secret::new("the-verifier"),
            discovered: Discovered {
                resource: "https://mcp.example/mcp".into(),
                resource_scopes: None,
                server: ServerMetadata {
                    issuer: "https://as.example".into(),
                    authorization_endpoint: Some("https://as.example/authorize".into()),
                    // Nothing listens there: every case below must fail
                    // before the code is exchanged.
                    token_endpoint: Some("http://127.0.0.1:9/token".into()),
                    registration_endpoint: None,
                    code_challenge_methods_supported: Some(vec!["S256".into()]),
                    token_endpoint_auth_methods_supported: None,
                    client_id_metadata_document_supported: false,
                    authorization_response_iss_parameter_supported: iss_promised,
                    dpop_signing_alg_values_supported: None,
                },
                from_metadata: true,
            },
            client: ClientCreds {
                client_id: "c".into(),
                secret: None,
                method: ClientAuthMethod::None,
            },
            scopes: vec![],
            redirect_uri: "http://127.0.0.1:1/callback".into(),
        }
    }

    async fn redirect_error(iss_promised: bool, redirect: &str) -> String {
        let oauth = OAuthClient::new(
            "https://mcp.example/mcp",
            TokenKey::upstream("t"),
            OAuthConfig::default(),
            Arc::new(MemoryTokenStore::new()),
        )
        .unwrap();
        match oauth.exchange_code(&pending(iss_promised), redirect).await {
            Err(OAuthError::Redirect(why)) => why,
            other => panic!("{redirect}: {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_redirect_is_checked_before_the_code_is_exchanged() {
        let cb = "http://127.0.0.1:1/callback";
        let state = redirect_error(false, &format!("{cb}?code=x&state=forged")).await;
        assert!(state.contains("state"), "{state}");
        let iss = redirect_error(
            false,
            &format!("{cb}?code=x&state=the-state&iss=https%3A%2F%2Fevil.example"),
        )
        .await;
        assert!(iss.contains("evil.example"), "{iss}");
        let missing_iss = redirect_error(true, &format!("{cb}?code=x&state=the-state")).await;
        assert!(missing_iss.contains("iss"), "{missing_iss}");
        let refused = redirect_error(
            false,
            &format!("{cb}?error=access_denied&error_description=no&state=the-state"),
        )
        .await;
        assert!(refused.contains("access_denied"), "{refused}");
        let no_code = redirect_error(false, &format!("{cb}?state=the-state")).await;
        assert!(no_code.contains("no code"), "{no_code}");
    }

    #[test]
    fn loopback_and_own_scheme_redirects_are_native() {
        assert!(is_native_redirect("http://127.0.0.1:3333/callback"));
        assert!(is_native_redirect("http://localhost/cb"));
        assert!(is_native_redirect("com.example.app:/cb"));
        assert!(!is_native_redirect("https://app.example/cb"));
        assert!(!is_native_redirect("http://app.example/cb"));
    }

    #[test]
    fn the_auth_method_follows_what_the_server_offers() {
        let only = |m: &str| vec![m.to_owned()];
        assert_eq!(
            choose_method(false, true, Some(&only("client_secret_post"))),
            ClientAuthMethod::ClientSecretPost
        );
        assert_eq!(
            choose_method(false, true, None),
            ClientAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            choose_method(false, true, Some(&only("none"))),
            ClientAuthMethod::None
        );
        assert_eq!(
            choose_method(true, false, None),
            ClientAuthMethod::PrivateKeyJwt
        );
        assert_eq!(choose_method(false, false, None), ClientAuthMethod::None);
    }

    #[test]
    fn a_short_lived_token_is_used_for_most_of_its_life() {
        // Issued for 8 s: refreshed 2 s early, not 30 s early (at once).
        assert_eq!(super::expiry_margin(1_008, Some(1_000)), 2);
        assert_eq!(
            super::expiry_margin(4_600, Some(1_000)),
            super::EXPIRY_MARGIN_SECS
        );
        assert_eq!(super::expiry_margin(4_600, None), super::EXPIRY_MARGIN_SECS);
    }
}
