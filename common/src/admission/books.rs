//! The books: completions of parts and jobs, and the lookups they use.

use crate::job::JobId;
use crate::metrics::PartRecord;
use crate::node_model::fluid_remove;
use crate::policy::Policy;
use crate::protocol::PartId;
use crate::time::Time;

use super::*;

impl ManagerCore {
    /// The label of the node process on `link` (for errors).
    pub(super) fn link_host(&self, link: LinkId) -> &str {
        self.nodes
            .iter()
            .find(|n| n.link == link)
            .map_or("(unregistered)", |n| n.host.as_str())
    }

    /// The part records of job `k` (empty until it is placed).
    pub(super) fn job_parts(&self, k: usize) -> &[PartRecord] {
        let j = &self.jobs[k];
        &self.parts[j.first_part..j.first_part + j.n_parts]
    }

    /// The global node of part `index` of job `k`, if it has that part.
    pub(super) fn part_node(&self, k: usize, index: usize) -> Option<u32> {
        let j = &self.jobs[k];
        (index < j.n_parts).then(|| self.parts[j.first_part + index].node as u32)
    }

    pub(super) fn global_of(&self, link: LinkId, part: PartId) -> Result<u32, CoreError> {
        // Built only on failure: naming the host walks every node, and
        // this runs for every part of every progress report.
        let unknown = || CoreError::UnknownPart {
            host: self.link_host(link).to_string(),
            link,
            job: part.job,
            index: part.index,
        };
        let k = self.index.get(part.job).ok_or_else(unknown)?;
        let g = self.part_node(k, part.index as usize).ok_or_else(unknown)?;
        if self.nodes[g as usize].link != link {
            return Err(unknown());
        }
        Ok(g)
    }

    /// A part finished its actual work at node time `at` (reported at
    /// `now`); a job whose last part this was is over, and a queue policy
    /// learns it at the next [`Self::flush`].
    pub fn part_completed(
        &mut self,
        now: Time,
        link: LinkId,
        part: PartId,
        at: Time,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        let g = self.global_of(link, part)?;
        let k = self.index.at(part.job);
        self.complete_part(now, link, k, g, part, at, out)
    }

    /// Every part of `job` finished its actual work at node time `at`
    /// (reported at `now`): the same as [`Self::part_completed`] for each
    /// part in index order, with one lookup of the job instead of two per
    /// part. The simulator completes a space-shared job's parts together
    /// (they all end with the slowest of them), and SDSC jobs have dozens.
    pub fn job_completed(
        &mut self,
        now: Time,
        link: LinkId,
        job: JobId,
        at: Time,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        let Some(k) = self.index.get(job) else {
            return Err(CoreError::UnknownPart {
                host: self.link_host(link).to_string(),
                link,
                job,
                index: 0,
            });
        };
        for index in 0..self.jobs[k].n_parts {
            let g = self.part_node(k, index).expect("index < n_parts");
            let part = PartId {
                job,
                index: index as u32,
            };
            if self.nodes[g as usize].link != link {
                return Err(CoreError::UnknownPart {
                    host: self.link_host(link).to_string(),
                    link,
                    job,
                    index: part.index,
                });
            }
            self.complete_part(now, link, k, g, part, at, out)?;
        }
        Ok(())
    }

    /// Books the completion of `part` (job `k`, on global node `g`, both
    /// checked to be on `link`) at node time `at`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn complete_part(
        &mut self,
        now: Time,
        link: LinkId,
        k: usize,
        g: u32,
        part: PartId,
        at: Time,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        if !at.is_finite() {
            return Err(CoreError::BadReport {
                host: self.link_host(link).to_string(),
                link,
                what: format!("completion of part {}/{}", part.job, part.index),
                field: "at",
                want: "finite",
                value: at,
            });
        }
        let done = self.jobs[k].first_part + part.index as usize;
        if self.part_done[done] {
            self.duplicate_completions += 1;
            return Err(CoreError::DuplicateCompletion {
                host: self.link_host(link).to_string(),
                link,
                job: part.job,
                index: part.index,
            });
        }
        self.part_done[done] = true;
        self.remove_part(g, part);
        if self.jobs[k].held_apart {
            self.release_node(g);
        }
        if self.book_part_finished(now, k, part.index as usize, at) {
            out.push(Output::Finished { job: part.job });
        }
        Ok(())
    }

    /// [`Self::part_completed`] then [`Self::flush`].
    pub fn completed(
        &mut self,
        now: Time,
        link: LinkId,
        part: PartId,
        at: Time,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        self.part_completed(now, link, part, at, out)?;
        self.flush(now, out);
        Ok(())
    }

    /// Books part `index` of job `k` finished at `at`; true when that ended
    /// the job.
    pub(super) fn book_part_finished(
        &mut self,
        now: Time,
        k: usize,
        index: usize,
        at: Time,
    ) -> bool {
        let j = &mut self.jobs[k];
        let job = j.job.spec.id;
        self.parts[j.first_part + index].finish = at;
        if j.over {
            return false;
        }
        j.parts_left -= 1;
        self.records[k].part_finished(at);
        if j.parts_left > 0 {
            return false;
        }
        j.over = true;
        self.open -= 1;
        if let Policy::Queue(q) = &mut self.policy {
            q.finished(now, job);
            self.pending = true;
        }
        true
    }

    pub(super) fn remove_part(&mut self, g: u32, part: PartId) {
        let Some(k) = self.view_index[g as usize] else {
            return;
        };
        let parts = &mut self.view[k].parts;
        match &mut self.tracking {
            Tracking::Reported(reports) => {
                // Keep the reports aligned with the parts (a node holds at
                // most one part of a job; remove every match all the same).
                let rs = &mut reports[k];
                let mut i = 0;
                while i < parts.len() {
                    if parts[i].job == part.job {
                        parts.remove(i);
                        rs.remove(i);
                    } else {
                        i += 1;
                    }
                }
                self.busy.update(k, &self.view[k]);
            }
            Tracking::Simulated {
                extras,
                scratch,
                rule,
                ..
            } => {
                // Only faults remove a simulated part before its end (lost
                // or cancelled); the caller brought the nodes up to now.
                fluid_remove(&mut self.view[k], &mut extras[k], part.job, *rule, scratch);
                self.busy.update(k, &self.view[k]);
            }
        }
    }
}
