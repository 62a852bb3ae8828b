//! The gateway: sources feed a catalog, a router sends each call through
//! its layers to its source, and downstream serves the clients.
//!
//! - `call/`: what every part of a call shares (identity, limits, lists
//!   and eras); a leaf that uses nothing else of the gateway;
//! - `source/`: every kind of source behind one [`Source`] trait, the only
//!   seam (MCP upstreams in `source/mcp/`, the gateway's own tools in
//!   `source/builtin/`);
//! - `catalog/`: the merged lists per era, their names and cursors, and the
//!   exposure stage;
//! - `router/`: name → source → [`Layer`]s → source; `router/stack.rs`
//!   builds the one stack of layers;
//! - `tasks/`: the tasks the gateway runs itself;
//! - `downstream/`: sessions, subscriptions, listen streams, the stateless
//!   era's requests;
//! - `governance/`: the layers that decide who may call what and how
//!   often (policy, rate limits), guard and record each call, and the
//!   metrics and traces;
//! - `state/`: where what outlives a request is kept: this process's
//!   memory, or Redis shared by several replicas;
//! - `files.rs`: the sandbox for local files every source reads and writes;
//! - `gateway.rs`: composition at start and dispatch by method.
//!
//! Front doors (in `mcpyard-server`) parse and frame; they hand each client
//! request to [`Gateway::request`] and everything else to
//! [`Gateway::receive`].

mod call;
mod catalog;
mod config;
mod downstream;
mod error;
mod files;
mod gateway;
pub mod governance;
mod live;
mod router;
mod source;
pub mod state;
mod tasks;

pub use call::{
    CallLimits, Identity, IdentityKind, ItemKind, ListItem, ListKind, SizeLimits, SourceLists,
    ToolSizes, EVERY_GROUP,
};
pub use catalog::matches as glob_match;
pub use catalog::{AppsConfig, Exposure, Hit, IndexedTool, Listing, ToolIndex};
pub use config::{ConfigError, GatewayConfig};
pub use downstream::{Negotiated, Outbound, Session, StreamRecorder, REPLAY_KEPT};
pub use error::{Fault, RouteError};
pub use files::{FileError, Sandbox, SandboxKeys};
pub use gateway::{Answer, Gateway, Governance, Reconfiguration, Reloaded};
pub use governance::audit::{AuditFile, AuditRecord, AuditTrail, Outcome};
pub use governance::guard::{
    builtin_detectors, DenyRule, Guard, GuardConfig, GuardError, PatternError, WebhookConfig,
};
pub use governance::metrics::{Metrics, CONTENT_TYPE as METRICS_CONTENT_TYPE};
pub use governance::trace::{TARGET as TRACE_TARGET, TRACEPARENT};
pub use live::Live;
pub use mcpyard_client::sampling::{Sampler, SamplingPolicy, SamplingRequest, SamplingUsage};
pub use router::{Layer, Next, RouteFuture, RoutedCall};
pub use source::builtin::spread_wrapped_arguments;
pub use source::{
    settings_hash, CallContext, ClientHandle, Progress, RouterHandle, Source, SourceEvents,
    SourceHealth, SourceRequest, SourceSpec, UpstreamSampling, UpstreamSpec,
};
