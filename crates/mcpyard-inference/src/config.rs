//! The `[inference]` settings: which local inference servers to use, how to
//! find them, and the limits on what the tools may read and write.
//!
//! ```toml
//! [inference]
//! enabled = true                 # offer the local__* tools at all
//! discover = true                # probe loopback ports for servers
//! discover_ports = [11434, 8080, 1234, 13305, 8000]
//! request_timeout = "300s"       # one backend call, generation included
//! max_base64_bytes = "20MiB"     # largest decoded base64 input
//! input_roots = ["~/Pictures"]   # folders local input files may come from
//! output_dir = "./mcpyard-output"  # where generated files are written
//! prefix = "local__"             # tool name prefix
//!
//! [[inference.backends]]
//! name = "ollama"
//! kind = "ollama"                # openai | ollama | lemonade | localai | llamacpp | lmstudio | vllm
//! url = "http://127.0.0.1:11434"
//! api_key_env = "OLLAMA_API_KEY" # optional: the key is read from this variable only
//! ```

use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;

/// Default loopback ports probed when no backend is configured: Ollama,
/// llama-server / LocalAI, LM Studio, Lemonade, vLLM / older Lemonade.
pub const DEFAULT_DISCOVER_PORTS: [u16; 5] = [11434, 8080, 1234, 13305, 8000];

/// Default cap on decoded base64 inputs: 20 MiB.
pub const DEFAULT_MAX_BASE64_BYTES: u64 = 20 * 1024 * 1024;

/// Default time one backend request may take, generation included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The `[inference]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InferenceConfig {
    /// `enabled` (default `true`): offer the local model tools. When false
    /// the source lists no tools.
    pub enabled: bool,
    /// `backends` (default none): the inference servers to use, each
    /// `{ name, kind, url, api_key_env }`. When empty, servers are
    /// discovered on loopback.
    pub backends: Vec<BackendSpec>,
    /// `discover` (default: `true` when no backend is configured, else
    /// `false`): probe `discover_ports` on 127.0.0.1 for running servers
    /// and use those too.
    pub discover: Option<bool>,
    /// `discover_ports` (default `[11434, 8080, 1234, 13305, 8000]`): the
    /// loopback ports probed by discovery.
    pub discover_ports: Vec<u16>,
    /// `request_timeout` (default `"300s"`): the longest one backend call
    /// may take, as `"30s"`, `"5m"` or a number of seconds. Model downloads
    /// are not bounded by it (they report progress and can be cancelled).
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
    /// `max_base64_bytes` (default `"20MiB"`): the largest decoded size of
    /// a base64 input (audio, image), as `"20MiB"`, `"512KB"` or a number
    /// of bytes. Also caps local input files.
    #[serde(deserialize_with = "size")]
    pub max_base64_bytes: u64,
    /// `input_roots` (default none): folders local input files may be read
    /// from; a path outside every root is refused. With none, tools accept
    /// inline (base64) inputs only.
    pub input_roots: Vec<PathBuf>,
    /// `output_dir` (default `$XDG_DATA_HOME/mcpyard/output`, else
    /// `~/.local/share/mcpyard/output`, else `./mcpyard-output`): the only
    /// folder generated files are written to.
    pub output_dir: Option<PathBuf>,
    /// `prefix` (default `"local__"`): put before each tool name
    /// (`local__chat`); `""` for none.
    pub prefix: String,
    /// `expose` (default `"default"`: every tool): which tools `tools/list`
    /// shows, as for a server; the binary reads it (`"*"`, `"none"`,
    /// `"default"` or a list of names and globs).
    pub expose: Option<serde_json::Value>,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            backends: Vec::new(),
            discover: None,
            discover_ports: DEFAULT_DISCOVER_PORTS.to_vec(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_base64_bytes: DEFAULT_MAX_BASE64_BYTES,
            input_roots: Vec::new(),
            output_dir: None,
            prefix: "local__".to_owned(),
            expose: None,
        }
    }
}

/// One configured inference server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {
    /// `name`: how results and errors name this server; unique.
    pub name: String,
    /// `kind`: which API it speaks beyond the OpenAI-compatible one.
    pub kind: BackendKind,
    /// `url`: its base URL, e.g. `http://127.0.0.1:11434`. A path such as
    /// `/v1` or `/api/v1` is taken as the OpenAI-compatible prefix.
    pub url: String,
    /// `api_key_env` (optional): the environment variable holding its API
    /// key, sent as `Authorization: Bearer`. The key itself never goes in
    /// the file.
    #[serde(default)]
    pub api_key_env: Option<String>,
}

/// Which server a backend is, so its native API can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Any OpenAI-compatible server (llama-cpp-python, a proxy...).
    Openai,
    Ollama,
    Lemonade,
    Localai,
    /// llama.cpp's `llama-server`.
    Llamacpp,
    Lmstudio,
    Vllm,
}

impl BackendKind {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Ollama => "ollama",
            Self::Lemonade => "lemonade",
            Self::Localai => "localai",
            Self::Llamacpp => "llamacpp",
            Self::Lmstudio => "lmstudio",
            Self::Vllm => "vllm",
        }
    }

    /// The product name people know.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Openai => "OpenAI-compatible server",
            Self::Ollama => "Ollama",
            Self::Lemonade => "Lemonade",
            Self::Localai => "LocalAI",
            Self::Llamacpp => "llama.cpp llama-server",
            Self::Lmstudio => "LM Studio",
            Self::Vllm => "vLLM",
        }
    }

    /// How a person starts this server, for error messages.
    pub fn start_hint(self) -> &'static str {
        match self {
            Self::Openai => "start your OpenAI-compatible server",
            Self::Ollama => "start it with `ollama serve`",
            Self::Lemonade => "start it with `lemonade-server serve`",
            Self::Localai => "start it with `local-ai run`",
            Self::Llamacpp => "start it with `llama-server -m MODEL.gguf`",
            Self::Lmstudio => "start it with `lms server start`",
            Self::Vllm => "start it with `vllm serve MODEL`",
        }
    }

    /// Whether mcpyard can download models through this server's API.
    pub fn can_pull(self) -> bool {
        matches!(self, Self::Ollama | Self::Lemonade | Self::Localai)
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A configuration the source cannot start with.
#[derive(Debug, thiserror::Error)]
pub enum InferenceConfigError {
    #[error("inference.backends: the name `{0}` is used twice")]
    DuplicateName(String),
    #[error("inference.backends.{name}.url: {reason}")]
    BadUrl { name: String, reason: String },
    #[error("inference.backends: a backend has an empty name")]
    EmptyName,
    #[error("inference.prefix: `{0}` would make tool names the MCP spec rejects (allowed: A-Z a-z 0-9 _ - .)")]
    BadPrefix(String),
}

impl InferenceConfig {
    /// Whether loopback ports are probed: explicit `discover`, else only
    /// when no backend is configured.
    pub fn discovery_enabled(&self) -> bool {
        self.discover.unwrap_or(self.backends.is_empty())
    }

    /// The folder generated files go to.
    pub fn effective_output_dir(&self) -> PathBuf {
        if let Some(dir) = &self.output_dir {
            return dir.clone();
        }
        let data = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/share"))
            });
        match data {
            Some(d) => d.join("mcpyard").join("output"),
            None => PathBuf::from("mcpyard-output"),
        }
    }

    /// Checks what can be checked before any server is contacted.
    pub fn validate(&self) -> Result<(), InferenceConfigError> {
        let mut seen = std::collections::HashSet::new();
        for b in &self.backends {
            if b.name.trim().is_empty() {
                return Err(InferenceConfigError::EmptyName);
            }
            if !seen.insert(b.name.as_str()) {
                return Err(InferenceConfigError::DuplicateName(b.name.clone()));
            }
            reqwest::Url::parse(&b.url)
                .map_err(|e| e.to_string())
                .and_then(|u| match u.scheme() {
                    "http" | "https" => Ok(()),
                    other => Err(format!("scheme `{other}` is not http or https")),
                })
                .map_err(|reason| InferenceConfigError::BadUrl {
                    name: b.name.clone(),
                    reason,
                })?;
        }
        let ok = self
            .prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            return Err(InferenceConfigError::BadPrefix(self.prefix.clone()));
        }
        Ok(())
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Seconds(s) => Ok(Duration::from_secs(s)),
        Raw::Text(t) => humantime::parse_duration(t.trim()).map_err(|e| {
            de::Error::custom(format!(
                r#"expected a duration such as "30s" or "5m", or a number of seconds ({e})"#
            ))
        }),
    }
}

fn size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Bytes(b) => Ok(b),
        Raw::Text(t) => parse_size(&t).ok_or_else(|| {
            de::Error::custom(r#"expected a size such as "20MiB" or "512KB", or a number of bytes"#)
        }),
    }
}

/// `"20MiB"`, `"512 KB"`, `"1048576"` → bytes.
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" | "k" => 1 << 10,
        "mb" => 1_000_000,
        "mib" | "m" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" | "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Top {
        inference: InferenceConfig,
    }

    fn parse(text: &str) -> Result<InferenceConfig, String> {
        toml::from_str::<Top>(text)
            .map(|t| t.inference)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_apply_to_an_empty_table() {
        let c = parse("[inference]\n").expect("empty table parses");
        assert!(c.enabled);
        assert!(c.discovery_enabled());
        assert_eq!(c.discover_ports, DEFAULT_DISCOVER_PORTS.to_vec());
        assert_eq!(c.max_base64_bytes, 20 * 1024 * 1024);
        assert_eq!(c.request_timeout, Duration::from_secs(300));
        assert_eq!(c.prefix, "local__");
    }

    #[test]
    fn every_key_parses() {
        let c = parse(
            r#"[inference]
enabled = false
discover = true
discover_ports = [1, 2]
request_timeout = "90s"
max_base64_bytes = "1MiB"
input_roots = ["/tmp"]
output_dir = "/tmp/out"
prefix = "llm__"
[[inference.backends]]
name = "o"
kind = "ollama"
url = "http://127.0.0.1:11434"
api_key_env = "KEY"
"#,
        )
        .expect("full table parses");
        assert!(!c.enabled);
        assert!(c.discovery_enabled());
        assert_eq!(c.discover_ports, vec![1, 2]);
        assert_eq!(c.request_timeout, Duration::from_secs(90));
        assert_eq!(c.max_base64_bytes, 1 << 20);
        assert_eq!(c.backends[0].kind, BackendKind::Ollama);
        assert_eq!(c.backends[0].api_key_env.as_deref(), Some("KEY"));
        assert_eq!(c.effective_output_dir(), PathBuf::from("/tmp/out"));
        c.validate().expect("valid");
    }

    #[test]
    fn configured_backends_turn_discovery_off_by_default() {
        let c = parse(
            "[inference]\n[[inference.backends]]\nname = \"a\"\nkind = \"vllm\"\nurl = \"http://127.0.0.1:8000\"\n",
        )
        .expect("parses");
        assert!(!c.discovery_enabled());
    }

    #[test]
    fn typos_and_bad_values_are_refused() {
        assert!(parse("[inference]\ndiscovr = true\n")
            .unwrap_err()
            .contains("discovr"));
        assert!(parse("[inference]\nrequest_timeout = \"soon\"\n")
            .unwrap_err()
            .contains("duration"));
        assert!(parse("[inference]\nmax_base64_bytes = \"lots\"\n")
            .unwrap_err()
            .contains("size"));
        assert!(parse(
            "[inference]\n[[inference.backends]]\nname = \"a\"\nkind = \"gpt\"\nurl = \"http://x\"\n"
        )
        .is_err());
    }

    #[test]
    fn validate_names_the_problem() {
        let mut c = InferenceConfig::default();
        let b = BackendSpec {
            name: "a".into(),
            kind: BackendKind::Openai,
            url: "ftp://x".into(),
            api_key_env: None,
        };
        c.backends = vec![b.clone()];
        assert!(c.validate().unwrap_err().to_string().contains("ftp"));
        c.backends = vec![
            BackendSpec {
                url: "http://127.0.0.1:1".into(),
                ..b.clone()
            },
            BackendSpec {
                url: "http://127.0.0.1:2".into(),
                ..b
            },
        ];
        assert!(c.validate().unwrap_err().to_string().contains("twice"));
        c.backends.clear();
        c.prefix = "bad prefix".into();
        assert!(c.validate().is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("20MiB"), Some(20 << 20));
        assert_eq!(parse_size("512 KB"), Some(512_000));
        assert_eq!(parse_size("7"), Some(7));
        assert_eq!(parse_size("MiB"), None);
    }
}
