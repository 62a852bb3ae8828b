//! HTTP/1.1 connections to one plain-`http` origin, kept open between
//! requests, for the HTTP transports' exchanges with their server.
//!
//! reqwest's client wraps each request in layers this path never uses
//! (redirects, retries, proxy matching, the URL parsed again from the
//! answer): together they cost more CPU than the exchange itself. So an
//! origin that reqwest would reach directly (plain `http`, no proxy in the
//! environment) gets this pool of hyper connections instead; `https` and
//! proxied origins stay with reqwest. Requests come as the transports'
//! [`Outgoing`], and answers are `http::Response`s as reqwest's are turned
//! into, so the transports read one kind of answer whichever way it came.
//!
//! A connection goes back to the pool when its answer's body has been read
//! to the end (an event stream holds its connection while it lasts); one
//! the server closed is dropped; a request that could not be written on a
//! pooled connection is sent again on a new one (it never reached the
//! server, so nothing runs twice).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, HOST};
use reqwest::Url;
use tokio::net::TcpStream;

use super::http_response::{with_causes, HttpResponse};
use super::outgoing::Outgoing;
use crate::ClientError;

/// Idle connections kept per origin; more are closed when they come back.
const MAX_IDLE: usize = 64;

/// The variables through which reqwest takes a proxy for `http` URLs: with
/// any of them set, requests go through reqwest, which honours them.
const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

type Sender = SendRequest<reqwest::Body>;

/// Keep-alive HTTP/1.1 connections to one `http://host:port`.
#[derive(Debug)]
pub(crate) struct OriginPool {
    /// The URL's host as written, and its port.
    origin: (String, u16),
    host: HostPort,
    /// The `Host` header: the URL's host, and its port unless it is 80.
    host_header: HeaderValue,
    /// Headers every request carries (the configured ones), added when the
    /// request does not set them itself, as reqwest's default headers are.
    defaults: HeaderMap,
    connect_timeout: Duration,
    idle: Mutex<Vec<Sender>>,
    last_target: Mutex<Option<(String, http::Uri)>>,
}

#[derive(Debug, Clone)]
enum HostPort {
    Addr(std::net::SocketAddr),
    Name(String, u16),
}

impl OriginPool {
    /// A pool for `url`'s origin, or `None` where reqwest must send (an
    /// `https` URL, or a proxy in the environment).
    pub(crate) fn for_url(
        url: &Url,
        defaults: &HeaderMap,
        connect_timeout: Duration,
    ) -> Option<Arc<Self>> {
        if url.scheme() != "http" || proxy_configured() {
            return None;
        }
        let port = url.port_or_known_default()?;
        let host = match url.host()? {
            url::Host::Domain(d) => HostPort::Name(d.to_owned(), port),
            url::Host::Ipv4(ip) => HostPort::Addr((ip, port).into()),
            url::Host::Ipv6(ip) => HostPort::Addr((ip, port).into()),
        };
        let name = url.host_str()?;
        let host_header = match url.port() {
            Some(p) if p != 80 => HeaderValue::from_str(&format!("{name}:{p}")),
            _ => HeaderValue::from_str(name),
        }
        .ok()?;
        Some(Arc::new(Self {
            origin: (name.to_owned(), port),
            host,
            host_header,
            defaults: defaults.clone(),
            connect_timeout,
            idle: Mutex::new(Vec::new()),
            last_target: Mutex::new(None),
        }))
    }

    /// Whether `url` is on this pool's origin.
    pub(crate) fn serves(&self, url: &Url) -> bool {
        url.scheme() == "http"
            && url.host_str() == Some(self.origin.0.as_str())
            && url.port_or_known_default() == Some(self.origin.1)
    }

    /// Sends `req` (whose URL is on this origin) and returns the answer
    /// once its head has arrived, within the request's own timeout if it
    /// has one.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        req: Outgoing,
    ) -> Result<HttpResponse, ClientError> {
        let timeout = req.timeout;
        let exchange = self.exchange(req);
        match timeout {
            None => exchange.await,
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .map_err(|_| ClientError::Transport("the request timed out".into()))?,
        }
    }

    async fn exchange(self: &Arc<Self>, req: Outgoing) -> Result<HttpResponse, ClientError> {
        let mut req = self.http_request(req)?;
        loop {
            let (mut sender, pooled) = match self.take_idle() {
                Some(s) => (s, true),
                None => (self.connect().await?, false),
            };
            if sender.ready().await.is_err() {
                if pooled {
                    continue;
                }
                return Err(ClientError::Transport(
                    "the server closed the connection".into(),
                ));
            }
            match sender.try_send_request(req).await {
                Ok(resp) => return Ok(self.answer(resp, sender)),
                Err(mut e) => match e.take_message() {
                    // Never written: the pooled connection had gone stale.
                    Some(unsent) if pooled => req = unsent,
                    _ => return Err(ClientError::Transport(with_causes(&e.into_error()))),
                },
            }
        }
    }

    /// `req` in the form a connection sends: the path alone as its target,
    /// `Host`, and the default headers it does not set itself.
    fn http_request(&self, req: Outgoing) -> Result<http::Request<reqwest::Body>, ClientError> {
        let target = self.target(&req.url)?;
        let mut out = http::Request::new(req.body.map(reqwest::Body::from).unwrap_or_default());
        *out.method_mut() = req.method;
        *out.uri_mut() = target;
        let headers = out.headers_mut();
        *headers = req.headers;
        for (name, value) in &self.defaults {
            if !headers.contains_key(name) {
                headers.insert(name, value.clone());
            }
        }
        headers.insert(HOST, self.host_header.clone());
        if !headers.contains_key(ACCEPT) {
            headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        Ok(out)
    }

    /// The request target of `url`: its path and query. The last one made
    /// is kept, since nearly every request goes to the same endpoint.
    fn target(&self, url: &Url) -> Result<http::Uri, ClientError> {
        let text = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let mut last = self
            .last_target
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((kept, uri)) = last.as_ref() {
            if kept == text {
                return Ok(uri.clone());
            }
        }
        let uri: http::Uri = text
            .parse()
            .map_err(|_| ClientError::Transport("invalid request target".into()))?;
        *last = Some((text.to_owned(), uri.clone()));
        Ok(uri)
    }

    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(sender) = idle.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn give_back(&self, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(sender);
        }
    }

    async fn connect(&self) -> Result<Sender, ClientError> {
        let connecting = async {
            match &self.host {
                HostPort::Addr(addr) => TcpStream::connect(addr).await,
                HostPort::Name(name, port) => TcpStream::connect((name.as_str(), *port)).await,
            }
        };
        let tcp = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| ClientError::Transport("connecting to the server timed out".into()))?
            .map_err(|e| ClientError::Transport(format!("cannot connect to the server: {e}")))?;
        // A small answer written in pieces would otherwise wait ~40 ms.
        tcp.set_nodelay(true)
            .map_err(|e| ClientError::Transport(format!("cannot set TCP_NODELAY: {e}")))?;
        let (sender, connection) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| ClientError::Transport(with_causes(&e)))?;
        // The connection's reads and writes; it ends when the server closes
        // it or its last sender is dropped.
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(target: "mcpyard::upstream", "connection ended: {e}");
            }
        });
        Ok(sender)
    }

    /// The answer, its body giving the connection back at its end.
    fn answer(self: &Arc<Self>, resp: http::Response<Incoming>, sender: Sender) -> HttpResponse {
        let (parts, body) = resp.into_parts();
        let mut body = ReturningBody {
            inner: body,
            owner: Some((sender, self.clone())),
        };
        body.give_back_if_ended();
        http::Response::from_parts(parts, reqwest::Body::wrap(body))
    }
}

/// An answer's body that gives its connection back to the pool once it has
/// been read to the end; dropped before that, the connection closes.
struct ReturningBody {
    inner: Incoming,
    owner: Option<(Sender, Arc<OriginPool>)>,
}

impl ReturningBody {
    fn give_back_if_ended(&mut self) {
        if self.inner.is_end_stream() {
            if let Some((sender, pool)) = self.owner.take() {
                pool.give_back(sender);
            }
        }
    }
}

impl http_body::Body for ReturningBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        match &frame {
            None => {
                if let Some((sender, pool)) = self.owner.take() {
                    pool.give_back(sender);
                }
            }
            Some(Ok(_)) => self.give_back_if_ended(),
            Some(Err(_)) => self.owner = None,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

fn proxy_configured() -> bool {
    PROXY_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|value| !value.is_empty()))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// An HTTP/1.1 server on loopback that counts its connections and
    /// answers each request with `{"n":K}`; with `close_after_answer`, it
    /// closes every connection after one answer without saying so first,
    /// as a server whose keep-alive timeout passed does.
    async fn server(close_after_answer: bool) -> (Url, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = Url::parse(&format!(
            "http://{}/mcp",
            listener.local_addr().expect("addr")
        ))
        .expect("url");
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let answered = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer_each(tcp, answered.clone(), close_after_answer));
            }
        });
        (url, connections)
    }

    async fn answer_each(mut tcp: TcpStream, answered: Arc<AtomicUsize>, close_after_answer: bool) {
        let mut buf = Vec::new();
        while let Some(head_end) = read_head(&mut tcp, &mut buf).await {
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            assert!(head.contains("\r\nhost: 127.0.0.1:"), "no Host: {head}");
            assert!(
                head.starts_with("post /mcp?k=v http/1.1\r\n"),
                "target: {head}"
            );
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |n| n.trim().parse().expect("length"));
            while buf.len() < head_end + length {
                let mut more = [0u8; 1024];
                let n = tcp.read(&mut more).await.expect("read body");
                buf.extend_from_slice(&more[..n]);
            }
            buf.drain(..head_end + length);
            let n = answered.fetch_add(1, Ordering::SeqCst) + 1;
            let body = format!("{{\"n\":{n}}}");
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            tcp.write_all(answer.as_bytes()).await.expect("write");
            if close_after_answer {
                break;
            }
        }
    }

    /// Reads into `buf` until it holds a whole request head; its length, or
    /// `None` when the client closed.
    async fn read_head(tcp: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
        loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(i + 4);
            }
            let mut more = [0u8; 1024];
            match tcp.read(&mut more).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&more[..n]),
            }
        }
    }

    async fn post(pool: &Arc<OriginPool>, url: &Url) -> String {
        let mut target = url.clone();
        target.set_query(Some("k=v"));
        let req = Outgoing::new(reqwest::Method::POST, &target).body(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}",
        ));
        let resp = tokio::time::timeout(Duration::from_secs(10), pool.execute(req))
            .await
            .expect("answered in time")
            .expect("answer");
        assert_eq!(resp.status(), 200);
        let body = super::super::http_common::read_capped(resp, 1024)
            .await
            .expect("body");
        String::from_utf8(body).expect("text")
    }

    #[tokio::test]
    async fn one_connection_serves_requests_one_after_another() {
        let (url, connections) = server(false).await;
        let pool = OriginPool::for_url(&url, &HeaderMap::new(), Duration::from_secs(5))
            .expect("a plain http origin gets a pool");
        for n in 1..=5 {
            assert_eq!(post(&pool, &url).await, format!("{{\"n\":{n}}}"));
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced_without_an_error() {
        let (url, connections) = server(true).await;
        let pool =
            OriginPool::for_url(&url, &HeaderMap::new(), Duration::from_secs(5)).expect("pool");
        for n in 1..=3 {
            assert_eq!(post(&pool, &url).await, format!("{{\"n\":{n}}}"));
            // Let the pooled connection see its end, or not: either way
            // the next request must go through.
            if n == 2 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        assert_eq!(connections.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn concurrent_requests_open_connections_of_their_own() {
        let (url, connections) = server(false).await;
        let pool =
            OriginPool::for_url(&url, &HeaderMap::new(), Duration::from_secs(5)).expect("pool");
        let answers = tokio::time::timeout(
            Duration::from_secs(20),
            futures::future::join_all((0..4).map(|_| post(&pool, &url))),
        )
        .await
        .expect("answered in time");
        assert_eq!(answers.len(), 4);
        let opened = connections.load(Ordering::SeqCst);
        assert!((1..=4).contains(&opened), "{opened} connections");
        // Every one of them went back, and serves the next requests.
        assert_eq!(pool.idle.lock().unwrap().len(), opened);
        post(&pool, &url).await;
        assert_eq!(connections.load(Ordering::SeqCst), opened);
    }

    #[test]
    fn https_and_proxied_origins_stay_with_reqwest() {
        let https = Url::parse("https://example.test/mcp").expect("url");
        assert!(OriginPool::for_url(&https, &HeaderMap::new(), Duration::from_secs(1)).is_none());
        let plain = Url::parse("http://[::1]:8080/mcp").expect("url");
        let pool =
            OriginPool::for_url(&plain, &HeaderMap::new(), Duration::from_secs(1)).expect("pool");
        assert_eq!(pool.host_header, "[::1]:8080");
        assert!(pool.serves(&Url::parse("http://[::1]:8080/other?x=1").expect("url")));
        assert!(!pool.serves(&Url::parse("http://[::1]:8081/mcp").expect("url")));
    }
}
