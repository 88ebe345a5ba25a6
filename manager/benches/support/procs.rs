//! What `live_latency` measures of its processes and the host: the CPU
//! budget, CPU time and memory from /proc, how busy the host is, and the
//! guard that stops the children.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The CPU time the bench's processes may use, in CPUs.
pub struct CpuBudget {
    /// CPUs (a fraction under a quota).
    pub cpus: f64,
    /// A cgroup CPU quota set it (below the CPUs this process may run on).
    pub quota: bool,
}

impl CpuBudget {
    /// The CPUs, and where a quota set them.
    pub fn describe(&self) -> String {
        if self.quota {
            format!("{:.2} (cgroup CPU quota)", self.cpus)
        } else {
            format!("{}", self.cpus)
        }
    }
}

/// The CPUs this process may run on, or less where its cgroup (or one
/// above it) has a CPU quota: cgroup v1 `cpu.cfs_quota_us` /
/// `cpu.cfs_period_us`, v2 `cpu.max`. A quota may be a fraction of a CPU
/// (`available_parallelism` rounds it down, and said "1" for 1.5 CPUs);
/// children inherit the cgroup, so the node processes and the manager run
/// under the same quota.
pub fn cpu_budget() -> CpuBudget {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call.
    let online = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            libc::CPU_COUNT(&set) as f64
        } else {
            1.0
        }
    };
    let mut quota = f64::INFINITY;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "cpu") {
            continue;
        }
        let root = if v2 {
            PathBuf::from("/sys/fs/cgroup")
        } else {
            PathBuf::from(format!("/sys/fs/cgroup/{controllers}"))
        };
        // This cgroup and every one above it: the tightest quota binds.
        let mut dir = root.join(path.trim_start_matches('/'));
        loop {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let q = if v2 {
                read("cpu.max").and_then(|t| {
                    let mut w = t.split_whitespace();
                    let (q, p) = (
                        w.next()?.parse::<f64>().ok()?,
                        w.next()?.parse::<f64>().ok()?,
                    );
                    Some(q / p)
                })
            } else {
                read("cpu.cfs_quota_us")
                    .zip(read("cpu.cfs_period_us"))
                    .and_then(|(q, p)| {
                        let (q, p) = (q.trim().parse::<f64>().ok()?, p.trim().parse::<f64>().ok()?);
                        (q > 0.0).then(|| q / p)
                    })
            };
            if let Some(q) = q {
                quota = quota.min(q);
            }
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    if quota < online {
        CpuBudget {
            cpus: quota,
            quota: true,
        }
    } else {
        CpuBudget {
            cpus: online,
            quota: false,
        }
    }
}

/// The bench's child processes, interrupted and then killed when it
/// lets go of them.
pub struct Kill(pub Vec<Child>);

impl Drop for Kill {
    fn drop(&mut self) {
        // Interrupt (the manager then writes its results), wait a while,
        // then make sure nothing is left running.
        for c in &mut self.0 {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
        }
        let end = Instant::now() + Duration::from_secs(15);
        for c in &mut self.0 {
            while Instant::now() < end && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Resident memory of a process now (KiB, VmRSS from /proc).
pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse().unwrap_or(0)))
        })
        .unwrap_or(0)
}

/// How busy the host is, measured on its cost of the two things every
/// accepted job pays for that depend on it: a read of the thread CPU clock
/// (the node's burn reads it) and a bare syscall. On this VM both swing
/// several-fold with the load of the machine under it (a clock read
/// 110-200 ns quiet, 650-900 ns busy), and the CPU per job swings with them:
/// print them beside the figures so runs can be told apart.
pub fn host_probe() -> String {
    fn per_call_ns(mut f: impl FnMut()) -> f64 {
        // Median of 21 rounds of 2,000 calls, in wall time (nothing else
        // runs on this thread).
        let mut rounds: Vec<f64> = (0..21)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..2_000 {
                    f();
                }
                t.elapsed().as_nanos() as f64 / 2_000.0
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        rounds[10]
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes a timespec we own.
    let clock = per_call_ns(|| unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    });
    // SAFETY: getppid takes no arguments and cannot fail.
    let syscall = per_call_ns(|| unsafe {
        libc::syscall(libc::SYS_getppid);
    });
    format!("a thread-CPU-clock read {clock:.0} ns (110-200 ns on this VM when quiet), a bare syscall {syscall:.0} ns")
}

/// CPU time of a process to the ns: its threads' run time as the
/// scheduler counts it (`/proc/PID/task/*/schedstat`), where `/proc/PID/stat`
/// counts 10 ms ticks, too coarse for a 0.1 s slot. Threads that ended
/// are not counted (the manager's live for the run).
pub fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| {
                let s = std::fs::read_to_string(e.ok()?.path().join("schedstat")).ok()?;
                s.split_whitespace().next()?.parse::<u64>().ok()
            })
            .sum()
        })
        .unwrap_or(0)
}

/// User plus system CPU seconds of a process (Linux /proc).
pub fn cpu_s(pid: u32) -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command name (which may hold spaces).
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f[11].parse::<f64>().ok()? + f[12].parse::<f64>().ok()?) / tick)
        })
        .unwrap_or(0.0)
}
