//! Governance: the router layers that decide who may call what and how
//! often (policy, rate limits), guard what goes in and out (guardrails,
//! size limits), and record it (audit, metrics, traces).

pub(crate) mod audit;
pub(crate) mod guard;
mod limits;
pub(crate) mod metrics;
mod policy;
pub(crate) mod size;
pub(crate) mod trace;

pub use limits::{
    Dimension, LimitReached, LocalRateLimiter, Metered, RateLimit, RateLimitLayer, RateLimiter,
    RATE_LIMITED,
};
pub use policy::{
    Condition, ConditionError, Effect, Item, ItemKind, Policy, PolicyLayer, Rule, Verdict,
};
