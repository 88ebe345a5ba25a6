//! The wire protocol between the manager and the nodes: every message type,
//! versioned, and the frame codec. The only module that knows the byte
//! encoding (bincode 2.0.1, pinned: 3.0.0 is an empty tombstone release and
//! the crate is unmaintained, so nothing else may depend on it directly).
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of
//! bincode (standard config, variable-length integers). A frame longer than
//! [`MAX_FRAME`] is refused before anything is allocated. The first frame
//! on every connection, in each direction, is a [`Hello`] whose layout
//! never changes (magic, version, role, software), so that peers of any
//! version can tell each other apart; after it, messages are
//! [`NodeMsg`] (node to manager) and [`ManagerMsg`] (manager to node).
//!
//! Decoding works on plain bytes ([`Decoder`] is fed whatever arrived and
//! yields whole frames), apart from any socket, and never panics on
//! malformed input: it returns a [`ProtocolError`] and the caller closes
//! the connection.
//!
//! Times on the wire are *trace seconds* on the manager's trace clock (the
//! node keeps the mapping it was given in [`Welcome`]) except where a field
//! says otherwise.

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use thiserror::Error;

use crate::job::{JobId, JobSpec};
use crate::policy::{Decision, PriceQuote};
use crate::share::SpareRule;
use crate::time::Time;

/// The protocol version this build speaks. Bump on any change to a message.
pub const PROTOCOL_VERSION: u32 = 7;

/// Magic bytes opening every [`Hello`]: "LBRT".
pub const MAGIC: [u8; 4] = *b"LBRT";

/// Largest frame accepted (bytes of payload). Histogram hand-overs are the
/// biggest messages (a few KB per histogram); 4 MiB leaves ample room and
/// bounds what a stranger can make us buffer.
pub const MAX_FRAME: usize = 4 << 20;

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;

/// QUIC application error code with which the manager closes the
/// connection of a peer it refuses (bad hello, wrong version, wrong role,
/// no registration); the close reason says why. A peer is never answered
/// beyond the manager's own hello.
pub const CLOSE_REFUSED: u32 = 0x4c42_5246; // "LBRF"

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
    /// The cluster's state.
    Status {
        /// Echoed back.
        token: u64,
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
        /// Every live node.
        nodes: Vec<NodeStatus>,
        /// The latest decisions, newest last.
        recent: Vec<RecentDecision>,
        /// Jobs submitted, open and queued.
        counts: (u64, u64, u64),
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
    /// The request could not be served.
    Error {
        /// The request's token.
        token: u64,
        /// Why (names the field or job).
        message: String,
    },
}

/// What can go wrong with bytes from a peer. Every variant means: close the
/// connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The length prefix announces more than [`MAX_FRAME`].
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    FrameTooLarge {
        /// Announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload is not a valid message of the expected type.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was expected.
        what: &'static str,
        /// The decoder's complaint.
        detail: String,
    },
    /// A frame decoded but left bytes over: not our encoding.
    #[error("malformed {what}: {extra} trailing bytes")]
    Trailing {
        /// What was expected.
        what: &'static str,
        /// Bytes left over.
        extra: usize,
    },
    /// The hello's magic is wrong: the peer is not a Libratory process.
    #[error("peer is not a Libratory process (bad magic in hello)")]
    NotLibratory,
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: peer ({software}) speaks {theirs}, we speak {ours}")]
    Version {
        /// Theirs.
        theirs: u32,
        /// Ours.
        ours: u32,
        /// What the peer said it is.
        software: String,
    },
    /// The stream ended in the middle of a frame.
    #[error("connection closed in the middle of a frame ({have} of {want} bytes)")]
    Truncated {
        /// Bytes received.
        have: usize,
        /// Bytes announced.
        want: usize,
    },
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME>()
}

/// Encodes one message as a whole frame (length prefix included).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_append(&mut out, msg);
    out
}

/// Appends `msg`'s frame (length prefix and payload) to `out`: several
/// frames in one buffer go out in one write.
pub fn encode_append<T: Serialize>(out: &mut Vec<u8>, msg: &T) {
    let start = out.len();
    out.extend_from_slice(&[0u8; LEN_PREFIX]);
    bincode::serde::encode_into_std_write(msg, out, config())
        .expect("writing to a Vec cannot fail and every message is bounded");
    let len = out.len() - start - LEN_PREFIX;
    assert!(len <= MAX_FRAME, "message of {len} bytes exceeds MAX_FRAME");
    out[start..start + LEN_PREFIX].copy_from_slice(&(len as u32).to_be_bytes());
}

/// Decodes one payload (without its length prefix).
pub fn decode_payload<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, ProtocolError> {
    let (v, used) = bincode::serde::decode_from_slice(bytes, config()).map_err(|e| {
        ProtocolError::Malformed {
            what,
            detail: e.to_string(),
        }
    })?;
    if used != bytes.len() {
        return Err(ProtocolError::Trailing {
            what,
            extra: bytes.len() - used,
        });
    }
    Ok(v)
}

/// The same codec for local files that are not messages (the manager's
/// parsed-trace cache): no frame, a limit of [`MAX_FILE_VALUE`] instead of
/// [`MAX_FRAME`], and fixed-width integers instead of varints (a file is
/// read far more often than written, and the 5,000-record SDSC window
/// decodes in about half the time: ~0.5 ms instead of ~1.1 ms, for a file
/// 2.8 times larger). Kept here so that bincode stays behind this module.
pub const MAX_FILE_VALUE: usize = 1 << 30;

/// The file codec's configuration (see [`MAX_FILE_VALUE`]).
fn file_config() -> impl bincode::config::Config {
    bincode::config::standard()
        .with_fixed_int_encoding()
        .with_limit::<MAX_FILE_VALUE>()
}

/// Encodes a value for a local file (see [`MAX_FILE_VALUE`]).
pub fn encode_file_value<T: Serialize>(
    what: &'static str,
    value: &T,
) -> Result<Vec<u8>, ProtocolError> {
    let config = file_config();
    bincode::serde::encode_to_vec(value, config).map_err(|e| ProtocolError::Malformed {
        what,
        detail: e.to_string(),
    })
}

/// Decodes [`encode_file_value`]'s bytes, all of them.
pub fn decode_file_value<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, ProtocolError> {
    let config = file_config();
    let (v, used) =
        bincode::serde::decode_from_slice(bytes, config).map_err(|e| ProtocolError::Malformed {
            what,
            detail: e.to_string(),
        })?;
    if used != bytes.len() {
        return Err(ProtocolError::Trailing {
            what,
            extra: bytes.len() - used,
        });
    }
    Ok(v)
}

/// Incremental frame splitter: feed it bytes as they arrive, take whole
/// payloads out. Refuses an oversize length prefix as soon as it is seen.
///
/// Taken frames are skipped over by an offset, not drained: one read of a
/// busy stream holds hundreds of small frames, and removing each from the
/// front would move the rest every time (quadratic in the frames per
/// read). The consumed prefix is dropped when more bytes are fed.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already returned.
    pos: usize,
}

impl Decoder {
    /// An empty decoder.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Appends received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The byte range of the next whole payload in `buf`, if one has
    /// arrived; it is then consumed.
    fn next_range(&mut self) -> Result<Option<std::ops::Range<usize>>, ProtocolError> {
        let rest = &self.buf[self.pos..];
        let Some(len) = announced_len(rest) else {
            return Ok(None);
        };
        if len > MAX_FRAME {
            return Err(ProtocolError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
        if rest.len() < LEN_PREFIX + len {
            return Ok(None);
        }
        let start = self.pos + LEN_PREFIX;
        self.pos = start + len;
        Ok(Some(start..start + len))
    }

    /// The next whole payload, if one has arrived.
    pub fn next_payload(&mut self) -> Result<Option<Vec<u8>>, ProtocolError> {
        Ok(self.next_range()?.map(|r| self.buf[r].to_vec()))
    }

    /// The next whole message of type `T`.
    pub fn next<T: DeserializeOwned>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<T>, ProtocolError> {
        match self.next_range()? {
            Some(r) => decode_payload(what, &self.buf[r]).map(Some),
            None => Ok(None),
        }
    }

    /// Call at end of stream: an error if a frame was cut short.
    pub fn finish(&self) -> Result<(), ProtocolError> {
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            return Ok(());
        }
        let want = LEN_PREFIX + announced_len(rest).unwrap_or(0);
        Err(ProtocolError::Truncated {
            have: rest.len(),
            want,
        })
    }

    /// Bytes buffered and not yet returned.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }
}

/// The payload length a frame's prefix announces, once the prefix is whole.
fn announced_len(bytes: &[u8]) -> Option<usize> {
    let prefix: [u8; LEN_PREFIX] = bytes.get(..LEN_PREFIX)?.try_into().ok()?;
    Some(u32::from_be_bytes(prefix) as usize)
}

/// Decodes and checks a hello payload: the first frame of a connection.
pub fn decode_hello(payload: &[u8]) -> Result<Hello, ProtocolError> {
    // A stranger's first bytes rarely decode as a hello at all; check the
    // magic first so the error says "not a Libratory process" when it can.
    if payload.len() < 4 || payload[..4] != MAGIC {
        return Err(ProtocolError::NotLibratory);
    }
    let h: Hello = decode_payload("hello", payload)?;
    h.check()?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_node_msgs() -> Vec<NodeMsg> {
        let part = PartId { job: 42, index: 3 };
        vec![
            NodeMsg::Register {
                host: "lab-1".into(),
                nodes: vec![NodeInfo {
                    local: 0,
                    capacity: 0.25,
                    speed: 1.5,
                    memory_kb: 1 << 20,
                    disk_mb: 100,
                }],
                pid: 4242,
            },
            NodeMsg::Heartbeat { seq: 7 },
            NodeMsg::Progress {
                at: 12.5,
                parts: vec![PartProgress {
                    part,
                    node: 1,
                    work_done: 3.25,
                    share: 0.5,
                }],
            },
            NodeMsg::Started {
                part,
                at: 1.0,
                dispatched_at: 0.5,
            },
            NodeMsg::Completed {
                part,
                at: 2.0,
                cpu_seconds: 0.001,
            },
            NodeMsg::Refused {
                part,
                reason: "no node 9".into(),
            },
            NodeMsg::Histograms {
                last: true,
                histograms: vec![("tick_jitter".into(), vec![1, 2, 3])],
            },
            NodeMsg::Pong { nonce: 9 },
            NodeMsg::Goodbye {
                reason: "done".into(),
            },
            NodeMsg::Withdrawn {
                part,
                at: 3.0,
                cpu_seconds: 0.5,
            },
            NodeMsg::Reports {
                reports: vec![
                    NodeProgress {
                        at: 3.5,
                        parts: vec![PartProgress {
                            part,
                            node: 7,
                            work_done: 1.0,
                            share: 0.25,
                        }],
                    },
                    NodeProgress {
                        at: 3.75,
                        parts: vec![],
                    },
                ],
            },
        ]
    }

    fn all_manager_msgs() -> Vec<ManagerMsg> {
        let part = PartId { job: 1, index: 0 };
        vec![
            ManagerMsg::Welcome(Welcome {
                node_ids: vec![4, 5],
                time_scale: 1e-3,
                trace_now: 100.0,
                spare_rule: SpareRule::Proportional,
                report_ms: 100,
                heartbeat_ms: 250,
                histogram_ms: 10_000,
            }),
            ManagerMsg::Reject {
                reason: "full".into(),
            },
            ManagerMsg::Dispatch(Dispatch {
                part,
                node: 0,
                estimate: 10.0,
                actual: 8.0,
                deadline: 50.0,
                dispatched_at: 1.0,
                exclusive: false,
                ret: 0.5,
                hard: true,
            }),
            ManagerMsg::Cancel { part },
            ManagerMsg::Ping { nonce: 1 },
            ManagerMsg::SendHistograms,
            ManagerMsg::Shutdown {
                reason: "end".into(),
            },
            ManagerMsg::Dispatches(vec![Dispatch {
                part,
                node: 1,
                estimate: 1.0,
                actual: 1.0,
                deadline: 5.0,
                dispatched_at: 0.5,
                exclusive: true,
                ret: 0.0,
                hard: false,
            }]),
        ]
    }

    #[test]
    fn every_message_round_trips_through_frames() {
        let mut d = Decoder::new();
        let h = Hello::new(Role::Node, "libratory-node 0.1.0");
        d.feed(&encode(&h));
        for m in all_node_msgs() {
            d.feed(&encode(&m));
        }
        let got = decode_hello(&d.next_payload().unwrap().unwrap()).unwrap();
        assert_eq!(got, h);
        for m in all_node_msgs() {
            assert_eq!(d.next::<NodeMsg>("node message").unwrap(), Some(m));
        }
        assert_eq!(d.next::<NodeMsg>("node message").unwrap(), None);
        d.finish().unwrap();
        for m in all_manager_msgs() {
            let f = encode(&m);
            d.feed(&f);
            assert_eq!(d.next::<ManagerMsg>("manager message").unwrap(), Some(m));
        }
    }

    #[test]
    fn client_messages_round_trip() {
        let mut job = crate::job::JobSpec {
            id: 3,
            details: crate::job::JobDetails {
                runtime_estimate: 100.0,
                submit_time: 0.0,
                name: None,
            },
            resources: crate::job::ResourceRequirements {
                processors: 2,
                memory_kb: 0,
                disk_mb: 0,
            },
            qos: crate::job::QosConstraints {
                deadline: 400.0,
                budget: f64::INFINITY,
                deadline_type: crate::job::DeadlineType::Soft,
                penalty_rate: 0.5,
            },
            optimization: Default::default(),
            urgency: None,
            extra_segments: Default::default(),
        };
        job.extra_segments.insert(
            "Data".into(),
            [("input".to_string(), "x".to_string())]
                .into_iter()
                .collect(),
        );
        let m = ClientMsg::Submit {
            token: 9,
            job: WireJob::from(&job),
            actual: Some(80.0),
        };
        let f = encode(&m);
        let back: ClientMsg = decode_payload("client message", &f[LEN_PREFIX..]).unwrap();
        assert_eq!(back, m);
        let ClientMsg::Submit { job: w, .. } = back else {
            unreachable!()
        };
        assert_eq!(JobSpec::from(w), job);
        let r = ClientReply::Decided {
            token: 9,
            job: 1 << 40,
            at: 5.0,
            decision: Decision::reject(crate::policy::RejectReason::Budget, "too dear"),
        };
        let f = encode(&r);
        assert_eq!(
            decode_payload::<ClientReply>("client reply", &f[LEN_PREFIX..]).unwrap(),
            r
        );
    }

    #[test]
    fn frames_split_anywhere_reassemble() {
        let bytes: Vec<u8> = all_node_msgs().iter().flat_map(encode).collect();
        for chunk in [1, 2, 3, 7, 64] {
            let mut d = Decoder::new();
            let mut got = Vec::new();
            for c in bytes.chunks(chunk) {
                d.feed(c);
                while let Some(m) = d.next::<NodeMsg>("node message").unwrap() {
                    got.push(m);
                }
            }
            assert_eq!(got, all_node_msgs(), "chunk {chunk}");
        }
    }

    #[test]
    fn frame_layout_is_length_prefixed() {
        // Heartbeat { seq: 7 }: variant index 1 and 7, each one varint byte.
        let f = encode(&NodeMsg::Heartbeat { seq: 7 });
        assert_eq!(f, vec![0, 0, 0, 2, 1, 7]);
    }

    #[test]
    fn oversize_frame_is_refused_before_buffering() {
        let mut d = Decoder::new();
        d.feed(&((MAX_FRAME as u32) + 1).to_be_bytes());
        assert!(matches!(
            d.next_payload(),
            Err(ProtocolError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn strangers_bytes_are_errors_not_panics() {
        // An HTTP request arriving where a hello should be.
        let mut d = Decoder::new();
        d.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        // "GET " as a length is 0x47455420 > MAX_FRAME.
        assert!(d.next_payload().is_err());
        // A well-framed payload that is not a hello.
        assert_eq!(
            decode_hello(b"hello there"),
            Err(ProtocolError::NotLibratory)
        );
        // A truncated hello.
        let f = encode(&Hello::new(Role::Node, "x"));
        assert!(matches!(
            decode_hello(&f[LEN_PREFIX..f.len() - 1]),
            Err(ProtocolError::Malformed { .. })
        ));
        // An unknown variant index.
        assert!(matches!(
            decode_payload::<NodeMsg>("node message", &[200, 1]),
            Err(ProtocolError::Malformed { .. })
        ));
        // Trailing garbage after a valid message.
        assert!(matches!(
            decode_payload::<NodeMsg>("node message", &[1, 7, 0]),
            Err(ProtocolError::Trailing { extra: 1, .. })
        ));
        // A cut-off frame at end of stream.
        let mut d = Decoder::new();
        d.feed(&encode(&NodeMsg::Heartbeat { seq: 1 })[..4]);
        assert!(d.next_payload().unwrap().is_none());
        assert!(matches!(d.finish(), Err(ProtocolError::Truncated { .. })));
    }

    #[test]
    fn version_mismatch_is_named() {
        let mut h = Hello::new(Role::Node, "libratory-node 9.9");
        h.version = PROTOCOL_VERSION + 1;
        let f = encode(&h);
        let e = decode_hello(&f[LEN_PREFIX..]).unwrap_err();
        assert!(matches!(e, ProtocolError::Version { .. }));
        assert!(e.to_string().contains("libratory-node 9.9"), "{e}");
    }

    #[test]
    fn huge_vec_length_inside_a_frame_is_bounded() {
        // A Register claiming 2^60 nodes in a tiny frame must fail cleanly
        // (the decoder's limit), not try to allocate.
        let mut bytes = vec![0u8]; // variant Register
        bytes.extend_from_slice(&[1, b'h']); // host "h"
        bytes.push(255); // varint marker for u64
        bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(decode_payload::<NodeMsg>("node message", &bytes).is_err());
    }

    proptest::proptest! {
        /// Arbitrary bytes, fed in arbitrary chunks, never panic the
        /// decoder: they yield messages or an error.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), chunk in 1usize..64) {
            let mut d = Decoder::new();
            for c in bytes.chunks(chunk) {
                d.feed(c);
                while let Ok(Some(_)) = d.next::<NodeMsg>("node message") {}
            }
            let _ = decode_hello(&bytes);
            let _ = decode_payload::<ManagerMsg>("manager message", &bytes);
        }

        /// Progress reports with arbitrary values round-trip exactly.
        #[test]
        fn progress_round_trips(job in 0u64..u64::MAX, index in 0u32..1000, at in -1e12f64..1e12, work in 0f64..1e9, share in 0f64..1.0) {
            let m = NodeMsg::Progress { at, parts: vec![PartProgress { part: PartId { job, index }, node: index, work_done: work, share }] };
            let f = encode(&m);
            let back: NodeMsg = decode_payload("node message", &f[LEN_PREFIX..]).unwrap();
            proptest::prop_assert_eq!(back, m);
        }
    }
}
