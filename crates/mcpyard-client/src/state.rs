//! Where a client is in its life.
//!
//! [`ClientState::Disconnected`] when built, [`ClientState::Initializing`]
//! while `McpClient::open` runs the handshake, [`ClientState::Ready`] once it
//! succeeded, and [`ClientState::Closed`] for good once the connection ended
//! (shut down, child exited, HTTP server gone). A failed `open` goes back
//! to `Disconnected`, so it can be tried again. Requests are only sent when
//! `Ready`; in any other state they fail at once with `ClientError::NotReady`.

/// Where a client is in its life (see `McpClient::state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientState {
    /// Built, not connected yet: call [`McpClient::open`].
    Disconnected,
    /// [`McpClient::open`] is opening the transport and running the
    /// handshake.
    Initializing,
    /// Connected: requests are sent.
    Ready,
    /// The connection ended (shut down, or the server went away); a client
    /// never leaves this state: build a new one to connect again.
    Closed,
}

impl std::fmt::Display for ClientState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClientState::Disconnected => "disconnected",
            ClientState::Initializing => "initializing",
            ClientState::Ready => "ready",
            ClientState::Closed => "closed",
        })
    }
}
