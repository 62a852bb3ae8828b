//! A reload: the running gateway is given another configuration's sources
//! and governance. A source whose configuration did not change keeps
//! running (with the new exposure, if that changed); one that changed is
//! stopped and started again from its new spec; one that is gone is
//! stopped and leaves the lists; a new one is started. Sessions stay:
//! their clients are told which lists changed.

use std::sync::Arc;

use mcpyard_proto::Message;
use tokio_util::sync::CancellationToken;

use super::{Gateway, STARTUP_GRACE};
use crate::call::ListKind;
use crate::config::ConfigError;
use crate::governance::{Policy, RateLimiter};
use crate::router::{stack, Slot};
use crate::source::{Removed, SourceEvents, SourceSpec};
use crate::{GatewayConfig, Guard};

/// What a reload of the configuration gives the running gateway.
#[derive(Debug, Default)]
pub struct Reconfiguration {
    /// Every source of the new configuration, in its order.
    pub sources: Vec<SourceSpec>,
    /// The policy, the rate limits and the guardrails, when any of them
    /// changed: every call from then on passes a stack built with these.
    /// `None`: the running ones stay (a rate limit's counts with them).
    pub governance: Option<Governance>,
    /// The local models that answer upstreams' sampling requests, when
    /// their settings changed: they take the place of the running ones.
    /// `None`: the running ones stay.
    pub sampler: Option<Arc<dyn crate::Sampler>>,
}

/// The parts of the stack a reload may replace.
#[derive(Debug, Default)]
pub struct Governance {
    pub policy: Option<Arc<Policy>>,
    pub rate_limiter: Option<Arc<dyn RateLimiter>>,
    pub guard: Option<Arc<Guard>>,
}

/// What a reload did, by source name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reloaded {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Changed, so stopped and started again.
    pub restarted: Vec<String>,
    /// Kept running, with another exposure.
    pub exposed_anew: Vec<String>,
    /// Whether the policy, the rate limits and the guardrails were replaced.
    pub governance: bool,
    /// Whether upstreams' sampling is answered by other local models now.
    pub sampler: bool,
}

impl Reloaded {
    /// Whether the reload changed nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Gateway {
    /// Applies another configuration's sources and governance to the
    /// running gateway (see the module's header). A configuration the
    /// gateway would refuse at start is refused here, and nothing changes.
    pub async fn reconfigure(&self, new: Reconfiguration) -> Result<Reloaded, ConfigError> {
        let check = GatewayConfig {
            sources: new.sources.clone(),
            ..GatewayConfig::default()
        };
        check.validate()?;
        let _one_at_a_time = self.inner.reloading.lock().await;
        let router = &self.inner.router;
        let mut report = Reloaded::default();
        let mut changed = Vec::new();

        // The configured sources now (the gateway's own tools aside), each
        // matched with the new spec that makes the same source, if any.
        let running: Vec<(usize, Arc<Slot>)> = router
            .slots()
            .into_iter()
            .enumerate()
            .skip(1)
            .filter(|(_, s)| !s.source.is_removed() && !s.source.is_second_era())
            .collect();
        let mut specs: Vec<Option<SourceSpec>> = new.sources.into_iter().map(Some).collect();
        let mut kept = Vec::new();
        let mut gone = Vec::new();
        for (index, slot) in running {
            let same = specs.iter().position(|spec| {
                spec.as_ref().is_some_and(|spec| {
                    spec.name() == slot.name
                        && slot.fingerprint.is_some()
                        && spec.fingerprint() == slot.fingerprint
                })
            });
            match same {
                Some(at) => kept.push((index, specs[at].take().expect("matched once"))),
                None => gone.push((index, slot)),
            }
        }
        // What changed or went first: a changed server's old process is
        // gone before its new one starts.
        for (index, slot) in gone {
            let again = specs.iter().flatten().any(|s| s.name() == slot.name);
            changed.extend(self.retire(index, &slot).await);
            if again {
                report.restarted.push(slot.name.clone());
            } else {
                report.removed.push(slot.name.clone());
            }
        }
        for (index, spec) in kept {
            let mut anew = Vec::new();
            for entry in self.entries_of(index) {
                anew.extend(router.catalog.set_exposure(entry, spec.exposure.clone()));
            }
            if !anew.is_empty() {
                report.exposed_anew.push(spec.name().to_owned());
                changed.extend(anew);
            }
        }
        for spec in specs.into_iter().flatten() {
            if !report.restarted.iter().any(|n| n == spec.name()) {
                report.added.push(spec.name().to_owned());
            }
            self.attach(spec);
        }
        if let Some(governance) = new.governance {
            router.catalog.set_policy(governance.policy.clone());
            let mut parts = self.inner.stack.clone();
            parts.policy = governance.policy;
            parts.rate_limiter = governance.rate_limiter;
            // Running upstreams relay through the new redaction too.
            self.inner
                .relaying
                .redactor
                .set(governance.guard.as_ref().and_then(|g| g.redactor()));
            parts.guard = governance.guard;
            router.set_layers(stack::build(parts));
            report.governance = true;
            // What each identity may see may have changed.
            changed.extend([ListKind::Tools, ListKind::Prompts, ListKind::Resources]);
        }
        if let (Some(sampler), Some(live)) = (new.sampler, &self.inner.relaying.sampler) {
            let sampler = match &self.inner.stack.metrics {
                Some(metrics) => metrics.counting_sampler(sampler),
                None => sampler,
            };
            live.replace(sampler);
            report.sampler = true;
        }
        self.announce(changed);
        Ok(report)
    }

    /// The catalogue entries of the source at `index`: its own and its
    /// second connection's, if it has one.
    fn entries_of(&self, index: usize) -> Vec<usize> {
        let router = &self.inner.router;
        let Some(main) = router.source(index) else {
            return Vec::new();
        };
        let mut entries = vec![index];
        entries.extend(
            self.inner
                .modern
                .twins()
                .iter()
                .filter(|(_, first, _)| Arc::ptr_eq(first, &main))
                .map(|(twin, _, _)| *twin),
        );
        entries
    }

    /// Stops the source at `index` (and its second connection) and takes
    /// it out of the catalogue; the kinds of list that changed.
    async fn retire(&self, index: usize, slot: &Arc<Slot>) -> Vec<ListKind> {
        let router = &self.inner.router;
        let entries = self.entries_of(index);
        self.inner
            .modern
            .twins
            .lock()
            .expect("twins lock poisoned")
            .retain(|(_, first, _)| !Arc::ptr_eq(first, &slot.source));
        let mut changed = Vec::new();
        for entry in entries {
            let replaced = router.replace_slot(
                entry,
                Slot::new(
                    slot.name.clone(),
                    Arc::new(Removed::new(&slot.name)),
                    slot.limits.clone(),
                ),
            );
            // Out of the lists before it stops, so that no call is routed
            // to it meanwhile; calls in flight end with its stop.
            changed.extend(router.catalog.remove_source(entry));
            replaced.source.stop().await;
        }
        tracing::info!(source = %slot.name, "source stopped: the configuration changed");
        changed
    }

    /// Adds and starts a source (and its second connection, started as at
    /// start: with the first client of the 2026-07-28 era).
    fn attach(&self, spec: SourceSpec) {
        let inner = &self.inner;
        let router = &inner.router;
        let sessions = &inner.downstream.sessions;
        let name = spec.name().to_owned();
        let prefix = spec.effective_prefix();
        let fingerprint = spec.fingerprint();
        let index = router
            .catalog
            .add_source(name.clone(), prefix.clone(), spec.exposure.clone());
        let source = spec
            .kind
            .into_source(index, sessions, &inner.relaying, &inner.stop);
        let mut slot = Slot::new(name.clone(), source.clone(), spec.limits);
        slot.fingerprint = fingerprint;
        let second = source.second_era(index + 1);
        let twin_slot = second.clone().map(|twin| slot.twin(twin));
        let at = router.push_slot(slot);
        debug_assert_eq!(at, index, "catalogue and router out of step");
        let reported = CancellationToken::new();
        source.start(SourceEvents {
            index,
            catalog: router.catalog.clone(),
            sessions: sessions.clone(),
            reported: reported.clone(),
        });
        tracing::info!(source = %name, "source started: the configuration added it");
        let (Some(twin), Some(twin_slot)) = (second, twin_slot) else {
            return;
        };
        let twin_index = router.catalog.add_source(name, prefix, spec.exposure);
        let at = router.push_slot(twin_slot);
        debug_assert_eq!(at, twin_index, "catalogue and router out of step");
        router.catalog.pair_eras(index, twin_index);
        let twin_reported = CancellationToken::new();
        let modern = &inner.modern;
        modern.twins.lock().expect("twins lock poisoned").push((
            twin_index,
            source.clone(),
            twin_reported.clone(),
        ));
        if modern.started.get().is_none() {
            return; // started with the others, at the era's first client
        }
        // That era has clients already: the second connection starts once
        // the first one has reported, unless the first serves both eras.
        let (catalog, sessions) = (router.catalog.clone(), sessions.clone());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(STARTUP_GRACE, reported.cancelled()).await;
            if source.serves_both_eras() {
                twin_reported.cancel();
                return;
            }
            twin.start(SourceEvents {
                index: twin_index,
                catalog,
                sessions,
                reported: twin_reported,
            });
        });
    }

    /// Tells every client which lists changed, once per kind.
    fn announce(&self, mut changed: Vec<ListKind>) {
        changed.sort_by_key(|k| k.index());
        changed.dedup();
        for kind in changed {
            if kind == ListKind::ResourceTemplates {
                continue; // announced with resources
            }
            self.inner
                .downstream
                .sessions
                .broadcast(&Message::notification(kind.changed_notification(), None));
        }
    }
}

impl Gateway {
    /// Says which configuration the gateway serves (`file`, as the user
    /// named it), for the status.
    pub fn serving_config(&self, file: &str) {
        self.inner.configured.loaded(file);
    }

    /// Records a reload for the status and the metrics: `Ok(what it
    /// did)`, or `Err(why it was refused)` (the running configuration
    /// stayed).
    pub fn record_reload(&self, outcome: Result<&str, &str>) {
        self.inner.configured.reloaded(outcome);
        if let Some(metrics) = &self.inner.metrics {
            let label = if outcome.is_ok() {
                "applied"
            } else {
                "refused"
            };
            metrics.config_reloaded(label);
        }
    }
}
