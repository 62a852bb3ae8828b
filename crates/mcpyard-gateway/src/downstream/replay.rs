//! Resumption of a session's GET stream (`Last-Event-ID`): each message
//! the stream writes is logged, under the event id it goes out with, and a
//! client that reconnects is sent again what followed the last id it saw.
//! With shared state the log is in the store (a Redis stream per session),
//! so another replica can replay it; else the session keeps it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::session::REPLAY_KEPT;
use super::Session;
use crate::state::{stream_key, StateBackend};

/// How long a replica's note that it holds a GET stream lasts unless
/// renewed (every third of it, while the stream is open): a replica killed
/// with a stream open stops being named within that time.
const HELD_FOR: Duration = Duration::from_secs(15);

/// The first letter of a GET stream's event ids: a POST's answer stream
/// numbers its events 1, 2, …, which are never taken for these.
const PREFIX: char = 'g';

/// Numbers and logs the messages of one GET stream as they are written.
#[derive(Debug)]
pub struct StreamRecorder {
    state: Arc<dyn StateBackend>,
    session: Arc<Session>,
    ttl: Duration,
    /// The store failed once: the stream goes on without a log, rather
    /// than waiting on it for every message.
    unlogged: AtomicBool,
    /// Ids for messages that could not be logged: unique (a fresh tag per
    /// stream), and never found in a log.
    tag: String,
    next: AtomicU64,
    /// This replica noted that it holds the stream ([`StreamRecorder::hold`]).
    held: AtomicBool,
}

impl StreamRecorder {
    pub(crate) fn new(state: Arc<dyn StateBackend>, session: Arc<Session>, ttl: Duration) -> Self {
        Self {
            state,
            session,
            ttl,
            unlogged: AtomicBool::new(false),
            tag: uuid::Uuid::new_v4().simple().to_string(),
            next: AtomicU64::new(1),
            held: AtomicBool::new(false),
        }
    }

    /// Notes, for the other replicas, that this one holds the session's
    /// stream (shared state only), and keeps the note while the stream is
    /// open: their messages for the client come here, and once the note
    /// is taken back (the recorder dropped, after what was left queued is
    /// logged) they go to the log. Called before the log is read for a
    /// reconnection, so that a message logged by another replica meanwhile
    /// is replayed, or comes here, never neither.
    pub async fn hold(self: &Arc<Self>) {
        if !self.state.shared() || !self.session.is_shared() {
            return;
        }
        let key = stream_key(self.session.id());
        if let Err(e) = self.state.note_held(&key, HELD_FOR).await {
            tracing::warn!(error = %e, "the other replicas were not told that this one holds a GET stream: their messages for it may be lost");
        }
        self.held.store(true, Ordering::Relaxed);
        let recorder = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HELD_FOR / 3).await;
                let Some(recorder) = recorder.upgrade() else {
                    return;
                };
                if recorder.session.is_ended() {
                    return;
                }
                if let Err(e) = recorder.state.note_held(&key, HELD_FOR).await {
                    tracing::debug!(error = %e, "the note that this replica holds a GET stream was not renewed");
                }
            }
        });
    }

    /// Logs `json`, about to be written on the stream; the event's id.
    pub async fn record(&self, json: &str) -> String {
        if !self.unlogged.load(Ordering::Relaxed) {
            let appended = self
                .state
                .append_stream(self.session.id(), json, REPLAY_KEPT, self.ttl)
                .await;
            match appended {
                Ok(Some(id)) => return format!("{PREFIX}{id}"),
                Ok(None) => {
                    let number = self.session.log_stream_message(json, REPLAY_KEPT);
                    return format!("{PREFIX}{number}");
                }
                Err(e) => {
                    self.unlogged.store(true, Ordering::Relaxed);
                    tracing::warn!(
                        error = %e,
                        "the GET stream's replay log could not be written: the stream goes on without one"
                    );
                }
            }
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{PREFIX}x{}-{n}", self.tag)
    }

    /// Logs the messages (JSON) still queued for the stream when it
    /// closed, in order after those written: a client that reconnects gets
    /// them too. Called from a drop, so it never waits: a shared store's
    /// log is written in the background (a reconnect that reads the log
    /// before it is may miss them, never get them twice).
    pub fn record_unwritten(self: &Arc<Self>, messages: Vec<String>) {
        if messages.is_empty() || self.session.is_ended() || self.unlogged.load(Ordering::Relaxed) {
            return;
        }
        if !self.state.shared() {
            for json in &messages {
                self.session.log_stream_message(json, REPLAY_KEPT);
            }
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let recorder = self.clone();
        runtime.spawn(async move {
            for json in &messages {
                if recorder.unlogged.load(Ordering::Relaxed) {
                    return;
                }
                recorder.record(json).await;
            }
        });
    }
}

impl Drop for StreamRecorder {
    /// The stream closed and what it left queued is logged: this replica
    /// no longer holds it.
    fn drop(&mut self) {
        if !self.held.load(Ordering::Relaxed) || self.session.is_ended() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (state, session) = (self.state.clone(), self.session.clone());
        runtime.spawn(async move {
            // The client came back here already: the note is the new stream's.
            if session.has_stream() {
                return;
            }
            if let Err(e) = state.release_held(&stream_key(session.id())).await {
                tracing::debug!(error = %e, "the note that this replica holds a GET stream stays until it expires");
            }
        });
    }
}

/// What `session`'s GET stream wrote after event `last`, as (event id,
/// JSON), oldest first. Empty when `last` names nothing logged: an id of
/// another stream, one pushed out of the log, or garbage.
pub(crate) async fn after(
    state: &dyn StateBackend,
    session: &Session,
    last: &str,
) -> Vec<(String, String)> {
    let Some(entry) = last.strip_prefix(PREFIX) else {
        return Vec::new();
    };
    let entries = match state.stream_after(session.id(), entry).await {
        Ok(Some(entries)) => entries,
        // Not in the store's log (or it keeps none): the session's own, which
        // is empty when the store keeps the log.
        Ok(None) => entry
            .parse::<u64>()
            .ok()
            .and_then(|n| session.stream_messages_after(n))
            .map(|kept| {
                kept.into_iter()
                    .map(|(n, json)| (n.to_string(), json))
                    .collect()
            })
            .unwrap_or_default(),
        Err(e) => {
            tracing::warn!(error = %e, "the GET stream's replay log could not be read: nothing replayed");
            Vec::new()
        }
    };
    entries
        .into_iter()
        .map(|(id, json)| (format!("{PREFIX}{id}"), json))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{MemoryState, RedisSettings, RedisState};

    fn recorder(state: Arc<dyn StateBackend>) -> (Arc<Session>, Arc<StreamRecorder>) {
        let session = Session::new(None);
        let recorder = StreamRecorder::new(state, session.clone(), Duration::from_secs(60));
        (session, Arc::new(recorder))
    }

    #[tokio::test]
    async fn in_one_process_the_session_logs_what_was_written_and_what_was_left_queued() {
        let state: Arc<dyn StateBackend> = Arc::new(MemoryState);
        let (session, recorder) = recorder(state.clone());
        assert_eq!(recorder.record("a").await, "g1");
        assert_eq!(recorder.record("b").await, "g2");
        recorder.record_unwritten(vec!["c".into()]);
        let replayed = after(state.as_ref(), &session, "g1").await;
        assert_eq!(
            replayed,
            [("g2".into(), "b".into()), ("g3".into(), "c".into())]
        );
        for unknown in ["1", "g", "g0", "g9", "gx1-1", "garbage"] {
            assert!(after(state.as_ref(), &session, unknown).await.is_empty());
        }
        // A new stream of the session goes on numbering where it stopped.
        let again = StreamRecorder::new(state, session, Duration::from_secs(60));
        assert_eq!(again.record("d").await, "g4");
    }

    #[tokio::test]
    async fn a_store_that_fails_leaves_the_stream_going_without_a_log() {
        let settings = RedisSettings {
            url: format!("redis://127.0.0.1:{}/0", mcpyard_testkit::free_port()),
            password: None,
            prefix: "test".into(),
            timeout: Duration::from_millis(300),
            ca_file: None,
        };
        let state: Arc<dyn StateBackend> = RedisState::new(&settings).expect("a Redis URL");
        let (session, recorder) = recorder(state.clone());
        let first = recorder.record("a").await;
        assert!(first.starts_with("gx"), "{first}");
        // Once failed, the store is not asked again for this stream.
        let started = std::time::Instant::now();
        let second = recorder.record("b").await;
        assert!(started.elapsed() < Duration::from_millis(100));
        assert_ne!(first, second);
        assert!(after(state.as_ref(), &session, &first).await.is_empty());
    }
}
