//! Every message type of the wire protocol and the constants peers agree
//! on (version, magic); no byte encoding here (that is [`super::codec`]).

use serde::{Deserialize, Serialize};

use super::codec::ProtocolError;

use crate::job::{JobId, JobSpec};
use crate::policy::{Decision, PriceQuote};
use crate::share::SpareRule;
use crate::time::Time;

/// The protocol version this build speaks. Bump on any change to a message.
pub const PROTOCOL_VERSION: u32 = 13;

/// Magic bytes opening every [`Hello`]: "LBRT".
pub const MAGIC: [u8; 4] = *b"LBRT";

/// QUIC application error code with which the manager closes the
/// connection of a peer it refuses (bad hello, wrong version, wrong role,
/// no registration); the close reason says why. A peer is never answered
/// beyond the manager's own hello.
pub const CLOSE_REFUSED: u32 = 0x4c42_5246; // "LBRF"

/// QUIC application error code with which the manager closes the
/// connection of a node process registering under a label whose earlier
/// registration it still holds live: most often a process started again
/// after a crash, before the manager gave the dead one's link up (within
/// its `link_timeout_s`). Unlike [`CLOSE_REFUSED`] it is worth trying
/// again: the node process does, for up to its grace period.
pub const CLOSE_STILL_REGISTERED: u32 = 0x4c42_5252; // "LBRR"

/// Who is speaking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The manager.
    Manager,
    /// A node process (hosting one or more emulated nodes).
    Node,
    /// A client (`libratory submit/quote/status`).
    Client,
}

/// The first frame on every connection, in both directions. Its layout is
/// frozen: new fields go into later messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Always [`MAGIC`].
    pub magic: [u8; 4],
    /// The sender's [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The sender's role.
    pub role: Role,
    /// Free text: program name and version, host.
    pub software: String,
}

impl Hello {
    /// This build's hello.
    pub fn new(role: Role, software: impl Into<String>) -> Hello {
        Hello {
            magic: MAGIC,
            version: PROTOCOL_VERSION,
            role,
            software: software.into(),
        }
    }

    /// Checks magic and version.
    pub fn check(&self) -> Result<(), ProtocolError> {
        if self.magic != MAGIC {
            return Err(ProtocolError::NotLibratory);
        }
        if self.version != PROTOCOL_VERSION {
            return Err(ProtocolError::Version {
                theirs: self.version,
                ours: PROTOCOL_VERSION,
                software: self.software.clone(),
            });
        }
        Ok(())
    }
}

/// One emulated node as a node process registers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Index within its process (0-based).
    pub local: u32,
    /// Fraction of one core the node may use.
    pub capacity: f64,
    /// Speed relative to the reference node.
    pub speed: f64,
    /// Memory (KB).
    pub memory_kb: u64,
    /// Disk (MB).
    pub disk_mb: u64,
}

/// Identity of one job part: the job and the part's index within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PartId {
    /// The job.
    pub job: JobId,
    /// 0-based index of the part (one per processor).
    pub index: u32,
}

/// A part sent to a node to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    /// Which part.
    pub part: PartId,
    /// The emulated node (local index in the receiving process).
    pub node: u32,
    /// Runtime estimate RE (reference seconds).
    pub estimate: Time,
    /// Actual work R (reference seconds): the synthetic job burns this much.
    pub actual: Time,
    /// Absolute deadline DT (trace seconds).
    pub deadline: Time,
    /// When the manager dispatched it (trace seconds).
    pub dispatched_at: Time,
    /// Exclusive use of the node (space-shared policies): the part gets the
    /// whole node whatever the share rule says.
    pub exclusive: bool,
    /// What the part is worth to the node's share rule (LibraSLA's return;
    /// 0 otherwise).
    pub ret: f64,
    /// Hard deadline (LibraSLA's share rule never delays such a part).
    pub hard: bool,
}

/// Progress of one part, as of the report's time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PartProgress {
    /// Which part.
    pub part: PartId,
    /// The node it runs on (local index).
    pub node: u32,
    /// Work done so far in reference seconds (processor time / capacity x
    /// speed).
    pub work_done: f64,
    /// The share it is currently assigned.
    pub share: f64,
}

/// One node's progress report, as part of a [`NodeMsg::Reports`] batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeProgress {
    /// Node-side trace time of the report.
    pub at: Time,
    /// Every running part of the node.
    pub parts: Vec<PartProgress>,
}

/// What the manager says to an admitted node process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    /// The cluster-wide index of each registered node, in registration
    /// order.
    pub node_ids: Vec<u32>,
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// The manager's trace clock at the moment it sent this: the node maps
    /// its own monotonic clock onto trace time from here.
    pub trace_now: Time,
    /// Job Control spare-capacity rule.
    pub spare_rule: SpareRule,
    /// Period between progress reports (real milliseconds).
    pub report_ms: u32,
    /// Period between heartbeats (real milliseconds).
    pub heartbeat_ms: u32,
    /// Period between histogram hand-overs (real milliseconds; each covers
    /// the time since the previous one).
    pub histogram_ms: u32,
}

/// A node process's [`NodeMsg::Goodbye`] reason when it leaves because
/// the manager sent `Shutdown` (the run's end): not a warning.
pub const GOODBYE_SHUTDOWN: &str = "shutdown requested";

/// Node process to manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NodeMsg {
    /// The emulated nodes this process hosts (sent once after the hello).
    Register {
        /// Host name, for logs and results.
        host: String,
        /// The nodes.
        nodes: Vec<NodeInfo>,
        /// The node process's id on its host (since version 2: load tests
        /// read its CPU and memory when the host is the client's).
        pid: u32,
    },
    /// Liveness; `seq` increases by one each time.
    Heartbeat {
        /// Sequence number.
        seq: u64,
    },
    /// Periodic progress of every running part.
    Progress {
        /// Node-side trace time of the report.
        at: Time,
        /// Every running part.
        parts: Vec<PartProgress>,
    },
    /// A part started running (it was placed under Job Control).
    Started {
        /// Which part.
        part: PartId,
        /// Node-side trace time.
        at: Time,
        /// The dispatch's `dispatched_at`, echoed: the manager measures
        /// dispatch to start on its own clock without looking the job up.
        dispatched_at: Time,
    },
    /// A part finished its actual work.
    Completed {
        /// Which part.
        part: PartId,
        /// Node-side trace time.
        at: Time,
        /// Processor seconds it really burned.
        cpu_seconds: f64,
    },
    /// A dispatch the node could not take (unknown node, duplicate part).
    Refused {
        /// Which part.
        part: PartId,
        /// Why.
        reason: String,
    },
    /// Histograms, HdrHistogram V2 serialised (one per name).
    Histograms {
        /// Whether this is the final hand-over.
        last: bool,
        /// Name and serialised histogram.
        histograms: Vec<(String, Vec<u8>)>,
    },
    /// Answer to a ping.
    Pong {
        /// The ping's nonce.
        nonce: u64,
    },
    /// Orderly goodbye.
    Goodbye {
        /// Why.
        reason: String,
    },
    /// A cancelled part was withdrawn: it burns no more and the node's
    /// other parts were re-planned (since version 4; the answer to
    /// [`ManagerMsg::Cancel`] for a part still on the node).
    Withdrawn {
        /// Which part.
        part: PartId,
        /// Node-side trace time.
        at: Time,
        /// Processor seconds it had burned.
        cpu_seconds: f64,
    },
    /// The progress reports of the process's nodes gathered over one
    /// report period, in one frame (since version 5: one frame per
    /// process per period instead of one per node).
    Reports {
        /// Each node's latest report of the period, each with its time.
        reports: Vec<NodeProgress>,
    },
    /// This process lost its manager and has registered again (since
    /// version 8; sent right after the new welcome, before anything else):
    /// what it ran and finished while it had no manager. The manager
    /// answers [`ManagerMsg::RejoinAnswer`].
    Rejoin(Rejoin),
    /// The process's nodes that send nothing now (since version 11; a
    /// crash or hang of single emulated nodes, docs/faults.md), by their
    /// cluster-wide ids: sent just before a [`NodeMsg::Heartbeat`] when
    /// any is silent. A heartbeat vouches for every node of its process
    /// but those listed in the `Silent` frame before it; the manager gives
    /// up a node not vouched for within its link timeout
    /// ([`ManagerMsg::NodeLost`]).
    Silent {
        /// The silent nodes.
        nodes: Vec<u32>,
    },
    /// A leading piece of a [`NodeMsg::Rejoin`] too large for one frame
    /// (since version 13): more of its running and finished parts, in
    /// order. The pieces come right before their `Rejoin`, which carries
    /// the last parts and everything else; the manager holds a link's
    /// pieces until then ([`Rejoin::into_frames`]).
    RejoinPiece {
        /// Running parts, continued by the next piece or the `Rejoin`.
        running: Vec<HeldPart>,
        /// Finished parts, likewise.
        finished: Vec<FinishedPart>,
    },
}

/// The most parts one rejoin frame carries ([`NodeMsg::RejoinPiece`],
/// [`NodeMsg::Rejoin`], [`ManagerMsg::RejoinKept`],
/// [`ManagerMsg::RejoinAnswer`]). A held part is at most 43 bytes in
/// bincode's varints (a finished one 37, a kept id 14), so 50,000 keep a
/// frame under 2.2 MB of the 4 MiB [`super::MAX_FRAME`], with room for
/// the rest of a `Rejoin` (its node ids and down nodes, a few bytes per
/// node). A process holding more parts than fit one frame (~97,000) would
/// otherwise make its writer fail on the frame.
pub const REJOIN_PARTS_PER_FRAME: usize = 50_000;

impl Rejoin {
    /// This rejoin as the frames that carry it: [`NodeMsg::RejoinPiece`]s
    /// of [`REJOIN_PARTS_PER_FRAME`] parts (running first, then finished,
    /// each in its order), then the `Rejoin` with the last parts. A
    /// manager appending the pieces' parts and then the `Rejoin`'s gets
    /// this rejoin back, in the same order.
    pub fn into_frames(mut self) -> Vec<NodeMsg> {
        let total = self.running.len() + self.finished.len();
        let pieces = total.saturating_sub(1) / REJOIN_PARTS_PER_FRAME;
        let mut running = std::mem::take(&mut self.running).into_iter();
        let mut finished = std::mem::take(&mut self.finished).into_iter();
        let mut frames = Vec::with_capacity(pieces + 1);
        let mut take = |room: usize| {
            let r: Vec<HeldPart> = running.by_ref().take(room).collect();
            let f: Vec<FinishedPart> = finished.by_ref().take(room - r.len()).collect();
            (r, f)
        };
        for _ in 0..pieces {
            let (running, finished) = take(REJOIN_PARTS_PER_FRAME);
            frames.push(NodeMsg::RejoinPiece { running, finished });
        }
        (self.running, self.finished) = take(usize::MAX);
        frames.push(NodeMsg::Rejoin(self));
        frames
    }
}

/// What a node process that lost its manager reports when it is admitted
/// again ([`NodeMsg::Rejoin`]). Times are on the new manager's trace clock
/// (the node maps its own onto it from the new welcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejoin {
    /// The cluster-wide ids its nodes had under the lost link (in the
    /// order of their local indices).
    pub was: Vec<u32>,
    /// Real seconds from losing the link to this registration.
    pub away_s: f64,
    /// Why the link was lost, as the node saw it.
    pub why: String,
    /// Parts still on its nodes, with their progress.
    pub running: Vec<HeldPart>,
    /// Parts that finished their work while it had no manager.
    pub finished: Vec<FinishedPart>,
    /// Its nodes that send nothing now (since version 12): a crashed
    /// one's parts are gone (none is in `running`); a held one's (a hang)
    /// are in `running` but make no progress while it is held. The
    /// manager's silent-node rule applies to both from when they went
    /// silent.
    pub down: Vec<DownNode>,
}

/// A node of a rejoining node process that sends nothing now (a fault of
/// that node alone).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DownNode {
    /// Its local index.
    pub node: u32,
    /// Crashed (its parts are gone), else held still (a hang).
    pub crashed: bool,
    /// Real seconds since it went silent.
    pub silent_s: f64,
}

/// A part still running on a rejoining node process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeldPart {
    /// Which part.
    pub part: PartId,
    /// The node it runs on (local index).
    pub node: u32,
    /// Work done as of its node's latest progress report (reference s).
    pub work_done: f64,
    /// Its share then.
    pub share: f64,
    /// When it started (trace s; `f64::NAN` if its start was never seen).
    pub started_at: Time,
}

/// A part that finished while its node process had no manager.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FinishedPart {
    /// Which part.
    pub part: PartId,
    /// The node it ran on (local index).
    pub node: u32,
    /// When it finished (trace s).
    pub at: Time,
    /// Processor seconds it really burned.
    pub cpu_seconds: f64,
}

/// Manager to node process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ManagerMsg {
    /// Admitted: the node counts itself part of the cluster only now.
    Welcome(Welcome),
    /// Not admitted; the connection closes.
    Reject {
        /// Why.
        reason: String,
    },
    /// Run this part.
    Dispatch(Dispatch),
    /// Stop this part (the job is no longer wanted): the node withdraws
    /// it from its time-slicer, re-plans its other parts' shares and
    /// answers [`NodeMsg::Withdrawn`] (nothing if the part already ended).
    Cancel {
        /// Which part.
        part: PartId,
    },
    /// Round-trip probe.
    Ping {
        /// Echoed in the pong.
        nonce: u64,
    },
    /// Send histograms now.
    SendHistograms,
    /// Stop everything and leave.
    Shutdown {
        /// Why.
        reason: String,
    },
    /// Run these parts (since version 5: the dispatches queued for one
    /// link when its writer runs, in order, in one frame).
    Dispatches(Vec<Dispatch>),
    /// The answer to [`NodeMsg::Rejoin`] (since version 8): the reported
    /// parts the manager takes back into its books. The node drops every
    /// other part it reported (withdraws the running ones, forgets the
    /// finished ones) and sends nothing more of them: a part the manager
    /// does not know (it recorded the part lost, or never dispatched it)
    /// is never counted twice.
    RejoinAnswer {
        /// Parts to keep: running ones go on and report as usual, finished
        /// ones were counted from the rejoin.
        keep: Vec<PartId>,
        /// Why the others are dropped (the node logs it).
        reason: String,
    },
    /// One node of the process was given up (since version 11): it was
    /// silent ([`NodeMsg::Silent`]) for more than the link timeout, and
    /// its parts were recorded lost. The process drops them (nothing more
    /// of them is sent); the node, once it sends again, serves idle under
    /// the same id.
    NodeLost {
        /// The node (cluster-wide id).
        node: u32,
        /// Why (the node process logs it).
        reason: String,
    },
    /// A leading piece of a [`ManagerMsg::RejoinAnswer`] too large for
    /// one frame (since version 13): more parts to keep. The node adds
    /// them to the answer that follows ([`ManagerMsg::rejoin_answer`]).
    RejoinKept {
        /// Parts to keep, continued by the next piece or the answer.
        keep: Vec<PartId>,
    },
}

impl ManagerMsg {
    /// The answer to a rejoin as the frames that carry it:
    /// [`ManagerMsg::RejoinKept`]s of [`REJOIN_PARTS_PER_FRAME`] parts,
    /// then the [`ManagerMsg::RejoinAnswer`] with the last ones and the
    /// reason.
    pub fn rejoin_answer(keep: Vec<PartId>, reason: String) -> Vec<ManagerMsg> {
        let mut frames: Vec<ManagerMsg> = keep
            .chunks(REJOIN_PARTS_PER_FRAME)
            .map(|c| ManagerMsg::RejoinKept { keep: c.to_vec() })
            .collect();
        let keep = match frames.pop() {
            Some(ManagerMsg::RejoinKept { keep }) => keep,
            _ => Vec::new(),
        };
        frames.push(ManagerMsg::RejoinAnswer { keep, reason });
        frames
    }
}

/// A job specification on the wire. [`JobSpec`]'s serde form (optional
/// fields skipped, budgets written "unlimited") suits JSON and TOML but not
/// a non-self-describing encoding, so the wire has its own flat form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireJob {
    /// Identity (the client's; the manager assigns its own).
    pub id: JobId,
    /// Name.
    pub name: Option<String>,
    /// Runtime estimate RE.
    pub estimate: Time,
    /// Submit time (the manager overwrites it with its clock).
    pub submit_time: Time,
    /// Processors P.
    pub processors: u32,
    /// Memory per processor (KB).
    pub memory_kb: u64,
    /// Disk per processor (MB).
    pub disk_mb: u64,
    /// Relative deadline D.
    pub deadline: Time,
    /// Budget B (+inf: unlimited).
    pub budget: f64,
    /// Hard or soft.
    pub deadline_type: crate::job::DeadlineType,
    /// Penalty rate.
    pub penalty_rate: f64,
    /// QoSOptimization objective.
    pub objective: Option<crate::job::Objective>,
    /// Urgency class.
    pub urgency: Option<crate::job::Urgency>,
    /// Further segments.
    pub extra_segments: Vec<(String, Vec<(String, String)>)>,
}

impl From<&JobSpec> for WireJob {
    fn from(j: &JobSpec) -> WireJob {
        WireJob {
            id: j.id,
            name: j.details.name.clone(),
            estimate: j.details.runtime_estimate,
            submit_time: j.details.submit_time,
            processors: j.resources.processors,
            memory_kb: j.resources.memory_kb,
            disk_mb: j.resources.disk_mb,
            deadline: j.qos.deadline,
            budget: j.qos.budget,
            deadline_type: j.qos.deadline_type,
            penalty_rate: j.qos.penalty_rate,
            objective: j.optimization.objective,
            urgency: j.urgency,
            extra_segments: j
                .extra_segments
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.iter().map(|(a, b)| (a.clone(), b.clone())).collect(),
                    )
                })
                .collect(),
        }
    }
}

impl From<WireJob> for JobSpec {
    fn from(w: WireJob) -> JobSpec {
        JobSpec {
            id: w.id,
            details: crate::job::JobDetails {
                runtime_estimate: w.estimate,
                submit_time: w.submit_time,
                name: w.name,
            },
            resources: crate::job::ResourceRequirements {
                processors: w.processors,
                memory_kb: w.memory_kb,
                disk_mb: w.disk_mb,
            },
            qos: crate::job::QosConstraints {
                deadline: w.deadline,
                budget: w.budget,
                deadline_type: w.deadline_type,
                penalty_rate: w.penalty_rate,
            },
            optimization: crate::job::QosOptimization {
                objective: w.objective,
            },
            urgency: w.urgency,
            extra_segments: w
                .extra_segments
                .into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect(),
        }
    }
}

/// Client (`libratory submit/quote/status`, load generators) to manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientMsg {
    /// Submit a job now. The manager assigns the job id (the one given is
    /// kept as the job's name) and sets its submit time to its own clock.
    Submit {
        /// A token the answer carries back (the client's own counter).
        token: u64,
        /// The job as the user specified it.
        job: WireJob,
        /// Work the synthetic job really does (reference seconds); `None`:
        /// exactly its estimate.
        actual: Option<Time>,
    },
    /// What Libra+$ would charge for this job on each node now.
    Quote {
        /// Echoed back.
        token: u64,
        /// The job.
        job: WireJob,
    },
    /// The cluster's state: a summary, and the page of nodes asked for
    /// (since version 10; before, every node, which at 158,976 nodes did
    /// not fit a frame).
    Status {
        /// Echoed back.
        token: u64,
        /// Which nodes to list besides the summary.
        query: super::StatusQuery,
    },
    /// Answered by the connection itself, without the manager's actors:
    /// the baseline round trip benchmarks compare against.
    Echo {
        /// Echoed back.
        token: u64,
    },
    /// The manager's latency histograms as they stand (since version 6):
    /// a load test takes one before and one after a step and subtracts,
    /// for the step's own distribution.
    Latency {
        /// Echoed back.
        token: u64,
    },
    /// A fault injector applied a fault to a node process (since version
    /// 9; only the `operator` identity may send it). The manager journals
    /// it and names the fault in the reasons of what the process's loss
    /// loses; answered [`ClientReply::Noted`].
    FaultApplied {
        /// Echoed back.
        token: u64,
        /// The fault's name (`fault 1 (crash of node process 1 at +30 s,
        /// line 12)`).
        fault: String,
        /// The fault's kind (`crash`, `hang`, `partition`, ...).
        kind: String,
        /// The node process's label.
        process: String,
        /// What was done.
        act: FaultAct,
        /// What the injector says it did, for people (`SIGKILL to node
        /// process lab1-0 (pid 4242)`).
        what: String,
        /// The one node it acted on (local index in the process), if not
        /// the whole process (since version 11).
        node: Option<u32>,
        /// `slow`: the capacity factor (since version 11).
        factor: Option<f64>,
        /// Real seconds from the act to this report's sending (a report
        /// waits while no manager runs): the manager journals the act
        /// this long before it got it.
        age_s: f64,
    },
}

/// The most bytes of one string a peer's message may carry that the
/// manager keeps or says back (a name, a label, a fault's text): every
/// answer that repeats it then stays far within a frame.
pub const MAX_PEER_STRING: usize = 1024;

/// The most bytes of a job's extra segments, all added up.
pub const MAX_EXTRA_SEGMENTS: usize = 16 * 1024;

impl ClientMsg {
    /// Which string of this message is longer than the manager takes
    /// (named, with its length), if one is: the manager refuses such a
    /// request rather than keep a string every status page, journal entry
    /// or refusal would then repeat.
    pub fn oversized(&self) -> Option<String> {
        let long = |what: &str, s: &str| {
            (s.len() > MAX_PEER_STRING)
                .then(|| format!("{what} of {} bytes (at most {MAX_PEER_STRING})", s.len()))
        };
        match self {
            ClientMsg::Submit { job, .. } | ClientMsg::Quote { job, .. } => {
                if let Some(r) = job.name.as_deref().and_then(|n| long("the job's name", n)) {
                    return Some(r);
                }
                let extra: usize = job
                    .extra_segments
                    .iter()
                    .map(|(k, kv)| {
                        k.len() + kv.iter().map(|(a, b)| a.len() + b.len()).sum::<usize>()
                    })
                    .sum();
                (extra > MAX_EXTRA_SEGMENTS).then(|| {
                    format!("extra segments of {extra} bytes (at most {MAX_EXTRA_SEGMENTS})")
                })
            }
            ClientMsg::FaultApplied {
                fault,
                kind,
                process,
                what,
                ..
            } => long("the fault", fault)
                .or_else(|| long("the fault's kind", kind))
                .or_else(|| long("the process", process))
                .or_else(|| long("the act", what)),
            ClientMsg::Status { .. } | ClientMsg::Latency { .. } | ClientMsg::Echo { .. } => None,
        }
    }
}

/// What a fault injector did to a node process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAct {
    /// SIGKILL (a crash).
    Kill,
    /// Started again after a crash, or after it exited when woken from a
    /// hang or a partition (it registers as new).
    Restart,
    /// SIGSTOP (a hang).
    Stop,
    /// SIGCONT (the hang is over).
    Cont,
    /// A link fault (partition, delay) handed to the node's link layer.
    Link,
    /// The link fault is over.
    Heal,
    /// A `slow` fault handed to the node process: its nodes (or one)
    /// run at `factor` of their capacity.
    Slow,
    /// The slow fault is over: full capacity again.
    Restore,
}

impl FaultAct {
    /// The word the journal and the agent (`libratory-host fault`) use.
    pub fn word(self) -> &'static str {
        match self {
            FaultAct::Kill => "kill",
            FaultAct::Restart => "restart",
            FaultAct::Stop => "stop",
            FaultAct::Cont => "cont",
            FaultAct::Link => "link",
            FaultAct::Heal => "heal",
            FaultAct::Slow => "slow",
            FaultAct::Restore => "restore",
        }
    }
}

/// A process's resource use as it reads it itself (`getrusage`, /proc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessUsage {
    /// Process id.
    pub pid: u32,
    /// Host name of its machine.
    pub hostname: String,
    /// User plus system CPU time since it started (s).
    pub cpu_seconds: f64,
    /// Resident memory now (KiB).
    pub rss_kb: u64,
    /// Peak resident memory (KiB).
    pub peak_rss_kb: u64,
}

/// A node process in a status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeProcess {
    /// Its label and address, `NAME (ip:port)`.
    pub host: String,
    /// Its process id on its own host.
    pub pid: u32,
    /// Emulated nodes it hosts.
    pub nodes: u32,
}

/// One node in a status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// Cluster-wide node id.
    pub id: u32,
    /// The node process it belongs to.
    pub host: String,
    /// Its parts: job, estimated processor time done, estimate, deadline,
    /// required share now.
    pub parts: Vec<PartStatus>,
    /// Sum of the required shares of its on-track parts.
    pub load: f64,
}

/// One part in a status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartStatus {
    /// The job.
    pub job: JobId,
    /// Processor time done (dead-reckoned to now).
    pub cpu_done: f64,
    /// Estimated processor time.
    pub est_cpu: f64,
    /// Absolute deadline.
    pub deadline: Time,
    /// Required share now (0 when overdue).
    pub required: f64,
}

/// One recent decision in a status answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentDecision {
    /// The job.
    pub job: JobId,
    /// When (trace s).
    pub at: Time,
    /// What was decided.
    pub decision: Decision,
}

/// What the running policy would answer a job submitted now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum QuoteAnswer {
    /// Decided at once (time-shared policies): accepted on these nodes
    /// (global ids) at this cost, or rejected with the reason.
    Decided(Decision),
    /// Queued (space-shared policies): it would wait behind `waiting`
    /// jobs (QoPS-family: it would enter the plan); started or dropped
    /// later.
    Queued {
        /// Jobs already waiting.
        waiting: u64,
        /// Live nodes holding no part now.
        free_nodes: u64,
    },
}

/// Manager to client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientReply {
    /// The decision on a submitted job: accepted (which nodes, the cost) or
    /// rejected with the reason.
    Decided {
        /// The submission's token.
        token: u64,
        /// The id the manager gave the job.
        job: JobId,
        /// Manager trace time of the decision.
        at: Time,
        /// The decision (for space-shared policies: accepted once started).
        decision: Decision,
    },
    /// A space-shared policy queued the job; it starts or is dropped later.
    Queued {
        /// The submission's token.
        token: u64,
        /// The id the manager gave the job.
        job: JobId,
    },
    /// What the running policy would answer the job now, and its prices
    /// (since version 4; before, always Libra+$'s).
    Quoted {
        /// The request's token.
        token: u64,
        /// The policy that answered.
        policy: String,
        /// Per node that could take a part in time, for a policy that
        /// prices per node (Libra+$); empty otherwise.
        quotes: Vec<PriceQuote>,
        /// What a submission would get.
        answer: QuoteAnswer,
    },
    /// The cluster now.
    Status {
        /// The request's token.
        token: u64,
        /// Manager trace time.
        at: Time,
        /// The policy running.
        policy: String,
        /// Nodes, processes and jobs in counts (since version 10; boxed,
        /// so that the reply's other answers stay small).
        summary: Box<super::StatusSummary>,
        /// Where the page of `nodes` stands, when the request asked for
        /// one (since version 10).
        page: Option<super::PageWindow>,
        /// The page of live nodes asked for, by id (none for a summary
        /// alone).
        nodes: Vec<NodeStatus>,
        /// The latest decisions, newest last.
        recent: Vec<RecentDecision>,
        /// The manager process's own id and resource use (since version 2).
        manager: ProcessUsage,
        /// The node processes connected: label (`NAME (address)`), process
        /// id on their host, emulated nodes (since version 2).
        processes: Vec<NodeProcess>,
    },
    /// The answer to [`ClientMsg::Echo`].
    Echo {
        /// The request's token.
        token: u64,
    },
    /// The answer to [`ClientMsg::Latency`]: every manager histogram since
    /// the run started (microseconds), by name, HdrHistogram V2 serialised.
    Latency {
        /// The request's token.
        token: u64,
        /// Name and serialised histogram.
        histograms: Vec<(String, Vec<u8>)>,
    },
    /// The answer to [`ClientMsg::FaultApplied`]: journaled.
    Noted {
        /// The request's token.
        token: u64,
    },
    /// The request could not be served.
    Error {
        /// The request's token.
        token: u64,
        /// Why (names the field or job).
        message: String,
    },
}
