//! A request in the 2026-07-28 era: sent with the connection's envelope,
//! and, when the server answers `input_required`, its input requests
//! answered and the request sent again, round after round.

use std::future::Future;

use mcpyard_proto::{Payload, RequestId};
use serde_json::{Map, Value};

use super::era::{asks_for_input, request_envelope, with_envelope};
use super::waits::{until, until_cancelled, STATE_ONLY_BACKOFF, STATE_ONLY_BACKOFF_CAP};
use super::Connection;
use crate::{ClientError, RequestOptions, MAX_INPUT_ROUNDS};

impl Connection {
    /// [`Connection::request_with_id`] in the 2026-07-28 era: the request
    /// with its envelope, and the rounds of input it may ask for.
    pub(super) async fn request_in_rounds(
        &self,
        envelope: &Map<String, Value>,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        let params = with_envelope(params, &request_envelope(envelope, &options));
        let start = tokio::time::Instant::now();
        let deadline = options.due();
        let mut first_id = None;
        let mut answer = self
            .exchange(method, Some(params.clone()), options.clone(), |id| {
                first_id = Some(id.clone());
                on_sent(id);
            })
            .await?;
        let mut state_only_wait = STATE_ONLY_BACKOFF;
        for _ in 0..MAX_INPUT_ROUNDS {
            if !asks_for_input(&answer) {
                return Ok(answer);
            }
            let question = answer.into_value();
            let Value::Object(mut retry) = params.clone() else {
                return Err(ClientError::Protocol(format!(
                    "{method}: the server asked for input, but params that are not an object cannot carry the answers"
                )));
            };
            let asked = question
                .get("inputRequests")
                .and_then(Value::as_object)
                .filter(|asked| !asked.is_empty());
            let round = async {
                match asked {
                    Some(asked) => {
                        state_only_wait = STATE_ONLY_BACKOFF;
                        let responses = self.answer_input(asked, first_id.clone()).await?;
                        retry.insert("inputResponses".into(), Value::Object(responses));
                    }
                    None => {
                        tokio::time::sleep(state_only_wait).await;
                        state_only_wait = (state_only_wait * 2).min(STATE_ONLY_BACKOFF_CAP);
                    }
                }
                Ok::<(), ClientError>(())
            };
            self.bounded(round, deadline, &options, start).await?;
            if let Some(state) = question.get("requestState") {
                retry.insert("requestState".into(), state.clone());
            }
            let left = RequestOptions {
                timeout: None,
                deadline,
                cancel: options.cancel.clone(),
                progress: None,
                capabilities: None,
            };
            answer = self
                .exchange(method, Some(Value::Object(retry)), left, |_| {})
                .await
                .map_err(|e| match e {
                    ClientError::Timeout(_) => ClientError::Timeout(options.limit(start)),
                    other => other,
                })?;
        }
        if asks_for_input(&answer) {
            return Err(ClientError::Protocol(format!(
                "{method}: the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
            )));
        }
        Ok(answer)
    }

    /// Runs the handler for every input request of one `input_required`
    /// answer at once; the first refusal ends the request with its error.
    async fn answer_input(
        &self,
        asked: &Map<String, Value>,
        related: Option<RequestId>,
    ) -> Result<Map<String, Value>, ClientError> {
        let handler = &self.inner.shared.handler;
        let answers = asked.iter().map(|(key, request)| {
            let related = related.clone();
            async move {
                let Some(method) = request.get("method").and_then(Value::as_str) else {
                    return Err(ClientError::Protocol(format!(
                        "input request `{key}` names no method"
                    )));
                };
                let params = request.get("params").cloned();
                let result = handler
                    .on_request(method, params, related)
                    .await
                    .map_err(ClientError::Rpc)?;
                Ok((key.clone(), result))
            }
        });
        Ok(futures::future::try_join_all(answers)
            .await?
            .into_iter()
            .collect())
    }

    /// Runs `work` within what is left of a request's time (started at
    /// `start`), its cancellation and the connection's life.
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, ClientError>>,
        deadline: Option<tokio::time::Instant>,
        options: &RequestOptions,
        start: tokio::time::Instant,
    ) -> Result<T, ClientError> {
        tokio::select! {
            outcome = work => outcome,
            () = self.inner.shared.closed.cancelled() => Err(ClientError::Closed),
            () = until(deadline) => Err(ClientError::Timeout(options.limit(start))),
            () = until_cancelled(options.cancel.as_ref()) => Err(ClientError::Cancelled),
        }
    }
}
