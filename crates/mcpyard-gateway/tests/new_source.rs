//! A new kind of source, written in this one file and registered with one
//! line, is served through every layer as an MCP upstream is: its tools are
//! listed and called, its resource is subscribed and its change heard, a
//! task it runs itself is created, polled, listed, read and cancelled
//! through the gateway, and its calls are cancelled, timed out, capped,
//! denied by the policy, redacted by the guardrails, audited and counted
//! in the metrics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::governance::{Effect, Policy, Rule};
use mcpyard_gateway::{
    AuditFile, AuditTrail, CallContext, CallLimits, GatewayConfig, Guard, GuardConfig, ListKind,
    Metrics, RouteError, Source, SourceEvents, SourceLists, SourceRequest, SourceSpec,
};
use mcpyard_proto::{Message, Payload};
use mcpyard_testkit::text;
use mcpyard_testkit::InProcessClient;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const BALANCE: &str = "ledger://balance";

/// A ledger: `deposit` adds to a balance (a resource its subscribers hear
/// about), `statement` answers with a secret, `wait` runs until it is
/// stopped, `forbidden` is what the policy refuses; `audit_run` is a task
/// the ledger runs itself.
#[derive(Debug, Default)]
struct Ledger {
    balance: Mutex<i64>,
    events: OnceLock<SourceEvents>,
    subscribed: Mutex<Vec<String>>,
    tasks: Mutex<HashMap<String, &'static str>>,
    /// Calls of `wait` that saw their token cancelled.
    stopped: AtomicUsize,
}

#[async_trait]
impl Source for Ledger {
    fn name(&self) -> &str {
        "ledger"
    }

    fn start(&self, events: SourceEvents) {
        let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
        let mut lists = SourceLists::tools(
            ["deposit", "statement", "wait", "forbidden"]
                .into_iter()
                .map(tool)
                .chain([json!({
                    "name": "audit_run",
                    "inputSchema": {"type": "object"},
                    "execution": {"taskSupport": "required"},
                })])
                .collect(),
        );
        lists.set(
            ListKind::Resources,
            vec![json!({"uri": BALANCE, "name": "balance"})],
        );
        lists.set_runs_tasks(true);
        events.publish(lists);
        let _ = self.events.set(events);
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        if request.method == "resources/read" {
            let balance = *self.balance.lock().unwrap();
            return Ok(json!({"contents": [{"uri": BALANCE, "text": balance.to_string()}]}).into());
        }
        let arguments = request.take_arguments();
        let text = |t: String| Ok(json!({"content": [{"type": "text", "text": t}]}).into());
        match request.name() {
            Some("deposit") => {
                let amount = arguments["amount"].as_i64().unwrap_or(0);
                let balance = {
                    let mut b = self.balance.lock().unwrap();
                    *b += amount;
                    *b
                };
                if let Some(events) = self.events.get() {
                    events.resource_updated(BALANCE);
                }
                text(format!("balance {balance}"))
            }
            Some("statement") => text(format!("signed with {AWS_KEY}")),
            Some("forbidden") => text("should never run".into()),
            Some("wait") => {
                request.context.cancel.cancelled().await;
                self.stopped.fetch_add(1, Ordering::SeqCst);
                text("stopped".into())
            }
            Some("audit_run") => {
                assert!(request.params.get("task").is_some(), "{}", request.params);
                let id = format!("ledger-task-{}", self.tasks.lock().unwrap().len() + 1);
                self.tasks.lock().unwrap().insert(id.clone(), "working");
                Ok(json!({"task": task(&id, "working")}).into())
            }
            other => Err(RouteError::UnknownName {
                kind: "tool",
                name: other.unwrap_or_default().to_owned(),
            }),
        }
    }

    async fn status(&self) -> Value {
        json!({"name": "ledger", "healthy": true})
    }

    fn offers(&self, capability: &str) -> bool {
        matches!(
            capability,
            "/resources" | "/resources/subscribe" | "/tasks/requests/tools/call"
        )
    }

    async fn request(
        &self,
        method: &str,
        params: Value,
        _context: Option<&CallContext>,
    ) -> Result<Value, RouteError> {
        let id = params["taskId"].as_str().unwrap_or_default().to_owned();
        let mut tasks = self.tasks.lock().unwrap();
        match method {
            "resources/subscribe" => {
                let uri = params["uri"].as_str().unwrap_or_default().to_owned();
                self.subscribed.lock().unwrap().push(uri);
                Ok(json!({}))
            }
            "resources/unsubscribe" => Ok(json!({})),
            "tasks/get" => Ok(task(
                &id,
                tasks.get(id.as_str()).copied().unwrap_or("failed"),
            )),
            "tasks/list" => Ok(json!({
                "tasks": tasks.iter().map(|(id, status)| task(id, status)).collect::<Vec<_>>(),
            })),
            "tasks/result" => {
                tasks.insert(id.clone(), "completed");
                Ok(
                    json!({"content": [{"type": "text", "text": format!("audited, key {AWS_KEY}")}]}),
                )
            }
            "tasks/cancel" => {
                tasks.insert(id.clone(), "cancelled");
                Ok(task(&id, "cancelled"))
            }
            other => Err(RouteError::Protocol(
                mcpyard_proto::ErrorObject::method_not_found(other),
            )),
        }
    }
}

fn task(id: &str, status: &str) -> Value {
    json!({
        "taskId": id,
        "status": status,
        "createdAt": "2026-12-02T00:00:00Z",
        "lastUpdatedAt": "2026-12-02T00:00:00Z",
        "ttl": 60_000,
    })
}

struct Harness {
    client: InProcessClient,
    ledger: Arc<Ledger>,
    audit: AuditFile,
    _dir: tempfile::TempDir,
}

async fn start() -> Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = AuditFile {
        path: dir.path().join("audit.jsonl"),
        max_size: AuditFile::DEFAULT_MAX_SIZE,
        keep: 1,
    };
    let ledger = Arc::new(Ledger::default());
    let metrics = Arc::new(Metrics::new());
    let guard = Guard::new(GuardConfig {
        redact_builtin: true,
        ..GuardConfig::default()
    })
    .expect("valid guardrails");
    let policy = Policy {
        default: Effect::Allow,
        rules: vec![Rule {
            effect: Effect::Deny,
            tools: vec!["ledger__forbidden".into()],
            ..Rule::default()
        }],
    };
    let limits = CallLimits {
        timeout: Some(Duration::from_millis(1_500)),
        max_in_flight: 1,
        queue_timeout: Duration::from_millis(200),
        ..CallLimits::default()
    };
    let config = GatewayConfig {
        // The one line that registers the new kind of source.
        sources: vec![SourceSpec::new(ledger.clone()).with_limits(limits)],
        guard: Some(Arc::new(guard)),
        policy: Some(Arc::new(policy)),
        audit: Some(AuditTrail::open(audit.clone()).expect("audit file opens")),
        metrics: Some(metrics.clone()),
        ..GatewayConfig::default()
    };
    let client = InProcessClient::start_with(config, WAIT).await;
    Harness {
        client,
        ledger,
        audit,
        _dir: dir,
    }
}

#[tokio::test]
async fn a_new_kind_of_source_is_listed_called_subscribed_and_runs_its_own_tasks() {
    let h = start().await;
    let names: Vec<String> = h
        .client
        .tools()
        .await
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(names.contains(&"ledger__deposit".to_owned()), "{names:?}");
    // The policy's refusal hides the tool from the list as well.
    assert!(
        !names.contains(&"ledger__forbidden".to_owned()),
        "{names:?}"
    );
    // A source that runs its tasks itself keeps its own task support.
    let tools = h.client.tools().await;
    let audit_run = tools
        .iter()
        .find(|t| t["name"] == "ledger__audit_run")
        .expect("listed");
    assert_eq!(audit_run["execution"]["taskSupport"], "required");
    let deposit = tools
        .iter()
        .find(|t| t["name"] == "ledger__deposit")
        .expect("listed");
    assert!(deposit.get("execution").is_none(), "{deposit}");

    // Subscribed through the gateway, and the change is heard.
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    h.client.session().attach_stream(tx);
    h.client
        .request("resources/subscribe", json!({"uri": BALANCE}), None)
        .await;
    assert_eq!(*h.ledger.subscribed.lock().unwrap(), [BALANCE]);
    let deposited = h.client.call("ledger__deposit", json!({"amount": 5})).await;
    assert_eq!(text(&deposited), "balance 5");
    let heard = tokio::time::timeout(WAIT, async {
        loop {
            match rx.recv().await {
                Some(Message::Notification { method, params })
                    if method == "notifications/resources/updated" =>
                {
                    break params
                }
                Some(_) => continue,
                None => panic!("the session stream closed"),
            }
        }
    })
    .await
    .expect("the update was heard");
    assert_eq!(heard.unwrap()["uri"], BALANCE);
    let read = h
        .client
        .request("resources/read", json!({"uri": BALANCE}), None)
        .await;
    assert_eq!(read["contents"][0]["text"], "5");

    // A task the source runs: created by it, then polled, listed, read and
    // cancelled through the gateway, which routes each by the task's id.
    let created = h
        .client
        .request(
            "tools/call",
            json!({"name": "ledger__audit_run", "arguments": {}, "task": {"ttl": 60_000}}),
            None,
        )
        .await;
    let id = created["task"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    assert!(id.starts_with("ledger-task-"), "{created}");
    let got = h
        .client
        .request("tasks/get", json!({"taskId": id}), None)
        .await;
    assert_eq!(got["status"], "working");
    let listed = h.client.request("tasks/list", json!({}), None).await;
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == id.as_str()),
        "{listed}"
    );
    let result = h
        .client
        .request("tasks/result", json!({"taskId": id}), None)
        .await;
    assert!(text(&result).starts_with("audited"), "{result}");
    let second = h
        .client
        .request(
            "tools/call",
            json!({"name": "ledger__audit_run", "arguments": {}, "task": {}}),
            None,
        )
        .await;
    let second_id = second["task"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = h
        .client
        .request("tasks/cancel", json!({"taskId": second_id}), None)
        .await;
    assert_eq!(cancelled["status"], "cancelled");
    // Another client never reaches this one's tasks.
    let other = h
        .client
        .join_as(mcpyard_gateway::Identity::anonymous())
        .await;
    let unknown = other
        .try_request("tasks/get", json!({"taskId": id}), None)
        .await
        .expect_err("another session's task is unknown");
    assert_eq!(unknown.code, -32602, "{unknown:?}");
    drop(h);
}

#[tokio::test]
async fn a_new_kind_of_source_meets_every_layer_of_the_call_path() {
    let h = start().await;

    // Redacted by the guardrails, in a call's result and in a task's.
    let statement = h.client.call("ledger__statement", json!({})).await;
    assert!(!text(&statement).contains(AWS_KEY), "{statement}");
    assert!(text(&statement).contains("REDACTED"), "{statement}");

    // Denied by the policy before the source sees it.
    let denied = h
        .client
        .try_request(
            "tools/call",
            json!({"name": "ledger__forbidden", "arguments": {}}),
            None,
        )
        .await;
    let error = denied.expect_err("the policy refuses the call");
    // As the policy hides it: an unknown tool to this client.
    assert_eq!(
        error.message, "Unknown tool: ledger__forbidden",
        "{error:?}"
    );

    // Cancelled by the client: no answer, and the source's work is stopped.
    let (id, call) = h
        .client
        .spawn_call(json!({"name": "ledger__wait", "arguments": {}}), None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(h.client.cancel_call(id, call).await.is_none());
    wait_until(|| h.ledger.stopped.load(Ordering::SeqCst) == 1).await;

    // Capped: one call in flight; the next waits 200 ms, then is refused.
    // The first then runs into the source's 1.5 s timeout.
    let (_, first) = h
        .client
        .spawn_call(json!({"name": "ledger__wait", "arguments": {}}), None);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let busy = h
        .client
        .try_request(
            "tools/call",
            json!({"name": "ledger__wait", "arguments": {}}),
            None,
        )
        .await
        .expect_err("a second call over the cap is refused");
    assert!(busy.message.contains("source `ledger` is busy"), "{busy:?}");
    let timed_out = tokio::time::timeout(WAIT, first)
        .await
        .expect("the first call ended")
        .expect("call task")
        .expect("an answer");
    let Message::Error { error, .. } = timed_out else {
        panic!("expected the timeout's error, got {timed_out:?}");
    };
    assert!(
        error.message.contains("source `ledger` did not answer"),
        "{error:?}"
    );
    wait_until(|| h.ledger.stopped.load(Ordering::SeqCst) == 2).await;

    // Audited: one line per call, the refusals included. The trail's
    // writer thread appends a call's line after its answer: wait for the
    // five lines of the calls above (statement, forbidden, three waits).
    let read_lines = || -> Vec<Value> {
        std::fs::read_to_string(&h.audit.path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    };
    wait_until(|| read_lines().len() >= 5).await;
    let lines = read_lines();
    let outcome = |tool: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["tool"] == tool)
            .map(|l| l["outcome"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(outcome("ledger__statement"), ["ok"]);
    assert_eq!(outcome("ledger__forbidden"), ["refused"]);
    let waits = outcome("ledger__wait");
    assert!(waits.contains(&"limited".to_owned()), "{waits:?}");
    assert!(waits.contains(&"error".to_owned()), "{waits:?}");
    assert!(!lines.iter().any(|l| l.to_string().contains(AWS_KEY)));

    // Counted in the metrics, per source and tool.
    let exposition = h.client.gateway().metrics_text().expect("metrics are on");
    let statement_ok = exposition
        .lines()
        .find(|l| l.starts_with("mcpyard_calls_total{") && l.contains("tool=\"ledger__statement\""))
        .unwrap_or_else(|| panic!("no call count for the ledger in\n{exposition}"));
    assert!(statement_ok.contains("source=\"ledger\""), "{statement_ok}");
    assert!(statement_ok.ends_with(" 1"), "{statement_ok}");
}

async fn wait_until(done: impl Fn() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the condition held in time");
}
