//! Whole-file tests: each format end to end, expansion, and each error with
//! its key path.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("tok-123".into()),
        "MCPYARD_API_KEY" => Some("key-456".into()),
        "PORT" => Some("9001".into()),
        "HOME" => Some("/home/u".into()),
        _ => None,
    }
}

/// A TOML file read from /cfg, in a fixed environment.
pub(crate) fn toml(text: &str) -> Result<Settings, ConfigError> {
    from_text(
        "mcpyard.toml",
        Some(Path::new("/cfg")),
        text,
        Format::Toml,
        &env,
    )
}

/// Like [`toml`], in an environment without `MCPYARD_API_KEY`.
fn toml_without_key_var(text: &str) -> Result<Settings, ConfigError> {
    let lookup = |name: &str| (name != API_KEY_VAR).then(|| env(name)).flatten();
    from_text(
        "mcpyard.toml",
        Some(Path::new("/cfg")),
        text,
        Format::Toml,
        &lookup,
    )
}

fn json(text: &str) -> Result<Settings, ConfigError> {
    from_text(
        "mcp.json",
        Some(Path::new("/cfg")),
        text,
        Format::Json,
        &env,
    )
}

fn toml_err(text: &str) -> String {
    toml(text).unwrap_err().to_string()
}

#[test]
fn the_embedded_default_has_no_upstreams_and_listens_on_loopback() {
    let s = embedded_default().unwrap();
    assert_eq!(s.source, "<embedded default>");
    assert_eq!(s.gateway.upstreams().count(), 0);
    assert_eq!(s.http.listen, DEFAULT_LISTEN);
    assert_eq!(s.http.listen.to_string(), "127.0.0.1:7117");
    assert!(s.api_key.is_none());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn the_default_port_is_clear_of_local_model_servers() {
    for taken in [11434, 8080, 1234, 13305, 8000] {
        assert_ne!(DEFAULT_LISTEN.port(), taken);
    }
}

#[test]
fn an_empty_toml_file_gets_every_default() {
    let s = toml("").unwrap();
    assert_eq!(s.http.listen, DEFAULT_LISTEN);
    assert_eq!(s.http.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
    assert_eq!(s.log_level, "info");
    assert!(s.http.allowed_origins.is_empty() && s.http.allowed_hosts.is_empty());
    assert_eq!(
        s.gateway.client_request_timeout,
        GatewayConfig::default().client_request_timeout
    );
}

#[test]
fn the_toml_format_end_to_end() {
    let s = toml(
        r#"
listen = "127.0.0.1:${PORT}"
api_key = "${MCPYARD_API_KEY}"
allowed_origins = ["http://localhost:5173"]
allowed_hosts = ["gateway.lan"]
max_body_size = "1MiB"
log_level = "mcpyard=debug,info"
client_request_timeout = "2m"
page_size = 50
session_idle_timeout = "30m"
max_sessions = 64

[servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { K = "${TOKEN}" }
inherit_env = ["NODE_OPTIONS", "SSL_CERT_*"]
cwd = "work"
timeout = "90s"
prefix = ""

[servers.remote]
url = "http://127.0.0.1:3001/mcp?k=1"
headers = { Authorization = "Bearer ${TOKEN}" }

[servers.legacy]
url = "http://127.0.0.1:3002/sse"

[servers.off]
command = "${UNSET_BECAUSE_DISABLED}"
enabled = false
"#,
    )
    .unwrap();
    assert_eq!(s.http.listen.to_string(), "127.0.0.1:9001");
    let key = s.api_key.as_ref().unwrap();
    assert_eq!(
        (key.value.as_str(), key.source),
        ("key-456", KeySource::File)
    );
    assert_eq!(s.http.allowed_origins, ["http://localhost:5173"]);
    assert_eq!(s.http.allowed_hosts, ["gateway.lan"]);
    assert_eq!(s.http.max_body_bytes, 1 << 20);
    assert_eq!(s.log_level, "mcpyard=debug,info");
    assert_eq!(s.gateway.client_request_timeout, Duration::from_secs(120));
    assert_eq!(s.gateway.page_size, 50);
    assert_eq!(s.gateway.session_idle_timeout, Duration::from_secs(30 * 60));
    assert_eq!(s.gateway.max_sessions, 64);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    let names: Vec<_> = s.gateway.upstreams().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["everything", "remote", "legacy"]);
    let e = s.upstream("everything").unwrap();
    assert_eq!(e.prefix.as_deref(), Some(""));
    assert_eq!(e.timeout, Duration::from_secs(90));
    assert_eq!(
        e.transport,
        TransportSpec::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-everything".into()
            ],
            env: BTreeMap::from([("K".into(), "tok-123".into())]),
            inherit_env: vec!["NODE_OPTIONS".into(), "SSL_CERT_*".into()],
            cwd: Some(PathBuf::from("/cfg/work")),
        }
    );
    assert_eq!(
        s.upstream("remote").unwrap().transport,
        TransportSpec::StreamableHttp {
            url: "http://127.0.0.1:3001/mcp?k=1".into(),
            headers: vec![("Authorization".into(), "Bearer tok-123".into())],
        }
    );
    assert!(matches!(
        s.upstream("legacy").unwrap().transport,
        TransportSpec::Sse { .. }
    ));
    assert!(s.upstream("off").is_none());

    let summary: Vec<_> = s
        .servers
        .iter()
        .map(|x| (x.name.as_str(), x.target.as_str(), x.enabled))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "everything",
                "npx -y @modelcontextprotocol/server-everything",
                true
            ),
            ("remote", "http://127.0.0.1:3001/mcp", true),
            ("legacy", "http://127.0.0.1:3002/sse", true),
            ("off", "${UNSET_BECAUSE_DISABLED}", false),
        ]
    );
}

#[test]
fn one_entry_struct_reads_every_format_and_its_spellings_must_agree() {
    // mcpyard's own sections in a JSON file are read as in TOML.
    let s = json(
        r#"{"inference": {"enabled": false}, "max_sessions": 7,
            "mcpServers": {"a": {"command": "x"}}}"#,
    )
    .unwrap();
    assert!(s.local_models.is_none(), "inference stays off");
    assert_eq!(s.gateway.max_sessions, 7);
    // The editors' spellings in TOML, and the same entry in JSON.
    let from_toml =
        toml("[servers.a]\nurl = \"http://127.0.0.1:9/mcp\"\ntype = \"sse\"\ndisabled = false\n")
            .unwrap();
    let from_json =
        json(r#"{"servers": {"a": {"url": "http://127.0.0.1:9/mcp", "type": "sse", "disabled": false}}}"#)
            .unwrap();
    for s in [&from_toml, &from_json] {
        let up = s.upstream("a").expect("enabled");
        assert_eq!(transport_kind(&up.transport), "sse");
    }
    // Two spellings of one setting that disagree are refused, in both formats.
    for e in [
        toml_err("[servers.a]\ncommand = \"x\"\nenabled = true\ndisabled = true\n"),
        json(r#"{"mcpServers": {"a": {"command": "x", "enabled": false, "disabled": false}}}"#)
            .unwrap_err()
            .to_string(),
    ] {
        assert!(e.contains("contradict"), "{e}");
    }
    let e = toml_err("[servers.a]\nurl = \"http://h/\"\ntransport = \"sse\"\ntype = \"http\"\n");
    assert!(e.contains("servers.a") && e.contains("keep one"), "{e}");
    let e = toml_err("[servers.a]\nurl = \"http://h/\"\noauth = {}\nauth = {}\n");
    assert!(e.contains("`oauth` and `auth`"), "{e}");
    // An unknown key: refused in TOML with its line, a warning in JSON.
    let e = toml_err("[servers.a]\ncommand = \"x\"\nenvFile = \".env\"\n");
    assert!(e.contains(":3") && e.contains("servers.a.envFile"), "{e}");
    let s = json(r#"{"mcpServers": {"a": {"command": "x", "envFile": ".env"}}}"#).unwrap();
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("mcpServers.a.envFile")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn a_vs_code_file_reads_its_predefined_variables() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("project");
    std::fs::create_dir_all(workspace.join(".vscode")).unwrap();
    let file = workspace.join(".vscode/mcp.json");
    std::fs::write(
        &file,
        r#"{"servers": {"fs": {"type": "stdio", "command": "npx",
            "args": ["-y", "server-filesystem", "${workspaceFolder}${/}data", "${workspaceFolderBasename}"]}}}"#,
    )
    .unwrap();
    let s = load(&file).unwrap();
    let TransportSpec::Stdio { args, .. } = &s.upstream("fs").unwrap().transport else {
        panic!("a stdio server");
    };
    let root = std::path::absolute(&workspace).unwrap();
    assert_eq!(args[2], format!("{}/data", root.display()));
    assert_eq!(args[3], "project");
}

#[test]
fn the_claude_desktop_format_end_to_end() {
    let s = json(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "inherit_env": ["*"]},
            "web": {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "http://127.0.0.1:3002/events", "disabled": true}
        }}"#,
    )
    .unwrap();
    assert_eq!(s.http.listen, DEFAULT_LISTEN);
    assert_eq!(s.gateway.upstreams().count(), 2);
    assert!(matches!(
        &s.upstream("fs").unwrap().transport,
        TransportSpec::Stdio { inherit_env, .. } if inherit_env == &["*"]
    ));
    assert!(matches!(
        s.upstream("web").unwrap().transport,
        TransportSpec::StreamableHttp { .. }
    ));
    assert!(!s.servers[2].enabled);
}

#[test]
fn the_vs_code_format_end_to_end() {
    let s = json(
        r#"{
  "inputs": [{"type": "promptString", "id": "token"}],
  "servers": {
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {}, "inherit_env": ["UV_*"]},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:3002/events", "timeout": "5s", "prefix": "old."},
    "unknown": {"type": "http", "url": "http://127.0.0.1:3003/mcp", "gallery": true}
  }
}"#,
    )
    .unwrap();
    assert!(matches!(
        &s.upstream("time").unwrap().transport,
        TransportSpec::Stdio { inherit_env, .. } if inherit_env == &["UV_*"]
    ));
    let legacy = s.upstream("legacy").unwrap();
    assert!(matches!(legacy.transport, TransportSpec::Sse { .. }));
    assert_eq!(legacy.timeout, Duration::from_secs(5));
    assert_eq!(legacy.effective_prefix(), "old.");
    assert_eq!(
        s.warnings,
        ["mcp.json: `servers.unknown.gallery`: ignored (not a key mcpyard reads)"]
    );
}

#[test]
fn a_vs_code_input_variable_is_a_clear_error() {
    let e = json(
        r#"{"servers": {"gh": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`servers.gh.headers.Authorization`"), "{e}");
    assert!(e.contains("${input:token}"), "{e}");
    assert!(e.contains("VS Code input variable"), "{e}");
}

#[test]
fn a_missing_variable_names_file_key_and_variable() {
    let e = toml_err("[servers.x]\ncommand = \"run\"\nenv = { A = \"${NOT_SET}\" }\n");
    assert_eq!(
        e,
        "mcpyard.toml: `servers.x.env.A`: environment variable `NOT_SET` is not set \
         (write `${NOT_SET:-default}` to give a default)"
    );
    let e = json(r#"{"mcpServers": {"y": {"command": "run", "args": ["${NOT_SET}"]}}}"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("mcp.json: `mcpServers.y.args[0]`: "), "{e}");
}

#[test]
fn expansion_escapes_and_defaults_apply_everywhere() {
    let s = toml(
        "listen = \"${LISTEN:-127.0.0.1:7200}\"\n[servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $${HOME} $$1\"]\n",
    )
    .unwrap();
    assert_eq!(s.http.listen.to_string(), "127.0.0.1:7200");
    let TransportSpec::Stdio { args, .. } = &s.upstream("x").unwrap().transport else {
        panic!("expected stdio");
    };
    assert_eq!(args[1], "echo ${HOME} $1");
}

#[test]
fn each_top_level_error_names_its_key() {
    let cases = [
        ("listen = \"nowhere\"", "`listen`", "expected HOST:PORT"),
        ("listen = 7117", "`listen`", "invalid type"),
        ("api_key = \"${NOPE}\"", "`api_key`", "`NOPE` is not set"),
        (
            "max_body_size = \"huge\"",
            "`max_body_size`",
            "expected a size",
        ),
        ("max_body_size = 0", "`max_body_size`", "more than zero"),
        (
            "log_level = \"verbose\"",
            "`log_level`",
            "expected one of off, error",
        ),
        (
            "log_level = \"a=notalevel\"",
            "`log_level`",
            "not a log filter",
        ),
        (
            "client_request_timeout = \"later\"",
            "`client_request_timeout`",
            "expected a duration",
        ),
        (
            "allowed_hosts = [\"${NOPE}\"]",
            "`allowed_hosts[0]`",
            "NOPE",
        ),
        (
            "allowed_origins = \"x\"",
            "`allowed_origins`",
            "invalid type",
        ),
        ("listn = \"x\"", "`listn`", "unknown field `listn`"),
        (
            "[servers.x]\ncommand = \"a\"\ntimeout = \"1 fortnight\"",
            "`servers.x.timeout`",
            "expected a duration",
        ),
        (
            "[servers.x]\ncomand = \"a\"",
            "`servers.x.comand`",
            "unknown field `comand`",
        ),
        (
            "[servers.x]\ncommand = \"a\"\nenabled = \"no\"",
            "`servers.x.enabled`",
            "invalid type",
        ),
        (
            "[servers.x]\nurl = \"http://h/\"\ntransport = \"ws\"",
            "`servers.x.transport`",
            "expected \"stdio\"",
        ),
        (
            "[servers.\"a b\"]\ncommand = \"a\"",
            "`servers.a b`",
            "server name",
        ),
        ("[servers.x]", "`servers.x`", "missing `command`"),
        ("page_size = 0", "`page_size`", "at least 1"),
        ("page_size = \"many\"", "`page_size`", "invalid type"),
        ("max_sessions = 0", "`max_sessions`", "at least 1"),
        ("session_idle_timeout = \"0s\"", "`session_idle_timeout`", "more than zero"),
        ("[servers.mcpyard]\ncommand = \"a\"", "`servers.mcpyard`", "reserved"),
        ("[servers.a]\ncommand = \"a\"\nprefix = \"p_\"\n[servers.b]\ncommand = \"b\"\nprefix = \"p_\"", "`servers.b`", "name collision"),
    ];
    for (text, key, msg) in cases {
        let e = toml_err(text);
        assert!(e.starts_with("mcpyard.toml"), "{e}");
        assert!(e.contains(key), "expected {key} in: {e}");
        assert!(e.contains(msg), "expected {msg:?} in: {e}");
    }
}

#[test]
fn secrets_never_appear_in_errors_or_debug_output() {
    // A wrong value expanded from a secret is not echoed.
    let e = toml_err("listen = \"${TOKEN}\"");
    assert!(!e.contains("tok-123"), "{e}");
    let s = toml(
        "api_key = \"${MCPYARD_API_KEY}\"\n[servers.x]\nurl = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n",
    )
    .unwrap();
    let debug = format!("{s:?}");
    assert!(
        !debug.contains("tok-123") && !debug.contains("key-456"),
        "{debug}"
    );
    assert!(debug.contains("<set by "), "{debug}");
}

#[test]
fn warnings_for_risky_but_valid_settings() {
    let s = toml("api_key = \"plain-text-key\"").unwrap();
    assert!(
        s.warnings[0].contains("`api_key` is written in clear"),
        "{:?}",
        s.warnings
    );
    assert!(!s.warnings[0].contains("plain-text-key"));
    let s = toml_without_key_var("listen = \"0.0.0.0:7117\"").unwrap();
    let exposed = s.exposure_warning().expect("a warning");
    assert!(exposed.contains("not a loopback address"), "{exposed}");
    let s = toml("listen = \"0.0.0.0:7117\"\napi_key = \"${MCPYARD_API_KEY}\"").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.exposure_warning(), None);
    let s =
        toml("[servers.x]\nurl = \"http://h/\"\nheaders = { Authorization = \"Bearer abc\" }\n")
            .unwrap();
    assert!(s.warnings[0].contains("`servers.x.headers.Authorization` is written in clear"));
}

#[test]
fn an_empty_api_key_means_no_authentication() {
    let s = toml_without_key_var("api_key = \"${UNSET_KEY:-}\"").unwrap();
    assert!(s.api_key.is_none());
}

#[test]
fn the_api_key_comes_from_the_flag_then_the_file_then_the_variable() {
    let key = |s: &Settings| s.api_key.clone().map(|k| (k.value, k.source));
    let var_only = toml("").unwrap();
    assert_eq!(
        key(&var_only),
        Some(("key-456".to_owned(), KeySource::Variable))
    );
    // An empty `api_key` is no key: the variable still applies.
    let empty_in_file = toml("api_key = \"${UNSET_KEY:-}\"").unwrap();
    assert_eq!(key(&empty_in_file), key(&var_only));
    let file = toml("api_key = \"${TOKEN}\"").unwrap();
    assert_eq!(key(&file), Some(("tok-123".to_owned(), KeySource::File)));
    let flagged = ApiKey::with_flag(Some("flag-1".into()), file.api_key.clone()).unwrap();
    assert_eq!(
        (flagged.value.as_str(), flagged.source),
        ("flag-1", KeySource::Flag)
    );
    assert_eq!(
        ApiKey::with_flag(Some(String::new()), file.api_key.clone()),
        file.api_key
    );
    assert_eq!(ApiKey::with_flag(None, None), None);
    // The key never shows in the debug form.
    assert!(!format!("{flagged:?}").contains("flag-1"));
}

#[test]
fn listen_accepts_localhost_and_ipv6() {
    assert_eq!(
        parse_listen("localhost:80").unwrap().to_string(),
        "127.0.0.1:80"
    );
    assert_eq!(
        parse_listen("[::1]:7117").unwrap().to_string(),
        "[::1]:7117"
    );
    assert!(parse_listen("example.com:80").is_none());
    assert!(parse_listen("127.0.0.1").is_none());
}

#[test]
fn the_format_follows_the_extension_then_the_content() {
    assert_eq!(detect_format(Path::new("a.toml"), "{"), Some(Format::Toml));
    assert_eq!(
        detect_format(Path::new("a.json"), "x = 1"),
        Some(Format::Json)
    );
    assert_eq!(detect_format(Path::new("a.jsonc"), ""), Some(Format::Json));
    assert_eq!(
        detect_format(Path::new("config"), "  {\"mcpServers\":{}}"),
        Some(Format::Json)
    );
    assert_eq!(
        detect_format(Path::new("config"), "// c\n{}"),
        Some(Format::Json)
    );
    assert_eq!(
        detect_format(Path::new("config"), "[servers.x]"),
        Some(Format::Toml)
    );
    assert_eq!(detect_format(Path::new("mcp.yaml"), "servers:\n"), None);
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("config.yml");
    std::fs::write(&yaml, "servers:\n  a:\n    command: x\n").unwrap();
    let e = load(&yaml).unwrap_err().to_string();
    assert!(e.contains("YAML is not a format mcpyard reads"), "{e}");
}

#[test]
fn load_reads_a_file_and_resolves_cwd_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.conf");
    std::fs::write(
        &path,
        "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"sub\"}}}",
    )
    .unwrap();
    let s = load(&path).unwrap();
    let TransportSpec::Stdio { cwd, .. } = &s.upstream("a").unwrap().transport else {
        panic!("expected stdio");
    };
    assert_eq!(cwd.as_deref(), Some(dir.path().join("sub").as_path()));

    let e = load(&dir.path().join("missing.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.toml: cannot read the file"), "{e}");
    let bin = dir.path().join("bin.toml");
    std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
    let e = load(&bin).unwrap_err().to_string();
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn sampling_by_a_local_model_is_off_unless_a_server_asks_for_it() {
    let s = toml(
        "[servers.a]\ncommand = \"a\"\n\n[servers.b]\ncommand = \"b\"\n[servers.b.sampling]\nmodels = [\"qwen3\"]\nmax_tokens = 256\n\n[servers.c]\ncommand = \"c\"\nsampling = { mode = \"always\" }\n",
    )
    .unwrap();
    let ups: Vec<_> = s.gateway.upstreams().collect();
    assert!(ups[0].sampling.is_none());
    let b = ups[1].sampling.as_ref().expect("b allows local sampling");
    assert!(!b.always);
    assert_eq!(b.policy.models(), ["qwen3".to_owned()]);
    assert_eq!(b.policy.max_tokens(), 256);
    let c = ups[2].sampling.as_ref().expect("c allows local sampling");
    assert!(c.always);
    assert_eq!(c.policy.max_tokens(), 1024);
    let e = toml_err("[servers.a]\ncommand = \"a\"\nsampling = { mode = \"sometimes\" }\n");
    assert!(e.contains("servers.a.sampling.mode"), "{e}");
}

#[test]
fn expose_sets_each_sources_listing_in_every_format() {
    let s = toml(
        r#"
search_tools = false
[servers.a]
command = "x"
expose = ["echo", "get-*"]
[servers.b]
command = "y"
expose = "none"
[servers.c]
command = "z"
[inference]
expose = "*"
"#,
    )
    .unwrap();
    let listings: Vec<(&str, &Listing)> = s
        .gateway
        .sources
        .iter()
        .map(|spec| (spec.name(), &spec.exposure.listing))
        .collect();
    assert_eq!(
        listings[0],
        ("a", &Listing::Only(vec!["echo".into(), "get-*".into()]))
    );
    assert_eq!(listings[1], ("b", &Listing::None));
    assert_eq!(listings[2], ("c", &Listing::Default));
    assert_eq!(listings[3].1, &Listing::All);
    assert!(!s.gateway.search_tools);
    assert!(toml("").unwrap().gateway.search_tools);

    let s = json(r#"{"mcpServers": {"a": {"command": "x", "expose": ["echo"]}}}"#).unwrap();
    assert_eq!(
        s.gateway.sources[0].exposure.listing,
        Listing::Only(vec!["echo".into()])
    );

    let err = toml_err("[servers.a]\ncommand = \"x\"\nexpose = \"some\"\n");
    assert!(err.contains("servers.a.expose"), "{err}");
    let err = toml_err("[inference]\nexpose = 3\n");
    assert!(err.contains("inference.expose"), "{err}");
}

#[test]
fn an_http_server_takes_an_oauth_table() {
    let s = toml(
        r#"
[servers.kc]
url = "https://mcp.example.test/mcp"
[servers.kc.oauth]
grant = "client_credentials"
client_id = "mcpyard"
client_secret = "${TOKEN}"
scopes = ["mcp:tools", "offline_access"]
"#,
    )
    .unwrap();
    let o = s.oauth("kc").expect("oauth settings");
    assert_eq!(o.grant, GrantKind::ClientCredentials);
    assert_eq!(o.client_id.as_deref(), Some("mcpyard"));
    assert_eq!(
        o.client_secret.as_ref().map(|h| h.0.as_str()),
        Some("tok-123")
    );
    assert_eq!(
        o.scopes.as_deref(),
        Some(&["mcp:tools".to_owned(), "offline_access".to_owned()][..])
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(!format!("{s:?}").contains("tok-123"));
    assert!(
        matches!(&s.tokens, Some(crate::upstream_auth::TokenPlace::Folder(dir))
            if dir == Path::new("/home/u/.local/state/mcpyard/oauth")),
        "{:?}",
        s.tokens
    );
    assert!(s.upstream("kc").unwrap().http_auth.is_some());
}

#[test]
fn oauth_needs_a_folder_for_its_tokens() {
    let lookup = |name: &str| (name != "HOME").then(|| env(name)).flatten();
    let e = from_text(
        "mcpyard.toml",
        Some(Path::new("/cfg")),
        "[servers.s]\nurl = \"http://h/mcp\"\n[servers.s.oauth]\n",
        Format::Toml,
        &lookup,
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("servers.s.oauth"));
    assert!(e.message.contains("XDG_STATE_HOME"), "{e}");
}

#[test]
fn oauth_is_refused_where_it_cannot_work() {
    let e = toml_err("[servers.s]\ncommand = \"x\"\n[servers.s.oauth]\n");
    assert!(
        e.contains("`servers.s.oauth`") && e.contains("HTTP servers"),
        "{e}"
    );
    let e = toml_err(
        "[servers.s]\nurl = \"http://h/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n[servers.s.oauth]\n",
    );
    assert!(e.contains("`servers.s.headers.Authorization`"), "{e}");
    let e = toml_err("[servers.s]\nurl = \"http://h/mcp\"\n[servers.s.oauth]\nclient = \"x\"\n");
    assert!(e.contains("unknown field `client`"), "{e}");
}

#[test]
fn a_client_secret_in_clear_is_warned_about_without_its_value() {
    let s = toml(
        "[servers.s]\nurl = \"http://h/mcp\"\n[servers.s.oauth]\nclient_id = \"a\"\nclient_secret = \"hunter2\"\n",
    )
    .unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("servers.s.oauth.client_secret"));
    assert!(!s.warnings[0].contains("hunter2"));
}

#[test]
fn the_json_forms_of_other_clients_are_read() {
    let s = json(
        r#"{"mcpServers": {
  "claude": {"type": "http", "url": "https://a.test/mcp", "oauth": {"clientId": "cc", "callbackPort": 9123, "scopes": "read write", "authServerMetadataUrl": "https://a.test/meta"}},
  "gemini": {"url": "https://b.test/mcp", "oauth": {"enabled": true, "clientId": "gg", "clientSecret": "${TOKEN}", "redirectUri": "http://localhost:7000/callback", "tokenUrl": "https://b.test/token", "scopes": ["x"]}},
  "cursor": {"url": "https://c.test/mcp", "auth": {"CLIENT_ID": "cu", "CLIENT_SECRET": "${TOKEN}", "scopes": ["y"]}},
  "off": {"url": "https://d.test/mcp", "oauth": {"enabled": false, "clientId": "z"}},
  "own": {"url": "https://e.test/mcp", "oauth": {"grant": "client_credentials", "client_id": "m2m", "client_secret": "${TOKEN}", "auth_method": "client_secret_post"}}
}}"#,
    )
    .unwrap();
    let claude = s.oauth("claude").unwrap();
    assert_eq!(claude.client_id.as_deref(), Some("cc"));
    assert_eq!(claude.redirect_port, 9123);
    assert_eq!(
        claude.scopes.as_deref(),
        Some(&["read".to_owned(), "write".to_owned()][..])
    );
    let gemini = s.oauth("gemini").unwrap();
    assert_eq!(gemini.redirect_port, 7000);
    assert!(gemini.client_secret.is_some());
    let cursor = s.oauth("cursor").unwrap();
    assert_eq!(cursor.client_id.as_deref(), Some("cu"));
    assert_eq!(cursor.grant, GrantKind::AuthorizationCode);
    assert!(s.oauth("off").is_none());
    let own = s.oauth("own").unwrap();
    assert_eq!(own.grant, GrantKind::ClientCredentials);
    assert_eq!(
        own.auth_method,
        Some(mcpyard_client::oauth::ClientAuthMethod::ClientSecretPost)
    );
    let warned = s.warnings.join("\n");
    assert!(
        warned.contains(
            "`mcpServers.claude.oauth.authServerMetadataUrl`: ignored (mcpyard discovers"
        ),
        "{warned}"
    );
    assert!(
        warned.contains("`mcpServers.gemini.oauth.tokenUrl`"),
        "{warned}"
    );
    let e =
        json(r#"{"mcpServers": {"x": {"url": "https://a.test/mcp", "oauth": {}, "auth": {}}}}"#)
            .unwrap_err();
    assert!(e.message.contains("keep one"), "{e}");
    let e = json(r#"{"mcpServers": {"x": {"url": "https://a.test/mcp", "oauth": {"redirectUri": "https://a.test/cb"}}}}"#)
        .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("mcpServers.x.oauth.redirectUri"));
}

#[test]
fn apps_are_on_unless_turned_off() {
    let on = toml("").unwrap().gateway.apps;
    assert!(on.enabled && on.resolve_unprefixed);
    let s = toml("[apps]\nresolve_unprefixed = false\n").unwrap();
    assert!(s.gateway.apps.enabled && !s.gateway.apps.resolve_unprefixed);
    assert!(
        !toml("[apps]\nenabled = false\n")
            .unwrap()
            .gateway
            .apps
            .enabled
    );
    let e = toml_err("[apps]\nenable = true\n");
    assert!(e.contains("enable"), "{e}");
}

#[test]
fn a_reload_keeps_the_running_state_backend_and_sees_a_change_of_it() {
    let first = "[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:6390/0\"\n\n\
                 [[limits.rate]]\nrate = \"5/min\"\n";
    let running = toml(first).expect("valid").state;
    let again = |text: &str| {
        from_text_keeping(
            "mcpyard.toml",
            Some(Path::new("/cfg")),
            text,
            Format::Toml,
            &env,
            Some(&running),
        )
        .expect("valid")
    };
    let same = again(first);
    let kept = |s: &Settings| {
        s.state
            .redis
            .as_ref()
            .zip(running.redis.as_ref())
            .is_some_and(|(a, b)| std::sync::Arc::ptr_eq(a, b))
    };
    assert!(kept(&same), "the running backend, not a second client");
    assert_eq!(same.state_fingerprint, running.fingerprint);
    // Another URL waits for a restart: the running backend stays, and the
    // fingerprint says that [state] changed.
    let moved = again(&first.replace("6390", "6391"));
    assert!(kept(&moved));
    assert_ne!(moved.state_fingerprint, running.fingerprint);
}
