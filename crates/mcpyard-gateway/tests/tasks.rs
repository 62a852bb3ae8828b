//! Task-augmented `tools/call` (MCP 2025-11-25) through the gateway, with a
//! local source whose tool runs until the test releases it: the call is
//! answered with a task at once, then followed with `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::{
    Gateway, GatewayConfig, RouteError, Session, Source, SourceEvents, SourceLists, SourceRequest,
    SourceSpec,
};
use mcpyard_proto::{codes, ErrorObject, Message, Payload, RequestId};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

const WAIT: Duration = Duration::from_secs(5);
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// `slow` returns once released; `boom` fails.
#[derive(Debug, Default)]
struct Slow {
    release: Notify,
    /// Calls of `slow` begun, and still running (not returned nor dropped).
    started: AtomicUsize,
    running: Arc<AtomicUsize>,
}

/// Counts a call as running until its future ends or is dropped.
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Source for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn start(&self, events: SourceEvents) {
        let tools = ["slow", "boom"]
            .into_iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        events.publish(SourceLists::tools(tools));
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        let arguments = request.take_arguments();
        let ctx = &request.context;
        if request.name() == Some("boom") {
            return Ok(
                json!({"content": [{"type": "text", "text": "no such city"}], "isError": true})
                    .into(),
            );
        }
        self.started.fetch_add(1, Ordering::SeqCst);
        self.running.fetch_add(1, Ordering::SeqCst);
        let _running = Running(self.running.clone());
        tokio::select! {
            _ = self.release.notified() => Ok(json!({
                "content": [{"type": "text", "text": format!("done {}", arguments["n"])}]
            }).into()),
            _ = ctx.cancel.cancelled() => Err(RouteError::internal("stopped")),
        }
    }

    async fn status(&self) -> Value {
        json!({"name": "slow", "healthy": true})
    }
}

struct Client {
    gateway: Gateway,
    session: Arc<Session>,
    stream: mpsc::Receiver<Message>,
    next_id: i64,
}

impl Client {
    async fn connect(gateway: &Gateway) -> Self {
        let (tx, stream) = mpsc::channel(64);
        let session = Session::new(Some(tx));
        gateway.register_session(session.clone());
        let mut client = Self {
            gateway: gateway.clone(),
            session,
            stream,
            next_id: 1,
        };
        let init = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await
            .expect("initialize");
        assert_eq!(
            init["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        client
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let id = RequestId::Number(self.next_id);
        self.next_id += 1;
        let answer = tokio::time::timeout(
            WAIT,
            self.gateway
                .request(&self.session, id, method, Some(params), None),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} answered within {WAIT:?}"))
        .into_reply()
        .expect("a request gets an answer");
        match answer {
            Message::Response { result, .. } => Ok(result.into_value()),
            Message::Error { error, .. } => Err(error),
            other => panic!("not an answer: {other:?}"),
        }
    }

    /// Starts `slow__slow` as a task and returns its id.
    async fn start(&mut self, n: u32) -> String {
        let created = self
            .request(
                "tools/call",
                json!({"name": "slow__slow", "arguments": {"n": n}, "task": {"ttl": 60000}}),
            )
            .await
            .expect("task created");
        let task = &created["task"];
        assert_eq!(task["status"], "working");
        assert_eq!(task["ttl"], 60000);
        assert!(created.get("content").is_none(), "no result yet: {created}");
        task["taskId"].as_str().expect("taskId").to_owned()
    }

    async fn status_notification(&mut self, task_id: &str) -> Value {
        loop {
            let msg = tokio::time::timeout(WAIT, self.stream.recv())
                .await
                .expect("a notification in time")
                .expect("stream open");
            if let Message::Notification { method, params } = msg {
                let params = params.unwrap_or_default();
                if method == "notifications/tasks/status" && params["taskId"] == task_id {
                    return params;
                }
            }
        }
    }
}

/// Polls `done` until it holds, failing after [`WAIT`].
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn gateway() -> (Gateway, Arc<Slow>) {
    let slow = Arc::new(Slow::default());
    let config = GatewayConfig {
        sources: vec![SourceSpec::new(slow.clone())],
        ..GatewayConfig::default()
    };
    let gateway = Gateway::start(config).await.expect("gateway starts");
    (gateway, slow)
}

#[tokio::test]
async fn tools_are_listed_as_runnable_as_tasks() {
    let (gateway, _) = gateway().await;
    let mut client = Client::connect(&gateway).await;
    let list = client.request("tools/list", json!({})).await.expect("list");
    let tools = list["tools"].as_array().expect("tools");
    let slow = tools
        .iter()
        .find(|t| t["name"] == "slow__slow")
        .expect("slow__slow listed");
    assert_eq!(slow["execution"]["taskSupport"], "optional");
    gateway.shutdown().await;
}

#[tokio::test]
async fn a_task_runs_in_the_background_and_its_result_is_the_calls() {
    let (gateway, slow) = gateway().await;
    let mut client = Client::connect(&gateway).await;
    let id = client.start(7).await;

    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "working");
    assert_eq!(task["pollInterval"], 500);
    let listed = client.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"][0]["taskId"], id.as_str());

    // tasks/result waits for the call; release it while it waits.
    let waiter = {
        let gateway = client.gateway.clone();
        let session = client.session.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let params = json!({"taskId": id});
            gateway
                .request(
                    &session,
                    RequestId::Number(100),
                    "tasks/result",
                    Some(params),
                    None,
                )
                .await
                .into_reply()
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiter.is_finished(),
        "tasks/result blocks while the task works"
    );
    slow.release.notify_one();
    let answer = tokio::time::timeout(WAIT, waiter)
        .await
        .expect("tasks/result answered")
        .expect("joined")
        .expect("an answer");
    let Message::Response { result, .. } = answer else {
        panic!("tasks/result failed: {answer:?}");
    };
    let result = result.into_value();
    assert_eq!(result["content"][0]["text"], "done 7");
    assert_eq!(result["_meta"][RELATED_TASK]["taskId"], id.as_str());

    let done = client.status_notification(&id).await;
    assert_eq!(done["status"], "completed");
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "completed");
    gateway.shutdown().await;
}

#[tokio::test]
async fn an_is_error_result_fails_the_task() {
    let (gateway, _) = gateway().await;
    let mut client = Client::connect(&gateway).await;
    let created = client
        .request(
            "tools/call",
            json!({"name": "slow__boom", "arguments": {}, "task": {}}),
        )
        .await
        .expect("created");
    let id = created["task"]["taskId"].as_str().expect("id").to_owned();
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("the isError result");
    assert_eq!(result["isError"], true);
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "failed");
    assert_eq!(task["statusMessage"], "Tool execution failed: no such city");
    gateway.shutdown().await;
}

#[tokio::test]
async fn cancel_stops_the_call_and_a_second_cancel_is_invalid_params() {
    let (gateway, slow) = gateway().await;
    let mut client = Client::connect(&gateway).await;
    let id = client.start(1).await;
    until("the call starts", || {
        slow.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let task = client
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .expect("cancelled");
    assert_eq!(task["status"], "cancelled");
    until("the call stops", || {
        slow.running.load(Ordering::SeqCst) == 0
    })
    .await;
    let again = client
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .expect_err("already terminal");
    assert_eq!(again.code, codes::INVALID_PARAMS);
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "cancelled", "stays cancelled");
    gateway.shutdown().await;
}

#[tokio::test]
async fn another_session_cannot_see_or_touch_a_task() {
    let (gateway, _) = gateway().await;
    let mut owner = Client::connect(&gateway).await;
    let mut other = Client::connect(&gateway).await;
    let id = owner.start(2).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let err = other
            .request(method, json!({"taskId": id}))
            .await
            .expect_err("not found");
        assert_eq!(err.code, codes::INVALID_PARAMS, "{method}");
    }
    let listed = other.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"], json!([]));
    let still = owner
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("the owner still sees it");
    assert_eq!(still["status"], "working");
    gateway.shutdown().await;
}

#[tokio::test]
async fn bad_task_requests_fail_before_any_task_exists() {
    let (gateway, _) = gateway().await;
    let mut client = Client::connect(&gateway).await;
    let unknown = client
        .request(
            "tools/call",
            json!({"name": "nope", "arguments": {}, "task": {}}),
        )
        .await
        .expect_err("unknown tool");
    assert_eq!(unknown.code, codes::INVALID_PARAMS);
    let bad_ttl = client
        .request(
            "tools/call",
            json!({"name": "slow__slow", "arguments": {}, "task": {"ttl": "soon"}}),
        )
        .await
        .expect_err("bad ttl");
    assert_eq!(bad_ttl.code, codes::INVALID_PARAMS);
    let missing = client
        .request("tasks/get", json!({"taskId": "no-such-task"}))
        .await
        .expect_err("unknown task");
    assert_eq!(missing.code, codes::INVALID_PARAMS);
    let bad_cursor = client
        .request("tasks/list", json!({"cursor": "garbage"}))
        .await
        .expect_err("bad cursor");
    assert_eq!(bad_cursor.code, codes::INVALID_PARAMS);
    let listed = client.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"], json!([]));
    gateway.shutdown().await;
}
