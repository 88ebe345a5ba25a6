//! `libratory-node probe`: can this host reach the manager's UDP port, and
//! does the manager take this host's certificate? Connects to a
//! `libratory probe-server` (run by `scripts/preflight.sh` on the manager's
//! address before a run) with the certificate a node process would present,
//! and waits for the server's "probe ok" close. Every failure says what to
//! check.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use net::{self, Timeouts};

/// What the probe server says to a successful probe
/// (`libratory_manager::live::probe::PROBE_OK`; the node crate does not depend on
/// the manager's).
const PROBE_OK: &[u8] = b"libratory probe ok";

/// Probes `manager` as `node-NAME`; returns the round trip of the whole
/// exchange (handshake and close).
pub fn probe(manager: SocketAddr, certs: &Path, name: &str, timeout: Duration) -> Result<Duration> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    rt.block_on(probe_async(manager, certs, name, timeout))
}

async fn probe_async(
    manager: SocketAddr,
    certs: &Path,
    name: &str,
    timeout: Duration,
) -> Result<Duration> {
    let bind: SocketAddr = if manager.is_ipv4() {
        "0.0.0.0:0".parse().expect("valid")
    } else {
        "[::]:0".parse().expect("valid")
    };
    let ep = net::client_endpoint(
        bind,
        certs,
        &format!("node-{name}"),
        Timeouts { idle: timeout },
    )
    .with_context(|| {
        format!(
            "loading this host's certificate node-{name} from {}",
            certs.display()
        )
    })?;
    let t0 = Instant::now();
    let silent = || {
        anyhow!(
            "no answer from {manager} over UDP within {timeout:?}: check that the manager's \
             machine has {manager} (or forwards it), that its firewall lets UDP port {} in, \
             and that nothing on the way drops UDP",
            manager.port()
        )
    };
    let conn = match tokio::time::timeout(timeout, net::connect(&ep, manager)).await {
        Err(_) => bail!(silent()),
        Ok(Err(e)) => {
            let text = e.to_string();
            if text.contains("timed out") {
                bail!(silent());
            }
            bail!("the QUIC/TLS handshake with {manager} failed: {text} (do this host's ca.pem and node-{name} certificate come from the manager's CA?)")
        }
        Ok(Ok(c)) => c,
    };
    let left = timeout
        .saturating_sub(t0.elapsed())
        .max(Duration::from_millis(500));
    let closed = tokio::time::timeout(left, conn.closed()).await;
    let rtt = t0.elapsed();
    ep.close(0u32.into(), b"");
    match closed {
        Ok(quinn::ConnectionError::ApplicationClosed(c)) if &c.reason[..] == PROBE_OK => Ok(rtt),
        Ok(quinn::ConnectionError::ApplicationClosed(c)) => bail!(
            "{manager} answered but is not a probe server (closed with {:?}): is a manager or another program already using the port?",
            String::from_utf8_lossy(&c.reason)
        ),
        Ok(quinn::ConnectionError::ConnectionClosed(c)) => bail!(
            "{manager} refused the connection: {c} (is node-{name}'s certificate signed by the manager's CA?)"
        ),
        Ok(e) => bail!("the connection to {manager} ended: {e}"),
        Err(_) => bail!(
            "{manager} completed the handshake but did not close it within {left:?}: is something other than `libratory probe-server` on that port?"
        ),
    }
}
