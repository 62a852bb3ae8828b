//! The examples, run as a user would run them, against server-everything
//! over each transport: they list the tools and call one, printing its
//! progress and result. `cargo test -p mcpyard-client` builds them.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{everything_bin, start_everything};

/// A built example, next to the test binaries (`target/debug/examples`).
fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().expect("the test's path");
    let path = deps
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p mcpyard-client` (it builds the examples) or `cargo build -p mcpyard-client --examples`",
        path.display()
    );
    path
}

/// Runs a command to its end, killing it past `limit`.
fn run_bounded(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let started = Instant::now();
    while child.try_wait().expect("poll the example").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the example ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("the example's output")
}

fn check(output: &Output, what: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what}: {stdout}\n{stderr}");
    assert!(stdout.contains("server: "), "{what}: {stdout}");
    assert!(
        stdout.contains("trigger-long-running-operation"),
        "{what}: {stdout}"
    );
    assert!(
        stdout.contains("Long running operation completed"),
        "{what}: {stdout}"
    );
    // The progress callback printed each step.
    assert!(stderr.contains("progress: 2/2"), "{what}: {stderr}");
}

const CALL: &str = "trigger-long-running-operation";
const ARGUMENTS: &str = r#"{"duration": 0.4, "steps": 2}"#;

#[test]
fn the_stdio_example_lists_and_calls_with_progress() {
    let output = run_bounded(
        Command::new(example("stdio"))
            .args(["--call", CALL, ARGUMENTS])
            .arg(everything_bin()),
        Duration::from_secs(60),
    );
    check(&output, "stdio");
}

#[test]
fn the_streamable_http_example_lists_and_calls_with_progress() {
    let server = start_everything("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let output = run_bounded(
        Command::new(example("streamable_http")).args([url.as_str(), CALL, ARGUMENTS]),
        Duration::from_secs(60),
    );
    check(&output, "streamable_http");
}

#[test]
fn the_legacy_sse_example_lists_and_calls_with_progress() {
    let server = start_everything("sse");
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let output = run_bounded(
        Command::new(example("legacy_sse")).args([url.as_str(), CALL, ARGUMENTS]),
        Duration::from_secs(60),
    );
    check(&output, "legacy_sse");
}
