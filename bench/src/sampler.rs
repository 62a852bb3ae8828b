//! Samples the resident memory of some processes at a fixed period while
//! a phase runs, keeping each one's peak.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::procfs;

/// A running sampler; [`Sampler::stop`] returns the peaks in KiB.
#[derive(Debug)]
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<BTreeMap<String, u64>>,
}

impl Sampler {
    /// Samples `VmRSS` of each `(name, pid)` every `period`.
    pub fn start(pids: Vec<(String, u32)>, period: Duration) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut peaks: BTreeMap<String, u64> = BTreeMap::new();
            let mut tick = tokio::time::interval(period);
            loop {
                for (name, pid) in &pids {
                    if let Some(kib) = procfs::rss_kib(*pid) {
                        let peak = peaks.entry(name.clone()).or_default();
                        *peak = (*peak).max(kib);
                    }
                }
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = &mut stopped => return peaks,
                }
            }
        });
        Sampler { stop, task }
    }

    /// Stops sampling and returns the peaks.
    pub async fn stop(self) -> BTreeMap<String, u64> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}
