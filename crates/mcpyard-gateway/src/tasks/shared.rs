//! Tasks across replicas. With a shared state backend, the replica that
//! runs a task writes its record when it is created (before the client
//! hears of it) and at every change after (in order, off the call's path);
//! any other replica answers `tasks/get`, `tasks/result`, `tasks/cancel`
//! and `tasks/list` from the records. The call itself stays where it
//! started: a cancel accepted elsewhere reaches it on a channel. A task
//! whose replica stopped renewing its mark of life is failed by the first
//! replica that looks, never left `working`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcpyard_proto::{methods, ErrorObject};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::status::{TaskError, TaskEvent, TaskLimits, TaskStatus};
use super::store::{cancelled_error, rfc3339};
use super::wire::with_related_task;
use super::TaskStore;
use crate::state::{StateBackend, StateEvent, TaskRecord};
use crate::RouteError;

/// How often a `tasks/result` waiting on another replica's task looks
/// again when it heard of no change (a change missed, a replica gone).
const RECHECK: Duration = Duration::from_secs(1);

const CURSOR_PREFIX: &str = "tasks@";

/// The shared side of the gateway's own tasks. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SharedTasks {
    state: Arc<dyn StateBackend>,
    /// Changes of the tasks that run here, written one after another.
    writes: mpsc::UnboundedSender<(String, TaskRecord)>,
    limits: TaskLimits,
}

impl std::fmt::Debug for SharedTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTasks").finish_non_exhaustive()
    }
}

impl SharedTasks {
    /// `None` when no other replica shares `state`: the task store is then
    /// the only record.
    pub(crate) fn new(state: &Arc<dyn StateBackend>, limits: TaskLimits) -> Option<Self> {
        if !state.shared() {
            return None;
        }
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_in_order(state.clone(), queue));
        Some(Self {
            state: state.clone(),
            writes,
            limits,
        })
    }

    /// Stops the tasks that run here when another replica cancels them,
    /// and notes the clients that wait on another with `tasks/result`,
    /// until `stop`. After a gap in the channel, every unfinished task is
    /// checked against its record: a cancel may have been missed.
    pub(crate) fn follow(&self, local: TaskStore, stop: CancellationToken) {
        let Some(mut events) = self.state.events() else {
            return;
        };
        let state = self.state.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    () = stop.cancelled() => return,
                };
                match event {
                    Ok(StateEvent::TaskCancelled(id)) => local.cancel_for_another_replica(&id),
                    Ok(StateEvent::TaskResultWaiting(id)) => local.result_waiting_elsewhere(&id),
                    Ok(StateEvent::Rejoined) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        for id in local.unfinished() {
                            if let Ok(Some(record)) = state.load_task(&id).await {
                                if record.is_terminal() {
                                    local.cancel_for_another_replica(&id);
                                }
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// A task was created here: its record is written before the client
    /// is answered, so that the next request finds it on any replica.
    pub(crate) async fn created(&self, owner: Option<&str>, created: &Value, ttl: Duration) {
        let Some(task) = created.get("task") else {
            return;
        };
        let Some(id) = task.get("taskId").and_then(Value::as_str) else {
            return;
        };
        let record = self.record(owner.map(str::to_owned), task.clone(), None);
        if let Err(e) = self.state.save_task(id, &record, Some(ttl)).await {
            tracing::warn!(task = %id, error = %e, "task not shared: only this replica answers for it");
        }
    }

    /// A task that runs here changed: its record follows, in order.
    pub(crate) fn changed(&self, event: TaskEvent) {
        let Some(id) = event.task.get("taskId").and_then(Value::as_str) else {
            return;
        };
        let id = id.to_owned();
        let record = self.record(event.owner, event.task, event.outcome);
        let _ = self.writes.send((id, record));
    }

    fn record(
        &self,
        owner: Option<String>,
        task: Value,
        outcome: Option<Result<Value, ErrorObject>>,
    ) -> TaskRecord {
        let created_ms = task
            .get("createdAt")
            .and_then(Value::as_str)
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let (result, error) = match outcome {
            Some(Ok(result)) => (Some(result), None),
            Some(Err(error)) => (None, Some(error)),
            None => (None, None),
        };
        TaskRecord {
            owner,
            instance: self.state.instance().to_owned(),
            created_ms,
            task,
            result,
            error,
        }
    }

    /// `tasks/get`, `tasks/cancel`, `tasks/update` or `tasks/result` for a
    /// task that does not run here; `None` when no replica shared it.
    pub(crate) async fn answer(
        &self,
        method: &str,
        task_id: &str,
        owner: Option<&str>,
        cancel: &CancellationToken,
    ) -> Option<Result<Value, RouteError>> {
        let record = match self.state.load_task(task_id).await {
            Ok(Some(record)) => record,
            Ok(None) => return None,
            Err(e) => return Some(Err(RouteError::internal(e.to_string()))),
        };
        if record.owner.as_deref() != owner {
            return Some(Err(not_found(task_id).into()));
        }
        let record = self.settle(task_id, record).await;
        tracing::debug!(task = %task_id, method, "answered for a task another replica runs");
        Some(match method {
            methods::TASKS_GET => Ok(record.task),
            methods::TASKS_CANCEL => self.cancel(task_id, record).await,
            methods::TASKS_UPDATE => Err(RouteError::invalid_params(format!(
                "task {task_id} is waiting for no input"
            ))),
            _ => tokio::select! {
                r = self.wait_for_result(task_id, &record) => r,
                () = cancel.cancelled() => Err(RouteError::Cancelled { what: "the request".into() }),
            },
        })
    }

    /// The record as it stands, a task whose replica died failed first.
    async fn settle(&self, task_id: &str, record: TaskRecord) -> TaskRecord {
        if record.is_terminal()
            || !matches!(self.state.instance_alive(&record.instance).await, Ok(false))
        {
            return record;
        }
        const LOST: &str = "The replica that ran this task stopped before it finished.";
        let mut failed = ended(record, TaskStatus::Failed, LOST);
        failed.error = Some(ErrorObject::internal(LOST));
        match self.state.save_task(task_id, &failed, None).await {
            Ok(true) => {
                tracing::info!(task = %task_id, "task failed: its replica is gone");
                failed
            }
            // Another replica settled it first, or it just expired.
            _ => match self.state.load_task(task_id).await {
                Ok(Some(now)) => now,
                _ => failed,
            },
        }
    }

    async fn cancel(&self, task_id: &str, record: TaskRecord) -> Result<Value, RouteError> {
        let terminal = |record: &TaskRecord| -> RouteError {
            TaskError::Terminal {
                task_id: task_id.to_owned(),
                status: TaskStatus::parse(record.status()).unwrap_or(TaskStatus::Failed),
            }
            .into()
        };
        if record.is_terminal() {
            return Err(terminal(&record));
        }
        let mut cancelled = ended(
            record,
            TaskStatus::Cancelled,
            "The task was cancelled by request.",
        );
        cancelled.error = Some(cancelled_error(task_id));
        let state = &self.state;
        let written = state
            .save_task(task_id, &cancelled, None)
            .await
            .map_err(|e| RouteError::internal(e.to_string()))?;
        if !written {
            return match state.load_task(task_id).await {
                Ok(Some(now)) => Err(terminal(&now)),
                _ => Err(TaskError::Expired {
                    task_id: task_id.to_owned(),
                }
                .into()),
            };
        }
        if let Err(e) = state.cancel_task(task_id).await {
            tracing::warn!(task = %task_id, error = %e, "the task's replica may not hear its cancel");
        }
        Ok(cancelled.task)
    }

    /// `tasks/result` of a task another replica runs: that replica is told
    /// that its client waits (what the task asks of the client then goes
    /// on the session's stream, wherever it is held), then the result.
    async fn wait_for_result(
        &self,
        task_id: &str,
        record: &TaskRecord,
    ) -> Result<Value, RouteError> {
        if !record.is_terminal() {
            if let Err(e) = self.state.task_result_waiting(task_id).await {
                tracing::debug!(task = %task_id, error = %e, "the task's replica was not told that its client waits");
            }
        }
        self.result(task_id).await
    }

    /// Waits until the task is terminal (its record goes when its ttl
    /// ends), then answers what its call returned.
    async fn result(&self, task_id: &str) -> Result<Value, RouteError> {
        let mut events = self.state.events();
        loop {
            let record = match self.state.load_task(task_id).await {
                Ok(Some(record)) => self.settle(task_id, record).await,
                Ok(None) => {
                    return Err(TaskError::Expired {
                        task_id: task_id.to_owned(),
                    }
                    .into())
                }
                Err(e) => return Err(RouteError::internal(e.to_string())),
            };
            if record.is_terminal() {
                return match (record.result, record.error) {
                    (Some(result), _) => Ok(with_related_task(result, task_id)),
                    (None, Some(error)) => Err(RouteError::Protocol(error)),
                    (None, None) => Err(RouteError::internal("the task ended without an outcome")),
                };
            }
            let heard = async {
                let Some(events) = events.as_mut() else {
                    return std::future::pending().await;
                };
                loop {
                    match events.recv().await {
                        Ok(StateEvent::TaskChanged(id)) if id == task_id => return,
                        Err(broadcast::error::RecvError::Closed) => {
                            return std::future::pending().await
                        }
                        _ => {}
                    }
                }
            };
            let _ = tokio::time::timeout(RECHECK, heard).await;
        }
    }

    /// A `tasks/list` page of `owner`'s `records` (every replica's tasks,
    /// oldest first).
    async fn page(
        &self,
        records: Vec<(String, TaskRecord)>,
        owner: Option<&str>,
        cursor: Option<&str>,
    ) -> Result<Value, RouteError> {
        let after = match cursor {
            None => None,
            Some(c) => Some(parse_cursor(c).ok_or(TaskError::BadCursor)?),
        };
        let mut mine: Vec<(String, TaskRecord)> = records
            .into_iter()
            .filter(|(id, r)| {
                r.owner.as_deref() == owner
                    && after
                        .as_ref()
                        .is_none_or(|(ms, last)| (r.created_ms, id.as_str()) > (*ms, last.as_str()))
            })
            .collect();
        let more = mine.len() > self.limits.page_size;
        mine.truncate(self.limits.page_size);
        let mut alive: HashMap<String, bool> = HashMap::new();
        let mut tasks = Vec::with_capacity(mine.len());
        for (id, record) in &mine {
            let gone = !record.is_terminal()
                && match alive.get(&record.instance) {
                    Some(alive) => !alive,
                    None => {
                        let is =
                            !matches!(self.state.instance_alive(&record.instance).await, Ok(false));
                        alive.insert(record.instance.clone(), is);
                        !is
                    }
                };
            tasks.push(if gone {
                self.settle(id, record.clone()).await.task
            } else {
                record.task.clone()
            });
        }
        let mut page = serde_json::json!({ "tasks": tasks });
        if more {
            if let Some((id, last)) = mine.last() {
                page["nextCursor"] =
                    Value::String(format!("{CURSOR_PREFIX}{}.{id}", last.created_ms));
            }
        }
        Ok(page)
    }
}

/// `tasks/list` of the gateway's own tasks: from the shared records when
/// there are any (they hold every replica's tasks), else, or when the
/// store does not answer, from this replica's.
pub(crate) async fn list_own(
    local: &TaskStore,
    shared: Option<&SharedTasks>,
    owner: Option<&str>,
    cursor: Option<&str>,
) -> Result<Value, RouteError> {
    if let Some(shared) = shared {
        match shared.state.owner_tasks(owner).await {
            Ok(records) => return shared.page(records, owner, cursor).await,
            Err(e) => tracing::warn!(error = %e, "tasks listed from this replica alone"),
        }
    }
    Ok(local.list(owner, cursor)?)
}

fn parse_cursor(cursor: &str) -> Option<(u64, String)> {
    let (ms, id) = cursor.strip_prefix(CURSOR_PREFIX)?.split_once('.')?;
    Some((ms.parse().ok()?, id.to_owned()))
}

fn not_found(task_id: &str) -> TaskError {
    TaskError::NotFound {
        task_id: task_id.to_owned(),
    }
}

/// `record` moved to terminal `status` now, with `message`.
fn ended(mut record: TaskRecord, status: TaskStatus, message: &str) -> TaskRecord {
    if let Some(task) = record.task.as_object_mut() {
        task.insert("status".into(), Value::String(status.as_str().into()));
        task.insert("statusMessage".into(), Value::String(message.into()));
        task.insert(
            "lastUpdatedAt".into(),
            Value::String(rfc3339(SystemTime::now())),
        );
    }
    record
}

/// Writes the changes of the tasks that run here one after another, so
/// that a later status never lands before an earlier one.
async fn write_in_order(
    state: Arc<dyn StateBackend>,
    mut queue: mpsc::UnboundedReceiver<(String, TaskRecord)>,
) {
    while let Some((id, record)) = queue.recv().await {
        if let Err(e) = state.save_task(&id, &record, None).await {
            tracing::warn!(task = %id, error = %e, "a task's change is not shared");
        }
    }
}
