//! OpenTelemetry traces: one span per client request and, as its child, one
//! per routed call, whose context travels to the upstream in the request's
//! `_meta.traceparent` (the HTTP transports copy it into the `traceparent`
//! header). A client's own `_meta.traceparent` becomes the request span's
//! parent.
//!
//! The spans are ordinary `tracing` spans of target [`TARGET`] at TRACE
//! level: the binary exports them over OTLP through `tracing-opentelemetry`
//! when telemetry is configured; otherwise nothing listens for them and each
//! costs a cached "disabled" check.

use std::collections::HashMap;
use std::sync::Arc;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::Value;
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::router::{Layer, Next, RouteFuture, RoutedCall};

/// The target of the spans meant for export; a subscriber selects them by it.
pub const TARGET: &str = "mcpyard::otel";

/// The W3C trace context key, in `_meta` as in HTTP headers.
pub const TRACEPARENT: &str = "traceparent";

/// The span of one client request: the root of its trace, or the child of
/// the trace context the client sent in `_meta.traceparent`.
pub(crate) fn request_span(method: &str, params: Option<&Value>) -> Span {
    let span = tracing::trace_span!(
        target: TARGET,
        "mcp.request",
        otel.name = method,
        otel.kind = "server",
        rpc.system = "mcp",
        rpc.method = method,
        otel.status_code = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let sent = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(TRACEPARENT))
        .and_then(Value::as_str);
    if let Some(traceparent) = sent {
        let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
        let parent = TraceContextPropagator::new().extract(&carrier);
        // A malformed traceparent gives an invalid context: the span stays a root.
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }
    span
}

/// Marks a request span failed when its answer is a JSON-RPC error.
pub(crate) fn record_failure(span: &Span) {
    span.record("otel.status_code", "ERROR");
}

/// The router layer: a client-kind span per routed call, named after the
/// method and what it calls, with its context put in the upstream request.
#[derive(Debug)]
pub(crate) struct CallSpans;

impl CallSpans {
    pub(crate) fn layer() -> Arc<dyn Layer> {
        Arc::new(Self)
    }
}

impl Layer for CallSpans {
    fn call<'a>(&'a self, mut call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let method = call.request.method;
        let span = tracing::trace_span!(
            target: TARGET,
            "mcp.call",
            otel.name = format!("{method} {}", call.target),
            otel.kind = "client",
            rpc.system = "mcp",
            rpc.method = method,
            rpc.service = call.source(),
            mcp.target = %call.target,
            mcp.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        if span.is_disabled() {
            return next.run(call);
        }
        if call.slot.source.carries_trace() {
            if let Some(traceparent) = traceparent_of(&span) {
                put_traceparent(&mut call.request.params, traceparent);
            }
        }
        Box::pin(async move {
            let outcome = next.run(call).instrument(span.clone()).await;
            let said = super::audit::Outcome::of(&outcome);
            span.record("mcp.outcome", said.as_str());
            if outcome.is_err() {
                span.record("otel.status_code", "ERROR");
            }
            outcome
        })
    }
}

/// The `traceparent` of `span`, when it is being exported.
fn traceparent_of(span: &Span) -> Option<String> {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// Sets `params._meta.traceparent`, keeping the rest of `_meta`.
fn put_traceparent(params: &mut Value, traceparent: String) {
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(TRACEPARENT.to_owned(), Value::String(traceparent));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_traceparent_joins_what_meta_already_holds() {
        let mut params = json!({"name": "echo", "_meta": {"progressToken": 7}});
        put_traceparent(&mut params, "00-abc-def-01".into());
        assert_eq!(
            params["_meta"],
            json!({"progressToken": 7, "traceparent": "00-abc-def-01"})
        );
        let mut bare = json!({"name": "echo"});
        put_traceparent(&mut bare, "00-abc-def-01".into());
        assert_eq!(bare["_meta"]["traceparent"], "00-abc-def-01");
    }

    #[test]
    fn without_an_exporter_a_span_has_no_traceparent() {
        assert_eq!(traceparent_of(&Span::none()), None);
    }
}
