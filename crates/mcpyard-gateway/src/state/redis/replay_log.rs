//! The replay log of a session's GET stream: a Redis stream per session,
//! appended to as the stream writes, read from an entry id on.

use std::time::Duration;

use super::{millis, RedisState};
use crate::state::StateError;

/// Whether `id` reads as a stream entry's id (`ms-seq`): anything else
/// is no entry, and is not sent to Redis, which would refuse it.
fn is_entry_id(id: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    id.split_once('-')
        .is_some_and(|(ms, seq)| digits(ms) && digits(seq))
}

/// Entries read back from a replay log at most: its `MAXLEN ~` trim keeps
/// a little more than asked, never this many.
const REPLAY_READ_MAX: usize = 4096;

impl RedisState {
    /// Appends `message` to `session`'s log, trimmed to about `keep`
    /// entries and kept for `ttl`; the entry's id.
    pub(super) async fn append_to_log(
        &self,
        session: &str,
        message: &str,
        keep: usize,
        ttl: Duration,
    ) -> Result<String, StateError> {
        let key = self.key("replay", session);
        let (id,): (String,) = self
            .run(|mut c| async move {
                redis::pipe()
                    .cmd("XADD")
                    .arg(&key)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(keep)
                    .arg("*")
                    .arg("m")
                    .arg(message)
                    .cmd("PEXPIRE")
                    .arg(&key)
                    .arg(millis(ttl))
                    .ignore()
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(id)
    }

    /// The entries of `session`'s log after `after`, when `after` is in it.
    pub(super) async fn log_after(
        &self,
        session: &str,
        after: &str,
    ) -> Result<Option<Vec<(String, String)>>, StateError> {
        if !is_entry_id(after) {
            return Ok(None);
        }
        let key = self.key("replay", session);
        // From `after` itself: its presence says the log is whole after it.
        let entries: Vec<(String, Vec<String>)> = self
            .run(|mut c| async move {
                redis::cmd("XRANGE")
                    .arg(key)
                    .arg(after)
                    .arg("+")
                    .arg("COUNT")
                    .arg(REPLAY_READ_MAX)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        let mut entries = entries.into_iter();
        if entries.next().is_none_or(|(id, _)| id != after) {
            return Ok(None);
        }
        Ok(Some(
            entries
                .filter_map(|(id, fields)| {
                    let message = fields.chunks(2).find(|f| f[0] == "m")?.get(1)?.clone();
                    Some((id, message))
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::is_entry_id;

    #[test]
    fn only_stream_entry_ids_reach_redis() {
        assert!(is_entry_id("1733355000000-0"));
        for not in [
            "",
            "1",
            "-0",
            "1-",
            "1-0-0",
            "a-1",
            "1 -0",
            "99999999999999999999999-0",
        ] {
            assert!(!is_entry_id(not), "{not:?}");
        }
    }
}
