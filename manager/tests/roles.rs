//! Who may do what, tried for real against a running `libratory run
//! --serve` with its own certificates: every escalation is refused with a
//! reason naming the identity, its role and the request; a revoked node
//! process and a revoked client are cut off on SIGHUP and refused at their
//! next connection; a foreign QUIC implementation (aioquic, from PyPI)
//! presenting the client certificate cannot register nodes either.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::protocol::{self, ClientMsg, ClientReply, Hello, NodeInfo, NodeMsg, Role};
use net::{FramedStream, Timeouts};

mod util;
use util::{certs, free_port, libratory, node_bin, Guard};

/// A manager serving on loopback: its stderr collected as it comes.
struct Manager {
    child: Guard,
    addr: SocketAddr,
    err: Arc<Mutex<String>>,
    dir: PathBuf,
}

impl Manager {
    /// `libratory run --serve` of one host `a` (one process of one node)
    /// with certificates for nodes `a` and `b` in `dir/certs`.
    fn start(dir: &Path) -> Manager {
        Manager::start_with(dir, &[])
    }

    /// As [`Manager::start`], with more `libratory run` arguments.
    fn start_with(dir: &Path, extra: &[&str]) -> Manager {
        let _ = node_bin();
        certs(&dir.join("certs"), "a,b");
        let port = free_port();
        let cfg = dir.join("cluster.toml");
        std::fs::write(
            &cfg,
            format!(
                r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = 0.01
start_timeout_s = 60
link_timeout_s = 10
report_ms = 50
heartbeat_ms = 100

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = 4, nodes = 1, synthetic_arrival_max = 5 }}

[[hosts]]
name = "a"
processes = 1
nodes_per_process = 1
capacity = 0.2
"#
            ),
        )
        .unwrap();
        let mut child = Guard::spawn(
            Command::new(libratory())
                .args(["run", "--serve", "--progress-every", "1", "--config"])
                .arg(&cfg)
                .arg("--out")
                .arg(dir.join("run"))
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        let err = Arc::new(Mutex::new(String::new()));
        let sink = err.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(l) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        let m = Manager {
            child,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            err,
            dir: dir.to_path_buf(),
        };
        m.wait_for("listening on", Duration::from_secs(30));
        m
    }

    fn certs(&self) -> PathBuf {
        self.dir.join("certs")
    }

    fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// Waits until the manager's stderr holds `what` (the event itself,
    /// not a guess at how long it takes).
    fn wait_for(&self, what: &str, limit: Duration) {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if self.stderr().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the manager did not say {what:?} within {limit:?}:\n{}",
            self.stderr()
        );
    }

    /// `libratory-node` of this cluster: `--name NAME` (certificate
    /// node-NAME from `certs`), a label if given.
    fn node(&self, certs: &Path, name: &str, label: Option<&str>) -> Command {
        let mut c = Command::new(node_bin());
        c.args(["--manager", &self.addr.to_string(), "--certs"])
            .arg(certs)
            .args(["--name", name, "--nodes", "1", "--capacity", "0.2"])
            .args(["--link-timeout-s", "10"]);
        if let Some(l) = label {
            c.args(["--label", l]);
        }
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    /// `libratory ARGS --manager ADDR --certs CERTS --identity ID`.
    fn client(&self, args: &[&str], identity: &str) -> Output {
        Command::new(libratory())
            .args(args)
            .args(["--manager", &self.addr.to_string(), "--certs"])
            .arg(self.certs())
            .args(["--identity", identity])
            .output()
            .unwrap()
    }

    /// SIGTERM, then the outcome (the summary's warnings).
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < end, "manager did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::fs::read_to_string(self.dir.join("run/summary.json")).unwrap_or_default()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a node process that must be refused; returns its output.
fn refused_node(mut c: Command) -> Output {
    let child = Guard::spawn(&mut c);
    let o = wait_output(child, Duration::from_secs(30));
    assert!(!o.status.success(), "a refused node exited 0: {}", text(&o));
    o
}

fn wait_output(mut child: Guard, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("process still running after {limit:?}: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

const JOB: [&str; 5] = ["--estimate", "10", "--deadline", "1000", "--json"];

fn submit(m: &Manager, identity: &str) -> Output {
    let mut args = vec!["submit"];
    args.extend(JOB);
    m.client(&args, identity)
}

/// Every escalation of issue "who may do what", tried for real: each is
/// refused with the identity, its role and the request named, and the
/// legitimate uses beside them still work.
#[test]
fn escalations_are_refused_with_the_identity_role_and_request() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path());
    let legit = Guard::spawn(&mut m.node(&m.certs(), "a", Some("a-0")));
    m.wait_for("replay started", Duration::from_secs(120));

    // A node's certificate submitting a job (the first escalation found).
    let o = submit(&m, "node-a");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("identity node-a (role node, name a) may not submit"),
        "{}",
        text(&o)
    );
    // ...nor looking.
    let o = m.client(&["status"], "node-b");
    assert!(
        !o.status.success()
            && text(&o).contains("identity node-b (role node, name b) may not ask for the status"),
        "{}",
        text(&o)
    );

    // The client's certificate copied in as node-evil (the second).
    let evil = dir.path().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::copy(m.certs().join("ca.pem"), evil.join("ca.pem")).unwrap();
    std::fs::copy(m.certs().join("client.pem"), evil.join("node-evil.pem")).unwrap();
    std::fs::copy(m.certs().join("client.key"), evil.join("node-evil.key")).unwrap();
    let o = refused_node(m.node(&evil, "evil", None));
    assert!(
        text(&o).contains("identity client (role client) may not register node processes"),
        "{}",
        text(&o)
    );
    // The viewer's, likewise.
    std::fs::copy(m.certs().join("viewer.pem"), evil.join("node-evil.pem")).unwrap();
    std::fs::copy(m.certs().join("viewer.key"), evil.join("node-evil.key")).unwrap();
    let o = refused_node(m.node(&evil, "evil", None));
    assert!(
        text(&o).contains("identity viewer (role viewer) may not register node processes"),
        "{}",
        text(&o)
    );

    // A node registering under another node's name.
    let o = refused_node(m.node(&m.certs(), "b", Some("a-1")));
    assert!(
        text(&o)
            .contains("identity node-b (role node, name b) may not register node process 'a-1'"),
        "{}",
        text(&o)
    );
    // A second live registration under one name: refused with the code
    // that says a later try may be taken (a process started again after a
    // crash, before the manager gave the dead one up), so the process asks
    // again for its grace period (2 s here), then gives up.
    let mut second = m.node(&m.certs(), "a", Some("a-0"));
    second.args(["--manager-grace-s", "2"]);
    let o = refused_node(second);
    assert!(
        text(&o).contains("node process 'a-0' is already registered and live")
            && text(&o).contains("asking again every 500ms for up to 2s"),
        "{}",
        text(&o)
    );

    // The viewer looks but may not submit.
    let o = m.client(&["status", "--json"], "viewer");
    assert!(o.status.success(), "viewer status: {}", text(&o));
    let o = m.client(
        &["quote", "--estimate", "10", "--deadline", "1000"],
        "viewer",
    );
    assert!(o.status.success(), "viewer quote: {}", text(&o));
    let o = submit(&m, "viewer");
    assert!(
        !o.status.success()
            && text(&o).contains(" refused the request: ")
            && text(&o).contains("the manager at ")
            && text(&o)
                .contains("identity viewer (role viewer) may not submit: a viewer may only look"),
        "{}",
        text(&o)
    );

    // The manager's certificate serves only the manager: as a client it
    // fails the TLS handshake (its key usage is server authentication).
    let o = m.client(&["status"], "manager");
    assert!(!o.status.success(), "{}", text(&o));

    // The client may submit, and the refused ones registered nothing: the
    // cluster still has its one legitimate node process.
    let o = submit(&m, "client");
    assert!(
        o.status.success() || o.status.code() == Some(3),
        "client submit: {}",
        text(&o)
    );
    let o = m.client(&["status", "--json"], "client");
    assert!(o.status.success(), "{}", text(&o));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let procs = st["Status"]["processes"]
        .as_array()
        .expect("processes listed");
    assert_eq!(procs.len(), 1, "{st}");
    assert!(procs[0].to_string().contains("a-0"), "{st}");
    drop(legit);
    m.stop();
}

/// One client request over a fresh connection as `identity`: the answer
/// (or the reason the manager closed the connection with) and the local
/// address the manager saw.
fn ask_as(
    m: &Manager,
    identity: &str,
    msg: ClientMsg,
) -> (Result<ClientReply, String>, SocketAddr) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ep = net::client_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &m.certs(),
            identity,
            Timeouts::default(),
        )
        .unwrap();
        let me = ep.local_addr().unwrap();
        let conn = net::connect(&ep, m.addr).await.unwrap();
        let mut s = FramedStream::open(&conn).await.unwrap();
        s.handshake(&Hello::new(Role::Client, "roles test"))
            .await
            .unwrap();
        s.send(&msg).await.unwrap();
        let r = match s.recv::<ClientReply>("reply").await {
            Ok(Some(r)) => Ok(r),
            // Refused: the answer may lose the race with the close.
            _ => match conn.closed().await {
                quinn::ConnectionError::ApplicationClosed(c) => {
                    Err(String::from_utf8_lossy(&c.reason).into_owned())
                }
                other => Err(other.to_string()),
            },
        };
        (r, me)
    })
}

/// Fault reports blame losses on faults: only the operator identity (the
/// fault injector's) may send them. A client's or a viewer's is refused
/// with the identity and its address named; the operator's is journaled at
/// the time it says the fault happened; the operator may not submit.
#[test]
fn fault_reports_come_only_from_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path());
    let _legit = Guard::spawn(&mut m.node(&m.certs(), "a", Some("a-0")));
    m.wait_for("replay started", Duration::from_secs(120));
    let report = |token| ClientMsg::FaultApplied {
        token,
        fault: "fault 1 (hang of node process 0 at +1 s, line 3)".into(),
        kind: "hang".into(),
        process: "a-0".into(),
        act: protocol::FaultAct::Stop,
        what: "SIGSTOP to node process a-0 (pid 1)".into(),
        node: None,
        factor: None,
        age_s: 0.5,
    };
    for who in ["client", "viewer"] {
        let (r, me) = ask_as(&m, who, report(7));
        let message = match r {
            Ok(ClientReply::Error { token: 7, message }) | Err(message) => message,
            other => panic!("{who}: not refused: {other:?}"),
        };
        let want = format!(
            "identity {who} (role {who}) at {me} may not report a fault (fault 1 (hang of node process 0 at +1 s, line 3) on node process a-0): only the operator identity"
        );
        assert!(message.contains(&want), "{message}\nwanted {want}");
    }
    assert!(!m.stderr().contains("fault: fault 1"), "{}", m.stderr());
    let (r, _) = ask_as(&m, "operator", report(8));
    assert!(matches!(r, Ok(ClientReply::Noted { token: 8 })), "{r:?}");
    m.wait_for(
        "fault: fault 1 (hang of node process 0 at +1 s, line 3): SIGSTOP to node process a-0 (pid 1) [reported 0.500 s later]",
        Duration::from_secs(10),
    );
    let o = submit(&m, "operator");
    assert!(
        !o.status.success()
            && text(&o).contains(
                "identity operator (role operator) may not submit: the operator identity only reports faults"
            ),
        "{}",
        text(&o)
    );
    m.stop();
    // Journaled half a second before the manager got it, beside its
    // warning.
    let journal = std::fs::read_to_string(dir.path().join("run/journal.jsonl")).unwrap();
    let fault: serde_json::Value = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["e"] == "fault")
        .expect("a fault entry");
    assert_eq!(
        (fault["act"].as_str(), fault["process"].as_str()),
        (Some("stop"), Some("a-0"))
    );
}

fn hup(m: &Manager) {
    let st = Command::new("kill")
        .args(["-HUP", &m.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn revoke(m: &Manager, name: &str) {
    let o = Command::new(libratory())
        .args(["certs", "--out"])
        .arg(m.certs())
        .args(["--revoke", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("revoked identity"), "{}", text(&o));
}

/// A connected node process and a connected client are cut off with the
/// reason when their identities are revoked and the manager re-reads the
/// list on SIGHUP; both are refused at their next connection; the node's
/// running parts are lost with the reason; the others go on.
#[test]
fn revocation_closes_live_connections_and_refuses_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path());
    let node = Guard::spawn(&mut m.node(&m.certs(), "a", Some("a-0")));
    m.wait_for("replay started", Duration::from_secs(120));
    // A long job on the node, running when the revocation lands.
    let o = m.client(
        &[
            "submit",
            "--estimate",
            "2000",
            "--deadline",
            "100000",
            "--json",
        ],
        "client",
    );
    assert!(o.status.success(), "{}", text(&o));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // A live client connection, answered before the revocation.
        let ep = net::client_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &m.certs(),
            "client",
            Timeouts::default(),
        )
        .unwrap();
        let conn = net::connect(&ep, m.addr).await.unwrap();
        let mut s = FramedStream::open(&conn).await.unwrap();
        s.handshake(&Hello::new(Role::Client, "roles test"))
            .await
            .unwrap();
        s.send(&ClientMsg::Status {
            token: 1,
            query: Default::default(),
        })
        .await
        .unwrap();
        let r: Option<ClientReply> = s.recv("reply").await.unwrap();
        assert!(matches!(r, Some(ClientReply::Status { .. })), "{r:?}");

        revoke(&m, "client");
        revoke(&m, "a");
        hup(&m);
        m.wait_for("2 live connection(s) closed", Duration::from_secs(20));

        // The client's live connection closes with the reason.
        let closed = tokio::time::timeout(Duration::from_secs(10), conn.closed())
            .await
            .expect("the revoked client's connection closed");
        match closed {
            quinn::ConnectionError::ApplicationClosed(c) => {
                assert_eq!(
                    c.error_code,
                    quinn::VarInt::from_u32(protocol::CLOSE_REFUSED)
                );
                let why = String::from_utf8_lossy(&c.reason).into_owned();
                assert!(
                    why.contains("identity client (role client) is revoked"),
                    "{why}"
                );
            }
            other => panic!("closed, but not as a refusal: {other}"),
        }
    });

    // The node process is cut off with the reason, and exits.
    let o = wait_output(node, Duration::from_secs(30));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("identity node-a (role node, name a) is revoked"),
        "{}",
        text(&o)
    );
    // Both refused at their next connection.
    let o = m.client(&["status"], "client");
    assert!(
        !o.status.success() && text(&o).contains("identity client (role client) is revoked"),
        "{}",
        text(&o)
    );
    let o = refused_node(m.node(&m.certs(), "a", Some("a-0")));
    assert!(
        text(&o).contains("identity node-a (role node, name a) is revoked"),
        "{}",
        text(&o)
    );
    // Identities not revoked are still served.
    let o = m.client(&["status", "--json"], "viewer");
    assert!(o.status.success(), "{}", text(&o));

    // The node process's parts were lost with the reason.
    let summary = m.stop();
    assert!(
        summary.contains("lost node process a-0") && summary.contains("is revoked"),
        "{summary}"
    );
}

/// Makes aioquic importable: present, or installed from PyPI when root;
/// otherwise the test fails saying what to do (never skips).
fn aioquic_python() -> String {
    let py = "python3".to_string();
    let has = |py: &str| {
        Command::new(py)
            .args(["-c", "import aioquic"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has(&py) {
        return py;
    }
    // SAFETY: geteuid takes no arguments and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "the foreign QUIC client test needs aioquic (python3 -m pip install aioquic); run as root to let the test install it"
    );
    let o = Command::new(&py)
        .args(["-m", "pip", "install", "--quiet", "aioquic"])
        .output()
        .unwrap();
    if !o.status.success() {
        // Debian's python marks its packages externally managed.
        let o2 = Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--break-system-packages",
                "aioquic",
            ])
            .output()
            .unwrap();
        assert!(
            o2.status.success(),
            "pip install aioquic failed: {}\n{}",
            text(&o),
            text(&o2)
        );
    }
    assert!(has(&py), "aioquic installed but not importable");
    py
}

/// The foreign client: connects with aioquic (ALPN libratory/1), with the
/// client's certificate or none, sends the given bytes on a stream and
/// prints how the connection ended.
const AIOQUIC_CLIENT: &str = r#"
import asyncio, sys
from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated

host, port, certs, identity, payload = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], bytes.fromhex(sys.argv[5])

class P(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.ended = asyncio.get_event_loop().create_future()
    def quic_event_received(self, ev):
        if isinstance(ev, ConnectionTerminated) and not self.ended.done():
            self.ended.set_result(ev)

async def main():
    c = QuicConfiguration(is_client=True, alpn_protocols=["libratory/1"], server_name="libratory-manager")
    c.load_verify_locations(f"{certs}/ca.pem")
    if identity != "none":
        c.load_cert_chain(f"{certs}/{identity}.pem", f"{certs}/{identity}.key")
    try:
        async with connect(host, port, configuration=c, create_protocol=P, wait_connected=True) as p:
            sid = p._quic.get_next_available_stream_id()
            p._quic.send_stream_data(sid, payload, end_stream=False)
            p.transmit()
            ev = await asyncio.wait_for(p.ended, 10)
            print(f"terminated code={ev.error_code:#x} reason={ev.reason_phrase}")
    except ConnectionError as e:
        print(f"handshake failed: {e!r}")

asyncio.run(main())
"#;

/// A QUIC client that is not ours (aioquic) is held to the same rules:
/// with the client's certificate it cannot register a node (closed with
/// the refusal and the reason), and without a certificate it does not get
/// past the handshake.
#[test]
fn a_foreign_quic_client_is_still_refused() {
    let py = aioquic_python();
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start(dir.path());
    let script = dir.path().join("foreign.py");
    std::fs::write(&script, AIOQUIC_CLIENT).unwrap();
    let mut bytes = protocol::encode(&Hello::new(Role::Node, "aioquic"));
    bytes.extend(protocol::encode(&NodeMsg::Register {
        host: "evil".into(),
        nodes: vec![NodeInfo {
            local: 0,
            capacity: 1.0,
            speed: 1.0,
            memory_kb: 1,
            disk_mb: 1,
        }],
        pid: 1,
    }));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let run = |identity: &str| {
        let o = Command::new(&py)
            .arg(&script)
            .args([
                "127.0.0.1",
                &m.addr.port().to_string(),
                m.certs().to_str().unwrap(),
                identity,
                &hex,
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "the aioquic client crashed: {}",
            text(&o)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = run("client");
    assert!(
        out.contains(&format!("code={:#x}", protocol::CLOSE_REFUSED))
            && out.contains("identity client (role client) may not register node processes"),
        "{out}"
    );
    let out = run("none");
    assert!(
        !out.contains("terminated code=0x4c425246") && !out.contains("may not"),
        "no certificate must not reach the protocol: {out}"
    );
    // Nothing registered: the manager still waits for its node.
    assert!(!m.stderr().contains("registered"), "{}", m.stderr());
    m.stop();
}

/// Pre-flight's key check on a node host (`libratory-node keys`) reports
/// every key that is not the host's own (the CA's, the client's, another
/// node's) and a node certificate that is really another identity's; a
/// host holding only its own passes.
#[test]
fn preflight_reports_keys_a_node_host_should_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    certs(&all, "a,b");
    let probe = |certs: &Path, name: &str| {
        Command::new(node_bin())
            .args(["keys", "--certs"])
            .arg(certs)
            .args(["--name", name])
            .output()
            .unwrap()
    };
    // Everything the CA's machine holds, on a node host.
    let o = probe(&all, "a");
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("holds key(s) that are not its own"), "{t}");
    for f in [
        "ca.key",
        "client.key",
        "viewer.key",
        "node-b.key",
        "manager.key",
    ] {
        assert!(t.contains(f), "{f} not reported: {t}");
    }
    assert!(t.contains("the CA's private key"), "{t}");
    assert!(t.contains("identity node-b (role node, name b)"), "{t}");
    assert!(!t.contains("node-a.key"), "its own key reported: {t}");
    // Only its own: passes.
    let own = dir.path().join("own");
    std::fs::create_dir_all(&own).unwrap();
    for f in ["ca.pem", "node-a.pem", "node-a.key"] {
        std::fs::copy(all.join(f), own.join(f)).unwrap();
    }
    let o = probe(&own, "a");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("holds node-a's own key only"),
        "{}",
        text(&o)
    );
    // The client's certificate and key copied in under a node's name.
    std::fs::copy(all.join("client.pem"), own.join("node-evil.pem")).unwrap();
    std::fs::copy(all.join("client.key"), own.join("node-evil.key")).unwrap();
    std::fs::remove_file(own.join("node-a.key")).unwrap();
    std::fs::remove_file(own.join("node-a.pem")).unwrap();
    let o = probe(&own, "evil");
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains(
            "node-evil.pem: holds identity client (role client), not node evil's certificate"
        ),
        "{t}"
    );
}

/// GET `path` from the view at `port` on loopback with `auth` headers;
/// the status line.
fn http_status(port: u16, path: &str, auth: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(format!("GET {path} HTTP/1.0\r\n{auth}\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    out.lines().next().unwrap_or("").to_string()
}

/// `libratory run --http 0.0.0.0:0` (every address) prints the view's
/// address with a generated token and refuses the page and the JSON
/// without it; `--http-token` sets it.
#[test]
fn the_live_view_off_loopback_needs_its_token() {
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_with(dir.path(), &["--http", "0.0.0.0:0"]);
    m.wait_for("live view: http://", Duration::from_secs(10));
    let err = m.stderr();
    let line = err
        .lines()
        .find(|l| l.starts_with("live view: http://"))
        .unwrap();
    let (addr, token) = line
        .trim_start_matches("live view: http://")
        .split_once("/?token=")
        .unwrap_or_else(|| panic!("no token printed: {line}"));
    let port: u16 = addr.rsplit_once(':').unwrap().1.parse().unwrap();
    assert_eq!(token.len(), 32, "{line}");
    for path in ["/", "/api/state", "/api/nodes"] {
        assert!(http_status(port, path, "").contains(" 401"), "{path}");
        let bearer = format!("Authorization: Bearer {token}\r\n");
        assert!(http_status(port, path, &bearer).contains(" 200"), "{path}");
        let q = format!("{path}?token={token}");
        assert!(http_status(port, &q, "").contains(" 200"), "{path}");
    }
    m.stop();
    let dir = tempfile::tempdir().unwrap();
    let m = Manager::start_with(
        dir.path(),
        &["--http", "0.0.0.0:0", "--http-token", "open-sesame"],
    );
    m.wait_for("?token=open-sesame", Duration::from_secs(10));
    m.stop();
}
