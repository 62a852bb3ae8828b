//! Configuration: files in, validated settings out; nothing here starts or
//! opens anything (that is `crate::compose`).
//!
//! Two stages: a format module (`toml_file`, `json_file`) deserializes the
//! text into the one set of section structs (`file`); this module and each
//! section's own expand `${VAR}` references, parse durations, sizes and
//! addresses, and check everything, so every error can name the file and
//! the key. The front doors' settings come out in the server crate's own
//! option types.

mod api;
mod apps;
mod auth;
mod context;
#[cfg(test)]
mod documented;
mod editor;
mod error;
mod expand;
mod expose;
mod file;
mod governance;
mod inference;
mod json_file;
mod jsonc;
mod limits;
mod oauth;
mod policy;
mod redact;
mod server;
mod state;

pub(crate) use editor::editor_variable_of;
use editor::{editor_variable, workspace_folder};
use inference::describe_inference;
pub(crate) use state::StateSettings;
mod telemetry;
mod toml_file;
mod values;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use crate::upstream_auth::TokenPlace;
use mcpyard_client::TransportSpec;
use mcpyard_gateway::{
    ConfigError as GatewayConfigError, GatewayConfig, Listing, SourceSpec, UpstreamSpec,
};
use mcpyard_server::{HttpOptions, StdioOptions};

pub(crate) use api::ApiSummary;
use context::Context;
pub(crate) use error::ConfigError;
pub(crate) use jsonc::strip as strip_json_comments;
pub(crate) use oauth::{GrantKind, OAuthSettings, REDIRECT_PATH};
use server::ServerEntry;
pub(crate) use telemetry::{MetricsSettings, TelemetrySettings};
pub(crate) use values::parse_listen;
use values::{parse_size, RawSize};

/// Where the gateway listens unless told otherwise. Loopback only; the
/// port is clear of the usual local-model servers (11434, 8080, 1234,
/// 13305, 8000).
pub(crate) const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7117);

/// The largest request body the HTTP transport accepts by default: the
/// server crate's own default, so the two cannot disagree.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = mcpyard_server::DEFAULT_MAX_BODY_BYTES;

pub(crate) const DEFAULT_LOG_LEVEL: &str = "info";

/// The variable that gives the gateway its API key when neither `--api-key`
/// nor the file's `api_key` does.
pub(crate) const API_KEY_VAR: &str = "MCPYARD_API_KEY";

/// The name errors give the embedded default.
const EMBEDDED_NAME: &str = "<embedded default>";
const EMBEDDED_DEFAULT: &str = include_str!("default.toml");

/// The validated configuration of the binary: the gateway's part and the
/// binary's own settings.
pub(crate) struct Settings {
    /// The file it came from, as the user named it.
    pub(crate) source: String,
    pub(crate) gateway: GatewayConfig,
    /// Every server in the file, enabled or not, in file order.
    pub(crate) servers: Vec<ServerSummary>,
    /// The HTTP front door, in the server crate's own terms: where it
    /// listens, `[auth]`'s keys and OAuth, `[http]`'s doors, the accepted
    /// hosts and origins, the body size, `[limits]`, the `/metrics` route.
    pub(crate) http: HttpOptions,
    /// The stdio front door: its batch limits and who its client is.
    pub(crate) stdio: StdioOptions,
    /// The one-key shorthand (`api_key`, `MCPYARD_API_KEY`): a key named
    /// `default` in every group, besides `auth.keys`. Kept apart from
    /// `http.auth` because `--api-key` replaces it.
    pub(crate) api_key: Option<ApiKey>,
    /// A `tracing` filter (`info`, `debug`, `mcpyard_gateway=trace,info`...).
    pub(crate) log_level: String,
    /// Things that are allowed but probably not meant; shown by `check`
    /// and logged at start.
    pub(crate) warnings: Vec<String>,
    /// One line on the local models source, for `check`.
    pub(crate) inference: String,
    /// The local-model source, which also answers upstreams' sampling
    /// requests (wired by the composition root).
    pub(crate) local_models: Option<mcpyard_inference::InferenceSource>,
    /// Every API in the file, enabled or not, in file order.
    pub(crate) apis: Vec<ApiSummary>,
    /// The OAuth settings of the enabled servers that have them.
    pub(crate) oauth: Vec<(String, OAuthSettings)>,
    /// Where upstream OAuth tokens are kept (`None`: no shared state, and
    /// neither XDG_STATE_HOME nor HOME).
    pub(crate) tokens: Option<TokenPlace>,
    /// One line on the policy and the rate limits, for `check`.
    pub(crate) governance: String,
    /// `[audit]`: the trail is opened when the gateway starts serving.
    pub(crate) audit: Option<mcpyard_gateway::AuditFile>,
    /// `[metrics]`: where `GET /metrics` is served, if anywhere (its
    /// credential is `http.metrics_token`).
    pub(crate) metrics: MetricsSettings,
    /// `[telemetry]`: where traces go, if anywhere.
    pub(crate) telemetry: TelemetrySettings,
    /// A hash of `[state]` (restart-only).
    pub(crate) state_fingerprint: u64,
    /// What `[state]` made: a reload keeps it (see [`reload`]).
    pub(crate) state: StateSettings,
}

impl Settings {
    /// Said by `check`, which sees the file alone: `serve` says the same at
    /// start, knowing its `--listen` and `--api-key`.
    pub(crate) fn exposure_warning(&self) -> Option<String> {
        let open = self.api_key.is_none() && !self.http.auth.is_required();
        (!self.http.listen.ip().is_loopback() && open).then(|| {
            format!(
                "{}: `listen` is not a loopback address and no API key is set (`api_key` or {API_KEY_VAR}): anyone who can reach {} can use every upstream",
                self.source, self.http.listen
            )
        })
    }
}

// By hand: the derived form would print header values, environment values
// and the api key.
impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("source", &self.source)
            .field(
                "servers",
                &self
                    .gateway
                    .upstreams()
                    .map(|u| u.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("listen", &self.http.listen)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|k| format!("<set by {}>", k.source)),
            )
            .field("allowed_origins", &self.http.allowed_origins)
            .field("allowed_hosts", &self.http.allowed_hosts)
            .field("max_body_bytes", &self.http.max_body_bytes)
            .field("log_level", &self.log_level)
            .finish_non_exhaustive()
    }
}

/// The key clients must present, and where it was found.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey {
    pub(crate) value: String,
    pub(crate) source: KeySource,
}

impl ApiKey {
    /// The key given by `--api-key`, if any, else `configured`. An empty flag
    /// is no flag, as an empty `api_key` is no key.
    pub(crate) fn with_flag(flag: Option<String>, configured: Option<ApiKey>) -> Option<ApiKey> {
        match flag.filter(|k| !k.is_empty()) {
            Some(value) => Some(ApiKey {
                value,
                source: KeySource::Flag,
            }),
            None => configured,
        }
    }
}

// By hand: the derived form would print the key.
impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey(<set by {}>)", self.source)
    }
}

/// Where the API key came from, by precedence: `--api-key`, then the file's
/// `api_key`, then `MCPYARD_API_KEY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeySource {
    Flag,
    File,
    Variable,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeySource::Flag => "--api-key",
            KeySource::File => "the config's `api_key`",
            KeySource::Variable => API_KEY_VAR,
        })
    }
}

/// A server as `check` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerSummary {
    pub(crate) name: String,
    /// Command line or URL as written in the file (unexpanded).
    pub(crate) target: String,
    pub(crate) enabled: bool,
}

impl Settings {
    /// The configured upstream called `name`.
    pub(crate) fn upstream(&self, name: &str) -> Option<&UpstreamSpec> {
        self.gateway.upstreams().find(|u| u.name == name)
    }

    /// The OAuth settings of the upstream called `name`, if it has them.
    pub(crate) fn oauth(&self, name: &str) -> Option<&OAuthSettings> {
        self.oauth.iter().find(|(n, _)| n == name).map(|(_, o)| o)
    }
}

/// The file formats, chosen by extension, else by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Toml,
    Json,
}

/// The format of a file: by extension, else by content. `None` for YAML,
/// which looks like TOML to a parser only until the first error.
fn detect_format(path: &Path, text: &str) -> Option<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("toml") => Some(Format::Toml),
        Some("json" | "jsonc") => Some(Format::Json),
        Some("yaml" | "yml") => None,
        // A TOML document never starts with `{`; JSONC may start with a comment.
        _ => match text.trim_start().as_bytes().first() {
            Some(b'{') | Some(b'/') => Some(Format::Json),
            _ => Some(Format::Toml),
        },
    }
}

/// Reads and validates a configuration file, expanding `${VAR}` from the
/// process environment.
pub(crate) fn load(path: &Path) -> Result<Settings, ConfigError> {
    load_keeping(path, None)
}

/// The file at `path` (or the embedded default) read again for a reload:
/// what `[state]` made at start is kept (it changes at a restart only), so
/// that the reloaded rate limits and OAuth upstreams use the running
/// backend rather than a second one.
pub(crate) fn reload(
    path: Option<&Path>,
    running: &StateSettings,
) -> Result<Settings, ConfigError> {
    match path {
        Some(p) => load_keeping(p, Some(running)),
        None => from_text_keeping(
            EMBEDDED_NAME,
            None,
            EMBEDDED_DEFAULT,
            Format::Toml,
            &|name| std::env::var(name).ok(),
            Some(running),
        ),
    }
}

fn load_keeping(path: &Path, running: Option<&StateSettings>) -> Result<Settings, ConfigError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| ConfigError::file(&file, format!("cannot read the file: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ConfigError::file(&file, "the file is not UTF-8 text"))?;
    let base_dir = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    let format = detect_format(path, &text).ok_or_else(|| {
        ConfigError::file(
            &file,
            "YAML is not a format mcpyard reads: write the file as TOML (mcpyard.toml) or as \
             JSON (the mcpServers / servers form of Claude Desktop, Cursor and VS Code)",
        )
    })?;
    let workspace = workspace_folder(path);
    let lookup = |name: &str| {
        editor_variable(workspace.as_deref(), name).or_else(|| std::env::var(name).ok())
    };
    from_text_keeping(&file, base_dir, &text, format, &lookup, running)
}

/// The file at `path`, or the embedded default without one.
pub(crate) fn load_or_default(path: Option<&Path>) -> Result<Settings, ConfigError> {
    match path {
        Some(p) => load(p),
        None => embedded_default(),
    }
}

/// The configuration used without `--config`: no upstreams, loopback.
pub(crate) fn embedded_default() -> Result<Settings, ConfigError> {
    from_text(
        EMBEDDED_NAME,
        None,
        EMBEDDED_DEFAULT,
        Format::Toml,
        &|name| std::env::var(name).ok(),
    )
}

fn from_text(
    file: &str,
    base_dir: Option<&Path>,
    text: &str,
    format: Format,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, ConfigError> {
    from_text_keeping(file, base_dir, text, format, lookup, None)
}

/// [`from_text`], keeping `running` for `[state]` when given.
fn from_text_keeping(
    file: &str,
    base_dir: Option<&Path>,
    text: &str,
    format: Format,
    lookup: &dyn Fn(&str) -> Option<String>,
    running: Option<&StateSettings>,
) -> Result<Settings, ConfigError> {
    let ctx = Context {
        file,
        base_dir,
        lookup,
    };
    let (mut top, servers, mut warnings) = match format {
        Format::Toml => {
            let mut parsed = toml_file::parse(file, text)?;
            let servers = parsed.take_servers(file)?;
            (parsed, servers, Vec::new())
        }
        Format::Json => {
            let parsed = json_file::parse(file, text)?;
            (parsed.sections, Some(parsed.servers), parsed.warnings)
        }
    };
    let (section, servers) = servers.map_or(("servers", Vec::new()), |s| (s.section, s.entries));

    let mut upstreams = Vec::new();
    let mut summaries = Vec::new();
    let mut oauth_settings = Vec::new();
    // Built before the servers: a team's replicas keep their upstreams'
    // tokens in it.
    let state = match running {
        Some(running) => state::kept(running, top.state.as_ref()),
        None => state::build(&ctx, top.state.as_ref())?,
    };
    let tokens = match &state.shared_tokens {
        Some(shared) => Some(TokenPlace::Shared(shared.clone())),
        None => crate::token_store::default_dir(lookup).map(TokenPlace::Folder),
    };
    for (name, raw) in servers {
        let key = format!("{section}.{name}");
        let enabled = raw.is_enabled(&ctx, &key)?;
        if enabled {
            warn_about_clear_secrets(&ctx, &key, &raw, &mut warnings)?;
        }
        let target = written_target(&raw);
        // A disabled entry is not read further, so its `expose` is not either.
        let listing = match enabled {
            true => expose::listing(&ctx, &format!("{key}.expose"), raw.expose.as_ref())?,
            false => Listing::Default,
        };
        let oauth_key = raw.oauth(&ctx, &key)?.map(|(k, _)| format!("{key}.{k}"));
        let built = match server::build(&ctx, &key, &name, raw)? {
            None => None,
            Some(mut built) => {
                if let (Some(o), Some(okey)) = (built.oauth, oauth_key) {
                    if state.redis.is_some() && state.shared_tokens.is_none() {
                        return Err(ctx.error(
                            "state.token_key_env",
                            format!("replicas share `{name}`'s OAuth tokens in Redis, sealed: name a variable that holds a 32-byte key (64 hex digits or base64)"),
                        ));
                    }
                    let place = tokens.clone().ok_or_else(|| {
                        ctx.error(
                            &okey,
                            "no folder for the tokens: set XDG_STATE_HOME or HOME",
                        )
                    })?;
                    let auth = oauth_auth(&built.upstream, &o, place)
                        .map_err(|e| ctx.error(&okey, e.to_string()))?;
                    built.upstream.http_auth = Some(auth);
                    oauth_settings.push((name.clone(), o));
                }
                // The OAuth settings are what its credentials are made
                // from: a reload restarts the server when they change.
                let oauth = oauth_settings.iter().find(|(n, _)| *n == name);
                let mut spec = SourceSpec::mcp(built.upstream).with_fingerprint(&oauth);
                spec.exposure.listing = listing;
                Some(spec)
            }
        };
        summaries.push(ServerSummary {
            name,
            target,
            enabled: built.is_some(),
        });
        upstreams.extend(built);
    }

    let listen = match &top.listen {
        None => DEFAULT_LISTEN,
        Some(l) => parse_listen(&ctx.expand("listen", l)?).ok_or_else(|| {
            ctx.error(
                "listen",
                format!(
                    "expected HOST:PORT with an IP address or `localhost`, e.g. \"{DEFAULT_LISTEN}\""
                ),
            )
        })?,
    };

    let api_key = match &top.api_key {
        None => None,
        Some(k) => {
            if !expand::has_reference(k) && !k.is_empty() {
                warnings.push(format!(
                    "{file}: `api_key` is written in clear in the file; write \"${{MCPYARD_API_KEY}}\" and set the variable instead"
                ));
            }
            // An empty key (e.g. `${MCPYARD_API_KEY:-}` with the variable
            // unset) means no authentication, not a key everyone knows.
            Some(ctx.expand("api_key", k)?).filter(|k| !k.is_empty())
        }
    }
    .map(|value| ApiKey {
        value,
        source: KeySource::File,
    })
    .or_else(|| {
        lookup(API_KEY_VAR)
            .filter(|k| !k.is_empty())
            .map(|value| ApiKey {
                value,
                source: KeySource::Variable,
            })
    });

    let allowed_origins = expand_list(&ctx, "allowed_origins", top.allowed_origins.as_deref())?;
    let allowed_hosts = expand_list(&ctx, "allowed_hosts", top.allowed_hosts.as_deref())?;

    let max_body_bytes = match &top.max_body_size {
        None => DEFAULT_MAX_BODY_BYTES,
        Some(size) => {
            let bytes = match size {
                RawSize::Bytes(n) => *n,
                RawSize::Text(t) => parse_size(&ctx.expand("max_body_size", t)?)
                    .map_err(|m| ctx.error("max_body_size", m))?,
            };
            usize::try_from(bytes)
                .map_err(|_| ctx.error("max_body_size", "too large for this machine"))?
        }
    };
    if max_body_bytes == 0 {
        return Err(ctx.error("max_body_size", "must be more than zero"));
    }

    let auth = auth::build(&ctx, top.auth.as_ref(), &mut warnings)?;
    let metrics = telemetry::metrics(&ctx, top.metrics.as_ref())?;
    let mut http = HttpOptions {
        listen,
        auth: mcpyard_server::AuthOptions {
            keys: auth.keys,
            oauth: auth.oauth,
            live_keys: Default::default(),
        },
        allowed_origins,
        allowed_hosts,
        max_body_bytes,
        metrics_route: metrics == MetricsSettings::WithMcp,
        metrics_token: telemetry::metrics_token(&ctx, top.metrics.as_ref(), &mut warnings)?,
        ..HttpOptions::default()
    };
    auth::front_doors(&ctx, top.http.as_ref(), &mut http)?;
    limits::apply(&ctx, top.limits.as_ref(), &mut http)?;
    let stdio = StdioOptions {
        batch: http.batch,
        identity: auth.stdio,
        ..StdioOptions::default()
    };
    let rate_limits = top.limits.as_ref().map_or(&[][..], |l| &l.rate[..]);
    let rate_limiter = policy::build_rate_limits(&ctx, rate_limits, &state)?;
    let access = policy::build_policy(&ctx, top.policy.as_ref())?;
    let governance = policy::summary(access.as_deref(), rate_limits.len(), http.per_address);
    let telemetry = telemetry::telemetry(&ctx, top.telemetry.as_ref())?;

    let log_level = match &top.log_level {
        None => DEFAULT_LOG_LEVEL.to_owned(),
        Some(l) => {
            let l = ctx.expand("log_level", l)?;
            check_log_level(&l).map_err(|m| ctx.error("log_level", m))?;
            l
        }
    };

    let client_request_timeout = top
        .client_request_timeout
        .as_ref()
        .map(|t| server::duration(&ctx, "client_request_timeout", t))
        .transpose()?;

    let defaults = GatewayConfig::default();
    let page_size = match top.page_size {
        None => defaults.page_size,
        Some(0) => return Err(ctx.error("page_size", "must be at least 1")),
        Some(n) => usize::try_from(n).map_err(|_| ctx.error("page_size", "too large"))?,
    };
    let session_idle_timeout = top
        .session_idle_timeout
        .as_ref()
        .map(|t| server::duration(&ctx, "session_idle_timeout", t))
        .transpose()?
        .unwrap_or(defaults.session_idle_timeout);
    let max_sessions = match top.max_sessions {
        None => defaults.max_sessions,
        Some(0) => return Err(ctx.error("max_sessions", "must be at least 1")),
        Some(n) => usize::try_from(n).map_err(|_| ctx.error("max_sessions", "too large"))?,
    };
    let max_sessions_per_identity = match top.max_sessions_per_identity {
        None => defaults.max_sessions_per_identity.min(max_sessions),
        Some(0) => return Err(ctx.error("max_sessions_per_identity", "must be at least 1")),
        Some(n) => {
            usize::try_from(n).map_err(|_| ctx.error("max_sessions_per_identity", "too large"))?
        }
    };
    // `..defaults`: fields the gateway adds later get their defaults
    // without a change here.
    #[allow(clippy::needless_update)]
    let mut gateway = GatewayConfig {
        sources: upstreams,
        client_request_timeout: client_request_timeout.unwrap_or(defaults.client_request_timeout),
        page_size,
        session_idle_timeout,
        max_sessions,
        max_sessions_per_identity,
        search_tools: top.search_tools.unwrap_or(defaults.search_tools),
        apps: apps::settings(top.apps.as_ref()),
        policy: access,
        rate_limiter,
        state: state.backend(),
        replica: state.replica.clone(),
        ..defaults
    };
    // Local models as tools: on by default (it only looks on loopback, and
    // contacts nothing before the first call or status request).
    let inference = top.inference.clone().unwrap_or_default();
    let inference_summary = describe_inference(&inference);
    // APIs read file arguments from, and save large answers to, the same
    // folders as the local-model tools: one sandbox to configure.
    let files = api::Files {
        input_roots: inference.input_roots.clone(),
        output_dir: inference.effective_output_dir(),
    };
    let mut apis = Vec::new();
    let mut api_names = Vec::new();
    for (name, raw) in std::mem::take(&mut top.apis).0 {
        let key = format!("apis.{name}");
        if raw.enabled.unwrap_or(true) {
            warnings.extend(api::clear_secrets(file, &key, &raw));
        }
        let (source, summary) = api::build(&ctx, &key, &name, raw, &files)?;
        apis.push(summary);
        if let Some(source) = source {
            api::check_collisions(&ctx, &key, &source, &gateway.sources)?;
            api_names.push(name);
            gateway.sources.push(source);
        }
    }
    let local_models = if inference.enabled {
        let raw_expose = inference
            .expose
            .clone()
            .map(serde_json::from_value::<expose::RawExpose>)
            .transpose()
            .map_err(|_| {
                ctx.error(
                    "inference.expose",
                    r#"expected "*", "none", "default" or a list of tool names and globs"#,
                )
            })?;
        let listing = expose::listing(&ctx, "inference.expose", raw_expose.as_ref())?;
        let made_from = format!("{inference:?}");
        let source = mcpyard_inference::InferenceSource::new(inference)
            .map_err(|e| ctx.error("inference", e.to_string()))?;
        let mut spec = source
            .clone()
            .into_source_spec()
            .with_fingerprint(&made_from);
        spec.exposure.listing = listing;
        gateway.sources.push(spec);
        Some(source)
    } else {
        None
    };
    governance::apply_sizes(&ctx, top.sizes.as_ref(), &mut gateway.sources)?;
    let guard = governance::guard(&ctx, top.guardrails.as_ref())?;
    if !guard.is_inert() {
        gateway.guard = Some(guard);
    }
    let audit = governance::audit(&ctx, top.audit.as_ref())?;
    // The gateway's own checks (reserved names, prefixes that would shadow
    // each other), reported like every other config error.
    gateway.validate().map_err(|e| {
        let server = match &e {
            GatewayConfigError::Invalid { server, .. } => server,
            GatewayConfigError::NameCollision { second, .. } => second,
        };
        let section = if api_names.contains(server) {
            "apis"
        } else {
            section
        };
        ctx.error(&format!("{section}.{server}"), e.to_string())
    })?;
    Ok(Settings {
        source: file.to_owned(),
        gateway,
        servers: summaries,
        http,
        stdio,
        api_key,
        log_level,
        warnings,
        inference: inference_summary,
        local_models,
        apis,
        oauth: oauth_settings,
        tokens,
        governance,
        audit,
        metrics,
        telemetry,
        state_fingerprint: state.fingerprint,
        state,
    })
}

/// The OAuth client of an upstream, its tokens kept in `tokens`. The gateway
/// runs no browser: an authorization-code upstream without a usable token
/// waits for `mcpyard login`.
fn oauth_auth(
    upstream: &UpstreamSpec,
    oauth: &OAuthSettings,
    tokens: TokenPlace,
) -> Result<std::sync::Arc<dyn mcpyard_client::HttpAuth>, mcpyard_client::oauth::OAuthError> {
    let url = http_url(&upstream.transport).expect("OAuth is refused for stdio servers");
    let auth = crate::upstream_auth::UpstreamAuth::new(&upstream.name, url, oauth.clone(), tokens)?;
    Ok(std::sync::Arc::new(auth))
}

/// The URL of an HTTP transport.
pub(crate) fn http_url(spec: &TransportSpec) -> Option<&str> {
    match spec {
        TransportSpec::StreamableHttp { url, .. } | TransportSpec::Sse { url, .. } => Some(url),
        TransportSpec::Stdio { .. } => None,
    }
}

fn expand_list(
    ctx: &Context<'_>,
    key: &str,
    items: Option<&[String]>,
) -> Result<Vec<String>, ConfigError> {
    items
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, v)| ctx.expand(&format!("{key}[{i}]"), v))
        .collect()
}

/// A bare word must be a level (EnvFilter would take a typo such as
/// `verbose` for a target name and silently log nothing); anything with
/// `=` or `,` is a full filter and is parsed as one.
fn check_log_level(level: &str) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    if !level.contains(['=', ',']) {
        return if LEVELS.contains(&level.trim().to_ascii_lowercase().as_str()) {
            Ok(())
        } else {
            Err(format!(
                "expected one of {} or a filter such as \"mcpyard=debug,info\"",
                LEVELS.join(", ")
            ))
        };
    }
    tracing_subscriber::EnvFilter::try_new(level)
        .map(|_| ())
        .map_err(|e| format!("not a log filter: {e}"))
}

/// Warns about credentials written in the file itself rather than taken
/// from the environment.
fn warn_about_clear_secrets(
    ctx: &Context<'_>,
    key: &str,
    raw: &ServerEntry,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let file = ctx.file;
    for (name, value) in raw.headers.iter().flatten() {
        let lower = name.to_ascii_lowercase();
        let sensitive = lower == "authorization"
            || lower.contains("token")
            || lower.contains("key")
            || lower.contains("secret");
        if sensitive && !value.is_empty() && !expand::has_reference(value) {
            warnings.push(format!(
                "{file}: `{key}.headers.{name}` is written in clear in the file; use \"${{VAR}}\" and set the variable instead"
            ));
        }
    }
    if let Some((okey, o)) = raw.oauth(ctx, key)? {
        warnings.extend(oauth::clear_secrets(file, &format!("{key}.{okey}"), o));
    }
    Ok(())
}

/// How a server is reached, as written in the file (before expansion, so
/// no secret from the environment shows), without what looks like a
/// secret written in it.
fn written_target(raw: &ServerEntry) -> String {
    match (&raw.command, &raw.url) {
        (Some(command), _) => {
            redact::command_line(command, raw.args.as_deref().unwrap_or_default())
        }
        (None, Some(url)) => redact::url(url),
        (None, None) => String::new(),
    }
}

/// The transport's name, as `check` shows it.
pub(crate) fn transport_kind(spec: &TransportSpec) -> &'static str {
    match spec {
        TransportSpec::Stdio { .. } => "stdio",
        TransportSpec::StreamableHttp { .. } => "streamable-http",
        TransportSpec::Sse { .. } => "sse",
    }
}

/// A duration as `check` shows it.
pub(crate) fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
pub(crate) mod tests;
