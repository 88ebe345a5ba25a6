//! The admission core: admission, the cluster view, dispatch and the job
//! records (the books), as a pure state machine. The virtual-time
//! simulator ([`crate::sim`]) and the live manager both drive it, so a
//! job's record is kept by this one piece of code whichever way it ran.
//!
//! It takes events with `now` (trace seconds) and returns what to do
//! ([`Output`]); it opens no socket and reads no clock. Events are fed one
//! by one ([`ManagerCore::arrive`], [`ManagerCore::part_completed`],
//! [`ManagerCore::link_lost`], ...) and a queue policy's scheduling pass
//! runs once per instant in [`ManagerCore::flush`]: the simulator handles
//! every completion and arrival of an instant and then flushes once; the
//! live manager flushes after each event ([`ManagerCore::submit`] and
//! [`ManagerCore::completed`] do both). The policies it calls are the very
//! objects the simulator and the live manager share.
//!
//! # Two ways to know the nodes
//!
//! Time-shared policies decide on a snapshot of every live node
//! ([`NodeState`]): each part's estimated work, the processor time it has
//! done and its deadline. How the core keeps that snapshot is its
//! [`Tracking`]:
//! - **Reported** (live): nodes report each part's work done every report
//!   period; between reports the core extrapolates ("dead reckoning"):
//!   `cpu_done(now) = cpu_done(report) + share(report) x (now - report
//!   time)`, which is exact while shares do not change. A part dispatched
//!   but not yet reported counts as not started (all its estimate still to
//!   do), the conservative side. The error is bounded by one report period
//!   of share change; docs/manager.md discusses it. Placements go out as
//!   [`Output::Send`] dispatches.
//! - **Simulated**: the snapshot is the exact fluid model of the nodes
//!   ([`crate::node_model::fluid_advance`]); the core integrates it to each
//!   event and learns completions from it, so nothing is sent.
//!
//! # Faults
//!
//! When a link is lost (idle timeout, heartbeat silence, connection error)
//! every unfinished part on its nodes is lost: the job is recorded as lost
//! with the reason, its parts on other nodes are cancelled, and the nodes
//! leave the view (space-shared policies take them out of their pool).
//! A node process may register again; its nodes join as new nodes.
//!
//! # Where things are
//!
//! The state machine is [`ManagerCore`] (here); its events are split by
//! concern: the view of the nodes and how it is kept up to date
//! (`tracking`: registration, reports, dead reckoning, the fluid model),
//! decisions (`decide`: arrival, admission, placement, queue passes,
//! quotes), the books (`books`: completions and records), faults
//! (`faults`: lost links and nodes, refused parts, simulated faults) and
//! jobs taken over from an earlier manager of a live run (`adopt`).

#[cfg(test)]
thread_local! {
    /// Test builds: a simulated core advances every node and decides with
    /// the plain scan, as it did before it kept the busy index: the
    /// reference its busy-index path is checked against
    /// (`sim_faults::tests`).
    pub(crate) static WALK_EVERY_NODE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a simulated core walks every node ([`WALK_EVERY_NODE`]; never
/// outside test builds).
#[cfg(test)]
fn walks_every_node() -> bool {
    WALK_EVERY_NODE.with(std::cell::Cell::get)
}

#[cfg(not(test))]
fn walks_every_node() -> bool {
    false
}

mod adopt;
mod books;
mod decide;
mod errors;
mod faults;
#[cfg(test)]
mod tests;
mod tracking;

pub use errors::CoreError;
use tracking::{load_bound, Tracking};

use crate::busy_index::BusyIndex;
use crate::job::JobId;
use crate::job_index::JobIndex;
use crate::metrics::{JobRecord, PartRecord};
use crate::node_model::{FluidExtra, FluidScratch, NodeSpec, NodeState};
use crate::policy::{Decision, Policy, QueueAction};
use crate::protocol::ManagerMsg;
use crate::share::SpareRule;
use crate::time::Time;
use crate::workload::WorkloadJob;

/// A connection to one node process.
pub type LinkId = u64;

/// Largest capacity (cores) a registered node may claim: an emulated node
/// is a fraction of a host's cores or a few of them; more is a broken peer.
pub const MAX_NODE_CAPACITY: f64 = 1024.0;

/// What the core wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Send this message on this link.
    Send {
        /// The link.
        link: LinkId,
        /// The message.
        msg: ManagerMsg,
    },
    /// A job was decided (for clients and the progress display).
    Decided {
        /// The job.
        job: JobId,
        /// Accepted or rejected, with the nodes (global ids) or reason.
        decision: Decision,
    },
    /// A job is over (completed, lost, rejected): its record is final.
    Finished {
        /// The job.
        job: JobId,
    },
}

#[derive(Debug, Clone)]
struct LiveNode {
    link: LinkId,
    local: u32,
    alive: bool,
    host: String,
}

#[derive(Debug, Clone)]
struct LiveJob {
    job: WorkloadJob,
    /// Where its parts' records start in the core's part records (a job's
    /// parts are placed together, so they are consecutive: part `i` is
    /// record `first_part + i`, which names its node). Kept there rather
    /// than in small vectors of each job's own, which cost an allocation
    /// and a free per job.
    first_part: usize,
    /// How many parts it has (0 until placed).
    n_parts: usize,
    parts_left: usize,
    /// Its record is final (completed, lost or rejected).
    over: bool,
    /// Taken over from an earlier manager ([`ManagerCore::adopt`]).
    adopted: bool,
    /// Adopted, and the queue policy could not hold its nodes: the core
    /// takes each out of the pool while its part runs.
    held_apart: bool,
}

/// The admission state machine.
pub struct ManagerCore {
    policy: Policy,
    tracking: Tracking,
    /// Every node ever registered, by global id.
    nodes: Vec<LiveNode>,
    /// Snapshot of the live nodes only (what time-shared policies read).
    view: Vec<NodeState>,
    /// Global id of each snapshot entry.
    view_ids: Vec<u32>,
    /// Snapshot index of each global id (`None` once dead).
    view_index: Vec<Option<usize>>,
    /// Which view entries hold parts, live and simulated.
    busy: BusyIndex,
    /// Jobs in submission order, and where each id is.
    jobs: Vec<LiveJob>,
    /// The record of each job (parallel to `jobs`): kept apart so that the
    /// books come out of the core without a copy.
    records: Vec<JobRecord>,
    /// Every part placed or started, in placement order.
    parts: Vec<PartRecord>,
    /// Whether each part has completed (parallel to `parts`; a second
    /// completion is ignored).
    part_done: Vec<bool>,
    /// Job id -> position in `records` (looked up on every job event).
    index: JobIndex,
    /// Jobs not yet over.
    open: usize,
    /// Jobs waiting in a queue policy (space-shared).
    queued: usize,
    /// A queue policy has events its scheduling pass has not seen.
    pending: bool,
    actions: Vec<QueueAction>,
    /// Completions of parts already completed (ignored).
    duplicate_completions: u64,
    /// Processor time given by simulated nodes that a fault took out of
    /// the view (their fluid side went with them).
    retired_busy: f64,
    /// Decisions taken from the busy index's load bounds.
    bounded_decisions: u64,
    /// Busy nodes from which decisions use the load bounds.
    bounded_from: usize,
}

/// Busy nodes from which the live core decides from the busy index's load
/// bounds: below, bringing every busy node up to date costs less than
/// keeping the order (`decide` bench, 128 nodes).
pub const BOUNDED_FROM: usize = 256;

impl ManagerCore {
    /// A live core running `policy`, nodes to come by [`Self::register`].
    /// Space-shared policies may have been built with no nodes (node ids
    /// are given in registration order).
    pub fn new(policy: Policy) -> ManagerCore {
        ManagerCore::with_tracking(policy, Tracking::Reported(Vec::new()))
    }

    /// A core for the virtual-time simulator: the nodes `specs` (ids
    /// 0..n, the policy was built for them) integrated exactly from `start`.
    pub fn simulated(policy: Policy, specs: &[NodeSpec], start: Time) -> ManagerCore {
        let rule = match &policy {
            Policy::Admission(p) => p.spare_rule(),
            Policy::Queue(_) => SpareRule::default(),
        };
        let extras = specs
            .iter()
            .map(|_| FluidExtra::starting_at(start))
            .collect();
        let mut c = ManagerCore::with_tracking(
            policy,
            Tracking::Simulated {
                extras,
                scratch: FluidScratch::default(),
                rule,
                finished: Vec::new(),
                synced: start,
                changed: Vec::new(),
            },
        );
        for (k, s) in specs.iter().enumerate() {
            assert_eq!(s.id, k, "simulated node specs are numbered 0..n");
            c.add_node(0, k as u32, "sim", s.clone());
        }
        c
    }

    fn with_tracking(policy: Policy, tracking: Tracking) -> ManagerCore {
        ManagerCore {
            policy,
            tracking,
            nodes: Vec::new(),
            view: Vec::new(),
            view_ids: Vec::new(),
            view_index: Vec::new(),
            busy: BusyIndex::default(),
            jobs: Vec::new(),
            records: Vec::new(),
            parts: Vec::new(),
            part_done: Vec::new(),
            index: JobIndex::default(),
            open: 0,
            queued: 0,
            pending: false,
            actions: Vec::new(),
            duplicate_completions: 0,
            retired_busy: 0.0,
            bounded_decisions: 0,
            bounded_from: BOUNDED_FROM,
        }
    }

    /// Room for `jobs` more jobs and `parts` more part records, so that
    /// the books do not grow by reallocation (copying everything so far)
    /// in the middle of a simulation, which knows both in advance.
    pub fn reserve(&mut self, jobs: usize, parts: usize) {
        self.jobs.reserve(jobs);
        self.records.reserve(jobs);
        self.parts.reserve(parts);
        self.part_done.reserve(parts);
    }

    /// Where job `job` is in submission order (the simulator submits its
    /// workload in order, so this is its index there).
    pub fn job_position(&self, job: JobId) -> Option<usize> {
        self.index.get(job)
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// The Job Control spare rule the nodes must run with: the policy's
    /// own (LibraSLA needs its shortfall sharing on the real nodes too);
    /// space-shared policies give each part a whole node, where the rule
    /// does not matter.
    pub fn spare_rule(&self, default: SpareRule) -> SpareRule {
        match &self.policy {
            Policy::Admission(p) => p.spare_rule(),
            Policy::Queue(_) => default,
        }
    }

    /// Live nodes.
    pub fn live_nodes(&self) -> usize {
        self.view.len()
    }

    /// Completions of parts already completed, ignored so far.
    pub fn duplicate_completions(&self) -> u64 {
        self.duplicate_completions
    }

    /// When a queue policy next wants a scheduling pass although nothing
    /// arrives or completes ([`crate::policy::QueuePolicy::wakeup`]).
    pub fn queue_wakeup(&self) -> Option<Time> {
        match &self.policy {
            Policy::Queue(q) => q.wakeup(),
            Policy::Admission(_) => None,
        }
    }

    /// Nothing is left to happen: a queue policy's last decisions
    /// ([`crate::policy::QueuePolicy::end`]) are booked.
    pub fn end_queue(&mut self, now: Time, out: &mut Vec<Output>) {
        let Policy::Queue(q) = &mut self.policy else {
            return;
        };
        self.actions.clear();
        q.end(now, &mut self.actions);
        self.apply_actions(now, out);
    }

    /// Periodic work (queue policies drop lapsed jobs).
    pub fn tick(&mut self, now: Time, out: &mut Vec<Output>) {
        self.pending = true;
        self.flush(now, out);
    }

    /// Jobs submitted and not yet over.
    pub fn open_jobs(&self) -> usize {
        self.open
    }

    /// Jobs waiting in a queue policy.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// The record of one job.
    pub fn record(&self, job: JobId) -> Option<&JobRecord> {
        self.index.get(job).map(|k| &self.records[k])
    }

    /// Every record, in submission order.
    pub fn records(&self) -> impl ExactSizeIterator<Item = &JobRecord> {
        self.records.iter()
    }

    /// Every part placed or started, in placement order.
    pub fn part_records(&self) -> &[PartRecord] {
        &self.parts
    }

    /// The books taken out of the core: every job record in submission
    /// order and every part record in placement order.
    pub fn into_books(self) -> (Vec<JobRecord>, Vec<PartRecord>) {
        (self.records, self.parts)
    }

    /// The snapshot policies would decide on at `now` (dead-reckoned), and
    /// the global id of each entry.
    pub fn snapshot(&mut self, now: Time) -> (&[NodeState], &[u32]) {
        self.refresh(now);
        (&self.view, &self.view_ids)
    }

    /// The node process label of a global node id.
    pub fn host_of(&self, node: u32) -> &str {
        &self.nodes[node as usize].host
    }

    /// Whether the policy queues jobs (space-shared) rather than deciding
    /// at submission.
    pub fn queues(&self) -> bool {
        matches!(self.policy, Policy::Queue(_))
    }

    /// Whether global node `g` is in the view (not lost).
    pub fn node_alive(&self, g: u32) -> bool {
        self.nodes.get(g as usize).is_some_and(|n| n.alive)
    }

    /// Whether job `job`'s record is final (completed, lost or rejected).
    pub fn job_over(&self, job: JobId) -> bool {
        self.index.get(job).is_some_and(|k| self.jobs[k].over)
    }
}
