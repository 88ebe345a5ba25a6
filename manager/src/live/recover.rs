//! `libratory recover`: a live run's result files rebuilt from its
//! journal, and the same for an interrupted run found where a new one
//! starts.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use common::metrics::Summary;
use common::workload;
use serde::Serialize;

use crate::live::journal::{self, JOURNAL};
use crate::live::run_files::{LiveFacts, LiveRunConfig};
use crate::results::output;
use crate::results::rundir::{self, Invocation, Log, Manifest, NodeProcessFact, PolicyResult, Run};

/// Before a run writes into `out`: if an earlier run there left a journal
/// without its `end` (the manager was killed), the new run is refused,
/// pointing to `resume` (which continues that run) and `recover` (which
/// rebuilds its results): starting over would throw away a run that can
/// still go on. Once recovered (its `manifest.json` says `recovered`), the
/// journal and the node logs move into `out/interrupted-<start time>/`
/// with its result files rebuilt there, so the new run overwrites nothing
/// of it.
pub fn recover_interrupted(out: &Path, log: &mut Log) -> Result<()> {
    let path = out.join(JOURNAL);
    if !path.is_file() {
        return Ok(());
    }
    if journal::in_use(&path) {
        bail!(
            "{}: a manager is still writing it (a run going in {}): give another --out",
            path.display(),
            out.display()
        );
    }
    let c = journal::read(&path).with_context(|| {
        format!(
            "an earlier run's journal in {} is unreadable: move it away or use another --out",
            out.display()
        )
    })?;
    let r = journal::rebuild(&c);
    if r.ended {
        return Ok(());
    }
    if !r.replay_started && !was_recovered(out) {
        // It stopped before its first job (its certificates, a node
        // process that never came, an interrupt): nothing to resume or
        // recover. Its journal and logs are kept aside, and the new run
        // goes on here.
        let stamp = c.header.started_utc.replace(':', "-");
        let dir = out.join(format!("unstarted-{stamp}"));
        move_aside(out, &dir)?;
        log.say(format_args!(
            "{} holds the journal of a run that stopped before its first job (started {}): \
             nothing ran; its journal and logs moved to {}",
            out.display(),
            c.header.started_utc,
            dir.display()
        ));
        return Ok(());
    }
    if !was_recovered(out) {
        bail!(
            "{} holds the journal of an unfinished run (started {}, policy {}, {} jobs recorded, {} still open): \
             `libratory resume {o}` continues it, `libratory recover {o}` rebuilds its results \
             (a run then starts here after moving it aside); or give another --out",
            path.display(),
            c.header.started_utc,
            c.header.policy,
            r.records.len(),
            r.undecided.len() + r.unfinished.len(),
            o = out.display()
        );
    }
    let stamp = c.header.started_utc.replace(':', "-");
    let dir = out.join(format!("interrupted-{stamp}"));
    move_aside(out, &dir)?;
    log.say(format_args!(
        "{} holds the journal of an interrupted run (started {}): rebuilding its results in {}",
        out.display(),
        c.header.started_utc,
        dir.display()
    ));
    recover(&dir, false)
}

/// Moves `out`'s journal and node logs into `dir`.
fn move_aside(out: &Path, dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for name in [JOURNAL, "logs"] {
        let from = out.join(name);
        if from.exists() {
            fs::rename(&from, dir.join(name))
                .with_context(|| format!("moving {} to {}", from.display(), dir.display()))?;
        }
    }
    Ok(())
}

/// Whether `out`'s manifest is one `recover` wrote.
pub(crate) fn was_recovered(out: &Path) -> bool {
    fs::read(out.join(rundir::MANIFEST))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|m| m.get("recovered").is_some_and(|r| !r.is_null()))
}

/// What a recovered run's manifest and summary say about the recovery.
#[derive(Serialize)]
struct RecoveryFacts<'a> {
    journal: &'static str,
    recovered_utc: String,
    recovered_by: Vec<String>,
    /// Whether the run had ended by itself (its `end` entry).
    complete: bool,
    /// A last line cut short by the crash, left out.
    torn_line: Option<usize>,
    /// Jobs with a record (submitted before the journal ends).
    submitted: usize,
    undecided: &'a [common::job::JobId],
    unfinished: &'a [common::job::JobId],
    /// Jobs of the workload never submitted (the run stopped first).
    never_submitted: usize,
    /// What the journal does not hold.
    lost: &'static [&'static str],
}

/// `libratory recover RUN`: rebuilds a live run's result files
/// (summary.json, the job files, the manifest, log.txt) from
/// `RUN/journal.jsonl`, with the jobs the run had not decided or finished
/// marked as such. A run that ended wrote better results itself (with
/// its histograms): it is left alone unless `force`.
pub fn recover(dir: &Path, force: bool) -> Result<()> {
    let me = Invocation::capture();
    let path = dir.join(JOURNAL);
    if journal::in_use(&path) {
        bail!(
            "{}: a manager is still writing it (the run is going): its results come at its end",
            path.display()
        );
    }
    let c = journal::read(&path)?;
    let r = journal::rebuild(&c);
    if !force && dir.join(rundir::MANIFEST).is_file() && (r.ended || !was_recovered(dir)) {
        if r.ended {
            bail!(
                "{}: the run ended and wrote its results; nothing to recover (--force rebuilds them from the journal, without the latency histograms)",
                path.display()
            );
        }
        // Results written by a run whose journal stopped short (it could
        // not be written): they hold more than the journal does.
        bail!(
            "{}: the run wrote its results, but its journal stops short of its end (it could not be written to the end: see {}); they hold more than it does (--force rebuilds them from the journal anyway)",
            path.display(),
            dir.join("log.txt").display()
        );
    }
    let h = &c.header;
    let mut log = Log::new();
    log.say(format_args!(
        "libratory recover: {} (run started {}, policy {}, seed {}): {} entries{}",
        path.display(),
        h.started_utc,
        h.policy,
        h.seed,
        c.entries.len(),
        c.torn_line.map_or(String::new(), |l| format!(
            ", torn last line {l} left out (the manager stopped mid-write)"
        ))
    ));
    let trace_facts: Option<rundir::TraceFacts> = h
        .trace
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{}: the header's trace facts", path.display()))?;
    let trace = trace_facts.as_ref().map(|t| PathBuf::from(&t.path));
    // Client jobs (ids from 2^40) are not the workload's.
    let from_workload = r.records.iter().filter(|x| x.id < 1 << 40).count();
    let facts = RecoveryFacts {
        journal: JOURNAL,
        recovered_utc: me.started_utc.clone(),
        recovered_by: me.command_line.clone(),
        complete: r.ended,
        torn_line: c.torn_line,
        submitted: r.records.len(),
        undecided: &r.undecided,
        unfinished: &r.unfinished,
        never_submitted: h.workload.facts.jobs.saturating_sub(from_workload),
        lost: &[
            "latency histograms (histograms/*.hlog, latency_us, node_latency_us)",
            "node process exit statuses",
            "warnings of the last heartbeat",
        ],
    };
    let facts = serde_json::to_value(&facts)?;
    let summary = Summary::compute(&h.policy, &r.records);
    let mut table = Vec::new();
    output::print_table(&mut table, std::slice::from_ref(&summary))?;
    log.say("");
    log.block(&String::from_utf8_lossy(&table));
    for w in &r.warnings {
        log.say(format_args!("note: {w}"));
    }
    if !r.ended {
        log.say(format_args!(
            "the run did not end: {} job(s) undecided, {} accepted but unfinished (recorded as lost), {} never submitted",
            r.undecided.len(),
            r.unfinished.len(),
            h.workload.facts.jobs.saturating_sub(from_workload)
        ));
    }
    let mut live = serde_json::to_value(LiveFacts {
        mode: "live",
        time_scale: h.time_scale,
        replay_offset: r.replay_offset,
        node_processes: r.node_processes.clone(),
        wall_seconds: r.wall_seconds,
        warnings: &r.warnings,
        latency_us: BTreeMap::new(),
        node_latency_us: BTreeMap::new(),
    })?;
    live["recovered"] = facts.clone();
    // Files of the run's own results that the journal cannot rebuild (the
    // latency histograms, the part records): left beside the rebuilt ones
    // they would be read as this recovery's. Kept aside, not deleted.
    let stale: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n == "histograms" || (n.starts_with("parts-") && n.ends_with(".csv"))
        })
        .map(|e| e.path())
        .collect();
    if !stale.is_empty() {
        let aside = dir.join(format!("superseded-{}", me.started_utc.replace(':', "-")));
        fs::create_dir_all(&aside).with_context(|| format!("creating {}", aside.display()))?;
        for p in &stale {
            let to = aside.join(p.file_name().expect("a directory entry"));
            fs::rename(p, &to)
                .with_context(|| format!("moving {} to {}", p.display(), aside.display()))?;
        }
        log.say(format_args!(
            "{} file(s) of the run's own results that the journal cannot rebuild (histograms, part records) moved to {}",
            stale.len(),
            aside.display()
        ));
    }
    let wl = workload::Workload {
        params: h.experiment.params.clone(),
        trace: trace.clone(),
        jobs: Vec::new(),
        odd: h.workload.facts.odd_records.clone(),
        duplicates: h.workload.duplicates,
    };
    let mut files = rundir::write_run_files_with(
        dir,
        &Run {
            experiment: &h.experiment,
            workload: &wl,
            trace: trace.as_deref(),
            policies: &[PolicyResult {
                summary: &summary,
                records: &r.records,
                parts: None,
            }],
            live: Some(&live),
        },
        h.workload.facts.clone(),
        &rundir::OutputKind::ALL,
    )?;
    files.push(JOURNAL.into());
    let logs = dir.join("logs");
    if logs.is_dir() {
        files.push("logs/".into());
    }
    let node_facts: Vec<NodeProcessFact> = r
        .node_processes
        .iter()
        .map(|(host, nodes)| {
            let label = host.split(' ').next().unwrap_or(host);
            let log = format!("logs/node-{label}.log");
            NodeProcessFact {
                host: host.clone(),
                nodes: *nodes,
                log: dir.join(&log).is_file().then_some(log),
                exit: None,
            }
        })
        .collect();
    let files = rundir::with_manifest_and_log(files);
    // The manifest is the run's: its command line, start and wall time.
    let inv = Invocation {
        command_line: h.command_line.clone(),
        working_dir: h.working_dir.clone(),
        started_unix: h.started_unix,
        started_utc: h.started_utc.clone(),
        clock: std::time::Instant::now()
            .checked_sub(Duration::from_secs_f64(r.wall_seconds))
            .unwrap_or_else(std::time::Instant::now),
    };
    let config = LiveRunConfig {
        experiment: &h.experiment,
        cluster: &h.cluster,
    };
    let manifest = Manifest::new("run", &inv, h.seed, &config, trace_facts.as_ref(), &files)
        .live(&node_facts)
        .recovered(&facts);
    rundir::finish(
        dir,
        manifest,
        &mut log,
        format_args!(
            "\nresults rebuilt in {} (summary.json, jobs-{p}.csv/.jsonl, out_jobs-{p}.csv, schedule-{p}.swf, manifest.json, log.txt)",
            dir.display(),
            p = h.policy
        ),
    )?;
    std::io::stdout().flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::testkit::sample;

    /// Results the journal cannot rebuild (histograms, part records) are
    /// moved aside, not left beside the rebuilt ones as if they were
    /// theirs, and not deleted.
    #[test]
    fn a_forced_recovery_moves_the_files_it_cannot_rebuild_aside() {
        let (d, _) = sample();
        let dir = d.path();
        fs::create_dir(dir.join("histograms")).unwrap();
        fs::write(dir.join("histograms/manager.hlog"), "h").unwrap();
        fs::write(dir.join("parts-libra.csv"), "p").unwrap();
        recover(dir, true).unwrap();
        assert!(!dir.join("histograms").exists() && !dir.join("parts-libra.csv").exists());
        let aside: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("superseded-")
            })
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert_eq!(fs::read(aside[0].join("parts-libra.csv")).unwrap(), b"p");
        assert_eq!(
            fs::read(aside[0].join("histograms/manager.hlog")).unwrap(),
            b"h"
        );
        assert!(dir.join("summary.json").is_file());
    }
}
