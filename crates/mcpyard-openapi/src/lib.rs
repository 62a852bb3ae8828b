//! OpenAPI 3.0 / 3.1 and Swagger 2.0 documents as a source of MCP tools.
//!
//! - `model.rs`: what a loaded document becomes: one [`Operation`] per
//!   method and path, with its tool name, description, input schema and
//!   what the call needs on the wire. Loading produces it; calling reads it.
//! - `config.rs`: what the gateway's configuration gives one API.

mod audit;
mod config;
mod model;

pub use audit::{audit, Audit};
pub use config::{ApiAuth, ApiConfig};

pub use model::{
    ApiDocument, Argument, BodyKind, BodyShape, DocVersion, Location, Operation, Parameter,
    RequestBody, ResponseKind, SecurityRequirement, SecurityScheme, Style,
};
