//! `passthrough-proxy`: the cheapest HTTP proxy that can stand between an
//! MCP client and `echo-upstream`, as a floor to judge mcpyard against.
//! Each downstream connection gets one upstream connection of its own, and
//! each request is relayed byte for byte (headers and body, no JSON read):
//! what it costs is what any proxy costs on this machine.
//!
//! Usage: `passthrough-proxy --upstream ADDR [--listen 127.0.0.1:0]
//! [--threads N]`. It prints `passthrough-proxy listening on
//! http://ADDR/mcp` on stdout once bound.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use clap::Parser;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// Largest body relayed either way.
const MAX_BODY: usize = 1 << 20;
/// Longest wait on the upstream for one exchange.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Parser)]
#[command(about = "A byte-for-byte HTTP proxy, one upstream connection per client connection")]
struct Args {
    /// The upstream to relay to.
    #[arg(long)]
    upstream: SocketAddr,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    rt.build()
        .context("cannot start the runtime")?
        .block_on(serve(args.listen, args.upstream))
}

async fn serve(listen: SocketAddr, upstream: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("no local address")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "passthrough-proxy listening on http://{addr}/mcp")?;
        out.flush()?;
    }
    let upstream_host = HeaderValue::from_str(&upstream.to_string())?;
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("passthrough-proxy: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let host = upstream_host.clone();
        tokio::spawn(async move {
            let sender = match connect(upstream).await {
                Ok(s) => Arc::new(Mutex::new(s)),
                Err(e) => {
                    eprintln!("passthrough-proxy: upstream: {e:#}");
                    return;
                }
            };
            let svc = service_fn(move |req| {
                let sender = sender.clone();
                let host = host.clone();
                async move {
                    Ok::<_, Infallible>(
                        relay(&sender, host, req)
                            .await
                            .unwrap_or_else(|_| bad_gateway()),
                    )
                }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

async fn connect(upstream: SocketAddr) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let tcp = tokio::time::timeout(UPSTREAM_TIMEOUT, TcpStream::connect(upstream))
        .await
        .context("connect timed out")??;
    tcp.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn relay(
    sender: &Mutex<SendRequest<Full<Bytes>>>,
    host: HeaderValue,
    req: Request<Incoming>,
) -> anyhow::Result<Response<Full<Bytes>>> {
    let (mut parts, body) = req.into_parts();
    let body = Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| anyhow::anyhow!("request body: {e}"))?
        .to_bytes();
    parts.headers.insert(header::HOST, host);
    let req = Request::from_parts(parts, Full::new(body));
    let exchange = async {
        let mut sender = sender.lock().await;
        sender.ready().await?;
        let resp = sender.send_request(req).await?;
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, MAX_BODY)
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("response body: {e}"))?
            .to_bytes();
        Ok::<_, anyhow::Error>(Response::from_parts(parts, Full::new(body)))
    };
    tokio::time::timeout(UPSTREAM_TIMEOUT, exchange)
        .await
        .context("upstream timed out")?
}

fn bad_gateway() -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(b"upstream failed")));
    *r.status_mut() = StatusCode::BAD_GATEWAY;
    r
}
