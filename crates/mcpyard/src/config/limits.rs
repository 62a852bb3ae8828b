//! `[limits]`: how much one client may make the gateway hold or do at once.
//! Each key has a safe default; the table is optional.

use mcpyard_server::BatchLimits;
use serde::Deserialize;

use super::server::Context;
use super::ConfigError;

/// `[limits]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    max_batch_size: Option<u64>,
    max_batch_in_flight: Option<u64>,
}

/// The validated limits, for the front doors.
#[derive(Debug, Clone, Default)]
pub(crate) struct Limits {
    /// The same on the HTTP and the stdio door.
    pub(crate) batch: BatchLimits,
}

pub(crate) fn build(ctx: &Context<'_>, raw: Option<&RawLimits>) -> Result<Limits, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Limits::default());
    };
    let defaults = BatchLimits::default();
    Ok(Limits {
        batch: BatchLimits {
            max_entries: count(ctx, "max_batch_size", raw.max_batch_size)?
                .unwrap_or(defaults.max_entries),
            max_in_flight: count(ctx, "max_batch_in_flight", raw.max_batch_in_flight)?
                .unwrap_or(defaults.max_in_flight),
        },
    })
}

/// A count of at least one, at `limits.<key>`.
fn count(ctx: &Context<'_>, key: &str, raw: Option<u64>) -> Result<Option<usize>, ConfigError> {
    let key = format!("limits.{key}");
    match raw {
        None => Ok(None),
        Some(0) => Err(ctx.error(&key, "must be at least 1")),
        Some(n) => usize::try_from(n)
            .map(Some)
            .map_err(|_| ctx.error(&key, "too large")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{from_text, Format, Settings};
    use super::*;

    fn toml(text: &str) -> Result<Settings, ConfigError> {
        from_text(
            "mcpyard.toml",
            Some(Path::new("/cfg")),
            text,
            Format::Toml,
            &|_| None,
        )
    }

    #[test]
    fn without_the_table_every_limit_has_its_default() {
        let s = toml("").expect("valid");
        assert_eq!(s.limits.batch, BatchLimits::default());
        assert_eq!(s.limits.batch.max_entries, 100);
    }

    #[test]
    fn batch_limits_are_read_and_checked() {
        let s = toml("[limits]\nmax_batch_size = 20\nmax_batch_in_flight = 4\n").expect("valid");
        assert_eq!(
            s.limits.batch,
            BatchLimits {
                max_entries: 20,
                max_in_flight: 4
            }
        );
        let e = toml("[limits]\nmax_batch_size = 0\n")
            .expect_err("zero")
            .to_string();
        assert!(
            e.contains("limits.max_batch_size") && e.contains("at least 1"),
            "{e}"
        );
        let e = toml("[limits]\nmax_batch = 5\n")
            .expect_err("a typo")
            .to_string();
        assert!(e.contains("max_batch"), "{e}");
    }
}
