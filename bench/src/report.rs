//! The results of one run: the JSON written by `--out` and the Markdown
//! table printed at the end.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context as _;
use serde::Serialize;

use crate::load::{FixedRate, Saturation};
use crate::procfs::Machine;

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub label: Option<String>,
    pub unix_time: u64,
    pub machine: Machine,
    pub generator_threads: usize,
    pub loadavg_1m_before: Option<f64>,
    pub loadavg_1m_after: Option<f64>,
    /// How many times the target list was measured, in turn.
    pub rounds: usize,
    pub targets: Vec<TargetRun>,
    /// Each proxied target of each round against the same round's relay
    /// and direct path.
    pub summary: Vec<SummaryRow>,
    pub memory: Memory,
    /// mcpyard against the direct path (first round).
    pub comparison: Option<Comparison>,
    /// The byte-for-byte proxy against the direct path (first round).
    pub passthrough_comparison: Option<Comparison>,
    /// Lines in each governed target's audit trail at the end (the file and
    /// its rotated ones): the layer did write. Rotation deletes the oldest
    /// files past `keep`, so a long run keeps fewer lines than calls.
    pub audit_records: BTreeMap<String, u64>,
}

/// One path to the upstream, measured.
#[derive(Debug, Clone, Serialize)]
pub struct TargetRun {
    /// The target's name, with `#N` after it in round N > 1.
    pub name: String,
    /// `direct`, `passthrough`, `mcpyard`, `mcpyard-governed`, ...
    pub target: String,
    /// From 1.
    pub round: usize,
    pub saturation: Saturation,
    pub fixed_rate: FixedRate,
    /// CPU microseconds per counted call during the saturation window, by
    /// process (`generator`, `upstream`, and `proxy`: the target's proxy
    /// process alone; a stdio upstream, the gateway's child, is `upstream`).
    pub cpu_us_per_call: BTreeMap<String, f64>,
}

/// Resident memory (KiB) by process: after start, and peaks by phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Memory {
    pub idle_kib: BTreeMap<String, u64>,
    /// Peak per process while each target's saturation phase ran.
    pub saturation_peak_kib: BTreeMap<String, BTreeMap<String, u64>>,
    /// Peak per process while each target's fixed-rate phase ran.
    pub fixed_rate_peak_kib: BTreeMap<String, BTreeMap<String, u64>>,
    pub after_kib: BTreeMap<String, u64>,
    pub sample_period_ms: u64,
}

/// A proxied path against the direct path.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub throughput_ratio: f64,
    pub added_p50_us: f64,
    pub added_p90_us: f64,
    pub added_p99_us: f64,
}

impl Comparison {
    pub fn of(direct: &TargetRun, proxied: &TargetRun) -> Self {
        let d = &direct.fixed_rate.latency;
        let g = &proxied.fixed_rate.latency;
        Comparison {
            throughput_ratio: if direct.saturation.requests_per_s > 0.0 {
                proxied.saturation.requests_per_s / direct.saturation.requests_per_s
            } else {
                0.0
            },
            added_p50_us: g.p50_us - d.p50_us,
            added_p90_us: g.p90_us - d.p90_us,
            added_p99_us: g.p99_us - d.p99_us,
        }
    }
}

/// One proxied target in one round, against the relay and the direct path
/// of the same round (measured minutes apart at most, so the host's drift
/// falls on both).
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    pub name: String,
    pub target: String,
    pub round: usize,
    /// The proxy's own CPU µs per call at saturation.
    pub proxy_cpu_us_per_call: Option<f64>,
    /// That over the relay's (`passthrough`) of the same round.
    pub cpu_vs_relay: Option<f64>,
    /// Latency added at the fixed rate over `direct` of the same round.
    pub added_p50_us: Option<f64>,
    pub added_p99_us: Option<f64>,
}

/// The summary rows of every target run but the direct ones.
pub fn summarize(targets: &[TargetRun]) -> Vec<SummaryRow> {
    let in_round = |target: &str, round: usize| {
        targets
            .iter()
            .find(|t| t.target == target && t.round == round)
    };
    targets
        .iter()
        .filter(|t| t.target != "direct")
        .map(|t| {
            let cpu = t.cpu_us_per_call.get("proxy").copied();
            let relay = in_round("passthrough", t.round)
                .and_then(|p| p.cpu_us_per_call.get("proxy").copied())
                .filter(|r| *r > 0.0);
            let added = in_round("direct", t.round).map(|d| Comparison::of(d, t));
            SummaryRow {
                name: t.name.clone(),
                target: t.target.clone(),
                round: t.round,
                proxy_cpu_us_per_call: cpu,
                cpu_vs_relay: cpu.zip(relay).map(|(c, r)| c / r),
                added_p50_us: added.as_ref().map(|c| c.added_p50_us),
                added_p99_us: added.as_ref().map(|c| c.added_p99_us),
            }
        })
        .collect()
}

impl Run {
    /// The results as Markdown tables.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(s, "| | {} |", names.join(" | "));
        let _ = writeln!(s, "|---|{}", "---:|".repeat(names.len()));
        let row = |s: &mut String, label: &str, f: &dyn Fn(&TargetRun) -> String| {
            let cells: Vec<String> = self.targets.iter().map(f).collect();
            let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
        };
        if let Some(t) = self.targets.first() {
            let sat = &t.saturation;
            let fr = &t.fixed_rate;
            row(
                &mut s,
                &format!("throughput, {} connections (calls/s)", sat.connections),
                &|t| format!("{:.0}", t.saturation.requests_per_s),
            );
            row(&mut s, "  latency at saturation p50 / p99 (µs)", &|t| {
                format!(
                    "{:.0} / {:.0}",
                    t.saturation.latency.p50_us, t.saturation.latency.p99_us
                )
            });
            row(&mut s, "  errors at saturation", &|t| {
                error_cell(&t.saturation.errors)
            });
            row(
                &mut s,
                &format!(
                    "latency at {:.0} calls/s, {} connections: achieved rate",
                    fr.target_rate, fr.connections
                ),
                &|t| format!("{:.0}", t.fixed_rate.achieved_rate),
            );
            for (label, get) in [
                (
                    "  p50 (µs)",
                    (|p| p.p50_us) as fn(&crate::stats::Percentiles) -> f64,
                ),
                ("  p90 (µs)", |p| p.p90_us),
                ("  p99 (µs)", |p| p.p99_us),
                ("  max (µs)", |p| p.max_us),
            ] {
                row(&mut s, label, &|t| {
                    format!("{:.0}", get(&t.fixed_rate.latency))
                });
            }
            row(&mut s, "  errors at fixed rate", &|t| {
                error_cell(&t.fixed_rate.errors)
            });
            for who in ["generator", "upstream", "proxy"] {
                row(&mut s, &format!("CPU µs per call: {who}"), &|t| {
                    t.cpu_us_per_call
                        .get(who)
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"))
                });
            }
        }
        s.push('\n');
        for (name, c) in [
            ("passthrough", &self.passthrough_comparison),
            ("mcpyard", &self.comparison),
        ] {
            if let Some(c) = c {
                let _ = writeln!(
                    s,
                    "- {name} / direct throughput: **{:.2}×**; added latency at the fixed rate: \
                     p50 **{:+.0} µs**, p90 {:+.0} µs, p99 **{:+.0} µs**",
                    c.throughput_ratio, c.added_p50_us, c.added_p90_us, c.added_p99_us
                );
            }
        }
        self.summary_table(&mut s);
        let m = &self.memory;
        // Each gateway's own process, at its peak over its own rounds.
        for (gateway, idle) in m
            .idle_kib
            .iter()
            .filter(|(n, _)| n.starts_with("mcpyard") && !n.contains('/'))
        {
            let peak = |phases: &BTreeMap<String, BTreeMap<String, u64>>| {
                self.targets
                    .iter()
                    .filter(|t| t.target == *gateway)
                    .filter_map(|t| phases.get(&t.name)?.get(gateway).copied())
                    .max()
                    .map_or_else(|| "–".to_owned(), mib)
            };
            let after = m
                .after_kib
                .get(gateway)
                .map_or_else(|| "–".to_owned(), |k| mib(*k));
            let _ = writeln!(
                s,
                "\n{gateway} resident memory (VmRSS): idle {}, peak under saturation {}, \
                 peak at the fixed rate {}, after the run {} (sampled every {} ms)",
                mib(*idle),
                peak(&m.saturation_peak_kib),
                peak(&m.fixed_rate_peak_kib),
                after,
                m.sample_period_ms
            );
        }
        s
    }

    /// One row per proxied target, each cell its rounds in order.
    fn summary_table(&self, s: &mut String) {
        if self.summary.is_empty() {
            return;
        }
        let mut order: Vec<&str> = Vec::new();
        for r in &self.summary {
            if !order.contains(&r.target.as_str()) {
                order.push(&r.target);
            }
        }
        let rate = self
            .targets
            .first()
            .map_or(0.0, |t| t.fixed_rate.target_rate);
        let rounds = if self.rounds > 1 {
            let n: Vec<String> = (1..=self.rounds).map(|r| r.to_string()).collect();
            format!(", rounds {}", n.join(" / "))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "\nPer target{rounds}: the proxy's own CPU per call at saturation; ×relay, \
             that over passthrough's in the same round; latency added at {rate:.0} calls/s \
             over direct in the same round.\n"
        );
        let _ = writeln!(
            s,
            "| | CPU µs per call: proxy | ×relay | added p50 (µs) | added p99 (µs) |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|");
        for target in order {
            let rows: Vec<&SummaryRow> =
                self.summary.iter().filter(|r| r.target == target).collect();
            let cell = |f: &dyn Fn(&SummaryRow) -> Option<String>| {
                rows.iter()
                    .map(|r| f(r).unwrap_or_else(|| "–".to_owned()))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let _ = writeln!(
                s,
                "| {target} | {} | {} | {} | {} |",
                cell(&|r| r.proxy_cpu_us_per_call.map(|v| format!("{v:.1}"))),
                cell(&|r| r.cpu_vs_relay.map(|v| format!("{v:.2}×"))),
                cell(&|r| r.added_p50_us.map(|v| format!("{v:+.0}"))),
                cell(&|r| r.added_p99_us.map(|v| format!("{v:+.0}"))),
            );
        }
    }
}

fn error_cell(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        return "0".to_owned();
    }
    errors
        .iter()
        .map(|(k, v)| format!("{v} × {k}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Writes a run's results as pretty JSON to `out`, making its folder.
pub fn write_json(out: &std::path::Path, run: &impl Serialize) -> anyhow::Result<()> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let json = serde_json::to_string_pretty(run).context("cannot encode the results")?;
    std::fs::write(out, json + "\n").with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!("results written to {}", out.display());
    Ok(())
}
