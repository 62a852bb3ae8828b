//! Connects to a Streamable HTTP endpoint, lists its tools and
//! optionally calls one:
//!
//! ```text
//! cargo run -p mcpyard-client --example streamable_http -- URL [TOOL [JSON]]
//! cargo run -p mcpyard-client --example streamable_http -- http://127.0.0.1:3001/mcp echo '{"message":"hi"}'
//! ```

#[path = "common/mod.rs"]
mod common;

use std::error::Error;

use mcpyard_client::TransportSpec;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: streamable_http URL [TOOL [JSON]]")?;
    let call = match args.next() {
        Some(name) => Some(common::ToolCall::parse(name, args.next())?),
        None => None,
    };
    let spec = TransportSpec::StreamableHttp {
        url,
        headers: vec![],
    };
    common::run(spec, call).await
}
