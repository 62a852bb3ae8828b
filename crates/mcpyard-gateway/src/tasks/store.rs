//! The store of the tasks the gateway runs, and the handle each running
//! call holds on its task.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use mcpyard_proto::{codes, ErrorObject};
use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::status::{TaskError, TaskEvent, TaskLimits, TaskStatus};
use super::wire::with_related_task;
use crate::Outbound;

/// A `tasks/result` waiting on a task: requests made on the task's behalf
/// go on its stream (`None`: the waiter has none, use the session's).
#[derive(Debug, Clone)]
pub(crate) struct ResultWaiter {
    id: u64,
    pub(crate) stream: Option<Outbound>,
}

type Listener = Arc<dyn Fn(TaskEvent) + Send + Sync>;
type Outcome = Result<Value, ErrorObject>;

/// The tasks the gateway runs. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TaskStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state();
        f.debug_struct("TaskStore")
            .field("tasks", &state.tasks.len())
            .field("limits", &self.shared.limits)
            .finish()
    }
}

struct Shared {
    limits: TaskLimits,
    /// Numbers `tasks/result` waiters, so one leaving clears only itself.
    next_waiter: AtomicU64,
    state: Mutex<State>,
    listener: Listener,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Entry>,
    /// Creation order, for stable `tasks/list` pages and cursors.
    next_seq: u64,
}

struct Entry {
    seq: u64,
    owner: Option<String>,
    status: TaskStatus,
    status_message: Option<String>,
    created_at: SystemTime,
    updated_at: SystemTime,
    ttl: Duration,
    expires_at: Instant,
    /// Set exactly when the status becomes terminal.
    outcome: Option<Outcome>,
    cancel: CancellationToken,
    /// `tasks/result` waiters watch this; dropping the entry wakes them.
    status_tx: watch::Sender<TaskStatus>,
    /// The latest `tasks/result` still waiting, if any.
    result_waiter: watch::Sender<Option<ResultWaiter>>,
}

impl Entry {
    fn to_json(&self, task_id: &str, limits: &TaskLimits) -> Value {
        let mut task = Map::new();
        task.insert("taskId".into(), Value::String(task_id.to_owned()));
        task.insert("status".into(), Value::String(self.status.as_str().into()));
        if let Some(message) = &self.status_message {
            task.insert("statusMessage".into(), Value::String(message.clone()));
        }
        task.insert("createdAt".into(), Value::String(rfc3339(self.created_at)));
        task.insert(
            "lastUpdatedAt".into(),
            Value::String(rfc3339(self.updated_at)),
        );
        task.insert("ttl".into(), json!(millis(self.ttl)));
        task.insert("pollInterval".into(), json!(millis(limits.poll_interval)));
        Value::Object(task)
    }

    fn visible_to(&self, owner: Option<&str>) -> bool {
        self.owner.as_deref() == owner
    }

    /// Moves to `status` unless already terminal (terminal is final: a call
    /// finishing after `tasks/cancel` leaves the task cancelled). Returns
    /// whether it moved.
    fn transition(&mut self, status: TaskStatus, message: Option<String>) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.status = status;
        self.status_message = message;
        self.updated_at = SystemTime::now();
        self.status_tx.send_replace(status);
        true
    }
}

pub(super) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

const CURSOR_PREFIX: &str = "tasks:";

impl Shared {
    /// The state even if a panic poisoned the lock: every update leaves the
    /// map consistent, and a task operation must never panic a client's call.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, event: TaskEvent) {
        (self.listener)(event);
    }

    /// Moves a task and reports the change (outside the lock).
    fn transition(
        &self,
        task_id: &str,
        status: TaskStatus,
        message: Option<String>,
        outcome: Option<Outcome>,
    ) {
        let event = {
            let mut state = self.state();
            let Some(entry) = state.tasks.get_mut(task_id) else {
                return;
            };
            if !entry.transition(status, message) {
                return;
            }
            if status.is_terminal() {
                entry.outcome = outcome;
            }
            TaskEvent {
                owner: entry.owner.clone(),
                task: entry.to_json(task_id, &self.limits),
                outcome: entry.outcome.clone(),
            }
        };
        self.emit(event);
    }
}

/// Drops every expired task, cancelling what still runs.
fn purge(state: &mut State, now: Instant) {
    state.tasks.retain(|id, entry| {
        let keep = entry.expires_at > now;
        if !keep {
            tracing::debug!(task = %id, status = %entry.status, "task expired");
            entry.cancel.cancel();
        }
        keep
    });
}

/// Finds a task the requestor may see. An expired one is deleted here and
/// reported as expired; one of another owner is "not found".
fn lookup<'a>(
    state: &'a mut State,
    task_id: &str,
    owner: Option<&str>,
) -> Result<&'a mut Entry, TaskError> {
    let now = Instant::now();
    match state.tasks.get(task_id) {
        Some(entry) if !entry.visible_to(owner) => {
            return Err(TaskError::NotFound {
                task_id: task_id.to_owned(),
            })
        }
        Some(entry) if entry.expires_at <= now => {
            purge(state, now);
            return Err(TaskError::Expired {
                task_id: task_id.to_owned(),
            });
        }
        _ => {}
    }
    purge(state, now);
    state
        .tasks
        .get_mut(task_id)
        .ok_or_else(|| TaskError::NotFound {
            task_id: task_id.to_owned(),
        })
}

impl TaskStore {
    /// An empty store; `on_status` hears every status change after creation
    /// (it runs outside the store's lock and must not block).
    pub(crate) fn new(
        limits: TaskLimits,
        on_status: impl Fn(TaskEvent) + Send + Sync + 'static,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                limits,
                next_waiter: AtomicU64::new(0),
                state: Mutex::default(),
                listener: Arc::new(on_status),
            }),
        }
    }

    /// Creates a `working` task for `owner` (a session id, `None` when
    /// unbound). Returns the `CreateTaskResult` to answer with and the
    /// handle the background call reports through. The task's cancellation
    /// token is a child of `parent` (the gateway's stop token).
    pub(crate) fn create(
        &self,
        owner: Option<&str>,
        requested_ttl_ms: Option<u64>,
        parent: &CancellationToken,
    ) -> Result<(Value, TaskHandle), TaskError> {
        let limits = &self.shared.limits;
        let mut state = self.shared.state();
        let now = Instant::now();
        purge(&mut state, now);
        if state.tasks.len() >= limits.max_tasks {
            return Err(TaskError::TooMany {
                limit: limits.max_tasks,
                scope: "stored tasks in the gateway",
            });
        }
        let running = state
            .tasks
            .values()
            .filter(|e| e.visible_to(owner) && !e.status.is_terminal())
            .count();
        if running >= limits.max_running_per_owner {
            return Err(TaskError::TooMany {
                limit: limits.max_running_per_owner,
                scope: "unfinished tasks per session",
            });
        }
        let task_id = uuid::Uuid::new_v4().to_string();
        let ttl = limits.ttl(requested_ttl_ms);
        let created = SystemTime::now();
        let cancel = parent.child_token();
        let seq = state.next_seq;
        state.next_seq += 1;
        let entry = Entry {
            seq,
            owner: owner.map(str::to_owned),
            status: TaskStatus::Working,
            status_message: None,
            created_at: created,
            updated_at: created,
            ttl,
            expires_at: now + ttl,
            outcome: None,
            cancel: cancel.clone(),
            status_tx: watch::Sender::new(TaskStatus::Working),
            result_waiter: watch::Sender::new(None),
        };
        let task = entry.to_json(&task_id, limits);
        state.tasks.insert(task_id.clone(), entry);
        drop(state);
        tracing::debug!(task = %task_id, ttl_ms = millis(ttl), "task created");
        let handle = TaskHandle {
            shared: self.shared.clone(),
            task_id,
            cancel,
            ttl,
            expires_at: now + ttl,
            finished: false,
            awaiting_input: Arc::default(),
        };
        Ok((json!({ "task": task }), handle))
    }

    /// Whether the gateway holds a task with this id (for any owner): if
    /// so, `tasks/*` for it are the gateway's to answer, else it may be an
    /// upstream's.
    pub(crate) fn owns(&self, task_id: &str) -> bool {
        self.shared.state().tasks.contains_key(task_id)
    }

    /// Whether `owner` has tasks that have not expired: its session must
    /// live on for them to be reachable until their `ttl` ends.
    pub(crate) fn has_tasks(&self, owner: &str) -> bool {
        let mut state = self.shared.state();
        purge(&mut state, Instant::now());
        state
            .tasks
            .values()
            .any(|e| e.owner.as_deref() == Some(owner))
    }

    /// `tasks/get`: the task's current state.
    pub(crate) fn get(&self, task_id: &str, owner: Option<&str>) -> Result<Value, TaskError> {
        let mut state = self.shared.state();
        let entry = lookup(&mut state, task_id, owner)?;
        Ok(entry.to_json(task_id, &self.shared.limits))
    }

    /// A client waits for task `id` with `tasks/result` on another
    /// replica: a request the task makes of it goes on the session's
    /// stream (a `tasks/result` waiting here, with its own stream, keeps
    /// precedence).
    pub(crate) fn result_waiting_elsewhere(&self, id: &str) {
        let waiter_id = self.shared.next_waiter.fetch_add(1, Ordering::Relaxed);
        if let Some(entry) = self.shared.state().tasks.get(id) {
            entry.result_waiter.send_if_modified(|w| {
                let vacant = w.is_none();
                if vacant {
                    *w = Some(ResultWaiter {
                        id: waiter_id,
                        stream: None,
                    });
                }
                vacant
            });
        }
    }

    /// `tasks/result`: waits until the task is terminal (at most until it
    /// expires), then returns exactly what the call returned, a result
    /// stamped with the related-task `_meta`, or its JSON-RPC error.
    /// While it waits, requests the task makes of the requestor go on
    /// `stream` (the stream of this `tasks/result`).
    /// Cancel-safe: dropping the future just stops waiting.
    pub(crate) async fn result(
        &self,
        task_id: &str,
        owner: Option<&str>,
        stream: Option<Outbound>,
    ) -> Result<Value, ErrorObject> {
        let waiter_id = self.shared.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (mut status, expires_at) = {
            let mut state = self.shared.state();
            let entry = lookup(&mut state, task_id, owner)?;
            if let Some(outcome) = &entry.outcome {
                return stamped(outcome.clone(), task_id);
            }
            entry.result_waiter.send_replace(Some(ResultWaiter {
                id: waiter_id,
                stream,
            }));
            (entry.status_tx.subscribe(), entry.expires_at)
        };
        let _leaving = WaiterGuard {
            shared: &self.shared,
            task_id,
            waiter_id,
        };
        tokio::select! {
            r = status.wait_for(|s| s.is_terminal()) => if r.is_err() {
                // The entry was dropped: by expiry, or by the end of its
                // session.
                let task_id = task_id.to_owned();
                return Err(if Instant::now() >= expires_at {
                    TaskError::Expired { task_id }
                } else {
                    TaskError::NotFound { task_id }
                }
                .into());
            },
            _ = tokio::time::sleep_until(expires_at) => {
                purge(&mut self.shared.state(), Instant::now());
                return Err(TaskError::Expired { task_id: task_id.to_owned() }.into());
            }
        }
        let mut state = self.shared.state();
        let entry = lookup(&mut state, task_id, owner)?;
        match &entry.outcome {
            Some(outcome) => stamped(outcome.clone(), task_id),
            None => Err(ErrorObject::internal("the task ended without an outcome")),
        }
    }

    /// `tasks/list`: the owner's tasks, oldest first, a page at a time.
    pub(crate) fn list(
        &self,
        owner: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<Value, TaskError> {
        let limits = &self.shared.limits;
        let mut state = self.shared.state();
        let after = match cursor {
            None => None,
            Some(c) => {
                let seq = c
                    .strip_prefix(CURSOR_PREFIX)
                    .and_then(|n| n.parse::<u64>().ok())
                    .filter(|seq| *seq < state.next_seq)
                    .ok_or(TaskError::BadCursor)?;
                Some(seq)
            }
        };
        purge(&mut state, Instant::now());
        let mut mine: Vec<(&String, &Entry)> = state
            .tasks
            .iter()
            .filter(|(_, e)| {
                e.visible_to(owner)
                    && match after {
                        Some(a) => e.seq > a,
                        None => true,
                    }
            })
            .collect();
        mine.sort_unstable_by_key(|(_, e)| e.seq);
        let more = mine.len() > limits.page_size;
        mine.truncate(limits.page_size);
        let tasks: Vec<Value> = mine.iter().map(|(id, e)| e.to_json(id, limits)).collect();
        let mut page = json!({ "tasks": tasks });
        if more {
            if let Some((_, last)) = mine.last() {
                page["nextCursor"] = Value::String(format!("{CURSOR_PREFIX}{}", last.seq));
            }
        }
        Ok(page)
    }

    /// `tasks/cancel`: stops the call and marks the task cancelled before
    /// answering with its state; -32602 when it is already terminal.
    pub(crate) fn cancel(&self, task_id: &str, owner: Option<&str>) -> Result<Value, TaskError> {
        let (task, event) = {
            let mut state = self.shared.state();
            let entry = lookup(&mut state, task_id, owner)?;
            if entry.status.is_terminal() {
                return Err(TaskError::Terminal {
                    task_id: task_id.to_owned(),
                    status: entry.status,
                });
            }
            entry.transition(
                TaskStatus::Cancelled,
                Some("The task was cancelled by request.".into()),
            );
            entry.outcome = Some(Err(cancelled_error(task_id)));
            entry.cancel.cancel();
            let task = entry.to_json(task_id, &self.shared.limits);
            let event = TaskEvent {
                owner: entry.owner.clone(),
                task: task.clone(),
                outcome: entry.outcome.clone(),
            };
            (task, event)
        };
        tracing::debug!(task = %task_id, "task cancelled by request");
        self.shared.emit(event);
        Ok(task)
    }

    /// Stops a task that runs here, for a `tasks/cancel` another replica
    /// accepted (it checked the requestor).
    pub(crate) fn cancel_for_another_replica(&self, task_id: &str) {
        let owner = self
            .shared
            .state()
            .tasks
            .get(task_id)
            .map(|e| e.owner.clone());
        if let Some(owner) = owner {
            let _ = self.cancel(task_id, owner.as_deref());
        }
    }

    /// The ids of the tasks that run here and have not finished.
    pub(crate) fn unfinished(&self) -> Vec<String> {
        self.shared
            .state()
            .tasks
            .iter()
            .filter(|(_, e)| !e.status.is_terminal())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Forgets every task of a session that ended, stopping those that run:
    /// nobody can reach them any more.
    pub(crate) fn end_owner(&self, owner: &str) {
        self.shared.state().tasks.retain(|_, entry| {
            let keep = entry.owner.as_deref() != Some(owner);
            if !keep {
                entry.cancel.cancel();
            }
            keep
        });
    }
}

/// Withdraws a `tasks/result` waiter's stream when it stops waiting, unless
/// a later waiter replaced it.
struct WaiterGuard<'a> {
    shared: &'a Shared,
    task_id: &'a str,
    waiter_id: u64,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.shared.state().tasks.get(self.task_id) {
            entry.result_waiter.send_if_modified(|w| {
                let ours = w.as_ref().is_some_and(|w| w.id == self.waiter_id);
                if ours {
                    *w = None;
                }
                ours
            });
        }
    }
}

fn stamped(outcome: Outcome, task_id: &str) -> Outcome {
    outcome.map(|result| with_related_task(result, task_id))
}

/// What `tasks/result` answers for a cancelled task: the call has no result,
/// so it gets the error a cancelled call gets elsewhere in the gateway.
pub(super) fn cancelled_error(task_id: &str) -> ErrorObject {
    ErrorObject::new(codes::REQUEST_TIMEOUT, "The task was cancelled")
        .with_data(json!({ "taskId": task_id, "status": "cancelled" }))
}

/// The `statusMessage` of a tool result with `isError: true`: its first
/// text block, shortened.
fn tool_error_message(result: &Value) -> String {
    const MAX: usize = 500;
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|blocks| {
            blocks
                .iter()
                .find_map(|b| b.get("text").and_then(Value::as_str))
        })
        .unwrap_or("the tool reported an error");
    let mut end = text.len().min(MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("Tool execution failed: {}", &text[..end])
}

/// The running side of one task: the background call reports its outcome
/// through this. Dropping it before an outcome fails the task (or cancels
/// it, when its token was cancelled), so a task never stays `working` after
/// its call is gone.
pub(crate) struct TaskHandle {
    shared: Arc<Shared>,
    task_id: String,
    cancel: CancellationToken,
    ttl: Duration,
    expires_at: Instant,
    finished: bool,
    /// Requests of the call awaiting the requestor, shared by every
    /// [`TaskSignal`] of the task.
    awaiting_input: Arc<AtomicUsize>,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task_id", &self.task_id)
            .field("finished", &self.finished)
            .finish()
    }
}

impl TaskHandle {
    /// Cancelled by `tasks/cancel`, by expiry, by the end of the owning
    /// session and by gateway shutdown: give it to the call.
    pub(crate) fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// How long the task lives from its creation.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// What the call uses to ask the requestor for input.
    pub(crate) fn signal(&self) -> TaskSignal {
        TaskSignal {
            shared: self.shared.clone(),
            task_id: self.task_id.clone(),
            awaiting: self.awaiting_input.clone(),
        }
    }

    /// The call returned a `CallToolResult`: completed, or failed when it
    /// has `isError: true` (`tasks/result` returns it either way).
    pub(crate) fn complete(mut self, result: Value) {
        self.finished = true;
        let (status, message) = if result.get("isError") == Some(&Value::Bool(true)) {
            (TaskStatus::Failed, Some(tool_error_message(&result)))
        } else {
            (TaskStatus::Completed, None)
        };
        self.shared
            .transition(&self.task_id, status, message, Some(Ok(result)));
    }

    /// The call ended in a JSON-RPC error: failed, and `tasks/result`
    /// returns that error.
    pub(crate) fn fail(mut self, error: ErrorObject) {
        self.finished = true;
        let message = Some(error.message.clone());
        self.shared
            .transition(&self.task_id, TaskStatus::Failed, message, Some(Err(error)));
    }

    /// Drives `call` (built with [`Self::cancellation`]) to the task's
    /// outcome. Stops it when the task is cancelled or expires.
    pub(crate) async fn run<F>(self, call: F)
    where
        F: Future<Output = Result<Value, ErrorObject>>,
    {
        let cancel = self.cancel.clone();
        tokio::select! {
            outcome = call => match outcome {
                Ok(result) => self.complete(result),
                Err(error) => self.fail(error),
            },
            // tasks/cancel already settled the task; otherwise the session
            // ended or the gateway stops, and Drop records the cancellation.
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep_until(self.expires_at) => {
                let mut state = self.shared.state();
                purge(&mut state, Instant::now());
            }
        }
    }
}

/// What a running call uses to ask its requestor for input on the task's
/// behalf (elicitation, sampling): it moves the task between `working` and
/// `input_required` and finds the `tasks/result` stream to ask on. Every
/// signal of a task shares one count of requests awaiting an answer. Does
/// nothing once the task is terminal or gone.
#[derive(Clone)]
pub(crate) struct TaskSignal {
    shared: Arc<Shared>,
    task_id: String,
    awaiting: Arc<AtomicUsize>,
}

impl fmt::Debug for TaskSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSignal")
            .field("task_id", &self.task_id)
            .finish()
    }
}

impl TaskSignal {
    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task shows `input_required` (with `message`) until the returned
    /// guard is dropped, then `working` again once no other request of it
    /// awaits an answer.
    pub(crate) fn awaiting_input(&self, message: String) -> AwaitingInput {
        if self.awaiting.fetch_add(1, Ordering::SeqCst) == 0 {
            self.shared.transition(
                &self.task_id,
                TaskStatus::InputRequired,
                Some(message),
                None,
            );
        }
        AwaitingInput {
            signal: self.clone(),
        }
    }

    /// Waits, at most `timeout`, until a `tasks/result` of this task is
    /// waiting, and returns it. `None` when none came or the task is gone.
    pub(crate) async fn result_waiter(&self, timeout: Duration) -> Option<ResultWaiter> {
        let mut waiter = self
            .shared
            .state()
            .tasks
            .get(&self.task_id)?
            .result_waiter
            .subscribe();
        let found = tokio::time::timeout(timeout, waiter.wait_for(Option::is_some)).await;
        match found {
            Ok(Ok(w)) => w.clone(),
            _ => None,
        }
    }
}

/// Held while a request of the task awaits the requestor's answer.
pub(crate) struct AwaitingInput {
    signal: TaskSignal,
}

impl Drop for AwaitingInput {
    fn drop(&mut self) {
        let signal = &self.signal;
        if signal.awaiting.fetch_sub(1, Ordering::SeqCst) == 1 {
            signal
                .shared
                .transition(&signal.task_id, TaskStatus::Working, None, None);
        }
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let (status, message, outcome) = if self.cancel.is_cancelled() {
            (
                TaskStatus::Cancelled,
                "The task was stopped by the gateway.".to_owned(),
                Err(cancelled_error(&self.task_id)),
            )
        } else {
            let message = "The task ended without a result.".to_owned();
            (
                TaskStatus::Failed,
                message.clone(),
                Err(ErrorObject::internal(message)),
            )
        };
        self.shared
            .transition(&self.task_id, status, Some(message), Some(outcome));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::wire::{advertise, capability, TaskRequest, RELATED_TASK};
    use mcpyard_proto::Message;

    type Events = Arc<Mutex<Vec<TaskEvent>>>;

    fn store_with(limits: TaskLimits) -> (TaskStore, Events) {
        let events: Events = Arc::default();
        let sink = events.clone();
        let store = TaskStore::new(limits, move |e| sink.lock().expect("events").push(e));
        (store, events)
    }

    fn store() -> (TaskStore, Events) {
        store_with(TaskLimits::default())
    }

    fn create(store: &TaskStore, owner: Option<&str>, ttl: Option<u64>) -> (String, TaskHandle) {
        let (created, handle) = store
            .create(owner, ttl, &CancellationToken::new())
            .expect("task created");
        let id = created["task"]["taskId"]
            .as_str()
            .expect("taskId")
            .to_owned();
        (id, handle)
    }

    fn text_result(text: &str) -> Value {
        json!({"content": [{"type": "text", "text": text}]})
    }

    fn statuses(events: &Events) -> Vec<String> {
        events
            .lock()
            .expect("events")
            .iter()
            .map(|e| e.task["status"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn created_task_has_every_spec_field() {
        let (store, events) = store();
        let (created, _handle) = store
            .create(Some("s1"), None, &CancellationToken::new())
            .expect("created");
        let task = &created["task"];
        let id = task["taskId"].as_str().expect("taskId");
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
        assert_eq!(task["status"], "working");
        assert_eq!(task["ttl"], 3_600_000);
        assert_eq!(task["pollInterval"], 500);
        for field in ["createdAt", "lastUpdatedAt"] {
            let stamp = task[field].as_str().expect(field);
            assert!(humantime::parse_rfc3339(stamp).is_ok(), "{field}: {stamp}");
        }
        assert_eq!(store.get(id, Some("s1")).expect("get"), *task);
        assert!(
            events.lock().expect("events").is_empty(),
            "creation is not a change"
        );
    }

    #[tokio::test]
    async fn requested_ttl_is_clamped_to_the_limits() {
        let (store, _) = store();
        let parent = CancellationToken::new();
        let ttl = |requested| {
            store.create(None, requested, &parent).expect("created").0["task"]["ttl"].clone()
        };
        assert_eq!(ttl(Some(60_000)), 60_000);
        assert_eq!(ttl(Some(0)), 1_000);
        assert_eq!(ttl(Some(u64::MAX)), 86_400_000);
    }

    #[test]
    fn task_param_is_parsed_and_checked() {
        let parse = |params: Value| TaskRequest::from_params(&params);
        assert_eq!(parse(json!({"name": "t"})), Ok(None));
        assert_eq!(parse(json!({"task": null})), Ok(None));
        assert_eq!(
            parse(json!({"task": {}})),
            Ok(Some(TaskRequest { ttl: None }))
        );
        assert_eq!(
            parse(json!({"task": {"ttl": 60000}})),
            Ok(Some(TaskRequest { ttl: Some(60_000) }))
        );
        assert_eq!(
            parse(json!({"task": {"ttl": 1500.0}})),
            Ok(Some(TaskRequest { ttl: Some(1_500) }))
        );
        for bad in [
            json!({"task": true}),
            json!({"task": {"ttl": -1}}),
            json!({"task": {"ttl": "1s"}}),
        ] {
            let err = parse(bad.clone()).expect_err("rejected");
            assert_eq!(err.code, codes::INVALID_PARAMS, "{bad}");
        }
    }

    #[tokio::test]
    async fn completed_call_is_returned_by_result_with_related_task_meta() {
        let (store, events) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        handle.complete(text_result("done"));
        assert_eq!(
            store.get(&id, Some("s1")).expect("get")["status"],
            "completed"
        );
        let result = store.result(&id, Some("s1"), None).await.expect("result");
        assert_eq!(result["content"][0]["text"], "done");
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], id.as_str());
        assert_eq!(statuses(&events), ["completed"]);
        let event = events.lock().expect("events")[0].clone();
        assert_eq!(event.owner.as_deref(), Some("s1"));
        let note = event.notification().to_value();
        assert_eq!(
            note["method"],
            mcpyard_proto::methods::NOTIFICATION_TASKS_STATUS
        );
        assert_eq!(note["params"]["taskId"], id.as_str());
        assert!(note["params"].get("_meta").is_none());
    }

    #[tokio::test]
    async fn is_error_result_fails_the_task_but_is_still_the_result() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        let mut bad = text_result("city not found");
        bad["isError"] = Value::Bool(true);
        handle.complete(bad);
        let task = store.get(&id, Some("s1")).expect("get");
        assert_eq!(task["status"], "failed");
        assert_eq!(
            task["statusMessage"],
            "Tool execution failed: city not found"
        );
        let result = store
            .result(&id, Some("s1"), None)
            .await
            .expect("isError is a result");
        assert_eq!(result["isError"], true);
    }

    #[tokio::test]
    async fn json_rpc_error_fails_the_task_and_is_what_result_returns() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        handle.fail(ErrorObject::internal("upstream server `x` is unavailable"));
        let task = store.get(&id, Some("s1")).expect("get");
        assert_eq!(task["status"], "failed");
        assert_eq!(task["statusMessage"], "upstream server `x` is unavailable");
        let err = store
            .result(&id, Some("s1"), None)
            .await
            .expect_err("error");
        assert_eq!(
            err,
            ErrorObject::internal("upstream server `x` is unavailable")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn result_blocks_until_the_task_finishes() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        let waiter = tokio::spawn({
            let store = store.clone();
            let id = id.clone();
            async move { store.result(&id, Some("s1"), None).await }
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!waiter.is_finished(), "still working");
        let asking = handle.signal().awaiting_input("needs an answer".into());
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished(), "input_required is not terminal");
        drop(asking);
        handle.complete(text_result("late"));
        let result = waiter.await.expect("joined").expect("result");
        assert_eq!(result["content"][0]["text"], "late");
    }

    #[tokio::test(start_paused = true)]
    async fn result_of_a_task_that_outlives_its_ttl_reports_expiry() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), Some(5_000));
        let token = handle.cancellation();
        let waiter = tokio::spawn({
            let store = store.clone();
            let id = id.clone();
            async move { store.result(&id, Some("s1"), None).await }
        });
        tokio::time::sleep(Duration::from_millis(5_001)).await;
        let err = waiter.await.expect("joined").expect_err("expired");
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert!(err.message.contains("expired"), "{}", err.message);
        assert!(token.is_cancelled(), "the call is stopped with its task");
        assert!(!store.owns(&id));
        let gone = store.get(&id, Some("s1")).expect_err("deleted");
        assert!(matches!(gone, TaskError::NotFound { .. }));
        // Reporting after expiry is harmless.
        handle.complete(text_result("too late"));
        assert!(!store.owns(&id));
    }

    #[tokio::test(start_paused = true)]
    async fn finished_tasks_are_kept_until_their_ttl_then_deleted() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), Some(60_000));
        handle.complete(text_result("ok"));
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(store.result(&id, Some("s1"), None).await.is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        let err = store.get(&id, Some("s1")).expect_err("expired");
        assert_eq!(
            err,
            TaskError::Expired {
                task_id: id.clone()
            }
        );
        assert!(matches!(
            store.get(&id, Some("s1")),
            Err(TaskError::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn cancel_stops_the_call_and_terminal_status_is_final() {
        let (store, events) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        let token = handle.cancellation();
        let task = store.cancel(&id, Some("s1")).expect("cancelled");
        assert_eq!(task["status"], "cancelled");
        assert_eq!(task["statusMessage"], "The task was cancelled by request.");
        assert!(token.is_cancelled());
        handle.complete(text_result("finished anyway"));
        assert_eq!(
            store.get(&id, Some("s1")).expect("get")["status"],
            "cancelled"
        );
        let again = store.cancel(&id, Some("s1")).expect_err("terminal");
        assert_eq!(
            again,
            TaskError::Terminal {
                task_id: id.clone(),
                status: TaskStatus::Cancelled
            }
        );
        let err = ErrorObject::from(again);
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert_eq!(
            err.message,
            "Cannot cancel task: already in terminal status 'cancelled'"
        );
        let result = store
            .result(&id, Some("s1"), None)
            .await
            .expect_err("no result");
        assert_eq!(result.code, codes::REQUEST_TIMEOUT);
        assert_eq!(statuses(&events), ["cancelled"]);
    }

    #[tokio::test]
    async fn cancelling_a_completed_task_is_invalid_params() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        handle.complete(text_result("ok"));
        let err = ErrorObject::from(store.cancel(&id, Some("s1")).expect_err("terminal"));
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert!(err.message.contains("'completed'"), "{}", err.message);
    }

    #[tokio::test]
    async fn tasks_are_invisible_to_other_sessions_and_to_unbound_requests() {
        let (store, _) = store();
        let (mine, _h1) = create(&store, Some("s1"), None);
        let (unbound, _h2) = create(&store, None, None);
        for (id, owner) in [(&mine, Some("s2")), (&mine, None), (&unbound, Some("s1"))] {
            assert!(matches!(
                store.get(id, owner),
                Err(TaskError::NotFound { .. })
            ));
            assert!(matches!(
                store.cancel(id, owner),
                Err(TaskError::NotFound { .. })
            ));
            let err = store.result(id, owner, None).await.expect_err("not found");
            assert_eq!(err.code, codes::INVALID_PARAMS);
        }
        assert_eq!(
            store.list(Some("s2"), None).expect("list")["tasks"],
            json!([])
        );
        let ids = |owner| -> Vec<Value> {
            let page = store.list(owner, None).expect("list");
            page["tasks"]
                .as_array()
                .expect("tasks")
                .iter()
                .map(|t| t["taskId"].clone())
                .collect()
        };
        assert_eq!(ids(Some("s1")), [json!(mine)]);
        assert_eq!(ids(None), [json!(unbound)]);
        assert_eq!(
            store.get(&unbound, None).expect("unbound")["status"],
            "working"
        );
    }

    #[tokio::test]
    async fn list_pages_through_every_task_in_creation_order() {
        let (store, _) = store_with(TaskLimits {
            page_size: 2,
            ..TaskLimits::default()
        });
        let mut handles = Vec::new();
        let mut created = Vec::new();
        for _ in 0..5 {
            let (id, h) = create(&store, Some("s1"), None);
            created.push(json!(id));
            handles.push(h);
        }
        let _other = create(&store, Some("s2"), None);
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = store.list(Some("s1"), cursor.as_deref()).expect("page");
            pages += 1;
            let tasks = page["tasks"].as_array().expect("tasks");
            assert!(tasks.len() <= 2);
            seen.extend(tasks.iter().map(|t| t["taskId"].clone()));
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen, created);
        assert_eq!(pages, 3);
        for bad in ["nope", "tasks:x", "tasks:999"] {
            let err = store.list(Some("s1"), Some(bad)).expect_err("bad cursor");
            assert_eq!(ErrorObject::from(err).code, codes::INVALID_PARAMS, "{bad}");
        }
    }

    #[tokio::test]
    async fn the_number_of_tasks_is_capped() {
        let (store, _) = store_with(TaskLimits {
            max_tasks: 3,
            max_running_per_owner: 2,
            ..TaskLimits::default()
        });
        let parent = CancellationToken::new();
        let (_a, first) = create(&store, Some("s1"), None);
        let _b = create(&store, Some("s1"), None);
        let per_session = store
            .create(Some("s1"), None, &parent)
            .expect_err("per session");
        assert!(matches!(per_session, TaskError::TooMany { limit: 2, .. }));
        // A finished task no longer counts against its session...
        first.complete(text_result("ok"));
        let _c = create(&store, Some("s1"), None);
        // ...but still takes room in the gateway until it expires.
        let full = ErrorObject::from(store.create(Some("s9"), None, &parent).expect_err("full"));
        assert_eq!(full.code, codes::INTERNAL_ERROR);
        assert_eq!(full.data, Some(json!({"limit": 3})));
    }

    #[tokio::test]
    async fn run_records_the_calls_outcome() {
        let (store, events) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        handle.run(async { Ok(text_result("ran")) }).await;
        assert_eq!(
            store.get(&id, Some("s1")).expect("get")["status"],
            "completed"
        );
        let (failed, handle) = create(&store, Some("s1"), None);
        handle
            .run(async { Err(ErrorObject::invalid_params("Unknown tool: x")) })
            .await;
        let err = store
            .result(&failed, Some("s1"), None)
            .await
            .expect_err("error");
        assert_eq!(err.message, "Unknown tool: x");
        assert_eq!(statuses(&events), ["completed", "failed"]);
    }

    #[tokio::test(start_paused = true)]
    async fn run_stops_a_call_cancelled_by_request() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        let token = handle.cancellation();
        let running = tokio::spawn(handle.run(async move {
            // A well-behaved call ends when its token is cancelled; this one
            // would run forever, and run() must drop it anyway.
            std::future::pending::<()>().await;
            Ok(Value::Null)
        }));
        tokio::task::yield_now().await;
        store.cancel(&id, Some("s1")).expect("cancelled");
        tokio::time::timeout(Duration::from_secs(1), running)
            .await
            .expect("run returned")
            .expect("joined");
        assert!(token.is_cancelled());
        assert_eq!(
            store.get(&id, Some("s1")).expect("get")["status"],
            "cancelled"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn run_deletes_a_task_whose_ttl_runs_out_mid_call() {
        let (store, _) = store();
        let (id, handle) = create(&store, None, Some(2_000));
        let token = handle.cancellation();
        let running = tokio::spawn(handle.run(std::future::pending()));
        tokio::time::sleep(Duration::from_millis(2_001)).await;
        running.await.expect("joined");
        assert!(token.is_cancelled());
        assert!(!store.owns(&id));
    }

    #[tokio::test]
    async fn a_dropped_handle_fails_or_cancels_its_task() {
        let (store, _) = store();
        let (lost, handle) = create(&store, Some("s1"), None);
        drop(handle);
        let task = store.get(&lost, Some("s1")).expect("get");
        assert_eq!(task["status"], "failed");
        assert!(store.result(&lost, Some("s1"), None).await.is_err());

        let parent = CancellationToken::new();
        let (created, handle) = store.create(Some("s1"), None, &parent).expect("created");
        let id = created["task"]["taskId"].as_str().expect("id").to_owned();
        parent.cancel(); // the gateway shuts down
        handle.run(std::future::pending()).await;
        assert_eq!(
            store.get(&id, Some("s1")).expect("get")["status"],
            "cancelled"
        );
    }

    #[tokio::test]
    async fn input_is_asked_on_the_stream_of_a_waiting_tasks_result() {
        let (store, _) = store();
        let (id, handle) = create(&store, Some("s1"), None);
        let signal = handle.signal();
        assert!(
            signal
                .result_waiter(Duration::from_millis(20))
                .await
                .is_none(),
            "nobody waits yet"
        );
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let waiting = tokio::spawn({
            let store = store.clone();
            let id = id.clone();
            async move { store.result(&id, Some("s1"), Some(tx)).await }
        });
        let waiter = signal
            .result_waiter(Duration::from_secs(5))
            .await
            .expect("the tasks/result waiter");
        let stream = waiter.stream.expect("its stream");
        stream
            .send(Message::notification("probe", None))
            .await
            .expect("open");
        assert_eq!(
            rx.recv().await.and_then(|m| m.method().map(str::to_owned)),
            Some("probe".into())
        );
        waiting.abort();
        let _ = waiting.await;
        assert!(
            signal
                .result_waiter(Duration::from_millis(20))
                .await
                .is_none(),
            "a waiter that left is forgotten"
        );
        handle.complete(text_result("done"));
    }

    #[tokio::test]
    async fn status_changes_are_reported_and_stop_at_a_terminal_status() {
        let (store, events) = store();
        let (_id, handle) = create(&store, Some("s1"), None);
        let signal = handle.signal();
        let first = signal.awaiting_input("waiting for the user".into());
        let second = signal.awaiting_input("waiting for the user".into());
        drop(first); // still waiting on the second
        drop(second);
        let late = signal.awaiting_input("too late".into());
        handle.complete(text_result("ok"));
        drop(late); // terminal is final
        assert_eq!(
            statuses(&events),
            ["input_required", "working", "input_required", "completed"]
        );
        let first = events.lock().expect("events")[0].task.clone();
        assert_eq!(first["statusMessage"], "waiting for the user");
    }

    #[tokio::test]
    async fn separate_signals_of_one_task_share_its_count_of_requests_awaiting_input() {
        let (store, events) = store();
        let (_id, handle) = create(&store, Some("s1"), None);
        let elicitation = handle.signal().awaiting_input("asks the user".into());
        let sampling = handle.signal().awaiting_input("asks for a sample".into());
        drop(elicitation); // the sampling request still awaits its answer
        assert_eq!(statuses(&events), ["input_required"]);
        drop(sampling);
        assert_eq!(statuses(&events), ["input_required", "working"]);
        handle.complete(text_result("ok"));
    }

    #[tokio::test]
    async fn ending_a_session_forgets_and_stops_its_tasks() {
        let (store, _) = store();
        let (mine, handle) = create(&store, Some("s1"), None);
        let (theirs, _other) = create(&store, Some("s2"), None);
        let token = handle.cancellation();
        store.end_owner("s1");
        assert!(token.is_cancelled());
        assert!(!store.owns(&mine));
        assert!(store.owns(&theirs));
        drop(handle); // reporting into a forgotten task is harmless
        assert!(!store.owns(&mine));
    }

    #[test]
    fn advertise_marks_tools_optional_but_keeps_a_stronger_choice() {
        let mut plain = json!({"name": "echo", "inputSchema": {"type": "object"}});
        advertise(&mut plain);
        assert_eq!(plain["execution"]["taskSupport"], "optional");
        let mut forbidden = json!({"name": "f", "execution": {"taskSupport": "forbidden"}});
        advertise(&mut forbidden);
        assert_eq!(forbidden["execution"]["taskSupport"], "optional");
        let mut required = json!({"name": "r", "execution": {"taskSupport": "required"}});
        advertise(&mut required);
        assert_eq!(required["execution"]["taskSupport"], "required");
    }

    #[test]
    fn related_task_meta_keeps_existing_meta() {
        let stamped = with_related_task(json!({"content": [], "_meta": {"k": 1}}), "t-1");
        assert_eq!(stamped["_meta"]["k"], 1);
        assert_eq!(stamped["_meta"][RELATED_TASK], json!({"taskId": "t-1"}));
        assert_eq!(capability()["requests"]["tools"]["call"], json!({}));
    }
}
