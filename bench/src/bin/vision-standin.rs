//! `vision-standin`: a small, fast stand-in for an OpenAI-compatible vision
//! server, for measuring what mcpyard costs on the way to one (no vision
//! model runs on the benchmark machine). It behaves like such a server on
//! the wire: `GET /v1/models` lists one model whose name says `llava` (so
//! mcpyard deems it vision-capable), and `POST /v1/chat/completions` reads
//! the whole body, parses it as JSON, checks that every image arrives as a
//! `data:image/...;base64,` URL and answers an OpenAI chat completion
//! saying how many images and base64 bytes it received.
//!
//! Usage: `vision-standin [--listen 127.0.0.1:0] [--max-body-mib 256]`. It
//! prints `vision-standin listening on http://ADDR/v1` on stdout once bound.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::Context as _;
use bytes::Bytes;
use clap::Parser;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// The one model listed.
const MODEL: &str = "llava-standin";

#[derive(Debug, Parser)]
#[command(about = "A fast stand-in for an OpenAI-compatible vision server")]
struct Args {
    /// Address to bind; loopback only unless told otherwise.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Largest request body read, in MiB; anything bigger gets 413.
    #[arg(long, default_value_t = 256)]
    max_body_mib: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?
        .block_on(serve(args.listen, args.max_body_mib << 20))
}

async fn serve(listen: SocketAddr, max_body: usize) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("no local address")?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "vision-standin listening on http://{addr}/v1")?;
        out.flush()?;
    }
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: back off rather than spin.
                eprintln!("vision-standin: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let svc =
                service_fn(
                    move |req| async move { Ok::<_, Infallible>(handle(req, max_body).await) },
                );
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

async fn handle(req: Request<Incoming>, max_body: usize) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/v1/models") => reply(
            StatusCode::OK,
            &json!({
                "object": "list",
                "data": [{"id": MODEL, "object": "model", "owned_by": "standin"}]
            }),
        ),
        (&Method::POST, "/v1/chat/completions") => {
            let body = match Limited::new(req.into_body(), max_body).collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
            };
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) => complete(&v),
                Err(e) => error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {e}")),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The answer to a parsed chat request: 400 unless it carries at least one
/// image and every image is a base64 data URL, as vision servers require.
fn complete(req: &Value) -> Response<Full<Bytes>> {
    let urls: Vec<&str> = req
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("image_url"))
        .map(|p| {
            p.pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or("")
        })
        .collect();
    let is_data_url = |u: &&str| u.starts_with("data:image/") && u.contains(";base64,");
    if urls.is_empty() || !urls.iter().all(is_data_url) {
        return error(
            StatusCode::BAD_REQUEST,
            "expected images as data:image/...;base64, URLs",
        );
    }
    let bytes: usize = urls.iter().map(|u| u.len()).sum();
    let text = format!(
        "stand-in saw {} image(s), {bytes} bytes of data URLs",
        urls.len()
    );
    reply(
        StatusCode::OK,
        &json!({
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model").and_then(Value::as_str).unwrap_or(MODEL),
            "choices": [{
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text}
            }],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
    )
}

fn reply(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    reply(status, &json!({"error": {"message": message}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_data_url_images_and_refuses_other_urls() {
        let ok = json!({"model": "m", "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}
            ]}
        ]});
        assert_eq!(complete(&ok).status(), StatusCode::OK);
        let remote = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
        ]}]});
        assert_eq!(complete(&remote).status(), StatusCode::BAD_REQUEST);
        let none = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(complete(&none).status(), StatusCode::BAD_REQUEST);
    }
}
