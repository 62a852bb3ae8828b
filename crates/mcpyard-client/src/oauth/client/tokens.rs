//! Getting tokens: the authorization code's exchange, refresh, the other
//! grants, and the identity assertion.

use url::Url;

use crate::oauth::discovery::Discovered;
use crate::oauth::http::{self as oauth_http, RawToken};
use crate::oauth::pkce;
use crate::oauth::{ClientAuthMethod, Grant, OAuthError, Secret, StoredCredentials, TokenSet};

use super::creds::{
    client_assertion, grant_name, ClientCreds, CLIENT_ASSERTION_JWT, ID_JAG, ID_TOKEN,
    TOKEN_EXCHANGE,
};
use super::{OAuthClient, PendingLogin, State};

impl OAuthClient {
    /// Builds the authorization URL of a new login.
    pub(super) async fn begin(
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
    pub(super) async fn exchange_code(
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
    pub(super) async fn refresh(&self, state: &mut State) -> Result<(), OAuthError> {
        let Some(lock) = self.store.lock_refresh(&self.key).await? else {
            return self.refresh_now(state).await;
        };
        // The store is shared: another process may have refreshed while
        // this one waited, and its tokens are the ones to use (the refresh
        // token this one holds may be spent).
        let held = |state: &State| state.stored.tokens.as_ref().map(|t| t.access_token.clone());
        let before = held(state);
        let outcome = match self.store.load(&self.key).await {
            Ok(Some(stored)) => {
                state.stored = stored;
                if held(state).is_some() && held(state) != before {
                    tracing::debug!(target: "mcpyard::oauth", upstream = %self.key.upstream, "another process refreshed the tokens");
                    Ok(())
                } else {
                    self.refresh_now(state).await
                }
            }
            Ok(None) => {
                state.stored = StoredCredentials::default();
                Err(self.login_required("no tokens are stored"))
            }
            Err(e) => Err(e),
        };
        lock.release().await;
        outcome
    }

    /// Refreshes with the refresh token held now.
    async fn refresh_now(&self, state: &mut State) -> Result<(), OAuthError> {
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
    pub(super) async fn token(
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
    pub(super) async fn identity_assertion(
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
}
