//! CPU time and memory of processes, read from /proc (Linux): the manager
//! reports its own in `status` answers, and `libratory loadtest` samples
//! the node processes that run on its own host.
//!
//! Not here: deciding which processes to watch (the load test does).

use std::path::Path;

use common::protocol::ProcessUsage;

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcSample {
    /// Process id.
    pub pid: u32,
    /// User plus system CPU time since it started (s).
    pub cpu_seconds: f64,
    /// Resident memory now (KiB).
    pub rss_kb: u64,
    /// Peak resident memory (KiB).
    pub peak_rss_kb: u64,
}

/// Clock ticks per second of /proc's CPU times.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Parses the CPU time (utime + stime, fields 14 and 15) out of the text
/// of `/proc/<pid>/stat`, in clock ticks. The command name (field 2) may
/// hold spaces and parentheses: fields are counted after its last `)`.
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Reads a `VmRSS:`-style line (KiB) out of `/proc/<pid>/status` text.
pub fn parse_status_kb(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Reads process `pid` from /proc; `None` if it is not there (gone, not on
/// this host, or not Linux).
pub fn sample(pid: u32) -> Option<ProcSample> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    Some(ProcSample {
        pid,
        cpu_seconds: parse_stat_ticks(&stat)? as f64 / clock_ticks(),
        rss_kb: parse_status_kb(&status, "VmRSS:").unwrap_or(0),
        peak_rss_kb: parse_status_kb(&status, "VmHWM:").unwrap_or(0),
    })
}

/// This process's own use, as the manager puts it in a status answer.
pub fn own_usage() -> ProcessUsage {
    let pid = std::process::id();
    let s = sample(pid);
    ProcessUsage {
        pid,
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        cpu_seconds: s.map_or(0.0, |s| s.cpu_seconds),
        rss_kb: s.map_or(0, |s| s.rss_kb),
        peak_rss_kb: s.map_or(0, |s| s.peak_rss_kb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "1234 (a b) c)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4 0";
        assert_eq!(parse_stat_ticks(stat), Some(300));
        assert_eq!(
            parse_status_kb("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n", "VmRSS:"),
            Some(1024)
        );
    }

    #[test]
    fn own_process_is_read() {
        if cfg!(target_os = "linux") {
            let s = sample(std::process::id()).unwrap();
            assert!(s.rss_kb > 0 && s.peak_rss_kb >= s.rss_kb);
        }
    }
}
