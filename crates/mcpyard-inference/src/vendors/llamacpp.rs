//! llama.cpp's `llama-server`: one model, listed OpenAI-style, whose
//! extra modalities `/props` states; recognised by the `build_info` in
//! `/props`. No downloads.

use serde_json::Value;

use super::model::Capability;
use super::shared::{Listed, PROBE_TIMEOUT};
use crate::backend::{Backend, BackendError};

pub(super) async fn list(backend: &Backend) -> Result<(Listed, Listed), BackendError> {
    let mut models = super::openai::list(backend).await?;
    // `/props` says what the one loaded model takes besides text.
    if let Ok(props) = backend.get_json("/props").await {
        let modal = props.get("modalities");
        let flag = |k: &str| modal.and_then(|m| m.get(k)).and_then(Value::as_bool) == Some(true);
        for (_, caps, _) in &mut models {
            if flag("vision") && !caps.contains(&Capability::Vision) {
                caps.push(Capability::Vision);
            }
            if flag("audio") && !caps.contains(&Capability::Transcription) {
                caps.push(Capability::Transcription);
            }
        }
    }
    Ok((models, Vec::new()))
}

/// Whether `probe` is a llama-server.
pub(super) async fn identify(probe: &Backend) -> bool {
    probe
        .get_json_within("/props", PROBE_TIMEOUT)
        .await
        .is_ok_and(|v| v.get("build_info").is_some())
}
