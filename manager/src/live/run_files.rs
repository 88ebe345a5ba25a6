//! The run directory of a live run: the same files as `simulate` writes
//! (through `rundir`, `mode: "live"`), plus the latency histograms, the
//! node processes and the facts only a live run has.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use common::experiment::Experiment;
use common::metrics::Summary;
use common::workload;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cluster::config::ClusterConfig;
use crate::live::journal::{Entry, JournalWriter, JOURNAL};
use crate::live::manager::LiveOutcome;
use crate::results::histograms::{
    merge_by_name, percentiles, write_hlog, write_hlog_intervals, Percentiles,
};
use crate::results::output;
use crate::results::rundir::{self, Log, NodeProcessFact, PolicyResult, Run};

/// What only a live run's summary.json has, beside the simulated run's
/// fields.
#[derive(Serialize)]
pub(crate) struct LiveFacts<'a> {
    pub(crate) mode: &'static str,
    pub(crate) time_scale: f64,
    pub(crate) replay_offset: f64,
    pub(crate) node_processes: Vec<(String, usize)>,
    pub(crate) wall_seconds: f64,
    pub(crate) warnings: &'a [String],
    pub(crate) latency_us: BTreeMap<String, Percentiles>,
    pub(crate) node_latency_us: BTreeMap<String, Percentiles>,
}

/// The configuration a live run's manifest records.
#[derive(Serialize)]
pub(crate) struct LiveRunConfig<'a> {
    pub(crate) experiment: &'a Experiment,
    pub(crate) cluster: &'a ClusterConfig,
}

/// The node processes of a run for its manifest: every one that
/// registered, with its log and exit status when this command started it
/// (`--label LABEL` registers as `LABEL (address)`).
pub fn node_process_facts(o: &LiveOutcome, exits: &[(String, String)]) -> Vec<NodeProcessFact> {
    let mut facts: Vec<NodeProcessFact> = o
        .node_processes
        .iter()
        .map(|(host, nodes)| {
            let mine = exits
                .iter()
                .find(|(label, _)| host.starts_with(&format!("{label} (")));
            NodeProcessFact {
                host: host.clone(),
                nodes: *nodes,
                log: mine.map(|(label, _)| format!("logs/node-{label}.log")),
                exit: mine.map(|(_, st)| st.clone()),
            }
        })
        .collect();
    // Started here but never registered: listed too, so that a missing
    // process shows.
    for (label, st) in exits {
        if !o
            .node_processes
            .iter()
            .any(|(h, _)| h.starts_with(&format!("{label} (")))
        {
            facts.push(NodeProcessFact {
                host: format!("{label} (never registered)"),
                nodes: 0,
                log: Some(format!("logs/node-{label}.log")),
                exit: Some(st.clone()),
            });
        }
    }
    facts.sort_by(|a, b| a.host.cmp(&b.host));
    facts
}

/// After a live run's result files are written: the journal's end entry,
/// the writer closed (a failure is a warning in the log; the results
/// stand) and the journal added to the run's `files`, with the manifest
/// and log.
pub fn end_journal(
    writer: JournalWriter,
    wall_seconds: f64,
    log: &mut Log,
    mut files: Vec<String>,
) -> Vec<String> {
    let j = writer.journal();
    j.send(Entry::End {
        t: j.t(),
        wall_seconds,
    });
    if let Err(e) = writer.close() {
        log.say(format_args!("warning: the run journal is incomplete: {e}"));
    }
    files.push(JOURNAL.into());
    rundir::with_manifest_and_log(files)
}

/// Writes the data files of a live run (summary.json, the per-job CSV and
/// JSON lines, the Batsim CSV, the schedule as SWF, the histogram logs),
/// prints the table and the latency percentiles into `log`, and returns
/// the file names written and the node processes' latency percentiles.
/// `manager_span` is when the manager started and
/// how many seconds it ran: the time axis of the histogram logs.
pub fn write_live_results(
    out: &Path,
    exp: &Experiment,
    wl: &workload::Workload,
    time_scale: f64,
    o: &LiveOutcome,
    manager_span: (SystemTime, f64),
    log: &mut Log,
) -> Result<(Vec<String>, BTreeMap<String, Percentiles>)> {
    let policy = exp.policies[0].clone();
    let summary = Summary::compute(&policy, &o.records);
    log.say("");
    let mut table = Vec::new();
    output::print_table(&mut table, std::slice::from_ref(&summary))?;
    log.block(&String::from_utf8_lossy(&table));
    for w in &o.warnings {
        log.say(format_args!("note: {w}"));
    }
    let mut latency = BTreeMap::new();
    for (name, h) in &o.histograms {
        latency.insert(name.clone(), percentiles(h));
    }
    let merged = merge_by_name(
        o.node_histograms
            .iter()
            .map(|nh| (nh.name.as_str(), &nh.hist)),
    )?;
    let node_latency: BTreeMap<String, Percentiles> = merged
        .iter()
        .map(|(name, h)| (name.clone(), percentiles(h)))
        .collect();
    log.say("\nlatency (us)                 count      p50      p99    max");
    for (name, p) in latency.iter().chain(node_latency.iter()) {
        log.say(format_args!(
            "{name:<28} {:>6} {:>8} {:>8} {:>6}",
            p.count, p.p50, p.p99, p.max
        ));
    }
    let facts = LiveFacts {
        mode: "live",
        time_scale,
        replay_offset: o.replay_offset,
        node_processes: o.node_processes.clone(),
        wall_seconds: o.wall_seconds,
        warnings: &o.warnings,
        latency_us: latency,
        node_latency_us: node_latency.clone(),
    };
    let facts = serde_json::to_value(&facts)?;
    let mut files = rundir::write_run_files(
        out,
        &Run {
            experiment: exp,
            workload: wl,
            trace: wl.trace.as_deref(),
            policies: &[PolicyResult {
                summary: &summary,
                records: &o.records,
                parts: Some(&o.parts),
            }],
            live: Some(&facts),
        },
    )?;
    let hdir = out.join("histograms");
    fs::create_dir_all(&hdir).with_context(|| format!("creating {}", hdir.display()))?;
    let mine: Vec<(String, &Histogram<u64>)> =
        o.histograms.iter().map(|(n, h)| (n.clone(), h)).collect();
    let (started, manager_seconds) = manager_span;
    write_hlog(&hdir.join("manager.hlog"), started, &mine, manager_seconds)?;
    let nodes: Vec<(String, &Histogram<u64>, f64, f64)> = o
        .node_histograms
        .iter()
        .map(|nh| {
            let host = nh.host.split(' ').next().unwrap_or(&nh.host);
            (
                format!("{host}/{}", nh.name),
                &nh.hist,
                nh.start_s,
                nh.end_s - nh.start_s,
            )
        })
        .collect();
    write_hlog_intervals(&hdir.join("nodes.hlog"), started, &nodes)?;
    files.push("histograms/manager.hlog".into());
    files.push("histograms/nodes.hlog".into());
    if out.join("logs").is_dir() {
        files.push("logs/".into());
    }
    Ok((files, node_latency))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_processes_started_here_carry_their_log_and_exit_and_missing_ones_show() {
        let o = LiveOutcome {
            records: Vec::new(),
            parts: Vec::new(),
            replay_offset: 0.0,
            histograms: BTreeMap::new(),
            node_histograms: Vec::new(),
            node_processes: vec![
                ("remote-0 (10.0.0.2:4000)".into(), 4),
                ("local-0 (127.0.0.1:5000)".into(), 2),
            ],
            warnings: Vec::new(),
            wall_seconds: 1.0,
        };
        let exits = [
            ("local-0".to_string(), "exit status: 0".to_string()),
            (
                "local-1".to_string(),
                "killed after the grace period".to_string(),
            ),
        ];
        let f = node_process_facts(&o, &exits);
        let hosts: Vec<&str> = f.iter().map(|x| x.host.as_str()).collect();
        assert_eq!(
            hosts,
            [
                "local-0 (127.0.0.1:5000)",
                "local-1 (never registered)",
                "remote-0 (10.0.0.2:4000)"
            ]
        );
        assert_eq!(f[0].log.as_deref(), Some("logs/node-local-0.log"));
        assert_eq!(f[0].exit.as_deref(), Some("exit status: 0"));
        assert_eq!((f[0].nodes, f[1].nodes, f[2].nodes), (2, 0, 4));
        assert_eq!(f[1].exit.as_deref(), Some("killed after the grace period"));
        // Not started here: no log, no exit status.
        assert_eq!((f[2].log.as_deref(), f[2].exit.as_deref()), (None, None));
    }
}
