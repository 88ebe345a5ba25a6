//! A run's records rebuilt from its journal: the last record of each
//! job wins, a completion's finish put in, and a job whose last entry is
//! not final gets an honest status.

use std::collections::BTreeMap;

use common::job::JobId;
use common::metrics::JobRecord;
use common::time::Time;

use super::format::Entry;
use super::reader::Contents;

/// How far a job got, by its last journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Submitted,
    Decided,
    Started,
    Finished,
}

/// The records of a run rebuilt from its journal.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// One record per submitted job, in arrival order (ties by id), on
    /// the workload's axis (as a finished run's).
    pub records: Vec<JobRecord>,
    /// Jobs submitted but not decided when the journal ends: recorded as
    /// not accepted and lost, with the reason in `detail`.
    pub undecided: Vec<JobId>,
    /// Jobs accepted but not over when the journal ends: recorded as lost
    /// (no finish), with the reason in `detail`.
    pub unfinished: Vec<JobId>,
    /// Node processes that registered: (label, emulated nodes).
    pub node_processes: Vec<(String, usize)>,
    /// Trace seconds from the clock's start to the replay start.
    pub replay_offset: Time,
    /// Real seconds from the replay start to the last entry (to the end,
    /// for a run that ended).
    pub wall_seconds: f64,
    /// Whether the run ended by itself (an `end` entry).
    pub ended: bool,
    /// Whether its replay started (a `replay` entry): before it, no job
    /// was submitted and nothing ran.
    pub replay_started: bool,
    /// The run's warnings, in order.
    pub warnings: Vec<String>,
}

/// `detail` of a job the manager never decided.
pub const UNDECIDED: &str =
    "undecided: the manager stopped before deciding (record recovered from the journal)";
/// `detail` of an accepted job that was not over.
pub const UNFINISHED: &str =
    "running when the manager stopped: outcome unknown (record recovered from the journal)";

/// Rebuilds every submitted job's record: the last record journaled for
/// each job wins; a job whose last entry is not final is marked lost with
/// [`UNDECIDED`] or [`UNFINISHED`] in `detail` (a job rejected at its
/// decision is final even if its `finished` entry was lost).
pub fn rebuild(c: &Contents) -> Rebuilt {
    let mut jobs: BTreeMap<JobId, (Stage, JobRecord)> = BTreeMap::new();
    let mut nodes = Vec::new();
    let mut offset = 0.0;
    let mut replay_t = None;
    let mut last_t: f64 = 0.0;
    let mut end = None;
    let mut warnings = Vec::new();
    for e in &c.entries {
        let (t, stage, record) = match e {
            Entry::Header(_) => continue,
            Entry::Node {
                t, host, nodes: n, ..
            } => {
                nodes.push((host.clone(), *n));
                (*t, None, None)
            }
            Entry::Replay { t, offset: o } => {
                offset = *o;
                replay_t = Some(*t);
                (*t, None, None)
            }
            Entry::Submitted { t, record, .. } => (*t, Some(Stage::Submitted), Some(record)),
            Entry::Decided { t, record } => (*t, Some(Stage::Decided), Some(record)),
            Entry::Started {
                t,
                record: Some(record),
                ..
            } => (*t, Some(Stage::Started), Some(&**record)),
            Entry::Started {
                t, id: Some(id), ..
            } => {
                // The job's record stands; only its stage moves on (never
                // back from `finished`: a start can be reported after the
                // part's end).
                if let Some(slot) = jobs.get_mut(id) {
                    slot.0 = slot.0.max(Stage::Started);
                }
                (*t, None, None)
            }
            Entry::Started { t, .. } => (*t, None, None),
            Entry::Finished {
                t,
                record: Some(record),
                ..
            } => (*t, Some(Stage::Finished), Some(&**record)),
            Entry::Finished {
                t,
                id: Some(id),
                finish,
                ..
            } => {
                // The decided record, finished. The writer uses this form
                // only after the job's `decided` entry.
                match jobs.get_mut(id) {
                    Some(slot) => {
                        slot.0 = Stage::Finished;
                        slot.1.finish = *finish;
                    }
                    None => warnings.push(format!(
                        "journal: job {id} finished with no record journaled before: left out"
                    )),
                }
                (*t, None, None)
            }
            Entry::Finished { t, .. } => (*t, None, None),
            Entry::Fault { t, .. }
            | Entry::Ended { t, .. }
            | Entry::Restart { t, .. }
            | Entry::Histograms { t, .. } => (*t, None, None),
            Entry::Warning { t, text } => {
                // Journals written before the run's own shutdown stopped
                // being a warning hold its goodbyes: not the run's.
                let goodbye = format!("left: {}", common::protocol::GOODBYE_SHUTDOWN);
                if !text.ends_with(&goodbye) {
                    warnings.push(text.clone());
                }
                (*t, None, None)
            }
            Entry::End { t, wall_seconds } => {
                end = Some(*wall_seconds);
                (*t, None, None)
            }
        };
        last_t = last_t.max(t);
        if let (Some(stage), Some(r)) = (stage, record) {
            let slot = jobs.entry(r.id).or_insert((stage, r.clone()));
            // Entries are in order; a late `started` never undoes a
            // `finished`.
            if stage >= slot.0 || slot.0 != Stage::Finished {
                *slot = (stage.max(slot.0), r.clone());
            }
        }
    }
    let mut undecided = Vec::new();
    let mut unfinished = Vec::new();
    let mut records = Vec::with_capacity(jobs.len());
    for (id, (stage, mut r)) in jobs {
        let rejected = !r.accepted && r.reason.is_some();
        if stage == Stage::Finished || rejected {
            // final
        } else if stage == Stage::Submitted && !r.accepted {
            undecided.push(id);
            r.lost = true;
            r.detail = UNDECIDED.into();
        } else {
            unfinished.push(id);
            r.lost = true;
            r.finish = None;
            r.detail = UNFINISHED.into();
        }
        r.submit -= offset;
        r.decided_at -= offset;
        r.start = r.start.map(|t| t - offset);
        r.finish = r.finish.map(|t| t - offset);
        records.push(r);
    }
    // In arrival order, as a run's (ties by id).
    records.sort_by(|a, b| a.submit.total_cmp(&b.submit).then(a.id.cmp(&b.id)));
    let wall_seconds = end.unwrap_or_else(|| replay_t.map_or(0.0, |r| (last_t - r).max(0.0)));
    Rebuilt {
        records,
        undecided,
        unfinished,
        node_processes: nodes,
        replay_offset: offset,
        replay_started: replay_t.is_some(),
        wall_seconds,
        ended: end.is_some(),
        warnings,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::testkit::sample;
    use crate::live::journal::{parse, read};
    use std::path::Path;

    #[test]
    fn rebuilds_one_record_per_job_with_honest_statuses() {
        let (_d, path) = sample();
        let c = read(&path).unwrap();
        assert_eq!(c.torn_line, None);
        assert_eq!(c.header.seed, 7);
        let r = rebuild(&c);
        let ids: Vec<JobId> = r.records.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        // Shifted to the workload's axis by the replay offset (10).
        assert_eq!(r.records[0].submit, 1.0);
        assert_eq!(r.records[0].finish, Some(5.0));
        assert!(r.records[0].completed());
        assert!(!r.records[1].lost && !r.records[1].accepted);
        assert_eq!(r.unfinished, vec![3]);
        assert!(r.records[2].lost && r.records[2].finish.is_none());
        assert_eq!(r.records[2].detail, UNFINISHED);
        assert_eq!(r.undecided, vec![4]);
        assert_eq!(r.records[3].detail, UNDECIDED);
        assert_eq!(r.node_processes, vec![("h-0 (127.0.0.1:9)".into(), 2)]);
        assert!(!r.ended);
        assert_eq!(r.warnings, vec!["h-1 left: lost".to_string()]);
        assert!((r.wall_seconds - 0.6).abs() < 1e-9);
    }

    /// An entry of the sample's job 1 written the way journals did before
    /// ids replaced records: `head`, then the job's `decided` record.
    fn with_decided_record(text: &str, head: &str) -> String {
        let decided = text
            .lines()
            .find(|l| l.contains("\"decided\"") && l.contains("\"id\":1,"))
            .unwrap();
        format!("{head}{}", &decided[decided.find("\"record\":").unwrap()..])
    }

    /// The journal at `path` and `other` rebuild the same records.
    fn assert_rebuilt_alike(path: &Path, other: &str) {
        let ours = rebuild(&read(path).unwrap());
        let theirs = rebuild(&parse(path, other.as_bytes()).unwrap());
        assert_eq!(
            serde_json::to_string(&ours.records).unwrap(),
            serde_json::to_string(&theirs.records).unwrap()
        );
    }

    /// Journals written before `started` lines lost their record still
    /// read and rebuild the same; a start reported after the part's end
    /// does not reopen the job.
    #[test]
    fn started_lines_of_either_shape_rebuild_alike() {
        let (_d, path) = sample();
        let text = std::fs::read_to_string(&path).unwrap();
        let new_line = text.lines().find(|l| l.contains("\"started\"")).unwrap();
        assert_eq!(new_line, r#"{"e":"started","t":0.4,"part":0,"id":1}"#);
        let old_line = with_decided_record(&text, "{\"e\":\"started\",\"t\":0.4,\"part\":0,");
        assert_rebuilt_alike(&path, &text.replacen(new_line, &old_line, 1));
        // Job 1's start arriving after its end (a node can report both in
        // one batch, the start second).
        let late = format!("{text}{new_line}\n");
        let r = rebuild(&parse(&path, late.as_bytes()).unwrap());
        assert!(r.records[0].completed() && !r.unfinished.contains(&1));
    }

    /// A completion journaled with its id and finish rebuilds as the
    /// decided record with that finish: what a whole final record would
    /// give (journals written before carry it).
    #[test]
    fn finished_lines_of_either_shape_rebuild_alike() {
        let (_d, path) = sample();
        let text = std::fs::read_to_string(&path).unwrap();
        let new_line = text.lines().find(|l| l.contains("\"finished\"")).unwrap();
        assert_eq!(new_line, r#"{"e":"finished","t":0.5,"id":1,"finish":15.0}"#);
        let old_line = with_decided_record(&text, "{\"e\":\"finished\",\"t\":0.5,")
            .replace("\"finish\":null", "\"finish\":15.0");
        assert_rebuilt_alike(&path, &text.replacen(new_line, &old_line, 1));
        assert_eq!(rebuild(&read(&path).unwrap()).records[0].finish, Some(5.0));
        // One with neither shape, or both, is an error naming its line.
        let n = text.lines().position(|l| l == new_line).unwrap() + 1;
        for bad in [
            r#"{"e":"finished","t":0.5,"id":1}"#,
            r#"{"e":"finished","t":0.5}"#,
        ] {
            let e = parse(&path, text.replacen(new_line, bad, 1).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("line {n}:")) && e.contains("`finished`"),
                "{e}"
            );
        }
        // One for a job never journaled before is left out, with a
        // warning, not taken for a record.
        let stray = format!("{text}{}\n", new_line.replace("\"id\":1", "\"id\":99"));
        let r = rebuild(&parse(&path, stray.as_bytes()).unwrap());
        assert_eq!(r.records.len(), 4);
        assert!(
            r.warnings.iter().any(|w| w.contains("job 99")),
            "{:?}",
            r.warnings
        );
    }
}
