//! State that outlives one request and that every replica of a team's
//! gateway must see alike: the sessions clients hold, the tasks the
//! gateway runs for them and the rate-limit buckets their calls draw from.
//!
//! One process keeps it in its own memory ([`MemoryState`], the default:
//! the session registry is the only record, and rate limits count in
//! process). Several replicas behind a load balancer share it in Redis
//! ([`RedisState`]): a session opened on one is found by the others from
//! its id, and a bucket is one bucket whichever replica a call lands on.
//! What is in flight (a call, a stream, an upstream connection) stays with
//! the replica that holds it.

mod redis;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{Identity, IdentityKind};

pub use self::redis::{RedisSettings, RedisState};

/// The shared store could not be used (unreachable, refused, too slow).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the state backend failed: {0}")]
pub struct StateError(pub String);

/// What a replica needs to serve a session another replica opened: who
/// owns it and what its client negotiated. Groups and scopes are not
/// kept: they come with each request's credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub identity_kind: String,
    pub identity_name: String,
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_info: Value,
    pub log_level: Option<String>,
    pub initialized: bool,
}

impl SessionRecord {
    /// The owner as an identity without groups or scopes (the request that
    /// uses the session brings its own).
    pub fn owner(&self) -> Identity {
        Identity {
            name: self.identity_name.clone(),
            kind: IdentityKind::from_name(&self.identity_kind),
            groups: Vec::new(),
            scopes: Vec::new(),
        }
    }
}

/// A task the gateway runs, as every replica sees it: the replica that
/// runs it writes each change, the others answer `tasks/*` from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The requestor it belongs to (a session id or a qualified identity;
    /// `None`: unbound).
    pub owner: Option<String>,
    /// The process that runs it ([`StateBackend::instance`]).
    pub instance: String,
    /// Creation time in milliseconds since the epoch: the listing order.
    pub created_ms: u64,
    /// The `Task` as `tasks/get` answers it.
    pub task: Value,
    /// Once terminal: what the call returned, or its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<mcpyard_proto::ErrorObject>,
}

impl TaskRecord {
    /// The task's status as its `Task` says.
    pub fn status(&self) -> &str {
        self.task
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("working")
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self.status(), "completed" | "failed" | "cancelled")
    }
}

/// Whether a new session fits under the caps, counted across replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAdmission {
    Admitted,
    /// `max_sessions` live sessions already.
    Full,
    /// Its owner has `max_sessions_per_identity` already.
    FullForOwner,
}

/// What names, among what a process holds ([`StateBackend::note_held`]),
/// the stream of `session` (its GET stream, or its legacy SSE stream).
pub(crate) fn stream_key(session: &str) -> String {
    format!("stream:{session}")
}

/// What one replica tells the others through the shared state.
#[derive(Debug, Clone, PartialEq)]
pub enum StateEvent {
    /// A session was deleted.
    SessionEnded(String),
    /// A session's record changed on some replica (its log level).
    SessionChanged {
        session: String,
        record: SessionRecord,
    },
    /// A client's message for whichever replica waits for it in `session`.
    ForSession { session: String, message: String },
    /// A message for the client of `session`, for this replica, which
    /// holds its stream (or held it, and logs what comes meanwhile).
    ToClient { session: String, message: String },
    /// A task's record changed.
    TaskChanged(String),
    /// A client cancelled a task; the replica that runs it stops it.
    TaskCancelled(String),
    /// A client waits on another replica with `tasks/result` for this
    /// task: what the task asks of it goes on the session's stream.
    TaskResultWaiting(String),
    /// Another replica heard one of the lists it serves change (the
    /// notification's method): the streams this replica holds are told.
    ListChanged(String),
    /// Another replica asks this one to serve a request for it (one whose
    /// state this one holds); answer with [`StateBackend::reply`].
    Asked {
        from: String,
        id: u64,
        question: String,
    },
    /// The channel was (re)joined: what was said meanwhile is lost.
    Rejoined,
}

/// Where shared state is kept. Implementations answer within their own
/// timeout: a store that does not answer is an error, never a hang.
#[async_trait]
pub trait StateBackend: Send + Sync + std::fmt::Debug + 'static {
    /// `memory` or `redis`, for the status and the metrics.
    fn kind(&self) -> &'static str;

    /// Whether other replicas share this store: when false, sessions live
    /// in the registry alone and nothing below is asked for them.
    fn shared(&self) -> bool;

    /// Whether the store answers now.
    async fn ping(&self) -> Result<(), StateError>;

    /// Whether the last command succeeded (for the metrics, which cannot wait).
    fn healthy(&self) -> bool {
        true
    }

    /// Commands that failed since start.
    fn failures(&self) -> u64 {
        0
    }

    /// Keeps the record of session `id` for `ttl` (replacing an older one).
    async fn save_session(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> Result<(), StateError>;

    /// Saves the changed record of session `id` (its client set a log
    /// level) and tells every replica, whose copies of the session take
    /// the change (see [`StateEvent::SessionChanged`]).
    async fn update_session(
        &self,
        id: &str,
        record: &SessionRecord,
        ttl: Duration,
    ) -> Result<(), StateError> {
        self.save_session(id, record, ttl).await
    }

    /// Counts new session `id` of `owner` (a qualified identity) among the
    /// team's sessions for `ttl`, unless that would pass `total` sessions
    /// in all or `per_owner` of that owner. A store no other replica
    /// shares admits every session (the registry applies the caps).
    async fn admit_session(
        &self,
        _id: &str,
        _owner: &str,
        _caps: (usize, usize),
        _ttl: Duration,
    ) -> Result<SessionAdmission, StateError> {
        Ok(SessionAdmission::Admitted)
    }

    /// The record of session `id`, when some replica saved it and it has
    /// not expired or been deleted.
    async fn load_session(&self, id: &str) -> Result<Option<SessionRecord>, StateError>;

    /// Keeps session `id` for another `ttl`: it is in use.
    async fn refresh_session(&self, id: &str, ttl: Duration) -> Result<(), StateError>;

    /// Deletes session `id` and tells every replica (see
    /// [`StateBackend::events`]).
    async fn delete_session(&self, id: &str) -> Result<(), StateError>;

    /// Hands a client's message to the replica that waits for it (the
    /// answer to a request it relayed, a cancellation of a call it runs):
    /// every replica hears it, the one that holds the waiting part takes it.
    async fn forward(&self, session: &str, message: &str) -> Result<(), StateError>;

    /// The store's generation: the same while it keeps its data, another
    /// once it lost them (a Redis restarted empty). `None`: not shared.
    async fn epoch(&self) -> Result<Option<String>, StateError> {
        Ok(None)
    }

    /// This process among the replicas: a task's record names the one that
    /// runs it. Alive while [`StateBackend::instance_alive`] says so.
    fn instance(&self) -> &str {
        "local"
    }

    /// Whether the process `instance` still runs (it renews a mark of
    /// life while it does).
    async fn instance_alive(&self, _instance: &str) -> Result<bool, StateError> {
        Ok(true)
    }

    /// Writes task `id`'s record unless the stored one is already terminal
    /// (terminal is final), and tells every replica. `ttl`: the task is
    /// new, and the record lives that long; `None`: a change, which never
    /// brings back a record that expired. Returns whether it was written.
    /// A store that no other replica shares keeps no tasks (the gateway's
    /// own task store is their only record) and writes nothing.
    async fn save_task(
        &self,
        _id: &str,
        _record: &TaskRecord,
        _ttl: Option<Duration>,
    ) -> Result<bool, StateError> {
        Ok(false)
    }

    /// Task `id`'s record, unless it expired or was never shared.
    async fn load_task(&self, _id: &str) -> Result<Option<TaskRecord>, StateError> {
        Ok(None)
    }

    /// Every live task of `owner` with its id, oldest first.
    async fn owner_tasks(
        &self,
        _owner: Option<&str>,
    ) -> Result<Vec<(String, TaskRecord)>, StateError> {
        Ok(Vec::new())
    }

    /// Asks the replica that runs task `id` to stop it.
    async fn cancel_task(&self, _id: &str) -> Result<(), StateError> {
        Ok(())
    }

    /// Tells the replica that runs task `id` that its client waits here
    /// with `tasks/result` (see [`StateEvent::TaskResultWaiting`]).
    async fn task_result_waiting(&self, _id: &str) -> Result<(), StateError> {
        Ok(())
    }

    /// Hands a message for the client of `session` to the replica that
    /// holds the session's stream ([`stream_key`], noted with
    /// [`StateBackend::note_held`]). While none does, the message is
    /// appended to the stream's replay log, trimmed to about `keep`
    /// entries, when the stream wrote one: the client reconnecting with
    /// its last event id gets it.
    async fn to_client(
        &self,
        _session: &str,
        _message: &str,
        _keep: usize,
    ) -> Result<(), StateError> {
        Ok(())
    }

    /// Tells the other replicas that a list changed here (`method`: the
    /// `notifications/*/list_changed` sent), for the streams they hold
    /// (see [`StateEvent::ListChanged`]).
    async fn list_changed(&self, _method: &str) -> Result<(), StateError> {
        Ok(())
    }

    /// Appends `message` (JSON), just written on the GET stream of
    /// `session`, to that stream's replay log, trimmed to about `keep`
    /// entries and kept for `ttl`; the entry's id. `None`: this store keeps
    /// no log, and the session keeps its own in process.
    async fn append_stream(
        &self,
        _session: &str,
        _message: &str,
        _keep: usize,
        _ttl: Duration,
    ) -> Result<Option<String>, StateError> {
        Ok(None)
    }

    /// The entries of `session`'s replay log after entry `after`, oldest
    /// first, as (id, message). `None` when `after` is not in the log
    /// (unknown, or trimmed away): nothing is replayed then, since what
    /// followed it is no longer whole. A store that keeps no log holds none.
    async fn stream_after(
        &self,
        _session: &str,
        _after: &str,
    ) -> Result<Option<Vec<(String, String)>>, StateError> {
        Ok(None)
    }

    /// Notes that this process holds what `key` names (a suspended call,
    /// an upstream's task), for `ttl`: another replica that meets it asks
    /// this one.
    async fn note_held(&self, _key: &str, _ttl: Duration) -> Result<(), StateError> {
        Ok(())
    }

    /// Takes back this process's note that it holds what `key` names (a
    /// note of another process stays).
    async fn release_held(&self, _key: &str) -> Result<(), StateError> {
        Ok(())
    }

    /// Notes that an upstream runs task `id` for `owner` (a session id or
    /// a qualified identity) for `ttl`: every replica's `tasks/list` finds
    /// it (the replica that passed the call holds it, see
    /// [`StateBackend::note_held`]).
    async fn note_upstream_task(
        &self,
        _owner: &str,
        _id: &str,
        _ttl: Duration,
    ) -> Result<(), StateError> {
        Ok(())
    }

    /// The ids of the tasks upstreams run for `owner`, noted and not
    /// expired.
    async fn upstream_tasks(&self, _owner: &str) -> Result<Vec<String>, StateError> {
        Ok(Vec::new())
    }

    /// The process that holds what `key` names, if one noted it.
    async fn holder(&self, _key: &str) -> Result<Option<String>, StateError> {
        Ok(None)
    }

    /// Asks process `instance` a question and waits, at most `timeout`, for
    /// its reply (see [`StateEvent::Asked`]).
    async fn ask(
        &self,
        _instance: &str,
        _question: &str,
        _timeout: Duration,
    ) -> Result<String, StateError> {
        Err(StateError("no other replica shares this state".into()))
    }

    /// Replies to question `id` of process `to`.
    async fn reply(&self, _to: &str, _id: u64, _answer: &str) -> Result<(), StateError> {
        Ok(())
    }

    /// What the other replicas say, as they say it; `None` when there are
    /// none.
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StateEvent>>;

    /// Stops what listens in the background (shutdown).
    fn close(&self) {}
}

/// One process alone: the session registry is the only record of a
/// session. Rate limits count in process
/// ([`LocalRateLimiter`](crate::governance::LocalRateLimiter)), or in Redis
/// ([`SharedRateLimiter`](crate::governance::SharedRateLimiter)).
#[derive(Debug, Default)]
pub struct MemoryState;

#[async_trait]
impl StateBackend for MemoryState {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn shared(&self) -> bool {
        false
    }

    async fn ping(&self) -> Result<(), StateError> {
        Ok(())
    }

    async fn save_session(
        &self,
        _: &str,
        _: &SessionRecord,
        _: Duration,
    ) -> Result<(), StateError> {
        Ok(())
    }

    async fn load_session(&self, _: &str) -> Result<Option<SessionRecord>, StateError> {
        Ok(None)
    }

    async fn refresh_session(&self, _: &str, _: Duration) -> Result<(), StateError> {
        Ok(())
    }

    async fn delete_session(&self, _: &str) -> Result<(), StateError> {
        Ok(())
    }

    async fn forward(&self, _: &str, _: &str) -> Result<(), StateError> {
        Ok(())
    }

    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StateEvent>> {
        None
    }
}
