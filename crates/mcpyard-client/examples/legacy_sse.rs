//! Connects to a legacy HTTP+SSE server (its SSE stream's URL), lists its tools and
//! optionally calls one:
//!
//! ```text
//! cargo run -p mcpyard-client --example legacy_sse -- URL [TOOL [JSON]]
//! cargo run -p mcpyard-client --example legacy_sse -- http://127.0.0.1:3001/sse echo '{"message":"hi"}'
//! ```

#[path = "common/mod.rs"]
mod common;

use std::error::Error;

use mcpyard_client::TransportSpec;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: legacy_sse URL [TOOL [JSON]]")?;
    let call = match args.next() {
        Some(name) => Some(common::ToolCall::parse(name, args.next())?),
        None => None,
    };
    let spec = TransportSpec::Sse {
        url,
        headers: vec![],
    };
    common::run(spec, call).await
}
