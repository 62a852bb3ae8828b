//! Guardrails, one router layer: deny rules on arguments, the optional
//! external check (webhook), and redaction of secrets in results, in
//! upstream error messages and in the arguments the gateway logs.
//!
//! A refused tool call is an `isError` result naming the rule (a model can
//! change its call); a refused prompt is an invalid-params error.

mod detect;
mod webhook;

use std::sync::Arc;

use mcpyard_proto::{methods, Payload};
use regex::Regex;
use serde_json::{json, Value};

pub use detect::{builtin_detectors, PatternError};
pub use webhook::WebhookConfig;

use crate::catalog::matches;
use crate::error::refusal;
use crate::governance::audit::note_refusal;
use crate::router::{Layer, Next, RouteFuture, RoutedCall};
use crate::RouteError;
pub(crate) use detect::Redactor;
use webhook::{Checked, Verdict, Webhook};

/// The guardrails' settings, as the configuration gives them.
#[derive(Debug, Clone, Default)]
pub struct GuardConfig {
    /// Whether the built-in detectors redact (AWS keys, PEM private keys,
    /// GitHub / Slack / OpenAI-style tokens, JWTs, bearer tokens).
    pub redact_builtin: bool,
    /// More secrets to redact: (name, regular expression).
    pub patterns: Vec<(String, String)>,
    pub deny: Vec<DenyRule>,
    pub webhook: Option<WebhookConfig>,
}

/// A call whose arguments match `pattern` is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRule {
    /// Named in the refusal and in the audit.
    pub name: String,
    /// A regular expression, matched against every string of the arguments.
    pub pattern: String,
    /// Tool names (as clients see them; `*` and `?` wildcards) the rule
    /// applies to; empty: every tool.
    pub tools: Vec<String>,
    /// Top-level arguments to look in; empty: all of them, at any depth.
    pub arguments: Vec<String>,
    /// Said to the client after the rule's name.
    pub message: Option<String>,
}

/// A guardrail setting the layer cannot be built with.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("deny rule `{name}`: `pattern` is not a valid regular expression: {reason}")]
    Deny { name: String, reason: String },
}

#[derive(Debug)]
struct CompiledDeny {
    rule: DenyRule,
    regex: Regex,
}

/// The guardrail layer.
#[derive(Debug)]
pub struct Guard {
    redactor: Option<Arc<Redactor>>,
    deny: Vec<CompiledDeny>,
    webhook: Option<Webhook>,
}

impl Guard {
    pub fn new(config: GuardConfig) -> Result<Self, GuardError> {
        let redactor = Redactor::new(config.redact_builtin, &config.patterns)?.map(Arc::new);
        let deny = config
            .deny
            .into_iter()
            .map(|rule| {
                let regex = Regex::new(&rule.pattern).map_err(|e| GuardError::Deny {
                    name: rule.name.clone(),
                    reason: e.to_string(),
                })?;
                Ok(CompiledDeny { rule, regex })
            })
            .collect::<Result<_, GuardError>>()?;
        Ok(Self {
            redactor,
            deny,
            webhook: config.webhook.map(Webhook::new),
        })
    }

    /// Whether the layer has nothing to do (no detector, rule or check),
    /// so it need not be in the stack.
    pub fn is_inert(&self) -> bool {
        self.redactor.is_none() && self.deny.is_empty() && self.webhook.is_none()
    }

    /// The redaction of every message a source sends a client outside a
    /// call's result (progress, logs, requests, resource updates).
    pub(crate) fn redactor(&self) -> Option<Arc<Redactor>> {
        self.redactor.clone()
    }

    /// `text` with its secrets replaced, for anything the gateway logs.
    pub fn redact(&self, text: &str) -> String {
        match &self.redactor {
            Some(r) => r.redact_str(text).unwrap_or_else(|| text.to_owned()),
            None => text.to_owned(),
        }
    }

    /// The first deny rule the call's arguments match.
    fn denied(&self, tool: &str, arguments: &Value) -> Option<&DenyRule> {
        self.deny
            .iter()
            .find(|d| {
                (d.rule.tools.is_empty() || d.rule.tools.iter().any(|g| matches(g, tool)))
                    && match d.rule.arguments.is_empty() {
                        true => any_string(arguments, &|s| d.regex.is_match(s)),
                        false => d.rule.arguments.iter().any(|name| {
                            arguments
                                .get(name)
                                .is_some_and(|v| any_string(v, &|s| d.regex.is_match(s)))
                        }),
                    }
            })
            .map(|d| &d.rule)
    }

    fn redact_outcome(&self, outcome: &mut Result<Payload, RouteError>) {
        let Some(redactor) = &self.redactor else {
            return;
        };
        match outcome {
            Ok(result) => {
                let changed = redactor.redact_result(result);
                if changed > 0 {
                    tracing::info!(strings = changed, "secrets redacted from a result");
                }
            }
            // An upstream's own error goes to the client as it is.
            Err(RouteError::Refused { error, .. }) => {
                if let Some(m) = redactor.redact_str(&error.message) {
                    error.message = m;
                }
                if let Some(data) = error.data.as_mut() {
                    redactor.redact_value(data);
                }
            }
            Err(_) => {}
        }
    }
}

impl Layer for Guard {
    fn call<'a>(&'a self, mut call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let method = call.request.method;
        let checks_arguments = matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET);
        if !checks_arguments && self.redactor.is_none() {
            return next.run(call);
        }
        // What the source reports while it works is scanned like its result.
        if let Some(redactor) = &self.redactor {
            call.request.context.progress.redact_with(redactor);
        }
        Box::pin(async move {
            if checks_arguments {
                let empty = json!({});
                let arguments = call.request.params.get("arguments").unwrap_or(&empty);
                // Trace only: arguments are the user's words even without
                // a secret in them.
                if tracing::enabled!(tracing::Level::TRACE) {
                    let shown = self.redact(&arguments.to_string());
                    tracing::trace!(target = %call.target, arguments = %shown, "call arguments");
                }
                if let Some(rule) = self.denied(&call.target, arguments) {
                    note_refusal(&rule.name);
                    let mut message = format!(
                        "Refused by the guardrail `{}`: the arguments match its pattern.",
                        rule.name
                    );
                    if let Some(m) = &rule.message {
                        message.push(' ');
                        message.push_str(m);
                    }
                    return refusal(method, message);
                }
                if let Some(webhook) = &self.webhook {
                    if let Some(refused) = self.ask(webhook, &mut call).await {
                        return refused;
                    }
                }
            }
            let mut outcome = next.run(call).await;
            self.redact_outcome(&mut outcome);
            outcome
        })
    }
}

impl Guard {
    /// Runs the external check; `Some` is the refusal to answer with.
    async fn ask(
        &self,
        webhook: &Webhook,
        call: &mut RoutedCall,
    ) -> Option<Result<Payload, RouteError>> {
        let method = call.request.method;
        let empty = json!({});
        let session = &call.request.context.client.session;
        let checked = Checked {
            identity: &call.request.context.identity,
            session: (!session.is_stateless()).then(|| session.id()),
            source: call.source(),
            tool: &call.target,
            method,
            arguments: call.request.params.get("arguments").unwrap_or(&empty),
        };
        match webhook.check(&checked).await {
            Ok(Verdict::Pass) => None,
            Ok(Verdict::Modify(arguments)) => {
                tracing::debug!(target = %call.target, "the guardrail check changed the arguments");
                call.request.params["arguments"] = arguments;
                None
            }
            Ok(Verdict::Refuse(reason)) => {
                note_refusal("webhook");
                let reason = reason
                    .map(|r| format!(": {}", self.redact(&r)))
                    .unwrap_or_default();
                Some(refusal(
                    method,
                    format!("Refused by the guardrail check{reason}"),
                ))
            }
            Err(why) if webhook.config.fail_open => {
                tracing::warn!(target = %call.target, "guardrail check failed ({why}); the call passes (fail = \"open\")");
                None
            }
            Err(why) => {
                tracing::warn!(target = %call.target, "guardrail check failed ({why}); the call is refused (fail = \"closed\")");
                note_refusal("webhook");
                Some(refusal(
                    method,
                    "Refused: the guardrail check could not be made; try again later.".into(),
                ))
            }
        }
    }
}

/// Whether any string in `value` (at any depth) satisfies `test`.
fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(s) => test(s),
        Value::Array(items) => items.iter().any(|v| any_string(v, test)),
        Value::Object(map) => map.values().any(|v| any_string(v, test)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, pattern: &str) -> DenyRule {
        DenyRule {
            name: name.into(),
            pattern: pattern.into(),
            tools: Vec::new(),
            arguments: Vec::new(),
            message: None,
        }
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(crate::catalog::matches("*", "anything"));
        assert!(crate::catalog::matches("fs__*", "fs__read_file"));
        assert!(crate::catalog::matches("*__exec?", "box__exec1"));
        assert!(!crate::catalog::matches("fs__*", "everything__echo"));
        assert!(!crate::catalog::matches("echo", "everything__echo"));
        assert!(crate::catalog::matches("*echo", "everything__echo"));
    }

    #[test]
    fn deny_rules_look_where_they_are_told() {
        let mut only_path = rule("no-etc", "^/etc/");
        only_path.arguments = vec!["path".into()];
        only_path.tools = vec!["fs__*".into()];
        let guard = Guard::new(GuardConfig {
            deny: vec![rule("no-rm", r"rm\s+-rf"), only_path],
            ..GuardConfig::default()
        })
        .unwrap();
        let hit = guard.denied("shell__run", &json!({"cmd": {"line": ["rm  -rf /"]}}));
        assert_eq!(hit.map(|r| r.name.as_str()), Some("no-rm"));
        assert!(guard
            .denied("fs__read", &json!({"path": "/etc/passwd"}))
            .is_some());
        assert!(guard
            .denied("fs__read", &json!({"other": "/etc/passwd"}))
            .is_none());
        assert!(guard
            .denied("web__get", &json!({"path": "/etc/passwd"}))
            .is_none());
    }

    #[test]
    fn a_bad_deny_pattern_names_its_rule() {
        let e = Guard::new(GuardConfig {
            deny: vec![rule("broken", "[")],
            ..GuardConfig::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("broken"), "{e}");
    }
}
