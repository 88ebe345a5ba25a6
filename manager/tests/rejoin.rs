//! Node processes that lose their manager or die, on loopback with the
//! real binaries: a node process SIGKILLed and restarted mid-run rejoins
//! and gets work; a node process whose manager is SIGKILLed keeps burning
//! its part for the grace period and, when a manager listens on the same
//! address again, reconnects, reports the part and drops it when told.
//!
//! Every wait is for an event (a status answer, a line of the node's log);
//! every process is killed when its guard drops.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod util;
use util::{certs, free_port, libratory, node_bin};

/// A child process killed (SIGKILL) and reaped when the guard drops, so a
/// failed assertion leaves nothing burning CPU.
struct Guard(Child);

impl Guard {
    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGKILL now, and reap.
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A serving manager on `port` expecting `processes` node processes of
/// one node each, silence of 3 s declaring a process lost.
fn config(dir: &Path, port: u16, processes: usize) -> PathBuf {
    config_with_link_timeout(dir, port, processes, 3)
}

/// [`config`] with silence of `link_timeout_s` declaring a process lost.
fn config_with_link_timeout(
    dir: &Path,
    port: u16,
    processes: usize,
    link_timeout_s: u32,
) -> PathBuf {
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.01
start_timeout_s = 30
link_timeout_s = {link_timeout_s}
report_ms = 50
heartbeat_ms = 100

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = 1 }}

[[hosts]]
name = "local"
processes = {processes}
nodes_per_process = 1
capacity = 0.5
"#
    );
    let p = dir.join("serve.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn manager(cfg: &Path, out: &Path, log: &Path) -> Guard {
    Guard(
        Command::new(libratory())
            .args(["run", "--serve", "--progress-every", "60", "--config"])
            .arg(cfg)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// Node process `name` (one node of capacity 0.5), its log in `log`.
fn node(port: u16, certs: &Path, name: &str, log: &Path) -> Guard {
    node_with_grace(port, certs, name, log, 60)
}

/// [`node`] with a grace period of `grace_s`.
fn node_with_grace(port: u16, certs: &Path, name: &str, log: &Path, grace_s: u32) -> Guard {
    node_with(port, certs, name, log, grace_s, 3)
}

/// [`node`] with a grace period of `grace_s` and a link timeout of
/// `link_timeout_s`.
fn node_with(
    port: u16,
    certs: &Path,
    name: &str,
    log: &Path,
    grace_s: u32,
    link_timeout_s: u32,
) -> Guard {
    node_with_args(port, certs, name, log, grace_s, link_timeout_s, &[])
}

/// [`node_with`] with more arguments.
fn node_with_args(
    port: u16,
    certs: &Path,
    name: &str,
    log: &Path,
    grace_s: u32,
    link_timeout_s: u32,
    more: &[&str],
) -> Guard {
    Guard(
        Command::new(node_bin())
            .args(more)
            .args(["--manager", &format!("127.0.0.1:{port}"), "--certs"])
            .arg(certs)
            .args(["--name", name, "--nodes", "1", "--capacity", "0.5"])
            .arg("--link-timeout-s")
            .arg(link_timeout_s.to_string())
            .arg("--manager-grace-s")
            .arg(grace_s.to_string())
            .args(["--reconnect-seed", "11"])
            .stdout(Stdio::null())
            .stderr(File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

fn client(args: &[&str], port: u16, certs: &Path) -> Output {
    Command::new(libratory())
        .args(args)
        .args(["--manager", &format!("127.0.0.1:{port}"), "--certs"])
        .arg(certs)
        .output()
        .unwrap()
}

/// Submits a job of `p` processors, each part `trace_s` trace seconds of
/// work (a hundredth of that in real seconds on a whole node), its
/// deadline ten times as far.
fn submit(port: u16, certs: &Path, p: u32, trace_s: u32) {
    let est = trace_s.to_string();
    let deadline = (trace_s * 10).to_string();
    let o = client(
        &[
            "submit",
            "--estimate",
            &est,
            "--deadline",
            &deadline,
            "--processors",
            &p.to_string(),
        ],
        port,
        certs,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.starts_with("accepted"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Polls `status --json` until `done` finds what it waits for (60 s at
/// most, then fails naming `what` and the last answer).
fn wait_status(port: u16, certs: &Path, what: &str, done: impl Fn(&serde_json::Value) -> bool) {
    let end = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < end {
        let o = client(&["status", "--json"], port, certs);
        if o.status.success() {
            last = String::from_utf8_lossy(&o.stdout).to_string();
            if serde_json::from_slice(&o.stdout).is_ok_and(|s| done(&s)) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("waited 60 s for {what}; last status answer: {last}");
}

/// The status answer's nodes of node process `name` (labelled
/// `name@HOST (ADDRESS)`).
fn nodes_of<'a>(s: &'a serde_json::Value, name: &str) -> Vec<&'a serde_json::Value> {
    s["Status"]["nodes"]
        .as_array()
        .map(|ns| {
            ns.iter()
                .filter(|n| {
                    n["host"].as_str().and_then(|h| h.split(['@', ' ']).next()) == Some(name)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn runs_a_part(s: &serde_json::Value, name: &str) -> bool {
    nodes_of(s, name)
        .iter()
        .any(|n| n["parts"].as_array().is_some_and(|p| !p.is_empty()))
}

/// Waits until `log` holds a line containing every one of `words` (60 s
/// at most); returns that line.
fn wait_log(log: &Path, words: &[&str]) -> String {
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| words.iter().all(|w| l.contains(w))) {
            return l.to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "waited 60 s for a line with {words:?} in {}:\n{}",
        log.display(),
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// The number after the first `word` in `line`.
fn count_after(line: &str, word: &str) -> usize {
    line.split(word)
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {word:?} in {line}"))
}

/// User plus system CPU seconds of a process (/proc/PID/stat).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

/// A node process killed and started again at once, before the manager
/// (link timeout 3 s) gave the dead one up: the new one is refused with
/// the code that says a later try may be taken, asks again every half
/// second, and is admitted once the manager lost the old link (as the
/// simulator models a crash of duration `d` < `L`: back at `t + L`).
/// Before, it took the refusal for a mistake and exited.
#[test]
fn a_node_process_restarted_before_its_loss_is_noticed_registers_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a");
    let port = free_port();
    let cfg = config(d, port, 1);
    let _m = manager(&cfg, &d.join("run"), &d.join("manager.log"));
    let a = node(port, &certs_dir, "a", &d.join("a1.log"));
    wait_status(port, &certs_dir, "node process a", |s| {
        nodes_of(s, "a").len() == 1
    });
    a.kill();
    let killed = Instant::now();
    let a2log = d.join("a2.log");
    // Started again as `run --faults` starts it, with a fault control
    // file: a fault signalled while it waits to register is held, not
    // the end of it (SIGUSR1's default action), and applied once its
    // nodes are up.
    let control = d.join("a2.fault");
    std::fs::write(&control, "slow 0.5 30\n").unwrap();
    let control_arg = control.to_str().unwrap();
    let a2 = node_with_args(
        port,
        &certs_dir,
        "a",
        &a2log,
        60,
        3,
        &["--fault-control", control_arg],
    );
    let asked = wait_log(&a2log, &["still holds an earlier registration"]);
    assert!(asked.contains("asking again every 500ms"), "{asked}");
    // SAFETY: a signal to the child this test started and still holds.
    assert_eq!(unsafe { libc::kill(a2.pid() as i32, libc::SIGUSR1) }, 0);
    wait_log(&a2log, &["admitted by"]);
    wait_log(&a2log, &["node 0 now", "0.5 of its capacity"]);
    let after = wait_log(&a2log, &["registered after"]);
    // Not before the manager's link timeout (3 s) less the time the
    // restart took; a loose bound after it.
    let waited = killed.elapsed();
    assert!(
        waited > Duration::from_secs(2) && waited < Duration::from_secs(30),
        "{waited:?}: {after}"
    );
    wait_status(port, &certs_dir, "the restarted a registered", |s| {
        nodes_of(s, "a").len() == 1
    });
    // The manager counts the registrations awaited, the last of which
    // starts the run (scripts/fugaku-scale.sh reads "N of N"), and after
    // the start the nodes live, not every registration of the run (which
    // would be 2 of the 1 expected).
    wait_log(
        &d.join("manager.log"),
        &["registered a", ": 1 of 1 emulated nodes"],
    );
    // That registration started the replay: the log says so in that
    // order.
    let log = std::fs::read_to_string(d.join("manager.log")).unwrap();
    let at = |what: &str| {
        log.find(what)
            .unwrap_or_else(|| panic!("no {what:?} in {log}"))
    };
    assert!(
        at(": 1 of 1 emulated nodes") < at("replay started"),
        "the replay's start logged before the registration that started it:\n{log}"
    );
    wait_log(
        &d.join("manager.log"),
        &["registered a", "during the run: 1 emulated nodes live"],
    );
}

/// SIGTERM to a node process: it tells the manager (a Goodbye) and ends
/// with an error naming the signal, and the manager records it gone at
/// once, not at its link timeout (here 60 s, past the test's waits).
#[test]
fn a_node_process_stopped_by_sigterm_says_goodbye() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a");
    let port = free_port();
    let cfg = config_with_link_timeout(d, port, 1, 60);
    let _m = manager(&cfg, &d.join("run"), &d.join("manager.log"));
    let log = d.join("a.log");
    let mut a = node_with(port, &certs_dir, "a", &log, 60, 60);
    wait_status(port, &certs_dir, "node process a", |s| {
        nodes_of(s, "a").len() == 1
    });
    // SAFETY: a signal to the child this test started and still holds.
    assert_eq!(unsafe { libc::kill(a.pid() as i32, libc::SIGTERM) }, 0);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = a.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "still running 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{status}");
    wait_log(&log, &["stopped by SIGTERM", "the manager was told"]);
    wait_status(port, &certs_dir, "a recorded gone", |s| {
        nodes_of(s, "a").is_empty()
    });
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

#[test]
fn a_node_process_killed_and_restarted_mid_run_rejoins_and_gets_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a,b");
    let port = free_port();
    let cfg = config(d, port, 2);
    let _m = manager(&cfg, &d.join("run"), &d.join("manager.log"));
    let _a = node(port, &certs_dir, "a", &d.join("a.log"));
    let b = node(port, &certs_dir, "b", &d.join("b1.log"));
    wait_status(port, &certs_dir, "both node processes", |s| {
        nodes_of(s, "a").len() == 1 && nodes_of(s, "b").len() == 1
    });
    // A job of two parts, one per process; b is killed while its part runs.
    submit(port, &certs_dir, 2, 2000);
    wait_status(port, &certs_dir, "a part running on b", |s| {
        runs_a_part(s, "b")
    });
    b.kill();
    wait_status(port, &certs_dir, "b recorded lost", |s| {
        nodes_of(s, "b").is_empty()
    });
    let b2log = d.join("b2.log");
    let _b2 = node(port, &certs_dir, "b", &b2log);
    wait_log(&b2log, &["admitted by"]);
    wait_status(port, &certs_dir, "the restarted b registered", |s| {
        nodes_of(s, "b").len() == 1
    });
    // The job that was on b was lost with it; a new one gets a part on
    // the restarted process.
    submit(port, &certs_dir, 2, 2000);
    wait_status(port, &certs_dir, "a part running on the restarted b", |s| {
        runs_a_part(s, "b")
    });
}

/// One serving manager (`link_timeout_s` both ways) and node process `a`
/// in `d`, with a part of ~100 real s running on `a` (it outlives every
/// test below): what the tests of a killed manager start from.
struct OnePart {
    certs: PathBuf,
    port: u16,
    cfg: PathBuf,
    manager: Guard,
    log: PathBuf,
    node: Guard,
}

fn one_part_running(d: &Path, link_timeout_s: u32) -> OnePart {
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a");
    let port = free_port();
    let cfg = config_with_link_timeout(d, port, 1, link_timeout_s);
    let manager = manager(&cfg, &d.join("run1"), &d.join("manager1.log"));
    let log = d.join("a.log");
    let node = node_with(port, &certs_dir, "a", &log, 60, link_timeout_s);
    wait_status(port, &certs_dir, "node process a", |s| {
        nodes_of(s, "a").len() == 1
    });
    submit(port, &certs_dir, 1, 5000);
    wait_status(port, &certs_dir, "a part running on a", |s| {
        runs_a_part(s, "a")
    });
    OnePart {
        certs: certs_dir,
        port,
        cfg,
        manager,
        log,
        node,
    }
}

#[test]
fn a_node_rides_out_a_killed_manager_and_reports_to_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let OnePart {
        certs: certs_dir,
        port,
        cfg,
        manager: m1,
        log: alog,
        node: a,
    } = one_part_running(d, 3);
    m1.kill();
    let lost = wait_log(&alog, &["lost the manager", "1 part(s) keep running"]);
    // Still burning its part without a manager: a node of capacity 0.5
    // burns ~0.5 CPU s a second; a loose bound over a 1 s window.
    let before = cpu_seconds(a.pid());
    let t = Instant::now();
    wait_log(&alog, &["reconnecting to"]);
    std::thread::sleep(Duration::from_secs(1).saturating_sub(t.elapsed()));
    let burned = cpu_seconds(a.pid()) - before;
    assert!(burned > 0.15, "{burned} CPU s in 1 s after: {lost}");
    // A manager on the same address: the node reconnects, reports the
    // part it kept running, and drops it when told this manager does not
    // hold it.
    let _m2 = manager(&cfg, &d.join("run2"), &d.join("manager2.log"));
    let back = wait_log(&alog, &["back with the manager", "reporting"]);
    // The part submitted above, and the serving run's own one-job
    // workload's part: running still, or finished while no manager was
    // there to hear of it (reported now), or over before the first
    // manager was killed (not reported).
    let running = count_after(&back, "reporting ");
    let finished = count_after(&back, "running and ");
    assert!(
        (1..=2).contains(&running) && finished <= 1 && running + finished <= 2,
        "{back}"
    );
    // Every reported part is dropped: the running ones and the one that
    // finished while no manager was there (a running one that finishes
    // before the answer is dropped all the same).
    let dropped = wait_log(&alog, &["the manager dropped"]);
    assert_eq!(
        count_after(&dropped, "dropped "),
        running + finished,
        "{back}\n{dropped}"
    );
    assert!(dropped.contains("not counted"), "{dropped}");
    wait_status(
        port,
        &certs_dir,
        "a registered with the second manager",
        |s| nodes_of(s, "a").len() == 1 && !runs_a_part(s, "a"),
    );
    // It serves the new manager: a job submitted now runs on it.
    submit(port, &certs_dir, 1, 2000);
    wait_status(
        port,
        &certs_dir,
        "a part from the second manager on a",
        |s| runs_a_part(s, "a"),
    );
    assert!(back.contains("after"), "{back}");
}

/// A manager killed and started again at once on the same address: the
/// node process learns that its manager is gone from the new one's QUIC
/// stateless reset (the managers derive its key and their connection IDs'
/// key from the manager identity), not by waiting out a link timeout of
/// 120 s, and rejoins. With keys random per process the new manager drops
/// the node's packets as bearing an unknown connection ID, and the node
/// would wait the 120 s, failing `wait_log`'s 60 s.
#[test]
fn a_node_learns_from_the_next_managers_reset_that_its_manager_died() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The part makes the node send reports on the dead connection (every
    // 50 ms) for the new manager to answer.
    let OnePart {
        certs: certs_dir,
        port,
        cfg,
        manager: m1,
        log: alog,
        node: _a,
    } = one_part_running(d, 120);
    m1.kill();
    let _m2 = manager(&cfg, &d.join("run2"), &d.join("manager2.log"));
    let lost = wait_log(&alog, &["lost the manager"]);
    assert!(lost.contains("reset by peer"), "{lost}");
    wait_log(&alog, &["back with the manager", "reporting"]);
    wait_status(
        port,
        &certs_dir,
        "a registered with the second manager",
        |s| nodes_of(s, "a").len() == 1,
    );
}

#[test]
fn a_node_process_hung_past_the_link_timeout_is_told_and_rejoins_as_new() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a");
    let port = free_port();
    let cfg = config(d, port, 1);
    let _m = manager(&cfg, &d.join("run"), &d.join("manager.log"));
    let alog = d.join("a.log");
    let a = node(port, &certs_dir, "a", &alog);
    wait_status(port, &certs_dir, "node process a", |s| {
        nodes_of(s, "a").len() == 1
    });
    submit(port, &certs_dir, 1, 5000);
    wait_status(port, &certs_dir, "a part running on a", |s| {
        runs_a_part(s, "a")
    });
    // A hang (SIGSTOP) until the manager has given the process up.
    let pid = a.pid().to_string();
    let signal = |sig: &str| {
        let o = Command::new("kill").args([sig, &pid]).output().unwrap();
        assert!(o.status.success(), "kill {sig} {pid}");
    };
    signal("-STOP");
    let resume = Resume(&pid);
    wait_status(port, &certs_dir, "a given up", |s| {
        nodes_of(s, "a").is_empty()
    });
    drop(resume);
    // Awake, it learns that its part was recorded lost (from the
    // manager's last word or from its answer to the rejoin), drops it
    // and serves as a new process.
    let told = wait_log(&alog, &["dropped", "part(s)"]);
    assert!(
        told.contains("gave this process up") || told.contains("the manager dropped"),
        "{told}"
    );
    assert!(count_after(&told, "dropped ") >= 1, "{told}");
    wait_status(port, &certs_dir, "a registered again, idle", |s| {
        nodes_of(s, "a").len() == 1 && !runs_a_part(s, "a")
    });
    // The part no longer burns: ~0 CPU s over a second (it burned ~0.5
    // a second before).
    let before = cpu_seconds(a.pid());
    std::thread::sleep(Duration::from_secs(1));
    let burned = cpu_seconds(a.pid()) - before;
    assert!(burned < 0.1, "{burned} CPU s in 1 s after the drop: {told}");
}

/// Sends SIGCONT to a stopped process when dropped (so a failed wait does
/// not leave it stopped behind its kill-on-drop guard).
struct Resume<'a>(&'a str);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", self.0]).output();
    }
}

#[test]
fn past_the_grace_period_without_a_manager_the_node_stops_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs_dir = d.join("certs");
    certs(&certs_dir, "a");
    let port = free_port();
    let cfg = config(d, port, 1);
    let m = manager(&cfg, &d.join("run"), &d.join("manager.log"));
    let alog = d.join("a.log");
    let mut a = node_with_grace(port, &certs_dir, "a", &alog, 2);
    wait_status(port, &certs_dir, "node process a", |s| {
        nodes_of(s, "a").len() == 1
    });
    submit(port, &certs_dir, 1, 5000);
    wait_status(port, &certs_dir, "a part running on a", |s| {
        runs_a_part(s, "a")
    });
    m.kill();
    wait_log(&alog, &["lost the manager"]);
    // The process's own end is the event: exit 1 within the grace period
    // and a few reconnection attempts (a loose bound).
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = a.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < end,
            "still running 30 s after a 2 s grace period"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(&alog).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("no manager at 127.0.0.1:")
            && log.contains("(the grace period, --manager-grace-s)")
            && log.contains("reconnection attempt(s) failed")
            && log.contains("running part(s)"),
        "{log}"
    );
}
