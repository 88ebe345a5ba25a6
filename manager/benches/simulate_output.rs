//! Whole-process time of `libratory simulate` against the simulation core
//! alone, on the 4531-job EASY run (issue 12, item 8). Run with
//! `cargo bench -p libratory-manager --bench simulate_output`.
//!
//! The run: the last 5000 SDSC SP2 jobs minus the 469 that never ran,
//! estimates max(requested, run), no deadline in effect, FCFS-BF
//! (`--preset libra-plus-dollar --policies fcfs-bf --set
//! drop_never_ran=true ...`, the same as `common/tests/easy_reference.rs`).
//!
//! Measured in the same run, each the median of `OUTPUT_BENCH_RUNS` (21)
//! repetitions after one warm-up:
//! - core: `Experiment::run_policy` in this process on a workload built
//!   beforehand (the simulation, and the summary metrics);
//! - process: the real `libratory simulate` binary, start to exit, writing
//!   every result file into a fresh directory.
//!
//! Printed: both in ms and their ratio, and the CPU time (user + system)
//! the process used, which a loaded machine inflates less than the wall
//! time. Target (the issue): process <= 13 ms wall (`OUTPUT_BENCH_TARGET_MS`
//! changes it); printed as met or missed, never a failure (a shared
//! machine's load decides the wall time as much as the code does).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::experiment::Experiment;
use common::workload;

const SETS: &[&str] = &[
    "drop_never_ran=true",
    "inaccuracy_form=toward-trace-at-least-actual",
    "inaccuracy=1",
    "arrival_delay_factor=1",
    "deadline_basis=estimate",
    "deadline_estimate_factor=1e9",
];

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    match std::env::var(key) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{key}={v}: not a valid value")),
        Err(_) => default,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let runs: usize = env_or("OUTPUT_BENCH_RUNS", 21);
    let target_ms: f64 = env_or("OUTPUT_BENCH_TARGET_MS", 13.0);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let trace = root.join("../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(
        trace.is_file(),
        "the SDSC SP2 trace is missing at {} (../shared/traces beside the project)",
        trace.display()
    );
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_libratory"));

    // Core: the simulation alone, in this process.
    let mut exp = Experiment::preset("libra-plus-dollar").unwrap();
    exp.set_all(SETS.iter().copied()).unwrap();
    let wl = workload::build(&exp.params, Some(&trace)).unwrap();
    assert_eq!(wl.jobs.len(), 4531);
    let mut core = Vec::with_capacity(runs);
    for k in 0..=runs {
        let t = Instant::now();
        let (outcome, _) = exp.run_policy("fcfs-bf", &wl).unwrap();
        let d = t.elapsed();
        assert_eq!(outcome.records.len(), 4531);
        if k > 0 {
            core.push(d);
        }
    }

    // Process: the binary, start to exit.
    let out = std::env::temp_dir().join(format!("libratory-output-bench-{}", std::process::id()));
    let mut args: Vec<String> = [
        "simulate",
        "--preset",
        "libra-plus-dollar",
        "--policies",
        "fcfs-bf",
        "--trace",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(trace.display().to_string());
    for s in SETS {
        args.push("--set".into());
        args.push(s.to_string());
    }
    args.push("--out".into());
    args.push(out.display().to_string());
    let mut process = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for k in 0..=runs {
        let _ = std::fs::remove_dir_all(&out);
        let c0 = children_cpu();
        let t = Instant::now();
        let o = Command::new(&bin).args(&args).output().unwrap();
        let d = t.elapsed();
        let c = children_cpu() - c0;
        assert!(
            o.status.success(),
            "{} failed: {}",
            bin.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        if k > 0 {
            process.push(d);
            cpu.push(c);
        }
    }
    let files = std::fs::read_dir(&out).unwrap().count();
    let _ = std::fs::remove_dir_all(&out);

    let (c, p, pc) = (median(core), median(process), median(cpu));
    println!("simulate_output: 4531-job EASY run (fcfs-bf), median of {runs}");
    println!("  core (run_policy, in process)     {:8.2} ms", ms(c));
    println!(
        "  whole process (libratory simulate) {:8.2} ms  ({files} files written)",
        ms(p)
    );
    println!("  process CPU time (user + system)   {:8.2} ms", ms(pc));
    println!(
        "  ratio process / core               {:8.2}x (CPU time: {:.2}x)",
        ms(p) / ms(c),
        ms(pc) / ms(c)
    );
    println!(
        "  target: process <= {target_ms} ms wall: {}",
        if ms(p) <= target_ms { "met" } else { "missed" }
    );
}

/// User + system CPU time of the finished children of this process.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    assert_eq!(rc, 0, "getrusage failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}
