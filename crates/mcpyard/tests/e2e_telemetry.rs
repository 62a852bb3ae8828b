//! Metrics and traces, observed from outside as an operator's tools would:
//! `/metrics` scraped over HTTP after real calls and parsed by the
//! Prometheus Python client's strict OpenMetrics parser; spans exported over
//! OTLP/HTTP to a receiver that decodes the official protobufs, and the
//! trace context checked where a real HTTP upstream (the Python SDK's
//! Streamable HTTP server) received it.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{McpClient, RequestOptions, TransportSpec};
use serde_json::{json, Value};
use support::*;

const KEY: &str = "metrics-test-key-5d1c";
/// An argument no label may ever show.
const PRIVATE_ARGUMENT: &str = "private-argument-9e2b";

fn python() -> std::path::PathBuf {
    tool("venv/bin/python")
}

async fn client_with_key(gateway: &Gateway, key: &str) -> McpClient {
    connect(
        TransportSpec::StreamableHttp {
            url: gateway.url(),
            headers: vec![("Authorization".into(), format!("Bearer {key}"))],
        },
        Arc::new(Recorder::default()),
        json!({}),
    )
    .await
}

/// `GET url` with an optional bearer key: status, content type, body.
async fn get(url: &str, key: Option<&str>) -> (u16, String, String) {
    let http = reqwest::Client::new();
    let mut request = http.get(url).timeout(Duration::from_secs(10));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("GET answered");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("body"))
}

/// The scrape's samples, as the Prometheus client parsed them.
fn parse_metrics(dir: &Path, text: &str) -> Vec<Value> {
    let file = dir.join("scrape.txt");
    std::fs::write(&file, text).expect("write the scrape");
    let parsed = run_python(
        &python(),
        &[path_arg(&support_file("prom_parse.py")), path_arg(&file)],
        Duration::from_secs(30),
    );
    parsed.as_array().expect("a list of samples").clone()
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The value of the sample `name` whose labels include all of `labels`.
fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .and_then(|s| s["value"].as_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_real_calls_behind_the_api_key() {
    let dir = scratch();
    let config = format!(
        "{}\n[metrics]\nenabled = true\n",
        everything_stdio("everything")
    );
    let gateway = Gateway::start_with_env(&config, dir.path(), &[("MCPYARD_API_KEY", KEY)]).await;
    let client = client_with_key(&gateway, KEY).await;
    wait_for_tools(&client, &["everything__echo"], Duration::from_secs(30)).await;

    let echoed = call(
        &client,
        "everything__echo",
        json!({"message": PRIVATE_ARGUMENT}),
    )
    .await;
    assert!(first_text(&echoed).contains(PRIVATE_ARGUMENT), "{echoed}");
    // server-everything rejects arguments that break the tool's schema.
    let failed = client
        .request(
            "tools/call",
            Some(json!({"name": "everything__get-sum", "arguments": {"a": "one", "b": 2}})),
            RequestOptions::default(),
        )
        .await;
    let failed_outcome = match &failed {
        Ok(result) if result["isError"] == true => "isError",
        Ok(result) => panic!("a sum of a string succeeded: {result}"),
        Err(_) => "error",
    };
    let unknown = client
        .request(
            "tools/call",
            Some(json!({"name": "everything__no-such-tool", "arguments": {}})),
            RequestOptions::default(),
        )
        .await;
    assert!(unknown.is_err(), "an unknown tool was called: {unknown:?}");

    let metrics_url = format!("http://127.0.0.1:{}/metrics", gateway.port);
    let (status, _, _) = get(&metrics_url, None).await;
    assert_eq!(status, 401, "/metrics is behind the same key as /mcp");
    let (status, kind, scrape) = get(&metrics_url, Some(KEY)).await;
    assert_eq!(status, 200, "{scrape}");
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    assert!(
        !scrape.contains(PRIVATE_ARGUMENT),
        "an argument reached a label:\n{scrape}"
    );
    assert!(!scrape.contains(KEY), "the key reached the metrics");
    assert!(
        !scrape.contains("no-such-tool"),
        "a name the client made up is a label:\n{scrape}"
    );
    let samples = parse_metrics(dir.path(), &scrape);

    let calls = |tool: &str, outcome: &str| {
        sample(
            &samples,
            "mcpyard_calls_total",
            &[
                ("source", "everything"),
                ("method", "tools/call"),
                ("tool", tool),
                ("outcome", outcome),
            ],
        )
    };
    assert_eq!(calls("everything__echo", "ok"), Some(1.0), "{scrape}");
    assert_eq!(
        calls("everything__get-sum", failed_outcome),
        Some(1.0),
        "{scrape}"
    );
    assert_eq!(
        sample(
            &samples,
            "mcpyard_unrouted_calls_total",
            &[("method", "tools/call")]
        ),
        Some(1.0),
        "{scrape}"
    );
    let timed = sample(
        &samples,
        "mcpyard_call_duration_seconds_count",
        &[("source", "everything"), ("method", "tools/call")],
    );
    assert_eq!(timed, Some(2.0), "both routed calls are timed:\n{scrape}");
    let slowest_bucket = sample(
        &samples,
        "mcpyard_call_duration_seconds_bucket",
        &[
            ("source", "everything"),
            ("method", "tools/call"),
            ("le", "+Inf"),
        ],
    );
    assert_eq!(slowest_bucket, Some(2.0), "{scrape}");
    assert_eq!(
        sample(
            &samples,
            "mcpyard_calls_in_flight",
            &[("source", "everything")]
        ),
        Some(0.0),
        "{scrape}"
    );
    assert_eq!(
        sample(&samples, "mcpyard_upstream_up", &[("source", "everything")]),
        Some(1.0),
        "{scrape}"
    );
    assert_eq!(
        sample(
            &samples,
            "mcpyard_upstream_restarts_total",
            &[("source", "everything")]
        ),
        Some(0.0),
        "{scrape}"
    );
    // The test client's session, in the era it negotiated.
    let live: Vec<&Value> = samples
        .iter()
        .filter(|s| s["name"] == "mcpyard_sessions" && s["value"].as_f64() > Some(0.0))
        .collect();
    assert_eq!(live.len(), 1, "{scrape}");
    let era = live[0]["labels"]["era"].as_str().expect("an era label");
    assert!(era.starts_with("2025-"), "{era}");
    assert_eq!(
        sample(&samples, "mcpyard_sessions_started_total", &[("era", era)]),
        Some(1.0),
        "{scrape}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_their_own_address_are_not_on_the_mcp_listener() {
    let dir = scratch();
    let metrics_port = free_port();
    let config = format!(
        "{}\n[metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\n",
        everything_stdio("everything")
    );
    let gateway = Gateway::start(&config, dir.path()).await;
    wait_port(metrics_port, Duration::from_secs(30)).await;
    let (status, _, _) = get(&format!("http://127.0.0.1:{}/metrics", gateway.port), None).await;
    assert_eq!(status, 404, "/metrics is served apart, not with /mcp");
    let (status, _, scrape) = get(&format!("http://127.0.0.1:{metrics_port}/metrics"), None).await;
    assert_eq!(status, 200, "{scrape}");
    let samples = parse_metrics(dir.path(), &scrape);
    // Upstream health is read at the scrape, before any call.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut up = sample(&samples, "mcpyard_upstream_up", &[("source", "everything")]);
    while up != Some(1.0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (_, _, scrape) = get(&format!("http://127.0.0.1:{metrics_port}/metrics"), None).await;
        up = sample(
            &parse_metrics(dir.path(), &scrape),
            "mcpyard_upstream_up",
            &[("source", "everything")],
        );
    }
    assert_eq!(up, Some(1.0));
}

/// The Python SDK's Streamable HTTP server of support/traced_upstream.py.
async fn start_traced_upstream(dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(support_file("traced_upstream.py"))
        .arg(port.to_string());
    let p = Proc::spawn("traced upstream", cmd, &dir.join("traced-upstream.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port)
}

async fn start_otlp_receiver(dir: &Path) -> (Proc, u16, std::path::PathBuf) {
    let port = free_port();
    let spans = dir.join("spans.jsonl");
    let mut cmd = Command::new(python());
    cmd.arg(support_file("otlp_receiver.py"))
        .arg(port.to_string())
        .arg(&spans);
    let p = Proc::spawn("otlp receiver", cmd, &dir.join("otlp-receiver.log"));
    wait_port(port, Duration::from_secs(30)).await;
    (p, port, spans)
}

/// Waits until the receiver holds a span matching `wanted`; returns all.
async fn spans_until(file: &Path, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let spans: Vec<Value> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON span"))
            .collect();
        if spans.iter().any(&wanted) {
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "no such span within 30 s; got {spans:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_traced_from_the_client_request_to_the_http_upstream() {
    let dir = scratch();
    let (_upstream, upstream_port) = start_traced_upstream(dir.path()).await;
    let (_receiver, receiver_port, spans_file) = start_otlp_receiver(dir.path()).await;
    let config = format!(
        "[servers.traced]\nurl = \"http://127.0.0.1:{upstream_port}/mcp\"\n\n\
         [telemetry]\notlp_endpoint = \"http://127.0.0.1:{receiver_port}\"\nservice_name = \"mcpyard-test\"\n"
    );
    // Exported every 100 ms rather than every 5 s.
    let gateway =
        Gateway::start_with_env(&config, dir.path(), &[("OTEL_BSP_SCHEDULE_DELAY", "100")]).await;
    let client = gateway
        .client(Arc::new(Recorder::default()), json!({}))
        .await;
    wait_for_tools(&client, &["traced__trace_context"], Duration::from_secs(30)).await;

    // The client's own trace: the gateway's spans join it.
    let client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let result = call(&client, "traced__trace_context", json!({})).await;
    let untraced_parent = first_text(&result);
    let result = client
        .request(
            "tools/call",
            Some(json!({
                "name": "traced__trace_context",
                "arguments": {},
                "_meta": {"traceparent": format!("00-{client_trace}-{client_span}-01")},
            })),
            RequestOptions {
                timeout: Some(Duration::from_secs(30)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .expect("the traced call");
    let seen: Value = serde_json::from_str(first_text(&result)).expect("the upstream's JSON");
    let header = seen["header"]
        .as_str()
        .expect("a traceparent header reached the upstream");
    assert_eq!(
        seen["meta"].as_str(),
        Some(header),
        "the header and _meta carry the same context"
    );
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "{header}");
    assert_eq!(
        parts[1], client_trace,
        "the upstream is in the client's trace"
    );

    let call_span_id = parts[2].to_owned();
    spans_until(&spans_file, |s| s["span_id"] == call_span_id.as_str()).await;
    let spans = spans_until(&spans_file, |s| {
        s["trace_id"] == client_trace && s["parent_span_id"] == client_span
    })
    .await;
    let call_span = spans
        .iter()
        .find(|s| s["span_id"] == call_span_id.as_str())
        .expect("the upstream's parent span was exported");
    assert_eq!(call_span["trace_id"], client_trace);
    assert_eq!(call_span["name"], "tools/call traced__trace_context");
    assert_eq!(call_span["kind"], 3, "SPAN_KIND_CLIENT");
    assert_eq!(call_span["service"], "mcpyard-test");
    assert_eq!(call_span["attributes"]["rpc.service"], "traced");
    assert_eq!(call_span["attributes"]["mcp.outcome"], "ok");
    let request_span = spans
        .iter()
        .find(|s| s["span_id"] == call_span["parent_span_id"])
        .expect("the call's parent, the client request's span, was exported");
    assert_eq!(request_span["name"], "tools/call");
    assert_eq!(request_span["kind"], 2, "SPAN_KIND_SERVER");
    assert_eq!(request_span["trace_id"], client_trace);
    assert_eq!(
        request_span["parent_span_id"], client_span,
        "child of the client's span"
    );

    // A task the gateway runs: its call is traced under the request that
    // created it, though that request was answered first.
    let task_trace = "0af7651916cd43dd8448eb211c80319c";
    let created = client
        .request(
            "tools/call",
            Some(json!({
                "name": "traced__trace_context",
                "arguments": {},
                "task": {"ttl": 60000},
                "_meta": {"traceparent": format!("00-{task_trace}-b7ad6b7169203331-01")},
            })),
            RequestOptions::default(),
        )
        .await
        .expect("a task is created");
    let task_id = created["task"]["taskId"].as_str().expect("a task id");
    let outcome = client
        .request(
            "tasks/result",
            Some(json!({"taskId": task_id})),
            RequestOptions {
                timeout: Some(Duration::from_secs(30)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .expect("the task's result");
    let seen: Value = serde_json::from_str(first_text(&outcome)).expect("the upstream's JSON");
    let header = seen["header"]
        .as_str()
        .expect("the task's call carried a traceparent");
    assert_eq!(header.split('-').nth(1), Some(task_trace), "{header}");

    // The first call carried no context: a trace of the gateway's own,
    // with its request span as the root.
    let first: Value = serde_json::from_str(untraced_parent).expect("the upstream's JSON");
    let first_header = first["header"].as_str().expect("a traceparent header");
    let first_trace = first_header
        .split('-')
        .nth(1)
        .expect("a trace id")
        .to_owned();
    assert_ne!(first_trace, client_trace);
    let spans = spans_until(&spans_file, |s| {
        s["trace_id"] == first_trace.as_str() && s["parent_span_id"] == ""
    })
    .await;
    let root = spans
        .iter()
        .find(|s| s["trace_id"] == first_trace.as_str() && s["parent_span_id"] == "")
        .expect("a root span");
    assert_eq!(root["name"], "tools/call");
}

/// A 1×1 PNG.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_tokens_and_stateless_sessions_are_counted() {
    let dir = scratch();
    // An OpenAI-compatible server that reports 10 tokens in, 5 out.
    let (_vision, vision_port) = start_vision_fixture(dir.path()).await;
    let config = format!(
        "[inference]\nbackends = [{{ name = \"vision\", kind = \"openai\", url = \"http://127.0.0.1:{vision_port}\" }}]\n\n[metrics]\nenabled = true\n"
    );
    let gateway = Gateway::start(&config, dir.path()).await;
    // A client of the stateless era: each request is a session of its own.
    let client = McpClient::connect(
        TransportSpec::StreamableHttp {
            url: gateway.url(),
            headers: vec![],
        },
        Arc::new(Recorder::default()),
        mcpyard_client::ConnectOptions {
            era: mcpyard_client::EraPolicy::Auto,
            label: "stateless-client".into(),
            ..mcpyard_client::ConnectOptions::default()
        },
    )
    .await
    .expect("connect in the stateless era");
    assert_eq!(client.protocol_version(), "2026-07-28");
    let described = call(
        &client,
        "local__analyze_image",
        json!({"task": "describe", "images": [{"data": PIXEL_PNG, "mimeType": "image/png"}]}),
    )
    .await;
    assert!(
        first_text(&described).contains("fixture saw 1 image(s)"),
        "{described}"
    );

    let (status, _, scrape) =
        get(&format!("http://127.0.0.1:{}/metrics", gateway.port), None).await;
    assert_eq!(status, 200, "{scrape}");
    let samples = parse_metrics(dir.path(), &scrape);
    let tokens = |direction: &str| {
        samples
            .iter()
            .filter(|s| {
                s["name"] == "mcpyard_model_tokens_total" && s["labels"]["direction"] == direction
            })
            .filter_map(|s| s["value"].as_f64())
            .sum::<f64>()
    };
    assert_eq!(tokens("input"), 10.0, "{scrape}");
    assert_eq!(tokens("output"), 5.0, "{scrape}");
    let stateless = sample(
        &samples,
        "mcpyard_sessions_started_total",
        &[("era", "2026-07-28")],
    );
    assert!(
        stateless >= Some(2.0),
        "discovery and the call, each a session:\n{scrape}"
    );
    assert_eq!(
        sample(&samples, "mcpyard_sessions", &[("era", "2026-07-28")]),
        Some(0.0),
        "a stateless session lives for its request only:\n{scrape}"
    );
}
