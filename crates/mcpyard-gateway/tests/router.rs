//! The router's built-in layers on a source of the test's own: a call over
//! the cap waits for a place and runs once one frees; a source that does
//! not stop itself is stopped at its deadline, its token cancelled; routing
//! errors reach the client as JSON-RPC errors naming the source.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::{
    CallLimits, Gateway, GatewayConfig, Layer, Next, RouteError, RouteFuture, RoutedCall, Session,
    Source, SourceEvents, SourceLists, SourceRequest, SourceSpec,
};
use mcpyard_proto::{codes, Message, Payload, RequestId};
use serde_json::{json, Value};
use tokio::sync::Notify;

const WAIT: Duration = Duration::from_secs(10);

/// `hold` runs until released (or its token is cancelled, which it counts).
#[derive(Debug, Default)]
struct Gate {
    release: Notify,
    started: AtomicUsize,
    stopped: AtomicUsize,
}

#[async_trait]
impl Source for Gate {
    fn name(&self) -> &str {
        "gate"
    }

    fn start(&self, events: SourceEvents) {
        let tool = json!({"name": "hold", "inputSchema": {"type": "object"}});
        events.publish(SourceLists::tools(vec![tool]));
    }

    async fn call(&self, request: SourceRequest) -> Result<Payload, RouteError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        tokio::select! {
            () = self.release.notified() => Ok(json!({"content": [{"type": "text", "text": "released"}]}).into()),
            () = request.context.cancel.cancelled() => {
                self.stopped.fetch_add(1, Ordering::SeqCst);
                Err(RouteError::internal("stopped"))
            }
        }
    }

    async fn status(&self) -> Value {
        json!({"name": "gate", "healthy": true})
    }
}

/// Counts the calls that reach the configured layers, just outside the cap.
#[derive(Debug, Default)]
struct Arrived(AtomicUsize);

impl Layer for Arrived {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(call)
    }
}

async fn gateway(gate: Arc<Gate>, limits: CallLimits) -> (Gateway, Arc<Session>, Arc<Arrived>) {
    let arrived = Arc::new(Arrived::default());
    let config = GatewayConfig {
        sources: vec![SourceSpec::new(gate).with_limits(limits)],
        layers: vec![arrived.clone()],
        ..GatewayConfig::default()
    };
    let gateway = Gateway::start(config).await.expect("gateway starts");
    let session = Session::new(None);
    assert!(gateway.register_session(session.clone()));
    (gateway, session, arrived)
}

async fn call_hold(gateway: &Gateway, session: &Arc<Session>, id: i64) -> Message {
    let params = json!({"name": "gate__hold", "arguments": {}});
    tokio::time::timeout(
        WAIT,
        gateway.request(
            session,
            RequestId::Number(id),
            "tools/call",
            Some(params),
            None,
        ),
    )
    .await
    .expect("answered in time")
    .into_reply()
    .expect("a reply")
}

async fn wait_until(done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_call_over_the_cap_waits_for_a_place_and_then_runs() {
    let gate = Arc::new(Gate::default());
    let limits = CallLimits {
        timeout: None,
        max_in_flight: 1,
        queue_timeout: WAIT,
        ..CallLimits::default()
    };
    let (gateway, session, arrived) = gateway(gate.clone(), limits).await;
    let first = tokio::spawn({
        let (gateway, session) = (gateway.clone(), session.clone());
        async move { call_hold(&gateway, &session, 1).await }
    });
    wait_until(|| gate.started.load(Ordering::SeqCst) == 1).await;
    let second = tokio::spawn({
        let (gateway, session) = (gateway.clone(), session.clone());
        async move { call_hold(&gateway, &session, 2).await }
    });
    // The second has reached the cap, and waits there while the first
    // holds the only place.
    wait_until(|| arrived.0.load(Ordering::SeqCst) == 2).await;
    assert_eq!(gate.started.load(Ordering::SeqCst), 1);
    gate.release.notify_one();
    let first = first.await.expect("first call");
    assert!(matches!(first, Message::Response { .. }), "{first:?}");
    wait_until(|| gate.started.load(Ordering::SeqCst) == 2).await;
    gate.release.notify_one();
    let second = second.await.expect("second call");
    assert!(matches!(second, Message::Response { .. }), "{second:?}");
    gateway.shutdown().await;
}

#[tokio::test]
async fn a_source_that_does_not_stop_itself_is_stopped_at_its_deadline() {
    let gate = Arc::new(Gate::default());
    let limits = CallLimits {
        timeout: Some(Duration::from_millis(200)),
        ..CallLimits::default()
    };
    let (gateway, session, _) = gateway(gate.clone(), limits).await;
    let answer = call_hold(&gateway, &session, 1).await;
    let Message::Error { error, .. } = answer else {
        panic!("not an error: {answer:?}")
    };
    assert_eq!(error.code, codes::INTERNAL_ERROR);
    assert_eq!(
        error.message,
        "source `gate` did not answer tools/call within 200ms"
    );
    assert_eq!(error.data, Some(json!({"server": "gate"})));
    // Its token was cancelled, so the work it started stopped too.
    wait_until(|| gate.stopped.load(Ordering::SeqCst) == 1).await;
    gateway.shutdown().await;
}

#[tokio::test]
async fn a_full_source_answers_busy_naming_itself_after_the_wait() {
    let gate = Arc::new(Gate::default());
    let limits = CallLimits {
        timeout: None,
        max_in_flight: 1,
        queue_timeout: Duration::from_millis(100),
        ..CallLimits::default()
    };
    let (gateway, session, _) = gateway(gate.clone(), limits).await;
    let first = tokio::spawn({
        let (gateway, session) = (gateway.clone(), session.clone());
        async move { call_hold(&gateway, &session, 1).await }
    });
    wait_until(|| gate.started.load(Ordering::SeqCst) == 1).await;
    let answer = call_hold(&gateway, &session, 2).await;
    let Message::Error { error, .. } = answer else {
        panic!("not an error: {answer:?}")
    };
    assert_eq!(error.code, codes::INTERNAL_ERROR);
    assert!(
        error
            .message
            .starts_with("source `gate` is busy: 1 calls in flight"),
        "{}",
        error.message
    );
    assert_eq!(
        error.data,
        Some(json!({"server": "gate", "reason": "busy", "maxInFlight": 1}))
    );
    assert_eq!(
        gate.started.load(Ordering::SeqCst),
        1,
        "the busy call never ran"
    );
    gate.release.notify_one();
    first.await.expect("first call");
    gateway.shutdown().await;
}
