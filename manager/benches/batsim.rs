//! The cost of an external Batsim scheduler in the simulator (issue 28).
//! Run with `cargo bench -p libratory-manager --bench batsim` (pybatsim
//! 3.2.1 installed: scripts/install-pybatsim.sh).
//!
//! On the last 4,531 SDSC SP2 jobs (preset libra-risk's annotation), in
//! one run:
//! - the built-in `fcfs-bf` in virtual time: events/s (the baseline);
//! - pybatsim's fillerSched, unchanged, as the `batsim` policy: events/s,
//!   round trips, time per round trip;
//! - a bare ZeroMQ echo (pyzmq REP answering each request with itself)
//!   through the same transport, with requests of the size the run sent:
//!   time per round trip.
//!
//! Prints the ratios the targets name: batsim events/s against
//! fcfs-bf's, the batsim run's time per round trip against the bare echo's
//! (the target: the external scheduler costs at most its round trips,
//! i.e. the ratio stays near 1 plus the scheduler's own thinking), and
//! the whole run's time against round trips x echo time.
//! Knobs (environment): `BATSIM_BENCH_JOBS` (4531).

use std::path::PathBuf;
use std::time::Instant;

use common::batsim::Exchange;
use common::experiment::Experiment;
use common::workload;
use libratory_manager::batsim::{self, BatsimArgs, ZmqExchange};

fn free_endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    format!("tcp://127.0.0.1:{}", l.local_addr().expect("addr").port())
}

const ECHO: &str = "import sys, zmq\n\
s = zmq.Context().socket(zmq.REP)\n\
s.bind(sys.argv[1])\n\
while True:\n    s.send(s.recv())\n";

fn main() {
    let jobs: usize = std::env::var("BATSIM_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4531);
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    let mut exp = Experiment::preset("libra-risk").expect("preset");
    exp.params.jobs = jobs;
    let wl = workload::build(&exp.params, Some(&trace)).expect("workload");
    println!(
        "batsim bench: last {} SDSC SP2 jobs, {} nodes, preset libra-risk",
        wl.jobs.len(),
        exp.params.nodes
    );

    // Baseline: the built-in EASY backfilling.
    let t = Instant::now();
    let (base, _) = exp.run_policy("fcfs-bf", &wl).expect("fcfs-bf");
    let base_s = t.elapsed().as_secs_f64();
    let base_eps = base.events as f64 / base_s;
    println!(
        "fcfs-bf (built-in): {} events in {:.4} s = {:.0} events/s",
        base.events, base_s, base_eps
    );

    // pybatsim fillerSched over ZeroMQ.
    let ep = free_endpoint();
    let args = BatsimArgs {
        batsim_endpoint: ep.clone(),
        batsim_cmd: Some(format!("pybatsim fillerSched -s {ep} -v warning")),
        batsim_timeout: 60.0,
    };
    let (p, report) = batsim::policy(
        &args,
        exp.params.nodes,
        wl.jobs.len(),
        "libra-risk",
        exp.policy.pbase,
    )
    .expect("batsim policy");
    let t = Instant::now();
    let (out, _) = exp.run_built("batsim", &wl, p);
    let bs_s = t.elapsed().as_secs_f64();
    let (rts, waited, first, fault) = {
        let r = report.lock().expect("not poisoned");
        (
            r.round_trips,
            r.waited.as_secs_f64(),
            r.first.as_secs_f64(),
            r.fault.clone(),
        )
    };
    if let Some(f) = fault {
        panic!("the scheduler failed: {f}");
    }
    // The first round trip includes starting Python and pybatsim: left
    // out of the figures below (printed apart).
    let bs_s = bs_s - first;
    let bs_eps = out.events as f64 / bs_s;
    let rts = rts.saturating_sub(1).max(1);
    let per_rt = (waited - first) / rts as f64;
    println!(
        "batsim (pybatsim fillerSched): {} events in {:.3} s = {:.0} events/s; {} round trips, {:.3} s waiting, {:.1} us each (scheduler start-up and first reply: {:.3} s, left out)",
        out.events, bs_s, bs_eps, rts, waited - first, 1e6 * per_rt, first
    );

    // A bare echo through the same transport, with a typical request.
    let ep = free_endpoint();
    let args = BatsimArgs {
        batsim_endpoint: ep.clone(),
        batsim_cmd: Some(format!("python3 -c '{ECHO}' {ep}")),
        batsim_timeout: 60.0,
    };
    let (mut ex, _) = ZmqExchange::open(&args).expect("echo transport");
    let msg = common::batsim::protocol::encode(
        1.0,
        &[common::batsim::protocol::job_submitted(
            1.0, 73000, 16, 7200.0, 1.0,
        )],
    );
    ex.exchange(&msg).expect("echo up"); // connect and warm up
    let n = 2000;
    let t = Instant::now();
    for _ in 0..n {
        let r = ex.exchange(&msg).expect("echo");
        assert_eq!(r.len(), msg.len());
    }
    let echo_rt = t.elapsed().as_secs_f64() / n as f64;
    drop(ex);
    println!(
        "bare ZeroMQ echo (pyzmq REP): {:.1} us per round trip ({n} round trips of {} bytes)",
        1e6 * echo_rt,
        msg.len()
    );
    println!();
    println!(
        "ratio  batsim events/s / fcfs-bf events/s          = {:.5}",
        bs_eps / base_eps
    );
    println!(
        "ratio  batsim time per round trip / bare echo's     = {:.2}",
        per_rt / echo_rt
    );
    println!(
        "ratio  batsim run time / (round trips x echo time)  = {:.2}",
        bs_s / (rts as f64 * echo_rt)
    );
}
