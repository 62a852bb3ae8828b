//! The `mcpServers` JSON that Claude Desktop and Cursor write, and the
//! `servers` JSON of VS Code (`mcp.json`, or `"mcp": {"servers": ...}` in
//! its `settings.json`). Comments and trailing commas are allowed.
//!
//! These files are written by other tools, so an entry's unknown keys are
//! ignored with a warning rather than refused; a known key with the wrong
//! type is still an error. Other top-level keys (VS Code's `inputs`,
//! Claude's own settings) are ignored.

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::error::key_of;
use super::error::{redact_serde_message, ConfigError};
use super::expose::RawExpose;
use super::jsonc;
use super::oauth::{CursorAuth, JsonOAuth};
use super::server::{RawSampling, RawServer};
use super::values::{OrderedMap, RawDuration};

#[derive(Debug, Deserialize)]
struct JsonFile {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<OrderedMap<JsonServer>>,
    servers: Option<OrderedMap<JsonServer>>,
    mcp: Option<VsCodeSettings>,
}

/// The `mcp` object of VS Code's `settings.json`.
#[derive(Debug, Deserialize)]
struct VsCodeSettings {
    servers: Option<OrderedMap<JsonServer>>,
}

#[derive(Debug, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<OrderedMap<String>>,
    inherit_env: Option<Vec<String>>,
    cwd: Option<String>,
    url: Option<String>,
    headers: Option<OrderedMap<String>>,
    prefix: Option<String>,
    timeout: Option<RawDuration>,
    list_timeout: Option<RawDuration>,
    max_in_flight: Option<u64>,
    disabled: Option<bool>,
    enabled: Option<bool>,
    sampling: Option<RawSampling>,
    expose: Option<RawExpose>,
    /// mcpyard's keys, or Claude Code's / Gemini CLI's camelCase ones.
    oauth: Option<JsonOAuth>,
    /// Cursor's static OAuth client.
    auth: Option<CursorAuth>,
    #[serde(flatten)]
    unknown: OrderedMap<IgnoredAny>,
}

/// The servers of a JSON file, in file order, and warnings about what was
/// ignored.
#[derive(Debug)]
pub(crate) struct JsonServers {
    /// The key the servers sit under (`mcpServers`, `servers`, `mcp.servers`).
    pub(crate) section: &'static str,
    pub(crate) servers: Vec<(String, RawServer)>,
    pub(crate) warnings: Vec<String>,
}

pub(crate) fn parse(file: &str, text: &str) -> Result<JsonServers, ConfigError> {
    let cleaned = jsonc::strip(text);
    let mut de = serde_json::Deserializer::from_str(&cleaned);
    let parsed: JsonFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        json_error(file, &path, &e.into_inner())
    })?;
    de.end().map_err(|e| json_error(file, ".", &e))?;

    let (section, entries) = match (
        parsed.mcp_servers,
        parsed.servers,
        parsed.mcp.and_then(|m| m.servers),
    ) {
        (Some(s), None, None) => ("mcpServers", s),
        (None, Some(s), None) => ("servers", s),
        (None, None, Some(s)) => ("mcp.servers", s),
        (None, None, None) => {
            return Err(ConfigError::file(
                file,
                "no servers found: expected a `mcpServers` object (Claude Desktop, Cursor) \
                 or a `servers` object (VS Code)",
            ))
        }
        _ => {
            return Err(ConfigError::file(
                file,
                "servers are given under more than one of `mcpServers`, `servers` and \
                 `mcp.servers`: keep one",
            ))
        }
    };

    let mut warnings = Vec::new();
    let mut servers = Vec::new();
    for (name, s) in entries.0 {
        let key = format!("{section}.{name}");
        for (unknown, _) in &s.unknown.0 {
            warnings.push(format!(
                "{file}: `{key}.{unknown}`: ignored (not a key mcpyard reads)"
            ));
        }
        let enabled = match (s.enabled, s.disabled) {
            (Some(e), Some(d)) if e == d => {
                return Err(ConfigError::at(
                    file,
                    key,
                    "`enabled` and `disabled` contradict each other: keep one",
                ))
            }
            (Some(e), _) => e,
            (None, Some(d)) => !d,
            (None, None) => true,
        };
        let oauth = match (s.oauth, s.auth) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::at(
                    file,
                    key,
                    "`oauth` and `auth` both configure OAuth: keep one",
                ))
            }
            (Some(o), None) => o
                .into_raw(file, &format!("{key}.oauth"), &mut warnings)?
                .map(|o| ("oauth", o)),
            (None, Some(a)) => Some((
                "auth",
                a.into_raw(file, &format!("{key}.auth"), &mut warnings),
            )),
            (None, None) => None,
        };
        servers.push((
            name,
            RawServer {
                command: s.command,
                args: s.args,
                env: s.env.map(|m| m.0),
                inherit_env: s.inherit_env,
                cwd: s.cwd,
                url: s.url,
                headers: s.headers.map(|m| m.0),
                transport: s.kind.map(|k| ("type", k)),
                timeout: s.timeout,
                list_timeout: s.list_timeout,
                max_in_flight: s.max_in_flight,
                prefix: s.prefix,
                enabled,
                sampling: s.sampling,
                expose: s.expose,
                oauth,
            },
        ));
    }
    Ok(JsonServers {
        section,
        servers,
        warnings,
    })
}

/// A serde_json error as a [`ConfigError`]: key path and line in their own
/// fields, no quoted values.
fn json_error(file: &str, path: &str, inner: &serde_json::Error) -> ConfigError {
    let full = inner.to_string();
    // serde_json appends " at line L column C"; the line has its own field.
    let message = match full.rfind(" at line ") {
        Some(at) => &full[..at],
        None => &full,
    };
    let message = redact_serde_message(message);
    ConfigError {
        file: file.to_owned(),
        line: (inner.line() > 0).then_some(inner.line()),
        key: key_of(path, &message),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_desktop_format() {
        let j = parse(
            "claude.json",
            r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "b"}},
    "remote": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${T}"}, "type": "http"}
  }
}"#,
        )
        .unwrap();
        assert_eq!(j.section, "mcpServers");
        assert!(j.warnings.is_empty(), "{:?}", j.warnings);
        assert_eq!(j.servers.len(), 2);
        let (name, fs) = &j.servers[0];
        assert_eq!(name, "filesystem");
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args.as_ref().map(Vec::len), Some(3));
        assert_eq!(fs.env, Some(vec![("A".into(), "b".into())]));
        let (_, remote) = &j.servers[1];
        assert_eq!(remote.transport, Some(("type", "http".into())));
        assert!(remote.enabled);
    }

    #[test]
    fn vs_code_format_with_comments_and_inputs() {
        let j = parse(
            "mcp.json",
            r#"{
  // VS Code writes comments
  "inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "envFile": ".env",},
    "gh": {"type": "sse", "url": "http://127.0.0.1:9/sse", "disabled": true},
  },
}"#,
        )
        .unwrap();
        assert_eq!(j.section, "servers");
        assert_eq!(j.servers.len(), 2);
        assert_eq!(j.servers[0].1.transport, Some(("type", "stdio".into())));
        assert!(!j.servers[1].1.enabled);
        assert_eq!(
            j.warnings,
            ["mcp.json: `servers.time.envFile`: ignored (not a key mcpyard reads)"]
        );
    }

    #[test]
    fn vs_code_settings_format() {
        let j = parse(
            "settings.json",
            r#"{"editor.fontSize": 14, "mcp": {"servers": {"a": {"command": "x"}}}}"#,
        )
        .unwrap();
        assert_eq!(j.section, "mcp.servers");
        assert_eq!(j.servers[0].0, "a");
    }

    #[test]
    fn extra_keys_mcpyard_reads() {
        let j = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x", "prefix": "", "timeout": "90s", "enabled": false}, "b": {"command": "y", "timeout": 30}}}"#,
        )
        .unwrap();
        let a = &j.servers[0].1;
        assert_eq!(a.prefix.as_deref(), Some(""));
        assert_eq!(a.timeout, Some(RawDuration::Text("90s".into())));
        assert!(!a.enabled);
        assert_eq!(j.servers[1].1.timeout, Some(RawDuration::Seconds(30)));
    }

    #[test]
    fn wrong_types_are_errors_with_the_key_path() {
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x", "args": "-y"}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a.args"));
        assert_eq!(e.line, Some(1));
        assert!(!e.message.contains("at line"), "{e}");
        let e = parse(
            "c.json",
            "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n \"env\": {\"K\": 5}}}}",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a.env.K"));
        assert_eq!(e.line, Some(2));
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"url": "http://x/", "headers": {"Authorization": ["Bearer hunter2"]}}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a.headers.Authorization"));
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x", "type": 5}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a.type"));
        let e = parse("c.json", r#"{"mcpServers": {"a": {"command": 7}}}"#).unwrap_err();
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn wrong_types_never_echo_string_values() {
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"url": "http://x/", "headers": "Bearer hunter2"}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a.headers"));
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn file_level_errors() {
        let e = parse("c.json", r#"{"other": 1}"#).unwrap_err();
        assert!(e.message.contains("no servers found"), "{e}");
        let e = parse("c.json", r#"{"mcpServers": {}, "servers": {}}"#).unwrap_err();
        assert!(e.message.contains("more than one"), "{e}");
        let e = parse("c.json", "{\"mcpServers\": {\n\"a\": }").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{e}");
        let e = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x", "enabled": true, "disabled": true}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mcpServers.a"));
        let e = parse("c.json", r#"{"mcpServers": {}} trailing"#).unwrap_err();
        assert!(e.message.contains("trailing"), "{e}");
    }
}
