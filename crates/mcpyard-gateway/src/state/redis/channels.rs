//! The replicas' channels: Redis pub/sub for ended and changed sessions,
//! forwarded messages, task changes, cancels and waiting results, list
//! changes, and questions between replicas; and the mark of life each
//! process renews.

use std::time::Duration;

use futures::StreamExt;
use redis::AsyncCommands;

use super::wire::{Addressed, Forwarded, ListChange};
use super::{RedisState, BEAT};
use crate::state::{stream_key, StateError, StateEvent};

impl RedisState {
    pub(super) fn ended_channel(&self) -> String {
        format!("{}:session-ended", self.prefix)
    }

    pub(super) fn changed_channel(&self) -> String {
        format!("{}:session-changed", self.prefix)
    }

    pub(super) fn forward_channel(&self) -> String {
        format!("{}:for-session", self.prefix)
    }

    pub(super) fn task_changed_channel(&self) -> String {
        format!("{}:task-changed", self.prefix)
    }

    pub(super) fn task_cancel_channel(&self) -> String {
        format!("{}:task-cancel", self.prefix)
    }

    pub(super) fn task_result_waiting_channel(&self) -> String {
        format!("{}:task-result-waiting", self.prefix)
    }

    pub(super) fn to_client_channel(&self) -> String {
        format!("{}:to-client", self.prefix)
    }

    pub(super) fn list_changed_channel(&self) -> String {
        format!("{}:list-changed", self.prefix)
    }

    pub(super) fn ask_channel(&self) -> String {
        format!("{}:ask", self.prefix)
    }

    pub(super) fn reply_channel(&self) -> String {
        format!("{}:reply", self.prefix)
    }

    /// A message for the client of `session`, published for the replica
    /// that holds its stream, or logged while none does (`to_client.lua`).
    pub(super) async fn publish_to_client(
        &self,
        session: &str,
        message: &str,
        keep: usize,
    ) -> Result<(), StateError> {
        let (held, log) = (
            self.key("held", &stream_key(session)),
            self.key("replay", session),
        );
        let channel = self.to_client_channel();
        let payload = serde_json::to_string(&Forwarded {
            session: session.into(),
            message: message.into(),
        })
        .map_err(|e| StateError(format!("message for a client: {e}")))?;
        let outcome = self
            .run(|mut c| async move {
                self.to_client
                    .key(held)
                    .key(log)
                    .arg(channel)
                    .arg(payload)
                    .arg(message)
                    .arg(keep)
                    .invoke_async::<i64>(&mut c)
                    .await
            })
            .await?;
        if outcome == 0 {
            tracing::debug!("a message for a client whose stream never opened was dropped");
        }
        Ok(())
    }

    /// A list change heard here, for the other replicas' streams.
    pub(super) async fn publish_list_change(&self, method: &str) -> Result<(), StateError> {
        let channel = self.list_changed_channel();
        let payload = serde_json::to_string(&ListChange {
            from: self.instance.as_str().into(),
            method: method.into(),
        })
        .map_err(|e| StateError(format!("list change: {e}")))?;
        self.run(|mut c| async move { c.publish::<_, _, ()>(channel, payload).await })
            .await
    }

    /// A question or reply published for another replica, taken when it
    /// is addressed to this one.
    pub(super) fn addressed(&self, payload: &str) -> Option<Addressed> {
        serde_json::from_str::<Addressed>(payload)
            .ok()
            .filter(|a| a.to == self.instance)
    }

    /// Hands a reply to the question waiting for it.
    pub(super) fn replied(&self, reply: Addressed) {
        let waiting = self
            .asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&reply.id);
        if let Some(waiting) = waiting {
            let _ = waiting.send(reply.body);
        }
    }

    /// Renews the mark of life every [`BEAT`] until the backend is closed.
    pub(super) fn keep_alive(&self) {
        let state = self.me.clone();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let Some(this) = state.upgrade() else { return };
                if let Err(e) = this.beat().await {
                    tracing::debug!(error = %e, "cannot renew this replica's mark of life");
                }
                drop(this);
                tokio::select! {
                    () = tokio::time::sleep(BEAT) => {}
                    () = stop.cancelled() => return,
                }
            }
        });
    }

    /// Listens for sessions deleted by any replica until the backend is
    /// closed, reconnecting after a failure. Each (re)subscription is
    /// announced with an empty id: deletions may have been missed meanwhile.
    pub(super) fn listen(&self) {
        let state = self.me.clone();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let Some(this) = state.upgrade() else { return };
                let subscribed = async {
                    let mut pubsub = this.client.get_async_pubsub().await?;
                    pubsub
                        .subscribe(&[
                            this.ended_channel(),
                            this.forward_channel(),
                            this.task_changed_channel(),
                            this.task_cancel_channel(),
                            this.ask_channel(),
                            this.reply_channel(),
                            this.to_client_channel(),
                            this.changed_channel(),
                            this.list_changed_channel(),
                            this.task_result_waiting_channel(),
                        ])
                        .await?;
                    redis::RedisResult::Ok(pubsub)
                };
                let pubsub = tokio::select! {
                    p = tokio::time::timeout(this.timeout, subscribed) => p,
                    () = stop.cancelled() => return,
                };
                match pubsub {
                    Ok(Ok(pubsub)) => {
                        let _ = this.events.send(StateEvent::Rejoined);
                        let events = this.events.clone();
                        let channels = [
                            this.ended_channel(),
                            this.task_changed_channel(),
                            this.task_cancel_channel(),
                            this.ask_channel(),
                            this.reply_channel(),
                            this.to_client_channel(),
                            this.changed_channel(),
                            this.list_changed_channel(),
                            this.task_result_waiting_channel(),
                        ];
                        let me = this.instance.clone();
                        drop(this);
                        let mut messages = pubsub.into_on_message();
                        loop {
                            let message = tokio::select! {
                                m = messages.next() => m,
                                () = stop.cancelled() => return,
                            };
                            let Some(message) = message else { break };
                            let Ok(payload) = message.get_payload::<String>() else {
                                continue;
                            };
                            let channel = message.get_channel_name();
                            let event = if channel == channels[0] {
                                Some(StateEvent::SessionEnded(payload))
                            } else if channel == channels[1] {
                                Some(StateEvent::TaskChanged(payload))
                            } else if channel == channels[2] {
                                Some(StateEvent::TaskCancelled(payload))
                            } else if channel == channels[5] {
                                // Named for the replica that holds the stream.
                                payload
                                    .split_once(' ')
                                    .filter(|(holder, _)| *holder == me)
                                    .and_then(|(_, f)| forwarded(f))
                                    .map(|f| StateEvent::ToClient {
                                        session: f.session.into_owned(),
                                        message: f.message.into_owned(),
                                    })
                            } else if channel == channels[6] {
                                forwarded(&payload).and_then(|f| {
                                    let record = serde_json::from_str(&f.message).ok()?;
                                    Some(StateEvent::SessionChanged {
                                        session: f.session.into_owned(),
                                        record,
                                    })
                                })
                            } else if channel == channels[8] {
                                Some(StateEvent::TaskResultWaiting(payload))
                            } else if channel == channels[7] {
                                serde_json::from_str::<ListChange>(&payload)
                                    .ok()
                                    .filter(|c| c.from != me)
                                    .map(|c| StateEvent::ListChanged(c.method.into_owned()))
                            } else if channel == channels[3] || channel == channels[4] {
                                let Some(this) = state.upgrade() else { return };
                                let Some(addressed) = this.addressed(&payload) else {
                                    continue;
                                };
                                if channel == channels[4] {
                                    this.replied(addressed);
                                    continue;
                                }
                                Some(StateEvent::Asked {
                                    from: addressed.from,
                                    id: addressed.id,
                                    question: addressed.body,
                                })
                            } else {
                                forwarded(&payload).map(|f| StateEvent::ForSession {
                                    session: f.session.into_owned(),
                                    message: f.message.into_owned(),
                                })
                            };
                            if let Some(event) = event {
                                let _ = events.send(event);
                            }
                        }
                        tracing::warn!("lost the replicas' Redis channels; reconnecting");
                    }
                    Ok(Err(e)) => {
                        this.note_failure();
                        tracing::warn!(error = %e, "cannot listen to the replicas' Redis channels; retrying");
                    }
                    Err(_) => {
                        this.note_failure();
                        tracing::warn!("Redis did not answer the subscription; retrying");
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    () = stop.cancelled() => return,
                }
            }
        });
    }
}

/// A session's message as published (see [`Forwarded`]).
fn forwarded(payload: &str) -> Option<Forwarded<'_>> {
    serde_json::from_str(payload).ok()
}
