//! What a burn costs beyond its work, as ratios to one read of the thread
//! clock measured in the same run (the unit the overshoot comes in):
//!
//! - the median overshoot of a short burn (2, 4 and 9 us): CPU a part's
//!   last slice loses. Target: under 0.6 of a read (a plain
//!   check-then-spin loop costs 0.9-1.0 on a busy host);
//! - the cost of a burn measured from outside beyond what it returned.
//!   Target: under half a read (the reads at its two ends are counted as
//!   its work).
//!
//! `cargo bench -p libratory-node --bench burn`. These were assertions in
//! node/src/exec.rs's tests; on a loaded host they are figures, not
//! verdicts, so they live here and the tests check behaviour.

use node::clock::{thread_clock_read_ns, thread_cpu_ns};
use node::exec::burn;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let read = thread_clock_read_ns();
    println!("one thread clock read: {read} ns (the baseline)");
    for ns in [2_000u64, 4_000, 9_000] {
        let over = median((0..2_000).map(|_| burn(ns) - ns).collect());
        println!(
            "burn({ns} ns): median overshoot {over} ns = {:.2} reads (target < 0.60)",
            over as f64 / read as f64
        );
    }
    let n = 2_000u64;
    burn(4_000);
    let t0 = thread_cpu_ns();
    let returned: u64 = (0..n).map(|_| burn(4_000)).sum();
    let cost = thread_cpu_ns() - t0;
    let extra = cost.saturating_sub(returned) / n;
    println!(
        "burn(4000 ns) cost beyond what it returned: {extra} ns = {:.2} reads (target < 0.50)",
        extra as f64 / read as f64
    );
}
