//! `mcpyard.toml`: the gateway's own format. A key no section reads is an
//! error that names it and its line: in mcpyard's own file it is a typo.

use super::error::{key_of, redact_serde_message, ConfigError};
use super::file::{segments, ConfigFile};

/// Parses the text of a TOML file. Errors carry the line and key path but
/// not the offending line itself (it may hold a secret).
pub(crate) fn parse(file: &str, text: &str) -> Result<ConfigFile, ConfigError> {
    let mut unknown = Vec::new();
    let de = toml::Deserializer::new(text);
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(segments(&path));
    let parsed: ConfigFile = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(
        de, &mut note,
    ))
    .map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = redact_serde_message(inner.message());
        let line = inner.span().map(|span| line_at(text, span.start));
        ConfigError {
            file: file.to_owned(),
            line,
            key: key_of(&path, &message),
            message,
        }
    })?;
    match unknown.first() {
        None => Ok(parsed),
        Some(path) => Err(ConfigError {
            file: file.to_owned(),
            line: line_of_key(text, path),
            key: Some(path.join(".")),
            message: format!("unknown field `{}`", path.last().map_or("", String::as_str)),
        }),
    }
}

/// The 1-based line of byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line where the key at `path` is written, found through its tables.
fn line_of_key(text: &str, path: &[String]) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let (last, tables) = path.split_last()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    for name in tables {
        table = table.get(name)?.as_table_like()?;
    }
    let (key, _) = table.get_key_value(last)?;
    Some(line_at(text, key.span()?.start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::values::RawSize;

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
        let mut f = f;
        let servers = f.take_servers("m.toml").unwrap().unwrap();
        assert_eq!(servers.section, "servers");
        let names: Vec<_> = servers.entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["everything", "remote"]);
        let (_, remote) = &servers.entries[1];
        assert_eq!(remote.enabled, Some(false));
        assert_eq!(remote.transport.as_deref(), Some("sse"));
    }

    #[test]
    fn an_empty_file_is_valid() {
        let mut f = parse("m.toml", "").unwrap();
        assert!(f.take_servers("m.toml").unwrap().is_none());
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
        assert_eq!(e.line, Some(1));
        // Inside an OAuth table, and in a dotted key.
        let e = parse(
            "m.toml",
            "[servers.x]\nurl = \"http://h/\"\n\n[servers.x.oauth]\nclient_id = \"a\"\ncolour = 1\n",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.oauth.colour"));
        assert_eq!(e.line, Some(6));
        let e = parse("m.toml", "servers.x.command = \"a\"\nservers.x.argz = []\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("servers.x.argz"));
        assert_eq!(e.line, Some(2));
        // A section's own typo is refused by the section.
        let e = parse("m.toml", "[limits]\nmax_sesions = 1\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("limits.max_sesions"));
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
