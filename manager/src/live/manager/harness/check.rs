//! The invariants every harness run must keep, whatever its faults:
//! - the run ends by itself, and every frame decodes;
//! - every submitted job has exactly one final record (in the outcome and
//!   one `finished` entry in the journal), and the counters agree (every
//!   job submitted, decided and finished once);
//! - no part runs twice (placed on two nodes, or twice on one), and no
//!   part completes twice;
//! - no accepted job is dropped silently: each completed (every part of it
//!   finished its work on a node) or was lost with a reason naming a
//!   fault of this run ("fault #k" of the faults that happened);
//! - across a manager crash: a job whose node processes survived it (the
//!   incarnations holding its parts still alive when it was lost) is
//!   never lost to it; a job lost to it ("manager crash" in its reason)
//!   is only one of a run whose manager crashed, and one lost because a
//!   part's dispatch died with the manager names a part whose dispatch
//!   did (a partition held it when the manager crashed); none is, in
//!   fact, since the restarted manager sends such a part again to its
//!   node when its process comes back, and the harness's processes come
//!   back with all their nodes; the other checks hold
//!   over every manager of the run together (one record, one journal end,
//!   no part placed or completed twice, a carried job recorded complete
//!   only when its parts finished on their nodes);
//! - a rejected job ran nothing;
//! - the shares on every node never added up to more than its capacity,
//!   and an exclusive (space-shared) part never shared its node (a part
//!   awaiting a rejoin's answer not counted: see docs/testing.md);
//! - when the run ends no part is left on a node (a lost job's other
//!   parts were cancelled and withdrawn).

use std::collections::{BTreeSet, HashMap};

use common::protocol::PartId;

use super::world::Run;

/// What broke, in words (one line each).
#[derive(Debug)]
pub(in crate::live::manager) struct Violation {
    pub(in crate::live::manager) seed: u64,
    pub(in crate::live::manager) what: Vec<String>,
}

/// Checks `run` (see the module header); `Err` lists every violation.
pub(in crate::live::manager) fn check(run: &Run) -> Result<(), Violation> {
    let mut v = Vec::new();
    let n = run.submitted.len();
    if !run.finished {
        v.push(format!(
            "the run did not end by itself (counts {:?})",
            run.counts
        ));
    }
    for e in &run.codec_errors {
        v.push(format!("codec: {e}"));
    }
    let (total, submitted, decided, finished) = run.counts;
    if (total, submitted, decided, finished) != (n, n, n, n) {
        v.push(format!(
            "counters (total, submitted, decided, finished) = {:?}, expected all {n}",
            run.counts
        ));
    }
    let records = run.outcome.as_ref().map_or(&[][..], |o| &o.records[..]);
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for r in records {
        *seen.entry(r.id).or_default() += 1;
    }
    for &id in &run.submitted {
        match seen.get(&id) {
            Some(1) => {}
            Some(k) => v.push(format!("job {id}: {k} records")),
            None => v.push(format!("job {id}: no record")),
        }
        match run.journal_finished.get(&id) {
            Some(1) => {}
            Some(k) => v.push(format!("job {id}: {k} finished entries in the journal")),
            None => v.push(format!("job {id}: no finished entry in the journal")),
        }
    }
    let ids: BTreeSet<u64> = run.submitted.iter().copied().collect();
    for id in seen.keys().filter(|id| !ids.contains(id)) {
        v.push(format!("job {id}: a record of a job never submitted"));
    }
    for (part, at) in &run.placements {
        if at.len() > 1 {
            v.push(format!(
                "part {}/{} placed {} times (process, incarnation, node): {at:?}",
                part.job,
                part.index,
                at.len()
            ));
        }
    }
    for (part, k) in &run.completions {
        if *k > 1 {
            v.push(format!(
                "part {}/{} completed {k} times",
                part.job, part.index
            ));
        }
    }
    // Each fault report journaled once, though a manager crash made the
    // injector send one again.
    for (key, n) in &run.journal_faults {
        if *n > 1 {
            v.push(format!(
                "{} ({:?} of {}): {n} fault entries in the journal",
                key.fault, key.act, key.process
            ));
        }
    }
    for key in &run.reported {
        if !run.journal_faults.contains_key(key) {
            v.push(format!(
                "{} ({:?} of {}): reported, not journaled",
                key.fault, key.act, key.process
            ));
        }
    }
    let happened: BTreeSet<&str> = run.happened.iter().map(String::as_str).collect();
    for r in records {
        let parts = (0..r.processors).map(|index| PartId { job: r.id, index });
        if !r.accepted {
            if r.lost || r.finish.is_some() {
                v.push(format!("job {}: rejected but lost or finished", r.id));
            }
            if parts.clone().any(|p| run.placements.contains_key(&p)) {
                v.push(format!("job {}: rejected but a part was placed", r.id));
            }
        } else if r.lost && r.detail.contains(MANAGER_CRASH) {
            // Lost because a node process did not come back after the
            // manager's restart: one must have crashed, and one holding a
            // part of it must have died before the job was lost.
            if run.manager_crashes.is_empty() {
                v.push(format!(
                    "job {}: lost to a manager crash in a run whose manager never crashed: {}",
                    r.id, r.detail
                ));
            }
            let lost_at = lost_at(&r.detail).unwrap_or(f64::INFINITY);
            let holders: Vec<(usize, u32)> = parts
                .clone()
                .flat_map(|p| run.placements.get(&p).into_iter().flatten())
                .map(|&(process, inc, _)| (process, inc))
                .collect();
            // A part never placed (its dispatch died with the manager, or
            // went to a process already dead) proves nothing.
            let survived = holders.len() >= r.processors as usize
                && holders
                    .iter()
                    .all(|h| run.deaths.get(h).is_none_or(|&d| d > lost_at));
            if r.detail.contains(DISPATCH_DIED)
                && !named_part(&r.detail).is_some_and(|p| run.dispatches_died.contains(&p))
            {
                v.push(format!(
                    "job {}: lost to a dispatch that died with the manager, but no dispatch of the \
                     part named died: {}",
                    r.id, r.detail
                ));
            }
            // Such a part is sent again when its process comes back; its
            // job is lost only if its node is not there to take it, and
            // the harness's processes always come back with all their
            // nodes (a node that crashed meanwhile loses its parts under
            // another reason).
            if r.detail.contains(DISPATCH_DIED) {
                v.push(format!(
                    "job {}: lost to a dispatch that died with the manager though its process \
                     came back with all its nodes: the part should have been sent again: {}",
                    r.id, r.detail
                ));
            }
            // A fault it names (the injector's report of the process's
            // crash or partition) is one of the run's.
            if !fault_names(&r.detail)
                .iter()
                .all(|f| happened.contains(f.as_str()))
            {
                v.push(format!(
                    "job {}: lost to a manager crash naming a fault not of this run ({:?}): {}",
                    r.id, run.happened, r.detail
                ));
            }
            if survived {
                v.push(format!(
                    "job {}: lost to a manager crash though the node processes holding its parts \
                     (process, incarnation) {holders:?} survived it: {}",
                    r.id, r.detail
                ));
            }
        } else if r.lost {
            let named = fault_names(&r.detail);
            if named.is_empty() || !named.iter().all(|f| happened.contains(f.as_str())) {
                v.push(format!(
                    "job {}: lost with a reason naming no fault of this run ({:?}; faults: {:?}): {}",
                    r.id, named, run.happened, r.detail
                ));
            }
        } else if r.finish.is_none() || !run.journal_finished.contains_key(&r.id) {
            // A job still open may carry the finish of its parts so far.
            v.push(format!(
                "job {}: accepted, neither completed nor lost",
                r.id
            ));
        } else {
            let missing: Vec<u32> = parts
                .filter(|p| !run.completions.contains_key(p))
                .map(|p| p.index)
                .collect();
            if !missing.is_empty() {
                v.push(format!(
                    "job {}: recorded complete but parts {missing:?} never finished on a node (placed: {:?})",
                    r.id,
                    missing.iter().map(|&index| run.placements.get(&PartId { job: r.id, index })).collect::<Vec<_>>()
                ));
            }
        }
    }
    for what in &run.over_capacity {
        v.push(format!("over capacity: {what}"));
    }
    for (process, parts) in &run.leftover {
        v.push(format!(
            "p{process}: parts still on its nodes at the end, every job over: {:?}",
            parts
                .iter()
                .map(|p| format!("{}/{}", p.job, p.index))
                .collect::<Vec<_>>()
        ));
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(Violation {
            seed: run.scenario.seed,
            what: v,
        })
    }
}

/// What a restarted manager says of a carried job whose node process did
/// not come back (`core/resumed.rs`'s sweep).
const MANAGER_CRASH: &str = "manager crash";

/// What it says of a carried job one of whose parts' dispatch died with
/// the crashed manager (its process came back without it).
const DISPATCH_DIED: &str = "died with the manager";

/// The trace time in a lost record's "lost at T: ..." detail.
fn lost_at(detail: &str) -> Option<f64> {
    let rest = &detail[detail.find("lost at ")? + "lost at ".len()..];
    rest[..rest.find(':')?].parse().ok()
}

/// The part a manager crash's detail names first ("part J/I").
fn named_part(detail: &str) -> Option<PartId> {
    let rest = &detail[detail.find("part ")? + "part ".len()..];
    let (job, rest) = rest.split_once('/')?;
    let index: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(PartId {
        job: job.parse().ok()?,
        index: index.parse().ok()?,
    })
}

/// The "fault #k" names in `detail`.
fn fault_names(detail: &str) -> Vec<String> {
    detail
        .match_indices("fault #")
        .map(|(i, m)| {
            let digits: String = detail[i + m.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            format!("{m}{digits}")
        })
        .collect()
}
