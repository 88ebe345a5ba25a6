//! Live runs on loopback: the real `libratory` manager and real
//! `libratory-node` processes over QUIC with mutual TLS.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::protocol::{self, Hello, ManagerMsg, NodeInfo, NodeMsg, Role};
use net::{self, Timeouts};

mod util;
use util::{certs, free_port, libratory, node_bin, run_local, Guard};

fn config(
    dir: &Path,
    port: u16,
    processes: usize,
    nodes: usize,
    extra_set: &str,
    policy: &str,
) -> PathBuf {
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.01
start_timeout_s = 20
link_timeout_s = 5
report_ms = 50
heartbeat_ms = 100
histogram_ms = 500

[workload]
preset = "libra"
policy = "{policy}"
set = {{ jobs = 16, nodes = {total}, synthetic_arrival_max = 20 {extra_set} }}

[[hosts]]
name = "local"
processes = {processes}
nodes_per_process = {nodes}
capacity = 0.2
"#,
        total = processes * nodes
    );
    let p = dir.join("cluster.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn dump(what: &str, o: &Output) {
    eprintln!(
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// The other thread arrangements (benchmarks compare them) run the same
/// workload to the end, one record per job; an unknown arrangement is a
/// clear error naming the variable and the choices.
#[test]
fn every_thread_arrangement_runs_the_workload() {
    let _ = node_bin();
    for threads in ["one", "admission"] {
        let dir = tempfile::tempdir().unwrap();
        certs(&dir.path().join("certs"), "local");
        let cfg = config(dir.path(), free_port(), 2, 2, "", "libra");
        let out = dir.path().join("run");
        let o = run_local(&cfg, &out)
            .env("LIBRATORY_MANAGER_THREADS", threads)
            .output()
            .unwrap();
        if !o.status.success() {
            dump("libratory run", &o);
            panic!("run failed with LIBRATORY_MANAGER_THREADS={threads}");
        }
        let p = &summary(&out)["policies"][0];
        assert_eq!(p["submitted"], 16, "{threads}");
        let accepted = p["accepted"].as_u64().unwrap();
        assert!(accepted > 0, "{threads}");
        assert_eq!(p["completed"].as_u64().unwrap(), accepted, "{threads}");
        let jobs = std::fs::read_to_string(out.join("jobs-libra.csv")).unwrap();
        assert_eq!(jobs.lines().count(), 17, "{threads}: one record per job");
    }
    let dir = tempfile::tempdir().unwrap();
    certs(&dir.path().join("certs"), "local");
    let cfg = config(dir.path(), free_port(), 1, 1, "", "libra");
    let o = run_local(&cfg, &dir.path().join("run"))
        .env("LIBRATORY_MANAGER_THREADS", "two")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("LIBRATORY_MANAGER_THREADS=two") && err.contains("split"),
        "{err}"
    );
}

#[test]
fn manager_and_two_node_processes_run_a_workload() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    certs(&dir.path().join("certs"), "local");
    let port = free_port();
    let cfg = config(dir.path(), port, 2, 2, "", "libra");
    let out = dir.path().join("run");
    let o = run_local(&cfg, &out).output().unwrap();
    if !o.status.success() {
        dump("libratory run", &o);
        panic!("run failed");
    }
    let s = summary(&out);
    let p = &s["policies"][0];
    assert_eq!(p["submitted"], 16);
    assert_eq!(s["node_processes"].as_array().unwrap().len(), 2);
    let accepted = p["accepted"].as_u64().unwrap();
    assert!(accepted > 0);
    // Every accepted job ran to completion on real nodes.
    assert_eq!(p["completed"].as_u64().unwrap(), accepted);
    assert_eq!(p["lost"], 0);
    // Latency histograms were filled: decisions, starts, reports, RTT,
    // and the nodes handed theirs over.
    for h in [
        "submit_to_decision_us",
        "dispatch_to_start_us",
        "report_latency_us",
        "quic_rtt_us",
    ] {
        assert!(
            s["latency_us"][h]["count"].as_u64().unwrap() > 0,
            "{h} empty"
        );
    }
    assert!(!s["node_latency_us"].as_object().unwrap().is_empty());
    let hlog = std::fs::read_to_string(out.join("histograms/manager.hlog")).unwrap();
    assert!(hlog.contains("submit_to_decision_us"));
    // The nodes handed histograms over at intervals (every 500 ms), not
    // only at the end: more intervals than the 2 processes x 3 histograms
    // of a single final hand-over, with increasing start times.
    let nlog = std::fs::read_to_string(out.join("histograms/nodes.hlog")).unwrap();
    let intervals: Vec<&str> = nlog
        .lines()
        .filter(|l| l.starts_with("Tag=") && l.contains("share_error_ppm"))
        .collect();
    assert!(intervals.len() > 2, "{nlog}");
    assert!(out.join("jobs-libra.csv").is_file());
    assert!(out.join("logs/node-local-0.log").is_file());
    // The same run directory as a simulated run's, with mode "live".
    for f in [
        "jobs-libra.jsonl",
        "out_jobs-libra.csv",
        "schedule-libra.swf",
        "log.txt",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["mode"], "live");
    assert_eq!(s["mode"], "live");
    assert_eq!(m["seed"], s["seed"]);
    assert_eq!(m["config"]["cluster"]["workload"]["policy"], "libra");
    assert_eq!(m["node_processes"].as_array().unwrap().len(), 2);
    assert_eq!(m["node_processes"][0]["exit"], "exit status: 0");
    assert!(m["host"]["cores"].as_u64().unwrap() >= 1);
    // Records are on the workload's axis: the first arrival is where the
    // workload puts it, not late by the registration time.
    let csv = std::fs::read_to_string(out.join("jobs-libra.csv")).unwrap();
    let first: f64 = csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(first < 20.0, "first arrival {first}");
}

/// Connects with a valid certificate, sends `bytes` after the TLS
/// handshake and reads until the manager ends the connection. Passes (the
/// close reason) only if the manager closed the connection with
/// [`protocol::CLOSE_REFUSED`] and said nothing but its own hello; fails
/// if it answered anything else, closed as if all were well, or kept
/// silent without closing (a timeout is a failure, not a pass).
async fn stranger(addr: SocketAddr, certs: &Path, bytes: Vec<u8>) -> Result<String, String> {
    let ep = net::client_endpoint(
        "127.0.0.1:0".parse().unwrap(),
        certs,
        "node-local",
        Timeouts::default(),
    )
    .map_err(|e| e.to_string())?;
    let conn = net::connect(&ep, addr).await.map_err(|e| e.to_string())?;
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(&bytes).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4096];
    let mut dec = protocol::Decoder::new();
    let mut frames = 0;
    let closed = loop {
        // The manager drops a silent peer after its link timeout (5 s
        // here): 20 s is the most it may take on a loaded host.
        match tokio::time::timeout(Duration::from_secs(20), recv.read(&mut buf)).await {
            Err(_) => return Err("no close within 20 s (the manager kept the stranger)".into()),
            Ok(Ok(Some(n))) => {
                dec.feed(&buf[..n]);
                while let Ok(Some(p)) = dec.next_payload() {
                    frames += 1;
                    let hello = protocol::decode_hello(&p);
                    if frames > 1 || !matches!(&hello, Ok(h) if h.role == Role::Manager) {
                        let what = protocol::decode_payload::<ManagerMsg>("m", &p);
                        return Err(format!("answered beyond the hello: {what:?}"));
                    }
                }
            }
            // The stream ended: the connection's fate says how.
            Ok(Ok(None)) => {
                match tokio::time::timeout(Duration::from_secs(5), conn.closed()).await {
                    Ok(e) => break e,
                    Err(_) => return Err("stream ended but the connection stayed open".into()),
                }
            }
            Ok(Err(quinn::ReadError::ConnectionLost(e))) => break e,
            Ok(Err(e)) => return Err(format!("stream error, not a refusal: {e}")),
        }
    };
    match closed {
        quinn::ConnectionError::ApplicationClosed(c)
            if c.error_code == quinn::VarInt::from_u32(protocol::CLOSE_REFUSED) =>
        {
            Ok(String::from_utf8_lossy(&c.reason).into_owned())
        }
        other => Err(format!("closed, but not as a refusal: {other}")),
    }
}

#[test]
fn strangers_are_refused() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");
    let port = free_port();
    let cfg = config(dir.path(), port, 1, 1, "", "libra");
    let mut manager = Guard::spawn(
        Command::new(libratory())
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(dir.path().join("run"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Listening once it answers a client.
    wait_status(port, &certs_dir, "the manager to answer", |_| Some(()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut bad_version = Hello::new(Role::Node, "libratory-node 99");
    bad_version.version += 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "wrong protocol version",
            protocol::encode(&bad_version),
            "version mismatch",
        ),
        (
            "oversize frame",
            {
                let mut b = protocol::encode(&Hello::new(Role::Node, "x"));
                b.extend_from_slice(&((protocol::MAX_FRAME as u32) + 1).to_be_bytes());
                b.extend_from_slice(&[0u8; 64]);
                b
            },
            "exceeds",
        ),
        (
            "not our protocol",
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            "exceeds",
        ),
        (
            "register before hello",
            protocol::encode(&NodeMsg::Register {
                host: "x".into(),
                nodes: vec![NodeInfo {
                    local: 0,
                    capacity: 0.1,
                    speed: 1.0,
                    memory_kb: 1,
                    disk_mb: 1,
                }],
                pid: 1,
            }),
            "not a Libratory process",
        ),
    ];
    for (what, bytes, why) in cases {
        let r = rt.block_on(stranger(addr, &certs_dir, bytes));
        assert!(
            matches!(&r, Ok(reason) if reason.contains(why)),
            "{what}: {r:?}"
        );
    }
    // A node's hello and then nothing: while the stranger is held, a client
    // is served; then the stranger is dropped (after the 5 s link timeout)
    // with a reason, and the manager's log names its address.
    let (silent_peer, closed, held) = rt.block_on(async {
        let ep = net::client_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &certs_dir,
            "node-local",
            Timeouts::default(),
        )
        .unwrap();
        let local = ep.local_addr().unwrap();
        let conn = net::connect(&ep, addr).await.unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&protocol::encode(&Hello::new(
            Role::Node,
            "libratory-node silent",
        )))
        .await
        .unwrap();
        // The manager's hello back: it has read ours and now waits.
        let mut dec = protocol::Decoder::new();
        let mut buf = vec![0u8; 4096];
        while dec.next_payload().unwrap().is_none() {
            let n = recv
                .read(&mut buf)
                .await
                .unwrap()
                .expect("the manager's hello");
            dec.feed(&buf[..n]);
        }
        let certs = certs_dir.clone();
        let status =
            tokio::task::spawn_blocking(move || client(&["status", "--json"], addr.port(), &certs))
                .await
                .unwrap();
        assert!(
            status.status.success(),
            "a client was not served while a stranger was held: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        let t0 = Instant::now();
        let closed = tokio::time::timeout(Duration::from_secs(30), conn.closed())
            .await
            .expect("the silent stranger was kept for 30 s");
        (local, closed, t0.elapsed())
    });
    match &closed {
        quinn::ConnectionError::ApplicationClosed(c)
            if c.error_code == quinn::VarInt::from_u32(protocol::CLOSE_REFUSED) =>
        {
            let reason = String::from_utf8_lossy(&c.reason);
            assert!(reason.contains("hello and then nothing"), "{reason}");
        }
        other => panic!("the silent stranger was closed, but not as a refusal: {other}"),
    }
    assert!(held < Duration::from_secs(20), "held {held:?}");
    // A node process the core refuses (a capacity out of range) hears it
    // at once, with the reason: the refusal is closed with its code, so
    // the process does not wait out the 10 s it gives a close to come
    // (`REFUSAL_CLOSE_WAIT`; the bound leaves a loaded host 5 s to start
    // the process and shake hands).
    let t0 = Instant::now();
    let o = Command::new(node_bin())
        .args(["--manager", &addr.to_string(), "--certs"])
        .arg(&certs_dir)
        .args(["--name", "local", "--label", "local-9", "--nodes", "1"])
        .args(["--capacity", "5000"])
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("capacity must be"),
        "{}: {err}",
        o.status
    );
    assert!(
        took < Duration::from_secs(5),
        "refused after {took:?}: {err}"
    );
    // The manager survived all of it and still serves a real node.
    let node = Guard::spawn(
        Command::new(node_bin())
            .args(["--manager", &addr.to_string(), "--certs"])
            .arg(&certs_dir)
            .args(["--name", "local", "--nodes", "1", "--capacity", "0.2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let status = wait_timeout(&mut manager, Duration::from_secs(120));
    kill(node);
    let o = manager.wait_with_output().unwrap();
    if status != Some(true) {
        dump("manager", &o);
        panic!("manager did not finish the run");
    }
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.contains(&format!(
            "{silent_peer}: hello and then nothing for 5s; dropped"
        )),
        "no log line naming the silent stranger {silent_peer}:\n{log}"
    );
}

fn wait_timeout(c: &mut Child, t: Duration) -> Option<bool> {
    let end = Instant::now() + t;
    while Instant::now() < end {
        if let Some(s) = c.try_wait().unwrap() {
            return Some(s.success());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.kill();
    None
}

/// Kills a process (and its group) now rather than at the end of the test.
fn kill(c: Guard) {
    drop(c);
}

#[test]
fn a_node_killed_mid_run_loses_its_parts_and_the_run_completes() {
    let nb = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "a,b");
    let port = free_port();
    // Longer jobs so the kill lands while parts run.
    let cfg = config(dir.path(), port, 2, 2, ", synthetic_mips = 20", "libra");
    let out = dir.path().join("run");
    let manager = Guard::spawn(
        Command::new(libratory())
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let addr = format!("127.0.0.1:{port}");
    let spawn = |name: &str| {
        Guard::spawn(
            Command::new(&nb)
                .args(["--manager", &addr, "--certs"])
                .arg(&certs_dir)
                .args(["--name", name, "--nodes", "2", "--capacity", "0.2"])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
    };
    let a = spawn("a");
    let b = spawn("b");
    // Kill node process b once it runs a part (its nodes, labelled
    // "b@HOST (ADDRESS)", show one in a status answer), not after a
    // guessed delay.
    wait_status(port, &certs_dir, "a part running on node process b", |s| {
        s["Status"]["nodes"]
            .as_array()?
            .iter()
            .any(|n| {
                n["host"].as_str().and_then(|h| h.split(['@', ' ']).next()) == Some("b")
                    && n["parts"].as_array().is_some_and(|p| !p.is_empty())
            })
            .then_some(())
    });
    kill(b);
    let o = manager.wait_with_output().unwrap();
    kill(a);
    if !o.status.success() {
        dump("manager", &o);
        panic!("the run did not complete after a node died");
    }
    let s = summary(&out);
    let p = &s["policies"][0];
    assert_eq!(p["submitted"], 16, "no job record lost");
    assert!(p["lost"].as_u64().unwrap() >= 1, "{p}");
    let csv = std::fs::read_to_string(out.join("jobs-libra.csv")).unwrap();
    assert_eq!(csv.lines().count(), 17);
    assert!(csv.contains("lost at"), "lost parts carry their reason");
    let warnings = s["warnings"].to_string();
    assert!(warnings.contains("lost node process"), "{warnings}");
}

fn serve_config(dir: &Path, port: u16, policy: &str, nodes: usize) -> PathBuf {
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.01
start_timeout_s = 20

[workload]
preset = "libra"
policy = "{policy}"
set = {{ jobs = 1 }}

[[hosts]]
name = "local"
nodes_per_process = {nodes}
capacity = 0.2
"#
    );
    let p = dir.join(format!("serve-{policy}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// `libratory submit/quote/status` against a serving manager.
fn client(args: &[&str], port: u16, certs: &Path) -> Output {
    Command::new(libratory())
        .args(args)
        .args(["--manager", &format!("127.0.0.1:{port}"), "--certs"])
        .arg(certs)
        .output()
        .unwrap()
}

/// Waits until the manager answers status with `nodes` emulated nodes
/// registered (a serving manager answers before every process has
/// registered; a submission then would see a smaller cluster).
fn wait_for_status(port: u16, certs: &Path, nodes: usize) {
    let end = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < end {
        let o = client(&["status", "--json"], port, certs);
        if o.status.success() {
            last = String::from_utf8_lossy(&o.stdout).to_string();
            let s: Option<serde_json::Value> = serde_json::from_slice(&o.stdout).ok();
            let n = s
                .as_ref()
                .and_then(|s| s["Status"]["nodes"].as_array().map(Vec::len));
            if n == Some(nodes) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("the manager never answered status with {nodes} nodes; last answer: {last}");
}

/// Polls `status --json` until `done` finds what it waits for in an
/// answer (30 s at most, then fails naming `what` and the last answer).
fn wait_status<T>(
    port: u16,
    certs: &Path,
    what: &str,
    mut done: impl FnMut(&serde_json::Value) -> Option<T>,
) -> T {
    let end = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < end {
        let o = client(&["status", "--json"], port, certs);
        if o.status.success() {
            last = String::from_utf8_lossy(&o.stdout).to_string();
            if let Some(t) = serde_json::from_slice(&o.stdout)
                .ok()
                .as_ref()
                .and_then(&mut done)
            {
                return t;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("waited 30 s for {what}; last status answer: {last}");
}

/// `libratory run --serve --spawn-local` on `cfg`, writing to `out`,
/// returned once its `nodes` emulated nodes have registered.
/// The manager is killed, with its node processes, when the test lets go
/// of it (a serving manager never ends on its own).
fn serving(cfg: &Path, out: &Path, port: u16, certs: &Path, nodes: usize) -> Guard {
    let manager = Guard::spawn(
        Command::new(libratory())
            .args(["run", "--serve", "--spawn-local", "--config"])
            .arg(cfg)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    wait_for_status(port, certs, nodes);
    manager
}

/// [`serving`] a fresh [`serve_config`] for `policy` with `nodes` node
/// processes of one node each, on a free port, writing to `dir/run`:
/// the port and the manager.
fn serve_policy(dir: &Path, certs: &Path, policy: &str, nodes: usize, run: &str) -> (u16, Guard) {
    let port = free_port();
    let cfg = serve_config(dir, port, policy, nodes);
    let manager = serving(&cfg, &dir.join(run), port, certs, nodes);
    (port, manager)
}

#[test]
fn submit_quote_and_status_answer_at_once_with_reasons() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");

    // Libra+$ on 2 nodes: accepted, and rejected for deadline, budget and
    // resources.
    let (port, mut manager) =
        serve_policy(dir.path(), &certs_dir, "libra-plus-dollar", 2, "run-lpd");
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).to_string();
    let o = client(
        &[
            "submit",
            "--estimate",
            "100",
            "--deadline",
            "400",
            "--budget",
            "500",
            "--processors",
            "2",
        ],
        port,
        &certs_dir,
    );
    assert!(
        o.status.success() && out(&o).starts_with("accepted: job"),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("nodes 0, 1") || out(&o).contains("nodes 1, 0"),
        "{}",
        out(&o)
    );
    for (args, reason) in [
        (
            vec!["--estimate", "500", "--deadline", "400", "--budget", "5000"],
            "rejected (deadline)",
        ),
        (
            vec!["--estimate", "100", "--deadline", "400", "--budget", "50"],
            "rejected (budget)",
        ),
        (
            vec![
                "--estimate",
                "100",
                "--deadline",
                "400",
                "--processors",
                "3",
            ],
            "rejected (resources)",
        ),
    ] {
        let mut a = vec!["submit"];
        a.extend(args);
        let o = client(&a, port, &certs_dir);
        assert_eq!(o.status.code(), Some(3), "{}", out(&o));
        assert!(out(&o).contains(reason), "{}", out(&o));
    }
    // A quote: the price per node (PUtil >= 1, so P >= alpha + beta = 1.1)
    // and the decision, without submitting.
    let o = client(
        &[
            "quote",
            "--estimate",
            "100",
            "--deadline",
            "400",
            "--budget",
            "500",
        ],
        port,
        &certs_dir,
    );
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        out(&o).contains("price/s") && out(&o).contains("would be accepted"),
        "{}",
        out(&o)
    );
    // Status: both nodes, the running job, the recent decisions.
    let o = client(&["status"], port, &certs_dir);
    let s = out(&o);
    assert!(
        s.contains("2 nodes") && s.contains("rejected (budget)") && s.contains("accepted on"),
        "{s}"
    );
    // A job spec file with the submission segments, and a bad one.
    let spec = dir.path().join("job.toml");
    std::fs::write(
        &spec,
        "[JobDetails]\nruntime_estimate = 50\n[ResourceRequirements]\nprocessors = 1\n[QoSConstraints]\ndeadline = 500\nbudget = 1000\n",
    )
    .unwrap();
    let o = client(
        &["submit", "--spec", spec.to_str().unwrap()],
        port,
        &certs_dir,
    );
    assert!(o.status.success(), "{}", out(&o));
    std::fs::write(
        &spec,
        "[JobDetails]\nruntime_estimate = -5\n[QoSConstraints]\ndeadline = 500\n",
    )
    .unwrap();
    let o = client(
        &["submit", "--spec", spec.to_str().unwrap()],
        port,
        &certs_dir,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("JobDetails.runtime_estimate"));
    interrupt(&manager);
    assert_eq!(
        wait_timeout(&mut manager, Duration::from_secs(30)),
        Some(true)
    );

    // LibraRisk on one node: a job that keeps the node busy, then a late
    // job that would delay it: rejected for risk.
    let (port, mut manager) = serve_policy(dir.path(), &certs_dir, "libra-risk", 1, "run-risk");
    let o = client(
        &["submit", "--estimate", "1000", "--deadline", "1100"],
        port,
        &certs_dir,
    );
    assert!(o.status.success(), "{}", out(&o));
    // The quote answers for the running policy (LibraRisk: no prices, the
    // risk rejection the submission below gets), not for Libra+$.
    let o = client(
        &["quote", "--estimate", "500", "--deadline", "400"],
        port,
        &certs_dir,
    );
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(
        out(&o).contains("policy libra-risk")
            && out(&o).contains("rejected (risk)")
            && !out(&o).contains("price/s"),
        "{}",
        out(&o)
    );
    let o = client(
        &["submit", "--estimate", "500", "--deadline", "400"],
        port,
        &certs_dir,
    );
    assert_eq!(o.status.code(), Some(3), "{}", out(&o));
    assert!(out(&o).contains("rejected (risk)"), "{}", out(&o));
    interrupt(&manager);
    assert_eq!(
        wait_timeout(&mut manager, Duration::from_secs(30)),
        Some(true)
    );
}

/// How long a node process waits, after its goodbye, for its writer to
/// send what is left: a literal in node/src/link.rs (`timeout(2 s,
/// writer)` at the link's end), not a setting, so it is copied here; if
/// it changes there, change it here.
const NODE_WRITER_GRACE: Duration = Duration::from_secs(2);

/// A served run ends promptly once interrupted: its node processes say
/// goodbye, their writers see their channels end and they exit, and the
/// manager, which waits for them, with them. (A node's report sink once
/// kept the writer's channel open after the link ended, so every node
/// process sat out its writer's grace, [`NODE_WRITER_GRACE`], before
/// exiting: the served run took 2.2 s to end, against 0.35-0.5 s for a
/// debug build on a quiet host.) Ending takes longer on a loaded host, so
/// a slow end is measured again on a fresh served run, three times at
/// most: with that bug, every run ends after the grace.
#[test]
fn an_interrupted_served_run_ends_without_waiting_on_its_nodes() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");
    let mut took = Vec::new();
    for k in 0..3 {
        let run = format!("run-end-{k}");
        let (port, mut manager) = serve_policy(dir.path(), &certs_dir, "libra", 2, &run);
        // A job that runs and completes on a node first, so that its
        // reports went through the relay.
        let o = client(
            &["submit", "--estimate", "10", "--deadline", "400"],
            port,
            &certs_dir,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        // Its completion: no job open.
        wait_status(port, &certs_dir, "the job to complete", |s| {
            (s["Status"]["summary"]["open"].as_u64()? == 0).then_some(())
        });
        let t0 = Instant::now();
        interrupt(&manager);
        assert_eq!(
            wait_timeout(&mut manager, Duration::from_secs(30)),
            Some(true)
        );
        took.push(t0.elapsed());
        if t0.elapsed() < NODE_WRITER_GRACE {
            return;
        }
    }
    panic!("every served run took the node writer's grace or longer to end after the interrupt: {took:?}");
}

/// Sends SIGINT (what Ctrl-C does) to a child.
fn interrupt(c: &Child) {
    let st = Command::new("kill")
        .args(["-INT", &c.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// The newer families run on real nodes too: LibraSLA (whose share rule
/// the nodes must apply) and the space-shared QoPS and EDF.
#[test]
fn sla_and_space_shared_policies_run_on_real_nodes() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    certs(&dir.path().join("certs"), "local");
    for policy in ["libra-sla", "qops", "edf"] {
        let port = free_port();
        let cfg = config(dir.path(), port, 1, 2, "", policy);
        let out = dir.path().join(format!("run-{policy}"));
        let o = run_local(&cfg, &out).output().unwrap();
        if !o.status.success() {
            dump(policy, &o);
            panic!("{policy} failed");
        }
        let s = summary(&out);
        let p = &s["policies"][0];
        assert_eq!(p["policy"], policy);
        assert_eq!(p["submitted"], 16);
        assert_eq!(p["completed"], p["accepted"], "{policy}: {p}");
        assert!(p["accepted"].as_u64().unwrap() > 0, "{policy}: {p}");
    }
}

#[test]
fn loadtest_drives_a_serving_manager_at_two_rates_and_reports_sane_numbers() {
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");
    let (port, mut manager) = serve_policy(dir.path(), &certs_dir, "libra", 2, "run");
    let out = dir.path().join("lt");
    let o = Command::new(libratory())
        .args([
            "loadtest",
            "--manager",
            &format!("127.0.0.1:{port}"),
            "--certs",
        ])
        .arg(&certs_dir)
        .args([
            "--rates",
            "100,300",
            "--seconds",
            "1",
            "--echoes",
            "50",
            "--echo-seconds",
            "0.5",
            "--estimate",
            "0.01",
            "--deadline",
            "100",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    interrupt(&manager);
    let stopped = wait_timeout(&mut manager, Duration::from_secs(30));
    if !o.status.success() {
        dump("libratory loadtest", &o);
        panic!("loadtest failed");
    }
    assert_eq!(stopped, Some(true), "the manager did not stop cleanly");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("on this host: CPU and memory read from /proc"),
        "{text}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("loadtest.json")).unwrap()).unwrap();
    assert_eq!(r["policy"], "libra");
    assert_eq!(r["nodes"], 2);
    assert_eq!(r["node_processes"].as_array().unwrap().len(), 1);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most_cpu = 100.0 * cores as f64 + 5.0;
    let mut used_cpu = (0.0, 0.0);
    for (s, rate) in steps.iter().zip([100.0, 300.0]) {
        let n = rate as u64;
        assert_eq!(s["offered_rate"], rate);
        assert_eq!(s["sent"], n);
        assert_eq!(s["answered"], n, "{s}");
        assert_eq!(s["errors"], 0);
        assert_eq!(
            s["accepted"].as_u64().unwrap() + s["rejected"].as_u64().unwrap(),
            n
        );
        // Paced at the offered rate: submission k leaves no earlier than
        // k / rate after the first, so the n answers span at least
        // (n - 1) / rate on any host (a load can only slow them): above
        // n / (n - 1) x rate the pacing is broken. Below the rate is the
        // host's speed, bounded only loosely (the step ended within 10 s,
        // as its latencies did).
        let achieved = s["achieved_rate"].as_f64().unwrap();
        let most = rate * n as f64 / (n - 1) as f64;
        assert!(achieved > 0.1 * rate && achieved <= most, "{s}");
        let secs = s["seconds"].as_f64().unwrap();
        assert!((achieved - n as f64 / secs).abs() < 1e-6 * achieved, "{s}");
        let l = &s["latency_us"];
        assert_eq!(l["count"], n);
        let (p50, p99, max) = (
            l["p50"].as_u64().unwrap(),
            l["p99"].as_u64().unwrap(),
            l["max"].as_u64().unwrap(),
        );
        assert!(
            p50 > 0 && p50 <= p99 && p99 <= max && max < 10_000_000,
            "{l}"
        );
        assert_eq!(s["echo_us"]["count"], 50);
        // Echoes at the step's rate for 0.5 s, every one answered (none of
        // them reaches the policy: the decision count below is exact).
        let at_rate = &s["echo_at_rate_us"];
        assert_eq!(at_rate["count"], n / 2, "{s}");
        let e99 = at_rate["p99"].as_u64().unwrap();
        assert!(e99 > 0, "{s}");
        let ratio = s["p99_over_echo_at_rate_p99"].as_f64().unwrap();
        assert!((ratio - p99 as f64 / e99 as f64).abs() < 1e-9, "{s}");
        // The manager's own histograms, differenced over the step: one
        // policy decision per submission of this step, and a start for at
        // most every accepted part; plus, at most once, the serving
        // manager's own one-job workload, replayed when it may fall in the
        // first step.
        let decisions = s["policy_compute_us"]["count"].as_u64().unwrap();
        assert!(decisions == n || decisions == n + 1, "{s}");
        let starts = s["dispatch_to_start_us"]["count"].as_u64().unwrap();
        assert!(starts <= s["accepted"].as_u64().unwrap() + 1, "{s}");
        assert!(s["echo_us"]["p50"].as_u64().unwrap() > 0);
        // The manager reported its own use; the node process was read
        // from /proc. CPU is a share of one core: at most this host's
        // cores x 100 (plus a clock tick's rounding over the step).
        let m = &s["manager"];
        assert_eq!(m["pid"].as_u64(), Some(u64::from(manager.id())), "{m}");
        assert!(m["rss_kb"].as_u64().unwrap() > 1000, "{m}");
        assert!(m["rss_kb"].as_u64() <= m["peak_rss_kb"].as_u64(), "{m}");
        let cpu = m["cpu_percent"].as_f64().unwrap();
        assert!((0.0..=most_cpu).contains(&cpu), "{m}");
        let nodes = s["nodes_cpu_percent"].as_f64().unwrap();
        assert!((0.0..=most_cpu).contains(&nodes), "{s}");
        used_cpu.0 += cpu;
        used_cpu.1 += nodes;
        assert_eq!(s["local"].as_array().unwrap().len(), 1);
    }
    // Deciding 400 submissions and answering 300 echoes over QUIC costs
    // the manager tens of ms of CPU at the least (a debug build: more),
    // and running the accepted parts costs the node process some: a
    // reading of none is a broken reading, whatever the host's speed.
    assert!(
        used_cpu.0 > 0.0 && used_cpu.1 > 0.0,
        "manager, nodes CPU % summed over the steps: {used_cpu:?}"
    );
    for f in [
        "loadtest.csv",
        "saturation.svg",
        "latency.svg",
        "manifest.json",
        "log.txt",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(out.join("loadtest.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3);
}

/// `libratory-node probe` against `libratory probe-server`: a host with the
/// cluster's certificate gets through; one from another CA is refused, and
/// a port nobody answers on is reported as such, each saying what to check.
#[test]
fn preflight_probe_reaches_the_probe_server_and_says_why_not() {
    let nb = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");
    let other = dir.path().join("other");
    certs(&other, "local");
    let port = free_port();
    let cfg = config(dir.path(), port, 1, 1, "", "libra");
    let server = Guard::spawn(
        Command::new(libratory())
            .args(["probe-server", "--for-s", "20", "--expect", "1", "--config"])
            .arg(&cfg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let addr = format!("127.0.0.1:{port}");
    let probe = |certs: &Path, addr: &str| {
        Command::new(&nb)
            .args([
                "probe",
                "--manager",
                addr,
                "--name",
                "local",
                "--timeout-s",
                "2",
                "--certs",
            ])
            .arg(certs)
            .output()
            .unwrap()
    };
    // The server may still be binding: retry the good probe briefly.
    let mut good = probe(&certs_dir, &addr);
    for _ in 0..10 {
        if good.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
        good = probe(&certs_dir, &addr);
    }
    if !good.status.success() {
        dump("probe", &good);
        panic!("the probe did not get through");
    }
    assert!(String::from_utf8_lossy(&good.stdout).contains("certificate node-local accepted"));
    let o = server.wait_with_output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 probe(s) answered"));

    // Another CA: the server refuses the handshake.
    let server = Guard::spawn(
        Command::new(libratory())
            .args(["probe-server", "--for-s", "20", "--expect", "1", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    // The server may still be binding ("no answer"): retry until it
    // answers, with a refusal.
    let end = Instant::now() + Duration::from_secs(20);
    let mut bad = probe(&other, &addr);
    while String::from_utf8_lossy(&bad.stderr).contains("no answer from") && Instant::now() < end {
        bad = probe(&other, &addr);
    }
    kill(server);
    assert!(!bad.status.success());
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        e.contains("manager's CA") && e.contains("node-local"),
        "{e}"
    );

    // Nobody there.
    let silent = probe(&certs_dir, &format!("127.0.0.1:{}", free_port()));
    assert!(!silent.status.success());
    let e = String::from_utf8_lossy(&silent.stderr);
    assert!(
        e.contains("no answer from 127.0.0.1:") && e.contains("firewall"),
        "{e}"
    );
}

/// User plus system CPU seconds a process has used (/proc/PID/stat).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) in brackets.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

/// CPU seconds `pid` uses over `window` of wall time.
fn cpu_over(pid: u32, window: Duration) -> f64 {
    let a = cpu_seconds(pid);
    std::thread::sleep(window);
    cpu_seconds(pid) - a
}

#[test]
fn a_lost_jobs_other_parts_stop_burning_on_their_nodes() {
    // Two node processes of one node each (capacity 0.5); a job of P 2
    // puts one part on each. Killing one process loses the job; the
    // manager cancels the other part and its node must stop burning for
    // it (before, it burned on to its end, ignored).
    let _ = node_bin();
    let dir = tempfile::tempdir().unwrap();
    let certs_dir = dir.path().join("certs");
    certs(&certs_dir, "local");
    let port = free_port();
    let cfg = dir.path().join("cancel.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.01
start_timeout_s = 20
link_timeout_s = 3
heartbeat_ms = 200

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = 1 }}

[[hosts]]
name = "local"
processes = 2
nodes_per_process = 1
capacity = 0.5
"#
        ),
    )
    .unwrap();
    let mut manager = serving(&cfg, &dir.path().join("run"), port, &certs_dir, 2);
    let out = |o: &Output| String::from_utf8_lossy(&o.stdout).to_string();
    // 100,000 trace s = 1,000 real s of work per part: it runs all test.
    let o = client(
        &[
            "submit",
            "--estimate",
            "100000",
            "--deadline",
            "400000",
            "--processors",
            "2",
        ],
        port,
        &certs_dir,
    );
    assert!(o.status.success(), "{}", out(&o));
    // "accepted: job N on nodes ..."
    let job: u64 = out(&o)
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {}", out(&o)));
    let o = client(&["status", "--json"], port, &certs_dir);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let procs = s["Status"]["processes"].as_array().unwrap().clone();
    assert_eq!(procs.len(), 2, "{s}");
    let pid = |k: usize| procs[k]["pid"].as_u64().unwrap() as u32;
    let (victim, survivor) = (pid(0), pid(1));
    // Both burn for the job (about 0.5 CPU s per s; loose: the machine is
    // shared), once their parts have started (status shows work done).
    wait_status(port, &certs_dir, "both parts burning", |s| {
        let burning = s["Status"]["nodes"]
            .as_array()?
            .iter()
            .filter(|n| {
                n["parts"].as_array().is_some_and(|p| {
                    p.iter().any(|p| {
                        p["job"].as_u64() == Some(job) && p["cpu_done"].as_f64() > Some(0.0)
                    })
                })
            })
            .count();
        (burning == 2).then_some(())
    });
    // The survivor burns 0.2 CPU s for it: 0.4 s on a quiet host, longer
    // on a loaded one; that time (at least 2 s) is the window compared
    // after the cancel.
    let (t0, c0) = (Instant::now(), cpu_seconds(survivor));
    while cpu_seconds(survivor) - c0 < 0.2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the survivor burned only {} CPU s in 60 s",
            cpu_seconds(survivor) - c0
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let window = t0.elapsed().max(Duration::from_secs(2));
    let before = 0.2;
    // SAFETY: a signal to a node process this test started; no memory is
    // passed.
    unsafe {
        libc::kill(victim as i32, libc::SIGKILL);
    }
    // The manager notices the silence (link timeout 3 s), loses the job
    // and cancels the survivor's part.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let o = client(&["status", "--json"], port, &certs_dir);
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let nodes = s["Status"]["nodes"].as_array().unwrap();
        let holds = nodes.iter().any(|n| {
            n["parts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["job"].as_u64() == Some(job))
        });
        if nodes.len() == 1 && !holds {
            break;
        }
        assert!(Instant::now() < end, "the job was never lost: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The cancel reaches the node after the status that shows the job
    // gone: measure windows until one is quiet (5 windows at most).
    let mut after = cpu_over(survivor, window);
    for _ in 0..4 {
        if after < before / 3.0 {
            break;
        }
        after = cpu_over(survivor, window);
    }
    assert!(
        after < before / 3.0,
        "the cancelled part still burns: {after} CPU s in {window:?} (before: {before})"
    );
    interrupt(&manager);
    assert_eq!(
        wait_timeout(&mut manager, Duration::from_secs(30)),
        Some(true)
    );
    // The record says what happened.
    let csv = std::fs::read_to_string(dir.path().join("run").join("jobs-libra.csv")).unwrap();
    let line = csv
        .lines()
        .find(|l| l.starts_with(&format!("{job},")))
        .unwrap_or_else(|| panic!("no record of job {job}: {csv}"));
    assert!(line.contains("lost at"), "{line}");
}
