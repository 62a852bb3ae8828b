//! mcpyard's benchmark: a fast upstream MCP server (`echo-upstream`), an
//! MCP load generator, and the harness (`mcpyard-bench`) that measures the
//! upstream directly and through mcpyard in the same run; and for the
//! inference tools (`mcpyard-bench-inference`), a real inference server's
//! launcher, a vision stand-in (`vision-standin`) and a fine memory trace.

pub mod children;
pub mod conn;
pub mod inference_report;
pub mod llama;
pub mod load;
pub mod memtrace;
pub mod openai;
pub mod procfs;
pub mod relevance;
pub mod report;
pub mod sampler;
pub mod stats;
pub mod testimage;
