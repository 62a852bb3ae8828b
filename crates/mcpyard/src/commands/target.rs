//! The server `list` and `call` talk to: a running gateway by URL, or one
//! server of a configuration file, started or reached directly.

use std::time::Duration;

use anyhow::Context as _;
use mcpyard_client::{ConnectOptions, McpClient, TransportSpec};

use crate::cli::Target;
use crate::config::{self, DEFAULT_LISTEN};

/// Wait for an answer when neither `--timeout` nor the server's config
/// says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A connected client and how long its requests may take.
#[derive(Debug)]
pub(super) struct Connected {
    pub(super) client: McpClient,
    pub(super) timeout: Duration,
}

impl Connected {
    /// Runs `work` with the client, then closes the connection (a child
    /// process is killed and reaped) whatever `work` returned.
    pub(super) async fn run<T, F>(self, work: impl FnOnce(McpClient, Duration) -> F) -> T
    where
        F: std::future::Future<Output = T>,
    {
        let result = work(self.client.clone(), self.timeout).await;
        self.client.shutdown().await;
        result
    }
}

/// The transport for a URL given on the command line.
pub(super) fn url_spec(url: &str, api_key: Option<&str>) -> anyhow::Result<TransportSpec> {
    let parsed = url::Url::parse(url).context("--url: expected an http:// or https:// URL")?;
    if !matches!(parsed.scheme(), "http" | "https") {
        anyhow::bail!("--url: expected an http:// or https:// URL");
    }
    let headers = api_key
        .filter(|k| !k.is_empty())
        .map(|k| vec![("Authorization".to_owned(), format!("Bearer {k}"))])
        .unwrap_or_default();
    let url = parsed.to_string();
    // Same rule as in the config: the legacy transport lives on `/sse`.
    Ok(if parsed.path().trim_end_matches('/').ends_with("/sse") {
        TransportSpec::Sse { url, headers }
    } else {
        TransportSpec::StreamableHttp { url, headers }
    })
}

/// Connects to the target; `elicitation` answers the server's questions
/// (and declares the capability) when given.
pub(super) async fn connect(
    target: &Target,
    elicitation: Option<super::elicit::TerminalForm>,
) -> anyhow::Result<Connected> {
    let mut hint = "";
    let mut http_auth = None;
    let (spec, label, configured_timeout) = match (&target.config, &target.server) {
        (Some(path), Some(name)) => {
            let settings = config::load(path)?;
            for w in &settings.warnings {
                tracing::warn!("{w}");
            }
            let Some(up) = settings.upstream(name) else {
                if settings.servers.iter().any(|s| &s.name == name) {
                    anyhow::bail!("server `{name}` is disabled in {}", settings.source);
                }
                let known: Vec<_> = settings.servers.iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "no server `{name}` in {} (servers: {})",
                    settings.source,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                );
            };
            http_auth = up.http_auth.clone();
            (up.transport.clone(), up.name.clone(), Some(up.timeout))
        }
        _ => {
            let url = target.url.clone().unwrap_or_else(|| {
                hint = " (is `mcpyard serve` running? --url picks another address)";
                format!("http://{DEFAULT_LISTEN}/mcp")
            });
            (
                url_spec(&url, target.api_key.as_deref())?,
                "gateway".to_owned(),
                None,
            )
        }
    };
    let what = match &spec {
        TransportSpec::Stdio { command, .. } => {
            format!("cannot start server `{label}` (`{command}`)")
        }
        TransportSpec::StreamableHttp { url, .. } | TransportSpec::Sse { url, .. } => {
            format!("cannot connect to {}{hint}", without_query(url))
        }
    };
    let options = ConnectOptions {
        label,
        http_auth,
        ..ConnectOptions::default()
    };
    let mut builder = McpClient::builder(spec).options(options);
    if let Some(handler) = elicitation {
        builder = builder.elicitation(handler);
    }
    let client = builder.connect().await.context(what)?;
    Ok(Connected {
        client,
        timeout: target
            .timeout
            .or(configured_timeout)
            .unwrap_or(DEFAULT_TIMEOUT),
    })
}

/// A URL fit for an error message (a query may carry a token).
fn without_query(url: &str) -> String {
    url.split(['?', '#']).next().unwrap_or(url).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_pick_their_transport_and_carry_the_key() {
        let spec = url_spec("http://127.0.0.1:7117/mcp", Some("k")).unwrap();
        assert_eq!(
            spec,
            TransportSpec::StreamableHttp {
                url: "http://127.0.0.1:7117/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer k".into())],
            }
        );
        let spec = url_spec("http://127.0.0.1:7117/sse", None).unwrap();
        assert!(matches!(spec, TransportSpec::Sse { ref headers, .. } if headers.is_empty()));
        let spec = url_spec("http://127.0.0.1:7117/mcp", Some("")).unwrap();
        assert!(
            matches!(spec, TransportSpec::StreamableHttp { ref headers, .. } if headers.is_empty())
        );
        assert!(url_spec("ftp://x/", None).is_err());
        assert!(url_spec("nope", None).is_err());
    }

    #[test]
    fn error_urls_lose_their_query() {
        assert_eq!(without_query("http://h/mcp?token=x"), "http://h/mcp");
    }
}
