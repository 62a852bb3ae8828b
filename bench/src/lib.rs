//! mcpyard's benchmark: a fast upstream MCP server (`echo-upstream`), an
//! MCP load generator, and the harness (`mcpyard-bench`) that measures the
//! upstream directly and through mcpyard in the same run.

pub mod children;
pub mod conn;
pub mod load;
pub mod procfs;
pub mod report;
pub mod sampler;
pub mod stats;
