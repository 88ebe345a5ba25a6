//! What a live run leaves on disk, read by independent tools: the latency
//! histogram logs by the Python `hdrhistogram` package, and the run
//! journal after the manager was killed (`libratory recover`).
//!
//! Real binaries: the `libratory` manager and `libratory-node` processes
//! over QUIC on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod util;
use util::{certs, free_port, libratory, node_bin, Guard};

/// A cluster of `processes` x 2 nodes on loopback running `jobs` jobs of
/// the synthetic Libra workload, arriving over `arrival` trace seconds.
fn config(dir: &Path, processes: usize, jobs: usize, arrival: f64, time_scale: f64) -> PathBuf {
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = {time_scale}
start_timeout_s = 20
link_timeout_s = 2
report_ms = 50
heartbeat_ms = 100
histogram_ms = 500

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = {jobs}, nodes = {nodes}, synthetic_arrival_max = {arrival} }}

[[hosts]]
name = "local"
processes = {processes}
nodes_per_process = 2
capacity = 0.2
"#,
        port = free_port(),
        nodes = processes * 2,
    );
    let p = dir.join("cluster.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn dump(what: &str, o: &Output) -> String {
    format!(
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Python 3 with the `hdrhistogram` package: installed with pip when this
/// runs as root, else the test fails saying what is missing.
fn python_with_hdrh() -> &'static str {
    let has = || {
        Command::new("python3")
            .args(["-c", "import hdrh.log"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has() {
        return "python3";
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "the Python hdrhistogram package is missing and this test is not root: \
         `python3 -m pip install hdrhistogram` (it decodes the histogram logs independently)"
    );
    let o = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "hdrhistogram==0.10.8"])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success() && has(),
        "{}",
        dump("pip install hdrhistogram", &o)
    );
    "python3"
}

/// Decodes an interval log with the Python package's `HistogramLogReader`
/// and prints, per tag, the summed count, the values at the 50th and 99th
/// percentile ranks as Rust's `value_at_quantile` counts them (rank =
/// ceil(q * count)), the max and the mean, as JSON.
const DECODE: &str = r#"
import json, math, sys
from hdrh.log import HistogramLogReader
from hdrh.histogram import HdrHistogram
out = {}
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600 * 1000 * 1000, 3))
merged = {}
intervals = 0
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    intervals += 1
    tag = h.get_tag()
    name = tag.split('/')[-1]
    # Merged at the precision the writer chose (a node's histograms may
    # keep fewer significant digits than the manager's).
    m = merged.setdefault(name, HdrHistogram(1, 3600 * 1000 * 1000, h.significant_figures))
    m.add(h)
for name, h in merged.items():
    n = h.get_total_count()
    def at(q):
        if n == 0:
            return 0
        rank = max(1, math.ceil(q * n))
        return h.get_value_at_percentile(100.0 * rank / n)
    out[name] = dict(count=n, p50=at(0.5), p99=at(0.99), max=h.get_max_value(),
                     mean=h.get_mean_value())
print(json.dumps(dict(intervals=intervals, tags=out)))
"#;

fn decode(python: &str, log: &Path) -> serde_json::Value {
    let o = Command::new(python)
        .args(["-c", DECODE])
        .arg(log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", dump("python decode", &o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", dump("decode", &o)))
}

/// The histogram logs are standard: the compressed V2 encoding and the
/// header lines of Java's writer, so that an independent reader (the
/// Python `hdrhistogram` package) decodes them to the counts and
/// percentiles the run's own summary reports.
#[test]
fn histogram_logs_decode_with_the_python_reader() {
    let _ = node_bin();
    let python = python_with_hdrh();
    let dir = tempfile::tempdir().unwrap();
    certs(&dir.path().join("certs"), "local");
    let cfg = config(dir.path(), 2, 12, 15.0, 0.01);
    let out = dir.path().join("run");
    let o = Command::new(libratory())
        .args(["run", "--spawn-local", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", dump("libratory run", &o));
    let s = json(&out.join("summary.json"));

    let text = std::fs::read_to_string(out.join("histograms/manager.hlog")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.contains(&"#[Histogram log format version 1.3]"));
    assert!(lines.iter().any(|l| l.starts_with("#[StartTime: ")));
    assert!(lines.iter().any(|l| l.starts_with("#[BaseTime: ")));
    assert!(lines.contains(
        &r#""StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram""#
    ));
    // Compressed V2: cookie 0x1c849314, base64 "HISTFAAA...".
    let payloads: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("Tag="))
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(payloads.len(), 5, "{text}");
    assert!(payloads.iter().all(|p| p.starts_with("HISTFAAA")), "{text}");

    let manager = decode(python, &out.join("histograms/manager.hlog"));
    assert_eq!(manager["intervals"], 5);
    for (name, want) in s["latency_us"].as_object().unwrap() {
        let got = &manager["tags"][name];
        for k in ["count", "p50", "p99", "max"] {
            assert_eq!(got[k], want[k], "manager.hlog {name} {k}: {got} vs {want}");
        }
        let (a, b) = (
            got["mean"].as_f64().unwrap(),
            want["mean"].as_f64().unwrap(),
        );
        assert!((a - b).abs() <= 1e-3 * b.max(1.0), "{name} mean {a} vs {b}");
    }
    assert!(s["latency_us"]["quic_rtt_us"]["count"].as_u64().unwrap() > 0);

    // Node histograms: every interval of every process, summed per name,
    // is what the summary merged.
    let nodes = decode(python, &out.join("histograms/nodes.hlog"));
    assert!(nodes["intervals"].as_u64().unwrap() > 2, "{nodes}");
    let want = s["node_latency_us"].as_object().unwrap();
    assert!(!want.is_empty());
    for (name, want) in want {
        let got = &nodes["tags"][name];
        for k in ["count", "p50", "p99", "max"] {
            assert_eq!(got[k], want[k], "nodes.hlog {name} {k}: {got} vs {want}");
        }
    }
}

/// The job ids of every `submitted` entry of a journal, read line by line
/// as plain JSON (a torn last line, the kill's, is skipped).
fn submitted_in_journal(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let whole = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut ids = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let v: serde_json::Value = match serde_json::from_str(l) {
            Ok(v) => v,
            Err(e) if i + 1 == lines.len() && !whole => {
                eprintln!("torn last line {}: {e}", i + 1);
                continue;
            }
            Err(e) => panic!("{} line {}: {e}", path.display(), i + 1),
        };
        // A job decided at once is journaled once, as `decided`; any line
        // with a record means the job was submitted.
        if let Some(id) = v["record"]["id"].as_u64() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Jobs the journal records as completed (a `finished` entry with a
/// finish time, of its own or in its record; rejections are `finished`
/// too).
fn completed_in_journal(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter(|l| l.starts_with("{\"e\":\"finished\""))
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| {
                    v["finish"].is_number()
                        || (v["record"]["finish"].is_number() && v["record"]["lost"] == false)
                })
                .count()
        })
        .unwrap_or(0)
}

fn count_entries(path: &Path, kind: &str) -> usize {
    let needle = format!("{{\"e\":\"{kind}\"");
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| l.starts_with(&needle)).count())
        .unwrap_or(0)
}

/// Checks that the result files of `out` hold exactly one record per job
/// in `submitted` and parse; returns the records (jobs-*.jsonl).
fn check_rebuilt(out: &Path, submitted: &[u64]) -> Vec<serde_json::Value> {
    let jsonl = std::fs::read_to_string(out.join("jobs-libra.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut ids: Vec<u64> = records.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    let mut want = submitted.to_vec();
    want.sort_unstable();
    want.dedup();
    assert_eq!(want.len(), submitted.len(), "a job submitted twice");
    assert_eq!(ids, want, "one record per submitted job");
    let mut csv = csv::Reader::from_path(out.join("jobs-libra.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(rows.len(), want.len());
    let mut batsim = csv::Reader::from_path(out.join("out_jobs-libra.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = batsim.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(rows.len(), want.len());
    let swf = std::fs::read_to_string(out.join("schedule-libra.swf")).unwrap();
    let rows: Vec<&str> = swf
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .collect();
    assert_eq!(rows.len(), want.len());
    for r in &rows {
        let fields: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(fields.len(), 18, "{r}");
        assert!(fields.iter().all(|f| f.parse::<f64>().is_ok()), "{r}");
    }
    let s = json(&out.join("summary.json"));
    assert_eq!(s["policies"][0]["submitted"], want.len());
    records
}

/// A manager killed by SIGKILL mid-run loses nothing it had journaled:
/// `libratory recover` rebuilds every result file with one record per job
/// submitted before the kill, jobs in flight marked lost. The next
/// `libratory run` into the same directory refuses until the run is
/// recovered, then moves it aside before running.
#[test]
fn a_killed_manager_run_is_recovered_from_its_journal() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    certs(&dir.path().join("certs"), "local");
    let cfg = config(dir.path(), 2, 40, 40.0, 0.05);
    let out = dir.path().join("run");
    let mut child = Guard::spawn(
        Command::new(libratory())
            .args(["run", "--spawn-local", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let journal = out.join("journal.jsonl");
    let start = std::time::Instant::now();
    // Kill once some jobs are over and others are not (the run lasts
    // tens of seconds; arrivals span 2 s).
    while completed_in_journal(&journal) < 3 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "no job finished within 120 s"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGKILL to the manager alone, as a crash would; then its orphaned
    // node processes (the guard kills the group), rather than leaving them
    // to their link timeout.
    child.kill().unwrap();
    child.wait().unwrap();
    drop(child);
    assert!(!out.join("summary.json").exists());
    let submitted = submitted_in_journal(&journal);
    assert!(submitted.len() >= 3);
    // A copy for the next-run path below.
    let again = dir.path().join("again");
    std::fs::create_dir_all(&again).unwrap();
    std::fs::copy(&journal, again.join("journal.jsonl")).unwrap();
    // A run that wrote its own results while its journal stopped short
    // (it could not be written, the disk full): neither recover nor resume
    // touches it (recover would have rebuilt less over the run's results).
    let short = dir.path().join("short");
    std::fs::create_dir_all(&short).unwrap();
    std::fs::copy(&journal, short.join("journal.jsonl")).unwrap();
    std::fs::write(short.join("manifest.json"), r#"{"kind": "run"}"#).unwrap();
    for (cmd, said) in [
        ("recover", "stops short of its end"),
        ("resume", "nothing to resume"),
    ] {
        let o = Command::new(libratory())
            .arg(cmd)
            .arg(&short)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("wrote its results") && err.contains(said),
            "{}",
            dump(cmd, &o)
        );
    }
    assert_eq!(
        std::fs::read(short.join("manifest.json")).unwrap(),
        br#"{"kind": "run"}"#
    );

    let o = Command::new(libratory())
        .arg("recover")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", dump("libratory recover", &o));
    let records = check_rebuilt(&out, &submitted);
    let s = json(&out.join("summary.json"));
    let m = json(&out.join("manifest.json"));
    assert_eq!(m["mode"], "live");
    assert_eq!(m["recovered"]["complete"], false);
    assert_eq!(s["recovered"]["complete"], false);
    let completed = records.iter().filter(|r| r["finish"].is_number()).count();
    assert!(completed >= 3, "{completed} completed");
    // The run was cut short: jobs in flight or never submitted.
    let undecided = m["recovered"]["undecided"].as_array().unwrap().len();
    let unfinished = m["recovered"]["unfinished"].as_array().unwrap().len();
    let never = m["recovered"]["never_submitted"].as_u64().unwrap() as usize;
    assert!(undecided + unfinished + never > 0, "{}", m["recovered"]);
    assert_eq!(never, 40 - submitted.len());
    // Unfinished jobs are recorded as lost, with why.
    for r in &records {
        let id = r["id"].as_u64().unwrap();
        let open = m["recovered"]["unfinished"]
            .as_array()
            .unwrap()
            .iter()
            .chain(m["recovered"]["undecided"].as_array().unwrap())
            .any(|x| x.as_u64() == Some(id));
        // (A job may also be lost to a node link timing out on a busy
        // machine: that is a final record, not a recovered one.)
        if open {
            assert_eq!(r["lost"], true, "{r}");
            assert!(r["detail"].as_str().unwrap().contains("journal"), "{r}");
        } else {
            assert!(!r["detail"].as_str().unwrap().contains("journal"), "{r}");
        }
    }
    assert!(s["policies"][0]["lost"].as_u64().unwrap() as usize >= undecided + unfinished);

    // The next run into a directory holding an unfinished journal is
    // refused, pointing to `resume` and `recover`, and touches nothing;
    // once recovered, it rebuilds that run aside first (a short run of 2
    // jobs, on 2 node processes: they register in either order).
    let cfg2 = config(dir.path(), 2, 2, 1.0, 0.01);
    let run_again = || {
        Command::new(libratory())
            .args(["run", "--spawn-local", "--config"])
            .arg(&cfg2)
            .arg("--out")
            .arg(&again)
            .output()
            .unwrap()
    };
    let o = run_again();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("unfinished run")
            && err.contains("libratory resume")
            && err.contains("libratory recover"),
        "{}",
        dump("libratory run (unfinished)", &o)
    );
    assert_eq!(
        std::fs::read_dir(&again).unwrap().count(),
        1,
        "only the journal"
    );
    let o = Command::new(libratory())
        .arg("recover")
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}",
        dump("libratory recover (again)", &o)
    );
    let o = run_again();
    assert!(o.status.success(), "{}", dump("libratory run (again)", &o));
    let aside: Vec<PathBuf> = std::fs::read_dir(&again)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("interrupted-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    check_rebuilt(&aside[0], &submitted);
    // And the new run's own results, from a journal that ended.
    assert_eq!(
        json(&again.join("summary.json"))["policies"][0]["submitted"],
        2
    );
    assert_eq!(count_entries(&again.join("journal.jsonl"), "end"), 1);
    // A run that ended is not overwritten by a poorer rebuild.
    let o = Command::new(libratory())
        .arg("recover")
        .arg(&again)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing to recover"),
        "{}",
        dump("recover (ended)", &o)
    );
    // Forced, it rebuilds the very records the run wrote, byte for byte.
    let forced = dir.path().join("forced");
    std::fs::create_dir_all(&forced).unwrap();
    std::fs::copy(again.join("journal.jsonl"), forced.join("journal.jsonl")).unwrap();
    let o = Command::new(libratory())
        .arg("recover")
        .arg(&forced)
        .arg("--force")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", dump("recover --force", &o));
    for f in [
        "jobs-libra.jsonl",
        "jobs-libra.csv",
        "out_jobs-libra.csv",
        "schedule-libra.swf",
    ] {
        assert_eq!(
            std::fs::read_to_string(forced.join(f)).unwrap(),
            std::fs::read_to_string(again.join(f)).unwrap(),
            "{f}"
        );
    }
    // Node processes in the order they registered, in both summaries
    // (the run listed them in its hash map's order before: this failed
    // whenever the two differed).
    assert_eq!(
        json(&forced.join("summary.json"))["node_processes"],
        json(&again.join("summary.json"))["node_processes"]
    );

    // A line broken in the middle of the journal is an error naming the
    // file and the line.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let half = lines[2].len() / 2;
    lines[2].truncate(half);
    std::fs::write(bad.join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    let o = Command::new(libratory())
        .arg("recover")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("journal.jsonl, line 3:"),
        "{}",
        dump("recover (corrupt)", &o)
    );
}

/// A run that cannot listen (no certificates) fails before it writes or
/// starts anything; one killed before its first job (waiting for node
/// processes) leaves a journal that `resume` has nothing to continue
/// from, and the next run into its directory moves that journal aside and
/// goes on (the directory was not blocked for good).
#[test]
fn a_run_that_stopped_before_its_first_job_does_not_block_its_directory() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), 1, 2, 1.0, 0.01);
    let out = dir.path().join("run");
    // No certificates yet.
    let o = Command::new(libratory())
        .args(["run", "--spawn-local", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("libratory certs --out"),
        "{}",
        dump("run without certificates", &o)
    );
    assert!(!out.join("journal.jsonl").exists(), "a journal was written");
    certs(&dir.path().join("certs"), "local");
    // Without --spawn-local no node process comes: killed while it waits.
    let mut child = Guard::spawn(
        Command::new(libratory())
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let journal = out.join("journal.jsonl");
    let start = std::time::Instant::now();
    while !journal_has_header(&journal) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no journal within 60 s"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // While it runs its journal is its own: another run into the
    // directory, `resume` and `recover` are refused and move nothing.
    for args in [
        vec![
            "run",
            "--spawn-local",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
        ],
        vec!["resume"],
        vec!["recover"],
    ] {
        let o = Command::new(libratory())
            .args(&args)
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            !o.status.success()
                && String::from_utf8_lossy(&o.stderr).contains("a manager is still writing it"),
            "{}",
            dump(args[0], &o)
        );
        assert!(
            journal_has_header(&journal),
            "{}: the journal moved",
            args[0]
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(child);
    let o = Command::new(libratory())
        .arg("resume")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("nothing ran yet"),
        "{}",
        dump("resume", &o)
    );
    let o = Command::new(libratory())
        .args(["run", "--spawn-local", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", dump("run again", &o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stopped before its first job"),
        "{}",
        dump("run again", &o)
    );
    let aside: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("unstarted-"))
        .collect();
    assert_eq!(aside.len(), 1, "one unstarted-* directory");
    assert!(aside[0].path().join("journal.jsonl").is_file());
    assert_eq!(
        json(&out.join("summary.json"))["policies"][0]["submitted"],
        2
    );
}

/// Whether `path` holds at least its header line, whole.
fn journal_has_header(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains('\n'))
}
