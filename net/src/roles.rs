//! Who a certificate says its holder is, and which certificates are
//! revoked.
//!
//! Every certificate `libratory certs` makes carries its role and name in a
//! URI subject alternative name, `libratory:role=ROLE;name=NAME` (what
//! `openssl x509 -noout -ext subjectAltName` prints as
//! `URI:libratory:role=node;name=lab1`):
//!
//! - `manager` (`manager.pem`): serves only the manager;
//! - `node` with the node name (`node-NAME.pem`): registers node processes
//!   under NAME only;
//! - `client` (`client.pem`): submits, quotes, looks;
//! - `viewer` (`viewer.pem`): looks only (status, quote, latency);
//! - `operator` (`operator.pem`): reports the faults a fault injector
//!   applied (`FaultApplied`) and looks; submits nothing.
//!
//! The manager reads the role from the certificate the TLS handshake
//! verified, never from what the peer says in its hello, and checks it
//! where each request is handled.
//!
//! Revocation is an X.509 certificate revocation list, `ca.crl.pem` beside
//! `ca.pem`, signed with the CA key (`openssl crl -in ca.crl.pem -noout
//! -text` reads it): `libratory certs --revoke NAME` adds the serial of
//! `NAME.pem`. The manager reads it at start and on SIGHUP.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{
    CertificateRevocationListParams, Issuer, KeyIdMethod, KeyPair, RevocationReason,
    RevokedCertParams, SanType, SerialNumber,
};
use time::OffsetDateTime;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{parse_x509_certificate, parse_x509_crl, FromDer};

use crate::{file_err, CertPaths, NetError};

/// The scheme of the role SAN.
pub const ROLE_SCHEME: &str = "libratory:";

/// The revocation list's file name, beside `ca.pem`.
pub const CRL_FILE: &str = "ca.crl.pem";

/// What a certificate's holder may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CertRole {
    /// The manager's own certificate.
    Manager,
    /// A node host's: registers node processes under its name.
    Node,
    /// Submits, quotes and looks.
    Client,
    /// Looks only: status, quote, latency.
    Viewer,
    /// The fault injector's: reports the faults it applied, and looks.
    Operator,
}

impl CertRole {
    /// The word in the SAN and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            CertRole::Manager => "manager",
            CertRole::Node => "node",
            CertRole::Client => "client",
            CertRole::Viewer => "viewer",
            CertRole::Operator => "operator",
        }
    }

    fn parse(s: &str) -> Option<CertRole> {
        Some(match s {
            "manager" => CertRole::Manager,
            "node" => CertRole::Node,
            "client" => CertRole::Client,
            "viewer" => CertRole::Viewer,
            "operator" => CertRole::Operator,
            _ => return None,
        })
    }
}

impl fmt::Display for CertRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The role SAN of `role` and `name`.
pub fn role_uri(role: CertRole, name: &str) -> String {
    format!("{ROLE_SCHEME}role={role};name={name}")
}

pub(crate) fn role_san(role: CertRole, name: &str) -> Result<SanType, NetError> {
    Ok(SanType::URI(role_uri(role, name).try_into()?))
}

/// Who a verified certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Its role.
    pub role: CertRole,
    /// Its name: the node name for a node, else the identity's name.
    pub name: String,
    /// The certificate's common name (`node-NAME`, `client`, ...).
    pub subject: String,
    /// The certificate's serial number, big-endian bytes.
    pub serial: Vec<u8>,
}

impl Identity {
    /// The serial number as colon-separated hex (as openssl prints it).
    pub fn serial_hex(&self) -> String {
        hex(&self.serial)
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "identity {} (role {}", self.subject, self.role)?;
        if self.role == CertRole::Node {
            write!(f, ", name {}", self.name)?;
        }
        f.write_str(")")
    }
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The identity a DER certificate carries. Errors say what is missing (a
/// certificate made before roles has no role SAN).
pub fn identity_of(der: &[u8]) -> Result<Identity, String> {
    let (_, cert) =
        parse_x509_certificate(der).map_err(|e| format!("unreadable certificate: {e}"))?;
    let subject = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or("?")
        .to_string();
    let serial = cert.raw_serial().to_vec();
    let sans = cert
        .subject_alternative_name()
        .map_err(|e| format!("certificate {subject}: bad subjectAltName: {e}"))?;
    let mut found = None;
    for gn in sans.iter().flat_map(|s| s.value.general_names.iter()) {
        if let GeneralName::URI(uri) = gn {
            if let Some(rest) = uri.strip_prefix(ROLE_SCHEME) {
                if found.is_some() {
                    return Err(format!("certificate {subject} has more than one role"));
                }
                found = Some(parse_role(rest).ok_or_else(|| {
                    format!("certificate {subject}: role '{uri}' is not role=ROLE;name=NAME with a known role")
                })?);
            }
        }
    }
    let (role, name) = found.ok_or_else(|| {
        format!(
            "certificate {subject} carries no role (no {ROLE_SCHEME}role=...;name=... subject alternative name): \
             made before roles? make new certificates with `libratory certs`"
        )
    })?;
    Ok(Identity {
        role,
        name,
        subject,
        serial,
    })
}

fn parse_role(rest: &str) -> Option<(CertRole, String)> {
    let mut role = None;
    let mut name = None;
    for kv in rest.split(';') {
        match kv.split_once('=')? {
            ("role", r) => role = Some(CertRole::parse(r)?),
            ("name", n) if !n.is_empty() => name = Some(n.to_string()),
            _ => return None,
        }
    }
    Some((role?, name?))
}

/// The identity of the first certificate in a PEM file.
pub fn identity_of_file(path: &Path) -> Result<Identity, NetError> {
    let certs = crate::load_certs(path)?;
    identity_of(&certs[0]).map_err(|e| file_err(path, e))
}

/// The serial numbers a revocation list names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revoked {
    serials: BTreeSet<Vec<u8>>,
}

impl Revoked {
    /// Whether `id`'s certificate is revoked.
    pub fn contains(&self, id: &Identity) -> bool {
        self.serials.contains(&id.serial)
    }

    /// How many certificates are revoked.
    pub fn len(&self) -> usize {
        self.serials.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.serials.is_empty()
    }
}

/// Where the revocation list of the certificates in `certs` is.
pub fn crl_path(certs: &Path) -> PathBuf {
    certs.join(CRL_FILE)
}

/// One revoked entry: serial and revocation time (unix seconds).
type Entry = (Vec<u8>, i64);

fn read_crl(path: &Path) -> Result<Vec<Entry>, NetError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(file_err(path, e)),
    };
    let (_, pem) = x509_parser::pem::parse_x509_pem(&bytes)
        .map_err(|e| file_err(path, format!("not a PEM revocation list: {e}")))?;
    if pem.label != "X509 CRL" {
        return Err(file_err(
            path,
            format!("expected an X509 CRL, found {}", pem.label),
        ));
    }
    let (_, crl) = parse_x509_crl(&pem.contents)
        .map_err(|e| file_err(path, format!("unreadable revocation list: {e}")))?;
    Ok(crl
        .iter_revoked_certificates()
        .map(|r| {
            (
                r.raw_serial().to_vec(),
                r.revocation_date.to_datetime().unix_timestamp(),
            )
        })
        .collect())
}

/// Reads the revocation list beside `certs/ca.pem` (none: nothing revoked).
pub fn load_revoked(certs: &Path) -> Result<Revoked, NetError> {
    Ok(Revoked {
        serials: read_crl(&crl_path(certs))?
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
    })
}

/// Revokes identity `name` (`node-a`, `client`, `viewer`, or a node name
/// `a` for `node-a`) of the CA in `dir`: adds its certificate's serial to
/// `dir/ca.crl.pem`, re-signed with `dir/ca.key`. Returns the identity
/// revoked. Revoking twice is harmless.
pub fn revoke(dir: &Path, name: &str) -> Result<Identity, NetError> {
    let paths = CertPaths::new(dir);
    let (mut cert, _) = paths.identity(name);
    if name == "manager" || name == crate::MANAGER_NAME {
        // Only the manager reads the list: nodes and clients would go on
        // taking a revoked manager certificate.
        return Err(file_err(
            &cert,
            "the manager's certificate cannot be revoked (only the manager reads the revocation list); \
             make a new CA (`libratory certs` into a new directory) and hand its files out",
        ));
    }
    if !cert.exists() {
        let (node, _) = paths.identity(&CertPaths::node_identity(name));
        if node.exists() {
            cert = node;
        } else {
            return Err(file_err(
                &cert,
                format!("no certificate of identity '{name}' here (nor node-{name}.pem) to revoke"),
            ));
        }
    }
    let id = identity_of_file(&cert)?;
    let ca_pem = fs::read(paths.ca_cert()).map_err(|e| file_err(&paths.ca_cert(), e))?;
    // The certificate must come from this CA, or revoking it here means
    // nothing.
    let (_, ca_der) =
        x509_parser::pem::parse_x509_pem(&ca_pem).map_err(|e| file_err(&paths.ca_cert(), e))?;
    let (_, ca) = x509_parser::certificate::X509Certificate::from_der(&ca_der.contents)
        .map_err(|e| file_err(&paths.ca_cert(), e))?;
    let leaf_der = &crate::load_certs(&cert)?[0];
    let (_, leaf) = parse_x509_certificate(leaf_der).map_err(|e| file_err(&cert, e))?;
    if leaf.issuer() != ca.subject() {
        return Err(file_err(&cert, "not signed by this directory's CA"));
    }
    let key_pem = fs::read_to_string(paths.ca_key()).map_err(|e| file_err(&paths.ca_key(), e))?;
    let ca_key = KeyPair::from_pem(&key_pem).map_err(|e| file_err(&paths.ca_key(), e))?;
    let issuer = Issuer::new(crate::ca_params(), ca_key);
    let path = crl_path(dir);
    let mut entries = read_crl(&path)?;
    let now = OffsetDateTime::now_utc();
    if !entries.iter().any(|(s, _)| *s == id.serial) {
        entries.push((id.serial.clone(), now.unix_timestamp()));
    }
    let params = CertificateRevocationListParams {
        this_update: now,
        next_update: rcgen::date_time_ymd(2099, 1, 1),
        // Entries are only ever added: their count numbers the lists.
        crl_number: SerialNumber::from(entries.len() as u64),
        issuing_distribution_point: None,
        revoked_certs: entries
            .iter()
            .map(|(s, at)| RevokedCertParams {
                serial_number: SerialNumber::from_slice(s),
                revocation_time: OffsetDateTime::from_unix_timestamp(*at)
                    .unwrap_or(OffsetDateTime::UNIX_EPOCH),
                reason_code: Some(RevocationReason::KeyCompromise),
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    };
    let crl = params.signed_by(&issuer)?;
    let tmp = path.with_extension("pem.tmp");
    fs::write(&tmp, crl.pem()?).map_err(|e| file_err(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| file_err(&path, e))?;
    Ok(id)
}

/// Which keys in a node host's certificates directory are not its own:
/// every `*.key` other than `node-NAME.key` (the CA's, the client's,
/// another node's), and a `node-NAME.pem` whose role is not node NAME.
/// Each finding names the file.
pub fn foreign_keys(dir: &Path, node: &str) -> Result<Vec<String>, NetError> {
    let own = format!("{}.key", CertPaths::node_identity(node));
    let mut out = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| file_err(dir, e))?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in names {
        if n.ends_with(".key") && n != own {
            let what = if n == "ca.key" {
                "the CA's private key (anyone holding it can sign any identity)".to_string()
            } else {
                let pem = dir.join(n.replace(".key", ".pem"));
                match identity_of_file(&pem) {
                    Ok(id) => format!("the key of {id}"),
                    Err(_) => "a key of another identity".to_string(),
                }
            };
            out.push(format!(
                "{}: {what}, not this host's own",
                dir.join(&n).display()
            ));
        }
    }
    let (cert, _) = CertPaths::new(dir).identity(&CertPaths::node_identity(node));
    if cert.exists() {
        let id = identity_of_file(&cert)?;
        if id.role != CertRole::Node || id.name != node {
            out.push(format!(
                "{}: holds {id}, not node {node}'s certificate",
                cert.display()
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_node_certificate_is_not_replaced_and_the_managers_not_revoked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        crate::make_cluster_certs(d, &[], &["b".into()]).unwrap();
        for key in ["ca.key", "manager.key", "node-b.key"] {
            let mode = std::fs::metadata(d.join(key)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{key}");
        }
        let old = std::fs::read(d.join("node-b.pem")).unwrap();
        let err = crate::add_node_certs(d, &["b".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`libratory certs --revoke b` first"), "{err}");
        assert_eq!(std::fs::read(d.join("node-b.pem")).unwrap(), old);
        revoke(d, "b").unwrap();
        crate::add_node_certs(d, &["b".into()]).unwrap();
        assert_ne!(std::fs::read(d.join("node-b.pem")).unwrap(), old);
        let err = revoke(d, "manager").unwrap_err().to_string();
        assert!(err.contains("cannot be revoked"), "{err}");
        assert!(load_revoked(d).unwrap().len() == 1);
    }

    #[test]
    fn roles_round_trip_and_malformed_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        crate::make_cluster_certs(dir.path(), &[], &["lab1".into()]).unwrap();
        let id = |f: &str| identity_of_file(&dir.path().join(f)).unwrap();
        assert_eq!(
            (id("node-lab1.pem").role, id("node-lab1.pem").name),
            (CertRole::Node, "lab1".to_string())
        );
        assert_eq!(id("client.pem").role, CertRole::Client);
        assert_eq!(id("viewer.pem").role, CertRole::Viewer);
        assert_eq!(id("operator.pem").role, CertRole::Operator);
        assert_eq!(id("manager.pem").role, CertRole::Manager);
        assert_eq!(
            id("node-lab1.pem").to_string(),
            "identity node-lab1 (role node, name lab1)"
        );
        for bad in [
            "role=admin;name=x",
            "role=node",
            "name=x",
            "role=node;name=",
            "role=node;name=x;extra=1",
            "",
        ] {
            assert_eq!(parse_role(bad), None, "{bad}");
        }
        // Nothing revoked until --revoke; then exactly that serial, and
        // revoking twice keeps one entry.
        assert!(load_revoked(dir.path()).unwrap().is_empty());
        let r = revoke(dir.path(), "lab1").unwrap();
        assert_eq!(r, id("node-lab1.pem"));
        revoke(dir.path(), "node-lab1").unwrap();
        let list = load_revoked(dir.path()).unwrap();
        assert_eq!(list.len(), 1);
        assert!(list.contains(&id("node-lab1.pem")));
        assert!(!list.contains(&id("client.pem")));
        let e = revoke(dir.path(), "nobody").unwrap_err().to_string();
        assert!(e.contains("no certificate of identity 'nobody'"), "{e}");
        // A list that is not one is an error naming the file.
        std::fs::write(crl_path(dir.path()), "garbage").unwrap();
        let e = load_revoked(dir.path()).unwrap_err().to_string();
        assert!(e.contains(CRL_FILE), "{e}");
    }
}
