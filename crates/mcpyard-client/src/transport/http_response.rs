//! What an HTTP upstream answers, whichever client sent the request (the
//! origin pool or `reqwest`), and how its failures read without secrets.

use bytes::Bytes;
use http_body_util::BodyExt as _;

use crate::ClientError;

/// An answer, whichever way it came: its head, and its body to read with
/// [`chunk`].
pub(crate) type HttpResponse = http::Response<reqwest::Body>;

/// The next piece of an answer's body; `None` at its end.
pub(crate) async fn chunk(resp: &mut HttpResponse) -> Result<Option<Bytes>, ClientError> {
    loop {
        match resp.body_mut().frame().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(transport_error(e)),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
                // Trailers: nothing a transport reads.
            }
        }
    }
}

/// A `reqwest` error as a [`ClientError`], without the URL (its query may
/// carry a key).
pub(crate) fn transport_error(e: reqwest::Error) -> ClientError {
    ClientError::Transport(error_text(e))
}

/// A `reqwest` error's text with its causes, without the URL (its query may
/// carry a key or an authorization code).
pub(crate) fn error_text(e: reqwest::Error) -> String {
    with_causes(&e.without_url())
}

/// An error's text followed by its causes'.
pub(crate) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
