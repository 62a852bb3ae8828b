//! The configuration file as written: one struct per section, read by every
//! format (`mcpyard.toml`, and the JSON that Claude Desktop, Cursor and
//! VS Code write). A key reaches the gateway through one field here and
//! one check in its section's module, whichever format it came in.
//!
//! The formats differ only in syntax and in what an unknown key means: a
//! typo to refuse in mcpyard's own TOML, another tool's setting to warn
//! about (inside a server entry) or to pass over (elsewhere) in JSON.

use serde::Deserialize;

use super::error::ConfigError;
use super::server::ServerEntry;
use super::values::{OrderedMap, RawDuration, RawSize};

/// Every section of a configuration file.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ConfigFile {
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
    /// `[servers.NAME]` (also VS Code's `servers` object).
    servers: Option<OrderedMap<ServerEntry>>,
    /// Claude Desktop's and Cursor's `mcpServers`.
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<OrderedMap<ServerEntry>>,
    /// VS Code's `settings.json`: `"mcp": {"servers": ...}`.
    mcp: Option<VsCodeSettings>,
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
    /// `[state]`: this process's memory, or Redis shared by replicas.
    pub(crate) state: Option<super::state::RawState>,
}

/// The `mcp` object of VS Code's `settings.json`.
#[derive(Debug, Default, Deserialize)]
struct VsCodeSettings {
    servers: Option<OrderedMap<ServerEntry>>,
}

/// The server entries of a file and the key they sit under.
#[derive(Debug)]
pub(crate) struct Servers {
    /// `servers`, `mcpServers` or `mcp.servers`.
    pub(crate) section: &'static str,
    pub(crate) entries: Vec<(String, ServerEntry)>,
}

impl ConfigFile {
    /// Takes the server entries out; `None` when the file has none. They
    /// may sit under one of the three keys, not under two.
    pub(crate) fn take_servers(&mut self, file: &str) -> Result<Option<Servers>, ConfigError> {
        let found: Vec<(&'static str, OrderedMap<ServerEntry>)> = [
            ("servers", self.servers.take()),
            ("mcpServers", self.mcp_servers.take()),
            ("mcp.servers", self.mcp.take().and_then(|m| m.servers)),
        ]
        .into_iter()
        .filter_map(|(section, entries)| entries.map(|e| (section, e)))
        .collect();
        match <[_; 1]>::try_from(found) {
            Ok([(section, entries)]) => Ok(Some(Servers {
                section,
                entries: entries.0,
            })),
            Err(found) if found.is_empty() => Ok(None),
            Err(_) => Err(ConfigError::file(
                file,
                "servers are given under more than one of `mcpServers`, `servers` and \
                 `mcp.servers`: keep one",
            )),
        }
    }
}

/// The segments of a key path serde passed over (`servers`, `x`, `timout`).
pub(crate) fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path;
    let mut out = Vec::new();
    let mut at = path;
    loop {
        at = match at {
            Path::Root => break,
            Path::Seq { parent, index } => {
                out.push(index.to_string());
                parent
            }
            Path::Map { parent, key } => {
                out.push(key.clone());
                parent
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => parent,
        };
    }
    out.reverse();
    out
}

/// What a JSON file's unknown key at `path` is worth: a warning when it is
/// inside a server entry (a setting of the tool that wrote the file that
/// mcpyard does not carry out), nothing elsewhere (the editor's own
/// settings around the servers).
pub(crate) fn json_unknown_key_warning(file: &str, path: &[String]) -> Option<String> {
    let in_entry = match path {
        [section, _name, _key, ..] if section == "servers" || section == "mcpServers" => 2,
        [mcp, servers, _name, _key, ..] if mcp == "mcp" && servers == "servers" => 3,
        _ => return None,
    };
    let key = path.join(".");
    let within = &path[in_entry..];
    let why = match within {
        [object, name] if object == "oauth" || object == "auth" => {
            super::oauth::ignored_because(name)
        }
        _ => "not a key mcpyard reads",
    };
    Some(format!("{file}: `{key}`: ignored ({why})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> (ConfigFile, Vec<Vec<String>>) {
        let mut ignored = Vec::new();
        let mut de = serde_json::Deserializer::from_str(json);
        let file = serde_ignored::deserialize(&mut de, |p| ignored.push(segments(&p))).unwrap();
        (file, ignored)
    }

    #[test]
    fn servers_sit_under_one_key() {
        let (mut f, _) = read(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        let s = f.take_servers("c.json").unwrap().unwrap();
        assert_eq!(s.section, "mcpServers");
        assert_eq!(s.entries[0].0, "a");
        let (mut f, _) = read(r#"{"mcp": {"servers": {"a": {"command": "x"}}}}"#);
        assert_eq!(
            f.take_servers("c.json").unwrap().unwrap().section,
            "mcp.servers"
        );
        let (mut f, _) = read(r#"{"listen": "127.0.0.1:1"}"#);
        assert!(f.take_servers("c.json").unwrap().is_none());
        let (mut f, _) = read(r#"{"servers": {}, "mcpServers": {}}"#);
        let e = f.take_servers("c.json").err().unwrap();
        assert!(e.message.contains("more than one"), "{e}");
    }

    #[test]
    fn unknown_keys_inside_entries_are_warned_about_and_others_passed_over() {
        let (_, ignored) = read(
            r#"{"globalShortcut": "x", "mcp": {"other": 1, "servers": {"a": {"command": "x", "envFile": ".env",
                "oauth": {"tokenUrl": "https://t/", "colour": "red"}}}}}"#,
        );
        let warnings: Vec<String> = ignored
            .iter()
            .filter_map(|p| json_unknown_key_warning("c.json", p))
            .collect();
        assert_eq!(
            warnings,
            [
                "c.json: `mcp.servers.a.envFile`: ignored (not a key mcpyard reads)",
                "c.json: `mcp.servers.a.oauth.tokenUrl`: ignored (mcpyard discovers the authorization server from the MCP server's metadata)",
                "c.json: `mcp.servers.a.oauth.colour`: ignored (not a key mcpyard reads)",
            ]
        );
        assert_eq!(ignored.len(), 5, "{ignored:?}");
    }
}
