//! OAuth end to end against the official conformance suite's authorization
//! and MCP servers (real HTTP on loopback): the `oauth` example with both
//! grants, and the conformance client with every log line checked for
//! secrets. The full client suite runs in scripts/conformance-client.sh.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpyard_client::oauth::{
    OAuthConfig, PrivateKeyJwt, RegisteredClient, Secret, StoredCredentials, TokenSet,
};
use serde_json::Value;

const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);

fn conformance() -> PathBuf {
    let path = common::workspace_root().join(".tools/npm/node_modules/.bin/conformance");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        path.display()
    );
    path
}

/// An example: the one `cargo test` built beside this test (with the
/// workspace's features), else built now. A nested `cargo build` must not
/// see the variables cargo sets for a test (`CARGO_MANIFEST_DIR`...): a
/// build script that reads them (ring's) would be rebuilt, and with it
/// every crate above it, for the next `cargo` of the run to rebuild again.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("examples")
        .join(name);
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        if path.exists() {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args([
                "build",
                "-q",
                "-p",
                "mcpyard-client",
                "--features",
                "oauth",
                "--examples",
            ])
            .current_dir(common::workspace_root());
        for (var, _) in std::env::vars_os() {
            let var = var.to_string_lossy();
            let set_for_tests = var.starts_with("CARGO_PKG_")
                || var.starts_with("CARGO_BIN_")
                || var.starts_with("CARGO_CRATE_")
                || var.starts_with("CARGO_MANIFEST_")
                || var == "CARGO_PRIMARY_PACKAGE"
                || var == "CARGO_TARGET_TMPDIR";
            if set_for_tests {
                build.env_remove(var.as_ref());
            }
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "the examples did not build");
    });
    assert!(
        path.exists(),
        "{} is missing after cargo build",
        path.display()
    );
    path
}

/// What the suite recorded for one scenario.
struct Outcome {
    checks: Vec<Value>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn status(&self, id: &str) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|c| c["id"] == id)
            .map(|c| c["status"].as_str().unwrap_or(""))
            .collect()
    }

    fn assert_no_failure(&self) {
        let failed: Vec<&Value> = self
            .checks
            .iter()
            .filter(|c| c["status"] == "FAILURE")
            .collect();
        assert!(
            failed.is_empty(),
            "failed checks: {failed:#?}\nclient stderr:\n{}",
            self.stderr
        );
    }
}

/// Runs one client scenario of the suite with `command` as the client, in
/// a loopback-only network namespace when the system allows one (the
/// suite's servers bind every interface).
fn run_scenario(scenario: &str, command: &str, env: &[(&str, &str)]) -> Outcome {
    let out = tempfile::tempdir().expect("temp dir");
    let node_dir = common::node()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = format!(
        "{}:{}",
        node_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let isolated = Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut cmd = if isolated {
        let mut c = Command::new("unshare");
        c.args(["-rn", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"]);
        c.arg(conformance());
        c
    } else {
        Command::new(conformance())
    };
    cmd.args(["client", "--scenario", scenario, "--command", command, "-o"])
        .arg(out.path())
        .env("PATH", path)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("start the conformance suite");
    let deadline = Instant::now() + SCENARIO_TIMEOUT;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{scenario} did not finish within {SCENARIO_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = find_checks(out.path()).unwrap_or_else(|| panic!("{scenario} wrote no checks.json"));
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    Outcome {
        checks: serde_json::from_str(&read("checks.json")).expect("checks.json"),
        stdout: read("stdout.txt"),
        stderr: read("stderr.txt"),
    }
}

fn find_checks(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.join("checks.json").exists() {
            return Some(path);
        }
        if path.is_dir() {
            if let Some(found) = find_checks(&path) {
                return Some(found);
            }
        }
    }
    None
}

#[test]
fn the_example_uses_client_credentials_with_a_pre_registered_client() {
    let command = format!("{} --client-credentials", example("oauth").display());
    let outcome = run_scenario(
        "auth/client-credentials-basic",
        &command,
        &[
            ("OAUTH_CLIENT_ID", "conformance-test-client"),
            ("OAUTH_CLIENT_SECRET", "conformance-test-secret"),
        ],
    );
    outcome.assert_no_failure();
    assert_eq!(outcome.status("client-credentials-basic-auth"), ["SUCCESS"]);
    assert!(outcome.stdout.contains("1 tools"), "{}", outcome.stdout);
}

#[test]
fn the_example_logs_in_through_its_loopback_redirect() {
    // curl plays the browser: it follows the authorization server's
    // redirect to the example's loopback port.
    let command = format!(
        "{} --open 'curl -sS -L -o /dev/null' test-tool",
        example("oauth").display()
    );
    let outcome = run_scenario("auth/metadata-default", &command, &[]);
    outcome.assert_no_failure();
    assert_eq!(
        outcome.status("pkce-verifier-matches-challenge"),
        ["SUCCESS"]
    );
    assert_eq!(outcome.status("client-registration"), ["SUCCESS"]);
    assert!(
        outcome.stdout.contains("test-tool: "),
        "the tool was not called: {}",
        outcome.stdout
    );
}

#[test]
fn no_secret_or_token_reaches_the_logs() {
    let client = example("conformance_client").display().to_string();
    for scenario in [
        "auth/client-credentials-basic",
        "auth/token-endpoint-auth-post",
    ] {
        let outcome = run_scenario(scenario, &client, &[("RUST_LOG", "trace")]);
        outcome.assert_no_failure();
        assert!(
            outcome.stderr.contains("mcpyard::oauth"),
            "{scenario}: no OAuth log lines at trace level:\n{}",
            outcome.stderr
        );
        // The suite's tokens and secrets: `cc-token-<time>`,
        // `test-token-<time>`, the fixed client secret and `test-secret-<time>`
        // from dynamic registration.
        let logs = format!("{}\n{}", outcome.stdout, outcome.stderr);
        for secret in [
            "cc-token-",
            "test-token-",
            "conformance-test-secret",
            "test-secret-",
        ] {
            assert!(
                !logs.contains(secret),
                "{scenario}: `{secret}` appears in the client's output"
            );
        }
    }
}

#[test]
fn debug_output_hides_secrets() {
    let config = OAuthConfig {
        client_secret: Some(Secret::new("s3cret-client")),
        private_key: Some(PrivateKeyJwt {
            pem: Secret::new("-----BEGIN PRIVATE KEY-----s3cret-key"),
            algorithm: "ES256".into(),
            key_id: None,
        }),
        ..OAuthConfig::default()
    };
    let stored = StoredCredentials {
        tokens: Some(TokenSet {
            access_token: Secret::new("s3cret-access"),
            refresh_token: Some(Secret::new("s3cret-refresh")),
            expires_at: None,
            obtained_at: None,
            scopes: vec!["read".into()],
        }),
        client: Some(RegisteredClient {
            issuer: "https://as.example".into(),
            client_id: "visible-id".into(),
            client_secret: Some(Secret::new("s3cret-registered")),
            token_endpoint_auth_method: None,
        }),
    };
    let shown = format!("{config:?} {stored:?} {stored:#?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("visible-id") && shown.contains("read"),
        "{shown}"
    );
    // The store still gets the values.
    let saved = serde_json::to_string(&stored).unwrap();
    assert!(saved.contains("s3cret-refresh"));
}
