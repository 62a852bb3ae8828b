//! What `/proc` tells about a process (resident memory, CPU time used) and
//! about the machine the figures were measured on.

use serde::Serialize;

/// Resident memory (`VmRSS`) of `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// The kernel's high-water mark of `pid`'s resident memory (`VmHWM`) in
/// KiB: the exact peak since start or since [`reset_peak_rss`], which no
/// sampling can miss.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// Resets `pid`'s high-water mark to its current resident memory (writing
/// `5` to `/proc/PID/clear_refs`, Linux 4.0 and later; allowed on our own
/// children).
pub fn reset_peak_rss(pid: u32) -> std::io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU time `pid` has used so far, in seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    cpu_seconds_of(&stat, clock_ticks())
}

/// CPU time of this process (the load generator).
pub fn own_cpu_seconds() -> Option<f64> {
    cpu_seconds(std::process::id())
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf reads a constant of the running system.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn cpu_seconds_of(stat: &str, ticks: f64) -> Option<f64> {
    // The command name (field 2) may contain spaces: fields are counted
    // after its closing parenthesis. utime and stime are fields 14 and 15.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks)
}

/// The processes whose parent is `pid`, with their command names.
pub fn children(pid: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let child: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
        let (ppid, comm) = parent_of(&stat)?;
        (ppid == pid).then(|| (child, comm.to_owned()))
    })
    .collect()
}

/// The parent pid (field 4) and command name (field 2) of a stat line.
fn parent_of(stat: &str) -> Option<(u32, &str)> {
    let comm = &stat[stat.find('(')? + 1..stat.rfind(')')?];
    let ppid = stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ppid, comm))
}

/// The 1-minute load average.
pub fn loadavg_1m() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The machine, as the report states it.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_mib: u64,
    pub kernel: String,
}

impl Machine {
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_mib = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            mem_total_mib,
            kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_a_command_name_with_spaces() {
        let stat = "42 (a b) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 1 1 1";
        assert_eq!(cpu_seconds_of(stat, 100.0), Some(3.0));
    }

    #[test]
    fn the_parent_is_read_after_a_command_name_with_spaces() {
        let stat = "42 (a) b) S 7 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 1 1 1";
        assert_eq!(parent_of(stat), Some((7, "a) b")));
    }

    #[test]
    fn this_process_has_a_resident_size_and_a_peak() {
        let pid = std::process::id();
        let rss = rss_kib(pid).unwrap_or(0);
        assert!(rss > 0);
        assert!(peak_rss_kib(pid).is_some_and(|p| p >= rss));
    }
}
