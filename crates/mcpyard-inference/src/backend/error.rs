//! What can go wrong talking to an inference server, worded so that the
//! model reading the tool result and the person reading the log both know
//! what to start or configure. No API key ever appears here: errors carry
//! the backend's name, kind and address only.

use std::time::Duration;

use crate::config::BackendKind;

/// A failed call to a backend.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// Nothing answered (connection refused, reset, DNS...).
    #[error("No local inference server answered on {addr} ({kind_name}, backend `{backend}`): {detail}. {hint}, or configure [inference] backends with the right url.", kind_name = kind.display_name(), hint = capitalize(kind.start_hint()))]
    Unreachable {
        backend: String,
        kind: BackendKind,
        addr: String,
        detail: String,
    },
    /// The server took longer than allowed.
    #[error("The {kind_name} at {addr} (backend `{backend}`) did not answer {path} within {after:?}. It may be loading a model or overloaded: retry, use a smaller model, or raise [inference] request_timeout.", kind_name = kind.display_name())]
    Timeout {
        backend: String,
        kind: BackendKind,
        addr: String,
        path: String,
        after: Duration,
    },
    /// An HTTP error status.
    #[error("The {kind_name} at {addr} (backend `{backend}`) answered {path} with HTTP {status}: {excerpt}{advice}", kind_name = kind.display_name(), advice = status_advice(*status, api_key_env.as_deref()))]
    Status {
        backend: String,
        kind: BackendKind,
        addr: String,
        path: String,
        status: u16,
        excerpt: String,
        api_key_env: Option<String>,
    },
    /// The body was not the JSON (or stream) expected.
    #[error("The {kind_name} at {addr} (backend `{backend}`) sent a malformed answer to {path}: {detail}. Check that [inference] backends gives the right kind and url for it.", kind_name = kind.display_name())]
    Malformed {
        backend: String,
        kind: BackendKind,
        addr: String,
        path: String,
        detail: String,
    },
    /// The tool call was cancelled while waiting.
    #[error("the call was cancelled")]
    Cancelled,
}

impl BackendError {
    /// Whether the server seems gone (so the discovery cache is stale).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// The HTTP status, when the server answered with an error one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn status_advice(status: u16, key_env: Option<&str>) -> String {
    match (status, key_env) {
        (401 | 403, Some(var)) => format!(
            ". The server refused the API key: check the environment variable `{var}`."
        ),
        (401 | 403, None) => ". The server wants an API key: set `api_key_env` on this backend in [inference] backends and put the key in that environment variable.".to_owned(),
        (404, _) => ". The server does not offer this route or model: check the model name with list_models, or the backend's kind and url.".to_owned(),
        (400 | 422, _) => ". The server rejected the request: check the arguments.".to_owned(),
        (500..=599, _) => ". The server failed: see its own log.".to_owned(),
        _ => String::new(),
    }
}

/// Cuts a response body to a short, single-line excerpt for messages.
pub(crate) fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(body);
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.is_empty() {
        return "(empty body)".to_owned();
    }
    match flat.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_says_what_to_start() {
        let e = BackendError::Unreachable {
            backend: "ollama".into(),
            kind: BackendKind::Ollama,
            addr: "127.0.0.1:11434".into(),
            detail: "connection refused".into(),
        };
        let text = e.to_string();
        assert!(text.contains("127.0.0.1:11434 (Ollama"), "{text}");
        assert!(text.contains("ollama serve"), "{text}");
        assert!(text.contains("[inference] backends"), "{text}");
    }

    #[test]
    fn unauthorized_names_the_variable_not_the_key() {
        let e = BackendError::Status {
            backend: "b".into(),
            kind: BackendKind::Vllm,
            addr: "127.0.0.1:8000".into(),
            path: "/v1/models".into(),
            status: 401,
            excerpt: "no".into(),
            api_key_env: Some("VLLM_KEY".into()),
        };
        assert!(e.to_string().contains("`VLLM_KEY`"));
    }

    #[test]
    fn excerpts_are_short_and_flat() {
        let long = "x\n".repeat(1000);
        let e = excerpt(long.as_bytes());
        assert!(e.chars().count() <= 301);
        assert!(!e.contains('\n'));
        assert_eq!(excerpt(b""), "(empty body)");
    }
}
