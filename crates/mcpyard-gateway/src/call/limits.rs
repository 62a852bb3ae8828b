//! What the router allows one source's calls: time, places, sizes.

use std::collections::BTreeMap;
use std::time::Duration;

use mcpyard_proto::Payload;
use serde_json::Value;

/// What the router allows one source's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallLimits {
    /// A call that runs longer is cancelled (`None`: no limit; the client
    /// can still cancel).
    pub timeout: Option<Duration>,
    /// Calls running at once at most; the next waits for one to end.
    pub max_in_flight: usize,
    /// How long a call over `max_in_flight` waits before it fails.
    pub queue_timeout: Duration,
    /// How large its arguments and results may be.
    pub sizes: SizeLimits,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            timeout: None,
            max_in_flight: 64,
            queue_timeout: Duration::from_secs(30),
            sizes: SizeLimits::default(),
        }
    }
}

/// The size limits of one source's calls, in bytes of JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SizeLimits {
    /// The largest `arguments` object a call may send (`None`: no limit).
    pub max_arguments: Option<u64>,
    /// A larger result is cut to this size (`None`: no limit).
    pub max_result: Option<u64>,
    /// By the source's own tool name: limits that replace the source's.
    pub tools: BTreeMap<String, ToolSizes>,
}

/// One tool's own limits; an unset one falls back to its source's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSizes {
    pub max_arguments: Option<u64>,
    pub max_result: Option<u64>,
}

impl SizeLimits {
    /// The limits of the source's tool `name` (its own, unprefixed name).
    pub fn for_tool(&self, name: Option<&str>) -> ToolSizes {
        let own = name.and_then(|n| self.tools.get(n));
        ToolSizes {
            max_arguments: own.and_then(|t| t.max_arguments).or(self.max_arguments),
            max_result: own.and_then(|t| t.max_result).or(self.max_result),
        }
    }

    pub(crate) fn is_unlimited(&self) -> bool {
        self.max_arguments.is_none() && self.max_result.is_none() && self.tools.is_empty()
    }
}

/// The size of a result as it is written: its text as it came, or its
/// value as compact JSON.
pub(crate) fn result_len(result: &Payload) -> u64 {
    match result.text() {
        Some(text) => text.len() as u64,
        None => json_len(&result.to_value()),
    }
}

/// The size of a value as compact JSON.
pub(crate) fn json_len(value: &Value) -> u64 {
    let mut counter = ByteCounter(0);
    // Writing into a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
