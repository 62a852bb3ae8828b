//! OpenAPI 3.0 / 3.1 and Swagger 2.0 documents as a source of MCP tools.
//!
//! - `model.rs`: what a loaded document becomes: one [`Operation`] per
//!   method and path, with its tool name, description, input schema and
//!   what the call needs on the wire. Loading produces it; calling reads it.
//! - `config.rs`: what the gateway's configuration gives one API.
//! - `load/`: a document (file or URL, JSON or YAML) to an [`ApiDocument`];
//!   `naming.rs`, `schema.rs` and `describe.rs` make each tool's name,
//!   schemas and description; `curated.rs` what `expose = "default"` lists.

mod config;
mod curated;
mod describe;
mod load;
mod model;
mod naming;
mod schema;

pub use config::{ApiAuth, ApiConfig};
pub use curated::{default_listing, DEFAULT_LISTING_MAX_OPERATIONS};
pub use load::{
    load, load_file, parse, LoadError, LoadOptions, FETCH_TIMEOUT, MAX_DOCUMENT_BYTES,
    MAX_TOOL_NAME_LEN,
};

pub use model::{
    ApiDocument, Argument, BodyKind, BodyShape, DocVersion, Location, Operation, Parameter,
    RequestBody, ResponseKind, SecurityRequirement, SecurityScheme, Style,
};
