//! Governance: the router layers that decide, limit, guard and record
//! every call.

pub(crate) mod audit;
pub(crate) mod guard;
pub(crate) mod size;
