//! Relays between one upstream and the downstream clients whose calls it is
//! serving: progress and log notifications back to the caller, requests the
//! upstream makes (sampling, elicitation, roots) to the client that made the
//! call and its answer back up.
//!
//! The caller of a message is known from the upstream request it is related
//! to (Streamable HTTP upstreams answer on the call's own stream), from the
//! progress token (rewritten per call so tokens of different clients never
//! clash), or, for stdio upstreams, which cannot say, from the most recent
//! call in flight to that upstream whose client can answer the request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_client::ClientHandler;
use mcpyard_proto::{methods, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::call::ListKind;
use crate::downstream::Sessions;
use crate::governance::guard::Redactor;
use crate::source::{CallContext, ListsPort};
use crate::tasks::{with_related_task, TaskSignal};
use crate::Live;
use crate::{Outbound, Session};
use crate::{Sampler, SamplingPolicy, SamplingUsage};

/// The downstream side of one call in flight to an upstream.
#[derive(Debug)]
pub(crate) struct InFlightCall {
    pub(crate) session: Arc<Session>,
    pub(crate) related: Option<Outbound>,
    /// The client's own progress token, to put back on progress it gets.
    pub(crate) progress_token: Option<Value>,
    /// The gateway-owned task the call serves, if any.
    task: Option<TaskSignal>,
    seq: u64,
}

/// What the upstream said changed since the supervisor last looked: a
/// flood of `list_changed` is one refetch per kind, never a queue.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pending: Mutex<Pending>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Pending {
    kinds: Vec<ListKind>,
    /// The upstream forgot our session and a new one began: it may offer
    /// other things than before, and has no subscriptions.
    renewed: bool,
}

impl Changes {
    /// The upstream said these lists changed: fetch them again.
    fn lists_changed(&self, kinds: &[ListKind]) {
        let mut pending = self.pending.lock().expect("changes lock poisoned");
        for kind in kinds {
            if !pending.kinds.contains(kind) {
                pending.kinds.push(*kind);
            }
        }
        drop(pending);
        self.wake.notify_one();
    }

    fn session_renewed(&self) {
        self.pending.lock().expect("changes lock poisoned").renewed = true;
        self.wake.notify_one();
    }

    /// Waits for changes and takes them all: the kinds to fetch, and
    /// whether the session was renewed (then everything is fetched).
    pub(crate) async fn next(&self) -> (Vec<ListKind>, bool) {
        loop {
            {
                let mut pending = self.pending.lock().expect("changes lock poisoned");
                if pending.renewed || !pending.kinds.is_empty() {
                    let taken = std::mem::take(&mut *pending);
                    return (taken.kinds, taken.renewed);
                }
            }
            self.wake.notified().await;
        }
    }
}

/// A local model standing in for clients that cannot sample.
#[derive(Debug, Clone)]
pub(crate) struct LocalSampling {
    pub(crate) sampler: Arc<dyn Sampler>,
    /// Answer locally even when the calling client could sample.
    pub(crate) always: bool,
    pub(crate) policy: SamplingPolicy,
    /// Each request answered here is a record of the audit trail.
    pub(crate) audit: Option<crate::AuditTrail>,
}

#[derive(Debug)]
pub(crate) struct Relay {
    server: String,
    /// The upstream's catalogue source index.
    source: usize,
    local_sampling: Option<LocalSampling>,
    sessions: Arc<Sessions>,
    changes: Arc<Changes>,
    client_timeout: Duration,
    seq: AtomicU64,
    /// The calls in flight, by the id sent upstream and by progress token;
    /// foldhash, as each is written twice per call, and holds no more than
    /// the calls in flight.
    by_request: Mutex<foldhash::HashMap<RequestId, Arc<InFlightCall>>>,
    by_token: Mutex<foldhash::HashMap<String, Arc<InFlightCall>>>,
    /// The guardrails' redaction of everything relayed to a client.
    redactor: Live<Option<Arc<Redactor>>>,
    /// Who may hear what belongs to no call: set when the source starts.
    catalog: OnceLock<Arc<dyn ListsPort>>,
}

/// Removes a call's entries when the call ends, however it ends.
#[derive(Debug)]
pub(crate) struct CallGuard {
    relay: Arc<Relay>,
    token: Option<String>,
    request: Mutex<Option<RequestId>>,
}

impl CallGuard {
    /// Records the upstream id the call was sent with.
    pub(crate) fn sent_as(&self, ctx: &Arc<InFlightCall>, id: RequestId) {
        self.relay
            .by_request
            .lock()
            .expect("relay lock poisoned")
            .insert(id.clone(), ctx.clone());
        *self.request.lock().expect("relay lock poisoned") = Some(id);
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(id) = self.request.lock().expect("relay lock poisoned").take() {
            self.relay
                .by_request
                .lock()
                .expect("relay lock poisoned")
                .remove(&id);
        }
        if let Some(t) = &self.token {
            self.relay
                .by_token
                .lock()
                .expect("relay lock poisoned")
                .remove(t);
        }
    }
}

impl Relay {
    pub(crate) fn new(
        server: String,
        source: usize,
        local_sampling: Option<LocalSampling>,
        sessions: Arc<Sessions>,
        changes: Arc<Changes>,
        client_timeout: Duration,
        redactor: Live<Option<Arc<Redactor>>>,
    ) -> Self {
        Self {
            server,
            source,
            local_sampling,
            sessions,
            changes,
            client_timeout,
            seq: AtomicU64::new(1),
            by_request: Mutex::default(),
            by_token: Mutex::default(),
            redactor,
            catalog: OnceLock::new(),
        }
    }

    /// The catalogue whose policy says which identities may use this source.
    pub(crate) fn attach_catalog(&self, catalog: Arc<dyn ListsPort>) {
        let _ = self.catalog.set(catalog);
    }

    fn redact(&self, method: &str, params: &mut Option<Value>) {
        if let Some(redactor) = self.redactor.get() {
            redactor.redact_message(method, params);
        }
    }

    /// Whether `session`'s identity may use anything of this source: only
    /// then does it hear what the source says outside any call.
    fn may_hear(&self, session: &Session) -> bool {
        self.catalog
            .get()
            .is_some_and(|c| c.serves(self.source, &session.identity(), session.era()))
    }

    /// Where a log message goes: the call the transport names, on that
    /// call's stream; else (stdio cannot say) the only call in flight, on
    /// its stream; else the session of the latest call in flight, on its
    /// session stream, when every call in flight is one identity's. `None`
    /// when it cannot be told whose it is.
    fn log_owner(&self, related: Option<&RequestId>) -> Option<(Arc<Session>, Option<Outbound>)> {
        let calls = self.by_request.lock().expect("relay lock poisoned");
        if let Some(id) = related {
            return calls
                .get(id)
                .map(|c| (c.session.clone(), c.related.clone()));
        }
        if calls.len() == 1 {
            return calls
                .values()
                .next()
                .map(|c| (c.session.clone(), c.related.clone()));
        }
        let latest = calls.values().max_by_key(|c| c.seq)?;
        let identity = latest.session.identity();
        calls
            .values()
            .all(|c| c.session.belongs_to(&identity))
            .then(|| (latest.session.clone(), None))
    }

    /// Registers a call about to be sent. When the params carry a progress
    /// token it is replaced by one unique to this upstream.
    pub(crate) fn begin(
        self: &Arc<Self>,
        routed: &CallContext,
        params: &mut Value,
    ) -> (Arc<InFlightCall>, CallGuard) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        // The client's token (read when the call came in) is the gateway's
        // to keep; the upstream gets one unique among its calls.
        let progress_token = routed.progress.token().cloned();
        if progress_token.is_some() {
            if let Some(t) = params
                .get_mut("_meta")
                .and_then(|m| m.get_mut("progressToken"))
            {
                *t = Value::String(format!("mcpyard-{seq}"));
            }
        }
        let ctx = Arc::new(InFlightCall {
            session: routed.client.session.clone(),
            related: routed.client.related.clone(),
            progress_token: progress_token.clone(),
            task: routed.task.clone(),
            seq,
        });
        let token = progress_token.map(|_| {
            let t = format!("mcpyard-{seq}");
            self.by_token
                .lock()
                .expect("relay lock poisoned")
                .insert(t.clone(), ctx.clone());
            t
        });
        let guard = CallGuard {
            relay: self.clone(),
            token,
            request: Mutex::new(None),
        };
        (ctx, guard)
    }

    /// A request the upstream makes while serving a gateway-owned task: it
    /// is tagged with the task, the task shows `input_required` until the
    /// client answers, and it travels on the stream of the client's
    /// `tasks/result`, which the spec tells the client to call on seeing
    /// that status.
    async fn request_for_task(
        &self,
        task: &TaskSignal,
        ctx: &InFlightCall,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let params = with_related_task(params.unwrap_or_else(|| json!({})), task.task_id());
        let _awaiting = task.awaiting_input(format!("Waiting for the client to answer {method}"));
        let Some(waiter) = task.result_waiter(self.client_timeout).await else {
            return Err(ErrorObject::internal(format!(
                "the client did not call tasks/result for task {} within {:?} to receive {method}",
                task.task_id(),
                self.client_timeout
            )));
        };
        self.sessions
            .request_client(
                &ctx.session,
                method,
                Some(params),
                waiter.stream.as_ref(),
                self.client_timeout,
            )
            .await
            .map_err(ErrorObject::from)
    }

    /// The call a message from the upstream belongs to: the one the
    /// transport names (Streamable HTTP), else, as stdio cannot say, the
    /// latest call in flight whose client can answer `capability`, else the
    /// latest call in flight.
    fn context_for(
        &self,
        related: Option<&RequestId>,
        capability: Option<&str>,
    ) -> Option<Arc<InFlightCall>> {
        let calls = self.by_request.lock().expect("relay lock poisoned");
        if let Some(ctx) = related.and_then(|id| calls.get(id)) {
            return Some(ctx.clone());
        }
        let latest_capable = capability.and_then(|capability| {
            calls
                .values()
                .filter(|c| c.session.has_capability(capability))
                .max_by_key(|c| c.seq)
        });
        latest_capable
            .or_else(|| calls.values().max_by_key(|c| c.seq))
            .cloned()
    }

    fn context_for_token(&self, token: &Value) -> Option<Arc<InFlightCall>> {
        let key = match token {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.by_token
            .lock()
            .expect("relay lock poisoned")
            .get(&key)
            .cloned()
    }
}

impl Relay {
    /// Answers a sampling request with a local model once the upstream's
    /// policy admitted it. The audit trail records who asked, which model
    /// answered and how much it used, with the policy's hash of the request
    /// (never its text); the log says the same.
    async fn sample_locally(
        &self,
        local: &LocalSampling,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let started = std::time::Instant::now();
        let request = match local.policy.admit(params).await {
            Ok(request) => request,
            Err(e) => {
                tracing::info!(
                    target: "mcpyard::audit",
                    server = %self.server,
                    error = %e.message,
                    "sampling request refused by the policy"
                );
                if let Some(trail) = &local.audit {
                    trail.record_sampling(&self.server, None, started, Err("sampling policy"));
                }
                return Err(e);
            }
        };
        let summary = request.summary.clone();
        let outcome = local
            .sampler
            .create_message_measured(request, None)
            .await
            .map(|(result, usage)| {
                // A sampler that cannot tell: the model its answer names.
                let usage = usage.unwrap_or_else(|| SamplingUsage {
                    model: result["model"].as_str().unwrap_or_default().to_owned(),
                    ..SamplingUsage::default()
                });
                (result, usage)
            });
        match &outcome {
            Ok((_, usage)) => tracing::info!(
                target: "mcpyard::audit",
                server = %self.server,
                model = %usage.model,
                prompt_tokens = usage.prompt_tokens,
                completion_tokens = usage.completion_tokens,
                max_tokens = summary.max_tokens_granted,
                messages = summary.message_count,
                request_sha256 = %summary.request_sha256,
                "sampling request answered by a local model"
            ),
            Err(e) => tracing::info!(
                target: "mcpyard::audit",
                server = %self.server,
                request_sha256 = %summary.request_sha256,
                error = %e.message,
                "sampling request refused by the local model"
            ),
        }
        if let Some(trail) = &local.audit {
            let usage = outcome
                .as_ref()
                .map(|(_, usage)| usage)
                .map_err(|_| "local model");
            trail.record_sampling(&self.server, Some(&summary.request_sha256), started, usage);
        }
        outcome.map(|(result, _)| result)
    }
}

/// The capability a client needs to answer a relayed request.
fn required_capability(method: &str) -> Option<&'static str> {
    match method {
        methods::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        methods::ELICITATION_CREATE => Some("elicitation"),
        methods::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

#[async_trait]
impl ClientHandler for Relay {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        if method == methods::PING {
            return Ok(json!({}));
        }
        let Some(capability) = required_capability(method) else {
            return Err(ErrorObject::method_not_found(method));
        };
        let mut params = params;
        self.redact(method, &mut params);
        let ctx = self.context_for(related.as_ref(), Some(capability));
        if method == methods::SAMPLING_CREATE_MESSAGE {
            if let Some(local) = &self.local_sampling {
                let client_can = ctx
                    .as_ref()
                    .is_some_and(|c| c.session.has_capability(capability));
                if local.always || !client_can {
                    return self.sample_locally(local, params.unwrap_or_default()).await;
                }
            }
        }
        let Some(ctx) = ctx.filter(|c| c.session.has_capability(capability)) else {
            // mcpyard declared roots to the upstream so as to relay them; a
            // client without roots has none to give: an empty list.
            if method == methods::ROOTS_LIST {
                return Ok(json!({ "roots": [] }));
            }
            return Err(ErrorObject::method_not_found(method).with_data(json!({
                "reason": format!("the client that made this call does not support {capability}")
            })));
        };
        tracing::debug!(server = %self.server, method, "relaying request to the client");
        match &ctx.task {
            Some(task) => self.request_for_task(task, &ctx, method, params).await,
            None => self
                .sessions
                .request_client(
                    &ctx.session,
                    method,
                    params,
                    ctx.related.as_ref(),
                    self.client_timeout,
                )
                .await
                .map_err(ErrorObject::from),
        }
    }

    async fn on_session_restarted(&self) {
        self.changes.session_renewed();
    }

    /// Runs on the upstream's reader, which every client of the upstream
    /// shares: it hands messages on without waiting for any client.
    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) {
        if let Some(kinds) = ListKind::from_notification(method) {
            self.changes.lists_changed(kinds);
            return;
        }
        let mut params = params;
        if matches!(
            method,
            methods::NOTIFICATION_PROGRESS
                | methods::NOTIFICATION_MESSAGE
                | methods::NOTIFICATION_RESOURCES_UPDATED
        ) {
            self.redact(method, &mut params);
        }
        match method {
            methods::NOTIFICATION_PROGRESS => {
                let Some(mut params) = params else { return };
                let Some(ctx) = params
                    .get("progressToken")
                    .and_then(|t| self.context_for_token(t))
                else {
                    return;
                };
                if let Some(original) = &ctx.progress_token {
                    params["progressToken"] = original.clone();
                }
                if let Some(task) = &ctx.task {
                    params = with_related_task(params, task.task_id());
                }
                let msg = Message::notification(method, Some(params));
                ctx.session.notify(msg, ctx.related.as_ref());
            }
            methods::NOTIFICATION_MESSAGE => {
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_owned();
                let msg = Message::notification(method, params);
                // A log sent while serving a call is that caller's; one that
                // belongs to no call, for those who may use this source.
                match self.log_owner(related.as_ref()) {
                    Some((session, Some(stream))) if session.wants_log(&level) => {
                        session.notify(msg, Some(&stream));
                    }
                    // The session stream may be another replica's.
                    Some((session, None)) if session.wants_log(&level) => {
                        self.sessions.notify(&session, msg);
                    }
                    Some(_) => {}
                    None => self
                        .sessions
                        .broadcast_log(&msg, &level, |s| self.may_hear(s)),
                }
            }
            methods::NOTIFICATION_RESOURCES_UPDATED => {
                let Some(uri) = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return;
                };
                let msg = Message::notification(method, params);
                self.sessions.notify_subscribers(self.source, &uri, &msg);
            }
            _ => {
                tracing::debug!(server = %self.server, method, "notification from upstream not relayed");
            }
        }
    }
}
