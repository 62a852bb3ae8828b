//! The one stack of layers every routed call passes, built in one place in
//! one order. The README's Architecture section lists the same order
//! (checked by a test below).

use std::sync::Arc;

use super::layers::{InFlightCap, Timeout, Trace};
use super::Layer;
use crate::governance::audit::AuditLayer;
use crate::governance::size::SizeLayer;
use crate::governance::stats::CallStats;
use crate::governance::trace::CallSpans;
use crate::governance::{Policy, PolicyLayer, RateLimitLayer, RateLimiter};
use crate::{AuditTrail, Guard, Metrics};

/// The layers, outermost first, by the names the README uses. Why this
/// order: the debug span wraps everything; the audit records every refusal
/// of the layers inside it; sizes refuse oversize arguments before anything
/// runs and cut the result last, after the guardrails redacted it whole;
/// metrics count what the policy and the limits refuse; the trace span's
/// context is what the source gets; the cap and the deadline are nearest the
/// source, so that a call waiting for a place is not yet running.
pub(crate) const ORDER: [&str; 12] = [
    "debug span",
    "audit",
    "size limits",
    "metrics",
    "trace span",
    "outer layers",
    "policy",
    "rate limits",
    "inner layers",
    "guardrails",
    "in-flight cap",
    "timeout",
];

/// What the configuration gives the stack; the built-in layers are always
/// there.
#[derive(Default, Clone, Debug)]
pub(crate) struct StackParts {
    pub(crate) audit: Option<AuditTrail>,
    pub(crate) metrics: Option<Arc<Metrics>>,
    pub(crate) outer: Vec<Arc<dyn Layer>>,
    pub(crate) policy: Option<Arc<Policy>>,
    pub(crate) rate_limiter: Option<Arc<dyn RateLimiter>>,
    pub(crate) inner: Vec<Arc<dyn Layer>>,
    pub(crate) guard: Option<Arc<Guard>>,
    /// The gateway's call statistics, which the status tool reads.
    pub(crate) stats: Arc<CallStats>,
}

/// The stack, outermost first, in [`ORDER`]; a part that is not configured
/// (no audit trail, a policy that allows everything) is left out. The call
/// statistics (`parts.stats`) are always fed, in the metrics' place:
/// by the metrics layer when there is one, else by a layer of their own.
pub(crate) fn build(parts: StackParts) -> Vec<Arc<dyn Layer>> {
    let StackParts {
        audit,
        metrics,
        outer,
        policy,
        rate_limiter,
        inner,
        guard,
        stats,
    } = parts;
    let one = |layer: Option<Arc<dyn Layer>>| layer.into_iter().collect::<Vec<_>>();
    if audit.is_some() {
        stats.audit_is_on();
    }
    let stack: [(&str, Vec<Arc<dyn Layer>>); 12] = [
        ("debug span", vec![Arc::new(Trace)]),
        (
            "audit",
            one(audit.map(|trail| {
                let stats = stats.clone();
                Arc::new(AuditLayer { trail, stats }) as Arc<dyn Layer>
            })),
        ),
        ("size limits", vec![Arc::new(SizeLayer)]),
        (
            "metrics",
            vec![match &metrics {
                Some(m) => m.layer(stats.clone()),
                None => stats.layer(),
            }],
        ),
        ("trace span", vec![CallSpans::layer()]),
        ("outer layers", outer),
        (
            "policy",
            one(policy
                .filter(|p| !p.allows_all())
                .map(|p| Arc::new(PolicyLayer::new(p)) as Arc<dyn Layer>)),
        ),
        (
            "rate limits",
            one(rate_limiter.map(|l| Arc::new(RateLimitLayer::new(l)) as Arc<dyn Layer>)),
        ),
        ("inner layers", inner),
        ("guardrails", one(guard.map(|g| g as Arc<dyn Layer>))),
        ("in-flight cap", vec![Arc::new(InFlightCap)]),
        ("timeout", vec![Arc::new(Timeout)]),
    ];
    debug_assert!(stack.iter().map(|(name, _)| *name).eq(ORDER));
    stack.into_iter().flat_map(|(_, layers)| layers).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's numbered list of layers, in its Architecture section.
    fn readme_order() -> Vec<String> {
        let readme = include_str!("../../../../docs/development.md");
        let start = readme
            .find("The layers of every routed call, outermost first:")
            .expect("the README lists the layers");
        readme[start..]
            .lines()
            .skip(1)
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .map(|l| {
                let name = l.split('`').nth(1).expect("each layer named in backticks");
                name.to_owned()
            })
            .collect()
    }

    #[test]
    fn the_readme_lists_the_layers_in_the_order_the_code_builds_them() {
        assert_eq!(readme_order(), ORDER);
    }

    #[test]
    fn the_built_in_layers_are_always_there_and_unconfigured_ones_are_not() {
        // The call statistics' layer in the metrics' place included.
        assert_eq!(build(StackParts::default()).len(), 6);
    }
}
