//! The source and router seams: a new kind of source (`clock`, in this
//! file) registered with one line beside an MCP upstream (server-everything
//! over stdio) and the local inference source (its agent tool on a scripted
//! OpenAI-compatible fixture). Through the stdio front door, both kinds are
//! listed, called, cancelled, timed out and capped by the same layers, and
//! a counting layer sees every call: direct, through the agent, as a task.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::{
    CallLimits, Gateway, GatewayConfig, Layer, Next, RouteError, RouteFuture, RoutedCall, Source,
    SourceEvents, SourceLists, SourceRequest, SourceSpec, UpstreamSpec,
};
use mcpyard_proto::Payload;
use serde_json::{json, Value};
use support::first_text;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

/// The new kind of source: `now` answers at once, `sleep` waits `ms`
/// milliseconds or until its call is cancelled, and counts cancellations.
#[derive(Debug, Default)]
struct Clock {
    cancelled: AtomicUsize,
}

#[async_trait]
impl Source for Clock {
    fn name(&self) -> &str {
        "clock"
    }

    fn start(&self, events: SourceEvents) {
        let tools = ["now", "sleep"]
            .into_iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        events.publish(SourceLists::tools(tools));
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        let arguments = request.take_arguments();
        match request.name() {
            Some("now") => Ok(json!({"content": [{"type": "text", "text": "tick"}]}).into()),
            Some("sleep") => {
                let ms = arguments["ms"].as_u64().unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {
                        Ok(json!({"content": [{"type": "text", "text": "slept"}]}).into())
                    }
                    () = request.context.cancel.cancelled() => {
                        self.cancelled.fetch_add(1, Ordering::SeqCst);
                        Err(RouteError::internal("stopped"))
                    }
                }
            }
            other => Err(RouteError::UnknownName {
                kind: "tool",
                name: other.unwrap_or_default().to_owned(),
            }),
        }
    }

    async fn status(&self) -> Value {
        json!({"name": "clock", "healthy": true})
    }
}

/// Counts the calls that pass it, by (source, target).
#[derive(Debug, Default)]
struct Counting {
    seen: Mutex<HashMap<(String, String), usize>>,
}

impl Counting {
    fn count(&self, source: &str, target: &str) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.get(&(source.to_owned(), target.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

impl Layer for Counting {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        *self
            .seen
            .lock()
            .unwrap()
            .entry((call.source().to_owned(), call.target.clone()))
            .or_default() += 1;
        next.run(call)
    }
}

fn everything() -> UpstreamSpec {
    UpstreamSpec {
        name: "every".into(),
        prefix: None,
        transport: mcpyard_client::TransportSpec::Stdio {
            command: support::node().display().to_string(),
            args: vec![support::everything_js().display().to_string()],
            env: Default::default(),
            inherit_env: vec![],
            cwd: None,
        },
        timeout: Duration::from_secs(2),
        list_timeout: UpstreamSpec::DEFAULT_LIST_TIMEOUT,
        max_in_flight: 1,
        sampling: None,
        http_auth: None,
    }
}

/// A client on the stdio front door, over an in-process pipe.
struct StdioClient {
    writer: WriteHalf<DuplexStream>,
    answers: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>,
    next_id: i64,
}

impl StdioClient {
    fn start(gateway: Gateway, shutdown: CancellationToken) -> Self {
        let (client_end, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        tokio::spawn(mcpyard_server::serve_stdio(
            gateway,
            server_read,
            server_write,
            shutdown,
        ));
        let (read, writer) = tokio::io::split(client_end);
        let answers: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>> = Arc::default();
        tokio::spawn(read_answers(BufReader::new(read).lines(), answers.clone()));
        Self {
            writer,
            answers,
            next_id: 1,
        }
    }

    /// Sends a request; the receiver gets its answer (result or error).
    async fn send(&mut self, method: &str, params: Value) -> (i64, oneshot::Receiver<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = oneshot::channel();
        self.answers.lock().unwrap().insert(id, tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&line).await;
        (id, rx)
    }

    async fn write(&mut self, msg: &Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let (_, rx) = self.send(method, params).await;
        tokio::time::timeout(WAIT, rx)
            .await
            .unwrap_or_else(|_| panic!("{method} answered within {WAIT:?}"))
            .expect("answer")
    }

    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}

async fn read_answers(
    mut lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    answers: Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").and_then(Value::as_i64) else {
            continue;
        };
        if msg.get("method").is_some() {
            continue;
        }
        if let Some(tx) = answers.lock().unwrap().remove(&id) {
            let _ = tx.send(msg);
        }
    }
}

fn error_message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error answer: {answer}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_kind_of_source_and_an_mcp_upstream_pass_the_same_layers() {
    let model = support::scripted_model(vec![
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "clock__now", "arguments": "{}"}}
        ]}),
        json!({"role": "assistant", "content": "it is tick o'clock"}),
    ])
    .await
    .0;
    let inference = support::scripted_inference(model);
    let clock = Arc::new(Clock::default());
    let counting = Arc::new(Counting::default());
    let limits = CallLimits {
        timeout: Some(Duration::from_secs(1)),
        max_in_flight: 1,
        queue_timeout: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let mut every = SourceSpec::mcp(everything());
    every.limits.queue_timeout = limits.queue_timeout;
    let config = GatewayConfig {
        sources: vec![
            every,
            inference.into_source_spec(),
            // The new kind of source: one registration line.
            SourceSpec::new(clock.clone()).with_limits(limits),
        ],
        layers: vec![counting.clone()],
        ..GatewayConfig::default()
    };
    let gateway = Gateway::start(config).await.expect("gateway starts");
    let shutdown = CancellationToken::new();
    let mut client = StdioClient::start(gateway.clone(), shutdown.clone());
    let init = client
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "seams", "version": "0"}}),
        )
        .await;
    assert!(init["result"]["protocolVersion"].is_string(), "{init}");
    client
        .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    // Listed.
    let list = client.request("tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for wanted in ["clock__now", "clock__sleep", "every__echo", "local__agent"] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }

    // Called.
    let r = client.call("clock__now", json!({})).await;
    assert_eq!(first_text(&r["result"]), "tick", "{r}");
    let r = client.call("every__echo", json!({"message": "hi"})).await;
    assert!(first_text(&r["result"]).contains("hi"), "{r}");

    // Cancelled: no answer, and the source saw its call cancelled.
    let (id, mut answer) = client
        .send(
            "tools/call",
            json!({"name": "clock__sleep", "arguments": {"ms": 60000}}),
        )
        .await;
    wait_until(|| counting.count("clock", "clock__sleep") == 1).await;
    client
        .write(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}))
        .await;
    wait_until(|| clock.cancelled.load(Ordering::SeqCst) == 1).await;
    assert!(
        answer.try_recv().is_err(),
        "a cancelled request gets no answer"
    );

    // Timed out, by the same layer for both kinds.
    let r = client.call("clock__sleep", json!({"ms": 10000})).await;
    let message = error_message(&r);
    assert!(
        message.contains("`clock`") && message.contains("within 1s"),
        "{message}"
    );
    let r = client
        .call(
            "every__trigger-long-running-operation",
            json!({"duration": 10, "steps": 2}),
        )
        .await;
    let message = error_message(&r);
    assert!(
        message.contains("`every`") && message.contains("within 2s"),
        "{message}"
    );

    // Capped: one call in flight per source; the next waits 300 ms, then
    // fails naming the source.
    for (busy, busy_args, other, other_args) in [
        ("clock__sleep", json!({"ms": 900}), "clock__now", json!({})),
        (
            "every__trigger-long-running-operation",
            json!({"duration": 1.5, "steps": 2}),
            "every__echo",
            json!({"message": "queued"}),
        ),
    ] {
        let source = other.split("__").next().unwrap().to_owned();
        let started = counting.count(&source, busy);
        let (_, first) = client
            .send("tools/call", json!({"name": busy, "arguments": busy_args}))
            .await;
        // The first call has passed the counting layer, just outside the cap.
        wait_until(|| counting.count(&source, busy) == started + 1).await;
        let before = counting.count(&source, other);
        let r = client.call(other, other_args).await;
        let message = error_message(&r);
        assert!(
            message.contains(&format!("`{source}` is busy")),
            "{message}"
        );
        assert_eq!(counting.count(&source, other), before + 1);
        let first = tokio::time::timeout(WAIT, first)
            .await
            .expect("first call")
            .expect("answer");
        assert!(first.get("result").is_some(), "{first}");
    }

    // As a task: answered at once, then run through the layers.
    let before = counting.count("clock", "clock__now");
    let created = client
        .request(
            "tools/call",
            json!({"name": "clock__now", "arguments": {}, "task": {"ttl": 60000}}),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let r = client
        .request("tasks/result", json!({"taskId": task_id}))
        .await;
    assert_eq!(first_text(&r["result"]), "tick", "{r}");
    assert_eq!(counting.count("clock", "clock__now"), before + 1);

    // Through the agent: its inner call passes the layers too.
    let before = counting.count("clock", "clock__now");
    let r = client
        .call(
            "local__agent",
            json!({"prompt": "What time is it?", "tools": ["clock__*"]}),
        )
        .await;
    assert_eq!(first_text(&r["result"]), "it is tick o'clock", "{r}");
    assert_eq!(counting.count("local", "local__agent"), 1);
    assert_eq!(counting.count("clock", "clock__now"), before + 1);

    shutdown.cancel();
    gateway.shutdown().await;
}

/// Polls `done` until it holds, failing after [`WAIT`].
async fn wait_until(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
