//! The fault injector's reports (`ClientMsg::FaultApplied`): each act is
//! journaled once, at the time it happened (a `fault` entry `replay`
//! reads and a warning for people), and remembered as a note that names
//! the fault in the next loss of the process (or single node) it blames.
//!
//! Reports are delivered at least once: the injector sends one again to
//! the next manager when no `Noted` came back. A report is known by what
//! identifies one application of a fault ([`FaultKey`]: the fault's name,
//! the act, the process and the node), and the core answers one it
//! already has (journaled by it or by a manager before it, whose journal
//! the resumed core read) `Noted` without journaling it again. Its time
//! is not part of the key: a report carries only its age when sent, which
//! each manager turns into a time on its own journal clock, so the two
//! copies of one act differ by the delivery's jitter. None is needed: the
//! injector applies each act of a fault to its target at most once (a
//! crash's kill and restart, a hang's stop and cont, a partition's link
//! and heal, and at most one restart of a process that exits when woken).
//!
//! A carried job lost at the end of a resumed manager's wait for its
//! node process ("did not come back within ...") names the fault the
//! notes hold for that process. A report that comes only after that loss
//! (it waited for the manager behind others) still names it: the job's
//! final record takes the fault's name and the journal gets the record
//! again, whole, with it (the journal is append-only; the last `finished`
//! line of a job is its record for `resume` and `recover`), if the fault
//! happened before the loss.

use std::collections::HashSet;

use common::job::JobId;
use common::protocol::FaultAct;

use super::{Action, ClientId, Entry, LiveCore, Now};

/// What identifies one application of a fault (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FaultKey {
    /// The fault's name.
    pub fault: String,
    /// What was done.
    pub act: FaultAct,
    /// The node process's label.
    pub process: String,
    /// The one node (local index), if not the whole process.
    pub node: Option<u32>,
}

/// A fault report, as the core takes it.
#[derive(Debug, Clone)]
pub(in crate::live::manager) struct FaultReport {
    pub(in crate::live::manager) token: u64,
    pub(in crate::live::manager) key: FaultKey,
    /// The fault's kind (`crash`, `partition`, ...).
    pub(in crate::live::manager) kind: String,
    /// What the injector did, for people.
    pub(in crate::live::manager) what: String,
    /// `slow`: the capacity factor.
    pub(in crate::live::manager) factor: Option<f64>,
    /// Real seconds from the act to the report's sending.
    pub(in crate::live::manager) age_s: f64,
}

/// The core's books of fault reports.
#[derive(Default)]
pub(super) struct FaultBook {
    /// The faults the injector applied that blame the next loss of a node
    /// process (key: its label) or of one node (`LABEL node K`), each
    /// with the fault's name: a lost link, a silent node or a carried
    /// job's process not coming back takes it (and the note is used up).
    notes: Vec<(String, String)>,
    /// Every report journaled in the run (by this manager or one before).
    seen: HashSet<FaultKey>,
    /// Carried jobs lost at the end of the wait for their node process
    /// with no fault known for it then: (its label, the job, the loss's
    /// journal time).
    unexplained: Vec<(String, JobId, f64)>,
    /// Lost jobs' details completed by a report that came after the
    /// loss; the outcome's records take them.
    pub(super) amended: Vec<(JobId, String)>,
}

/// Whether an act blames the next loss of its target (`Some(true)`),
/// clears the blame (`Some(false)`: a hang or partition that ended with
/// the link alive) or leaves it (`None`). `partition`: the fault is one
/// (a `link` act of a delay blames nothing).
pub(super) fn blames(act: FaultAct, partition: bool) -> Option<bool> {
    match act {
        FaultAct::Kill | FaultAct::Stop => Some(true),
        FaultAct::Link if partition => Some(true),
        FaultAct::Cont | FaultAct::Heal => Some(false),
        FaultAct::Restart | FaultAct::Link | FaultAct::Slow | FaultAct::Restore => None,
    }
}

/// The notes' key of a report's target: a single node's loss is blamed
/// under `LABEL node K` (silent.rs), a process's under its label.
pub(super) fn note_key(process: &str, node: Option<u32>) -> String {
    match node {
        Some(k) => format!("{process} node {k}"),
        None => process.to_string(),
    }
}

/// The kind word of a fault's name (`fault 3 (partition of node process
/// 1 at +30 s, line 9)`: `partition`); "" if the name is not one.
pub(super) fn kind_of(fault: &str) -> &str {
    fault
        .split_once('(')
        .and_then(|(_, rest)| rest.split(' ').next())
        .unwrap_or("")
}

/// The note key of the target of a journaled loss warning: `lost node
/// process HOST (link N): ...` (its label) or `lost node G of node
/// process HOST (link N) at ...` (`LABEL node K`, K the local index of
/// node G by `processes`, the run's registrations in order: label, nodes).
pub(super) fn loss_key(text: &str, processes: &[(String, usize)]) -> Option<String> {
    if let Some(rest) = text.strip_prefix("lost node process ") {
        return rest.split(' ').next().map(str::to_string);
    }
    let rest = text.strip_prefix("lost node ")?;
    let (g, rest) = rest.split_once(" of node process ")?;
    let g: usize = g.parse().ok()?;
    let label = rest.split(' ').next()?;
    let mut first = 0;
    for (_, n) in processes {
        if g < first + n {
            return Some(note_key(label, Some((g - first) as u32)));
        }
        first += n;
    }
    None
}

/// Sets the note of `key` as `act` of `fault` says.
fn note(notes: &mut Vec<(String, String)>, key: String, act: FaultAct, fault: &str) {
    let partition = kind_of(fault) == "partition";
    if let Some(on) = blames(act, partition) {
        notes.retain(|(l, _)| *l != key);
        if on {
            notes.push((key, fault.to_string()));
        }
    }
}

impl FaultBook {
    /// The books of a resumed run from its journal: `faults`, its `fault`
    /// entries (time, key); `registered`, its `node` entries (time,
    /// label); `lost`, the losses its warnings journaled (time, the
    /// target's note key, [`loss_key`]). Every journaled report is known;
    /// a fault blames the loss of its target unless the target was lost
    /// after it (that loss was the one it blamed) or its process
    /// registered again (one before cannot explain the loss of what the
    /// process registered since).
    pub(super) fn from_journal(
        faults: &[(f64, FaultKey)],
        registered: &[(f64, String)],
        lost: &[(f64, String)],
    ) -> Self {
        let mut notes = Vec::new();
        for (t, key) in faults {
            let target = note_key(&key.process, key.node);
            let again = registered
                .iter()
                .any(|(at, label)| at > t && *label == key.process);
            let used = lost.iter().any(|(at, k)| at > t && *k == target);
            if again || used {
                notes.retain(|(l, _)| *l != target);
            } else {
                note(&mut notes, target, key.act, &key.fault);
            }
        }
        FaultBook {
            notes,
            seen: faults.iter().map(|(_, k)| k.clone()).collect(),
            ..FaultBook::default()
        }
    }

    /// The fault the notes blame for the loss of `key`'s target, taken
    /// out (the loss is the one it blamed).
    pub(super) fn take_blame(&mut self, key: &str) -> Option<String> {
        let k = self.notes.iter().position(|(l, _)| l == key)?;
        Some(self.notes.remove(k).1)
    }

    /// The fault the notes blame for the loss of `key`'s target, left in
    /// (a later loss is still its).
    pub(super) fn blame_of(&self, key: &str) -> Option<String> {
        self.notes
            .iter()
            .find(|(l, _)| l == key)
            .map(|(_, f)| f.clone())
    }

    /// Carried job `job` was lost at journal time `t` at the end of the
    /// wait for node process `label`, with no fault known for it.
    pub(super) fn unexplained(&mut self, label: &str, job: JobId, t: f64) {
        self.unexplained.push((label.to_string(), job, t));
    }
}

impl LiveCore {
    /// A fault injector reports an act (see the module docs): journaled
    /// once, at the time it happened; answered `Noted` once the journal
    /// holds it ([`Action::Noted`]).
    pub(super) fn fault_applied(&mut self, now: Now, client: ClientId, r: FaultReport) {
        let FaultReport {
            token,
            key,
            kind,
            what,
            factor,
            age_s,
        } = r;
        if !self.faults.seen.insert(key.clone()) {
            tracing::info!(
                "fault report already journaled, answered again: {}: {what}",
                key.fault
            );
            self.actions.push_back(Action::Noted {
                client,
                token,
                entries: Vec::new(),
                text: None,
            });
            return;
        }
        let target = note_key(&key.process, key.node);
        let partition = kind == "partition";
        if let Some(on) = blames(key.act, partition) {
            let notes = &mut self.faults.notes;
            notes.retain(|(l, _)| *l != target);
            if on {
                notes.push((target, key.fault.clone()));
            }
        }
        // A report that waited (for a manager to restart) says how long.
        let late = if age_s >= 0.1 {
            format!(" [reported {age_s:.3} s later]")
        } else {
            String::new()
        };
        let text = format!("fault: {}: {what}{late}", key.fault);
        let t = (now.journal - age_s.max(0.0)).max(0.0);
        let mut entries = Vec::new();
        if self.cfg.journal {
            entries.push(Entry::Fault {
                t,
                act: key.act,
                process: key.process.clone(),
                fault: key.fault.clone(),
                node: key.node,
                factor,
            });
            entries.push(Entry::Warning {
                t,
                text: text.clone(),
            });
        }
        if blames(key.act, partition) == Some(true) && key.node.is_none() {
            self.explain_late(now, t, &key, &mut entries);
        }
        self.actions.push_back(Action::Noted {
            client,
            token,
            entries,
            text: Some(text),
        });
    }

    /// A report of `key`, applied at journal time `t`, that came after
    /// the carried jobs of its process were lost unexplained (the end of
    /// the wait for it): their records name it now (see the module docs).
    fn explain_late(&mut self, now: Now, t: f64, key: &FaultKey, entries: &mut Vec<Entry>) {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.faults.unexplained)
            .into_iter()
            .partition(|(label, _, lost)| *label == key.process && *lost >= t);
        self.faults.unexplained = rest;
        if mine.is_empty() {
            return;
        }
        // The loss is the one the fault blamed.
        self.faults.take_blame(&key.process);
        let mut jobs = Vec::new();
        for (_, job, _) in mine {
            let Some(rec) = self.core.record(job) else {
                continue;
            };
            let mut record = rec.clone();
            record.detail = format!(
                "{}, after {} (reported after the loss)",
                record.detail, key.fault
            );
            jobs.push(job);
            self.faults.amended.push((job, record.detail.clone()));
            if self.cfg.journal {
                entries.push(Entry::Finished {
                    t: now.journal,
                    id: None,
                    finish: None,
                    record: Some(Box::new(record)),
                });
            }
        }
        self.warnings.push(format!(
            "{} came after the loss of its node process {}'s carried jobs {jobs:?}: their records name it",
            key.fault, key.process
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::resumed::tests::{at, come_back, config, drain, held, record, takeover};
    use super::super::{Event, Timer};
    use super::*;
    use common::admission::ManagerCore;
    use common::policy::{self, PolicyConfig};
    use common::protocol::ClientMsg;

    const CRASH: &str = "fault 1 (crash of node process 0 at +30 s, line 5)";
    const LATER: &str = "fault 2 (crash of node process 0 at +80 s, line 9)";

    fn key(fault: &str, act: FaultAct, process: &str) -> FaultKey {
        FaultKey {
            fault: fault.into(),
            act,
            process: process.into(),
            node: None,
        }
    }

    /// `client` reports `act` of `fault` on process `a`, `age_s` old, at
    /// `t`: the actions.
    fn report(
        c: &mut LiveCore,
        t: f64,
        client: ClientId,
        token: u64,
        k: FaultKey,
        age_s: f64,
    ) -> Vec<Action> {
        c.handle(
            at(t),
            Event::Client {
                client,
                msg: ClientMsg::FaultApplied {
                    token,
                    kind: kind_of(&k.fault).into(),
                    fault: k.fault,
                    process: k.process,
                    act: k.act,
                    what: "done".into(),
                    node: k.node,
                    factor: None,
                    age_s,
                },
            },
        );
        drain(c)
    }

    /// The `Noted` answers among `a`: (client, token, entries).
    fn noted(a: &[Action]) -> Vec<(ClientId, u64, &[Entry])> {
        a.iter()
            .filter_map(|x| match x {
                Action::Noted {
                    client,
                    token,
                    entries,
                    ..
                } => Some((*client, *token, entries.as_slice())),
                _ => None,
            })
            .collect()
    }

    /// The old run had `a` (pid 9, node 0: job 1) and `b` (pid 10, node
    /// 1: job 2), the wait is 30 s. `b` comes back at 60 with job 2's part
    /// and the replay goes on at 60.1 (one node expected); `a` does not.
    fn two_processes(faults: Vec<(f64, FaultKey)>) -> LiveCore {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(
            vec![record(1, vec![0]), record(2, vec![1])],
            vec![("a", 1, 9), ("b", 1, 10)],
        );
        t.node_times = vec![5.0, 6.0];
        t.faults = faults;
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(1), Vec::new(), t);
        drain(&mut c);
        come_back(
            &mut c,
            60.0,
            1,
            "b",
            10,
            1,
            vec![1],
            vec![held(2, 0, 0)],
            Vec::new(),
        );
        c
    }

    fn detail(c: &mut LiveCore, job: JobId) -> String {
        let o = c.outcome();
        o.records
            .iter()
            .find(|r| r.id == job)
            .unwrap()
            .detail
            .clone()
    }

    const GONE: &str = "lost at 91.000: manager crash: node process a (node 0, part 1/0) did not \
                        come back within 30s of the manager's restart";

    /// A report a manager journaled and died before answering comes
    /// again: answered `Noted` with nothing journaled. A new one is
    /// journaled once, at the time it happened (61 - 1), and the same one
    /// again (the injector retrying) is not.
    #[test]
    fn a_report_the_journal_holds_is_answered_and_not_journaled_again() {
        let kill = key(CRASH, FaultAct::Kill, "a");
        let mut c = two_processes(vec![(40.0, kill.clone())]);
        let a = report(&mut c, 61.0, 7, 1, kill, 21.0);
        let n = noted(&a);
        assert!(matches!(n[..], [(7, 1, [])]), "{a:?}");
        let restart = key(CRASH, FaultAct::Restart, "a");
        let a = report(&mut c, 61.0, 7, 2, restart.clone(), 1.0);
        let n = noted(&a);
        assert_eq!(n.len(), 1);
        assert!(
            matches!(n[0].2, [
            Entry::Fault { t, act: FaultAct::Restart, .. },
            Entry::Warning { t: w, text },
        ] if *t == 60.0 && *w == 60.0 && text == &format!("fault: {CRASH}: done [reported 1.000 s later]")),
            "{n:?}"
        );
        let a = report(&mut c, 62.0, 8, 1, restart, 2.0);
        let n = noted(&a);
        assert!(matches!(n[..], [(8, 1, [])]), "{a:?}");
        // The journaled kill (after `a`'s last registration at 5) blames
        // `a`'s not coming back.
        c.handle(at(91.0), Event::Timer(Timer::Carried));
        drain(&mut c);
        assert_eq!(detail(&mut c, 1), format!("{GONE}, after {CRASH}"));
    }

    /// A kill journaled before the process registered again (at 45)
    /// explains nothing of what it registered since.
    #[test]
    fn a_fault_before_the_last_registration_blames_nothing() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(vec![record(1, vec![1])], vec![("a", 1, 9), ("a", 1, 11)]);
        t.node_times = vec![5.0, 45.0];
        t.faults = vec![(40.0, key(CRASH, FaultAct::Kill, "a"))];
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(1), Vec::new(), t);
        assert!(c.faults.take_blame("a").is_none());
    }

    /// A kill the manager before journaled, and whose loss it journaled
    /// (at 42), blames nothing more; nor does a node's crash whose node
    /// (id 1: `a`'s local 1) it gave up.
    #[test]
    fn a_fault_whose_loss_the_journal_holds_blames_nothing_more() {
        let lost = [
            "lost node process a 127.0.0.1:9 (link 1): heartbeat timeout",
            "lost node 1 of node process a 127.0.0.1:9 (link 1) at 41.000: silent",
        ];
        let processes = [("a 127.0.0.1:9".to_string(), 2)];
        let lost: Vec<(f64, String)> = lost
            .iter()
            .map(|w| (42.0, loss_key(w, &processes).unwrap()))
            .collect();
        assert_eq!(lost[1].1, "a node 1");
        let node = FaultKey {
            node: Some(1),
            ..key(CRASH, FaultAct::Kill, "a")
        };
        let faults = [(40.0, key(CRASH, FaultAct::Kill, "a")), (40.0, node)];
        let mut b = FaultBook::from_journal(&faults, &[(5.0, "a".into())], &lost);
        assert!(b.take_blame("a").is_none() && b.take_blame("a node 1").is_none());
        // Without the losses both blame.
        let mut b = FaultBook::from_journal(&faults, &[(5.0, "a".into())], &[]);
        assert_eq!(b.take_blame("a").as_deref(), Some(CRASH));
        assert_eq!(b.take_blame("a node 1").as_deref(), Some(CRASH));
    }

    /// `a` crashed at 57, while no manager ran; the report reaches the
    /// resumed manager at 62, before the wait ends at 91: the loss names
    /// the fault.
    #[test]
    fn a_process_crashed_while_no_manager_ran_is_lost_naming_the_fault() {
        let mut c = two_processes(Vec::new());
        let a = report(&mut c, 62.0, 7, 1, key(CRASH, FaultAct::Kill, "a"), 5.0);
        assert_eq!(noted(&a)[0].2.len(), 2);
        c.handle(at(91.0), Event::Timer(Timer::Carried));
        drain(&mut c);
        assert_eq!(detail(&mut c, 1), format!("{GONE}, after {CRASH}"));
    }

    /// The report comes only at 95, after the loss at 91: a fault applied
    /// after the loss (fault 2, at 95) explains nothing; fault 1, applied
    /// at 57, completes the record, journaled again whole with it.
    #[test]
    fn a_report_after_the_loss_completes_its_record() {
        let mut c = two_processes(Vec::new());
        c.handle(at(91.0), Event::Timer(Timer::Carried));
        drain(&mut c);
        let a = report(&mut c, 95.0, 7, 1, key(LATER, FaultAct::Kill, "a"), 0.0);
        assert_eq!(noted(&a)[0].2.len(), 2, "{a:?}");
        let a = report(&mut c, 95.0, 7, 2, key(CRASH, FaultAct::Kill, "a"), 38.0);
        let want = format!("{GONE}, after {CRASH} (reported after the loss)");
        let n = noted(&a);
        assert!(
            matches!(n[0].2, [
            Entry::Fault { t, .. },
            Entry::Warning { .. },
            Entry::Finished { record: Some(r), .. },
        ] if *t == 57.0 && r.id == 1 && r.lost && r.detail == want),
            "{n:?}"
        );
        assert_eq!(detail(&mut c, 1), want);
    }
}

#[cfg(test)]
mod down_nodes {
    use super::super::resumed::tests::{at, config, drain, held, record, takeover};
    use super::super::{Event, Timer};
    use super::*;
    use common::admission::ManagerCore;
    use common::policy::{self, PolicyConfig};
    use common::protocol::{ClientMsg, DownNode, NodeInfo, NodeMsg, Rejoin};
    use std::time::Duration;

    const NODE_CRASH: &str = "fault 3 (crash of node 0 at +40 s, line 7)";

    /// Process `a` (pid 9) had nodes 0 (job 1) and 1 (job 2), both parts
    /// journaled started; link timeout 5 s. Node 0 crashed 2 s before `a`
    /// rejoins at 60 (its report came at 59), node 1 has been held for
    /// 1 s. The rejoin reports job 2's part running on node 1 and both
    /// nodes down. Job 1 is lost at once naming the node's fault (not
    /// booked over at the crash, as a part that finished unobserved
    /// would be); job 2 is taken back. Both nodes (new ids 2, 3) count as
    /// silent since they went so: the heartbeat at 63.5 leaves node 2
    /// unvouched for 5.5 s (lost), node 3 for 4.5 s (kept); at 64.5 node 3
    /// has 5.5 s and is lost, and job 2 with it. Counted from the rejoin
    /// neither would be lost before 65.
    #[test]
    fn nodes_crashed_or_held_while_no_manager_ran_are_what_they_are() {
        let p = policy::build("libra", &PolicyConfig::default(), &[]).unwrap();
        let mut t = takeover(
            vec![record(1, vec![0]), record(2, vec![1])],
            vec![("a", 2, 9)],
        );
        t.started = vec![
            common::protocol::PartId { job: 1, index: 0 },
            common::protocol::PartId { job: 2, index: 0 },
        ];
        let mut c = LiveCore::resumed(ManagerCore::new(p), config(2), Vec::new(), t)
            .with_node_watch(Duration::from_secs(5));
        drain(&mut c);
        c.handle(
            at(59.0),
            Event::Client {
                client: 7,
                msg: ClientMsg::FaultApplied {
                    token: 1,
                    fault: NODE_CRASH.into(),
                    kind: "crash".into(),
                    process: "a".into(),
                    act: FaultAct::Kill,
                    what: "node 0 crashed".into(),
                    node: Some(0),
                    factor: None,
                    age_s: 1.0,
                },
            },
        );
        drain(&mut c);
        let nodes = (0..2)
            .map(|local| NodeInfo {
                local,
                capacity: 1.0,
                speed: 1.0,
                memory_kb: 1 << 20,
                disk_mb: 1 << 10,
            })
            .collect();
        c.handle(
            at(60.0),
            Event::Connected {
                link: 1,
                host: "a".into(),
                pid: 9,
                nodes,
            },
        );
        drain(&mut c);
        c.handle(
            at(60.0),
            Event::FromNode {
                link: 1,
                msgs: vec![NodeMsg::Rejoin(Rejoin {
                    was: vec![0, 1],
                    away_s: 3.0,
                    why: "lost".into(),
                    running: vec![held(2, 0, 1)],
                    finished: Vec::new(),
                    down: vec![
                        DownNode {
                            node: 0,
                            crashed: true,
                            silent_s: 2.0,
                        },
                        DownNode {
                            node: 1,
                            crashed: false,
                            silent_s: 1.0,
                        },
                    ],
                })],
            },
        );
        let a = drain(&mut c);
        assert!(
            a.iter().any(|x| matches!(x, Action::Send { msg: common::protocol::ManagerMsg::RejoinAnswer { keep, .. }, .. }
                if *keep == vec![common::protocol::PartId { job: 2, index: 0 }])),
            "{a:?}"
        );
        let beat = |c: &mut LiveCore, t: f64| {
            c.handle(
                at(t),
                Event::FromNode {
                    link: 1,
                    msgs: vec![
                        NodeMsg::Silent { nodes: vec![2, 3] },
                        NodeMsg::Heartbeat { seq: 1 },
                    ],
                },
            );
            c.handle(at(t), Event::Timer(Timer::Tick));
            drain(c);
        };
        beat(&mut c, 63.5);
        let open = |c: &LiveCore, job| c.core.record(job).is_some_and(|r| !r.lost);
        assert!(open(&c, 2), "node 3 silent 4.5 s: kept");
        beat(&mut c, 64.5);
        assert!(!open(&c, 2), "node 3 silent 5.5 s: lost");
        let o = c.outcome();
        let detail = |job| {
            o.records
                .iter()
                .find(|r| r.id == job)
                .unwrap()
                .detail
                .clone()
        };
        assert_eq!(
            detail(1),
            format!(
                "lost at 60.000: manager crash: node 0 (local 0) of node process a crashed while it \
                 had no manager: its part 1/0 is gone, after {NODE_CRASH}"
            )
        );
        assert_eq!(
            detail(2),
            "lost at 64.500: node 3 of node process a (link 1) gone: silent for more than 5s (no \
             heartbeat vouched for it)"
        );
    }
}
