//! The wire vocabulary shared by every part of mcpyard: JSON-RPC 2.0 messages
//! kept as raw JSON where the gateway does not need to look inside, MCP method
//! names, error codes and protocol versions ("eras"). No I/O lives here.

pub mod envelope;
mod error;
pub mod json_text;
mod jsonrpc;
pub mod methods;
mod payload;
mod version;

pub use envelope::{has_envelope, Envelope};
pub use error::{codes, ErrorObject};
pub use jsonrpc::{meta, parse_body, Body, Message, ParseError, RequestId};
pub use payload::Payload;
pub use version::{
    allows_batches, is_supported, negotiate, ProtocolVersion, LATEST, LATEST_STATEFUL, SUPPORTED,
};
