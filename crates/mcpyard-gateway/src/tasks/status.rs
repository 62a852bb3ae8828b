//! Where a task is in its life, what may go wrong, and the limits.

use std::fmt;
use std::time::Duration;

use mcpyard_proto::{ErrorObject, Message};
use serde_json::{json, Value};

/// Where a task is in its life. Terminal: completed, failed, cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(status: &str) -> Option<Self> {
        [
            Self::Working,
            Self::InputRequired,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == status)
    }

    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task operation was refused. Every variant is the requestor's
/// concern except [`TaskError::TooMany`], which is the gateway being full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskError {
    /// Never created, created by another session, or already deleted.
    #[error("Failed to retrieve task: Task not found")]
    NotFound { task_id: String },
    /// Its `ttl` ran out (while it was looked up or waited on).
    #[error("Failed to retrieve task: Task has expired")]
    Expired { task_id: String },
    #[error("Cannot cancel task: already in terminal status '{status}'")]
    Terminal { task_id: String, status: TaskStatus },
    #[error("Invalid cursor for tasks/list")]
    BadCursor,
    #[error(
        "`task` must be an object whose optional `ttl` is a non-negative number of milliseconds"
    )]
    BadTaskParam,
    #[error("Too many tasks: {limit} {scope} is the limit; wait for tasks to finish or expire")]
    TooMany { limit: usize, scope: &'static str },
}

impl From<TaskError> for crate::RouteError {
    fn from(e: TaskError) -> Self {
        Self::Protocol(e.into())
    }
}

impl From<TaskError> for ErrorObject {
    fn from(e: TaskError) -> Self {
        let message = e.to_string();
        match e {
            TaskError::NotFound { task_id } | TaskError::Expired { task_id } => {
                ErrorObject::invalid_params(message).with_data(json!({ "taskId": task_id }))
            }
            TaskError::Terminal { task_id, status } => ErrorObject::invalid_params(message)
                .with_data(json!({ "taskId": task_id, "status": status.as_str() })),
            TaskError::BadCursor | TaskError::BadTaskParam => ErrorObject::invalid_params(message),
            TaskError::TooMany { limit, .. } => {
                ErrorObject::internal(message).with_data(json!({ "limit": limit }))
            }
        }
    }
}

/// Bounds on what the store keeps.
#[derive(Debug, Clone)]
pub(crate) struct TaskLimits {
    /// Tasks stored at once (any status, any owner).
    pub(crate) max_tasks: usize,
    /// Unfinished (working / input_required) tasks of one owner.
    pub(crate) max_running_per_owner: usize,
    /// The ttl of a task whose request named none.
    pub(crate) default_ttl: Duration,
    pub(crate) min_ttl: Duration,
    pub(crate) max_ttl: Duration,
    pub(crate) poll_interval: Duration,
    /// Tasks per `tasks/list` page.
    pub(crate) page_size: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_tasks: 1000,
            max_running_per_owner: 100,
            default_ttl: Duration::from_secs(60 * 60),
            min_ttl: Duration::from_secs(1),
            max_ttl: Duration::from_secs(24 * 60 * 60),
            poll_interval: Duration::from_millis(500),
            page_size: 50,
        }
    }
}

impl TaskLimits {
    pub(crate) fn ttl(&self, requested_ms: Option<u64>) -> Duration {
        match requested_ms {
            None => self.default_ttl,
            Some(ms) => Duration::from_millis(ms).clamp(self.min_ttl, self.max_ttl),
        }
    }
}

/// A task changed status; the gateway turns this into
/// `notifications/tasks/status` for the owning session.
#[derive(Debug, Clone)]
pub(crate) struct TaskEvent {
    /// The session that owns the task; `None` for an unbound task (nobody
    /// has a stream to hear about it).
    pub(crate) owner: Option<String>,
    /// The full `Task`, as `tasks/get` would answer.
    pub(crate) task: Value,
    /// Once terminal: what `tasks/result` answers.
    pub(crate) outcome: Option<Result<Value, ErrorObject>>,
}

impl TaskEvent {
    pub(crate) fn notification(&self) -> Message {
        Message::notification(
            mcpyard_proto::methods::NOTIFICATION_TASKS_STATUS,
            Some(self.task.clone()),
        )
    }
}
