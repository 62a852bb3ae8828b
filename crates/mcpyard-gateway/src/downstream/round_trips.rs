//! Multi-round-trip requests of the stateless era (2026-07-28).
//!
//! That era has no session to carry a request from server to client. When
//! the call behind a `tools/call`, `prompts/get` or `resources/read` needs
//! the client (an upstream asks for sampling, elicitation or roots), the
//! gateway answers the client's request with an `input_required` result
//! listing the input requests, and keeps the call suspended. The client
//! retries the same request with `inputResponses` and the `requestState` it
//! was handed; the gateway gives the responses to the waiting call and
//! answers again: with the final result, or with the next input requests.
//!
//! `requestState` is `<id>.<generation>.<hmac, base64url>`: an HMAC-SHA256, under a key
//! drawn at start, over the id, the leg and the request it belongs to, so a
//! forged, replayed or mismatched state is refused without a lookup. A
//! suspended call the client does not come back to within the client
//! request timeout is cancelled and forgotten; at most
//! [`MAX_SUSPENDED`] wait at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use mcpyard_proto::{methods, ErrorObject, Payload};
use serde_json::{json, Map, Value};
use sha2::Sha256;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::call::Identity;
use crate::error::RouteError;

/// A call's outcome.
type Outcome = Result<Payload, RouteError>;

/// The client's answer to one input request.
type Answer = Result<Value, RouteError>;

/// Calls waiting for a client's retry at most at once: each holds an
/// upstream request open.
pub(crate) const MAX_SUSPENDED: usize = 1024;

/// Input requests one call may have waiting at once.
const ASKS_PER_CALL: usize = 16;

/// A request the running call needs the client to answer.
#[derive(Debug)]
pub(crate) struct InputAsk {
    pub(crate) method: String,
    pub(crate) params: Option<Value>,
    pub(crate) reply: oneshot::Sender<Answer>,
}

/// Where a stateless call puts the requests it needs answered.
pub(crate) type InputSink = mpsc::Sender<InputAsk>;

/// The methods whose calls may need the client in this era.
pub(crate) fn supports_input(method: &str) -> bool {
    matches!(
        method,
        methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ
    )
}

/// What a retry must repeat of the first request: its method and target,
/// and who made it (so a `requestState` that leaks resumes nothing for
/// another identity).
pub(crate) fn request_identity(method: &str, params: &Value, caller: &Identity) -> String {
    let target = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    format!(
        "{method}\n{target}\n{}\n{}",
        caller.kind.as_str(),
        caller.name
    )
}

/// One call in the background, between two legs of the client's.
#[derive(Debug)]
struct Suspended {
    identity: String,
    /// Bumped each time a state is handed out: only the latest is valid.
    generation: u64,
    asks: mpsc::Receiver<InputAsk>,
    outcome: oneshot::Receiver<Outcome>,
    /// The input requests handed to the client, by key, awaiting responses.
    waiting: HashMap<String, oneshot::Sender<Answer>>,
    next_key: u64,
    /// Cancels the call when it is abandoned.
    cancel: CancellationToken,
}

/// A call is cancelled whenever it is let go of: its outcome delivered (no
/// harm then), its client gone mid-leg, or its wait expired.
impl Drop for Suspended {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The suspended calls of the gateway.
#[derive(Debug)]
pub(crate) struct RoundTrips {
    key: [u8; 32],
    timeout: Duration,
    suspended: Arc<Mutex<HashMap<String, Suspended>>>,
}

impl RoundTrips {
    pub(crate) fn new(timeout: Duration) -> Self {
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        Self {
            key,
            timeout,
            suspended: Arc::default(),
        }
    }

    fn mac(&self, id: &str, generation: u64, identity: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any size");
        mac.update(id.as_bytes());
        mac.update(b"\n");
        mac.update(generation.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(identity.as_bytes());
        mac
    }

    fn state(&self, id: &str, generation: u64, identity: &str) -> String {
        let tag = self.mac(id, generation, identity).finalize().into_bytes();
        format!("{id}.{generation}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// Runs the first leg: `call` is started in the background with a sink
    /// for its input requests (`start` receives the sink and the call's
    /// cancellation), and the client gets its outcome or the first input
    /// requests, whichever comes first.
    pub(crate) async fn first_leg<F, Fut>(
        &self,
        identity: String,
        start: F,
        client_gone: &CancellationToken,
    ) -> Outcome
    where
        F: FnOnce(InputSink, CancellationToken) -> Fut,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        let (sink, asks) = mpsc::channel(ASKS_PER_CALL);
        let (done, outcome) = oneshot::channel();
        let cancel = CancellationToken::new();
        let call = start(sink, cancel.clone());
        tokio::spawn(async move {
            let _ = done.send(call.await);
        });
        let call = Suspended {
            identity,
            generation: 0,
            asks,
            outcome,
            waiting: HashMap::new(),
            next_key: 1,
            cancel,
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.leg(id, call, client_gone).await
    }

    /// A retry: checks its `requestState`, hands `inputResponses` to the
    /// waiting call and answers with what comes next.
    pub(crate) async fn resume(
        &self,
        method: &str,
        params: &Value,
        caller: &Identity,
        client_gone: &CancellationToken,
    ) -> Outcome {
        let state = params
            .get("requestState")
            .and_then(Value::as_str)
            .ok_or_else(|| RouteError::invalid_params("`requestState` must be a string"))?;
        let (id, generation, tag) = parse_state(state).ok_or_else(forged)?;
        let identity = request_identity(method, params, caller);
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| forged())?;
        self.mac(id, generation, &identity)
            .verify_slice(&tag)
            .map_err(|_| forged())?;
        let mut call = {
            let mut suspended = self.suspended.lock().expect("round trips lock poisoned");
            match suspended.get(id) {
                Some(c) if c.generation == generation => {}
                _ => return Err(RouteError::invalid_params(
                    "`requestState` has expired or was already used: send the request again without it",
                )),
            }
            suspended
                .remove(id)
                .expect("present: checked under the same lock")
        };
        let responses = params.get("inputResponses").and_then(Value::as_object);
        for (key, reply) in call.waiting.drain() {
            let answer = responses.and_then(|r| r.get(&key)).cloned().ok_or_else(|| {
                RouteError::invalid_params(format!(
                    "the client's retry carried no response for input request `{key}`"
                ))
            });
            let _ = reply.send(answer);
        }
        self.leg(id.to_owned(), call, client_gone).await
    }

    /// Waits for the call's outcome or its next input requests. Handing out
    /// input requests suspends the call until the client's retry, for at
    /// most the timeout; a client gone mid-leg cancels the call.
    async fn leg(
        &self,
        id: String,
        mut call: Suspended,
        client_gone: &CancellationToken,
    ) -> Outcome {
        // Returning early drops `call`, which cancels it.
        let first = tokio::select! {
            outcome = &mut call.outcome => {
                return outcome.unwrap_or_else(|_| Err(RouteError::internal("the call ended without an answer")));
            }
            Some(ask) = call.asks.recv() => ask,
            () = client_gone.cancelled() => {
                return Err(RouteError::internal("the client went away"));
            }
        };
        let mut requests = Map::new();
        let mut ask = Some(first);
        while let Some(InputAsk {
            method,
            params,
            reply,
        }) = ask.take().or_else(|| call.asks.try_recv().ok())
        {
            let key = format!("mcpyard-{}", call.next_key);
            call.next_key += 1;
            let mut request = json!({ "method": method });
            if let Some(params) = params {
                request["params"] = params;
            }
            requests.insert(key.clone(), request);
            call.waiting.insert(key, reply);
        }
        call.generation += 1;
        let state = self.state(&id, call.generation, &call.identity);
        let generation = call.generation;
        {
            let mut suspended = self.suspended.lock().expect("round trips lock poisoned");
            if suspended.len() >= MAX_SUSPENDED {
                return Err(RouteError::internal(format!(
                    "the gateway already holds {MAX_SUSPENDED} calls waiting for their clients' input; try again later"
                )));
            }
            suspended.insert(id.clone(), call);
        }
        self.expire_later(id, generation);
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        })
        .into())
    }

    /// Cancels and forgets the call if the client has not come back with
    /// this leg's state within the timeout.
    fn expire_later(&self, id: String, generation: u64) {
        let suspended = self.suspended.clone();
        let timeout = self.timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let mut calls = suspended.lock().expect("round trips lock poisoned");
            if calls.get(&id).is_some_and(|c| c.generation == generation) {
                calls.remove(&id);
                tracing::debug!("a call waiting for its client's input expired after {timeout:?}");
            }
        });
    }

    #[cfg(test)]
    fn suspended_count(&self) -> usize {
        self.suspended
            .lock()
            .expect("round trips lock poisoned")
            .len()
    }
}

fn forged() -> ErrorObject {
    ErrorObject::invalid_params("`requestState` was not issued by this gateway for this request")
}

fn parse_state(state: &str) -> Option<(&str, u64, &str)> {
    let mut parts = state.splitn(3, '.');
    let id = parts.next()?;
    let generation = parts.next()?.parse().ok()?;
    let tag = parts.next()?;
    Some((id, generation, tag))
}

/// Sends `method` to the client through `sink` and waits, at most
/// `timeout`, for the response its retry carries.
pub(crate) async fn ask(
    sink: &InputSink,
    method: &str,
    params: Option<Value>,
    timeout: Duration,
) -> Answer {
    let (reply, answer) = oneshot::channel();
    let ask = InputAsk {
        method: method.to_owned(),
        params,
        reply,
    };
    let waited = tokio::time::timeout(timeout, async {
        sink.send(ask)
            .await
            .map_err(|_| RouteError::internal("the client's request has ended"))?;
        answer
            .await
            .unwrap_or_else(|_| Err(RouteError::internal("the client did not retry its request")))
    })
    .await;
    waited.unwrap_or_else(|_| {
        Err(RouteError::internal(format!(
            "the client did not answer {method} within {timeout:?}"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::IdentityKind;

    fn call_params() -> Value {
        json!({"name": "every__trigger-sampling-request", "arguments": {}})
    }

    /// A call that asks the client once and answers with what it got.
    async fn asking_call(sink: InputSink, _cancel: CancellationToken) -> Outcome {
        let got = ask(
            &sink,
            "sampling/createMessage",
            Some(json!({"maxTokens": 5})),
            Duration::from_secs(5),
        )
        .await?;
        Ok(json!({"content": [{"type": "text", "text": got["content"]["text"]}]}).into())
    }

    /// The first leg of [`asking_call`]: its input request.
    async fn first_leg_of_asking_call(trips: &RoundTrips, gone: &CancellationToken) -> Value {
        trips
            .first_leg(
                request_identity("tools/call", &call_params(), &Identity::anonymous()),
                asking_call,
                gone,
            )
            .await
            .expect("first leg")
            .into_value()
    }

    #[tokio::test]
    async fn a_call_that_asks_is_answered_over_two_legs() {
        let trips = RoundTrips::new(Duration::from_secs(5));
        let gone = CancellationToken::new();
        let first = first_leg_of_asking_call(&trips, &gone).await;
        assert_eq!(first["resultType"], "input_required");
        let (key, request) = first["inputRequests"]
            .as_object()
            .expect("requests")
            .iter()
            .next()
            .expect("one");
        assert_eq!(request["method"], "sampling/createMessage");
        let mut retry = call_params();
        retry["requestState"] = first["requestState"].clone();
        retry["inputResponses"] = json!({ key: {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"} });
        let done = trips
            .resume("tools/call", &retry, &Identity::anonymous(), &gone)
            .await
            .expect("second leg")
            .into_value();
        assert_eq!(done["content"][0]["text"], "hi");
        assert_eq!(trips.suspended_count(), 0);
        // The same state again: used up.
        let again = trips
            .resume("tools/call", &retry, &Identity::anonymous(), &gone)
            .await
            .expect_err("used");
        assert!(
            again.to_string().contains("expired or was already used"),
            "{again:?}"
        );
    }

    #[tokio::test]
    async fn forged_or_mismatched_states_are_refused() {
        let trips = RoundTrips::new(Duration::from_secs(5));
        let gone = CancellationToken::new();
        let first = first_leg_of_asking_call(&trips, &gone).await;
        let state = first["requestState"].as_str().expect("state").to_owned();
        let mut other_tool = json!({"name": "every__echo", "requestState": state});
        let err = trips
            .resume("tools/call", &other_tool, &Identity::anonymous(), &gone)
            .await
            .expect_err("other tool");
        assert!(err.to_string().contains("not issued"), "{err:?}");
        let mut tampered = state.clone();
        tampered.replace_range(tampered.len() - 2.., "00");
        other_tool = json!({"name": "every__trigger-sampling-request", "requestState": tampered});
        let err = trips
            .resume("tools/call", &other_tool, &Identity::anonymous(), &gone)
            .await
            .expect_err("tampered");
        assert!(err.to_string().contains("not issued"), "{err:?}");
        let garbage = json!({"name": "x", "requestState": "no dots"});
        assert!(trips
            .resume("tools/call", &garbage, &Identity::anonymous(), &gone)
            .await
            .is_err());
        // The right tool and state, but another caller.
        let stolen = json!({"name": "every__trigger-sampling-request", "requestState": state});
        let someone_else = Identity::named(IdentityKind::ApiKey, "mallory", vec![]);
        let err = trips
            .resume("tools/call", &stolen, &someone_else, &gone)
            .await
            .expect_err("another caller");
        assert!(err.to_string().contains("not issued"), "{err:?}");
        assert_eq!(trips.suspended_count(), 1, "the real call still waits");
    }

    #[tokio::test(start_paused = true)]
    async fn an_abandoned_call_expires_and_is_cancelled() {
        let trips = RoundTrips::new(Duration::from_secs(30));
        let gone = CancellationToken::new();
        let (cancelled_tx, cancelled_rx) = oneshot::channel();
        let first = trips
            .first_leg(
                request_identity("tools/call", &call_params(), &Identity::anonymous()),
                |sink, cancel| async move {
                    let asked = tokio::spawn(async move {
                        ask(&sink, "roots/list", None, Duration::from_secs(3600)).await
                    });
                    cancel.cancelled().await;
                    let _ = cancelled_tx.send(());
                    asked.abort();
                    Err(RouteError::internal("cancelled"))
                },
                &gone,
            )
            .await
            .expect("first leg")
            .into_value();
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(trips.suspended_count(), 1);
        tokio::time::sleep(Duration::from_secs(31)).await;
        cancelled_rx.await.expect("the call was cancelled");
        assert_eq!(trips.suspended_count(), 0);
        let mut retry = call_params();
        retry["requestState"] = first["requestState"].clone();
        let err = trips
            .resume("tools/call", &retry, &Identity::anonymous(), &gone)
            .await
            .expect_err("expired");
        assert!(err.to_string().contains("expired"), "{err:?}");
    }
}
