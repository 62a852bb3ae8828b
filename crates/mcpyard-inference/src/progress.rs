//! A call's progress notifications, kept growing across everything the
//! call does.

use std::sync::Mutex;

/// Sends a call's progress notifications so that they only ever grow, as
/// the MCP spec requires, across everything the call does (a download,
/// then generated tokens) however the servers' own counters move.
#[derive(Debug)]
pub(crate) struct Reporter {
    progress: mcpyard_gateway::Progress,
    last: Mutex<f64>,
}

impl Reporter {
    pub(crate) fn new(progress: mcpyard_gateway::Progress) -> Self {
        Self {
            progress,
            last: Mutex::new(0.0),
        }
    }

    /// Whether the client asked for progress.
    pub(crate) fn is_active(&self) -> bool {
        self.progress.is_active()
    }

    /// Reports `value` when it is past the last value reported.
    pub(crate) async fn report(&self, value: f64, total: Option<f64>, message: &str) {
        let grew = {
            let mut last = self.last.lock().expect("progress lock poisoned");
            let grew = value.is_finite() && value > *last;
            if grew {
                *last = value;
            }
            grew
        };
        if grew {
            self.progress.report(value, total, Some(message)).await;
        }
    }

    /// Reports one step more than the last value (a generated token).
    pub(crate) async fn advance(&self, message: &str) {
        let value = {
            let mut last = self.last.lock().expect("progress lock poisoned");
            *last += 1.0;
            *last
        };
        self.progress.report(value, None, Some(message)).await;
    }
}
