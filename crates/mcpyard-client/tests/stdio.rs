//! The stdio transport against real child processes: server-everything, and
//! small scripted servers that misbehave on purpose.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{everything_stdio, first_text, names, Recorder};
use mcpyard_client::{
    ClientError, ClientState, ConnectOptions, McpClient, RequestOptions, TransportSpec,
};
use serde_json::json;

fn options() -> ConnectOptions {
    ConnectOptions {
        label: "test-stdio".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    }
}

fn group_exists(pgid: u32) -> bool {
    let pgid = i32::try_from(pgid).expect("a pid fits in i32");
    assert!(pgid > 1);
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::killpg(pgid, 0) };
    if rc == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn call(name: &str, arguments: serde_json::Value) -> Option<serde_json::Value> {
    Some(json!({"name": name, "arguments": arguments}))
}

/// server-everything's echo of `message`, within 30 s.
async fn echo(client: &McpClient, message: &str) -> serde_json::Value {
    let options = RequestOptions {
        timeout: Some(Duration::from_secs(30)),
        ..RequestOptions::default()
    };
    client
        .request(
            "tools/call",
            call("echo", json!({ "message": message })),
            options,
        )
        .await
        .expect("echo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_larger_than_the_pipe_and_sent_at_once_arrive_whole_and_in_order() {
    let client = Arc::new(
        McpClient::connect(everything_stdio(), Recorder::new(), options())
            .await
            .expect("connect to server-everything"),
    );
    // Small lines and lines of up to 1 MiB, which a 64 KiB pipe takes in
    // parts, from clients that each send one after the other: small lines
    // keep coming while a large one is being written. Every echo must come
    // back as it was sent.
    let sizes = [
        10,
        70_000,
        20,
        1 << 20,
        5,
        300_000,
        64 * 1024,
        1,
        200_000,
        40,
    ];
    let calls = (0..6).map(|client_no| {
        let client = client.clone();
        async move {
            for (i, &size) in sizes.iter().cycle().skip(client_no).take(8).enumerate() {
                let message = format!("{client_no}.{i}:{}", "abcdefghij".repeat(size / 10 + 1));
                let echo = echo(&client, &message).await;
                let text = first_text(&echo);
                assert!(
                    text.ends_with(&message) && text.len() < message.len() + 16,
                    "call {client_no}.{i} of {size} bytes came back as {} bytes",
                    text.len()
                );
            }
        }
    });
    futures::future::join_all(calls).await;
    // And one after the burst, on a pipe with nothing queued.
    let echo = echo(&client, "after").await;
    assert!(first_text(&echo).ends_with("after"), "{echo}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_calls_times_out_and_shuts_down_its_group() {
    let client = McpClient::connect(everything_stdio(), Recorder::new(), options())
        .await
        .expect("connect to server-everything");
    assert!(client.initialize_result()["serverInfo"]["name"].is_string());
    assert!(!client.protocol_version().is_empty());

    let tools = client
        .list_all("tools/list", "tools")
        .await
        .expect("list tools");
    let names = names(&tools);
    assert!(names.contains(&"echo"), "tools: {names:?}");
    assert!(names.contains(&"get-sum"), "tools: {names:?}");

    let echo = client
        .request(
            "tools/call",
            call("echo", json!({"message": "hello yard"})),
            RequestOptions::default(),
        )
        .await
        .expect("echo");
    assert!(first_text(&echo).contains("hello yard"), "{echo}");

    let sum = client
        .request(
            "tools/call",
            call("get-sum", json!({"a": 2, "b": 3})),
            RequestOptions::default(),
        )
        .await
        .expect("get-sum");
    assert!(first_text(&sum).contains('5'), "{sum}");

    // Concurrent requests over the one connection.
    let (a, b) = tokio::join!(
        client.request(
            "tools/call",
            call("get-sum", json!({"a": 10, "b": 1})),
            RequestOptions::default()
        ),
        client.request(
            "tools/call",
            call("get-sum", json!({"a": 20, "b": 2})),
            RequestOptions::default()
        ),
    );
    assert!(first_text(&a.expect("first")).contains("11"));
    assert!(first_text(&b.expect("second")).contains("22"));

    let timed_out = client
        .request(
            "tools/call",
            call(
                "trigger-long-running-operation",
                json!({"duration": 5, "steps": 5}),
            ),
            RequestOptions {
                timeout: Some(Duration::from_millis(1)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await;
    assert!(
        matches!(timed_out, Err(ClientError::Timeout(_))),
        "{timed_out:?}"
    );

    // A cancelled request, and the connection still serves the next one.
    let token = tokio_util::sync::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let cancelled = client
        .request(
            "tools/call",
            call(
                "trigger-long-running-operation",
                json!({"duration": 5, "steps": 5}),
            ),
            RequestOptions {
                timeout: None,
                cancel: Some(token),
                ..RequestOptions::default()
            },
        )
        .await;
    assert!(
        matches!(cancelled, Err(ClientError::Cancelled)),
        "{cancelled:?}"
    );
    let echo = client
        .request(
            "tools/call",
            call("echo", json!({"message": "still here"})),
            RequestOptions::default(),
        )
        .await
        .expect("echo after a timeout");
    assert!(first_text(&echo).contains("still here"));

    let pgid = client.process_id().expect("a stdio client has a pid");
    assert!(group_exists(pgid));
    let started = Instant::now();
    client.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(client.is_closed());
    assert!(
        !group_exists(pgid),
        "process group {pgid} survived shutdown"
    );
    let after = client
        .request("ping", None, RequestOptions::default())
        .await;
    assert!(
        matches!(
            after,
            Err(ClientError::NotReady {
                state: ClientState::Closed
            })
        ),
        "{after:?}"
    );
}

/// A scripted server: garbage on stdout around valid JSON-RPC, a paged
/// `tools/list`, a request of its own to the client, and a method that makes
/// it exit without answering.
const SCRIPTED_SERVER: &str = r#"
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
print("npm WARN this is not JSON-RPC", flush=True)
print("{broken json", flush=True)
print('{"jsonrpc":"2.0"}', flush=True)
print("", flush=True)
sys.stderr.write("scripted server starting\n"); sys.stderr.flush()
pending_ask = None
last_cancel = None
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "notifications/cancelled":
        last_cancel = msg.get("params")
        continue
    if method is None:
        if mid == "srv-1" and pending_ask is not None:
            send({"jsonrpc": "2.0", "id": pending_ask, "result": {"client_said": msg.get("result")}})
        continue
    if mid is None:
        continue
    if method == "initialize":
        print("garbage between messages", flush=True)
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "0"}}})
    elif method == "tools/list":
        cursor = (msg.get("params") or {}).get("cursor")
        if cursor is None:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}})
    elif method == "ask":
        pending_ask = mid
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "asking"}})
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
    elif method == "fail":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "bad things"}})
    elif method == "slow":
        pass
    elif method == "last_cancel":
        send({"jsonrpc": "2.0", "id": mid, "result": {"cancel": last_cancel}})
    elif method == "die":
        sys.exit(3)
"#;

fn scripted() -> TransportSpec {
    TransportSpec::Stdio {
        command: "python3".into(),
        args: vec!["-u".into(), "-c".into(), SCRIPTED_SERVER.into()],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    }
}

#[tokio::test]
async fn garbage_lines_are_skipped_and_the_session_still_works() {
    let recorder = Recorder::new();
    let client = McpClient::connect(scripted(), recorder.clone(), options())
        .await
        .expect("connect despite garbage on stdout");
    assert_eq!(client.initialize_result()["serverInfo"]["name"], "scripted");

    let tools = client.list_all("tools/list", "tools").await.expect("list");
    assert_eq!(names(&tools), ["a", "b"], "both pages are followed");

    let err = client
        .request("fail", None, RequestOptions::default())
        .await;
    match err {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32602);
            assert_eq!(e.message, "bad things");
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }

    // The server asks the client something while our request is open.
    let answer = client
        .request(
            "ask",
            None,
            RequestOptions {
                timeout: Some(Duration::from_secs(10)),
                cancel: None,
                ..RequestOptions::default()
            },
        )
        .await
        .expect("ask");
    assert_eq!(answer, json!({"client_said": {}}));
    let requests = recorder.requests.lock().expect("not poisoned").clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "ping");
    let logs = recorder.notifications("notifications/message");
    assert_eq!(
        logs.len(),
        1,
        "the notification reached the handler before the answer"
    );

    client.shutdown().await;
}

#[tokio::test]
async fn a_child_that_exits_fails_pending_requests_at_once() {
    let client = McpClient::connect(scripted(), Recorder::new(), options())
        .await
        .expect("connect");
    let pgid = client.process_id().expect("pid");
    let started = Instant::now();
    // No timeout: only the child's death can end this call.
    let died = client.request("die", None, RequestOptions::default()).await;
    assert!(matches!(died, Err(ClientError::Closed)), "{died:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(client.is_closed());
    tokio::time::timeout(Duration::from_secs(1), client.closed())
        .await
        .expect("closed() resolves");
    let next = client
        .request("tools/list", None, RequestOptions::default())
        .await;
    assert!(
        matches!(
            next,
            Err(ClientError::NotReady {
                state: ClientState::Closed
            })
        ),
        "{next:?}"
    );
    client.shutdown().await;
    assert!(!group_exists(pgid));
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_spawn_error() {
    let spec = TransportSpec::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    };
    let err = McpClient::connect(spec, Recorder::new(), options()).await;
    assert!(matches!(err, Err(ClientError::Spawn { .. })), "{err:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out_and_is_killed() {
    let spec = TransportSpec::Stdio {
        command: "sleep".into(),
        args: vec!["30".into()],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    };
    let started = Instant::now();
    let err = McpClient::connect(
        spec,
        Arc::new(mcpyard_client::NoopHandler),
        ConnectOptions {
            connect_timeout: Duration::from_millis(300),
            ..options()
        },
    )
    .await;
    assert!(matches!(err, Err(ClientError::Timeout(_))), "{err:?}");
    // stdin closed → sleep ignores it → SIGTERM after the grace period.
    assert!(started.elapsed() < Duration::from_secs(6));
}

#[tokio::test]
async fn a_timed_out_request_is_cancelled_upstream_with_its_id() {
    let client = McpClient::connect(scripted(), Recorder::new(), options())
        .await
        .expect("connect");
    let sent = Arc::new(std::sync::Mutex::new(None));
    let record = sent.clone();
    let slow = client
        .request_with_id(
            "slow",
            None,
            RequestOptions {
                timeout: Some(Duration::from_millis(50)),
                cancel: None,
                ..RequestOptions::default()
            },
            move |id| *record.lock().expect("not poisoned") = Some(id),
        )
        .await;
    assert!(
        matches!(slow, Err(ClientError::Timeout(d)) if d == Duration::from_millis(50)),
        "{slow:?}"
    );
    let id = sent
        .lock()
        .expect("not poisoned")
        .clone()
        .expect("on_sent ran");
    let deadline = Instant::now() + Duration::from_secs(5);
    let cancel = loop {
        let seen = client
            .request("last_cancel", None, RequestOptions::default())
            .await
            .expect("last_cancel");
        if !seen["cancel"].is_null() {
            break seen["cancel"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "no notifications/cancelled arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        cancel["requestId"],
        serde_json::to_value(&id).expect("an id serialises")
    );
    assert_eq!(cancel["reason"], "timeout");
    client.shutdown().await;
}

#[tokio::test]
async fn dropping_the_last_handle_kills_the_process_group() {
    let client = McpClient::connect(scripted(), Recorder::new(), options())
        .await
        .expect("connect");
    let pgid = client.process_id().expect("pid");
    let other = client.clone();
    drop(client);
    assert!(group_exists(pgid), "a clone still holds the connection");
    drop(other);
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_exists(pgid) {
        assert!(
            Instant::now() < deadline,
            "process group {pgid} outlived its client"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
