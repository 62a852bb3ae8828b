//! Guardrails, size limits and the audit trail on a source of the test's
//! own, driven as a front door drives the gateway: secrets are redacted
//! from results and from an upstream's errors, deny rules and size limits
//! refuse a call before its source sees it, an oversize result is cut, and
//! every call, refusal included, is one line of the audit file. Calls a
//! source makes through its context (as the agent does) and calls run as
//! tasks meet the same layers.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::{
    AuditFile, AuditTrail, CallLimits, DenyRule, Gateway, GatewayConfig, Guard, GuardConfig,
    RouteError, Session, SizeLimits, Source, SourceEvents, SourceLists, SourceRequest, SourceSpec,
    ToolSizes,
};
use mcpyard_proto::{ErrorObject, Message, Payload, RequestId};
use mcpyard_testkit::text;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const GITHUB_TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

/// `reveal` answers with secrets, `echo` with its `message`, `big` with
/// 20 000 characters, `fail` with an error quoting a token, `inner` calls
/// `vault__reveal` through its context as the agent would.
#[derive(Debug, Default)]
struct Vault {
    calls: AtomicUsize,
}

#[async_trait]
impl Source for Vault {
    fn name(&self) -> &str {
        "vault"
    }

    fn start(&self, events: SourceEvents) {
        let tools = ["reveal", "echo", "big", "fail", "inner"]
            .into_iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        events.publish(SourceLists::tools(tools));
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let arguments = request.take_arguments();
        let text = |t: String| Ok(json!({"content": [{"type": "text", "text": t}]}).into());
        match request.name() {
            Some("reveal") => Ok(json!({
                "content": [
                    {"type": "text", "text": format!("key {AWS_KEY} and token {GITHUB_TOKEN}")},
                    {"type": "image", "data": GITHUB_TOKEN, "mimeType": "image/png"},
                ],
                "structuredContent": {"deep": [{"token": GITHUB_TOKEN}]},
            })
            .into()),
            Some("echo") => text(arguments["message"].as_str().unwrap_or("").to_owned()),
            Some("big") => text("z".repeat(20_000)),
            Some("fail") => Err(RouteError::Refused {
                server: "vault".into(),
                error: ErrorObject::invalid_params(format!("bad credentials {GITHUB_TOKEN}")),
            }),
            Some("inner") => {
                let inner = request
                    .context
                    .call_tool("vault__reveal", json!({}))
                    .await?;
                Ok(inner.into())
            }
            other => Err(RouteError::UnknownName {
                kind: "tool",
                name: other.unwrap_or_default().to_owned(),
            }),
        }
    }

    async fn status(&self) -> Value {
        json!({"name": "vault", "healthy": true})
    }
}

struct Harness {
    gateway: Gateway,
    session: Arc<Session>,
    vault: Arc<Vault>,
    audit: AuditFile,
    _dir: tempfile::TempDir,
    next_id: AtomicUsize,
}

impl Harness {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let audit = AuditFile {
            path: dir.path().join("audit.jsonl"),
            max_size: AuditFile::DEFAULT_MAX_SIZE,
            keep: 1,
        };
        let guard = Guard::new(GuardConfig {
            redact_builtin: true,
            patterns: vec![("ticket".into(), r"TICKET-\d{4}".into())],
            deny: vec![DenyRule {
                name: "no-rm".into(),
                pattern: r"rm\s+-rf".into(),
                tools: vec!["vault__*".into()],
                arguments: Vec::new(),
                message: Some("Ask for a narrower command.".into()),
            }],
            webhook: None,
        })
        .expect("valid guardrails");
        let vault = Arc::new(Vault::default());
        let limits = CallLimits {
            sizes: SizeLimits {
                max_arguments: Some(2_000),
                max_result: Some(5_000),
                tools: [(
                    "echo".to_owned(),
                    ToolSizes {
                        max_arguments: Some(200),
                        max_result: None,
                    },
                )]
                .into(),
            },
            ..CallLimits::default()
        };
        let config = GatewayConfig {
            sources: vec![SourceSpec::new(vault.clone()).with_limits(limits)],
            guard: Some(Arc::new(guard)),
            audit: Some(AuditTrail::open(audit.clone()).expect("audit file opens")),
            ..GatewayConfig::default()
        };
        let gateway = Gateway::start(config).await.expect("gateway starts");
        let session = Session::new(None);
        assert!(gateway.register_session(session.clone()));
        Self {
            gateway,
            session,
            vault,
            audit,
            _dir: dir,
            next_id: AtomicUsize::new(1),
        }
    }

    async fn request(&self, method: &str, params: Value) -> Message {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) as i64;
        tokio::time::timeout(
            WAIT,
            self.gateway.request(
                &self.session,
                RequestId::Number(id),
                method,
                Some(params),
                None,
            ),
        )
        .await
        .expect("answered in time")
        .into_reply()
        .expect("a reply")
    }

    async fn call(&self, name: &str, arguments: Value) -> Message {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    async fn result(&self, name: &str, arguments: Value) -> Value {
        match self.call(name, arguments).await {
            Message::Response { result, .. } => result.into_value(),
            other => panic!("expected a result, got {other:?}"),
        }
    }

    /// The audit lines, once at least `count` have been written.
    async fn audit_lines(&self, count: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let lines = read_lines(&self.audit.path);
            if lines.len() >= count {
                return lines;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} audit lines after {WAIT:?}, wanted {count}",
                lines.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
        .collect()
}

#[tokio::test]
async fn secrets_are_redacted_from_results_and_from_an_upstreams_errors() {
    let h = Harness::start().await;
    let result = h.result("vault__reveal", json!({})).await;
    let shown = text(&result);
    assert!(shown.contains("[REDACTED:aws_access_key]"), "{shown}");
    assert!(shown.contains("[REDACTED:github_token]"), "{shown}");
    assert!(!result["structuredContent"]
        .to_string()
        .contains(GITHUB_TOKEN));
    // The image's bytes are left alone: a changed image is a broken one.
    assert_eq!(result["content"][1]["data"], GITHUB_TOKEN);

    let echoed = h
        .result("vault__echo", json!({"message": "see TICKET-1234"}))
        .await;
    assert_eq!(text(&echoed), "see [REDACTED:ticket]");

    let Message::Error { error, .. } = h.call("vault__fail", json!({})).await else {
        panic!("expected an error");
    };
    assert!(!error.message.contains(GITHUB_TOKEN), "{}", error.message);
    assert!(error.message.contains("[REDACTED:github_token]"));
}

#[tokio::test]
async fn a_deny_rule_refuses_the_call_before_its_source_naming_the_rule() {
    let h = Harness::start().await;
    let result = h
        .result("vault__echo", json!({"message": "please rm -rf /"}))
        .await;
    assert_eq!(result["isError"], json!(true));
    let shown = text(&result);
    assert!(
        shown.contains("`no-rm`") && shown.contains("narrower command"),
        "{shown}"
    );
    assert_eq!(h.vault.calls.load(Ordering::SeqCst), 0);
    let lines = h.audit_lines(1).await;
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[0]["reason"], "no-rm");
    assert_eq!(lines[0]["tool"], "vault__echo");
}

#[tokio::test]
async fn sizes_refuse_large_arguments_and_cut_large_results() {
    let h = Harness::start().await;
    // The tool's own limit (200) wins over its source's (2 000).
    let refused = h
        .result("vault__echo", json!({"message": "a".repeat(300)}))
        .await;
    assert_eq!(refused["isError"], json!(true));
    assert!(text(&refused).contains("max_arguments"), "{refused}");
    assert_eq!(h.vault.calls.load(Ordering::SeqCst), 0);
    let passed = h
        .result("vault__reveal", json!({"pad": "a".repeat(300)}))
        .await;
    assert!(passed.get("isError").is_none(), "{passed}");

    let cut = h.result("vault__big", json!({})).await;
    let size = serde_json::to_vec(&cut).unwrap().len();
    assert!(size <= 5_000, "{size} bytes");
    let shown = text(&cut);
    assert!(
        shown.contains("was cut") && shown.contains("max_result"),
        "{shown}"
    );

    let lines = h.audit_lines(3).await;
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[0]["reason"], "max_arguments");
    assert!(lines[0]["request_bytes"].as_u64().unwrap() > 300);
    let big = lines.iter().find(|l| l["tool"] == "vault__big").unwrap();
    assert_eq!(big["outcome"], "ok");
    assert!(big["response_bytes"].as_u64().unwrap() <= 5_000, "{big}");
}

#[tokio::test]
async fn every_call_is_one_audit_line_without_its_arguments() {
    let h = Harness::start().await;
    let secret_argument = format!("my token {GITHUB_TOKEN}");
    h.result("vault__echo", json!({"message": secret_argument}))
        .await;
    h.call("vault__fail", json!({})).await;
    h.call("vault__nope", json!({})).await;
    let lines = h.audit_lines(2).await;
    let raw = std::fs::read_to_string(&h.audit.path).unwrap();
    assert!(
        !raw.contains(GITHUB_TOKEN) && !raw.contains("my token"),
        "{raw}"
    );
    assert_eq!(lines.len(), 2, "an unknown tool reaches no layer: {raw}");

    let echo = &lines[0];
    for key in [
        "time",
        "identity",
        "source",
        "tool",
        "outcome",
        "duration_ms",
    ] {
        assert!(echo.get(key).is_some(), "{key} in {echo}");
    }
    assert_eq!(echo["identity"], "anonymous");
    assert_eq!(echo["session"], h.session.id());
    assert_eq!(echo["source"], "vault");
    assert_eq!(echo["outcome"], "ok");
    let expected = {
        use sha2::Digest;
        let args = serde_json::to_vec(&json!({"message": secret_argument})).unwrap();
        format!("{:x}", sha2::Sha256::digest(&args))
    };
    assert_eq!(echo["arguments_sha256"], expected);
    assert!(humantime::parse_rfc3339(echo["time"].as_str().unwrap()).is_ok());

    assert_eq!(lines[1]["outcome"], "error");
    assert_eq!(lines[1]["reason"], "source");
}

#[tokio::test]
async fn inner_calls_and_tasks_meet_the_same_layers() {
    let h = Harness::start().await;
    let result = h.result("vault__inner", json!({})).await;
    assert!(!result.to_string().contains(AWS_KEY), "{result}");
    let lines = h.audit_lines(2).await;
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    // The inner call ends first.
    assert_eq!(tools, ["vault__reveal", "vault__inner"]);

    let Message::Response {
        result: created, ..
    } = h
        .request(
            "tools/call",
            json!({"name": "vault__reveal", "arguments": {}, "task": {"ttl": 60000}}),
        )
        .await
    else {
        panic!("expected a task");
    };
    let created = created.into_value();
    let task_id = created["task"]["taskId"].as_str().expect("a task id");
    let Message::Response { result, .. } =
        h.request("tasks/result", json!({"taskId": task_id})).await
    else {
        panic!("expected the task's result");
    };
    let result = result.into_value();
    assert!(
        text(&result).contains("[REDACTED:aws_access_key]"),
        "{result}"
    );
    assert!(!result.to_string().contains(AWS_KEY));
    let lines = h.audit_lines(3).await;
    assert_eq!(lines[2]["tool"], "vault__reveal");
}
