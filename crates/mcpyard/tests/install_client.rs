//! `mcpyard install-client`, run as a user runs it on a real Claude Desktop
//! file holding server-everything: the dry run prints the change and
//! writes nothing; the install moves the server behind mcpyard, backs the
//! file up, and the entry it wrote starts a gateway that the Python SDK 2.x
//! (in its default mode, over stdio, as Claude Desktop starts it) finds
//! the moved server's tools through; a second run changes nothing.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

fn install(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpyard"));
    cmd.arg("install-client").args(args).env_remove("RUST_LOG");
    run(cmd, Duration::from_secs(60))
}

#[test]
fn claudes_servers_move_behind_mcpyard_and_the_sdk_reaches_them_through_it() {
    let dir = scratch();
    let client_file = dir.path().join("Claude/claude_desktop_config.json");
    let config = dir.path().join("mcpyard/mcpyard.toml");
    std::fs::create_dir_all(client_file.parent().unwrap()).unwrap();
    let original = serde_json::to_string_pretty(&json!({
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "everything": {
                "command": node().display().to_string(),
                "args": [everything_js().display().to_string()],
                "env": {"EVERYTHING_TOKEN": "s3cret-of-the-test"}
            }
        }
    }))
    .unwrap();
    std::fs::write(&client_file, &original).unwrap();
    let (file, cfg) = (
        client_file.display().to_string(),
        config.display().to_string(),
    );

    // The dry run: a diff, masked, and nothing written.
    let (ok, stdout, stderr) = install(&["claude", "--file", &file, "--config", &cfg, "--dry-run"]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("-    \"everything\": {"), "{stdout}");
    assert!(stdout.contains("+[servers.everything]"), "{stdout}");
    assert!(
        stdout.contains("(dry run: nothing was written)"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("s3cret-of-the-test"),
        "a secret in the diff:\n{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&client_file).unwrap(), original);
    assert!(!config.exists());

    // The install.
    let (ok, stdout, stderr) = install(&["claude", "--file", &file, "--config", &cfg]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("moved 1 server(s) behind mcpyard"),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret-of-the-test"), "{stdout}");
    let backups: Vec<_> = std::fs::read_dir(client_file.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".mcpyard-backup-"))
        .collect();
    assert_eq!(backups.len(), 1, "{stdout}");
    assert_eq!(
        std::fs::read_to_string(backups[0].path()).unwrap(),
        original
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&client_file).unwrap()).unwrap();
    assert_eq!(written["globalShortcut"], "Ctrl+Space");
    let servers = written["mcpServers"].as_object().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["mcpyard"], "{written}");
    let moved = std::fs::read_to_string(&config).unwrap();
    assert!(moved.contains("[servers.everything]"), "{moved}");
    assert!(moved.contains("EVERYTHING_TOKEN"), "{moved}");

    // The entry as Claude Desktop starts it, driven by the Python SDK.
    let entry = &written["mcpServers"]["mcpyard"];
    let mut argv = vec![entry["command"].clone()];
    argv.extend(entry["args"].as_array().unwrap().iter().cloned());
    let mut sdk = Command::new(tool("venv/bin/python"));
    sdk.arg(support_file("py_tools_view.py"))
        .arg("stdio")
        .arg("--command")
        .arg(Value::Array(argv).to_string())
        .arg("--call")
        .arg("everything__get-env");
    let (ok, stdout, stderr) = run(sdk, Duration::from_secs(150));
    assert!(ok, "{stdout}\n{stderr}");
    let summary: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(summary["ok"], true, "{summary}\n{stderr}");
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    let tools = summary["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("everything__echo")), "{summary}");
    // The server's environment moved with it.
    let env = summary["results"]["everything__get-env"]
        .as_str()
        .unwrap_or_default();
    assert!(env.contains("EVERYTHING_TOKEN"), "{summary}");

    // A second run finds nothing to do.
    let (ok, stdout, stderr) = install(&["claude", "--file", &file, "--config", &cfg]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("nothing to change"), "{stdout}");
}
