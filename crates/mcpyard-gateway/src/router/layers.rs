//! The layers every routed call passes on its way to its source, outermost
//! first: a tracing span, the layers the configuration adds (policy, rate
//! limits, metrics, audit), the cap on calls in flight per source, and the
//! per-call timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tracing::Instrument;

use super::Slot;
use crate::source::{CallLimits, SourceRequest};
use crate::RouteError;

/// One step of the call path. A layer may look at or change the call, stop
/// it with an error, or pass it on with [`Next::run`].
#[async_trait]
pub trait Layer: Send + Sync + std::fmt::Debug + 'static {
    async fn call(&self, call: RoutedCall, next: Next<'_>) -> Result<Value, RouteError>;
}

/// A request resolved to its source.
#[derive(Debug)]
pub struct RoutedCall {
    pub(crate) slot: Arc<Slot>,
    /// What the client called: the exposed tool or prompt name, or the URI.
    pub target: String,
    pub request: SourceRequest,
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

    pub async fn run(self, call: RoutedCall) -> Result<Value, RouteError> {
        match self.layers.split_first() {
            Some((layer, rest)) => layer.call(call, Next { layers: rest }).await,
            None => call_source(call).await,
        }
    }
}

/// How long a cancelled call gets to wind down (an upstream is told
/// `notifications/cancelled` meanwhile) before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_millis(250);

/// The end of the stack: the source itself, stopped when the call is
/// cancelled.
async fn call_source(call: RoutedCall) -> Result<Value, RouteError> {
    let cancel = call.request.context.cancel.clone();
    let what = call.request.method;
    let work = call.slot.source.call(call.request);
    tokio::pin!(work);
    tokio::select! {
        biased;
        outcome = &mut work => outcome,
        () = cancel.cancelled() => {
            let _ = tokio::time::timeout(CANCEL_GRACE, work).await;
            Err(RouteError::Cancelled { what: what.to_owned() })
        }
    }
}

/// One span per call: source, target, method; its end says how long the
/// call took and how it ended (a result, a tool error, or whose fault).
#[derive(Debug)]
pub(crate) struct Trace;

#[async_trait]
impl Layer for Trace {
    async fn call(&self, call: RoutedCall, next: Next<'_>) -> Result<Value, RouteError> {
        let span = tracing::info_span!(
            "call",
            source = %call.source(),
            target = %call.target,
            method = call.request.method,
            duration_us = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let started = Instant::now();
        let outcome = next.run(call).instrument(span.clone()).await;
        let outcome_name = match &outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => "tool_error",
            Ok(_) => "ok",
            Err(e) => e.fault().as_str(),
        };
        span.record("duration_us", started.elapsed().as_micros() as u64);
        span.record("outcome", outcome_name);
        span.in_scope(|| tracing::debug!("call finished"));
        outcome
    }
}

/// At most `max_in_flight` calls of one source run at once; the next one
/// waits for a free place, at most `queue_timeout`.
#[derive(Debug)]
pub(crate) struct InFlightCap;

#[async_trait]
impl Layer for InFlightCap {
    async fn call(&self, call: RoutedCall, next: Next<'_>) -> Result<Value, RouteError> {
        let limits = call.limits().clone();
        let places = call.slot.in_flight.clone();
        let cancel = call.request.context.cancel.clone();
        let permit = tokio::select! {
            permit = tokio::time::timeout(limits.queue_timeout, places.acquire_owned()) => permit,
            () = cancel.cancelled() => {
                return Err(RouteError::Cancelled { what: call.request.method.to_owned() });
            }
        };
        let Ok(Ok(_permit)) = permit else {
            return Err(RouteError::Busy {
                server: call.source().to_owned(),
                limit: limits.max_in_flight,
                waited: limits.queue_timeout,
            });
        };
        next.run(call).await
    }
}

/// A call still running after its source's timeout is cancelled and fails
/// naming the source.
#[derive(Debug)]
pub(crate) struct Timeout;

#[async_trait]
impl Layer for Timeout {
    async fn call(&self, mut call: RoutedCall, next: Next<'_>) -> Result<Value, RouteError> {
        let Some(after) = call.limits().timeout else {
            return next.run(call).await;
        };
        // A token of its own: the caller's token means the client cancelled.
        let deadline = call.request.context.cancel.child_token();
        call.request.context.set_cancel(deadline.clone());
        let (source, method) = (call.source().to_owned(), call.request.method);
        let work = next.run(call);
        tokio::pin!(work);
        tokio::select! {
            biased;
            outcome = &mut work => outcome,
            () = tokio::time::sleep(after) => {
                deadline.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, work).await;
                Err(RouteError::TimedOut { server: source, method: method.to_owned(), after })
            }
        }
    }
}
