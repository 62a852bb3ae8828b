//! A child's stdin, written from the caller's task when it can be.
//!
//! A line is written straight from [`StdinPipe::send`] when nothing is
//! queued before it and the pipe takes it whole: the usual case, as a pipe
//! holds 64 KiB. Handing every line to a writer task cost a channel send, a
//! wake-up and a poll of that task per request. A line the pipe cannot take
//! now, or the rest of one it took in part, goes to the writer task, which
//! writes in order; every decision is made under one lock, so lines never
//! interleave or overtake one another.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::link::Link;
use crate::ClientError;

/// Lines queued for the writer task before `send` waits for room.
const QUEUE: usize = 256;

/// The write end of a child's stdin. Dropping it (or [`StdinPipe::close`])
/// closes the pipe once the writer task has written what was queued.
#[derive(Debug)]
pub(crate) struct StdinPipe {
    open: Arc<Mutex<Option<Open>>>,
    /// Room in the writer task's queue.
    room: Arc<Semaphore>,
    link: Link,
}

#[derive(Debug)]
struct Open {
    pipe: Arc<pipe::Sender>,
    /// Lines queued or being written by the writer task: a line is written
    /// directly only when there are none.
    queued: usize,
    queue: mpsc::UnboundedSender<Queued>,
}

/// A line for the writer task, with its place in the queue (none for the
/// rest of a line written in part, which must follow it at once).
type Queued = (Bytes, Option<OwnedSemaphorePermit>);

impl StdinPipe {
    /// Takes over `stdin` (set non-blocking) and starts its writer task.
    pub(crate) fn open(stdin: OwnedFd, link: Link) -> io::Result<Self> {
        let pipe = Arc::new(pipe::Sender::from_owned_fd(stdin)?);
        let (queue, lines) = mpsc::unbounded_channel();
        let open = Arc::new(Mutex::new(Some(Open {
            pipe: pipe.clone(),
            queued: 0,
            queue,
        })));
        tokio::spawn(write_queued(pipe, lines, open.clone(), link.clone()));
        Ok(Self {
            open,
            room: Arc::new(Semaphore::new(QUEUE)),
            link,
        })
    }

    /// Writes `line`, or queues it behind the lines already waiting.
    pub(crate) async fn send(&self, line: Bytes) -> Result<(), ClientError> {
        let line = {
            let mut guard = lock(&self.open);
            let open = guard.as_mut().ok_or(ClientError::Closed)?;
            let line = if open.queued == 0 {
                match open.pipe.try_write(&line) {
                    Ok(n) if n == line.len() => return Ok(()),
                    Ok(n) => {
                        open.queued += 1;
                        return send_or_closed(&open.queue, (line.slice(n..), None));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => line,
                    Err(e) => {
                        tracing::warn!(target: "mcpyard::upstream", server = self.link.label(), "writing to stdin failed: {e}");
                        *guard = None;
                        return Err(ClientError::Closed);
                    }
                }
            } else {
                line
            };
            match self.room.clone().try_acquire_owned() {
                Ok(place) => {
                    open.queued += 1;
                    return send_or_closed(&open.queue, (line, Some(place)));
                }
                Err(_) => line,
            }
        };
        // The queue is full: wait for room, then take the last place.
        let place = self
            .room
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ClientError::Closed)?;
        let mut guard = lock(&self.open);
        let open = guard.as_mut().ok_or(ClientError::Closed)?;
        open.queued += 1;
        send_or_closed(&open.queue, (line, Some(place)))
    }

    /// Closes the pipe once the lines queued so far are written (the
    /// server's cue to exit); later sends fail.
    pub(crate) fn close(&self) {
        lock(&self.open).take();
    }
}

impl Drop for StdinPipe {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock(open: &Mutex<Option<Open>>) -> MutexGuard<'_, Option<Open>> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

fn send_or_closed(queue: &mpsc::UnboundedSender<Queued>, line: Queued) -> Result<(), ClientError> {
    queue.send(line).map_err(|_| ClientError::Closed)
}

/// The writer task: writes the queued lines in order until the queue's
/// sender is dropped (the pipe closed) or the link ends.
async fn write_queued(
    pipe: Arc<pipe::Sender>,
    mut lines: mpsc::UnboundedReceiver<Queued>,
    open: Arc<Mutex<Option<Open>>>,
    link: Link,
) {
    // Made once: a fresh wait per line registers with the token and leaves
    // it again each time. Polled first, so that a close ends the loop even
    // while lines keep coming.
    let closed = link.closed().cancelled();
    tokio::pin!(closed);
    loop {
        let queued = tokio::select! {
            biased;
            () = &mut closed => None,
            queued = lines.recv() => queued,
        };
        let Some((line, place)) = queued else { break };
        if let Err(e) = write_all(&pipe, &line).await {
            tracing::warn!(target: "mcpyard::upstream", server = link.label(), "writing to stdin failed: {e}");
            lock(&open).take();
            break;
        }
        drop(place);
        if let Some(open) = lock(&open).as_mut() {
            open.queued -= 1;
        }
    }
    // The last handle on the pipe is dropped here once the transport's is
    // gone: the pipe closes.
}

async fn write_all(pipe: &pipe::Sender, mut line: &[u8]) -> io::Result<()> {
    while !line.is_empty() {
        pipe.writable().await?;
        match pipe.try_write(line) {
            Ok(n) => line = &line[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
