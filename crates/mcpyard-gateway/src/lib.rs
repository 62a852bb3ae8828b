//! The gateway: sources feed a catalog, the catalog serves clients.
//!
//! Downstream transports (in `mcpyard-server`) parse and frame; they hand
//! each JSON-RPC message to [`Gateway::handle`] together with the client's
//! [`Session`] and write back what it returns.

mod builtin;
mod catalog;
mod config;
mod gateway;
mod listen;
mod local;
mod relay;
mod round_trips;
mod session;
mod sessions;
mod subscriptions;
mod tasks;
mod upstream;

pub use config::{ConfigError, GatewayConfig, LocalSpec, SamplingPolicy, UpstreamSpec};
pub use gateway::Gateway;
pub use local::{
    CatalogCaller, LocalSource, Progress, Sampler, SamplingUsage, SourceHandle, ToolContext,
};
pub use session::{Negotiated, Outbound, Session};
