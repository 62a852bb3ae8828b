//! A fine-grained trace of one process's resident memory: a plain thread
//! reads `VmRSS` every few milliseconds (a tokio timer would be late
//! whenever the runtime is busy with the very call being traced), keeping
//! every sample with its time, so a report can show baseline, peak and
//! what is left afterwards.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::procfs;

/// One reading: milliseconds since the trace's origin, and `VmRSS` in KiB.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RssSample {
    pub t_ms: f64,
    pub kib: u64,
}

/// A running trace; [`RssTrace::stop`] returns the samples.
#[derive(Debug)]
pub struct RssTrace {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<RssSample>>>,
}

impl RssTrace {
    /// Samples `pid` every `period`, timing samples from `origin`.
    pub fn start(pid: u32, period: Duration, origin: Instant) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::with_capacity(1024);
            let mut next = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                if let Some(kib) = procfs::rss_kib(pid) {
                    samples.push(RssSample {
                        t_ms: origin.elapsed().as_secs_f64() * 1e3,
                        kib,
                    });
                }
                // Fixed-rate ticks: a slow read does not shift the schedule.
                next += period;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
            samples
        });
        RssTrace {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling and returns the samples in time order.
    pub fn stop(mut self) -> Vec<RssSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for RssTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process_at_the_period() {
        let origin = Instant::now();
        let trace = RssTrace::start(std::process::id(), Duration::from_millis(5), origin);
        std::thread::sleep(Duration::from_millis(100));
        let samples = trace.stop();
        // 100 ms at 5 ms: about 20, fewer only if the machine stalls.
        assert!(samples.len() >= 5, "{} samples", samples.len());
        assert!(samples.iter().all(|s| s.kib > 0));
        assert!(samples.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
    }
}
