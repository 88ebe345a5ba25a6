//! The benchmarks behind `libratory-node bench`: share fidelity of the
//! user-space slicer against the kernel's CPU bandwidth control, the
//! node's overhead, and the cost of idle nodes. They print figures and
//! ratios; they are not timed tests.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use common::share::SpareRule;
use net::TraceClock;
use node::clock::thread_cpu_ns;
use node::host::batch_dispatch_or_warn;
use node::kernel::{detect, run_baseline, BaselineRun, ThreadCgroup};
use node::{EmulatedNodeSpec, GetTelemetry, NodeHost, PartSpec, PlacePart, SliceConfig};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Assigned vs delivered share, user space vs kernel, alone and with a
    /// competing busy process.
    Fidelity,
    /// Processor time spent on anything but job work.
    Overhead,
    /// 1,000 idle nodes: CPU and memory per node.
    Scale,
    /// What one burn costs beyond its target (short slices), against a
    /// plain check-then-spin loop in the same run.
    Burn,
    /// All of the above.
    All,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Which benchmarks.
    #[arg(value_enum, default_values_t = [Which::All])]
    which: Vec<Which>,
    /// Measurement window per run (wall seconds).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Slicing period (ms), also the kernel's CFS period.
    #[arg(long, default_value_t = 10.0)]
    period_ms: f64,
    /// Competing busy-loop processes in the "busy" runs.
    #[arg(long, default_value_t = 1)]
    busy: usize,
    /// Idle nodes in the scale benchmark.
    #[arg(long, default_value_t = 1000)]
    idle_nodes: usize,
    /// Executor threads (0: one per host core).
    #[arg(long, default_value_t = 0)]
    executors: usize,
    /// Niceness of the executors and of the kernel baseline's processes
    /// alike (negative needs root): to measure both on a host busy with
    /// other work without that work taking their cycles.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    nice: i32,
    /// Shortest slice (us): fewer, longer slices cost less dispatch.
    #[arg(long, default_value_t = 250)]
    min_slice_us: u64,
}

const TARGETS: [f64; 3] = [0.5, 0.3, 0.2];

fn rusage_cpu_ns() -> u64 {
    // SAFETY: getrusage fills a zeroed, valid struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// CPU time (ns) of this process's threads, summed by whether the thread
/// is an executor, and the executors' time spent runnable but waiting for a
/// core (host contention), from /proc/self/task/*/schedstat (ns precision).
fn thread_cpu_split() -> (u64, u64, u64) {
    let mut exec = 0;
    let mut other = 0;
    let mut waited = 0;
    for t in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let p = t.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("schedstat")).unwrap_or_default();
        let mut f = stat
            .split_whitespace()
            .map(|v| v.parse::<u64>().unwrap_or(0));
        let (ns, delay) = (f.next().unwrap_or(0), f.next().unwrap_or(0));
        if comm.starts_with("libratory-exec") {
            exec += ns;
            waited += delay;
        } else {
            other += ns;
        }
    }
    (exec, other, waited)
}

/// Busy-loop child processes, killed on drop.
struct Busy(Vec<Child>);

impl Busy {
    fn start(n: usize) -> anyhow::Result<Self> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .context("spawning a busy-loop `sh` process")?,
            );
        }
        Ok(Busy(v))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What one user-space run measured.
struct UserRun {
    /// Delivered share per part: cpu / (capacity x window).
    absolute: Vec<f64>,
    /// Each part's fraction of the node's CPU.
    relative: Vec<f64>,
    burned_ns: u64,
    process_ns: u64,
    /// CPU of the executor threads (burning and dispatch) in the window.
    exec_ns: u64,
    /// CPU of every other thread (actix, main) in the window.
    rest_ns: u64,
    /// Time executors were runnable but another process had the core.
    waited_ns: u64,
    /// Executor threads in the pool.
    executors: usize,
    /// Whether the executors ran in a cgroup of their own.
    own_cgroup: bool,
    window: Duration,
}

/// Runs `nodes` nodes of capacity `cap` with parts of fixed targets (idle
/// spare rule, q = target, which stays constant while each part gets q) and
/// measures a window after a short warm-up.
fn userspace(
    nodes: usize,
    cap: f64,
    period: Duration,
    window: Duration,
    a: &BenchArgs,
) -> anyhow::Result<UserRun> {
    let executors = a.executors;
    let nice = a.nice;
    let slice = SliceConfig {
        time_scale: 1e-3,
        period,
        max_slice: period.max(Duration::from_micros(a.min_slice_us)),
        min_slice: Duration::from_micros(a.min_slice_us),
        spare_rule: SpareRule::Idle,
        ..SliceConfig::default()
    };
    actix::System::new().block_on(async move {
        batch_dispatch_or_warn();
        let mut host = NodeHost::with_nice(
            executors,
            nice,
            slice,
            TraceClock::new(0.0, slice.time_scale),
        )?;
        // Equal footing with the kernel baseline's node cgroup (see
        // ThreadCgroup); without cgroups the executors stay where they are.
        let group = detect()
            .and_then(|cg| ThreadCgroup::create(&cg, host.pool().thread_ids()))
            .ok();
        let own_cgroup = group.is_some();
        let mut addrs = Vec::new();
        let horizon = 1e9;
        for id in 0..nodes {
            let spec = EmulatedNodeSpec {
                id: id as u32,
                speed: 1.0,
                capacity: cap,
                memory_kb: 1024,
                disk_mb: 1,
            };
            let a = host.spawn_node(spec, None)?;
            for (k, q) in TARGETS.iter().enumerate() {
                let p = PartSpec {
                    part_id: k as u64,
                    job_id: k as u64,
                    estimate: q * horizon,
                    actual: 2.0 * horizon,
                    deadline_abs: horizon,
                    memory_kb: 0,
                    disk_mb: 0,
                    ret: 0.0,
                    hard: false,
                };
                a.send(PlacePart(p)).await?.map_err(anyhow::Error::from)?;
            }
            addrs.push(a);
        }
        actix_rt::time::sleep(Duration::from_millis(300)).await;
        let snapshot = |addrs: Vec<actix::Addr<node::NodeActor>>| async move {
            let mut v = Vec::new();
            for a in &addrs {
                let t = a
                    .send(GetTelemetry { reset: false })
                    .await
                    .expect("node alive");
                v.push(t.parts.iter().map(|p| p.burned_ns).collect::<Vec<_>>());
            }
            v
        };
        // The telemetry snapshots (cloning every histogram) stay outside
        // the CPU accounting: they stand for the periodic hand-over to the
        // manager, not for the steady-state cost of slicing.
        let before = snapshot(addrs.clone()).await;
        let (t0, c0, b0) = (Instant::now(), rusage_cpu_ns(), host.pool().burned_ns());
        let (e0, r0, q0) = thread_cpu_split();
        actix_rt::time::sleep(window).await;
        let (w, c1, b1) = (t0.elapsed(), rusage_cpu_ns(), host.pool().burned_ns());
        let (e1, r1, q1) = thread_cpu_split();
        let after = snapshot(addrs.clone()).await;
        let mut absolute = vec![0.0; TARGETS.len()];
        let mut relative = vec![0.0; TARGETS.len()];
        for (b, a) in before.iter().zip(&after) {
            let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x - y) as f64).collect();
            let total: f64 = d.iter().sum();
            for k in 0..TARGETS.len() {
                absolute[k] += d[k] / (cap * w.as_nanos() as f64) / nodes as f64;
                relative[k] += d[k] / total / nodes as f64;
            }
        }
        Ok(UserRun {
            absolute,
            relative,
            burned_ns: b1 - b0,
            process_ns: c1 - c0,
            exec_ns: e1 - e0,
            rest_ns: r1 - r0,
            waited_ns: q1 - q0,
            executors: host.pool().size(),
            own_cgroup,
            window: w,
        })
    })
}

fn mae(got: &[f64], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .sum::<f64>()
        / got.len() as f64
}

fn fmt(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.4}"))
        .collect::<Vec<_>>()
        .join("/")
}

fn fidelity(a: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let period = Duration::from_secs_f64(a.period_ms / 1000.0);
    let window = Duration::from_secs_f64(a.seconds);
    let cg = detect();
    writeln!(
        out,
        "fidelity: one node of capacity 1.0, targets {}, period {:?}, window {:?}; \
         nice {}; absolute = cpu/(capacity x wall), relative = cpu/node cpu; MAE vs targets",
        fmt(&TARGETS),
        period,
        window,
        a.nice
    )?;
    for busy in [0, a.busy] {
        let _competitor = Busy::start(busy)?;
        let u = userspace(1, 1.0, period, window, a)?;
        // Executor run-queue wait: time an executor was ready to burn but
        // another process held the core (one thread competes under CFS as
        // one thread, whatever its node's capacity).
        let w = u.window.as_nanos() as f64;
        let waited = u.waited_ns as f64 / w;
        // The node keeps one executor at a time busy; any executor time
        // beyond the other (idle) executors that was neither burning nor
        // waiting for a core is the slicer leaving the node idle.
        let asleep = (u.executors as f64 * w - u.exec_ns as f64 - u.waited_ns as f64) / w;
        let idle = (asleep - (u.executors as f64 - 1.0)).max(0.0);
        writeln!(
            out,
            "  busy={busy} user-space{}: absolute {} (MAE {:.4}), relative {} (MAE {:.4}); \
             executors runnable but waiting for a core {:.1}% of the window, node idle {:.1}%",
            if u.own_cgroup {
                " (executors in own cgroup)"
            } else {
                ""
            },
            fmt(&u.absolute),
            mae(&u.absolute, &TARGETS),
            fmt(&u.relative),
            mae(&u.relative, &TARGETS),
            100.0 * waited,
            100.0 * idle,
        )?;
        match &cg {
            Ok(cg) => {
                let run = BaselineRun {
                    nice: a.nice,
                    ..BaselineRun::new(1.0, period, &TARGETS, window)
                };
                let k = run_baseline(cg, &run)?;
                let abs: Vec<f64> = k.iter().map(|r| r.delivered(1.0)).collect();
                let total: u64 = k.iter().map(|r| r.cpu_ns).sum();
                let rel: Vec<f64> = k.iter().map(|r| r.cpu_ns as f64 / total as f64).collect();
                writeln!(
                    out,
                    "  busy={busy} kernel {:?}: absolute {} (MAE {:.4}), relative {} (MAE {:.4})",
                    cg,
                    fmt(&abs),
                    mae(&abs, &TARGETS),
                    fmt(&rel),
                    mae(&rel, &TARGETS)
                )?;
            }
            Err(e) => writeln!(out, "  busy={busy} kernel: {e}")?,
        }
    }
    Ok(())
}

fn overhead(a: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let period = Duration::from_secs_f64(a.period_ms / 1000.0);
    let window = Duration::from_secs_f64(a.seconds);
    let cores = if a.executors == 0 {
        node::exec::ExecutorPool::host_cores()
    } else {
        a.executors
    };
    for nodes in [1usize, 64] {
        let cap = if nodes == 1 {
            1.0
        } else {
            cores as f64 / nodes as f64
        };
        let u = userspace(nodes, cap, period, window, a)?;
        let other = u.process_ns.saturating_sub(u.burned_ns);
        writeln!(
            out,
            "overhead: {nodes} node(s) x capacity {cap:.4}, 3 parts each, min slice {} us, {:?}: process CPU {:.3} s, \
             burned {:.3} s, other {:.4} s = {:.2}% of work \
             (executor threads outside burns {:.2}%, other threads {:.2}%)",
            a.min_slice_us,
            u.window,
            u.process_ns as f64 * 1e-9,
            u.burned_ns as f64 * 1e-9,
            other as f64 * 1e-9,
            100.0 * other as f64 / u.burned_ns.max(1) as f64,
            100.0 * u.exec_ns.saturating_sub(u.burned_ns) as f64 / u.burned_ns.max(1) as f64,
            100.0 * u.rest_ns as f64 / u.burned_ns.max(1) as f64,
        )?;
    }
    Ok(())
}

/// Starts `n` idle nodes, waits `dur`, and reports their CPU and memory.
pub fn host_idle(
    base: EmulatedNodeSpec,
    n: usize,
    slice: SliceConfig,
    executors: usize,
    dur: Duration,
) -> anyhow::Result<String> {
    actix::System::new().block_on(async move {
        batch_dispatch_or_warn();
        let mut host = NodeHost::new(executors, slice, TraceClock::new(0.0, slice.time_scale))?;
        let rss0 = rss_bytes();
        let mut addrs = Vec::with_capacity(n);
        for id in 0..n {
            addrs.push(host.spawn_node(
                EmulatedNodeSpec {
                    id: id as u32,
                    ..base
                },
                None,
            )?);
        }
        // Let the actors start before measuring.
        actix_rt::time::sleep(Duration::from_millis(100)).await;
        let rss1 = rss_bytes();
        let (c0, t0) = (rusage_cpu_ns(), Instant::now());
        actix_rt::time::sleep(dur).await;
        let (c1, w) = (rusage_cpu_ns(), t0.elapsed());
        let per_node = rss1.saturating_sub(rss0) as f64 / n.max(1) as f64;
        Ok(format!(
            "{n} idle nodes (capacity {} each, {} executors): CPU {:.3}% of a core over {:.1} s; \
             RSS +{:.1} MiB = {:.0} bytes per node",
            base.capacity,
            host.pool().size(),
            100.0 * (c1 - c0) as f64 / w.as_nanos() as f64,
            w.as_secs_f64(),
            rss1.saturating_sub(rss0) as f64 / (1 << 20) as f64,
            per_node
        ))
    })
}

fn scale(a: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let cores = if a.executors == 0 {
        node::exec::ExecutorPool::host_cores()
    } else {
        a.executors
    };
    let base = EmulatedNodeSpec {
        id: 0,
        speed: 1.0,
        capacity: cores as f64 / a.idle_nodes.max(1) as f64,
        memory_kb: 1024 * 1024,
        disk_mb: 1024,
    };
    let r = host_idle(
        base,
        a.idle_nodes,
        SliceConfig::default(),
        a.executors,
        Duration::from_secs_f64(a.seconds.max(2.0)),
    )?;
    writeln!(out, "scale: {r}")?;
    Ok(())
}

/// Runs the chosen benchmarks, printing to `out`.
pub fn run(a: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    // Refuse durations Duration::from_secs_f64 would panic on, up front.
    for (option, v) in [("--seconds", a.seconds), ("--period-ms", a.period_ms)] {
        if !(v.is_finite() && v > 0.0) {
            anyhow::bail!("{option} must be > 0, got {v}");
        }
    }
    let all = a.which.contains(&Which::All);
    // Scale first: its memory figure is an RSS delta, which the allocator
    // would hide by reusing memory freed by the other runs.
    if all || a.which.contains(&Which::Scale) {
        scale(a, out)?;
    }
    if all || a.which.contains(&Which::Fidelity) {
        fidelity(a, out)?;
    }
    if all || a.which.contains(&Which::Overhead) {
        overhead(a, out)?;
    }
    if all || a.which.contains(&Which::Burn) {
        burn_cost(out)?;
    }
    Ok(())
}

/// The baseline for [`burn_cost`]: read the clock, spin what is left (at
/// most 4 us), read again, until the target is reached; the loop the node
/// used before each chunk was aimed at the read after it.
fn burn_plain(ns: u64) -> u64 {
    let rate = node::exec::iters_per_ns();
    let start = thread_cpu_ns();
    let mut x = start | 1;
    loop {
        let done = thread_cpu_ns() - start;
        if done >= ns {
            std::hint::black_box(x);
            return done;
        }
        let left = ((ns - done) as f64).min(4_000.0);
        x = node::exec::spin(x, (left * rate).ceil().max(1.0) as u64);
    }
}

/// Short burns (a short part's last slice) as the node burns them and as
/// the plain loop does, 20,000 each, on this thread: what each returned
/// above its target (CPU that nothing pays back on a part's last slice)
/// and what each cost in all above the target (the clock reads included).
fn burn_cost(out: &mut dyn Write) -> anyhow::Result<()> {
    let read = node::clock::thread_clock_read_ns();
    writeln!(
        out,
        "burn: a thread-CPU-clock read costs {read} ns (median)"
    )?;
    let n = 20_000u64;
    for ns in [2_000u64, 4_000, 20_000] {
        let mut figures = Vec::new();
        for f in [node::exec::burn as fn(u64) -> u64, burn_plain] {
            f(ns);
            let t0 = thread_cpu_ns();
            let over: u64 = (0..n).map(|_| f(ns) - ns).sum();
            let cost = (thread_cpu_ns() - t0) as f64 / n as f64 - ns as f64;
            figures.push((over as f64 / n as f64, cost));
        }
        let [(over, cost), (over0, cost0)] = figures[..] else {
            unreachable!()
        };
        writeln!(
            out,
            "burn of {ns} ns: returns {over:.0} ns above (plain loop {over0:.0} ns: {:.2}x), \
             costs {cost:.0} ns above in all (plain loop {cost0:.0} ns: {:.2}x)",
            over / over0.max(1.0),
            cost / cost0.max(1.0)
        )?;
    }
    Ok(())
}
