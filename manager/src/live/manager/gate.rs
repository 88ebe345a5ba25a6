//! Who may do what: the identity in each peer's verified certificate (its
//! role and name, see `net::roles`), checked where each request is
//! handled, and the revocation list, read at start and on SIGHUP, which
//! also closes the live connections of identities it revokes.
//!
//! The hello's role only says which conversation a peer wants; what it may
//! do in it comes from its certificate.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix::prelude::*;
use common::admission::LinkId;
use common::protocol::{self, ClientMsg};
use net::{CertRole, Identity, NetError, Revoked};

use super::link::{CloseLink, LinkActor};

/// A live connection the gate may have to close.
struct Live {
    conn: quinn::Connection,
    id: Identity,
    /// The node process label it registered (node links only).
    label: Option<String>,
    link: Option<Addr<LinkActor>>,
}

#[derive(Default)]
struct Inner {
    revoked: Revoked,
    live: HashMap<LinkId, Live>,
    /// Labels refused as still registered, with when that was last said.
    still_registered: Warned,
}

/// How often a refusal that repeats is said again: a process asking every
/// half second for its whole grace period is said once a minute, not 120
/// times; a label whose link left, or that registered, is said at once the
/// next time.
const REFUSAL_SAID_EVERY: Duration = Duration::from_secs(60);

/// When each label's refusal was last said.
#[derive(Default)]
struct Warned(HashMap<String, Instant>);

impl Warned {
    /// Whether `label`'s refusal at `now` is to be said (and it is then
    /// noted as said).
    fn say(&mut self, label: &str, now: Instant) -> bool {
        match self.0.get_mut(label) {
            Some(at) if now.saturating_duration_since(*at) < REFUSAL_SAID_EVERY => false,
            Some(at) => {
                *at = now;
                true
            }
            None => {
                self.0.insert(label.to_string(), now);
                true
            }
        }
    }

    fn forget(&mut self, label: &str) {
        self.0.remove(label);
    }
}

/// The manager's gate: revocation list and live connections.
pub(super) struct Gate {
    certs: PathBuf,
    inner: Mutex<Inner>,
}

impl Gate {
    /// Reads the revocation list beside `certs/ca.pem`.
    pub(super) fn new(certs: &Path) -> Result<Gate, NetError> {
        let revoked = net::roles::load_revoked(certs)?;
        Ok(Gate {
            certs: certs.to_path_buf(),
            inner: Mutex::new(Inner {
                revoked,
                live: HashMap::new(),
                still_registered: Warned::default(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding it leaves plain data: go on with it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn revoked_reason(&self, id: &Identity) -> String {
        format!(
            "{id} is revoked (serial {} in {})",
            id.serial_hex(),
            net::roles::crl_path(&self.certs).display()
        )
    }

    /// Admits a connection's identity, or says why not: a revoked
    /// certificate, or the manager's own. Admitted connections are tracked
    /// until [`Gate::leave`].
    pub(super) fn enter(
        &self,
        link: LinkId,
        conn: &quinn::Connection,
        id: &Identity,
    ) -> Result<(), String> {
        let mut g = self.lock();
        if g.revoked.contains(id) {
            return Err(self.revoked_reason(id));
        }
        if id.role == CertRole::Manager {
            return Err(format!(
                "{id} serves only the manager: it may not connect to one"
            ));
        }
        g.live.insert(
            link,
            Live {
                conn: conn.clone(),
                id: id.clone(),
                label: None,
                link: None,
            },
        );
        Ok(())
    }

    /// A registration of node process `label` on `link`: only a node
    /// identity, only under its own name, and one live registration per
    /// label.
    pub(super) fn register(&self, link: LinkId, id: &Identity, label: &str) -> Result<(), Refusal> {
        if id.role != CertRole::Node {
            return Err(format!(
                "{id} may not register node processes (registering '{label}'): only a node identity registers, under its own name"
            )
            .into());
        }
        if !label_belongs(&id.name, label) {
            return Err(format!(
                "{id} may not register node process '{label}': a node identity registers only under its own name ({}{n}-K or {n}@HOST)",
                if ends_in_index(&id.name) { String::new() } else { format!("{}, ", id.name) },
                n = id.name
            )
            .into());
        }
        let mut g = self.lock();
        if let Some(other) = g
            .live
            .iter()
            .find(|(l, c)| **l != link && c.label.as_deref() == Some(label))
            .map(|(l, _)| *l)
        {
            // The process asks again every half second until the earlier
            // link is given up: said once a minute.
            let quiet = !g.still_registered.say(label, Instant::now());
            return Err(Refusal {
                code: protocol::CLOSE_STILL_REGISTERED,
                quiet,
                why: format!(
                    "{id}: node process '{label}' is already registered and live (link {other}); a second live registration under one name is refused (a process started again after a crash is taken once this manager gives the earlier link up, within its link timeout)"
                ),
            });
        }
        g.still_registered.forget(label);
        if let Some(c) = g.live.get_mut(&link) {
            c.label = Some(label.to_string());
        }
        Ok(())
    }

    /// The link actor serving `link`, closed with the reason on revocation.
    pub(super) fn set_link(&self, link: LinkId, addr: Addr<LinkActor>) {
        if let Some(c) = self.lock().live.get_mut(&link) {
            c.link = Some(addr);
        }
    }

    /// `link`'s connection is over.
    pub(super) fn leave(&self, link: LinkId) {
        let mut g = self.lock();
        if let Some(label) = g.live.remove(&link).and_then(|c| c.label) {
            // A process refused while this link held the label and that
            // gave up is said again if it comes back.
            g.still_registered.forget(&label);
        }
    }

    /// Re-reads the revocation list and closes every live connection of an
    /// identity it names, with the reason. Returns the reasons.
    pub(super) fn reload(&self) -> Result<Vec<String>, NetError> {
        let revoked = net::roles::load_revoked(&self.certs)?;
        let mut g = self.lock();
        g.revoked = revoked;
        let gone: Vec<LinkId> = g
            .live
            .iter()
            .filter(|(_, c)| g.revoked.contains(&c.id))
            .map(|(l, _)| *l)
            .collect();
        let mut reasons = Vec::new();
        for l in gone {
            let c = g.live.remove(&l).expect("listed above");
            let reason = format!("{}: connection closed", self.revoked_reason(&c.id));
            if let Some(a) = &c.link {
                // The manager records the node process lost with this
                // reason, not with the transport's "closed".
                a.do_send(CloseLink(reason.clone()));
            }
            let mut bytes = reason.clone().into_bytes();
            bytes.truncate(400);
            c.conn.close(protocol::CLOSE_REFUSED.into(), &bytes);
            reasons.push(reason);
        }
        Ok(reasons)
    }
}

/// Whether node process `label` belongs to node name `name`: the name
/// itself, `NAME-K` (the launch scripts' labels) or `NAME@HOST` (the node
/// binary's default). The name itself only when it does not end in `-K`:
/// node `lab-1`'s bare label would read as node `lab`'s process 1, which
/// `lab`'s certificate could then hold against it.
pub(super) fn label_belongs(name: &str, label: &str) -> bool {
    match label.strip_prefix(name) {
        Some("") => !ends_in_index(name),
        Some(rest) => {
            rest.starts_with('@') && rest.len() > 1
                || rest
                    .strip_prefix('-')
                    .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        }
        None => false,
    }
}

/// Whether `name` ends in `-K` (K decimal digits).
fn ends_in_index(name: &str) -> bool {
    name.rsplit_once('-')
        .is_some_and(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

/// The name of a client request, for messages.
fn request_name(m: &ClientMsg) -> &'static str {
    match m {
        ClientMsg::Submit { .. } => "submit",
        ClientMsg::Quote { .. } => "quote",
        ClientMsg::Status { .. } => "ask for the status",
        ClientMsg::Latency { .. } => "ask for latencies",
        ClientMsg::Echo { .. } => "echo",
        ClientMsg::FaultApplied { .. } => "report a fault",
    }
}

/// The token of a client request.
pub(super) fn token_of(m: &ClientMsg) -> u64 {
    match m {
        ClientMsg::Submit { token, .. }
        | ClientMsg::Quote { token, .. }
        | ClientMsg::Status { token, .. }
        | ClientMsg::Latency { token }
        | ClientMsg::Echo { token }
        | ClientMsg::FaultApplied { token, .. } => *token,
    }
}

/// Whether `id` (connected from `peer`) may make client request `m`: a
/// client anything but fault reports, a viewer only look (status, quote,
/// latency, echo), the operator report faults and look, a node nothing.
pub(super) fn permits(id: &Identity, peer: SocketAddr, m: &ClientMsg) -> Result<(), String> {
    if let Some(what) = m.oversized() {
        return Err(format!(
            "{id} at {peer}: {} refused: {what}",
            request_name(m)
        ));
    }
    let fault = matches!(m, ClientMsg::FaultApplied { .. });
    let look = !fault && !matches!(m, ClientMsg::Submit { .. });
    let ok = match id.role {
        CertRole::Client => !fault,
        CertRole::Viewer => look,
        CertRole::Operator => fault || look,
        CertRole::Node | CertRole::Manager => false,
    };
    if ok {
        return Ok(());
    }
    if fault {
        // A fault report blames losses on a fault: say who tried.
        let what = match m {
            ClientMsg::FaultApplied { fault, process, .. } => {
                format!(" ({fault} on node process {process})")
            }
            _ => String::new(),
        };
        return Err(format!(
            "{id} at {peer} may not report a fault{what}: only the operator identity \
             (operator.pem, the fault injector's) reports the faults it applied"
        ));
    }
    let why = match id.role {
        CertRole::Viewer => "a viewer may only look (status, quote, latency)",
        CertRole::Node => "a node identity only registers node processes under its name",
        CertRole::Operator => {
            "the operator identity only reports faults and looks (status, quote, latency)"
        }
        _ => "the manager's certificate serves only the manager",
    };
    Err(format!("{id} may not {}: {why}", request_name(m)))
}

/// Why a connection is refused, and the QUIC close code that tells the
/// peer ([`protocol::CLOSE_REFUSED`] unless a later try may succeed).
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    pub(super) code: u32,
    pub(super) why: String,
    /// Logged below warnings: a refusal said already.
    pub(super) quiet: bool,
}

impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal {
            code: protocol::CLOSE_REFUSED,
            why,
            quiet: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_belong_to_their_name_only() {
        for (name, label, ok) in [
            ("s1", "s1", true),
            ("s1", "s1-0", true),
            ("s1", "s1-12", true),
            ("s1", "s1@lab3", true),
            ("s1", "s1@", false),
            ("s1", "s1-", false),
            ("s1", "s1-2-0", false),
            ("s1", "s10", false),
            ("s1", "s2-0", false),
            ("s1", "evil", false),
            ("a", "ab-0", false),
            // `a-1` as a label is node `a`'s process 1, never node `a-1`'s
            // bare name (else `a` could hold it against `a-1`).
            ("a", "a-1", true),
            ("a-1", "a-1", false),
            ("a-1", "a-1-0", true),
            ("a-1", "a-1@h", true),
            ("a", "a-1-0", false),
            ("a", "a-1@h", false),
        ] {
            assert_eq!(label_belongs(name, label), ok, "{name} / {label}");
        }
    }

    #[test]
    fn a_repeated_refusal_is_said_once_a_minute_and_again_once_forgotten() {
        let mut w = Warned::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_millis(s);
        assert!(w.say("s1-0", at(0)));
        assert!(!w.say("s1-0", at(500)));
        assert!(w.say("s1-1", at(500)), "another label is its own");
        assert!(!w.say("s1-0", at(59_999)));
        assert!(w.say("s1-0", at(60_000)));
        assert!(!w.say("s1-0", at(60_500)));
        w.forget("s1-0");
        assert!(w.say("s1-0", at(61_000)));
    }
}
