//! Governance: the router layers that decide who may call what and how
//! often (policy, rate limits), guard what goes in and out (guardrails,
//! size limits), and record it (audit, metrics, traces).

pub(crate) mod audit;
pub(crate) mod guard;
mod limits;
pub(crate) mod metrics;
mod policy;
pub(crate) mod size;
pub(crate) mod stats;
pub(crate) mod trace;

pub use crate::call::{ItemKind, RATE_LIMITED};
pub use limits::{
    Admission, Dimension, LimitReached, LocalRateLimiter, Metered, RateLimit, RateLimitLayer,
    RateLimiter, SharedRateLimiter,
};
pub use policy::{Condition, ConditionError, Effect, Item, Policy, PolicyLayer, Rule, Verdict};

use crate::call::{Identity, IdentityKind};
use crate::catalog::matches as glob_matches;

/// Whether `pattern`, from a rule's or a limit's `identities`, names
/// `identity`. `key:NAME`, `token:NAME` and `local:NAME` name one kind of
/// credential, `*:NAME` any; a plain `NAME` names a configured API key or
/// the local user, never the subject of a token (an issuer writes that,
/// so it must not borrow a key's grants). `NAME` is a glob.
pub(crate) fn names_identity(pattern: &str, identity: &Identity) -> bool {
    let (kinds, name): (&[IdentityKind], &str) = match pattern.split_once(':') {
        Some(("key", name)) => (&[IdentityKind::ApiKey], name),
        Some(("token", name)) => (&[IdentityKind::Token], name),
        Some(("local", name)) => (&[IdentityKind::Local], name),
        Some(("*", name)) => (
            &[
                IdentityKind::ApiKey,
                IdentityKind::Token,
                IdentityKind::Local,
            ],
            name,
        ),
        _ => (&[IdentityKind::ApiKey, IdentityKind::Local], pattern),
    };
    kinds.contains(&identity.kind) && glob_matches(name, &identity.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_name_is_a_key_or_the_local_user_and_a_prefix_names_one_kind() {
        let key = Identity::named(IdentityKind::ApiKey, "bob", vec![]);
        let token = Identity::named(IdentityKind::Token, "bob", vec![]);
        let local = Identity::named(IdentityKind::Local, "bob", vec![]);
        let names = |p: &str| {
            [&key, &token, &local]
                .iter()
                .map(|i| names_identity(p, i))
                .collect::<Vec<_>>()
        };
        assert_eq!(names("bob"), [true, false, true]);
        assert_eq!(names("b*"), [true, false, true]);
        assert_eq!(names("key:bob"), [true, false, false]);
        assert_eq!(names("token:bob"), [false, true, false]);
        assert_eq!(names("local:bob"), [false, false, true]);
        assert_eq!(names("*:bob"), [true, true, true]);
        assert_eq!(names("token:alice"), [false, false, false]);
        assert!(!names_identity("bob", &Identity::anonymous()));
    }

    #[test]
    fn only_a_configured_identity_is_in_every_group() {
        let every = vec![crate::call::EVERY_GROUP.to_owned()];
        let key = Identity::named(IdentityKind::ApiKey, "k", every.clone());
        let token = Identity::named(IdentityKind::Token, "t", every);
        assert!(key.in_group("ops"));
        assert!(!token.in_group("ops"));
        assert!(token.in_group("*"), "a group named `*` is still its own");
    }
}
