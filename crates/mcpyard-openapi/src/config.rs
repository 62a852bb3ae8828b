//! What the gateway's configuration gives one API (`[apis.NAME]`): the
//! values are already expanded from the environment by the binary.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One API's settings, as the binary's configuration supplies them.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The source's name (the `NAME` of `[apis.NAME]`).
    pub name: String,
    /// Put before every tool name (`<name>__` unless configured); names are
    /// cut to fit 64 characters with it.
    pub prefix: String,
    /// A file path or an `http(s)://` URL; JSON or YAML.
    pub spec: String,
    /// Wins over the document's `servers` / `host` + `basePath`.
    pub base_url: Option<String>,
    /// Credentials: `bearer` / `basic` for any operation that needs that
    /// kind of scheme, or a value per `securitySchemes` name. Values are
    /// secrets: never logged, never in an error, status or result.
    pub auth: ApiAuth,
    /// Sent with every request (after the credentials; never `Authorization`
    /// from the MCP client).
    pub headers: BTreeMap<String, String>,
    /// Per request; default 120 s.
    pub timeout: Duration,
    /// No more of an answer is read, and the gateway's size layer cuts a
    /// larger result to this with a note (it is this source's result
    /// limit); default 8 MiB.
    pub max_response_bytes: u64,
    /// Operation name (as derived) → tool name.
    pub rename: BTreeMap<String, String>,
    /// Folders file arguments may be read from (shared with the local-model
    /// tools' `input_roots`); empty: local paths are refused.
    pub input_roots: Vec<PathBuf>,
    /// Where large binary answers are saved (the local-model tools' output
    /// folder).
    pub output_dir: PathBuf,
}

/// Credentials for an API. A secret is the value, never its variable name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiAuth {
    /// For any `http bearer` / OAuth 2 / OpenID Connect scheme.
    pub bearer: Option<String>,
    /// `user:password` for any `http basic` scheme.
    pub basic: Option<String>,
    /// By `securitySchemes` name: the token, key or `user:password`.
    pub schemes: BTreeMap<String, String>,
}

impl std::fmt::Debug for ApiAuth {
    // Names which credentials are set, never their values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiAuth")
            .field("bearer", &self.bearer.as_ref().map(|_| "<set>"))
            .field("basic", &self.basic.as_ref().map(|_| "<set>"))
            .field("schemes", &self.schemes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ApiConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;
}
