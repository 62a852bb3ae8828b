//! Faults: an upstream killed mid-session, one that hangs, one that writes
//! garbage; and no child process left behind when the gateway stops, nor
//! a call in flight cut short by it.

#[path = "support/resume.rs"]
mod resume;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{ClientError, RequestOptions};
use mcpyard_proto::codes;
use serde_json::json;
use support::*;

/// The tool names of one `tools/list`, made at once (no waiting for tools
/// to appear), as a client launched with the gateway does.
async fn first_list(client: &mcpyard_client::McpClient) -> Vec<String> {
    let listed = client
        .request("tools/list", None, RequestOptions::default())
        .await
        .expect("tools/list");
    listed["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The PIDs of processes under the gateway whose command line contains `needle`.
fn upstream_pids(gateway_pid: i32, needle: &str) -> Vec<i32> {
    descendants(gateway_pid)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_upstream_fails_fast_while_others_work_and_then_comes_back() {
    let dir = scratch();
    // While the file `hold` exists, the server cannot start again: the test
    // looks at the gateway with the server down for as long as it needs.
    let hold = dir.path().join("hold");
    let start_unless_held = r#"if [ -e "$1" ]; then exit 1; fi; exec "$2" "$3""#;
    let config = format!(
        "[servers.every]\ncommand = \"sh\"\nargs = [\"-c\", {}, \"sh\", {}, {}, {}]\n\n[servers.time]\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
        toml_str(start_unless_held),
        path_str(&hold),
        path_str(&node()),
        path_str(&everything_js()),
        path_str(&tool("venv-time/bin/python")),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__echo", "time__get_current_time"],
        Duration::from_secs(60),
    )
    .await;

    let victims = upstream_pids(gw.proc.pid(), "server-everything");
    assert!(
        !victims.is_empty(),
        "server-everything runs under the gateway"
    );
    std::fs::write(&hold, "").unwrap();
    for p in &victims {
        // SAFETY: plain kill(2) of a process this test owns.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }

    // Calls to it fail fast with -32603 naming the server.
    let deadline = Instant::now() + Duration::from_secs(10);
    let err = loop {
        let started = Instant::now();
        let r = client
            .request(
                "tools/call",
                Some(json!({"name": "every__echo", "arguments": {"message": "x"}})),
                RequestOptions::default(),
            )
            .await;
        match r {
            Err(ClientError::Rpc(e)) => {
                assert!(
                    started.elapsed() < Duration::from_secs(2),
                    "failing took {:?}",
                    started.elapsed()
                );
                break e;
            }
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("a call to a dead upstream must fail fast: {other:?}"),
        }
    };
    assert_eq!(err.code, codes::INTERNAL_ERROR, "{err}");
    assert!(err.message.contains("every"), "{err}");

    let r = call(
        &client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await;
    // The other upstream keeps working.
    assert_current_utc_time(&r);

    // Meanwhile its tools leave the list, the other server's stay, and the
    // status tool shows it down.
    let listed = client.list_all("tools/list", "tools").await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("every__")),
        "a down server's tools are listed: {names:?}"
    );
    assert!(names.contains(&"time__get_current_time"), "{names:?}");
    let every = source_status(&client, "every").await;
    assert_eq!(every["state"], json!("down"), "{every}");
    assert_eq!(every["healthy"], json!(false), "{every}");
    assert!(
        every["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{every}"
    );
    assert_eq!(source_status(&client, "time").await["state"], json!("up"));

    // The supervisor restarts it once it can start, and its tools come back.
    std::fs::remove_file(&hold).unwrap();
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(30)).await;
    let r = call(&client, "every__echo", json!({"message": "back"})).await;
    assert!(first_text(&r).contains("back"), "{r}");
    let every = source_status(&client, "every").await;
    assert_eq!(every["state"], json!("up"), "{every}");
    assert_eq!(every["healthy"], json!(true), "{every}");
    assert!(every["restarts"].as_u64().unwrap() >= 1, "{every}");
    client.shutdown().await;
}

/// The `mcpyard__status` entry of source `name`.
async fn source_status(client: &mcpyard_client::McpClient, name: &str) -> serde_json::Value {
    let status = call(client, "mcpyard__status", json!({})).await;
    status["structuredContent"]["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == json!(name)))
        .cloned()
        .unwrap_or_else(|| panic!("no source {name} in {status}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_upstream_times_out_and_is_told_to_cancel() {
    let dir = scratch();
    let cancels = dir.path().join("cancelled.jsonl");
    let config = format!(
        "[servers.hang]\n{}timeout = \"1s\"\n",
        misbehaving("hang", &cancels)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["hang__slow"], Duration::from_secs(30)).await;
    let started = Instant::now();
    let r = client
        .request(
            "tools/call",
            Some(json!({"name": "hang__slow", "arguments": {}})),
            RequestOptions::default(),
        )
        .await;
    let elapsed = started.elapsed();
    match r {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.code, codes::INTERNAL_ERROR);
            assert!(
                e.message.contains("hang") && e.message.contains("within"),
                "{e}"
            );
        }
        other => panic!("expected a timeout error, got {other:?}"),
    }
    assert!(
        elapsed < Duration::from_secs(10),
        "timeout took {elapsed:?}"
    );
    // The upstream was told to stop working on it.
    // The file appears before its line is written: wait for the line itself.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut logged = String::new();
    while !logged.contains("requestId") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        logged = std::fs::read_to_string(&cancels).unwrap_or_default();
    }
    assert!(
        logged.contains("requestId"),
        "no notifications/cancelled reached the upstream"
    );
    // The connection is still good for other calls.
    let r = call(&client, "hang__echo", json!({"k": 1})).await;
    assert!(first_text(&r).contains("\"k\""), "{r}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_writing_garbage_still_serves_its_tools() {
    let dir = scratch();
    let config = format!(
        "[servers.noisy]\n{}",
        misbehaving("garbage", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["noisy__echo"], Duration::from_secs(30)).await;
    let r = call(&client, "noisy__echo", json!({"through": "noise"})).await;
    assert!(first_text(&r).contains("noise"), "{r}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_child_process_survives_the_gateway() {
    let dir = scratch();
    let config = format!(
        "[servers.a]\ncommand = {node}\nargs = [{e}]\n\n[servers.b]\ncommand = {node}\nargs = [{e}]\n\n[servers.time]\ncommand = {py}\nargs = [\"-m\", \"mcp_server_time\"]\n",
        node = path_str(&node()),
        e = path_str(&everything_js()),
        py = path_str(&tool("venv-time/bin/python")),
    );
    let mut gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["a__echo", "b__echo", "time__get_current_time"],
        Duration::from_secs(60),
    )
    .await;
    client.shutdown().await;
    let children = descendants(gw.proc.pid());
    assert!(
        children.len() >= 3,
        "upstreams run as children: {children:?}"
    );
    // A graceful stop (SIGTERM to the gateway alone, as a service manager does).
    // SAFETY: plain kill(2) of a process this test owns.
    unsafe { libc::kill(gw.proc.pid(), libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while gw.proc.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = gw.proc.child.try_wait().ok().flatten();
    assert!(status.is_some(), "the gateway did not exit on SIGTERM");
    let alive: Vec<i32> = children
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false)
        })
        .collect();
    assert!(alive.is_empty(), "processes left behind: {alive:?}");
    gw.proc.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_does_not_wait_for_a_health_check_the_upstream_never_answers() {
    let dir = scratch();
    let pings = dir.path().join("pings");
    let config = format!("[servers.deaf]\n{}", misbehaving("deaf", &pings));
    let mut gw = Gateway::start(&config, dir.path()).await;
    // The first health check comes 15 s after the upstream connected; from
    // then on the upstream answers nothing.
    let deadline = Instant::now() + Duration::from_secs(45);
    while !std::fs::read_to_string(&pings).is_ok_and(|p| p.contains("ping")) {
        assert!(Instant::now() < deadline, "no health check within 45 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // SAFETY: plain kill(2) of a process this test owns.
    unsafe { libc::kill(gw.proc.pid(), libc::SIGTERM) };
    let stopped = Instant::now();
    let deadline = stopped + Duration::from_secs(15);
    while gw.proc.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = stopped.elapsed();
    assert!(
        gw.proc.child.try_wait().ok().flatten().is_some(),
        "the gateway did not exit on SIGTERM"
    );
    // Its stdin closed, the upstream exits at once: the stop waits neither
    // for the ping's 20 s nor for the shutdown's 10 s deadline.
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    let log = gw.proc.log_text();
    assert!(!log.contains("did not stop in time"), "{log}");
    gw.proc.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_made_while_an_upstream_is_still_starting_wait_for_it() {
    let dir = scratch();
    let config = format!(
        "[servers.late]\n{}",
        misbehaving("slowstart", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    // No waiting for the tools: the first list and the first call are made
    // while the upstream is still asleep, as a client launched with the
    // gateway does.
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    // The status tool answers at once, and shows it still connecting.
    let status = call(&client, "mcpyard__status", json!({})).await;
    let late = status["structuredContent"]["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == json!("late")))
        .cloned()
        .unwrap_or_default();
    assert_eq!(late["state"], json!("connecting"), "{status}");
    let names = first_list(&client).await;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert!(names.contains(&"late__echo"), "first list: {names:?}");
    let r = call(&client, "late__echo", json!({"first": "call"})).await;
    assert!(first_text(&r).contains("first"), "{r}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_http_upstream_is_picked_up_again_without_a_failed_call() {
    let dir = scratch();
    let (mut server, port) = start_everything("streamableHttp", dir.path()).await;
    let config = format!("[servers.every]\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(30)).await;
    let r = call(&client, "every__echo", json!({"message": "before"})).await;
    assert!(first_text(&r).contains("before"), "{r}");

    // A restart in place: the new process knows nothing of the old session.
    server.stop();
    let _server = start_everything_on("streamableHttp", dir.path(), port).await;
    let r = call(&client, "every__echo", json!({"message": "after"})).await;
    assert!(first_text(&r).contains("after"), "{r}");
    assert!(
        gw.proc.log_text().contains("session expired"),
        "the gateway says it started a new session"
    );
    client.shutdown().await;
}

/// An HTTP upstream says its tools changed and goes away before the list
/// can be fetched: its tools stay listed (the failed fetch says nothing
/// about them), so the next call reaches the restarted server and renews
/// the session instead of failing on an unknown tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_that_cannot_be_fetched_keeps_its_tools_for_the_restarted_upstream() {
    let dir = scratch();
    let port = free_port();
    let first = start_http_upstream(dir.path(), port, 1).await;
    let config = format!("[servers.up]\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["up__echo", "up__announce"],
        Duration::from_secs(30),
    )
    .await;

    let r = call(&client, "up__announce", json!({})).await;
    assert_eq!(first_text(&r), "announced", "{r}");
    wait_for_log(&gw.proc, "listing failed", Duration::from_secs(10)).await;
    drop(first);
    let listed = client.list_all("tools/list", "tools").await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&"up__echo"),
        "a failed fetch emptied the list: {names:?}"
    );

    let _second = start_http_upstream(dir.path(), port, 2).await;
    let r = client
        .request(
            "tools/call",
            Some(json!({"name": "up__echo", "arguments": {"said": "after"}})),
            RequestOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("the call after the restart failed: {e}"));
    assert_eq!(first_text(&r), r#"{"said": "after"}"#, "{r}");
    // The renewed session's lists replace the old ones.
    wait_for_tools(&client, &["up__second"], Duration::from_secs(10)).await;
    client.shutdown().await;
}

/// An HTTP upstream restarted in place forgets the gateway's session: the
/// renewed session gets what a new connection gets, its lists fetched again
/// and what clients watch subscribed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_http_session_is_subscribed_again_and_its_lists_fetched() {
    let dir = scratch();
    let port = free_port();
    let mut first = start_http_upstream(dir.path(), port, 1).await;
    let config = format!("[servers.up]\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let gw = Gateway::start(&config, dir.path()).await;
    let seen = Arc::new(Recorder::default());
    let client = gw.client(seen.clone(), json!({})).await;
    wait_for_tools(&client, &["up__touch"], Duration::from_secs(30)).await;
    client
        .request(
            "resources/subscribe",
            Some(json!({"uri": "mem://a"})),
            RequestOptions::default(),
        )
        .await
        .expect("subscribe");
    let r = call(&client, "up__touch", json!({})).await;
    assert_eq!(first_text(&r), r#"["mem://a"]"#, "{r}");

    first.stop();
    let _second = start_http_upstream(dir.path(), port, 2).await;
    // The first call renews the session; the subscription follows.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(&client, "up__touch", json!({})).await;
        if first_text(&r) == r#"["mem://a"]"# {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the renewed session was not subscribed again: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        gw.proc.log_text().contains("session expired"),
        "the gateway renewed the session"
    );
    wait_for_tools(&client, &["up__second"], Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen
        .notifications_named("notifications/resources/updated")
        .len()
        < 2
    {
        assert!(
            Instant::now() < deadline,
            "no update from the restarted server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_lists_holds_up_no_other_server() {
    let dir = scratch();
    let config = format!(
        "[servers.mute]\n{}list_timeout = \"2s\"\n\n{}",
        misbehaving("mute", &dir.path().join("x")),
        everything_stdio("every"),
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let started = Instant::now();
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    // The first list, as a client launched with the gateway makes it.
    let names = first_list(&client).await;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert!(names.contains(&"every__echo"), "first list: {names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mute__")), "{names:?}");
    let r = call(&client, "every__echo", json!({"message": "served"})).await;
    assert!(first_text(&r).contains("served"), "{r}");
    // A liveness bound for a busy machine, not a speed measure.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the other server's tools took {:?}",
        started.elapsed()
    );
    let status = call(&client, "mcpyard__status", json!({})).await;
    let mute = status["structuredContent"]["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == json!("mute")))
        .cloned()
        .unwrap_or_default();
    assert_eq!(mute["ready"], json!(false), "{status}");
    assert_ne!(mute["state"], json!("up"), "{status}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_list_changes_is_one_refetch_not_a_queue() {
    let dir = scratch();
    let lists = dir.path().join("lists");
    let config = format!("[servers.f]\n{}", misbehaving("flood", &lists));
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["f__flood"], Duration::from_secs(30)).await;
    let before = std::fs::read_to_string(&lists)
        .unwrap_or_default()
        .lines()
        .count();
    let r = call(&client, "f__flood", json!({})).await;
    assert_eq!(first_text(&r), "flooded", "{r}");
    let refetched = || {
        std::fs::read_to_string(&lists)
            .unwrap_or_default()
            .lines()
            .count()
            - before
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while refetched() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The gateway still answers, and has listed again a few times, not 500.
    let r = call(&client, "f__echo", json!({"after": "flood"})).await;
    assert!(first_text(&r).contains("flood"), "{r}");
    let refetches = refetched();
    assert!(
        (1..=5).contains(&refetches),
        "tools/list fetched {refetches} times for 500 list_changed"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_answer_streams_finishes_while_the_gateway_drains() {
    let dir = scratch();
    let mut gw = Gateway::start(&everything_stdio("every"), dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__trigger-long-running-operation"],
        Duration::from_secs(60),
    )
    .await;
    client.shutdown().await;
    let session = resume::open_session(&gw.url()).await;

    // Progress makes the answer a stream before the result.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "every__trigger-long-running-operation",
        "arguments": {"duration": 2, "steps": 4},
        "_meta": {"progressToken": "p"}}});
    let mut answer = reqwest::Client::new()
        .post(gw.url())
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&call)
        .send()
        .await
        .expect("the call's stream opens");
    let mut read = String::new();
    while !read.contains("notifications/progress") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), answer.chunk())
            .await
            .expect("progress within 10 s")
            .expect("the stream reads")
            .expect("the stream stays open");
        read += &String::from_utf8_lossy(&chunk);
    }
    // SAFETY: plain kill(2) of a process this test owns.
    unsafe { libc::kill(gw.proc.pid(), libc::SIGTERM) };
    let rest = tokio::time::timeout(Duration::from_secs(10), answer.text())
        .await
        .expect("the stream ends within the drain")
        .unwrap_or_default();
    assert!(
        rest.contains("Long running operation completed"),
        "the call finished on its stream during the drain: {read}{rest}"
    );
    gw.proc.stop();
}
