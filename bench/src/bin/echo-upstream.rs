//! `echo-upstream`: a small, fast MCP server with one tool, `echo`. It is
//! the upstream every benchmark path hits (directly, and through the
//! proxies), so it does as little as a correct server can: over Streamable
//! HTTP, hyper HTTP/1.1 with keep-alive and `TCP_NODELAY`, sessions in a
//! set, answers as `application/json`; over stdio, one line per message.
//!
//! Usage: `echo-upstream [--listen 127.0.0.1:0] [--threads N]`. It prints
//! `echo-upstream listening on http://ADDR/mcp` on stdout once bound.
//! `echo-upstream --stdio` serves stdin and stdout instead, prints nothing
//! else there, and exits when stdin closes.

use std::collections::HashSet;
use std::convert::Infallible;
use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use bytes::Bytes;
use clap::Parser;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::TcpListener;

/// Largest request body read; anything bigger gets 413.
const MAX_BODY: usize = 1 << 20;
const SESSION_HEADER: &str = "mcp-session-id";
const SUPPORTED_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
const DEFAULT_VERSION: &str = "2025-06-18";

#[derive(Debug, Parser)]
#[command(about = "A fast Streamable HTTP MCP server with one `echo` tool")]
struct Args {
    /// Address to bind; loopback only unless told otherwise.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Serve newline-delimited JSON-RPC on stdin and stdout instead of
    /// HTTP (no sessions, no banner); exits when stdin closes.
    #[arg(long)]
    stdio: bool,
}

/// Sessions issued by `initialize` and not yet ended by DELETE.
#[derive(Debug, Default)]
struct State {
    sessions: Mutex<HashSet<String>>,
}

impl State {
    fn knows(&self, id: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(id)
    }
}

/// The fields routing needs; `id` and `params` stay raw.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InitParams {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: Option<String>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<EchoArgs>,
}

#[derive(Deserialize)]
struct EchoArgs {
    #[serde(default)]
    message: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.stdio {
        return serve_stdio();
    }
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    rt.build()
        .context("cannot start the runtime")?
        .block_on(serve(args.listen))
}

async fn serve(listen: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("no local address")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "echo-upstream listening on http://{addr}/mcp")?;
        out.flush()?;
    }
    let state = Arc::new(State::default());
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: back off rather than spin.
                eprintln!("echo-upstream: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // A reply in several writes would otherwise wait on Nagle + delayed ACK.
        let _ = tcp.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.uri().path() != "/mcp" {
        return plain(StatusCode::NOT_FOUND, "not found");
    }
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *req.method() {
        Method::POST => {}
        Method::DELETE => {
            let Some(s) = session else {
                return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id");
            };
            let removed = state
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&s);
            return if removed {
                plain(StatusCode::OK, "")
            } else {
                plain(StatusCode::NOT_FOUND, "unknown session")
            };
        }
        // No server-initiated messages: no GET stream.
        _ => {
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "POST or DELETE");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            return r;
        }
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large"),
    };
    let env = match parse(&body) {
        Ok(e) => e,
        Err(error) => return json(error),
    };
    let (Some(method), Some(id)) = (env.method.as_deref(), env.id) else {
        // A notification, or a response to a request we never send.
        return plain(StatusCode::ACCEPTED, "");
    };
    if method == "initialize" {
        let sid = uuid::Uuid::new_v4().simple().to_string();
        state
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(sid.clone());
        let mut r = json(answer(method, id.get(), env.params));
        if let Ok(v) = HeaderValue::from_str(&sid) {
            r.headers_mut().insert(SESSION_HEADER, v);
        }
        return r;
    }
    match session {
        None => plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id"),
        Some(s) if !state.knows(&s) => plain(StatusCode::NOT_FOUND, "unknown session"),
        Some(_) => json(answer(method, id.get(), env.params)),
    }
}

/// Serves newline-delimited JSON-RPC on stdin and stdout until stdin
/// closes. Blocking I/O on one thread: answers are written in order, one
/// line each, flushed at once so a pipelining client never waits on a
/// buffer.
fn serve_stdio() -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input
            .read_until(b'\n', &mut line)
            .context("cannot read stdin")?
            == 0
        {
            return Ok(());
        }
        let message = line.trim_ascii();
        if message.is_empty() {
            continue;
        }
        let reply = match parse(message) {
            Ok(Envelope {
                method: Some(method),
                id: Some(id),
                params,
            }) => answer(&method, id.get(), params),
            // A notification, or a response to a request we never send.
            Ok(_) => continue,
            Err(error) => error,
        };
        output.write_all(reply.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}

/// One message's envelope, or the JSON-RPC error answering a body that is
/// none.
fn parse(body: &[u8]) -> Result<Envelope<'_>, String> {
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            rpc_error("null", -32700, "parse error")
        } else {
            rpc_error("null", -32600, "not a JSON-RPC request")
        }
    })
}

/// The answer to request `id` calling `method`, the same over both
/// transports (sessions are the HTTP side's business).
fn answer(method: &str, id: &str, params: Option<&RawValue>) -> String {
    match method {
        "initialize" => {
            let asked = params
                .and_then(|p| serde_json::from_str::<InitParams>(p.get()).ok())
                .and_then(|p| p.protocol_version);
            let version = asked
                .as_deref()
                .filter(|v| SUPPORTED_VERSIONS.contains(v))
                .unwrap_or(DEFAULT_VERSION);
            rpc_result(
                id,
                &format!(
                    r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"echo-upstream","version":"{}"}}}}"#,
                    env!("CARGO_PKG_VERSION")
                ),
            )
        }
        "ping" => rpc_result(id, "{}"),
        "tools/list" => rpc_result(
            id,
            r#"{"tools":[{"name":"echo","description":"Returns its message unchanged.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}"#,
        ),
        "tools/call" => {
            let params = params.and_then(|p| serde_json::from_str::<CallParams>(p.get()).ok());
            let Some(params) = params else {
                return rpc_error(id, -32602, "params must name a tool");
            };
            if params.name != "echo" {
                return rpc_error(id, -32602, "unknown tool");
            }
            match params.arguments.and_then(|a| a.message) {
                Some(message) => {
                    let text = serde_json::to_string(&message).unwrap_or_default();
                    rpc_result(
                        id,
                        &format!(r#"{{"content":[{{"type":"text","text":{text}}}]}}"#),
                    )
                }
                None => rpc_result(
                    id,
                    r#"{"content":[{"type":"text","text":"echo needs a string argument `message`"}],"isError":true}"#,
                ),
            }
        }
        _ => rpc_error(id, -32601, "method not found"),
    }
}

fn rpc_result(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

fn rpc_error(id: &str, code: i64, message: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{message}"}}}}"#)
}

fn json(body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r
}
