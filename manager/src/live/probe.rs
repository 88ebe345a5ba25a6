//! The manager's end of the pre-flight reachability check
//! (`libratory probe-server`): a QUIC endpoint on the manager's address
//! with the manager's certificate, that completes the mutual-TLS handshake
//! with each prober (`libratory-node probe`) and closes the connection with
//! [`PROBE_OK`]. A host whose probe gets that answer can reach the
//! manager's UDP port both ways and holds a certificate the manager takes;
//! that is exactly what a node process needs. It is not the manager: it
//! runs only before a run, never beside one.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use net::{self, Timeouts};

use crate::cluster::config::ClusterConfig;

/// The close reason a successful probe receives (`libratory-node probe`
/// in node/src/probe.rs checks for these bytes).
pub const PROBE_OK: &[u8] = b"libratory probe ok";

/// Serves probes on `listen` for at most `duration`, or until `expect`
/// probes succeeded (0: serve the whole `duration`). `ready` is called
/// once the port is bound. Returns the addresses that got through.
/// Must be called inside a tokio runtime.
pub async fn serve(
    listen: SocketAddr,
    certs: &Path,
    duration: Duration,
    expect: usize,
    ready: impl FnOnce(SocketAddr),
) -> Result<Vec<SocketAddr>> {
    let ep = net::server_endpoint(
        listen,
        certs,
        Timeouts {
            idle: Duration::from_secs(5),
        },
    )
    .with_context(|| format!("probe server on {listen}"))?;
    ready(ep.local_addr().unwrap_or(listen));
    let end = Instant::now() + duration;
    let mut ok = Vec::new();
    while expect == 0 || ok.len() < expect {
        let left = end.saturating_duration_since(Instant::now());
        let Ok(Some(incoming)) = tokio::time::timeout(left, ep.accept()).await else {
            break;
        };
        let peer = incoming.remote_address();
        match tokio::time::timeout(Duration::from_secs(10), incoming).await {
            Ok(Ok(conn)) => {
                conn.close(0u32.into(), PROBE_OK);
                println!("probe from {peer}: ok");
                ok.push(peer);
            }
            Ok(Err(e)) => println!("probe from {peer}: refused: {e}"),
            Err(_) => println!("probe from {peer}: handshake timed out"),
        }
    }
    // Let the close frames reach the probers.
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
    Ok(ok)
}

/// Runs [`serve`] on the manager's address and certificates of `cfg`, on a
/// runtime of its own (the binary's entry point). Returns how many probes
/// succeeded.
pub fn run(cfg: &ClusterConfig, duration: Duration, expect: usize) -> Result<usize> {
    let listen: SocketAddr = cfg.manager.listen.parse().context("[manager] listen")?;
    let certs = &cfg.manager.certs;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let ok = rt.block_on(serve(listen, certs, duration, expect, |a| {
        println!("probe server listening on {a} (UDP)");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
    }))?;
    Ok(ok.len())
}

/// `libratory probe-server`: answer probes on the configuration's manager
/// address, print how many were answered.
pub fn server(config: &std::path::Path, for_s: f64, expect: usize) -> anyhow::Result<()> {
    let cfg = ClusterConfig::load(config)?;
    let ok = run(
        &cfg,
        crate::live::progress::seconds("--for-s", for_s)?,
        expect,
    )?;
    println!("probe server: {ok} probe(s) answered");
    Ok(())
}
