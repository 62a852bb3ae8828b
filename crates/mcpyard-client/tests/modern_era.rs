//! The 2026-07-28 era against real servers: `mcp-server-time` and a small
//! server of our own, both built on the Python SDK 2.x, over stdio and
//! Streamable HTTP; and server-everything (TypeScript SDK), which does not
//! speak that era, falling back to the handshake.

mod common;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{everything_js, first_text, names, node, workspace_root, Seen};
use mcpyard_client::{
    ClientError, ClientHandler, ConnectOptions, EraPolicy, McpClient, RequestOptions,
    TransportSpec, MODERN_PROTOCOL_VERSION,
};
use mcpyard_proto::{ErrorObject, RequestId};
use mcpyard_testkit::free_port;
use serde_json::{json, Value};

/// Every call of a test is bounded by this.
const LIMIT: Duration = Duration::from_secs(30);

fn auto() -> ConnectOptions {
    ConnectOptions {
        label: "modern-test".into(),
        connect_timeout: LIMIT,
        capabilities: json!({"sampling": {}, "elicitation": {"form": {}}}),
        era: EraPolicy::Auto,
        ..ConnectOptions::default()
    }
}

fn python(venv: &str) -> String {
    let path = workspace_root().join(format!(".tools/{venv}/bin/python"));
    assert!(path.exists(), "{} is missing", path.display());
    path.display().to_string()
}

fn modern_server_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/py2_modern_server.py")
}

fn stdio(command: String, args: Vec<String>) -> TransportSpec {
    TransportSpec::Stdio {
        command,
        args,
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    }
}

fn time_server() -> TransportSpec {
    stdio(
        python("venv-time"),
        ["-m", "mcp_server_time", "--local-timezone", "UTC"]
            .map(String::from)
            .to_vec(),
    )
}

fn modern_server_stdio() -> TransportSpec {
    stdio(
        python("venv"),
        vec![modern_server_script().display().to_string(), "stdio".into()],
    )
}

/// A server process started by a test: killed and reaped on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts connections on `port` (127.0.0.1).
fn wait_for_port(port: u16, process: &mut Process) {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let start = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = process.0.try_wait() {
            panic!("the server exited before listening: {status}");
        }
        assert!(
            start.elapsed() < LIMIT,
            "nothing listened on port {port} in time"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Our Python SDK 2.x server over Streamable HTTP on a loopback port.
fn start_modern_server_http() -> (Process, TransportSpec) {
    start_modern_server_http_on(free_port())
}

fn start_modern_server_http_on(port: u16) -> (Process, TransportSpec) {
    let child = Command::new(python("venv"))
        .arg(modern_server_script())
        .arg("http")
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python server");
    let mut process = Process(child);
    wait_for_port(port, &mut process);
    let spec = TransportSpec::StreamableHttp {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: vec![],
    };
    (process, spec)
}

/// Answers sampling with a fixed model reply and elicitation with a fixed
/// name (or refuses elicitation), and records what it was asked and told.
#[derive(Debug, Default)]
struct Answering {
    refuse_elicitation: bool,
    /// Never answers elicitation.
    stall_elicitation: bool,
    asked: Mutex<Vec<Seen>>,
    notified: Mutex<Vec<String>>,
}

impl Answering {
    fn asked(&self) -> Vec<Seen> {
        self.asked.lock().expect("not poisoned").clone()
    }

    fn notified(&self, method: &str) -> usize {
        let notified = self.notified.lock().expect("not poisoned");
        notified.iter().filter(|m| *m == method).count()
    }
}

#[async_trait]
impl ClientHandler for Answering {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        self.asked.lock().expect("not poisoned").push(Seen {
            method: method.to_owned(),
            params,
            related,
        });
        match method {
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "forty-two"},
                "model": "test-model",
            })),
            "elicitation/create" if self.stall_elicitation => std::future::pending().await,
            "elicitation/create" if self.refuse_elicitation => {
                Err(ErrorObject::new(-32042, "the user is away"))
            }
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Ada"}})),
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(&self, method: &str, _: Option<Value>, _: Option<RequestId>) {
        self.notified
            .lock()
            .expect("not poisoned")
            .push(method.to_owned());
    }
}

fn bounded() -> RequestOptions {
    RequestOptions::default().with_timeout(LIMIT)
}

async fn call(client: &McpClient, name: &str, arguments: Value) -> Result<Value, ClientError> {
    client
        .request(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments})),
            bounded(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_server_over_stdio_is_spoken_to_in_the_modern_era() {
    let client = McpClient::connect(time_server(), Arc::new(Answering::default()), auto())
        .await
        .expect("connect to mcp-server-time");
    assert_eq!(client.protocol_version(), MODERN_PROTOCOL_VERSION);
    assert!(client.is_modern());
    let described = client.initialize_result();
    assert_eq!(described["protocolVersion"], MODERN_PROTOCOL_VERSION);
    assert!(
        described["capabilities"]["tools"].is_object(),
        "{described}"
    );
    assert_eq!(described["serverInfo"]["name"], "mcp-time", "{described}");

    let tools = client
        .list_all("tools/list", "tools")
        .await
        .expect("list tools");
    let names = names(&tools);
    assert!(names.contains(&"convert_time"), "tools: {names:?}");
    assert!(names.contains(&"get_current_time"), "tools: {names:?}");

    let converted = call(
        &client,
        "convert_time",
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    )
    .await
    .expect("convert_time");
    assert_ne!(converted["isError"], true, "{converted}");
    let text: Value = serde_json::from_str(first_text(&converted)).expect("the tool answers JSON");
    assert_eq!(text["target"]["timezone"], "Asia/Tokyo", "{text}");
    assert!(
        text["target"]["datetime"]
            .as_str()
            .is_some_and(|t| t.contains("T21:00:00")),
        "{text}"
    );

    client
        .check_alive(bounded())
        .await
        .expect("server/discover answers");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handshake_policy_keeps_the_handshake() {
    let client = McpClient::connect(
        time_server(),
        Arc::new(Answering::default()),
        ConnectOptions {
            era: EraPolicy::Handshake,
            ..auto()
        },
    )
    .await
    .expect("connect to mcp-server-time");
    assert!(!client.is_modern());
    assert_ne!(client.protocol_version(), MODERN_PROTOCOL_VERSION);
    let tools = client
        .list_all("tools/list", "tools")
        .await
        .expect("list tools");
    assert!(names(&tools).contains(&"convert_time"));
    client.check_alive(bounded()).await.expect("ping answers");
    client.shutdown().await;
}

/// Calls `consult`, which the server answers `input_required` (sampling and
/// elicitation) until the retry carries both answers.
async fn input_required_reaches_the_handler(spec: TransportSpec) {
    let handler = Arc::new(Answering::default());
    let client = McpClient::connect(spec, handler.clone(), auto())
        .await
        .expect("connect to the Python SDK 2.x server");
    assert_eq!(client.protocol_version(), MODERN_PROTOCOL_VERSION);

    let mut sent_as = None;
    let result = client
        .request_with_id(
            "tools/call",
            Some(json!({"name": "consult", "arguments": {"question": "the meaning?"}})),
            bounded(),
            |id| sent_as = Some(id),
        )
        .await
        .expect("consult")
        .into_value();
    assert_eq!(
        first_text(&result),
        "model said forty-two; user is Ada",
        "{result}"
    );

    let asked = handler.asked();
    let mut methods: Vec<&str> = asked.iter().map(|a| a.method.as_str()).collect();
    methods.sort_unstable();
    assert_eq!(methods, ["elicitation/create", "sampling/createMessage"]);
    let sampling = asked
        .iter()
        .find(|a| a.method == "sampling/createMessage")
        .expect("asked to sample");
    let params = sampling.params.as_ref().expect("sampling params");
    assert_eq!(params["messages"][0]["content"]["text"], "the meaning?");
    assert!(sent_as.is_some());
    assert!(
        asked.iter().all(|a| a.related == sent_as),
        "input requests are tied to the request that caused them: {asked:?}, sent as {sent_as:?}"
    );

    // A plain tool in the same era needs no input.
    let reversed = call(&client, "reverse", json!({"text": "abc"}))
        .await
        .expect("reverse");
    assert_eq!(first_text(&reversed), "cba");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_over_stdio_is_answered_by_the_handler() {
    input_required_reaches_the_handler(modern_server_stdio()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_over_streamable_http_is_answered_by_the_handler() {
    let (_server, spec) = start_modern_server_http();
    input_required_reaches_the_handler(spec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_input_request_fails_the_call_with_the_handlers_error() {
    let handler = Arc::new(Answering {
        refuse_elicitation: true,
        ..Answering::default()
    });
    let client = McpClient::connect(modern_server_stdio(), handler, auto())
        .await
        .expect("connect");
    let err = call(&client, "consult", json!({"question": "q"}))
        .await
        .expect_err("the elicitation was refused");
    match err {
        ClientError::Rpc(e) => {
            assert_eq!(e.code, -32042);
            assert_eq!(e.message, "the user is away");
        }
        other => panic!("expected the handler's error, got {other:?}"),
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_timeout_covers_the_handlers_answers() {
    let handler = Arc::new(Answering {
        stall_elicitation: true,
        ..Answering::default()
    });
    let client = McpClient::connect(modern_server_stdio(), handler, auto())
        .await
        .expect("connect");
    let started = Instant::now();
    let err = client
        .request(
            "tools/call",
            Some(json!({"name": "consult", "arguments": {"question": "q"}})),
            RequestOptions {
                timeout: Some(Duration::from_secs(1)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .expect_err("the handler never answers");
    assert!(
        matches!(err, ClientError::Timeout(t) if t == Duration::from_secs(1)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    client.shutdown().await;
}

/// `grow` adds a tool and announces it to listeners: the announcement
/// reaches the handler as `notifications/tools/list_changed`.
async fn list_changes_reach_the_handler(spec: TransportSpec) {
    let handler = Arc::new(Answering::default());
    let client = McpClient::connect(spec, handler.clone(), auto())
        .await
        .expect("connect");
    // The listen stream opens in the background and the server replays
    // nothing to a late listener: announce until the announcement arrives.
    let start = Instant::now();
    while handler.notified("notifications/tools/list_changed") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no tools/list_changed reached the handler"
        );
        let grew = call(&client, "grow", json!({})).await.expect("grow");
        assert_eq!(first_text(&grew), "grew");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        handler.notified("notifications/subscriptions/acknowledged"),
        0,
        "the listen stream's own acknowledgment is not the application's business"
    );
    let tools = client
        .list_all("tools/list", "tools")
        .await
        .expect("list tools");
    assert!(names(&tools).contains(&"grown"));
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_over_stdio_arrive_on_the_listen_stream() {
    list_changes_reach_the_handler(modern_server_stdio()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_over_streamable_http_arrive_on_the_listen_stream() {
    let (_server, spec) = start_modern_server_http();
    list_changes_reach_the_handler(spec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listen_stream_is_opened_again_after_the_server_restarts() {
    let port = free_port();
    let (server, spec) = start_modern_server_http_on(port);
    let handler = Arc::new(Answering::default());
    let client = McpClient::connect(spec, handler.clone(), auto())
        .await
        .expect("connect");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The era has no session: the same client goes on with the new process,
    // once its listen stream, broken by the restart, is open again.
    drop(server);
    let (_server, _) = start_modern_server_http_on(port);
    let start = Instant::now();
    while handler.notified("notifications/tools/list_changed") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no tools/list_changed reached the handler after the restart"
        );
        call(&client, "grow", json!({})).await.expect("grow");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(!client.is_closed());
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_not_posted_to_a_modern_http_server() {
    let (_server, spec) = start_modern_server_http();
    let client = McpClient::connect(spec, Arc::new(Answering::default()), auto())
        .await
        .expect("connect");
    // The era's HTTP wire has no client notifications (the server would
    // refuse the POST for want of a session); the gateway forwards roots
    // changes to every upstream whatever its era.
    client
        .notify("notifications/roots/list_changed", None)
        .await
        .expect("nothing to send is no failure");
    let reversed = call(&client, "reverse", json!({"text": "ok"}))
        .await
        .expect("reverse");
    assert_eq!(first_text(&reversed), "ko");
    client.shutdown().await;
}

fn group_exists(pgid: u32) -> bool {
    let pgid = i32::try_from(pgid).expect("a pid fits in i32");
    assert!(pgid > 1);
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::killpg(pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_ends_the_server_despite_the_open_listen_stream() {
    let handler = Arc::new(Answering::default());
    let client = McpClient::connect(modern_server_stdio(), handler, auto())
        .await
        .expect("connect");
    // Let the listen stream (a request that never ends) be open.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pgid = client.process_id().expect("a child process");
    assert!(group_exists(pgid));
    drop(client);
    let start = Instant::now();
    while group_exists(pgid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the server outlived its last client handle"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_round_hands_input_required_to_the_caller() {
    let handler = Arc::new(Answering::default());
    let client = McpClient::connect(modern_server_stdio(), handler.clone(), auto())
        .await
        .expect("connect");
    let params = json!({"name": "consult", "arguments": {"question": "q"}});
    let first = client
        .request_single_round("tools/call", Some(params.clone()), bounded(), |_| {})
        .await
        .expect("first round")
        .into_value();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let mut keys: Vec<&String> = first["inputRequests"]
        .as_object()
        .expect("input requests")
        .keys()
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["model", "user"]);
    assert!(
        handler.asked().is_empty(),
        "the caller answers, not the handler"
    );

    let mut retry = params;
    retry["inputResponses"] = json!({
        "model": {"role": "assistant", "content": {"type": "text", "text": "seven"}, "model": "m"},
        "user": {"action": "accept", "content": {"name": "Bo"}},
    });
    retry["requestState"] = first["requestState"].clone();
    let done = client
        .request_single_round("tools/call", Some(retry), bounded(), |_| {})
        .await
        .expect("second round")
        .into_value();
    assert_eq!(first_text(&done), "model said seven; user is Bo", "{done}");
    client.shutdown().await;
}

/// server-everything (TypeScript SDK) refuses `server/discover`: in Auto the
/// client falls back to the handshake and works as before.
async fn handshake_fallback_works(spec: TransportSpec) {
    let client = McpClient::connect(spec, Arc::new(Answering::default()), auto())
        .await
        .expect("connect to server-everything");
    assert!(!client.is_modern());
    assert_ne!(client.protocol_version(), MODERN_PROTOCOL_VERSION);
    assert!(mcpyard_proto::is_supported(client.protocol_version()));
    let echoed = call(&client, "echo", json!({"message": "still here"}))
        .await
        .expect("echo");
    assert!(first_text(&echoed).ends_with("still here"), "{echoed}");
    client.check_alive(bounded()).await.expect("ping answers");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_server_over_stdio_falls_back_to_the_handshake() {
    let spec = stdio(
        node().display().to_string(),
        vec![everything_js().display().to_string()],
    );
    handshake_fallback_works(spec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_server_over_streamable_http_falls_back_to_the_handshake() {
    let server = common::start_everything("streamableHttp");
    let spec = TransportSpec::StreamableHttp {
        url: format!("http://127.0.0.1:{}/mcp", server.port),
        headers: vec![],
    };
    handshake_fallback_works(spec).await;
}
