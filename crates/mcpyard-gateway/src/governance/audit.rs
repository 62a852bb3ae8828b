//! The audit trail: one JSON line per routed call and per refusal (who,
//! which session, source and tool, the outcome, how long, how big, and a
//! SHA-256 of the arguments, never the arguments themselves), and one per
//! sampling request an upstream had answered by a local model.
//!
//! Lines are written off the call path: a call hands its record to a
//! bounded channel and a writer thread appends it to the file, rotating the
//! file by size. A line reaches the file at once when the trail is idle and
//! within [`COALESCE`] when it is busy: under load, one write and one
//! wake-up of the writer serve many calls. The writer is ours, not a
//! crate's: it is a few lines, and the rotation scheme (`audit.jsonl` →
//! `audit.jsonl.1` … `.N`) is the one `mcpyard audit` reads back.

use std::cell::{Cell, RefCell};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcpyard_proto::{json_text, Payload};
use serde::Serialize;
use serde_json::Value;

use crate::call::result_len;
use crate::governance::stats::{CallStats, RecentCall};
use crate::router::{Layer, Next, RouteFuture, RoutedCall};
use crate::RouteError;

/// Records waiting for the writer at most; past it a record is dropped and
/// counted, rather than making a call wait for the disk.
const QUEUE: usize = 16 * 1024;

/// After a write, how long the writer lets lines gather before the next:
/// waking it for each line cost more than the rest of the audit together.
const COALESCE: Duration = Duration::from_millis(5);

/// Where the trail goes and how it rotates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFile {
    pub path: PathBuf,
    /// The file is rotated before a line would take it past this size.
    pub max_size: u64,
    /// Rotated files kept (`.1` is the newest); older ones are deleted.
    pub keep: usize,
}

impl AuditFile {
    pub const DEFAULT_MAX_SIZE: u64 = 10 * 1024 * 1024;
    pub const DEFAULT_KEEP: usize = 5;

    /// The rotated file `n` (1 is the newest).
    pub fn rotated(&self, n: usize) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }
}

/// How a call ended, as the audit records it.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, Serialize)]
pub enum Outcome {
    #[serde(rename = "ok")]
    Ok,
    /// The tool answered with an `isError` result.
    #[serde(rename = "isError")]
    IsError,
    /// A routing error: the source failed, timed out, or the request was bad.
    #[serde(rename = "error")]
    Error,
    /// A guardrail, a size limit or the policy refused the call.
    #[serde(rename = "refused")]
    Refused,
    /// A rate limit stopped the call.
    #[serde(rename = "limited")]
    Limited,
}

impl Outcome {
    /// Every outcome, in their order (`outcome as usize` is its index).
    pub const ALL: [Outcome; 5] = [
        Self::Ok,
        Self::IsError,
        Self::Error,
        Self::Refused,
        Self::Limited,
    ];

    /// The outcome of a routed call, from its result alone (a guardrail's
    /// refusal, answered as an `isError` result, is told apart by the
    /// audit layer itself).
    pub fn of(result: &Result<Payload, RouteError>) -> Self {
        match result {
            Ok(v) if v.is_error() => Self::IsError,
            Ok(_) => Self::Ok,
            Err(RouteError::Denied { .. }) => Self::Refused,
            Err(RouteError::Limited { .. } | RouteError::Busy { .. }) => Self::Limited,
            Err(_) => Self::Error,
        }
    }

    /// The name records, labels and filters use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::IsError => "isError",
            Self::Error => "error",
            Self::Refused => "refused",
            Self::Limited => "limited",
        }
    }
}

/// One line of the trail. Nothing in it may carry a secret: arguments are
/// hashed, errors are named by kind.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// `call`, or `sampling` for an upstream's sampling request.
    pub kind: &'static str,
    /// The identity's name (`anonymous` without authentication).
    pub identity: String,
    pub identity_kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub source: String,
    /// The tool or prompt as the client named it, or the resource URI.
    pub tool: String,
    pub method: &'static str,
    pub outcome: Outcome,
    /// The rule that refused the call, or whose fault an error was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub duration_ms: f64,
    /// Bytes of JSON of the arguments sent and of the result returned.
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub arguments_sha256: String,
    /// For sampling: the local model that answered and what it used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
}

impl AuditRecord {
    /// The current time as the trail writes it.
    pub fn now() -> String {
        rfc3339_millis(SystemTime::now())
    }

    /// The record as a line of the trail: the compact JSON its `Serialize`
    /// gives (with `replica` first when set), and a newline. Written by
    /// hand because serde_json escapes byte by byte every key and value,
    /// which cost more than building the record; here a string is copied
    /// whole unless it holds something to escape.
    fn to_line(&self, replica: Option<&str>) -> Vec<u8> {
        let mut line = JsonLine(Vec::with_capacity(LINE_CAPACITY));
        line.0.push(b'{');
        if let Some(replica) = replica {
            line.string(br#""replica":"#, replica);
            line.0.push(b',');
        }
        line.string(br#""time":"#, &self.time);
        line.string(br#","kind":"#, self.kind);
        line.string(br#","identity":"#, &self.identity);
        line.string(br#","identity_kind":"#, self.identity_kind);
        if let Some(session) = &self.session {
            line.string(br#","session":"#, session);
        }
        line.string(br#","source":"#, &self.source);
        line.string(br#","tool":"#, &self.tool);
        line.string(br#","method":"#, self.method);
        line.string(br#","outcome":"#, self.outcome.as_str());
        if let Some(reason) = &self.reason {
            line.string(br#","reason":"#, reason);
        }
        line.number(br#","duration_ms":"#, &self.duration_ms);
        line.number(br#","request_bytes":"#, &self.request_bytes);
        line.number(br#","response_bytes":"#, &self.response_bytes);
        line.string(br#","arguments_sha256":"#, &self.arguments_sha256);
        if let Some(model) = &self.model {
            line.string(br#","model":"#, model);
        }
        if let Some(tokens) = &self.prompt_tokens {
            line.number(br#","prompt_tokens":"#, tokens);
        }
        if let Some(tokens) = &self.completion_tokens {
            line.number(br#","completion_tokens":"#, tokens);
        }
        let mut line = line.0;
        line.push(b'}');
        line.push(b'\n');
        line
    }
}

/// Room for a call's line without growing (they are about 350 bytes).
const LINE_CAPACITY: usize = 512;

/// A JSON object being written member by member, as serde_json writes it
/// compact. Each member comes with its key written out, quotes, colon and
/// the comma before it: the record's own names need no escaping.
struct JsonLine(Vec<u8>);

impl JsonLine {
    fn string(&mut self, key: &[u8], value: &str) {
        self.0.extend_from_slice(key);
        json_text::write_str(&mut self.0, value);
    }

    fn number(&mut self, key: &[u8], value: &impl Serialize) {
        self.0.extend_from_slice(key);
        let _ = serde_json::to_writer(&mut self.0, value);
    }
}

/// The handle calls write to. Cheap to clone; the writer thread ends once
/// every handle is dropped, after writing what it was given.
#[derive(Debug, Clone)]
pub struct AuditTrail {
    inner: Arc<TrailInner>,
}

#[derive(Debug)]
struct TrailInner {
    lines: SyncSender<Entry>,
    dropped: AtomicU64,
    /// Written in every line when several replicas share one trail's
    /// reader (see [`AuditTrail::naming_replica`]).
    replica: Option<String>,
}

impl AuditTrail {
    /// Opens (or creates) the file and starts its writer thread.
    pub fn open(file: AuditFile) -> std::io::Result<Self> {
        if let Some(dir) = file.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let writer = RotatingWriter::open(file)?;
        let (lines, queue) = sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("mcpyard-audit".into())
            .spawn(move || writer.run(queue))?;
        Ok(Self {
            inner: Arc::new(TrailInner {
                lines,
                dropped: AtomicU64::new(0),
                replica: None,
            }),
        })
    }

    /// Every line names `replica`: the replicas of one gateway write their
    /// own trails, read together. Set before the trail is shared.
    pub fn naming_replica(mut self, replica: &str) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.replica = Some(replica.to_owned());
        }
        self
    }

    /// Queues a record; never waits.
    pub fn record(&self, record: &AuditRecord) {
        let line = record.to_line(self.inner.replica.as_deref());
        match self.inner.lines.try_send(Entry::Line(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped == 1 || dropped.is_multiple_of(1000) {
                    tracing::warn!(
                        dropped,
                        "audit records dropped: the audit file is not keeping up"
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                tracing::warn!("audit record dropped: the audit writer has stopped");
            }
        }
    }

    /// Returns once every record queued before it is in the file (or the
    /// writer has stopped): for a gateway about to exit.
    pub async fn flush(&self) {
        let (done, written) = tokio::sync::oneshot::channel();
        let lines = self.inner.lines.clone();
        // A full queue makes the hand-over wait for the writer: off the runtime.
        let queued = tokio::task::spawn_blocking(move || lines.send(Entry::Flush(done))).await;
        if matches!(queued, Ok(Ok(()))) {
            let _ = written.await;
        }
    }

    /// An upstream's sampling request answered by a local model, or
    /// refused (by the sampling policy or the model: `Err` says which).
    /// `request_sha256` is the sampling policy's hash of the request.
    pub(crate) fn record_sampling(
        &self,
        server: &str,
        request_sha256: Option<&str>,
        started: Instant,
        usage: Result<&crate::SamplingUsage, &str>,
    ) {
        let (outcome, reason, usage) = match usage {
            Ok(u) => (Outcome::Ok, None, Some(u)),
            Err(by) => (Outcome::Refused, Some(by.to_owned()), None),
        };
        self.record(&AuditRecord {
            time: AuditRecord::now(),
            kind: "sampling",
            // The upstream asked; the client whose call led to it is not known.
            identity: server.to_owned(),
            identity_kind: "upstream",
            session: None,
            source: server.to_owned(),
            tool: mcpyard_proto::methods::SAMPLING_CREATE_MESSAGE.to_owned(),
            method: mcpyard_proto::methods::SAMPLING_CREATE_MESSAGE,
            outcome,
            reason,
            duration_ms: millis(started),
            request_bytes: 0,
            response_bytes: 0,
            arguments_sha256: request_sha256.unwrap_or_default().to_owned(),
            model: usage.map(|u| u.model.clone()),
            prompt_tokens: usage.map(|u| u.prompt_tokens),
            completion_tokens: usage.map(|u| u.completion_tokens),
        });
    }
}

/// The size of a value's compact JSON and its SHA-256, hex, from one
/// serialisation: identifies the arguments of a call without recording
/// them.
pub(crate) fn size_and_sha256(value: &Value) -> (u64, String) {
    use sha2::Digest;
    /// Hashes and counts what is written: no copy of the arguments' text.
    struct Hashing(sha2::Sha256, u64);
    impl std::io::Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            self.1 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(sha2::Sha256::new(), 0);
    // Writing into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut hashing, value);
    let digest = hashing.0.finalize();
    // A formatter call per byte costs more than the hash of small arguments.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    (hashing.1, hex)
}

/// `at` in RFC 3339, UTC, with milliseconds, as humantime writes it. The
/// text up to the second is kept per thread: formatting the whole date for
/// each record cost more than the rest of its time field.
fn rfc3339_millis(at: SystemTime) -> String {
    const SECOND: usize = "2026-01-01T00:00:00".len();
    thread_local! {
        static LAST: Cell<Option<(u64, [u8; SECOND])>> = const { Cell::new(None) };
    }
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let date = match LAST.get() {
        Some((kept, date)) if kept == seconds => date,
        _ => {
            let whole = UNIX_EPOCH + Duration::from_secs(seconds);
            let text = humantime::format_rfc3339_seconds(whole).to_string();
            let mut date = [0; SECOND];
            date.copy_from_slice(&text.as_bytes()[..SECOND]);
            LAST.set(Some((seconds, date)));
            date
        }
    };
    let millis = since.subsec_millis();
    let mut text = String::with_capacity(SECOND + 5);
    // ASCII digits and separators, from humantime.
    text.push_str(std::str::from_utf8(&date).unwrap_or_default());
    text.push('.');
    for digit in [millis / 100, millis / 10 % 10, millis % 10] {
        text.push(char::from(b'0' + digit as u8));
    }
    text.push('Z');
    text
}

fn millis(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

tokio::task_local! {
    /// Set by a layer inside the audit layer that refused a call with a
    /// result (a guardrail, a size limit): the rule's name.
    static REFUSAL: RefCell<Option<String>>;
}

/// Tells the audit layer around this call that `rule` refused it (the call
/// is answered with an `isError` result, which the trail would otherwise
/// record as the tool's own). Does nothing when no audit layer is set.
pub(crate) fn note_refusal(rule: &str) {
    let _ = REFUSAL.try_with(|r| *r.borrow_mut() = Some(rule.to_owned()));
}

/// The outermost configured layer: everything inside it, refusals
/// included, is recorded.
#[derive(Debug)]
pub(crate) struct AuditLayer {
    pub(crate) trail: AuditTrail,
    /// Keeps the last calls recorded, for the status.
    pub(crate) stats: Arc<CallStats>,
}

impl Layer for AuditLayer {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        // The status page looking at the gateway is no call of a client.
        if call.request.context.client.session.is_observer() {
            return next.run(call);
        }
        let started = Instant::now();
        let none = Value::Object(Default::default());
        let arguments = call.request.params.get("arguments").unwrap_or(&none);
        let context = &call.request.context;
        let session = &context.client.session;
        let (request_bytes, arguments_sha256) = size_and_sha256(arguments);
        let mut record = AuditRecord {
            time: AuditRecord::now(),
            kind: "call",
            identity: match context.identity.name.as_str() {
                "" => "anonymous".to_owned(),
                name => name.to_owned(),
            },
            identity_kind: context.identity.kind.as_str(),
            session: (!session.is_stateless()).then(|| session.id().to_owned()),
            source: call.source().to_owned(),
            tool: call.target.clone(),
            method: call.request.method,
            outcome: Outcome::Ok,
            reason: None,
            duration_ms: 0.0,
            request_bytes,
            response_bytes: 0,
            arguments_sha256,
            model: None,
            prompt_tokens: None,
            completion_tokens: None,
        };
        Box::pin(async move {
            let (outcome, refusal) = REFUSAL
                .scope(RefCell::new(None), async move {
                    let outcome = next.run(call).await;
                    (outcome, REFUSAL.with(|r| r.borrow_mut().take()))
                })
                .await;
            record.duration_ms = millis(started);
            match &outcome {
                Ok(result) => {
                    record.response_bytes = result_len(result);
                    record.outcome = match &refusal {
                        Some(_) => Outcome::Refused,
                        None if result.is_error() => Outcome::IsError,
                        None => Outcome::Ok,
                    };
                    record.reason = refusal;
                }
                Err(e) => {
                    (record.outcome, record.reason) = error_outcome(e, refusal);
                }
            }
            self.trail.record(&record);
            if record.method == mcpyard_proto::methods::TOOLS_CALL {
                self.stats.audited(RecentCall {
                    time: record.time,
                    identity: record.identity,
                    tool: record.tool,
                    outcome: record.outcome.as_str(),
                    duration_ms: record.duration_ms,
                });
            }
            outcome
        })
    }
}

/// How a routing error is recorded: refused by a rule, or an error and
/// whose fault it was.
fn error_outcome(error: &RouteError, refusal: Option<String>) -> (Outcome, Option<String>) {
    match refusal {
        Some(rule) => (Outcome::Refused, Some(rule)),
        None => match error {
            RouteError::Denied { rule, .. } => (
                Outcome::Refused,
                Some(match rule {
                    Some(index) => format!("policy.rules[{index}]"),
                    None => "policy default".to_owned(),
                }),
            ),
            RouteError::Limited { limit, .. } => (Outcome::Limited, Some(limit.clone())),
            RouteError::Busy { .. } => (Outcome::Limited, Some("max_in_flight".to_owned())),
            _ => (Outcome::Error, Some(error.fault().as_str().to_owned())),
        },
    }
}

/// What the writer thread is handed.
#[derive(Debug)]
enum Entry {
    Line(Vec<u8>),
    /// Answered once the lines queued before it are written out.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Appends lines to the file; before a line would take it past
/// `max_size`, shifts `file` → `file.1` → … → `file.keep` (the oldest is
/// deleted) and starts a new file.
struct RotatingWriter {
    file: AuditFile,
    out: BufWriter<File>,
    size: u64,
}

impl RotatingWriter {
    fn open(file: AuditFile) -> std::io::Result<Self> {
        let out = open_append(&file.path)?;
        let size = out.metadata()?.len();
        Ok(Self {
            file,
            out: BufWriter::new(out),
            size,
        })
    }

    /// Writes what arrives until every sender is gone. A line that finds
    /// the writer idle is written at once; after each write the writer
    /// sleeps [`COALESCE`] and writes what gathered meanwhile in one go,
    /// until a sleep gathers nothing.
    fn run(mut self, queue: Receiver<Entry>) {
        let mut flushed = Vec::new();
        while let Ok(entry) = queue.recv() {
            self.take(entry, &mut flushed);
            loop {
                while let Ok(entry) = queue.try_recv() {
                    self.take(entry, &mut flushed);
                }
                if let Err(e) = self.out.flush() {
                    tracing::warn!(error = %e, "cannot write the audit file");
                }
                for done in flushed.drain(..) {
                    let _ = done.send(());
                }
                std::thread::sleep(COALESCE);
                match queue.try_recv() {
                    Ok(entry) => self.take(entry, &mut flushed),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
        }
    }

    fn take(&mut self, entry: Entry, flushed: &mut Vec<tokio::sync::oneshot::Sender<()>>) {
        match entry {
            Entry::Line(line) => self.write(&line),
            Entry::Flush(done) => flushed.push(done),
        }
    }

    fn write(&mut self, line: &[u8]) {
        let len = line.len() as u64;
        if self.size > 0 && self.size + len > self.file.max_size {
            if let Err(e) = self.rotate() {
                tracing::warn!(error = %e, file = %self.file.path.display(), "cannot rotate the audit file");
            }
        }
        match self.out.write_all(line) {
            Ok(()) => self.size += len,
            Err(e) => tracing::warn!(error = %e, "cannot write the audit file"),
        }
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        if self.file.keep == 0 {
            std::fs::remove_file(&self.file.path)?;
        } else {
            let _ = std::fs::remove_file(self.file.rotated(self.file.keep));
            for n in (1..self.file.keep).rev() {
                let from = self.file.rotated(n);
                if from.exists() {
                    std::fs::rename(&from, self.file.rotated(n + 1))?;
                }
            }
            std::fs::rename(&self.file.path, self.file.rotated(1))?;
        }
        self.out = BufWriter::new(open_append(&self.file.path)?);
        self.size = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Who called what is for the operator's eyes only.
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize) -> AuditRecord {
        AuditRecord {
            time: AuditRecord::now(),
            kind: "call",
            identity: "alice".into(),
            identity_kind: "api_key",
            session: None,
            source: "s".into(),
            tool: format!("s__t{n}"),
            method: "tools/call",
            outcome: Outcome::Ok,
            reason: None,
            duration_ms: 1.5,
            request_bytes: 2,
            response_bytes: 3,
            arguments_sha256: size_and_sha256(&serde_json::json!({})).1,
            model: None,
            prompt_tokens: None,
            completion_tokens: None,
        }
    }

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }

    #[test]
    fn every_outcome_is_listed_at_its_index() {
        for (index, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome as usize, index);
            // A new outcome fails to compile here until it is listed.
            match outcome {
                Outcome::Ok
                | Outcome::IsError
                | Outcome::Error
                | Outcome::Refused
                | Outcome::Limited => {}
            }
        }
    }

    #[test]
    fn the_file_rotates_by_size_and_keeps_n() {
        let dir = tempfile::tempdir().unwrap();
        let file = AuditFile {
            path: dir.path().join("audit.jsonl"),
            max_size: 1000,
            keep: 2,
        };
        let trail = AuditTrail::open(file.clone()).unwrap();
        for n in 0..40 {
            trail.record(&record(n));
        }
        // Dropping the last handle lets the writer finish; wait for it.
        drop(trail);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        let all = || {
            let mut seen = Vec::new();
            for p in [file.rotated(2), file.rotated(1), file.path.clone()] {
                seen.extend(lines(&p));
            }
            seen
        };
        while all().last().map(|l| l["tool"].clone()) != Some("s__t39".into()) {
            assert!(Instant::now() < deadline, "the writer wrote every line");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!file.rotated(3).exists());
        for p in [file.rotated(2), file.rotated(1), file.path.clone()] {
            let len = std::fs::metadata(&p).unwrap().len();
            assert!(len <= 1000, "{} is {len} bytes", p.display());
        }
        // The newest lines are kept, in order, the oldest were deleted.
        let tools: Vec<String> = all()
            .iter()
            .map(|l| l["tool"].as_str().unwrap().to_owned())
            .collect();
        let first: usize = tools[0].trim_start_matches("s__t").parse().unwrap();
        assert!(first > 0, "the oldest lines went with the oldest file");
        let expected: Vec<String> = (first..40).map(|n| format!("s__t{n}")).collect();
        assert_eq!(tools, expected);
    }

    #[tokio::test]
    async fn a_flush_returns_once_every_record_queued_before_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = AuditFile {
            path: dir.path().join("audit.jsonl"),
            max_size: AuditFile::DEFAULT_MAX_SIZE,
            keep: 1,
        };
        let trail = AuditTrail::open(file.clone()).unwrap();
        // Two bursts: the second finds the writer gathering after the first.
        for burst in 0..2 {
            for n in 0..300 {
                trail.record(&record(burst * 300 + n));
            }
            trail.flush().await;
            let tools: Vec<String> = lines(&file.path)
                .iter()
                .map(|l| l["tool"].as_str().unwrap().to_owned())
                .collect();
            let expected: Vec<String> =
                (0..(burst + 1) * 300).map(|n| format!("s__t{n}")).collect();
            assert_eq!(tools, expected);
        }
    }

    #[test]
    fn times_are_written_as_humantime_writes_them() {
        let start = UNIX_EPOCH + Duration::from_secs(1_796_600_000);
        // Across seconds, minutes, a day and a year, back and forth: the
        // kept second is only used for its own second.
        for step in [
            0,
            1,
            999,
            1000,
            1001,
            59_999,
            60_000,
            86_399_999,
            86_400_000,
            0,
            31_536_000_000,
            7,
        ] {
            for at in [
                start + Duration::from_millis(step),
                UNIX_EPOCH + Duration::from_millis(step),
            ] {
                assert_eq!(
                    rfc3339_millis(at),
                    humantime::format_rfc3339_millis(at).to_string()
                );
            }
        }
        let micro = start + Duration::from_micros(123_999);
        assert_eq!(
            rfc3339_millis(micro),
            humantime::format_rfc3339_millis(micro).to_string()
        );
    }

    #[test]
    fn the_arguments_are_sized_and_hashed_as_their_compact_json() {
        let arguments = serde_json::json!({"message": "hé"});
        assert_eq!(
            size_and_sha256(&arguments),
            (
                17,
                "85c7bfa034a78f7e783fafdb61eba1e7ad6274073b3630b68802934578c0a510".to_owned()
            )
        );
        assert_eq!(
            size_and_sha256(&arguments).0,
            crate::call::json_len(&arguments)
        );
    }

    /// A record with a replica's name, as serde writes it.
    #[derive(Serialize)]
    struct Line<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        replica: Option<&'a str>,
        #[serde(flatten)]
        record: &'a AuditRecord,
    }

    #[test]
    fn a_line_is_written_as_serde_writes_the_record() {
        let plain = record(1);
        let mut full = record(2);
        full.identity = "quote \" backslash \\ tab \t bell \u{7} é ✓".into();
        full.session = Some("9b1d-\u{1f}".into());
        full.reason = Some("policy.rules[0]".into());
        full.duration_ms = 1234.0;
        full.request_bytes = u64::MAX;
        full.model = Some("qwen\n3".into());
        full.prompt_tokens = Some(0);
        full.completion_tokens = Some(17);
        let mut tiny = record(3);
        tiny.duration_ms = 0.001;
        tiny.identity = String::new();
        for record in [&plain, &full, &tiny] {
            for replica in [None, Some("replica \"b\""), Some("a")] {
                let mut expected = serde_json::to_vec(&Line { replica, record }).unwrap();
                expected.push(b'\n');
                let line = record.to_line(replica);
                assert_eq!(
                    String::from_utf8(line).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
    }

    #[test]
    fn a_record_serializes_without_empty_fields() {
        let line = serde_json::to_value(record(1)).unwrap();
        assert_eq!(line["outcome"], "ok");
        assert!(line.get("session").is_none() && line.get("model").is_none());
        assert_eq!(
            line["arguments_sha256"],
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        let refused = Outcome::IsError;
        assert_eq!(serde_json::to_value(refused).unwrap(), "isError");
    }
}
