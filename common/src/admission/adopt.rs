//! Jobs taken over from an earlier manager of the same live run
//! (`libratory resume`): accepted and started before a crash, booked here
//! as running without a decision and without a dispatch, so that the
//! policies deciding after the restart see their load, and their
//! completion, loss and cancellation take the paths of any job (one record,
//! part records in the parts files).
//!
//! The resumed manager adopts each such job with its decided record, its
//! parts on the nodes the record names. Those are the earlier manager's
//! node ids, taken by nodes that are no longer alive (the node processes
//! register again under new ids): such a part waits out of the view until
//! its process reports it running ([`ManagerCore::adopted_part_back`],
//! which moves it to the node it runs on now, with its progress) or
//! finished ([`ManagerCore::adopted_part_finished`]), or its job is lost
//! ([`ManagerCore::lose`]) because its process did not come back.
//!
//! A queue policy never queued or started such a job: it is told that the
//! job holds the nodes its parts run on, until its end
//! ([`crate::policy::QueuePolicy::hold_node`], with the end its estimate
//! promises); one that cannot be told has the nodes taken out of its pool
//! while the parts run.

use crate::job::DeadlineType;
use crate::metrics::{JobRecord, PartRecord};
use crate::policy::Policy;
use crate::protocol::{Dispatch, PartId};
use crate::time::Time;
use crate::workload::WorkloadJob;

use super::tracking::Reported;
use super::*;

impl ManagerCore {
    /// Books `job` (live cores), accepted and started by an earlier manager as its
    /// decided `record` says (nodes, start, cost; this core's clock), as a
    /// running job: no decision, nothing sent. A part on an alive node
    /// enters the view as not yet reported (all its estimate to do, the
    /// conservative side); one on a node not alive waits (see the module
    /// header).
    pub fn adopt(&mut self, job: WorkloadJob, record: JobRecord) -> Result<(), CoreError> {
        let id = job.spec.id;
        if self.index.contains(id) {
            return Err(CoreError::Duplicate(id));
        }
        let invalid = |why: String| CoreError::Invalid(format!("adopted job {id}: {why}"));
        if !matches!(self.tracking, Tracking::Reported(_)) {
            return Err(invalid("only a live core takes jobs over".into()));
        }
        if record.id != id || !record.accepted || record.lost || record.finish.is_some() {
            return Err(invalid(
                "its record is not one of an accepted, unfinished job".into(),
            ));
        }
        // The journal is this manager's own, but a file can be edited or
        // damaged: the job is checked as a submission is, and its record's
        // instants, so that no impossible number reaches the view.
        job.spec
            .validate()
            .map_err(|e| invalid(format!("its specification: {e}")))?;
        if !(job.actual_runtime.is_finite() && job.actual_runtime >= 0.0) {
            return Err(invalid(format!(
                "actual runtime must be finite and >= 0, got {}",
                job.actual_runtime
            )));
        }
        let start = record.start.unwrap_or(record.decided_at);
        if !start.is_finite() {
            return Err(invalid(format!(
                "its record's start must be finite, got {start}"
            )));
        }
        if record.nodes.is_empty() {
            return Err(invalid("its record names no node".into()));
        }
        if let Some(&n) = record.nodes.iter().find(|&&n| n >= self.nodes.len()) {
            return Err(invalid(format!(
                "its record names node {n}, never registered"
            )));
        }
        let k = self.jobs.len();
        let n_parts = record.nodes.len();
        let first_part = self.parts.len();
        self.index.insert(id, k);
        let parts: Vec<PartRecord> = record
            .nodes
            .iter()
            .map(|&g| PartRecord {
                job: id,
                node: g,
                start,
                finish: Time::INFINITY,
                cpu: job.actual_runtime / self.speed_of(g),
            })
            .collect();
        self.parts.extend(parts);
        self.part_done.resize(self.parts.len(), false);
        let nodes = record.nodes.clone();
        self.records.push(record);
        self.jobs.push(LiveJob {
            job,
            first_part,
            n_parts,
            parts_left: n_parts,
            over: false,
            adopted: true,
            held_apart: false,
        });
        self.open += 1;
        for &g in &nodes {
            if self.nodes[g].alive {
                self.place_adopted(k, g as u32, None);
            }
        }
        Ok(())
    }

    /// Part `part` of an adopted job runs on node `local` of `link` (a node
    /// process that registered with this manager), having done `work_done`
    /// (reference work) at `share` by `now`: it moves there (its part
    /// record and its job's record name that node) and the view counts it
    /// from that report on. Returns the node's global id.
    pub fn adopted_part_back(
        &mut self,
        now: Time,
        link: LinkId,
        part: PartId,
        local: u32,
        work_done: f64,
        share: f64,
    ) -> Result<u32, CoreError> {
        let bad = |field, want, value| CoreError::BadReport {
            host: self.link_host(link).to_string(),
            link,
            what: format!("adopted part {}/{}", part.job, part.index),
            field,
            want,
            value,
        };
        let (k, g) = self.find_adopted(link, part, local)?;
        if !(work_done.is_finite() && work_done >= 0.0) {
            return Err(bad("work_done", "finite and >= 0", work_done));
        }
        if !(0.0..=1.0).contains(&share) {
            return Err(bad("share", "in [0, 1]", share));
        }
        self.move_adopted(k, part, g);
        let speed = self.speed_of(g as usize);
        let report = Reported {
            cpu_done: work_done / speed,
            share,
            at: now,
        };
        self.place_adopted(k, g, Some(report));
        Ok(g)
    }

    /// Part `part` of an adopted job never reached its node: its dispatch
    /// died with the earlier manager (a partition held it when that
    /// manager crashed), and the node, node `local` of `link`, came back
    /// without it. It is dispatched there again now, with all its work to
    /// do and its own deadline: it moves there (as
    /// [`ManagerCore::adopted_part_back`] moves a part; its part record
    /// starts now) and the view counts it as any part just dispatched.
    /// The old frame cannot arrive after this one: it died with the old
    /// manager's connection. Returns the node's global id.
    pub fn adopted_part_again(
        &mut self,
        now: Time,
        link: LinkId,
        part: PartId,
        local: u32,
        out: &mut Vec<Output>,
    ) -> Result<u32, CoreError> {
        let (k, g) = self.find_adopted(link, part, local)?;
        // Once: a part on a live node (sent again already, or reported
        // back) is not sent again.
        if !self.adopted_part_waiting(part.job, part.index) {
            return Err(self.unknown_part(link, part));
        }
        self.move_adopted(k, part, g);
        let p = self.jobs[k].first_part + part.index as usize;
        self.parts[p].start = now;
        self.place_adopted(k, g, None);
        let spec = &self.jobs[k].job.spec;
        let value = match &self.policy {
            Policy::Admission(a) => a.part_value(spec),
            Policy::Queue(_) => crate::node_model::PartValue::default(),
        };
        out.push(Output::Send {
            link,
            msg: ManagerMsg::Dispatch(Dispatch {
                part,
                node: local,
                estimate: spec.estimate(),
                actual: self.jobs[k].job.actual_runtime,
                deadline: spec.deadline_abs(),
                dispatched_at: now,
                // As `start` dispatches: a queue policy's parts hold their
                // nodes whole.
                exclusive: matches!(self.policy, Policy::Queue(_)),
                ret: value.ret,
                hard: spec.qos.deadline_type == DeadlineType::Hard,
            }),
        });
        Ok(g)
    }

    /// The index of adopted job `part.job`, whose part `part` waits, and
    /// the global id of node `local` of `link` (alive).
    fn find_adopted(
        &self,
        link: LinkId,
        part: PartId,
        local: u32,
    ) -> Result<(usize, u32), CoreError> {
        let unknown = || self.unknown_part(link, part);
        let k = self.index.get(part.job).ok_or_else(unknown)?;
        let index = part.index as usize;
        let j = &self.jobs[k];
        if !j.adopted || j.over || index >= j.n_parts || self.part_done[j.first_part + index] {
            return Err(unknown());
        }
        let g = (0..self.nodes.len() as u32)
            .find(|&g| {
                let n = &self.nodes[g as usize];
                n.alive && n.link == link && n.local == local
            })
            .ok_or_else(unknown)?;
        Ok((k, g))
    }

    /// `part` is not an adopted part `link` may take.
    fn unknown_part(&self, link: LinkId, part: PartId) -> CoreError {
        CoreError::UnknownPart {
            host: self.link_host(link).to_string(),
            link,
            job: part.job,
            index: part.index,
        }
    }

    /// Moves part `part` of adopted job `k` to node `g`: its part record
    /// and its job's record name that node from now on.
    fn move_adopted(&mut self, k: usize, part: PartId, g: u32) {
        let index = part.index as usize;
        let p = self.jobs[k].first_part + index;
        let old = self.parts[p].node as u32;
        if old != g {
            self.remove_part(old, part);
            if self.nodes[old as usize].alive && self.jobs[k].held_apart {
                self.release_node(old);
            }
            self.parts[p].node = g as usize;
            self.parts[p].cpu = self.jobs[k].job.actual_runtime / self.speed_of(g as usize);
            self.records[k].nodes[index] = g as usize;
        }
    }

    /// Part `part` of an adopted job finished at `at` (a node process
    /// reported it finished while no manager ran, or it ended before the
    /// crash unobserved and `at` is the caller's best time). A job whose
    /// last part this was is over.
    pub fn adopted_part_finished(
        &mut self,
        now: Time,
        part: PartId,
        at: Time,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        let unknown = || CoreError::UnknownPart {
            host: "(adopted)".into(),
            link: 0,
            job: part.job,
            index: part.index,
        };
        let k = self.index.get(part.job).ok_or_else(unknown)?;
        let j = &self.jobs[k];
        let index = part.index as usize;
        if !j.adopted || index >= j.n_parts {
            return Err(unknown());
        }
        if j.over || self.part_done[j.first_part + index] {
            return Ok(());
        }
        if !at.is_finite() {
            return Err(CoreError::Invalid(format!(
                "adopted part {}/{}: finish must be finite, got {at}",
                part.job, part.index
            )));
        }
        let p = j.first_part + index;
        self.part_done[p] = true;
        let g = self.parts[p].node as u32;
        self.remove_part(g, part);
        if self.nodes[g as usize].alive && self.jobs[k].held_apart {
            self.release_node(g);
        }
        if self.book_part_finished(now, k, index, at) {
            out.push(Output::Finished { job: part.job });
        }
        Ok(())
    }

    /// Ends `job` as lost (`detail` says why): its parts still running on
    /// live nodes are cancelled, as when a node is lost. For jobs no node
    /// loss ends, such as an adopted job whose node process did not come
    /// back. Nothing happens to a job already over.
    pub fn lose(
        &mut self,
        now: Time,
        job: JobId,
        detail: String,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        let k = self.index.get(job).ok_or_else(|| {
            CoreError::Invalid(format!("job {job} cannot be lost: it was never submitted"))
        })?;
        if self.jobs[k].over {
            return Ok(());
        }
        self.lose_job(now, k, detail, None, out);
        self.pending = true;
        self.flush(now, out);
        Ok(())
    }

    /// Whether part `index` of `job` is booked finished here (a resumed
    /// manager books at once the parts the journal holds over).
    pub fn part_booked_finished(&self, job: JobId, index: u32) -> bool {
        self.index.get(job).is_some_and(|k| {
            let j = &self.jobs[k];
            (index as usize) < j.n_parts && self.part_done[j.first_part + index as usize]
        })
    }

    /// Whether `job` was adopted and part `index` of it is neither back on
    /// a node of this manager nor over.
    pub fn adopted_part_waiting(&self, job: JobId, index: u32) -> bool {
        self.index.get(job).is_some_and(|k| {
            let j = &self.jobs[k];
            let i = index as usize;
            j.adopted
                && !j.over
                && i < j.n_parts
                && !self.part_done[j.first_part + i]
                && !self.nodes[self.parts[j.first_part + i].node].alive
        })
    }

    /// The speed of node `g` (1 once it left the view: its part records
    /// then only keep the processor time it would have taken).
    fn speed_of(&self, g: usize) -> f64 {
        self.view_index[g].map_or(1.0, |v| self.view[v].spec.speed)
    }

    /// Puts adopted job `k`'s part on alive node `g` into the
    /// view (with its last report, if any) and, for a queue policy, takes
    /// the node out of the pool.
    fn place_adopted(&mut self, k: usize, g: u32, report: Option<Reported>) {
        let Some(v) = self.view_index[g as usize] else {
            return;
        };
        let spec = &self.jobs[k].job.spec;
        let value = match &self.policy {
            Policy::Admission(p) => p.part_value(spec),
            Policy::Queue(_) => crate::node_model::PartValue::default(),
        };
        let id = spec.id;
        let at = self.view[v].parts.iter().position(|q| q.job == id);
        let placed = at.is_none();
        let at = match at {
            Some(i) => i,
            None => {
                let part = self.view[v].new_valued_part(spec, value);
                self.view[v].parts.push(part);
                if let Tracking::Reported(reports) = &mut self.tracking {
                    reports[v].push(None);
                }
                self.view[v].parts.len() - 1
            }
        };
        if let Tracking::Reported(reports) = &mut self.tracking {
            if let Some(r) = report {
                self.view[v].parts[at].cpu_done = r.cpu_done;
                reports[v][at] = Some(r);
            }
            self.busy.update(v, &self.view[v]);
        }
        if !placed {
            return;
        }
        if let Policy::Queue(q) = &mut self.policy {
            // The end its estimate promises, from its part's start (a
            // part dispatched again starts at the rejoin, not with its job).
            let j = &self.jobs[k];
            let start = self.parts[j.first_part..j.first_part + j.n_parts]
                .iter()
                .find(|p| p.node == g as usize)
                .map_or(0.0, |p| p.start);
            let est_end = start + self.jobs[k].job.spec.estimate() / self.view[v].spec.speed;
            if !q.hold_node(id, g as usize, est_end) {
                q.set_node_available(g as usize, false);
                self.jobs[k].held_apart = true;
            }
            self.pending = true;
        }
    }

    /// An adopted part held apart left alive node `g`: a queue policy may
    /// use it again.
    pub(super) fn release_node(&mut self, g: u32) {
        if let Policy::Queue(q) = &mut self.policy {
            q.set_node_available(g as usize, true);
            self.pending = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::job::{JobSpec, Urgency};
    use crate::policy::{self, PolicyConfig};
    use crate::protocol::{ManagerMsg, NodeInfo};

    use super::super::tests::info;
    use super::*;

    fn job(id: JobId, submit: f64, re: f64, p: u32, d: f64) -> WorkloadJob {
        WorkloadJob {
            spec: JobSpec::new(id, submit, re, p, d, 1e9).with_urgency(Urgency::Low),
            actual_runtime: re,
        }
    }

    /// The record an earlier manager decided for `j` at its submit time.
    fn decided(j: &WorkloadJob, nodes: Vec<usize>) -> JobRecord {
        let mut r = JobRecord::new(j);
        r.accept(j.spec.details.submit_time, nodes, 0.0);
        r
    }

    fn placed(out: &[Output], job: JobId) -> Option<Vec<usize>> {
        out.iter().find_map(|o| match o {
            Output::Decided {
                job: j,
                decision: crate::policy::Decision::Accept(a),
            } if *j == job => Some(a.nodes.clone()),
            _ => None,
        })
    }

    /// The earlier manager's node process (node 0) is gone; the one that
    /// rode the crash out registered as nodes 1 and 2 (link 2).
    fn resumed(policy: &str) -> ManagerCore {
        let p = policy::build(policy, &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        assert_eq!(c.register(2, "b", &[info(0), info(1)]).unwrap(), [1, 2]);
        c
    }

    /// Libra, numbers by hand. Job 1 (RE 100, D 200, submitted and
    /// started at 0 on the old node 0) is adopted and reported back at 50
    /// on node 1 with 50 done at share 0.5: it needs (100 - 50) / (200 -
    /// 50) = 1/3 there. Job 2 (RE 100, D 120) needs 100 / 120 = 5/6:
    /// 1/3 + 5/6 > 1, so it goes to node 2 (without the adopted part Libra
    /// puts it on the lowest empty node, 1). Job 3 (RE 60, D 100) needs
    /// 0.6: node 1 holds 1/3 + 0.6 = 0.933 (had the report not counted,
    /// 100 / 150 + 0.6 > 1), node 2 would hold 5/6 + 0.6: node 1. Job 1
    /// completes on node 1 at 149 by the normal path: one record, one
    /// part record naming node 1.
    #[test]
    fn an_adopted_part_counts_in_the_view_from_its_report_and_completes_as_usual() {
        let mut c = resumed("libra");
        let j1 = job(1, 0.0, 100.0, 1, 200.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        assert!(c.adopted_part_waiting(1, 0));
        assert_eq!(c.open_jobs(), 1);
        let p = PartId { job: 1, index: 0 };
        assert_eq!(c.adopted_part_back(50.0, 2, p, 0, 50.0, 0.5).unwrap(), 1);
        assert!(!c.adopted_part_waiting(1, 0));
        assert_eq!(c.record(1).unwrap().nodes, [1]);

        let mut out = Vec::new();
        c.submit(50.0, job(2, 50.0, 100.0, 1, 120.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), Some(vec![2]));
        c.submit(50.0, job(3, 50.0, 60.0, 1, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 3), Some(vec![1]));

        // The same core without the adoption: job 2 takes node 1.
        let mut bare = resumed("libra");
        let mut o = Vec::new();
        bare.submit(50.0, job(2, 50.0, 100.0, 1, 120.0), &mut o)
            .unwrap();
        assert_eq!(placed(&o, 2), Some(vec![1]));

        out.clear();
        c.completed(150.0, 2, p, 149.0, &mut out).unwrap();
        assert_eq!(out, [Output::Finished { job: 1 }]);
        let r = c.record(1).unwrap();
        assert_eq!((r.finish, r.lost, r.start), (Some(149.0), false, Some(0.0)));
        let parts: Vec<(JobId, usize, f64, f64)> = c
            .part_records()
            .iter()
            .map(|p| (p.job, p.node, p.start, p.finish))
            .collect();
        assert_eq!(parts[0], (1, 1, 0.0, 149.0));
        assert_eq!(c.open_jobs(), 2);
    }

    /// A part whose dispatch died with the earlier manager is dispatched
    /// again, numbers by hand. Job 1 (RE 100, D 200, submitted and decided
    /// at 0 for the old node 0) never reached its node; its process comes
    /// back as nodes 1 and 2 (link 2) and at 50 the part is sent to node 1
    /// (local 0) with its whole work and its own deadline, 200. The view
    /// counts it as just dispatched: 100 / (200 - 50) = 2/3 on node 1, so
    /// job 2 (RE 50, D 100 at 50: 0.5) goes to node 2 (2/3 + 0.5 > 1;
    /// reported back at 50 with half its work done, job 1 would need only
    /// 1/3 and job 2 would join it, as in the test above). The part's
    /// record starts at 50 and, completing at 150, ends there.
    #[test]
    fn a_part_whose_dispatch_died_is_dispatched_again_with_all_its_work() {
        let mut c = resumed("libra");
        let j1 = job(1, 0.0, 100.0, 1, 200.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        let p = PartId { job: 1, index: 0 };
        let mut out = Vec::new();
        assert_eq!(c.adopted_part_again(50.0, 2, p, 0, &mut out).unwrap(), 1);
        assert!(!c.adopted_part_waiting(1, 0));
        assert_eq!(c.record(1).unwrap().nodes, [1]);
        let Some(Output::Send {
            link: 2,
            msg: ManagerMsg::Dispatch(d),
        }) = out.first()
        else {
            panic!("expected one dispatch on link 2, got {out:?}");
        };
        assert_eq!(out.len(), 1);
        assert_eq!(
            (
                d.part,
                d.node,
                d.estimate,
                d.actual,
                d.deadline,
                d.dispatched_at
            ),
            (p, 0, 100.0, 100.0, 200.0, 50.0)
        );
        // Hard: the default deadline type of a job spec.
        assert!(!d.exclusive && d.hard);

        out.clear();
        c.submit(50.0, job(2, 50.0, 50.0, 1, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), Some(vec![2]));
        // Sent once: a second try finds the part on its node, not waiting.
        let mut again = Vec::new();
        assert!(matches!(
            c.adopted_part_again(50.0, 2, p, 0, &mut again),
            Err(CoreError::UnknownPart { .. })
        ));
        assert!(again.is_empty());

        out.clear();
        c.completed(150.0, 2, p, 150.0, &mut out).unwrap();
        assert_eq!(out, [Output::Finished { job: 1 }]);
        let r = c.record(1).unwrap();
        assert_eq!((r.finish, r.lost), (Some(150.0), false));
        let part = &c.part_records()[0];
        assert_eq!(
            (part.job, part.node, part.start, part.finish),
            (1, 1, 50.0, 150.0)
        );
    }

    /// Of a two-part job (RE 100, D 200, decided at 0 for old nodes 0 and
    /// 1), part 0 comes back with its process (new node 2) and part 1,
    /// whose dispatch died, is sent again at 50 to new node 3 (local 1):
    /// the second part's record starts at 50 and names node 3, the
    /// first's still starts at 0 and names node 2; the job's record names
    /// both.
    #[test]
    fn the_part_sent_again_is_the_one_whose_record_restarts() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0), info(1)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        assert_eq!(c.register(2, "b", &[info(0), info(1)]).unwrap(), [2, 3]);
        let j4 = job(4, 0.0, 100.0, 2, 200.0);
        c.adopt(j4.clone(), decided(&j4, vec![0, 1])).unwrap();
        c.adopted_part_back(50.0, 2, PartId { job: 4, index: 0 }, 0, 50.0, 0.5)
            .unwrap();
        let mut out = Vec::new();
        assert_eq!(
            c.adopted_part_again(50.0, 2, PartId { job: 4, index: 1 }, 1, &mut out)
                .unwrap(),
            3
        );
        let parts: Vec<(usize, f64)> = c.part_records().iter().map(|p| (p.node, p.start)).collect();
        assert_eq!(parts, [(2, 0.0), (3, 50.0)]);
        assert_eq!(c.record(4).unwrap().nodes, [2, 3]);
    }

    /// EASY backfilling (FCFS) plans around a part dispatched again from
    /// that dispatch, not from its job's start: job 1 (estimate 100,
    /// decided at 0 for the old node 0) is sent again at 40 to node 1
    /// (local 0 of the process that came back as nodes 1 and 2), so it
    /// holds node 1 until 140. Job 2 (two nodes) waits for it; job 3 (one
    /// node, estimate 70) submitted at 50 ends at 120 <= 140 and
    /// backfills on node 2 (from the job's start, node 1 would be free at
    /// 100 and job 3 would not). The dispatch holds its node whole.
    #[test]
    fn a_part_dispatched_again_holds_its_node_from_its_new_start() {
        let p = policy::build("fcfs-bf", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        assert_eq!(c.register(2, "b", &[info(0), info(1)]).unwrap(), [1, 2]);
        let j1 = job(1, 0.0, 100.0, 1, 1000.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        let mut out = Vec::new();
        c.adopted_part_again(40.0, 2, PartId { job: 1, index: 0 }, 0, &mut out)
            .unwrap();
        let Some(Output::Send {
            msg: ManagerMsg::Dispatch(d),
            ..
        }) = out.first()
        else {
            panic!("expected a dispatch, got {out:?}");
        };
        assert!(d.exclusive, "a queue policy's part holds its node whole");
        out.clear();
        c.submit(50.0, job(2, 50.0, 10.0, 2, 1000.0), &mut out)
            .unwrap();
        c.submit(50.0, job(3, 50.0, 70.0, 1, 1000.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), None);
        assert_eq!(placed(&out, 3), Some(vec![2]));
    }

    /// A two-part job whose part 0 came back and whose part 1's process
    /// did not: lost, part 0 cancelled on its node; a one-part job that
    /// finished while no manager ran is over at its finish.
    #[test]
    fn adopted_jobs_end_lost_or_finished_unobserved() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0), info(1)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        c.register(2, "b", &[info(0)]).unwrap();
        let j4 = job(4, 0.0, 100.0, 2, 200.0);
        c.adopt(j4.clone(), decided(&j4, vec![0, 1])).unwrap();
        let j5 = job(5, 0.0, 10.0, 1, 200.0);
        c.adopt(j5.clone(), decided(&j5, vec![1])).unwrap();
        let p40 = PartId { job: 4, index: 0 };
        c.adopted_part_back(20.0, 2, p40, 0, 20.0, 1.0).unwrap();
        let mut out = Vec::new();
        let p5 = PartId { job: 5, index: 0 };
        c.adopted_part_finished(20.0, p5, 10.0, &mut out).unwrap();
        assert_eq!(out, [Output::Finished { job: 5 }]);
        assert_eq!(c.record(5).unwrap().finish, Some(10.0));
        out.clear();
        assert!(c.adopted_part_waiting(4, 1));
        c.lose(
            30.0,
            4,
            "lost at 30.000: did not come back".into(),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            [
                Output::Send {
                    link: 2,
                    msg: ManagerMsg::Cancel { part: p40 }
                },
                Output::Finished { job: 4 }
            ]
        );
        let r = c.record(4).unwrap();
        assert!(r.lost && r.finish.is_none());
        assert_eq!(r.nodes, [2, 1]);
        assert_eq!(c.open_jobs(), 0);
        assert_eq!(c.live_nodes(), 1);
        // The node holds nothing now: a part reported for job 4 is unknown.
        assert!(c.adopted_part_back(31.0, 2, p40, 0, 1.0, 1.0).is_err());
    }

    /// FIFO on two nodes: the adopted part's node is out of the pool
    /// while it runs, so a 2-processor job waits for its end.
    #[test]
    fn a_queue_policy_does_not_start_jobs_on_an_adopted_parts_node() {
        let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "a", &[info(0), info(1)]).unwrap();
        let j1 = job(1, 0.0, 10.0, 1, 100.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        let mut out = Vec::new();
        c.submit(1.0, job(2, 1.0, 10.0, 2, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), None);
        assert_eq!(c.queued(), 1);
        out.clear();
        c.completed(9.0, 1, PartId { job: 1, index: 0 }, 9.0, &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), Some(vec![0, 1]));
        assert_eq!(c.queued(), 0);
    }

    fn invalid(r: Result<(), CoreError>) -> String {
        match r {
            Err(CoreError::Invalid(m)) => m,
            other => panic!("expected an invalid adoption, got {other:?}"),
        }
    }

    /// Each way a record can fail to be an accepted, unfinished job's is
    /// refused alone (one condition at a time), and nothing is booked.
    #[test]
    fn adopt_refuses_each_record_that_is_not_an_accepted_unfinished_jobs() {
        let mut c = resumed("libra");
        let j = job(1, 0.0, 100.0, 1, 200.0);
        let ok = decided(&j, vec![1]);
        let not_running = "adopted job 1: its record is not one of an accepted, unfinished job";
        let mut r = ok.clone();
        r.id = 9;
        assert_eq!(invalid(c.adopt(j.clone(), r)), not_running);
        let mut r = ok.clone();
        r.accepted = false;
        assert_eq!(invalid(c.adopt(j.clone(), r)), not_running);
        let mut r = ok.clone();
        r.lost = true;
        assert_eq!(invalid(c.adopt(j.clone(), r)), not_running);
        let mut r = ok.clone();
        r.finish = Some(150.0);
        assert_eq!(invalid(c.adopt(j.clone(), r)), not_running);
        let mut r = ok.clone();
        r.nodes.clear();
        assert_eq!(
            invalid(c.adopt(j.clone(), r)),
            "adopted job 1: its record names no node"
        );
        let mut r = ok.clone();
        r.nodes = vec![1, 3];
        assert_eq!(
            invalid(c.adopt(j.clone(), r)),
            "adopted job 1: its record names node 3, never registered"
        );
        // A damaged journal: numbers no submission could have had.
        let mut bad = j.clone();
        bad.spec.details.runtime_estimate = f64::INFINITY;
        assert_eq!(
            invalid(c.adopt(bad, ok.clone())),
            "adopted job 1: its specification: job 1: field JobDetails.runtime_estimate must be a finite number, got inf"
        );
        let mut bad = j.clone();
        bad.actual_runtime = f64::NAN;
        assert_eq!(
            invalid(c.adopt(bad, ok.clone())),
            "adopted job 1: actual runtime must be finite and >= 0, got NaN"
        );
        let mut r = ok.clone();
        r.start = Some(f64::NAN);
        assert_eq!(
            invalid(c.adopt(j.clone(), r)),
            "adopted job 1: its record's start must be finite, got NaN"
        );
        assert_eq!(c.open_jobs(), 0);
        assert!(c.record(1).is_none());
        c.adopt(j.clone(), ok.clone()).unwrap();
        assert_eq!(c.open_jobs(), 1);
        assert!(matches!(c.adopt(j, ok), Err(CoreError::Duplicate(1))));
    }

    /// Part records keep the processor time the part takes on its node:
    /// actual runtime 120 on an alive node of speed 2 is 60; on a node no
    /// longer alive (out of the view) 120, the time at speed 1; 30 once
    /// the part is back on a node of speed 4. The second adopted job's
    /// parts start at part record 1, so the part reported back (its part
    /// 1, record 2) is told apart from the first job's part (record 0) and
    /// its own part 0 (record 1).
    #[test]
    fn an_adopted_part_moves_with_its_processor_time_and_its_own_record() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        let fast = |local, speed| NodeInfo {
            speed,
            ..info(local)
        };
        c.register(1, "old", &[info(0)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        assert_eq!(
            c.register(2, "b", &[fast(0, 2.0), fast(1, 4.0)]).unwrap(),
            [1, 2]
        );
        let j7 = job(7, 0.0, 120.0, 1, 500.0);
        c.adopt(j7.clone(), decided(&j7, vec![1])).unwrap();
        let j8 = job(8, 0.0, 120.0, 2, 500.0);
        c.adopt(j8.clone(), decided(&j8, vec![1, 0])).unwrap();
        let cpu: Vec<f64> = c.part_records().iter().map(|p| p.cpu).collect();
        assert_eq!(cpu, [60.0, 60.0, 120.0]);
        let p81 = PartId { job: 8, index: 1 };
        assert_eq!(c.adopted_part_back(10.0, 2, p81, 1, 40.0, 1.0).unwrap(), 2);
        let moved: Vec<(JobId, usize, f64)> = c
            .part_records()
            .iter()
            .map(|p| (p.job, p.node, p.cpu))
            .collect();
        assert_eq!(moved, [(7, 1, 60.0), (8, 1, 60.0), (8, 2, 30.0)]);
        assert_eq!(c.record(8).unwrap().nodes, [1, 2]);
        assert_eq!(c.record(7).unwrap().nodes, [1]);
        // Job 8 has two parts, and no job comes after it: a third is not
        // waiting (nor anything at all).
        assert!(!c.adopted_part_waiting(8, 2));
        assert!(!c.adopted_part_waiting(9, 0));
    }

    /// A report that cannot be an adopted part coming back is refused:
    /// a job not adopted, a part index beyond the job, a part already
    /// over, a node the link does not have, negative or unknown work, a
    /// share above 1.
    #[test]
    fn adopted_part_back_refuses_what_cannot_be_an_adopted_part() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0), info(1)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        assert_eq!(c.register(2, "b", &[info(0), info(1)]).unwrap(), [2, 3]);
        let j7 = job(7, 0.0, 100.0, 1, 500.0);
        c.adopt(j7.clone(), decided(&j7, vec![0])).unwrap();
        let j8 = job(8, 0.0, 100.0, 2, 500.0);
        c.adopt(j8.clone(), decided(&j8, vec![0, 1])).unwrap();
        let mut out = Vec::new();
        c.submit(2.0, job(9, 2.0, 10.0, 1, 100.0), &mut out)
            .unwrap();
        let back = |c: &mut ManagerCore, job, index, local, work: f64, share: f64| {
            c.adopted_part_back(5.0, 2, PartId { job, index }, local, work, share)
        };
        let unknown = |r: Result<u32, CoreError>| matches!(r, Err(CoreError::UnknownPart { .. }));
        let bad = |r: Result<u32, CoreError>, f: &str| matches!(r, Err(CoreError::BadReport { field, .. }) if field == f);
        assert!(unknown(back(&mut c, 9, 0, 0, 1.0, 1.0)), "not adopted");
        assert!(unknown(back(&mut c, 8, 2, 0, 1.0, 1.0)), "index beyond");
        assert!(unknown(back(&mut c, 8, 1, 5, 1.0, 1.0)), "no such node");
        assert!(bad(back(&mut c, 8, 1, 1, -1.0, 1.0), "work_done"));
        assert!(bad(back(&mut c, 8, 1, 1, f64::NAN, 1.0), "work_done"));
        assert!(bad(back(&mut c, 8, 1, 1, 1.0, 1.5), "share"));
        // Part 8/1 finished while no manager ran: over, so refused; part
        // 8/0 and job 7's part (records 1 and 0) are not.
        c.adopted_part_finished(5.0, PartId { job: 8, index: 1 }, 4.0, &mut out)
            .unwrap();
        assert!(unknown(back(&mut c, 8, 1, 1, 1.0, 1.0)), "part over");
        assert_eq!(back(&mut c, 8, 0, 1, 1.0, 1.0).unwrap(), 3);
        assert_eq!(back(&mut c, 7, 0, 0, 1.0, 1.0).unwrap(), 2);
    }

    /// The work a part reports coming back is reference work: on a node
    /// of speed 2 it is half as many processor seconds. Job 1 (RE 120, D
    /// 200) reported at 10 with 40 done: 20 of its 60 s done there, 40 s
    /// left in 190 s, q = 0.2105. Job 2 (RE 160, D 100) needs 80 / 100 =
    /// 0.8 there: 1.0105 > 1, rejected for its deadline (had the 40 been
    /// processor seconds, 80 would be done of 60 and the part would count
    /// nothing).
    #[test]
    fn an_adopted_parts_reported_work_is_reference_work() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "old", &[info(0)]).unwrap();
        c.link_lost(0.0, 1, "before the restart", &mut Vec::new());
        let fast = NodeInfo {
            speed: 2.0,
            ..info(0)
        };
        assert_eq!(c.register(2, "b", &[fast]).unwrap(), [1]);
        let j1 = job(1, 0.0, 120.0, 1, 200.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        c.adopted_part_back(10.0, 2, PartId { job: 1, index: 0 }, 0, 40.0, 1.0)
            .unwrap();
        let mut out = Vec::new();
        c.submit(10.0, job(2, 10.0, 160.0, 1, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 2), None);
        assert_eq!(
            c.record(2).unwrap().reason,
            Some(crate::policy::RejectReason::Deadline)
        );
    }

    /// An adopted part's finish is booked once: the same part finished
    /// again changes nothing (the job, with a part still running, stays
    /// open); a job not adopted and a part index beyond the job are
    /// refused. Job 8's parts start at part record 1, after job 7's.
    #[test]
    fn an_adopted_parts_finish_is_booked_once() {
        let mut c = resumed("libra");
        let j7 = job(7, 0.0, 100.0, 1, 500.0);
        c.adopt(j7.clone(), decided(&j7, vec![0])).unwrap();
        let j8 = job(8, 0.0, 100.0, 2, 500.0);
        c.adopt(j8.clone(), decided(&j8, vec![0, 0])).unwrap();
        let mut out = Vec::new();
        c.submit(1.0, job(9, 1.0, 10.0, 1, 100.0), &mut out)
            .unwrap();
        out.clear();
        let unknown = |r: Result<(), CoreError>| matches!(r, Err(CoreError::UnknownPart { .. }));
        assert!(unknown(c.adopted_part_finished(
            5.0,
            PartId { job: 9, index: 0 },
            4.0,
            &mut out
        )));
        assert!(unknown(c.adopted_part_finished(
            5.0,
            PartId { job: 8, index: 2 },
            4.0,
            &mut out
        )));
        let p81 = PartId { job: 8, index: 1 };
        c.adopted_part_finished(5.0, p81, 4.0, &mut out).unwrap();
        c.adopted_part_finished(6.0, p81, 4.5, &mut out).unwrap();
        assert_eq!(out, []);
        assert!(c.adopted_part_waiting(8, 0));
        assert!(c.adopted_part_waiting(7, 0));
        assert!(!c.adopted_part_waiting(8, 1));
        assert_eq!(c.open_jobs(), 3);
        let finish: Vec<(JobId, f64)> =
            c.part_records().iter().map(|p| (p.job, p.finish)).collect();
        assert_eq!(
            finish,
            [
                (7, f64::INFINITY),
                (8, f64::INFINITY),
                (8, 4.0),
                (9, f64::INFINITY)
            ]
        );
        c.adopted_part_finished(7.0, PartId { job: 8, index: 0 }, 6.0, &mut out)
            .unwrap();
        assert_eq!(out, [Output::Finished { job: 8 }]);
        assert_eq!(c.record(8).unwrap().finish, Some(6.0));
    }

    /// An adopted part counts beside the parts already on its node: job 3
    /// (RE 50, D 100, q 0.5) runs on node 1 when job 1's part comes back
    /// there (50 of 100 done by 10, D 200: q = 50 / 190 = 0.263); node 1
    /// holds 0.763, so job 4 (q 0.5) goes to node 2 (had the report landed
    /// on job 3's part, node 1 would count nothing and take it).
    #[test]
    fn an_adopted_part_comes_back_beside_the_parts_on_its_node() {
        let mut c = resumed("libra");
        let j1 = job(1, 0.0, 100.0, 1, 200.0);
        c.adopt(j1.clone(), decided(&j1, vec![0])).unwrap();
        let mut out = Vec::new();
        c.submit(10.0, job(3, 10.0, 50.0, 1, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 3), Some(vec![1]));
        let p = PartId { job: 1, index: 0 };
        assert_eq!(c.adopted_part_back(10.0, 2, p, 0, 50.0, 0.5).unwrap(), 1);
        c.submit(10.0, job(4, 10.0, 50.0, 1, 100.0), &mut out)
            .unwrap();
        assert_eq!(placed(&out, 4), Some(vec![2]));
    }

    /// EASY backfilling (FCFS) is told when an adopted part should end by
    /// its estimate: job 1 started at 5 with an estimate of 100 holds
    /// node 0 until 105. Job 2 (two nodes) waits for it; a one-node job
    /// submitted at 10 backfills on node 1 if it ends by then (estimate
    /// 50: at 60) and not otherwise (estimate 200: at 210). On nodes of
    /// speed 2, job 1 holds node 0 until 5 + 100 / 2 = 55, and a job of
    /// estimate 100 (ending at 60 at that speed, or 110 at speed 1) does
    /// not backfill.
    #[test]
    fn backfilling_plans_around_an_adopted_parts_estimated_end() {
        for (speed, estimate, backfills) in
            [(1.0, 50.0, true), (1.0, 200.0, false), (2.0, 100.0, false)]
        {
            let p = policy::build("fcfs-bf", &PolicyConfig::default(), &[]).unwrap();
            let mut c = ManagerCore::new(p);
            let node = |local| NodeInfo {
                speed,
                ..info(local)
            };
            c.register(1, "a", &[node(0), node(1)]).unwrap();
            let j1 = job(1, 0.0, 100.0, 1, 1000.0);
            let mut r = JobRecord::new(&j1);
            r.accept(0.0, vec![0], 0.0);
            r.start = Some(5.0);
            c.adopt(j1, r).unwrap();
            let mut out = Vec::new();
            c.submit(10.0, job(2, 10.0, 10.0, 2, 1000.0), &mut out)
                .unwrap();
            c.submit(10.0, job(3, 10.0, estimate, 1, 1000.0), &mut out)
                .unwrap();
            assert_eq!(placed(&out, 2), None);
            let want = backfills.then(|| vec![1]);
            assert_eq!(placed(&out, 3), want, "speed {speed}, estimate {estimate}");
        }
    }
}
