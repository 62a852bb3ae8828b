//! The `tasks/*` requests the gateway answers: for the tasks it runs
//! itself (here, or on another replica when state is shared) and, by id,
//! for those an upstream runs.

use std::sync::Arc;

use mcpyard_proto::{envelope, methods, ErrorObject};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::Gateway;
use crate::router::task_owner;
use crate::source::CallContext;
use crate::{tasks, Outbound, RouteError, Session};

impl Gateway {
    /// `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update`.
    pub(super) async fn on_task_request(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: &Value,
        related: Option<Outbound>,
        context: impl FnOnce() -> CallContext,
        cancel: &CancellationToken,
    ) -> Result<Value, RouteError> {
        if session.is_stateless() && !declares_tasks(session) {
            return Err(RouteError::Protocol(
                ErrorObject::new(
                    envelope::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!(
                        "{method} is of the tasks extension, which this request does not declare"
                    ),
                )
                .with_data(json!({
                    "requiredCapabilities": {"extensions": {tasks::EXTENSION: {}}}
                })),
            ));
        }
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| RouteError::invalid_params("`taskId` must be a string"))?;
        let router = &self.inner.router;
        let own = &router.own_tasks;
        if own.owns(task_id) {
            let owner = task_owner(session);
            let owner = owner.as_deref();
            return match method {
                methods::TASKS_GET => own.get(task_id, owner).map_err(Into::into),
                methods::TASKS_CANCEL => own.cancel(task_id, owner).map_err(Into::into),
                // The tasks the gateway runs itself ask their
                // client through the call, never through the task.
                methods::TASKS_UPDATE => Err(RouteError::invalid_params(format!(
                    "task {task_id} is waiting for no input"
                ))),
                _ => tokio::select! {
                    r = own.result(task_id, owner, related) => Ok(r?),
                    _ = cancel.cancelled() => Err(RouteError::Cancelled { what: "the request".into() }),
                },
            };
        }
        let owner = task_owner(session);
        if let Some(shared) = &router.shared_tasks {
            if let Some(answer) = shared
                .answer(method, task_id, owner.as_deref(), cancel)
                .await
            {
                return answer;
            }
        }
        // Another requestor's task gets the answer of one never made.
        let source = router
            .task_source(task_id, owner.as_deref())
            .ok_or_else(|| {
                RouteError::from(tasks::TaskError::NotFound {
                    task_id: task_id.to_owned(),
                })
            })?;
        source
            .request(method, params.clone(), Some(&context()))
            .await
    }

    /// The session's own tasks a page at a time; the last page also
    /// carries the tasks upstreams created.
    pub(super) async fn list_tasks(
        &self,
        session: &Session,
        cursor: Option<&str>,
    ) -> Result<Value, RouteError> {
        let router = &self.inner.router;
        let owner = task_owner(session);
        let shared = router.shared_tasks.as_ref();
        let mut page = tasks::list_own(&router.own_tasks, shared, owner.as_deref(), cursor).await?;
        if page.get("nextCursor").is_some() {
            return Ok(page);
        }
        // An upstream lists every task it runs: keep the requestor's only.
        let mut all = Vec::new();
        for (source, ids) in router.task_sources(task_owner(session).as_deref()) {
            if let Ok(r) = source.request(methods::TASKS_LIST, json!({}), None).await {
                if let Some(items) = r.get("tasks").and_then(Value::as_array) {
                    all.extend(
                        items
                            .iter()
                            .filter(|t| {
                                t.get("taskId")
                                    .and_then(Value::as_str)
                                    .is_some_and(|id| ids.iter().any(|i| i == id))
                            })
                            .cloned(),
                    );
                }
            }
        }
        if let Some(owner) = owner.as_deref() {
            let known: Vec<String> = router
                .task_sources(Some(owner))
                .into_iter()
                .flat_map(|(_, ids)| ids)
                .collect();
            all.extend(self.upstream_tasks_elsewhere(session, owner, &known).await);
        }
        if let Some(tasks) = page.get_mut("tasks").and_then(Value::as_array_mut) {
            tasks.extend(all);
        }
        Ok(page)
    }
}

/// Whether a 2026-07-28 request declares the tasks extension.
fn declares_tasks(session: &Session) -> bool {
    session
        .negotiated()
        .capabilities
        .pointer("/extensions")
        .and_then(|e| e.get(tasks::EXTENSION))
        .is_some()
}
