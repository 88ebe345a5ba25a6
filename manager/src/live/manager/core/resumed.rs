//! A core that takes over an unfinished run (`libratory resume`): the
//! jobs its journal holds as over keep their records; the jobs that were
//! running when the manager died are *carried*: the admission core adopts
//! them ([`ManagerCore::adopt`]) on the earlier manager's node ids, whose
//! nodes are gone. Their parts may still run on node processes that rode
//! out the crash; those processes, once registered again, report them
//! ([`Rejoin`]), and each reported part moves to the node it runs on now
//! (the policy sees its load from then on) or is booked finished. From
//! there completion, loss and cancellation take the paths of any job. A
//! part a process comes back without, whose start the journal does not
//! hold either, never reached its node (its dispatch died with the
//! manager): it is dispatched again, to the same node
//! ([`ManagerCore::adopted_part_again`]). A carried job is lost when a
//! node process holding one of its parts does not come back within the
//! wait, or comes back without the node such a part was for.
//!
//! What the journal says of each carried part decides: over (an `ended`
//! line, written when a part completes and its job goes on: the core
//! books it finished at once), started (a `started` line: the node had
//! it), or neither. A process that comes back is known by the node ids
//! its rejoin says it had (`was`, the last manager's numbering) and by its
//! label and pid, which every `node` line of the run holds: its
//! registrations under every earlier manager.
//!
//! [`ManagerCore::adopt`]: common::admission::ManagerCore::adopt
//! [`ManagerCore::adopted_part_again`]: common::admission::ManagerCore::adopted_part_again

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use common::admission::LinkId;
use common::job::JobId;
use common::metrics::JobRecord;
use common::protocol::{NodeInfo, PartId, Rejoin};
use common::time::Time;
use common::workload::WorkloadJob;
use rustc_hash::{FxHashMap, FxHashSet};

use super::rejoin::answer;
use super::{Action, Entry, LiveCore, Now, Timer, When};

/// What a resumed core starts from (all times on the run's clock axis).
#[derive(Debug, Clone)]
pub struct Takeover {
    /// Jobs over before the manager died: final records.
    pub done: Vec<JobRecord>,
    /// Jobs accepted and not finished: their decided records.
    pub open: Vec<JobRecord>,
    /// Jobs submitted and not decided, to be decided at the restart
    /// (their submit time kept).
    pub undecided: Vec<WorkloadJob>,
    /// Jobs submitted and not decided that cannot be submitted again
    /// (clients' jobs of a journal that did not keep their specification),
    /// recorded lost with why.
    pub unrecoverable: Vec<JobRecord>,
    /// The replay's offset on the clock.
    pub offset: Time,
    /// The node processes registered so far, in order (label, nodes): the
    /// node ids the journal's records use, numbered in that order.
    pub node_processes: Vec<(String, usize)>,
    /// Their pids, in the same order (None: not journaled).
    pub node_pids: Vec<Option<u32>>,
    /// Parts of the open jobs whose start the journal holds.
    pub started: Vec<PartId>,
    /// Parts of the open jobs the journal holds over, with their finish.
    pub ended: Vec<(PartId, Time)>,
    /// How long node processes have to come back with their parts.
    pub wait: Duration,
    /// The trace time of the journal's last entry: a carried part whose
    /// node came back without it finished unobserved between then and the
    /// node noticing the loss (its completion went to the dead manager);
    /// its finish is taken as this.
    pub crash_trace: Time,
    /// Said in the journal when the replay goes on.
    pub note: String,
    /// The journal's clock at its last entry before the crash, and at
    /// this manager's start: with the replay's going on, the downtime's
    /// `restart` entry (which `libratory replay` reads).
    pub crashed: f64,
    /// See `crashed`.
    pub restarted: f64,
    /// The clock's trace time when this manager starts (its clock runs
    /// from there at once: the node processes coming back map their
    /// times onto it).
    pub trace_now: Time,
    /// The latency histograms of the managers before this one, as last
    /// journaled: added to this one's.
    pub histograms: std::collections::BTreeMap<String, hdrhistogram::Histogram<u64>>,
    /// The fault reports the journal holds (its `fault` entries: journal
    /// time, key), in order: not journaled again, and those after their
    /// process's last registration blame its loss (core/faults.rs).
    pub faults: Vec<(f64, super::FaultKey)>,
    /// The journal time of each registration of `node_processes`.
    pub node_times: Vec<f64>,
    /// The losses of node processes and single nodes its warnings
    /// journaled (journal time, text).
    pub losses: Vec<(f64, String)>,
}

/// The resumed core's books of the takeover.
#[derive(Default)]
pub(super) struct Resumed {
    /// The carried jobs (adopted by the admission core), while any of
    /// their parts may still be waiting for its process.
    carried: BTreeSet<JobId>,
    /// Final records of jobs over before the restart (and of jobs the
    /// admission core could not adopt).
    pub(super) done: Vec<JobRecord>,
    undecided: Vec<WorkloadJob>,
    node_hosts: Vec<String>,
    /// The pid of each old node's process (None: not journaled).
    node_pids: Vec<Option<u32>>,
    /// Each old node's local index in its process.
    node_local: Vec<u32>,
    /// Carried parts known to have reached their node (journaled
    /// started).
    reached: HashSet<PartId>,
    wait: Duration,
    crash_trace: Time,
    note: String,
    /// [`Takeover::crashed`], [`Takeover::restarted`].
    down: (f64, f64),
    /// The replay went on (the start of the resumed run).
    pub(super) started: bool,
    /// The wait for node processes is over: unreported parts are lost.
    swept: bool,
    /// The labels of the node processes that registered before the
    /// restart (the first word of their `host`).
    old_labels: HashSet<String>,
    /// Links whose process reported what it ran ([`Rejoin`]).
    rejoined: HashSet<LinkId>,
    /// The start timeout passed: the replay goes on without waiting for
    /// reports.
    waived: bool,
}

/// Old node `n`'s local index in its process: as the journal's `node`
/// lines number it, else by its place in the rejoin's `was`.
fn old_local(r: &Resumed, rj: &Rejoin, n: usize) -> Option<u32> {
    r.node_local.get(n).copied().or_else(|| {
        rj.was
            .iter()
            .position(|&g| g as usize == n)
            .map(|k| k as u32)
    })
}

/// A node process's label: the first word of its `host`.
fn label(host: &str) -> &str {
    host.split(' ').next().unwrap_or(host)
}

impl LiveCore {
    /// A core taking over an unfinished run (see the module header): `jobs`
    /// are the workload's jobs not yet submitted, in submit order.
    pub(in crate::live::manager) fn resumed(
        mut core: common::admission::ManagerCore,
        cfg: super::CoreConfig,
        jobs: Vec<WorkloadJob>,
        t: Takeover,
    ) -> LiveCore {
        // The node ids of the run so far stay taken (registered on links
        // that are lost at once), so the processes registering now get
        // ids after them, and the records of every manager of the run
        // name nodes in one numbering (the journal's `node` order).
        let mut out = Vec::new();
        let mut node_hosts = Vec::new();
        let mut node_pids = Vec::new();
        let mut node_local = Vec::new();
        for (k, (host, n)) in t.node_processes.iter().enumerate() {
            let pid = t.node_pids.get(k).copied().flatten();
            node_pids.extend(std::iter::repeat_n(pid, *n));
            node_local.extend(0..*n as u32);
            let link = LinkId::MAX - k as LinkId;
            let infos: Vec<NodeInfo> = (0..*n as u32)
                .map(|local| NodeInfo {
                    local,
                    capacity: 1.0,
                    speed: 1.0,
                    memory_kb: 0,
                    disk_mb: 0,
                })
                .collect();
            core.register(link, host, &infos)
                .expect("placeholder nodes are valid");
            core.link_lost(0.0, link, "before the restart", &mut out);
            node_hosts.extend(std::iter::repeat_n(host.clone(), *n));
        }
        let mut r = Resumed {
            done: t.done,
            undecided: t.undecided,
            node_hosts,
            node_pids,
            node_local,
            reached: t.started.into_iter().collect(),
            wait: t.wait,
            crash_trace: t.crash_trace,
            note: t.note,
            down: (t.crashed, t.restarted),
            old_labels: t
                .node_processes
                .iter()
                .map(|(h, _)| label(h).to_string())
                .collect(),
            ..Resumed::default()
        };
        let mut refused = Vec::new();
        for mut rec in t.open {
            let id = rec.id;
            // An open job's record may hold the latest finish of its parts
            // over (a journal written before `decided` lines of moved parts
            // dropped it): those parts are its `ended` lines.
            rec.finish = None;
            match core.adopt(rec.submitted(), rec.clone()) {
                Ok(()) => {
                    r.carried.insert(id);
                }
                Err(e) => {
                    let mut rec = rec;
                    rec.lost = true;
                    rec.finish = None;
                    rec.detail = format!("not taken over at the restart: {e}");
                    refused.push(format!("job {id}: {}", rec.detail));
                    r.done.push(rec);
                }
            }
        }
        let mut c = LiveCore::new(core, cfg, jobs);
        c.warnings.extend(refused);
        let registered: Vec<(f64, String)> = t
            .node_times
            .iter()
            .zip(&t.node_processes)
            .map(|(&at, (h, _))| (at, label(h).to_string()))
            .collect();
        let lost: Vec<(f64, String)> = t
            .losses
            .iter()
            .filter_map(|(at, text)| {
                super::faults::loss_key(text, &t.node_processes).map(|k| (*at, k))
            })
            .collect();
        c.faults = super::faults::FaultBook::from_journal(&t.faults, &registered, &lost);
        // Clients' jobs submitted from now on get ids after the run's.
        let ids = r.done.iter().map(|j| j.id).chain(r.carried.iter().copied());
        let ids = ids
            .chain(r.undecided.iter().map(|j| j.spec.id))
            .chain(t.unrecoverable.iter().map(|j| j.id));
        c.next_client_job = ids.fold(c.next_client_job, JobId::max);
        let before = r.done.len() + r.carried.len() + r.undecided.len() + t.unrecoverable.len();
        c.total_jobs += before;
        c.submitted = before;
        c.decided = r.done.len() + r.carried.len();
        c.finished = r.done.len();
        c.offset = t.offset;
        for (name, h) in t.histograms {
            match c.hists.get_mut(&name) {
                Some(mine) => {
                    if let Err(e) = mine.add(&h) {
                        c.warnings.push(format!(
                            "histogram {name} of the managers before the restart not added: {e:?}"
                        ));
                    }
                }
                None => {
                    c.hists.insert(name, h);
                }
            }
        }
        for mut rec in t.unrecoverable {
            rec.lost = true;
            rec.detail = "queued when the manager died, a client's job whose specification the journal does not hold (written before it kept them): not decided".into();
            c.finished += 1;
            c.decided += 1;
            r.done.push(rec);
        }
        // Parts an earlier manager saw end are over (a job whose every
        // part is, its `finished` line lost, is over: its outputs wait in
        // `out` for the first flush).
        let trace_now = t.trace_now;
        for (part, at) in t.ended {
            if c.core.adopted_part_waiting(part.job, part.index) {
                if let Err(e) = c
                    .core
                    .adopted_part_finished(trace_now, part, at, &mut c.out)
                {
                    c.warnings.push(e.to_string());
                }
            }
        }
        c.resumed = Some(r);
        c.forget_carried();
        c
    }

    /// The replay goes on (the expected nodes are back, or the start
    /// timeout passed): the journal says so, the undecided jobs are
    /// decided now, and the wait for the carried parts' processes starts.
    pub(super) fn resume_replay(&mut self, now: Now) {
        let Some(r) = self.resumed.as_mut() else {
            return;
        };
        r.started = true;
        let undecided = std::mem::take(&mut r.undecided);
        let note = r.note.clone();
        let wait = r.wait;
        let (crashed, restarted) = r.down;
        if self.cfg.journal {
            self.journal_buf.push(Entry::Warning {
                t: now.journal,
                text: note,
            });
            self.journal_buf.push(Entry::Restart {
                t: now.journal,
                crashed,
                restarted,
            });
        }
        for j in undecided {
            let id = j.spec.id;
            // A client's job is journaled whole again (see
            // `Entry::Submitted`), for a manager after this one.
            let client_spec = (id > super::CLIENT_JOBS).then(|| Box::new(j.spec.clone()));
            let mark = self.out.len();
            match self.submit(now.trace, j) {
                Err(e) => {
                    self.warnings.push(format!("job {id}: {e}"));
                    self.finished += 1;
                }
                Ok(()) => self.journal_submitted(id, mark, now, client_spec),
            }
        }
        self.flush(now);
        self.actions.push_back(Action::Arm {
            timer: Timer::Carried,
            when: When::After(wait),
        });
        self.sweep_if_all_back(now);
    }

    /// Whether the replay must still wait for a node process that ran
    /// before the restart (same label) and registered again to report
    /// what it ran: decisions before its [`Rejoin`] would not see its
    /// carried parts. A process that crashed and started afresh under
    /// the same label never reports: the start timeout ends the wait.
    pub(super) fn rejoins_pending(&self) -> bool {
        let Some(r) = self.resumed.as_ref() else {
            return false;
        };
        !r.waived
            && self.links.iter().any(|(id, l)| {
                l.alive && r.old_labels.contains(label(&l.host)) && !r.rejoined.contains(id)
            })
    }

    /// The start timeout passed (see [`Self::rejoins_pending`]).
    pub(super) fn waive_rejoins(&mut self) {
        if let Some(r) = self.resumed.as_mut() {
            r.waived = true;
        }
    }

    /// The parts of carried job `job` still waiting for their process.
    fn waiting_parts(&self, job: JobId) -> Vec<u32> {
        let n = self.core.record(job).map_or(0, |r| r.nodes.len() as u32);
        (0..n)
            .filter(|&i| self.core.adopted_part_waiting(job, i))
            .collect()
    }

    /// A node process that lost its manager reports what it ran: the
    /// carried parts among them are taken back (running ones move to the
    /// node they run on now, finished ones are booked); a part of an old
    /// node of this process that it no longer holds had finished before
    /// the manager died (the old manager booked it). Everything else is
    /// dropped.
    pub(super) fn rejoin(&mut self, now: Now, link: LinkId, host: &str, rj: Rejoin) {
        let Some(r) = self.resumed.as_mut() else {
            return self.drop_rejoin(link, host, &rj);
        };
        r.rejoined.insert(link);
        let pid = self.links.get(&link).map(|l| l.pid);
        // The old nodes registered under this process's label, the only
        // ones whose parts it may take back or report: its certificate
        // holds the label (the gate), not the node ids it names, so a
        // claim on another process's node is ignored, said once.
        let me = label(host);
        let owned: FxHashSet<usize> = r
            .node_hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| label(h) == me)
            .map(|(n, _)| n)
            .collect();
        let foreign = rj
            .was
            .iter()
            .filter(|&&n| !owned.contains(&(n as usize)))
            .count();
        if foreign > 0 {
            self.warnings.push(format!(
                "{host} named {foreign} old node(s) registered under another label: ignored"
            ));
        }
        // This process's old nodes: those its last manager gave it, and
        // those of every journaled registration of the same process (its
        // label and pid) under the managers before.
        let mut was: HashSet<usize> = rj
            .was
            .iter()
            .map(|&n| n as usize)
            .filter(|n| owned.contains(n))
            .collect();
        if !rj.was.is_empty() {
            for (n, (h, p)) in r.node_hosts.iter().zip(&r.node_pids).enumerate() {
                if p.is_some() && *p == pid && label(h) == me {
                    was.insert(n);
                }
            }
        }
        // Its old nodes that crashed while it had no manager (local index
        // by old id): their parts are gone, not over.
        let crashed: Vec<(usize, u32)> = was
            .iter()
            .filter_map(|&n| {
                let local = old_local(r, &rj, n)?;
                rj.down
                    .iter()
                    .any(|d| d.crashed && d.node == local)
                    .then_some((n, local))
            })
            .collect();
        let crashed: FxHashMap<usize, u32> = crashed.into_iter().collect();
        let mut keep = Vec::new();
        let mut finished: Vec<(PartId, Time)> = Vec::new();
        let mut moved: Vec<JobId> = Vec::new();
        // Whether carried part `p` ran on a node of this process's label.
        let ours = |core: &common::admission::ManagerCore, p: PartId| {
            core.record(p.job)
                .and_then(|r| r.nodes.get(p.index as usize).copied())
                .is_some_and(|n| owned.contains(&n))
        };
        let mut claimed = 0usize;
        for p in &rj.running {
            let (job, index) = (p.part.job, p.part.index);
            if !self.core.adopted_part_waiting(job, index) {
                continue;
            }
            if !ours(&self.core, p.part) {
                claimed += 1;
                continue;
            }
            let before = self
                .core
                .record(job)
                .and_then(|r| r.nodes.get(index as usize).copied());
            match self
                .core
                .adopted_part_back(now.trace, link, p.part, p.node, p.work_done, p.share)
            {
                Ok(g) => {
                    keep.push(p.part);
                    // Its node has a new id now: the record (and the
                    // journal, for a manager after this one) names it.
                    if before != Some(g as usize) {
                        moved.push(job);
                    }
                }
                Err(e) => self.warnings.push(e.to_string()),
            }
        }
        for p in &rj.finished {
            if self.core.adopted_part_waiting(p.part.job, p.part.index) {
                if !ours(&self.core, p.part) {
                    claimed += 1;
                    continue;
                }
                keep.push(p.part);
                finished.push((p.part, p.at));
            }
        }
        if claimed > 0 {
            self.warnings.push(format!(
                "{host} reported {claimed} carried part(s) of another node process's nodes: ignored (dropped on its side)"
            ));
        }
        // Sets, not scans: a process may report hundreds of thousands of
        // parts.
        let reported: FxHashSet<PartId> = finished.iter().map(|&(p, _)| p).collect();
        // Parts on this process's old nodes it did not report: over
        // before the crash if they had started, else never received.
        let mut lost: Vec<(JobId, String)> = Vec::new();
        let mut lost_jobs: FxHashSet<JobId> = FxHashSet::default();
        // Parts sent again (their dispatch died with the manager).
        let mut again = 0usize;
        let carried: Vec<JobId> = self
            .resumed
            .as_ref()
            .map(|r| r.carried.iter().copied().collect())
            .unwrap_or_default();
        for job in carried {
            for i in self.waiting_parts(job) {
                let part = PartId { job, index: i };
                let node = self
                    .core
                    .record(job)
                    .and_then(|r| r.nodes.get(i as usize).copied());
                let reported = reported.contains(&part);
                let Some(n) = node.filter(|n| !reported && was.contains(n)) else {
                    continue;
                };
                if let Some(&local) = crashed.get(&n) {
                    if lost_jobs.insert(job) {
                        // Named after the node's fault, which its loss by
                        // the silent-node rule names again.
                        let after = self
                            .faults
                            .blame_of(&super::faults::note_key(label(host), Some(local)))
                            .map(|f| format!(", after {f}"))
                            .unwrap_or_default();
                        lost.push((
                            job,
                            format!(
                                "manager crash: node {n} (local {local}) of node process {host} crashed while it had no manager: its part {job}/{i} is gone{after}"
                            ),
                        ));
                    }
                    continue;
                }
                let started = self
                    .resumed
                    .as_ref()
                    .is_some_and(|r| r.reached.contains(&part));
                if started {
                    finished.push((part, Time::NAN));
                } else if !lost_jobs.contains(&job) {
                    // Its dispatch died with the manager (a partition held
                    // it): the node never had it, and the old frame died
                    // with the old connection, so it is sent again to the
                    // same node, registered again, with all its work to do.
                    let local = self.resumed.as_ref().and_then(|r| old_local(r, &rj, n));
                    let sent = match local {
                        Some(l) => self
                            .core
                            .adopted_part_again(now.trace, link, part, l, &mut self.out)
                            .map_err(|e| e.to_string()),
                        None => Err("its node's index in the process is not known".into()),
                    };
                    match sent {
                        Ok(g) => {
                            again += 1;
                            if node != Some(g as usize) {
                                moved.push(job);
                            }
                        }
                        Err(why) => {
                            lost_jobs.insert(job);
                            lost.push((
                            job,
                            format!(
                                "manager crash: the dispatch of part {job}/{i} to node process {host} (node {n}) died with the manager: {host} came back without it, the journal holds no start of it, and it could not be sent again ({why})"
                            ),
                        ));
                        }
                    }
                }
            }
        }
        // Jobs a part of which runs (or is sent again) on a node with a
        // new id: the record (and the journal, for a manager after this
        // one) names it.
        moved.sort_unstable();
        moved.dedup();
        if self.cfg.journal {
            for job in moved {
                if let Some(rec) = self.core.record(job) {
                    // Decided, not over: the finish of parts over so far
                    // is in their `ended` lines (a manager after this one
                    // adopts only a record without a finish).
                    let mut record = rec.clone();
                    record.finish = None;
                    self.journal_buf.push(Entry::Decided {
                        t: now.journal,
                        record,
                    });
                }
            }
        }
        // Parts it reported finished whose completion the books already
        // hold: the manager before the crash heard of it (a process reports
        // again the completions of its last one or two grace periods, which
        // a dead manager may not have read). They are counted, once: the
        // answer keeps them so the node does not read them as dropped.
        let took_back = keep.len();
        let mut keep: FxHashSet<PartId> = keep.into_iter().collect();
        let completed: FxHashSet<JobId> = self
            .resumed
            .as_ref()
            .map(|r| {
                r.done
                    .iter()
                    .filter(|d| d.accepted && !d.lost && d.finish.is_some())
                    .map(|d| d.id)
                    .collect()
            })
            .unwrap_or_default();
        let mut booked = 0usize;
        for p in &rj.finished {
            let (job, index) = (p.part.job, p.part.index);
            if !keep.contains(&p.part)
                && (completed.contains(&job) || self.core.part_booked_finished(job, index))
            {
                keep.insert(p.part);
                booked += 1;
            }
        }
        let dropped = rj.running.len() + rj.finished.len() - keep.len();
        let note = format!(
            "{host} rejoined after {:.1} s without a manager ({}): took back {took_back} of its parts, found {booked} it reported finished already booked, dropped {dropped} this manager does not hold, sent again {again} whose dispatch died with the manager",
            rj.away_s, rj.why,
        );
        tracing::info!("{note}");
        self.warnings.push(note);
        for msg in answer(host, &rj, |p| keep.contains(&p)) {
            self.actions.push_back(Action::Send { link, msg });
        }
        let crash = self.resumed.as_ref().map_or(0.0, |r| r.crash_trace);
        for (part, at) in finished {
            if lost_jobs.contains(&part.job) {
                continue;
            }
            // Finished unobserved (see `Takeover::crash_trace`).
            let at = if at.is_finite() { at } else { crash };
            match self
                .core
                .adopted_part_finished(now.trace, part, at, &mut self.out)
            {
                // The job goes on: a manager after this one must know the
                // part over (as `nodes.rs` journals a part's end).
                Ok(()) if self.cfg.journal && !self.core.job_over(part.job) => {
                    self.journal_buf.push(Entry::Ended {
                        t: now.journal,
                        id: part.job,
                        part: part.index,
                        finish: at,
                    });
                }
                Ok(()) => {}
                Err(e) => self.warnings.push(e.to_string()),
            }
        }
        self.forget_carried();
        self.flush(now);
        self.lose_carried(now, lost);
        self.sweep_if_all_back(now);
        self.check_end(now);
        // The replay may have waited for this report.
        self.maybe_start(now);
    }

    /// A manager with nothing carried drops every reported part.
    fn drop_rejoin(&mut self, link: LinkId, host: &str, rj: &Rejoin) {
        let n = rj.running.len() + rj.finished.len();
        self.warnings.push(format!(
            "{host} rejoined after {:.1} s without a manager ({}): its {n} reported parts are unknown here and were dropped",
            rj.away_s, rj.why
        ));
        for msg in answer(host, rj, |_| false) {
            self.actions.push_back(Action::Send { link, msg });
        }
    }

    /// Carried jobs none of whose parts waits any more are the admission
    /// core's alone.
    fn forget_carried(&mut self) {
        let Some(r) = self.resumed.as_ref() else {
            return;
        };
        let done: Vec<JobId> = r
            .carried
            .iter()
            .copied()
            .filter(|&j| self.waiting_parts(j).is_empty())
            .collect();
        if let Some(r) = self.resumed.as_mut() {
            for j in done {
                r.carried.remove(&j);
            }
        }
    }

    /// Loses the carried jobs `lost` says (the admission core cancels
    /// their other parts).
    fn lose_carried(&mut self, now: Now, lost: Vec<(JobId, String)>) {
        for (job, why) in lost {
            let detail = format!("lost at {:.3}: {why}", now.trace);
            if let Err(e) = self.core.lose(now.trace, job, detail, &mut self.out) {
                self.warnings.push(e.to_string());
            }
        }
        self.forget_carried();
        self.flush(now);
    }

    /// Every node process holding a carried part is back: nothing to
    /// wait for.
    fn sweep_if_all_back(&mut self, now: Now) {
        self.forget_carried();
        if self.resumed.as_ref().is_some_and(|r| r.carried.is_empty()) {
            self.sweep_carried(now);
        }
    }

    /// The wait is over: a carried part no process reported is lost
    /// (its process did not come back).
    pub(super) fn sweep_carried(&mut self, now: Now) {
        let Some(r) = self.resumed.as_mut() else {
            return;
        };
        if r.swept || !r.started {
            return;
        }
        r.swept = true;
        let wait = r.wait;
        let carried: Vec<JobId> = r.carried.iter().copied().collect();
        let mut lost: Vec<(JobId, String)> = Vec::new();
        // The fault the injector reported for each process that did not
        // come back (taken out: this is the loss it blamed), once per
        // process for all its jobs.
        let mut blamed: Vec<(String, Option<String>)> = Vec::new();
        for job in carried {
            if let Some(&i) = self.waiting_parts(job).first() {
                let node = self
                    .core
                    .record(job)
                    .and_then(|r| r.nodes.get(i as usize).copied())
                    .unwrap_or(0);
                let r = self.resumed.as_ref().expect("checked");
                let host = r.node_hosts.get(node).map_or("?", String::as_str);
                let me = label(host).to_string();
                let fault = match blamed.iter().find(|(l, _)| *l == me) {
                    Some((_, f)) => f.clone(),
                    None => {
                        let f = self.faults.take_blame(&me);
                        blamed.push((me.clone(), f.clone()));
                        f
                    }
                };
                let after = match fault {
                    Some(f) => format!(", after {f}"),
                    None => {
                        self.faults.unexplained(&me, job, now.journal);
                        String::new()
                    }
                };
                lost.push((
                    job,
                    format!(
                        "manager crash: node process {host} (node {node}, part {job}/{i}) did not come back within {wait:?} of the manager's restart{after}"
                    ),
                ));
            }
        }
        self.lose_carried(now, lost);
        self.check_end(now);
    }

    /// At an abort: every carried job still waiting for a process is lost
    /// with `reason` (the others went with their links).
    pub(super) fn abort_carried(&mut self, now: Now, reason: &str) {
        let Some(r) = self.resumed.as_ref() else {
            return;
        };
        let lost: Vec<(JobId, String)> = r
            .carried
            .iter()
            .map(|&j| (j, format!("run stopped: {reason}")))
            .collect();
        self.lose_carried(now, lost);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{CoreConfig, Event, Phase};
    use super::*;
    use common::admission::ManagerCore;
    use common::job::DeadlineType;
    use common::policy::{self, PolicyConfig};
    use common::protocol::{Dispatch, FinishedPart, HeldPart, ManagerMsg, NodeMsg};
    use common::share::SpareRule;

    pub(in crate::live::manager::core) fn record(id: JobId, nodes: Vec<usize>) -> JobRecord {
        JobRecord {
            id,
            class: None,
            submit: 1.0,
            estimate: 100.0,
            actual: 100.0,
            processors: nodes.len() as u32,
            deadline: 500.0,
            budget: f64::INFINITY,
            penalty_rate: 0.0,
            deadline_type: DeadlineType::Hard,
            accepted: true,
            reason: None,
            detail: String::new(),
            decided_at: 1.0,
            nodes,
            start: Some(1.0),
            finish: None,
            cost: 0.0,
            lost: false,
        }
    }

    pub(in crate::live::manager::core) fn at(t: f64) -> Now {
        Now {
            trace: t,
            wall: t,
            journal: t,
        }
    }

    pub(in crate::live::manager::core) fn node(local: u32) -> NodeInfo {
        NodeInfo {
            local,
            capacity: 1.0,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        }
    }

    pub(in crate::live::manager::core) fn config(expect_nodes: usize) -> CoreConfig {
        CoreConfig {
            time_scale: 1.0,
            expect_nodes,
            serve: false,
            journal: true,
            start_timeout: Duration::from_secs(10),
            histogram_timeout: Duration::from_secs(5),
            report_ms: 100,
            heartbeat_ms: 100,
            histogram_ms: 1000,
            spare_rule: SpareRule::default(),
            rejoin_wait: Duration::from_secs(30),
        }
    }

    /// FIFO, one node process `a` of one node. A client's job (id 2^40 +
    /// 3, RE 10) was queued when the manager died, submitted at 40; the
    /// journal kept its specification. At the restart (the process
    /// registers at 60, and the replay waits for its report) it is decided with its own submit time: started
    /// at 60 on node 1 (node 0 is the old run's). A client's job
    /// submitted after the restart gets the next id, 2^40 + 4, and waits
    /// (the node is busy): its specification is journaled.
    #[test]
    fn a_clients_queued_job_is_decided_at_the_restart_with_its_submit_time() {
        let p = policy::build("fifo", &PolicyConfig::default(), &[]).unwrap();
        let id = super::super::CLIENT_JOBS + 3;
        let spec = common::job::JobSpec::new(id, 40.0, 10.0, 1, 100.0, f64::INFINITY);
        // The managers before had timed two decisions.
        let mut before = crate::live::manager::config::new_hist();
        before.record(40).unwrap();
        before.record(70).unwrap();
        let t = Takeover {
            done: Vec::new(),
            open: Vec::new(),
            undecided: vec![WorkloadJob {
                spec: spec.clone(),
                actual_runtime: 8.0,
            }],
            unrecoverable: Vec::new(),
            offset: 0.0,
            node_processes: vec![("a".into(), 1)],
            node_pids: vec![None],
            started: Vec::new(),
            ended: Vec::new(),
            wait: Duration::from_secs(30),
            crash_trace: 50.0,
            note: "resumed: test".into(),
            crashed: 50.0,
            restarted: 55.0,
            trace_now: 60.0,
            histograms: [("policy_compute_us".to_string(), before)].into(),
            faults: Vec::new(),
            node_times: Vec::new(),
            losses: Vec::new(),
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(1), Vec::new(), t);
        let drain = |c: &mut LiveCore| std::iter::from_fn(|| c.poll_action()).collect::<Vec<_>>();
        drain(&mut c);
        c.handle(
            at(60.0),
            Event::Connected {
                link: 1,
                host: "a".into(),
                pid: 9,
                nodes: vec![node(0)],
            },
        );
        // `a` ran before the crash: the replay waits for its report.
        drain(&mut c);
        assert_eq!(c.phase(), Phase::Waiting);
        c.handle(
            at(60.0),
            Event::FromNode {
                link: 1,
                msgs: vec![NodeMsg::Rejoin(Rejoin {
                    was: vec![0],
                    away_s: 1.0,
                    why: "lost".into(),
                    running: Vec::new(),
                    finished: Vec::new(),
                    down: Vec::new(),
                })],
            },
        );
        assert_eq!(c.phase(), Phase::Replaying);
        let a = drain(&mut c);
        let dispatched: Vec<(JobId, u32)> = a
            .iter()
            .filter_map(|x| match x {
                Action::Send {
                    link: 1,
                    msg: ManagerMsg::Dispatch(d),
                } => Some((d.part.job, d.node)),
                _ => None,
            })
            .collect();
        assert_eq!(dispatched, [(id, 0)]);
        let r = c.core.record(id).unwrap();
        assert_eq!(
            (r.submit, r.decided_at, r.start, r.nodes.clone()),
            (40.0, 60.0, Some(60.0), vec![1])
        );
        c.handle(
            at(61.0),
            Event::Client {
                client: 7,
                msg: common::protocol::ClientMsg::Submit {
                    token: 1,
                    job: (&spec).into(),
                    actual: None,
                },
            },
        );
        c.handle(at(61.0), Event::ClientBurstEnd { client: 7 });
        // The node is busy: the new job is queued, and its `submitted`
        // entry carries its specification (id and submit time set), for a
        // manager after this one.
        let a = drain(&mut c);
        let journaled: Vec<(JobId, f64)> = a
            .iter()
            .filter_map(|x| match x {
                Action::Journal(v) => Some(v.iter()),
                _ => None,
            })
            .flatten()
            .filter_map(|e| match e {
                Entry::Submitted { spec: Some(s), .. } => Some((s.id, s.details.submit_time)),
                _ => None,
            })
            .collect();
        assert_eq!(journaled, [(id + 1, 61.0)]);
        // The earlier managers' samples are in this one's histogram, and
        // its journaled histograms (for a manager after it) carry them.
        assert_eq!(c.hists["policy_compute_us"].len(), 2);
        c.handle(at(62.0), Event::Timer(Timer::Tick));
        let a = drain(&mut c);
        let saved = a.iter().find_map(|x| match x {
            Action::Journal(v) => v.iter().find_map(|e| match e {
                Entry::Histograms { manager, .. } => manager.get("policy_compute_us").cloned(),
                _ => None,
            }),
            _ => None,
        });
        let h = crate::results::histograms::decode(&saved.unwrap()).unwrap();
        assert_eq!((h.len(), h.max()), (2, 70));
    }

    /// A process of two nodes held 60,001 carried parts when the manager
    /// died (job `j` on node `j % 2`). It comes back as new ids 2 and 3
    /// and rejoins in pieces: a `RejoinPiece` of jobs 1 to 50,000 running,
    /// then the `Rejoin` with jobs 50,001 to 60,000 running and job 60,001
    /// finished at 70. Every part is taken back: the answer is a
    /// `RejoinKept` of 50,000 parts and the `RejoinAnswer` of the other
    /// 10,001, in the order reported; job 2 runs on node 2 and job 60,001
    /// finished at 70. (With the kept parts looked up in a list, as
    /// before, the answer alone took 10 s of this test's 0.7 in a debug
    /// build: it grows with the square of the parts.)
    #[test]
    fn a_rejoin_in_pieces_is_taken_back_whole() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let n: JobId = 60_001;
        let open = (1..=n).map(|j| record(j, vec![j as usize % 2])).collect();
        let t = Takeover {
            node_pids: vec![None],
            started: (1..=n).map(|job| PartId { job, index: 0 }).collect(),
            ..takeover(open, vec![("a", 2, 0)])
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t);
        let drain = |c: &mut LiveCore| std::iter::from_fn(|| c.poll_action()).collect::<Vec<_>>();
        drain(&mut c);
        c.handle(
            at(60.0),
            Event::Connected {
                link: 1,
                host: "a".into(),
                pid: 9,
                nodes: vec![node(0), node(1)],
            },
        );
        drain(&mut c);
        let part = |job| PartId { job, index: 0 };
        let rejoin = Rejoin {
            was: vec![0, 1],
            away_s: 1.0,
            why: "lost".into(),
            running: (1..n)
                .map(|j| HeldPart {
                    part: part(j),
                    node: (j % 2) as u32,
                    work_done: 10.0,
                    share: 0.2,
                    started_at: 1.0,
                })
                .collect(),
            finished: vec![FinishedPart {
                part: part(n),
                node: 1,
                at: 70.0,
                cpu_seconds: 100.0,
            }],
            down: Vec::new(),
        };
        let msgs = rejoin.into_frames();
        assert_eq!(msgs.len(), 2);
        c.handle(at(60.5), Event::FromNode { link: 1, msgs });
        let a = drain(&mut c);
        let answers: Vec<(bool, Vec<PartId>)> = a
            .iter()
            .filter_map(|x| match x {
                Action::Send {
                    msg: ManagerMsg::RejoinKept { keep },
                    ..
                } => Some((false, keep.clone())),
                Action::Send {
                    msg: ManagerMsg::RejoinAnswer { keep, .. },
                    ..
                } => Some((true, keep.clone())),
                _ => None,
            })
            .collect();
        let shape: Vec<(bool, usize)> = answers.iter().map(|(a, k)| (*a, k.len())).collect();
        assert_eq!(shape, [(false, 50_000), (true, 10_001)]);
        let kept: Vec<JobId> = answers
            .iter()
            .flat_map(|(_, k)| k.iter().map(|p| p.job))
            .collect();
        assert_eq!(kept, (1..=n).collect::<Vec<_>>());
        assert_eq!(c.core.record(2).unwrap().nodes, vec![2]);
        assert_eq!(c.core.record(n).unwrap().finish, Some(70.0));
    }

    /// The old run had node process `a` (nodes 0 and 1) and `b` (node 2);
    /// job 1 ran on node 0, job 2 on node 2, job 3 on node 1, job 4 was
    /// over. `a` comes back as new ids 3 and 4 (0-2 stay taken) still
    /// running job 1's part and no longer holding job 3's: job 1 is kept
    /// (its record now names node 3), job 3 finished unobserved (booked at
    /// the crash, 50). `b` never comes back: when the wait is over job 2
    /// is lost naming it. Job 1 completes at 94 and the run ends with one
    /// record per job and a part record per carried part.
    #[test]
    fn carried_jobs_are_kept_finished_or_lost_by_what_comes_back() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut done4 = record(4, vec![1]);
        done4.finish = Some(20.0);
        let t = Takeover {
            done: vec![done4.clone()],
            node_pids: vec![None, None],
            // Every part reached its node (the journal holds its start).
            started: [1, 2, 3].map(|job| PartId { job, index: 0 }).to_vec(),
            ..takeover(
                vec![record(1, vec![0]), record(2, vec![2]), record(3, vec![1])],
                vec![("a", 2, 0), ("b", 1, 0)],
            )
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(3), Vec::new(), t);
        let drain = |c: &mut LiveCore| std::iter::from_fn(|| c.poll_action()).collect::<Vec<_>>();
        drain(&mut c);
        c.handle(
            at(60.0),
            Event::Connected {
                link: 1,
                host: "a".into(),
                pid: 9,
                nodes: vec![node(0), node(1)],
            },
        );
        let a = drain(&mut c);
        let welcome = a.iter().find_map(|x| match x {
            Action::Send {
                msg: ManagerMsg::Welcome(w),
                ..
            } => Some(w.node_ids.clone()),
            _ => None,
        });
        assert_eq!(welcome, Some(vec![3, 4]));
        c.handle(
            at(60.5),
            Event::FromNode {
                link: 1,
                msgs: vec![NodeMsg::Rejoin(Rejoin {
                    was: vec![0, 1],
                    away_s: 1.0,
                    why: "lost".into(),
                    running: vec![HeldPart {
                        part: PartId { job: 1, index: 0 },
                        node: 0,
                        work_done: 50.0,
                        share: 0.2,
                        started_at: 1.0,
                    }],
                    finished: Vec::<FinishedPart>::new(),
                    down: Vec::new(),
                })],
            },
        );
        let a = drain(&mut c);
        let kept = a.iter().find_map(|x| match x {
            Action::Send {
                msg: ManagerMsg::RejoinAnswer { keep, .. },
                ..
            } => Some(keep.clone()),
            _ => None,
        });
        assert_eq!(kept, Some(vec![PartId { job: 1, index: 0 }]));
        let journaled: Vec<&Entry> = a
            .iter()
            .filter_map(|x| match x {
                Action::Journal(v) => Some(v.iter()),
                _ => None,
            })
            .flatten()
            .collect();
        // Job 1 renamed to its node's new id; job 3 over at the crash.
        assert!(journaled.iter().any(
            |e| matches!(e, Entry::Decided { record, .. } if record.id == 1 && record.nodes == vec![3])
        ));
        assert!(journaled.iter().any(|e| matches!(e,
            Entry::Finished { id: Some(3), finish: Some(f), .. } if *f == 50.0)));
        // The admission core holds job 1's part on node 3 with the work
        // the rejoin reported (50 of 100 done): the policy decides on it.
        let (view, ids) = c.core.snapshot(60.5);
        let k = ids.iter().position(|&g| g == 3).unwrap();
        let parts: Vec<(JobId, f64)> = view[k].parts.iter().map(|p| (p.job, p.cpu_done)).collect();
        assert_eq!(parts, [(1, 50.0)]);
        // `b` does not come back: the replay goes on with `a` at the
        // start timeout, and the wait for `b` ends.
        c.handle(at(70.0), Event::Timer(Timer::StartTimeout));
        let a = drain(&mut c);
        assert_eq!(c.phase(), Phase::Replaying);
        let restart = a.iter().find_map(|x| match x {
            Action::Journal(v) => v.iter().find_map(|e| match e {
                Entry::Restart {
                    t,
                    crashed,
                    restarted,
                } => Some((*t, *crashed, *restarted)),
                _ => None,
            }),
            _ => None,
        });
        assert_eq!(restart, Some((70.0, 50.0, 55.0)));
        c.handle(at(90.0), Event::Timer(Timer::Carried));
        drain(&mut c);
        c.handle(
            at(95.0),
            Event::FromNode {
                link: 1,
                msgs: vec![NodeMsg::Completed {
                    part: PartId { job: 1, index: 0 },
                    at: 94.0,
                    cpu_seconds: 100.0,
                }],
            },
        );
        drain(&mut c);
        assert!(matches!(c.phase(), Phase::Collecting { .. }));
        let o = c.outcome();
        let ids: Vec<JobId> = o.records.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        assert_eq!(o.records[0].finish, Some(94.0));
        assert_eq!(o.records[0].nodes, vec![3]);
        assert!(!o.records[0].lost);
        assert!(o.records[1].lost);
        assert!(
            o.records[1]
                .detail
                .contains("node process b (node 2, part 2/0) did not come back"),
            "{}",
            o.records[1].detail
        );
        assert_eq!(o.records[2].finish, Some(50.0));
        assert_eq!(o.records[3], done4);
        // A part record for every carried part, as for any job: job 1's on
        // its new node, job 2's never finished, job 3's at the crash.
        let mut parts: Vec<(JobId, usize, f64)> =
            o.parts.iter().map(|p| (p.job, p.node, p.finish)).collect();
        parts.sort_by_key(|p| p.0);
        assert_eq!(parts, [(1, 3, 94.0), (2, 2, f64::INFINITY), (3, 1, 50.0)]);
    }

    /// A process reports again, as finished, completions the manager
    /// before the crash had booked (job 4, over; part 2/0, whose `ended`
    /// line the journal holds while job 2 goes on): the answer keeps them,
    /// so the node does not read them as dropped, and they are not booked
    /// twice. Only a part nobody knows (9/0) is dropped. Counts worked out
    /// by hand: took back 2 (1/0 running, 2/1 finished while the manager
    /// was down), 2 already booked, 1 dropped.
    #[test]
    fn finished_parts_booked_before_the_crash_are_kept_not_dropped() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut done4 = record(4, vec![1]);
        done4.finish = Some(20.0);
        let t = Takeover {
            done: vec![done4.clone()],
            started: vec![part(1, 0), part(2, 0), part(2, 1)],
            ended: vec![(part(2, 0), 30.0)],
            ..takeover(
                vec![record(1, vec![0]), record(2, vec![0, 1])],
                vec![("a", 2, 9)],
            )
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t);
        drain(&mut c);
        let finished = |job, index, node, at| FinishedPart {
            part: part(job, index),
            node,
            at,
            cpu_seconds: 100.0,
        };
        let a = come_back(
            &mut c,
            60.0,
            1,
            "a",
            9,
            2,
            vec![0, 1],
            vec![held(1, 0, 0)],
            vec![
                finished(4, 0, 1, 20.0),
                finished(2, 0, 0, 30.0),
                finished(2, 1, 1, 55.0),
                finished(9, 0, 1, 40.0),
            ],
        );
        let (mut keep, reason) = a
            .iter()
            .find_map(|x| match x {
                Action::Send {
                    msg: ManagerMsg::RejoinAnswer { keep, reason },
                    ..
                } => Some((keep.clone(), reason.clone())),
                _ => None,
            })
            .expect("an answer");
        keep.sort_unstable();
        assert_eq!(keep, [part(1, 0), part(2, 0), part(2, 1), part(4, 0)]);
        assert!(
            reason.contains("does not hold 0 running and 1 finished"),
            "{reason}"
        );
        let note = c
            .warnings
            .iter()
            .find(|w| w.contains("rejoined after"))
            .expect("the rejoin's note");
        assert!(
            note.contains(
                "took back 2 of its parts, found 2 it reported finished already booked, dropped 1 "
            ),
            "{note}"
        );
        // Booked once: 2/0 keeps its finish from the journal, and job 4's
        // record is the journal's.
        let finishes: Vec<(JobId, u32, f64)> = journaled(&a)
            .iter()
            .filter_map(|e| match e {
                Entry::Ended {
                    id, part, finish, ..
                } => Some((*id, *part, *finish)),
                _ => None,
            })
            .collect();
        assert!(
            finishes.iter().all(|f| f.0 == 2 && f.1 == 1),
            "{finishes:?}"
        );
        c.handle(at(70.0), Event::Timer(Timer::StartTimeout));
        drain(&mut c);
        let o = c.outcome();
        let over: Vec<(JobId, Option<f64>)> = o.records.iter().map(|r| (r.id, r.finish)).collect();
        assert_eq!(over[1..], [(2, Some(55.0)), (4, Some(20.0))]);
    }

    /// A process may take back only the carried parts of its own label's
    /// nodes: `a` (old nodes 0 and 1) naming `b`'s node 2 and reporting
    /// `b`'s running part 2/0 and finished part 3/0 takes neither; `b`
    /// then takes its running part back.
    #[test]
    fn a_process_cannot_take_back_or_book_another_process_parts() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let t = Takeover {
            started: vec![part(1, 0), part(2, 0), part(3, 0)],
            ..takeover(
                vec![record(1, vec![0]), record(2, vec![2]), record(3, vec![2])],
                vec![("a", 2, 9), ("b", 1, 8)],
            )
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(3), Vec::new(), t);
        drain(&mut c);
        let keep_of = |a: &[Action]| {
            a.iter()
                .find_map(|x| match x {
                    Action::Send {
                        msg: ManagerMsg::RejoinAnswer { keep, .. },
                        ..
                    } => Some(keep.clone()),
                    _ => None,
                })
                .expect("an answer")
        };
        let a = come_back(
            &mut c,
            60.0,
            1,
            "a",
            9,
            2,
            vec![0, 1, 2],
            vec![held(1, 0, 0), held(2, 0, 1)],
            vec![FinishedPart {
                part: part(3, 0),
                node: 1,
                at: 58.0,
                cpu_seconds: 10.0,
            }],
        );
        assert_eq!(keep_of(&a), [part(1, 0)]);
        for said in [
            "a named 1 old node(s) registered under another label: ignored",
            "a reported 2 carried part(s) of another node process's nodes: ignored",
        ] {
            assert!(
                c.warnings.iter().any(|w| w.contains(said)),
                "{said}: {:?}",
                c.warnings
            );
        }
        // Nothing of b's was booked finished for a's report.
        assert!(!journaled(&a)
            .iter()
            .any(|e| matches!(e, Entry::Ended { id: 3, .. })));
        let b = come_back(
            &mut c,
            61.0,
            2,
            "b",
            8,
            1,
            vec![2],
            vec![held(2, 0, 0)],
            Vec::new(),
        );
        assert_eq!(keep_of(&b), [part(2, 0)]);
    }

    /// No node process comes back within the start timeout: the carried
    /// jobs end lost with the reason, journaled, not open in the results
    /// (as if they ran on) with nothing said.
    #[test]
    fn carried_jobs_are_lost_when_no_process_comes_back() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let t = Takeover {
            started: vec![part(1, 0), part(2, 0)],
            ..takeover(
                vec![record(1, vec![0]), record(2, vec![1])],
                vec![("a", 2, 9)],
            )
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t);
        drain(&mut c);
        c.handle(at(80.0), Event::Timer(Timer::StartTimeout));
        let a = drain(&mut c);
        let lost: Vec<JobId> = journaled(&a)
            .iter()
            .filter_map(|e| match e {
                Entry::Finished {
                    record: Some(r), ..
                } if r.lost => Some(r.id),
                _ => None,
            })
            .collect();
        assert_eq!(lost, [1, 2], "{a:?}");
        let o = c.outcome();
        for r in &o.records {
            assert!(r.lost, "{r:?}");
            assert!(
                r.detail.contains("no node process registered within"),
                "{}",
                r.detail
            );
        }
    }

    pub(in crate::live::manager::core) fn takeover(
        open: Vec<JobRecord>,
        processes: Vec<(&str, usize, u32)>,
    ) -> Takeover {
        Takeover {
            done: Vec::new(),
            open,
            undecided: Vec::new(),
            unrecoverable: Vec::new(),
            offset: 0.0,
            node_processes: processes.iter().map(|p| (p.0.into(), p.1)).collect(),
            node_pids: processes.iter().map(|p| Some(p.2)).collect(),
            started: Vec::new(),
            ended: Vec::new(),
            wait: Duration::from_secs(30),
            crash_trace: 50.0,
            note: "resumed: test".into(),
            crashed: 50.0,
            restarted: 55.0,
            trace_now: 60.0,
            histograms: Default::default(),
            faults: Vec::new(),
            node_times: Vec::new(),
            losses: Vec::new(),
        }
    }

    pub(in crate::live::manager::core) fn drain(c: &mut LiveCore) -> Vec<Action> {
        std::iter::from_fn(|| c.poll_action()).collect()
    }

    pub(in crate::live::manager::core) fn journaled(a: &[Action]) -> Vec<&Entry> {
        a.iter()
            .filter_map(|x| match x {
                Action::Journal(v) => Some(v.iter()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    pub(in crate::live::manager::core) fn part(job: JobId, index: u32) -> PartId {
        PartId { job, index }
    }

    pub(in crate::live::manager::core) fn held(job: JobId, index: u32, node: u32) -> HeldPart {
        HeldPart {
            part: part(job, index),
            node,
            work_done: 10.0,
            share: 0.5,
            started_at: 1.0,
        }
    }

    /// Process `host` (pid `pid`, `n` nodes) registers on `link` and
    /// rejoins saying it had nodes `was`, holding `running` and having
    /// finished `finished`: the actions of the rejoin.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::live::manager::core) fn come_back(
        c: &mut LiveCore,
        t: f64,
        link: LinkId,
        host: &str,
        pid: u32,
        n: u32,
        was: Vec<u32>,
        running: Vec<HeldPart>,
        finished: Vec<FinishedPart>,
    ) -> Vec<Action> {
        c.handle(
            at(t),
            Event::Connected {
                link,
                host: host.into(),
                pid,
                nodes: (0..n).map(node).collect(),
            },
        );
        drain(c);
        c.handle(
            at(t + 0.1),
            Event::FromNode {
                link,
                msgs: vec![NodeMsg::Rejoin(Rejoin {
                    was,
                    away_s: 1.0,
                    why: "lost".into(),
                    running,
                    finished,
                    down: Vec::new(),
                })],
            },
        );
        drain(c)
    }

    /// A dispatch that died with the manager (a partition held it): the
    /// old run had process `a` (pid 9, nodes 0 and 1). Job 5 has parts on
    /// nodes 0 and 1; the journal holds the start of 5/0 only (5/1's
    /// dispatch never arrived). Job 7 (node 1) started and is not
    /// reported: its completion died with the manager. `a` comes back
    /// (new ids 2, 3) still running 5/0: job 7 is over at the crash (50);
    /// 5/0 is kept, and 5/1 is sent again at 60.1 to the same node (local
    /// 1, now node 3) with its whole work (RE 100) and its own deadline
    /// (501: submitted at 1 with 500 to go), after the answer. Job 5's record names nodes 2 and 3 (in
    /// the journal too, for a manager after this one), and it completes
    /// when both parts do, 5/1's part record starting at 60.1.
    #[test]
    fn a_part_whose_dispatch_died_with_the_manager_is_sent_again() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(
            vec![record(5, vec![0, 1]), record(7, vec![1])],
            vec![("a", 2, 9)],
        );
        t.started = vec![part(5, 0), part(7, 0)];
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t);
        drain(&mut c);
        let a = come_back(
            &mut c,
            60.0,
            1,
            "a",
            9,
            2,
            vec![0, 1],
            vec![held(5, 0, 0)],
            Vec::new(),
        );
        let answer = a.iter().position(|x| {
            matches!(x, Action::Send { msg: ManagerMsg::RejoinAnswer { keep, .. }, .. }
                if *keep == vec![part(5, 0)])
        });
        let sent: Vec<(usize, &Dispatch)> = a
            .iter()
            .enumerate()
            .filter_map(|(k, x)| match x {
                Action::Send {
                    link: 1,
                    msg: ManagerMsg::Dispatch(d),
                } => Some((k, d)),
                _ => None,
            })
            .collect();
        assert_eq!(sent.len(), 1, "{a:?}");
        let (k, d) = sent[0];
        assert!(answer.is_some_and(|x| x < k), "{a:?}");
        assert_eq!(
            (
                d.part,
                d.node,
                d.estimate,
                d.actual,
                d.deadline,
                d.dispatched_at
            ),
            (part(5, 1), 1, 100.0, 100.0, 501.0, 60.1)
        );
        assert!(!a.iter().any(|x| matches!(
            x,
            Action::Send {
                msg: ManagerMsg::Cancel { .. },
                ..
            }
        )));
        let j = journaled(&a);
        assert!(j.iter().any(|e| matches!(e,
            Entry::Finished { id: Some(7), finish: Some(f), .. } if *f == 50.0)));
        assert!(j.iter().any(|e| matches!(e,
            Entry::Decided { record, .. } if record.id == 5 && record.nodes == [2, 3])));
        assert!(!j
            .iter()
            .any(|e| matches!(e, Entry::Finished { record: Some(r), .. } if r.id == 5)));
        c.handle(at(61.0), Event::Timer(Timer::StartTimeout));
        drain(&mut c);
        for (index, end) in [(0, 90.0), (1, 160.0)] {
            c.handle(
                at(end + 0.1),
                Event::FromNode {
                    link: 1,
                    msgs: vec![NodeMsg::Completed {
                        part: part(5, index),
                        at: end,
                        cpu_seconds: 100.0,
                    }],
                },
            );
            drain(&mut c);
        }
        let o = c.outcome();
        assert_eq!(
            o.records.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![5, 7]
        );
        let r5 = &o.records[0];
        assert_eq!(
            (r5.lost, r5.finish, &r5.nodes[..]),
            (false, Some(160.0), &[2, 3][..])
        );
        assert_eq!(o.records[1].finish, Some(50.0));
        let p51 = o.parts.iter().find(|p| p.job == 5 && p.node == 3).unwrap();
        assert_eq!((p51.start, p51.finish), (60.1, 160.0));
    }

    /// A part whose dispatch died and that cannot be sent again loses its
    /// job: as above, but `a` comes back with one node only, so the old
    /// node 1 (local 1) is not there. Job 5 is lost at 60.1 naming the
    /// crash, part 5/1 and why; 5/0, kept by the answer, is cancelled.
    /// Recording job 5 complete would claim work that never ran.
    #[test]
    fn a_part_whose_dispatch_died_and_whose_node_is_gone_loses_its_job() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(vec![record(5, vec![0, 1])], vec![("a", 2, 9)]);
        t.started = vec![part(5, 0)];
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t);
        drain(&mut c);
        let a = come_back(
            &mut c,
            60.0,
            1,
            "a",
            9,
            1,
            vec![0, 1],
            vec![held(5, 0, 0)],
            Vec::new(),
        );
        let answer = a.iter().position(|x| {
            matches!(x, Action::Send { msg: ManagerMsg::RejoinAnswer { keep, .. }, .. }
                if *keep == vec![part(5, 0)])
        });
        let cancel = a.iter().position(|x| {
            matches!(x, Action::Send { link: 1, msg: ManagerMsg::Cancel { part: p } }
                if *p == part(5, 0))
        });
        assert!(answer.is_some() && cancel > answer, "{a:?}");
        assert!(!a.iter().any(|x| matches!(
            x,
            Action::Send {
                msg: ManagerMsg::Dispatch(_),
                ..
            }
        )));
        c.handle(at(61.0), Event::Timer(Timer::StartTimeout));
        drain(&mut c);
        let o = c.outcome();
        assert_eq!(o.records.len(), 1);
        assert_eq!(
            o.records[0].detail,
            "lost at 60.100: manager crash: the dispatch of part 5/1 to node process a (node 1) \
             died with the manager: a came back without it, the journal holds no start of it, \
             and it could not be sent again (node process a (link 1): unknown part 5/1)"
        );
        assert_eq!(o.records[0].finish, None);
    }

    /// After a second restart. Manager 0 numbered `a` (pid 9) 0-1, `b`
    /// (pid 10) 2, and `a` again 3-4 when it restarted after a crash (pid
    /// 11); manager 1 numbered `a` (pid 11) 5-6 and `b` 7, and died. The
    /// journal holds: job 8's part 0 (node 0, the dead `a`) over at 40
    /// (an `ended` line) and its part 1 renamed to node 7 (reported
    /// running by `b`); job 9 (node 3) started under manager 0 and never
    /// renamed (manager 1 died before `a`'s rejoin reached it); job 10 on
    /// nodes 2 and 5, both started. Now `a` comes back as 8-9 saying it
    /// had 5 and 6 (manager 1's ids) and holding 10/1; `b` as 10, saying
    /// 7, holding 8/1 and having finished 10/0 at 55. Job 8's part 0 is
    /// over by its `ended` line (no process that comes back had node 0).
    /// Job 9's node is `a`'s by its label and pid 11: over at the crash
    /// (50), not lost for "not coming back". Job 10's part 0 is journaled
    /// over (55) as its job goes on. 8/1 completes at 95 and 10/1 at 97:
    /// job 8 ends at 95, job 10 at 97; nothing is lost.
    #[test]
    fn parts_over_under_an_earlier_manager_and_its_node_ids_are_known() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(
            vec![
                record(8, vec![0, 7]),
                record(9, vec![3]),
                record(10, vec![2, 5]),
            ],
            vec![
                ("a", 2, 9),
                ("b", 1, 10),
                ("a", 2, 11),
                ("a", 2, 11),
                ("b", 1, 10),
            ],
        );
        t.started = vec![part(8, 0), part(8, 1), part(9, 0), part(10, 0), part(10, 1)];
        t.ended = vec![(part(8, 0), 40.0)];
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(3), Vec::new(), t);
        drain(&mut c);
        come_back(
            &mut c,
            60.0,
            1,
            "a",
            11,
            2,
            vec![5, 6],
            vec![held(10, 1, 0)],
            Vec::new(),
        );
        let a = come_back(
            &mut c,
            61.0,
            2,
            "b",
            10,
            1,
            vec![7],
            vec![held(8, 1, 0)],
            vec![FinishedPart {
                part: part(10, 0),
                node: 0,
                at: 55.0,
                cpu_seconds: 1.0,
            }],
        );
        assert!(journaled(&a).iter().any(|e| matches!(e,
            Entry::Ended { id: 10, part: 0, finish, .. } if *finish == 55.0)));
        assert_eq!(c.phase(), Phase::Replaying);
        for (t, p) in [(95.0, part(8, 1)), (97.0, part(10, 1))] {
            let link = if p.job == 8 { 2 } else { 1 };
            c.handle(
                at(t),
                Event::FromNode {
                    link,
                    msgs: vec![NodeMsg::Completed {
                        part: p,
                        at: t,
                        cpu_seconds: 1.0,
                    }],
                },
            );
            drain(&mut c);
        }
        // The wait ends with nothing left unreported.
        c.handle(at(100.0), Event::Timer(Timer::Carried));
        drain(&mut c);
        let o = c.outcome();
        let got: Vec<(JobId, Option<Time>, bool)> =
            o.records.iter().map(|r| (r.id, r.finish, r.lost)).collect();
        assert_eq!(
            got,
            vec![
                (8, Some(95.0), false),
                (9, Some(50.0), false),
                (10, Some(97.0), false)
            ]
        );
        // Renamed to the nodes that ran them under this manager.
        assert_eq!(o.records[0].nodes, vec![0, 10]);
        assert_eq!(o.records[2].nodes, vec![2, 8]);
    }
}
