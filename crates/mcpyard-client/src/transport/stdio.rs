//! A server run as a supervised child process, speaking newline-delimited
//! JSON-RPC on stdin/stdout.
//!
//! Invariants: the child leads its own process group (so `npx` and the
//! `node` it starts die together), on Linux it dies with us
//! (`PR_SET_PDEATHSIG`), its stderr is logged and never parsed, it is
//! always reaped: one task owns the `Child` and waits on it for as long as
//! the runtime lives, and it sees only [`MINIMAL_ENV`], what it was told to
//! inherit and its own `env`, never the rest of ours (our secrets, or
//! another server's).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use mcpyard_proto::Message;
use tokio::process::{Child, Command};
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use super::stdin_pipe::StdinPipe;
use crate::link::{deliver_body, Link, MAX_MESSAGE_BYTES};
use crate::{ClientError, MINIMAL_ENV};

/// Longest stderr line logged as one entry.
const MAX_STDERR_LINE: usize = 64 * 1024;
/// After stdin is closed, how long the server may take to exit on its own.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// After SIGTERM, how long before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);
/// After the child exited, how long its stdout may take to drain before the
/// connection is declared closed anyway (a grandchild may hold it open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The process groups of the children that may still have processes
/// running: what [`kill_stdio_process_groups`] kills.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills, at once and without waiting, the process group of every stdio
/// server this process started that may still be running.
///
/// For a process about to exit without the orderly
/// [`McpClient::shutdown`](crate::McpClient::shutdown) (a second Ctrl-C):
/// on Linux the servers themselves die with it, but the processes they
/// started would be left running.
pub fn kill_stdio_process_groups() {
    for pgid in live_groups().iter() {
        signal_group(*pgid, libc::SIGKILL);
    }
}

/// A running child process.
#[derive(Debug)]
pub(crate) struct StdioTransport {
    /// Closed at the shutdown; `None` when the child's stdin could not be
    /// taken over.
    stdin: Option<StdinPipe>,
    /// The process group id (the child's pid).
    pgid: i32,
    /// Cancelled once the child has been reaped.
    exited: CancellationToken,
    /// Cancelled once the child is reaped and no process of its group is
    /// left.
    group_gone: CancellationToken,
    /// Cancelled when the shutdown begins (or the last handle is dropped):
    /// a signal exit after it is the stop asked for.
    stopping: CancellationToken,
    link: Link,
}

impl StdioTransport {
    pub(crate) fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        inherit_env: &[String],
        cwd: Option<&Path>,
        link: Link,
    ) -> Result<Self, ClientError> {
        let mut cmd = Command::new(command);
        cmd.args(args)
            .env_clear()
            .envs(std::env::vars_os().filter(|(name, _)| {
                name.to_str()
                    .map_or(inherit_env.iter().any(|p| p == "*"), |name| {
                        is_inherited(name, inherit_env)
                    })
            }))
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A safety net only: the waiter task below owns the child and
            // kills the whole group itself.
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        #[cfg(target_os = "linux")]
        set_parent_death_signal(&mut cmd);

        let mut child = cmd.spawn().map_err(|source| ClientError::Spawn {
            command: command.to_owned(),
            source,
        })?;
        // No await between spawn and handing the child to its waiter task:
        // a cancelled `connect` cannot drop an unsupervised child.
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        if pid > 1 {
            live_groups().insert(pid);
        }
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let exited = CancellationToken::new();
        let group_gone = CancellationToken::new();
        let reader_done = CancellationToken::new();
        let stopping = CancellationToken::new();
        let tail = StderrTail::default();
        let stderr_done = CancellationToken::new();
        let label = link.label().to_owned();
        tracing::info!(target: "mcpyard::upstream", server = %label, pid, "started `{command}`");

        tokio::spawn(wait_child(
            child,
            pid,
            label.clone(),
            link.clone(),
            ChildEvents {
                exited: exited.clone(),
                group_gone: group_gone.clone(),
                reader_done: reader_done.clone(),
                stopping: stopping.clone(),
                stderr_done: stderr_done.clone(),
                tail: tail.clone(),
            },
        ));

        let stdin = stdin
            .map(|stdin| StdinPipe::open(stdin.into_owned_fd()?, link.clone()))
            .transpose()
            .unwrap_or_else(|e| {
                tracing::warn!(target: "mcpyard::upstream", server = %label, "cannot write to stdin: {e}");
                None
            });
        if let Some(stdout) = stdout {
            tokio::spawn(read_stdout(
                stdout,
                link.clone(),
                reader_done,
                exited.clone(),
            ));
        } else {
            reader_done.cancel();
        }
        if let Some(stderr) = stderr {
            tokio::spawn(log_stderr(
                stderr,
                label,
                link.closed().clone(),
                tail,
                stderr_done,
            ));
        } else {
            stderr_done.cancel();
        }
        Ok(Self {
            stdin,
            pgid: pid,
            exited,
            group_gone,
            stopping,
            link,
        })
    }

    pub(crate) fn process_id(&self) -> Option<u32> {
        u32::try_from(self.pgid).ok().filter(|p| *p > 0)
    }

    pub(crate) async fn send(&self, message: &Message) -> Result<(), ClientError> {
        let stdin = self.stdin.as_ref().ok_or(ClientError::Closed)?;
        let mut line = message.to_vec();
        line.push(b'\n');
        stdin.send(Bytes::from(line)).await
    }

    /// stdin closed → grace period → SIGTERM to the group → SIGKILL to the
    /// group; returns once the child is reaped and its group is empty (or a
    /// last bounded wait ran out).
    pub(crate) async fn shutdown(&self) {
        self.stopping.cancel();
        if let Some(stdin) = &self.stdin {
            stdin.close();
        }
        if !wait_for(&self.exited, EXIT_GRACE).await {
            signal_group(self.pgid, libc::SIGTERM);
            if !wait_for(&self.exited, TERM_GRACE).await {
                signal_group(self.pgid, libc::SIGKILL);
                wait_for(&self.exited, Duration::from_secs(5)).await;
            }
        }
        wait_for(&self.group_gone, TERM_GRACE + Duration::from_secs(1)).await;
        self.link.end("shut down").await;
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // The last handle is gone without a shutdown: kill at once. The
        // waiter task still reaps the child.
        if !self.group_gone.is_cancelled() {
            self.stopping.cancel();
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}

/// Whether the parent's variable `name` reaches the child: it is in
/// [`MINIMAL_ENV`] or matches a pattern of `inherit_env` (a name, `PREFIX*`
/// or `*`).
fn is_inherited(name: &str, inherit_env: &[String]) -> bool {
    MINIMAL_ENV.contains(&name)
        || inherit_env
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => pattern == name,
            })
}

/// Linux delivers the signal when the *thread* that forked exits, not the
/// process: spawning from a runtime worker (which lives as long as the
/// runtime) is what makes this mean "when the gateway dies". Grandchildren
/// are not covered; the process group kill on shutdown and on drop is.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls
    // async-signal-safe functions (prctl, getppid) without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                return Err(io::Error::last_os_error());
            }
            // We may have died between fork and prctl: then nobody would
            // ever send the signal.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sends `signal` to every process of the group. Never to group 0 or 1
/// (that would be our own group, or everything).
fn signal_group(pgid: i32, signal: libc::c_int) {
    if pgid > 1 {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pgid > 1 && unsafe { libc::killpg(pgid, 0) } == 0
}

async fn wait_for(token: &CancellationToken, limit: Duration) -> bool {
    tokio::time::timeout(limit, token.cancelled()).await.is_ok()
}

/// Owns the child: reaps it, logs how it ended, clears what is left of its
/// group, and closes the connection once stdout has drained.
/// What the waiter of a child reports and reads.
struct ChildEvents {
    /// Cancelled once the child is reaped.
    exited: CancellationToken,
    /// Cancelled once no process of its group is left.
    group_gone: CancellationToken,
    /// Cancelled by the stdout reader at end of stream.
    reader_done: CancellationToken,
    /// Cancelled when the transport stops the child.
    stopping: CancellationToken,
    /// Cancelled by the stderr reader at end of stream.
    stderr_done: CancellationToken,
    /// The child's last stderr lines.
    tail: StderrTail,
}

/// Lines of a child's stderr kept to say why it ended.
const TAIL_LINES: usize = 5;
/// Characters of each kept line.
const TAIL_LINE_CHARS: usize = 300;

/// The last [`TAIL_LINES`] lines a child wrote on stderr.
#[derive(Debug, Clone, Default)]
struct StderrTail(std::sync::Arc<Mutex<std::collections::VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
    }

    fn joined(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

async fn wait_child(mut child: Child, pgid: i32, label: String, link: Link, events: ChildEvents) {
    let ChildEvents {
        exited,
        group_gone,
        reader_done,
        stopping,
        stderr_done,
        tail,
    } = events;
    let waited = child.wait().await;
    let ended = match &waited {
        Ok(status) if !stopping.is_cancelled() => format!("the server process exited ({status})"),
        _ => "the server process exited".to_owned(),
    };
    match waited {
        Ok(status) if status.success() => {
            tracing::info!(target: "mcpyard::upstream", server = %label, "process exited: {status}")
        }
        // Ended by the signal the shutdown sent: a normal stop, not a fault.
        Ok(status) if stopping.is_cancelled() && status.signal().is_some() => {
            tracing::info!(target: "mcpyard::upstream", server = %label, "process stopped: {status}")
        }
        Ok(status) => {
            tracing::warn!(target: "mcpyard::upstream", server = %label, "process exited: {status}")
        }
        Err(e) => {
            tracing::warn!(target: "mcpyard::upstream", server = %label, "waiting for the process failed: {e}")
        }
    }
    exited.cancel();
    // The leader is gone; anything it started must not outlive it.
    if group_alive(pgid) {
        signal_group(pgid, libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + TERM_GRACE;
        while group_alive(pgid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if group_alive(pgid) {
            signal_group(pgid, libc::SIGKILL);
        }
    }
    live_groups().remove(&pgid);
    group_gone.cancel();
    if !wait_for(&reader_done, DRAIN_GRACE).await {
        tracing::debug!(target: "mcpyard::upstream", server = %label, "stdout still open after exit");
    }
    // Its last words on stderr say why, more often than not.
    wait_for(&stderr_done, DRAIN_GRACE).await;
    let reason = match tail.joined() {
        Some(lines) if !stopping.is_cancelled() => {
            format!("{ended}; its last stderr lines: {lines}")
        }
        _ => ended,
    };
    link.end(reason).await;
}

/// A line of output, or the news that one was longer than the cap (and was
/// skipped).
#[derive(Debug)]
enum Line {
    Bytes(Bytes),
    TooLong,
}

/// Newline-delimited framing with a cap. Unlike a bare `LinesCodec`, an
/// overlong line or invalid UTF-8 does not end the stream: the line is
/// reported and skipped. The newline is searched with memchr, and only in
/// what arrived since the last search: a long line comes in many reads.
#[derive(Debug)]
struct CappedLines {
    max: usize,
    /// How far the buffer was searched already.
    searched: usize,
    /// Skipping the rest of an overlong line, already reported.
    skipping: bool,
}

impl CappedLines {
    fn new(max: usize) -> Self {
        Self {
            max,
            searched: 0,
            skipping: false,
        }
    }
}

impl Decoder for CappedLines {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, io::Error> {
        loop {
            let Some(at) = memchr::memchr(b'\n', &buf[self.searched..]) else {
                if self.skipping {
                    buf.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                if buf.len() > self.max {
                    self.skipping = true;
                    buf.clear();
                    self.searched = 0;
                    return Ok(Some(Line::TooLong));
                }
                self.searched = buf.len();
                return Ok(None);
            };
            let end = self.searched + at;
            self.searched = 0;
            let mut line = buf.split_to(end + 1);
            if std::mem::take(&mut self.skipping) {
                continue;
            }
            if end > self.max {
                return Ok(Some(Line::TooLong));
            }
            line.truncate(end);
            return Ok(Some(Line::Bytes(line.freeze())));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Line>, io::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        self.searched = 0;
        if buf.is_empty() || std::mem::take(&mut self.skipping) {
            buf.clear();
            return Ok(None);
        }
        let line = buf.split().freeze();
        Ok(Some(Line::Bytes(line)))
    }
}

async fn read_stdout(
    stdout: tokio::process::ChildStdout,
    link: Link,
    reader_done: CancellationToken,
    exited: CancellationToken,
) {
    let mut lines = FramedRead::new(stdout, CappedLines::new(MAX_MESSAGE_BYTES));
    // As in the stdin's writer task: one wait for the whole loop.
    let closed = link.closed().cancelled();
    tokio::pin!(closed);
    loop {
        let next = tokio::select! {
            biased;
            () = &mut closed => break,
            next = lines.next() => next,
        };
        match next {
            Some(Ok(Line::Bytes(line))) => {
                deliver_body(&link, &line, None, "a stdout line").await;
            }
            Some(Ok(Line::TooLong)) => {
                tracing::warn!(
                    target: "mcpyard::upstream",
                    server = link.label(),
                    "skipping a stdout line longer than {MAX_MESSAGE_BYTES} bytes"
                );
            }
            Some(Err(e)) => {
                tracing::warn!(target: "mcpyard::upstream", server = link.label(), "reading stdout failed: {e}");
                break;
            }
            None => break,
        }
    }
    reader_done.cancel();
    // A child that exits says why through its waiter (status, stderr);
    // one that only closed its stdout ends the connection here.
    if !wait_for(&exited, DRAIN_GRACE).await {
        link.end("the server closed its stdout").await;
    }
}

async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    label: String,
    stop: CancellationToken,
    tail: StderrTail,
    done: CancellationToken,
) {
    // Cancelled however the loop ends.
    let _done = done.drop_guard();
    let mut lines = FramedRead::new(stderr, CappedLines::new(MAX_STDERR_LINE));
    loop {
        let next = tokio::select! {
            next = lines.next() => next,
            () = stop.cancelled() => break,
        };
        match next {
            Some(Ok(Line::Bytes(line))) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(target: "mcpyard::upstream", server = %label, "{text}");
                    tail.push(text);
                }
            }
            Some(Ok(Line::TooLong)) => {
                tracing::info!(target: "mcpyard::upstream", server = %label, "(a stderr line over {MAX_STDERR_LINE} bytes was skipped)");
            }
            Some(Err(_)) | None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::preview;

    #[test]
    fn overlong_lines_are_reported_and_framing_recovers() {
        let mut codec = CappedLines::new(8);
        let mut buf = BytesMut::from(&b"0123456789abc\nok\n"[..]);
        assert!(matches!(codec.decode(&mut buf), Ok(Some(Line::TooLong))));
        let mut seen = Vec::new();
        while let Ok(Some(line)) = codec.decode(&mut buf) {
            seen.push(line);
        }
        assert!(matches!(seen.as_slice(), [Line::Bytes(b)] if &b[..] == b"ok"));
    }

    #[test]
    fn a_line_is_found_across_reads_and_one_over_the_cap_skipped_to_its_end() {
        let mut codec = CappedLines::new(8);
        let mut buf = BytesMut::from(&b"{\"a\":"[..]);
        assert!(matches!(codec.decode(&mut buf), Ok(None)));
        buf.extend_from_slice(b"1}\n0123456789");
        assert!(
            matches!(codec.decode(&mut buf), Ok(Some(Line::Bytes(b))) if &b[..] == b"{\"a\":1}")
        );
        assert!(matches!(codec.decode(&mut buf), Ok(Some(Line::TooLong))));
        buf.extend_from_slice(b"rest of it\nnext\nlast");
        assert!(matches!(codec.decode(&mut buf), Ok(Some(Line::Bytes(b))) if &b[..] == b"next"));
        assert!(matches!(codec.decode(&mut buf), Ok(None)));
        assert!(
            matches!(codec.decode_eof(&mut buf), Ok(Some(Line::Bytes(b))) if &b[..] == b"last")
        );
        assert!(matches!(codec.decode_eof(&mut buf), Ok(None)));
    }

    #[test]
    fn invalid_utf8_is_a_line_not_an_error() {
        let mut codec = CappedLines::new(64);
        let mut buf = BytesMut::from(&b"\xff\xfe\n"[..]);
        assert!(matches!(codec.decode(&mut buf), Ok(Some(Line::Bytes(_)))));
        assert_eq!(preview(b"\xff"), "\u{fffd}");
    }

    #[test]
    fn only_the_minimal_set_and_the_asked_for_variables_are_inherited() {
        let asked = ["EXACT".to_owned(), "PREFIX_*".to_owned()];
        for name in ["PATH", "HOME", "LANG", "TZ", "EXACT", "PREFIX_A", "PREFIX_"] {
            assert!(is_inherited(name, &asked), "{name}");
        }
        for name in [
            "EXACT_NOT",
            "PREFIX",
            "MCPYARD_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(!is_inherited(name, &asked), "{name}");
        }
        assert!(!is_inherited("ANY", &[]));
        assert!(is_inherited("ANY", &["*".to_owned()]));
    }

    #[test]
    fn never_signals_our_own_group() {
        assert!(!group_alive(0));
        assert!(!group_alive(1));
    }
}
