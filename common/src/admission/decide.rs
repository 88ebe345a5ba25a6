//! Decisions: a job's arrival, admission (from the busy index's bounds
//! or the refreshed snapshot), placement, queue passes and quotes.

use crate::job::{DeadlineType, JobSpec};
use crate::metrics::{JobRecord, PartRecord};
use crate::node_model::{fluid_advance, fluid_place, PartValue};
use crate::policy::{
    Accept, BoundedReads, Decision, Policy, PriceQuote, QueueAction, RejectReason,
};
use crate::protocol::{Dispatch, ManagerMsg, PartId, QuoteAnswer};
use crate::time::Time;
use crate::workload::WorkloadJob;

use super::*;

impl ManagerCore {
    /// A job arrives at `now` and is decided (time-shared) or queued
    /// (space-shared; started or dropped by the next [`Self::flush`]).
    pub fn arrive(
        &mut self,
        now: Time,
        job: WorkloadJob,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        let id = job.spec.id;
        if self.index.contains(id) {
            return Err(CoreError::Duplicate(id));
        }
        job.spec
            .validate()
            .map_err(|e| CoreError::Invalid(e.to_string()))?;
        if !(job.actual_runtime.is_finite() && job.actual_runtime >= 0.0) {
            return Err(CoreError::Invalid(format!(
                "job {id}: actual runtime must be finite and >= 0, got {}",
                job.actual_runtime
            )));
        }
        let k = self.jobs.len();
        self.index.insert(id, k);
        self.records.push(JobRecord::new(&job));
        self.jobs.push(LiveJob {
            job,
            first_part: 0,
            n_parts: 0,
            parts_left: 0,
            over: false,
            adopted: false,
            held_apart: false,
        });
        self.open += 1;
        match &self.policy {
            Policy::Admission(_) => {
                let decision = self.decide_live_bounded(now, k);
                let decision = match decision {
                    Some(d) => d,
                    None => {
                        self.refresh(now);
                        let Policy::Admission(p) = &mut self.policy else {
                            unreachable!()
                        };
                        let job = &self.jobs[k].job.spec;
                        if walks_every_node() && matches!(self.tracking, Tracking::Simulated { .. })
                        {
                            p.decide(now, &self.view, job)
                        } else {
                            p.decide_indexed(now, &self.view, &self.busy, job)
                        }
                    }
                };
                self.apply_admission(now, k, decision, out);
            }
            Policy::Queue(_) => {
                let Policy::Queue(q) = &mut self.policy else {
                    unreachable!()
                };
                if let Some(rej) = q.submit(now, &self.jobs[k].job.spec) {
                    self.reject(now, k, rej.reason, rej.detail, out);
                } else {
                    self.queued += 1;
                    self.pending = true;
                }
            }
        }
        Ok(())
    }

    /// Job `k`'s decision from the bounds of the busy index (live only),
    /// without bringing every busy node up to `now`: the bounds of the
    /// nodes that changed or ran out are computed again, and the policy
    /// asks for the exact load of the few nodes they leave open. `None`
    /// when the policy (or the job) cannot be decided that way.
    pub(super) fn decide_live_bounded(&mut self, now: Time, k: usize) -> Option<Decision> {
        let Tracking::Reported(reports) = &self.tracking else {
            return None;
        };
        let Policy::Admission(p) = &mut self.policy else {
            return None;
        };
        let Some(reads) = p
            .bounded_reads()
            .filter(|_| self.busy.busy_len() >= self.bounded_from)
        else {
            self.busy.stop_bounds();
            return None;
        };
        // LibraRisk's certificates ride on the bounds; the other policies
        // would only pay for their upkeep.
        self.busy.keep_risk(reads == BoundedReads::RiskCertificates);
        // LibraSLA's order by return, likewise.
        self.busy
            .keep_returns(reads == BoundedReads::ReturnOrder, &self.view);
        // Libra+$'s order by load with each subtree's bounds, in place of
        // Libra's B-trees.
        self.busy.keep_load_tree(reads == BoundedReads::LoadTree);
        let view = &self.view;
        self.busy.rebound(now, |v, from, to, fns| {
            load_bound(&view[v], &reports[v], from, to, fns)
        });
        let job = &self.jobs[k].job.spec;
        let d = p.decide_bounded(now, view, &self.busy, job);
        self.bounded_decisions += u64::from(d.is_some());
        d
    }

    /// How many decisions were taken from the busy index's load bounds
    /// (the rest brought every busy node up to date first).
    pub fn bounded_decisions(&self) -> u64 {
        self.bounded_decisions
    }

    /// A job arrives at `now`: [`Self::arrive`] then [`Self::flush`].
    pub fn submit(
        &mut self,
        now: Time,
        job: WorkloadJob,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        self.arrive(now, job, out)?;
        self.flush(now, out);
        Ok(())
    }

    pub(super) fn apply_admission(
        &mut self,
        now: Time,
        k: usize,
        decision: Decision,
        out: &mut Vec<Output>,
    ) {
        match decision {
            Decision::Accept(a) => {
                let global: Vec<usize> =
                    a.nodes.iter().map(|&n| self.view_ids[n] as usize).collect();
                self.start(now, k, &global, a.cost, false, out);
                out.push(Output::Decided {
                    job: self.jobs[k].job.spec.id,
                    decision: Decision::Accept(Accept {
                        nodes: global,
                        cost: a.cost,
                    }),
                });
            }
            Decision::Reject(r) => self.reject(now, k, r.reason, r.detail, out),
        }
    }

    pub(super) fn reject(
        &mut self,
        now: Time,
        k: usize,
        reason: RejectReason,
        detail: String,
        out: &mut Vec<Output>,
    ) {
        let j = &mut self.jobs[k];
        self.records[k].reject(now, reason, detail.clone());
        j.over = true;
        self.open -= 1;
        let id = j.job.spec.id;
        out.push(Output::Decided {
            job: id,
            decision: Decision::reject(reason, detail),
        });
        out.push(Output::Finished { job: id });
    }

    /// Places the parts of an accepted or started job on `global` nodes:
    /// into the fluid model (simulated) or as dispatches (live).
    pub(super) fn start(
        &mut self,
        now: Time,
        k: usize,
        global: &[usize],
        cost: f64,
        exclusive: bool,
        out: &mut Vec<Output>,
    ) {
        let j = &mut self.jobs[k];
        self.records[k].accept(now, global.to_vec(), cost);
        j.n_parts = global.len();
        j.parts_left = global.len();
        j.first_part = self.parts.len();
        self.part_done
            .resize(self.parts.len() + global.len(), false);
        let actual = j.job.actual_runtime;
        let speed = |g: usize| self.view_index[g].map_or(1.0, |v| self.view[v].spec.speed);
        // An exclusive (space-shared) job runs at its slowest node's pace
        // and holds every node of it for that long.
        let slowest = global
            .iter()
            .map(|&g| speed(g))
            .fold(f64::INFINITY, f64::min);
        self.parts.extend(global.iter().map(|&g| PartRecord {
            job: j.job.spec.id,
            node: g,
            start: now,
            finish: Time::INFINITY,
            cpu: actual / if exclusive { slowest } else { speed(g) },
        }));
        let value = match &self.policy {
            Policy::Admission(p) => p.part_value(&j.job.spec),
            Policy::Queue(_) => PartValue::default(),
        };
        let spec = &j.job.spec;
        let actual = j.job.actual_runtime;
        let id = spec.id;
        match &mut self.tracking {
            Tracking::Simulated {
                extras,
                scratch,
                rule,
                finished,
                synced,
                ..
            } => {
                // Space-shared runs are timed by the simulator's own event
                // queue: only time-shared parts enter the fluid model.
                if exclusive {
                    return;
                }
                for &g in global {
                    // The view is the identity over global ids until a
                    // fault takes a node out of it.
                    let g = self.view_index[g].expect("parts go to live nodes");
                    if self.view[g].parts.is_empty() {
                        // An idle node was left behind by the advances of
                        // the busy ones: brought to their instant as they
                        // were (no part, so no completion).
                        fluid_advance(
                            &mut self.view[g],
                            &mut extras[g],
                            *synced,
                            *rule,
                            scratch,
                            finished,
                        );
                    }
                    let part = self.view[g].new_valued_part(spec, value);
                    let actual_cpu = actual / self.view[g].spec.speed;
                    fluid_place(
                        &mut self.view[g],
                        &mut extras[g],
                        part,
                        actual_cpu,
                        *rule,
                        scratch,
                    );
                    self.busy.update(g, &self.view[g]);
                }
            }
            Tracking::Reported(reports) => {
                let hard = spec.qos.deadline_type == DeadlineType::Hard;
                for (index, &g) in global.iter().enumerate() {
                    let node = &self.nodes[g];
                    if let Some(v) = self.view_index[g] {
                        let part = self.view[v].new_valued_part(spec, value);
                        self.view[v].parts.push(part);
                        reports[v].push(None);
                        self.busy.update(v, &self.view[v]);
                    }
                    out.push(Output::Send {
                        link: node.link,
                        msg: ManagerMsg::Dispatch(Dispatch {
                            part: PartId {
                                job: id,
                                index: index as u32,
                            },
                            node: node.local,
                            estimate: spec.estimate(),
                            actual,
                            deadline: spec.deadline_abs(),
                            dispatched_at: now,
                            exclusive,
                            ret: value.ret,
                            hard,
                        }),
                    });
                }
            }
        }
    }

    /// Runs a queue policy's scheduling pass if anything happened since
    /// the last one (arrivals, completions, lost or new nodes): after every
    /// event (live) or once per instant (simulator).
    pub fn flush(&mut self, now: Time, out: &mut Vec<Output>) {
        if self.pending {
            self.pending = false;
            self.schedule(now, out);
        }
    }

    pub(super) fn schedule(&mut self, now: Time, out: &mut Vec<Output>) {
        let Policy::Queue(q) = &mut self.policy else {
            return;
        };
        self.actions.clear();
        q.schedule(now, &mut self.actions);
        self.apply_actions(now, out);
    }

    /// Books the queue policy's actions in `self.actions`.
    pub(super) fn apply_actions(&mut self, now: Time, out: &mut Vec<Output>) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                QueueAction::Start { job, nodes, cost } => {
                    self.queued -= 1;
                    let k = self.index.at(job);
                    self.start(now, k, &nodes, cost, true, out);
                    out.push(Output::Decided {
                        job,
                        decision: Decision::Accept(Accept { nodes, cost }),
                    });
                }
                QueueAction::Drop { job, reject } => {
                    self.queued -= 1;
                    let k = self.index.at(job);
                    self.reject(now, k, reject.reason, reject.detail, out);
                }
                QueueAction::Kill { job } => {
                    // Its parts end now; the simulator's own completion of
                    // them later is a duplicate, ignored. Live, they are
                    // stopped on their nodes.
                    if matches!(self.tracking, Tracking::Simulated { .. }) {
                        let _ = self.job_completed(now, 0, job, now, out);
                    } else {
                        self.kill_live(now, job, out);
                    }
                }
            }
        }
        // Kept for its capacity.
        self.actions = actions;
    }

    /// Ends a started job of a live run now (a queue policy's KILL_JOB):
    /// its parts still running are cancelled on their nodes, and its
    /// record finishes now, saying it was killed.
    fn kill_live(&mut self, now: Time, job: JobId, out: &mut Vec<Output>) {
        let Some(k) = self.index.get(job) else {
            return;
        };
        if self.jobs[k].over {
            return;
        }
        self.records[k].detail = format!("killed at {now:.3} by the scheduler (KILL_JOB)");
        let (first, n_parts) = (self.jobs[k].first_part, self.jobs[k].n_parts);
        for index in 0..n_parts {
            if self.part_done[first + index] {
                continue;
            }
            self.part_done[first + index] = true;
            let g = self.parts[first + index].node as u32;
            let part = PartId {
                job,
                index: index as u32,
            };
            let n = &self.nodes[g as usize];
            if n.alive {
                out.push(Output::Send {
                    link: n.link,
                    msg: ManagerMsg::Cancel { part },
                });
            }
            self.remove_part(g, part);
            if self.book_part_finished(now, k, index, now) {
                out.push(Output::Finished { job });
            }
        }
    }

    /// What the running policy would answer `job` (already validated,
    /// submit time set) if it were submitted at `now`, and its per-node
    /// prices if it prices per node; nothing changes. Node ids are global.
    pub fn quote(&mut self, now: Time, job: &JobSpec) -> (Vec<PriceQuote>, QuoteAnswer) {
        match &self.policy {
            Policy::Admission(_) => {
                self.refresh(now);
                let Policy::Admission(p) = &mut self.policy else {
                    unreachable!()
                };
                // Quotes name nodes by their spec id, which is the global id.
                let quotes = p.price_quotes(now, &self.view, job);
                // Admission policies keep no state between decisions
                // beyond scratch space: deciding is asking.
                let decision = p.decide_indexed(now, &self.view, &self.busy, job);
                let decision = match decision {
                    Decision::Accept(mut a) => {
                        for n in &mut a.nodes {
                            *n = self.view_ids[*n] as usize;
                        }
                        Decision::Accept(a)
                    }
                    d => d,
                };
                (quotes, QuoteAnswer::Decided(decision))
            }
            Policy::Queue(q) => {
                let answer = match q.would_submit(now, job, self.view.len()) {
                    Some(r) => QuoteAnswer::Decided(Decision::Reject(r)),
                    None => QuoteAnswer::Queued {
                        waiting: self.queued as u64,
                        free_nodes: self.view.iter().filter(|n| n.parts.is_empty()).count() as u64,
                    },
                };
                (Vec::new(), answer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::job::JobSpec;
    use crate::policy::{self, PolicyConfig};
    use crate::protocol::NodeInfo;

    use super::super::tests::info;
    use super::*;

    fn job(id: JobId, re: f64, d: f64) -> WorkloadJob {
        WorkloadJob {
            spec: JobSpec::new(id, 0.0, re, 1, d, 1e9),
            actual_runtime: re,
        }
    }

    fn libra_on_four_nodes() -> ManagerCore {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        let infos: Vec<NodeInfo> = (0..4).map(info).collect();
        c.register(1, "a", &infos).unwrap();
        c
    }

    /// Decisions come from the busy index's bounds once as many nodes are
    /// busy as `bounded_from` says, not before: with it at 2, jobs of
    /// share 0.9 (one a node) are decided by bringing the nodes up to date
    /// while 0 and 1 nodes are busy, from the bounds when 2 are.
    #[test]
    fn decisions_come_from_the_bounds_from_bounded_from_busy_nodes_on() {
        let mut c = libra_on_four_nodes();
        c.bounded_from = 2;
        let mut out = Vec::new();
        c.submit(0.0, job(1, 90.0, 100.0), &mut out).unwrap();
        c.submit(0.0, job(2, 90.0, 100.0), &mut out).unwrap();
        assert_eq!(c.bounded_decisions(), 0);
        c.submit(0.0, job(3, 90.0, 100.0), &mut out).unwrap();
        assert_eq!(c.bounded_decisions(), 1);
        assert_eq!(c.record(3).unwrap().nodes.len(), 1);
    }

    /// The busy index keeps, beside the bounds, only the structure the
    /// policy's bounded decision reads, and no bounds at all for a
    /// policy (or a placement, an order) that never decides from them:
    /// their upkeep runs on every change of a node, which at Fugaku's size
    /// is the manager's main cost. Jobs of 90 s due at 100, 150 and 200 s
    /// (shares 0.9, 0.6, 0.45) on four nodes, `bounded_from` 2: the first
    /// two cannot share a node (a load of 1.5; for LibraRisk, shares cut
    /// to 0.6 and 0.4 end them at 150 and 180: deadline delays of 1.5 and
    /// 1.2, unequal, so not zero-risk), so the third is decided with two
    /// nodes busy.
    #[test]
    fn the_busy_index_keeps_only_what_the_policy_reads() {
        use crate::policy::{Placement, RiskOrder};
        let least = PolicyConfig {
            placement: Placement::LeastLoaded,
            ..PolicyConfig::default()
        };
        let risk_best_fit = PolicyConfig {
            risk_order: RiskOrder::BestFit,
            ..PolicyConfig::default()
        };
        let no_shortcut = PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        };
        let d = PolicyConfig::default();
        // (policy, config, bounds, risk certificates, return order, load
        // tree, decisions from the bounds)
        let cases = [
            ("libra", &d, true, false, false, false, 1),
            ("libra", &least, true, false, false, false, 1),
            ("libra-plus-dollar", &d, true, false, false, true, 1),
            ("libra-risk", &d, true, true, false, false, 1),
            ("libra-risk", &risk_best_fit, false, false, false, false, 0),
            ("libra-sla", &d, true, false, true, false, 1),
            ("libra-sla", &no_shortcut, false, false, false, false, 0),
        ];
        for (name, cfg, bounds, risk, returns, tree, from_bounds) in cases {
            let mut c = ManagerCore::new(policy::build(name, cfg, &[]).unwrap());
            let infos: Vec<NodeInfo> = (0..4).map(info).collect();
            c.register(1, "a", &infos).unwrap();
            c.bounded_from = 2;
            let mut out = Vec::new();
            for (id, d) in [(1, 100.0), (2, 150.0), (3, 200.0)] {
                c.submit(0.0, job(id, 90.0, d), &mut out).unwrap();
            }
            let kept = (
                c.busy.bounds_kept(),
                c.busy.risk_kept(),
                c.busy.returns_kept(),
                c.busy.load_tree_kept(),
                c.bounded_decisions(),
            );
            assert_eq!(
                kept,
                (bounds, risk, returns, tree, from_bounds),
                "{name} {cfg:?}"
            );
            assert_eq!(c.record(3).unwrap().nodes.len(), 1, "{name}");
        }
    }

    /// A job whose actual runtime is negative or not a number is refused,
    /// naming it, and nothing is booked.
    #[test]
    fn a_job_with_an_impossible_actual_runtime_is_refused() {
        let mut c = libra_on_four_nodes();
        let mut out = Vec::new();
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let mut j = job(5, 10.0, 100.0);
            j.actual_runtime = bad;
            match c.submit(0.0, j, &mut out) {
                Err(CoreError::Invalid(m)) => assert_eq!(
                    m,
                    format!("job 5: actual runtime must be finite and >= 0, got {bad}")
                ),
                other => panic!("actual runtime {bad}: {other:?}"),
            }
        }
        assert!(out.is_empty());
        assert!(c.record(5).is_none());
    }

    /// A rejected job is over: the core counts no open job for it.
    #[test]
    fn a_rejected_job_is_not_open() {
        let mut c = libra_on_four_nodes();
        let mut out = Vec::new();
        let mut wide = job(6, 10.0, 100.0);
        wide.spec.resources.processors = 5;
        c.submit(0.0, wide, &mut out).unwrap();
        assert!(!c.record(6).unwrap().accepted);
        assert_eq!(c.open_jobs(), 0);
        c.submit(0.0, job(7, 10.0, 100.0), &mut out).unwrap();
        assert_eq!(c.open_jobs(), 1);
    }

    fn nodes_of_speed(speeds: &[f64]) -> Vec<crate::node_model::NodeSpec> {
        speeds
            .iter()
            .enumerate()
            .map(|(id, &speed)| crate::node_model::NodeSpec {
                id,
                speed,
                memory_kb: 0,
                disk_mb: 0,
            })
            .collect()
    }

    /// In the simulator a part needs its actual runtime over the node's
    /// speed of processor time: 100 s of reference work alone on a node
    /// of speed 2 (Libra, time-shared) ends at 50, its part record says
    /// 50 s. A two-node space-shared job (FIFO) on nodes of speed 2 and 4
    /// is paced by the slower: 100 / 2 = 50 s on each.
    #[test]
    fn processor_time_follows_the_node_speed() {
        use crate::sim::simulate;
        let jobs = [job(1, 100.0, 1000.0)];
        let libra = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let o = simulate(&jobs, &nodes_of_speed(&[2.0]), libra);
        assert_eq!(o.records[0].finish, Some(50.0), "{:?}", o.records[0]);
        assert_eq!(o.parts[0].cpu, 50.0);

        let mut two = job(2, 100.0, 1000.0);
        two.spec.resources.processors = 2;
        let specs = nodes_of_speed(&[2.0, 4.0]);
        let fifo = policy::build("fifo", &PolicyConfig::default(), &specs).unwrap();
        let o = simulate(&[two], &specs, fifo);
        assert_eq!(o.records[0].finish, Some(50.0));
        let cpu: Vec<f64> = o.parts.iter().map(|p| p.cpu).collect();
        assert_eq!(cpu, [50.0, 50.0]);
    }

    /// A live part carries its job's deadline type to the node (whose
    /// share rule protects hard parts).
    #[test]
    fn a_part_is_dispatched_with_its_deadline_type() {
        use crate::job::DeadlineType;
        let mut c = libra_on_four_nodes();
        let mut out = Vec::new();
        let mut hard = job(8, 10.0, 100.0);
        hard.spec = hard.spec.with_deadline_type(DeadlineType::Hard, 1.0);
        c.submit(0.0, hard, &mut out).unwrap();
        let mut soft = job(9, 10.0, 100.0);
        soft.spec = soft.spec.with_deadline_type(DeadlineType::Soft, 1.0);
        c.submit(0.0, soft, &mut out).unwrap();
        let sent: Vec<(JobId, bool)> = out
            .iter()
            .filter_map(|o| match o {
                Output::Send {
                    msg: ManagerMsg::Dispatch(d),
                    ..
                } => Some((d.part.job, d.hard)),
                _ => None,
            })
            .collect();
        assert_eq!(sent, [(8, true), (9, false)]);
    }

    /// A job that needs memory is decided on the nodes that have it, from
    /// the bounds or not: Libra+$ (best fit, the fullest node first) puts
    /// job 1 (q 0.5) on node 0, which has no memory; job 2 (q 0.3, 1 KB)
    /// cannot go there and takes node 1, the lowest of the empty nodes
    /// with memory.
    #[test]
    fn a_job_that_needs_memory_goes_to_a_node_that_has_it() {
        let p = policy::build("libra-plus-dollar", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.bounded_from = 0;
        let infos: Vec<NodeInfo> = (0..4)
            .map(|local| NodeInfo {
                memory_kb: if local == 0 { 0 } else { 1 << 20 },
                ..info(local)
            })
            .collect();
        c.register(1, "a", &infos).unwrap();
        let mut out = Vec::new();
        c.submit(0.0, job(1, 50.0, 100.0), &mut out).unwrap();
        assert_eq!(c.record(1).unwrap().nodes, [0]);
        let mut j = job(2, 30.0, 100.0);
        j.spec.resources.memory_kb = 1;
        c.submit(0.0, j, &mut out).unwrap();
        assert_eq!(c.record(2).unwrap().nodes, [1]);
    }
}
