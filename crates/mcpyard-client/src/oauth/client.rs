//! The OAuth flows behind one [`OAuthClient`] per upstream.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{discover, Discovered};
use super::dpop::now_secs;
use super::dpop::{self, DpopKey};
use super::http::{self as oauth_http, RawToken};
use super::pkce;
use super::www_authenticate::BearerChallenge;
use super::{
    ClientAuthMethod, Grant, OAuthConfig, OAuthError, PrivateKeyJwt, RegisteredClient, Secret,
    StoredCredentials, TokenKey, TokenSet, TokenStore,
};
use crate::{ClientError, HttpAuth, Refusal};

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

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const CLIENT_ASSERTION_JWT: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

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

/// The client as it authenticates at the token endpoint.
#[derive(Clone)]
struct ClientCreds {
    client_id: String,
    secret: Option<Secret>,
    method: ClientAuthMethod,
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

fn grant_name(grant: &Grant) -> &'static str {
    match grant {
        Grant::ClientCredentials => "client_credentials",
        Grant::AuthorizationCode { .. } => "authorization_code",
        Grant::IdentityAssertion { .. } => "identity_assertion",
        Grant::JwtBearer { .. } => "jwt_bearer",
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

    /// The client registration, in the MCP spec's order.
    async fn client(
        &self,
        state: &mut State,
        discovered: &Discovered,
    ) -> Result<ClientCreds, OAuthError> {
        let server = &discovered.server;
        let supported = server.token_endpoint_auth_methods_supported.as_deref();
        if let Some(client_id) = &self.config.client_id {
            let secret = self.config.client_secret.clone();
            let method = self.config.auth_method.unwrap_or_else(|| {
                choose_method(
                    self.config.private_key.is_some(),
                    secret.is_some(),
                    supported,
                )
            });
            return Ok(ClientCreds {
                client_id: client_id.clone(),
                secret,
                method,
            });
        }
        if let Some(reg) = &state.stored.client {
            if reg.issuer == server.issuer {
                return Ok(registered_creds(reg, supported));
            }
        }
        if let Some(url) = &self.config.client_metadata_url {
            if server.client_id_metadata_document_supported {
                return Ok(ClientCreds {
                    client_id: url.clone(),
                    secret: None,
                    method: ClientAuthMethod::None,
                });
            }
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(OAuthError::Registration(format!(
                "the authorization server {} offers no dynamic registration{}: configure a client id (and secret) registered there for upstream `{}`",
                server.issuer,
                if server.client_id_metadata_document_supported {
                    " (it accepts client ID metadata documents: or configure the URL of one)"
                } else {
                    ""
                },
                self.key.upstream
            )));
        };
        let endpoint = Url::parse(endpoint)
            .map_err(|e| OAuthError::Discovery(format!("bad registration endpoint: {e}")))?;
        let mut body = json!({
            "client_name": self.config.client_name,
            "token_endpoint_auth_method": "none",
        });
        // SEP-837: the kind of client, so the server can hold it to the
        // redirect rules of its kind; one without a redirect (client
        // credentials, identity assertion) runs on a server, like a web one.
        body["application_type"] = json!(match &self.config.grant {
            Grant::AuthorizationCode { redirect_uri } if is_native_redirect(redirect_uri) =>
                "native",
            _ => "web",
        });
        match &self.config.grant {
            Grant::AuthorizationCode { redirect_uri } => {
                body["redirect_uris"] = json!([redirect_uri]);
                body["grant_types"] = json!(["authorization_code", "refresh_token"]);
                body["response_types"] = json!(["code"]);
            }
            Grant::ClientCredentials => {
                body["grant_types"] = json!(["client_credentials"]);
                body["token_endpoint_auth_method"] = json!("client_secret_basic");
            }
            Grant::IdentityAssertion { .. } => {
                body["grant_types"] = json!([JWT_BEARER]);
                body["token_endpoint_auth_method"] = json!("client_secret_basic");
            }
            Grant::JwtBearer { .. } => {
                body["grant_types"] = json!([JWT_BEARER]);
            }
        }
        let answer = oauth_http::post_json(&self.http, &endpoint, &body).await?;
        let client_id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| OAuthError::Registration("the answer has no client_id".into()))?;
        let reg = RegisteredClient {
            issuer: server.issuer.clone(),
            client_id: client_id.to_owned(),
            client_secret: answer
                .get("client_secret")
                .and_then(Value::as_str)
                .map(Secret::from),
            token_endpoint_auth_method: answer
                .get("token_endpoint_auth_method")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        tracing::debug!(target: "mcpyard::oauth", upstream = %self.key.upstream, client_id = %reg.client_id, "registered dynamically");
        let creds = registered_creds(&reg, supported);
        state.stored.client = Some(reg);
        self.save(state).await?;
        Ok(creds)
    }

    /// Builds the authorization URL of a new login.
    async fn begin(
        &self,
        state: &mut State,
        discovered: Discovered,
        scopes: Vec<String>,
    ) -> Result<PendingLogin, OAuthError> {
        let Grant::AuthorizationCode { redirect_uri } = &self.config.grant else {
            return Err(OAuthError::Config(format!(
                "upstream `{}` uses the {} grant: there is no login",
                self.key.upstream,
                grant_name(&self.config.grant)
            )));
        };
        let server = &discovered.server;
        if discovered.from_metadata
            && !server
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|m| m == "S256"))
        {
            // MCP authorization: without advertised S256 PKCE the client
            // must not go on.
            return Err(OAuthError::Discovery(format!(
                "the authorization server {} does not advertise PKCE S256 (code_challenge_methods_supported)",
                server.issuer
            )));
        }
        let endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
            OAuthError::Discovery(format!("{} has no authorization endpoint", server.issuer))
        })?;
        let mut url = Url::parse(endpoint)
            .map_err(|e| OAuthError::Discovery(format!("bad authorization endpoint: {e}")))?;
        let client = self.client(state, &discovered).await?;
        let verifier = pkce::random_token()?;
        let csrf = pkce::random_token()?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", csrf.expose())
                .append_pair("code_challenge", &pkce::challenge(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &discovered.resource);
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
        }
        Ok(PendingLogin {
            authorization_url: url.to_string(),
            state: csrf,
            verifier,
            discovered,
            client,
            scopes,
            redirect_uri: redirect_uri.clone(),
        })
    }

    /// Checks the redirect (`state`, `iss`, `error`) and exchanges its code.
    async fn exchange_code(
        &self,
        pending: &PendingLogin,
        redirect: &str,
    ) -> Result<TokenSet, OAuthError> {
        let redirect = redirect.trim();
        let code = match Url::parse(redirect) {
            Ok(url) if url.query().is_some() => {
                let param = |name: &str| {
                    url.query_pairs()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.into_owned())
                };
                if let Some(error) = param("error") {
                    return Err(OAuthError::Redirect(format!(
                        "the authorization server answered {error}{}",
                        param("error_description")
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default()
                    )));
                }
                if param("state").as_deref() != Some(pending.state.expose()) {
                    return Err(OAuthError::Redirect(
                        "the state does not match the login's".into(),
                    ));
                }
                // RFC 9207: an `iss` must name the server the login went to,
                // and a server that promises one must send it.
                match param("iss") {
                    Some(iss) if iss != pending.discovered.server.issuer => {
                        return Err(OAuthError::Redirect(format!(
                            "the redirect comes from issuer {iss}, not {}",
                            pending.discovered.server.issuer
                        )));
                    }
                    None if pending
                        .discovered
                        .server
                        .authorization_response_iss_parameter_supported =>
                    {
                        return Err(OAuthError::Redirect(
                            "the redirect has no `iss` although the server promises one".into(),
                        ));
                    }
                    _ => {}
                }
                param("code")
                    .ok_or_else(|| OAuthError::Redirect("the redirect has no code".into()))?
            }
            // A code pasted by hand: no redirect to check.
            _ if !redirect.is_empty() && !redirect.contains(['/', '?', ' ']) => redirect.to_owned(),
            _ => {
                return Err(OAuthError::Redirect(
                    "neither a redirect URL nor a code".into(),
                ))
            }
        };
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", pending.redirect_uri.clone()),
            ("code_verifier", pending.verifier.expose().to_owned()),
        ];
        self.token(
            &pending.discovered,
            &pending.client,
            &mut form,
            &pending.scopes,
        )
        .await
    }

    /// Refreshes the tokens; a refused refresh token ends in `LoginRequired`.
    async fn refresh(&self, state: &mut State) -> Result<(), OAuthError> {
        let Some(refresh_token) = state
            .stored
            .tokens
            .as_ref()
            .and_then(|t| t.refresh_token.clone())
        else {
            return Err(self.login_required("no refresh token"));
        };
        let discovered = self.discovered(state, None, false).await?;
        let client = self.client(state, &discovered).await?;
        let scopes = state
            .stored
            .tokens
            .as_ref()
            .map(|t| t.scopes.clone())
            .unwrap_or_default();
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.expose().to_owned()),
        ];
        match self.token(&discovered, &client, &mut form, &[]).await {
            Ok(mut tokens) => {
                if tokens.refresh_token.is_none() {
                    tokens.refresh_token = Some(refresh_token);
                }
                if tokens.scopes.is_empty() {
                    tokens.scopes = scopes;
                }
                self.set_tokens(state, tokens).await
            }
            Err(OAuthError::TokenRefused { error, .. }) if error == "invalid_grant" => {
                tracing::info!(target: "mcpyard::oauth", upstream = %self.key.upstream, "the refresh token was refused; a new login is needed");
                state.stored.tokens = None;
                self.save(state).await?;
                Err(self.login_required("the refresh token was refused"))
            }
            Err(e) => Err(e),
        }
    }

    /// A token request with the client's authentication and the resource.
    async fn token(
        &self,
        discovered: &Discovered,
        client: &ClientCreds,
        form: &mut Vec<(&'static str, String)>,
        scopes: &[String],
    ) -> Result<TokenSet, OAuthError> {
        let server = &discovered.server;
        let endpoint = server.token_endpoint.as_deref().ok_or_else(|| {
            OAuthError::Discovery(format!("{} has no token endpoint", server.issuer))
        })?;
        let endpoint = Url::parse(endpoint)
            .map_err(|e| OAuthError::Discovery(format!("bad token endpoint: {e}")))?;
        form.push(("resource", discovered.resource.clone()));
        let refreshing = form
            .iter()
            .any(|(k, v)| *k == "grant_type" && v == "refresh_token");
        let by_code = form
            .iter()
            .any(|(k, v)| *k == "grant_type" && v == "authorization_code");
        if !scopes.is_empty() && !by_code && !refreshing {
            form.push(("scope", scopes.join(" ")));
        }
        let mut basic = None;
        match client.method {
            ClientAuthMethod::ClientSecretBasic => {
                let secret = client.secret.as_ref().ok_or_else(|| {
                    OAuthError::Config("client_secret_basic needs a client secret".into())
                })?;
                basic = Some((client.client_id.as_str(), secret));
            }
            ClientAuthMethod::ClientSecretPost => {
                let secret = client.secret.as_ref().ok_or_else(|| {
                    OAuthError::Config("client_secret_post needs a client secret".into())
                })?;
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret.expose().to_owned()));
            }
            ClientAuthMethod::PrivateKeyJwt => {
                let key = self.config.private_key.as_ref().ok_or_else(|| {
                    OAuthError::Config("private_key_jwt needs a private key".into())
                })?;
                let assertion = client_assertion(key, &client.client_id, &server.issuer)?;
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_JWT.to_owned()));
                form.push(("client_assertion", assertion.expose().to_owned()));
            }
            ClientAuthMethod::None => form.push(("client_id", client.client_id.clone())),
        }
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let dpop = self.uses_dpop(discovered).then_some(&self.dpop);
        let raw: RawToken =
            oauth_http::token_request(&self.http, &endpoint, &pairs, basic, dpop).await?;
        *self.dpop_bound.lock().unwrap_or_else(|e| e.into_inner()) =
            raw.is_dpop().then(|| raw.access_token.expose().to_owned());
        raw.into_token_set(None, scopes)
    }

    /// SEP-990: the ID token exchanged at the identity provider for an ID-JAG.
    async fn identity_assertion(
        &self,
        discovered: &Discovered,
        idp_token_endpoint: &str,
        idp_client_id: &str,
        idp_client_secret: Option<&Secret>,
        id_token: &Secret,
        scopes: &[String],
    ) -> Result<Secret, OAuthError> {
        let endpoint = Url::parse(idp_token_endpoint).map_err(|e| {
            OAuthError::Config(format!("bad identity provider token endpoint: {e}"))
        })?;
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ID_JAG),
            ("subject_token", id_token.expose()),
            ("subject_token_type", ID_TOKEN),
            ("audience", discovered.server.issuer.as_str()),
            ("resource", discovered.resource.as_str()),
        ];
        let joined = scopes.join(" ");
        if !scopes.is_empty() {
            form.push(("scope", &joined));
        }
        let basic = match idp_client_secret {
            Some(secret) => Some((idp_client_id, secret)),
            None => {
                form.push(("client_id", idp_client_id));
                None
            }
        };
        let raw = oauth_http::token_request(&self.http, &endpoint, &form, basic, None).await?;
        Ok(raw.access_token)
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

/// How a client with what it has authenticates, given what the server offers.
/// Whether a redirect URI is a native application's (RFC 8252): a loopback
/// address over plain HTTP, or a scheme of the application's own.
fn is_native_redirect(redirect_uri: &str) -> bool {
    let Ok(url) = Url::parse(redirect_uri) else {
        return false;
    };
    match url.scheme() {
        "https" => false,
        "http" => matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => true,
    }
}

fn choose_method(
    has_key: bool,
    has_secret: bool,
    supported: Option<&[String]>,
) -> ClientAuthMethod {
    let offers = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if has_key {
        ClientAuthMethod::PrivateKeyJwt
    } else if has_secret {
        if offers("client_secret_basic") {
            ClientAuthMethod::ClientSecretBasic
        } else if offers("client_secret_post") {
            ClientAuthMethod::ClientSecretPost
        } else if offers("none") {
            ClientAuthMethod::None
        } else {
            ClientAuthMethod::ClientSecretBasic
        }
    } else {
        ClientAuthMethod::None
    }
}

fn registered_creds(reg: &RegisteredClient, supported: Option<&[String]>) -> ClientCreds {
    let method = reg
        .token_endpoint_auth_method
        .as_deref()
        .and_then(ClientAuthMethod::parse)
        .unwrap_or_else(|| choose_method(false, reg.client_secret.is_some(), supported));
    ClientCreds {
        client_id: reg.client_id.clone(),
        secret: reg.client_secret.clone(),
        method,
    }
}

fn signing_key(
    key: &PrivateKeyJwt,
) -> Result<(jsonwebtoken::Algorithm, jsonwebtoken::EncodingKey), OAuthError> {
    use jsonwebtoken::{Algorithm, EncodingKey};
    let alg: Algorithm = key
        .algorithm
        .parse()
        .map_err(|_| OAuthError::Config(format!("unknown JWT algorithm `{}`", key.algorithm)))?;
    let pem = key.pem.expose().as_bytes();
    let encoding = match alg {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem),
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem),
        _ => {
            return Err(OAuthError::Config(format!(
                "`{}` is a shared-secret algorithm; private_key_jwt needs a key pair",
                key.algorithm
            )))
        }
    }
    // The parser's message says what is wrong with the PEM, not what is in it.
    .map_err(|e| OAuthError::Config(format!("the private key cannot be read: {e}")))?;
    Ok((alg, encoding))
}

/// RFC 7523 client assertion: issued by and about the client, for the
/// authorization server (its issuer identifier), short-lived, unique.
fn client_assertion(
    key: &PrivateKeyJwt,
    client_id: &str,
    audience: &str,
) -> Result<Secret, OAuthError> {
    let (alg, encoding) = signing_key(key)?;
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = key.key_id.clone();
    let now = now_secs();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": pkce::random_token()?.expose(),
    });
    jsonwebtoken::encode(&header, &claims, &encoding)
        .map(Secret::new)
        .map_err(|e| OAuthError::Config(format!("cannot sign the client assertion: {e}")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{choose_method, ClientAuthMethod, ClientCreds, OAuthClient, PendingLogin};
    use crate::oauth::discovery::{Discovered, ServerMetadata};
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
        assert!(super::is_native_redirect("http://127.0.0.1:3333/callback"));
        assert!(super::is_native_redirect("http://localhost/cb"));
        assert!(super::is_native_redirect("com.example.app:/cb"));
        assert!(!super::is_native_redirect("https://app.example/cb"));
        assert!(!super::is_native_redirect("http://app.example/cb"));
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
