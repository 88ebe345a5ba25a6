//! A core that takes over an unfinished run (`libratory resume`): the
//! jobs its journal holds as over keep their records; the jobs that were
//! running when the manager died are *carried*: their parts may still run
//! on node processes that rode out the crash, and those processes, once
//! registered again, report them ([`Rejoin`]). The core takes each
//! reported part back, books the parts that finished meanwhile, and
//! records a carried job lost only when a node process holding one of its
//! parts does not come back within the wait (or is lost later).
//!
//! Carried parts are booked here, not in the admission core: its view does
//! not see them (a policy deciding meanwhile sees their nodes as they were
//! without them), which `docs/faults.md` states with the guarantees.

use std::collections::{BTreeMap, HashMap, HashSet};
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
}

/// A job running when the manager died.
pub(super) struct Carried {
    record: JobRecord,
    /// Parts not known to be over: index -> the link that reported it
    /// running (None: not reported yet).
    left: BTreeMap<u32, Option<LinkId>>,
    /// The latest finish of its parts seen.
    finish: Option<Time>,
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
    /// Old node ids whose process came back (its rejoin said `was`).
    back: HashSet<u32>,
    wait: Duration,
    crash_trace: Time,
    note: String,
    /// [`Takeover::crashed`], [`Takeover::restarted`].
    down: (f64, f64),
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
        for (k, (host, n)) in t.node_processes.iter().enumerate() {
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
            wait: t.wait,
            crash_trace: t.crash_trace,
            note: t.note,
            down: (t.crashed, t.restarted),
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
                },
            );
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
    /// finished ones are booked); a part of an old node of this process
    /// that it no longer holds had finished before the manager died (the
    /// old manager booked it). Everything else is dropped.
    pub(super) fn rejoin(&mut self, now: Now, link: LinkId, host: &str, rj: Rejoin) {
        let Some(r) = self.resumed.as_mut() else {
            return self.drop_rejoin(link, host, &rj);
        };
        r.back.extend(rj.was.iter().copied());
        let ids = self
            .links
            .get(&link)
            .map(|l| l.ids.clone())
            .unwrap_or_default();
        let mut keep = Vec::new();
        let mut finished: Vec<(PartId, Time)> = Vec::new();
        let mut moved: Vec<JobId> = Vec::new();
        for p in &rj.running {
            if let Some(c) = r.carried.get_mut(&p.part.job) {
                if let Some(slot) = c.left.get_mut(&p.part.index) {
                    *slot = Some(link);
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
        // before the crash.
        let was: HashSet<u32> = rj.was.iter().copied().collect();
        for (id, c) in &r.carried {
            for (&i, slot) in &c.left {
                let node = c.record.nodes.get(i as usize).map(|&n| n as u32);
                let reported =
                    slot.is_some() || finished.iter().any(|(p, _)| p.job == *id && p.index == i);
                if !reported && node.is_some_and(|n| was.contains(&n)) {
                    finished.push((PartId { job: *id, index: i }, Time::NAN));
                }
            }
        }
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
            self.carried_part_done(now, part, at);
        }
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
            wait: Duration::from_secs(30),
            crash_trace: 50.0,
            note: "resumed: test".into(),
            crashed: 50.0,
            restarted: 55.0,
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
}
