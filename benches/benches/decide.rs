//! Decision cost of the live admission core at 128, 10,000 and 158,976
//! nodes (the size of Fugaku), with issue 31's targets at 158,976 nodes
//! printed against the p50s of the same run: p50 <= 10 us (Libra,
//! Libra+$) or 50 us (LibraRisk, LibraSLA), and p50 at 158,976 nodes <= 3x
//! the p50 at 10,000. Run with `cargo bench -p libratory-benches --bench
//! decide` (every policy at the three sizes: a few minutes).
//!
//! Builds a live [`ManagerCore`] (reported tracking, as the live manager
//! keeps it) with the nodes registered by node processes of up to 500 nodes
//! each, and drives it with a synthetic stream of jobs in virtual time:
//! parts complete, and every node process reports the progress of its
//! running parts every report period, so the core dead-reckons from real
//! reports. Jobs have hard deadlines (LibraSLA then never places a part
//! where it would be late, as Libra's share test does not) and a penalty
//! rate. Arrivals are paced so that about 0.6 parts per node run (best
//! fit packs them: 16-20% of the nodes hold 1-8 parts, the rest are
//! empty). The warm-up (three part lifetimes: ~117,000 submissions at
//! 158,976 nodes) is decided by Libra's best fit, a few microseconds a
//! decision, with the parts carrying the measured policy's values and
//! spare rule; then the measured policy decides `DECIDE_SETTLE` (200) jobs
//! untimed and the timed ones (`DECIDE_WARMUP=policy`: the measured policy
//! decides the warm-up too, the way to check that the two agree where
//! that is affordable). Each `submit` is timed alone (refresh, policy,
//! books, outputs; completions and reports are not timed), and the bench
//! prints p50 and p99 per policy and cluster size, with:
//! - the baseline measured in the same run: one plain pass over the same
//!   nodes reading one f64 each (`spec.speed` of every `NodeState`). A
//!   decision that looks at every node costs at least this; the ratio
//!   says how many such passes a decision costs;
//! - decisions per second on one core (1 / mean).
//!
//! `DECIDE_BURST=B` (default 1) submits the jobs in bursts of B at one
//! instant, as the live manager decides the requests it read together
//! from a client (a flood: bursts of ~115). `DECIDE_PARTS_PER_NODE`
//! (default 0.6) sets the load (a flood of short jobs: every node busy, 8
//! or more parts each).
//!
//! `DECIDE_CALLGRIND=1`, for a run under callgrind started with
//! instrumentation off (`scripts/decide-instructions.sh` does it), turns
//! it on for each case's timed submissions alone (`callgrind_control -i
//! on`), so that the instructions counted are theirs: a measure of the
//! decision's work that a noisy host does not move.
//!
//! `DECIDE_SUBMITS` (default 2000) sets the timed submissions per case, of
//! which a case takes fewer (at least 200) once its timed decisions took
//! `DECIDE_CASE_SECONDS` (default 20); `DECIDE_NODES` (default
//! `128,10000,158976`) the cluster sizes, `DECIDE_POLICIES` (default
//! libra, libra-plus-dollar, libra-risk, libra-sla) the policies. Every
//! random choice comes from `DECIDE_SEED` (default 13), printed.
//! `DECIDE_SET` sets knobs of the measured policies, `key=value` pairs
//! separated by `;` as `--set` takes them (e.g.
//! `DECIDE_SET=placement=least-loaded` for Libra as its own paper places
//! jobs); the warm-up's Libra keeps its defaults.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::admission::{LinkId, ManagerCore, Output};
use common::busy_index::BusyIndex;
use common::job::{DeadlineType, JobSpec};
use common::node_model::{NodeState, PartValue};
use common::policy::{self, AdmissionPolicy, BoundedReads, Decision, Policy, PolicyConfig};
use common::protocol::{ManagerMsg, NodeInfo, PartId, PartProgress};
use common::share::SpareRule;
use common::workload::WorkloadJob;
use common::workload::{for_each_key_value, set_by_name};
use libratory_benches::env_or;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Seconds between two progress reports of a node process (virtual time).
const REPORT_PERIOD: f64 = 10.0;
/// Nodes per emulated node process.
const NODES_PER_PROCESS: usize = 500;

/// A dispatched part, until it completes.
struct Running {
    link: LinkId,
    part: PartId,
    node: u32,
    start: f64,
    /// When the part completes (virtual time).
    end: f64,
}

/// The harness's own bookkeeping of running parts, kept out of the timed
/// path's way: a slab of parts, a heap of completions by end time, and the
/// parts of each link (for its reports), so that a completion or a report
/// costs what it concerns, not a walk over every running part (at 158,976
/// nodes, ~95,000 of them).
#[derive(Default)]
struct Parts {
    slab: Vec<Option<Running>>,
    free: Vec<usize>,
    /// `(end, slot)`, the earliest end on top (ends are finite).
    ends: BinaryHeap<Reverse<(u64, usize)>>,
    /// Slots of each link's parts (completed ones dropped at its report).
    by_link: Vec<Vec<usize>>,
}

impl Parts {
    fn push(&mut self, r: Running) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slab.push(None);
            self.slab.len() - 1
        });
        self.ends.push(Reverse((r.end.to_bits(), slot)));
        let l = r.link as usize;
        if self.by_link.len() <= l {
            self.by_link.resize_with(l + 1, Vec::new);
        }
        self.by_link[l].push(slot);
        self.slab[slot] = Some(r);
    }

    /// The next part ending by `now`, taken out.
    fn pop_done(&mut self, now: f64) -> Option<Running> {
        let &Reverse((end, slot)) = self.ends.peek()?;
        if f64::from_bits(end) > now {
            return None;
        }
        self.ends.pop();
        self.free.push(slot);
        self.slab[slot].take()
    }

    /// The progress of link `l`'s parts started by `at`, as its node
    /// process reports it (every part at share 0.5).
    fn report(&mut self, l: usize, at: f64, batch: &mut Vec<PartProgress>) {
        batch.clear();
        let Some(slots) = self.by_link.get_mut(l) else {
            return;
        };
        let slab = &self.slab;
        // A slot freed and taken again by another link's part is not this
        // link's any more.
        slots.retain(|&s| slab[s].as_ref().is_some_and(|r| r.link as usize == l));
        slots.sort_unstable();
        slots.dedup();
        batch.extend(slots.iter().filter_map(|&s| {
            let r = slab[s].as_ref()?;
            (r.start <= at).then_some(PartProgress {
                part: r.part,
                node: r.node,
                work_done: 0.5 * (at - r.start),
                share: 0.5,
            })
        }));
    }
}

/// The policy the core runs in a case: the one measured, except that
/// during the warm-up (while `warming` is set) Libra's best fit decides,
/// so that the 16%-busy state of a large cluster is built at Libra's cost
/// rather than by a hundred thousand decisions of a policy costing
/// milliseconds each. The parts placed carry the measured policy's values
/// and run under its spare rule throughout; a settling stretch of the
/// measured policy's own decisions follows before the timed ones, so the
/// state is its own where it decides differently. `DECIDE_WARMUP=policy`
/// warms up with the measured policy itself instead, to check that the
/// figures agree where that is affordable.
struct Warmed {
    measured: Box<dyn AdmissionPolicy>,
    libra: Box<dyn AdmissionPolicy>,
    warming: Arc<AtomicBool>,
}

impl Warmed {
    fn now(&mut self) -> &mut dyn AdmissionPolicy {
        if self.warming.load(Ordering::Relaxed) {
            self.libra.as_mut()
        } else {
            self.measured.as_mut()
        }
    }
}

impl AdmissionPolicy for Warmed {
    fn name(&self) -> &'static str {
        self.measured.name()
    }

    fn decide(&mut self, now: f64, nodes: &[NodeState], job: &JobSpec) -> Decision {
        self.now().decide(now, nodes, job)
    }

    fn decide_indexed(
        &mut self,
        now: f64,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        self.now().decide_indexed(now, nodes, index, job)
    }

    fn bounded_reads(&self) -> Option<BoundedReads> {
        if self.warming.load(Ordering::Relaxed) {
            self.libra.bounded_reads()
        } else {
            self.measured.bounded_reads()
        }
    }

    fn decide_bounded(
        &mut self,
        now: f64,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        self.now().decide_bounded(now, nodes, index, job)
    }

    fn spare_rule(&self) -> SpareRule {
        self.measured.spare_rule()
    }

    fn part_value(&self, job: &JobSpec) -> PartValue {
        self.measured.part_value(job)
    }
}

/// How the state before the timed decisions is built.
#[derive(Clone, Copy, PartialEq)]
enum Warmup {
    /// Libra decides the warm-up, the measured policy settles it.
    Libra,
    /// The measured policy decides all of it.
    Policy,
}

struct Case {
    p50: f64,
    p99: f64,
    mean: f64,
    floor_p50: f64,
    accepted: f64,
    busy_nodes: usize,
    parts: usize,
    /// Decisions timed.
    timed: usize,
    /// Wall seconds of the whole case (warm-up included).
    wall: f64,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i]
}

/// One case's knobs.
struct Knobs {
    timed: usize,
    seed: u64,
    burst: usize,
    per_node: f64,
    warmup: Warmup,
    settle: usize,
    /// Seconds of timed decisions after which a case stops timing (once
    /// it has [`MIN_TIMED`]): a policy costing tens of milliseconds a
    /// decision at 158,976 nodes would take minutes for the full count.
    budget: f64,
    /// Callgrind's instrumentation on for the timed submissions alone.
    callgrind: bool,
    /// The measured policies' knobs (`DECIDE_SET`).
    config: PolicyConfig,
}

/// Timed decisions a case takes at least, whatever its time budget.
const MIN_TIMED: usize = 200;

fn run_case(policy_name: &str, n: usize, k: &Knobs) -> Case {
    let wall = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(k.seed);
    let Ok(Policy::Admission(measured)) = policy::build(policy_name, &k.config, &[]) else {
        panic!("DECIDE_POLICIES: {policy_name} is not a time-shared admission policy");
    };
    let Ok(Policy::Admission(libra)) = policy::build("libra", &PolicyConfig::default(), &[]) else {
        unreachable!("libra is an admission policy")
    };
    let warming = Arc::new(AtomicBool::new(k.warmup == Warmup::Libra));
    let mut core = ManagerCore::new(Policy::Admission(Box::new(Warmed {
        measured,
        libra,
        warming: warming.clone(),
    })));
    let mut link = 0;
    let mut left = n;
    while left > 0 {
        let here = left.min(NODES_PER_PROCESS);
        let infos: Vec<NodeInfo> = (0..here as u32)
            .map(|local| NodeInfo {
                local,
                capacity: 1.0,
                speed: 1.0,
                memory_kb: 1 << 20,
                disk_mb: 1 << 10,
            })
            .collect();
        core.register(link, &format!("proc-{link}"), &infos)
            .expect("valid nodes");
        link += 1;
        left -= here;
    }
    let links = link as usize;

    // Mean part lifetime: actual = RE x U[0.5, 1] at share ~0.5, RE mean
    // 1,100 s: ~1,650 s; mean processors 2.5.
    let mean_parts_per_job = 2.5;
    let mean_life = 1650.0;
    let gap = mean_life * mean_parts_per_job / (k.per_node * n as f64);
    let warmup = ((3.0 * mean_life / gap) as usize).max(1000);
    // The measured policy's own decisions before the timed ones.
    let settle = if k.warmup == Warmup::Libra {
        k.settle
    } else {
        0
    };

    let mut now = 0.0;
    let mut next_report = REPORT_PERIOD;
    let mut running = Parts::default();
    let mut batch: Vec<PartProgress> = Vec::new();
    let mut out: Vec<Output> = Vec::new();
    let mut times: Vec<f64> = Vec::with_capacity(k.timed);
    let mut accepted = 0usize;
    let mut id = 0u64;
    let procs = [1u32, 1, 1, 1, 2, 2, 4, 8];
    let mut timing = 0.0;
    for step in 0..warmup + settle + k.timed {
        if times.len() >= MIN_TIMED && timing > k.budget {
            break;
        }
        if step == warmup {
            warming.store(false, Ordering::Relaxed);
        }
        // A burst's first job advances the clock; the rest share its
        // instant, with nothing completing or reporting in between.
        if step % k.burst == 0 {
            now += gap * k.burst as f64;
            // Completions due by now (untimed), earliest first.
            while let Some(r) = running.pop_done(now) {
                out.clear();
                core.completed(now, r.link, r.part, r.end, &mut out)
                    .expect("known part");
            }
            // Progress reports (untimed): every process, every running part.
            while next_report <= now {
                let at = next_report;
                for l in 0..links {
                    running.report(l, at, &mut batch);
                    if !batch.is_empty() {
                        core.progress(l as LinkId, at, &batch)
                            .expect("valid report");
                    }
                }
                next_report += REPORT_PERIOD;
            }
        }
        let timed = step >= warmup + settle;
        if step == warmup + settle && k.callgrind {
            callgrind_instrument(true);
        }
        let before = times.len();
        submit_one(
            &mut core,
            &mut rng,
            &mut id,
            now,
            timed,
            &mut out,
            &mut times,
            &mut running,
            &mut accepted,
            procs,
        );
        if times.len() > before {
            timing += times[before] / 1e9;
        }
    }

    if k.callgrind {
        callgrind_instrument(false);
    }
    // The floor: one pass over the same nodes reading one f64 each.
    let (view, _) = core.snapshot(now);
    let view = view.to_vec();
    let busy_nodes = view.iter().filter(|s| !s.parts.is_empty()).count();
    let parts = view.iter().map(|s| s.parts.len()).sum();
    let mut floor: Vec<f64> = (0..k.timed.max(200))
        .map(|_| {
            let t = Instant::now();
            let s: f64 = black_box(&view).iter().map(|s| s.spec.speed).sum();
            black_box(s);
            t.elapsed().as_nanos() as f64
        })
        .collect();
    floor.sort_by(f64::total_cmp);

    let mean = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    Case {
        p50: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        mean,
        floor_p50: percentile(&floor, 0.5),
        accepted: accepted as f64 / times.len() as f64,
        timed: times.len(),
        busy_nodes,
        parts,
        wall: wall.elapsed().as_secs_f64(),
    }
}

/// Turns callgrind's instrumentation of this process on or off
/// (`DECIDE_CALLGRIND`); a run not under callgrind is refused loudly.
fn callgrind_instrument(on: bool) {
    let status = std::process::Command::new("callgrind_control")
        .args(["-i", if on { "on" } else { "off" }])
        .arg(std::process::id().to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("DECIDE_CALLGRIND: callgrind_control (valgrind) not found");
    assert!(
        status.success(),
        "DECIDE_CALLGRIND: callgrind_control failed ({status}): is the bench running under callgrind?"
    );
}

/// Submits one random job at `now`, timing the submission when `timed`,
/// and books what it dispatched as running.
#[allow(clippy::too_many_arguments)]
fn submit_one(
    core: &mut ManagerCore,
    rng: &mut ChaCha8Rng,
    id: &mut u64,
    now: f64,
    timed: bool,
    out: &mut Vec<Output>,
    times: &mut Vec<f64>,
    running: &mut Parts,
    accepted: &mut usize,
    procs: [u32; 8],
) {
    *id += 1;
    let re: f64 = rng.random_range(200.0..2000.0);
    let d = re * rng.random_range(2.0..5.0);
    let p = procs[rng.random_range(0..procs.len())];
    let actual = re * rng.random_range(0.5..1.0);
    let spec = JobSpec::new(*id, now, re, p, d, 1e6)
        .with_deadline_type(DeadlineType::Hard, rng.random_range(0.0..2.0));
    let job = WorkloadJob {
        spec,
        actual_runtime: actual,
    };
    out.clear();
    let t = Instant::now();
    core.submit(now, job, out).expect("valid job");
    let dt = t.elapsed().as_nanos() as f64;
    if timed {
        times.push(dt);
    }
    for o in out.iter() {
        match o {
            Output::Send {
                link,
                msg: ManagerMsg::Dispatch(d),
            } => running.push(Running {
                link: *link,
                part: d.part,
                node: d.node,
                start: now,
                end: now + 2.0 * d.actual,
            }),
            Output::Decided {
                decision: Decision::Accept(_),
                ..
            } if timed => *accepted += 1,
            _ => {}
        }
    }
}

fn main() {
    let seed: u64 = env_or("DECIDE_SEED", 13);
    let timed: usize = env_or("DECIDE_SUBMITS", 2000);
    let sizes: Vec<usize> = env_or("DECIDE_NODES", "128,10000,158976".to_string())
        .split(',')
        .map(|s| s.trim().parse().expect("DECIDE_NODES: counts"))
        .collect();
    let burst: usize = env_or("DECIDE_BURST", 1);
    assert!(burst > 0, "DECIDE_BURST: a count > 0");
    let per_node: f64 = env_or("DECIDE_PARTS_PER_NODE", 0.6);
    assert!(per_node > 0.0, "DECIDE_PARTS_PER_NODE: a number > 0");
    let warmup = match env_or("DECIDE_WARMUP", "libra".to_string()).as_str() {
        "libra" => Warmup::Libra,
        "policy" => Warmup::Policy,
        other => panic!("DECIDE_WARMUP={other}: libra or policy"),
    };
    let settle: usize = env_or("DECIDE_SETTLE", 200);
    let callgrind = std::env::var_os("DECIDE_CALLGRIND").is_some_and(|v| v == "1");
    let budget: f64 = env_or("DECIDE_CASE_SECONDS", 20.0);
    let policies = env_or(
        "DECIDE_POLICIES",
        "libra,libra-plus-dollar,libra-risk,libra-sla".to_string(),
    );
    let sets = env_or("DECIDE_SET", String::new());
    let mut config = PolicyConfig::default();
    for_each_key_value(sets.split(';').filter(|s| !s.trim().is_empty()), |k, v| {
        set_by_name(&mut config, k, v)
    })
    .unwrap_or_else(|e| panic!("DECIDE_SET={sets}: {e}"));
    let knobs = Knobs {
        config,
        timed,
        seed,
        burst,
        per_node,
        warmup,
        settle,
        budget,
        callgrind,
    };
    println!(
        "decision cost of ManagerCore::submit (live core, reported tracking); seed {seed}, \
         {timed} timed submissions per case (fewer, at least {MIN_TIMED}, once they took \
         {budget} s), bursts of {burst} at one instant, \
         {per_node} running parts per node aimed at; knobs set: {}; warm-up decided by {}",
        if sets.trim().is_empty() {
            "none"
        } else {
            sets.trim()
        },
        match warmup {
            Warmup::Libra => format!("Libra, then {settle} decisions of the policy measured"),
            Warmup::Policy => "the policy measured".to_string(),
        }
    );
    println!(
        "baseline (same run): one pass over the nodes reading one f64 each; ratio = decision p50 / pass p50"
    );
    println!(
        "{:>6} {:<18} {:>6} {:>6} {:>5} {:>5} {:>9} {:>9} {:>9} {:>7} {:>12} {:>7}",
        "nodes",
        "policy",
        "busy",
        "parts",
        "timed",
        "acc%",
        "p50 us",
        "p99 us",
        "pass us",
        "ratio",
        "decisions/s",
        "case s"
    );
    // p50 per (policy, size), for the flatness ratios below.
    let mut p50s: Vec<(String, usize, f64)> = Vec::new();
    for &n in &sizes {
        for name in policies.split(',') {
            let c = run_case(name.trim(), n, &knobs);
            p50s.push((name.trim().to_string(), n, c.p50));
            println!(
                "{:>6} {:<18} {:>6} {:>6} {:>5} {:>5.1} {:>9.2} {:>9.2} {:>9.3} {:>7.1} {:>12.0} {:>7.1}",
                n,
                name.trim(),
                c.busy_nodes,
                c.parts,
                c.timed,
                100.0 * c.accepted,
                c.p50 / 1e3,
                c.p99 / 1e3,
                c.floor_p50 / 1e3,
                c.p50 / c.floor_p50,
                1e9 / c.mean,
                c.wall
            );
        }
    }
    // Issue 31's targets at the size of Fugaku (158,976 nodes): p50 <= 10
    // us (Libra, Libra+$) or 50 us (LibraRisk, LibraSLA), and p50 there at
    // most 3x the p50 at 10,000 nodes, both from this run.
    let p50 = |name: &str, n: usize| {
        p50s.iter()
            .find(|(p, m, _)| p == name && *m == n)
            .map(|c| c.2)
    };
    let verdict = |met: bool| if met { "met" } else { "missed" };
    for name in policies.split(',').map(str::trim) {
        let at: Vec<String> = sizes
            .iter()
            .filter_map(|&n| p50(name, n).map(|p| format!("{n}: {:.2} us", p / 1e3)))
            .collect();
        println!("{name:<18} p50 at {}", at.join(", "));
        let (Some(big), Some(ten)) = (p50(name, 158_976), p50(name, 10_000)) else {
            continue;
        };
        let target = if name == "libra" || name == "libra-plus-dollar" {
            10.0
        } else {
            50.0
        };
        println!(
            "{name:<18} p50 at 158,976 nodes {:.2} us (target <= {target} us: {:.2}x of it, {}); \
             p50 at 158,976 / at 10,000 = {:.2} (target <= 3, {})",
            big / 1e3,
            big / 1e3 / target,
            verdict(big / 1e3 <= target),
            big / ten,
            verdict(big / ten <= 3.0)
        );
    }
}
