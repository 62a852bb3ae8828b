//! How an OAuth-protected upstream is reached: the grant, the client's
//! registration and how it authenticates at the token endpoint.

use super::Secret;

/// OAuth settings for one HTTP upstream.
///
/// Registration follows the MCP spec's order: a pre-registered
/// [`client_id`](Self::client_id) (with its secret or key) first; else a
/// client ID metadata document URL ([`client_metadata_url`](Self::client_metadata_url))
/// when the authorization server supports them; else dynamic client
/// registration; else an error saying what to configure.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Which grant obtains tokens.
    pub grant: Grant,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// The pre-registered client's secret (`client_secret_basic` / `_post`).
    pub client_secret: Option<Secret>,
    /// The key for `private_key_jwt`.
    pub private_key: Option<PrivateKeyJwt>,
    /// How to authenticate at the token endpoint; `None`: chosen from what
    /// the server supports and what is configured (a key: `private_key_jwt`,
    /// a secret: `client_secret_basic` unless only `_post` is offered, else
    /// `none`).
    pub auth_method: Option<ClientAuthMethod>,
    /// An HTTPS URL where this client's metadata document is published,
    /// used as the client id when the server advertises
    /// `client_id_metadata_document_supported`.
    pub client_metadata_url: Option<String>,
    /// `client_name` sent in dynamic registration.
    pub client_name: String,
    /// Scopes to ask for instead of the ones the server names.
    pub scopes: Option<Vec<String>>,
    /// The `resource` (RFC 8707) instead of the server URL.
    pub resource: Option<String>,
    /// How many times a 403 `insufficient_scope` may widen the scopes of
    /// one request before the refusal is reported.
    pub max_step_ups: u32,
    /// Ask for DPoP-bound tokens (RFC 9449) when the authorization server
    /// offers DPoP with ES256 (the default). Off for a server that takes
    /// only Bearer tokens although its authorization server offers DPoP.
    pub dpop: bool,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            grant: Grant::AuthorizationCode {
                redirect_uri: "http://127.0.0.1:8976/callback".into(),
            },
            client_id: None,
            client_secret: None,
            private_key: None,
            auth_method: None,
            client_metadata_url: None,
            client_name: "mcpyard".into(),
            scopes: None,
            resource: None,
            max_step_ups: 2,
            dpop: true,
        }
    }
}

/// The grant that obtains tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// A machine's own credential (`client_credentials`).
    ClientCredentials,
    /// A person logs in in a browser (authorization code + PKCE); the
    /// redirect comes back to `redirect_uri`.
    AuthorizationCode {
        /// Where the authorization server sends the browser back, e.g.
        /// `http://127.0.0.1:8976/callback`.
        redirect_uri: String,
    },
    /// Enterprise-managed authorization (the SEP-990 extension): an ID
    /// token from the organisation's identity provider is exchanged there
    /// for an identity assertion grant (ID-JAG, RFC 8693 token exchange),
    /// which the MCP server's authorization server takes as a JWT bearer
    /// grant (RFC 7523), authenticated with this client's credentials.
    IdentityAssertion {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// Its secret there, if it has one.
        idp_client_secret: Option<Secret>,
        /// The person's ID token from the identity provider.
        id_token: Secret,
    },
    /// Workload identity federation (the SEP-1933 extension): a JWT the
    /// workload's platform issued it (a Kubernetes service account token,
    /// a cloud instance identity) is presented as a JWT bearer grant
    /// (RFC 7523) with the client id alone. A refused assertion ends the
    /// attempt: it is neither retried nor traded for another grant.
    JwtBearer {
        /// The workload's JWT, its audience the authorization server.
        assertion: Secret,
    },
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuthMethod {
    /// HTTP Basic with client id and secret.
    ClientSecretBasic,
    /// Client id and secret in the form body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
    /// A public client: the client id alone.
    None,
}

impl ClientAuthMethod {
    /// The name used in metadata (`token_endpoint_auth_method`).
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuthMethod::ClientSecretBasic => "client_secret_basic",
            ClientAuthMethod::ClientSecretPost => "client_secret_post",
            ClientAuthMethod::PrivateKeyJwt => "private_key_jwt",
            ClientAuthMethod::None => "none",
        }
    }

    /// Parses a metadata name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "client_secret_basic" => ClientAuthMethod::ClientSecretBasic,
            "client_secret_post" => ClientAuthMethod::ClientSecretPost,
            "private_key_jwt" => ClientAuthMethod::PrivateKeyJwt,
            "none" => ClientAuthMethod::None,
            _ => return None,
        })
    }
}

/// The signing key for `private_key_jwt`.
#[derive(Debug, Clone)]
pub struct PrivateKeyJwt {
    /// The private key in PEM (PKCS#8; RSA or EC).
    pub pem: Secret,
    /// The JWS algorithm, e.g. `RS256` or `ES256`.
    pub algorithm: String,
    /// The key id (`kid` header), when the server needs it.
    pub key_id: Option<String>,
}
