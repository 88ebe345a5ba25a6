//! Unit tests of the admission core.

use crate::job::*;
use crate::policy::{self, AdmissionPolicy, Libra, PolicyConfig, RejectReason};
use crate::protocol::{Dispatch, NodeInfo, PartId, PartProgress, QuoteAnswer};

use super::*;

/// A node of speed 1 with room for any test job (shared by the
/// admission modules' own tests).
pub(super) fn info(local: u32) -> NodeInfo {
    NodeInfo {
        local,
        capacity: 1.0,
        speed: 1.0,
        memory_kb: 1 << 20,
        disk_mb: 1 << 10,
    }
}

fn job(id: JobId, submit: f64, re: f64, p: u32, d: f64) -> WorkloadJob {
    WorkloadJob {
        spec: JobSpec::new(id, submit, re, p, d, 1e9).with_urgency(Urgency::Low),
        actual_runtime: re,
    }
}

fn dispatches(out: &[Output]) -> Vec<(LinkId, Dispatch)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send {
                link,
                msg: ManagerMsg::Dispatch(d),
            } => Some((*link, d.clone())),
            _ => None,
        })
        .collect()
}

fn libra() -> ManagerCore {
    let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
    ManagerCore::new(p)
}

#[test]
fn admits_dispatches_and_records_completion() {
    // Two links with two nodes each: global ids 0,1 (link 10) and 2,3
    // (link 20). Job 1 (RE 50, D 100, P 2): best fit on empty nodes is
    // the lowest indices, nodes 0 and 1 on link 10, locals 0 and 1.
    let mut c = libra();
    assert_eq!(
        c.register(10, "a", &[info(0), info(1)]).unwrap(),
        vec![0, 1]
    );
    assert_eq!(
        c.register(20, "b", &[info(0), info(1)]).unwrap(),
        vec![2, 3]
    );
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 2, 100.0), &mut out)
        .unwrap();
    let d = dispatches(&out);
    assert_eq!(d.len(), 2);
    assert_eq!((d[0].0, d[0].1.node, d[0].1.part.index), (10, 0, 0));
    assert_eq!((d[1].0, d[1].1.node, d[1].1.part.index), (10, 1, 1));
    assert_eq!(d[0].1.deadline, 100.0);
    // Job 2 (RE 60, D 100, P 1): nodes 0 and 1 hold q 0.5 and 0.6 more
    // would not fit (1.1); best fit among the empty nodes 2 and 3 is 2.
    out.clear();
    c.submit(1.0, job(2, 1.0, 60.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out)[0].0, 20);
    // Completions: job 1 finishes when both parts are done, at the
    // later time.
    out.clear();
    let p0 = PartId { job: 1, index: 0 };
    let p1 = PartId { job: 1, index: 1 };
    c.completed(40.0, 10, p0, 39.0, &mut out).unwrap();
    assert!(out.is_empty());
    c.completed(45.0, 10, p1, 44.5, &mut out).unwrap();
    assert_eq!(out, vec![Output::Finished { job: 1 }]);
    let r = c.records().next().unwrap();
    assert_eq!(r.finish, Some(44.5));
    assert!(r.met());
    // A completion for a part the link does not hold is an error naming
    // the link.
    let e = c.completed(46.0, 20, p0, 46.0, &mut out).unwrap_err();
    assert!(e.to_string().contains("link 20"));
}

#[test]
fn dead_reckoning_feeds_admission() {
    // One node. Job 1: RE 50, D 100 (q 0.5). At t = 40 the node reports
    // 40 s of work done at share 1 (it had the node alone). Dead
    // reckoning at t = 50: 40 + 1 x 10 = 50 done: job 1 has no
    // estimated work left and counts 0, so job 2 (RE 90, D 100, q 0.9)
    // fits. Without the report job 1 would still count 50/50 = 1.0 at
    // t = 50 and job 2 would be refused.
    let mut c = libra();
    c.register(1, "a", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    c.progress(
        1,
        40.0,
        &[PartProgress {
            part: PartId { job: 1, index: 0 },
            node: 0,
            work_done: 40.0,
            share: 1.0,
        }],
    )
    .unwrap();
    out.clear();
    c.submit(50.0, job(2, 50.0, 90.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out).len(), 1, "{out:?}");

    let mut c = libra();
    c.register(1, "a", &[info(0)]).unwrap();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    out.clear();
    c.submit(50.0, job(2, 50.0, 90.0, 1, 100.0), &mut out)
        .unwrap();
    assert!(dispatches(&out).is_empty());
}

#[test]
fn a_report_counts_work_in_the_nodes_own_processor_time() {
    // One node of speed 0.5. Job 1: RE 25 reference seconds, D 100: 50 s
    // of its processor time (q 0.5). At t = 40 it reports 20 reference
    // seconds of work done at share 1: 20 / 0.5 = 40 s of its time. At
    // t = 50: 40 + 10 = 50 done, nothing left (q 0), so job 2 (RE 45: 90
    // s there, q 0.9) fits. Counted as 20 x 0.5 = 10 s, job 1 would have
    // 30 s left over 50 (q 0.6) and job 2 would be refused.
    let mut c = libra();
    c.register(
        1,
        "a",
        &[NodeInfo {
            speed: 0.5,
            ..info(0)
        }],
    )
    .unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 25.0, 1, 100.0), &mut out)
        .unwrap();
    c.progress(
        1,
        40.0,
        &[PartProgress {
            part: PartId { job: 1, index: 0 },
            node: 0,
            work_done: 20.0,
            share: 1.0,
        }],
    )
    .unwrap();
    out.clear();
    c.submit(50.0, job(2, 50.0, 45.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out).len(), 1, "{out:?}");
}

impl ManagerCore {
    /// The snapshot at `now` as the refresh would bring it, without
    /// touching the core (which may hold busy nodes behind `now`).
    fn fresh_view(&self, now: Time) -> Vec<NodeState> {
        let Tracking::Reported(reports) = &self.tracking else {
            unreachable!("live cores only")
        };
        let mut view = self.view.clone();
        for (st, rs) in view.iter_mut().zip(reports) {
            for (p, r) in st.parts.iter_mut().zip(rs) {
                p.cpu_done = super::tracking::reckoned_done(p, r.as_ref(), now);
            }
        }
        view
    }
}

/// One random live run for [`decisions_from_bounds_equal_the_plain_scan`]:
/// every submission's decision (accept with nodes and cost, or reason
/// and detail) against the plain scan of `policy` on the snapshot at
/// that instant. Returns (decisions, from the bounds, accepted), the
/// first 0 when the nodes have two speeds (no bounded decisions then).
fn bounded_against_scan(seed: u64, policy_name: &str, cfg: &PolicyConfig) -> (u64, u64, u64) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut c = ManagerCore::new(policy::build(policy_name, cfg, &[]).unwrap());
    c.bounded_from = 0;
    let mut scan = match policy::build(policy_name, cfg, &[]).unwrap() {
        policy::Policy::Admission(p) => p,
        policy::Policy::Queue(_) => unreachable!(),
    };
    // One to four node processes; one speed, or (one run in six) two.
    let procs = rng.random_range(1..=4u32);
    let two_speeds = rng.random_range(0..6) == 0 && procs > 1;
    let mut links = Vec::new();
    for l in 0..procs {
        let n = rng.random_range(1..=24u32);
        let speed = if two_speeds && l % 2 == 1 { 2.0 } else { 1.0 };
        let infos: Vec<NodeInfo> = (0..n).map(|k| NodeInfo { speed, ..info(k) }).collect();
        c.register(l as LinkId, &format!("p{l}"), &infos).unwrap();
        links.push((l as LinkId, infos));
    }
    let mut running: Vec<(LinkId, PartId)> = Vec::new();
    let (mut now, mut decided, mut accepted) = (0.0, 0, 0);
    for id in 1..=300u64 {
        // Bursts at one instant, small steps inside a bound's window,
        // and jumps past it.
        match rng.random_range(0..10) {
            0..=3 => {}
            4..=8 => now += rng.random_range(0.0..3.0),
            _ => now += rng.random_range(5.0..40.0),
        }
        let mut out = Vec::new();
        match rng.random_range(0..10) {
            0..=5 => {
                // Jobs of 1-6 parts; shares from tiny (tying the idle
                // nodes) to beyond one node; a few need memory, a few
                // have a small budget.
                let p = rng.random_range(1..=6);
                let mut d = rng.random_range(5.0..400.0);
                let mut re = d * [1e-12, 0.05, 0.2, 0.35, 0.5, 0.8, 1.2][rng.random_range(0..7)];
                if rng.random_range(0..12) == 0 {
                    // A part with work (above the 1e-6 s below which a part
                    // counts as done) due so far ahead that its node's load
                    // stays within KEY_TIE_EPS of an idle node's: a busy
                    // node that ties with the idle ones (least loaded).
                    d = 20_000.0;
                    re = rng.random_range(2e-6..1e-5);
                } else if rng.random_range(0..12) == 0 {
                    // A window past the last finite one Libra+$'s caps are
                    // taken at (32,768 s): its walk's caps there are the
                    // nodes' remaining times.
                    d = rng.random_range(40_000.0..80_000.0);
                    re = d * [1e-4, 1e-3, 0.05][rng.random_range(0..3)];
                }
                let mut j = job(id, now, re, p, d);
                if rng.random_range(0..12) == 0 {
                    j.spec.resources.memory_kb = 1;
                }
                if rng.random_range(0..12) == 0 {
                    j.spec.qos.budget = re;
                }
                // Some hard deadlines with penalties (LibraSLA turns down
                // nodes where they would be late).
                if rng.random_range(0..3) == 0 {
                    let rate = rng.random_range(0.0..2.0);
                    j.spec = j.spec.with_deadline_type(DeadlineType::Hard, rate);
                }
                let want = {
                    let view = c.fresh_view(now);
                    let ids = c.view_ids.clone();
                    match scan.decide(now, &view, &j.spec) {
                        Decision::Accept(mut a) => {
                            for n in &mut a.nodes {
                                *n = ids[*n] as usize;
                            }
                            Decision::Accept(a)
                        }
                        d => d,
                    }
                };
                c.submit(now, j, &mut out).unwrap();
                let got = out.iter().find_map(|o| match o {
                    Output::Decided { decision, .. } => Some(decision.clone()),
                    _ => None,
                });
                assert_eq!(got, Some(want), "seed {seed}, job {id} at {now}");
                decided += 1;
                running.extend(dispatches(&out).into_iter().map(|(l, d)| (l, d.part)));
                accepted += u64::from(!dispatches(&out).is_empty());
            }
            6..=7 if !running.is_empty() => {
                let (link, part) = running.swap_remove(rng.random_range(0..running.len()));
                c.completed(now, link, part, now, &mut out).unwrap();
            }
            _ => {
                // A report from one process: its parts' progress at
                // shares above, at or below what they need.
                let (link, _) = links[rng.random_range(0..links.len())];
                let parts: Vec<PartProgress> = running
                    .iter()
                    .filter(|(l, _)| *l == link)
                    .map(|&(_, part)| PartProgress {
                        part,
                        node: 0,
                        work_done: rng.random_range(0.0..50.0),
                        share: rng.random_range(0.0..=1.0),
                    })
                    .collect();
                c.progress(link, now, &parts).unwrap();
            }
        }
    }
    if two_speeds {
        assert_eq!(c.bounded_decisions(), 0);
        decided = 0;
    }
    (decided, c.bounded_decisions(), accepted)
}

/// The suite's count of random cases, or `PROPTEST_CASES` when it is set
/// (as for a plain proptest config): scripts/mutants.sh runs fewer per
/// mutant, the suite keeps its count.
fn cases(full: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(full)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(cases(48)))]

    /// Decisions taken from the busy index's bounds (only busy nodes
    /// the bounds leave open brought up to date) are the plain scan's
    /// on the snapshot at that instant: accept or reject, the nodes,
    /// the cost, the reason and its detail, ties included; for Libra
    /// (best fit, least loaded) and Libra+$, and for LibraRisk (node order,
    /// best fit) and LibraSLA (whole and per-part returns) deciding on
    /// the busy index's candidates.
    #[test]
    fn decisions_from_bounds_equal_the_plain_scan(seed in proptest::prelude::any::<u64>()) {
        let (decided, bounded, accepted) =
            bounded_against_scan(seed, "libra", &PolicyConfig::default());
        // (Every node a decision settles from its line alone is checked
        // against its exact load in debug builds, and the decision against
        // the scan here; `lines_settle_nodes_without_their_exact_load`
        // checks the path runs.)
        // The bounds must have been used, and jobs placed.
        proptest::prop_assert!(bounded * 3 >= decided, "{bounded} of {decided} from bounds");
        proptest::prop_assert!(accepted > 0 || decided == 0);
        let least = PolicyConfig { placement: policy::Placement::LeastLoaded, ..PolicyConfig::default() };
        let (decided, bounded, _) = bounded_against_scan(seed, "libra", &least);
        proptest::prop_assert!(bounded * 3 >= decided, "least loaded: {bounded} of {decided} from bounds");
        // The rest of the family decides on the candidates the busy
        // index yields (busy nodes, one idle node per speed standing in
        // for its group): every decision the plain scan's.
        let default = PolicyConfig::default();
        // Libra+$ decides from the bounds too.
        let (decided, bounded, _) = bounded_against_scan(seed, "libra-plus-dollar", &default);
        proptest::prop_assert!(bounded * 3 >= decided, "Libra+$: {bounded} of {decided} from bounds");
        for other in ["libra-plus-dollar", "libra-risk", "libra-sla"] {
            let (decided, _, accepted) = bounded_against_scan(seed, other, &default);
            proptest::prop_assert!(accepted > 0 || decided == 0, "{other}");
        }
        // LibraSLA walks the busy nodes by their sum of returns (every
        // node its stop leaves out checked against its projection in
        // debug builds), whole and per-part returns.
        let (decided, bounded, _) = bounded_against_scan(seed, "libra-sla", &default);
        proptest::prop_assert!(bounded * 3 >= decided, "LibraSLA: {bounded} of {decided} from bounds");
        // LibraRisk in node order decides from the bounds, its verdicts
        // certified or projected (every certificate checked against the
        // projection in debug builds), under the spare rules its proof
        // covers and the ones it does not, with and without the shortcut.
        let (decided, bounded, _) = bounded_against_scan(seed, "libra-risk", &default);
        proptest::prop_assert!(bounded * 3 >= decided, "LibraRisk: {bounded} of {decided} from bounds");
        for (spare_rule, risk_shortcut) in [
            (crate::share::SpareRule::HighestReturn, true),
            (crate::share::SpareRule::Idle, true),
            (crate::share::SpareRule::Proportional, false),
        ] {
            let cfg = PolicyConfig { spare_rule, risk_shortcut, ..default.clone() };
            bounded_against_scan(seed, "libra-risk", &cfg);
        }
        let risk_fit = PolicyConfig { risk_order: policy::RiskOrder::BestFit, ..default.clone() };
        bounded_against_scan(seed, "libra-risk", &risk_fit);
        let sla_part = PolicyConfig { sla_return_per_part: true, ..default.clone() };
        let (decided, bounded, _) = bounded_against_scan(seed, "libra-sla", &sla_part);
        proptest::prop_assert!(bounded * 3 >= decided, "LibraSLA per part: {bounded} of {decided} from bounds");
        // Without the shortcut LibraSLA brings the nodes up to date.
        let sla_long = PolicyConfig { risk_shortcut: false, ..default };
        let (_, bounded, _) = bounded_against_scan(seed, "libra-sla", &sla_long);
        proptest::prop_assert_eq!(bounded, 0);
    }
}

#[test]
fn lines_settle_nodes_without_their_exact_load() {
    // The same random runs as the property test above, seeded: decisions
    // equal the plain scan's while the bounded walk settles nodes from
    // their line (each checked against its exact load in debug builds).
    use crate::policy::steps::LINE_SETTLED;
    let before = LINE_SETTLED.with(|c| c.get());
    for seed in 0..16 {
        bounded_against_scan(seed, "libra", &PolicyConfig::default());
    }
    let settled = LINE_SETTLED.with(|c| c.get()) - before;
    assert!(settled > 20, "{settled} nodes settled from their line");
}

#[test]
fn libra_risk_settles_nodes_by_certificate() {
    // The same random runs, seeded: LibraRisk's decisions in node order
    // equal the plain scan's while its bounded walk settles busy nodes
    // by certificate (each checked against the projection in debug
    // builds), not only by projecting them.
    use crate::policy::steps::RISK_SETTLED;
    let before = RISK_SETTLED.with(|c| c.get());
    for seed in 0..16 {
        bounded_against_scan(seed, "libra-risk", &PolicyConfig::default());
    }
    let settled = RISK_SETTLED.with(|c| c.get()) - before;
    assert!(settled > 20, "{settled} nodes settled by certificate");
}

#[test]
fn libra_sla_stops_its_walk_by_return_early() {
    // The same random runs, seeded: LibraSLA's decisions equal the plain
    // scan's while its walk by return leaves busy nodes out (each checked
    // against its projection in debug builds).
    use crate::policy::sla_late_certain as late;
    use crate::policy::sla_late_projected as projected;
    use crate::policy::sla_late_summary as summary;
    use crate::policy::sla_return_left as left;
    let (before, late_before, summary_before) = (left(), late(), summary());
    let projected_before = projected();
    for seed in 0..16 {
        bounded_against_scan(seed, "libra-sla", &PolicyConfig::default());
    }
    let skipped = left() - before;
    assert!(skipped > 20, "{skipped} busy nodes left out");
    // And settles nodes where a hard job is certain to be late without
    // projecting them (each checked against its projection in debug
    // builds), in accepted and rejected decisions alike, by the
    // certificate and from the index's late deadlines.
    let settled = late() - late_before;
    assert!(settled > 20, "{settled} busy nodes settled as late");
    let from_index = summary() - summary_before;
    assert!(
        from_index > 20,
        "{from_index} busy nodes settled from the index"
    );
    // And the nodes neither settles where the job's projection has it
    // late, without their projection without it.
    let from_projection = projected() - projected_before;
    assert!(
        from_projection > 20,
        "{from_projection} busy nodes settled from the job's projection"
    );
}

#[test]
fn libra_plus_dollar_prices_nodes_from_their_line() {
    // As above for Libra+$: decisions equal the plain scan's while its
    // bounded walk settles nodes from their line (the remaining-time
    // bound checked against the exact committed time in debug builds).
    use crate::policy::plus_dollar_line_priced as priced;
    let before = priced();
    for seed in 0..16 {
        bounded_against_scan(seed, "libra-plus-dollar", &PolicyConfig::default());
    }
    let settled = priced() - before;
    assert!(settled > 20, "{settled} nodes settled from their line");
}

#[test]
fn busy_index_follows_the_view_and_decisions_match_a_walk_over_every_node() {
    // Seeded: three node processes of mixed speeds; submissions of 1-4
    // processors, some completions, progress reports, a lost process
    // that comes back. After every step the core's busy index must be
    // what the view says, and every Libra decision the core takes (on
    // the index) must be the one a walk over every node takes on the
    // same snapshot.
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261123);
    let mut c = libra();
    let sized = |local: u32, speed: f64| NodeInfo {
        speed,
        ..info(local)
    };
    let links: [(LinkId, &str, f64); 3] = [(10, "a", 1.0), (20, "b", 2.0), (30, "c", 0.5)];
    for (link, host, speed) in links {
        let infos: Vec<NodeInfo> = (0..6).map(|k| sized(k, speed)).collect();
        c.register(link, host, &infos).unwrap();
    }
    let mut walk = Libra::new(PolicyConfig::default());
    let mut running: Vec<(LinkId, PartId)> = Vec::new();
    let mut now = 0.0;
    let mut accepted = 0;
    for id in 1..=600u64 {
        // Half the steps happen at the instant of the one before, as a
        // burst of submissions is decided at one instant: the core then
        // reuses the loads it remembered, and must have forgotten those
        // of every node that changed in between.
        if rng.random_bool(0.5) {
            now += rng.random_range(0.0..2.0);
        }
        let op = rng.random_range(0..10);
        let mut out = Vec::new();
        if op < 6 {
            let p = rng.random_range(1..=4);
            let re = rng.random_range(1.0..40.0);
            let d = re * rng.random_range(1.0..6.0);
            let j = job(id, now, re, p, d);
            let want = {
                let (view, ids) = c.snapshot(now);
                match walk.decide(now, view, &j.spec) {
                    Decision::Accept(a) => {
                        Some(a.nodes.iter().map(|&n| ids[n] as usize).collect::<Vec<_>>())
                    }
                    Decision::Reject(_) => None,
                }
            };
            c.submit(now, j, &mut out).unwrap();
            let got = out.iter().find_map(|o| match o {
                Output::Decided { decision, .. } => Some(match decision {
                    Decision::Accept(a) => Some(a.nodes.clone()),
                    Decision::Reject(_) => None,
                }),
                _ => None,
            });
            assert_eq!(got, Some(want), "job {id}");
            accepted += usize::from(matches!(got, Some(Some(_))));
            running.extend(dispatches(&out).into_iter().map(|(l, d)| (l, d.part)));
        } else if op < 8 && !running.is_empty() {
            let (link, part) = running.swap_remove(rng.random_range(0..running.len()));
            c.completed(now, link, part, now, &mut out).unwrap();
        } else if op < 9 {
            // A report from one process on every part it holds.
            let (link, _, _) = links[rng.random_range(0..3)];
            let parts: Vec<PartProgress> = running
                .iter()
                .filter(|(l, _)| *l == link)
                .map(|&(_, part)| PartProgress {
                    part,
                    node: 0,
                    work_done: rng.random_range(0.0..5.0),
                    share: rng.random_range(0.0..1.0),
                })
                .collect();
            c.progress(link, now, &parts).unwrap();
        } else {
            let (link, host, speed) = links[rng.random_range(0..3)];
            c.link_lost(now, link, "test", &mut out);
            running.retain(|(l, _)| *l != link);
            let infos: Vec<NodeInfo> = (0..6).map(|k| sized(k, speed)).collect();
            c.register(link, host, &infos).unwrap();
        }
        assert!(c.busy.agrees_with(&c.view), "after step {id} (op {op})");
        // What the core holds for `now` is what it computes from scratch.
        let kept = c.snapshot(now).0.to_vec();
        for k in 0..c.view.len() {
            c.busy.forget_load(k);
        }
        assert_eq!(kept, c.snapshot(now).0, "after step {id} (op {op})");
    }
    assert!(
        accepted > 100,
        "{accepted} accepted: the test must place parts"
    );
}

#[test]
fn decisions_at_one_instant_see_the_parts_placed_before_them() {
    // Two nodes, three jobs at t = 0 (a burst decided at one instant).
    // Libra's share test (required share RE/D summed per node <= 1) and
    // best fit, by hand:
    //   job 1, share 10/100 = 0.1: both idle, node 0 (lower index);
    //   job 2, share 50/100 = 0.5: node 0 0.1 + 0.5 = 0.6, node 1 0.5:
    //     best fit takes node 0 (now 0.6);
    //   job 3, share 0.5: node 0 0.6 + 0.5 = 1.1 > 1, so node 1.
    // A load of node 0 remembered before job 2 and not forgotten would
    // put job 3 on node 0 (0.1 + 0.5).
    let mut c = libra();
    c.register(10, "a", &[info(0), info(1)]).unwrap();
    let mut nodes = Vec::new();
    for (id, re) in [(1, 10.0), (2, 50.0), (3, 50.0)] {
        let mut out = Vec::new();
        c.submit(0.0, job(id, 0.0, re, 1, 100.0), &mut out).unwrap();
        let d = dispatches(&out);
        assert_eq!(d.len(), 1, "job {id} accepted");
        nodes.push(d[0].1.node);
    }
    assert_eq!(nodes, vec![0, 0, 1]);
    // A job of share 0.9 fits neither (1.5, 1.4): rejected, after the
    // core brought both nodes' loads up to t = 0.
    let mut out = Vec::new();
    c.submit(0.0, job(5, 0.0, 90.0, 1, 100.0), &mut out)
        .unwrap();
    assert!(dispatches(&out).is_empty(), "job 5 rejected");
    // And a report at the same instant counts too: node 1 reports its
    // part 40 % done at t = 0 (it cannot be, but the core takes the
    // report as it comes), so its load is (50 - 20) / 100 = 0.3; a job of
    // share 0.7 then fits node 1 (1.0), not node 0 (1.3).
    c.progress(
        10,
        0.0,
        &[PartProgress {
            part: PartId { job: 3, index: 0 },
            node: 1,
            work_done: 20.0,
            share: 0.5,
        }],
    )
    .unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(4, 0.0, 70.0, 1, 100.0), &mut out)
        .unwrap();
    let d = dispatches(&out);
    assert_eq!(d.len(), 1, "job 4 accepted");
    assert_eq!(d[0].1.node, 1);
}

#[test]
fn lost_link_loses_parts_cancels_siblings_and_leaves_the_view() {
    let mut c = libra();
    c.register(10, "a", &[info(0)]).unwrap();
    c.register(20, "b", &[info(0)]).unwrap();
    let mut out = Vec::new();
    // P 2 spans both links.
    c.submit(0.0, job(1, 0.0, 50.0, 2, 100.0), &mut out)
        .unwrap();
    out.clear();
    c.link_lost(5.0, 10, "idle timeout", &mut out);
    assert!(out.contains(&Output::Send {
        link: 20,
        msg: ManagerMsg::Cancel {
            part: PartId { job: 1, index: 1 }
        }
    }));
    assert!(out.contains(&Output::Finished { job: 1 }));
    let r = c.records().next().unwrap();
    assert!(r.lost && r.detail.contains("idle timeout") && r.detail.contains("node process a"));
    assert_eq!(c.live_nodes(), 1);
    // A 2-processor job no longer fits: only one node left.
    out.clear();
    c.submit(6.0, job(2, 6.0, 10.0, 2, 100.0), &mut out)
        .unwrap();
    assert!(
        matches!(&out[0], Output::Decided { decision: Decision::Reject(r), .. } if r.reason == RejectReason::Resources)
    );
    // The process rejoins: its node comes back as a new node (id 2).
    assert_eq!(c.register(10, "a", &[info(0)]).unwrap(), vec![2]);
    out.clear();
    c.submit(7.0, job(3, 7.0, 10.0, 2, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out).len(), 2);
}

#[test]
fn live_space_shared_policies_plan_with_real_estimates() {
    // EDF built before any node registered (as a live run does). Job 1
    // (RE 100) holds the only node; job 2 (RE 50, deadline 120) waits.
    // When job 1 ends at 100, 100 + 50 > 120: EDF must reject job 2 for
    // its deadline, which it can only see if it plans with job 2's
    // estimate on the registered node (not with a zero-length one).
    let p = policy::build("edf", &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    c.register(1, "a", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 100.0, 1, 1000.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 50.0, 1, 120.0), &mut out)
        .unwrap();
    out.clear();
    c.completed(100.0, 1, PartId { job: 1, index: 0 }, 100.0, &mut out)
        .unwrap();
    assert!(dispatches(&out).is_empty(), "{out:?}");
    assert_eq!(c.record(2).unwrap().reason, Some(RejectReason::Deadline));
}

#[test]
fn queue_policy_starts_exclusive_parts_and_frees_on_completion() {
    let specs: Vec<NodeSpec> = Vec::new();
    let p = policy::build("fifo", &PolicyConfig::default(), &specs).unwrap();
    let mut c = ManagerCore::new(p);
    c.register(1, "a", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 10.0, 1, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 10.0, 1, 100.0), &mut out)
        .unwrap();
    let d = dispatches(&out);
    assert_eq!(d.len(), 1);
    assert!(d[0].1.exclusive);
    assert_eq!(c.queued(), 1);
    out.clear();
    c.completed(10.0, 1, PartId { job: 1, index: 0 }, 10.0, &mut out)
        .unwrap();
    assert_eq!(dispatches(&out)[0].1.part.job, 2);
    assert_eq!(c.open_jobs(), 1);
}

#[test]
fn impossible_nodes_are_refused_whole() {
    let mut c = libra();
    for (speed, capacity, field) in [
        (0.0, 1.0, "speed"),
        (-1.0, 1.0, "speed"),
        (f64::NAN, 1.0, "speed"),
        (f64::INFINITY, 1.0, "speed"),
        (1.0, 0.0, "capacity"),
        (1.0, f64::NAN, "capacity"),
        (1.0, 1e6, "capacity"),
    ] {
        let bad = NodeInfo {
            local: 1,
            speed,
            capacity,
            ..info(1)
        };
        let e = c.register(7, "lab-3", &[info(0), bad]).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("lab-3") && m.contains("node 1") && m.contains(field),
            "{m}"
        );
        // Nothing of the process joined, not even its good node.
        assert_eq!(c.live_nodes(), 0);
    }
    assert_eq!(c.register(7, "lab-3", &[info(0)]).unwrap(), vec![0]);
}

#[test]
fn duplicate_completion_is_ignored_and_counted() {
    // A 2-part job. Part 0 completes twice: the second must neither
    // finish the job (part 1 still runs) nor move its finish time.
    let mut c = libra();
    c.register(10, "a", &[info(0), info(1)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 2, 100.0), &mut out)
        .unwrap();
    out.clear();
    let p0 = PartId { job: 1, index: 0 };
    let p1 = PartId { job: 1, index: 1 };
    c.completed(30.0, 10, p0, 30.0, &mut out).unwrap();
    let e = c.completed(60.0, 10, p0, 60.0, &mut out).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::DuplicateCompletion {
                job: 1,
                index: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("node process a"), "{e}");
    assert_eq!(c.duplicate_completions(), 1);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(c.open_jobs(), 1);
    c.completed(40.0, 10, p1, 40.0, &mut out).unwrap();
    assert_eq!(out, vec![Output::Finished { job: 1 }]);
    assert_eq!(c.record(1).unwrap().finish, Some(40.0));
    // And after the job is over, a late duplicate is still counted.
    assert!(c.completed(70.0, 10, p1, 70.0, &mut out).is_err());
    assert_eq!(c.duplicate_completions(), 2);
}

#[test]
fn unknown_parts_and_impossible_reports_name_the_node_process() {
    let mut c = libra();
    c.register(10, "lab-1", &[info(0)]).unwrap();
    c.register(20, "lab-2", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    let on = dispatches(&out)[0].0;
    let other = if on == 10 { 20 } else { 10 };
    let other_host = if other == 10 { "lab-1" } else { "lab-2" };
    let progress = |work_done: f64, share: f64| PartProgress {
        part: PartId { job: 1, index: 0 },
        node: 0,
        work_done,
        share,
    };
    // Part 1/0 is not on the other link; job 9 does not exist.
    let e = c.progress(other, 1.0, &[progress(1.0, 0.5)]).unwrap_err();
    assert!(
        e.to_string().contains(other_host) && e.to_string().contains("unknown part 1/0"),
        "{e}"
    );
    let ghost = PartId { job: 9, index: 0 };
    let e = c.completed(1.0, on, ghost, 1.0, &mut out).unwrap_err();
    assert!(e.to_string().contains("unknown part 9/0"), "{e}");
    // NaN work, negative work, a share above 1, a NaN time: refused,
    // and the core's view keeps the last good report.
    c.progress(on, 10.0, &[progress(10.0, 1.0)]).unwrap();
    for (at, w, s, field) in [
        (11.0, f64::NAN, 0.5, "work_done"),
        (11.0, -1.0, 0.5, "work_done"),
        (11.0, 1.0, 1.5, "share"),
        (11.0, 1.0, f64::NAN, "share"),
        (f64::NAN, 1.0, 0.5, "at"),
    ] {
        let e = c.progress(on, at, &[progress(w, s)]).unwrap_err();
        assert!(e.to_string().contains(field), "{e}");
    }
    let (view, _) = c.snapshot(20.0);
    // 10 done at t = 10 with share 1: 20 by t = 20.
    let p = view.iter().flat_map(|n| &n.parts).next().unwrap();
    assert!((p.cpu_done - 20.0).abs() < 1e-9, "{}", p.cpu_done);
}

#[test]
fn reports_follow_their_parts_when_parts_and_nodes_leave() {
    let progress = |job, work_done: f64, share: f64| PartProgress {
        part: PartId { job, index: 0 },
        node: 0,
        work_done,
        share,
    };
    let cpu_of = |c: &mut ManagerCore, now: f64, job: JobId| {
        let (view, _) = c.snapshot(now);
        let p = view.iter().flat_map(|n| &n.parts).find(|p| p.job == job);
        p.map(|p| p.cpu_done)
    };
    // One node, parts of jobs 1 then 2, each reported; job 1
    // completes, so job 2's part moves to the front of the node: its
    // own report must move with it. At 20: 3 + 0.6 x 10 = 9 (job 1's
    // report would give 2 + 0.2 x 10 = 4).
    let mut c = libra();
    c.register(10, "a", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 20.0, 1, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 30.0, 1, 100.0), &mut out)
        .unwrap();
    c.progress(10, 10.0, &[progress(1, 2.0, 0.2), progress(2, 3.0, 0.6)])
        .unwrap();
    assert!((cpu_of(&mut c, 20.0, 1).unwrap() - 4.0).abs() < 1e-9);
    c.completed(12.0, 10, PartId { job: 1, index: 0 }, 12.0, &mut out)
        .unwrap();
    assert_eq!(cpu_of(&mut c, 20.0, 1), None);
    let got = cpu_of(&mut c, 20.0, 2).unwrap();
    assert!((got - 9.0).abs() < 1e-9, "{got}");

    // Two processes of one node each: job 1 (q 0.5) takes node 0 on
    // link 10, job 2 (q 0.6) does not fit beside it and takes node 1
    // on link 20. Link 10 dies: node 1 moves to the front of the
    // snapshot, and its report with it: 6 + 0.6 x 10 = 12 at 20.
    let mut c = libra();
    c.register(10, "a", &[info(0)]).unwrap();
    c.register(20, "b", &[info(0)]).unwrap();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 60.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!((holder(&c, 1), holder(&c, 2)), (0, 1));
    c.progress(10, 10.0, &[progress(1, 1.0, 0.1)]).unwrap();
    c.progress(20, 10.0, &[progress(2, 6.0, 0.6)]).unwrap();
    c.link_lost(11.0, 10, "test", &mut out);
    let (_, ids) = c.snapshot(20.0);
    assert_eq!(ids, &[1]);
    let got = cpu_of(&mut c, 20.0, 2).unwrap();
    assert!((got - 12.0).abs() < 1e-9, "{got}");
}

/// Global id of the node holding job `job`'s part 0.
fn holder(c: &ManagerCore, job: JobId) -> usize {
    c.record(job).unwrap().nodes[0]
}

#[test]
fn quote_libra_plus_dollar_prices_and_decides_without_changing_anything() {
    // Three one-node processes; the first dies, so snapshot indices
    // and global ids differ (view [2, 1]): answers must use global ids.
    let p = policy::build("libra-plus-dollar", &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    for (link, host) in [(10, "a"), (20, "b"), (30, "c")] {
        c.register(link, host, &[info(0)]).unwrap();
    }
    let mut out = Vec::new();
    c.link_lost(0.0, 10, "test", &mut out);
    // Job 1: RE 50, D 100 at 0: one node commits q 0.5 over the window.
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    let busy = holder(&c, 1);
    let free = if busy == 1 { 2 } else { 1 };
    // Job 2: RE 20, D 100, P 1 (alpha 1, beta 0.1, PBase 1).
    // Busy node: RESFree = 100 - 0.5 x 100 - 20 = 30, PUtil = 100/30,
    //   P = 1 + 0.1 x 100/30 = 1.3333, cost 20 x P = 26.667.
    // Free node: RESFree = 80, PUtil = 1.25, P = 1.125, cost 22.5.
    let mut j2 = job(2, 0.0, 20.0, 1, 100.0).spec;
    let (quotes, answer) = c.quote(0.0, &j2);
    let mut q: Vec<(usize, f64, f64)> = quotes
        .iter()
        .map(|q| (q.node, q.res_free, q.cost))
        .collect();
    q.sort_by_key(|x| x.0);
    let want = {
        let mut w = vec![
            (busy, 30.0, 20.0 * (1.0 + 0.1 * 100.0 / 30.0)),
            (free, 80.0, 22.5),
        ];
        w.sort_by_key(|x| x.0);
        w
    };
    assert_eq!(q.len(), 2, "{quotes:?}");
    for (g, w) in q.iter().zip(&want) {
        assert_eq!(g.0, w.0);
        assert!(
            (g.1 - w.1).abs() < 1e-9 && (g.2 - w.2).abs() < 1e-9,
            "{g:?} vs {w:?}"
        );
    }
    // Best fit: the smallest RESFree within budget, the busy node.
    let QuoteAnswer::Decided(Decision::Accept(a)) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(a.nodes, vec![busy]);
    // The busy node's quote above: 20 (1 + 0.1 x 100 / 30).
    assert!(
        (a.cost - 20.0 * (1.0 + 0.1 * 100.0 / 30.0)).abs() < 1e-9,
        "{}",
        a.cost
    );
    // Budget 25: only the free node (22.5) is within it.
    j2.qos.budget = 25.0;
    let (_, answer) = c.quote(0.0, &j2);
    let QuoteAnswer::Decided(Decision::Accept(a)) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(a.nodes, vec![free]);
    assert!((a.cost - 22.5).abs() < 1e-9);
    // Budget 20: no node is cheap enough.
    j2.qos.budget = 20.0;
    let (_, answer) = c.quote(0.0, &j2);
    assert!(
        matches!(&answer, QuoteAnswer::Decided(Decision::Reject(r)) if r.reason == RejectReason::Budget),
        "{answer:?}"
    );
    // Asking changed nothing: one job, one part on one node.
    assert_eq!(c.open_jobs(), 1);
    let (view, _) = c.snapshot(0.0);
    assert_eq!(view.iter().map(|n| n.parts.len()).sum::<usize>(), 1);
}

#[test]
fn quote_answers_for_libra_and_for_queue_policies() {
    // Libra, no prices: two nodes, job 1 (RE 50, D 100) takes q 0.5 on
    // one. Job 2 (RE 60, D 100) needs 0.6: 1.1 on the busy node does
    // not fit, so the answer is the free node; 3 processors: rejected
    // for resources (two nodes).
    let mut c = libra();
    c.register(10, "a", &[info(0), info(1)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    let busy = holder(&c, 1);
    let (quotes, answer) = c.quote(0.0, &job(2, 0.0, 60.0, 1, 100.0).spec);
    assert!(quotes.is_empty());
    let QuoteAnswer::Decided(Decision::Accept(a)) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(a.nodes, vec![1 - busy]);
    let (_, answer) = c.quote(0.0, &job(3, 0.0, 60.0, 3, 100.0).spec);
    assert!(
        matches!(&answer, QuoteAnswer::Decided(Decision::Reject(r)) if r.reason == RejectReason::Resources),
        "{answer:?}"
    );

    // FIFO on one node, job 1 running: a 1-processor job would queue
    // (none waiting, no node free); a 2-processor one can never run.
    let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    c.register(1, "a", &[info(0)]).unwrap();
    c.submit(0.0, job(1, 0.0, 100.0, 1, 1000.0), &mut out)
        .unwrap();
    let (_, answer) = c.quote(10.0, &job(2, 10.0, 10.0, 1, 1000.0).spec);
    assert_eq!(
        answer,
        QuoteAnswer::Queued {
            waiting: 0,
            free_nodes: 0
        }
    );
    let (_, answer) = c.quote(10.0, &job(3, 10.0, 10.0, 2, 1000.0).spec);
    let QuoteAnswer::Decided(Decision::Reject(r)) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(r.reason, RejectReason::Resources);
    assert!(r.detail.contains("needs 2 processors, the cluster has 1"));
    assert_eq!(c.queued(), 0);

    // QoPS admits at submission: its one node is busy until 100, so a
    // job of RE 50 cannot finish before 150: deadline 120 (submitted
    // at 0) is refused, deadline 1000 enters the plan.
    let p = policy::build("qops", &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    c.register(1, "a", &[info(0)]).unwrap();
    c.submit(0.0, job(1, 0.0, 100.0, 1, 1000.0), &mut out)
        .unwrap();
    let (_, answer) = c.quote(0.0, &job(2, 0.0, 50.0, 1, 120.0).spec);
    assert!(
        matches!(&answer, QuoteAnswer::Decided(Decision::Reject(_))),
        "{answer:?}"
    );
    let (_, answer) = c.quote(0.0, &job(3, 0.0, 50.0, 1, 1000.0).spec);
    assert!(matches!(answer, QuoteAnswer::Queued { .. }), "{answer:?}");
    // The quotes left the plan alone: the real submission of job 3
    // is admitted and queued.
    c.submit(0.0, job(3, 0.0, 50.0, 1, 1000.0), &mut out)
        .unwrap();
    assert_eq!(c.queued(), 1);
}

#[test]
fn refused_part_ends_the_job_and_cancels_its_other_parts() {
    // Job 1 (P 2) spans link 10 (node a) and link 20 (node b).
    let mut c = libra();
    c.register(10, "a", &[info(0)]).unwrap();
    c.register(20, "b", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 100.0, 2, 200.0), &mut out)
        .unwrap();
    let d = dispatches(&out);
    let on_b = d.iter().find(|x| x.0 == 20).unwrap().1.part;
    let on_a = d.iter().find(|x| x.0 == 10).unwrap().1.part;
    out.clear();
    // A refusal from a link that does not hold the part is an error.
    assert!(c.refused(1.0, 10, on_b, "x", &mut out).is_err());
    c.refused(
        1.0,
        20,
        on_b,
        "node 0: part 7 needs 9 MB of memory, 0 MB free",
        &mut out,
    )
    .unwrap();
    // The other part is cancelled on a; b, which never held its part,
    // gets no cancel; the job is over.
    assert_eq!(
        out,
        vec![
            Output::Send {
                link: 10,
                msg: ManagerMsg::Cancel { part: on_a }
            },
            Output::Finished { job: 1 }
        ]
    );
    assert_eq!(c.open_jobs(), 0);
    let r = c.record(1).unwrap();
    assert!(r.accepted && r.lost && r.finish.is_none());
    assert!(
        r.detail.contains("refused by node process b") && r.detail.contains("9 MB of memory"),
        "{}",
        r.detail
    );
    // A late completion of the cancelled part changes nothing.
    out.clear();
    c.completed(2.0, 10, on_a, 2.0, &mut out).unwrap();
    assert!(out.is_empty());
    assert!(c.record(1).unwrap().lost);
    // Both nodes are free again: a job needing all of both fits.
    c.submit(3.0, job(2, 3.0, 100.0, 2, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out).len(), 2, "{out:?}");
}

#[test]
fn refused_part_frees_a_queue_policy_node_for_the_next_job() {
    let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    c.register(1, "a", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 10.0, 1, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 10.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!(c.queued(), 1);
    out.clear();
    c.refused(0.5, 1, PartId { job: 1, index: 0 }, "no node 0", &mut out)
        .unwrap();
    // Job 1 is over (lost, nothing to cancel); job 2 starts at once.
    assert!(out.contains(&Output::Finished { job: 1 }));
    assert!(!out.iter().any(|o| matches!(
        o,
        Output::Send {
            msg: ManagerMsg::Cancel { .. },
            ..
        }
    )));
    let d = dispatches(&out);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].1.part.job, 2);
    assert!(c.record(1).unwrap().lost);
    assert_eq!(c.open_jobs(), 1);
}

#[test]
fn the_core_answers_what_it_was_built_with_and_what_it_holds() {
    // The registry names and what each kind of policy means for the
    // nodes: LibraSLA runs its own spare rule (Algorithm 2 of its paper),
    // Libra the proportional default, a queue policy takes whatever the
    // caller runs (each part has a node to itself).
    let sla = policy::build("libra-sla", &PolicyConfig::default(), &[]).unwrap();
    let c = ManagerCore::new(sla);
    assert_eq!(c.policy_name(), "libra-sla");
    assert_eq!(c.spare_rule(SpareRule::Idle), SpareRule::Sla);
    assert!(!c.queues());
    let edf = policy::build("edf", &PolicyConfig::default(), &[]).unwrap();
    let c = ManagerCore::new(edf);
    assert_eq!(c.policy_name(), "edf");
    assert_eq!(
        c.spare_rule(SpareRule::HighestReturn),
        SpareRule::HighestReturn
    );
    assert!(c.queues());

    // Two processes, link 10 ("a": nodes 0, 1) and link 20 ("b": node 2).
    // Job 1 (P 2, RE 50, D 100: share 0.5) goes on best fit to nodes 0
    // and 1; job 2 (P 1, RE 50, D 60: share 0.83) fits only the idle node
    // 2. Losing link 10 loses job 1 and nodes 0 and 1.
    let mut c = libra();
    assert_eq!(c.policy_name(), "libra");
    c.register(10, "a", &[info(0), info(1)]).unwrap();
    c.register(20, "b", &[info(0)]).unwrap();
    assert_eq!((c.host_of(0), c.host_of(1), c.host_of(2)), ("a", "a", "b"));
    assert_eq!(c.live_nodes(), 3);
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 2, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 50.0, 1, 60.0), &mut out).unwrap();
    assert_eq!(c.open_jobs(), 2);
    assert_eq!(
        (c.job_position(1), c.job_position(2), c.job_position(3)),
        (Some(0), Some(1), None)
    );
    assert!(!c.job_over(1) && !c.job_over(2) && !c.job_over(3));
    c.link_lost(5.0, 10, "idle timeout", &mut out);
    assert_eq!(c.live_nodes(), 1);
    assert_eq!(
        (
            c.node_alive(0),
            c.node_alive(1),
            c.node_alive(2),
            c.node_alive(3)
        ),
        (false, false, true, false)
    );
    assert!(c.job_over(1) && !c.job_over(2));
    assert_eq!(c.open_jobs(), 1);
    // Job 2's one part, placed on node 2 at 0, is the book's third part
    // (job 1 placed two before it).
    let placed: Vec<(JobId, usize)> = c.part_records().iter().map(|p| (p.job, p.node)).collect();
    assert_eq!(placed, vec![(1, 0), (1, 1), (2, 2)]);
    let (jobs, parts) = c.into_books();
    assert_eq!(jobs.len(), 2);
    assert_eq!(parts.len(), 3);
    assert_eq!((parts[2].job, parts[2].node), (2, 2));
}

#[test]
fn a_part_index_past_a_jobs_last_part_is_unknown() {
    // One process, one node: job 1 (1 part) and job 2 (1 part) both run
    // there (shares 0.5 and 0.25: best fit puts them together). Their part
    // records are consecutive, so "part 1 of job 1" would be job 2's part
    // 0 if the index were not checked against job 1's part count.
    let mut c = libra();
    c.register(10, "lab-1", &[info(0)]).unwrap();
    let mut out = Vec::new();
    c.submit(0.0, job(1, 0.0, 50.0, 1, 100.0), &mut out)
        .unwrap();
    c.submit(0.0, job(2, 0.0, 25.0, 1, 100.0), &mut out)
        .unwrap();
    assert_eq!(dispatches(&out).len(), 2);
    let past = PartId { job: 1, index: 1 };
    let e = c.completed(30.0, 10, past, 30.0, &mut out).unwrap_err();
    assert!(e.to_string().contains("unknown part 1/1"), "{e}");
    assert!(!c.job_over(1) && !c.job_over(2));
    assert_eq!(c.open_jobs(), 2);
}

/// `reserve(jobs, parts)` is what the simulator does before a run it
/// knows in full (`sim::core_for`: one record per job, at most one part
/// per node a job asks for): that many jobs and parts then go into the
/// books without a reallocation, which on a long trace would copy every
/// record so far, and hold both copies at once, in the middle of the run.
/// By hand: two nodes, Libra; three jobs of 2 processors (RE 10, D 100:
/// a share of 0.1 on each node, 0.3 on each for the three) are all
/// accepted: 3 job records and 3 x 2 = 6 part records, into books
/// reserved for exactly that.
#[test]
fn books_reserved_for_a_run_take_it_without_growing() {
    let specs = crate::policy::test_util::specs(2);
    let p = policy::build("libra", &PolicyConfig::default(), &specs).unwrap();
    let mut c = ManagerCore::simulated(p, &specs, 0.0);
    c.reserve(3, 6);
    let caps = |c: &ManagerCore| {
        [
            c.jobs.capacity(),
            c.records.capacity(),
            c.parts.capacity(),
            c.part_done.capacity(),
        ]
    };
    let reserved = caps(&c);
    assert!(
        reserved[0] >= 3 && reserved[1] >= 3 && reserved[2] >= 6 && reserved[3] >= 6,
        "{reserved:?}"
    );
    let mut out = Vec::new();
    for id in 1..=3 {
        c.arrive(0.0, job(id, 0.0, 10.0, 2, 100.0), &mut out)
            .unwrap();
    }
    let lens = [
        c.jobs.len(),
        c.records.len(),
        c.parts.len(),
        c.part_done.len(),
    ];
    assert_eq!(lens, [3, 3, 6, 6]);
    assert_eq!(caps(&c), reserved);
}
