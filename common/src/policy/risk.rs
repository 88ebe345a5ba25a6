//! LibraRisk (its paper's Algorithm 1): a node is suitable only if placing
//! the new part there leaves it with zero risk of deadline delay, the risk
//! being the population standard deviation of the projected deadline delays
//! of all its parts, the new one included.

use super::steps::{
    bounds_apply, budget_permit, idle_groups_stand_in, idle_stand_ins, load_if_fits,
    resource_filter, too_many_processors, top_k, Better,
};
use super::{
    Accept, AdmissionPolicy, BoundedReads, Decision, PolicyConfig, RejectReason, RiskOrder,
};
use crate::busy_index::{refined_verdict, BusyIndex, PartFn, RiskJob, Verdict, RISK_BLOCK};
use crate::job::JobSpec;
use crate::node_model::{
    population_sd, project_deadline_delays_spread, project_deadline_delays_with, NodeState,
    Projection,
};
use crate::share::SpareRule;
use crate::time::{Time, TIME_EPS};

/// LibraRisk's admission control.
pub struct LibraRisk {
    cfg: PolicyConfig,
    res: Vec<usize>,
    cands: Vec<(usize, f64)>,
    /// Idle nodes standing in for their speed group (indexed decisions).
    idle: Vec<(usize, f64)>,
    delays: Vec<f64>,
    proj: Projection,
    /// A busy node brought up to the instant from the index's record of
    /// its parts (bounded decisions).
    scratch: Option<NodeState>,
    /// The nodes of a block its bounds leave to be settled one by one.
    open: Vec<(usize, Verdict)>,
    /// A node's parts as they stand, for its late certificate.
    fns: Vec<PartFn>,
}

impl LibraRisk {
    /// LibraRisk with these knobs (risk tolerance, order, shortcut, Libra's
    /// cost factors, spare rule).
    pub fn new(cfg: PolicyConfig) -> LibraRisk {
        LibraRisk {
            cfg,
            res: Vec::new(),
            cands: Vec::new(),
            idle: Vec::new(),
            delays: Vec::new(),
            proj: Projection::default(),
            scratch: None,
            open: Vec::new(),
            fns: Vec::new(),
        }
    }

    /// The risk sigma_j of `node` if `job` were placed there now, or `None`
    /// when a part's deadline has already passed (never zero-risk).
    pub fn risk(&mut self, now: Time, node: &NodeState, job: &JobSpec) -> Option<f64> {
        let new = node.new_part(job, 0.0);
        project_deadline_delays_with(
            node,
            &new,
            now,
            self.cfg.spare_rule,
            &mut self.proj,
            &mut self.delays,
        )?;
        Some(population_sd(&self.delays))
    }

    /// [`Self::zero_risk`] for the walks that meet each node as it stands
    /// at `now` (the plain scan, the walk over the busy index: the
    /// simulator's, and the live core's without bounds): a node the late
    /// certificate ([`refined_verdict`], on its parts as they stand, so
    /// exact) proves not zero-risk is not projected. The verdict is the
    /// projection's (debug builds check each one against it).
    fn zero_risk_certified(&mut self, now: Time, node: &NodeState, job: &JobSpec) -> bool {
        if !node.parts.is_empty() {
            let conserving = matches!(
                self.cfg.spare_rule,
                SpareRule::Proportional | SpareRule::HighestReturn
            );
            let rj = RiskJob::new(
                now,
                node.est_cpu(job),
                job.qos.deadline,
                job.deadline_abs(),
                self.cfg.risk_tolerance,
                self.cfg.risk_shortcut,
                conserving,
            );
            if let Some(rj) = rj {
                self.fns.clear();
                self.fns.extend(node.parts.iter().map(PartFn::standing));
                if refined_verdict(&self.fns, &rj) == Verdict::NotZero {
                    #[cfg(test)]
                    super::steps::count_standing_settled();
                    debug_assert!(
                        !self.zero_risk(now, node, job),
                        "node {}: certified not zero-risk at {now}, the projection says zero-risk",
                        node.spec.id
                    );
                    return false;
                }
            }
        }
        self.zero_risk(now, node, job)
    }

    /// Whether `node` is zero-risk for `job` at `now`.
    pub fn zero_risk(&mut self, now: Time, node: &NodeState, job: &JobSpec) -> bool {
        if node.parts.is_empty() {
            // An empty node is zero-risk, even for a part whose estimate
            // exceeds its deadline: a lone part's sigma is 0 (the paper's
            // definition, kept on purpose; see docs/policies.md).
            return true;
        }
        if self.cfg.risk_shortcut {
            let no_deadline_passed = node.parts.iter().all(|p| p.deadline - now > TIME_EPS);
            if no_deadline_passed && load_if_fits(node, job, now).is_some() {
                // Every part (parts past their estimate are projected as
                // finishing now) gets at least its q: no delay, sigma 0.
                return true;
            }
        }
        // The projection stops once two deadline delays are known to lie
        // further apart than a deviation within the tolerance allows.
        let tol = self.cfg.risk_tolerance;
        let spread = stop_spread(tol, node.parts.len() + 1);
        let new = node.new_part(job, 0.0);
        match project_deadline_delays_spread(
            node,
            &new,
            now,
            self.cfg.spare_rule,
            &mut self.proj,
            spread,
            &mut self.delays,
        ) {
            Some(false) => population_sd(&self.delays) <= tol,
            Some(true) | None => false,
        }
    }
}

/// How far apart two of `n` deadline delays must be known to lie for
/// LibraRisk's projection to stop: `n` values `gap` apart have a
/// population deviation of at least `gap / sqrt(2 n)`. The deviation's
/// two-pass computation errs by a factor of at most `1 - (n + 4) eps`
/// below it (the sum of squares about the computed mean is at least the
/// one about the mean), which with the quotient's, the root's and the
/// gap's own rounding the `1e-9` covers for up to a million parts; beyond,
/// no stop.
fn stop_spread(tol: f64, n: usize) -> f64 {
    if n <= 1_000_000 {
        tol * (2.0 * n as f64).sqrt() * (1.0 + 1e-9)
    } else {
        f64::INFINITY
    }
}

impl AdmissionPolicy for LibraRisk {
    fn name(&self) -> &'static str {
        "libra-risk"
    }

    fn spare_rule(&self) -> SpareRule {
        self.cfg.spare_rule
    }

    fn decide_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        if idle_groups_stand_in(index, job) {
            self.decide_on_index(now, nodes, index, job)
        } else {
            self.decide(now, nodes, job)
        }
    }

    /// The certified walk only in node order (`decide_certified`).
    fn bounded_reads(&self) -> Option<BoundedReads> {
        (self.cfg.risk_order == RiskOrder::NodeOrder).then_some(BoundedReads::RiskCertificates)
    }

    fn decide_bounded(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        self.decide_certified(now, nodes, index, job)
    }

    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision {
        if let Some(d) = too_many_processors(nodes, job) {
            return d;
        }
        let cost = match budget_permit(&self.cfg, job) {
            Ok(c) => c,
            Err(d) => return d,
        };
        let mut res = std::mem::take(&mut self.res);
        if let Some(d) = resource_filter(nodes, job, &mut res) {
            self.res = res;
            return d;
        }
        let p = job.processors();
        self.cands.clear();
        for &k in &res {
            if self.zero_risk_certified(now, &nodes[k], job) {
                let load = nodes[k].required_share(now) + nodes[k].est_cpu(job) / job.qos.deadline;
                self.cands.push((k, load));
                // The paper's loop takes the first P zero-risk nodes in
                // node order, so the rest need not be examined.
                if self.cfg.risk_order == RiskOrder::NodeOrder && self.cands.len() == p {
                    break;
                }
            }
        }
        self.res = res;
        self.choose(p, cost)
    }
}

impl LibraRisk {
    /// [`AdmissionPolicy::decide_indexed`]: the walk in node order over
    /// the busy nodes of `index` and, for its idle nodes, the first `P` of
    /// each speed, all of them zero-risk with the same load after the part
    /// (the risk check answers an empty node at once): the candidates the
    /// walk over every node finds, in its order, minus idle nodes that
    /// equal keys rank after `P` of their group; the walk in node order
    /// stops at the same `P`-th candidate. When it falls short, every idle
    /// node was kept (a group of more than `P` fills it), so the count in
    /// the rejection is the walk's.
    fn decide_on_index(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        if let Some(d) = too_many_processors(nodes, job) {
            return d;
        }
        let cost = match budget_permit(&self.cfg, job) {
            Ok(c) => c,
            Err(d) => return d,
        };
        // Every node has what the job needs (no memory or disk), and there
        // are at least P of them: the resource filter passes.
        let p = job.processors();
        let mut idle = std::mem::take(&mut self.idle);
        idle_stand_ins(nodes, index, p, &mut idle, |n, _| {
            Some(n.required_share(now) + n.est_cpu(job) / job.qos.deadline)
        });
        let node_order = self.cfg.risk_order == RiskOrder::NodeOrder;
        self.cands.clear();
        let mut next_idle = idle.iter().copied().peekable();
        'walk: for k in index.busy() {
            while let Some(c) = next_idle.next_if(|c| c.0 < k) {
                self.cands.push(c);
                if node_order && self.cands.len() == p {
                    break 'walk;
                }
            }
            #[cfg(test)]
            super::steps::count_read(1);
            if self.zero_risk_certified(now, &nodes[k], job) {
                let load = nodes[k].required_share(now) + nodes[k].est_cpu(job) / job.qos.deadline;
                self.cands.push((k, load));
                if node_order && self.cands.len() == p {
                    break;
                }
            }
        }
        for c in next_idle {
            if node_order && self.cands.len() == p {
                break;
            }
            self.cands.push(c);
        }
        self.idle = idle;
        self.choose(p, cost)
    }

    /// [`AdmissionPolicy::decide_bounded`]: [`Self::decide_on_index`] in
    /// node order without bringing the busy nodes up to `now`. Each busy
    /// node is settled by the index's certificates (zero-risk by the
    /// shortcut's test on its load's upper bound; not zero-risk by a past
    /// deadline or the over-commitment bound, see
    /// [`crate::busy_index::RiskJob`]), whole blocks of nodes at once where
    /// every busy node of the block is certainly not zero-risk; only the
    /// nodes neither settles are brought to `now` (from the index's record
    /// of their parts, bit for bit the refresh's) and projected. Every
    /// verdict is exact, so the candidates, the stop at the `P`-th and the
    /// count in a rejection are the walk's. `None` (decide another way)
    /// unless the job needs no memory or disk, every node has one speed
    /// and the bounds are up to date.
    fn decide_certified(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        if self.cfg.risk_order != RiskOrder::NodeOrder
            || !bounds_apply(nodes, index, job)
            || !index.risk_kept()
        {
            return None;
        }
        let conserving = matches!(
            self.cfg.spare_rule,
            SpareRule::Proportional | SpareRule::HighestReturn
        );
        let rj = RiskJob::new(
            now,
            nodes[0].est_cpu(job),
            job.qos.deadline,
            job.deadline_abs(),
            self.cfg.risk_tolerance,
            self.cfg.risk_shortcut,
            conserving,
        )?;
        if let Some(d) = too_many_processors(nodes, job) {
            return Some(d);
        }
        let cost = match budget_permit(&self.cfg, job) {
            Ok(c) => c,
            Err(d) => return Some(d),
        };
        let p = job.processors();
        // In node order the candidates are the first P zero-risk nodes:
        // `choose` ranks by key only under best fit, so no load is
        // computed here (the key is 0 for all).
        let mut idle = std::mem::take(&mut self.idle);
        idle_stand_ins(nodes, index, p, &mut idle, |_, _| Some(0.0));
        self.cands.clear();
        let mut next_idle = idle.iter().copied().peekable();
        'walk: for b in 0..index.risk_blocks() {
            let word = index.busy_word(b);
            if word == 0 {
                continue;
            }
            let start = b * RISK_BLOCK;
            while let Some(c) = next_idle.next_if(|c| c.0 < start) {
                self.cands.push(c);
                if self.cands.len() == p {
                    break 'walk;
                }
            }
            let mut open = std::mem::take(&mut self.open);
            let whole = index.risk_block(b, &rj, &mut open);
            #[cfg(debug_assertions)]
            if whole {
                let mut w = word;
                while w != 0 {
                    let k = start + w.trailing_zeros() as usize;
                    w &= w - 1;
                    debug_assert!(
                        open.iter().any(|o| o.0 == k)
                            || !self.exact_zero_risk(now, nodes, index, k, job),
                        "node {k}: its block certified not zero-risk at {now}, the projection says zero-risk"
                    );
                }
            }
            #[cfg(test)]
            count_block_settled(whole, word, &open);
            // The nodes to settle one by one, ascending: the block's
            // exceptions with the verdicts the block found for them (not
            // computed again), or all of its busy nodes.
            let mut each = open.iter().copied();
            let mut bits = if whole { 0 } else { word };
            let mut full = false;
            loop {
                let (k, found) = if whole {
                    match each.next() {
                        Some((k, v)) => (k, Some(v)),
                        None => break,
                    }
                } else {
                    if bits == 0 {
                        break;
                    }
                    let k = start + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    (k, None)
                };
                while let Some(c) = next_idle.next_if(|c| c.0 < k) {
                    self.cands.push(c);
                    if self.cands.len() == p {
                        full = true;
                        break;
                    }
                }
                if full {
                    break;
                }
                let verdict = match found.unwrap_or_else(|| index.risk_verdict(k, &rj)) {
                    Verdict::Open => index.risk_refined(k, &rj),
                    v => v,
                };
                let zero = match verdict {
                    Verdict::Zero => true,
                    Verdict::NotZero => false,
                    Verdict::Open => self.exact_zero_risk(now, nodes, index, k, job),
                };
                debug_assert!(
                    verdict == Verdict::Open
                        || zero == self.exact_zero_risk(now, nodes, index, k, job),
                    "node {k}: certified {verdict:?} at {now}, the projection disagrees"
                );
                #[cfg(test)]
                count_node_settled(verdict, whole);
                if zero {
                    self.cands.push((k, 0.0));
                    if self.cands.len() == p {
                        full = true;
                        break;
                    }
                }
            }
            self.open = open;
            if full {
                break 'walk;
            }
        }
        for c in next_idle {
            if self.cands.len() == p {
                break;
            }
            self.cands.push(c);
        }
        self.idle = idle;
        Some(self.choose(p, cost))
    }

    /// Whether bounded busy node `k` is zero-risk for `job` at `now`,
    /// projected on the node brought to `now` from the index's record of
    /// its parts (bit for bit the refresh's dead reckoning).
    fn exact_zero_risk(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        k: usize,
        job: &JobSpec,
    ) -> bool {
        let mut node = self.scratch.take().unwrap_or_else(|| nodes[k].clone());
        index.carried_to(k, now, &nodes[k], &mut node);
        let zero = self.zero_risk(now, &node, job);
        self.scratch = Some(node);
        zero
    }

    /// The decision on the zero-risk candidates in `self.cands` (node
    /// order).
    fn choose(&mut self, p: usize, cost: f64) -> Decision {
        if self.cands.len() < p {
            return Decision::reject(
                RejectReason::Risk,
                format!(
                    "needs {p} nodes with zero risk of deadline delay, {} have it",
                    self.cands.len()
                ),
            );
        }
        if self.cfg.risk_order == RiskOrder::BestFit {
            top_k(&mut self.cands, p, Better::Higher);
        }
        Decision::Accept(Accept {
            nodes: self.cands.iter().map(|c| c.0).collect(),
            cost,
        })
    }
}

/// Test builds count the busy nodes the certified walk settles without a
/// projection ([`super::steps::RISK_SETTLED`], read by the admission
/// tests): here the nodes of a block certified whole, less its exceptions.
/// The count is kept in test-only functions, out of the walk, so that the
/// mutation run (which skips `#[cfg(test)]` items) mutates the decision
/// rather than this instrumentation.
#[cfg(test)]
fn count_block_settled(whole: bool, word: usize, open: &[(usize, Verdict)]) {
    if whole {
        super::steps::RISK_SETTLED
            .with(|c| c.set(c.get() + u64::from(word.count_ones()) - open.len() as u64));
    }
}

/// The count of [`count_block_settled`] for a node settled alone by its
/// own certificate.
#[cfg(test)]
fn count_node_settled(verdict: Verdict, whole: bool) {
    if verdict != Verdict::Open && !whole {
        super::steps::RISK_SETTLED.with(|c| c.set(c.get() + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, job, nodes};
    use crate::policy::Libra;

    fn decide(p: &mut LibraRisk, n: &[NodeState], j: &JobSpec) -> Result<Vec<usize>, RejectReason> {
        match p.decide(0.0, n, j) {
            Decision::Accept(a) => Ok(a.nodes),
            Decision::Reject(r) => Err(r.reason),
        }
    }

    /// The projection that stops on a known spread decides as the whole
    /// projection's deviation does: on random nodes (many over-committed,
    /// deadlines often shared so that identical delays occur, parts past
    /// their estimate), every spare rule LibraRisk projects with, and
    /// tolerances from 0 up. Both answers must occur often, and the stop
    /// must come before the end on most nodes that are not zero-risk.
    #[test]
    fn stopping_on_a_spread_decides_as_the_whole_deviation() {
        use rand::{Rng, SeedableRng};
        let seed = 20261127;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut zero, mut not, mut spread_seen) = (0, 0, 0);
        for case in 0..4000 {
            let now: f64 = rng.random_range(0.0..1000.0);
            let mut node = nodes(1).remove(0);
            let shared = [now + 50.0, now + 120.0, now + 300.0];
            let deadline = |rng: &mut rand_chacha::ChaCha8Rng| {
                if rng.random_bool(0.5) {
                    shared[rng.random_range(0..3)]
                } else {
                    now + rng.random_range(1.0..400.0)
                }
            };
            for id in 0..rng.random_range(1..7) {
                let dt = deadline(&mut rng);
                busy(&mut node, id, rng.random_range(1.0..200.0), dt);
                if rng.random_bool(0.1) {
                    node.parts.last_mut().unwrap().cpu_done = node.parts.last().unwrap().est_cpu;
                }
            }
            let dt = deadline(&mut rng);
            let j = JobSpec::new(99, now, rng.random_range(1.0..300.0), 1, dt - now, 1e9);
            let rule = [SpareRule::Proportional, SpareRule::HighestReturn][case % 2];
            for tol in [0.0, 1e-9, 1e-3, 0.05, 0.3] {
                let mut r = LibraRisk::new(PolicyConfig {
                    risk_tolerance: tol,
                    spare_rule: rule,
                    risk_shortcut: false,
                    ..PolicyConfig::default()
                });
                let whole = matches!(r.risk(now, &node, &j), Some(s) if s <= tol);
                assert_eq!(
                    r.zero_risk(now, &node, &j),
                    whole,
                    "seed {seed}, case {case}, tolerance {tol}: {node:?} {j:?}"
                );
                if whole {
                    zero += 1;
                } else {
                    not += 1;
                    let spread = stop_spread(tol, node.parts.len() + 1);
                    let mut out = Vec::new();
                    let new = node.new_part(&j, 0.0);
                    let stopped = project_deadline_delays_spread(
                        &node,
                        &new,
                        now,
                        rule,
                        &mut Projection::default(),
                        spread,
                        &mut out,
                    );
                    if stopped == Some(true) {
                        spread_seen += 1;
                    }
                }
            }
        }
        assert!(zero > 1000 && not > 8000, "{zero} zero-risk, {not} not");
        assert!(spread_seen > not / 2, "{spread_seen} stopped of {not}");
    }

    /// The walks over nodes as they stand (the plain scan, the walk over
    /// the busy index) ask the late certificate before projecting: on
    /// random nodes (as above, parts part-done, some past their estimate,
    /// deadlines often shared), rules and tolerances, with the shortcut on
    /// and off, their verdict must be the whole projection's deviation
    /// against the tolerance, and the certificate must settle a good part
    /// of the nodes that are not zero-risk.
    #[test]
    fn nodes_certified_as_they_stand_decide_as_their_projection() {
        use crate::policy::steps::STANDING_SETTLED;
        use rand::{Rng, SeedableRng};
        let seed = 20261128;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut not, mut certified) = (0, 0);
        STANDING_SETTLED.with(|c| c.set(0));
        for case in 0..3000 {
            let now: f64 = rng.random_range(0.0..1000.0);
            let mut node = nodes(1).remove(0);
            for id in 0..rng.random_range(1..9) {
                let dt = now + rng.random_range(1.0..400.0);
                busy(&mut node, id, rng.random_range(1.0..200.0), dt);
                let p = node.parts.last_mut().unwrap();
                p.cpu_done = p.est_cpu * rng.random_range(0.0..1.2f64);
            }
            let dt = now + rng.random_range(1.0..400.0);
            let j = JobSpec::new(99, now, rng.random_range(1.0..300.0), 1, dt - now, 1e9);
            let rule = [SpareRule::Proportional, SpareRule::HighestReturn][case % 2];
            for (tol, shortcut) in [(0.0, true), (1e-3, false), (0.05, true), (0.3, false)] {
                let mut r = LibraRisk::new(PolicyConfig {
                    risk_tolerance: tol,
                    spare_rule: rule,
                    risk_shortcut: shortcut,
                    ..PolicyConfig::default()
                });
                let whole = matches!(r.risk(now, &node, &j), Some(s) if s <= tol);
                let what = format!("seed {seed}, case {case}, tolerance {tol}: {node:?} {j:?}");
                assert_eq!(r.zero_risk_certified(now, &node, &j), whole, "{what}");
                if !whole {
                    not += 1;
                    let rj = RiskJob::new(now, j.estimate(), dt - now, dt, tol, shortcut, true)
                        .expect("in range");
                    let fns: Vec<PartFn> = node.parts.iter().map(PartFn::standing).collect();
                    if refined_verdict(&fns, &rj) == Verdict::NotZero {
                        certified += 1;
                    }
                } else {
                    assert!(r.zero_risk(now, &node, &j), "{what}");
                }
            }
        }
        assert!(not > 8000, "{not} not zero-risk");
        assert!(certified > not / 2, "{certified} certified of {not}");
        // And the walk's own calls took the certificate's word on exactly
        // those nodes.
        let settled = STANDING_SETTLED.with(|c| c.get());
        assert_eq!(settled, certified);
    }

    /// Two parts: their delays' deviation is exactly half their gap, the
    /// bound the stop relies on, so a tolerance equal to the deviation
    /// sits right at the stop's edge. The old part (100 s due at 50, q 2)
    /// and the new one (20 s due at 100, q 0.2) share the node 2/2.2 and
    /// 0.2/2.2 until 50; then the old part is overdue with the pool and
    /// the new part keeps its q, done on time at 100 (delay 1); the old
    /// part finishes alone at 120 (delay (70 + 50) / 50 = 2.4): sigma 0.7.
    #[test]
    fn a_tolerance_at_the_deviation_itself_is_not_stopped_short() {
        let mut node = nodes(1).remove(0);
        busy(&mut node, 1, 100.0, 50.0);
        let j = job(2, 20.0, 1, 100.0, 1e9);
        let mut r = LibraRisk::new(PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        });
        let sd = r.risk(0.0, &node, &j).expect("no deadline passed");
        assert!((sd - 0.7).abs() < 1e-9, "{sd}");
        // (tolerance, zero-risk, where the projection stops: at its end,
        // or at 120 s where the delays are known 1.4 apart, beyond the
        // stop's 2 tol (1 + 1e-9); one ulp below sigma the margin leaves
        // the verdict to the whole deviation).
        for (tol, zero, at) in [
            (sd, true, f64::INFINITY),
            (f64::from_bits(sd.to_bits() + 1), true, f64::INFINITY),
            (f64::from_bits(sd.to_bits() - 1), false, f64::INFINITY),
            (0.69, false, 120.0),
        ] {
            r.cfg.risk_tolerance = tol;
            assert_eq!(r.zero_risk(0.0, &node, &j), zero, "tolerance {tol}");
            let stopped = r.proj.stopped_at();
            assert!(
                stopped == at || (stopped - at).abs() < 1e-6,
                "tolerance {tol}: {stopped}"
            );
        }
        // At a tolerance of 0.3 the stop needs a gap of 0.6 (2 sigma): at
        // 100 s the new part is done on time (1) while the old part is
        // 50 s late already (at least 2), so the projection stops there.
        r.cfg.risk_tolerance = 0.3;
        assert!(!r.zero_risk(0.0, &node, &j));
        assert!(
            (r.proj.stopped_at() - 100.0).abs() < 1e-6,
            "{}",
            r.proj.stopped_at()
        );
    }

    #[test]
    fn lone_late_part_on_empty_node_is_accepted() {
        // RE 150 > D 100: Libra rejects (share 1.5 > 1) but LibraRisk takes
        // it onto an empty node, as the paper's definition says (sigma of
        // one value is 0). It will finish at 150, 50 s late.
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert_eq!(
            decide(&mut r, &nodes(2), &job(1, 150.0, 1, 100.0, 1e9)),
            Ok(vec![0])
        );
        let mut l = Libra::new(PolicyConfig::default());
        assert!(matches!(
            l.decide(0.0, &nodes(2), &job(1, 150.0, 1, 100.0, 1e9)),
            Decision::Reject(_)
        ));
    }

    #[test]
    fn late_part_next_to_a_running_part_is_risky() {
        // n0 holds A: rem 50, DT 100 (q 0.5). New B: RE 150, D 100.
        // Q = 0.5 + 1.5 = 2: shares 0.25 / 0.75 until t = 100 when both
        // reach their deadline with A at 25 done and B at 75 done. Then
        // both overdue, 0.5 each: A needs 25 more -> finishes 150; B needs
        // 75: at 150 it has 100, then alone, done at 200.
        // Deadline delays: A (50 + 100)/100 = 1.5, B (100 + 100)/100 = 2.
        // sigma = 0.25 > 0: risky. n1 empty: zero risk, chosen.
        let mut n = nodes(2);
        busy(&mut n[0], 10, 50.0, 100.0);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let j = job(1, 150.0, 1, 100.0, 1e9);
        let s = r.risk(0.0, &n[0], &j).unwrap();
        assert!((s - 0.25).abs() < 1e-9, "{s}");
        assert_eq!(decide(&mut r, &n, &j), Ok(vec![1]));
        assert_eq!(
            decide(&mut r, &n, &job(1, 150.0, 2, 100.0, 1e9)),
            Err(RejectReason::Risk)
        );
    }

    #[test]
    fn identical_parts_delayed_identically_have_zero_sigma() {
        // n0 holds A: rem 100, DT 100 (q 1). New B identical (RE 100,
        // D 100). Q = 2: both get 0.5, reach the deadline at t = 100 with
        // 50 done each, then split the node equally and both finish at 200.
        // Both deadline delays are (100 + 100)/100 = 2: sigma 0, so the
        // paper's definition calls the node zero-risk although both jobs
        // will be late. Kept as the paper defines it.
        let mut n = nodes(1);
        busy(&mut n[0], 10, 100.0, 100.0);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let j = job(1, 100.0, 1, 100.0, 1e9);
        assert_eq!(r.risk(0.0, &n[0], &j), Some(0.0));
        assert_eq!(decide(&mut r, &n, &j), Ok(vec![0]));
    }

    #[test]
    fn part_past_its_estimate_counts_as_finishing_now() {
        // A ran past its estimate (rem 0) with its deadline ahead; Libra
        // counts it 0 and so does the projection (deadline delay 1). New
        // job fits: zero risk.
        let mut n = nodes(1);
        busy(&mut n[0], 10, 0.0, 100.0);
        let mut r = LibraRisk::new(PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        });
        let j = job(1, 50.0, 1, 100.0, 1e9);
        assert_eq!(r.risk(0.0, &n[0], &j), Some(0.0));
    }

    #[test]
    fn shortcut_changes_nothing_on_small_cases() {
        let mut with = LibraRisk::new(PolicyConfig::default());
        let mut without = LibraRisk::new(PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        });
        for (rem, dt, re, d) in [
            (50.0, 100.0, 20.0, 100.0),
            (50.0, 100.0, 50.0, 100.0),
            (50.0, 100.0, 60.0, 100.0),
            (10.0, 40.0, 90.0, 120.0),
            (0.0, 40.0, 30.0, 60.0),
        ] {
            let mut n = nodes(1);
            busy(&mut n[0], 10, rem, dt);
            let j = job(1, re, 1, d, 1e9);
            assert_eq!(
                with.zero_risk(0.0, &n[0], &j),
                without.zero_risk(0.0, &n[0], &j),
                "{rem} {dt} {re} {d}"
            );
        }
    }

    #[test]
    fn the_shortcut_needs_every_deadline_more_than_time_eps_ahead() {
        // A ran past its estimate (rem 0: share 0) and its deadline is
        // exactly TIME_EPS (1e-6 s) ahead of now = 0. The projection
        // counts a deadline within TIME_EPS as passed: no projection, so
        // never zero-risk, though the new job's share 0.5 fits (load 0.5).
        // The shortcut must not answer for it: it needs every deadline
        // more than TIME_EPS ahead. At 2 x TIME_EPS ahead both paths say
        // zero risk (A finishes now, the job alone meets its deadline).
        let j = job(1, 50.0, 1, 100.0, 1e9);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let mut n = nodes(1);
        busy(&mut n[0], 10, 0.0, TIME_EPS);
        assert_eq!(n[0].parts[0].deadline - 0.0, TIME_EPS);
        assert_eq!(r.risk(0.0, &n[0], &j), None);
        assert!(!r.zero_risk(0.0, &n[0], &j));
        let mut n = nodes(1);
        busy(&mut n[0], 10, 0.0, 2.0 * TIME_EPS);
        assert_eq!(r.risk(0.0, &n[0], &j), Some(0.0));
        assert!(r.zero_risk(0.0, &n[0], &j));
    }

    #[test]
    fn the_certified_walk_takes_nodes_of_later_blocks_by_their_own_index() {
        // 130 nodes: 0-63 (the first block of RISK_BLOCK = 64) each full
        // with a part of q = 1 (100 s of work, deadline 100), 64 with a
        // part of q = 0.2 (20 s, deadline 100), 65-129 idle. Job: RE 50,
        // D 100 (q = 0.5). A full node is over-committed, Q' = 1.5, so
        // not zero-risk; node 64's load 0.7 fits: zero-risk by the
        // shortcut; idle nodes are zero-risk. In node order the first
        // zero-risk node is 64, then 65 and 66.
        use crate::busy_index::BusyIndex;
        let mut n = nodes(130);
        for (k, node) in n.iter_mut().enumerate().take(64) {
            busy(node, 100 + k as u64, 100.0, 100.0);
        }
        busy(&mut n[64], 99, 20.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        ix.keep_risk(true);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let nodes_of = |d: Option<Decision>| match d {
            Some(Decision::Accept(a)) => a.nodes,
            other => panic!("{other:?}"),
        };
        let one = job(1, 50.0, 1, 100.0, 1e9);
        assert_eq!(nodes_of(r.decide_bounded(0.0, &n, &ix, &one)), vec![64]);
        let three = job(2, 50.0, 3, 100.0, 1e9);
        assert_eq!(
            nodes_of(r.decide_bounded(0.0, &n, &ix, &three)),
            vec![64, 65, 66]
        );
        assert_eq!(decide(&mut r, &n, &three), Ok(vec![64, 65, 66]));
    }

    #[test]
    fn the_certified_walk_goes_on_past_an_idle_node_before_a_block() {
        // 130 nodes: 0-62 full (q = 1: 100 s to deadline 100), 63 idle,
        // 64 and 65 holding a part of q = 0.2 each, 66-129 idle. Job of
        // 3 parts, RE 50, D 100 (q = 0.5): the full nodes are
        // over-committed (not zero-risk), 64 and 65 fit (load 0.7: zero
        // risk by the shortcut). In node order: 63 (idle, met at the
        // start of the second block), then 64 and 65, not the idle 66.
        use crate::busy_index::BusyIndex;
        let mut n = nodes(130);
        for (k, node) in n.iter_mut().enumerate().take(63) {
            busy(node, 100 + k as u64, 100.0, 100.0);
        }
        busy(&mut n[64], 98, 20.0, 100.0);
        busy(&mut n[65], 99, 20.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        ix.keep_risk(true);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let j = job(1, 50.0, 3, 100.0, 1e9);
        match r.decide_bounded(0.0, &n, &ix, &j) {
            Some(Decision::Accept(a)) => assert_eq!(a.nodes, vec![63, 64, 65]),
            other => panic!("{other:?}"),
        }
        assert_eq!(decide(&mut r, &n, &j), Ok(vec![63, 64, 65]));
    }

    /// The debug build's check of a block certified whole bites: a bound
    /// function that lies about one node's load makes its block's
    /// certificate settle, as not zero-risk, a node the projection finds
    /// zero-risk, and the check projects it and panics. Job B: RE 120, D
    /// 150 (q = 0.8), P 1, at 0.
    /// - n0 holds A: 100 s of work due at 250 (q = 0.4): not zero-risk
    ///   (`an_over_committed_node_is_certainly_not_zero_risk` in the busy
    ///   index's certificates: B is late, A on time).
    /// - n1 holds C: 10 s due at 250 (q = 0.04): 0.04 + 0.8 <= 1, zero-risk
    ///   by the shortcut. Its bound claims [0.4, 0.4].
    /// - n2 is idle (zero-risk), after both in node order.
    ///
    /// Block 0 (both nodes; slacks 250 - 100 = 150 and 250 - 10 = 240,
    /// both above B's 120 s + margin, so one suffix covers both): least
    /// load 0.4, 0.4 + 0.8 > 1 and Q' = 1.2; B is due first (150 <= 250)
    /// with q_e 0.8 and 120 s: c = 1 - 1/1.2 = 1/6, B's delay at least
    /// 120/6 = 20 s, lift ~ 0.8/6 = 0.133; all the work of the node with
    /// the most, 100 + 120 s + margin, is done by 220 < 250 (slack 150 >
    /// 120): the latest part on time, over = 0. 0.133 / sqrt(2 x 2) =
    /// 0.067, above 2e-9: certified whole, no exception. The check projects n0 (not
    /// zero-risk, as certified) and n1: zero-risk, so it panics. With the
    /// check's loop never run (`w != 0` made `==`) the walk takes the
    /// block as certified and chooses the idle n2, without a panic.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "node 1: its block certified not zero-risk at 0")]
    fn a_block_certified_on_a_lying_bound_fails_the_debug_check() {
        use crate::busy_index::BusyIndex;
        let mut n = nodes(3);
        busy(&mut n[0], 10, 100.0, 250.0);
        busy(&mut n[1], 11, 10.0, 250.0);
        let mut ix = BusyIndex::of(&n);
        ix.keep_risk(true);
        crate::policy::test_util::rebound_lying(&mut ix, &n, 0.0, 1, 0.4);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let j = job(1, 120.0, 1, 150.0, 1e9);
        let d = r.decide_bounded(0.0, &n, &ix, &j);
        unreachable!("the check let the block settle node 1: {d:?}");
    }
}
