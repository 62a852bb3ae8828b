//! What every part of a call shares: who it is for, what it may use, the
//! kinds of list and item it names, the era of its client. A leaf: it
//! imports nothing of the gateway, and everything else may import it.

mod identity;
mod items;
mod limits;
mod lists;

pub use identity::{Identity, IdentityKind, EVERY_GROUP};
pub use items::{ItemKind, RATE_LIMITED};
pub(crate) use limits::{json_len, result_len};
pub use limits::{CallLimits, SizeLimits, ToolSizes};
pub(crate) use lists::Era;
pub use lists::{ListItem, ListKind, SourceLists};

/// The name of the gateway's own source (its `mcpyard__*` tools).
pub(crate) const GATEWAY_SOURCE: &str = "mcpyard";
