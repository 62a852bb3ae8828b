//! The external check: before a call goes to its source, the gateway POSTs
//! it to a configured URL, which may let it pass, change its arguments or
//! refuse it.
//!
//! Request (JSON): `{"version": 1, "identity": {"name", "kind", "groups"},
//! "session", "source", "tool", "method", "arguments"}`.
//! Answer (JSON, any 2xx): `{"action": "pass" | "modify" | "refuse",
//! "arguments": {...} (with modify), "reason": "..." (with refuse)}`.
//! No answer within the timeout, another status, or another shape is a
//! failure: the call passes (fail open) or is refused (fail closed).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::Identity;

/// Where and how the check is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    pub url: String,
    pub timeout: Duration,
    /// When the check fails: `true` lets the call pass, `false` refuses it.
    pub fail_open: bool,
}

impl WebhookConfig {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
}

/// What the check decided.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    Pass,
    Modify(Value),
    Refuse(Option<String>),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Pass,
    Modify,
    Refuse,
}

#[derive(Debug, Deserialize)]
struct Answer {
    action: Action,
    arguments: Option<Value>,
    reason: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Webhook {
    pub(crate) config: WebhookConfig,
    http: reqwest::Client,
}

/// What the call is, as the check sees it.
pub(crate) struct Checked<'a> {
    pub(crate) identity: &'a Identity,
    pub(crate) session: Option<&'a str>,
    pub(crate) source: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) method: &'a str,
    pub(crate) arguments: &'a Value,
}

impl Webhook {
    pub(crate) fn new(config: WebhookConfig) -> Self {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .timeout(config.timeout)
            // The arguments go where configured, not through a proxy or a
            // redirect to somewhere else.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "guardrail webhook client with custom settings failed; using defaults");
                reqwest::Client::new()
            });
        Self { config, http }
    }

    /// Asks the check. `Err` says why it gave no usable answer (without
    /// the answer's body, which may echo the arguments).
    pub(crate) async fn check(&self, call: &Checked<'_>) -> Result<Verdict, String> {
        let identity = call.identity;
        let body = json!({
            "version": 1,
            "identity": {
                "name": identity.name,
                "kind": identity.kind.as_str(),
                "groups": identity.groups,
            },
            "session": call.session,
            "source": call.source,
            "tool": call.tool,
            "method": call.method,
            "arguments": call.arguments,
        });
        let response = self
            .http
            .post(&self.config.url)
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    format!("no answer within {:?}", self.config.timeout)
                } else {
                    "the request failed".to_owned()
                }
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("it answered HTTP {}", status.as_u16()));
        }
        let answer: Answer = response.json().await.map_err(|_| {
            "its answer is not {\"action\": \"pass\" | \"modify\" | \"refuse\", ...}".to_owned()
        })?;
        match answer.action {
            Action::Pass => Ok(Verdict::Pass),
            Action::Refuse => Ok(Verdict::Refuse(answer.reason)),
            Action::Modify => match answer.arguments {
                Some(arguments @ Value::Object(_)) => Ok(Verdict::Modify(arguments)),
                _ => Err("it answered `modify` without an `arguments` object".into()),
            },
        }
    }
}
