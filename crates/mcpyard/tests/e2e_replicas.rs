//! A team's gateway: several `mcpyard serve` replicas sharing state in a
//! real Redis, behind a real HAProxy in round-robin without stickiness, so
//! that consecutive requests of one client land on different replicas.
//!
//! - The Python SDK 2.x in legacy (session) mode and in its default mode
//!   works through the balancer: a session opened on one replica is served
//!   by the other, a DELETE on one ends it on both.
//! - A rate limit of 10/min lets exactly 10 calls through across three
//!   replicas.
//! - Redis (with a password) killed under the gateway: a rate-limited call
//!   fails at once with a clear error where the limits fail closed, passes
//!   where they fail open, `/ready` says 503; all recovers when Redis is
//!   back.
//! - Redis over TLS (`rediss://`, a CA of the test's own) with a password.

#[path = "support/replicas.rs"]
mod replicas;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use replicas::{wait_for_status, Balancer, Redis};
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

/// The audit records of one replica's file.
fn audit_lines(folder: &Path) -> Vec<Value> {
    std::fs::read_to_string(folder.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
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
    let ports: Vec<u16> = replicas.iter().map(|(g, _)| g.port).collect();
    let balancer = Balancer::start(dir.path(), &ports).await;

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
        let served = audit_lines(folder)
            .into_iter()
            .filter(|r| r["session"] == session.as_str() && r["tool"] == "every__echo")
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
    let ports: Vec<u16> = replicas.iter().map(|(g, _)| g.port).collect();
    let balancer = Balancer::start(dir.path(), &ports).await;

    let (passed, refused) = call_docs(&balancer.url(), 16).await;
    assert_eq!(passed, 10, "exactly the limit passes across replicas");
    assert_eq!(refused, vec![-32029; 6]);
    // Every replica took part.
    for (i, (_, folder)) in replicas.iter().enumerate() {
        let seen = audit_lines(folder)
            .into_iter()
            .filter(|r| r["tool"] == "mcpyard__docs")
            .count();
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
    let closed = start_replicas(
        &dir.path().join("closed"),
        1,
        &redis.url(),
        &format!("fail_mode = \"closed\"\n{limit}"),
        &env,
    )
    .await;
    let open = start_replicas(
        &dir.path().join("open"),
        1,
        &redis.url(),
        &format!("fail_mode = \"open\"\n{limit}"),
        &env,
    )
    .await;
    let url_of = |g: &Gateway| g.url();
    let (closed_url, open_url) = (url_of(&closed[0].0), url_of(&open[0].0));
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
