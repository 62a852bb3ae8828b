//! `mcpyard.toml`: the gateway's own format. Every table denies unknown
//! keys, so a typo is an error that names it.

use serde::Deserialize;

use super::error::{key_of, redact_serde_message, ConfigError};
use super::expose::RawExpose;
use super::oauth::RawOAuth;
use super::server::{RawSampling, RawServer};
use super::values::{OrderedMap, RawDuration, RawSize};

/// The top level of `mcpyard.toml`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TomlFile {
    pub(crate) listen: Option<String>,
    pub(crate) api_key: Option<String>,
    pub(crate) allowed_origins: Option<Vec<String>>,
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) max_body_size: Option<RawSize>,
    pub(crate) log_level: Option<String>,
    pub(crate) client_request_timeout: Option<RawDuration>,
    pub(crate) page_size: Option<u64>,
    pub(crate) session_idle_timeout: Option<RawDuration>,
    pub(crate) max_sessions: Option<u64>,
    pub(crate) max_sessions_per_identity: Option<u64>,
    /// Whether the search tools are listed while some tool is hidden.
    pub(crate) search_tools: Option<bool>,
    /// `[apps]`: MCP Apps (the UI extension).
    pub(crate) apps: Option<super::apps::RawApps>,
    #[serde(default)]
    pub(crate) servers: OrderedMap<TomlServer>,
    /// `[inference]`: local models as tools (on, discovering, by default).
    pub(crate) inference: Option<mcpyard_inference::InferenceConfig>,
    /// `[apis.NAME]`: HTTP APIs from their OpenAPI / Swagger documents.
    #[serde(default)]
    pub(crate) apis: OrderedMap<super::api::RawApi>,
    pub(crate) limits: Option<super::limits::RawLimits>,
    /// `[policy]`: who may use which tool, prompt and resource.
    pub(crate) policy: Option<super::policy::RawPolicy>,
    pub(crate) audit: Option<super::governance::RawAudit>,
    pub(crate) guardrails: Option<super::governance::RawGuardrails>,
    pub(crate) sizes: Option<super::governance::RawSizes>,
    pub(crate) metrics: Option<super::telemetry::RawMetrics>,
    pub(crate) telemetry: Option<super::telemetry::RawTelemetry>,
    pub(crate) auth: Option<super::auth::RawAuth>,
    pub(crate) http: Option<super::auth::RawHttp>,
}

/// `[servers.NAME]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TomlServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<OrderedMap<String>>,
    inherit_env: Option<Vec<String>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<OrderedMap<String>>,
    transport: Option<String>,
    timeout: Option<RawDuration>,
    list_timeout: Option<RawDuration>,
    max_in_flight: Option<u64>,
    prefix: Option<String>,
    enabled: Option<bool>,
    sampling: Option<RawSampling>,
    expose: Option<RawExpose>,
    oauth: Option<RawOAuth>,
}

impl From<TomlServer> for RawServer {
    fn from(s: TomlServer) -> Self {
        RawServer {
            command: s.command,
            args: s.args,
            env: s.env.map(|m| m.0),
            inherit_env: s.inherit_env,
            cwd: s.cwd,
            url: s.url,
            headers: s.headers.map(|m| m.0),
            transport: s.transport.map(|t| ("transport", t)),
            timeout: s.timeout,
            list_timeout: s.list_timeout,
            max_in_flight: s.max_in_flight,
            prefix: s.prefix,
            enabled: s.enabled.unwrap_or(true),
            sampling: s.sampling,
            expose: s.expose,
            oauth: s.oauth.map(|o| ("oauth", o)),
        }
    }
}

/// Parses the text of a TOML file. Errors carry the line and key path but
/// not the offending line itself (it may hold a secret).
pub(crate) fn parse(file: &str, text: &str) -> Result<TomlFile, ConfigError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = redact_serde_message(inner.message());
        let line = inner
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        ConfigError {
            file: file.to_owned(),
            line,
            key: key_of(&path, &message),
            message,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let f = parse(
            "m.toml",
            r#"
listen = "127.0.0.1:9000"
api_key = "${MCPYARD_API_KEY}"
allowed_origins = ["http://localhost:3000"]
allowed_hosts = ["example.test"]
max_body_size = "8MiB"
log_level = "debug"
client_request_timeout = "5m"

[servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { K = "${V}" }
cwd = "/tmp"
timeout = "60s"
prefix = ""

[servers.remote]
url = "http://127.0.0.1:3001/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
transport = "sse"
enabled = false
"#,
        )
        .unwrap();
        assert_eq!(f.listen.as_deref(), Some("127.0.0.1:9000"));
        assert_eq!(f.max_body_size, Some(RawSize::Text("8MiB".into())));
        let names: Vec<_> = f.servers.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["everything", "remote"]);
        let (_, remote) = f.servers.0.into_iter().nth(1).unwrap();
        let remote = RawServer::from(remote);
        assert!(!remote.enabled);
        assert_eq!(remote.transport, Some(("transport", "sse".into())));
    }

    #[test]
    fn an_empty_file_is_valid() {
        let f = parse("m.toml", "").unwrap();
        assert!(f.servers.0.is_empty());
        assert!(f.listen.is_none());
    }

    #[test]
    fn a_typo_names_the_key_and_line() {
        let e = parse("m.toml", "[servers.x]\ncommand = \"a\"\ntimout = \"1s\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.timout"));
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("unknown field `timout`"), "{e}");
        let e = parse("m.toml", "lisen = \"x\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("lisen"));
    }

    #[test]
    fn a_wrong_type_names_the_key_without_the_value() {
        let e = parse(
            "m.toml",
            "[servers.x]\nurl = \"http://h/\"\nheaders = \"Bearer hunter2\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.headers"));
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = parse("m.toml", "[servers.x]\ncommand = \"a\"\nargs = [1]\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.args[0]"));
        let e = parse("m.toml", "[servers.x]\ncommand = \"a\"\ntimeout = true\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.timeout"));
        assert!(e.message.contains("a duration such as"), "{e}");
    }

    #[test]
    fn bad_toml_syntax_gives_the_line() {
        let e = parse("m.toml", "listen = \"a\"\n[servers.x\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.to_string().starts_with("m.toml:2"), "{e}");
    }
}
