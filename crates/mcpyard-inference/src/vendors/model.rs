//! What a backend says of its models.

use serde::Serialize;

use crate::backend::Origin;
use crate::config::BackendKind;

/// What a model can be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Chat,
    Vision,
    Embeddings,
    Transcription,
    Image,
    Speech,
    /// Chat with function calling.
    Tools,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Vision => "vision",
            Self::Embeddings => "embeddings",
            Self::Transcription => "transcription",
            Self::Image => "image",
            Self::Speech => "speech",
            Self::Tools => "tools",
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a model stands on its backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelState {
    Loaded,
    Downloaded,
    Suggested,
}

/// One model of one backend.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// The id to pass as `model`.
    pub id: String,
    pub backend: String,
    pub state: ModelState,
    pub capabilities: Vec<Capability>,
    /// Size on disk in bytes, when the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ModelInfo {
    pub fn has(&self, c: Capability) -> bool {
        self.capabilities.contains(&c)
    }
}

/// Everything one backend has, or why it could not be asked.
#[derive(Debug, Clone, Serialize)]
pub struct BackendModels {
    pub backend: String,
    pub kind: BackendKind,
    pub url: String,
    pub origin: Origin,
    pub healthy: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// In memory now.
    pub loaded: Vec<ModelInfo>,
    /// On disk but not loaded (a loaded model is not repeated here).
    pub downloaded: Vec<ModelInfo>,
    /// Not on disk; pullable with `allow_download: true`.
    pub suggested: Vec<ModelInfo>,
    /// The best chat model of this backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommended_chat: Option<String>,
}

impl BackendModels {
    /// Loaded, then downloaded models.
    pub(crate) fn available(&self) -> impl Iterator<Item = &ModelInfo> {
        self.loaded.iter().chain(self.downloaded.iter())
    }
}
