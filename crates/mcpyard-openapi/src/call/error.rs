//! Why a call was not made or got no answer.

use std::time::Duration;

/// Why a call was not made or got no answer; each becomes an `isError`
/// result worded for the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("Invalid arguments for `{operation}`; nothing was sent.\n{}\nExpected schema: {schema}", errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n"))]
    InvalidArguments {
        operation: String,
        errors: Vec<String>,
        schema: String,
    },
    #[error("{0}")]
    MissingCredential(String),
    #[error("{0}. Nothing was sent.")]
    File(String),
    #[error("{0}. Nothing was sent.")]
    CannotSend(String),
    #[error("API `{api}` has no base URL: {why}. Set [apis.{api}] base_url.")]
    NoBaseUrl { api: String, why: String },
    #[error("API `{api}`: {what}")]
    Failed { api: String, what: String },
    #[error("The call was cancelled.")]
    Cancelled,
    #[error("API `{api}` did not answer within the call's time limit ({after:?}); nothing more was read.")]
    TimedOut { api: String, after: Duration },
}
