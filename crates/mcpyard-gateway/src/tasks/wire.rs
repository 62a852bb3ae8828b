//! Tasks on the wire: the capability, the tool marking, the `task` param
//! and the related-task metadata.

use mcpyard_proto::ErrorObject;
use serde_json::{json, Value};

use super::status::TaskError;

/// The `_meta` key that ties a message to its task.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The 2026-07-28 era's tasks extension (SEP-2663).
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `tasks` server capability: list, cancel and task-augmented
/// `tools/call`.
pub(crate) fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// Marks a tool the gateway can run as a task: `execution.taskSupport`
/// becomes `"optional"` unless the tool already says `optional` or
/// `required`. For tools whose source does not run tasks itself (the
/// gateway's own, local sources, upstreams without the `tasks` capability).
pub(crate) fn advertise(tool: &mut Value) {
    let Some(tool) = tool.as_object_mut() else {
        return;
    };
    let execution = tool.entry("execution").or_insert_with(|| json!({}));
    if !execution.is_object() {
        *execution = json!({});
    }
    if let Some(execution) = execution.as_object_mut() {
        let current = execution.get("taskSupport").and_then(Value::as_str);
        if !matches!(current, Some("optional" | "required")) {
            execution.insert("taskSupport".into(), Value::String("optional".into()));
        }
    }
}

/// Adds `_meta["io.modelcontextprotocol/related-task"]` to a result, as
/// `tasks/result` must.
pub(crate) fn with_related_task(mut result: Value, task_id: &str) -> Value {
    if let Some(obj) = result.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.into(), json!({ "taskId": task_id }));
        }
    }
    result
}

/// The `task` member of a task-augmented request's params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskRequest {
    /// The lifetime the requestor asked for, in milliseconds.
    pub(crate) ttl: Option<u64>,
}

impl TaskRequest {
    /// Reads `params.task`: `None` for a plain request (absent or `null`),
    /// -32602 when it is not an object or `ttl` is not a non-negative number.
    pub(crate) fn from_params(params: &Value) -> Result<Option<Self>, ErrorObject> {
        let task = match params.get("task") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(task)) => task,
            Some(_) => return Err(TaskError::BadTaskParam.into()),
        };
        let ttl = match task.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => match (v.as_u64(), v.as_f64()) {
                (Some(ms), _) => Some(ms),
                // A client may send 60000.0; a fraction of a millisecond is noise.
                // (`as` saturates a huge value to u64::MAX, clamped below.)
                (None, Some(ms)) if ms.is_finite() && ms >= 0.0 => Some(ms as u64),
                _ => return Err(TaskError::BadTaskParam.into()),
            },
        };
        Ok(Some(Self { ttl }))
    }
}
