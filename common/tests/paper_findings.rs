//! The papers' qualitative findings, checked on the real SDSC SP2 trace
//! with each paper's preset and the default seed. If one of these fails
//! after a change, the change altered a policy's behaviour on the papers'
//! own set-up: find out why before touching the expected direction.

use std::path::PathBuf;

use common::experiment::Experiment;
use common::metrics::Summary;
use common::workload;

fn sdsc() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(
        p.is_file(),
        "the SDSC SP2 trace is missing at {} (tests read ../shared/traces beside the project)",
        p.display()
    );
    p
}

fn run(preset: &str, sets: &[&str]) -> Vec<Summary> {
    let mut e = Experiment::preset(preset).unwrap();
    e.set_all(sets.iter().copied()).unwrap();
    let wl = workload::build(&e.params, Some(&sdsc())).unwrap();
    e.policies
        .iter()
        .map(|p| e.run_policy(p, &wl).unwrap().1)
        .collect()
}

fn get<'a>(s: &'a [Summary], name: &str) -> &'a Summary {
    s.iter().find(|x| x.policy == name).unwrap()
}

/// The Libra+$ paper: Libra+$ earns a higher Cluster Profitability than Libra and
/// the backfilling policies, with similar or lower QoS satisfaction.
#[test]
fn libra_plus_dollar_paper_it_earns_more_than_libra_and_backfilling() {
    let s = run("libra-plus-dollar", &[]);
    let lpd = get(&s, "libra-plus-dollar");
    let libra = get(&s, "libra");
    assert!(lpd.profitability.unwrap() > libra.profitability.unwrap());
    for bf in ["fcfs-bf", "sjf-bf", "edf-bf"] {
        assert!(
            lpd.profitability.unwrap() > get(&s, bf).profitability.unwrap(),
            "{bf}"
        );
    }
    assert!(lpd.qos_satisfaction <= libra.qos_satisfaction);
    // Accurate estimates: every job Libra or Libra+$ accepts meets its
    // deadline.
    assert_eq!(lpd.accepted, lpd.deadlines_met);
    assert_eq!(libra.accepted, libra.deadlines_met);
}

/// The Libra+$ paper, Figure 3: a higher beta lowers QoS satisfaction.
#[test]
fn libra_plus_dollar_paper_higher_beta_lowers_qos_satisfaction() {
    let lo = run("libra-plus-dollar", &["beta=0.1"]);
    let hi = run("libra-plus-dollar", &["beta=0.5"]);
    assert!(
        get(&hi, "libra-plus-dollar").qos_satisfaction
            < get(&lo, "libra-plus-dollar").qos_satisfaction
    );
}

/// The LibraRisk paper: with the trace's own estimates LibraRisk fulfils clearly more
/// deadlines than Libra; EDF has the lowest average slowdown.
#[test]
fn libra_risk_paper_it_meets_more_deadlines_with_trace_estimates() {
    let s = run("libra-risk", &[]);
    let risk = get(&s, "libra-risk");
    let libra = get(&s, "libra");
    assert!(
        risk.pct_deadlines_met > libra.pct_deadlines_met + 5.0,
        "LibraRisk {} vs Libra {}",
        risk.pct_deadlines_met,
        libra.pct_deadlines_met
    );
    let edf = get(&s, "edf");
    assert!(edf.avg_slowdown.unwrap() < risk.avg_slowdown.unwrap());
    assert!(edf.avg_slowdown.unwrap() < libra.avg_slowdown.unwrap());
    // What LibraRisk gains comes from parts whose estimate exceeds their
    // deadline, taken alone onto empty nodes.
    assert!(risk.accepted_estimate_over_deadline > 0);
    assert_eq!(libra.accepted_estimate_over_deadline, 0);
}

/// The LibraRisk paper: with accurate estimates LibraRisk fulfils about as many
/// deadlines as Libra.
#[test]
fn libra_risk_paper_with_accurate_estimates_it_is_close_to_libra() {
    let s = run("libra-risk", &["inaccuracy=0"]);
    let (risk, libra) = (get(&s, "libra-risk"), get(&s, "libra"));
    assert!(
        (risk.pct_deadlines_met - libra.pct_deadlines_met).abs() < 3.0,
        "LibraRisk {} vs Libra {}",
        risk.pct_deadlines_met,
        libra.pct_deadlines_met
    );
}

/// The LibraSLA paper: under heavy load LibraSLA completes many more jobs than Libra
/// (it takes soft-deadline jobs that Libra's share test refuses, at a
/// delay). At f = 0.005 and 0.01 with the default seed: 599 / 633 against
/// 400 / 406.
#[test]
fn libra_sla_paper_it_completes_more_jobs_under_heavy_load() {
    for f in ["0.005", "0.01"] {
        let s = run("libra-sla", &[&format!("arrival_delay_factor={f}")]);
        let (sla, libra) = (get(&s, "libra-sla"), get(&s, "libra"));
        assert!(
            sla.completed as f64 > 1.3 * libra.completed as f64,
            "f = {f}: LibraSLA {} vs Libra {}",
            sla.completed,
            libra.completed
        );
        // Accurate estimates: Libra never misses; LibraSLA's misses are
        // the soft jobs it chose to delay (and hard jobs later arrivals
        // delayed; see docs/reproducing.md, LibraSLA).
        assert_eq!(libra.accepted, libra.deadlines_met);
    }
}

/// The LibraSLA paper's utility finding holds only when each of a parallel job's
/// nodes counts its share (1/P) of the job's return
/// (`sla_return_per_part`): then LibraSLA earns more utility than Libra at
/// f = 0.01 (also for seeds 1-5). With Algorithm 2's literal per-node
/// return it does not (docs/reproducing.md, LibraSLA, says why), so that is
/// not asserted.
#[test]
fn libra_sla_paper_per_part_return_earns_more_utility_under_heavy_load() {
    let s = run(
        "libra-sla",
        &["arrival_delay_factor=0.01", "sla_return_per_part=true"],
    );
    let (sla, libra) = (get(&s, "libra-sla"), get(&s, "libra"));
    assert!(
        sla.utility > libra.utility,
        "LibraSLA {} vs Libra {}",
        sla.utility,
        libra.utility
    );
}

/// The VQoPS paper: VQoPS earns more revenue than QoPS whatever the OC-Factor;
/// no single OC-Factor is best for every job mix; DVQoPS stays within a
/// few % of the best static OC-Factor (original load, exact estimates).
#[test]
fn vqops_paper_vqops_beats_qops_and_dvqops_tracks_the_best_static_oc_factor() {
    let mut best_oc = Vec::new();
    for urgent in ["0.2", "0.8"] {
        let u = format!("high_urgency_fraction={urgent}");
        let s = run("vqops", &[&u]);
        let qops = get(&s, "qops").revenue;
        let dvqops = get(&s, "dvqops").revenue;
        let mut e = Experiment::preset("vqops").unwrap();
        e.set("high_urgency_fraction", urgent).unwrap();
        let wl = workload::build(&e.params, Some(&sdsc())).unwrap();
        let mut best = (f64::NEG_INFINITY, "");
        for oc in ["0", "0.05", "0.1", "0.2", "0.4"] {
            e.set("oc_factor", oc).unwrap();
            let v = e.run_policy("vqops", &wl).unwrap().1.revenue;
            assert!(v > qops, "U {urgent}, OC {oc}: VQoPS {v} vs QoPS {qops}");
            if v > best.0 {
                best = (v, oc);
            }
        }
        best_oc.push(best.1.parse::<f64>().unwrap());
        assert!(
            dvqops > 0.93 * best.0,
            "U {urgent}: DVQoPS {dvqops} vs best static {} at {}",
            best.0,
            best.1
        );
    }
    // The paper's Table 1 shape: more urgent jobs, a higher best OC-Factor
    // (here 0.05 at 20% urgent, 0.4 at 80%).
    assert!(
        best_oc[1] > best_oc[0],
        "best OC-Factor at 20% / 80% urgent: {best_oc:?}"
    );
}
