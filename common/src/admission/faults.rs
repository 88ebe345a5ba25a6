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
        if matches!(self.tracking, Tracking::Reported(_)) {
            self.busy = BusyIndex::of(&self.view);
        }
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
            q.finished(now, id);
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
                Tracking::Reported(reports) => {
                    reports.push(Vec::new());
                    let v = self.view.len() - 1;
                    self.busy.add(v, &self.view[v]);
                }
            }
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
