//! `libratory resume RUN`: continues an unfinished live run after its
//! manager died. It reads the run's journal ([`ResumeState`]), binds the
//! same address, and takes the run over ([`crate::live::manager::Takeover`]):
//! the jobs over keep their records, the jobs running are carried until
//! the node processes that rode out the crash come back and report their
//! parts, the jobs queued are decided now, and the replay goes on with
//! the jobs not yet submitted (those due during the downtime are
//! submitted at once: late, with their own submit times). It writes on in
//! the same journal and writes the run's result files at the end, as
//! `run` does.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use common::protocol::PartId;
use common::workload::WorkloadJob;

use crate::environment::Environment;
use crate::live::journal::{self, JournalWriter, JOURNAL};
use crate::live::manager::{self as live, LiveConfig, Takeover};
use crate::live::progress::Progress;
use crate::live::resume_state::{check_resumable, ResumeState, RESUMED};
use crate::live::{run_files, setup};
use crate::results::rundir::{self, Invocation, Log, Manifest};

/// Ids from here are clients' jobs (the workload's are below).
const CLIENT_JOBS: u64 = 1 << 40;

/// Resumes the run in `dir` (see the module header).
/// `after_fault` names the fault that killed the manager, when the run's
/// supervisor executes one ([`crate::live::supervise`]).
pub fn resume(
    dir: &Path,
    progress: Progress,
    after_fault: Option<&str>,
    env: &Environment,
) -> Result<()> {
    let inv = Invocation::capture();
    let path = dir.join(JOURNAL);
    if journal::in_use(&path) {
        bail!(
            "{}: a manager is still writing it (the run is going): nothing to resume",
            path.display()
        );
    }
    let c = journal::read(&path)
        .with_context(|| format!("{}: no run to resume here", dir.display()))?;
    let s = ResumeState::from_journal(&c);
    if let Err(why) = check_resumable(&c, &s) {
        bail!("{}: {why}", path.display());
    }
    // Results written by a run whose journal stopped short (it could not
    // be written to the end): the run is over, whatever the journal says.
    if dir.join(rundir::MANIFEST).is_file() && !crate::live::recover::was_recovered(dir) {
        bail!(
            "{}: the run wrote its results ({}), though its journal stops short of its end (it could not be written: see {}): nothing to resume",
            path.display(),
            dir.join(rundir::MANIFEST).display(),
            dir.join("log.txt").display()
        );
    }
    let cfg = c.header.cluster.clone();
    let (exp, wl) = setup::experiment_of(&cfg)?;
    if exp.params.seed != c.header.seed || wl.jobs.len() != c.header.workload.facts.jobs {
        bail!(
            "{}: the workload rebuilt from the journal's configuration differs from the run's (seed {} and {} jobs, journal: seed {} and {} jobs): its trace or preset changed since",
            path.display(),
            exp.params.seed,
            wl.jobs.len(),
            c.header.seed,
            c.header.workload.facts.jobs
        );
    }
    let scale = cfg.manager.time_scale;
    // The clock went on while no manager ran: from the journal's last
    // write (its file's modification time) to now.
    let down = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default()
        .as_secs_f64();
    let (takeover, remaining) = takeover(&c, &s, &wl.jobs, down, after_fault);
    let mut log = Log::new();
    log.say(format_args!(
        "libratory resume: {} (run started {}, policy {}, seed {}, resumed {} time(s) before): {}",
        dir.display(),
        c.header.started_utc,
        c.header.policy,
        c.header.seed,
        s.resumed_before,
        takeover.note
    ));
    // The earlier managers' histograms, as last journaled.
    let mut takeover = takeover;
    for (name, text) in &s.histograms {
        match crate::results::histograms::decode(text) {
            Ok(h) => {
                takeover.histograms.insert(name.clone(), h);
            }
            Err(e) => log.say(format_args!(
                "{}: histogram {name} of the managers before: {e}; left out",
                path.display()
            )),
        }
    }
    let listen = cfg.manager.listen.parse()?;
    let writer = JournalWriter::append(&path, s.last_t + down)?;
    let live_cfg = LiveConfig {
        resume: Some(takeover),
        ..setup::live_config(&cfg, &exp, listen, progress, writer.journal(), env)?
    };
    let started = SystemTime::now();
    let outcome = actix_rt::System::new().block_on(async move {
        live::run(live_cfg, remaining, crate::live::run::stop_signal()).await
    })?;
    let manager_seconds = started.elapsed().unwrap_or_default().as_secs_f64();
    let node_facts = run_files::node_process_facts(&outcome, &[]);
    let (files, _) = run_files::write_live_results(
        dir,
        &exp,
        &wl,
        scale,
        &outcome,
        (started, manager_seconds),
        &mut log,
    )?;
    // The result files are written: the journal is complete.
    let files = run_files::end_journal(writer, outcome.wall_seconds, &mut log, files);
    let trace_facts: Option<rundir::TraceFacts> = c
        .header
        .trace
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{}: the header's trace facts", path.display()))?;
    let config = run_files::LiveRunConfig {
        experiment: &exp,
        cluster: &cfg,
    };
    let manifest = Manifest::new(
        "resume",
        &inv,
        c.header.seed,
        &config,
        trace_facts.as_ref(),
        &files,
    )
    .live(&node_facts);
    // The run's fault scenario, as its first manager listed it.
    let manifest = match &c.header.faults {
        Some(facts) => manifest.with_faults(facts),
        None => manifest,
    };
    rundir::finish(
        dir,
        manifest,
        &mut log,
        format_args!(
            "\nresults in {o} (the whole run, before and after the restart; see it: libratory report {o})",
            o = dir.display()
        ),
    )?;
    Ok(())
}

/// What a manager taking the run over starts from: the [`Takeover`] read
/// from the journal's contents `c` and state `s`, the manager having been
/// down `down` real seconds since the journal's last entry (`after_fault`
/// names the fault that killed it), and the workload's jobs (`jobs`, the
/// run's whole workload in submit order) not yet submitted, which the
/// replay goes on with. Pure: `resume` reads the journal and the clock,
/// and the deterministic harness calls this on the journal its crashed
/// core wrote.
pub(crate) fn takeover(
    c: &journal::Contents,
    s: &ResumeState,
    jobs: &[WorkloadJob],
    down: f64,
    after_fault: Option<&str>,
) -> (Takeover, Vec<WorkloadJob>) {
    let cfg = &c.header.cluster;
    let scale = cfg.manager.time_scale;
    let offset = s.replay_offset.expect("checked resumable");
    let trace_now = s.last_trace + down / scale;
    let recorded: HashSet<u64> = s.recorded().collect();
    let undecided_ids: HashSet<u64> = s.undecided.iter().map(|r| r.id).collect();
    let mut undecided = Vec::new();
    let mut remaining = Vec::new();
    for j in jobs {
        if undecided_ids.contains(&j.spec.id) {
            let mut j = j.clone();
            j.spec.details.submit_time += offset;
            undecided.push(j);
        } else if !recorded.contains(&j.spec.id) {
            remaining.push(j.clone());
        }
    }
    // Clients' jobs queued at the crash: decided now from the
    // specification the journal keeps (on the clock's axis already);
    // journals written before did not keep it.
    let mut unrecoverable = Vec::new();
    for r in s.undecided.iter().filter(|r| r.id >= CLIENT_JOBS) {
        match s.client_specs.get(&r.id) {
            Some(spec) => undecided.push(WorkloadJob {
                spec: spec.clone(),
                actual_runtime: r.actual,
            }),
            None => unrecoverable.push(r.clone()),
        }
    }
    // Decided in the order they came.
    undecided.sort_by(|a, b| {
        a.spec
            .details
            .submit_time
            .total_cmp(&b.spec.details.submit_time)
            .then(a.spec.id.cmp(&b.spec.id))
    });
    let wait = Duration::from_secs_f64(cfg.manager.manager_grace_s);
    let after = after_fault.map_or(String::new(), |f| format!(" after {f}"));
    let note = format!(
        "{RESUMED}{after} the manager was down {down:.3} s (trace {:.3} to {trace_now:.3}); {} jobs over, {} running carried, {} queued decided again, {} not submitted yet",
        s.last_trace,
        s.done.len(),
        s.open.len(),
        undecided.len(),
        remaining.len()
    );
    let takeover = Takeover {
        done: s.done.clone(),
        open: s.open.iter().map(|o| o.record.clone()).collect(),
        undecided,
        unrecoverable,
        offset,
        node_processes: s.node_processes.clone(),
        node_pids: s.node_pids.clone(),
        started: s
            .open
            .iter()
            .flat_map(|o| {
                let job = o.record.id;
                o.started.iter().map(move |&index| PartId { job, index })
            })
            .collect(),
        ended: s
            .open
            .iter()
            .flat_map(|o| {
                let job = o.record.id;
                o.ended
                    .iter()
                    .map(move |(&index, &at)| (PartId { job, index }, at))
            })
            .collect(),
        wait,
        crash_trace: s.last_trace,
        note,
        trace_now,
        crashed: s.last_t,
        restarted: s.last_t + down,
        // The earlier managers' histograms are decoded by the caller,
        // which logs a bad one.
        histograms: Default::default(),
        faults: s.faults.clone(),
        node_times: s.node_times.clone(),
        losses: s.losses.clone(),
    };
    (takeover, remaining)
}
