//! Protocol features through the gateway: the stdio and legacy SSE front
//! doors, list changes passed on, cancellation passed up, elicitation and
//! completion relayed, pagination across sources.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{ClientError, RequestOptions, TransportSpec};
use serde_json::json;
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_front_door_serves_the_aggregated_catalogue() {
    let dir = scratch();
    let cfg = dir.path().join("mcpyard.toml");
    std::fs::write(&cfg, everything_stdio("every")).unwrap();
    let client = connect(
        TransportSpec::Stdio {
            command: env!("CARGO_BIN_EXE_mcpyard").into(),
            args: vec!["stdio".into(), "--config".into(), cfg.display().to_string()],
            env: Default::default(),
            inherit_env: vec![],
            cwd: None,
        },
        Arc::new(Recorder::default()),
        json!({"elicitation": {}}),
    )
    .await;
    wait_for_tools(
        &client,
        &["mcpyard__status", "every__echo"],
        Duration::from_secs(60),
    )
    .await;
    let r = call(&client, "every__echo", json!({"message": "over stdio"})).await;
    assert!(first_text(&r).contains("over stdio"), "{r}");
    // A request from the upstream reaches a stdio client too, and its answer
    // comes back.
    let r = call(&client, "every__trigger-elicitation-request", json!({})).await;
    assert!(
        serde_json::to_string(&r).unwrap().contains(ELICITED_NAME),
        "the elicitation answer did not reach the upstream: {r}"
    );
    let pid = client.process_id().expect("a stdio client has a pid") as i32;
    client.shutdown().await;
    assert!(
        !group_alive(pid),
        "mcpyard stdio and its upstream exited with stdin"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_front_door_lists_and_calls() {
    let dir = scratch();
    let gw = Gateway::start(&everything_stdio("every"), dir.path()).await;
    let client = connect(
        TransportSpec::Sse {
            url: format!("http://127.0.0.1:{}/sse", gw.port),
            headers: vec![],
        },
        Arc::new(Recorder::default()),
        json!({"sampling": {}}),
    )
    .await;
    assert_eq!(client.protocol_version(), "2024-11-05");
    wait_for_tools(&client, &["every__echo"], Duration::from_secs(60)).await;
    let r = call(&client, "every__echo", json!({"message": "over sse"})).await;
    assert!(first_text(&r).contains("over sse"), "{r}");
    // Sampling (already in 2024-11-05) reaches the client on its SSE stream.
    let r = call(
        &client,
        "every__trigger-sampling-request",
        json!({"prompt": "say hi", "maxTokens": 10}),
    )
    .await;
    assert!(
        serde_json::to_string(&r).unwrap().contains(SAMPLED_TEXT),
        "sampling over the legacy front door not answered: {r}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_list_change_reaches_clients_and_the_catalogue() {
    let dir = scratch();
    let config = format!(
        "[servers.up]\n{}",
        misbehaving("changing", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw.client(recorder.clone(), json!({})).await;
    // A GET stream carries notifications not tied to a request.
    wait_for_tools(&client, &["up__grow"], Duration::from_secs(30)).await;
    let before = recorder
        .notifications_named("notifications/tools/list_changed")
        .len();
    call(&client, "up__grow", json!({})).await;
    wait_for_tools(&client, &["up__extra"], Duration::from_secs(10)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while recorder
        .notifications_named("notifications/tools/list_changed")
        .len()
        == before
    {
        assert!(
            Instant::now() < deadline,
            "no tools/list_changed reached the client"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cancellation_reaches_the_upstream() {
    let dir = scratch();
    let cancels = dir.path().join("cancelled.jsonl");
    let config = format!(
        "[servers.hang]\n{}timeout = \"60s\"\n",
        misbehaving("hang", &cancels)
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&client, &["hang__slow"], Duration::from_secs(30)).await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let r = client
        .request(
            "tools/call",
            Some(json!({"name": "hang__slow", "arguments": {}})),
            RequestOptions {
                timeout: Some(Duration::from_secs(30)),
                cancel: Some(token),
                ..RequestOptions::default()
            },
        )
        .await;
    assert!(matches!(r, Err(ClientError::Cancelled)), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logged = std::fs::read_to_string(&cancels).unwrap_or_default();
        if logged.contains("requestId") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream was never told to cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.shutdown().await;
}

/// stdio cannot say which call a server request belongs to: with calls of
/// two clients in flight, the elicitation goes to the one that can answer
/// it, even when the other called last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_elicitation_goes_to_the_caller_that_can_answer_it() {
    let dir = scratch();
    let config = format!(
        "[servers.asker]\n{}",
        misbehaving("asking", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let can_answer = gw
        .client(Arc::new(Recorder::default()), json!({"elicitation": {}}))
        .await;
    let cannot = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(&can_answer, &["asker__ask"], Duration::from_secs(30)).await;

    let asking =
        tokio::spawn(async move { call(&can_answer, "asker__ask", json!({"delay": 1.0})).await });
    // A later call of the other client is in flight when the question comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop_waiting = CancellationToken::new();
    let waiting = tokio::spawn({
        let stop = stop_waiting.clone();
        async move {
            let options = RequestOptions {
                timeout: None,
                cancel: Some(stop),
                ..RequestOptions::default()
            };
            let _ = cannot
                .request(
                    "tools/call",
                    Some(json!({"name": "asker__slow", "arguments": {}})),
                    options,
                )
                .await;
            cannot.shutdown().await;
        }
    });
    let answered = asking.await.expect("joined");
    assert!(
        first_text(&answered).contains(ELICITED_NAME),
        "the elicitation did not reach the client that can answer it: {answered}"
    );
    stop_waiting.cancel();
    waiting.await.expect("joined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_and_completion_are_relayed() {
    let dir = scratch();
    let gw = Gateway::start(&everything_stdio("every"), dir.path()).await;
    let recorder = Arc::new(Recorder::default());
    let client = gw
        .client(recorder.clone(), json!({"elicitation": {}}))
        .await;
    wait_for_tools(
        &client,
        &["every__trigger-elicitation-request"],
        Duration::from_secs(60),
    )
    .await;
    let r = call(&client, "every__trigger-elicitation-request", json!({})).await;
    assert!(
        serde_json::to_string(&r).unwrap().contains(ELICITED_NAME),
        "the client's elicitation answer did not reach the upstream: {r}"
    );

    let completion = client
        .request(
            "completion/complete",
            Some(json!({
                "ref": {"type": "ref/prompt", "name": "every__completable-prompt"},
                "argument": {"name": "department", "value": "Eng"},
            })),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    let values = completion["completion"]["values"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(values.contains(&json!("Engineering")), "{completion}");

    let prompt = client
        .request(
            "prompts/get",
            Some(json!({"name": "every__simple-prompt"})),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        prompt["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{prompt}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_walk_the_merged_catalogue_and_bad_cursors_are_rejected() {
    let dir = scratch();
    let config = format!(
        "page_size = 3\n\n{}\n{}",
        everything_stdio("one"),
        everything_stdio("two")
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let all = wait_for_tools(
        &client,
        &["one__echo", "two__echo"],
        Duration::from_secs(60),
    )
    .await;
    let mut names: Vec<&str> = all.iter().filter_map(|t| t["name"].as_str()).collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "no tool listed twice across pages");
    let first = client
        .request("tools/list", None, RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(first["tools"].as_array().map(Vec::len), Some(3));
    assert!(first["nextCursor"].is_string());
    let bad = client
        .request(
            "tools/list",
            Some(json!({"cursor": "not-a-cursor"})),
            RequestOptions::default(),
        )
        .await;
    match bad {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
    let unknown = client
        .request(
            "tools/call",
            Some(json!({"name": "nobody__nothing", "arguments": {}})),
            RequestOptions::default(),
        )
        .await;
    match unknown {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32602);
            assert!(e.message.contains("nobody__nothing"));
        }
        other => panic!("expected -32602, got {other:?}"),
    }
    client.shutdown().await;
}

/// Polls `tasks/get` until the task is terminal; returns the last status.
async fn poll_task(client: &mcpyard_client::McpClient, task_id: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let task = client
            .request(
                "tasks/get",
                Some(json!({"taskId": task_id})),
                RequestOptions::default(),
            )
            .await
            .unwrap();
        if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or("")) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "task {task_id} never finished: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Calls a tool as a task, polls it to `completed` and returns its id and
/// `tasks/result`.
async fn run_as_task(
    client: &mcpyard_client::McpClient,
    name: &str,
    arguments: serde_json::Value,
) -> (String, serde_json::Value) {
    let created = client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments, "task": {"ttl": 60000}})),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    let task_id = created["task"]["taskId"]
        .as_str()
        .expect("a CreateTaskResult")
        .to_owned();
    assert_eq!(
        poll_task(client, &task_id).await["status"],
        json!("completed")
    );
    let result = client
        .request(
            "tasks/result",
            Some(json!({"taskId": task_id})),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    (task_id, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_augmented_calls_run_in_the_gateway_or_pass_through_to_a_task_capable_upstream() {
    let dir = scratch();
    let config = format!(
        "{}\n[servers.plain]\n{}",
        everything_stdio("every"),
        misbehaving("garbage", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    let tools = wait_for_tools(
        &client,
        &["plain__echo", "every__simulate-research-query"],
        Duration::from_secs(60),
    )
    .await;
    let plain = tools
        .iter()
        .find(|t| t["name"] == json!("plain__echo"))
        .unwrap();
    assert_eq!(
        plain["execution"]["taskSupport"],
        json!("optional"),
        "{plain}"
    );

    // A server without tasks: the gateway runs the call as its own task.
    let (task_id, result) = run_as_task(&client, "plain__echo", json!({"said": "in a task"})).await;
    assert!(first_text(&result).contains("in a task"), "{result}");
    let listed = client
        .request("tasks/list", None, RequestOptions::default())
        .await
        .unwrap();
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == json!(task_id)),
        "{listed}"
    );

    // server-everything runs tasks itself: the gateway routes them by id.
    let (_, result) = run_as_task(
        &client,
        "every__simulate-research-query",
        json!({"topic": "gateways"}),
    )
    .await;
    assert!(
        serde_json::to_string(&result).unwrap().contains("gateways"),
        "{result}"
    );

    let unknown = client
        .request(
            "tasks/get",
            Some(json!({"taskId": "no-such-task"})),
            RequestOptions::default(),
        )
        .await;
    assert!(matches!(unknown, Err(ClientError::Rpc(e)) if e.code == -32602));
    client.shutdown().await;
}

/// Waits until `recorder` holds at least `n` resources/updated notifications.
async fn wait_for_updates(recorder: &Recorder, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while recorder
        .notifications_named("notifications/resources/updated")
        .len()
        < n
    {
        assert!(Instant::now() < deadline, "no resources/updated arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The URIs of the resources/updated notifications `recorder` got, in order.
fn updated_uris(recorder: &Recorder) -> Vec<String> {
    recorder
        .notifications_named("notifications/resources/updated")
        .iter()
        .filter_map(|p| p["uri"].as_str().map(str::to_owned))
        .collect()
}

/// The upstream's own view of its subscriptions, from its `touch` tool
/// (which also sends an update for each).
async fn upstream_subscriptions(client: &mcpyard_client::McpClient) -> Vec<String> {
    let r = call(client, "watch__touch", json!({})).await;
    serde_json::from_str(first_text(&r)).unwrap_or_else(|e| panic!("not a list ({e}): {r}"))
}

/// Several clients share one upstream connection: the upstream stays
/// subscribed while any client is, updates go only to subscribed clients,
/// a restarted upstream is subscribed again, and a session that ends
/// leaves nothing subscribed behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_subscriptions_are_shared_counted_and_renewed() {
    let dir = scratch();
    let config = format!(
        "[servers.watch]\n{}",
        misbehaving("watching", &dir.path().join("x"))
    );
    let gw = Gateway::start(&config, dir.path()).await;
    let (a_seen, b_seen, c_seen) = (
        Arc::new(Recorder::default()),
        Arc::new(Recorder::default()),
        Arc::new(Recorder::default()),
    );
    let a = gw.client(a_seen.clone(), json!({})).await;
    let b = gw.client(b_seen.clone(), json!({})).await;
    let c = gw.client(c_seen.clone(), json!({})).await;
    wait_for_tools(&a, &["watch__touch"], Duration::from_secs(30)).await;
    let subscribe =
        |client: &mcpyard_client::McpClient, method: &'static str, uri: &'static str| {
            let client = client.clone();
            async move {
                client
                    .request(method, Some(json!({"uri": uri})), RequestOptions::default())
                    .await
                    .unwrap_or_else(|e| panic!("{method}: {e}"))
            }
        };
    subscribe(&a, "resources/subscribe", "mem://a").await;
    subscribe(&b, "resources/subscribe", "mem://a").await;
    subscribe(&b, "resources/unsubscribe", "mem://a").await;
    subscribe(&b, "resources/subscribe", "mem://b").await;
    subscribe(&c, "resources/subscribe", "mem://b").await;
    // B leaving did not unsubscribe the upstream: A still watches.
    assert_eq!(upstream_subscriptions(&c).await, ["mem://a", "mem://b"]);
    // The upstream sends the update of `mem://a` before that of `mem://b`,
    // and each session's notifications keep their order: once B and C have
    // the update of `mem://b`, one of `mem://a` sent to them would be there.
    wait_for_updates(&a_seen, 1).await;
    wait_for_updates(&b_seen, 1).await;
    wait_for_updates(&c_seen, 1).await;
    assert_eq!(updated_uris(&a_seen), ["mem://a"]);
    for (who, seen) in [("b", &b_seen), ("c", &c_seen)] {
        assert_eq!(
            updated_uris(seen),
            ["mem://b"],
            "{who} watches only mem://b"
        );
    }

    // A restarted upstream has forgotten the subscription: it is renewed.
    let pids = descendants(gw.proc.pid());
    assert!(!pids.is_empty(), "the upstream runs under the gateway");
    for p in &pids {
        // SAFETY: plain kill(2) of a process this test owns.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .request(
                "tools/call",
                Some(json!({"name": "watch__touch", "arguments": {}})),
                RequestOptions::default(),
            )
            .await;
        if let Ok(r) = r {
            if r["isError"] != json!(true) {
                assert_eq!(
                    first_text(&r),
                    r#"["mem://a", "mem://b"]"#,
                    "renewed after the restart"
                );
                break;
            }
        }
        assert!(Instant::now() < deadline, "the upstream did not come back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for_updates(&a_seen, 2).await;

    // A's session ends: nobody watches `mem://a`, so the upstream is told.
    a.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while upstream_subscriptions(&c).await != ["mem://b"] {
        assert!(
            Instant::now() < deadline,
            "still subscribed to mem://a after the last session watching it ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    b.shutdown().await;
    c.shutdown().await;
}

/// A client with roots: answers `roots/list` with two roots of its own and
/// records everything else as [`Recorder`] does.
#[derive(Default)]
struct RootsClient {
    seen: Recorder,
}

const CLIENT_ROOTS: [(&str, &str); 2] = [
    ("file:///srv/projects/alpha", "alpha"),
    ("file:///srv/projects/beta", "beta"),
];

#[async_trait::async_trait]
impl mcpyard_client::ClientHandler for RootsClient {
    async fn on_request(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
        related: Option<mcpyard_proto::RequestId>,
    ) -> Result<serde_json::Value, mcpyard_proto::ErrorObject> {
        let answer = self.seen.on_request(method, params, related).await;
        if method == "roots/list" {
            let roots: Vec<_> = CLIENT_ROOTS
                .iter()
                .map(|(uri, name)| json!({"uri": uri, "name": name}))
                .collect();
            return Ok(json!({ "roots": roots }));
        }
        answer
    }

    async fn on_notification(
        &self,
        method: &str,
        params: Option<serde_json::Value>,
        related: Option<mcpyard_proto::RequestId>,
    ) {
        self.seen.on_notification(method, params, related).await;
    }
}

/// How many `roots/list` requests reached `recorder`.
fn roots_requests(recorder: &Recorder) -> usize {
    recorder
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "roots/list")
        .count()
}

/// Runs server-everything's long operation for `client` and, once its first
/// progress arrived (the call is in flight upstream), tells the gateway the
/// client's roots changed: the gateway passes that on and the upstream asks
/// for the roots again, while the only call in flight is this client's.
async fn roots_changed_during_a_call(client: &mcpyard_client::McpClient, seen: &Recorder) {
    let token = "long-call";
    let running = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request(
                    "tools/call",
                    Some(json!({
                        "name": "every__trigger-long-running-operation",
                        "arguments": {"duration": 3, "steps": 3},
                        "_meta": {"progressToken": token},
                    })),
                    RequestOptions::default(),
                )
                .await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen
        .notifications_named("notifications/progress")
        .iter()
        .any(|p| p["progressToken"] == json!(token))
    {
        assert!(Instant::now() < deadline, "no progress of the long call");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client
        .notify("notifications/roots/list_changed", None)
        .await
        .expect("notify");
    let r = running.await.expect("joined").expect("the long call");
    assert!(first_text(&r).contains("completed"), "{r}");
}

/// Polls server-everything's `get-roots-list` until its text contains
/// `wanted`; returns that text.
async fn roots_seen_upstream(client: &mcpyard_client::McpClient, wanted: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = call(client, "every__get-roots-list", json!({})).await;
        assert_ne!(r["isError"], json!(true), "{r}");
        let said = first_text(&r).to_owned();
        if said.contains(wanted) {
            return said;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream's roots never showed {wanted:?}; last: {said}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An upstream asking for roots gets the roots of the client whose call is
/// in flight; when that client has no roots capability, an empty list (the
/// gateway declared roots to the upstream, the client has none to give),
/// and the client itself is never asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_come_from_the_calling_client_or_are_an_empty_list() {
    let dir = scratch();
    let gw = Gateway::start(&everything_stdio("every"), dir.path()).await;
    let with_roots = Arc::new(RootsClient::default());
    let a = gw
        .client(with_roots.clone(), json!({"roots": {"listChanged": true}}))
        .await;
    let without_seen = Arc::new(Recorder::default());
    let b = gw.client(without_seen.clone(), json!({})).await;
    wait_for_tools(
        &a,
        &[
            "every__get-roots-list",
            "every__trigger-long-running-operation",
        ],
        Duration::from_secs(60),
    )
    .await;
    // server-everything asks once after connecting, and on a call of
    // `get-roots-list` until it has an answer: with B's call, it has one
    // (none of B's) and asks no more until told the roots changed.
    roots_seen_upstream(&b, "no roots are currently configured").await;

    roots_changed_during_a_call(&a, &with_roots.seen).await;
    assert_eq!(roots_requests(&with_roots.seen), 1, "asked once");
    let said = roots_seen_upstream(&a, "(2 total)").await;
    for (uri, name) in CLIENT_ROOTS {
        assert!(said.contains(uri) && said.contains(name), "{said}");
    }

    // The client without roots: the upstream gets an empty list, which
    // replaces what it knew (an error would leave A's roots in place).
    roots_changed_during_a_call(&b, &without_seen).await;
    roots_seen_upstream(&b, "no roots are currently configured").await;
    assert_eq!(roots_requests(&without_seen), 0, "B cannot answer roots");
    assert_eq!(roots_requests(&with_roots.seen), 1, "A was not asked for B");
    a.shutdown().await;
    b.shutdown().await;
}
