//! The `batsim` policy as a user runs it: pybatsim 3.2.1's schedulers
//! unchanged against `libratory simulate` on a slice of the SDSC SP2
//! trace and on a live run of real node processes, each schedule checked,
//! read back by `compare` and `report`; and one run per scheduler fault
//! (tests/batsim/peer.py misbehaves on purpose) in the simulator, the
//! process faults and one impossible decision live too, each ending
//! cleanly with every job recorded.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn libratory(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_libratory"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run libratory")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn sdsc() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz");
    assert!(p.is_file(), "trace missing at {}", p.display());
    p.display().to_string()
}

/// pybatsim 3.2.1, installed by scripts/install-pybatsim.sh (as root; a
/// loud failure otherwise).
fn pybatsim() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-pybatsim.sh");
        let out = Command::new("bash").arg(script).output().expect("run bash");
        assert!(
            out.status.success(),
            "pybatsim 3.2.1 is needed and could not be installed:\n{}",
            text(&out)
        );
    });
}

/// A loopback endpoint on a port free now (tests run side by side).
fn endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp://127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// `out_jobs-<policy>.csv` rows as maps (Batsim's layout).
fn out_jobs(dir: &Path, policy: &str) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join(format!("out_jobs-{policy}.csv"))).unwrap();
    let head = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            head.iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// `jobs-<policy>.csv` rows as maps.
fn jobs(dir: &Path, policy: &str) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join(format!("jobs-{policy}.csv"))).unwrap();
    let head = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            head.iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn ids(alloc: &str) -> Vec<usize> {
    alloc
        .split(' ')
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            let (a, b) = p.split_once('-').unwrap_or((p, p));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

/// The schedule is one a cluster can run: every job one record, each
/// started job after its submission on exactly the resources it asked
/// for, no two jobs on a node at once. Returns how many jobs ran.
fn check_schedule(rows: &[HashMap<String, String>], jobs: usize, nodes: usize) -> usize {
    assert_eq!(rows.len(), jobs, "one record per job");
    let mut seen = std::collections::HashSet::new();
    let mut per_node: Vec<Vec<(f64, f64, String)>> = vec![Vec::new(); nodes];
    let mut ran = 0;
    for r in rows {
        assert!(
            seen.insert(r["job_id"].clone()),
            "job {} twice",
            r["job_id"]
        );
        if r["starting_time"].is_empty() {
            continue;
        }
        ran += 1;
        let (sub, start, end) = (
            r["submission_time"].parse::<f64>().unwrap(),
            r["starting_time"].parse::<f64>().unwrap(),
            r["finish_time"].parse::<f64>().unwrap(),
        );
        assert!(
            start >= sub,
            "job {} starts {start} before its submission {sub}",
            r["job_id"]
        );
        assert!(end >= start);
        let alloc = ids(&r["allocated_resources"]);
        assert_eq!(
            alloc.len().to_string(),
            r["requested_number_of_resources"],
            "job {}",
            r["job_id"]
        );
        for n in alloc {
            assert!(n < nodes, "job {} on node {n}", r["job_id"]);
            per_node[n].push((start, end, r["job_id"].clone()));
        }
    }
    for (n, spans) in per_node.iter_mut().enumerate() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in spans.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "node {n}: job {} [{}, {}) overlaps job {} from {}",
                w[0].2,
                w[0].0,
                w[0].1,
                w[1].2,
                w[1].0
            );
        }
    }
    ran
}

/// Nodes of the libra-risk preset (SDSC SP2's 128).
const NODES: usize = 128;

fn run_pybatsim(scheduler: &str, jobs_n: usize) {
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let cmd = format!("pybatsim {scheduler} -s {ep} -v warning");
    let run = dir.path().join("run");
    let n = jobs_n.to_string();
    let out = libratory(
        &[
            "simulate",
            "--trace",
            &sdsc(),
            "--preset",
            "libra-risk",
            "--set",
            &format!("jobs={n}"),
            "--policies",
            "batsim,fcfs-bf",
            "--batsim-endpoint",
            &ep,
            "--batsim-cmd",
            &cmd,
            "--out",
            run.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("batsim scheduler:"), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");
    let rows = out_jobs(&run, "batsim");
    let ran = check_schedule(&rows, jobs_n, NODES);
    // These schedulers reject only jobs wider than the cluster (none in
    // this slice): every job runs.
    assert_eq!(ran, jobs_n, "{stdout}");
    check_schedule(&out_jobs(&run, "fcfs-bf"), jobs_n, NODES);
    // compare and report read the run like any other.
    let cmp = libratory(
        &[
            "compare",
            run.to_str().unwrap(),
            run.to_str().unwrap(),
            "--policy-a",
            "batsim",
            "--policy-b",
            "fcfs-bf",
        ],
        dir.path(),
    );
    assert!(cmp.status.success(), "{}", text(&cmp));
    let report_dir = dir.path().join("report");
    let rep = libratory(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            report_dir.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(rep.status.success(), "{}", text(&rep));
    let html = std::fs::read_to_string(report_dir.join("report.html")).unwrap();
    assert!(html.contains("batsim"));
}

#[test]
fn pybatsim_filler_sched_runs_unchanged() {
    run_pybatsim("fillerSched", 200);
}

#[test]
fn pybatsim_easy_backfill_runs_unchanged() {
    run_pybatsim("easyBackfill", 200);
}

#[test]
fn pybatsim_sched_fcfs_runs_unchanged() {
    run_pybatsim("schedFcfs", 120);
}

#[test]
fn pybatsim_sched_easy_sjf_backfill_runs_unchanged() {
    run_pybatsim("schedEasySjfBackfill", 80);
}

/// A run whose scheduler fails: the error names the failure, the run
/// directory is written, every job has one record and each job the
/// scheduler did not decide is rejected with reason `scheduler`.
fn faulty(mode: Option<&str>, want: &str) {
    // The peer needs pyzmq, which comes with pybatsim.
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let run = dir.path().join("run");
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/batsim/peer.py");
    let cmd = mode.map(|m| format!("python3 {} {ep} {m}", peer.display()));
    // Short only where the wait is the point (no scheduler, one that
    // hangs); elsewhere the first answer includes starting python and
    // importing pyzmq, which a loaded host may stretch past 2 s.
    let timeout = if matches!(mode, None | Some("hangs")) {
        "2"
    } else {
        "60"
    };
    let mut args = vec![
        "simulate",
        "--trace",
        &sdsc(),
        "--preset",
        "libra-risk",
        "--set",
        "jobs=30",
        "--policies",
        "batsim",
        "--batsim-endpoint",
        &ep,
        "--batsim-timeout",
        timeout,
        "--out",
        run.to_str().unwrap(),
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    if let Some(c) = cmd {
        args.push("--batsim-cmd".into());
        args.push(c);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = libratory(&args, dir.path());
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("the batsim scheduler failed"), "{all}");
    assert!(all.contains(want), "wanted {want:?} in {all}");
    assert!(run.join("summary.json").is_file(), "{all}");
    let rows = jobs(&run, "batsim");
    assert_eq!(rows.len(), 30, "one record per job");
    let mut lost = 0;
    for r in &rows {
        if r["accepted"] != "true" {
            assert_eq!(r["reason"], "scheduler", "{r:?}");
            assert!(r["detail"].contains("the scheduler failed"), "{r:?}");
            lost += 1;
        }
    }
    assert!(lost > 0, "{all}");
    check_schedule(&out_jobs(&run, "batsim"), 30, NODES);
}

#[test]
fn fault_scheduler_not_there() {
    faulty(None, "no scheduler at tcp://127.0.0.1:");
}

#[test]
fn fault_scheduler_dies_mid_run() {
    faulty(Some("dies"), "exited");
}

#[test]
fn fault_scheduler_hangs() {
    faulty(Some("hangs"), "did not answer within 2.0 s");
}

#[test]
fn fault_malformed_json() {
    faulty(Some("malformed"), "malformed message from the scheduler");
}

#[test]
fn fault_overlapping_allocation() {
    faulty(Some("overlap"), "which job 'w0!");
}

#[test]
fn fault_unknown_node() {
    faulty(Some("unknown-node"), "names resource 100000; there are 128");
}

#[test]
fn fault_unknown_job() {
    faulty(Some("unknown-job"), "unknown job 'w0!999999999'");
}

/// A live run (`libratory run --spawn-local`: real node processes over
/// QUIC) of `jobs` jobs of the Libra paper's batch on `nodes` emulated
/// nodes under the `batsim` policy, its scheduler started with `cmd`. At
/// time_scale 0.01 (the demo's 0.05 takes a minute for 10 jobs), which is
/// plenty for a schedule check. Stopped (SIGINT, then SIGKILL to its
/// process group) if the test lets go of it before it ends: a failed
/// assertion leaves nothing running.
struct Live {
    child: std::process::Child,
    out: PathBuf,
    err: PathBuf,
}

impl Live {
    fn start(
        dir: &Path,
        run: &Path,
        ep: &str,
        cmd: &str,
        jobs: usize,
        nodes: usize,
        timeout: &str,
    ) -> Live {
        let certs = dir.join("certs");
        let o = libratory(
            &[
                "certs",
                "--out",
                certs.to_str().unwrap(),
                "--nodes",
                "local",
            ],
            dir,
        );
        assert!(o.status.success(), "{}", text(&o));
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = dir.join("cluster.toml");
        std::fs::write(
            &cfg,
            format!(
                "[manager]\nlisten = \"127.0.0.1:{port}\"\ncerts = \"{}\"\ntime_scale = 0.01\n\
                 start_timeout_s = 20\nlink_timeout_s = 5\n\
                 [workload]\npreset = \"libra\"\npolicy = \"batsim\"\n\
                 set = {{ jobs = {jobs}, nodes = {nodes}, synthetic_arrival_max = {jobs} }}\n\
                 [[hosts]]\nname = \"local\"\nprocesses = 1\nnodes_per_process = {nodes}\ncapacity = {}\n",
                certs.display(),
                1.0 / nodes as f64
            ),
        )
        .unwrap();
        let (out, err) = (dir.join("live.out"), dir.join("live.err"));
        let child = Command::new(env!("CARGO_BIN_EXE_libratory"))
            .args(["run", "--spawn-local", "--config"])
            .arg(&cfg)
            .args(["--batsim-endpoint", ep, "--batsim-cmd", cmd])
            .args(["--batsim-timeout", timeout, "--out"])
            .arg(run)
            .current_dir(dir)
            // Its own group, so the guard reaches its node process.
            .process_group(0)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("start libratory run");
        Live { child, out, err }
    }

    /// Waits for the run to end (at most `limit`): its exit status and
    /// its output.
    fn wait(&mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        let end = Instant::now() + limit;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < end,
                "the live run did not end within {limit:?}:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        (status, self.output())
    }

    fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            std::fs::read_to_string(&self.err).unwrap_or_default()
        )
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = self.child.id() as libc::pid_t;
            // SIGINT first: the run stops its scheduler and node processes
            // itself; then nothing of its group is left running.
            // SAFETY: kill(2) on the child and on the group it leads.
            unsafe { libc::kill(pid, libc::SIGINT) };
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            // SAFETY: as above, the group this test's child leads.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

/// How long a live run of these tests may take (they end in seconds;
/// generous for a loaded host).
const LIVE_LIMIT: Duration = Duration::from_secs(180);

/// pybatsim's `scheduler` unchanged on a live cluster of real node
/// processes: the schedule holds, the scheduler's decisions are
/// timed in the run's histograms, and `compare` and `report` read the run.
fn run_pybatsim_live(scheduler: &str) {
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let cmd = format!("pybatsim {scheduler} -s {ep} -v warning");
    let run = dir.path().join("run");
    let (jobs, nodes) = (8, 4);
    let mut live = Live::start(dir.path(), &run, &ep, &cmd, jobs, nodes, "30");
    let (status, all) = live.wait(LIVE_LIMIT);
    assert!(status.success(), "{all}");
    assert!(all.contains("batsim scheduler:"), "{all}");
    assert!(!all.contains("scheduler failed"), "{all}");
    assert!(all.contains("submit_to_decision_us"), "{all}");
    // The scheduler's round trips are timed beside them.
    assert!(all.contains("scheduler_reply_us"), "{all}");
    let rows = out_jobs(&run, "batsim");
    let ran = check_schedule(&rows, jobs, nodes);
    // The batch's jobs all fit the cluster: every one runs.
    assert_eq!(ran, jobs, "{all}");
    let cmp = libratory(
        &[
            "compare",
            run.to_str().unwrap(),
            run.to_str().unwrap(),
            "--policy-a",
            "batsim",
            "--policy-b",
            "batsim",
        ],
        dir.path(),
    );
    assert!(cmp.status.success(), "{}", text(&cmp));
    let report_dir = dir.path().join("report");
    let rep = libratory(
        &[
            "report",
            run.to_str().unwrap(),
            "--out",
            report_dir.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(rep.status.success(), "{}", text(&rep));
    let html = std::fs::read_to_string(report_dir.join("report.html")).unwrap();
    assert!(html.contains("batsim"));
}

#[test]
fn pybatsim_filler_sched_runs_live() {
    run_pybatsim_live("fillerSched");
}

#[test]
fn pybatsim_easy_backfill_runs_live() {
    run_pybatsim_live("easyBackfill");
}

#[test]
fn pybatsim_sched_fcfs_runs_live() {
    run_pybatsim_live("schedFcfs");
}

#[test]
fn pybatsim_sched_easy_sjf_backfill_runs_live() {
    run_pybatsim_live("schedEasySjfBackfill");
}

/// A live run whose scheduler fails (tests/batsim/peer.py in `mode`):
/// the run ends by itself, says what happened, and records every job,
/// each one the scheduler did not decide rejected with reason `scheduler`.
fn live_faulty(mode: &str, want: &str) {
    // The peer needs pyzmq, which comes with pybatsim.
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let run = dir.path().join("run");
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/batsim/peer.py");
    let cmd = format!("python3 {} {ep} {mode}", peer.display());
    let (jobs, nodes) = (8, 4);
    // As in `faulty`: short only for the scheduler that hangs.
    let timeout = if mode == "hangs" { "2" } else { "60" };
    let mut live = Live::start(dir.path(), &run, &ep, &cmd, jobs, nodes, timeout);
    let (status, all) = live.wait(LIVE_LIMIT);
    assert!(status.success(), "{all}");
    assert!(all.contains("the batsim scheduler failed"), "{all}");
    assert!(all.contains(want), "wanted {want:?} in {all}");
    let rows = self::jobs(&run, "batsim");
    assert_eq!(rows.len(), jobs, "one record per job: {all}");
    let lost = rows
        .iter()
        .filter(|r| r["accepted"] != "true")
        .inspect(|r| {
            assert_eq!(r["reason"], "scheduler", "{r:?}");
            assert!(r["detail"].contains("the scheduler failed"), "{r:?}");
        })
        .count();
    assert!(lost > 0, "{all}");
    check_schedule(&out_jobs(&run, "batsim"), jobs, nodes);
}

#[test]
fn fault_scheduler_dies_mid_run_live() {
    live_faulty("dies", "exited (exit status: 3)");
}

#[test]
fn fault_scheduler_hangs_live() {
    live_faulty("hangs", "did not answer within 2.0 s");
}

#[test]
fn fault_overlapping_allocation_live() {
    live_faulty("overlap", "which job 'w0!");
}

/// A Batsim JSON workload (tests/batsim/three-jobs.json: 4 resources, a
/// 20 s delay profile and a 1e10-flop parallel_homogeneous one) through
/// pybatsim's fillerSched. By hand, with fillerSched's 5 ms per decision
/// and times rebased to the first submission: job 1 (2 nodes) runs
/// 0.005-20.005; job 3 (1 node, at 2) 2.005-22.005 on node 2; job 2 (all
/// 4, at 1) waits for both, is decided at 22.005 + 0.005 and runs 1e10 /
/// 1e9 = 10 s: 22.01-32.01.
#[test]
fn batsim_json_workload_runs_as_worked_out_by_hand() {
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let run = dir.path().join("run");
    let w = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/batsim/three-jobs.json");
    let cmd = format!("pybatsim fillerSched -s {ep} -v warning");
    let out = libratory(
        &[
            "simulate",
            "--workload",
            w.to_str().unwrap(),
            "--preset",
            "libra-risk",
            "--policies",
            "batsim,fcfs-bf",
            "--batsim-endpoint",
            &ep,
            "--batsim-cmd",
            &cmd,
            "--out",
            run.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    let rows = out_jobs(&run, "batsim");
    check_schedule(&rows, 3, 4);
    let got: Vec<(String, f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["job_id"].clone(),
                r["starting_time"].parse().unwrap(),
                r["finish_time"].parse().unwrap(),
            )
        })
        .collect();
    let want = [
        ("1", 0.005, 20.005),
        ("2", 22.01, 32.01),
        ("3", 2.005, 22.005),
    ];
    for ((id, s, f), (wid, ws, wf)) in got.iter().zip(want) {
        assert_eq!(id, wid);
        assert!((s - ws).abs() < 1e-6 && (f - wf).abs() < 1e-6, "{got:?}");
    }
    // The built-in policies read it too.
    check_schedule(&out_jobs(&run, "fcfs-bf"), 3, 4);
    // An unsupported profile is named with its job.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&w)
            .unwrap()
            .replace("parallel_homogeneous", "smpi"),
    )
    .unwrap();
    let out = libratory(
        &[
            "simulate",
            "--workload",
            bad.to_str().unwrap(),
            "--policies",
            "fcfs-bf",
        ],
        dir.path(),
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("bad.json") && all.contains("profile 'ph' (job '2')") && all.contains("smpi"),
        "{all}"
    );
}

/// evalys 4.0.7, installed by scripts/install-evalys.sh (as root; a loud
/// failure otherwise).
fn evalys() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-evalys.sh");
    let out = Command::new("bash").arg(script).output().expect("run bash");
    assert!(
        out.status.success(),
        "evalys 4.0.7 is needed and could not be installed:\n{}",
        text(&out)
    );
}

/// Batsim's analysis library reads a simulated run's `out_jobs` CSV, for
/// a space-shared and a time-shared policy: every job, with the ids,
/// submit, start and finish times of the run's own job records, and its
/// utilisation (from `allocated_resources`) never above the cluster for
/// the space-shared policy.
#[test]
fn evalys_reads_out_jobs() {
    evalys();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let out = libratory(
        &[
            "simulate",
            "--trace",
            &sdsc(),
            "--preset",
            "libra-risk",
            "--set",
            "jobs=200",
            "--policies",
            "fcfs-bf,libra",
            "--out",
            run.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    for policy in ["fcfs-bf", "libra"] {
        let csv = run.join(format!("out_jobs-{policy}.csv"));
        let py = format!(
            "import json\n\
             from evalys.jobset import JobSet\n\
             num = lambda x: None if x != x else float(x)\n\
             js = JobSet.from_csv({csv:?})\n\
             print(json.dumps({{'max_load': float(js.utilisation['load'].max())}}))\n\
             for _, r in js.df.iterrows():\n\
             \x20   print(json.dumps({{'id': int(r.jobID), 'submit': float(r.submission_time), \
             'start': num(r.starting_time), 'finish': num(r.finish_time), \
             'state': r.final_state, 'procs': int(r.requested_number_of_resources)}}))\n",
            csv = csv.to_str().unwrap()
        );
        let o = Command::new("python3")
            .args(["-c", &py])
            .output()
            .expect("run python3");
        assert!(o.status.success(), "evalys on {policy}: {}", text(&o));
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (head, rows) = lines.split_first().unwrap();
        assert_eq!(rows.len(), 200, "{policy}");
        let max_load = head["max_load"].as_f64().unwrap();
        // Space-shared: never more processors busy than the cluster has;
        // time-shared jobs share nodes, so their load can exceed it.
        assert!(max_load > 0.0, "{policy}: {max_load}");
        if policy == "fcfs-bf" {
            assert!(max_load <= NODES as f64, "{policy}: {max_load}");
        }
        let ours: HashMap<u64, serde_json::Value> =
            std::fs::read_to_string(run.join(format!("jobs-{policy}.jsonl")))
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    (v["id"].as_u64().unwrap(), v)
                })
                .collect();
        let mut completed = 0;
        for r in rows {
            let j = &ours[&r["id"].as_u64().unwrap()];
            let close = |a: &serde_json::Value, b: &serde_json::Value| {
                (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-6
            };
            assert!(close(&r["submit"], &j["submit"]), "{r} {j}");
            assert_eq!(r["procs"], j["processors"], "{r} {j}");
            if r["state"] == "COMPLETED_SUCCESSFULLY" {
                completed += 1;
                assert!(close(&r["start"], &j["start"]), "{r} {j}");
                assert!(close(&r["finish"], &j["finish"]), "{r} {j}");
            }
        }
        assert!(completed > 100, "{policy}: {completed} completed");
    }
}

/// Live, time runs while the scheduler thinks: with a scheduler that takes
/// 0.5 s per request (tests/batsim/peer.py slow), the arrivals and
/// completions of meanwhile go together in its next request, one request
/// at a time; its KILL_JOB of a running job stops the job on its node; the
/// run ends with SIMULATION_ENDS.
#[test]
fn live_requests_batch_the_events_of_a_slow_scheduler() {
    pybatsim();
    let dir = tempfile::tempdir().unwrap();
    let ep = endpoint();
    let run = dir.path().join("run");
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/batsim/peer.py");
    let log = dir.path().join("requests.log");
    let cmd = format!("python3 {} {ep} slow {}", peer.display(), log.display());
    let (jobs, nodes) = (8, 4);
    let mut live = Live::start(dir.path(), &run, &ep, &cmd, jobs, nodes, "30");
    let (status, all) = live.wait(LIVE_LIMIT);
    assert!(status.success(), "{all}");
    assert!(!all.contains("scheduler failed"), "{all}");
    // The peer has read SIMULATION_ENDS once its log says so; the run
    // waits for that reply before it stops the peer.
    let requests: Vec<Vec<String>> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests[0], ["SIMULATION_BEGINS"]);
    assert!(
        requests.last().unwrap().last().unwrap() == "SIMULATION_ENDS",
        "{requests:?}"
    );
    // The 8 arrivals (within 0.08 s of each other at time_scale 0.01)
    // came while the scheduler thought about SIMULATION_BEGINS or the
    // first of them: fewer requests than submissions, and one carrying
    // several.
    let submitted: Vec<usize> = requests
        .iter()
        .map(|r| r.iter().filter(|t| *t == "JOB_SUBMITTED").count())
        .collect();
    assert_eq!(submitted.iter().sum::<usize>(), jobs, "{requests:?}");
    assert!(submitted.iter().any(|&n| n >= 2), "{requests:?}");
    // Each job one record; the first one started was killed while it ran.
    let rows = self::jobs(&run, "batsim");
    assert_eq!(rows.len(), jobs, "{all}");
    let killed: Vec<_> = rows
        .iter()
        .filter(|r| r["detail"].contains("by the scheduler (KILL_JOB)"))
        .collect();
    assert_eq!(killed.len(), 1, "{rows:?}");
    let ended = requests
        .iter()
        .flatten()
        .filter(|t| *t == "JOB_KILLED")
        .count();
    assert_eq!(ended, 1, "{requests:?}");
    assert_eq!(check_schedule(&out_jobs(&run, "batsim"), jobs, nodes), jobs);
}
