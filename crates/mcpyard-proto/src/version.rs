//! MCP protocol versions ("eras") and per-client negotiation.

/// A protocol version string as it appears on the wire, e.g. `2025-06-18`.
pub type ProtocolVersion = &'static str;

/// Every era mcpyard speaks, oldest first.
pub const SUPPORTED: &[ProtocolVersion] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The newest era mcpyard speaks.
pub const LATEST: ProtocolVersion = "2026-07-28";

/// The newest era that still uses `initialize` and sessions.
pub const LATEST_STATEFUL: ProtocolVersion = "2025-11-25";

/// Picks the version to answer an `initialize` with: the client's own when
/// mcpyard supports it, else the newest stateful era (the client then decides
/// whether it can go on, as the lifecycle section of the spec says).
pub fn negotiate(requested: &str) -> ProtocolVersion {
    SUPPORTED
        .iter()
        .copied()
        .find(|v| *v == requested && *v != LATEST)
        .unwrap_or(LATEST_STATEFUL)
}

/// Whether `version` is one mcpyard accepts in an `MCP-Protocol-Version`
/// header or a per-request `_meta` version.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED.contains(&version)
}

/// Eras before 2025-06-18 accept JSON-RPC batches.
pub fn allows_batches(version: &str) -> bool {
    version <= "2025-03-26"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_known_versions_to_themselves() {
        for v in &SUPPORTED[..4] {
            assert_eq!(negotiate(v), *v);
        }
    }

    #[test]
    fn unknown_or_stateless_versions_fall_back_to_latest_stateful() {
        assert_eq!(negotiate("1999-01-01"), LATEST_STATEFUL);
        assert_eq!(negotiate("2026-07-28"), LATEST_STATEFUL);
    }

    #[test]
    fn batches_only_in_old_eras() {
        assert!(allows_batches("2024-11-05"));
        assert!(allows_batches("2025-03-26"));
        assert!(!allows_batches("2025-06-18"));
        assert!(!allows_batches("2025-11-25"));
    }
}
