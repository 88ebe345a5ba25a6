//! Integration tests of real emulated nodes: real executor threads burning
//! real CPU, judged on thread CPU time (never wall-clock shares: this
//! machine is shared and noisy), plus the kernel baseline and the binary.

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use common::share::{job_control_shares, SpareRule};
use net::TraceClock;
use node::core::ShareReason;
use node::kernel::{detect, run_baseline, BaselineRun};
use node::standalone::{run_standalone, PartEntry, StandaloneConfig};
use node::{
    report_channel, EmulatedNodeSpec, GetStatus, GetTelemetry, NodeEvent, NodeHost, PartCompletion,
    PartSpec, PlacePart, PlaceReported, SliceConfig,
};

/// CPU-heavy tests run one at a time so they do not measure each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const TS: f64 = 1e-3;

fn slice(rule: SpareRule) -> SliceConfig {
    SliceConfig {
        time_scale: TS,
        spare_rule: rule,
        ..SliceConfig::default()
    }
}

fn node(id: u32, capacity: f64) -> EmulatedNodeSpec {
    EmulatedNodeSpec {
        id,
        speed: 1.0,
        capacity,
        memory_kb: 1024 * 1024,
        disk_mb: 1024,
    }
}

fn part(id: u64, estimate: f64, actual: f64, deadline_abs: f64) -> PartSpec {
    PartSpec {
        part_id: id,
        job_id: 100 + id,
        estimate,
        actual,
        deadline_abs,
        memory_kb: 0,
        disk_mb: 0,
        ret: 0.0,
        hard: false,
    }
}

#[test]
fn three_parts_get_their_shares_of_processor_time() {
    let _g = serial();
    actix::System::new().block_on(async {
        let cfg = SliceConfig {
            progress_ticks: 2,
            ..slice(SpareRule::Idle)
        };
        let mut host = NodeHost::new(0, cfg, TraceClock::new(0.0, TS)).unwrap();
        let (sink, mut rx) = report_channel();
        let n = host.spawn_node(node(0, 1.0), Some(sink)).unwrap();
        // q = estimate / deadline: 0.5, 0.3, 0.2, constant while each part
        // gets exactly q; actual work far beyond the test.
        let horizon = 1e6;
        for (id, q) in [(1, 0.5), (2, 0.3), (3, 0.2)] {
            n.send(PlacePart(part(id, q * horizon, horizon, horizon)))
                .await
                .unwrap()
                .unwrap();
        }
        actix_rt::time::sleep(Duration::from_millis(200)).await;
        let a = n.send(GetTelemetry { reset: false }).await.unwrap();
        // At least 1.2 s of slicing, then until the telemetry has what is
        // checked below (on a starved host the slicer runs fewer slices a
        // second): waits for the event, fails after a minute without it.
        let t0 = std::time::Instant::now();
        let mut progress = 0;
        let b = loop {
            actix_rt::time::sleep(Duration::from_millis(100)).await;
            while let Ok(r) = rx.try_recv() {
                if let NodeEvent::Progress { parts, .. } = r.event {
                    assert_eq!(parts.len(), 3);
                    progress += 1;
                }
            }
            let b = n.send(GetTelemetry { reset: false }).await.unwrap();
            let enough = b.tick_jitter_ns.len() >= 5
                && b.slice_overrun_ns.len() > 50
                && b.parts.iter().all(|p| p.windows >= 5)
                && progress >= 3;
            if t0.elapsed() >= Duration::from_millis(1200) && enough {
                break b;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "a minute of slicing: overruns {} slices {} jitter {}, {progress} progress reports",
                b.slice_overrun_ns.len(),
                b.slices,
                b.tick_jitter_ns.len()
            );
        };
        let d: Vec<f64> = b
            .parts
            .iter()
            .zip(&a.parts)
            .map(|(y, x)| (y.burned_ns - x.burned_ns) as f64)
            .collect();
        let total: f64 = d.iter().sum();
        assert!(total > 0.2e9, "node barely ran: {total} ns");
        // Within 0.08 of q: 0.02 on a quiet host; under stress-ng --cpu 2
        // the flake check saw 0.533, 0.291, 0.177 (the executor thread is
        // preempted mid-slice and the slicer corrects on its next tick).
        // 0.08 keeps the three apart (0.1 between the nearest two) with
        // more than twice the worst seen.
        for (got, want) in d.iter().map(|x| x / total).zip([0.5, 0.3, 0.2]) {
            assert!(
                (got - want).abs() < 0.08,
                "shares {:?}",
                d.iter().map(|x| x / total).collect::<Vec<_>>()
            );
        }
        // Telemetry is there to hand over (waited for above).
        let windows: u64 = b.parts.iter().map(|p| p.windows).sum();
        assert_eq!(b.assigned_ppm.len(), windows);
        assert_eq!(b.delivered_ppm.len(), windows);
        assert_eq!(b.error_ppm.len(), windows);
        // Shares 0.5, 0.3 and 0.2 over the same windows: 1/3 on average.
        let assigned = b.assigned_ppm.mean();
        assert!((assigned - 333_333.0).abs() < 5_000.0, "{assigned}");
        // Status and progress reports tell the same story.
        let status = n.send(GetStatus).await.unwrap();
        let shares: Vec<f64> = status.parts.iter().map(|p| p.share).collect();
        assert_eq!(shares.len(), 3);
        for (got, want) in shares.iter().zip([0.5, 0.3, 0.2]) {
            // q = rem / rd at the last placement, a hair off the target.
            assert!((got - want).abs() < 1e-4, "{shares:?}");
        }
        assert!(status.parts.iter().all(|p| p.on_track && p.work_done > 0.0));
        // Progress reports came (waited for above): three parts each.
        assert!(progress >= 3);
    });
}

/// Places parts on one node and collects every event until all complete.
fn run_one_node(parts: Vec<PartSpec>, rule: SpareRule) -> Vec<NodeEvent> {
    actix::System::new().block_on(async move {
        let mut host = NodeHost::new(0, slice(rule), TraceClock::new(0.0, TS)).unwrap();
        let (sink, mut rx) = report_channel();
        let n = host.spawn_node(node(0, 1.0), Some(sink)).unwrap();
        let count = parts.len();
        for p in parts {
            n.send(PlacePart(p)).await.unwrap().unwrap();
        }
        let mut events = Vec::new();
        let mut done = 0;
        while done < count {
            let r = actix_rt::time::timeout(Duration::from_secs(20), rx.recv())
                .await
                .expect("parts finish within 20 s")
                .unwrap();
            if matches!(r.event, NodeEvent::Completed(_)) {
                done += 1;
            }
            events.push(r.event);
        }
        events
    })
}

fn completions(events: &[NodeEvent]) -> Vec<PartCompletion> {
    events
        .iter()
        .filter_map(|e| match e {
            NodeEvent::Completed(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// One recomputation: when, why, and the shares.
type Change = (f64, ShareReason, Vec<(u64, f64)>);

/// Every recomputation must equal the share rule applied to the state the
/// node says it saw.
fn check_shares_match_rule(events: &[NodeEvent], rule: SpareRule) -> Vec<Change> {
    let mut out = Vec::new();
    for e in events {
        if let NodeEvent::SharesChanged {
            at,
            reason,
            shares,
            inputs,
        } = e
        {
            let mut want = Vec::new();
            job_control_shares(inputs, rule, &mut want);
            let got: Vec<f64> = shares.iter().map(|s| s.1).collect();
            assert_eq!(got, want, "at {at} ({reason:?})");
            out.push((*at, *reason, shares.clone()));
        }
    }
    out
}

#[test]
fn long_part_keeps_running_and_short_part_frees_its_share() {
    let _g = serial();
    // A needs twice its estimate; B finishes at a quarter of its estimate.
    // Proportional rule: q = 0.1 and 0.2, shares 1/3 and 2/3.
    let events = run_one_node(
        vec![part(1, 200.0, 400.0, 2000.0), part(2, 400.0, 100.0, 2000.0)],
        SpareRule::Proportional,
    );
    let changes = check_shares_match_rule(&events, SpareRule::Proportional);
    let done = completions(&events);
    assert_eq!(
        done.iter().map(|c| c.part_id).collect::<Vec<_>>(),
        vec![2, 1]
    );
    let (a, b) = (&done[1], &done[0]);
    // B is done when its actual 100 s of work are (100 ms of CPU), not its
    // 400 s estimate: ~150 trace s on a quiet host, later on a loaded one,
    // so what is checked is the work and the order of events: B leaves
    // before A uses up its estimate (A: 200 s at 1/3, B: 100 s at 2/3).
    let b_work = b.burned_ns as f64;
    assert!(
        (100e6 - 1.0..100e6 + 40e6).contains(&b_work),
        "B burned {b_work} ns"
    );
    let a_out = changes
        .iter()
        .find(|c| c.1 == ShareReason::EstimateUsed)
        .expect("A used up its estimate")
        .0;
    assert!(
        b.finished_at <= a_out,
        "B finished at {} after A's estimate ran out at {a_out}",
        b.finished_at
    );
    // Its share went to A the moment it left.
    let freed = changes
        .iter()
        .find(|c| c.1 == ShareReason::Finished)
        .unwrap();
    assert_eq!(freed.2, vec![(1, 1.0)]);
    // A ran past its estimate (an event), kept running and did its actual
    // 400 s of work: 400 ms of CPU at time scale 1e-3 and capacity 1.
    assert!(changes.iter().any(|c| c.1 == ShareReason::EstimateUsed));
    let work = a.burned_ns as f64;
    // Never less; more only by its last slices' overshoot (VM steal time
    // on a loaded host can make that tens of ms: the bound is loose, the
    // lower one exact).
    assert!(
        (400e6 - 1.0..400e6 + 40e6).contains(&work),
        "A burned {work} ns"
    );
    // Both meet the 2000 s deadline on a quiet host (A is done at ~500 s);
    // on any host each verdict is its finish against that deadline.
    for c in [a, b] {
        assert_eq!(c.met_deadline, c.finished_at <= 2000.0, "{c:?}");
    }
}

#[test]
fn shares_are_recomputed_as_deadlines_approach() {
    let _g = serial();
    // Part 1 cannot make its deadline (q = 1.5): it reaches it on-track and
    // turns overdue; part 2 (far deadline) then gets its q and part 1 the
    // rest.
    let events = run_one_node(
        vec![part(1, 300.0, 350.0, 200.0), part(2, 100.0, 100.0, 2000.0)],
        SpareRule::Proportional,
    );
    let changes = check_shares_match_rule(&events, SpareRule::Proportional);
    let reasons: Vec<ShareReason> = changes.iter().map(|c| c.1).collect();
    let (at, _, shares) = changes
        .iter()
        .find(|c| c.1 == ShareReason::DeadlineReached)
        .unwrap_or_else(|| panic!("no deadline event: {reasons:?}"));
    // The node's timer fires at the deadline (ms-grained: 1 trace s here),
    // never before it; late by up to 2 real s on a loaded machine.
    assert!((200.0..2200.0).contains(at), "deadline event at {at}");
    let inputs = events
        .iter()
        .find_map(|e| match e {
            NodeEvent::SharesChanged {
                reason: ShareReason::DeadlineReached,
                inputs,
                ..
            } => Some(inputs.clone()),
            _ => None,
        })
        .unwrap();
    assert!(inputs[0].rd <= 0.0 && inputs[1].on_track());
    assert!((shares[1].1 - inputs[1].rem / inputs[1].rd).abs() < 1e-12);
    // Part 1 needs 350 s of work by 200 s: it misses whatever the load.
    // Part 2 meets its deadline on a quiet host; on any host its verdict
    // is its finish against its deadline.
    let done = completions(&events);
    assert_eq!(done.len(), 2);
    for c in &done {
        match c.part_id {
            1 => assert!(!c.met_deadline && c.finished_at >= 350.0, "{c:?}"),
            2 => assert_eq!(c.met_deadline, c.finished_at <= 2000.0, "{c:?}"),
            k => panic!("part {k}?"),
        }
    }
}

#[test]
fn sixty_four_nodes_run_parts_concurrently_and_all_finish() {
    let _g = serial();
    let parts = vec![
        // Long enough (the first ends after ~0.4 real s) that placing
        // all 128 before it ends does not race a loaded host.
        PartEntry::parse("estimate=500,actual=500,deadline=10000").unwrap(),
        PartEntry::parse("estimate=400,actual=250,deadline=10000").unwrap(),
    ];
    let report = run_standalone(StandaloneConfig {
        node: node(0, 2.0 / 64.0),
        nodes: 64,
        slice: slice(SpareRule::Proportional),
        executors: 2,
        parts,
        limit: Duration::from_secs(30),
    })
    .unwrap();
    assert_eq!(report.outcomes.len(), 128);
    assert_eq!(report.telemetry.len(), 64);
    // Concurrent, not one after another: every part was placed before the
    // first one finished.
    let first_done = report
        .outcomes
        .iter()
        .map(|o| o.completion.finished_at)
        .fold(f64::INFINITY, f64::min);
    assert!(report
        .outcomes
        .iter()
        .all(|o| o.completion.placed_at < first_done));
    // Each part burned its actual work (actual x capacity x time scale) and
    // no more than the overshoot of its last two slices beyond it (the last
    // one may have been sized while the one before was still burning).
    // Overshoots are ~200 ns typically, but on a VM the hypervisor can
    // deschedule the vCPU mid-burn and the guest charges that to the thread.
    for o in &report.outcomes {
        let want = o.entry.actual * (2.0 / 64.0) * TS * 1e9;
        let got = o.completion.burned_ns as f64;
        let node = &report.telemetry[o.completion.node_id as usize];
        let slack = 2.0 * node.slice_overrun_ns.max() as f64 * 1.01 + 1e3;
        assert!(
            got >= want - 1.0 && got <= want + slack,
            "node {} part {} burned {got} ns, want {want} (+ up to {slack})",
            o.completion.node_id,
            o.completion.part_id
        );
    }
}

#[test]
fn over_capacity_is_refused_clearly() {
    actix::System::new().block_on(async {
        let mut host = NodeHost::new(2, slice(SpareRule::Idle), TraceClock::new(0.0, TS)).unwrap();
        host.spawn_node(node(0, 1.5), None).unwrap();
        let e = host
            .spawn_node(node(1, 0.75), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 1: capacity 0.75"), "{e}");
        assert!(e.contains("more than its 2 executor threads"), "{e}");
        host.spawn_node(node(2, 0.5), None).unwrap();
    });
}

#[test]
fn kernel_baseline_delivers_quota_shares() {
    let _g = serial();
    // No skip: a host without a writable cgroup v2 CPU controller cannot
    // run this test, and the test says so by failing.
    let cg = detect().unwrap_or_else(|e| {
        panic!("the kernel baseline needs a writable cgroup v2 with the cpu controller (run as root on a cgroup v2 host): {e}")
    });
    // Quotas are caps, not guarantees: on this shared 2-core machine other
    // work can take cycles from the children, so the check is that the cap
    // holds and that each child got most of its quota, with the larger
    // quota getting more.
    let shares = [0.4, 0.2];
    // The node's cgroup gets a large weight so that other work on this
    // shared machine cannot starve it: what is tested is the quota.
    let run = BaselineRun {
        node_weight: Some(16 * 1024),
        ..BaselineRun::new(
            1.0,
            Duration::from_millis(10),
            &shares,
            Duration::from_millis(1500),
        )
    };
    let r = run_baseline(&cg, &run).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<f64> = r.iter().map(|x| x.delivered(1.0)).collect();
    let msg = format!("{cg:?}: delivered {got:?} for quotas {shares:?}");
    for (g, w) in got.iter().zip(shares) {
        assert!(*g <= w + 0.03, "cap exceeded: {msg}");
        assert!(*g >= 0.6 * w, "far below quota: {msg}");
    }
    assert!(got[0] > got[1], "{msg}");
    // Cleaned up: none of this process's cgroups is left.
    let root = match &cg {
        node::kernel::CgroupCpu::V1(p) | node::kernel::CgroupCpu::V2(p) => p.clone(),
    };
    let prefix = format!("libratory-{}-", std::process::id());
    let left: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn standalone_binary_prints_shares() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("libratory-node-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("parts.toml");
    std::fs::write(
        &file,
        "[[part]]\nestimate = 100.0\nactual = 120.0\ndeadline = 400.0\n\n[[part]]\nestimate = 50.0\nactual = 40.0\ndeadline = 300.0\nat = 20.0\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_libratory-node"))
        .args(["standalone", "--time-scale", "1e-3", "--parts"])
        .arg(&file)
        .args(["--part", "estimate=30,actual=30,deadline=500"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    // Deadlines are met on a quiet machine, but this run shares the host
    // with whatever else runs: assert what the command must print, not the
    // timing (the share tests above check delivery in CPU time).
    assert!(stdout.contains("summary: 3 parts on 1 nodes,"), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("0 "))
            .count(),
        3,
        "one row per part: {stdout}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_libratory-node"))
        .args(["standalone", "--part", "estimate=1,actual=oops,deadline=3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        stderr.contains("--part \"estimate=1,actual=oops,deadline=3\": actual"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_durations_are_errors_not_panics() {
    // Every user-supplied duration: negative, NaN and infinite values get
    // an error naming the option (exit 1), never a panic (exit 101) from
    // Duration::from_secs_f64.
    let part = ["--part", "estimate=1,actual=1,deadline=3"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [&["standalone", "--limit-s=-1"][..], &part[..]].concat(),
            "--limit-s",
        ),
        (
            [&["standalone", "--limit-s=NaN"][..], &part[..]].concat(),
            "--limit-s",
        ),
        (vec!["host", "--for-s=-2"], "--for-s"),
        (vec!["host", "--for-s=inf"], "--for-s"),
        (
            vec![
                "--manager",
                "127.0.0.1:9",
                "--certs",
                "/nonexistent",
                "--link-timeout-s=-5",
            ],
            "--link-timeout-s",
        ),
        (
            vec![
                "--manager",
                "127.0.0.1:9",
                "--certs",
                "/nonexistent",
                "--manager-grace-s=NaN",
            ],
            "--manager-grace-s",
        ),
        (vec!["bench", "fidelity", "--seconds=-1"], "--seconds"),
        (vec!["bench", "overhead", "--period-ms=NaN"], "--period-ms"),
    ];
    for (args, option) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_libratory-node"))
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(option) && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

/// Parts placed with `PlaceReported` are answered through the report sink,
/// `Placed` before anything else of theirs; tiny parts (5 us of CPU, under
/// `inline_slice`) burn on the node's own thread and are counted as job
/// work all the same, and a refusal comes back as `Refused`.
#[test]
fn reported_placements_come_first_and_tiny_parts_burn_inline() {
    let _g = serial();
    for inline_us in [20u64, 0] {
        actix::System::new().block_on(async move {
            let cfg = SliceConfig {
                inline_slice: Duration::from_micros(inline_us),
                ..slice(SpareRule::Proportional)
            };
            let mut host = NodeHost::new(1, cfg, TraceClock::new(0.0, TS)).unwrap();
            let (sink, mut rx) = report_channel();
            let n = host.spawn_node(node(0, 1.0), Some(sink)).unwrap();
            let burned0 = host.pool().burned_ns();
            // 0.005 trace s at time scale 1e-3 and capacity 1: 5 us of CPU.
            // In bursts, as a link hands them over; the refused one amid
            // the last burst, whose others are placed all the same.
            let mut big = part(99, 0.005, 0.005, 1000.0);
            big.memory_kb = 2 * 1024 * 1024;
            for first in (1..=50).step_by(10) {
                let mut burst: Vec<_> = (first..first + 10)
                    .map(|id| part(id, 0.005, 0.005, 1000.0))
                    .collect();
                if first == 41 {
                    burst.insert(5, big.clone());
                }
                n.do_send(PlaceReported(burst));
            }
            let mut placed = std::collections::HashSet::new();
            let (mut done, mut refused, mut burned) = (0, 0, 0u64);
            while done < 50 || refused < 1 {
                let r = actix_rt::time::timeout(Duration::from_secs(20), rx.recv())
                    .await
                    .expect("events within 20 s")
                    .unwrap();
                match r.event {
                    NodeEvent::Placed { part_id, .. } => assert!(placed.insert(part_id)),
                    NodeEvent::Completed(c) => {
                        assert!(placed.contains(&c.part_id), "completed before placed");
                        assert!(c.burned_ns >= 5_000, "{}", c.burned_ns);
                        burned += c.burned_ns;
                        done += 1;
                    }
                    NodeEvent::Refused { part_id, error } => {
                        assert_eq!(part_id, 99);
                        assert!(error.to_string().contains("part 99 needs"), "{error}");
                        refused += 1;
                    }
                    _ => {}
                }
            }
            assert_eq!(host.pool().burned_ns() - burned0, burned);
        });
    }
}
