//! The stdio downstream transport: newline-delimited JSON-RPC on stdin and
//! stdout for desktop apps that start the gateway as a child process. One
//! client, one session; nothing but protocol is ever written to stdout.

use std::io;
use std::time::Duration;

use mcpyard_gateway::{Gateway, Identity, IdentityKind, Session, EVERY_GROUP};
use mcpyard_proto::{allows_batches, Body, ErrorObject, Message, ParseError};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::batch::{self, BatchLimits};

/// Limits of the stdio transport.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// Longest accepted line; a longer one is skipped and answered with an
    /// error (id `null`), and reading goes on with the next line.
    pub max_line_bytes: usize,
    /// After stdin closes, how long requests still running may take to
    /// write their answers before they are abandoned.
    pub drain_grace: Duration,
    /// Caps on JSON-RPC batches, the same as the HTTP door's.
    pub batch: BatchLimits,
    /// Who the one client is: whoever could start the process, so by
    /// default the local user, in every group.
    pub identity: Identity,
}

/// The user running the process (`$USER`, else `$LOGNAME`, else `local`),
/// as a [`IdentityKind::Local`] identity in every group.
pub fn local_user() -> Identity {
    let name = ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "local".to_owned());
    Identity::named(IdentityKind::Local, name, vec![EVERY_GROUP.to_owned()])
}

impl Default for StdioOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: 16 * 1024 * 1024,
            drain_grace: Duration::from_secs(10),
            batch: BatchLimits::default(),
            identity: local_user(),
        }
    }
}

/// Messages waiting for stdout.
const OUT_CAPACITY: usize = 256;

/// Serves one client on `stdin` / `stdout` with default limits, until EOF
/// on `stdin` or `shutdown`.
pub async fn serve_stdio<R, W>(
    gateway: Gateway,
    stdin: R,
    stdout: W,
    shutdown: CancellationToken,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_stdio_with(gateway, stdin, stdout, StdioOptions::default(), shutdown).await
}

/// [`serve_stdio`] with explicit limits.
pub async fn serve_stdio_with<R, W>(
    gateway: Gateway,
    stdin: R,
    stdout: W,
    opts: StdioOptions,
    shutdown: CancellationToken,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(OUT_CAPACITY);
    let writer = tokio::spawn(write_lines(stdout, rx));
    let session = Session::new_as(opts.identity.clone(), Some(tx.clone()));
    if !gateway.register_session(session.clone()) {
        return Err(io::Error::other(
            "the gateway refused the session: too many sessions",
        ));
    }

    let mut reader = BufReader::new(stdin);
    let mut line = Vec::new();
    let mut tasks = JoinSet::new();
    let outcome = loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            next = next_line(&mut reader, &mut line, opts.max_line_bytes) => next,
        };
        match next {
            Err(e) => break Err(e),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong) => {
                let err = ErrorObject::invalid_request(format!(
                    "message longer than the {} byte line limit",
                    opts.max_line_bytes
                ));
                if tx.send(Message::error(None, err)).await.is_err() {
                    break Ok(());
                }
            }
            Ok(Line::Complete) => {
                dispatch(&gateway, &session, &tx, &mut tasks, &line, opts.batch).await;
            }
        }
        while tasks.try_join_next().is_some() {}
    };

    // Answers of requests still running are still wanted (a client may
    // write its requests and close stdin), within the grace period.
    if !shutdown.is_cancelled() {
        let drained = async { while tasks.join_next().await.is_some() {} };
        tokio::select! {
            _ = tokio::time::timeout(opts.drain_grace, drained) => {}
            _ = shutdown.cancelled() => {}
        }
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    gateway.end_session(session.id());
    drop(session);
    drop(tx);
    // The writer ends once every sender is gone; bounded in case the
    // gateway still holds one somewhere.
    match tokio::time::timeout(Duration::from_secs(2), writer).await {
        Ok(Ok(Err(e))) => tracing::debug!(error = %e, "stdout closed"),
        Ok(_) => {}
        Err(_) => tracing::debug!("stdout writer still busy at exit"),
    }
    outcome
}

/// Hands one line to the gateway. Requests run concurrently (a slow tool
/// call must not hold up a ping); notifications and responses are handled
/// in order before the next line is read.
async fn dispatch(
    gateway: &Gateway,
    session: &std::sync::Arc<Session>,
    tx: &mpsc::Sender<Message>,
    tasks: &mut JoinSet<()>,
    line: &[u8],
    batch_limits: BatchLimits,
) {
    let line = line.trim_ascii();
    if line.is_empty() {
        return;
    }
    let messages: Vec<Result<Message, ParseError>> = match batch::parse(line, batch_limits) {
        Err(e) | Ok(Body::Single(Err(e))) => {
            let _ = tx.send(e.to_response()).await;
            return;
        }
        Ok(Body::Single(Ok(m))) => vec![Ok(m)],
        Ok(Body::Batch(_)) if !allows_batches(&session.protocol_version()) => {
            let err = ErrorObject::invalid_request(
                "batches not supported by the negotiated protocol version",
            );
            let _ = tx.send(Message::error(None, err)).await;
            return;
        }
        // Each answer of a batch goes out as its own line.
        Ok(Body::Batch(items)) => {
            return batch::answer_on_lines(gateway, session, tx, tasks, items, batch_limits).await
        }
    };
    for item in messages {
        match item {
            Err(e) => {
                let _ = tx.send(e.to_response()).await;
            }
            Ok(Message::Request { id, method, params }) => {
                let gateway = gateway.clone();
                let session = session.clone();
                let tx = tx.clone();
                tasks.spawn(async move {
                    // No answer is what a request the client cancelled gets.
                    let answer = gateway.request(&session, id, &method, params, None).await;
                    if let Some(reply) = answer.into_reply() {
                        let _ = tx.send(reply).await;
                    }
                });
            }
            Ok(msg) => {
                gateway.receive(session, msg).await;
            }
        }
    }
}

/// Writes one message per line, flushing whenever no more are queued.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut out: W,
    mut rx: mpsc::Receiver<Message>,
) -> io::Result<()> {
    while let Some(msg) = rx.recv().await {
        write_one(&mut out, &msg).await?;
        while let Ok(msg) = rx.try_recv() {
            write_one(&mut out, &msg).await?;
        }
        out.flush().await?;
    }
    out.flush().await
}

async fn write_one<W: AsyncWrite + Unpin>(out: &mut W, msg: &Message) -> io::Result<()> {
    let mut bytes = msg.to_vec();
    bytes.push(b'\n');
    out.write_all(&bytes).await
}

/// What one read produced.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `buf` holds a line (without its newline).
    Complete,
    /// A line over the limit was skipped.
    TooLong,
    Eof,
}

/// Reads one line into `buf`, never holding more than `cap` bytes of it:
/// the rest of an over-long line is read and thrown away.
async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Complete,
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if buf.len() + chunk.len() > cap {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_over_long_ones_skipped() {
        let input: &[u8] = b"short\n0123456789abcdef\nok\nlast";
        let mut r = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        assert_eq!(
            next_line(&mut r, &mut buf, 8).await.expect("read"),
            Line::Complete
        );
        assert_eq!(buf, b"short");
        assert_eq!(
            next_line(&mut r, &mut buf, 8).await.expect("read"),
            Line::TooLong
        );
        assert_eq!(
            next_line(&mut r, &mut buf, 8).await.expect("read"),
            Line::Complete
        );
        assert_eq!(buf, b"ok");
        assert_eq!(
            next_line(&mut r, &mut buf, 8).await.expect("read"),
            Line::Complete
        );
        assert_eq!(buf, b"last");
        assert_eq!(
            next_line(&mut r, &mut buf, 8).await.expect("read"),
            Line::Eof
        );
    }
}
