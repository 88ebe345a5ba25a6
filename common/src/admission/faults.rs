//! Faults: lost links and nodes, refused parts, and the simulator's
//! faults (driven by `crate::sim_faults`).

use crate::busy_index::BusyIndex;
use crate::node_model::{fluid_set_rate, FluidExtra, NodeSpec, NodeState};
use crate::policy::Policy;
use crate::protocol::{ManagerMsg, PartId};
use crate::time::Time;

use super::*;

impl ManagerCore {
    /// A link is gone (`reason` says how). Every unfinished part on its
    /// nodes is lost, those jobs' other parts are cancelled, the nodes
    /// leave the view.
    pub fn link_lost(&mut self, now: Time, link: LinkId, reason: &str, out: &mut Vec<Output>) {
        let dead: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&g| self.nodes[g as usize].link == link && self.nodes[g as usize].alive)
            .collect();
        if dead.is_empty() {
            return;
        }
        let host = self.link_host(link).to_string();
        self.lose_nodes(
            now,
            &dead,
            |_| format!("lost at {now:.3}: node process {host} (link {link}) gone: {reason}"),
            out,
        );
        self.pending = true;
        self.flush(now, out);
    }

    /// Node `g` of a live link is gone while its process stays (it was
    /// silent for the link timeout: a crash or hang of that node alone;
    /// `reason` says how). Every unfinished job with a part on it is lost,
    /// their other parts are cancelled, the node leaves the view. Returns
    /// whether it was alive.
    pub fn node_lost(&mut self, now: Time, g: u32, reason: &str, out: &mut Vec<Output>) -> bool {
        if !self.nodes.get(g as usize).is_some_and(|n| n.alive) {
            return false;
        }
        let (host, link) = {
            let n = &self.nodes[g as usize];
            (n.host.clone(), n.link)
        };
        self.lose_nodes(
            now,
            &[g],
            |_| format!("lost at {now:.3}: node {g} of node process {host} (link {link}) gone: {reason}"),
            out,
        );
        self.pending = true;
        self.flush(now, out);
        true
    }

    /// A node lost alone ([`Self::node_lost`]) is back (its process vouches
    /// for it again): idle, under its old id, with `spec`. Returns whether
    /// it was lost (its link must still be up: the caller checks).
    pub fn node_back(&mut self, now: Time, spec: NodeSpec, out: &mut Vec<Output>) -> bool {
        if self.nodes.get(spec.id).is_none_or(|n| n.alive) {
            return false;
        }
        self.rejoin_nodes(now, std::slice::from_ref(&spec));
        self.flush(now, out);
        true
    }

    /// Loses every unfinished job with a part on `dead` (alive nodes; the
    /// reason of each from `detail`, given the first dead node the job
    /// used) and takes the nodes out of the view and the queue's pool.
    pub(super) fn lose_nodes(
        &mut self,
        now: Time,
        dead: &[u32],
        detail: impl Fn(u32) -> String,
        out: &mut Vec<Output>,
    ) {
        let mut lost_jobs: Vec<usize> = self
            .jobs
            .iter()
            .enumerate()
            .filter(|&(k, j)| {
                !j.over
                    && self
                        .job_parts(k)
                        .iter()
                        .any(|p| dead.contains(&(p.node as u32)))
            })
            .map(|(k, _)| k)
            .collect();
        lost_jobs.sort_unstable_by_key(|&k| self.jobs[k].job.spec.id);
        for &g in dead {
            self.nodes[g as usize].alive = false;
        }
        for k in lost_jobs {
            let first = self
                .job_parts(k)
                .iter()
                .map(|p| p.node as u32)
                .find(|g| dead.contains(g))
                .expect("chosen for a part on a dead node");
            self.lose_job(now, k, detail(first), None, out);
        }
        // Take the dead nodes out of the view (swap-remove keeps it dense).
        for &g in dead {
            if let Some(k) = self.view_index[g as usize].take() {
                self.view.swap_remove(k);
                self.view_ids.swap_remove(k);
                match &mut self.tracking {
                    Tracking::Reported(reports) => {
                        reports.swap_remove(k);
                    }
                    Tracking::Simulated { extras, .. } => {
                        self.retired_busy += extras.swap_remove(k).busy_time();
                    }
                }
                if k < self.view.len() {
                    let moved = self.view_ids[k];
                    self.view_index[moved as usize] = Some(k);
                }
            }
            if let Policy::Queue(q) = &mut self.policy {
                q.set_node_available(g as usize, false);
            }
        }
        // Indices moved: build the index again (a rare event).
        self.busy = BusyIndex::of(&self.view);
    }

    /// Ends job `k` as lost (`detail` says why): its parts still running
    /// on live nodes are cancelled (the nodes withdraw them, so they stop
    /// burning), except `skip`, a part no node holds; its nodes are free
    /// again in the view and, for a queue policy, in its pool.
    pub(super) fn lose_job(
        &mut self,
        now: Time,
        k: usize,
        detail: String,
        skip: Option<u32>,
        out: &mut Vec<Output>,
    ) {
        let j = &mut self.jobs[k];
        let id = j.job.spec.id;
        self.records[k].lose(detail);
        j.over = true;
        self.open -= 1;
        let (first, n_parts, apart) = (j.first_part, j.n_parts, j.held_apart);
        for index in 0..n_parts {
            let g = self.parts[first + index].node as u32;
            let part = PartId {
                job: id,
                index: index as u32,
            };
            let n = &self.nodes[g as usize];
            let alive = n.alive;
            if n.alive && !self.part_done[first + index] && skip != Some(part.index) {
                out.push(Output::Send {
                    link: n.link,
                    msg: ManagerMsg::Cancel { part },
                });
            }
            self.remove_part(g, part);
            if apart && alive && !self.part_done[first + index] {
                self.release_node(g);
            }
        }
        if let Policy::Queue(q) = &mut self.policy {
            q.failed(now, id);
        }
        out.push(Output::Finished { job: id });
    }

    /// A node process refused a dispatched part (`reason` is the node's).
    /// The job cannot complete: its record ends as lost with the reason,
    /// its other parts are cancelled, and a queue policy may start others
    /// on the freed nodes, so a run never waits on a part nobody runs.
    pub fn refused(
        &mut self,
        now: Time,
        link: LinkId,
        part: PartId,
        reason: &str,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        self.global_of(link, part)?;
        let k = self.index.at(part.job);
        if self.jobs[k].over {
            return Ok(());
        }
        let detail = format!(
            "lost at {now:.3}: part {}/{} refused by node process {} (link {link}): {reason}",
            part.job,
            part.index,
            self.link_host(link)
        );
        self.lose_job(now, k, detail, Some(part.index), out);
        self.pending = true;
        self.flush(now, out);
        Ok(())
    }

    /// A node process withdrew a cancelled part. Only checked: the job's
    /// record was final when the cancel went out.
    pub fn withdrawn(&self, link: LinkId, part: PartId) -> Result<(), CoreError> {
        self.global_of(link, part)?;
        Ok(())
    }

    // ---- Faults in the simulator (common::sim_faults drives these) ----

    /// Simulated nodes `nodes` are lost at `now` (a fault's detection):
    /// every unfinished job with a part on one of them is lost with
    /// `reason` (which names the fault), its other parts are cancelled,
    /// the nodes leave the view and the queue's pool. Completions up to
    /// `now` are booked first. A queue policy reschedules at the next
    /// [`Self::flush`]. Nodes already gone are skipped.
    pub fn sim_nodes_lost(
        &mut self,
        now: Time,
        nodes: &[u32],
        reason: &str,
        out: &mut Vec<Output>,
    ) {
        self.refresh(now);
        let dead: Vec<u32> = nodes
            .iter()
            .copied()
            .filter(|&g| self.nodes[g as usize].alive)
            .collect();
        if dead.is_empty() {
            return;
        }
        self.lose_nodes(
            now,
            &dead,
            |g| format!("lost at {now:.3}: node {g} lost: {reason}"),
            out,
        );
        self.pending = true;
    }

    /// Simulated nodes come back at `now` (a restarted process registers
    /// again): idle, with their own spec, under their old ids, so the
    /// results name the same nodes. Nodes still alive are skipped.
    pub fn sim_nodes_rejoin(&mut self, now: Time, specs: &[NodeSpec]) {
        self.rejoin_nodes(now, specs);
    }

    /// Nodes come back at `now`, idle, under their old ids (simulated or
    /// live). Nodes still alive are skipped.
    fn rejoin_nodes(&mut self, now: Time, specs: &[NodeSpec]) {
        self.refresh(now);
        for spec in specs {
            let g = spec.id;
            if self.nodes[g].alive {
                continue;
            }
            self.nodes[g].alive = true;
            self.view_index[g] = Some(self.view.len());
            self.view_ids.push(g as u32);
            self.view.push(NodeState::new(spec.clone()));
            match &mut self.tracking {
                Tracking::Simulated { extras, .. } => extras.push(FluidExtra::starting_at(now)),
                Tracking::Reported(reports) => reports.push(Vec::new()),
            }
            let v = self.view.len() - 1;
            self.busy.add(v, &self.view[v]);
            if let Policy::Queue(q) = &mut self.policy {
                q.set_node_available(g, true);
            }
        }
        self.pending = true;
    }

    /// Simulated nodes work at `rate` from `now` on (a `slow` fault's
    /// factor, 0 while stopped, 1 again after). Dead nodes are skipped.
    pub fn sim_set_rate(&mut self, now: Time, nodes: &[u32], rate: f64) {
        self.refresh(now);
        let Tracking::Simulated {
            extras,
            scratch,
            rule,
            ..
        } = &mut self.tracking
        else {
            return;
        };
        for &g in nodes {
            if let Some(v) = self.view_index[g as usize] {
                fluid_set_rate(&self.view[v], &mut extras[v], rate, *rule, scratch);
            }
        }
    }

    // ---- end of faults in the simulator ----
}

#[cfg(test)]
mod tests {
    use crate::job::JobSpec;
    use crate::node_model::NodeSpec;
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

    /// A job a resumed manager adopted onto a node another adopted job
    /// already holds is held apart: the queue policy keeps the node out
    /// until that job is over. FIFO on nodes 0 and 1; adopted: job 10 on
    /// node 1, job 11 on node 0 (held), job 12 on node 0 (held apart).
    /// Job 10 completes (node 1 free). Job 11 is refused and lost: node 0
    /// stays out while job 12 runs there, so job 3 (1 proc) takes node 1
    /// and job 4 waits. Job 12 is refused and lost: node 0 comes back and
    /// job 4 starts on it.
    #[test]
    fn a_lost_job_held_apart_gives_its_node_back_and_no_other_does() {
        use crate::metrics::JobRecord;
        use crate::policy::Decision;
        let started = |out: &[Output], id: JobId| {
            out.iter().find_map(|o| match o {
                Output::Decided {
                    job,
                    decision: Decision::Accept(a),
                } if *job == id => Some(a.nodes.clone()),
                _ => None,
            })
        };
        let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "a", &[info(0), info(1)]).unwrap();
        for (id, node) in [(10, 1), (11, 0), (12, 0)] {
            let j = job(id, 100.0, 1e6);
            let mut r = JobRecord::new(&j);
            r.accept(0.0, vec![node], 0.0);
            c.adopt(j, r).unwrap();
        }
        let part = |job| PartId { job, index: 0 };
        let mut out = Vec::new();
        c.completed(5.0, 1, part(10), 5.0, &mut out).unwrap();
        c.refused(6.0, 1, part(11), "test", &mut out).unwrap();
        c.submit(7.0, job(3, 10.0, 1e6), &mut out).unwrap();
        c.submit(7.0, job(4, 10.0, 1e6), &mut out).unwrap();
        assert_eq!(started(&out, 3), Some(vec![1]));
        assert_eq!(started(&out, 4), None);
        out.clear();
        c.refused(8.0, 1, part(12), "test", &mut out).unwrap();
        assert_eq!(started(&out, 4), Some(vec![0]));
    }

    /// Each part of a job held apart gives its own node back: FIFO on
    /// nodes 0 and 1; adopted: job 10 on node 1, job 11 on node 0 (both
    /// held), job 12 on nodes 1 and 0 (held apart: both nodes out). Jobs
    /// 11 and 10 complete; job 12 is refused and lost: both nodes come
    /// back, and a 2-processor job starts on them.
    #[test]
    fn every_part_of_a_lost_job_held_apart_gives_its_node_back() {
        use crate::metrics::JobRecord;
        use crate::policy::Decision;
        let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "a", &[info(0), info(1)]).unwrap();
        for (id, nodes) in [(10, vec![1]), (11, vec![0]), (12, vec![1, 0])] {
            let mut j = job(id, 100.0, 1e6);
            j.spec.resources.processors = nodes.len() as u32;
            let mut r = JobRecord::new(&j);
            r.accept(0.0, nodes, 0.0);
            c.adopt(j, r).unwrap();
        }
        let part = |job| PartId { job, index: 0 };
        let mut out = Vec::new();
        c.completed(5.0, 1, part(11), 5.0, &mut out).unwrap();
        c.completed(5.0, 1, part(10), 5.0, &mut out).unwrap();
        c.refused(6.0, 1, part(12), "test", &mut out).unwrap();
        let mut j = job(3, 10.0, 1e6);
        j.spec.resources.processors = 2;
        out.clear();
        c.submit(7.0, j, &mut out).unwrap();
        let got = out.iter().find_map(|o| match o {
            Output::Decided { decision, .. } => Some(decision.clone()),
            _ => None,
        });
        match got {
            Some(Decision::Accept(a)) => assert_eq!(a.nodes, [0, 1]),
            other => panic!("{other:?}"),
        }
    }

    /// A withdrawn part is only checked: one the manager never placed on
    /// that process is refused, naming process, job and part; a placed
    /// one is fine.
    #[test]
    fn a_withdrawn_part_must_be_one_placed_on_that_process() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        c.register(1, "a", &[info(0)]).unwrap();
        c.register(2, "b", &[info(0)]).unwrap();
        let mut out = Vec::new();
        c.submit(0.0, job(1, 10.0, 100.0), &mut out).unwrap();
        let placed = PartId { job: 1, index: 0 };
        c.withdrawn(1, placed).unwrap();
        for (link, part) in [(2, placed), (1, PartId { job: 9, index: 0 })] {
            match c.withdrawn(link, part) {
                Err(CoreError::UnknownPart { link: l, job, .. }) => {
                    assert_eq!((l, job), (link, part.job));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// A node lost alone loses the jobs with a part on it, naming it, and
    /// says it was alive; lost again, or never registered, it says it was
    /// not. Back, it says it was lost; back again, or alive, it says not.
    /// Back, it is idle and takes work under its old id.
    #[test]
    fn a_node_lost_alone_and_back_says_what_it_was() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut c = ManagerCore::new(p);
        let infos: Vec<NodeInfo> = (0..2).map(info).collect();
        c.register(1, "a", &infos).unwrap();
        let mut out = Vec::new();
        c.submit(0.0, job(1, 50.0, 100.0), &mut out).unwrap();
        assert_eq!(c.record(1).unwrap().nodes, [0]);
        assert!(c.node_lost(10.0, 0, "silent for 5 s", &mut out));
        let r = c.record(1).unwrap();
        assert!(r.lost);
        assert_eq!(
            r.detail,
            "lost at 10.000: node 0 of node process a (link 1) gone: silent for 5 s"
        );
        assert!(!c.node_alive(0));
        assert!(!c.node_lost(11.0, 0, "again", &mut out));
        assert!(!c.node_lost(11.0, 7, "never registered", &mut out));
        let spec = |id| NodeSpec {
            id,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        };
        assert!(!c.node_back(12.0, spec(1), &mut out), "node 1 was alive");
        assert!(c.node_back(12.0, spec(0), &mut out));
        assert!(!c.node_back(13.0, spec(0), &mut out), "already back");
        assert!(c.node_alive(0));
        // Job 2 (q 0.6) and job 3 (q 0.5) cannot share a node. Node 0
        // came back after node 1 in the view, and equal loads go to the
        // lower place in the view: job 2 takes node 1, job 3 node 0.
        c.submit(20.0, job(2, 60.0, 100.0), &mut out).unwrap();
        c.submit(20.0, job(3, 50.0, 100.0), &mut out).unwrap();
        assert_eq!(c.record(2).unwrap().nodes, [1]);
        assert_eq!(c.record(3).unwrap().nodes, [0]);
    }

    /// `jobs` simulated under Libra on two nodes, node 0 lost at `at`.
    fn node_0_lost_at(at: Time, jobs: &[WorkloadJob]) -> crate::sim::SimOutcome {
        use crate::sim_faults::{simulate_timeline, NodeAct, NodeEvent, Timeline};
        let specs: Vec<NodeSpec> = (0..2)
            .map(|id| NodeSpec {
                id,
                speed: 1.0,
                memory_kb: 0,
                disk_mb: 0,
            })
            .collect();
        let tl = Timeline {
            events: vec![NodeEvent {
                at,
                act: NodeAct::Lose,
                nodes: vec![0],
                cause: "crash".into(),
            }],
            down: Vec::new(),
        };
        let p = policy::build("libra", &PolicyConfig::default(), &specs).unwrap();
        simulate_timeline(jobs, &specs, p, &tl).outcome
    }

    /// A job that loses a node loses its other parts too: they stop
    /// where they are. Job 1 runs one part of 100 s on each of nodes 0
    /// and 1 (share 1 each, alone); node 0 is lost at 10, so the part on
    /// node 1 is cancelled there: each node gave 10 s (20 in all), not 10
    /// + 100 as it would if node 1 ran its part to the end.
    #[test]
    fn a_lost_jobs_part_on_a_live_node_stops_where_it_is() {
        let two = WorkloadJob {
            spec: JobSpec::new(1, 0.0, 100.0, 2, 1000.0, 1e9),
            actual_runtime: 100.0,
        };
        let o = node_0_lost_at(10.0, &[two]);
        assert!(o.records[0].lost, "{:?}", o.records[0]);
        assert!((o.busy_time - 20.0).abs() < 1e-9, "{}", o.busy_time);
    }

    /// A node that leaves a simulation keeps the processor time it gave:
    /// job 1 (50 s alone on node 0) ends at 50; node 0 is lost at 100;
    /// the run's busy time is still 50.
    #[test]
    fn a_lost_node_keeps_its_busy_time_in_the_simulator() {
        let o = node_0_lost_at(100.0, &[job(1, 50.0, 100.0)]);
        assert_eq!(o.records[0].finish, Some(50.0));
        assert!((o.busy_time - 50.0).abs() < 1e-9, "{}", o.busy_time);
    }
}
