//! A live run at scale on loopback: the real `libratory` manager and four
//! real `libratory-node` processes hosting 1,000 emulated nodes that all
//! receive work (real CPU burning, time-scaled), every job with one record.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::protocol::{self, ClientReply};

mod util;
use util::{free_port, libratory, node_bin};

const PROCESSES: usize = 4;
const NODES_PER_PROCESS: usize = 250;
const JOBS: usize = 1500;

/// 4 processes x 250 nodes, one executor each, so the nodes' capacities
/// (250 x 0.002 = 0.5 core per process) add up to the 2 cores of a small
/// test machine. Least-loaded placement spreads the 1,500 single-node jobs,
/// which arrive within one real second and last 0.5-5.5 s each (so that
/// they overlap, and each burns many minimum slices), over every node.
fn config(dir: &Path, port: u16) -> PathBuf {
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.05
start_timeout_s = 60
link_timeout_s = 20
report_ms = 100
heartbeat_ms = 200
histogram_ms = 2000

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = {JOBS}, nodes = {total}, synthetic_arrival_max = 20, placement = "least-loaded" }}

[[hosts]]
name = "local"
processes = {PROCESSES}
nodes_per_process = {NODES_PER_PROCESS}
capacity = 0.002
executors = 1
"#,
        total = PROCESSES * NODES_PER_PROCESS
    );
    let p = dir.join("cluster.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_thousand_active_nodes_in_four_processes_complete_a_workload() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(libratory())
        .args(["certs", "--out"])
        .arg(dir.path().join("certs"))
        .args(["--nodes", "local"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cfg = config(dir.path(), free_port());
    let out = dir.path().join("run");
    let t0 = Instant::now();
    let o = util::output_within(
        Command::new(libratory())
            .args(["run", "--spawn-local", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(300),
    );
    let took = t0.elapsed();
    assert!(
        o.status.success(),
        "run failed: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("1,000-node run took {took:?}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let procs = s["node_processes"].as_array().unwrap();
    assert_eq!(procs.len(), PROCESSES, "{procs:?}");
    let p = &s["policies"][0];
    assert_eq!(p["submitted"], JOBS);
    assert_eq!(p["lost"], 0);

    // One record per job: ids 1..=JOBS, each exactly once.
    let text = std::fs::read_to_string(out.join("jobs-libra.jsonl")).unwrap();
    let mut ids = Vec::new();
    let mut used = BTreeSet::new();
    let (mut accepted, mut finished) = (0, 0);
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        ids.push(r["id"].as_u64().unwrap());
        if r["accepted"].as_bool().unwrap() {
            accepted += 1;
            if !r["finish"].is_null() && !r["lost"].as_bool().unwrap_or(false) {
                finished += 1;
            }
            for n in r["nodes"].as_array().unwrap() {
                used.insert(n.as_u64().unwrap());
            }
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=JOBS as u64).collect::<Vec<_>>());
    // Every accepted job ran to its end on a real node...
    assert!(accepted > JOBS / 2, "only {accepted} of {JOBS} accepted");
    assert_eq!(finished, accepted);
    assert_eq!(p["completed"].as_u64().unwrap(), accepted as u64);
    // ...and every one of the 1,000 emulated nodes ran at least one part.
    assert_eq!(
        used.len(),
        PROCESSES * NODES_PER_PROCESS,
        "only {} distinct nodes ran work",
        used.len()
    );
}

/// `libratory calibrate` on a tiny workload: two time scales, each live run
/// compared with the simulation; the table, calibration.json, the SVG and
/// the host file are written, and `libratory run` then warns about a scale
/// below every tested one (below the safe scale, or no scale is safe).
#[test]
fn calibrate_runs_a_tiny_workload_at_two_scales_and_run_warns_below() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal");
    let host_file = dir.path().join("host-calibration.json");
    let o = util::output_within(
        Command::new(libratory())
            .args([
                "calibrate",
                "--jobs",
                "8",
                "--nodes",
                "2",
                "--scales",
                "0.03,0.06",
            ])
            .arg("--out")
            .arg(&out)
            .arg("--host-file")
            .arg(&host_file),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "calibrate failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("time_scale"), "{stdout}");
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("calibration.json")).unwrap()).unwrap();
    let points = c["points"].as_array().unwrap();
    // The verdict follows from the points (whichever way this host's runs
    // went): the smallest scale that meets the targets with every larger
    // one meeting them too, and the printed advice says exactly that.
    let safe = points
        .iter()
        .take_while(|p| p["meets_targets"].as_bool().unwrap())
        .last()
        .map(|p| p["time_scale"].as_f64().unwrap());
    assert_eq!(c["safe_time_scale"].as_f64(), safe, "{c}");
    match safe {
        Some(x) => assert!(
            stdout.contains(&format!("recommended: time_scale >= {x} ")),
            "{stdout}"
        ),
        None => assert!(
            stdout.contains("no tested time scale meets the targets"),
            "{stdout}"
        ),
    }
    // Largest scale first, each with all 8 jobs compared.
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["time_scale"], 0.06);
    assert_eq!(points[1]["time_scale"], 0.03);
    for p in points {
        assert_eq!(p["jobs"], 8, "{p}");
        for k in ["admission_agreement", "outcome_agreement"] {
            let v = p[k].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "{k} {v}");
        }
        let ok = p["admission_agreement"].as_f64().unwrap() >= 0.98
            && p["outcome_agreement"].as_f64().unwrap() >= 0.95
            && p["qos_diff_pp"].as_f64().unwrap().abs() <= 1.0;
        assert_eq!(p["meets_targets"].as_bool().unwrap(), ok, "{p}");
        assert!(Path::new(p["run_dir"].as_str().unwrap())
            .join("jobs-libra.jsonl")
            .is_file());
    }
    let svg = std::fs::read_to_string(out.join("calibration.svg")).unwrap();
    assert!(svg.contains("<svg"));
    assert_eq!(
        std::fs::read(&host_file).unwrap(),
        std::fs::read(out.join("calibration.json")).unwrap()
    );

    // A run below every tested scale is warned about before it starts (no
    // node processes: it ends at its start timeout).
    let cfg = dir.path().join("low.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "{certs}"
time_scale = 0.001
start_timeout_s = 1

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = 2, nodes = 1 }}

[[hosts]]
name = "local"
nodes_per_process = 1
capacity = 0.1
"#,
            port = free_port(),
            certs = out.join("certs").display()
        ),
    )
    .unwrap();
    let o = Command::new(libratory())
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(dir.path().join("low"))
        .env("LIBRATORY_CALIBRATION", &host_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    // 0.001 is below both tested scales: whichever verdict the host got,
    // the run says which.
    match safe {
        Some(x) => assert!(
            stderr.contains(&format!("time_scale 0.001 is below {x}, ")),
            "{stderr}"
        ),
        None => assert!(
            stderr.contains("no tested time scale matched the simulator"),
            "{stderr}"
        ),
    }
    assert!(stderr.contains("host-calibration.json"), "{stderr}");
}

/// `libratory status` against a cluster whose whole node list does not fit
/// a frame (120,000 nodes: about 4.7 MB listed, over the 4 MiB frame): the
/// manager answers the summary and one page, each answer a small frame;
/// the page past the end is an error naming the pages there are, and
/// `--busy` lists the one node holding a part.
#[test]
fn status_pages_and_summarises_a_cluster_too_big_to_list() {
    const PROCS: usize = 6;
    const PER: usize = 20_000;
    const TOTAL: usize = PROCS * PER;
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    util::certs(&dir.path().join("certs"), "local");
    let port = free_port();
    let cfg = dir.path().join("cluster.toml");
    // Serving, one workload job (done at once): the cluster stays up for
    // the clients. One executor per process serves its 20,000 nodes of
    // 1/20,000 of a core.
    std::fs::write(
        &cfg,
        format!(
            r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 1.0
start_timeout_s = 60
link_timeout_s = 20
report_ms = 500
heartbeat_ms = 1000

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = 1, nodes = {TOTAL} }}

[[hosts]]
name = "local"
processes = {PROCS}
nodes_per_process = {PER}
capacity = 0.00005
executors = 1
"#
        ),
    )
    .unwrap();
    let t0 = Instant::now();
    let _manager = util::Guard::spawn(
        Command::new(libratory())
            .args(["run", "--spawn-local", "--serve", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(dir.path().join("run"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let certs = dir.path().join("certs");
    let status = |args: &[&str]| -> std::process::Output {
        Command::new(libratory())
            .arg("status")
            .args(args)
            .args(["--manager", &format!("127.0.0.1:{port}"), "--certs"])
            .arg(&certs)
            .output()
            .unwrap()
    };
    let json = |args: &[&str]| -> (ClientReply, usize) {
        let o = status(args);
        assert!(
            o.status.success(),
            "status {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: ClientReply = serde_json::from_slice(&o.stdout).unwrap();
        let len = protocol::payload_len(&r);
        (r, len)
    };
    // Every node registered: the summary alone (no node listed) says so.
    let end = Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let o = status(&["--summary", "--json"]);
        if o.status.success() {
            let r: ClientReply = serde_json::from_slice(&o.stdout).unwrap();
            let ClientReply::Status {
                summary,
                nodes,
                page,
                ..
            } = r
            else {
                panic!("{r:?}")
            };
            assert!(nodes.is_empty() && page.is_none());
            if summary.nodes.total == TOTAL {
                assert_eq!((summary.processes, summary.registered), (PROCS, TOTAL));
                break;
            }
        }
        assert!(Instant::now() < end, "the {TOTAL} nodes did not register");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    eprintln!("{TOTAL} nodes registered after {:?}", t0.elapsed());
    // A job that holds one node for the test: 1,000 s of work due in
    // 2,000 s, a share of 0.5 that falls as the node gets ahead (a node
    // this small counts each minimum burn slice as seconds of work).
    let o = Command::new(libratory())
        .args(["submit", "--estimate", "1000", "--deadline", "2000"])
        .args(["--manager", &format!("127.0.0.1:{port}"), "--certs"])
        .arg(&certs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));

    // Page 2 of 1,000 nodes: ids 1,000..1,999 of 120 pages; the frame is a
    // small part of the limit, while the whole list, at these nodes' size
    // each, would not fit one.
    let (r, len) = json(&["--nodes", "2", "--per", "1000", "--json"]);
    let ClientReply::Status {
        summary,
        page,
        nodes,
        ..
    } = &r
    else {
        panic!("{r:?}")
    };
    let w = page.unwrap();
    assert_eq!((w.page, w.per, w.pages, w.matching), (1, 1000, 120, TOTAL));
    let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
    assert_eq!(ids, (1000..2000).collect::<Vec<u32>>());
    assert!(
        len < protocol::MAX_FRAME / 20,
        "a page of 1,000 took {len} bytes"
    );
    let listed: usize = nodes.iter().map(protocol::payload_len).sum();
    assert!(
        listed / nodes.len() * TOTAL > protocol::MAX_FRAME,
        "{listed} bytes for 1,000 nodes: the whole list would fit a frame, the test proves nothing"
    );
    assert_eq!((summary.nodes.total, summary.nodes.busy), (TOTAL, 1));
    assert_eq!(summary.nodes.loads[0], TOTAL - 1);

    // Nodes holding parts: the one.
    let (r, _) = json(&["--busy", "--json"]);
    let ClientReply::Status { page, nodes, .. } = &r else {
        panic!("{r:?}")
    };
    assert_eq!(page.unwrap().matching, 1);
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].parts.len(), 1);
    assert!(
        // A little above 0.5 before the node's first report.
        nodes[0].load > 0.0 && nodes[0].load <= 0.51,
        "{:?}",
        nodes[0]
    );

    // Past the end: an error naming the range.
    let o = status(&["--nodes", "121", "--per", "1000"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("1 to 120"), "{e}");
    // The default: the summary and the first page, with how to see more.
    let o = status(&[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains(&format!("{TOTAL} nodes in {PROCS} node processes"))
            && out.contains("nodes: 1 of 120000 hold 1 parts")
            && out.contains("page 1 of 2400"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("node ")).count(), 50);
}
