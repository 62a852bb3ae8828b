//! How long what a transport opens for one sent message may last.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

/// How long what a transport opens for a sent message (the event stream
/// answering it) may last: the connection's life, or one request's. A
/// request's own token is made only when something is opened for it (most
/// answers need nothing), and is cancelled when its scope is dropped, at
/// the end of the request however it ends.
#[derive(Debug)]
pub(crate) enum SendScope<'a> {
    Connection(&'a CancellationToken),
    Request {
        connection: &'a CancellationToken,
        own: OnceLock<CancellationToken>,
    },
}

impl<'a> SendScope<'a> {
    pub(crate) fn request(connection: &'a CancellationToken) -> Self {
        Self::Request {
            connection,
            own: OnceLock::new(),
        }
    }

    /// A token cancelled when the scope ends.
    pub(crate) fn token(&self) -> CancellationToken {
        match self {
            Self::Connection(token) => (*token).clone(),
            Self::Request { connection, own } => {
                own.get_or_init(|| connection.child_token()).clone()
            }
        }
    }
}

impl Drop for SendScope<'_> {
    fn drop(&mut self) {
        if let Self::Request { own, .. } = self {
            if let Some(token) = own.get() {
                token.cancel();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::SendScope;

    #[test]
    fn a_requests_token_ends_with_its_scope_and_a_connections_does_not() {
        let connection = CancellationToken::new();
        let asked = {
            let scope = SendScope::request(&connection);
            let token = scope.token();
            assert!(!token.is_cancelled());
            token
        };
        assert!(asked.is_cancelled(), "the request is over");
        assert!(!connection.is_cancelled(), "the connection lives on");

        let unasked = SendScope::request(&connection);
        assert!(matches!(&unasked, SendScope::Request { own, .. } if own.get().is_none()));
        drop(unasked);

        let whole = SendScope::Connection(&connection).token();
        assert!(!whole.is_cancelled());
        connection.cancel();
        assert!(
            whole.is_cancelled(),
            "a connection's scope is the connection"
        );
    }
}
