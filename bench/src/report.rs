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
    pub targets: Vec<TargetRun>,
    pub memory: Memory,
    /// mcpyard against the direct path.
    pub comparison: Option<Comparison>,
    /// The byte-for-byte proxy against the direct path.
    pub passthrough_comparison: Option<Comparison>,
}

/// One path to the upstream, measured.
#[derive(Debug, Clone, Serialize)]
pub struct TargetRun {
    /// `direct` or `mcpyard`.
    pub name: String,
    pub saturation: Saturation,
    pub fixed_rate: FixedRate,
    /// CPU microseconds per counted call during the saturation window, by
    /// process (`generator`, `upstream`, and `proxy`: the target's proxy).
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
        let m = &self.memory;
        if let Some(idle) = m.idle_kib.get("mcpyard") {
            let peak = |phases: &BTreeMap<String, BTreeMap<String, u64>>| {
                phases
                    .get("mcpyard")
                    .and_then(|p| p.get("mcpyard"))
                    .map_or_else(|| "–".to_owned(), |k| mib(*k))
            };
            let after = m
                .after_kib
                .get("mcpyard")
                .map_or_else(|| "–".to_owned(), |k| mib(*k));
            let _ = writeln!(
                s,
                "\nmcpyard resident memory (VmRSS): idle {}, peak under saturation {}, \
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
