//! The kinds of item a call can name, and the codes the gateway's own
//! refusals carry.

/// The kinds of item a policy speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Tool,
    Prompt,
    Resource,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
        }
    }
}

/// The JSON-RPC error code of a call refused by a rate limit (in the range
/// JSON-RPC leaves to implementations; 429 as in HTTP's Too Many Requests).
pub const RATE_LIMITED: i64 = -32029;
