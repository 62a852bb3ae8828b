//! How long a connection waits, and for what.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How long the `notifications/cancelled` sent for a timed-out or cancelled
/// request may take to go out.
pub(super) const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the `server/discover` probe may take before the handshake is
/// tried instead.
pub(super) const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// First and longest wait before retrying a request whose `input_required`
/// answer asked for nothing but time (request state only).
pub(super) const STATE_ONLY_BACKOFF: Duration = Duration::from_millis(50);

pub(super) const STATE_ONLY_BACKOFF_CAP: Duration = Duration::from_millis(250);

/// First and longest wait before a `subscriptions/listen` stream that ended
/// is opened again.
pub(super) const LISTEN_RETRY: Duration = Duration::from_secs(1);

pub(super) const LISTEN_RETRY_CAP: Duration = Duration::from_secs(30);

/// Resolves at `deadline`; never without one.
pub(super) async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Resolves when `token` is cancelled; never without one.
pub(super) async fn until_cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}
