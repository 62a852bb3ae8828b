//! Dynamic client registration.

use serde_json::{json, Value};
use url::Url;

use crate::oauth::discovery::Discovered;
use crate::oauth::http::{self as oauth_http};
use crate::oauth::{ClientAuthMethod, Grant, OAuthError, RegisteredClient, Secret};

use super::creds::{choose_method, is_native_redirect, registered_creds, ClientCreds, JWT_BEARER};
use super::{OAuthClient, State};

impl OAuthClient {
    /// The client registration, in the MCP spec's order.
    pub(super) async fn client(
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
}
