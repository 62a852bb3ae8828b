//! `mcpyard install-client claude|cursor|vscode`: puts mcpyard in a
//! client's MCP configuration and moves the servers the client had there
//! behind it, into mcpyard's own TOML file (comments kept). Both files are
//! backed up before they change; `--dry-run` prints the change as a diff
//! (environment and header values masked) and writes nothing.
//!
//! A server that cannot move stays in the client's file beside mcpyard,
//! with the reason: VS Code's `${input:…}` prompts (only VS Code can ask
//! them), or a name mcpyard's file already has. VS Code's own variables
//! (`${workspaceFolder}`, `${userHome}`) are replaced by what they stand
//! for, since the entry leaves the file they are relative to.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::cli::{ClientKind, InstallClientArgs};
use crate::config;

/// The keys of a server entry mcpyard reads; any other is left out, said.
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "inherit_env",
    "cwd",
    "url",
    "headers",
    "transport",
    "type",
    "timeout",
    "list_timeout",
    "max_in_flight",
    "prefix",
    "enabled",
    "disabled",
    "sampling",
    "expose",
    "oauth",
    "auth",
];
/// The keys whose values are secrets as often as not: masked in a diff.
const SECRET_KEYS: &[&str] = &["env", "headers"];
/// mcpyard's own entry in the client's file.
const ENTRY_NAME: &str = "mcpyard";
/// What a masked value shows.
const MASK: &str = "…";

impl ClientKind {
    /// The client's name, for people.
    fn title(self) -> &'static str {
        match self {
            ClientKind::Claude => "Claude Desktop",
            ClientKind::Cursor => "Cursor",
            ClientKind::Vscode => "VS Code",
        }
    }

    /// The key holding the servers in the client's file.
    fn section(self) -> &'static str {
        match self {
            ClientKind::Claude | ClientKind::Cursor => "mcpServers",
            ClientKind::Vscode => "servers",
        }
    }

    /// Where the client keeps its file: Claude Desktop's per-user settings,
    /// Cursor's global `mcp.json`, VS Code's workspace `.vscode/mcp.json`
    /// (the current folder's).
    fn default_file(self) -> anyhow::Result<PathBuf> {
        let home = || {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .context("HOME is not set: give the client's file with --file")
        };
        Ok(match self {
            ClientKind::Claude if cfg!(target_os = "macos") => {
                home()?.join("Library/Application Support/Claude/claude_desktop_config.json")
            }
            ClientKind::Claude if cfg!(windows) => std::env::var_os("APPDATA")
                .map(PathBuf::from)
                .context("APPDATA is not set: give the client's file with --file")?
                .join("Claude")
                .join("claude_desktop_config.json"),
            ClientKind::Claude => config_home()?.join("Claude/claude_desktop_config.json"),
            ClientKind::Cursor => home()?.join(".cursor/mcp.json"),
            ClientKind::Vscode => PathBuf::from(".vscode/mcp.json"),
        })
    }

    /// The entry that starts mcpyard (or reaches it at `url`).
    fn entry(self, config: &Path, url: Option<&str>) -> anyhow::Result<Value> {
        if let Some(url) = url {
            return match self {
                ClientKind::Claude => bail!(
                    "Claude Desktop starts its servers as processes: install it without --url"
                ),
                ClientKind::Cursor => Ok(json!({ "url": url })),
                ClientKind::Vscode => Ok(json!({ "type": "http", "url": url })),
            };
        }
        let exe = std::env::current_exe().context("cannot tell where mcpyard is installed")?;
        let exe = exe.canonicalize().unwrap_or(exe);
        let args = json!(["stdio", "--config", config.display().to_string()]);
        Ok(match self {
            ClientKind::Vscode => {
                json!({ "type": "stdio", "command": exe.display().to_string(), "args": args })
            }
            _ => json!({ "command": exe.display().to_string(), "args": args }),
        })
    }
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".config"))
        .context("neither XDG_CONFIG_HOME nor HOME is set: give mcpyard's file with --config")
}

pub(super) fn run(args: InstallClientArgs) -> anyhow::Result<ExitCode> {
    let client_file = match args.file {
        Some(f) => f,
        None => args.client.default_file()?,
    };
    let config_file = match args.config {
        Some(f) => f,
        None => config_home()?.join("mcpyard/mcpyard.toml"),
    };
    let config_file = std::path::absolute(&config_file).unwrap_or(config_file);
    if config_file.extension().is_some_and(|e| e != "toml") {
        bail!(
            "{}: install-client writes mcpyard's servers to a TOML file; give --config path/to/mcpyard.toml",
            config_file.display()
        );
    }
    let client_text = read_if_there(&client_file)?;
    let config_text = read_if_there(&config_file)?;
    let entry = args.client.entry(&config_file, args.url.as_deref())?;
    let inputs = Inputs {
        client: args.client,
        client_file: &client_file,
        client_text: client_text.as_deref(),
        config_text: config_text.as_deref(),
        entry: &entry,
    };
    let planned = plan(&inputs, false)?;
    let client_name = client_file.display().to_string();
    let config_name = config_file.display().to_string();
    if args.dry_run {
        let shown = plan(&inputs, true)?;
        let before = client_text.as_ref().map(|_| shown.client_before.as_str());
        print!("{}", diff(&client_name, before, &shown.client));
        if !shown.moved.is_empty() {
            print!(
                "{}",
                diff(&config_name, config_text.as_deref(), &shown.config)
            );
        }
        report(&planned, args.client, &client_name, &config_name, None);
        println!("(dry run: nothing was written)");
        return Ok(ExitCode::SUCCESS);
    }
    if client_text.as_deref() == Some(planned.client.as_str()) && planned.moved.is_empty() {
        println!("{client_name} already starts mcpyard: nothing to change");
        return Ok(ExitCode::SUCCESS);
    }
    let mut backups = Vec::new();
    if !planned.moved.is_empty() {
        backups.extend(write_checked_config(
            &config_file,
            config_text.is_some(),
            &planned.config,
        )?);
    }
    backups.extend(write_with_backup(
        &client_file,
        client_text.is_some(),
        &planned.client,
    )?);
    report(
        &planned,
        args.client,
        &client_name,
        &config_name,
        Some(&backups),
    );
    Ok(ExitCode::SUCCESS)
}

fn read_if_there(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// What a run is given.
struct Inputs<'a> {
    client: ClientKind,
    client_file: &'a Path,
    client_text: Option<&'a str>,
    config_text: Option<&'a str>,
    entry: &'a Value,
}

/// Both files as they would be after the change, and what moved.
#[derive(Debug)]
struct Plan {
    /// The client's file before, as the plan renders it (masked, for the
    /// diff, when the plan is).
    client_before: String,
    client: String,
    config: String,
    moved: Vec<String>,
    /// Servers left in the client's file, with why.
    kept: Vec<(String, String)>,
    /// Keys of moved entries mcpyard does not read (`servers.x.envFile`).
    dropped: Vec<String>,
    /// Whether the client's file had comments, which the new one loses.
    had_comments: bool,
}

/// The plan; with `masked`, every server entry is rewritten with its
/// environment and header values masked, for a diff a person may share.
fn plan(inputs: &Inputs<'_>, masked: bool) -> anyhow::Result<Plan> {
    let client_name = inputs.client_file.display().to_string();
    let section = inputs.client.section();
    let stripped = inputs
        .client_text
        .map(config::strip_json_comments)
        .unwrap_or_else(|| "{}".to_owned());
    let had_comments = inputs
        .client_text
        .is_some_and(|t| t.trim() != stripped.trim());
    let top =
        ordered_object(&stripped).with_context(|| format!("{client_name} is not a JSON object"))?;
    let servers = match top.iter().find(|(k, _)| k == section) {
        Some((_, raw)) => ordered_object(raw.get())
            .with_context(|| format!("{client_name}: `{section}` is not an object"))?,
        None => Vec::new(),
    };

    let mut doc: toml_edit::DocumentMut = match inputs.config_text {
        Some(text) => text
            .parse()
            .context("mcpyard's configuration is not TOML that can be edited")?,
        None => new_config(&client_name),
    };
    if !doc.contains_key("servers") {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        doc.insert("servers", toml_edit::Item::Table(table));
    }
    let mut plan = Plan {
        client_before: String::new(),
        client: String::new(),
        config: String::new(),
        moved: Vec::new(),
        kept: Vec::new(),
        dropped: Vec::new(),
        had_comments,
    };
    let mut kept_entries: Vec<(String, String)> = Vec::new();
    for (name, raw) in &servers {
        let value: Value = serde_json::from_str(raw.get())?;
        if name == ENTRY_NAME || starts_mcpyard(&value) {
            continue; // replaced by the new entry
        }
        let shown = |_: &Value| entry_text(raw, masked);
        if value.to_string().contains("${input:") {
            plan.kept.push((
                name.clone(),
                "it uses ${input:…}, which only VS Code can ask for".to_owned(),
            ));
            kept_entries.push((name.clone(), shown(&value)?));
            continue;
        }
        let servers_table = doc["servers"]
            .as_table_mut()
            .context("mcpyard's configuration has `servers` that is not a table")?;
        if servers_table.contains_key(name) {
            plan.kept.push((
                name.clone(),
                "mcpyard's configuration already has a server of that name".to_owned(),
            ));
            kept_entries.push((name.clone(), shown(&value)?));
            continue;
        }
        let mut members = members_of(raw.get())?;
        for (key, value) in &mut members {
            if inputs.client == ClientKind::Vscode {
                *value = editor_variables_replaced(value, inputs.client_file);
            }
            if masked && SECRET_KEYS.contains(&key.as_str()) {
                *value = masked_values(value);
            }
        }
        let table = server_table(name, &members, &mut plan.dropped);
        servers_table.insert(name, toml_edit::Item::Table(table));
        plan.moved.push(name.clone());
    }

    let mut new_servers = vec![(ENTRY_NAME.to_owned(), render_members(inputs.entry, 4))];
    new_servers.extend(kept_entries);
    plan.client = with_servers(&top, section, render_object(&new_servers, 2));
    let before: Vec<(String, String)> = servers
        .iter()
        .map(|(name, raw)| Ok((name.clone(), entry_text(raw, masked)?)))
        .collect::<anyhow::Result<_>>()?;
    plan.client_before = with_servers(&top, section, render_object(&before, 2));
    plan.config = doc.to_string();
    Ok(plan)
}

/// The client's file: its members in order, the servers' text in place of
/// theirs (added last if it had none).
fn with_servers(top: &[(String, Box<RawValue>)], section: &str, servers: String) -> String {
    let mut members: Vec<(String, String)> = top
        .iter()
        .map(|(k, raw)| {
            let text = if k == section {
                servers.clone()
            } else {
                raw.get().to_owned()
            };
            (k.clone(), text)
        })
        .collect();
    if !members.iter().any(|(k, _)| k == section) {
        members.push((section.to_owned(), servers));
    }
    render_object(&members, 0) + "\n"
}

/// A server entry's text: as written, or with its secrets masked.
fn entry_text(raw: &RawValue, masked: bool) -> anyhow::Result<String> {
    if !masked {
        return Ok(raw.get().to_owned());
    }
    let members: Vec<(String, String)> = members_of(raw.get())?
        .into_iter()
        .map(|(k, v)| {
            let v = if SECRET_KEYS.contains(&k.as_str()) {
                masked_values(&v)
            } else {
                v
            };
            (k, pretty(&v, 6))
        })
        .collect();
    Ok(render_object(&members, 4))
}

/// An object's members in their order, as values.
fn members_of(text: &str) -> anyhow::Result<Vec<(String, Value)>> {
    ordered_object(text)?
        .into_iter()
        .map(|(k, raw)| Ok((k, serde_json::from_str(raw.get())?)))
        .collect()
}

/// mcpyard's own entry, its members in the order written: the command (or
/// URL) first.
fn render_members(entry: &Value, indent: usize) -> String {
    let order = ["type", "command", "url", "args"];
    let members: Vec<(String, String)> = order
        .iter()
        .filter_map(|k| {
            entry
                .get(*k)
                .map(|v| ((*k).to_owned(), pretty(v, indent + 2)))
        })
        .collect();
    render_object(&members, indent)
}

/// A new mcpyard file, saying where its servers came from.
fn new_config(client_file: &str) -> toml_edit::DocumentMut {
    let mut doc = toml_edit::DocumentMut::new();
    doc.decor_mut().set_prefix(format!(
        "# mcpyard's configuration (see `mcpyard__docs` or docs/configuration.md).\n\
         # The servers below were moved here from {client_file} by `mcpyard install-client`.\n"
    ));
    doc
}

/// Whether a client's entry already starts mcpyard (`mcpyard stdio`).
fn starts_mcpyard(entry: &Value) -> bool {
    let command = entry["command"].as_str().unwrap_or_default();
    let program = Path::new(command)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    program == "mcpyard" && entry["args"][0] == "stdio"
}

/// The entry's strings with VS Code's own variables replaced.
fn editor_variables_replaced(value: &Value, file: &Path) -> Value {
    match value {
        Value::String(s) => {
            let mut out = s.clone();
            for name in [
                "workspaceFolder",
                "workspaceFolderBasename",
                "userHome",
                "pathSeparator",
            ] {
                let pattern = format!("${{{name}}}");
                if out.contains(&pattern) {
                    if let Some(v) = config::editor_variable_of(file, name) {
                        out = out.replace(&pattern, &v);
                    }
                }
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| editor_variables_replaced(v, file))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), editor_variables_replaced(v, file)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// An `env` or `headers` object with every value masked.
fn masked_values(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.keys()
                .map(|k| (k.clone(), Value::String(MASK.to_owned())))
                .collect(),
        ),
        _ => Value::String(MASK.to_owned()),
    }
}

/// A client's server entry as a `[servers.NAME]` table: the keys mcpyard
/// reads, in the entry's order; the others are named in `dropped`.
fn server_table(
    name: &str,
    members: &[(String, Value)],
    dropped: &mut Vec<String>,
) -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    for (key, value) in members {
        if !SERVER_KEYS.contains(&key.as_str()) {
            dropped.push(format!("servers.{name}.{key}"));
            continue;
        }
        if let Some(value) = toml_value(value) {
            table.insert(key, toml_edit::Item::Value(value));
        }
    }
    table
}

/// A JSON value as a TOML one; `None` for null, which TOML has not.
fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let array: toml_edit::Array = items.iter().filter_map(toml_value).collect();
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in map {
                if let Some(v) = toml_value(v) {
                    table.insert(k, v);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

/// A JSON object's members in the file's order, each value as its text.
fn ordered_object(text: &str) -> anyhow::Result<Vec<(String, Box<RawValue>)>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(String, Box<RawValue>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                out.push(member);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let members = (&mut de).deserialize_map(Members)?;
    de.end()?;
    Ok(members)
}

/// `value` pretty-printed, its lines after the first indented by `indent`.
fn pretty(value: &Value, indent: usize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.replace('\n', &format!("\n{}", " ".repeat(indent)))
}

/// An object from members whose values are JSON texts, at nesting `indent`.
fn render_object(members: &[(String, String)], indent: usize) -> String {
    if members.is_empty() {
        return "{}".to_owned();
    }
    let pad = " ".repeat(indent + 2);
    let lines: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{pad}{}: {v}", Value::String(k.clone())))
        .collect();
    format!("{{\n{}\n{}}}", lines.join(",\n"), " ".repeat(indent))
}

/// A unified diff of a file's text before (none: a new file) and after.
fn diff(name: &str, before: Option<&str>, after: &str) -> String {
    let before_text = before.unwrap_or_default();
    if before_text == after {
        return format!("{name}: unchanged\n");
    }
    let old = if before.is_some() {
        format!("{name} (now)")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(before_text, after)
        .unified_diff()
        .header(&old, &format!("{name} (after)"))
        .to_string()
}

/// Writes mcpyard's file through a new file next to it, which must load
/// as a configuration before it replaces the old one; the backup made.
fn write_checked_config(path: &Path, existed: bool, text: &str) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let new = sibling(path, "new.toml");
    std::fs::write(&new, text).with_context(|| format!("cannot write {}", new.display()))?;
    if let Err(e) = config::load(&new) {
        let _ = std::fs::remove_file(&new);
        bail!("the servers would not load in mcpyard, so nothing was changed: {e}");
    }
    let backup = backup(path, existed)?;
    std::fs::rename(&new, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(backup.into_iter().collect())
}

/// Writes the client's file through a new file renamed over it, after a
/// backup.
fn write_with_backup(path: &Path, existed: bool, text: &str) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let backup = backup(path, existed)?;
    let new = sibling(path, "new");
    std::fs::write(&new, text).with_context(|| format!("cannot write {}", new.display()))?;
    std::fs::rename(&new, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(backup.into_iter().collect())
}

/// A copy of the file as it was, named with the time (none for a new file).
fn backup(path: &Path, existed: bool) -> anyhow::Result<Option<PathBuf>> {
    if !existed {
        return Ok(None);
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let copy = sibling(path, &format!("mcpyard-backup-{secs}"));
    std::fs::copy(path, &copy)
        .with_context(|| format!("cannot back {} up to {}", path.display(), copy.display()))?;
    Ok(Some(copy))
}

/// `path` with `.suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(format!(".{suffix}"));
    path.with_file_name(name)
}

/// What was (or, without `backups`, would be) done, for a person.
fn report(
    plan: &Plan,
    client: ClientKind,
    client_name: &str,
    config_name: &str,
    backups: Option<&[PathBuf]>,
) {
    let verb = if backups.is_some() {
        "moved"
    } else {
        "would move"
    };
    if plan.moved.is_empty() {
        println!("no server to move behind mcpyard");
    } else {
        println!(
            "{verb} {} server(s) behind mcpyard, into {config_name}: {}",
            plan.moved.len(),
            plan.moved.join(", ")
        );
    }
    for (name, why) in &plan.kept {
        println!("left in {client_name}: {name} ({why})");
    }
    for key in &plan.dropped {
        println!("not moved: `{key}` (not a key mcpyard reads)");
    }
    if plan.had_comments {
        println!(
            "the comments of {client_name} are not kept in the new file (the backup has them)"
        );
    }
    if let Some(backups) = backups {
        println!("{client_name} now starts mcpyard");
        for b in backups {
            println!("backup: {}", b.display());
        }
        println!("restart {} to use it", client.title());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: &str = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {"TOKEN": "s3cret-value"}
    },
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "envFile": ".env"}
  }
}"#;

    fn entry() -> Value {
        json!({"command": "/usr/bin/mcpyard", "args": ["stdio", "--config", "/c/mcpyard.toml"]})
    }

    fn inputs<'a>(
        client: ClientKind,
        file: &'a Path,
        text: Option<&'a str>,
        config: Option<&'a str>,
        entry: &'a Value,
    ) -> Inputs<'a> {
        Inputs {
            client,
            client_file: file,
            client_text: text,
            config_text: config,
            entry,
        }
    }

    #[test]
    fn claudes_servers_move_behind_mcpyard_and_its_other_settings_stay() {
        let entry = entry();
        let file = Path::new("/home/u/.config/Claude/claude_desktop_config.json");
        let plan = plan(
            &inputs(ClientKind::Claude, file, Some(CLAUDE), None, &entry),
            false,
        )
        .unwrap();
        assert_eq!(plan.moved, ["filesystem", "memory"]);
        assert_eq!(plan.dropped, ["servers.memory.envFile"]);
        let client: Value = serde_json::from_str(&plan.client).unwrap();
        assert_eq!(client["globalShortcut"], "Ctrl+Space");
        assert_eq!(client["mcpServers"], json!({ "mcpyard": entry }));
        // The members keep the file's order.
        assert!(plan.client.find("globalShortcut") < plan.client.find("mcpServers"));
        let config: toml::Value = toml::from_str(&plan.config).unwrap();
        assert_eq!(
            config["servers"]["filesystem"]["command"].as_str(),
            Some("npx")
        );
        // In the entry's order.
        assert!(plan.config.find("command = \"npx\"") < plan.config.find("args = "));
        assert_eq!(
            config["servers"]["filesystem"]["env"]["TOKEN"].as_str(),
            Some("s3cret-value")
        );
        assert!(config["servers"]["memory"].get("envFile").is_none());
        assert!(plan.config.starts_with("# mcpyard's configuration"));
    }

    #[test]
    fn a_second_run_changes_nothing() {
        let entry = entry();
        let file = Path::new("c.json");
        let first = plan(
            &inputs(ClientKind::Claude, file, Some(CLAUDE), None, &entry),
            false,
        )
        .unwrap();
        let second = plan(
            &inputs(
                ClientKind::Claude,
                file,
                Some(&first.client),
                Some(&first.config),
                &entry,
            ),
            false,
        )
        .unwrap();
        assert!(second.moved.is_empty());
        assert_eq!(second.client, first.client);
        assert_eq!(second.config, first.config);
    }

    #[test]
    fn the_masked_plan_shows_no_secret() {
        let entry = entry();
        let file = Path::new("c.json");
        let shown = plan(
            &inputs(ClientKind::Claude, file, Some(CLAUDE), None, &entry),
            true,
        )
        .unwrap();
        assert!(!shown.config.contains("s3cret-value"), "{}", shown.config);
        assert!(shown.config.contains(MASK));
        assert!(
            !shown.client_before.contains("s3cret-value"),
            "{}",
            shown.client_before
        );
        assert!(
            shown.client_before.contains("\"TOKEN\": \"…\""),
            "{}",
            shown.client_before
        );
    }

    #[test]
    fn vs_code_inputs_stay_and_its_variables_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".vscode/mcp.json");
        let text = r#"{
  // a comment VS Code allows
  "inputs": [{"type": "promptString", "id": "gh", "password": true}],
  "servers": {
    "files": {"type": "stdio", "command": "npx", "args": ["-y", "server-filesystem", "${workspaceFolder}/src"]},
    "github": {"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${input:gh}"}},
  }
}"#;
        let existing = "[servers.other]\ncommand = \"x\" # mine\n";
        let entry = json!({"type": "stdio", "command": "mcpyard", "args": ["stdio"]});
        let plan = plan(
            &inputs(
                ClientKind::Vscode,
                &file,
                Some(text),
                Some(existing),
                &entry,
            ),
            false,
        )
        .unwrap();
        assert_eq!(plan.moved, ["files"]);
        assert_eq!(plan.kept.len(), 1);
        assert_eq!(plan.kept[0].0, "github");
        assert!(plan.had_comments);
        let client: Value = serde_json::from_str(&plan.client).unwrap();
        assert_eq!(client["inputs"][0]["id"], "gh");
        assert!(client["servers"]["github"].is_object());
        assert_eq!(client["servers"]["mcpyard"], entry);
        let config: toml::Value = toml::from_str(&plan.config).unwrap();
        let workspace = std::path::absolute(dir.path()).unwrap();
        assert_eq!(
            config["servers"]["files"]["args"][2].as_str(),
            Some(format!("{}/src", workspace.display()).as_str())
        );
        // The user's own lines and comments stay.
        assert!(
            plan.config.contains("command = \"x\" # mine"),
            "{}",
            plan.config
        );
    }

    #[test]
    fn a_name_mcpyard_already_has_stays_with_the_client() {
        let entry = entry();
        let existing = "[servers.memory]\ncommand = \"mine\"\n";
        let plan = plan(
            &inputs(
                ClientKind::Cursor,
                Path::new("mcp.json"),
                Some(CLAUDE),
                Some(existing),
                &entry,
            ),
            false,
        )
        .unwrap();
        assert_eq!(plan.moved, ["filesystem"]);
        assert_eq!(plan.kept[0].0, "memory");
        let client: Value = serde_json::from_str(&plan.client).unwrap();
        assert!(client["mcpServers"]["memory"].is_object());
    }

    #[test]
    fn a_file_that_is_not_an_object_is_refused() {
        let entry = entry();
        let e = plan(
            &inputs(
                ClientKind::Claude,
                Path::new("c.json"),
                Some("[1]"),
                None,
                &entry,
            ),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a JSON object"), "{e}");
    }
}
