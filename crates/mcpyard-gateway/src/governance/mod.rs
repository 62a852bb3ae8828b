//! Governance: the router layers that decide who may call what and how
//! often (policy, rate limits), and what is recorded of it.

mod limits;
mod policy;

pub use limits::{
    Dimension, LimitReached, LocalRateLimiter, Metered, RateLimit, RateLimitLayer, RateLimiter,
    RATE_LIMITED,
};
pub use policy::{
    Condition, ConditionError, Effect, Item, ItemKind, Policy, PolicyLayer, Rule, Verdict,
};
