//! A request as the HTTP transports make it, before it is sent through
//! the origin pool or reqwest.

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};

use crate::ClientError;

/// A request as a transport makes it: it becomes an `http::Request` for
/// the origin pool, or a `reqwest::Request` (which gets the configured
/// headers from the client) for any other origin. Header names the
/// protocol fixes are constants, so only values made from text are checked
/// per request, where reqwest's builder parsed every name and value again.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Bytes>,
    pub(crate) timeout: Option<Duration>,
}

impl Outgoing {
    pub(crate) fn new(method: Method, url: &Url) -> Self {
        Self {
            method,
            url: url.clone(),
            // Room for what a request carries, so none is grown on the way.
            headers: HeaderMap::with_capacity(12),
            body: None,
            timeout: None,
        }
    }

    /// Adds a header whose name and value are fixed.
    pub(crate) fn with(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Adds a header whose value, and maybe name, come from elsewhere (the
    /// server, the caller), so may not make a valid header.
    pub(crate) fn with_text<N>(mut self, name: N, value: &str) -> Result<Self, ClientError>
    where
        N: TryInto<HeaderName>,
    {
        let name = name
            .try_into()
            .map_err(|_| ClientError::Transport("invalid header name".into()))?;
        let value = header_value(&name, value)?;
        self.headers.append(name, value);
        Ok(self)
    }

    pub(crate) fn body(mut self, body: Bytes) -> Self {
        self.body = Some(body);
        self
    }

    pub(crate) fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    pub(crate) fn into_reqwest(self) -> reqwest::Request {
        let mut req = reqwest::Request::new(self.method, self.url);
        *req.headers_mut() = self.headers;
        *req.body_mut() = self.body.map(reqwest::Body::from);
        *req.timeout_mut() = self.timeout;
        req
    }
}

/// `value` as the value of header `name`, or an error that names the
/// header and never echoes the value (it may be a token).
pub(crate) fn header_value(name: &HeaderName, value: &str) -> Result<HeaderValue, ClientError> {
    HeaderValue::from_str(value)
        .map_err(|_| ClientError::Transport(format!("invalid value for header `{name}`")))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use reqwest::header::{HeaderValue, ACCEPT};
    use reqwest::{Method, Url};

    use super::Outgoing;
    use crate::ClientError;

    #[test]
    fn a_request_goes_to_reqwest_as_it_was_made() {
        let url = Url::parse("https://example.test/mcp").expect("url");
        let req = Outgoing::new(Method::DELETE, &url)
            .with(ACCEPT, HeaderValue::from_static("application/json"))
            .with_text("mcp-session-id", "s-1")
            .expect("a valid header")
            .body(Bytes::from_static(b"{}"))
            .timeout(Duration::from_secs(2))
            .into_reqwest();
        assert_eq!(req.method(), Method::DELETE);
        assert_eq!(req.url(), &url);
        assert_eq!(req.headers()[ACCEPT], "application/json");
        assert_eq!(req.headers()["mcp-session-id"], "s-1");
        assert_eq!(
            req.body().and_then(reqwest::Body::as_bytes),
            Some(&b"{}"[..])
        );
        assert_eq!(req.timeout(), Some(&Duration::from_secs(2)));
    }

    #[test]
    fn text_that_makes_no_header_is_refused_by_name() {
        let url = Url::parse("http://127.0.0.1:1/mcp").expect("url");
        let refused = |name: &str, value: &str| match Outgoing::new(Method::POST, &url)
            .with_text(name, value)
        {
            Err(ClientError::Transport(why)) => why,
            other => panic!("{name}: {value:?} was taken: {other:?}"),
        };
        assert_eq!(
            refused("mcp-name", "a\r\nx-injected: 1"),
            "invalid value for header `mcp-name`"
        );
        assert_eq!(refused("bad name", "v"), "invalid header name");
    }
}
