//! The kernel baseline: the same CPU-burning work run as OS processes under
//! the kernel's CPU bandwidth control (CFS quota), so the user-space slicer
//! can be compared with what the OS does on the same targets.
//!
//! Each part is a forked child process in its own cgroup with
//! `quota = share x capacity x period`: cgroup v1 `cpu.cfs_quota_us` /
//! `cpu.cfs_period_us`, or cgroup v2 `cpu.max`. Processes rather than
//! threads because cgroup v2 only takes whole processes into a domain
//! cgroup, and one code path for both is one thing to trust. The child does
//! nothing but spin, read clocks and write one result to a pipe (all
//! async-signal-safe, as a child forked from a threaded process must).
//!
//! Quotas are caps, not guarantees: a part gets its share only if the host
//! has the cycles. The cgroups are created under the cpu hierarchy's root
//! and removed when the run ends, also on error.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use thiserror::Error;

use crate::clock::{monotonic_ns, process_cpu_ns};
use crate::exec::{iters_per_ns, spin};

/// The smallest CFS quota the kernel accepts (us).
pub const MIN_QUOTA_US: u64 = 1000;

/// The cgroup CPU controller this host offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupCpu {
    /// cgroup v1 `cpu` hierarchy mounted at this directory.
    V1(PathBuf),
    /// cgroup v2 hierarchy with the `cpu` controller, at this directory.
    V2(PathBuf),
}

/// Why the kernel baseline cannot run.
#[derive(Debug, Error)]
pub enum KernelError {
    /// The host offers no cgroup CPU bandwidth control.
    #[error(
        "kernel baseline unavailable: {0} (needs a cgroup v1 'cpu' hierarchy with \
         cpu.cfs_quota_us, or cgroup v2 with the 'cpu' controller and cpu.max, writable by this user)"
    )]
    Unavailable(String),
    /// A cgroup file or directory could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A share too small for the kernel at this period.
    #[error(
        "part {part}: quota {quota_us} us is below the kernel's minimum {MIN_QUOTA_US} us; \
         use a longer period or a larger share"
    )]
    QuotaTooSmall {
        /// The part's index.
        part: usize,
        /// The quota it would need.
        quota_us: u64,
    },
    /// fork or pipe failed.
    #[error("{what}: {source}")]
    Os {
        /// The call.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The pipe to or from a part's child process failed.
    #[error("part {part} (child process {pid}): {what}: {source}")]
    Child {
        /// The part's index.
        part: usize,
        /// The child's process id.
        pid: libc::pid_t,
        /// What was being done.
        what: &'static str,
        /// The OS error (`UnexpectedEof` when the child closed the pipe).
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> KernelError + '_ {
    move |source| KernelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Finds the cgroup CPU controller from `/proc/self/mountinfo`: v2 if its
/// root lists `cpu` in `cgroup.controllers`, else a v1 hierarchy mounted
/// with the `cpu` option.
pub fn detect() -> Result<CgroupCpu, KernelError> {
    let info = fs::read_to_string("/proc/self/mountinfo")
        .map_err(io_err(Path::new("/proc/self/mountinfo")))?;
    let mut v1 = None;
    let mut v2 = None;
    let mut seen = Vec::new();
    for line in info.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mount_point = left.split(' ').nth(4).unwrap_or("");
        let mut r = right.split(' ');
        let fstype = r.next().unwrap_or("");
        let superopts = r.nth(1).unwrap_or("");
        match fstype {
            "cgroup2" => {
                let ctl = fs::read_to_string(Path::new(mount_point).join("cgroup.controllers"))
                    .unwrap_or_default();
                if ctl.split_whitespace().any(|c| c == "cpu") {
                    v2.get_or_insert(PathBuf::from(mount_point));
                } else {
                    seen.push(format!(
                        "cgroup v2 at {mount_point} without the cpu controller"
                    ));
                }
            }
            "cgroup" if superopts.split(',').any(|o| o == "cpu") => {
                if Path::new(mount_point).join("cpu.cfs_quota_us").exists() {
                    v1.get_or_insert(PathBuf::from(mount_point));
                } else {
                    seen.push(format!(
                        "cgroup v1 cpu at {mount_point} without cpu.cfs_quota_us"
                    ));
                }
            }
            _ => {}
        }
    }
    let found = match (v2, v1) {
        (Some(p), _) => Some(CgroupCpu::V2(p)),
        (None, Some(p)) => Some(CgroupCpu::V1(p)),
        (None, None) => None,
    };
    if let Some(cg) = found {
        // Present is not enough: we must be allowed to create cgroups.
        let root = match &cg {
            CgroupCpu::V1(p) | CgroupCpu::V2(p) => p,
        };
        let probe = root.join(format!("libratory-probe-{}", std::process::id()));
        return match fs::create_dir(&probe) {
            Ok(()) => {
                let _ = fs::remove_dir(&probe);
                Ok(cg)
            }
            Err(e) => Err(KernelError::Unavailable(format!(
                "cannot create a cgroup under {}: {e}",
                root.display()
            ))),
        };
    }
    if seen.is_empty() {
        seen.push("no cgroup mount with a cpu controller in /proc/self/mountinfo".into());
    }
    Err(KernelError::Unavailable(seen.join("; ")))
}

/// One part's outcome under the kernel's control.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelPartResult {
    /// The share asked for (of the node's capacity).
    pub share: f64,
    /// Processor time the process burned (ns).
    pub cpu_ns: u64,
    /// Wall time it ran (ns).
    pub wall_ns: u64,
}

impl KernelPartResult {
    /// Delivered share of a node of `capacity`: cpu / (capacity x wall).
    pub fn delivered(&self, capacity: f64) -> f64 {
        self.cpu_ns as f64 / (capacity * self.wall_ns as f64)
    }
}

/// A child process and its cgroup, removed (killed, reaped, rmdir'd) on
/// drop so that an error half-way leaves nothing behind.
struct Child {
    pid: libc::pid_t,
    start_w: libc::c_int,
    result_r: libc::c_int,
    cgroup: PathBuf,
    reaped: bool,
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: plain syscalls on our own child and our own descriptors.
        unsafe {
            if !self.reaped && self.pid > 0 {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
            libc::close(self.start_w);
            libc::close(self.result_r);
        }
        // The cgroup is empty once the child is reaped.
        remove_cgroup(&self.cgroup);
    }
}

fn pipe() -> Result<(libc::c_int, libc::c_int), KernelError> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-int array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(KernelError::Os {
            what: "pipe",
            source: std::io::Error::last_os_error(),
        });
    }
    Ok((fds[0], fds[1]))
}

/// The child's whole life: wait for the start byte, spin for `window_ns` of
/// wall time, write its CPU time, exit. Only async-signal-safe calls.
fn child_main(start_r: libc::c_int, result_w: libc::c_int, window_ns: u64, chunk: u64) -> ! {
    let mut b = 0u8;
    // SAFETY: reading one byte into a valid buffer; _exit never returns.
    unsafe {
        if libc::read(start_r, (&mut b as *mut u8).cast(), 1) != 1 {
            libc::_exit(2);
        }
    }
    let cpu0 = process_cpu_ns();
    let end = monotonic_ns() + window_ns;
    let mut x = cpu0 | 1;
    while monotonic_ns() < end {
        x = spin(x, chunk);
    }
    std::hint::black_box(x);
    let cpu = process_cpu_ns() - cpu0;
    let bytes = cpu.to_ne_bytes();
    // SAFETY: writing 8 bytes from a valid buffer; _exit never returns.
    // A failed write exits non-zero and closes the pipe: the parent reads
    // end of file and says so.
    unsafe {
        let status = if libc::write(result_w, bytes.as_ptr().cast(), 8) == 8 {
            0
        } else {
            3
        };
        libc::_exit(status);
    }
}

/// Writes all of `buf` to the pipe `fd`, again after a signal: a start
/// byte that is not sent leaves the child, and the parent reading its
/// result, waiting for ever.
fn write_fd(fd: libc::c_int, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: writing from a valid buffer of buf.len() bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            buf = &buf[n as usize..];
        }
    }
    Ok(())
}

/// Fills `buf` from the pipe `fd`, again after a signal; end of file
/// before it is full is an `UnexpectedEof` error.
fn read_fd(fd: libc::c_int, buf: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: reading into a valid buffer of rest.len() bytes.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match n {
            0 => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the pipe closed after {got} of {} bytes", buf.len()),
                ))
            }
            n if n < 0 => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => got += n as usize,
        }
    }
    Ok(())
}

static RUN_SEQ: AtomicU64 = AtomicU64::new(0);

/// A cgroup directory we created, removed on drop once empty.
struct CgroupDir(PathBuf);

impl CgroupDir {
    fn create(path: PathBuf) -> Result<Self, KernelError> {
        fs::create_dir(&path).map_err(io_err(&path))?;
        Ok(CgroupDir(path))
    }
}

impl Drop for CgroupDir {
    fn drop(&mut self) {
        remove_cgroup(&self.0);
    }
}

fn remove_cgroup(path: &Path) {
    // A failure is reported as a leftover directory, not a panic in drop.
    if let Err(e) = fs::remove_dir(path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            eprintln!(
                "libratory-node: could not remove cgroup {}: {e}",
                path.display()
            );
        }
    }
}

/// Threads of this process moved into a cgroup of their own (no quota) for
/// as long as this value lives; on drop they go back to the root and the
/// cgroup is removed.
///
/// The benchmarks put the executor threads in one, so that the user-space
/// node competes with the rest of the host as one group, exactly as the
/// kernel baseline's node cgroup does. Without it the executors share this
/// session's autogroup (`/proc/sys/kernel/sched_autogroup_enabled`) with
/// every other process of the session, a busy competitor included. cgroup
/// v1 only: v2 moves whole processes into domain cgroups.
#[derive(Debug)]
pub struct ThreadCgroup {
    dir: PathBuf,
    root: PathBuf,
    tids: Vec<i32>,
}

impl ThreadCgroup {
    /// Moves the threads `tids` into a new cgroup under the cpu hierarchy.
    pub fn create(cg: &CgroupCpu, tids: &[i32]) -> Result<Self, KernelError> {
        let root = match cg {
            CgroupCpu::V1(p) => p.clone(),
            CgroupCpu::V2(p) => {
                return Err(KernelError::Unavailable(format!(
                    "cgroup v2 at {} cannot take single threads into a domain cgroup",
                    p.display()
                )))
            }
        };
        let seq = RUN_SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("libratory-{}-{seq}-threads", std::process::id()));
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        // From here on, drop undoes whatever was done.
        let mut group = ThreadCgroup {
            dir,
            root,
            tids: Vec::new(),
        };
        let tasks = group.dir.join("tasks");
        for &tid in tids {
            fs::write(&tasks, tid.to_string()).map_err(io_err(&tasks))?;
            group.tids.push(tid);
        }
        Ok(group)
    }
}

impl Drop for ThreadCgroup {
    fn drop(&mut self) {
        let tasks = self.root.join("tasks");
        for tid in &self.tids {
            // A thread that has exited has left already.
            let _ = fs::write(&tasks, tid.to_string());
        }
        remove_cgroup(&self.dir);
    }
}

/// One run of the kernel baseline: a node of `capacity` whose parts get
/// fixed `shares` of it for `window` of wall time.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineRun {
    /// The node's capacity (cores).
    pub capacity: f64,
    /// The CFS period (the slicing period's counterpart).
    pub period: Duration,
    /// Each part's share of the node: its quota is share x capacity x
    /// period.
    pub shares: Vec<f64>,
    /// How long the parts burn (wall time).
    pub window: Duration,
    /// Niceness of the part processes (0: normal; the same knob as the
    /// user-space executors').
    pub nice: i32,
    /// CPU weight of the node's cgroup against the rest of the host
    /// (cgroup v1 `cpu.shares`, default 1024; v2 `cpu.weight` is set to
    /// weight x 100 / 1024). `None` leaves the default.
    pub node_weight: Option<u64>,
}

impl BaselineRun {
    /// A run with normal niceness and default weight.
    pub fn new(capacity: f64, period: Duration, shares: &[f64], window: Duration) -> Self {
        BaselineRun {
            capacity,
            period,
            shares: shares.to_vec(),
            window,
            nice: 0,
            node_weight: None,
        }
    }
}

/// Runs one child process per share for the run's window, each in its own
/// cgroup (inside one cgroup for the node) capped at `share x capacity x
/// period`, and returns the processor time each got.
pub fn run_baseline(
    cg: &CgroupCpu,
    run: &BaselineRun,
) -> Result<Vec<KernelPartResult>, KernelError> {
    let BaselineRun {
        capacity,
        period,
        ref shares,
        window,
        nice,
        node_weight,
    } = *run;
    let period_us = period.as_micros() as u64;
    let quotas: Vec<u64> = shares
        .iter()
        .map(|s| (s * capacity * period_us as f64).round() as u64)
        .collect();
    for (part, &quota_us) in quotas.iter().enumerate() {
        if quota_us < MIN_QUOTA_US {
            return Err(KernelError::QuotaTooSmall { part, quota_us });
        }
    }
    let (root, v2) = match cg {
        CgroupCpu::V1(p) => (p.clone(), false),
        CgroupCpu::V2(p) => (p.clone(), true),
    };
    if v2 {
        // Children of the root only get cpu.max once the controller is
        // enabled for the subtree; harmless if it already is.
        let ctl = root.join("cgroup.subtree_control");
        fs::write(&ctl, "+cpu").map_err(io_err(&ctl))?;
    }
    // Chunk of spinning between clock reads in the child: ~4 us.
    let chunk = (iters_per_ns() * 4_000.0).max(1.0) as u64;
    let window_ns = window.as_nanos() as u64;
    let seq = RUN_SEQ.fetch_add(1, Ordering::Relaxed);
    // The node is one cgroup and each part a cgroup inside it: the node
    // then competes with the rest of the host as one group, as a node
    // process does (one autogroup, or the cgroup it is put in), and not as
    // one group per part. Declared before the children so it is removed
    // after them.
    let node_dir = CgroupDir::create(root.join(format!("libratory-{}-{seq}", std::process::id())))?;
    if v2 {
        let ctl = node_dir.0.join("cgroup.subtree_control");
        fs::write(&ctl, "+cpu").map_err(io_err(&ctl))?;
    }
    if let Some(w) = node_weight {
        let (file, value) = if v2 {
            ("cpu.weight", (w * 100 / 1024).clamp(1, 10_000))
        } else {
            ("cpu.shares", w.max(2))
        };
        let f = node_dir.0.join(file);
        fs::write(&f, value.to_string()).map_err(io_err(&f))?;
    }
    let mut children = Vec::new();
    for (k, &quota_us) in quotas.iter().enumerate() {
        let dir = node_dir.0.join(format!("part-{k}"));
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        let (start_r, start_w) = pipe()?;
        let (result_r, result_w) = pipe()?;
        // SAFETY: the child only runs child_main (async-signal-safe calls,
        // no allocation) and exits with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            child_main(start_r, result_w, window_ns, chunk);
        }
        // SAFETY: closing the child's ends in the parent.
        unsafe {
            libc::close(start_r);
            libc::close(result_w);
        }
        let child = Child {
            pid,
            start_w,
            result_r,
            cgroup: dir.clone(),
            reaped: pid < 0,
        };
        if pid < 0 {
            return Err(KernelError::Os {
                what: "fork",
                source: std::io::Error::last_os_error(),
            });
        }
        children.push(child);
        let writes: Vec<(&str, String)> = if v2 {
            vec![("cpu.max", format!("{quota_us} {period_us}"))]
        } else {
            vec![
                ("cpu.cfs_period_us", period_us.to_string()),
                ("cpu.cfs_quota_us", quota_us.to_string()),
            ]
        };
        for (file, value) in writes {
            let f = dir.join(file);
            fs::write(&f, value).map_err(io_err(&f))?;
        }
        if nice != 0
            // SAFETY: setpriority on our own (waiting) child.
            && unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, nice) } != 0
        {
            return Err(KernelError::Os {
                what: "setpriority on a baseline child",
                source: std::io::Error::last_os_error(),
            });
        }
        let procs = dir.join("cgroup.procs");
        fs::write(&procs, pid.to_string()).map_err(io_err(&procs))?;
    }
    // Start them together so they compete over the same window. On an
    // error the children are killed and reaped (Child's drop).
    for (part, c) in children.iter().enumerate() {
        write_fd(c.start_w, b"g").map_err(|source| KernelError::Child {
            part,
            pid: c.pid,
            what: "sending the start byte",
            source,
        })?;
    }
    let mut out = Vec::new();
    for (part, (c, &share)) in children.iter_mut().zip(shares).enumerate() {
        let mut buf = [0u8; 8];
        let read = read_fd(c.result_r, &mut buf);
        // SAFETY: waitpid on our own child.
        unsafe { libc::waitpid(c.pid, std::ptr::null_mut(), 0) };
        c.reaped = true;
        read.map_err(|source| KernelError::Child {
            part,
            pid: c.pid,
            what: "reading its processor time",
            source,
        })?;
        out.push(KernelPartResult {
            share,
            cpu_ns: u64::from_ne_bytes(buf),
            wall_ns: window_ns,
        });
    }
    drop(children);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(fd: libc::c_int) {
        // SAFETY: closing a descriptor this test owns.
        unsafe { libc::close(fd) };
    }

    #[test]
    fn a_start_byte_nobody_reads_is_an_error_not_a_hang() {
        let (r, w) = pipe().unwrap();
        close(r);
        // Rust ignores SIGPIPE: the write fails with EPIPE.
        let e = write_fd(w, b"g").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE), "{e}");
        close(w);
    }

    #[test]
    fn a_result_cut_short_is_an_error_naming_what_came() {
        let (r, w) = pipe().unwrap();
        write_fd(w, &[1, 2, 3]).unwrap();
        close(w);
        let mut buf = [0u8; 8];
        let e = read_fd(r, &mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("3 of 8"), "{e}");
        close(r);
        let (r, w) = pipe().unwrap();
        write_fd(w, &7u64.to_ne_bytes()).unwrap();
        read_fd(r, &mut buf).unwrap();
        assert_eq!(u64::from_ne_bytes(buf), 7);
        close(r);
        close(w);
    }
}
