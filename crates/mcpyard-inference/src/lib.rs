//! Local models as MCP tools: the inference servers people run on their
//! machine (Ollama, llama.cpp's llama-server, LM Studio, Lemonade,
//! LocalAI, vLLM, any OpenAI-compatible server) behind a gateway source
//! named `local`, with tools `list_models`, `chat`, `embed`,
//! `transcribe_audio`, `generate_image`, `speak`, `analyze_image`,
//! `agent` and `omni`; and the sampling bridge (`sampling`) that answers upstream
//! sampling requests with a local model.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpyard_inference::{InferenceConfig, InferenceSource};
//! let source = InferenceSource::new(InferenceConfig::default())?;
//! let spec = source.into_source_spec(); // into GatewayConfig.sources
//! # let _ = spec; Ok(()) }
//! ```
//!
//! Layout: `config` (the `[inference]` table), `backend/` (HTTP to one
//! server), `vendors/` (one file per kind of server: recognising it,
//! listing its models and their capabilities, suggestions, downloads),
//! `discovery` (finding servers on loopback), `engine` (model selection),
//! `progress` (a call's progress notifications), `tools/` (one file per
//! tool and the dispatch table), `source` (the gateway side).

mod backend;
mod config;
mod discovery;
mod engine;
mod error;
mod imaging;
mod progress;
mod sampling;
mod source;
mod tools;
mod vendors;

pub use backend::{
    http_client, Backend, BackendError, ChatStream, NdjsonStream, Origin, SseEvent, SseStream,
};
pub use config::{
    BackendKind, BackendSpec, InferenceConfig, InferenceConfigError, DEFAULT_DISCOVER_PORTS,
    DEFAULT_MAX_BASE64_BYTES, DEFAULT_REQUEST_TIMEOUT,
};
pub use error::ToolError;
pub use source::InferenceSource;
pub use tools::SOURCE_NAME;
pub use vendors::{
    capabilities_from_name, identify, BackendModels, Capability, ModelInfo, ModelState,
};
