//! `quote` (what `libratory quote` asks the manager) for every registered
//! policy, on small clusters whose answers are worked out by hand below
//! from the formulas of ../shared/spec/policies.md, not read from the
//! output. Each cluster holds one running job first, so the answer
//! depends on the state and not only on the job; each quote is asked
//! twice to show that asking changes nothing.

use common::admission::{ManagerCore, Output};
use common::job::{JobSpec, Urgency};
use common::policy::{self, Decision, PolicyConfig, RejectReason, REGISTRY};
use common::protocol::{NodeInfo, QuoteAnswer};
use common::workload::WorkloadJob;

fn info(local: u32) -> NodeInfo {
    NodeInfo {
        local,
        capacity: 1.0,
        speed: 1.0,
        memory_kb: 1 << 20,
        disk_mb: 1 << 10,
    }
}

/// Job `id` at time 0: estimate RE (= its runtime), P processors,
/// relative deadline D, budget B.
fn spec(id: u64, re: f64, p: u32, d: f64, b: f64) -> JobSpec {
    JobSpec::new(id, 0.0, re, p, d, b).with_urgency(Urgency::Low)
}

/// A `policy` manager on `nodes` one-processor nodes (one process) with
/// job 1 (RE 50, P 1, D 100, B 1e6) submitted at 0.
fn core_with_job_1(policy: &str, nodes: u32) -> ManagerCore {
    let p = policy::build(policy, &PolicyConfig::default(), &[]).unwrap();
    let mut c = ManagerCore::new(p);
    let infos: Vec<NodeInfo> = (0..nodes).map(info).collect();
    c.register(1, "a", &infos).unwrap();
    let mut out: Vec<Output> = Vec::new();
    let j = WorkloadJob {
        spec: spec(1, 50.0, 1, 100.0, 1e6),
        actual_runtime: 50.0,
    };
    c.submit(0.0, j, &mut out).unwrap();
    c
}

/// The answer to `job` at 0, asked twice (the second must be the same).
fn ask(c: &mut ManagerCore, job: &JobSpec) -> QuoteAnswer {
    let (_, a) = c.quote(0.0, job);
    let (_, b) = c.quote(0.0, job);
    assert_eq!(a, b, "asking changed the answer for job {}", job.id);
    a
}

/// Accepted on `nodes` at `cost` (within 1e-9).
fn accepted(a: &QuoteAnswer, nodes: &[usize], cost: f64) {
    let QuoteAnswer::Decided(Decision::Accept(acc)) = a else {
        panic!("expected acceptance on {nodes:?} at {cost}, got {a:?}")
    };
    assert_eq!(acc.nodes, nodes, "{a:?}");
    assert!(
        (acc.cost - cost).abs() < 1e-9,
        "cost {} != {cost}",
        acc.cost
    );
}

fn rejected(a: &QuoteAnswer, reason: RejectReason) {
    assert!(
        matches!(a, QuoteAnswer::Decided(Decision::Reject(r)) if r.reason == reason),
        "expected a {reason:?} rejection, got {a:?}"
    );
}

#[test]
fn every_registered_policy_has_a_quote_test() {
    // A policy added to the registry must be added here too.
    let names: Vec<&str> = REGISTRY.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "libra",
            "libra-risk",
            "libra-plus-dollar",
            "libra-sla",
            "edf",
            "fcfs-bf",
            "sjf-bf",
            "edf-bf",
            "qops",
            "vqops",
            "dvqops",
            "batsim",
            "fifo"
        ]
    );
}

#[test]
fn libra_quotes_static_cost_best_fit_and_the_share_test() {
    // Job 1 (q = 50/100 = 0.5) is on node 0 (best fit, tie to the lower
    // index). Job 2 RE 40, D 100 adds 0.4: loads after 0.9 (n0) and 0.4
    // (n1); best fit takes n0. Cost = RE + RE/D = 40 + 0.4 = 40.4.
    let mut c = core_with_job_1("libra", 2);
    accepted(&ask(&mut c, &spec(2, 40.0, 1, 100.0, 1e6)), &[0], 40.4);
    // Budget 40.39 < 40.4: budget.
    rejected(
        &ask(&mut c, &spec(2, 40.0, 1, 100.0, 40.39)),
        RejectReason::Budget,
    );
    // RE 60 adds 0.6: n0 would reach 1.1, so only n1; 60 + 0.6 = 60.6.
    accepted(&ask(&mut c, &spec(2, 60.0, 1, 100.0, 1e6)), &[1], 60.6);
    // P 2 of RE 60: one suitable node of two: deadline.
    rejected(
        &ask(&mut c, &spec(2, 60.0, 2, 100.0, 1e6)),
        RejectReason::Deadline,
    );
}

#[test]
fn libra_risk_quotes_zero_risk_nodes_in_node_order() {
    // Job 1 is on node 0 (first zero-risk node: both empty).
    let mut c = core_with_job_1("libra-risk", 2);
    // RE 100, D 200: Q + RE/D = 0.5 + 0.5 = 1 <= 1 with no deadline
    // passed: nothing can be delayed, n0 is zero-risk and first.
    // Libra's cost 100 + 100/200 = 100.5.
    accepted(&ask(&mut c, &spec(2, 100.0, 1, 200.0, 1e6)), &[0], 100.5);
    // RE 120, D 200 (q 0.6, Q 1.1) projected on n0 with shares q/Q: job 1
    // gets 0.5/1.1, does its 50 s at t = 110 (DT 100: delay 10,
    // deadline_delay (10 + 100)/100 = 1.1); the new part has done
    // 110 x 0.6/1.1 = 60 by then and alone gets the whole node (spare
    // proportional), so its other 60 s end at 170 <= 200: deadline_delay
    // (0 + 200)/200 = 1. sigma{1.1, 1} = 0.05 > 0: n0 is at risk; n1 is
    // empty, zero-risk. Cost 120 + 120/200 = 120.6.
    accepted(&ask(&mut c, &spec(2, 120.0, 1, 200.0, 1e6)), &[1], 120.6);
    // The same on P 2: only one zero-risk node: risk.
    rejected(
        &ask(&mut c, &spec(2, 120.0, 2, 200.0, 1e6)),
        RejectReason::Risk,
    );
    // Budget below Libra's cost: budget.
    rejected(
        &ask(&mut c, &spec(2, 120.0, 1, 200.0, 120.5)),
        RejectReason::Budget,
    );
}

#[test]
fn libra_plus_dollar_quotes_the_window_price() {
    // Job 1 on node 0 commits q x min(rd, D) = 0.5 x 100 = 50 s of the
    // window of job 2 (RE 20, D 100). RESFree: n0 100 - 50 - 20 = 30,
    // n1 100 - 20 = 80. P = alpha + beta x RESMax/RESFree (PBase 1):
    // n0 1 + 0.1 x 100/30 = 1.3333.., n1 1 + 0.1 x 100/80 = 1.125.
    // Best fit (smallest RESFree) within budget: n0, cost 20 x 1.3333..
    let mut c = core_with_job_1("libra-plus-dollar", 2);
    let n0 = 20.0 * (1.0 + 0.1 * 100.0 / 30.0);
    accepted(&ask(&mut c, &spec(2, 20.0, 1, 100.0, 1e6)), &[0], n0);
    // Budget 25: n0 (26.67) is over it, n1 (22.5) within.
    accepted(&ask(&mut c, &spec(2, 20.0, 1, 100.0, 25.0)), &[1], 22.5);
    // Budget 22: neither.
    rejected(
        &ask(&mut c, &spec(2, 20.0, 1, 100.0, 22.0)),
        RejectReason::Budget,
    );
    // The per-node prices come with the answer.
    let (quotes, _) = c.quote(0.0, &spec(2, 20.0, 1, 100.0, 1e6));
    let mut q: Vec<(usize, f64)> = quotes.iter().map(|q| (q.node, q.cost)).collect();
    q.sort_by_key(|x| x.0);
    assert_eq!(q.len(), 2);
    assert!(
        (q[0].1 - n0).abs() < 1e-9 && (q[1].1 - 22.5).abs() < 1e-9,
        "{q:?}"
    );
}

#[test]
fn libra_sla_quotes_the_budget_on_the_best_return() {
    // Job 1 (RE 50, D 100, B 1e6) on node 0. Job 2 (RE 20, D 100, B 500):
    // Q on n0 = 0.5 + 0.2 <= 1, nobody is delayed, so n0's return grows
    // by job 2's (500/20/100 = 0.25) to 1e6/50/100 + 0.25 = 200.25, n1's
    // is 0.25: the best new return is n0's. LibraSLA charges the budget
    // (the utility of an undelayed job).
    let mut c = core_with_job_1("libra-sla", 2);
    accepted(&ask(&mut c, &spec(2, 20.0, 1, 100.0, 500.0)), &[0], 500.0);
    // P 3 on two nodes: resources.
    rejected(
        &ask(&mut c, &spec(2, 20.0, 3, 100.0, 500.0)),
        RejectReason::Resources,
    );
}

#[test]
fn queue_policies_quote_their_queue_or_a_resources_rejection() {
    // Space-shared, one job per node: job 1 runs on one of the two nodes
    // at once (no queue). A 1-processor job would wait behind nobody with
    // one node free; 3 processors on 2 nodes can never run.
    for name in ["edf", "fcfs-bf", "sjf-bf", "edf-bf", "fifo"] {
        let mut c = core_with_job_1(name, 2);
        assert_eq!(
            ask(&mut c, &spec(2, 10.0, 1, 1000.0, 1e6)),
            QuoteAnswer::Queued {
                waiting: 0,
                free_nodes: 1
            },
            "{name}"
        );
        let a = ask(&mut c, &spec(2, 10.0, 3, 1000.0, 1e6));
        rejected(&a, RejectReason::Resources);
        let QuoteAnswer::Decided(Decision::Reject(r)) = a else {
            unreachable!()
        };
        assert!(
            r.detail.contains("needs 3 processors, the cluster has 2"),
            "{name}: {}",
            r.detail
        );
        assert_eq!(c.queued(), 0, "{name}");
    }
}

#[test]
fn qops_family_quotes_the_deadline_guarantee_and_the_revenue_test() {
    // One node, busy with job 1 from 0 to 50 (non-preemptive: it runs and
    // cannot be moved). Job 2 of RE 30 can start at 50 and end at 80.
    for name in ["qops", "vqops", "dvqops"] {
        let mut c = core_with_job_1(name, 1);
        let queued = QuoteAnswer::Queued {
            waiting: 0,
            free_nodes: 0,
        };
        // A deadline of 79 cannot be met: refused by all three.
        rejected(
            &ask(&mut c, &spec(2, 30.0, 1, 79.0, 1e6)),
            RejectReason::Deadline,
        );
        // Deadline 130, price 4: the VQoPS price decays linearly from
        // submit + RE = 30 to the deadline, so finishing at 80 earns
        // 4 x (130 - 80)/(130 - 30) = 2, which beats the opportunity cost
        // OC-Factor x P x RE = 0.05 x 1 x 30 = 1.5: admitted (queued).
        assert_eq!(ask(&mut c, &spec(2, 30.0, 1, 130.0, 4.0)), queued, "{name}");
        if name == "qops" {
            // QoPS has no revenue test: a deadline of 80 is met exactly
            // and price 2 is enough.
            assert_eq!(ask(&mut c, &spec(2, 30.0, 1, 80.0, 1e6)), queued);
            assert_eq!(ask(&mut c, &spec(2, 30.0, 1, 130.0, 2.0)), queued);
        } else {
            // Price 2 earns 1 < 1.5; deadline 80 earns nothing: both
            // refused for return.
            rejected(
                &ask(&mut c, &spec(2, 30.0, 1, 130.0, 2.0)),
                RejectReason::Return,
            );
            rejected(
                &ask(&mut c, &spec(2, 30.0, 1, 80.0, 1e6)),
                RejectReason::Return,
            );
        }
        assert_eq!(c.queued(), 0, "{name}: quoting queued nothing");
    }
}

#[test]
fn batsim_quotes_as_a_queue_without_asking_its_scheduler() {
    // Batsim's protocol has no quote: the external scheduler is not asked,
    // and the answer is the queue's (docs/batsim.md). Built from the
    // registry, the policy has no scheduler connected, so job 1's
    // submission is dropped with reason `scheduler` (the decision cannot
    // be had): nothing waits and both nodes stay free.
    let mut c = core_with_job_1("batsim", 2);
    assert_eq!(
        ask(&mut c, &spec(2, 10.0, 1, 1000.0, 1e6)),
        QuoteAnswer::Queued {
            waiting: 0,
            free_nodes: 2
        }
    );
    // Three processors on two nodes: refused for resources, as a queue.
    let a = ask(&mut c, &spec(2, 10.0, 3, 1000.0, 1e6));
    rejected(&a, RejectReason::Resources);
}
