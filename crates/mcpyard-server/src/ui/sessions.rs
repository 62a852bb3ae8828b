//! The browsers signed in to the status page: an opaque cookie value for
//! the identity its key proved, until it expires or signs out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcpyard_gateway::Identity;

/// How long a browser stays signed in.
pub(super) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Signed-in browsers remembered at once; the oldest goes first.
const MAX_SESSIONS: usize = 1024;

/// The browsers signed in: cookie value → identity and expiry.
#[derive(Debug, Default)]
pub(crate) struct UiSessions(Mutex<HashMap<String, (Identity, Instant)>>);

impl UiSessions {
    pub(super) fn open(&self, identity: Identity) -> String {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        map.retain(|_, (_, expires)| *expires > now);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, (_, e))| *e)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(token.clone(), (identity, now + SESSION_TTL));
        token
    }

    pub(super) fn identity(&self, token: &str) -> Option<Identity> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(token)
            .filter(|(_, expires)| *expires > Instant::now())
            .map(|(identity, _)| identity.clone())
    }

    pub(super) fn close(&self, token: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ends_when_closed() {
        let sessions = UiSessions::default();
        let token = sessions.open(Identity::anonymous());
        assert!(sessions.identity(&token).is_some());
        assert!(sessions.identity("forged").is_none());
        sessions.close(&token);
        assert!(sessions.identity(&token).is_none());
    }
}
