//! What the tests of every mcpyard crate need, in one place: a free
//! loopback port, the text of a tool result, the workspace's root, and
//! (feature `gateway`) an in-process client of a gateway, driven as a front
//! door drives it.

#[cfg(feature = "gateway")]
mod gateway;

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::Value;

#[cfg(feature = "gateway")]
pub use gateway::InProcessClient;

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral loopback port")
        .port()
}

/// The text of all text blocks of a `CallToolResult`, one per line.
pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the first content block of a `CallToolResult`.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The workspace's root (where `.tools/` and `scripts/` are).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
