//! Prometheus metrics: a router layer counts every routed call (by source,
//! tool and outcome), times it and tracks calls in flight; the gateway's
//! state (upstream health, sessions by era) is read at each scrape.
//!
//! Label values come only from the configuration and the catalogue (source
//! names, exposed tool names, protocol versions), never from a client's
//! arguments or identity, so the number of series stays bounded.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use async_trait::async_trait;
use mcpyard_proto::{methods, ErrorObject, RequestId};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde_json::Value;

use crate::downstream::Sessions;
use crate::governance::audit::Outcome;
use crate::governance::stats::CallStats;
use crate::router::{Layer, Next, RouteFuture, RoutedCall, Router};
use crate::SamplingRequest;
use crate::{Sampler, SamplingUsage};

/// The content type of [`Metrics::render`]'s text (OpenMetrics 1.0, which
/// Prometheus scrapes natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Latency buckets in seconds: a local tool answers in a millisecond, a
/// model in tens of seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        self.as_str().encode(encoder)
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    source: String,
    method: &'static str,
    /// The exposed tool name for `tools/call`; empty for other methods
    /// (resource URIs are not bounded).
    tool: String,
    outcome: Outcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceMethod {
    source: String,
    method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabel {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReplicaLabels {
    replica: String,
    backend: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EraLabel {
    era: String,
}

#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // the label values, as written
enum Direction {
    /// Prompt tokens.
    input,
    /// Completion tokens.
    output,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    /// The source whose tool used a model, or `sampling` for upstreams'
    /// sampling requests answered locally.
    source: String,
    direction: Direction,
}

/// The gateway's metrics. One per process; give it to the gateway with
/// [`GatewayConfig::metrics`](crate::GatewayConfig::metrics) and serve
/// [`Gateway::metrics_text`](crate::Gateway::metrics_text).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<SourceMethod, Histogram, fn() -> Histogram>,
    in_flight: Family<SourceLabel, Gauge>,
    unrouted: Family<MethodLabel, Counter>,
    tokens: Family<TokenLabels, Counter>,
    upstream_up: Family<SourceLabel, Gauge>,
    upstream_restarts: Family<SourceLabel, Counter>,
    sessions_live: Family<EraLabel, Gauge>,
    sessions_started: Family<EraLabel, Counter>,
    reloads: Family<ReloadLabel, Counter>,
    replica: Family<ReplicaLabels, Gauge>,
    state_up: Gauge,
    state_failures: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mcpyard");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "calls",
            "Routed calls (tools/call, prompts/get, resources/read, completion/complete) by source, tool and outcome",
            calls.clone(),
        );
        let latency: Family<SourceMethod, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS));
        registry.register(
            "call_duration_seconds",
            "Time from a routed call entering the gateway's layers to its outcome",
            latency.clone(),
        );
        let in_flight = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "calls_in_flight",
            "Routed calls started and not yet ended, by source",
            in_flight.clone(),
        );
        let unrouted = Family::<MethodLabel, Counter>::default();
        registry.register(
            "unrouted_calls",
            "Calls naming a tool or prompt no source offers to the caller",
            unrouted.clone(),
        );
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "model_tokens",
            "Tokens local models read (input) and wrote (output), from their usage reports",
            tokens.clone(),
        );
        let upstream_up = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "upstream_up",
            "1 when the upstream MCP server is connected and listed, else 0",
            upstream_up.clone(),
        );
        let upstream_restarts = Family::<SourceLabel, Counter>::default();
        registry.register(
            "upstream_restarts",
            "Times the upstream MCP server was reconnected or restarted",
            upstream_restarts.clone(),
        );
        let sessions_live = Family::<EraLabel, Gauge>::default();
        registry.register(
            "sessions",
            "Live client sessions by negotiated protocol version",
            sessions_live.clone(),
        );
        let sessions_started = Family::<EraLabel, Counter>::default();
        registry.register(
            "sessions_started",
            "Client sessions begun, by protocol version; every request of the stateless era (2026-07-28) is a session of its own",
            sessions_started.clone(),
        );
        let reloads = Family::<ReloadLabel, Counter>::default();
        registry.register(
            "config_reloads",
            "Reloads of the configuration file, by outcome: applied, or refused (the file did not validate; the running configuration stayed)",
            reloads.clone(),
        );
        let replica = Family::<ReplicaLabels, Gauge>::default();
        registry.register(
            "replica",
            "Always 1: this replica's name and where it keeps shared state (memory or redis)",
            replica.clone(),
        );
        let state_up = Gauge::default();
        registry.register(
            "state_backend_up",
            "1 when the state backend's last command succeeded, else 0",
            state_up.clone(),
        );
        let state_failures = Counter::default();
        registry.register(
            "state_backend_failures",
            "Commands to the state backend that failed (unreachable, refused, timed out)",
            state_failures.clone(),
        );
        Self {
            registry,
            reloads,
            replica,
            state_up,
            state_failures,
            calls,
            latency,
            in_flight,
            unrouted,
            tokens,
            upstream_up,
            upstream_restarts,
            sessions_live,
            sessions_started,
        }
    }

    /// Counts a reload of the configuration: `applied` or `refused`.
    pub fn config_reloaded(&self, outcome: &'static str) {
        self.reloads.get_or_create(&ReloadLabel { outcome }).inc();
    }

    /// Counts a session begun in protocol version `era`.
    pub(crate) fn session_started(&self, era: &str) {
        self.sessions_started
            .get_or_create(&EraLabel { era: era.into() })
            .inc();
    }

    /// Counts a call whose name no source offers (its name is not a label:
    /// the client chose it).
    pub(crate) fn unrouted(&self, method: &'static str) {
        self.unrouted.get_or_create(&MethodLabel { method }).inc();
    }

    fn model_tokens(&self, source: &str, input: u64, output: u64) {
        for (direction, n) in [(Direction::input, input), (Direction::output, output)] {
            if n > 0 {
                self.tokens
                    .get_or_create(&TokenLabels {
                        source: source.into(),
                        direction,
                    })
                    .inc_by(n);
            }
        }
    }

    /// Wraps the sampler that answers upstreams' sampling requests, so the
    /// tokens it uses are counted.
    pub(crate) fn counting_sampler(self: &Arc<Self>, inner: Arc<dyn Sampler>) -> Arc<dyn Sampler> {
        Arc::new(CountingSampler {
            inner,
            metrics: self.clone(),
        })
    }

    /// The text a scrape gets: the gateway's state is read now.
    pub(crate) fn render(
        &self,
        router: &Router,
        sessions: &Sessions,
        replica: &str,
        state: &dyn crate::state::StateBackend,
    ) -> String {
        self.observe(router, sessions);
        self.replica
            .get_or_create(&ReplicaLabels {
                replica: replica.to_owned(),
                backend: state.kind(),
            })
            .set(1);
        self.state_up.set(i64::from(state.healthy()));
        let failures = state.failures();
        let seen = self.state_failures.get();
        if failures > seen {
            self.state_failures.inc_by(failures - seen);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    fn observe(&self, router: &Router, sessions: &Sessions) {
        // A server's second connection is in its status.
        for source in router.sources().into_iter().filter(|s| !s.is_second_era()) {
            let Some(health) = source.health() else {
                continue;
            };
            let label = SourceLabel {
                source: source.name().to_owned(),
            };
            self.upstream_up
                .get_or_create(&label)
                .set(i64::from(health.up));
            let restarts = health.restarts;
            let counter = self.upstream_restarts.get_or_create(&label);
            // The supervisor's own count is the truth; the counter follows it.
            let seen = counter.get();
            if restarts > seen {
                counter.inc_by(restarts - seen);
            }
        }
        let mut live: BTreeMap<String, i64> = BTreeMap::new();
        for session in sessions.all() {
            let version = session.protocol_version();
            let era = if version.is_empty() {
                "uninitialized".to_owned()
            } else {
                version
            };
            *live.entry(era).or_default() += 1;
        }
        // Eras with no session left read 0 rather than vanish.
        self.sessions_live.clear();
        for era in mcpyard_proto::SUPPORTED {
            self.sessions_live
                .get_or_create(&EraLabel {
                    era: (*era).to_owned(),
                })
                .set(0);
        }
        for (era, n) in live {
            self.sessions_live.get_or_create(&EraLabel { era }).set(n);
        }
    }

    /// The router layer that counts and times each call, and feeds
    /// `stats` each tool call's outcome and duration.
    pub(crate) fn layer(self: &Arc<Self>, stats: Arc<CallStats>) -> Arc<dyn Layer> {
        Arc::new(CallMetrics {
            metrics: self.clone(),
            stats,
            series: RwLock::default(),
        })
    }
}

/// The router layer: outermost of the configured layers, so that calls
/// refused or limited by the layers inside it are counted too.
#[derive(Debug)]
struct CallMetrics {
    metrics: Arc<Metrics>,
    stats: Arc<CallStats>,
    /// Each (source, method, tool)'s series, found in their families once:
    /// a family hashes its whole label set, strings and all, at every
    /// lookup. Bounded as the families are (see the module's notes).
    series: RwLock<HashMap<String, Arc<CallSeries>, foldhash::fast::RandomState>>,
}

/// The series one (source, method, tool) is counted in.
#[derive(Debug)]
struct CallSeries {
    in_flight: Gauge,
    latency: Histogram,
    /// By [`Outcome`]'s order; each made when that outcome first happens,
    /// so that the families list only the outcomes there were.
    calls: [OnceLock<Counter>; Outcome::ALL.len()],
    labels: CallLabels,
}

impl CallMetrics {
    fn series(&self, source: &str, method: &'static str, tool: &str) -> Arc<CallSeries> {
        let mut key = String::with_capacity(source.len() + method.len() + tool.len() + 2);
        for (i, part) in [source, method, tool].into_iter().enumerate() {
            if i > 0 {
                key.push('\u{1f}');
            }
            key.push_str(part);
        }
        if let Some(series) = self
            .series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return series.clone();
        }
        let metrics = &*self.metrics;
        let series = Arc::new(CallSeries {
            in_flight: metrics.in_flight.get_or_create_owned(&SourceLabel {
                source: source.to_owned(),
            }),
            latency: metrics.latency.get_or_create_owned(&SourceMethod {
                source: source.to_owned(),
                method,
            }),
            calls: Default::default(),
            labels: CallLabels {
                source: source.to_owned(),
                method,
                tool: tool.to_owned(),
                outcome: Outcome::Ok,
            },
        });
        self.series
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_insert(series)
            .clone()
    }
}

impl CallSeries {
    fn count(&self, metrics: &Metrics, outcome: Outcome) {
        self.calls[outcome as usize]
            .get_or_init(|| {
                metrics.calls.get_or_create_owned(&CallLabels {
                    outcome,
                    ..self.labels.clone()
                })
            })
            .inc();
    }
}

impl Layer for CallMetrics {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        let method = call.request.method;
        let (tool, counter) = if method == methods::TOOLS_CALL {
            (call.target.as_str(), self.stats.counter(&call.target))
        } else {
            ("", None)
        };
        let series = self.series(call.source(), method, tool);
        let stats = &*self.stats;
        // Only the gateway's own sources (local models) report model usage
        // the gateway can trust as its own; an MCP upstream's is its business.
        let counts_tokens = call.slot.source.reports_own_usage();
        let metrics = &*self.metrics;
        Box::pin(async move {
            series.in_flight.inc();
            let started = Instant::now();
            let outcome = next.run(call).await;
            let took = started.elapsed();
            series.in_flight.dec();
            if let Some(counter) = counter {
                counter.count(stats, crate::governance::stats::failed(&outcome), took);
            }
            series.latency.observe(took.as_secs_f64());
            if counts_tokens {
                if let Ok(result) = &outcome {
                    let result = result.to_value();
                    let usage = &result["structuredContent"]["usage"];
                    let read = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                    metrics.model_tokens(
                        &series.labels.source,
                        read("prompt_tokens"),
                        read("completion_tokens"),
                    );
                }
            }
            series.count(metrics, Outcome::of(&outcome));
            outcome
        })
    }
}

/// Counts the tokens of sampling requests answered by a local model.
#[derive(Debug)]
struct CountingSampler {
    inner: Arc<dyn Sampler>,
    metrics: Arc<Metrics>,
}

#[async_trait]
impl Sampler for CountingSampler {
    async fn create_message(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        Ok(self.create_message_measured(request, related).await?.0)
    }

    async fn create_message_measured(
        &self,
        request: SamplingRequest,
        related: Option<RequestId>,
    ) -> Result<(Value, Option<SamplingUsage>), ErrorObject> {
        let answered = self.inner.create_message_measured(request, related).await;
        if let Ok((_, Some(usage))) = &answered {
            self.metrics
                .model_tokens("sampling", usage.prompt_tokens, usage.completion_tokens);
        }
        answered
    }

    fn capability(&self) -> Value {
        self.inner.capability()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RouteError;
    use serde_json::json;

    #[test]
    fn outcomes_tell_results_tool_errors_and_limits_apart() {
        assert_eq!(Outcome::of(&Ok(json!({"content": []}).into())), Outcome::Ok);
        assert_eq!(
            Outcome::of(&Ok(json!({"content": [], "isError": true}).into())),
            Outcome::IsError
        );
        let busy = RouteError::Busy {
            server: "s".into(),
            limit: 1,
            waited: std::time::Duration::ZERO,
        };
        assert_eq!(Outcome::of(&Err(busy)), Outcome::Limited);
        let failed = RouteError::Failed {
            server: "s".into(),
            kind: "x",
        };
        assert_eq!(Outcome::of(&Err(failed)), Outcome::Error);
    }

    #[test]
    fn a_calls_series_are_found_once_and_each_outcome_counted_from_its_first() {
        let metrics = Arc::new(Metrics::new());
        let layer = CallMetrics {
            metrics: metrics.clone(),
            stats: Arc::new(CallStats::default()),
            series: RwLock::default(),
        };
        let read = layer.series("fs", methods::TOOLS_CALL, "fs__read");
        let again = layer.series("fs", methods::TOOLS_CALL, "fs__read");
        assert!(Arc::ptr_eq(&read, &again));
        read.count(&metrics, Outcome::Ok);
        again.count(&metrics, Outcome::Ok);
        read.count(&metrics, Outcome::Refused);
        read.latency.observe(0.002);
        read.in_flight.inc();
        let prompt = layer.series("fs", methods::PROMPTS_GET, "");
        prompt.count(&metrics, Outcome::Error);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        for line in [
            r#"mcpyard_calls_total{source="fs",method="tools/call",tool="fs__read",outcome="ok"} 2"#,
            r#"mcpyard_calls_total{source="fs",method="tools/call",tool="fs__read",outcome="refused"} 1"#,
            r#"mcpyard_calls_total{source="fs",method="prompts/get",tool="",outcome="error"} 1"#,
            r#"mcpyard_call_duration_seconds_count{source="fs",method="tools/call"} 1"#,
            r#"mcpyard_calls_in_flight{source="fs"} 1"#,
        ] {
            assert!(text.contains(line), "no {line} in:\n{text}");
        }
        // Only the outcomes there were have a series.
        assert!(
            !text.contains(r#"tool="fs__read",outcome="error""#),
            "{text}"
        );
    }

    #[test]
    fn tokens_are_counted_per_direction_and_zero_makes_no_series() {
        let metrics = Metrics::new();
        metrics.model_tokens("local", 12, 0);
        metrics.model_tokens("local", 3, 5);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        assert!(
            text.contains(r#"mcpyard_model_tokens_total{source="local",direction="input"} 15"#),
            "{text}"
        );
        assert!(
            text.contains(r#"mcpyard_model_tokens_total{source="local",direction="output"} 5"#),
            "{text}"
        );
    }
}
