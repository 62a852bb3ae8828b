//! The sessions the front doors hold: registered, found (here or, with
//! shared state, as another replica opened them), shared and ended.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Gateway;
use crate::{Session, StreamRecorder};

impl Gateway {
    /// Registers a session created by a transport, so later requests with
    /// its id find it. At `max_sessions`, the idle session unused for
    /// longest is ended to make room; when none is idle the session is
    /// refused (false), and the transport should say so.
    pub fn register_session(&self, session: Arc<Session>) -> bool {
        self.inner.downstream.register(session)
    }

    /// The live session with this id; looking it up counts as using it.
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.inner.downstream.session(id)
    }

    /// The session with this id, this replica's or (shared state) one
    /// another replica opened; looking it up counts as using it.
    pub async fn find_session(&self, id: &str) -> Option<Arc<Session>> {
        self.inner.downstream.find(id).await
    }

    /// Counts a registered session among the team's and records it for
    /// the other replicas (shared state only), before its id is given to
    /// the client. False when the team's session caps are reached: the
    /// session is ended, and the client must be told so.
    pub async fn share_session(&self, session: &Session) -> bool {
        self.inner.downstream.admit(session).await
    }

    /// Numbers and logs the messages of `session`'s GET stream as they are
    /// written, so that a client that reconnects is sent what it missed.
    pub fn stream_recorder(&self, session: Arc<Session>) -> StreamRecorder {
        self.inner.downstream.stream_recorder(session)
    }

    /// The messages `session`'s GET stream wrote after event `last`, as
    /// (event id, JSON), oldest first; empty when `last` names no logged
    /// message of that stream.
    pub async fn replay_stream(&self, session: &Session, last: &str) -> Vec<(String, String)> {
        self.inner.downstream.replay_after(session, last).await
    }

    /// Ends a session on every replica (DELETE). Returns false when it was
    /// unknown.
    pub async fn delete_session(&self, id: &str) -> bool {
        self.inner.downstream.delete(id).await
    }

    /// Whether every source has made its first report (connected and
    /// listed, or failed).
    pub fn sources_reported(&self) -> bool {
        self.inner
            .first_reports
            .iter()
            .all(CancellationToken::is_cancelled)
    }

    /// Where state shared with the other replicas is kept.
    pub fn state(&self) -> &Arc<dyn crate::state::StateBackend> {
        &self.inner.state
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// Ends and forgets a session here. Returns false when it was unknown.
    pub fn end_session(&self, id: &str) -> bool {
        self.inner.downstream.end(id)
    }
}
