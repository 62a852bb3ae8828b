//! Accepting connections and holding each to its limits: at most
//! `max_connections` open (more wait in the listen backlog until one
//! closes), a deadline for each request head and body, and an idle
//! keep-alive timeout. Time spent answering, such as an SSE stream or a slow
//! tool call, is never cut.
//!
//! The head and idle deadlines work as Go's `net/http` server's do: a
//! connection between requests is held to the idle timeout until the first
//! byte of the next request, and from that byte it has the head timeout to
//! finish the head. A new connection has the head timeout from the start.
//!
//! An answer given before its request's body was read (a 401, a 429, a 413)
//! carries `Connection: close`: the unread rest of the body cannot be told
//! from the next request, so the connection ends after the answer, and the
//! client is told so rather than finding out on its next request.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::header::CONNECTION;
use http::{HeaderValue, Request};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use crate::front::Front;
use crate::options::{BodyTimedOut, HttpOptions};

/// The limits every connection is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    max_connections: usize,
    header_read: Duration,
    body_read: Duration,
    keep_alive: Duration,
}

impl ConnectionLimits {
    /// How often a connection's deadlines are checked: a quarter of the
    /// shortest, between 50 ms and 1 s, so a deadline is kept within that.
    fn check_every(&self) -> Duration {
        (self.header_read.min(self.keep_alive) / 4)
            .clamp(Duration::from_millis(50), Duration::from_secs(1))
    }

    pub(crate) fn of(opts: &HttpOptions) -> Self {
        Self {
            max_connections: opts.max_connections.max(1),
            header_read: opts.header_read_timeout,
            body_read: opts.body_read_timeout,
            keep_alive: opts.keep_alive_timeout,
        }
    }
}

/// Serves `app` on `listener` until `shutdown`; then stops accepting, asks
/// every connection to finish its current request and close, and returns
/// once all have.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Front,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        // A slot before accepting: past the cap, connections wait in the
        // kernel's backlog, costing the gateway nothing.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = shutdown.cancelled() => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        // Without TCP_NODELAY an answer written in pieces waits ~40 ms on
        // Nagle's algorithm and the peer's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
        connections.spawn(serve_connection(
            tcp,
            app.clone(),
            limits,
            shutdown.clone(),
            slot,
        ));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// A failed accept: the peer's problem is skipped, the gateway's own (out
/// of file descriptors) is waited out rather than spun on.
async fn accept_failed(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(error = %e, "could not accept a connection; trying again in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

async fn serve_connection(
    tcp: TcpStream,
    app: Front,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    _slot: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    // The client's address, for the handlers that key on it (the flood guard).
    let peer = tcp.peer_addr().ok();
    let io = TokioIo::new(Watched {
        tcp,
        activity: activity.clone(),
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let busy = Busy::begin(&activity);
            let whole = http_body::Body::is_end_stream(req.body());
            activity.body_read.store(whole, Ordering::Relaxed);
            let deadline = Instant::now() + limits.body_read;
            let req =
                req.map(|body| Body::new(DeadlineBody::new(body, deadline, activity.clone())));
            let app = app.clone();
            let activity = activity.clone();
            async move {
                let mut response = app.serve(req, peer).await;
                if !activity.body_read.load(Ordering::Relaxed) {
                    response
                        .headers_mut()
                        .insert(CONNECTION, HeaderValue::from_static("close"));
                }
                // The connection stays busy until the answer is written out,
                // however long a stream takes.
                Ok::<_, Infallible>(response.map(|body| Body::new(Answering { body, _busy: busy })))
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let (raise, mut alarms) = tokio::sync::mpsc::channel(2);
    tokio::spawn(watch(activity, limits, shutdown, raise));
    let mut watched = true;
    loop {
        tokio::select! {
            // The connection is what wakes this task nearly every time; the
            // alarms are rare, and need no turn of their own.
            biased;
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            alarm = alarms.recv(), if watched => match alarm {
                Some(Alarm::Idle) => {
                    // Nothing is being answered: dropping the connection
                    // closes the socket and loses nothing.
                    tracing::debug!("closed a connection that sent no request in time");
                    return;
                }
                Some(Alarm::Shutdown) => conn.as_mut().graceful_shutdown(),
                None => watched = false,
            },
        }
    }
}

/// What stops a connection from outside.
#[derive(Debug)]
enum Alarm {
    /// The gateway is shutting down: finish the answer under way, then close.
    Shutdown,
    /// It passed a deadline with nothing being answered.
    Idle,
}

/// A connection's deadlines and the gateway's shutdown, watched by a task
/// of its own: in the connection's `select!` they would be polled at every
/// wake of the connection, several times per request. Ends with the
/// connection (when `raise` is closed) or once it raised `Idle`.
async fn watch(
    activity: Arc<Activity>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    raise: tokio::sync::mpsc::Sender<Alarm>,
) {
    // Deadlines are checked on a coarse tick rather than re-armed per
    // request: a timer per request costs more than the limits are worth.
    let mut check = tokio::time::interval(limits.check_every());
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    check.reset();
    let mut draining = false;
    loop {
        tokio::select! {
            () = raise.closed() => return,
            _ = check.tick() => {
                if activity.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    let _ = raise.send(Alarm::Idle).await;
                    return;
                }
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                if raise.send(Alarm::Shutdown).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// What a connection is doing, for its deadlines.
#[derive(Debug)]
struct Activity {
    state: Mutex<State>,
    /// Whether the body of the request being answered was read to its end
    /// (one request at a time is read on an HTTP/1.1 connection).
    body_read: AtomicBool,
}

#[derive(Debug)]
struct State {
    /// Requests whose answer is not yet written out.
    requests: usize,
    /// Since when the connection has been waiting for a request.
    waiting_since: Instant,
    /// When the first byte of the next request head came.
    head_started: Option<Instant>,
    /// Whether a request was answered: only then is a wait an idle one.
    answered_any: bool,
}

impl Activity {
    fn new() -> Self {
        Self {
            state: Mutex::new(State {
                requests: 0,
                waiting_since: Instant::now(),
                head_started: None,
                answered_any: false,
            }),
            body_read: AtomicBool::new(true),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it; the state is valid regardless.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bytes_read(&self) {
        let mut s = self.state();
        if s.requests == 0 && s.head_started.is_none() {
            s.head_started = Some(Instant::now());
        }
    }

    /// When the connection is to be closed if nothing changes; `None` while
    /// a request is being answered.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let s = self.state();
        if s.requests > 0 {
            return None;
        }
        Some(match s.head_started {
            Some(t) => t + limits.header_read,
            None if !s.answered_any => s.waiting_since + limits.header_read,
            None => s.waiting_since + limits.keep_alive,
        })
    }
}

/// One request being answered on a connection, from its head until its
/// answer is written out (or abandoned).
#[derive(Debug)]
struct Busy(Arc<Activity>);

impl Busy {
    fn begin(activity: &Arc<Activity>) -> Self {
        let mut s = activity.state();
        s.requests += 1;
        s.head_started = None;
        drop(s);
        Self(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.requests -= 1;
        if s.requests == 0 {
            s.waiting_since = Instant::now();
            s.head_started = None;
            s.answered_any = true;
        }
    }
}

/// The TCP stream, noting when bytes arrive.
#[derive(Debug)]
struct Watched {
    tcp: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// A request body that fails with [`BodyTimedOut`] when it is not whole by
/// the deadline. The timer is set only if the body has to be waited for.
/// It notes on its connection when it has been read to its end.
struct DeadlineBody {
    inner: Incoming,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
    activity: Arc<Activity>,
}

impl DeadlineBody {
    fn new(inner: Incoming, deadline: Instant, activity: Arc<Activity>) -> Self {
        Self {
            inner,
            deadline,
            timer: None,
            activity,
        }
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            if frame.is_none() || self.inner.is_end_stream() {
                self.activity.body_read.store(true, Ordering::Relaxed);
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = self.deadline;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body, keeping its connection busy until it is dropped.
struct Answering {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
