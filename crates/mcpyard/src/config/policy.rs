//! `[policy]`, `[[limits.rate]]` and the HTTP flood limit of `[limits]`:
//! who may use what, and how often. Rules are compiled here, so `check`
//! and `serve` report a bad `when` with the rule's index before anything
//! starts.
//!
//! ```toml
//! [policy]
//! default = "deny"
//! [[policy.rules]]
//! action = "allow"
//! groups = ["ops"]
//! tools = ["everything__*"]
//! when = "arguments.a < 100"
//!
//! [[limits.rate]]
//! rate = "60/min"
//! per = ["identity", "tool"]
//! ```

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use mcpyard_gateway::governance::{
    Condition, Dimension, Effect, LocalRateLimiter, Policy, RateLimit, RateLimiter, Rule,
    SharedRateLimiter,
};
use mcpyard_server::AddressRate;
use serde::Deserialize;

use super::context::Context;
use super::ConfigError;

/// `[policy]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    default: Option<String>,
    rules: Option<Vec<RawRule>>,
}

/// `[[policy.rules]]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    action: String,
    identities: Option<Vec<String>>,
    groups: Option<Vec<String>>,
    scopes: Option<Vec<String>>,
    sources: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    when: Option<String>,
}

/// `[[limits.rate]]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRateLimit {
    name: Option<String>,
    rate: String,
    burst: Option<u64>,
    per: Option<Vec<String>>,
    identities: Option<Vec<String>>,
    groups: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    sources: Option<Vec<String>>,
}

/// The compiled policy; `None` when the file has no `[policy]`.
pub(crate) fn build_policy(
    ctx: &Context<'_>,
    raw: Option<&RawPolicy>,
) -> Result<Option<Arc<Policy>>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let default = match &raw.default {
        None => Effect::Allow,
        Some(d) => effect(ctx, "policy.default", d)?,
    };
    let mut rules = Vec::new();
    for (index, rule) in raw.rules.iter().flatten().enumerate() {
        let key = format!("policy.rules[{index}]");
        let list = |name: &str, values: &Option<Vec<String>>| -> Result<Vec<String>, ConfigError> {
            values
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, v)| ctx.expand(&format!("{key}.{name}[{i}]"), v))
                .collect()
        };
        let when = match &rule.when {
            None => None,
            Some(text) => Some(
                Condition::compile(text)
                    .map_err(|e| ctx.error(&format!("{key}.when"), e.to_string()))?,
            ),
        };
        rules.push(Rule {
            effect: effect(ctx, &format!("{key}.action"), &rule.action)?,
            identities: list("identities", &rule.identities)?,
            groups: list("groups", &rule.groups)?,
            scopes: list("scopes", &rule.scopes)?,
            sources: list("sources", &rule.sources)?,
            tools: list("tools", &rule.tools)?,
            prompts: list("prompts", &rule.prompts)?,
            resources: list("resources", &rule.resources)?,
            when,
        });
    }
    Ok(Some(Arc::new(Policy { default, rules })))
}

fn effect(ctx: &Context<'_>, key: &str, text: &str) -> Result<Effect, ConfigError> {
    match text {
        "allow" => Ok(Effect::Allow),
        "deny" => Ok(Effect::Deny),
        _ => Err(ctx.error(key, r#"expected "allow" or "deny""#)),
    }
}

/// The rate limits of `[[limits.rate]]`, counted in this process, or in
/// Redis when `[state]` shares state between replicas; `None` when there
/// are none.
pub(crate) fn build_rate_limits(
    ctx: &Context<'_>,
    raw: &[RawRateLimit],
    state: &super::state::StateSettings,
) -> Result<Option<Arc<dyn RateLimiter>>, ConfigError> {
    if raw.is_empty() {
        return Ok(None);
    }
    let mut limits = Vec::new();
    for (index, limit) in raw.iter().enumerate() {
        let key = format!("limits.rate[{index}]");
        let (calls, period) = rate(ctx, &format!("{key}.rate"), &limit.rate)?;
        let burst =
            match limit.burst {
                None => None,
                Some(b) => Some(u32::try_from(b).ok().and_then(NonZeroU32::new).ok_or_else(
                    || ctx.error(&format!("{key}.burst"), "must be from 1 to 4294967295"),
                )?),
            };
        let per = match &limit.per {
            None => vec![Dimension::Identity],
            Some(words) => words
                .iter()
                .enumerate()
                .map(|(i, w)| match w.as_str() {
                    "identity" => Ok(Dimension::Identity),
                    "tool" => Ok(Dimension::Tool),
                    "source" => Ok(Dimension::Source),
                    _ => Err(ctx.error(
                        &format!("{key}.per[{i}]"),
                        r#"expected "identity", "tool" or "source""#,
                    )),
                })
                .collect::<Result<_, _>>()?,
        };
        let list = |name: &str, values: &Option<Vec<String>>| -> Result<Vec<String>, ConfigError> {
            values
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, v)| ctx.expand(&format!("{key}.{name}[{i}]"), v))
                .collect()
        };
        limits.push(RateLimit {
            name: limit.name.clone().unwrap_or_else(|| key.clone()),
            calls,
            period,
            burst,
            per,
            identities: list("identities", &limit.identities)?,
            groups: list("groups", &limit.groups)?,
            tools: list("tools", &limit.tools)?,
            sources: list("sources", &limit.sources)?,
        });
    }
    Ok(Some(match &state.redis {
        Some(redis) => Arc::new(SharedRateLimiter::new(
            limits,
            redis.clone(),
            state.fail_open,
        )),
        None => Arc::new(LocalRateLimiter::new(limits)),
    }))
}

/// An HTTP flood limit: `rate_key` (a rate in requests per second, such as
/// "50/s") and `burst_key` (default: the rate), e.g.
/// `limits.http_requests_per_address` and `limits.http_burst_per_address`.
pub(crate) fn build_flood(
    ctx: &Context<'_>,
    (rate_key, rate_text): (&str, Option<&str>),
    (burst_key, burst): (&str, Option<u64>),
) -> Result<Option<AddressRate>, ConfigError> {
    let Some(text) = rate_text else {
        if burst.is_some() {
            return Err(ctx.error(burst_key, format!("needs {rate_key}")));
        }
        return Ok(None);
    };
    let (calls, period) = rate(ctx, rate_key, text)?;
    if period != Duration::from_secs(1) {
        return Err(ctx.error(rate_key, r#"expected requests per second, such as "50/s""#));
    }
    let burst = match burst {
        None => calls,
        Some(b) => u32::try_from(b)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| ctx.error(burst_key, "must be from 1 to 4294967295"))?,
    };
    Ok(Some(AddressRate {
        per_second: calls,
        burst,
    }))
}

/// `N/unit`: N calls per second (`s`), minute (`min`), hour (`h`) or day
/// (`d`).
fn rate(ctx: &Context<'_>, key: &str, text: &str) -> Result<(NonZeroU32, Duration), ConfigError> {
    let bad = || {
        ctx.error(
            key,
            r#"expected a rate such as "10/s", "60/min", "1000/h" or "5000/d""#,
        )
    };
    let (count, unit) = text.split_once('/').ok_or_else(bad)?;
    let count = count
        .trim()
        .parse::<u32>()
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(bad)?;
    let period = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        "d" | "day" => Duration::from_secs(86_400),
        _ => return Err(bad()),
    };
    Ok((count, period))
}

/// One line for `check`: the policy and the limits, without their values.
pub(crate) fn summary(
    policy: Option<&Policy>,
    rate_limits: usize,
    flood: Option<AddressRate>,
) -> String {
    let policy = match policy {
        None => "none (every identity may use everything)".to_owned(),
        Some(p) => format!(
            "default {}, {} rule(s)",
            match p.default {
                Effect::Allow => "allow",
                Effect::Deny => "deny",
            },
            p.rules.len()
        ),
    };
    let flood = match flood {
        None => "no per-address limit".to_owned(),
        Some(r) => format!("{}/s per address (burst {})", r.per_second, r.burst),
    };
    format!("policy {policy}; {rate_limits} rate limit(s); HTTP {flood}")
}

#[cfg(test)]
mod tests {
    use super::super::tests::toml;

    #[test]
    fn rules_compile_and_a_bad_one_is_named_by_its_index() {
        let s = toml(
            r#"
[policy]
default = "deny"
[[policy.rules]]
action = "allow"
groups = ["ops"]
tools = ["everything__*"]
[[policy.rules]]
action = "deny"
when = "arguments.a > 100"
"#,
        )
        .expect("valid");
        let policy = s.gateway.policy.expect("a policy");
        assert_eq!(policy.rules.len(), 2);
        assert_eq!(
            policy.rules[1].when.as_ref().map(|c| c.text()),
            Some("arguments.a > 100")
        );

        let e = toml("[policy]\n[[policy.rules]]\naction = \"allow\"\n[[policy.rules]]\naction = \"deny\"\nwhen = \"name ==\"\n")
            .expect_err("bad CEL")
            .to_string();
        assert!(e.contains("policy.rules[1].when"), "{e}");
        assert!(e.contains("CEL"), "{e}");
        let e = toml("[policy]\ndefault = \"maybe\"\n")
            .expect_err("bad")
            .to_string();
        assert!(e.contains("policy.default"), "{e}");
        let e = toml("[[policy.rules]]\naction = \"allow\"\ntool = [\"x\"]\n")
            .expect_err("typo")
            .to_string();
        assert!(e.contains("tool"), "{e}");
    }

    #[test]
    fn rate_limits_and_the_flood_limit_are_read_and_checked() {
        let s = toml(
            r#"
[limits]
http_requests_per_address = "50/s"
http_burst_per_address = 100
[[limits.rate]]
rate = "60/min"
per = ["identity", "tool"]
[[limits.rate]]
name = "llm"
rate = "1000/d"
sources = ["llm"]
"#,
        )
        .expect("valid");
        assert!(s.gateway.rate_limiter.is_some());
        let flood = s.http.per_address.expect("a flood limit");
        assert_eq!((flood.per_second.get(), flood.burst.get()), (50, 100));
        assert!(s.governance.contains("2 rate limit(s)"), "{}", s.governance);

        for (bad, key) in [
            ("[[limits.rate]]\nrate = \"ten/s\"\n", "limits.rate[0].rate"),
            ("[[limits.rate]]\nrate = \"0/s\"\n", "limits.rate[0].rate"),
            (
                "[[limits.rate]]\nrate = \"1/s\"\nper = [\"ip\"]\n",
                "limits.rate[0].per[0]",
            ),
            (
                "[limits]\nhttp_requests_per_address = \"50/min\"\n",
                "limits.http_requests_per_address",
            ),
            (
                "[limits]\nhttp_burst_per_address = 5\n",
                "limits.http_burst_per_address",
            ),
        ] {
            let e = toml(bad).expect_err(bad).to_string();
            assert!(e.contains(key), "{bad}: {e}");
        }
    }
}
