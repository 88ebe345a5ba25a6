//! A core that takes over an unfinished run (`libratory resume`): the
//! jobs its journal holds as over keep their records; the jobs that were
//! running when the manager died are *carried*: their parts may still run
//! on node processes that rode out the crash, and those processes, once
//! registered again, report them ([`Rejoin`]). The core takes each
//! reported part back, books the parts that finished meanwhile, and
//! records a carried job lost only when a node process holding one of its
//! parts does not come back within the wait (or is lost later), or comes
//! back without a part whose start the journal does not hold either (its
//! dispatch died with the manager: the node never had it).
//!
//! What the journal says of each carried part decides: over (an `ended`
//! line, written when a part completes and its job goes on), started (a
//! `started` line: the node had it), or neither. A process that comes back
//! is known by the node ids its rejoin says it had (`was`, the last
//! manager's numbering) and by its label and pid, which every `node` line
//! of the run holds: its registrations under every earlier manager.
//!
//! Carried parts are booked here, not in the admission core: its view does
//! not see them (a policy deciding meanwhile sees their nodes as they were
//! without them), which `docs/faults.md` states with the guarantees.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use common::admission::LinkId;
use common::job::JobId;
use common::metrics::JobRecord;
use common::protocol::{ManagerMsg, NodeInfo, PartId, Rejoin};
use common::time::Time;
use common::workload::WorkloadJob;

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
    /// (clients' jobs: their specification is not journaled), recorded
    /// lost with why.
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
    /// The clock's trace time when this manager starts (its clock runs
    /// from there at once: the node processes coming back map their
    /// times onto it).
    pub trace_now: Time,
}

/// A job running when the manager died.
pub(super) struct Carried {
    record: JobRecord,
    /// Parts not known to be over: index -> the link that reported it
    /// running (None: not reported yet).
    left: BTreeMap<u32, Option<LinkId>>,
    /// The latest finish of its parts seen.
    finish: Option<Time>,
    /// Parts known to have reached their node (journaled started, or
    /// reported by their process).
    started: BTreeSet<u32>,
}

/// The resumed core's books of the carried jobs.
#[derive(Default)]
pub(super) struct Resumed {
    carried: HashMap<JobId, Carried>,
    /// Final records of jobs over before the restart and of carried jobs
    /// over since.
    pub(super) done: Vec<JobRecord>,
    undecided: Vec<WorkloadJob>,
    node_hosts: Vec<String>,
    /// The pid of each old node's process (None: not journaled).
    node_pids: Vec<Option<u32>>,
    /// Old node ids whose process came back (its rejoin said `was`).
    back: HashSet<u32>,
    wait: Duration,
    crash_trace: Time,
    note: String,
    /// The replay went on (the start of the resumed run).
    pub(super) started: bool,
    /// The wait for node processes is over: unreported parts are lost.
    swept: bool,
}

impl Resumed {
    /// Whether `job` is a carried job still open.
    pub(super) fn holds(&self, job: JobId) -> bool {
        self.carried.contains_key(&job)
    }

    /// Carried jobs still open.
    pub(super) fn open(&self) -> usize {
        self.carried.len()
    }
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
        for (k, (host, n)) in t.node_processes.iter().enumerate() {
            let pid = t.node_pids.get(k).copied().flatten();
            node_pids.extend(std::iter::repeat_n(pid, *n));
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
        let mut c = LiveCore::new(core, cfg, jobs);
        let before = t.done.len() + t.open.len() + t.undecided.len() + t.unrecoverable.len();
        c.total_jobs += before;
        c.submitted = before;
        c.decided = t.done.len() + t.open.len();
        c.finished = t.done.len();
        c.offset = t.offset;
        let mut r = Resumed {
            done: t.done,
            undecided: t.undecided,
            node_hosts,
            node_pids,
            wait: t.wait,
            crash_trace: t.crash_trace,
            note: t.note,
            ..Resumed::default()
        };
        for rec in t.open {
            let left = (0..rec.nodes.len() as u32).map(|i| (i, None)).collect();
            r.carried.insert(
                rec.id,
                Carried {
                    record: rec,
                    left,
                    finish: None,
                    started: BTreeSet::new(),
                },
            );
        }
        for p in t.started {
            if let Some(c) = r.carried.get_mut(&p.job) {
                c.started.insert(p.index);
            }
        }
        // Parts an earlier manager saw end are over (a job whose every
        // part is over, its `finished` line lost, ends at the replay's
        // start).
        for (p, at) in t.ended {
            if let Some(c) = r.carried.get_mut(&p.job) {
                if c.left.remove(&p.index).is_some() {
                    c.started.insert(p.index);
                    c.finish = Some(c.finish.map_or(at, |f| f.max(at)));
                }
            }
        }
        for mut rec in t.unrecoverable {
            rec.lost = true;
            rec.detail = "queued when the manager died, a client's job (its specification is not journaled): not decided".into();
            c.finished += 1;
            c.decided += 1;
            r.done.push(rec);
        }
        c.resumed = Some(r);
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
        if self.cfg.journal {
            self.journal_buf.push(Entry::Warning {
                t: now.journal,
                text: note,
            });
        }
        let mut over: Vec<JobId> = r
            .carried
            .iter()
            .filter(|(_, c)| c.left.is_empty())
            .map(|(&j, _)| j)
            .collect();
        over.sort_unstable();
        for job in over {
            let Some(c) = self.resumed.as_mut().and_then(|r| r.carried.remove(&job)) else {
                continue;
            };
            let mut record = c.record;
            record.finish = c.finish;
            self.carried_over(now, record);
        }
        for j in undecided {
            let id = j.spec.id;
            let mark = self.out.len();
            match self.submit(now.trace, j) {
                Err(e) => {
                    self.warnings.push(format!("job {id}: {e}"));
                    self.finished += 1;
                }
                Ok(()) => self.journal_submitted(id, mark, now),
            }
        }
        self.flush(now);
        self.actions.push_back(Action::Arm {
            timer: Timer::Carried,
            when: When::After(wait),
        });
        self.sweep_if_all_back(now);
    }

    /// A node process that lost its manager reports what it ran: the
    /// carried parts among them are taken back (running ones go on,
    /// finished ones are booked). A part of an old node of this process
    /// (under any earlier manager) that it no longer holds had finished
    /// before the manager died if the journal holds its start (an earlier
    /// manager booked it, or its completion died with the manager); if
    /// not, its dispatch died with the manager and the node never had it:
    /// its job is lost, naming the crash and the part. Everything else is
    /// dropped.
    pub(super) fn rejoin(&mut self, now: Now, link: LinkId, host: &str, rj: Rejoin) {
        let Some(r) = self.resumed.as_mut() else {
            return self.drop_rejoin(link, host, &rj);
        };
        r.back.extend(rj.was.iter().copied());
        let (ids, pid) = self
            .links
            .get(&link)
            .map(|l| (l.ids.clone(), l.pid))
            .unwrap_or_default();
        // This process's old nodes: those its last manager gave it, and
        // those of every journaled registration of the same process (its
        // label and pid) under the managers before.
        let mut was: HashSet<u32> = rj.was.iter().copied().collect();
        if !rj.was.is_empty() {
            let label = label_of(host);
            for (n, (h, p)) in r.node_hosts.iter().zip(&r.node_pids).enumerate() {
                if *p == Some(pid) && label_of(h) == label {
                    was.insert(n as u32);
                }
            }
        }
        let mut keep = Vec::new();
        let mut finished: Vec<(PartId, Time)> = Vec::new();
        let mut moved: Vec<JobId> = Vec::new();
        for p in &rj.running {
            if let Some(c) = r.carried.get_mut(&p.part.job) {
                if let Some(slot) = c.left.get_mut(&p.part.index) {
                    *slot = Some(link);
                    c.started.insert(p.part.index);
                    keep.push(p.part);
                    // Its node has a new id now: the record (and the
                    // journal, for a manager after this one) names it.
                    let new = ids.get(p.node as usize).map(|&g| g as usize);
                    if let (Some(new), Some(n)) =
                        (new, c.record.nodes.get_mut(p.part.index as usize))
                    {
                        if *n != new {
                            *n = new;
                            moved.push(p.part.job);
                        }
                    }
                }
            }
        }
        moved.sort_unstable();
        moved.dedup();
        if self.cfg.journal {
            for job in moved {
                if let Some(c) = r.carried.get(&job) {
                    self.journal_buf.push(Entry::Decided {
                        t: now.journal,
                        record: c.record.clone(),
                    });
                }
            }
        }
        for p in &rj.finished {
            if r.carried
                .get(&p.part.job)
                .is_some_and(|c| c.left.contains_key(&p.part.index))
            {
                keep.push(p.part);
                finished.push((p.part, p.at));
            }
        }
        // Parts on this process's old nodes it did not report: over
        // before the crash if they had started, else never received.
        let mut lost: Vec<(JobId, String)> = Vec::new();
        for (id, c) in &r.carried {
            for (&i, slot) in &c.left {
                let node = c.record.nodes.get(i as usize).map(|&n| n as u32);
                let reported =
                    slot.is_some() || finished.iter().any(|(p, _)| p.job == *id && p.index == i);
                let Some(n) = node.filter(|n| !reported && was.contains(n)) else {
                    continue;
                };
                if c.started.contains(&i) {
                    finished.push((PartId { job: *id, index: i }, Time::NAN));
                } else if !lost.iter().any(|(j, _)| j == id) {
                    lost.push((
                        *id,
                        format!(
                            "manager crash: the dispatch of part {id}/{i} to node process {host} (node {n}) died with the manager: {host} came back without it and the journal holds no start of it"
                        ),
                    ));
                }
            }
        }
        lost.sort();
        let dropped = rj.running.len() + rj.finished.len() - keep.len();
        let note = format!(
            "{host} rejoined after {:.1} s without a manager ({}): took back {} of its parts, dropped {dropped} this manager does not hold",
            rj.away_s,
            rj.why,
            keep.len()
        );
        tracing::info!("{note}");
        self.warnings.push(note);
        let msg = answer(host, &rj, |p| keep.contains(&p));
        self.actions.push_back(Action::Send { link, msg });
        for (part, at) in finished {
            if !lost.iter().any(|(j, _)| *j == part.job) {
                self.carried_part_done(now, part, at);
            }
        }
        self.lose_carried(now, lost);
        self.hand_journal();
        self.sweep_if_all_back(now);
        self.check_end(now);
    }

    /// A manager with nothing carried drops every reported part.
    fn drop_rejoin(&mut self, link: LinkId, host: &str, rj: &Rejoin) {
        let n = rj.running.len() + rj.finished.len();
        self.warnings.push(format!(
            "{host} rejoined after {:.1} s without a manager ({}): its {n} reported parts are unknown here and were dropped",
            rj.away_s, rj.why
        ));
        let msg = answer(host, rj, |_| false);
        self.actions.push_back(Action::Send { link, msg });
    }

    /// A carried part finished at `at` (NaN: before the crash, time not
    /// known).
    pub(super) fn carried_part_done(&mut self, now: Now, part: PartId, at: Time) {
        let Some(r) = self.resumed.as_mut() else {
            return;
        };
        let Some(c) = r.carried.get_mut(&part.job) else {
            return;
        };
        if c.left.remove(&part.index).is_none() {
            return;
        }
        let at = if at.is_finite() { at } else { r.crash_trace };
        c.finish = Some(c.finish.map_or(at, |f| f.max(at)));
        if !c.left.is_empty() {
            // The job goes on: a manager after this one must know the
            // part over (as `nodes.rs` journals a part's end).
            if self.cfg.journal {
                self.journal_buf.push(Entry::Ended {
                    t: now.journal,
                    id: part.job,
                    part: part.index,
                    finish: at,
                });
            }
            return;
        }
        let mut c = r.carried.remove(&part.job).expect("held");
        // Every part over unobserved (see `Takeover::crash_trace`).
        let crash = r.crash_trace;
        c.record.finish = Some(c.finish.map_or(crash, |f| f.max(crash)));
        self.carried_over(now, c.record);
    }

    fn carried_over(&mut self, now: Now, record: JobRecord) {
        if self.cfg.journal {
            self.journal_buf.push(Entry::Finished {
                t: now.journal,
                id: None,
                finish: None,
                record: Some(Box::new(record.clone())),
            });
        }
        self.finished += 1;
        if let Some(r) = self.resumed.as_mut() {
            r.done.push(record);
        }
    }

    /// Loses the carried jobs `lost` says, cancelling their other parts.
    fn lose_carried(&mut self, now: Now, lost: Vec<(JobId, String)>) {
        for (job, why) in lost {
            let Some(c) = self.resumed.as_mut().and_then(|r| r.carried.remove(&job)) else {
                continue;
            };
            for (&index, slot) in &c.left {
                if let Some(l) = slot.filter(|&l| self.link_alive(l)) {
                    self.actions.push_back(Action::Send {
                        link: l,
                        msg: ManagerMsg::Cancel {
                            part: PartId { job, index },
                        },
                    });
                }
            }
            let mut rec = c.record;
            rec.lost = true;
            rec.finish = None;
            rec.detail = format!("lost at {:.3}: {why}", now.trace);
            self.carried_over(now, rec);
        }
        self.hand_journal();
    }

    /// A link holding carried parts was lost: their jobs are lost.
    pub(super) fn carried_link_lost(&mut self, now: Now, link: LinkId, host: &str, reason: &str) {
        let Some(r) = self.resumed.as_ref() else {
            return;
        };
        let mut lost: Vec<(JobId, String)> = r
            .carried
            .iter()
            .filter_map(|(&job, c)| {
                c.left.iter().find(|(_, s)| **s == Some(link)).map(|(i, _)| {
                    (
                        job,
                        format!("node process {host} (link {link}) running part {job}/{i} after the manager's restart gone: {reason}"),
                    )
                })
            })
            .collect();
        lost.sort();
        self.lose_carried(now, lost);
    }

    /// Every node process holding a carried part is back: nothing to
    /// wait for.
    fn sweep_if_all_back(&mut self, now: Now) {
        let Some(r) = self.resumed.as_ref() else {
            return;
        };
        let all = r
            .carried
            .values()
            .all(|c| c.left.values().all(Option::is_some));
        if all {
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
        let mut lost: Vec<(JobId, String)> = Vec::new();
        for (&job, c) in &r.carried {
            if let Some((&i, _)) = c.left.iter().find(|(_, s)| s.is_none()) {
                let node = c.record.nodes.get(i as usize).copied().unwrap_or(0);
                let host = r.node_hosts.get(node).map_or("?", String::as_str);
                lost.push((
                    job,
                    format!(
                        "manager crash: node process {host} (node {node}, part {job}/{i}) did not come back within {wait:?} of the manager's restart"
                    ),
                ));
            }
        }
        lost.sort();
        self.lose_carried(now, lost);
        self.check_end(now);
    }

    /// At an abort: every carried job still open is lost with `reason`.
    pub(super) fn abort_carried(&mut self, now: Now, reason: &str) {
        let Some(r) = self.resumed.as_ref() else {
            return;
        };
        let mut lost: Vec<(JobId, String)> = r
            .carried
            .keys()
            .map(|&j| (j, format!("run stopped: {reason}")))
            .collect();
        lost.sort();
        self.lose_carried(now, lost);
    }
}

/// A node process's label: the first word of its `host` (the rest is its
/// address, which a reconnection changes).
fn label_of(host: &str) -> &str {
    host.split(' ').next().unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::super::{CoreConfig, Event, Phase};
    use super::*;
    use common::admission::ManagerCore;
    use common::job::DeadlineType;
    use common::policy::{self, PolicyConfig};
    use common::protocol::{FinishedPart, HeldPart, NodeMsg};
    use common::share::SpareRule;

    fn record(id: JobId, nodes: Vec<usize>) -> JobRecord {
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

    fn at(t: f64) -> Now {
        Now {
            trace: t,
            wall: t,
            journal: t,
        }
    }

    fn node(local: u32) -> NodeInfo {
        NodeInfo {
            local,
            capacity: 1.0,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        }
    }

    /// The old run had node process `a` (nodes 0 and 1) and `b` (node 2);
    /// job 1 ran on node 0, job 2 on node 2, job 3 on node 1, job 4 was
    /// over. `a` comes back as new ids 3 and 4 (0-2 stay taken) still
    /// running job 1's part and no longer holding job 3's: job 1 is kept
    /// (its record now names node 3), job 3 finished unobserved (booked at
    /// the crash, 50). `b` never comes back: when the wait is over job 2
    /// is lost naming it. Job 1 completes at 70 and the run ends with one
    /// record per job.
    #[test]
    fn carried_jobs_are_kept_finished_or_lost_by_what_comes_back() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut done4 = record(4, vec![1]);
        done4.finish = Some(20.0);
        let t = Takeover {
            done: vec![done4.clone()],
            open: vec![record(1, vec![0]), record(2, vec![2]), record(3, vec![1])],
            undecided: Vec::new(),
            unrecoverable: Vec::new(),
            offset: 0.0,
            node_processes: vec![("a".into(), 2), ("b".into(), 1)],
            node_pids: vec![Some(9), Some(10)],
            started: vec![PartId { job: 1, index: 0 }, PartId { job: 3, index: 0 }],
            ended: Vec::new(),
            wait: Duration::from_secs(30),
            crash_trace: 50.0,
            note: "resumed: test".into(),
            trace_now: 60.0,
        };
        let cfg = CoreConfig {
            time_scale: 1.0,
            expect_nodes: 3,
            serve: false,
            journal: true,
            start_timeout: Duration::from_secs(10),
            histogram_timeout: Duration::from_secs(5),
            report_ms: 100,
            heartbeat_ms: 100,
            histogram_ms: 1000,
            spare_rule: SpareRule::default(),
        };
        let mut c = LiveCore::resumed(ManagerCore::new(p), cfg, Vec::new(), t);
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
            Entry::Finished { record: Some(r), .. } if r.id == 3 && r.finish == Some(50.0) && !r.lost)));
        // `b` does not come back: the replay goes on with `a` at the
        // start timeout, and the wait for `b` ends.
        c.handle(at(70.0), Event::Timer(Timer::StartTimeout));
        drain(&mut c);
        assert_eq!(c.phase(), Phase::Replaying);
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
    }

    fn config(expect_nodes: usize) -> CoreConfig {
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
        }
    }

    fn takeover(open: Vec<JobRecord>, processes: Vec<(&str, usize, u32)>) -> Takeover {
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
            trace_now: 60.0,
        }
    }

    fn drain(c: &mut LiveCore) -> Vec<Action> {
        std::iter::from_fn(|| c.poll_action()).collect()
    }

    fn journaled(a: &[Action]) -> Vec<&Entry> {
        a.iter()
            .filter_map(|x| match x {
                Action::Journal(v) => Some(v.iter()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    fn part(job: JobId, index: u32) -> PartId {
        PartId { job, index }
    }

    fn held(job: JobId, index: u32, node: u32) -> HeldPart {
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
    fn come_back(
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
    /// job 5 is lost at 60.1 naming the crash and part 5/1, and its part
    /// 5/0, kept by the answer, is cancelled. Recording job 5 complete
    /// (the earlier behaviour) would claim work that never ran.
    #[test]
    fn a_part_whose_dispatch_died_with_the_manager_loses_its_job() {
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
        let cancel = a.iter().position(|x| {
            matches!(x, Action::Send { link: 1, msg: ManagerMsg::Cancel { part: p } }
                if *p == part(5, 0))
        });
        assert!(answer.is_some() && cancel > answer, "{a:?}");
        let j = journaled(&a);
        assert!(j.iter().any(|e| matches!(e,
            Entry::Finished { record: Some(r), .. } if r.id == 7 && r.finish == Some(50.0) && !r.lost)));
        assert!(j.iter().any(|e| matches!(e,
            Entry::Finished { record: Some(r), .. } if r.id == 5 && r.lost)));
        // Nothing left to wait for: the replay starts and, with no job
        // left, the run ends.
        c.handle(at(61.0), Event::Timer(Timer::StartTimeout));
        drain(&mut c);
        let o = c.outcome();
        assert_eq!(
            o.records.iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![5, 7]
        );
        assert_eq!(
            o.records[0].detail,
            "lost at 60.100: manager crash: the dispatch of part 5/1 to node process a (node 1) \
             died with the manager: a came back without it and the journal holds no start of it"
        );
        assert_eq!(o.records[0].finish, None);
        assert_eq!(o.records[1].finish, Some(50.0));
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
