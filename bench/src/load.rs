//! The two load phases: closed-loop saturation (throughput) and an open
//! loop at a fixed rate (latency, measured from each request's scheduled
//! send time so queueing is not hidden).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde::Serialize;
use tokio::task::JoinSet;

use crate::conn::{Endpoint, McpConn};
use crate::stats::Percentiles;

/// The longest any single request may take before it counts as failed.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Extra time a phase may run past its planned end (slow last answers,
/// a saturated machine) before it is abandoned.
const PHASE_SLACK: Duration = Duration::from_secs(15);

/// Throughput at saturation.
#[derive(Debug, Clone, Serialize)]
pub struct Saturation {
    pub connections: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Verified echo answers completed inside the measured window.
    pub ok: u64,
    pub requests_per_s: f64,
    /// Failures by kind over the whole phase, warm-up included.
    pub errors: BTreeMap<String, u64>,
    pub reconnects: u64,
    /// Closed-loop latency of the counted calls (for context: at
    /// saturation it mostly measures queueing).
    pub latency: Percentiles,
}

/// Latency at a fixed request rate.
#[derive(Debug, Clone, Serialize)]
pub struct FixedRate {
    pub connections: usize,
    pub target_rate: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub ok: u64,
    pub achieved_rate: f64,
    pub errors: BTreeMap<String, u64>,
    /// Requests the schedule planned that were never sent because the
    /// phase ran out of time.
    pub not_sent: u64,
    pub latency: Percentiles,
    /// How late the load generator's timer woke for requests whose
    /// connection was idle; excluded from `latency` as the generator's
    /// own delay, reported so it can be judged.
    pub timer_lateness: Percentiles,
}

/// Opens `n` sessions concurrently.
pub async fn open_sessions(endpoint: &Endpoint, n: usize) -> anyhow::Result<Vec<McpConn>> {
    let mut set = JoinSet::new();
    for _ in 0..n {
        let endpoint = endpoint.clone();
        set.spawn(async move { McpConn::open_at(&endpoint, CALL_TIMEOUT).await });
    }
    let mut conns = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        let c = r
            .context("a session task failed")?
            .map_err(|e| anyhow::anyhow!("cannot open a session: {}", e.label()))?;
        conns.push(c);
    }
    Ok(conns)
}

#[derive(Default)]
struct WorkerOut {
    ok: u64,
    errors: BTreeMap<String, u64>,
    reconnects: u64,
    latencies_ns: Vec<u64>,
    lateness_ns: Vec<u64>,
    not_sent: u64,
}

impl WorkerOut {
    fn merge(&mut self, other: WorkerOut) {
        self.ok += other.ok;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.reconnects += other.reconnects;
        self.latencies_ns.extend(other.latencies_ns);
        self.lateness_ns.extend(other.lateness_ns);
        self.not_sent += other.not_sent;
    }
}

/// Runs `conns` sessions each calling `echo` back to back; counts the
/// verified answers that complete in the `duration` after `warmup`.
/// `at_window` is called once when the measured window opens and once when
/// it closes (to read CPU time and the like).
pub async fn saturate(
    endpoint: &Endpoint,
    conns: usize,
    warmup: Duration,
    duration: Duration,
    mut at_window: impl FnMut(),
) -> anyhow::Result<Saturation> {
    let sessions = open_sessions(endpoint, conns).await?;
    let start = Instant::now();
    let warm_end = start + warmup;
    let end = warm_end + duration;
    let mut set = JoinSet::new();
    for (k, conn) in sessions.into_iter().enumerate() {
        set.spawn(saturation_worker(conn, k, endpoint.clone(), warm_end, end));
    }
    tokio::time::sleep_until(warm_end.into()).await;
    at_window();
    tokio::time::sleep_until(end.into()).await;
    at_window();
    let out = join_workers(set, end + PHASE_SLACK).await?;
    let measured = duration.as_secs_f64();
    Ok(Saturation {
        connections: conns,
        warmup_s: warmup.as_secs_f64(),
        duration_s: measured,
        ok: out.ok,
        requests_per_s: out.ok as f64 / measured,
        errors: out.errors,
        reconnects: out.reconnects,
        latency: Percentiles::of(out.latencies_ns),
    })
}

async fn saturation_worker(
    mut conn: McpConn,
    k: usize,
    endpoint: Endpoint,
    warm_end: Instant,
    end: Instant,
) -> WorkerOut {
    let mut out = WorkerOut::default();
    let mut message = String::with_capacity(32);
    let mut seq = 0u64;
    while Instant::now() < end {
        seq += 1;
        message.clear();
        let _ = write!(message, "c{k}n{seq}");
        let sent = Instant::now();
        let result = conn.call_echo(&message).await;
        let done = Instant::now();
        let counted = done >= warm_end && done <= end;
        match result {
            Ok(()) if counted => {
                out.ok += 1;
                out.latencies_ns.push(nanos(done - sent));
            }
            Ok(()) => {}
            Err(e) => {
                *out.errors.entry(e.label()).or_default() += 1;
                if e.is_fatal() {
                    match reconnect(&endpoint, end).await {
                        Some(c) => {
                            conn = c;
                            out.reconnects += 1;
                        }
                        None => break,
                    }
                }
            }
        }
    }
    out
}

/// Runs `conns` sessions that together send `rate` calls per second, each
/// at its scheduled time (request i at `start + i / rate`, on session
/// `i % conns`). A request whose session was still busy at its scheduled
/// time is timed from that scheduled time, so a slow answer shows in the
/// latency of the requests queued behind it.
pub async fn fixed_rate(
    endpoint: &Endpoint,
    conns: usize,
    rate: f64,
    warmup: Duration,
    duration: Duration,
) -> anyhow::Result<FixedRate> {
    if rate <= 0.0 || !rate.is_finite() {
        bail!("the rate must be a positive number");
    }
    let sessions = open_sessions(endpoint, conns).await?;
    let start = Instant::now() + Duration::from_millis(20);
    let planned = warmup + duration;
    let plan = Plan {
        start,
        interval_s: 1.0 / rate,
        total: (planned.as_secs_f64() * rate).round() as u64,
        warm_count: (warmup.as_secs_f64() * rate).round() as u64,
        stride: conns as u64,
        give_up: start + planned + PHASE_SLACK,
    };
    let mut set = JoinSet::new();
    for (k, conn) in sessions.into_iter().enumerate() {
        set.spawn(rate_worker(conn, k as u64, endpoint.clone(), plan));
    }
    let out = join_workers(set, plan.give_up + CALL_TIMEOUT).await?;
    let measured = duration.as_secs_f64();
    Ok(FixedRate {
        connections: conns,
        target_rate: rate,
        warmup_s: warmup.as_secs_f64(),
        duration_s: measured,
        ok: out.ok,
        achieved_rate: out.ok as f64 / measured,
        errors: out.errors,
        not_sent: out.not_sent,
        latency: Percentiles::of(out.latencies_ns),
        timer_lateness: Percentiles::of(out.lateness_ns),
    })
}

#[derive(Debug, Clone, Copy)]
struct Plan {
    start: Instant,
    interval_s: f64,
    total: u64,
    warm_count: u64,
    stride: u64,
    give_up: Instant,
}

async fn rate_worker(mut conn: McpConn, k: u64, endpoint: Endpoint, plan: Plan) -> WorkerOut {
    let mut out = WorkerOut::default();
    let mut message = String::with_capacity(32);
    let mut prev_done = plan.start;
    let mut i = k;
    while i < plan.total {
        let scheduled = plan.start + Duration::from_secs_f64(plan.interval_s * i as f64);
        if Instant::now() > plan.give_up {
            out.not_sent += (plan.total - i).div_ceil(plan.stride);
            break;
        }
        if Instant::now() < scheduled {
            tokio::time::sleep_until(scheduled.into()).await;
        }
        let sent = Instant::now();
        // Busy at the scheduled time: the wait is the system's queueing.
        // Idle: any gap is the generator's timer waking late.
        let busy = prev_done > scheduled;
        let from = if busy { scheduled } else { sent };
        message.clear();
        let _ = write!(message, "r{k}n{i}");
        let result = conn.call_echo(&message).await;
        let done = Instant::now();
        prev_done = done;
        let counted = i >= plan.warm_count;
        match result {
            Ok(()) if counted => {
                out.ok += 1;
                out.latencies_ns.push(nanos(done - from));
                if !busy {
                    out.lateness_ns
                        .push(nanos(sent.saturating_duration_since(scheduled)));
                }
            }
            Ok(()) => {}
            Err(e) => {
                *out.errors.entry(e.label()).or_default() += 1;
                if e.is_fatal() {
                    match reconnect(&endpoint, plan.give_up).await {
                        Some(c) => {
                            conn = c;
                            out.reconnects += 1;
                        }
                        None => {
                            out.not_sent += (plan.total - i).div_ceil(plan.stride) - 1;
                            break;
                        }
                    }
                }
            }
        }
        i += plan.stride;
    }
    out
}

/// A fresh session after a transport failure, retried until `until`.
async fn reconnect(endpoint: &Endpoint, until: Instant) -> Option<McpConn> {
    while Instant::now() < until {
        if let Ok(c) = McpConn::open_at(endpoint, CALL_TIMEOUT).await {
            return Some(c);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

async fn join_workers(mut set: JoinSet<WorkerOut>, deadline: Instant) -> anyhow::Result<WorkerOut> {
    let mut all = WorkerOut::default();
    loop {
        match tokio::time::timeout_at(deadline.into(), set.join_next()).await {
            Ok(Some(r)) => all.merge(r.context("a load task failed")?),
            Ok(None) => return Ok(all),
            Err(_) => {
                set.abort_all();
                bail!("the phase did not finish by its deadline");
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
