//! The run directory: everything one run leaves behind, so that a reader can
//! tell what ran, on what, with which binary and where, and read every
//! job's fate in the formats other tools take (Batsim CSV, SWF).
//!
//! A run directory holds `manifest.json` (written last but the log), the
//! `summary.json` of all policies, per policy `jobs-<p>.csv`,
//! `jobs-<p>.jsonl`, `out_jobs-<p>.csv` (Batsim) and `schedule-<p>.swf`,
//! and `log.txt` (what the command printed). Simulated runs and live runs
//! (`libratory run`, `demo`) write the same files; a live run's manifest
//! says `mode: "live"` and lists its node processes, its summary adds the
//! live facts (time scale, latency percentiles, warnings), and it adds
//! `histograms/*.hlog`, the node processes' `logs/` and the run journal
//! `journal.jsonl` (from which `libratory recover` rebuilds the rest).
//!
//! Not here: the file formats themselves (`output`), running anything.

use std::fmt::Display;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use common::experiment::Experiment;
use common::metrics::{JobRecord, Summary};
use common::sim::SimOutcome;
use common::workload::{OddRecords, Workload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::results::output;

/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";
/// Name of the summary file.
pub const SUMMARY: &str = "summary.json";
/// Name of the log file.
pub const LOG: &str = "log.txt";

/// What the command printed, kept to be written as `log.txt`: every line
/// goes to stdout and into the log.
#[derive(Debug, Default)]
pub struct Log {
    text: String,
}

impl Log {
    /// A new, empty log.
    pub fn new() -> Log {
        Log::default()
    }

    /// Prints one line (which may hold newlines) and keeps it. A closed
    /// stdout (`| head`) does not stop the run: the files are still written.
    pub fn say(&mut self, line: impl Display) {
        let s = line.to_string();
        let _ = writeln!(std::io::stdout().lock(), "{s}");
        self.text.push_str(&s);
        self.text.push('\n');
    }

    /// Keeps text without printing it (a table already rendered, say).
    pub fn keep(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Prints and keeps a block of text as it is.
    pub fn block(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.keep(text);
    }

    /// Writes the log to `dir/log.txt`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(LOG);
        fs::write(&path, &self.text).with_context(|| format!("writing {}", path.display()))
    }
}

/// The machine a run ran on, read from /proc where there is one (fields are
/// `None` where a fact could not be read, never guessed).
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    /// Host name.
    pub hostname: Option<String>,
    /// Operating system family (`linux`, `macos`, ...).
    pub os: &'static str,
    /// Distribution name (`PRETTY_NAME` of /etc/os-release).
    pub os_release: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// CPU architecture.
    pub arch: &'static str,
    /// Logical cores this process may use.
    pub cores: usize,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Physical memory in bytes.
    pub memory_bytes: Option<u64>,
}

fn read_trimmed(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The cores this process may use, asked once: the standard library reads
/// the cgroup's CPU quota from several files each time, and the writers
/// ask just when the results are ready.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Reads the facts of this host.
pub fn host_facts() -> HostFacts {
    let os_release = fs::read_to_string("/etc/os-release").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
    let cpu_model = fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let memory_bytes = fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    HostFacts {
        hostname: read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| std::env::var("HOSTNAME").ok()),
        os: std::env::consts::OS,
        os_release,
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        arch: std::env::consts::ARCH,
        cores: cores(),
        cpu_model,
        memory_bytes,
    }
}

/// The binary that produced a run.
#[derive(Debug, Clone, Serialize)]
pub struct BinaryFacts {
    /// Crate version.
    pub version: &'static str,
    /// Git commit the binary was built from, if known at build time.
    pub git_commit: Option<&'static str>,
    /// `release` or `debug`.
    pub profile: &'static str,
}

/// Facts of this binary.
pub fn binary_facts() -> BinaryFacts {
    BinaryFacts {
        version: env!("CARGO_PKG_VERSION"),
        git_commit: option_env!("LIBRATORY_GIT_COMMIT").filter(|s| !s.is_empty()),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    }
}

/// The trace a run read, identified by content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceFacts {
    /// The path as given.
    pub path: String,
    /// The file name alone.
    pub file_name: String,
    /// Size in bytes (of the file as stored, compressed or not).
    pub bytes: u64,
    /// SHA-256 of the file as stored, hex.
    pub sha256: String,
}

/// Hashes the trace at `path`.
pub fn trace_facts(path: &Path) -> Result<TraceFacts> {
    let mut f =
        fs::File::open(path).with_context(|| format!("opening trace {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading trace {}", path.display()))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        hasher.update(&buf[..n]);
    }
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(TraceFacts {
        path: path.display().to_string(),
        file_name: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        bytes,
        sha256,
    })
}

/// Seconds since the Unix epoch and the same instant as ISO 8601 UTC.
pub fn now_utc() -> (u64, String) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (secs, iso_utc(secs))
}

/// Formats Unix seconds as `YYYY-MM-DDThh:mm:ssZ` (proleptic Gregorian).
pub fn iso_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// When and how a command was started: taken once at its start.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The command line, program name first.
    pub command_line: Vec<String>,
    /// Working directory.
    pub working_dir: String,
    /// Unix seconds at start.
    pub started_unix: u64,
    /// ISO 8601 UTC at start.
    pub started_utc: String,
    /// Monotonic start, for the wall time.
    pub clock: Instant,
}

impl Invocation {
    /// Captures the current process's invocation.
    pub fn capture() -> Invocation {
        let (started_unix, started_utc) = now_utc();
        Invocation {
            command_line: redacted(std::env::args()),
            working_dir: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            started_unix,
            started_utc,
            clock: Instant::now(),
        }
    }
}

/// The options whose value is a secret, kept out of the recorded command
/// line (the manifest and the journal's header are results, shared).
const SECRET_OPTIONS: [&str; 1] = ["--http-token"];

/// `args` with the value of each secret option replaced by `<redacted>`
/// (`--http-token T` and `--http-token=T` alike).
fn redacted(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push("<redacted>".into());
            hide_next = false;
            continue;
        }
        match SECRET_OPTIONS
            .iter()
            .find(|o| a == **o || a.starts_with(&format!("{o}=")))
        {
            Some(o) if a == *o => {
                hide_next = true;
                out.push(a);
            }
            Some(o) => out.push(format!("{o}=<redacted>")),
            None => out.push(a),
        }
    }
    out
}

/// `manifest.json`: what ran, on what, with which binary, where and when.
#[derive(Debug, Serialize)]
pub struct Manifest<'a, C: Serialize> {
    /// Format tag, bumped when the layout changes.
    pub format: &'static str,
    /// `simulate`, `sweep`, `figures`.
    pub kind: &'static str,
    /// `simulated` (virtual time) or `live` (real node processes).
    pub mode: &'static str,
    /// The command line, program name first.
    pub command_line: &'a [String],
    /// Working directory the command ran in (relative paths are relative
    /// to it).
    pub working_dir: &'a str,
    /// Start, Unix seconds.
    pub started_unix: u64,
    /// Start, ISO 8601 UTC.
    pub started_utc: &'a str,
    /// Wall-clock seconds the command took up to writing the manifest.
    pub wall_seconds: f64,
    /// The seed (first seed of a sweep).
    pub seed: u64,
    /// The whole configuration (experiment, sweep or figure).
    pub config: &'a C,
    /// The trace read, if any.
    pub trace: Option<&'a TraceFacts>,
    /// The binary.
    pub binary: BinaryFacts,
    /// The host.
    pub host: HostFacts,
    /// The files of the directory, manifest and log included.
    pub files: &'a [String],
    /// Live runs: the node processes that took part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_processes: Option<&'a [NodeProcessFact]>,
    /// Runs rebuilt from their journal (`libratory recover`): how, and
    /// what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<&'a serde_json::Value>,
    /// Runs with a fault scenario (`--faults`): the file, its seed and
    /// every fault as expanded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<&'a serde_json::Value>,
}

/// One node process of a live run, as the manifest lists it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeProcessFact {
    /// The label it registered with, and its address as the manager saw it.
    pub host: String,
    /// Emulated nodes it hosted.
    pub nodes: usize,
    /// Its log in `logs/`, when this command started it.
    pub log: Option<String>,
    /// How it ended, when this command started it.
    pub exit: Option<String>,
}

impl<'a, C: Serialize> Manifest<'a, C> {
    /// A manifest for a command invoked as `inv`.
    pub fn new(
        kind: &'static str,
        inv: &'a Invocation,
        seed: u64,
        config: &'a C,
        trace: Option<&'a TraceFacts>,
        files: &'a [String],
    ) -> Manifest<'a, C> {
        Manifest::with_host(kind, inv, seed, config, trace, files, host_facts())
    }

    /// [`Self::new`] with the host's facts read beforehand (e.g. on another
    /// thread while the run went on).
    pub fn with_host(
        kind: &'static str,
        inv: &'a Invocation,
        seed: u64,
        config: &'a C,
        trace: Option<&'a TraceFacts>,
        files: &'a [String],
        host: HostFacts,
    ) -> Manifest<'a, C> {
        Manifest {
            format: "libratory-run/1",
            kind,
            mode: "simulated",
            command_line: &inv.command_line,
            working_dir: &inv.working_dir,
            started_unix: inv.started_unix,
            started_utc: &inv.started_utc,
            wall_seconds: inv.clock.elapsed().as_secs_f64(),
            seed,
            config,
            trace,
            binary: binary_facts(),
            host,
            files,
            node_processes: None,
            recovered: None,
            faults: None,
        }
    }

    /// The same manifest for a run with a fault scenario.
    pub fn with_faults(mut self, facts: &'a serde_json::Value) -> Manifest<'a, C> {
        self.faults = Some(facts);
        self
    }

    /// The same manifest for a run rebuilt from its journal.
    pub fn recovered(mut self, facts: &'a serde_json::Value) -> Manifest<'a, C> {
        self.recovered = Some(facts);
        self
    }

    /// The same manifest for a live run and its node processes.
    pub fn live(mut self, node_processes: &'a [NodeProcessFact]) -> Manifest<'a, C> {
        self.mode = "live";
        self.node_processes = Some(node_processes);
        self
    }

    /// Writes it to `dir/manifest.json`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        output::write_json(&dir.join(MANIFEST), self)
    }
}

/// `summary.json` (format in docs/output-formats.md; unchanged since the
/// first `simulate`).
#[derive(Serialize)]
pub struct SummaryFile<'a> {
    /// Crate version.
    pub libratory_version: &'static str,
    /// Seed of every draw.
    pub seed: u64,
    /// Preset name.
    pub preset: &'a str,
    /// The trace path, if any.
    pub trace: Option<String>,
    /// Everything that was set.
    pub experiment: &'a Experiment,
    /// Facts of the workload.
    pub workload: WorkloadFacts,
    /// One summary per policy.
    pub policies: &'a [Summary],
    /// Live runs: what only they have (mode, time scale, node processes,
    /// latency percentiles, warnings), flattened into the top level.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub live: Option<&'a serde_json::Value>,
}

/// Facts of a built workload (`summary.json`'s `workload`; the journal's
/// header keeps them too, so a run rebuilt from it writes the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadFacts {
    /// Jobs submitted.
    pub jobs: usize,
    /// Nodes of the cluster.
    pub nodes: usize,
    /// First arrival (trace seconds).
    pub first_arrival: f64,
    /// Last arrival.
    pub last_arrival: f64,
    /// How odd records were handled.
    pub odd_records: OddRecords,
}

impl WorkloadFacts {
    /// The facts of `wl` on a cluster of `nodes`.
    pub fn of(wl: &Workload, nodes: usize) -> WorkloadFacts {
        WorkloadFacts {
            jobs: wl.jobs.len(),
            nodes,
            first_arrival: wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time),
            last_arrival: wl.jobs.last().map_or(0.0, |j| j.spec.details.submit_time),
            odd_records: wl.odd.clone(),
        }
    }
}

/// One policy's outcome of a simulated run.
pub struct PolicyRun {
    /// What the simulator produced.
    pub outcome: SimOutcome,
    /// Its metrics.
    pub summary: Summary,
}

impl PolicyRun {
    /// Its summary and records, as [`Run`] takes them.
    pub fn result(&self) -> PolicyResult<'_> {
        PolicyResult {
            summary: &self.summary,
            records: &self.outcome.records,
            parts: Some(&self.outcome.parts),
        }
    }
}

/// One policy's records and metrics, simulated or live.
#[derive(Clone, Copy)]
pub struct PolicyResult<'a> {
    /// Its metrics.
    pub summary: &'a Summary,
    /// One record per job, in arrival order.
    pub records: &'a [JobRecord],
    /// Every part as it ran (simulated runs), written as
    /// `parts-<policy>.csv`.
    pub parts: Option<&'a [common::sim::PartRecord]>,
}

/// Everything a run directory is written from.
pub struct Run<'a> {
    /// The experiment (preset, knobs, policies, seed).
    pub experiment: &'a Experiment,
    /// The workload that ran.
    pub workload: &'a Workload,
    /// The trace, if the workload came from one.
    pub trace: Option<&'a Path>,
    /// One entry per policy, in the experiment's order.
    pub policies: &'a [PolicyResult<'a>],
    /// Live runs: extra top-level fields of summary.json.
    pub live: Option<&'a serde_json::Value>,
}

/// Writes the data files of a run into `dir` (created if needed) and
/// returns their names, in the order written. The manifest and the log
/// are written by the caller at the end (see [`finish`]).
pub fn write_run_files(dir: &Path, run: &Run) -> Result<Vec<String>> {
    write_chosen_run_files(dir, run, &OutputKind::ALL)
}

/// A kind of result file (`--outputs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputKind {
    /// `summary.json`.
    Summary,
    /// `jobs-<policy>.csv`.
    JobsCsv,
    /// `jobs-<policy>.jsonl`.
    JobsJsonl,
    /// `out_jobs-<policy>.csv` (Batsim).
    OutJobs,
    /// `schedule-<policy>.swf`.
    Swf,
    /// `parts-<policy>.csv` (one row per part: node, start, finish).
    Parts,
}

impl OutputKind {
    /// Every kind, the default.
    pub const ALL: [OutputKind; 6] = [
        OutputKind::Summary,
        OutputKind::JobsCsv,
        OutputKind::JobsJsonl,
        OutputKind::OutJobs,
        OutputKind::Swf,
        OutputKind::Parts,
    ];
}

/// [`write_run_files`] for the kinds in `kinds` only (in the usual order
/// whatever the order of `kinds`).
pub fn write_chosen_run_files(dir: &Path, run: &Run, kinds: &[OutputKind]) -> Result<Vec<String>> {
    write_chosen_run_files_with_heads(dir, run, kinds, None)
}

/// [`write_chosen_run_files`] with the leading fields of the job rows
/// formatted beforehand (`heads`: see [`output::JobHeads`]).
pub fn write_chosen_run_files_with_heads(
    dir: &Path,
    run: &Run,
    kinds: &[OutputKind],
    heads: Option<&output::JobHeads>,
) -> Result<Vec<String>> {
    let facts = WorkloadFacts::of(run.workload, run.experiment.params.nodes);
    write_files(dir, run, facts, kinds, heads)
}

/// [`write_chosen_run_files`] with the workload's facts given (a run
/// rebuilt from its journal has the facts, not the jobs).
pub fn write_run_files_with(
    dir: &Path,
    run: &Run,
    facts: WorkloadFacts,
    kinds: &[OutputKind],
) -> Result<Vec<String>> {
    write_files(dir, run, facts, kinds, None)
}

fn write_files(
    dir: &Path,
    run: &Run,
    facts: WorkloadFacts,
    kinds: &[OutputKind],
    heads: Option<&output::JobHeads>,
) -> Result<Vec<String>> {
    let want = |k: OutputKind| kinds.contains(&k);
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let exp = run.experiment;
    let summaries: Vec<Summary> = run.policies.iter().map(|p| p.summary.clone()).collect();
    let file = SummaryFile {
        libratory_version: env!("CARGO_PKG_VERSION"),
        seed: exp.params.seed,
        preset: &exp.params.preset,
        trace: run.trace.map(|t| t.display().to_string()),
        experiment: exp,
        workload: facts,
        policies: &summaries,
        live: run.live,
    };
    // Each file is formatted and written by its own task; the tasks run on
    // every core (formatting is nearly all of a simulation's output time).
    let mut files = Vec::new();
    // Each task carries a guess of the bytes it writes (measured on the
    // SDSC runs), so that the largest files start first.
    let mut tasks: Vec<(usize, Task)> = Vec::new();
    if want(OutputKind::Summary) {
        files.push(SUMMARY.to_string());
        tasks.push((
            4096,
            Box::new(|| output::write_json(&dir.join(SUMMARY), &file)),
        ));
    }
    for p in run.policies {
        let name = &p.summary.policy;
        let records = p.records;
        if want(OutputKind::JobsCsv) {
            let f = format!("jobs-{name}.csv");
            let path = dir.join(&f);
            tasks.push((
                240 * records.len(),
                Box::new(move || output::write_jobs_csv_with(&path, records, heads)),
            ));
            files.push(f);
        }
        if want(OutputKind::JobsJsonl) {
            let f = format!("jobs-{name}.jsonl");
            let path = dir.join(&f);
            tasks.push((
                520 * records.len(),
                Box::new(move || output::write_jobs_jsonl_with(&path, records, heads)),
            ));
            files.push(f);
        }
        if want(OutputKind::OutJobs) {
            let f = format!("out_jobs-{name}.csv");
            let path = dir.join(&f);
            let preset = &exp.params.preset;
            tasks.push((
                210 * records.len(),
                Box::new(move || output::write_batsim_csv(&path, preset, records)),
            ));
            files.push(f);
        }
        if want(OutputKind::Swf) {
            let f = format!("schedule-{name}.swf");
            let path = dir.join(&f);
            tasks.push((
                66 * records.len(),
                Box::new(move || {
                    output::write_schedule_swf(
                        &path,
                        &output::SwfRun {
                            policy: name,
                            preset: &exp.params.preset,
                            seed: exp.params.seed,
                            nodes: exp.params.nodes,
                        },
                        records,
                    )
                }),
            ));
            files.push(f);
        }
        if let (true, Some(parts)) = (want(OutputKind::Parts), p.parts) {
            let f = format!("parts-{name}.csv");
            let path = dir.join(&f);
            tasks.push((
                32 * parts.len(),
                Box::new(move || output::write_parts_csv(&path, parts)),
            ));
            files.push(f);
        }
    }
    run_tasks(tasks)?;
    Ok(files)
}

/// One file to write.
type Task<'a> = Box<dyn FnOnce() -> Result<()> + Send + 'a>;

/// Runs `tasks` (each with a guess of its size) on as many threads as
/// there are cores (at most one per task), the largest first so that the
/// threads finish together; the first error in the order given wins.
fn run_tasks(tasks: Vec<(usize, Task)>) -> Result<()> {
    use std::sync::Mutex;
    let n = tasks.len();
    let workers = cores().min(n);
    if workers <= 1 {
        return tasks.into_iter().try_for_each(|(_, t)| t());
    }
    let mut order: Vec<(usize, (usize, Task))> = tasks.into_iter().enumerate().collect();
    order.sort_by_key(|(_, (size, _))| std::cmp::Reverse(*size));
    let queue = Mutex::new(order.into_iter().map(|(k, (_, task))| (k, task)));
    let results: Mutex<Vec<(usize, Result<()>)>> = Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let next = queue.lock().expect("task queue").next();
                let Some((k, task)) = next else { break };
                let r = task();
                results.lock().expect("results").push((k, r));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|r| r.0);
    results.into_iter().try_for_each(|(_, r)| r)
}

/// Writes the manifest, prints `closing` and writes the log: the last
/// steps of every command that leaves a directory.
pub fn finish<C: Serialize>(
    dir: &Path,
    manifest: Manifest<C>,
    log: &mut Log,
    closing: impl Display,
) -> Result<()> {
    manifest.write(dir)?;
    log.say(closing);
    log.write(dir)
}

/// The list of file names of a directory, with the manifest and log added.
pub fn with_manifest_and_log(mut files: Vec<String>) -> Vec<String> {
    files.push(MANIFEST.to_string());
    files.push(LOG.to_string());
    files
}

/// A directory given on the command line, or the default.
pub fn out_dir(given: Option<PathBuf>, default: impl FnOnce() -> String) -> PathBuf {
    given.unwrap_or_else(|| PathBuf::from(default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_given_on_the_command_line_is_not_recorded() {
        let args = [
            "libratory",
            "run",
            "--http-token",
            "s3cret",
            "--http-token=s3cret",
            "--out",
            "x",
        ];
        let r = redacted(args.iter().map(|s| s.to_string()));
        assert_eq!(
            r,
            [
                "libratory",
                "run",
                "--http-token",
                "<redacted>",
                "--http-token=<redacted>",
                "--out",
                "x"
            ]
        );
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn host_facts_are_read() {
        let h = host_facts();
        assert!(h.cores >= 1);
        if cfg!(target_os = "linux") {
            assert!(h.memory_bytes.unwrap_or(0) > 0);
        }
    }
}
