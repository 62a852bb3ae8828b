//! Governance: the router layers that decide, limit and record what each
//! call may do, and the gateway's metrics and traces.

pub(crate) mod metrics;
pub(crate) mod trace;
