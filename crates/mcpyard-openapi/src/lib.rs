//! OpenAPI 3.0 / 3.1 and Swagger 2.0 documents as a source of MCP tools.
//!
//! - `model.rs`: what a loaded document becomes: one [`Operation`] per
//!   method and path, with its tool name, description, input schema and
//!   what the call needs on the wire. Loading produces it; calling reads it.
//! - `config.rs`: what the gateway's configuration gives one API.
//! - `load/`: a document (file or URL, JSON or YAML) to an [`ApiDocument`];
//!   `naming.rs`, `schema.rs` and `describe.rs` make each tool's name,
//!   schemas and description; `curated.rs` what `expose = "default"` lists.
//! - `call/`: an operation and the tool's arguments to an HTTP request (or
//!   a WebSocket exchange), the answer to a tool result.
//! - `source.rs`: the gateway's [`OpenApiSource`].

mod audit;
mod call;
mod config;
mod curated;
mod describe;
mod load;
mod model;
mod naming;
mod schema;
mod source;

pub use audit::{audit, Audit};
pub use call::credential_report;
pub use config::{ApiAuth, ApiConfig};
pub use curated::{default_listing, DEFAULT_LISTING_MAX_OPERATIONS};
pub use describe::UNDESCRIBED;
pub use load::{
    load, load_file, parse, LoadError, LoadOptions, FETCH_TIMEOUT, MAX_DOCUMENT_BYTES,
    MAX_TOOL_NAME_LEN,
};
pub use source::OpenApiSource;

pub use model::{
    ApiDocument, Argument, BodyKind, BodyShape, DocVersion, Location, Operation, Parameter,
    RequestBody, ResponseKind, SecurityRequirement, SecurityScheme, Style,
};
