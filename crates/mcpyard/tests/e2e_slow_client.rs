//! A client that stops reading slows only itself: while one client leaves
//! an answer stream full of progress unread, another client's calls to the
//! same upstream are answered and the upstream is never restarted.
//!
//! The stalled client talks raw HTTP over a socket with the smallest receive
//! buffer the kernel allows, and asks for far more progress than every
//! buffer between the upstream and its socket can hold (the gateway's
//! channel, hyper's write buffer, the kernel's send and receive buffers), so
//! that the stall reaches the gateway and must be absorbed there.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpyard_client::{ClientHandler, ConnectOptions, McpClient, RequestOptions, TransportSpec};
use mcpyard_proto::{ErrorObject, RequestId};
use serde_json::{json, Value};
use socket2::{Domain, Socket, Type};
use support::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Room in the channel of one POST's SSE answer (`RELATED_CAPACITY` of the
/// server crate's reply.rs).
const POST_STREAM_CAPACITY: usize = 64;
/// Room in the channel of a session's GET stream (`STREAM_CAPACITY` of the
/// server crate's streamable.rs).
const GET_STREAM_CAPACITY: usize = 256;
/// The most hyper buffers for writing one connection (its
/// `DEFAULT_MAX_BUFFER_SIZE`).
const HYPER_WRITE_BUFFER: usize = 8192 + 4096 * 100;
/// Size of the progress token the stalled client sends: every progress
/// event it is sent carries it, so byte buffers hold few events.
const TOKEN_BYTES: usize = 64 * 1024;
/// How long each call of the client that does read may take.
const LIVENESS: Duration = Duration::from_secs(5);
/// Seconds between two progress notifications of the upstream.
const STEP_SECONDS: f64 = 0.004;

/// The stall tests run one at a time: each loads both cores with a flood of
/// progress, and the liveness bound is about the gateway, not the machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How many progress notifications fill `channel_capacity` plus every byte
/// buffer of the stalled connection ten times over.
fn ten_times_the_buffers(channel_capacity: usize, receive_buffer: usize) -> usize {
    let send_buffer_max = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|s| s.split_whitespace().nth(2)?.parse::<usize>().ok())
        .expect("read the largest TCP send buffer from /proc/sys/net/ipv4/tcp_wmem");
    let bytes = send_buffer_max + receive_buffer + HYPER_WRITE_BUFFER;
    // One more for the event the SSE stream itself holds.
    let events = channel_capacity + bytes.div_ceil(TOKEN_BYTES) + 1;
    10 * events
}

/// A loopback connection with the smallest receive buffer the kernel
/// allows, and that size.
fn small_window_connection(port: u16) -> (TcpStream, usize) {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    // The kernel raises this to its minimum; set before connecting so the
    // advertised window stays that small.
    socket.set_recv_buffer_size(1).expect("SO_RCVBUF");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    socket
        .connect(&addr.into())
        .expect("connect to the gateway");
    let receive_buffer = socket.recv_buffer_size().expect("read SO_RCVBUF");
    socket.set_nonblocking(true).expect("non-blocking");
    let stream = TcpStream::from_std(socket.into()).expect("a tokio stream");
    (stream, receive_buffer)
}

/// A Streamable HTTP session opened by hand, for requests sent raw.
struct RawSession {
    port: u16,
    id: String,
}

fn raw_request(port: u16, method: &str, session: Option<&str>, accept: &str, body: &str) -> String {
    raw_request_to(port, method, "/mcp", session, accept, body)
}

fn raw_request_to(
    port: u16,
    method: &str,
    path: &str,
    session: Option<&str>,
    accept: &str,
    body: &str,
) -> String {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\nConnection: close\r\nMCP-Protocol-Version: {}\r\n",
        mcpyard_proto::LATEST_STATEFUL
    );
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    head.push_str(body);
    head
}

/// An HTTP/1.1 answer read to the end of its connection.
struct RawResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON of every `data:` line of an SSE body.
    fn sse_messages(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad SSE data ({e})")))
            .collect()
    }
}

/// Reads an answer until the server closes the connection.
async fn read_response(stream: &mut (impl AsyncRead + Unpin), within: Duration) -> RawResponse {
    let mut raw = Vec::new();
    tokio::time::timeout(within, stream.read_to_end(&mut raw))
        .await
        .unwrap_or_else(|_| panic!("the answer did not end within {within:?}"))
        .expect("read the answer");
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> RawResponse {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    RawResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return body;
        };
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).expect("a chunk size");
        if size == 0 {
            return body;
        }
        let start = eol + 2;
        // A stream read only in part ends in the middle of a chunk.
        let Some(chunk) = rest.get(start..start + size) else {
            body.extend_from_slice(&rest[start.min(rest.len())..]);
            return body;
        };
        body.extend_from_slice(chunk);
        rest = rest.get(start + size + 2..).unwrap_or_default();
    }
}

/// Sends one request on a fresh connection and reads its whole answer.
async fn exchange(port: u16, request: &str) -> RawResponse {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the gateway");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    read_response(&mut stream, Duration::from_secs(30)).await
}

impl RawSession {
    async fn open(port: u16) -> RawSession {
        let init = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": mcpyard_proto::LATEST_STATEFUL,
                "capabilities": {},
                "clientInfo": {"name": "stalled-client", "version": "1"}
            }
        });
        let accept = "application/json, text/event-stream";
        let r = exchange(
            port,
            &raw_request(port, "POST", None, accept, &init.to_string()),
        )
        .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let id = r
            .header("mcp-session-id")
            .expect("a session id for a stateful initialize")
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = exchange(
            port,
            &raw_request(port, "POST", Some(&id), accept, &initialized.to_string()),
        )
        .await;
        assert_eq!(r.status, 202);
        RawSession { port, id }
    }

    /// A `tools/call` of the long-running operation asking for progress.
    fn long_operation(&self, accept: &str, steps: usize) -> String {
        let call = long_operation_call(steps);
        raw_request(self.port, "POST", Some(&self.id), accept, &call.to_string())
    }
}

fn long_operation_call(steps: usize) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "every__trigger-long-running-operation",
            "arguments": {"duration": steps as f64 * STEP_SECONDS, "steps": steps},
            "_meta": {"progressToken": format!("stalled-{}", "x".repeat(TOKEN_BYTES))}
        }
    })
}

fn restarts(status: &Value, server: &str) -> u64 {
    status["structuredContent"]["sources"]
        .as_array()
        .expect("status lists its sources")
        .iter()
        .find(|s| s["name"] == json!(server))
        .and_then(|s| s["restarts"].as_u64())
        .unwrap_or_else(|| panic!("no restart count for {server}: {status}"))
}

/// Calls `echo` on the shared upstream until `until`, then once more; every
/// call must be answered within [`LIVENESS`]. Returns how many were made
/// and the slowest answer's time.
async fn echo_stays_live(client: &McpClient, until: Instant) -> (usize, Duration) {
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut n = 0;
    loop {
        n += 1;
        let message = format!("live {n}");
        let asked = Instant::now();
        let answer = tokio::time::timeout(
            LIVENESS,
            client.request(
                "tools/call",
                Some(json!({"name": "every__echo", "arguments": {"message": message}})),
                RequestOptions::default(),
            ),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "echo #{n} was not answered within {LIVENESS:?} while another client stalled ({:?} into the stall)",
                asked - started
            )
        })
        .unwrap_or_else(|e| panic!("echo #{n} failed: {e}"));
        assert_eq!(first_text(&answer), format!("Echo: {message}"), "{answer}");
        slowest = slowest.max(asked.elapsed());
        eprintln!("echo {n} took {:?}", asked.elapsed());
        if Instant::now() > until {
            return (n, slowest);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Checks the progress a stalled stream carried once it is read: fewer than
/// were sent (the overflow was dropped or coalesced, not queued without
/// bound), in order, each with the client's own token.
fn check_thinned_progress(messages: &[Value], steps: usize) -> usize {
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == json!("notifications/progress"))
        .map(|m| {
            let token = m["params"]["progressToken"].as_str().unwrap_or_default();
            assert!(token.starts_with("stalled-x") && token.len() == TOKEN_BYTES + 8);
            m["params"]["progress"].as_f64().expect("a progress value")
        })
        .collect();
    assert!(
        !progress.is_empty(),
        "the stalled stream carried no progress"
    );
    assert!(
        progress.len() < steps,
        "all {steps} progress notifications were kept for a client that did not read"
    );
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress out of order: {progress:?}"
    );
    progress.len()
}

/// The gateway in front of server-everything over stdio, a client of it
/// once the upstream's tools are listed, and the upstream's restart count.
async fn everything_behind_the_gateway(dir: &std::path::Path) -> (Gateway, McpClient, u64) {
    let gw = Gateway::start(&everything_stdio("every"), dir).await;
    let client = gw.client(Arc::new(Recorder::default()), json!({})).await;
    wait_for_tools(
        &client,
        &["every__echo", "every__trigger-long-running-operation"],
        Duration::from_secs(60),
    )
    .await;
    let restarts = restarts(&call(&client, "mcpyard__status", json!({})).await, "every");
    (gw, client, restarts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_its_answer_stream_does_not_stall_the_upstream() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = scratch();
    let (gw, client, restarts_before) = everything_behind_the_gateway(dir.path()).await;

    let stalled = RawSession::open(gw.port).await;
    let (mut socket, receive_buffer) = small_window_connection(gw.port);
    let steps = ten_times_the_buffers(POST_STREAM_CAPACITY, receive_buffer);
    let request = stalled.long_operation("text/event-stream", steps);
    socket
        .write_all(request.as_bytes())
        .await
        .expect("send the call");
    let duration = Duration::from_secs_f64(steps as f64 * STEP_SECONDS);
    eprintln!("stalled: {steps} progress notifications over {duration:?}, receive buffer {receive_buffer} bytes");

    // The stalled client reads nothing until the operation is over.
    let (calls, slowest) =
        echo_stays_live(&client, Instant::now() + duration + Duration::from_secs(1)).await;
    let status = call(&client, "mcpyard__status", json!({})).await;
    assert_eq!(restarts(&status, "every"), restarts_before, "{status}");

    let answer = read_response(&mut socket, Duration::from_secs(60)).await;
    assert_eq!(answer.status, 200);
    let messages = answer.sse_messages();
    let kept = check_thinned_progress(&messages, steps);
    let last = messages.last().expect("the stream ends with the answer");
    assert_eq!(last["id"], json!(2), "{last}");
    assert!(
        first_text(&last["result"]).starts_with("Long running operation completed"),
        "{last}"
    );
    eprintln!("{calls} echo calls answered, the slowest in {slowest:?}; the stalled stream kept {kept} of {steps} progress notifications");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_its_session_stream_does_not_stall_the_upstream() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = scratch();
    let (gw, client, restarts_before) = everything_behind_the_gateway(dir.path()).await;

    // The GET stream is opened and its head read, so it is attached before
    // the call; after that it is never read.
    let stalled = RawSession::open(gw.port).await;
    let (mut get_stream, receive_buffer) = small_window_connection(gw.port);
    let get = raw_request(gw.port, "GET", Some(&stalled.id), "text/event-stream", "");
    get_stream
        .write_all(get.as_bytes())
        .await
        .expect("open the GET stream");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(10), get_stream.read_exact(&mut byte))
            .await
            .expect("the GET stream's head within 10 s")
            .expect("read the GET stream's head");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );

    // A JSON-only POST has no stream of its own: its progress goes on the
    // session's GET stream.
    let steps = ten_times_the_buffers(GET_STREAM_CAPACITY, receive_buffer);
    let request = stalled.long_operation("application/json", steps);
    let port = gw.port;
    let json_call = tokio::spawn(async move { exchange(port, &request).await });
    let duration = Duration::from_secs_f64(steps as f64 * STEP_SECONDS);
    eprintln!("stalled: {steps} progress notifications over {duration:?}, receive buffer {receive_buffer} bytes");

    let (calls, slowest) =
        echo_stays_live(&client, Instant::now() + duration + Duration::from_secs(1)).await;
    let status = call(&client, "mcpyard__status", json!({})).await;
    assert_eq!(restarts(&status, "every"), restarts_before, "{status}");

    let answer = tokio::time::timeout(Duration::from_secs(60), json_call)
        .await
        .expect("the JSON answer within 60 s")
        .expect("the JSON call's task");
    let answer: Value = serde_json::from_slice(&answer.body).expect("a JSON answer");
    assert!(
        first_text(&answer["result"]).starts_with("Long running operation completed"),
        "{answer}"
    );

    // Now read what the session stream kept, until it has been quiet a while.
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(Ok(n)) =
        tokio::time::timeout(Duration::from_secs(2), get_stream.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let mut body = head;
    body.extend_from_slice(&raw);
    let messages = parse_response(&body).sse_messages_until_cut();
    let kept = check_thinned_progress(&messages, steps);
    eprintln!("{calls} echo calls answered, the slowest in {slowest:?}; the stalled stream kept {kept} of {steps} progress notifications");
    client.shutdown().await;
}

impl RawResponse {
    /// Like [`RawResponse::sse_messages`] for a stream read only in part:
    /// an event cut off at the end is left out.
    fn sse_messages_until_cut(&self) -> Vec<Value> {
        let text = String::from_utf8_lossy(&self.body);
        text.split("\n\n")
            .flat_map(|event| event.lines())
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }
}

/// Room in the channel of a legacy SSE stream (`STREAM_CAPACITY` of the
/// server crate's legacy_sse.rs).
const LEGACY_STREAM_CAPACITY: usize = 256;

/// Reads `stream` into `seen` until `done` finds what it waits for in the
/// bytes read so far, and returns its answer.
async fn read_until<T>(
    stream: &mut TcpStream,
    seen: &mut Vec<u8>,
    within: Duration,
    mut done: impl FnMut(&[u8]) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if let Some(found) = done(seen) {
            return found;
        }
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("not seen on the stream within {within:?}"))
            .expect("read the stream");
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
}

/// Where `needle` starts in `haystack`, looking from `from` on.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_client_that_stops_reading_does_not_stall_the_upstream() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = scratch();
    let (gw, client, restarts_before) = everything_behind_the_gateway(dir.path()).await;

    // The stalled client reads its stream only as far as the answer to
    // initialize, then no more.
    let port = gw.port;
    let (mut sse, receive_buffer) = small_window_connection(port);
    let open = raw_request_to(port, "GET", "/sse", None, "text/event-stream", "");
    sse.write_all(open.as_bytes()).await.expect("open /sse");
    let mut seen = Vec::new();
    let within = Duration::from_secs(10);
    let endpoint = read_until(&mut sse, &mut seen, within, |b| {
        let start = find(b, b"data: /messages?", 0)? + "data: ".len();
        let end = find(b, b"\n", start)?;
        Some(String::from_utf8_lossy(&b[start..end]).trim().to_owned())
    })
    .await;
    let post = |body: Value| {
        let request = raw_request_to(
            port,
            "POST",
            &endpoint,
            None,
            "application/json",
            &body.to_string(),
        );
        async move {
            let r = exchange(port, &request).await;
            assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
        }
    };
    post(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "stalled-client", "version": "1"}
        }
    }))
    .await;
    read_until(&mut sse, &mut seen, within, |b| {
        find(b, b"protocolVersion", 0)
    })
    .await;
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let steps = ten_times_the_buffers(LEGACY_STREAM_CAPACITY, receive_buffer);
    post(long_operation_call(steps)).await;
    let duration = Duration::from_secs_f64(steps as f64 * STEP_SECONDS);
    eprintln!("stalled: {steps} progress notifications over {duration:?}, receive buffer {receive_buffer} bytes");

    let (calls, slowest) =
        echo_stays_live(&client, Instant::now() + duration + Duration::from_secs(1)).await;
    let status = call(&client, "mcpyard__status", json!({})).await;
    assert_eq!(restarts(&status, "every"), restarts_before, "{status}");

    // The answer travels on the stream too: it comes once the client reads.
    let mut from = 0;
    read_until(&mut sse, &mut seen, Duration::from_secs(60), |b| {
        let Some(answer) = find(b, b"Long running operation completed", from) else {
            // Looked at once is enough, but for a needle cut at the end.
            from = b.len().saturating_sub(64);
            return None;
        };
        from = answer;
        find(b, b"\n\n", answer)
    })
    .await;
    let messages = parse_response(&seen).sse_messages_until_cut();
    let kept = check_thinned_progress(&messages, steps);
    let last = messages.last().expect("the answer");
    assert_eq!(last["id"], json!(2), "{last}");
    assert!(
        first_text(&last["result"]).starts_with("Long running operation completed"),
        "{last}"
    );
    eprintln!("{calls} echo calls answered, the slowest in {slowest:?}; the stalled stream kept {kept} of {steps} progress notifications");
    client.shutdown().await;
}

/// A client handler that never finishes taking a progress notification.
struct StuckOnProgress;

#[async_trait::async_trait]
impl ClientHandler for StuckOnProgress {
    async fn on_request(
        &self,
        method: &str,
        _params: Option<Value>,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        Err(ErrorObject::method_not_found(method))
    }

    async fn on_notification(&self, method: &str, _: Option<Value>, _: Option<RequestId>) {
        if method == "notifications/progress" {
            std::future::pending::<()>().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_notification_handler_does_not_hold_up_answers() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let client = McpClient::connect(
        TransportSpec::Stdio {
            command: node().display().to_string(),
            args: vec![everything_js().display().to_string()],
            env: BTreeMap::new(),
            inherit_env: vec![],
            cwd: None,
        },
        Arc::new(StuckOnProgress),
        ConnectOptions {
            label: "everything".into(),
            ..ConnectOptions::default()
        },
    )
    .await
    .expect("connect to server-everything");
    let long = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .request(
                    "tools/call",
                    Some(json!({
                        "name": "trigger-long-running-operation",
                        "arguments": {"duration": 2, "steps": 200},
                        "_meta": {"progressToken": "p"}
                    })),
                    RequestOptions::default(),
                )
                .await
        })
    };
    // Progress comes every hundredth of a second: more than the client
    // leaves to finish on their own at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for n in 0..5 {
        let message = format!("still answered {n}");
        let answer = tokio::time::timeout(
            LIVENESS,
            client.request(
                "tools/call",
                Some(json!({"name": "echo", "arguments": {"message": message}})),
                RequestOptions::default(),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("echo #{n} waited on a stuck notification handler"))
        .expect("echo");
        assert_eq!(first_text(&answer), format!("Echo: {message}"));
    }
    let done = tokio::time::timeout(Duration::from_secs(10), long)
        .await
        .expect("the long operation's answer despite the stuck handler")
        .expect("its task")
        .expect("the long operation");
    assert!(
        first_text(&done).starts_with("Long running operation completed"),
        "{done}"
    );
    client.shutdown().await;
}
