//! Call statistics for the status tool (and so the status page): per tool,
//! over the last [`WINDOW`], how many calls, how many failed (a JSON-RPC
//! error or an `isError` result), their p50 and p95 latency, and calls and
//! errors per [`BUCKET`] for a chart; and, while the audit trail is on, the
//! last [`RECENT`] calls it recorded.
//!
//! Cheap on the call path: as it starts, a call finds its tool's ring by
//! `&str` under a read lock (the write lock is taken only to add a name,
//! copied then, once) and keeps a reference to it; as it ends, it takes the
//! ring's own lock and bumps three counters of the current bucket. No lock
//! is held across an await, calls of different tools share no lock but the
//! read one, and nothing is allocated per call. At most [`MAX_TOOLS`] names
//! are tracked (a ring is under 6 KiB); calls of the others are counted
//! together as [`OTHER`]. A name not called for a whole window is
//! forgotten, making room. A poisoned lock is used as it is: figures are
//! not worth failing a call for.
//!
//! One per process, `CallStats::shared`, since the gateway's status tool
//! and its layers are made apart; the layer in the stack's `metrics` place
//! feeds it (the metrics layer itself when metrics are on, so that no layer
//! is added then), the audit layer adds the recent calls.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use mcpyard_proto::{methods, Payload};
use serde_json::{json, Value};

use crate::router::{Layer, Next, RouteFuture, RoutedCall};
use crate::RouteError;

/// One bar of the chart.
pub(crate) const BUCKET: Duration = Duration::from_secs(30);
/// Buckets kept: the window is `BUCKETS * BUCKET`.
pub(crate) const BUCKETS: usize = 30;
/// What the figures cover.
pub(crate) const WINDOW: Duration = Duration::from_secs(BUCKET.as_secs() * BUCKETS as u64);
/// Tool names tracked at most.
pub(crate) const MAX_TOOLS: usize = 1000;
/// The name the calls of untracked tools are counted under.
pub(crate) const OTHER: &str = "(other)";
/// Audited calls kept.
pub(crate) const RECENT: usize = 50;

/// Latency bins: bin `i` holds calls up to `FIRST_BIN * RATIO^i` seconds;
/// the last one, everything slower. RATIO = √2, and a percentile is given
/// as its bin's geometric middle, so it is within ±19% of the true one.
const LATENCY_BINS: usize = 44;
const FIRST_BIN: f64 = 0.000_1;

/// The gateway's own status tool (`source::builtin::STATUS_TOOL`, which
/// checks they agree): the status page asks it at each poll, so its calls
/// are left out (the audit file still has them).
pub(crate) const NOT_COUNTED: &str = "mcpyard__status";

/// The statistics. See the module's documentation.
#[derive(Debug)]
pub(crate) struct CallStats {
    origin: Instant,
    tools: RwLock<Tools>,
    recent: Mutex<VecDeque<RecentCall>>,
    audit_on: AtomicBool,
}

#[derive(Debug, Default)]
struct Tools {
    /// Read on every call; the names are the catalogue's (see `catalog`).
    by_name: foldhash::HashMap<String, Counter>,
    other: Counter,
    /// The bucket stale names were last forgotten in.
    pruned: u64,
}

/// Where one tool's calls are counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counter(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    /// The newest bucket a call began or ended in.
    last: AtomicU64,
    ring: Mutex<Ring>,
}

impl Counter {
    fn ring(&self) -> MutexGuard<'_, Ring> {
        self.0.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self, now: u64) {
        self.0.last.fetch_max(now, Ordering::Relaxed);
    }

    /// Whether it was used in the window ending at `now`.
    fn live(&self, now: u64) -> bool {
        self.0.last.load(Ordering::Relaxed) + (BUCKETS as u64) > now
    }

    /// Counts a call that ended now after `elapsed`.
    pub(crate) fn count(&self, stats: &CallStats, failed: bool, elapsed: Duration) {
        self.count_at(stats, Instant::now(), failed, elapsed);
    }

    fn count_at(&self, stats: &CallStats, at: Instant, failed: bool, elapsed: Duration) {
        let (now, bin) = (stats.bucket(at), bin_of(elapsed));
        self.touch(now);
        self.ring().add(now, failed, bin);
    }
}

/// One tool's buckets; bucket `n` (counted from the origin) is at
/// `n % BUCKETS`, and stands for `n` only when its `at` says so.
#[derive(Debug)]
struct Ring {
    buckets: [Bucket; BUCKETS],
}

impl Default for Ring {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| Bucket::default()),
        }
    }
}

#[derive(Debug, Clone)]
struct Bucket {
    at: u64,
    calls: u32,
    errors: u32,
    latency: [u32; LATENCY_BINS],
}

impl Default for Bucket {
    fn default() -> Self {
        Self {
            at: u64::MAX,
            calls: 0,
            errors: 0,
            latency: [0; LATENCY_BINS],
        }
    }
}

/// One call as the audit recorded it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecentCall {
    pub(crate) time: String,
    pub(crate) identity: String,
    pub(crate) tool: String,
    /// As the audit names it (`ok`, `isError`, `error`, `refused`, `limited`).
    pub(crate) outcome: &'static str,
    pub(crate) duration_ms: f64,
}

/// One tool's figures over the window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolFigures {
    pub(crate) tool: String,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    /// In milliseconds; `None` without calls.
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p95_ms: Option<f64>,
    /// Calls and errors per bucket, oldest first, the current one last.
    pub(crate) calls_series: Vec<u32>,
    pub(crate) errors_series: Vec<u32>,
}

fn bin_of(elapsed: Duration) -> usize {
    let secs = elapsed.as_secs_f64();
    if secs <= FIRST_BIN {
        return 0;
    }
    // √2 per bin: twice the log2 of how many times FIRST_BIN.
    let bin = ((secs / FIRST_BIN).log2() * 2.0).ceil();
    (bin as usize).min(LATENCY_BINS - 1)
}

/// The value a bin stands for, in milliseconds: its geometric middle
/// (bin 0's upper bound).
fn bin_ms(bin: usize) -> f64 {
    let middle = if bin == 0 { 0.0 } else { bin as f64 - 0.5 };
    let ms = FIRST_BIN * 1000.0 * std::f64::consts::SQRT_2.powf(middle);
    (ms * 1000.0).round() / 1000.0
}

impl Ring {
    fn add(&mut self, now: u64, failed: bool, bin: usize) {
        let bucket = &mut self.buckets[(now % BUCKETS as u64) as usize];
        if bucket.at != now {
            *bucket = Bucket {
                at: now,
                ..Bucket::default()
            };
        }
        bucket.calls = bucket.calls.saturating_add(1);
        if failed {
            bucket.errors = bucket.errors.saturating_add(1);
        }
        bucket.latency[bin] = bucket.latency[bin].saturating_add(1);
    }

    fn figures(&self, tool: &str, now: u64) -> Option<ToolFigures> {
        let mut calls_series = vec![0; BUCKETS];
        let mut errors_series = vec![0; BUCKETS];
        let mut latency = [0u64; LATENCY_BINS];
        for bucket in &self.buckets {
            if bucket.at > now || bucket.at + (BUCKETS as u64) <= now {
                continue;
            }
            let place = BUCKETS - 1 - (now - bucket.at) as usize;
            calls_series[place] = bucket.calls;
            errors_series[place] = bucket.errors;
            for (sum, n) in latency.iter_mut().zip(bucket.latency) {
                *sum += u64::from(n);
            }
        }
        let calls: u64 = calls_series.iter().map(|&n| u64::from(n)).sum();
        if calls == 0 {
            return None;
        }
        let quantile = |q: f64| {
            let rank = ((calls as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            latency.iter().enumerate().find_map(|(bin, &n)| {
                seen += n;
                (seen >= rank).then(|| bin_ms(bin))
            })
        };
        Some(ToolFigures {
            tool: tool.to_owned(),
            calls,
            errors: errors_series.iter().map(|&n| u64::from(n)).sum(),
            p50_ms: quantile(0.5),
            p95_ms: quantile(0.95),
            calls_series,
            errors_series,
        })
    }
}

impl Default for CallStats {
    fn default() -> Self {
        Self::new()
    }
}

impl CallStats {
    pub(crate) fn new() -> Self {
        Self {
            origin: Instant::now(),
            tools: RwLock::default(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
            audit_on: AtomicBool::new(false),
        }
    }

    fn bucket(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_secs() / BUCKET.as_secs()
    }

    #[cfg(test)]
    fn record_at(&self, at: Instant, tool: &str, failed: bool, elapsed: Duration) {
        if let Some(counter) = self.counter_at(at, tool) {
            counter.count_at(self, at, failed, elapsed);
        }
    }

    /// Where a call of `tool` beginning now is counted; `None` for the
    /// status tool.
    pub(crate) fn counter(&self, tool: &str) -> Option<Counter> {
        self.counter_at(Instant::now(), tool)
    }

    fn counter_at(&self, at: Instant, tool: &str) -> Option<Counter> {
        if tool == NOT_COUNTED {
            return None;
        }
        let now = self.bucket(at);
        let known = {
            let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
            tools.by_name.get(tool).cloned()
        };
        let counter = known.unwrap_or_else(|| self.add(tool, now));
        // In use: not forgotten while the call runs.
        counter.touch(now);
        Some(counter)
    }

    /// The counter of a name not seen yet: its own while there is room.
    fn add(&self, tool: &str, now: u64) -> Counter {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if !tools.by_name.contains_key(tool) && tools.by_name.len() >= MAX_TOOLS {
            tools.forget_stale(now);
        }
        if tools.by_name.len() < MAX_TOOLS || tools.by_name.contains_key(tool) {
            return tools.by_name.entry(tool.to_owned()).or_default().clone();
        }
        tools.other.clone()
    }

    /// The figures of the tools called in the window, by name, those for
    /// which `shown` says yes, then the untracked ones' as [`OTHER`] when
    /// `other` says so.
    pub(crate) fn figures(&self, shown: impl Fn(&str) -> bool, other: bool) -> Vec<ToolFigures> {
        self.figures_at(Instant::now(), shown, other)
    }

    fn figures_at(
        &self,
        at: Instant,
        shown: impl Fn(&str) -> bool,
        other: bool,
    ) -> Vec<ToolFigures> {
        let now = self.bucket(at);
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        tools.forget_stale(now);
        let mut figures: Vec<ToolFigures> = tools
            .by_name
            .iter()
            .filter(|(name, _)| shown(name))
            .filter_map(|(name, counter)| counter.ring().figures(name, now))
            .collect();
        figures.sort_by(|a, b| a.tool.cmp(&b.tool));
        if other {
            figures.extend(tools.other.ring().figures(OTHER, now));
        }
        figures
    }

    /// The audit trail is on: calls it records are kept.
    pub(crate) fn audit_is_on(&self) {
        self.audit_on.store(true, Ordering::Relaxed);
    }

    /// Whether the audit trail is on (recent calls are kept only then).
    pub(crate) fn audit_on(&self) -> bool {
        self.audit_on.load(Ordering::Relaxed)
    }

    /// Keeps a `tools/call` the audit trail recorded (its strings are
    /// the record's, moved, not copied).
    pub(crate) fn audited(&self, call: RecentCall) {
        if call.tool == NOT_COUNTED {
            return;
        }
        let gone = {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            let gone = (recent.len() >= RECENT).then(|| recent.pop_front());
            recent.push_back(call);
            gone
        };
        // Freed outside the lock.
        drop(gone);
    }

    /// The recent calls, newest first, those for which `shown` says yes.
    pub(crate) fn recent(&self, shown: impl Fn(&RecentCall) -> bool) -> Vec<RecentCall> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.iter().rev().filter(|c| shown(c)).cloned().collect()
    }

    /// The layer counting `tools/call`s, for a stack without the metrics
    /// layer (which counts them itself).
    pub(crate) fn layer(self: &Arc<Self>) -> Arc<dyn Layer> {
        Arc::new(StatsLayer {
            stats: self.clone(),
        })
    }
}

impl Tools {
    /// Forgets the names not called for a window, at most once a bucket.
    fn forget_stale(&mut self, now: u64) {
        if self.pruned == now && now != 0 {
            return;
        }
        self.pruned = now;
        self.by_name.retain(|_, counter| counter.live(now));
    }
}

/// Whether a call's outcome counts as an error in the statistics.
/// (The audit's `Outcome::of` other than `ok`.)
pub(crate) fn failed(outcome: &Result<Payload, RouteError>) -> bool {
    match outcome {
        Ok(result) => result.is_error(),
        Err(_) => true,
    }
}

/// The statistics section of the status: per tool and the recent calls.
pub(crate) fn section(figures: &[ToolFigures], recent: Option<&[RecentCall]>) -> Value {
    let tools: Vec<Value> = figures
        .iter()
        .map(|f| {
            json!({
                "tool": f.tool,
                "calls": f.calls,
                "errors": f.errors,
                "p50Ms": f.p50_ms,
                "p95Ms": f.p95_ms,
                "series": {"calls": f.calls_series, "errors": f.errors_series},
            })
        })
        .collect();
    let mut section = json!({
        "windowSeconds": WINDOW.as_secs(),
        "bucketSeconds": BUCKET.as_secs(),
        "tools": tools,
        "audit": recent.is_some(),
    });
    if let Some(recent) = recent {
        section["recent"] = recent
            .iter()
            .map(|c| {
                json!({
                    "time": c.time,
                    "identity": c.identity,
                    "tool": c.tool,
                    "outcome": c.outcome,
                    "durationMs": c.duration_ms,
                })
            })
            .collect();
    }
    section
}

/// Counts each `tools/call`: its tool, whether it failed, how long it took.
#[derive(Debug)]
struct StatsLayer {
    stats: Arc<CallStats>,
}

impl Layer for StatsLayer {
    fn call<'a>(&'a self, call: RoutedCall, next: Next<'a>) -> RouteFuture<'a> {
        if call.request.method != methods::TOOLS_CALL {
            return next.run(call);
        }
        let Some(counter) = self.stats.counter(&call.target) else {
            return next.run(call);
        };
        let stats = &*self.stats;
        Box::pin(async move {
            let started = Instant::now();
            let outcome = next.run(call).await;
            counter.count(stats, failed(&outcome), started.elapsed());
            outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn calls_errors_and_percentiles_over_the_window() {
        let stats = CallStats::new();
        let t0 = stats.origin;
        for n in 1..=100 {
            stats.record_at(t0, "a__echo", n % 10 == 0, ms(n));
        }
        let figures = stats.figures_at(t0, |_| true, true);
        assert_eq!(figures.len(), 1);
        let echo = &figures[0];
        assert_eq!(
            (echo.tool.as_str(), echo.calls, echo.errors),
            ("a__echo", 100, 10)
        );
        // Within half a bin (2^¼) of the true 50 ms and 95 ms.
        let p50 = echo.p50_ms.unwrap();
        let p95 = echo.p95_ms.unwrap();
        assert!((50.0 / 1.19..=50.0 * 1.19).contains(&p50), "p50 {p50}");
        assert!((95.0 / 1.19..=95.0 * 1.19).contains(&p95), "p95 {p95}");
        assert!(p50 < p95);
        assert_eq!(echo.calls_series.len(), BUCKETS);
        assert_eq!(echo.calls_series[BUCKETS - 1], 100);
        assert_eq!(echo.errors_series[BUCKETS - 1], 10);
    }

    #[test]
    fn buckets_rotate_and_old_calls_leave_the_window() {
        let stats = CallStats::new();
        let t0 = stats.origin;
        stats.record_at(t0, "t", false, ms(1));
        stats.record_at(t0 + BUCKET, "t", true, ms(1));
        stats.record_at(t0 + BUCKET, "t", false, ms(1));
        let later = t0 + BUCKET * 2;
        let f = &stats.figures_at(later, |_| true, false)[0];
        assert_eq!((f.calls, f.errors), (3, 1));
        assert_eq!(&f.calls_series[BUCKETS - 3..], [1, 2, 0]);
        assert_eq!(&f.errors_series[BUCKETS - 3..], [0, 1, 0]);
        // The first bucket's place in the ring is written again a window
        // later: it stands for the new bucket, not the old one.
        stats.record_at(t0 + WINDOW, "t", false, ms(1));
        let f = &stats.figures_at(t0 + WINDOW, |_| true, false)[0];
        assert_eq!((f.calls, f.errors), (3, 1), "{f:?}");
        assert_eq!(&f.calls_series[BUCKETS - 1..], [1]);
        assert_eq!(f.calls_series[BUCKETS - 30], 2);
        // A window after its last call, a tool has no figures and is
        // forgotten.
        let f = stats.figures_at(t0 + WINDOW * 2, |_| true, false);
        assert!(f.is_empty(), "{f:?}");
        assert!(stats.tools.read().unwrap().by_name.is_empty());
        // A call in flight keeps its tool from being forgotten.
        let late = t0 + WINDOW * 3;
        let counter = stats.counter_at(late, "slow").unwrap();
        stats.figures_at(late + WINDOW - BUCKET, |_| true, false);
        counter.count_at(&stats, late + WINDOW - BUCKET, false, ms(1));
        let f = stats.figures_at(late + WINDOW - BUCKET, |_| true, false);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn names_past_the_cap_are_counted_as_other_until_room_is_made() {
        let stats = CallStats::new();
        let t0 = stats.origin;
        for n in 0..MAX_TOOLS + 5 {
            stats.record_at(t0, &format!("t{n}"), false, ms(1));
        }
        let figures = stats.figures_at(t0, |_| true, true);
        assert_eq!(figures.len(), MAX_TOOLS + 1);
        let other = figures.last().unwrap();
        assert_eq!((other.tool.as_str(), other.calls), (OTHER, 5));
        // Hidden from a viewer unless asked for.
        assert_eq!(stats.figures_at(t0, |_| true, false).len(), MAX_TOOLS);
        // A window later the old names are gone and a new one is tracked.
        let later = t0 + WINDOW;
        stats.record_at(later, "fresh", false, ms(1));
        let figures = stats.figures_at(later, |_| true, true);
        assert_eq!(figures.len(), 1, "{:?}", figures.first());
        assert_eq!(figures[0].tool, "fresh");
    }

    #[test]
    fn the_viewer_filter_and_the_status_tool_are_left_out() {
        let stats = CallStats::new();
        let t0 = stats.origin;
        stats.record_at(t0, "a", false, ms(1));
        stats.record_at(t0, "b", false, ms(1));
        stats.record_at(t0, NOT_COUNTED, false, ms(1));
        let names: Vec<String> = stats
            .figures_at(t0, |n| n != "b", true)
            .into_iter()
            .map(|f| f.tool)
            .collect();
        assert_eq!(names, ["a"]);
    }

    #[test]
    fn recent_calls_keep_the_last_n_newest_first() {
        let stats = CallStats::new();
        for n in 0..RECENT + 3 {
            stats.audited(RecentCall {
                time: format!("t{n}"),
                identity: "alice".into(),
                tool: format!("s__t{}", n % 2),
                outcome: "ok",
                duration_ms: 1.0,
            });
        }
        let all = stats.recent(|_| true);
        assert_eq!(all.len(), RECENT);
        assert_eq!(all[0].time, format!("t{}", RECENT + 2));
        assert_eq!(all[RECENT - 1].time, "t3");
        let odd = stats.recent(|c| c.tool == "s__t1");
        assert_eq!(odd.len(), RECENT / 2);
        let with = section(&[], Some(&all[..1]));
        assert_eq!(with["audit"], true);
        assert_eq!(with["recent"][0]["outcome"], "ok");
        assert!(section(&[], None).get("recent").is_none());
    }

    #[test]
    fn latency_bins_grow_by_the_square_root_of_two() {
        assert_eq!(bin_of(Duration::ZERO), 0);
        assert_eq!(bin_of(Duration::from_micros(100)), 0);
        assert_eq!(bin_of(Duration::from_micros(200)), 2);
        assert_eq!(bin_of(Duration::from_secs(3600)), LATENCY_BINS - 1);
        assert_eq!(bin_ms(0), 0.1);
        // Bin 2 holds (0.141 ms, 0.2 ms]: its middle is 2^¾ × 0.1 ms.
        assert_eq!(bin_ms(2), 0.168);
    }
}
