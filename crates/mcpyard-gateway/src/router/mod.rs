//! The router: a name (tool, prompt, resource URI) → its source → a stack of
//! layers → the source. Every `tools/call`, `prompts/get`, `resources/read`
//! and `completion/complete` passes here, whichever door it came in by,
//! including the agent's inner calls and the calls behind gateway-run tasks.

mod layers;
pub(crate) mod stack;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

use mcpyard_proto::{methods, Payload};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use layers::Slot;
pub use layers::{Layer, Next, RouteFuture, RoutedCall};

use crate::catalog::{resource_uri, Catalog, Route};

use crate::call::Identity;
use crate::call::ItemKind;
use crate::call::{Era, ListItem, ListKind};
use crate::source::{
    CallContext, ClientHandle, InnerCalls, Progress, RouterHandle, Source, SourceRequest,
};
use crate::tasks::{SharedTasks, TaskRequest, TaskStore};
use crate::RouteError;

/// A task an upstream created: which slot runs it and whose it is, as
/// [`task_owner`] names the requestor (`None`: nobody may reach it).
#[derive(Debug, Clone)]
struct SourceTask {
    slot: usize,
    owner: Option<String>,
    /// When the upstream forgets it (its `ttl`): the record goes then too,
    /// so owners that never end (stateless identities) leave nothing behind.
    expires: std::time::Instant,
}

/// How long an upstream task is remembered when its `ttl` is not given,
/// and at most.
const SOURCE_TASK_TTL: std::time::Duration = std::time::Duration::from_secs(60 * 60);
const SOURCE_TASK_TTL_MAX: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

#[derive(Debug)]
pub(crate) struct Router {
    pub(crate) catalog: Arc<Catalog>,
    /// Slot `i` is catalog source `i`. Appended to at a reload, never
    /// shortened: a removed source's slot holds a [`Removed`] placeholder,
    /// so that every index stays.
    slots: RwLock<Vec<Arc<Slot>>>,
    /// Outermost first (see `stack.rs`); replaced whole by a reload.
    layers: RwLock<Arc<[Arc<dyn Layer>]>>,
    /// Tasks the gateway runs itself (tools/call with `task`).
    pub(crate) own_tasks: TaskStore,
    /// Their records for the other replicas, when state is shared.
    pub(crate) shared_tasks: Option<SharedTasks>,
    /// The tasks upstreams created and ran themselves, by id: tasks/* are
    /// routed by it, and only to the requestor that created the task.
    source_tasks: Mutex<HashMap<String, SourceTask>>,
    stop: CancellationToken,
    me: Weak<Router>,
}

impl Router {
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        slots: Vec<Slot>,
        layers: Vec<Arc<dyn Layer>>,
        (own_tasks, shared_tasks): (TaskStore, Option<SharedTasks>),
        stop: CancellationToken,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            catalog,
            slots: RwLock::new(slots.into_iter().map(Arc::new).collect()),
            layers: RwLock::new(layers.into()),
            own_tasks,
            shared_tasks,
            source_tasks: Mutex::default(),
            stop,
            me: me.clone(),
        })
    }

    /// Every slot, in catalogue order, removed ones included.
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().expect("router lock poisoned").clone()
    }

    /// The slot at catalogue `index`.
    pub(crate) fn slot(&self, index: usize) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .expect("router lock poisoned")
            .get(index)
            .cloned()
    }

    /// The slot a route leads to. Slots are never taken away, so a route
    /// of any view finds one.
    fn routed_slot(&self, index: usize) -> Result<Arc<Slot>, RouteError> {
        self.slot(index)
            .ok_or_else(|| RouteError::internal(format!("no source at index {index}")))
    }

    /// Every source that is still configured, in catalogue order.
    pub(crate) fn sources(&self) -> Vec<Arc<dyn Source>> {
        let slots = self.slots.read().expect("router lock poisoned");
        slots
            .iter()
            .filter(|s| !s.source.is_removed())
            .map(|s| s.source.clone())
            .collect()
    }

    /// The source at catalogue `index`.
    pub(crate) fn source(&self, index: usize) -> Option<Arc<dyn Source>> {
        self.slot(index).map(|s| s.source.clone())
    }

    /// Sends every call from now on through `layers` (outermost first);
    /// calls already on their way finish in the stack they started in.
    pub(crate) fn set_layers(&self, layers: Vec<Arc<dyn Layer>>) {
        *self.layers.write().expect("router lock poisoned") = layers.into();
    }

    /// Adds a slot at the end; its catalogue index.
    pub(crate) fn push_slot(&self, slot: Slot) -> usize {
        let mut slots = self.slots.write().expect("router lock poisoned");
        slots.push(Arc::new(slot));
        slots.len() - 1
    }

    /// Puts `slot` at `index` in place of the one there; the one replaced.
    pub(crate) fn replace_slot(&self, index: usize, slot: Slot) -> Arc<Slot> {
        let mut slots = self.slots.write().expect("router lock poisoned");
        std::mem::replace(&mut slots[index], Arc::new(slot))
    }

    /// Every tool of the catalogue `identity` may use, as its `tools/list`
    /// shows them.
    pub(crate) fn listed_tools(&self, identity: &Identity, era: Era) -> Vec<Value> {
        self.catalog
            .view_for(identity, era)
            .list(ListKind::Tools)
            .iter()
            .map(ListItem::to_value)
            .collect()
    }

    /// The context of a call made by `client`.
    pub(crate) fn context(
        &self,
        client: ClientHandle,
        identity: Identity,
        cancel: CancellationToken,
        progress: Progress,
    ) -> CallContext {
        CallContext {
            router: RouterHandle::new(self.me.clone()),
            cancel,
            progress,
            client,
            identity,
            deadline: None,
            task: None,
        }
    }

    /// `tools/call`: resolved once; a call with `task` to a source that does
    /// not run tasks itself is answered with a task at once and runs in the
    /// background, through the same layers.
    pub(crate) async fn call_tool(
        &self,
        context: CallContext,
        mut params: Value,
    ) -> Result<Payload, RouteError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RouteError::invalid_params("`name` must be a string"))?
            .to_owned();
        // An app's call by its server's own name: from here on, the call
        // by the listed name (policy, limits and audit see only that);
        // a refusal answers for the name asked, as for an unknown one.
        if let Some(listed) = self.catalog.resolve_app_tool(
            &context.identity,
            context.era(),
            app_session(&context),
            &name,
        )? {
            params["name"] = Value::String(listed.clone());
            return self
                .call_listed_tool(context, params, &listed)
                .await
                .map_err(|e| as_asked(e, &name));
        }
        self.call_listed_tool(context, params, &name).await
    }

    /// `tools/call` of a listed name.
    async fn call_listed_tool(
        &self,
        context: CallContext,
        mut params: Value,
        name: &str,
    ) -> Result<Payload, RouteError> {
        if let Some(args) = params.get("arguments") {
            if !args.is_object() && !args.is_null() {
                return Err(RouteError::invalid_params("`arguments` must be an object"));
            }
        }
        // The 2025-11-25 `task` parameter means nothing in the 2026-07-28
        // era, whose tasks the server decides on (the tasks extension).
        let task = match context.era() {
            Era::Handshake => TaskRequest::from_params(&params)?,
            Era::Modern => None,
        };
        let (route, refused) =
            self.resolve(&context.identity, context.era(), ItemKind::Tool, name)?;
        let slot = self.routed_slot(route.source)?;
        let target = name.to_owned();
        params["name"] = Value::String(route.name.to_string());
        if refused {
            // Through the layers, so that the policy refuses it where every
            // other layer sees it; never as a task.
            return self
                .run(slot, target, methods::TOOLS_CALL, params, context)
                .await;
        }
        // Asked only of a call with `task`: reading the capability walks the
        // upstream's initialize result.
        match task {
            Some(task) if !slot.source.offers("/tasks/requests/tools/call") => {
                self.start_task(slot, target, params, context, task).await
            }
            _ => {
                let session = context.client.session.clone();
                let result = self
                    .run(slot.clone(), target, methods::TOOLS_CALL, params, context)
                    .await?;
                self.note_source_task(&slot, &session, &result);
                Ok(result)
            }
        }
    }

    /// `prompts/get`, `resources/read` and `completion/complete`: resolved
    /// by name or URI, then sent through the layers.
    pub(crate) async fn route(
        &self,
        context: CallContext,
        method: &'static str,
        mut params: Value,
    ) -> Result<Payload, RouteError> {
        let view = self.catalog.view_for(&context.identity, context.era());
        let (source, target) = match method {
            methods::PROMPTS_GET => {
                let name = string_param(&params, "name")?;
                let (route, _) =
                    self.resolve(&context.identity, context.era(), ItemKind::Prompt, &name)?;
                params["name"] = Value::String(route.name.to_string());
                (route.source, name)
            }
            methods::RESOURCES_READ => {
                // Decided on, and sent as, the URI the upstream will read.
                let uri = resource_uri::normalize(&string_param(&params, "uri")?)?;
                // A server's own `ui://` URI, when one source has it.
                let asked = uri.clone();
                let uri = self
                    .catalog
                    .resolve_app_uri(
                        &context.identity,
                        context.era(),
                        app_session(&context),
                        &uri,
                    )?
                    .unwrap_or(uri);
                params["uri"] = Value::String(uri.clone());
                let (source, listed) =
                    self.resource_route(&context.identity, context.era(), &uri)?;
                if let Some(upstream_uri) = self.catalog.upstream_ui_uri(source, &uri) {
                    let read = self.read_app(source, uri.clone(), upstream_uri, params, context);
                    return read.await.map_err(|e| match e {
                        _ if !listed => not_found(&asked),
                        e => as_asked(e, &asked),
                    });
                }
                if !listed {
                    // Nothing lists it: however its owner fails, it is not
                    // found, word for word what a refused URI gets.
                    let slot = self.routed_slot(source)?;
                    return self
                        .run(slot, uri.clone(), method, params, context)
                        .await
                        .map_err(|_| not_found(&uri));
                }
                (source, uri)
            }
            methods::COMPLETION_COMPLETE => {
                let reference = params
                    .get("ref")
                    .cloned()
                    .ok_or_else(|| RouteError::invalid_params("`ref` is required"))?;
                match reference.get("type").and_then(Value::as_str) {
                    Some("ref/prompt") => {
                        let name = reference
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let (route, _) =
                            self.resolve(&context.identity, context.era(), ItemKind::Prompt, name)?;
                        params["ref"]["name"] = Value::String(route.name.to_string());
                        (route.source, name.to_owned())
                    }
                    Some("ref/resource") => {
                        let uri = reference
                            .get("uri")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let source = view
                            .resource_source(uri)
                            .or_else(|| {
                                let refused = self.catalog.refused_route(
                                    &context.identity,
                                    context.era(),
                                    ItemKind::Resource,
                                    uri,
                                );
                                refused.map(|r| r.source)
                            })
                            .ok_or_else(|| not_found(uri))?;
                        (source, uri.to_owned())
                    }
                    _ => {
                        return Err(RouteError::invalid_params(
                            "`ref.type` must be ref/prompt or ref/resource",
                        ))
                    }
                }
            }
            other => return Err(RouteError::internal(format!("{other} is not routed"))),
        };
        drop(view);
        let slot = self.routed_slot(source)?;
        self.run(slot, target, method, params, context).await
    }

    /// Reads a `ui://` resource exposed under its source's authority: sent
    /// upstream as the source's own URI, answered under the exposed one,
    /// and remembered as an app the session was served.
    async fn read_app(
        &self,
        source: usize,
        uri: String,
        upstream_uri: String,
        mut params: Value,
        context: CallContext,
    ) -> Result<Payload, RouteError> {
        params["uri"] = Value::String(upstream_uri.clone());
        let session = app_session(&context).map(str::to_owned);
        let slot = self.routed_slot(source)?;
        let mut result = self
            .run(slot, uri.clone(), methods::RESOURCES_READ, params, context)
            .await?;
        crate::catalog::apps::rewrite_read_result(result.value_mut(), &upstream_uri, &uri);
        if let Some(session) = session {
            self.catalog.note_app_served(&session, source);
        }
        Ok(result)
    }

    /// The source a resource URI is read from: the identity's view, else
    /// the policy's refusal (still through the layers, where the policy
    /// refuses it), else the one source whose resources share its origin,
    /// else the one upstream that offers resources at all. A URI no source
    /// can own is not found, never tried on every upstream. With whether a
    /// list or a template names the URI.
    pub(crate) fn resource_route(
        &self,
        identity: &Identity,
        era: Era,
        uri: &str,
    ) -> Result<(usize, bool), RouteError> {
        if let Some(source) = self.catalog.view_for(identity, era).resource_source(uri) {
            return Ok((source, true));
        }
        if let Some(route) = self
            .catalog
            .refused_route(identity, era, ItemKind::Resource, uri)
        {
            return Ok((route.source, true));
        }
        self.catalog
            .era_view(era)
            .resource_owner(uri)
            .or_else(|| {
                let only = self.only_source_with("/resources")?;
                Some(self.catalog.serving(only, era))
            })
            .map(|source| (source, false))
            .ok_or_else(|| not_found(uri))
    }

    /// The index of the one source that offers `capability` (a JSON
    /// pointer, see [`Source::offers`]); `None` when none or several do.
    pub(crate) fn only_source_with(&self, capability: &str) -> Option<usize> {
        let slots = self.slots.read().expect("router lock poisoned");
        let mut offering = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.source.is_second_era() && s.source.offers(capability))
            .map(|(i, _)| i);
        let first = offering.next()?;
        offering.next().is_none().then_some(first)
    }

    /// Sends a resolved request through the layers to its source.
    async fn run(
        &self,
        slot: Arc<Slot>,
        target: String,
        method: &'static str,
        params: Value,
        context: CallContext,
    ) -> Result<Payload, RouteError> {
        let call = RoutedCall {
            slot,
            target,
            request: SourceRequest {
                method,
                params,
                context,
            },
            place: None,
        };
        let layers = self.layers.read().expect("router lock poisoned").clone();
        Next::new(&layers).run(call).await
    }

    /// Answers a task-augmented `tools/call` at once with a task and runs
    /// the call in the background; its outcome goes to `tasks/result`.
    async fn start_task(
        &self,
        slot: Arc<Slot>,
        target: String,
        mut params: Value,
        mut context: CallContext,
        task: TaskRequest,
    ) -> Result<Payload, RouteError> {
        if let Some(p) = params.as_object_mut() {
            p.remove("task");
        }
        let owner = task_owner(&context.client.session);
        let (created, handle) = self
            .own_tasks
            .create(owner.as_deref(), task.ttl, &self.stop)?;
        if let Some(shared) = &self.shared_tasks {
            shared
                .created(owner.as_deref(), &created, handle.ttl())
                .await;
        }
        // No `related` stream: the request that created the task has been
        // answered; progress goes to the session stream, and requests for
        // the client to the stream of its `tasks/result`.
        context.client.related = None;
        context.progress.report_on_session_stream();
        context.cancel = handle.cancellation();
        context.task = Some(handle.signal());
        let Some(router) = self.me.upgrade() else {
            return Err(RouteError::internal("the gateway is shutting down"));
        };
        // Under the span of the request that created it, which ends first.
        let work = async move {
            let call = async move {
                router
                    .run(slot, target, methods::TOOLS_CALL, params, context)
                    .await
                    .map(Payload::into_value)
                    .map_err(Into::into)
            };
            handle.run(call).await;
        };
        tokio::spawn(tracing::Instrument::in_current_span(work));
        Ok(created.into())
    }

    /// Remembers which upstream created a task, and for whom, for the
    /// `tasks/*` that follow.
    fn note_source_task(&self, slot: &Slot, session: &crate::Session, result: &Payload) {
        // 2025-11-25: `{task: {taskId, ttl}}`; the 2026-07-28 tasks
        // extension: `{resultType: "task", taskId, ttlMs}`. Both name a
        // `taskId`, which is searched from its capital: the `t`s of a
        // result's `type` and `text` made `task` costly to look for.
        if !result.may_hold("taskId") {
            return;
        }
        let result = result.to_value();
        let result = &*result;
        let (task, ttl_key) = match result.get("task") {
            Some(task) => (task, "ttl"),
            None if result.get("resultType").and_then(Value::as_str) == Some("task") => {
                (result, "ttlMs")
            }
            None => return,
        };
        let Some(task_id) = task.get("taskId").and_then(Value::as_str) else {
            return;
        };
        let ttl = task
            .get(ttl_key)
            .and_then(Value::as_u64)
            .map_or(SOURCE_TASK_TTL, std::time::Duration::from_millis)
            .min(SOURCE_TASK_TTL_MAX);
        let index = {
            let slots = self.slots.read().expect("router lock poisoned");
            slots.iter().position(|s| std::ptr::eq(&**s, slot))
        };
        if let Some(index) = index {
            let now = std::time::Instant::now();
            let mut tasks = self.source_tasks.lock().expect("tasks lock poisoned");
            tasks.retain(|_, task| task.expires > now);
            tasks.insert(
                task_id.to_owned(),
                SourceTask {
                    slot: index,
                    owner: task_owner(session),
                    expires: now + ttl,
                },
            );
        }
    }

    /// The upstream that created task `task_id`, when `owner` created it:
    /// another requestor's task is as unknown to it as one never created.
    pub(crate) fn task_source(
        &self,
        task_id: &str,
        owner: Option<&str>,
    ) -> Option<Arc<dyn Source>> {
        let index = {
            let tasks = self.source_tasks.lock().expect("tasks lock poisoned");
            let task = tasks.get(task_id)?;
            // Unbound (`None`) on both sides: anonymous 2026-07-28 clients,
            // all one identity, whose handle is the unguessable task id.
            if task.owner.as_deref() != owner {
                return None;
            }
            task.slot
        };
        self.source(index)
    }

    /// The upstreams that created tasks for `owner`, each with the ids of
    /// those tasks: what its `tasks/list` may show of theirs.
    pub(crate) fn task_sources(&self, owner: Option<&str>) -> Vec<(Arc<dyn Source>, Vec<String>)> {
        let Some(owner) = owner else {
            return Vec::new();
        };
        let mut by_slot: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
        for (id, task) in self
            .source_tasks
            .lock()
            .expect("tasks lock poisoned")
            .iter()
        {
            if task.owner.as_deref() == Some(owner) {
                by_slot.entry(task.slot).or_default().push(id.clone());
            }
        }
        by_slot
            .into_iter()
            .filter_map(|(i, ids)| Some((self.source(i)?, ids)))
            .collect()
    }

    /// Forgets the upstream tasks of a session that ended: nobody can
    /// reach them any more.
    pub(crate) fn end_source_task_owner(&self, owner: &str) {
        self.source_tasks
            .lock()
            .expect("tasks lock poisoned")
            .retain(|_, task| task.owner.as_deref() != Some(owner));
    }

    /// The route of a tool or prompt name for `identity`, and whether the
    /// policy refuses it (the call still goes through the layers, where
    /// the policy refuses it). A name the catalogue has no route for fails
    /// naming its source when that source is down, else as unknown.
    fn resolve(
        &self,
        identity: &Identity,
        era: Era,
        kind: ItemKind,
        name: &str,
    ) -> Result<(Route, bool), RouteError> {
        let view = self.catalog.view_for(identity, era);
        let found = match kind {
            ItemKind::Prompt => view.prompt(name),
            _ => view.tool(name),
        };
        if let Some(route) = found {
            return Ok((route.clone(), false));
        }
        if let Some(route) = self.catalog.refused_route(identity, era, kind, name) {
            return Ok((route, true));
        }
        Err(match view.unavailable(name).and_then(|s| self.source(s)) {
            Some(source) => source.unavailable(),
            None => RouteError::UnknownName {
                kind: kind.as_str(),
                name: name.to_owned(),
            },
        })
    }
}

/// Whose tasks a request sees: its session's; in the stateless era, where
/// every request is a session of its own, its authenticated identity's, or
/// none (unbound) for an anonymous client.
pub(crate) fn task_owner(session: &crate::Session) -> Option<String> {
    if !session.is_stateless() {
        return Some(session.id().to_owned());
    }
    let identity = session.identity();
    // Session ids are hex: an owner of this form can never equal one.
    (identity.kind != crate::IdentityKind::Anonymous).then(|| identity.qualified_name())
}

/// A policy's refusal of a resolved name, for the name the client asked:
/// as for an unknown name, telling nothing of the one it resolved to.
fn as_asked(error: RouteError, asked: &str) -> RouteError {
    match error {
        RouteError::Denied { kind, rule, .. } => RouteError::Denied {
            kind,
            name: asked.to_owned(),
            rule,
        },
        other => other,
    }
}

/// The session whose apps a call may come from; `None` in the stateless
/// era, where each request is a session of its own.
fn app_session(context: &CallContext) -> Option<&str> {
    let session = &context.client.session;
    (!session.is_stateless()).then(|| session.id())
}

fn string_param(params: &Value, key: &str) -> Result<String, RouteError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RouteError::invalid_params(format!("`{key}` must be a string")))
}

fn not_found(uri: &str) -> RouteError {
    RouteError::ResourceNotFound {
        uri: uri.to_owned(),
    }
}

impl InnerCalls for Router {
    fn listed_tools(&self, identity: &Identity, era: Era) -> Vec<Value> {
        Router::listed_tools(self, identity, era)
    }

    fn call_as<'a>(
        &'a self,
        caller: &CallContext,
        params: Value,
    ) -> futures::future::BoxFuture<'a, Result<Value, RouteError>> {
        let context = self.context(
            caller.client.clone(),
            caller.identity.clone(),
            caller.cancel.child_token(),
            Progress::none(),
        );
        Box::pin(async move {
            self.call_tool(context, params)
                .await
                .map(Payload::into_value)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IdentityKind;
    use serde_json::json;

    #[test]
    fn stateless_tasks_belong_to_the_callers_identity_and_anonymous_ones_to_nobody() {
        let anonymous = crate::Session::stateless("2026-07-28", json!({}));
        assert_eq!(task_owner(&anonymous), None);
        let alice = Identity::named(IdentityKind::ApiKey, "alice", vec![]);
        let stateless = crate::Session::stateless_as(alice.clone(), "2026-07-28", json!({}));
        assert_eq!(task_owner(&stateless).as_deref(), Some("api_key:alice"));
        let session = crate::Session::new_as(alice, None);
        assert_eq!(task_owner(&session).as_deref(), Some(session.id()));
    }
}
