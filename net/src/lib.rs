//! The live runtime's two seams to the outside world, kept out of the pure
//! core (`common` has no tokio, quinn or rustls and reads no clock):
//!
//! - the QUIC transport with mutual TLS against a cluster CA (this module):
//!   making the cluster's certificates, building the manager's and the
//!   nodes' QUIC endpoints (quinn + rustls with the ring provider), and
//!   moving [`common::protocol`] frames over one bidirectional stream per
//!   connection;
//! - the [`TraceClock`] ([`clock`]): the one mapping between wall-clock
//!   instants and trace seconds that the manager and the nodes share.
//!
//! What it is not for: what the messages mean (the manager's and the node's
//! actors decide that, by calling the core in `common`).
//!
//! Trust model: one cluster CA, made by `libratory certs`. The manager
//! presents a certificate for the fixed name [`MANAGER_NAME`] (plus any
//! host names given), so nodes reach it by IP without certificates tied to
//! addresses; every node process presents a client certificate signed by
//! the same CA, and the manager refuses a connection without one, or with
//! one from another CA, during the TLS handshake.

#![forbid(unsafe_code)]

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

use common::protocol::{self, Decoder, Hello, ProtocolError};

pub mod clock;
pub mod roles;

pub use clock::TraceClock;
pub use roles::{CertRole, Identity, Revoked};

/// The name every manager certificate carries and every node checks.
pub const MANAGER_NAME: &str = "libratory-manager";

/// The identity of clients (`client.pem/.key`).
pub const CLIENT_NAME: &str = "client";

/// The look-only identity (`viewer.pem/.key`).
pub const VIEWER_NAME: &str = "viewer";

/// The fault injector's identity (`operator.pem/.key`): reports applied
/// faults to the manager.
pub const OPERATOR_NAME: &str = "operator";

/// ALPN protocol id: a QUIC peer speaking something else is refused during
/// the handshake.
pub const ALPN: &[u8] = b"libratory/1";

/// Errors of the transport. Each names the file or the peer it is about.
#[derive(Debug, Error)]
pub enum NetError {
    /// A certificate or key file could not be read or parsed.
    #[error("{path}: {what}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
    /// Making certificates failed.
    #[error("certificate generation: {0}")]
    Rcgen(#[from] rcgen::Error),
    /// TLS configuration was refused.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// Binding or configuring the endpoint failed.
    #[error("QUIC endpoint on {addr}: {what}")]
    Endpoint {
        /// The address.
        addr: SocketAddr,
        /// What went wrong.
        what: String,
    },
    /// Connecting to the manager failed (handshake refused, unreachable).
    #[error("connecting to {peer}: {what}")]
    Connect {
        /// The peer.
        peer: SocketAddr,
        /// What went wrong.
        what: String,
    },
    /// The connection failed or closed.
    #[error("connection with {peer}: {what}")]
    Connection {
        /// The peer.
        peer: SocketAddr,
        /// What went wrong.
        what: String,
    },
    /// The peer sent bytes that are not our protocol.
    #[error("peer {peer}: {source}")]
    Protocol {
        /// The peer.
        peer: SocketAddr,
        /// What was wrong with its bytes.
        source: ProtocolError,
    },
}

fn file_err(path: &Path, what: impl ToString) -> NetError {
    NetError::File {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

/// Paths of the files in a certificates directory.
#[derive(Debug, Clone)]
pub struct CertPaths {
    dir: PathBuf,
}

impl CertPaths {
    /// The directory.
    pub fn new(dir: impl Into<PathBuf>) -> CertPaths {
        CertPaths { dir: dir.into() }
    }

    /// The CA certificate (every host needs it).
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The CA key (keep it on the machine that makes certificates).
    pub fn ca_key(&self) -> PathBuf {
        self.dir.join("ca.key")
    }

    /// Certificate and key of an identity (`manager` or `node-NAME`).
    pub fn identity(&self, name: &str) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!("{name}.pem")),
            self.dir.join(format!("{name}.key")),
        )
    }

    /// The identity name of a node process called `node`.
    pub fn node_identity(node: &str) -> String {
        format!("node-{node}")
    }
}

pub(crate) fn ca_params() -> CertificateParams {
    // Built the same way every time, so `add_nodes` can sign with the saved
    // CA key and produce certificates that chain to the saved CA certificate.
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "Libratory cluster CA");
    dn.push(DnType::OrganizationName, "Libratory");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = rcgen::date_time_ymd(2024, 1, 1);
    p.not_after = rcgen::date_time_ymd(2099, 1, 1);
    p
}

fn leaf(
    name: &str,
    sans: Vec<String>,
    role: (CertRole, &str),
    purpose: ExtendedKeyUsagePurpose,
    issuer: &Issuer<'_, KeyPair>,
) -> Result<(String, String), NetError> {
    let mut p = CertificateParams::new(sans)?;
    // The role the manager enforces (see `roles`).
    p.subject_alt_names.push(roles::role_san(role.0, role.1)?);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    p.distinguished_name = dn;
    p.extended_key_usages = vec![purpose];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.not_before = rcgen::date_time_ymd(2024, 1, 1);
    p.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes a private key readable by its owner only, from the first byte:
/// created with mode 0600 (an existing file is narrowed before it is
/// written), so no other user can open it while it is written.
fn write_private(path: &Path, text: &str) -> Result<(), NetError> {
    use std::io::Write;
    let mut open = fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        open.mode(0o600);
        if path.exists() {
            fs::set_permissions(path, fs::Permissions::from_mode(0o600))
                .map_err(|e| file_err(path, e))?;
        }
    }
    open.open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| file_err(path, e))
}

/// Makes a new cluster CA, the manager's certificate (for [`MANAGER_NAME`]
/// plus `manager_names`, e.g. its host names and IPs), a client
/// certificate for `libratory submit/quote/status` ([`CLIENT_NAME`]) and
/// one client certificate per node process name, into `dir`. Refuses to overwrite an
/// existing CA.
pub fn make_cluster_certs(
    dir: &Path,
    manager_names: &[String],
    nodes: &[String],
) -> Result<(), NetError> {
    let paths = CertPaths::new(dir);
    fs::create_dir_all(dir).map_err(|e| file_err(dir, e))?;
    if paths.ca_key().exists() {
        return Err(file_err(
            &paths.ca_key(),
            "a cluster CA already exists here; use --add to add node certificates to it, or choose another directory",
        ));
    }
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params().self_signed(&ca_key)?;
    fs::write(paths.ca_cert(), ca_cert.pem()).map_err(|e| file_err(&paths.ca_cert(), e))?;
    write_private(&paths.ca_key(), &ca_key.serialize_pem())?;
    let issuer = Issuer::new(ca_params(), ca_key);
    let mut sans = vec![MANAGER_NAME.to_string()];
    sans.extend(manager_names.iter().cloned());
    let (c, k) = leaf(
        MANAGER_NAME,
        sans,
        (CertRole::Manager, MANAGER_NAME),
        ExtendedKeyUsagePurpose::ServerAuth,
        &issuer,
    )?;
    let (cp, kp) = paths.identity("manager");
    fs::write(&cp, c).map_err(|e| file_err(&cp, e))?;
    write_private(&kp, &k)?;
    // One client identity for `libratory submit/quote/status`, and one
    // that may only look.
    for (name, role) in [
        (CLIENT_NAME, CertRole::Client),
        (VIEWER_NAME, CertRole::Viewer),
        (OPERATOR_NAME, CertRole::Operator),
    ] {
        let (c, k) = leaf(
            name,
            vec![name.to_string()],
            (role, name),
            ExtendedKeyUsagePurpose::ClientAuth,
            &issuer,
        )?;
        let (cp, kp) = paths.identity(name);
        fs::write(&cp, c).map_err(|e| file_err(&cp, e))?;
        write_private(&kp, &k)?;
    }
    add_nodes_with(&paths, &issuer, nodes)
}

/// Adds node certificates signed by the existing CA in `dir`, and the
/// operator's when the directory has none (a CA made before that role).
pub fn add_node_certs(dir: &Path, nodes: &[String]) -> Result<(), NetError> {
    let paths = CertPaths::new(dir);
    let key_pem = fs::read_to_string(paths.ca_key()).map_err(|e| file_err(&paths.ca_key(), e))?;
    let ca_key = KeyPair::from_pem(&key_pem).map_err(|e| file_err(&paths.ca_key(), e))?;
    let issuer = Issuer::new(ca_params(), ca_key);
    let (cp, kp) = paths.identity(OPERATOR_NAME);
    if !cp.exists() {
        let (c, k) = leaf(
            OPERATOR_NAME,
            vec![OPERATOR_NAME.to_string()],
            (CertRole::Operator, OPERATOR_NAME),
            ExtendedKeyUsagePurpose::ClientAuth,
            &issuer,
        )?;
        fs::write(&cp, c).map_err(|e| file_err(&cp, e))?;
        write_private(&kp, &k)?;
    }
    // A node's certificate replaced while it is still valid could not be
    // revoked any more (the list takes the serial of the file on disk).
    let revoked = roles::load_revoked(dir)?;
    for n in nodes {
        let (cp, _) = paths.identity(&CertPaths::node_identity(n));
        if cp.exists() && !revoked.contains(&roles::identity_of_file(&cp)?) {
            return Err(file_err(
                &cp,
                format!(
                    "node {n} has a certificate that is not revoked; `libratory certs --revoke {n}` first, then add it again (replaced, the old one could not be revoked any more)"
                ),
            ));
        }
    }
    add_nodes_with(&paths, &issuer, nodes)
}

fn add_nodes_with(
    paths: &CertPaths,
    issuer: &Issuer<'_, KeyPair>,
    nodes: &[String],
) -> Result<(), NetError> {
    for n in nodes {
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(file_err(
                &paths.dir,
                format!("node name '{n}' must be non-empty letters, digits, '-', '_' or '.'"),
            ));
        }
        let id = CertPaths::node_identity(n);
        let (c, k) = leaf(
            &id,
            vec![id.clone()],
            (CertRole::Node, n),
            ExtendedKeyUsagePurpose::ClientAuth,
            issuer,
        )?;
        let (cp, kp) = paths.identity(&id);
        fs::write(&cp, c).map_err(|e| file_err(&cp, e))?;
        write_private(&kp, &k)?;
    }
    Ok(())
}

pub(crate) fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_err(path, e))?;
    if certs.is_empty() {
        return Err(file_err(path, "no certificate in file"));
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, NetError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| file_err(path, e))
}

fn roots(paths: &CertPaths) -> Result<RootCertStore, NetError> {
    let mut roots = RootCertStore::empty();
    for c in load_certs(&paths.ca_cert())? {
        roots.add(c).map_err(|e| file_err(&paths.ca_cert(), e))?;
    }
    Ok(roots)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Timeouts of every connection: a peer silent for `idle` is gone (the
/// bound on detecting a dead node), keep-alives every `idle / 4` keep a
/// healthy but quiet link open.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Idle timeout.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: Duration::from_secs(5),
        }
    }
}

/// Initial congestion window of every connection (bytes): a burst of
/// dispatches goes out at once.
pub const INITIAL_WINDOW: u64 = 1 << 20;

fn transport(t: Timeouts) -> Arc<quinn::TransportConfig> {
    let mut tc = quinn::TransportConfig::default();
    tc.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(t.idle).expect("idle timeout within QUIC's range"),
    ));
    tc.keep_alive_interval(Some(t.idle / 4));
    // Congestion control for a cluster's own network (loopback, a lab
    // LAN), where a connection idles, then bursts: a flood of submissions
    // turns into dispatch frames of hundreds of parts at once. Cubic's
    // default initial window (~14 KB) holds such a burst for several round
    // trips, and only grows with acknowledgements, which a manager busy
    // deciding reads late: under a flood on loopback the dispatches waited
    // ~400 ms before a node saw them (with this window ~80 ms;
    // docs/manager.md, "Bursts and batching"). Loss still shrinks it as
    // Cubic does.
    let mut cc = quinn::congestion::CubicConfig::default();
    cc.initial_window(INITIAL_WINDOW);
    tc.congestion_controller_factory(Arc::new(cc));
    Arc::new(tc)
}

/// The manager's endpoint: listens on `addr`, presents the manager
/// certificate, and requires a client certificate from the cluster CA.
/// Must be called inside a tokio runtime (actix's is one).
pub fn server_endpoint(
    addr: SocketAddr,
    certs: &Path,
    t: Timeouts,
) -> Result<quinn::Endpoint, NetError> {
    let (tls, endpoint_config) = server_tls(certs)?;
    let qc = QuicServerConfig::try_from(tls).map_err(|e| NetError::Endpoint {
        addr,
        what: with_causes(&e),
    })?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(qc));
    sc.transport_config(transport(t));
    let endpoint_err = |e: std::io::Error| NetError::Endpoint {
        addr,
        what: with_causes(&e),
    };
    let socket = std::net::UdpSocket::bind(addr).map_err(endpoint_err)?;
    let runtime = quinn::default_runtime()
        .ok_or_else(|| endpoint_err(std::io::Error::other("no async runtime found")))?;
    quinn::Endpoint::new(endpoint_config, Some(sc), socket, runtime).map_err(endpoint_err)
}

/// Reads and checks the manager's identity in `certs` (its certificate
/// and key, the cluster CA) as [`server_endpoint`] does, without binding
/// anything: a run checks it before it writes or starts anything.
pub fn check_server_identity(certs: &Path) -> Result<(), NetError> {
    server_tls(certs).map(|_| ())
}

/// The manager's TLS settings and its endpoint's restartable QUIC
/// settings, from the files in `certs`.
fn server_tls(certs: &Path) -> Result<(rustls::ServerConfig, quinn::EndpointConfig), NetError> {
    let paths = CertPaths::new(certs);
    let (cp, kp) = paths.identity("manager");
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots(&paths)?), provider())
            .build()
            .map_err(|e| file_err(&paths.ca_cert(), e))?;
    let key = load_key(&kp)?;
    let endpoint_config = restartable_endpoint(&key);
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_certs(&cp)?, key)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    Ok((tls, endpoint_config))
}

/// The manager endpoint's QUIC settings that outlive its process: the
/// key of its stateless resets (RFC 9000, section 10.3) and the key its
/// connection IDs are made and recognised with, both derived from the
/// manager's private key, so that every manager process holding that
/// identity has the same ones. A manager started again on the address of
/// one that died (`libratory resume` after a crash) then recognises the
/// connection IDs the dead one gave out, and answers a node process's next
/// packet on the dead connection with a reset the node accepts (its token
/// is the one the dead manager gave for that ID): the node knows at once
/// that its manager is gone and rejoins. With quinn's defaults, random per
/// process, the new manager drops such a packet as bearing a connection ID
/// not its own, and the node waits out the whole idle timeout
/// (`link_timeout_s`: 20 s in the Fugaku-scale config) with a manager ready
/// to take it back. Only the holder of the manager's key can make the
/// tokens; the labels keep these uses of the key apart from any other.
fn restartable_endpoint(key: &PrivateKeyDer<'_>) -> quinn::EndpointConfig {
    use ring::hmac;
    let master = hmac::Key::new(hmac::HMAC_SHA256, key.secret_der());
    let reset = hmac::sign(&master, b"libratory: QUIC stateless reset key, v1");
    let cid = hmac::sign(&master, b"libratory: QUIC connection ID key, v1");
    let cid_key = u64::from_le_bytes(cid.as_ref()[..8].try_into().expect("a SHA-256 tag"));
    let mut config =
        quinn::EndpointConfig::new(Arc::new(hmac::Key::new(hmac::HMAC_SHA256, reset.as_ref())));
    config.cid_generator(move || {
        Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
    });
    config
}

/// A client endpoint (node process or client) presenting identity `name`
/// (`node-NAME`, or any identity in `certs`) and trusting only the cluster
/// CA. `bind` is usually `0.0.0.0:0`.
pub fn client_endpoint(
    bind: SocketAddr,
    certs: &Path,
    name: &str,
    t: Timeouts,
) -> Result<quinn::Endpoint, NetError> {
    let paths = CertPaths::new(certs);
    let (cp, kp) = paths.identity(name);
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots(&paths)?)
        .with_client_auth_cert(load_certs(&cp)?, load_key(&kp)?)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let qc = QuicClientConfig::try_from(tls).map_err(|e| NetError::Endpoint {
        addr: bind,
        what: with_causes(&e),
    })?;
    let mut cc = quinn::ClientConfig::new(Arc::new(qc));
    cc.transport_config(transport(t));
    let mut ep = quinn::Endpoint::client(bind).map_err(|e| NetError::Endpoint {
        addr: bind,
        what: with_causes(&e),
    })?;
    ep.set_default_client_config(cc);
    Ok(ep)
}

/// A UDP port on loopback that is free now: bound and released, for a
/// manager's `listen` address that other processes must be told before it
/// binds. It is taken below the kernel's range of ephemeral ports
/// (`/proc/sys/net/ipv4/ip_local_port_range`; 32768 by default), so no
/// socket bound to port 0 can be given it: not another process's QUIC
/// client endpoint, not a node process reconnecting. A manager killed and
/// started again on it (a `manager-crash` fault) then finds it free. Ports
/// are tried from a place picked by the process id, and never twice in one
/// process, so concurrent callers in one test binary get different ones.
/// Another process may still name the same port in between; the manager's
/// bind then fails with a clear error, so this is for tests, benches and
/// one-host runs, not for a port that must be reserved.
pub fn free_udp_port() -> std::io::Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768)
        .clamp(2048, 65535);
    // Ports 1024..low, above the privileged ones.
    let span = low - 1024;
    let start = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 1024 + (start + k) % span;
        if let Ok(s) = std::net::UdpSocket::bind(("127.0.0.1", port as u16)) {
            return Ok(s.local_addr()?.port());
        }
    }
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The identity of the peer's verified client certificate (see [`roles`]).
pub fn peer_identity(conn: &quinn::Connection) -> Result<Identity, String> {
    let any = conn
        .peer_identity()
        .ok_or_else(|| "presented no certificate".to_string())?;
    let certs = any
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| "presented no X.509 certificate".to_string())?;
    let first = certs
        .first()
        .ok_or_else(|| "presented no certificate".to_string())?;
    roles::identity_of(first)
}

/// Connects to the manager at `peer` and completes the TLS handshake.
pub async fn connect(
    ep: &quinn::Endpoint,
    peer: SocketAddr,
) -> Result<quinn::Connection, NetError> {
    let connecting = ep
        .connect(peer, MANAGER_NAME)
        .map_err(|e| NetError::Connect {
            peer,
            what: with_causes(&e),
        })?;
    connecting.await.map_err(|e| NetError::Connect {
        peer,
        what: with_causes(&e),
    })
}

/// One bidirectional stream carrying protocol frames, with its peer's
/// address for error messages.
pub struct FramedStream {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    dec: Decoder,
    peer: SocketAddr,
    buf: Vec<u8>,
}

impl FramedStream {
    /// Wraps an opened or accepted stream pair.
    pub fn new(send: quinn::SendStream, recv: quinn::RecvStream, peer: SocketAddr) -> FramedStream {
        FramedStream {
            send,
            recv,
            dec: Decoder::new(),
            peer,
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// Opens the stream on a new connection (the connecting side).
    pub async fn open(conn: &quinn::Connection) -> Result<FramedStream, NetError> {
        let peer = conn.remote_address();
        let (send, recv) = conn.open_bi().await.map_err(|e| NetError::Connection {
            peer,
            what: with_causes(&e),
        })?;
        Ok(FramedStream::new(send, recv, peer))
    }

    /// Accepts the stream on a new connection (the accepting side).
    pub async fn accept(conn: &quinn::Connection) -> Result<FramedStream, NetError> {
        let peer = conn.remote_address();
        let (send, recv) = conn.accept_bi().await.map_err(|e| NetError::Connection {
            peer,
            what: with_causes(&e),
        })?;
        Ok(FramedStream::new(send, recv, peer))
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Splits into a sending and a receiving half, for a reader task and a
    /// writer that live apart.
    pub fn split(self) -> (FrameSender, FrameReceiver) {
        (
            FrameSender {
                send: self.send,
                peer: self.peer,
            },
            FrameReceiver {
                recv: self.recv,
                dec: self.dec,
                peer: self.peer,
                buf: self.buf,
                pending: None,
            },
        )
    }

    /// Sends one message.
    pub async fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), NetError> {
        send_on(&mut self.send, self.peer, msg).await
    }

    /// Receives one message; `None` when the peer finished the stream
    /// cleanly between frames.
    pub async fn recv<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<T>, NetError> {
        recv_on(
            &mut self.recv,
            &mut self.dec,
            &mut self.buf,
            self.peer,
            what,
        )
        .await
    }

    /// Sends our hello and reads and checks theirs.
    pub async fn handshake(&mut self, ours: &Hello) -> Result<Hello, NetError> {
        self.send(ours).await?;
        loop {
            if let Some(p) = self
                .dec
                .next_payload()
                .map_err(|source| NetError::Protocol {
                    peer: self.peer,
                    source,
                })?
            {
                return protocol::decode_hello(&p).map_err(|source| NetError::Protocol {
                    peer: self.peer,
                    source,
                });
            }
            if !fill(&mut self.recv, &mut self.dec, &mut self.buf, self.peer).await? {
                return Err(NetError::Connection {
                    peer: self.peer,
                    what: "closed before saying hello".into(),
                });
            }
        }
    }
}

/// The sending half of a [`FramedStream`].
pub struct FrameSender {
    send: quinn::SendStream,
    peer: SocketAddr,
}

impl FrameSender {
    /// Sends one message.
    pub async fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), NetError> {
        send_on(&mut self.send, self.peer, msg).await
    }

    /// Sends `msgs` in order as one write (one buffer of their frames): a
    /// burst costs one call into the connection and one wake of its driver,
    /// not one per frame.
    pub async fn send_all<T: Serialize>(&mut self, msgs: &[T]) -> Result<(), NetError> {
        let mut buf = Vec::new();
        for m in msgs {
            protocol::encode_append(&mut buf, m);
        }
        self.send
            .write_all(&buf)
            .await
            .map_err(|e| NetError::Connection {
                peer: self.peer,
                what: with_causes(&e),
            })
    }

    /// Finishes the stream (the peer's reader sees a clean end).
    pub fn finish(&mut self) {
        let _ = self.send.finish();
    }
}

/// The receiving half of a [`FramedStream`].
pub struct FrameReceiver {
    recv: quinn::RecvStream,
    dec: Decoder,
    peer: SocketAddr,
    buf: Vec<u8>,
    /// An error met while batching, after good messages: returned next.
    pending: Option<NetError>,
}

impl FrameReceiver {
    /// Receives one message; `None` on a clean end of stream.
    pub async fn recv<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<T>, NetError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        recv_on(
            &mut self.recv,
            &mut self.dec,
            &mut self.buf,
            self.peer,
            what,
        )
        .await
    }

    /// The next message if it has already arrived whole (read with an
    /// earlier `recv`), without waiting: a reader takes a burst of frames
    /// that came in one read as one batch.
    pub fn try_recv_buffered<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<T>, NetError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        self.dec
            .next::<T>(what)
            .map_err(|source| NetError::Protocol {
                peer: self.peer,
                source,
            })
    }

    /// Receives one message and every further one already buffered behind
    /// it (at most `max` in all); empty on a clean end of stream.
    pub async fn recv_batch<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
        max: usize,
    ) -> Result<Vec<T>, NetError> {
        let Some(first) = self.recv::<T>(what).await? else {
            return Ok(Vec::new());
        };
        let mut batch = vec![first];
        while batch.len() < max {
            match self.try_recv_buffered::<T>(what) {
                Ok(Some(m)) => batch.push(m),
                Ok(None) => break,
                // The good messages before a bad frame are delivered first;
                // the error comes with the next call.
                Err(e) => {
                    self.pending = Some(e);
                    break;
                }
            }
        }
        Ok(batch)
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}

/// An error with its causes: quinn's "connection lost" alone hides why
/// (e.g. the peer closed it refusing our protocol version), which is in
/// the source.
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    common::errors::said_once(e)
}

async fn send_on<T: Serialize>(
    send: &mut quinn::SendStream,
    peer: SocketAddr,
    msg: &T,
) -> Result<(), NetError> {
    send.write_all(&protocol::encode(msg))
        .await
        .map_err(|e| NetError::Connection {
            peer,
            what: with_causes(&e),
        })
}

/// Reads more bytes into the decoder; false on a clean end of stream.
async fn fill(
    recv: &mut quinn::RecvStream,
    dec: &mut Decoder,
    buf: &mut [u8],
    peer: SocketAddr,
) -> Result<bool, NetError> {
    match recv.read(buf).await {
        Ok(Some(n)) => {
            dec.feed(&buf[..n]);
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(NetError::Connection {
            peer,
            what: with_causes(&e),
        }),
    }
}

async fn recv_on<T: DeserializeOwned>(
    recv: &mut quinn::RecvStream,
    dec: &mut Decoder,
    buf: &mut [u8],
    peer: SocketAddr,
    what: &'static str,
) -> Result<Option<T>, NetError> {
    loop {
        if let Some(m) = dec
            .next::<T>(what)
            .map_err(|source| NetError::Protocol { peer, source })?
        {
            return Ok(Some(m));
        }
        if !fill(recv, dec, buf, peer).await? {
            dec.finish()
                .map_err(|source| NetError::Protocol { peer, source })?;
            return Ok(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::protocol::{ManagerMsg, NodeMsg, Role};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn local() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    /// A manager that accepts one connection, says hello, and answers a
    /// heartbeat with a ping.
    async fn serve_once(ep: quinn::Endpoint) -> Result<Hello, NetError> {
        let conn =
            ep.accept()
                .await
                .expect("incoming")
                .await
                .map_err(|e| NetError::Connection {
                    peer: local(),
                    what: with_causes(&e),
                })?;
        let mut s = FramedStream::accept(&conn).await?;
        let theirs = s
            .handshake(&Hello::new(Role::Manager, "test manager"))
            .await?;
        let m: Option<NodeMsg> = s.recv("node message").await?;
        assert_eq!(m, Some(NodeMsg::Heartbeat { seq: 1 }));
        s.send(&ManagerMsg::Ping { nonce: 5 }).await?;
        // Wait for the client to finish before dropping the connection.
        let _ = s.recv::<NodeMsg>("node message").await;
        Ok(theirs)
    }

    #[test]
    fn mutual_tls_round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        make_cluster_certs(dir.path(), &[], &["a".into()]).unwrap();
        let other = tempfile::tempdir().unwrap();
        make_cluster_certs(other.path(), &[], &["a".into()]).unwrap();
        // A second CA in the same directory is refused.
        assert!(make_cluster_certs(dir.path(), &[], &[])
            .unwrap_err()
            .to_string()
            .contains("already exists"));
        add_node_certs(dir.path(), &["b".into()]).unwrap();
        rt().block_on(async {
            let server = server_endpoint(local(), dir.path(), Timeouts::default()).unwrap();
            let addr = server.local_addr().unwrap();

            // Nodes with a certificate from this CA (one added later too).
            for name in ["node-a", "node-b"] {
                let srv = tokio::spawn(serve_once(server.clone()));
                let ep = client_endpoint(local(), dir.path(), name, Timeouts::default()).unwrap();
                let conn = connect(&ep, addr).await.unwrap();
                let mut s = FramedStream::open(&conn).await.unwrap();
                let h = s.handshake(&Hello::new(Role::Node, name)).await.unwrap();
                assert_eq!(h.role, Role::Manager);
                s.send(&NodeMsg::Heartbeat { seq: 1 }).await.unwrap();
                let m: Option<ManagerMsg> = s.recv("manager message").await.unwrap();
                assert_eq!(m, Some(ManagerMsg::Ping { nonce: 5 }));
                s.send(&NodeMsg::Goodbye {
                    reason: "bye".into(),
                })
                .await
                .unwrap();
                let hello = tokio::time::timeout(Duration::from_secs(10), srv)
                    .await
                    .expect("server done in time")
                    .unwrap()
                    .unwrap();
                assert_eq!(hello.software, name);
            }

            // A certificate from another CA, and no certificate at all:
            // refused in the handshake, before any frame is read.
            let other_ep =
                client_endpoint(local(), other.path(), "node-a", Timeouts::default()).unwrap();
            let no_cert_ep = {
                let mut tls = rustls::ClientConfig::builder_with_provider(provider())
                    .with_protocol_versions(&[&rustls::version::TLS13])
                    .unwrap()
                    .with_root_certificates(roots(&CertPaths::new(dir.path())).unwrap())
                    .with_no_client_auth();
                tls.alpn_protocols = vec![ALPN.to_vec()];
                let mut ep = quinn::Endpoint::client(local()).unwrap();
                ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(
                    QuicClientConfig::try_from(tls).unwrap(),
                )));
                ep
            };
            for (what, ep) in [("another CA", other_ep), ("no certificate", no_cert_ep)] {
                let srv = tokio::spawn(serve_once(server.clone()));
                let r = tokio::time::timeout(Duration::from_secs(10), async {
                    let conn = connect(&ep, addr).await?;
                    let mut s = FramedStream::open(&conn).await?;
                    s.handshake(&Hello::new(Role::Node, "stranger")).await
                })
                .await
                .expect("refusal within the timeout");
                assert!(r.is_err(), "{what}: must be refused");
                let served = tokio::time::timeout(Duration::from_secs(10), srv).await;
                assert!(
                    matches!(served, Ok(Ok(Err(_)))),
                    "{what}: the manager must see a failed connection"
                );
            }
        });
    }

    /// A manager endpoint and a node connected to it over real QUIC, past
    /// the hello: (the manager's end, the node's end, keep-alives). Certs
    /// go in `dir`.
    async fn node_link(
        dir: &Path,
    ) -> (
        FramedStream,
        FramedStream,
        (quinn::Endpoint, quinn::Connection, quinn::Connection),
    ) {
        make_cluster_certs(dir, &[], &["a".into()]).unwrap();
        let server = server_endpoint(local(), dir, Timeouts::default()).unwrap();
        let addr = server.local_addr().unwrap();
        let srv = tokio::spawn(async move {
            let conn = server.accept().await.unwrap().await.unwrap();
            let mut s = FramedStream::accept(&conn).await.unwrap();
            s.handshake(&Hello::new(Role::Manager, "m")).await.unwrap();
            (s, conn)
        });
        let ep = client_endpoint(local(), dir, "node-a", Timeouts::default()).unwrap();
        let conn = connect(&ep, addr).await.unwrap();
        let mut s = FramedStream::open(&conn).await.unwrap();
        s.handshake(&Hello::new(Role::Node, "n")).await.unwrap();
        let (m, mconn) = srv.await.unwrap();
        (m, s, (ep, conn, mconn))
    }

    #[test]
    fn batches_deliver_the_good_frames_before_a_bad_one() {
        // Heartbeats 1-5, a frame that does not decode, heartbeat 6: the
        // reader gets 1-5 in order (in however many bursts), then the
        // error; nothing before the bad frame is lost to it.
        let dir = tempfile::tempdir().unwrap();
        rt().block_on(async {
            let (m, mut s, _keep) = node_link(dir.path()).await;
            let srv = tokio::spawn(async move {
                let (_tx, mut rx) = m.split();
                let mut got = Vec::new();
                loop {
                    match rx.recv_batch::<NodeMsg>("node message", 64).await {
                        Ok(b) if b.is_empty() => return (got, None),
                        Ok(b) => got.extend(b),
                        Err(e) => return (got, Some(e.to_string())),
                    }
                }
            });
            let mut bytes = Vec::new();
            for seq in 1..=5 {
                bytes.extend(protocol::encode(&NodeMsg::Heartbeat { seq }));
            }
            bytes.extend([0, 0, 0, 3, 0xff, 0xff, 0xff]);
            bytes.extend(protocol::encode(&NodeMsg::Heartbeat { seq: 6 }));
            s.send.write_all(&bytes).await.unwrap();
            let (got, err) = tokio::time::timeout(Duration::from_secs(10), srv)
                .await
                .expect("reader done in time")
                .unwrap();
            let seqs: Vec<u64> = got
                .iter()
                .map(|m| match m {
                    NodeMsg::Heartbeat { seq } => *seq,
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
            assert!(err
                .expect("the bad frame is an error")
                .contains("node message"));
        });
    }

    #[test]
    fn send_all_delivers_every_frame_in_order() {
        // 300 heartbeats and a goodbye in one write through the sending
        // half, then a finish: the reader gets exactly those, in order,
        // and then the clean end.
        let dir = tempfile::tempdir().unwrap();
        rt().block_on(async {
            let (m, s, _keep) = node_link(dir.path()).await;
            let srv = tokio::spawn(async move {
                let (_tx, mut rx) = m.split();
                let mut got = Vec::new();
                while let Some(m) = rx.recv::<NodeMsg>("node message").await.unwrap() {
                    got.push(m);
                }
                got
            });
            let (mut tx, _rx) = s.split();
            let mut sent: Vec<NodeMsg> = (1..=300).map(|seq| NodeMsg::Heartbeat { seq }).collect();
            sent.push(NodeMsg::Goodbye {
                reason: "done".into(),
            });
            tx.send_all(&sent).await.unwrap();
            tx.finish();
            let got = tokio::time::timeout(Duration::from_secs(10), srv)
                .await
                .expect("reader done in time")
                .unwrap();
            assert_eq!(got, sent);
        });
    }

    #[test]
    fn missing_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = match client_endpoint(local(), dir.path(), "node-x", Timeouts::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("no certificates, yet an endpoint"),
        };
        assert!(e.contains("node-x.pem") || e.contains("ca.pem"), "{e}");
    }
}
