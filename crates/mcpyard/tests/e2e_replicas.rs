//! A team's gateway: several `mcpyard serve` replicas sharing state in a
//! real Redis, behind a real HAProxy in round-robin without stickiness, so
//! that consecutive requests of one client land on different replicas.
//!
//! - The Python SDK 2.x in legacy (session) mode and in its default mode
//!   works through the balancer: a session opened on one replica is served
//!   by the other, a DELETE on one ends it on both.
//! - A rate limit of 10/min lets exactly 10 calls through across three
//!   replicas; `max_sessions` counts the sessions of every replica.
//! - Redis (with a password) killed under the gateway: a rate-limited call
//!   fails at once with a clear error where the limits fail closed, passes
//!   where they fail open, `/ready` says 503; all recovers when Redis is
//!   back.
//! - Redis over TLS (`rediss://`, a CA of the test's own) with a password.
//! - Redis restarted under load: limited calls fail at once with a clear
//!   error, calls in known sessions go on, nothing hangs, and all passes
//!   once Redis is back.
//! - A replica stopped (SIGTERM: its call in flight finishes, its stream
//!   closes with a retry hint) and another killed while it holds the
//!   session's stream and a long call: the client opens its stream again
//!   through the balancer, and the session goes on on the last one.
//! - Sampling and elicitation relayed by one replica are answered through
//!   the other; in the 2026-07-28 era, the retry that carries the client's
//!   answer is served by the replica holding the suspended call.
//! - Resource updates from a subscription made through one replica reach
//!   the client's stream on the other, and an unsubscribe through either
//!   ends it.
//! - A legacy HTTP+SSE client (2024-11-05, the project's own and the
//!   Python SDK 2.x's) through the balancer: its POSTs that land on the
//!   replica without its stream are handed to the one with it, and every
//!   answer, a relayed sampling request's among them, arrives on the
//!   stream.
//! - A session's GET stream held by a replica that is killed resumes on
//!   another with `Last-Event-ID`: what followed the client's last event
//!   is replayed from Redis, then the live messages; an unknown id
//!   replays nothing, and the log goes with the session.
//! - What comes for a session while no replica holds its GET stream is
//!   logged in Redis by the replica that made it, and the client's return
//!   with its last event id, on any replica, gets it.
//! - A stdio server's log during a call reaches the caller on the call's
//!   own stream, whichever replica holds the session's stream, and a log
//!   level set through one replica holds on the other.
//! - The TypeScript SDK's own reconnection: its GET stream, held by a
//!   replica that is killed, is opened again on the other with the id of
//!   the last event it read, and the session's updates go on, none twice.
//! - A list change that a call through one replica made (its own stdio
//!   child's) reaches the `subscriptions/listen` streams and the GET
//!   streams the other replica holds, once, and only those that asked.
//! - A task that asks its client for input, while the client waits with
//!   `tasks/result` on the other replica: the question comes on the
//!   session's stream there, and the answer reaches the call.
//! - A task that server-everything runs itself, started through one
//!   replica in a 2025-11-25 session, is listed, read, waited on (its
//!   question to the user answered through the other) and cancelled
//!   through the other.
//! - A task created on one replica is polled, waited on, listed and
//!   cancelled through the others (the Python SDK 1.x through the
//!   balancer); a task whose replica is killed fails, never stays working.

#[path = "support/replicas.rs"]
mod replicas;
#[path = "support/resume.rs"]
mod resume;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use replicas::{wait_for_status, Balancer, Redis};
use resume::{open_session, rpc};
use serde_json::{json, Value};
use support::*;

/// One replica's configuration: server-everything over stdio, state in
/// `redis_url`, its own audit file, and `extra` TOML.
fn replica_config(dir: &Path, name: &str, redis_url: &str, extra: &str) -> String {
    format!(
        "[inference]\nenabled = false\n\n[metrics]\nenabled = true\n\n\
         [state]\nbackend = \"redis\"\nurl = {url}\nreplica = \"{name}\"\n{extra}\n\
         [audit]\nfile = {audit}\n\n{everything}",
        url = toml_str(redis_url),
        audit = path_str(&dir.join("audit.jsonl")),
        everything = everything_stdio("every"),
    )
}

/// Starts `count` replicas, each in its own folder under `dir`.
async fn start_replicas(
    dir: &Path,
    count: usize,
    redis_url: &str,
    extra: &str,
    env: &[(&str, &str)],
) -> Vec<(Gateway, std::path::PathBuf)> {
    let mut replicas = Vec::new();
    for i in 0..count {
        let folder = dir.join(format!("replica-{i}"));
        std::fs::create_dir_all(&folder).expect("replica folder");
        let config = replica_config(&folder, &format!("r{i}"), redis_url, extra);
        let gateway = Gateway::start_with_env(&config, &folder, env).await;
        replicas.push((gateway, folder));
    }
    for (gateway, _) in &replicas {
        let ready = format!("http://127.0.0.1:{}/ready", gateway.port);
        wait_for_status(&ready, 200, Duration::from_secs(60)).await;
    }
    replicas
}

/// HAProxy in front of `replicas`, round-robin.
async fn balance(dir: &Path, replicas: &[(Gateway, std::path::PathBuf)]) -> Balancer {
    let ports: Vec<u16> = replicas.iter().map(|(g, _)| g.port).collect();
    Balancer::start(dir, &ports).await
}

/// How many times the replicas' logs, together, say `line`.
fn logged_times(replicas: &[(Gateway, std::path::PathBuf)], line: &str) -> usize {
    replicas
        .iter()
        .map(|(g, _)| g.proc.log_text().matches(line).count())
        .sum()
}

/// Posts a JSON-RPC message with a session id, returns the HTTP status.
async fn post_in_session(url: &str, session: &str, body: Value) -> u16 {
    reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .expect("the balancer answers")
        .status()
        .as_u16()
}

/// The Python SDK 2.x's run of `py_replicas_check.py` against `url`, in
/// `mode` (`legacy` or `default`).
fn python_client(url: &str, mode: &str) -> Value {
    run_python(
        &tool("venv/bin/python"),
        &[
            support_file("py_replicas_check.py").display().to_string(),
            url.to_owned(),
            mode.to_owned(),
        ],
        Duration::from_secs(120),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_opened_on_one_replica_are_served_by_the_others() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let replicas = start_replicas(dir.path(), 2, &redis.url(), "", &[]).await;
    let balancer = balance(dir.path(), &replicas).await;

    let legacy = python_client(&balancer.url(), "legacy");
    let session = legacy["session_ids"]
        .as_array()
        .filter(|ids| ids.len() == 1)
        .and_then(|ids| ids[0].as_str())
        .unwrap_or_else(|| panic!("one session for the whole run: {legacy}"))
        .to_owned();
    assert!(
        legacy["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "every__echo")),
        "{legacy}"
    );
    let echoes: Vec<&str> = legacy["echoes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(echoes.len(), 7, "{legacy}");
    assert_eq!(echoes[6], "Echo: after setLevel");
    // Both replicas served calls of that one session.
    for (i, (_, folder)) in replicas.iter().enumerate() {
        let served = audit_lines(&folder.join("audit.jsonl"), 1, |r| {
            r["session"] == session.as_str() && r["tool"] == "every__echo"
        })
        .await
        .into_iter()
        .inspect(|r| assert_eq!(r["replica"], format!("r{i}"), "{r}"))
        .count();
        assert!(served >= 1, "replica r{i} served no call of the session");
    }
    // The SDK's DELETE on closing reached one replica; the session is gone
    // on both (two requests: one to each).
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for _ in 0..2 {
        assert_eq!(
            post_in_session(&balancer.url(), &session, ping.clone()).await,
            404,
            "a deleted session is gone everywhere"
        );
    }

    // The default mode (2026-07-28, no session) through the same balancer.
    let modern = python_client(&balancer.url(), "default");
    assert_eq!(modern["session_ids"], json!([]), "{modern}");
    assert_eq!(
        modern["echoes"].as_array().map(Vec::len),
        Some(6),
        "{modern}"
    );

    // Each replica's status names it and its backend.
    for (i, (gateway, _)) in replicas.iter().enumerate() {
        let client = gateway
            .client(std::sync::Arc::new(Recorder::default()), json!({}))
            .await;
        let status = call(&client, "mcpyard__status", json!({})).await;
        let replica = &status["structuredContent"]["replica"];
        assert_eq!(replica["name"], format!("r{i}"), "{status}");
        assert_eq!(replica["state"]["backend"], "redis", "{status}");
        assert_eq!(replica["state"]["reachable"], true, "{status}");
        drop(client);
    }
}

/// Calls `mcpyard__docs` through the balancer with raw 2026-07-28
/// requests (each stands alone), returns how many passed and the error
/// codes of the others.
async fn call_docs(url: &str, times: usize) -> (usize, Vec<i64>) {
    let http = reqwest::Client::new();
    let mut passed = 0;
    let mut refused = Vec::new();
    for i in 0..times {
        let body = json!({
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {
                "name": "mcpyard__docs", "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        });
        let answer: Value = http
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "mcpyard__docs")
            .json(&body)
            .send()
            .await
            .expect("the balancer answers")
            .json()
            .await
            .expect("a JSON answer");
        match answer["error"]["code"].as_i64() {
            None => {
                assert!(answer["result"].is_object(), "{answer}");
                passed += 1;
            }
            Some(code) => refused.push(code),
        }
    }
    (passed, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_counts_once_across_three_replicas() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let limit =
        "[[limits.rate]]\nname = \"docs\"\nrate = \"10/min\"\ntools = [\"mcpyard__docs\"]\n";
    let replicas = start_replicas(dir.path(), 3, &redis.url(), limit, &[]).await;
    let balancer = balance(dir.path(), &replicas).await;

    let (passed, refused) = call_docs(&balancer.url(), 16).await;
    assert_eq!(passed, 10, "exactly the limit passes across replicas");
    assert_eq!(refused, vec![-32029; 6]);
    // Every replica took part.
    for (i, (_, folder)) in replicas.iter().enumerate() {
        let seen = audit_lines(&folder.join("audit.jsonl"), 5, |r| {
            r["tool"] == "mcpyard__docs"
        })
        .await
        .len();
        assert!(seen >= 5, "replica r{i} saw {seen} of the 16 calls");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lost_and_back_fails_as_configured_and_recovers() {
    let dir = scratch();
    let password = "pw-8d1f3a";
    let mut redis = Redis::start(dir.path(), Some(password)).await;
    let env = [("TEST_REDIS_PASSWORD", password)];
    let limit = "password_env = \"TEST_REDIS_PASSWORD\"\ntimeout = \"1s\"\n\n\
                 [[limits.rate]]\nname = \"docs\"\nrate = \"1000/min\"\ntools = [\"mcpyard__docs\"]\n";
    let mut by_mode = Vec::new();
    for mode in ["closed", "open"] {
        let state = format!("fail_mode = \"{mode}\"\n{limit}");
        by_mode.push(start_replicas(&dir.path().join(mode), 1, &redis.url(), &state, &env).await);
    }
    let (closed, open) = (&by_mode[0], &by_mode[1]);
    let (closed_url, open_url) = (closed[0].0.url(), open[0].0.url());
    assert_eq!(call_docs(&closed_url, 2).await, (2, vec![]));

    redis.kill();
    let started = Instant::now();
    let (passed, refused) = call_docs(&closed_url, 1).await;
    assert_eq!((passed, refused.len()), (0, 1), "fail closed refuses");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the refusal came within the timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(
        call_docs(&open_url, 2).await,
        (2, vec![]),
        "fail open passes"
    );
    let ready = format!("http://127.0.0.1:{}/ready", closed[0].0.port);
    let not_ready = wait_for_status(&ready, 503, Duration::from_secs(10)).await;
    assert_eq!(not_ready["state"]["reachable"], false, "{not_ready}");
    let log = closed[0].0.proc.log_text();
    assert!(
        log.contains("could not be checked in Redis"),
        "logged:\n{log}"
    );
    assert!(!log.contains(password), "the password is never logged");

    redis.restart().await;
    wait_for_status(&ready, 200, Duration::from_secs(20)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while call_docs(&closed_url, 1).await != (1, vec![]) {
        assert!(
            Instant::now() < deadline,
            "calls pass again once Redis is back"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let metrics = reqwest::get(format!("http://127.0.0.1:{}/metrics", closed[0].0.port))
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap_or_default();
    assert!(
        metrics.contains("mcpyard_replica{replica=\"r0\",backend=\"redis\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("mcpyard_state_backend_up 1"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_over_tls_with_a_password_counts_the_limits() {
    let dir = scratch();
    let password = "tls-pw-51c0";
    let (redis, ca) = Redis::start_tls(dir.path(), password).await;
    let state = format!(
        "password_env = \"TEST_REDIS_PASSWORD\"\nca_file = {}\n\n\
         [[limits.rate]]\nname = \"docs\"\nrate = \"2/min\"\ntools = [\"mcpyard__docs\"]\n",
        path_str(&ca)
    );
    let replicas = start_replicas(
        dir.path(),
        1,
        &redis.tls_url(),
        &state,
        &[("TEST_REDIS_PASSWORD", password)],
    )
    .await;
    // Two pass and the third is refused by the bucket in Redis: had Redis
    // not been reached, the limits (failing closed) would refuse them all.
    assert_eq!(call_docs(&replicas[0].0.url(), 3).await, (2, vec![-32029]));
}

/// Opens the GET stream of `session` at `url`.
async fn open_stream(url: &str, session: &str) -> reqwest::Response {
    let stream = reqwest::Client::new()
        .get(url)
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .expect("the GET stream opens");
    assert_eq!(stream.status(), 200);
    stream
}

fn echo(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "every__echo", "arguments": {"message": message}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_or_killed_hands_its_sessions_to_the_others() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let replicas = start_replicas(dir.path(), 3, &redis.url(), "", &[]).await;
    let balancer = balance(dir.path(), &replicas).await;
    let first = replicas[0].0.url();

    // A session opened on r0, with its GET stream and a long call there.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "replica-test", "version": "1"}}});
    let (status, session, _) = rpc(&first, None, init).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(rpc(&first, Some(&session), initialized).await.0, 202);
    let stream = open_stream(&first, &session).await;
    let long = {
        let (url, session) = (first.clone(), session.clone());
        tokio::spawn(async move {
            let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "every__trigger-long-running-operation",
                "arguments": {"duration": 2, "steps": 2}}});
            rpc(&url, Some(&session), call).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;

    // SIGTERM to r0 alone (not its upstream's group): it drains.
    // SAFETY: kill of a process this test started.
    unsafe { libc::kill(replicas[0].0.proc.pid(), libc::SIGTERM) };
    let (status, _, answer) = tokio::time::timeout(Duration::from_secs(15), long)
        .await
        .expect("the long call ends within the drain")
        .expect("the call's task");
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Long running operation completed")),
        "the call in flight finished during the drain: {answer}"
    );
    let ended = tokio::time::timeout(Duration::from_secs(15), stream.text())
        .await
        .expect("the GET stream ends")
        .unwrap_or_default();
    assert!(
        ended.contains("retry: 1000"),
        "a retry hint closes the stream: {ended:?}"
    );

    // The session goes on through the balancer, on r1 and r2.
    for i in 0..4 {
        let (status, _, answer) = rpc(&balancer.url(), Some(&session), echo(10 + i, "on")).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"], "Echo: on",
            "{answer}"
        );
    }
    // r1 killed outright while it holds the session's GET stream and a
    // long call: both break at once (no answer comes from a dead process),
    // the client opens its stream again through the balancer, and once the
    // balancer's check has seen r1 gone (a request caught in that instant
    // gets 502, as from any dead server), r2 alone goes on with the session.
    let second = replicas[1].0.url();
    let mut held = open_stream(&second, &session).await;
    let doomed = {
        let (url, session) = (second.clone(), session.clone());
        tokio::spawn(async move {
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "every__trigger-long-running-operation",
                "arguments": {"duration": 30, "steps": 3}}});
            reqwest::Client::new()
                .post(&url)
                .header("Accept", "application/json, text/event-stream")
                .header("Mcp-Session-Id", &session)
                .header("MCP-Protocol-Version", "2025-11-25")
                .json(&call)
                .send()
                .await?
                .text()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    replicas[1].0.proc.signal_group(libc::SIGKILL);
    let broken = tokio::time::timeout(Duration::from_secs(10), doomed)
        .await
        .expect("the long call ends with its replica")
        .expect("joined");
    assert!(
        broken.as_ref().map_or(true, |text| !text
            .contains("Long running operation completed")),
        "a killed replica gave no answer: {broken:?}"
    );
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = held.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream on the killed replica ended");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = open_stream(&balancer.url(), &session).await;
    drop(again);
    for i in 0..4 {
        let (status, _, answer) = rpc(&balancer.url(), Some(&session), echo(20 + i, "still")).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"], "Echo: still",
            "{answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_and_elicitation_are_answered_through_the_other_replica() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let log = [("RUST_LOG", "mcpyard=debug,mcpyard_gateway=debug,info")];
    let replicas = start_replicas(dir.path(), 2, &redis.url(), "", &log).await;
    let balancer = balance(dir.path(), &replicas).await;
    let recorder = std::sync::Arc::new(Recorder::default());
    let client = connect(
        mcpyard_client::TransportSpec::StreamableHttp {
            url: balancer.url(),
            headers: vec![],
        },
        recorder.clone(),
        json!({"sampling": {}, "elicitation": {}}),
    )
    .await;
    // Each call's relayed request goes out on one replica; the client's
    // answer, a POST of its own, lands on whichever comes next.
    for _ in 0..3 {
        let sampled = call(
            &client,
            "every__trigger-sampling-request",
            json!({"prompt": "say hi", "maxTokens": 10}),
        )
        .await;
        assert!(sampled.to_string().contains(SAMPLED_TEXT), "{sampled}");
        let elicited = call(&client, "every__trigger-elicitation-request", json!({})).await;
        assert!(elicited.to_string().contains(ELICITED_NAME), "{elicited}");
    }
    let handed_on: usize = logged_times(
        &replicas,
        "took a client's message that reached another replica",
    );
    assert!(handed_on >= 1, "no answer crossed replicas");

    // The Python SDK 2.x in its default mode (2026-07-28): each request
    // that needs the client is answered `input_required`, and the retry
    // that carries the client's answer lands on the other replica, which
    // has the one holding the suspended call serve it.
    let calls = json!([
        ["every__trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}],
        ["every__trigger-elicitation-request", {}],
        ["every__trigger-sampling-request", {"prompt": "again", "maxTokens": 10}],
        ["every__trigger-elicitation-request", {}],
    ]);
    let mut cmd = std::process::Command::new(tool("venv/bin/python"));
    cmd.arg(support_file("py_input_check.py"))
        .arg(balancer.url())
        .arg("M")
        .arg(calls.to_string());
    let (ok, stdout, stderr) = run(cmd, Duration::from_secs(150));
    assert!(ok, "py_input_check failed:\n{stdout}\n{stderr}");
    let summary: Value = serde_json::from_str(stdout.trim()).expect("a JSON summary");
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["protocolVersion"], "2026-07-28", "{summary}");
    assert_eq!(
        summary["asked"],
        json!(["sampling", "elicitation", "sampling", "elicitation"]),
        "{summary}"
    );
    let results = summary["results"].as_array().expect("results");
    assert_eq!(results.len(), 4, "{summary}");
    for (result, wanted) in
        results
            .iter()
            .zip(["sampled for M", "user M", "sampled for M", "user M"])
    {
        assert!(result.to_string().contains(wanted), "{wanted}: {result}");
    }
    let served_elsewhere: usize = logged_times(&replicas, "served a request for another replica");
    assert!(served_elsewhere >= 1, "no retry crossed replicas");
}

/// Opens a 2025-11-25 session at `url`; its id.
/// Every message of a POST's answer at `url` in `session`: the
/// notifications its stream carried, then the answer.
async fn rpc_messages(url: &str, session: &str, body: Value) -> Vec<Value> {
    let answer = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .timeout(Duration::from_secs(30))
        .json(&body)
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), 200);
    resume::messages(&answer.text().await.expect("the answer reads"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_the_call_and_the_level_set_through_either_replica() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let chatty = format!(
        "[servers.chatty]\ncommand = {}\nargs = [{}]\n",
        path_str(&tool("venv1/bin/python")),
        path_str(&support_file("py_chatty_server.py"))
    );
    let replicas = start_replicas(dir.path(), 2, &redis.url(), &chatty, &[]).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());
    let session = open_session(&r0).await;
    // The session's stream is on r1; the calls run on r0.
    let _stream = open_stream(&r1, &session).await;
    let set_level = |id: u64, level: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel",
               "params": {"level": level}})
    };
    let chatty_call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "chatty__chatty", "arguments": {"said": "hello"}}})
    };
    let logs_of = |messages: &[Value]| {
        assert!(
            messages
                .last()
                .is_some_and(|m| m["result"]["isError"] == json!(false)),
            "{messages:?}"
        );
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };

    let (status, _, answer) = rpc(&r1, Some(&session), set_level(1, "debug")).await;
    assert_eq!(status, 200, "{answer}");
    let messages = rpc_messages(&r0, &session, chatty_call(2)).await;
    assert_eq!(
        logs_of(&messages),
        1,
        "the call's log on its stream: {messages:?}"
    );

    // r0 knew the session before the level changed through r1.
    let (status, _, answer) = rpc(&r1, Some(&session), set_level(3, "error")).await;
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut id = 4;
    loop {
        let messages = rpc_messages(&r0, &session, chatty_call(id)).await;
        if logs_of(&messages) == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "r0 still sends info logs after the level was set to error through r1: {messages:?}"
        );
        id += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts, as a task the gateway runs at `url`, a call that never ends;
/// the task's id.
async fn start_endless_task(url: &str, session: &str, id: u64) -> String {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "asker__slow", "arguments": {}, "task": {"ttl": 120_000}}});
    let (status, _, answer) = rpc(url, Some(session), call).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["task"]["status"], "working", "{answer}");
    answer["result"]["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

/// A `tasks/*` request for `task` at `url`; the JSON answer.
async fn task_request(url: &str, session: &str, method: &str, task: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": method, "params": {"taskId": task}});
    let (status, _, answer) = rpc(url, Some(session), body).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_created_on_one_replica_are_followed_on_the_others() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let log = [("RUST_LOG", "mcpyard_gateway=debug,info")];
    // An upstream without tasks of its own: the gateway runs them.
    let asker = format!(
        "[servers.asker]\n{}",
        misbehaving("asking", &dir.path().join("cancelled.jsonl"))
    );
    let replicas = start_replicas(dir.path(), 2, &redis.url(), &asker, &log).await;
    let balancer = balance(dir.path(), &replicas).await;

    // The Python SDK 1.x follows a task through the balancer: it is
    // created on one replica, polled, waited on and listed on both.
    let summary = python_task(&balancer.url(), "asker__echo", &json!({"delay": 2}));
    assert_eq!(
        summary["statuses"].as_array().and_then(|s| s.last()),
        Some(&json!("completed")),
        "{summary}"
    );
    assert_eq!(
        summary["result"]["content"][0]["text"], r#"{"delay": 2}"#,
        "{summary}"
    );
    assert!(
        summary["statuses"].as_array().is_some_and(|s| s.len() >= 2),
        "polled while it worked: {summary}"
    );
    assert_eq!(summary["listed"], json!([summary["taskId"]]), "{summary}");
    let answered_elsewhere: usize =
        logged_times(&replicas, "answered for a task another replica runs");
    assert!(answered_elsewhere >= 1, "no tasks/* crossed replicas");

    // A task running on r0, cancelled through r1: r0 stops it, and every
    // replica says cancelled. Another session finds no such task.
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());
    let session = open_session(&balancer.url()).await;
    let long = start_endless_task(&r0, &session, 1).await;
    let seen = task_request(&r1, &session, "tasks/get", &long).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    let stranger = open_session(&r1).await;
    let hidden = task_request(&r1, &stranger, "tasks/get", &long).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    let cancelled = task_request(&r1, &session, "tasks/cancel", &long).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let again = task_request(&r1, &session, "tasks/cancel", &long).await;
    assert!(
        again["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("terminal status 'cancelled'")),
        "{again}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // r0 answers from its own store: cancelled only if r1's cancel
        // reached the call it runs.
        let there = task_request(&r0, &session, "tasks/get", &long).await;
        if there["result"]["status"] == "cancelled" {
            break;
        }
        assert!(Instant::now() < deadline, "r0 still runs it: {there}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let result = task_request(&r1, &session, "tasks/result", &long).await;
    assert_eq!(result["error"]["data"]["status"], "cancelled", "{result}");

    // A task whose replica is killed fails on the others, within the
    // replica's mark of life (10 s), rather than staying `working`.
    let orphan = start_endless_task(&r0, &session, 2).await;
    let waiting = {
        let (url, session, orphan) = (r1.clone(), session.clone(), orphan.clone());
        tokio::spawn(async move { task_request(&url, &session, "tasks/result", &orphan).await })
    };
    replicas[0].0.proc.signal_group(libc::SIGKILL);
    let answered = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("tasks/result ends once the replica is found dead")
        .expect("joined");
    assert!(
        answered["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("replica that ran this task stopped")),
        "{answered}"
    );
    let failed = task_request(&r1, &session, "tasks/get", &orphan).await;
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let listed = rpc(
        &r1,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/list"}),
    )
    .await
    .2;
    let statuses: Vec<&Value> = listed["result"]["tasks"]
        .as_array()
        .map(|t| t.iter().map(|t| &t["status"]).collect())
        .unwrap_or_default();
    assert_eq!(
        statuses,
        [&json!("cancelled"), &json!("failed")],
        "{listed}"
    );
}

/// One call of the load below: when it was sent (since the start), how
/// long it took, and its answer (or the transport's failure).
struct Sent {
    at: Duration,
    took: Duration,
    answer: Result<Value, String>,
}

/// Calls `every__echo` in `session` and the rate-limited `mcpyard__docs`
/// in turn, round-robin over `urls`, until `stop`; every call bounded by
/// 10 s.
async fn keep_calling(
    urls: Vec<String>,
    session: String,
    start: Instant,
    stop: Instant,
) -> Vec<Sent> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let mut sent = Vec::new();
    for i in 0u64.. {
        if Instant::now() >= stop {
            break;
        }
        let name = if i % 2 == 0 {
            "every__echo"
        } else {
            "mcpyard__docs"
        };
        let url = &urls[(i / 2) as usize % urls.len()];
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": name, "arguments": {"message": "load"}}});
        let at = start.elapsed();
        let answer = async {
            let text = http
                .post(url)
                .header("Accept", "application/json, text/event-stream")
                .header("Mcp-Session-Id", &session)
                .header("MCP-Protocol-Version", "2025-11-25")
                .json(&body)
                .send()
                .await
                .map_err(|e| e.to_string())?
                .text()
                .await
                .map_err(|e| e.to_string())?;
            let data = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .next_back()
                .unwrap_or(&text);
            serde_json::from_str::<Value>(data.trim()).map_err(|e| format!("{e}: {text}"))
        }
        .await;
        sent.push(Sent {
            at,
            took: start.elapsed() - at,
            answer,
        });
    }
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_under_load_fails_calls_clearly_and_recovers() {
    let dir = scratch();
    let mut redis = Redis::start(dir.path(), None).await;
    let state = "timeout = \"1s\"\n\n\
                 [[limits.rate]]\nname = \"docs\"\nrate = \"100000/min\"\ntools = [\"mcpyard__docs\"]\n";
    let replicas = start_replicas(dir.path(), 2, &redis.url(), state, &[]).await;
    // The clients go round-robin to the replicas themselves: a balancer
    // checking `/ready` takes both out while Redis is away (503 from the
    // balancer), and it is the replicas' own answers that are tested here.
    let urls: Vec<String> = replicas.iter().map(|(g, _)| g.url()).collect();
    let session = open_session(&urls[0]).await;
    // Both replicas serve the session before Redis goes.
    for (i, url) in urls.iter().enumerate() {
        let (status, _, answer) = rpc(url, Some(&session), echo(100 + i as u64, "warm")).await;
        assert_eq!(status, 200, "{answer}");
    }

    // Four clients call without pause; Redis is killed after 2 s, started
    // again (empty) 3 s later, and the load goes on 8 s more.
    let start = Instant::now();
    let stop = start + Duration::from_secs(13);
    let workers: Vec<_> = (0..4)
        .map(|_| tokio::spawn(keep_calling(urls.clone(), session.clone(), start, stop)))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let killed = start.elapsed();
    redis.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    redis.restart().await;
    let restarted = start.elapsed();
    let mut sent = Vec::new();
    for worker in workers {
        let finished = tokio::time::timeout(Duration::from_secs(30), worker)
            .await
            .expect("no client hangs");
        sent.extend(finished.expect("joined"));
    }

    let slowest = sent.iter().map(|s| s.took).max().unwrap_or_default();
    assert!(
        slowest < Duration::from_secs(5),
        "every call ended within the backend's timeout and a margin: {slowest:?}"
    );
    let (mut passed, mut refused_clearly) = (0, 0);
    for s in &sent {
        let answer = s
            .answer
            .as_ref()
            .unwrap_or_else(|e| panic!("at {:?}: {e}", s.at));
        if answer["result"].is_object() {
            assert_ne!(answer["result"]["isError"], true, "{answer}");
            passed += 1;
            continue;
        }
        // A refusal only for the limited tool, only while Redis was away
        // (and a moment after, while the connection comes back), saying why.
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("could not be checked (the shared state does not answer)"),
            "a clear error: {answer}"
        );
        assert!(
            s.at + s.took >= killed && s.at <= restarted + Duration::from_secs(5),
            "refused at {:?}, Redis away from {killed:?} to {restarted:?}: {answer}",
            s.at
        );
        refused_clearly += 1;
    }
    assert!(refused_clearly >= 1, "the limited calls failed closed");
    // The session went on throughout, on both replicas, and the limited
    // tool passes again at the end.
    let echoed_during = sent.iter().any(|s| {
        s.at > killed + Duration::from_millis(500)
            && s.at + s.took < restarted
            && s.answer
                .as_ref()
                .is_ok_and(|a| a["result"]["content"][0]["text"] == "Echo: load")
    });
    assert!(echoed_during, "calls in the known session went on");
    let late = sent
        .iter()
        .filter(|s| s.at > restarted + Duration::from_secs(5))
        .collect::<Vec<_>>();
    assert!(late.len() >= 10, "load went on after the restart");
    assert!(
        late.iter()
            .all(|s| s.answer.as_ref().is_ok_and(|a| a["result"].is_object())),
        "all passes once Redis is back"
    );
    assert!(
        passed > refused_clearly,
        "{passed} passed, {refused_clearly} refused"
    );
    // A new session opened on one replica is served by the other again.
    let fresh = open_session(&urls[0]).await;
    let (status, _, answer) = rpc(&urls[1], Some(&fresh), echo(200, "new")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "Echo: new",
        "{answer}"
    );
}

/// Asks `url` for a new session: the HTTP status and the session id.
async fn try_open_session(url: &str) -> (u16, Option<String>, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "replica-test", "version": "1"}}});
    rpc(url, None, init).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_caps_hold_across_replicas() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let mut replicas = Vec::new();
    for i in 0..2 {
        let folder = dir.path().join(format!("replica-{i}"));
        std::fs::create_dir_all(&folder).expect("replica folder");
        let config = format!(
            "max_sessions = 3\n{}",
            replica_config(&folder, &format!("r{i}"), &redis.url(), "")
        );
        let gateway = Gateway::start_with_env(&config, &folder, &[]).await;
        let ready = format!("http://127.0.0.1:{}/ready", gateway.port);
        wait_for_status(&ready, 200, Duration::from_secs(60)).await;
        replicas.push(gateway);
    }
    let (r0, r1) = (replicas[0].url(), replicas[1].url());

    // Three sessions in all, on two replicas: r1 holds one, yet the
    // fourth is refused there, as the team's cap says.
    let mut open = Vec::new();
    for url in [&r0, &r1, &r0] {
        let (status, id, answer) = try_open_session(url).await;
        assert_eq!(status, 200, "{answer}");
        open.push(id.expect("a session id"));
    }
    let (status, id, answer) = try_open_session(&r1).await;
    assert_eq!(status, 503, "{answer}");
    assert!(id.is_none(), "no session id is handed out");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Too many sessions")),
        "{answer}"
    );
    assert!(
        replicas[1]
            .proc
            .log_text()
            .contains("the team's session caps are reached"),
        "r1 says why"
    );

    // A session deleted through the other replica frees its place.
    let deleted = reqwest::Client::new()
        .delete(&r1)
        .header("Mcp-Session-Id", &open[0])
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .expect("DELETE answered");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let (status, id, answer) = try_open_session(&r1).await;
    assert_eq!(status, 200, "{answer}");
    let fresh = id.expect("a session id");
    let (status, _, answer) = rpc(&r0, Some(&fresh), echo(1, "counted")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "Echo: counted",
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_reach_the_stream_on_another_replica() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let watch = format!(
        "[servers.watch]\n{}",
        misbehaving("watching", &dir.path().join("watch.log"))
    );
    let log = [("RUST_LOG", "mcpyard_gateway=debug,info")];
    let replicas = start_replicas(dir.path(), 2, &redis.url(), &watch, &log).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());
    let session = open_session(&r0).await;
    let touch = |url: String, id: u64| {
        let session = session.clone();
        async move {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": "watch__touch", "arguments": {}}});
            let (status, _, answer) = rpc(&url, Some(&session), call).await;
            assert_eq!(status, 200, "{answer}");
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    // The client's GET stream is on r1; it subscribes through r0, whose
    // upstream connection then sends the updates.
    let mut stream = open_stream(&r1, &session).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                           "params": {"uri": "mem://a"}});
    let (status, _, answer) = rpc(&r0, Some(&session), subscribe).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(touch(r0.clone(), 2).await, r#"["mem://a"]"#);
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("notifications/resources/updated") {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk())
            .await
            .expect("the update reaches the stream on r1 within 10 s")
            .expect("the stream is read");
        seen += &String::from_utf8_lossy(&chunk.expect("the stream stays open"));
    }
    assert!(seen.contains("mem://a"), "{seen}");

    // Unsubscribed through r1: r0, which made the subscription, drops it,
    // and tells its upstream.
    let unsubscribe = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/unsubscribe",
                             "params": {"uri": "mem://a"}});
    let (status, _, answer) = rpc(&r1, Some(&session), unsubscribe).await;
    assert_eq!(status, 200, "{answer}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 10;
    while touch(r0.clone(), id).await != "[]" {
        assert!(Instant::now() < deadline, "r0 still subscribed to mem://a");
        id += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the replica holding a legacy stream logs for each message another
/// replica hands it.
const HANDED_ON: &str = "took a legacy client's message from another replica";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_client_is_served_whichever_replica_its_posts_reach() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let log = [("RUST_LOG", "mcpyard_gateway=debug,info")];
    let replicas = start_replicas(dir.path(), 2, &redis.url(), "", &log).await;
    let balancer = balance(dir.path(), &replicas).await;
    let recorder = std::sync::Arc::new(Recorder::default());
    // The stream opens on one replica; the POSTs, initialize first, then
    // alternate between the two.
    let client = connect(
        mcpyard_client::TransportSpec::Sse {
            url: balancer.url().replace("/mcp", "/sse"),
            headers: vec![],
        },
        recorder.clone(),
        json!({"sampling": {}}),
    )
    .await;
    for i in 0..4 {
        let message = format!("legacy {i}");
        let echoed = call(&client, "every__echo", json!({"message": message})).await;
        assert!(echoed.to_string().contains(&message), "{echoed}");
    }
    // The upstream's sampling request goes out on the stream; the client's
    // answer is a POST like any other.
    for _ in 0..2 {
        let sampled = call(
            &client,
            "every__trigger-sampling-request",
            json!({"prompt": "say hi", "maxTokens": 10}),
        )
        .await;
        assert!(sampled.to_string().contains(SAMPLED_TEXT), "{sampled}");
    }
    let handed_on: usize = logged_times(&replicas, HANDED_ON);
    // initialize, initialized, 6 calls and 2 sampling answers: half of
    // them, give or take the balancer's health checks, cross.
    assert!(handed_on >= 3, "only {handed_on} messages crossed replicas");
    client.shutdown().await;

    // The Python SDK 2.x's own HTTP+SSE transport, the same way.
    let before = logged_times(&replicas, HANDED_ON);
    let summary = python_client(&balancer.url().replace("/mcp", "/sse"), "sse");
    let echoes: Vec<String> = (0..6)
        .map(|i| format!("Echo: round {i}"))
        .chain(["Echo: after setLevel".to_owned()])
        .collect();
    assert_eq!(summary["echoes"], json!(echoes), "{summary}");
    let crossed = logged_times(&replicas, HANDED_ON) - before;
    assert!(crossed >= 3, "only {crossed} of the SDK's messages crossed");
}

/// Reads `stream` until its text holds `needle`, at most 10 s; all it read.
async fn read_until(stream: &mut reqwest::Response, needle: &str) -> String {
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{needle} within 10 s; read:\n{seen}"))
            .expect("the stream is read")
            .expect("the stream stays open");
        seen += &String::from_utf8_lossy(&chunk);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_post_on_the_other_replica_is_checked_before_it_is_handed_on() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let replicas = start_replicas(dir.path(), 2, &redis.url(), "", &[]).await;
    let (r0, r1) = (replicas[0].0.port, replicas[1].0.port);
    // The stream on r0; its endpoint names the session.
    let mut stream = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{r0}/sse"))
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("the stream opens");
    assert_eq!(stream.status(), 200);
    let endpoint = read_until(&mut stream, "sessionId=").await;
    let session: String = endpoint
        .split("sessionId=")
        .nth(1)
        .expect("an endpoint")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let on_r1 = format!("http://127.0.0.1:{r1}/messages?sessionId={session}");
    let post = |body: &'static str| {
        let url = on_r1.clone();
        async move {
            let resp = reqwest::Client::new()
                .post(url)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .expect("r1 answers");
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap_or_default())
        }
    };

    // Garbage, and a batch with one unreadable entry: refused on the POST,
    // nothing handed on (the ping in the batch is never answered).
    let (status, body) = post("{not json").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(r#"[{"jsonrpc":"2.0","id":"early","method":"ping"},{"id":1}]"#).await;
    assert_eq!(status, 400, "{body}");
    // A well-formed request: accepted on r1, answered on r0's stream.
    let (status, body) = post(r#"{"jsonrpc":"2.0","id":"late","method":"ping"}"#).await;
    assert_eq!(status, 202, "{body}");
    let seen = read_until(&mut stream, r#""id":"late""#).await;
    assert!(!seen.contains(r#""id":"early""#), "{seen}");

    // The stream gone, the session is gone on r1 as well.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = post(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
        if status == 404 {
            break;
        }
        assert_eq!(status, 202, "{body}");
        assert!(
            Instant::now() < deadline,
            "r1 still takes the ended session"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The keys of `redis` (no password) that match `pattern`.
fn redis_keys(redis: &Redis, pattern: &str) -> Vec<String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-u", &redis.url(), "--scan", "--pattern", pattern])
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Two replicas in front of a `watching` server each, and a session
/// opened on the first, subscribed there to `mem://a`.
async fn watched_session(
    dir: &Path,
    redis: &Redis,
) -> (Vec<(Gateway, std::path::PathBuf)>, String) {
    let watch = format!(
        "[servers.watch]\n{}",
        misbehaving("watching", &dir.join("watch.log"))
    );
    let replicas = start_replicas(dir, 2, &redis.url(), &watch, &[]).await;
    let session = open_session(&replicas[0].0.url()).await;
    resume::subscribe(&replicas[0].0.url(), &session, "mem://a").await;
    (replicas, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_stream_resumes_on_another_replica_from_the_shared_log() {
    use resume::{subscribe, touch, Stream};
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let (replicas, session) = watched_session(dir.path(), &redis).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());

    // Two updates on the stream held by r0; the client read only the
    // first when r0 died.
    let mut stream = Stream::open(&r0, &session, None).await;
    touch(&r0, &session, 2).await;
    let (first, _) = next_update(&mut stream).await;
    touch(&r0, &session, 3).await;
    let (second, update) = next_update(&mut stream).await;
    assert_eq!(update["params"]["uri"], "mem://a", "{update}");
    replicas[0].0.proc.signal_group(libc::SIGKILL);
    drop(stream);
    let logs = redis_keys(&redis, &format!("*:replay:{session}"));
    assert_eq!(logs.len(), 1, "one replay log in Redis: {logs:?}");

    // r1 replays from Redis what followed, then goes on live.
    let mut stream = Stream::open(&r1, &session, Some(&first)).await;
    let (id, replayed) = next_update(&mut stream).await;
    assert_eq!(id, second, "the update after the last event read");
    assert_eq!(replayed["params"]["uri"], "mem://a", "{replayed}");
    subscribe(&r1, &session, "mem://b").await;
    touch(&r1, &session, 4).await;
    let (third, live) = next_update(&mut stream).await;
    assert_eq!(live["params"]["uri"], "mem://b", "{live}");
    assert!(![&first, &second].contains(&&third), "{third} is new");
    drop(stream);

    // An id of a POST stream, or garbage, replays nothing.
    for (n, unknown) in ["1", "g1-0", "gnot-an-id"].into_iter().enumerate() {
        let mut stream = Stream::open(&r1, &session, Some(unknown)).await;
        touch(&r1, &session, 10 + n as u64).await;
        let (id, live) = next_update(&mut stream).await;
        assert_eq!(live["params"]["uri"], "mem://b", "{live}");
        assert!(![&first, &second, &third].contains(&&id), "{id} is new");
    }

    // The log ends with the session.
    let delete = reqwest::Client::new()
        .delete(&r1)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .expect("DELETE answers");
    assert_eq!(delete.status(), 200);
    let logs = redis_keys(&redis, &format!("*:replay:{session}"));
    assert!(logs.is_empty(), "the replay log is deleted: {logs:?}");
}

/// The next resource update on `stream` (server-everything's logs, which
/// come on the session's stream too, are passed over).
async fn next_update(stream: &mut resume::Stream) -> (String, Value) {
    loop {
        let (id, event) = stream.next().await;
        if event["method"] == "notifications/resources/updated" {
            return (id, event);
        }
    }
}

/// Waits (10 s at most) until no replica notes that it holds `session`'s
/// stream.
async fn until_no_replica_holds(redis: &Redis, session: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !redis_keys(redis, &format!("*:held:stream:{session}")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the note of the stream's holder stays"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_comes_while_no_replica_holds_the_stream_is_sent_on_its_return() {
    use resume::{subscribe, touch, Stream};
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let (replicas, session) = watched_session(dir.path(), &redis).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());

    // The stream is on r1; r0's upstream sends the updates.
    let mut stream = Stream::open(&r1, &session, None).await;
    touch(&r0, &session, 2).await;
    let (first, _) = next_update(&mut stream).await;

    // The client goes away for a while: two updates come meanwhile, made
    // by r0, which never held the stream.
    drop(stream);
    until_no_replica_holds(&redis, &session).await;
    touch(&r0, &session, 3).await;
    touch(&r0, &session, 4).await;

    // Back, on either replica, it gets both, in order, then the live ones.
    let mut stream = Stream::open(&r0, &session, Some(&first)).await;
    let (second, missed) = next_update(&mut stream).await;
    assert_eq!(missed["params"]["uri"], "mem://a", "{missed}");
    let (third, missed) = next_update(&mut stream).await;
    assert_eq!(missed["params"]["uri"], "mem://a", "{missed}");
    assert!(
        second != first && third != second,
        "{first} {second} {third}"
    );
    subscribe(&r1, &session, "mem://b").await;
    touch(&r1, &session, 5).await;
    let (_, live) = next_update(&mut stream).await;
    assert_eq!(live["params"]["uri"], "mem://b", "{live}");
    // (server-everything logs to the session's stream meanwhile.)
    while let Ok((_, more)) = tokio::time::timeout(Duration::from_millis(300), stream.next()).await
    {
        assert_ne!(
            more["method"], "notifications/resources/updated",
            "twice: {more}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_resumes_its_stream_on_the_other_replica() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let watch = format!(
        "[servers.watch]\n{}",
        misbehaving("watching", &dir.path().join("watch.log"))
    );
    let mut replicas = start_replicas(dir.path(), 2, &redis.url(), &watch, &[]).await;
    let mut node_cmd = std::process::Command::new(node());
    node_cmd.args([
        support_file("ts_resume_check.mjs").display().to_string(),
        tool("npm/node_modules").display().to_string(),
        replicas[0].0.url(),
        replicas[1].0.url(),
        replicas[0].0.proc.pid().to_string(),
    ]);
    let (ok, stdout, stderr) = run(node_cmd, Duration::from_secs(90));
    assert!(ok, "the TypeScript client failed:\n{stdout}\n{stderr}");
    let summary: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert_eq!(summary["protocol"], "2025-11-25", "{summary}");
    let gets = summary["gets"].as_array().expect("the GET requests");
    assert_eq!(gets[0]["to"], "first", "{summary}");
    assert_eq!(gets[0]["status"], 200, "{summary}");
    assert!(gets[0]["lastEventId"].is_null(), "{summary}");
    let resumed = gets
        .iter()
        .find(|g| g["to"] == "second")
        .expect("the SDK opened its stream again");
    assert_eq!(resumed["status"], 200, "{summary}");
    assert!(
        resumed["lastEventId"]
            .as_str()
            .is_some_and(|id| id.starts_with('g')),
        "the SDK resumed after the last event it read: {summary}"
    );
    assert_eq!(
        summary["updates"],
        json!(["mem://a", "mem://a"]),
        "each update once: {summary}"
    );
    let killed = replicas[0]
        .0
        .proc
        .child
        .try_wait()
        .expect("the first replica's status");
    assert!(killed.is_some(), "the first replica was killed");
}

/// A `subscriptions/listen` request of the 2026-07-28 era straight to
/// `url`, for the list changes `notifications` names; its open stream.
async fn listen(url: &str, id: &str, notifications: Value) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "listen-test", "version": "1"}}}});
    let response = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .expect("the listen stream opens");
    assert_eq!(response.status().as_u16(), 200);
    response
}

/// What `stream` brings within `wait` (nothing, when it is quiet).
async fn read_for(stream: &mut reqwest::Response, wait: Duration) -> String {
    let mut seen = String::new();
    let deadline = Instant::now() + wait;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline.into(), stream.chunk()).await {
        seen += &String::from_utf8_lossy(&chunk);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_made_through_one_replica_reaches_the_streams_of_the_others() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let grow = format!(
        "[servers.grow]\n{}",
        misbehaving("changing", &dir.path().join("grow.log"))
    );
    let replicas = start_replicas(dir.path(), 2, &redis.url(), &grow, &[]).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());

    // On r0: a listen stream for tool changes, one for prompt changes only,
    // and a 2025-11-25 session's GET stream.
    let mut tools = listen(&r0, "tools-listener", json!({"toolsListChanged": true})).await;
    read_until(&mut tools, "notifications/subscriptions/acknowledged").await;
    let mut prompts = listen(&r0, "prompts-listener", json!({"promptsListChanged": true})).await;
    read_until(&mut prompts, "notifications/subscriptions/acknowledged").await;
    let session = open_session(&r0).await;
    let mut get = resume::Stream::open(&r0, &session, None).await;

    // The tool list of r1's own child grows, through a call to r1: r0's
    // child never changed, yet r0's streams hear of it.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "grow__grow", "arguments": {}}});
    let (status, _, answer) = rpc(&r1, Some(&open_session(&r1).await), call).await;
    assert_eq!(status, 200, "{answer}");

    let seen = read_until(&mut tools, "notifications/tools/list_changed").await;
    let change = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .expect("the change's frame");
    assert_eq!(
        change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "tools-listener",
        "{change}"
    );
    let (_, event) = get.next().await;
    assert_eq!(
        event["method"], "notifications/tools/list_changed",
        "{event}"
    );

    // Told once, and only to the streams that asked for it.
    let more = read_for(&mut tools, Duration::from_secs(1)).await;
    assert!(!more.contains("list_changed"), "told twice: {more}");
    // (server-everything logs to the session's stream meanwhile.)
    while let Ok((_, extra)) = tokio::time::timeout(Duration::from_millis(300), get.next()).await {
        assert_ne!(
            extra["method"], "notifications/tools/list_changed",
            "told twice"
        );
    }
    let other = read_for(&mut prompts, Duration::from_millis(200)).await;
    assert!(!other.contains("list_changed"), "{other}");
}

/// Opens a 2025-11-25 session at `url` whose client can answer
/// elicitation; its id.
async fn open_eliciting_session(url: &str) -> String {
    resume::open_session_with(url, json!({"elicitation": {}})).await
}

/// Starts `tool` as a task through `url`, and waits for it with
/// `tasks/result` through `wait_at` in the background: the task's id and
/// the answer to come.
async fn start_and_wait_for(
    url: &str,
    wait_at: &str,
    session: &str,
    tool: &str,
    arguments: Value,
) -> (
    String,
    tokio::task::JoinHandle<(u16, Option<String>, Value)>,
) {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments, "task": {"ttl": 60000}}});
    let (status, _, created) = rpc(url, Some(session), call).await;
    assert_eq!(status, 200, "{created}");
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let (wait_at, session, id) = (wait_at.to_owned(), session.to_owned(), task.clone());
    let waiting = tokio::spawn(async move {
        let wait = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                          "params": {"taskId": id}});
        rpc(&wait_at, Some(&session), wait).await
    });
    (task, waiting)
}

/// Answers the next elicitation on `stream` (other events are passed
/// over) through `url`, with `content`; the request.
async fn answer_elicitation(
    stream: &mut resume::Stream,
    url: &str,
    session: &str,
    content: Value,
) -> Value {
    let asked = loop {
        let (_, event) = stream.next().await;
        if event["method"] == "elicitation/create" {
            break event;
        }
    };
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
                       "result": {"action": "accept", "content": content}});
    assert_eq!(rpc(url, Some(session), reply).await.0, 202);
    asked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_asks_its_client_whichever_replica_its_tasks_result_reaches() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let asker = format!(
        "[servers.asker]\n{}",
        misbehaving("asking", &dir.path().join("asker.log"))
    );
    let replicas = start_replicas(dir.path(), 2, &redis.url(), &asker, &[]).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());
    let session = open_eliciting_session(&r0).await;

    // The task runs on r0; the client's stream and its tasks/result are
    // on r1.
    let mut stream = resume::Stream::open(&r1, &session, None).await;
    let (task, waiting) = start_and_wait_for(&r0, &r1, &session, "asker__ask", json!({})).await;

    // The question comes on the stream r1 holds, tagged with the task; the
    // answer, posted to r1, reaches the call on r0.
    let asked = answer_elicitation(&mut stream, &r1, &session, json!({"colour": "blue"})).await;
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str(),
        "{asked}"
    );
    let (status, _, result) = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("tasks/result answers within 30 s")
        .expect("the waiting request ran");
    assert_eq!(status, 200, "{result}");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("blue"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_own_task_is_followed_through_the_other_replica() {
    let dir = scratch();
    let redis = Redis::start(dir.path(), None).await;
    let replicas = start_replicas(dir.path(), 2, &redis.url(), "", &[]).await;
    let (r0, r1) = (replicas[0].0.url(), replicas[1].0.url());
    let session = open_session(&r0).await;
    let start = |id: u64| {
        let (r0, session) = (r0.clone(), session.clone());
        async move {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "every__simulate-research-query",
                "arguments": {"topic": "gateways"}, "task": {"ttl": 60000}}});
            let (status, _, created) = rpc(&r0, Some(&session), call).await;
            assert_eq!(status, 200, "{created}");
            created["result"]["task"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
                .to_owned()
        }
    };
    let ask = |method: &'static str, task: String| {
        let (r1, session) = (r1.clone(), session.clone());
        async move {
            let request = json!({"jsonrpc": "2.0", "id": 9, "method": method,
                                 "params": {"taskId": task}});
            rpc(&r1, Some(&session), request).await.2
        }
    };

    // server-everything runs the task on r0's child; r1 answers for it,
    // and lists it.
    let task = start(1).await;
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/list", "params": {}});
    let (_, _, listed) = rpc(&r1, Some(&session), list).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["taskId"].as_str())
        .collect();
    assert_eq!(ids, [task.as_str()], "{listed}");
    let status = ask("tasks/get", task.clone()).await;
    assert_eq!(status["result"]["taskId"], task.as_str(), "{status}");
    let result = ask("tasks/result", task.clone()).await;
    let text = result["result"]["content"].to_string();
    assert!(text.contains("gateways"), "{result}");
    let done = ask("tasks/get", task).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");

    // Cancelled through r1.
    let task = start(2).await;
    let cancelled = ask("tasks/cancel", task.clone()).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let after = ask("tasks/get", task).await;
    assert_eq!(after["result"]["status"], "cancelled", "{after}");

    // A task that needs the user, waited on through r1 (which also holds
    // the client's stream): the question server-everything asks r0 goes
    // on that stream, and the answer posted to r1 reaches it.
    let session = open_eliciting_session(&r0).await;
    let mut stream = resume::Stream::open(&r1, &session, None).await;
    let (task, waiting) = start_and_wait_for(
        &r0,
        &r1,
        &session,
        "every__simulate-research-query",
        json!({"topic": "gateways", "ambiguous": true}),
    )
    .await;
    let asked = answer_elicitation(
        &mut stream,
        &r1,
        &session,
        json!({"interpretation": "technical"}),
    )
    .await;
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str(),
        "{asked}"
    );
    let (status, _, result) = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("tasks/result answers within 60 s")
        .expect("the waiting request ran");
    assert_eq!(status, 200, "{result}");
    assert!(result["result"]["content"].is_array(), "{result}");
}
