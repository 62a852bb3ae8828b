//! The stdio transport over in-memory pipes.

use std::time::Duration;

use mcpyard_gateway::{Gateway, GatewayConfig};
use mcpyard_server::{serve_stdio, serve_stdio_with, StdioOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

struct Peer {
    to_gateway: DuplexStream,
    from_gateway: Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    shutdown: CancellationToken,
}

impl Peer {
    async fn start(opts: Option<StdioOptions>) -> Self {
        let gateway = Gateway::start(GatewayConfig::default())
            .await
            .expect("gateway starts");
        let (to_gateway, stdin) = tokio::io::duplex(1 << 16);
        let (stdout, from_gateway) = tokio::io::duplex(1 << 16);
        let shutdown = CancellationToken::new();
        let served = match opts {
            None => tokio::spawn(serve_stdio(gateway, stdin, stdout, shutdown.clone())),
            Some(o) => tokio::spawn(serve_stdio_with(
                gateway,
                stdin,
                stdout,
                o,
                shutdown.clone(),
            )),
        };
        Self {
            to_gateway,
            from_gateway: BufReader::new(from_gateway).lines(),
            served,
            shutdown,
        }
    }

    async fn send(&mut self, line: &str) {
        self.to_gateway
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to the gateway");
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.from_gateway.next_line())
            .await
            .expect("a line within the timeout")
            .expect("read")
            .expect("stdout still open");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON ({e}): {line}"))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.served.abort();
    }
}

#[tokio::test]
async fn stdio_round_trip_and_eof() {
    let mut p = Peer::start(None).await;
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
    let v = p.recv().await;
    assert_eq!(v["id"], json!(1));
    assert_eq!(v["result"]["protocolVersion"], json!("2025-06-18"));

    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    p.send("").await;
    p.send("{not json").await;
    let v = p.recv().await;
    assert_eq!(v["error"]["code"], json!(-32700));
    assert_eq!(v["id"], Value::Null);

    p.send(r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#)
        .await;
    assert_eq!(
        p.recv().await,
        json!({"jsonrpc":"2.0","id":"x","result":{}})
    );

    p.send(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#)
        .await;
    let v = p.recv().await;
    assert_eq!(
        v["error"]["code"],
        json!(-32600),
        "no batches at 2025-06-18: {v}"
    );

    // EOF on stdin: the transport returns.
    p.to_gateway.shutdown().await.expect("close stdin");
    let served = tokio::time::timeout(WAIT, &mut p.served)
        .await
        .expect("returns after EOF")
        .expect("task");
    assert!(served.is_ok(), "{served:?}");
}

#[tokio::test]
async fn an_over_long_line_is_an_error_and_reading_goes_on() {
    let mut p = Peer::start(Some(StdioOptions {
        max_line_bytes: 128,
        ..StdioOptions::default()
    }))
    .await;
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(10_000)
    );
    p.send(&long).await;
    let v = p.recv().await;
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], json!(-32600));
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(p.recv().await["id"], json!(2));
}

#[tokio::test]
async fn answers_of_requests_sent_before_eof_are_still_written() {
    let mut p = Peer::start(None).await;
    p.send(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).await;
    p.to_gateway.shutdown().await.expect("close stdin");
    assert_eq!(p.recv().await["id"], json!(7));
}

#[tokio::test]
async fn shutdown_stops_the_transport_while_stdin_is_open() {
    let mut p = Peer::start(None).await;
    p.shutdown.cancel();
    let served = tokio::time::timeout(WAIT, &mut p.served)
        .await
        .expect("returns on shutdown")
        .expect("task");
    assert!(served.is_ok());
}
