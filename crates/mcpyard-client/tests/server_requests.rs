//! What a server asks of the client (roots, elicitation, sampling),
//! answered by the handlers given to the builder, against server-everything,
//! which offers the tools that make those requests only to a client that
//! advertises the capability.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{everything_stdio, first_text, names, start_everything, workspace_root};
use mcpyard_client::{
    ConnectOptions, ElicitationHandler, McpClient, RequestOptions, Review, Root, RootsHandler,
    Sampler, SamplingPolicy, SamplingRequest, SamplingSummary, TransportSpec,
};
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::{json, Value};

const SAMPLING_TOOL: &str = "trigger-sampling-request";
const ELICITATION_TOOL: &str = "trigger-elicitation-request";
const ROOTS_TOOL: &str = "get-roots-list";

/// The Python SDK server whose tools ask for sampling and roots.
fn python_asking() -> TransportSpec {
    let python = workspace_root().join(".tools/venv1/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        python.display()
    );
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/py1_asking_server.py");
    TransportSpec::Stdio {
        command: python.display().to_string(),
        args: vec![script.display().to_string()],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    }
}

fn options() -> ConnectOptions {
    ConnectOptions {
        label: "test-server-requests".into(),
        connect_timeout: Duration::from_secs(30),
        request_timeout: Some(Duration::from_secs(20)),
        ..ConnectOptions::default()
    }
}

/// Roots that can change while connected, counting how often they are asked.
#[derive(Default)]
struct ChangingRoots {
    roots: Mutex<Vec<Root>>,
    asked: AtomicUsize,
}

#[async_trait]
impl RootsHandler for ChangingRoots {
    async fn list_roots(&self) -> Result<Vec<Root>, ErrorObject> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(self.roots.lock().expect("not poisoned").clone())
    }
}

/// Accepts every form with a name, recording what it was asked.
#[derive(Default)]
struct FillsInName {
    asked: Mutex<Vec<Value>>,
}

#[async_trait]
impl ElicitationHandler for FillsInName {
    async fn elicit(
        &self,
        params: Value,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        self.asked.lock().expect("not poisoned").push(params);
        Ok(json!({"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}))
    }
}

/// Answers with a fixed text, recording what reached it.
#[derive(Default)]
struct CannedModel {
    seen: Mutex<Vec<(Value, Option<String>)>>,
}

#[async_trait]
impl Sampler for CannedModel {
    async fn create_message(
        &self,
        request: SamplingRequest,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        let model = request.model.clone().unwrap_or_else(|| "any".into());
        self.seen
            .lock()
            .expect("not poisoned")
            .push((request.params, request.model));
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "canned answer"},
            "model": model,
            "stopReason": "endTurn",
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_are_advertised_only_for_the_handlers_configured() {
    let bare = McpClient::builder(everything_stdio())
        .options(options())
        .connect()
        .await
        .expect("connect");
    let tools = bare.list_tools().await.expect("list");
    let offered = names(&tools);
    assert!(offered.contains(&"echo"), "{offered:?}");
    for tool in [SAMPLING_TOOL, ELICITATION_TOOL, ROOTS_TOOL] {
        assert!(!offered.contains(&tool), "{tool} offered to a bare client");
    }
    bare.shutdown().await;

    let only_roots = McpClient::builder(everything_stdio())
        .options(options())
        .roots(vec![Root::new("file:///srv")])
        .connect()
        .await
        .expect("connect");
    let tools = only_roots.list_tools().await.expect("list");
    let offered = names(&tools);
    assert!(offered.contains(&ROOTS_TOOL), "{offered:?}");
    assert!(!offered.contains(&SAMPLING_TOOL) && !offered.contains(&ELICITATION_TOOL));
    only_roots.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_are_answered_and_asked_again_after_a_change() {
    let roots = Arc::new(ChangingRoots::default());
    *roots.roots.lock().expect("not poisoned") =
        vec![Root::new("file:///srv/first").named("first")];
    let client = McpClient::builder(everything_stdio())
        .options(options())
        .roots(roots.clone())
        .connect()
        .await
        .expect("connect");
    let listed = client
        .call_tool(ROOTS_TOOL, json!({}), RequestOptions::default())
        .await
        .expect("roots tool");
    let text = first_text(&listed);
    assert!(
        text.contains("file:///srv/first") && text.contains("first"),
        "{text}"
    );

    let before = roots.asked.load(Ordering::SeqCst);
    *roots.roots.lock().expect("not poisoned") = vec![
        Root::new("file:///srv/first").named("first"),
        Root::new("file:///srv/second"),
    ];
    client.notify_roots_changed().await.expect("notify");
    let deadline = Instant::now() + Duration::from_secs(10);
    while roots.asked.load(Ordering::SeqCst) == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        roots.asked.load(Ordering::SeqCst) > before,
        "never asked again"
    );
    let listed = client
        .call_tool(ROOTS_TOOL, json!({}), RequestOptions::default())
        .await
        .expect("roots tool");
    let text = first_text(&listed);
    assert!(
        text.contains("(2 total)") && text.contains("file:///srv/second"),
        "{text}"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_reaches_its_handler_over_streamable_http() {
    let server = start_everything("streamableHttp");
    let spec = TransportSpec::StreamableHttp {
        url: format!("http://127.0.0.1:{}/mcp", server.port),
        headers: vec![],
    };
    let form = Arc::new(FillsInName::default());
    let client = McpClient::builder(spec)
        .options(options())
        .elicitation(form.clone())
        .connect()
        .await
        .expect("connect");
    let result = client
        .call_tool(ELICITATION_TOOL, json!({}), RequestOptions::default())
        .await
        .expect("elicitation tool");
    let all_text: String = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert!(all_text.contains("Ada Lovelace"), "{result}");
    let asked = form.asked.lock().expect("not poisoned").clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0]["requestedSchema"]["properties"]["name"].is_object());
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_passes_the_policy_and_the_reviewer_sees_no_text() {
    let secret = "the launch code is 0000";
    let model = Arc::new(CannedModel::default());
    let reviewed: Arc<Mutex<Vec<SamplingSummary>>> = Arc::default();
    let log = reviewed.clone();
    let policy = SamplingPolicy::new(32)
        .allow_models(["tiny-chat", "qwen3:4b"])
        .reviewer(move |summary: SamplingSummary| {
            log.lock().expect("not poisoned").push(summary.clone());
            async move {
                if summary.max_tokens_requested > Some(1000) {
                    Review::Refuse("asks for too many tokens".into())
                } else {
                    Review::Approve
                }
            }
        });
    let client = McpClient::builder(everything_stdio())
        .options(options())
        .sampling(policy, model.clone())
        .connect()
        .await
        .expect("connect");

    let answered = client
        .call_tool(
            SAMPLING_TOOL,
            json!({"prompt": secret, "maxTokens": 500}),
            RequestOptions::default(),
        )
        .await
        .expect("sampling tool");
    assert!(
        first_text(&answered).contains("canned answer"),
        "{answered}"
    );
    assert!(first_text(&answered).contains("tiny-chat"), "{answered}");
    let seen = model.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 1);
    let (params, picked) = &seen[0];
    assert_eq!(params["maxTokens"], 32, "the cap wins over the 500 asked");
    assert_eq!(picked.as_deref(), Some("tiny-chat"));
    assert!(
        params.to_string().contains(secret),
        "the sampler gets the text"
    );

    let summaries = reviewed.lock().expect("not poisoned").clone();
    assert_eq!(summaries.len(), 1);
    let summary = &summaries[0];
    assert_eq!(summary.max_tokens_requested, Some(500));
    assert_eq!(summary.max_tokens_granted, 32);
    assert_eq!(summary.message_count, 1);
    assert_eq!(summary.roles, ["user"]);
    assert_eq!(summary.content_kinds, ["text"]);
    assert!(summary.has_system_prompt);
    assert!(!format!("{summary:?}").contains("launch code"));

    // The reviewer refuses: the sampler never sees it and the server gets
    // an error that says why.
    let refused = client
        .call_tool(
            SAMPLING_TOOL,
            json!({"prompt": secret, "maxTokens": 5000}),
            RequestOptions::default(),
        )
        .await;
    let message = match refused {
        Ok(result) => {
            assert_eq!(result["isError"], true, "{result}");
            first_text(&result).to_owned()
        }
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains("the client refused this sampling request: asks for too many tokens"),
        "{message}"
    );
    assert_eq!(model.seen.lock().expect("not poisoned").len(), 1);
    assert_eq!(reviewed.lock().expect("not poisoned").len(), 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_servers_model_hints_pick_an_allowed_model_under_the_cap() {
    let model = Arc::new(CannedModel::default());
    let policy = SamplingPolicy::new(64)
        .allow_models(["llama3.2", "qwen3:4b"])
        .reviewer(|summary: SamplingSummary| async move {
            match summary.max_tokens_requested {
                Some(asked) if asked > 1000 => {
                    Review::Refuse(format!("{asked} tokens is too many"))
                }
                _ => Review::Approve,
            }
        });
    let client = McpClient::builder(python_asking())
        .options(options())
        .sampling(policy, model.clone())
        .roots(vec![Root::new("file:///srv/app").named("app")])
        .connect()
        .await
        .expect("connect");

    let answer = client
        .call_tool(
            "ask",
            json!({"question": "capital of France?", "max_tokens": 500}),
            RequestOptions::default(),
        )
        .await
        .expect("ask");
    assert_eq!(first_text(&answer), "qwen3:4b: canned answer", "{answer}");
    let seen = model.seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0["maxTokens"], 64);
    assert_eq!(seen[0].0["modelPreferences"]["hints"][0]["name"], "qwen");

    let refused = client
        .call_tool(
            "ask",
            json!({"question": "write a novel", "max_tokens": 5000}),
            RequestOptions::default(),
        )
        .await
        .expect("a refused sampling request is the tool's error");
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        first_text(&refused)
            .contains("the client refused this sampling request: 5000 tokens is too many"),
        "{refused}"
    );
    assert_eq!(model.seen.lock().expect("not poisoned").len(), 1);

    let roots = client
        .call_tool("roots", json!({}), RequestOptions::default())
        .await
        .expect("roots");
    assert_eq!(first_text(&roots), "app=file:///srv/app", "{roots}");
    client.shutdown().await;
}
