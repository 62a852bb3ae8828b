//! Rate limits: token buckets (GCRA, the `governor` crate) over routed
//! calls, each limit keyed per identity, per tool, per source, or any mix
//! of them. A call over any of its limits is refused with
//! [`RATE_LIMITED`], naming the limit and when to retry.
//!
//! The buckets sit behind [`RateLimiter`]: [`LocalRateLimiter`] counts in
//! this process; [`SharedRateLimiter`] counts in Redis, once for every
//! replica (one round trip per limited call).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::call::Identity;
use crate::call::ItemKind;
use crate::catalog::matches as glob_matches;
use crate::governance::policy::item_kind;
use crate::router::{Layer, Next, RouteFuture, RoutedCall};
use crate::state::RedisState;
use crate::RouteError;

/// What a bucket is kept for: one per identity, per tool, per source, or
/// per combination of those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Identity,
    Tool,
    Source,
}

/// A call as the limits see it.
#[derive(Debug, Clone, Copy)]
pub struct Metered<'a> {
    pub identity: &'a Identity,
    pub source: &'a str,
    /// The tool or prompt name the client used, or the resource URI.
    pub target: &'a str,
    pub kind: ItemKind,
}

/// One configured limit: which calls it counts and how fast they may come.
#[derive(Debug, Clone)]
pub struct RateLimit {
    /// Shown to the client when the limit refuses a call.
    pub name: String,
    /// Calls per `period` in the long run.
    pub calls: NonZeroU32,
    pub period: Duration,
    /// Calls that may come at once after a quiet spell (default: `calls`).
    pub burst: Option<NonZeroU32>,
    /// One bucket per value of these; none: one bucket for all the calls.
    pub per: Vec<Dimension>,
    /// Filters (empty: any). Identity names and sources are globs.
    pub identities: Vec<String>,
    pub groups: Vec<String>,
    /// Tool names (globs); when set, only tool calls count.
    pub tools: Vec<String>,
    pub sources: Vec<String>,
}

impl RateLimit {
    fn counts(&self, call: &Metered<'_>) -> bool {
        let any =
            |patterns: &[String], value: &str| patterns.iter().any(|p| glob_matches(p, value));
        (self.identities.is_empty()
            || self
                .identities
                .iter()
                .any(|p| super::names_identity(p, call.identity)))
            && (self.groups.is_empty() || self.groups.iter().any(|g| call.identity.in_group(g)))
            && (self.sources.is_empty() || any(&self.sources, call.source))
            && (self.tools.is_empty()
                || (call.kind == ItemKind::Tool && any(&self.tools, call.target)))
    }

    fn key(&self, call: &Metered<'_>) -> String {
        // Written in place, not formatted: this runs on every call.
        let mut key = String::with_capacity(64);
        for (i, dimension) in self.per.iter().enumerate() {
            if i > 0 {
                key.push('\u{1f}');
            }
            match dimension {
                // Per kind and name: a token's subject never shares a key's
                // bucket.
                Dimension::Identity => call.identity.push_qualified_name(&mut key),
                Dimension::Tool => key.push_str(call.target),
                Dimension::Source => key.push_str(call.source),
            }
        }
        key
    }

    /// One call comes back every this long.
    fn interval(&self) -> Duration {
        (self.period / self.calls.get()).max(Duration::from_nanos(1))
    }

    fn burst(&self) -> NonZeroU32 {
        self.burst.unwrap_or(self.calls)
    }

    fn quota(&self) -> Quota {
        let quota =
            Quota::with_period(self.interval()).expect("the period is at least one nanosecond");
        quota.allow_burst(self.burst())
    }
}

/// A call over one of its limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rate limit `{limit}` reached; retry after {retry_after:?}")]
pub struct LimitReached {
    pub limit: String,
    pub retry_after: Duration,
}

impl From<LimitReached> for RouteError {
    fn from(reached: LimitReached) -> Self {
        RouteError::Limited {
            limit: reached.limit,
            retry_after: reached.retry_after,
        }
    }
}

/// Whether a call may go: decided at once, or by a store elsewhere.
pub enum Admission<'a> {
    Now(Result<(), RouteError>),
    Later(futures::future::BoxFuture<'a, Result<(), RouteError>>),
}

impl std::fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Admission::Now(decided) => f.debug_tuple("Now").field(decided).finish(),
            Admission::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// Counts calls against the configured limits.
pub trait RateLimiter: Send + Sync + std::fmt::Debug + 'static {
    /// Takes one call from each bucket the call counts against, or says
    /// which limit it is over and when a call would next be let through
    /// ([`RouteError::Limited`]).
    fn admit(&self, call: &Metered<'_>) -> Admission<'_>;
}

/// Buckets in this process's memory.
#[derive(Debug)]
pub struct LocalRateLimiter {
    limits: Vec<(RateLimit, DefaultKeyedRateLimiter<String>)>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// Buckets kept per limit before the full ones are forgotten.
const KEYS_BEFORE_SWEEP: usize = 10_000;

impl LocalRateLimiter {
    pub fn new(limits: Vec<RateLimit>) -> Self {
        let limits = limits
            .into_iter()
            .map(|limit| {
                let buckets = governor::RateLimiter::keyed(limit.quota());
                (limit, buckets)
            })
            .collect();
        Self {
            limits,
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }
}

impl RateLimiter for LocalRateLimiter {
    fn admit(&self, call: &Metered<'_>) -> Admission<'_> {
        Admission::Now(self.check(call).map_err(RouteError::from))
    }
}

impl LocalRateLimiter {
    /// Takes one call from each bucket `call` counts against.
    pub fn check(&self, call: &Metered<'_>) -> Result<(), LimitReached> {
        // A bucket back to full is the same as none: drop those now and
        // then, so keys seen once do not pile up.
        if self.checks.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
            for (_, buckets) in &self.limits {
                if buckets.len() > KEYS_BEFORE_SWEEP {
                    buckets.retain_recent();
                }
            }
        }
        for (limit, buckets) in &self.limits {
            if !limit.counts(call) {
                continue;
            }
            if let Err(not_until) = buckets.check_key(&limit.key(call)) {
                return Err(LimitReached {
                    limit: limit.name.clone(),
                    retry_after: not_until.wait_time_from(self.clock.now()),
                });
            }
        }
        Ok(())
    }
}

/// The limits on the call path.
#[derive(Debug)]
pub struct RateLimitLayer {
    limiter: Arc<dyn RateLimiter>,
}

impl RateLimitLayer {
    pub fn new(limiter: Arc<dyn RateLimiter>) -> Self {
        Self { limiter }
    }
}

impl Layer for RateLimitLayer {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let Some(kind) = item_kind(&call) else {
            return next.run(call);
        };
        let metered = Metered {
            identity: &call.request.context.identity,
            source: call.source(),
            target: &call.target,
            kind,
        };
        match self.limiter.admit(&metered) {
            Admission::Now(Ok(())) => next.run(call),
            Admission::Now(Err(refused)) => Box::pin(async move { Err(refused) }),
            Admission::Later(admitted) => Box::pin(async move {
                admitted.await?;
                next.run(call).await
            }),
        }
    }
}

/// Buckets in Redis, shared by every replica: a call is counted once
/// whichever replica serves it.
#[derive(Debug)]
pub struct SharedRateLimiter {
    limits: Vec<RateLimit>,
    state: Arc<RedisState>,
    /// When Redis cannot be asked: let the call through (true) or refuse it.
    fail_open: bool,
    /// Calls decided without Redis, by the fail mode.
    unchecked: AtomicU64,
}

impl SharedRateLimiter {
    pub fn new(limits: Vec<RateLimit>, state: Arc<RedisState>, fail_open: bool) -> Self {
        Self {
            limits,
            state,
            fail_open,
            unchecked: AtomicU64::new(0),
        }
    }

    /// Calls let through or refused without Redis since start.
    pub fn unchecked(&self) -> u64 {
        self.unchecked.load(Ordering::Relaxed)
    }
}

impl RateLimiter for SharedRateLimiter {
    fn admit(&self, call: &Metered<'_>) -> Admission<'_> {
        let buckets: Vec<(&RateLimit, String)> = self
            .limits
            .iter()
            .filter(|limit| limit.counts(call))
            .map(|limit| (limit, format!("{}\u{1f}{}", limit.name, limit.key(call))))
            .collect();
        if buckets.is_empty() {
            return Admission::Now(Ok(()));
        }
        Admission::Later(Box::pin(async move {
            for (limit, bucket) in buckets {
                let taken = self
                    .state
                    .take(&bucket, limit.interval(), limit.burst().get())
                    .await;
                match taken {
                    Ok(None) => {}
                    Ok(Some(retry_after)) => {
                        return Err(RouteError::Limited {
                            limit: limit.name.clone(),
                            retry_after,
                        })
                    }
                    Err(e) => {
                        let n = self.unchecked.fetch_add(1, Ordering::Relaxed) + 1;
                        // Logged at the first failure and then ever more rarely.
                        if n.is_power_of_two() {
                            tracing::warn!(limit = %limit.name, error = %e, fail_open = self.fail_open, unchecked = n, "a rate limit could not be checked in Redis");
                        }
                        if !self.fail_open {
                            return Err(RouteError::Internal(format!(
                                "rate limit `{}` could not be checked (the shared state does not answer); the call was not made",
                                limit.name
                            )));
                        }
                    }
                }
            }
            Ok(())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::IdentityKind;

    fn limit(calls: u32, per: Vec<Dimension>) -> RateLimit {
        RateLimit {
            name: "test".into(),
            calls: NonZeroU32::new(calls).unwrap(),
            period: Duration::from_secs(60),
            burst: None,
            per,
            identities: Vec::new(),
            groups: Vec::new(),
            tools: Vec::new(),
            sources: Vec::new(),
        }
    }

    fn call<'a>(identity: &'a Identity, target: &'a str) -> Metered<'a> {
        Metered {
            identity,
            source: "everything",
            target,
            kind: ItemKind::Tool,
        }
    }

    #[test]
    fn each_identity_has_its_own_bucket() {
        let limiter = LocalRateLimiter::new(vec![limit(2, vec![Dimension::Identity])]);
        let alice = Identity::named(IdentityKind::ApiKey, "alice", vec![]);
        let bob = Identity::named(IdentityKind::ApiKey, "bob", vec![]);
        assert!(limiter.check(&call(&alice, "a")).is_ok());
        assert!(limiter.check(&call(&alice, "b")).is_ok());
        let over = limiter.check(&call(&alice, "a")).unwrap_err();
        assert_eq!(over.limit, "test");
        // One call every 30 s comes back.
        assert!(over.retry_after > Duration::from_secs(25), "{over:?}");
        assert!(over.retry_after <= Duration::from_secs(30), "{over:?}");
        assert!(limiter.check(&call(&bob, "a")).is_ok());
    }

    #[test]
    fn per_tool_buckets_and_filters() {
        let mut per_tool = limit(1, vec![Dimension::Tool]);
        per_tool.tools = vec!["everything__get-*".into()];
        per_tool.groups = vec!["free".into()];
        let limiter = LocalRateLimiter::new(vec![per_tool]);
        let free = Identity::named(IdentityKind::ApiKey, "f", vec!["free".into()]);
        let paid = Identity::named(IdentityKind::ApiKey, "p", vec!["paid".into()]);
        assert!(limiter.check(&call(&free, "everything__get-sum")).is_ok());
        assert!(limiter.check(&call(&free, "everything__get-sum")).is_err());
        assert!(limiter.check(&call(&free, "everything__get-env")).is_ok());
        assert!(limiter.check(&call(&free, "everything__echo")).is_ok());
        assert!(limiter.check(&call(&free, "everything__echo")).is_ok());
        assert!(limiter.check(&call(&paid, "everything__get-sum")).is_ok());
        assert!(limiter.check(&call(&paid, "everything__get-sum")).is_ok());
    }

    #[test]
    fn a_bucket_is_named_by_the_qualified_identity_then_the_tool_and_source() {
        // Replicas share buckets by these names: they must not change.
        let token = Identity::named(IdentityKind::Token, "alice", vec![]);
        let every = limit(
            1,
            vec![Dimension::Identity, Dimension::Tool, Dimension::Source],
        );
        let key = every.key(&call(&token, "fs__read"));
        assert_eq!(key, "token:alice\u{1f}fs__read\u{1f}everything");
        assert_eq!(
            key,
            format!("{}\u{1f}fs__read\u{1f}everything", token.qualified_name())
        );
        let anonymous = Identity::anonymous();
        let by_identity = limit(1, vec![Dimension::Identity]);
        assert_eq!(by_identity.key(&call(&anonymous, "x")), "anonymous:");
    }

    #[test]
    fn a_shared_bucket_counts_every_call() {
        let limiter = LocalRateLimiter::new(vec![limit(1, Vec::new())]);
        let a = Identity::named(IdentityKind::ApiKey, "a", vec![]);
        let b = Identity::named(IdentityKind::ApiKey, "b", vec![]);
        assert!(limiter.check(&call(&a, "x")).is_ok());
        assert!(limiter.check(&call(&b, "y")).is_err());
    }
}
