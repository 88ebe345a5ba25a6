//! Live decision latency of an external Batsim scheduler (issue 28's
//! "Live" target). Run with `cargo build --release --workspace --bins &&
//! cargo bench -p libratory-manager --bench batsim_live` (pybatsim 3.2.1
//! installed: scripts/install-pybatsim.sh).
//!
//! Two real serving managers (`libratory run --serve`) side by side, one
//! with pybatsim's fillerSched unchanged as the `batsim` policy (started
//! with `--batsim-cmd`), one with the built-in `fcfs-bf`, each with a real
//! `libratory-node` process of 64 emulated nodes (a quarter of a core in
//! all, so the managers and the scheduler keep the rest). Per rate (100
//! and 1,000 submissions/s by default) four kinds of requests take turns
//! in slots of 0.1 s, each on a connection of its own held for the step:
//! QUIC echoes to the batsim manager, submissions to it, echoes to the
//! fcfs-bf manager, submissions to it; each kind sent at the rate for
//! [`STEP_S`] in all, so that a slow spell of this shared host falls on
//! all four alike. A submission's latency runs from its send to its
//! `Decided` answer (a queued job's `Queued` answer is counted apart, not
//! taken for the decision). Printed per rate: each kind's p50 and p99,
//! and the ratios the target names: batsim p99 / fcfs-bf p99 and each
//! policy's p99 / its own manager's echo p99.
//!
//! The jobs are 1-processor, estimate and run time 1 ms at time_scale 1,
//! deadline 100 s: each starts at once on a free node and is gone in a
//! few ms, so the cluster never fills and every decision is a start.
//! `BATSIM_LIVE_RATES` (default `100,1000`) sets the steps. No randomness
//! is used.

#[path = "support/mod.rs"]
mod support;
use support::client;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::job::JobSpec;
use common::protocol::{ClientMsg, ClientReply};
use hdrhistogram::Histogram;

/// Seconds of each kind of request in a step.
const STEP_S: f64 = 3.0;

/// A slot: one kind's requests for this long, then the next kind's.
const SLOT_S: f64 = 0.1;

/// Quiet after each slot: its answers and aftermath settle.
const GAP_S: f64 = 0.01;

/// Emulated nodes per manager.
const NODES: usize = 64;

fn bin(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_libratory")).with_file_name(name);
    assert!(
        p.is_file(),
        "{} missing: run `cargo build --release --workspace --bins` first",
        p.display()
    );
    p
}

/// The bench's processes, stopped when it lets go of them (SIGINT, so a
/// manager stops its scheduler and writes its results; then SIGKILL).
struct Kill(Vec<Child>);

impl Drop for Kill {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill(2) on a child of this process.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGINT) };
        }
        let end = Instant::now() + Duration::from_secs(15);
        for c in &mut self.0 {
            while Instant::now() < end && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits until `nodes` nodes registered with the manager at `addr`.
async fn registered(addr: SocketAddr, certs: &Path, nodes: usize) {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let (_e, _c, mut s) = client(addr, certs).await;
        s.send(&ClientMsg::Status {
            token: 0,
            query: Default::default(),
        })
        .await
        .unwrap();
        if let Some(ClientReply::Status { summary, .. }) = s.recv("reply").await.unwrap() {
            if summary.nodes.total == nodes {
                return;
            }
        }
        assert!(
            Instant::now() < end,
            "the {nodes} nodes of {addr} did not register"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One kind of request of a step.
#[derive(Clone, Copy)]
enum Kind {
    Echo,
    Submit,
}

fn request(k: u64, kind: Kind) -> ClientMsg {
    match kind {
        Kind::Echo => ClientMsg::Echo { token: k },
        Kind::Submit => ClientMsg::Submit {
            token: k,
            job: (&JobSpec::new(k, 0.0, 0.001, 1, 100.0, f64::INFINITY)).into(),
            actual: Some(0.001),
        },
    }
}

type Sent = Arc<Mutex<Vec<Option<Instant>>>>;

/// Reads answers until `total` echoes or decisions came (or 30 s pass
/// without one): latency (us) from each request's send, and the
/// `Queued` answers seen.
fn answers(
    mut rx: net::FrameReceiver,
    total: u64,
    sent: Sent,
) -> tokio::task::JoinHandle<(Histogram<u64>, u64, u64)> {
    tokio::spawn(async move {
        let mut h = Histogram::<u64>::new(3).unwrap();
        let (mut got, mut queued) = (0u64, 0u64);
        while got < total {
            let token = match tokio::time::timeout(
                Duration::from_secs(30),
                rx.recv::<ClientReply>("reply"),
            )
            .await
            {
                Ok(Ok(Some(ClientReply::Decided { token, .. })))
                | Ok(Ok(Some(ClientReply::Echo { token }))) => token,
                Ok(Ok(Some(ClientReply::Queued { .. }))) => {
                    queued += 1;
                    continue;
                }
                Ok(Ok(Some(_))) => continue,
                _ => break,
            };
            got += 1;
            if let Some(t) = sent.lock().unwrap().get(token as usize).copied().flatten() {
                let _ = h.record(t.elapsed().as_micros() as u64);
            }
        }
        (h, got, queued)
    })
}

/// One kind of request to one manager in a step: its connection, what
/// it sends, when each request went.
struct Lane {
    kind: Kind,
    tx: net::FrameSender,
    sent: Sent,
    reader: tokio::task::JoinHandle<(Histogram<u64>, u64, u64)>,
    _conn: (quinn::Endpoint, quinn::Connection),
}

impl Lane {
    async fn open(addr: SocketAddr, certs: &Path, kind: Kind, total: u64) -> Lane {
        let (ep, c, s) = client(addr, certs).await;
        let (tx, rx) = s.split();
        let sent: Sent = Arc::new(Mutex::new(vec![None; total as usize]));
        let reader = answers(rx, total, sent.clone());
        Lane {
            kind,
            tx,
            sent,
            reader,
            _conn: (ep, c),
        }
    }
}

/// A step at `rate`: the lanes take turns in slots of [`SLOT_S`], each
/// sending [`STEP_S`] x `rate` requests in all; each lane's latency
/// histogram, answers and `Queued` answers.
async fn step(lanes: &mut [Lane], rate: f64) -> Vec<(Histogram<u64>, u64, u64)> {
    let slots = (STEP_S / SLOT_S).round() as u64;
    let per_slot = ((rate * SLOT_S) as u64).max(1);
    for slot in 0..slots {
        for lane in lanes.iter_mut() {
            let t0 = Instant::now();
            for j in 0..per_slot {
                let due = t0 + Duration::from_secs_f64(j as f64 / rate);
                let now = Instant::now();
                if due > now {
                    tokio::time::sleep(due - now).await;
                }
                let k = slot * per_slot + j;
                let msg = request(k, lane.kind);
                lane.sent.lock().unwrap()[k as usize] = Some(Instant::now());
                lane.tx.send_all(std::slice::from_ref(&msg)).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs_f64(GAP_S)).await;
        }
    }
    let mut out = Vec::new();
    for lane in lanes.iter_mut() {
        out.push((&mut lane.reader).await.unwrap());
    }
    out
}

/// A serving manager of `policy` on `addr`, with its node process.
fn manager(
    dir: &Path,
    certs: &Path,
    addr: SocketAddr,
    policy: &str,
    node: &str,
    batsim: Option<&str>,
) -> Vec<Child> {
    let cfg = dir.join(format!("{policy}.toml"));
    std::fs::write(
        &cfg,
        support::config::serving(
            addr,
            &certs.display().to_string(),
            policy,
            "jobs = 1",
            &[support::config::Proc {
                name: node,
                nodes: NODES,
                capacity: 0.25 / NODES as f64,
            }],
        ),
    )
    .unwrap();
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("batsim_live-{policy}.log"));
    let mut m = Command::new(bin("libratory"));
    m.args(["run", "--serve", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(dir.join(format!("run-{policy}")));
    if let Some(ep) = batsim {
        m.args(["--batsim-endpoint", ep]).args([
            "--batsim-cmd",
            &format!("pybatsim fillerSched -s {ep} -v warning"),
        ]);
    }
    let m = m
        .stdout(Stdio::null())
        // Kept for a post-mortem when the bench fails.
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let n = Command::new(bin("libratory-node"))
        .args(["--manager", &addr.to_string(), "--certs"])
        .arg(certs)
        .args(["--name", node, "--nodes", &NODES.to_string()])
        .args(["--capacity", &(0.25 / NODES as f64).to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    vec![m, n]
}

fn free_endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    format!("tcp://127.0.0.1:{}", l.local_addr().expect("addr").port())
}

fn main() {
    let rates: Vec<f64> = std::env::var("BATSIM_LIVE_RATES")
        .unwrap_or_else(|_| "100,1000".into())
        .split(',')
        .map(|r| {
            r.trim()
                .parse()
                .expect("BATSIM_LIVE_RATES: rates per second, comma-separated")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    let o = Command::new(bin("libratory"))
        .args(["certs", "--out"])
        .arg(&certs)
        .args(["--nodes", "a,b"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let addr = |port: u16| -> SocketAddr { format!("127.0.0.1:{port}").parse().unwrap() };
    let (bs, fc) = (
        addr(net::free_udp_port().unwrap()),
        addr(net::free_udp_port().unwrap()),
    );
    let ep = free_endpoint();
    let mut kids = Kill(manager(dir.path(), &certs, bs, "batsim", "a", Some(&ep)));
    kids.0
        .extend(manager(dir.path(), &certs, fc, "fcfs-bf", "b", None));
    println!(
        "batsim live bench: two serving managers, {NODES} emulated nodes each (one node process, a quarter core); \
         batsim = pybatsim 3.2.1 fillerSched at {ep}; fcfs-bf built in; 1-processor jobs of 1 ms"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        registered(bs, &certs, NODES).await;
        registered(fc, &certs, NODES).await;
        // Warm up: pybatsim answers its first requests (and the workload's
        // one job) before the measured steps.
        let mut warm = vec![Lane::open(bs, &certs, Kind::Submit, 20).await, Lane::open(fc, &certs, Kind::Submit, 20).await];
        step_n(&mut warm, 20).await;
        for &rate in &rates {
            let total = (STEP_S / SLOT_S).round() as u64 * ((rate * SLOT_S) as u64).max(1);
            let mut lanes = vec![
                Lane::open(bs, &certs, Kind::Echo, total).await,
                Lane::open(bs, &certs, Kind::Submit, total).await,
                Lane::open(fc, &certs, Kind::Echo, total).await,
                Lane::open(fc, &certs, Kind::Submit, total).await,
            ];
            let r = step(&mut lanes, rate).await;
            let names = ["echo (batsim manager)", "batsim (pybatsim fillerSched)", "echo (fcfs-bf manager)", "fcfs-bf (built-in)"];
            println!("\nat {rate:.0} submissions/s ({total} of each kind, slots of {:.0} ms taking turns):", SLOT_S * 1e3);
            for ((h, got, queued), name) in r.iter().zip(names) {
                println!(
                    "  {name:<31} p50 {:>7} us  p99 {:>7} us  max {:>7} us  ({got} answers{})",
                    h.value_at_quantile(0.5),
                    h.value_at_quantile(0.99),
                    h.max(),
                    if *queued > 0 { format!(", {queued} queued first") } else { String::new() }
                );
                assert_eq!(*got, total, "{name}: answers missing");
            }
            let p99 = |i: usize| r[i].0.value_at_quantile(0.99).max(1) as f64;
            println!("  ratio  batsim p99 / fcfs-bf p99           = {:.2}", p99(1) / p99(3));
            println!("  ratio  batsim p99 / its manager's echo p99  = {:.2}", p99(1) / p99(0));
            // The batsim manager's echo shares its actor's thread with
            // the scheduler's traffic: the other manager's echo is the
            // network alone.
            println!("  ratio  batsim p99 / fcfs-bf manager's echo p99 = {:.2}", p99(1) / p99(2));
            println!("  ratio  fcfs-bf p99 / its manager's echo p99 = {:.2}", p99(3) / p99(2));
        }
    });
    drop(kids);
}

/// `n` submissions on each lane, one after another (the warm-up).
async fn step_n(lanes: &mut [Lane], n: u64) {
    for lane in lanes.iter_mut() {
        for k in 0..n {
            lane.sent.lock().unwrap()[k as usize] = Some(Instant::now());
            lane.tx.send_all(&[request(k, lane.kind)]).await.unwrap();
        }
    }
    for lane in lanes.iter_mut() {
        let (_, got, _) = (&mut lane.reader).await.unwrap();
        assert_eq!(got, n, "warm-up answers missing");
    }
}
