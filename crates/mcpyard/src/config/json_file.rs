//! The `mcpServers` JSON that Claude Desktop and Cursor write, and the
//! `servers` JSON of VS Code (`mcp.json`, or `"mcp": {"servers": ...}` in
//! its `settings.json`). Comments and trailing commas are allowed.
//!
//! These files are written by other tools, so an entry's unknown keys are
//! ignored with a warning rather than refused; a known key with the wrong
//! type is still an error. Other top-level keys (VS Code's `inputs`,
//! Claude's own settings) are passed over. mcpyard's own sections
//! (`inference`, `policy`, ...) are read as in TOML.

use super::error::key_of;
use super::error::{redact_serde_message, ConfigError};
use super::file::{json_unknown_key_warning, segments, ConfigFile, Servers};
use super::jsonc;

/// A JSON file: its sections, its servers, and warnings about what was
/// ignored.
#[derive(Debug)]
pub(crate) struct JsonFile {
    pub(crate) sections: ConfigFile,
    pub(crate) servers: Servers,
    pub(crate) warnings: Vec<String>,
}

pub(crate) fn parse(file: &str, text: &str) -> Result<JsonFile, ConfigError> {
    let cleaned = jsonc::strip(text);
    let mut de = serde_json::Deserializer::from_str(&cleaned);
    let mut warnings = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| {
        warnings.extend(json_unknown_key_warning(file, &segments(&path)));
    };
    let mut sections: ConfigFile =
        serde_path_to_error::deserialize(serde_ignored::Deserializer::new(&mut de, &mut note))
            .map_err(|e| {
                let path = e.path().to_string();
                json_error(file, &path, &e.into_inner())
            })?;
    de.end().map_err(|e| json_error(file, ".", &e))?;
    let servers = sections.take_servers(file)?.ok_or_else(|| {
        ConfigError::file(
            file,
            "no servers found: expected a `mcpServers` object (Claude Desktop, Cursor) \
             or a `servers` object (VS Code)",
        )
    })?;
    Ok(JsonFile {
        sections,
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
    use crate::config::values::RawDuration;

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
        assert_eq!(j.servers.section, "mcpServers");
        assert!(j.warnings.is_empty(), "{:?}", j.warnings);
        assert_eq!(j.servers.entries.len(), 2);
        let (name, fs) = &j.servers.entries[0];
        assert_eq!(name, "filesystem");
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args.as_ref().map(Vec::len), Some(3));
        assert_eq!(fs.env, Some(vec![("A".into(), "b".into())]));
        let (_, remote) = &j.servers.entries[1];
        assert_eq!(remote.kind.as_deref(), Some("http"));
        assert_eq!(remote.enabled, None);
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
        assert_eq!(j.servers.section, "servers");
        assert_eq!(j.servers.entries.len(), 2);
        assert_eq!(j.servers.entries[0].1.kind.as_deref(), Some("stdio"));
        assert_eq!(j.servers.entries[1].1.disabled, Some(true));
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
        assert_eq!(j.servers.section, "mcp.servers");
        assert_eq!(j.servers.entries[0].0, "a");
    }

    #[test]
    fn extra_keys_mcpyard_reads() {
        let j = parse(
            "c.json",
            r#"{"mcpServers": {"a": {"command": "x", "prefix": "", "timeout": "90s", "enabled": false}, "b": {"command": "y", "timeout": 30}}}"#,
        )
        .unwrap();
        let a = &j.servers.entries[0].1;
        assert_eq!(a.prefix.as_deref(), Some(""));
        assert_eq!(a.timeout, Some(RawDuration::Text("90s".into())));
        assert_eq!(a.enabled, Some(false));
        assert_eq!(
            j.servers.entries[1].1.timeout,
            Some(RawDuration::Seconds(30))
        );
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
        let e = parse("c.json", r#"{"mcpServers": {}} trailing"#).unwrap_err();
        assert!(e.message.contains("trailing"), "{e}");
    }
}
