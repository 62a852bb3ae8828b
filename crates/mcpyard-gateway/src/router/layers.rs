//! The layers every routed call passes on its way to its source, outermost
//! first: a tracing span, the audit (`governance/audit.rs`), the size
//! limits (`governance/size.rs`), the outer layers the configuration adds
//! (metrics), the policy and rate limits of `governance/`, the other
//! configured layers (guardrails), the cap on calls in flight per source,
//! and the per-call timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use mcpyard_proto::Payload;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Instrument;

use crate::call::CallLimits;
use crate::source::Source;
use crate::source::SourceRequest;
use crate::RouteError;

/// One registered source as the router holds it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) name: String,
    pub(crate) source: Arc<dyn Source>,
    pub(crate) limits: CallLimits,
    pub(crate) in_flight: Arc<Semaphore>,
    /// What the source was made from ([`SourceSpec::fingerprint`](crate::SourceSpec::fingerprint)):
    /// a reload keeps the source when it is the same.
    pub(crate) fingerprint: Option<u64>,
}

impl Slot {
    pub(crate) fn new(name: String, source: Arc<dyn Source>, limits: CallLimits) -> Self {
        let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
        Self {
            name,
            source,
            limits,
            in_flight,
            fingerprint: None,
        }
    }

    /// The slot of a source's second instance (for 2026-07-28 clients):
    /// the source's limits, and its calls in flight counted together.
    pub(crate) fn twin(&self, source: Arc<dyn Source>) -> Self {
        Self {
            name: self.name.clone(),
            source,
            limits: self.limits.clone(),
            in_flight: self.in_flight.clone(),
            fingerprint: self.fingerprint,
        }
    }
}

/// One step of the call path. A layer may look at or change the call, stop
/// it with an error, or pass it on with [`Next::run`]: returning
/// `next.run(call)` as it is costs nothing; a layer that acts after the
/// call wraps it, `Box::pin(async move { ... next.run(call).await ... })`.
pub trait Layer: Send + Sync + std::fmt::Debug + 'static {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a>;
}

/// What a layer returns: the call's outcome, later.
pub type RouteFuture<'a> = BoxFuture<'a, Result<Payload, RouteError>>;

/// A request resolved to its source.
#[derive(Debug)]
pub struct RoutedCall {
    pub(crate) slot: Arc<Slot>,
    /// What the client called: the exposed tool or prompt name, or the URI.
    pub target: String,
    pub request: SourceRequest,
    /// The call's place among its source's calls in flight, held until the
    /// source is done with it.
    pub(crate) place: Option<OwnedSemaphorePermit>,
}

impl RoutedCall {
    /// The name of the source the call goes to.
    pub fn source(&self) -> &str {
        &self.slot.name
    }

    /// The limits configured for that source.
    pub fn limits(&self) -> &CallLimits {
        &self.slot.limits
    }
}

/// The rest of the stack, ending at the source.
#[derive(Debug)]
pub struct Next<'a> {
    layers: &'a [Arc<dyn Layer>],
}

impl<'a> Next<'a> {
    pub(crate) fn new(layers: &'a [Arc<dyn Layer>]) -> Self {
        Self { layers }
    }

    /// Passes the call to the next layer, or to the source after the last.
    pub fn run(self, call: RoutedCall) -> RouteFuture<'a> {
        match self.layers.split_first() {
            Some((layer, rest)) => layer.call(call, Next { layers: rest }),
            None => call_source(call).boxed(),
        }
    }
}

/// How long a cancelled call gets to wind down (an upstream is told
/// `notifications/cancelled` meanwhile) before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// The end of the stack: the source itself. One that does not stop its
/// calls itself is stopped here when the call is cancelled or its deadline
/// passes, its token cancelled so that work it started stops too.
async fn call_source(call: RoutedCall) -> Result<Payload, RouteError> {
    let _place = call.place;
    let slot = call.slot;
    let source = &slot.source;
    if source.stops_itself() {
        return source.call(call.request).await;
    }
    let (server, after) = (slot.name.clone(), slot.limits.timeout);
    let mut request = call.request;
    let method = request.method;
    let caller = request.context.cancel.clone();
    // A token of its own: the caller's token means the client cancelled.
    let stop = caller.child_token();
    request.context.cancel = stop.clone();
    let deadline = request.context.deadline;
    let work = source.call(request);
    tokio::pin!(work);
    let expired = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    let failure = tokio::select! {
        biased;
        outcome = &mut work => return outcome,
        () = caller.cancelled() => RouteError::Cancelled { what: method.to_owned() },
        () = expired => RouteError::TimedOut {
            server,
            method: method.to_owned(),
            after: after.unwrap_or_default(),
        },
    };
    stop.cancel();
    let _ = tokio::time::timeout(CANCEL_GRACE, work).await;
    Err(failure)
}

/// One span per call: source, target, method; its end says how long the
/// call took and how it ended (a result, a tool error, or whose fault).
#[derive(Debug)]
pub(crate) struct Trace;

impl Layer for Trace {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let span = tracing::debug_span!(
            "call",
            source = %call.source(),
            target = %call.target,
            method = call.request.method,
            duration_us = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        if span.is_disabled() {
            return next.run(call);
        }
        Box::pin(async move {
            let started = Instant::now();
            let outcome = next.run(call).instrument(span.clone()).await;
            let outcome_name = match &outcome {
                Ok(result) if result.is_error() => "tool_error",
                Ok(_) => "ok",
                Err(e) => e.fault().as_str(),
            };
            span.record("duration_us", started.elapsed().as_micros() as u64);
            span.record("outcome", outcome_name);
            span.in_scope(|| tracing::debug!("call finished"));
            outcome
        })
    }
}

/// At most `max_in_flight` calls of one source run at once; the next one
/// waits for a free place, at most `queue_timeout`.
#[derive(Debug)]
pub(crate) struct InFlightCap;

impl Layer for InFlightCap {
    fn call<'a>(&'a self, mut call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        // Free places are the usual case: no timer, no waiting.
        if let Ok(place) = call.slot.in_flight.clone().try_acquire_owned() {
            call.place = Some(place);
            return next.run(call);
        }
        let places = call.slot.in_flight.clone();
        Box::pin(async move {
            let limits = call.limits().clone();
            let cancel = call.request.context.cancel.clone();
            let waited = tokio::select! {
                place = tokio::time::timeout(limits.queue_timeout, places.acquire_owned()) => place,
                () = cancel.cancelled() => {
                    return Err(RouteError::Cancelled { what: call.request.method.to_owned() });
                }
            };
            let Ok(Ok(place)) = waited else {
                return Err(RouteError::Busy {
                    server: call.source().to_owned(),
                    limit: limits.max_in_flight,
                    waited: limits.queue_timeout,
                });
            };
            call.place = Some(place);
            next.run(call).await
        })
    }
}

/// Gives each call its source's deadline: a call still running then is
/// stopped (an MCP upstream is told `notifications/cancelled`) and fails
/// naming the source.
#[derive(Debug)]
pub(crate) struct Timeout;

impl Layer for Timeout {
    fn call<'a>(&'a self, mut call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        if let Some(after) = call.limits().timeout {
            let deadline = tokio::time::Instant::now() + after;
            let context = &mut call.request.context;
            context.deadline = Some(context.deadline.map_or(deadline, |d| d.min(deadline)));
        }
        next.run(call)
    }
}
