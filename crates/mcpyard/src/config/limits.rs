//! `[limits]`: how much one client may make the gateway hold or do at once.
//! Each key has a safe default; the table is optional.

use std::time::Duration;

use mcpyard_server::{AddressPrefix, BatchLimits, HttpOptions};
use serde::Deserialize;

use super::server;

use super::context::Context;
use super::values::RawDuration;
use super::ConfigError;

/// `[limits]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    max_batch_size: Option<u64>,
    max_batch_in_flight: Option<u64>,
    max_connections: Option<u64>,
    header_read_timeout: Option<RawDuration>,
    body_read_timeout: Option<RawDuration>,
    keep_alive_timeout: Option<RawDuration>,
    /// `[[limits.rate]]`: token buckets over calls (see `policy.rs`).
    #[serde(default)]
    pub(crate) rate: Vec<super::policy::RawRateLimit>,
    /// Requests per second one client address may send over HTTP.
    http_requests_per_address: Option<String>,
    http_burst_per_address: Option<u64>,
    /// Which addresses are one client for the limit above.
    http_address_prefix_v4: Option<u64>,
    http_address_prefix_v6: Option<u64>,
    /// Requests per second all clients together may send over HTTP.
    http_requests_total: Option<String>,
    http_burst_total: Option<u64>,
}

/// Writes `[limits]` into the HTTP door's options (the batch limits are
/// the stdio door's too); a key left out keeps the server crate's default.
pub(crate) fn apply(
    ctx: &Context<'_>,
    raw: Option<&RawLimits>,
    http: &mut HttpOptions,
) -> Result<(), ConfigError> {
    let Some(raw) = raw else {
        return Ok(());
    };
    let time = |key: &str, raw: &Option<RawDuration>, default: Duration| match raw {
        None => Ok(default),
        Some(t) => server::duration(ctx, &format!("limits.{key}"), t),
    };
    http.batch = BatchLimits {
        max_entries: count(ctx, "max_batch_size", raw.max_batch_size)?
            .unwrap_or(http.batch.max_entries),
        max_in_flight: count(ctx, "max_batch_in_flight", raw.max_batch_in_flight)?
            .unwrap_or(http.batch.max_in_flight),
    };
    http.max_connections =
        count(ctx, "max_connections", raw.max_connections)?.unwrap_or(http.max_connections);
    http.header_read_timeout = time(
        "header_read_timeout",
        &raw.header_read_timeout,
        http.header_read_timeout,
    )?;
    http.body_read_timeout = time(
        "body_read_timeout",
        &raw.body_read_timeout,
        http.body_read_timeout,
    )?;
    http.keep_alive_timeout = time(
        "keep_alive_timeout",
        &raw.keep_alive_timeout,
        http.keep_alive_timeout,
    )?;
    http.per_address = super::policy::build_flood(
        ctx,
        (
            "limits.http_requests_per_address",
            raw.http_requests_per_address.as_deref(),
        ),
        ("limits.http_burst_per_address", raw.http_burst_per_address),
    )?;
    http.address_prefix = AddressPrefix {
        v4: prefix(
            ctx,
            "http_address_prefix_v4",
            raw.http_address_prefix_v4,
            32,
        )?
        .unwrap_or(http.address_prefix.v4),
        v6: prefix(
            ctx,
            "http_address_prefix_v6",
            raw.http_address_prefix_v6,
            128,
        )?
        .unwrap_or(http.address_prefix.v6),
    };
    http.total_rate = super::policy::build_flood(
        ctx,
        (
            "limits.http_requests_total",
            raw.http_requests_total.as_deref(),
        ),
        ("limits.http_burst_total", raw.http_burst_total),
    )?;
    Ok(())
}

/// A prefix length from 1 to `bits`, at `limits.<key>`.
fn prefix(
    ctx: &Context<'_>,
    key: &str,
    raw: Option<u64>,
    bits: u8,
) -> Result<Option<u8>, ConfigError> {
    match raw {
        None => Ok(None),
        Some(n) if (1..=u64::from(bits)).contains(&n) => Ok(u8::try_from(n).ok()),
        Some(_) => Err(ctx.error(
            &format!("limits.{key}"),
            format!("expected a prefix length from 1 to {bits}"),
        )),
    }
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
    use super::super::tests::toml;
    use super::*;

    #[test]
    fn without_the_table_every_limit_has_its_default() {
        let s = toml("").expect("valid");
        assert_eq!(s.http.batch, BatchLimits::default());
        assert_eq!(s.http.batch.max_entries, 100);
    }

    #[test]
    fn batch_limits_are_read_and_checked() {
        let s = toml("[limits]\nmax_batch_size = 20\nmax_batch_in_flight = 4\n").expect("valid");
        assert_eq!(
            s.http.batch,
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

    #[test]
    fn connection_limits_have_safe_defaults_and_are_read_and_checked() {
        let d = toml("").expect("valid").http;
        assert_eq!(d.max_connections, 1024);
        assert_eq!(d.header_read_timeout, Duration::from_secs(10));
        assert_eq!(d.body_read_timeout, Duration::from_secs(30));
        assert_eq!(d.keep_alive_timeout, Duration::from_secs(60));

        let s = toml(
            "[limits]\nmax_connections = 64\nheader_read_timeout = \"5s\"\nbody_read_timeout = 20\nkeep_alive_timeout = \"2m\"\n",
        )
        .expect("valid")
        .http;
        assert_eq!(s.max_connections, 64);
        assert_eq!(s.header_read_timeout, Duration::from_secs(5));
        assert_eq!(s.body_read_timeout, Duration::from_secs(20));
        assert_eq!(s.keep_alive_timeout, Duration::from_secs(120));

        let e = toml("[limits]\nheader_read_timeout = \"soon\"\n")
            .expect_err("bad")
            .to_string();
        assert!(e.contains("limits.header_read_timeout"), "{e}");
        let e = toml("[limits]\nmax_connections = 0\n")
            .expect_err("zero")
            .to_string();
        assert!(e.contains("limits.max_connections"), "{e}");
    }

    #[test]
    fn the_flood_limit_groups_by_prefix_and_has_a_total() {
        let d = toml("").expect("valid").http;
        assert_eq!(d.address_prefix, AddressPrefix { v4: 32, v6: 64 });
        assert_eq!(d.total_rate, None);
        let s = toml(
            "[limits]\nhttp_requests_per_address = \"5/s\"\nhttp_address_prefix_v4 = 24\nhttp_address_prefix_v6 = 48\nhttp_requests_total = \"100/s\"\nhttp_burst_total = 300\n",
        )
        .expect("valid")
        .http;
        assert_eq!(s.address_prefix, AddressPrefix { v4: 24, v6: 48 });
        let total = s.total_rate.expect("a total");
        assert_eq!((total.per_second.get(), total.burst.get()), (100, 300));
        for (text, key) in [
            (
                "http_address_prefix_v4 = 33",
                "limits.http_address_prefix_v4",
            ),
            (
                "http_address_prefix_v4 = 0",
                "limits.http_address_prefix_v4",
            ),
            (
                "http_address_prefix_v6 = 129",
                "limits.http_address_prefix_v6",
            ),
            (
                "http_requests_total = \"5/min\"",
                "limits.http_requests_total",
            ),
            ("http_burst_total = 5", "limits.http_burst_total"),
        ] {
            let e = toml(&format!("[limits]\n{text}\n"))
                .expect_err(text)
                .to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
