//! The life of a client and of its requests against real servers: the
//! states a client goes through, the default and per-request timeouts,
//! cancellation reaching the server, and progress callbacks, on
//! server-everything (stdio and Streamable HTTP) and a Python SDK server.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{everything_stdio, first_text, start_everything, workspace_root, Recorder};
use mcpyard_client::{
    ClientError, ClientState, ConnectOptions, McpClient, Progress, RequestOptions, TransportSpec,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The Python SDK's slow tool; `mark` is where it writes that it was
/// cancelled.
fn python_slow(mark: &Path) -> TransportSpec {
    let root = workspace_root();
    let python = root.join(".tools/venv1/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/py1_slow_server.py");
    TransportSpec::Stdio {
        command: python.display().to_string(),
        args: vec![script.display().to_string(), mark.display().to_string()],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    }
}

fn options() -> ConnectOptions {
    ConnectOptions {
        label: "test-requests".into(),
        connect_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    }
}

/// Progress updates, collected by a callback.
fn collector() -> (Arc<Mutex<Vec<Progress>>>, RequestOptions) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = RequestOptions::default()
        .with_progress(move |p| sink.lock().expect("not poisoned").push(p));
    (seen, options)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_goes_from_disconnected_through_initializing_to_ready_and_closed() {
    let client = McpClient::builder(everything_stdio())
        .options(options())
        .build();
    assert_eq!(client.state(), ClientState::Disconnected);
    let early = client.list_tools().await;
    assert!(
        matches!(
            early,
            Err(ClientError::NotReady {
                state: ClientState::Disconnected
            })
        ),
        "{early:?}"
    );

    let opening = tokio::spawn({
        let client = client.clone();
        async move { client.open().await }
    });
    // Node takes a while to start: the handshake is under way meanwhile.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.state() == ClientState::Disconnected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let during = client
        .call_tool(
            "echo",
            json!({"message": "too soon"}),
            RequestOptions::default(),
        )
        .await;
    match during {
        Err(ClientError::NotReady {
            state: ClientState::Initializing,
        }) => {}
        // The handshake may have won the race on a fast machine.
        Ok(_) => assert_eq!(client.state(), ClientState::Ready),
        other => panic!("expected NotReady while initializing: {other:?}"),
    }
    let again = client.open().await;
    assert!(
        matches!(
            again,
            Ok(())
                | Err(ClientError::NotReady {
                    state: ClientState::Initializing
                })
        ),
        "{again:?}"
    );
    opening.await.expect("no panic").expect("open");
    assert_eq!(client.state(), ClientState::Ready);
    client
        .open()
        .await
        .expect("opening a ready client is a no-op");
    let echo = client
        .call_tool(
            "echo",
            json!({"message": "ready"}),
            RequestOptions::default(),
        )
        .await
        .expect("echo");
    assert!(first_text(&echo).contains("ready"), "{echo}");

    // The child dying closes the client for good.
    let pid = client.process_id().expect("a stdio client has a pid");
    // SAFETY: kill(2) on the child's process group, which the client owns.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    tokio::time::timeout(Duration::from_secs(10), client.closed())
        .await
        .expect("the child's death closes the client");
    assert_eq!(client.state(), ClientState::Closed);
    let after = client.ping().await;
    assert!(
        matches!(
            after,
            Err(ClientError::NotReady {
                state: ClientState::Closed
            })
        ),
        "{after:?}"
    );
    assert!(matches!(
        client.open().await,
        Err(ClientError::NotReady {
            state: ClientState::Closed
        })
    ));
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_open_leaves_the_client_disconnected_to_try_again() {
    let spec = TransportSpec::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: BTreeMap::new(),
        inherit_env: vec![],
        cwd: None,
    };
    let client = McpClient::builder(spec).options(options()).build();
    let failed = client.open().await;
    assert!(
        matches!(failed, Err(ClientError::Spawn { .. })),
        "{failed:?}"
    );
    assert_eq!(client.state(), ClientState::Disconnected);
    let again = client.open().await;
    assert!(matches!(again, Err(ClientError::Spawn { .. })), "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_a_slow_tool_reaches_its_callback_over_stdio_and_http() {
    let http = start_everything("streamableHttp");
    let specs = [
        everything_stdio(),
        TransportSpec::StreamableHttp {
            url: format!("http://127.0.0.1:{}/mcp", http.port),
            headers: vec![],
        },
    ];
    for spec in specs {
        let described = spec.describe();
        let recorder = Recorder::new();
        let client = McpClient::builder(spec)
            .options(options())
            .handler(recorder.clone())
            .request_timeout(Duration::from_secs(20))
            .connect()
            .await
            .expect("connect");
        let (seen, progress) = collector();
        let result = client
            .call_tool(
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 4}),
                progress,
            )
            .await
            .expect("the long operation");
        assert!(first_text(&result).contains("completed"), "{result}");
        let seen = seen.lock().expect("not poisoned").clone();
        let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
        assert_eq!(steps, [1.0, 2.0, 3.0, 4.0], "{described}: {seen:?}");
        assert!(seen.iter().all(|p| p.total == Some(4.0)), "{seen:?}");
        // Progress with a callback does not also reach the handler.
        assert!(
            recorder.notifications("notifications/progress").is_empty(),
            "{described}"
        );
        client.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_timeout_ends_a_slow_call_and_its_progress_callback() {
    let recorder = Recorder::new();
    let client = McpClient::builder(everything_stdio())
        .options(options())
        .handler(recorder.clone())
        .request_timeout(Duration::from_millis(700))
        .connect()
        .await
        .expect("connect");
    let (seen, progress) = collector();
    let started = Instant::now();
    let slow = client
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 3, "steps": 10}),
            progress,
        )
        .await;
    assert!(
        matches!(slow, Err(ClientError::Timeout(d)) if d == Duration::from_millis(700)),
        "{slow:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let at_timeout = seen.lock().expect("not poisoned").len();
    assert!(at_timeout >= 1, "progress before the timeout: {at_timeout}");

    // A per-request timeout overrides the default.
    let fast = client
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
            RequestOptions::default().with_timeout(Duration::from_secs(10)),
        )
        .await
        .expect("a longer timeout for this one");
    assert!(first_text(&fast).contains("completed"), "{fast}");

    // server-everything keeps reporting on the abandoned call: none of it
    // reaches the finished call's callback; the handler gets it instead.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(seen.lock().expect("not poisoned").len(), at_timeout);
    assert!(!recorder.notifications("notifications/progress").is_empty());
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_reaches_the_python_server() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mark = dir.path().join("cancelled");
    let client = McpClient::builder(python_slow(&mark))
        .options(options())
        .request_timeout(Duration::from_secs(30))
        .connect()
        .await
        .expect("connect");

    let (seen, progress) = collector();
    let done = client
        .call_tool("slow", json!({"steps": 3}), progress)
        .await
        .expect("a short run finishes");
    assert_eq!(first_text(&done), "done after 3 steps");
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[2].message.as_deref(), Some("step 3"));
    assert_eq!(seen[2].total, Some(3.0));

    let cancel = CancellationToken::new();
    let (seen, progress) = collector();
    let call = tokio::spawn({
        let client = client.clone();
        let options = progress.with_cancel(cancel.clone());
        async move {
            client
                .call_tool("slow", json!({"steps": 600}), options)
                .await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().expect("not poisoned").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let cancelled = call.await.expect("no panic");
    assert!(
        matches!(cancelled, Err(ClientError::Cancelled)),
        "{cancelled:?}"
    );
    // The server's tool was cancelled: notifications/cancelled got there.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !mark.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&mark).ok().as_deref(),
        Some("cancelled"),
        "the server never saw the cancellation"
    );
    // The connection goes on.
    let after = client
        .call_tool("slow", json!({"steps": 1}), RequestOptions::default())
        .await
        .expect("a call after the cancelled one");
    assert_eq!(first_text(&after), "done after 1 steps");
    client.shutdown().await;
}
