//! The results of one run of `mcpyard-bench-inference`: chat latency
//! directly against a real inference server and through mcpyard, and
//! mcpyard's resident memory while a large image goes through
//! `local__analyze_image`. Written as JSON by `--out`, printed as Markdown.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::memtrace::RssSample;
use crate::procfs::Machine;
use crate::stats::Percentiles;

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct InferenceRun {
    pub label: Option<String>,
    pub unix_time: u64,
    pub machine: Machine,
    pub loadavg_1m_before: Option<f64>,
    pub loadavg_1m_after: Option<f64>,
    pub chat: Option<ChatRun>,
    pub image: Option<ImageRun>,
}

/// Sequential chat completions, direct and through mcpyard, interleaved.
#[derive(Debug, Clone, Serialize)]
pub struct ChatRun {
    pub model: String,
    pub messages: Value,
    pub max_tokens: u32,
    pub seed: u64,
    pub warmup_calls: usize,
    /// Calls measured on each path.
    pub calls: usize,
    /// `POST /v1/chat/completions` straight to the server.
    pub direct: Percentiles,
    /// `tools/call local__chat` through mcpyard.
    pub mcpyard: Percentiles,
    /// mcpyard's percentile minus the direct one.
    pub added_p50_us: f64,
    pub added_p90_us: f64,
    pub added_p99_us: f64,
    /// Percentiles of (mcpyard − direct) over the pairs of calls made one
    /// right after the other: robust to the server's own drift.
    pub paired_added_p10_us: f64,
    pub paired_added_p50_us: f64,
    pub paired_added_p90_us: f64,
    /// Pairs whose two answers had the same text (greedy decoding of the
    /// same request must give the same text).
    pub same_text: usize,
    /// CPU microseconds per measured call, by process, over the measured
    /// window: `mcpyard` per call through it, `server` per call on either
    /// path.
    pub cpu_us_per_call: BTreeMap<String, f64>,
    /// mcpyard's `VmRSS` before and after the measured calls.
    pub mcpyard_rss_kib_before: Option<u64>,
    pub mcpyard_rss_kib_after: Option<u64>,
}

/// mcpyard's memory around large `local__analyze_image` calls.
#[derive(Debug, Clone, Serialize)]
pub struct ImageRun {
    /// The PNG sent: its size in bytes and pixels.
    pub image_bytes: usize,
    pub image_width: u32,
    pub image_height: u32,
    /// Its base64 length, and the MCP request body of each mode.
    pub base64_bytes: usize,
    pub sample_period_ms: u64,
    pub modes: Vec<ImageMode>,
}

/// One way of sending the image, repeated.
#[derive(Debug, Clone, Serialize)]
pub struct ImageMode {
    /// `original` (no preprocessing) or `grayscale`.
    pub name: String,
    pub request_bytes: usize,
    /// `VmRSS` of this mode's fresh mcpyard after start and a warm-up call
    /// with a small image.
    pub idle_kib: Option<u64>,
    pub calls: Vec<ImageCall>,
}

/// One call, traced.
#[derive(Debug, Clone, Serialize)]
pub struct ImageCall {
    /// Median `VmRSS` over the quiet time before the call.
    pub baseline_kib: u64,
    /// The highest sample.
    pub peak_sampled_kib: u64,
    /// The kernel's high-water mark (`VmHWM`), reset just before the call.
    pub peak_hwm_kib: Option<u64>,
    /// The larger of the two.
    pub peak_kib: u64,
    /// `VmRSS` at the end of the quiet time after the call.
    pub after_kib: u64,
    pub duration_ms: f64,
    /// When the request was sent and the answer read, on the trace's clock.
    pub sent_ms: f64,
    pub answered_ms: f64,
    /// What the stand-in said it received.
    pub answer: String,
    pub trace: Vec<RssSample>,
}

impl ImageCall {
    pub fn added_kib(&self) -> u64 {
        self.peak_kib.saturating_sub(self.baseline_kib)
    }
}

impl ImageMode {
    /// The call with the largest peak − baseline.
    pub fn worst(&self) -> Option<&ImageCall> {
        self.calls.iter().max_by_key(|c| c.added_kib())
    }
}

/// Nearest-rank percentile `p` of signed samples in nanoseconds, in µs.
pub fn signed_percentile_us(sorted_ns: &[i64], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let n = sorted_ns.len();
    let r = ((p / 100.0) * n as f64).ceil() as usize;
    sorted_ns[r.clamp(1, n) - 1] as f64 / 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl InferenceRun {
    /// The results as Markdown tables.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let m = &self.machine;
        let _ = writeln!(
            s,
            "machine: {} × {}, {} MiB, Linux {}; load average {:?} → {:?}\n",
            m.nproc,
            m.cpu_model,
            m.mem_total_mib,
            m.kernel,
            self.loadavg_1m_before,
            self.loadavg_1m_after
        );
        if let Some(c) = &self.chat {
            let _ = writeln!(
                s,
                "### chat: {} sequential calls per path (after {} warm-up), `{}`, max_tokens {}\n",
                c.calls, c.warmup_calls, c.model, c.max_tokens
            );
            s.push_str("| | direct | through mcpyard | added |\n|---|---:|---:|---:|\n");
            let rows = [
                (
                    "p50 (µs)",
                    c.direct.p50_us,
                    c.mcpyard.p50_us,
                    c.added_p50_us,
                ),
                (
                    "p90 (µs)",
                    c.direct.p90_us,
                    c.mcpyard.p90_us,
                    c.added_p90_us,
                ),
                (
                    "p99 (µs)",
                    c.direct.p99_us,
                    c.mcpyard.p99_us,
                    c.added_p99_us,
                ),
                (
                    "mean (µs)",
                    c.direct.mean_us,
                    c.mcpyard.mean_us,
                    c.mcpyard.mean_us - c.direct.mean_us,
                ),
                (
                    "max (µs)",
                    c.direct.max_us,
                    c.mcpyard.max_us,
                    c.mcpyard.max_us - c.direct.max_us,
                ),
            ];
            for (name, d, g, a) in rows {
                let _ = writeln!(s, "| {name} | {d:.0} | {g:.0} | {a:+.0} |");
            }
            let _ = writeln!(
                s,
                "\nadded per pair of calls (mcpyard − direct, back to back): p10 {:+.0} µs, p50 {:+.0} µs, p90 {:+.0} µs; same text in {}/{} pairs",
                c.paired_added_p10_us, c.paired_added_p50_us, c.paired_added_p90_us, c.same_text, c.calls
            );
            let cpu: Vec<String> = c
                .cpu_us_per_call
                .iter()
                .map(|(k, v)| format!("{k} {v:.0} µs"))
                .collect();
            let _ = writeln!(s, "CPU per call: {}\n", cpu.join(", "));
        }
        if let Some(i) = &self.image {
            let _ = writeln!(
                s,
                "### image: {} × {} PNG, {} bytes ({:.2} MiB), base64 {} bytes; a fresh mcpyard per mode; samples every {} ms\n",
                i.image_width,
                i.image_height,
                i.image_bytes,
                i.image_bytes as f64 / 1048576.0,
                i.base64_bytes,
                i.sample_period_ms
            );
            let times = |kib: u64| (kib * 1024) as f64 / i.image_bytes as f64;
            s.push_str("| mode | call | idle (MiB) | baseline (MiB) | peak (MiB) | peak − baseline (MiB) | × image | peak − idle (MiB) | × image | after (MiB) | time (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for mode in &i.modes {
                let idle = mode.idle_kib.unwrap_or(0);
                for (n, c) in mode.calls.iter().enumerate() {
                    let added = c.added_kib();
                    let over_idle = c.peak_kib.saturating_sub(idle);
                    let _ = writeln!(
                        s,
                        "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} |",
                        mode.name,
                        n + 1,
                        mib(idle),
                        mib(c.baseline_kib),
                        mib(c.peak_kib),
                        mib(added),
                        times(added),
                        mib(over_idle),
                        times(over_idle),
                        mib(c.after_kib),
                        c.duration_ms
                    );
                }
            }
            s.push('\n');
            for mode in &i.modes {
                if let Some(w) = mode.worst() {
                    let added = w.added_kib();
                    let _ = writeln!(
                        s,
                        "{} ({:.1} MB request): max peak − baseline {:.1} MiB = {:.1} × the image",
                        mode.name,
                        mode.request_bytes as f64 / 1e6,
                        mib(added),
                        times(added)
                    );
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_percentiles_keep_negative_differences() {
        let v = [-3000, -1000, 0, 2000, 5000];
        assert_eq!(signed_percentile_us(&v, 10.0), -3.0);
        assert_eq!(signed_percentile_us(&v, 50.0), 0.0);
        assert_eq!(signed_percentile_us(&v, 100.0), 5.0);
        assert_eq!(signed_percentile_us(&[], 50.0), 0.0);
    }
}
