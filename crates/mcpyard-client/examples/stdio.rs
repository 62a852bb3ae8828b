//! Starts an MCP server as a child process, lists its tools and optionally
//! calls one:
//!
//! ```text
//! cargo run -p mcpyard-client --example stdio -- [--call TOOL [JSON]] COMMAND [ARGS...]
//! cargo run -p mcpyard-client --example stdio -- --call echo '{"message":"hi"}' \
//!     npx -y @modelcontextprotocol/server-everything
//! ```

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::error::Error;

use mcpyard_client::TransportSpec;

const USAGE: &str = "usage: stdio [--call TOOL [JSON]] COMMAND [ARGS...]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let call = if args.first().map(String::as_str) == Some("--call") {
        args.remove(0);
        if args.is_empty() {
            return Err(USAGE.into());
        }
        let name = args.remove(0);
        // JSON arguments start with `{`; anything else is the command.
        let arguments = if args.first().is_some_and(|a| a.starts_with('{')) {
            Some(args.remove(0))
        } else {
            None
        };
        Some(common::ToolCall::parse(name, arguments)?)
    } else {
        None
    };
    if args.is_empty() {
        return Err(USAGE.into());
    }
    let command = args.remove(0);
    let spec = TransportSpec::Stdio {
        command,
        args,
        env: BTreeMap::new(),
        // Only MINIMAL_ENV: the server gets none of this shell's secrets.
        inherit_env: vec![],
        cwd: None,
    };
    common::run(spec, call).await
}
