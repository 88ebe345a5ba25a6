//! The harness's world: the event queue, the simulated links, the node
//! processes' side of them and the faults that befall them, and the loop
//! that carries out the node processes' actions. The manager's side (its
//! actions, its crash and restart) is `manager.rs`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::time::{Duration, Instant};

use common::admission::LinkId;
use common::job::JobId;
use common::protocol::{self, Decoder, FaultAct, ManagerMsg, NodeInfo, NodeMsg, PartId};
use common::time::Time;
use common::workload::WorkloadJob;
use node::link::machine::{Backoff, MachineConfig};
use node::link::{BACKOFF_CAP, BACKOFF_FIRST};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::node::{NodeProcess, Out};
use super::scenario::{Fault, Scenario};
use crate::live::manager::core::{CoreConfig, Event, FaultKey, LiveCore, Timer};
use crate::live::manager::LiveOutcome;

/// Virtual time (trace seconds) as a queue key: non-negative floats order
/// as their bits do.
type Key = (u64, u64);

pub(super) enum Ev {
    /// A timer of the manager of `epoch` (a crashed one's are void).
    Mgr {
        epoch: u32,
        timer: Timer,
    },
    ToMgr {
        link: LinkId,
        frame: Vec<u8>,
    },
    ToNode {
        link: LinkId,
        frame: Vec<u8>,
        /// Held back by a partition (still in the sender's buffers).
        held: bool,
    },
    /// The manager sees a link closed (the reason names the fault).
    MgrLinkDown {
        link: LinkId,
        reason: String,
    },
    /// The node process sees its link gone (reset, idle timeout), or its
    /// connection attempt fail.
    NodeLinkDown {
        link: LinkId,
        reason: String,
    },
    NodeTimer {
        process: usize,
        inc: u32,
        node: usize,
    },
    LinkTimer {
        process: usize,
        inc: u32,
    },
    Burned {
        process: usize,
        inc: u32,
        node: usize,
        slice: node::Slice,
        burned: u64,
    },
    Fault(usize),
    /// The process (re)starts and connects.
    Start {
        process: usize,
    },
    /// The manager crashed by fault #k starts again from its journal.
    MgrRestart(usize),
}

pub(super) struct Link {
    pub(super) process: usize,
    /// The process's end is open.
    pub(super) node_open: bool,
    /// The manager's end: registered and not yet closed.
    pub(super) mgr_open: bool,
    /// The manager's closing is on its way (an `Ev::MgrLinkDown`).
    pub(super) mgr_closing: bool,
    /// The manager process died: nothing flows any more.
    pub(super) cut: bool,
    welcomed: bool,
    registered: bool,
    /// When the last frame each way arrives (streams keep their order).
    last_to_mgr: Time,
    pub(super) last_to_node: Time,
    to_mgr: Decoder,
    to_node: Decoder,
}

enum ProcState {
    /// Down; starts again at an `Ev::Start`.
    Down,
    Up(Box<NodeProcess>),
    /// Ended (shut down, or gave the manager up).
    Gone,
}

struct Proc {
    name: String,
    inc: u32,
    /// The current connection.
    link: Option<LinkId>,
    state: ProcState,
}

/// What a run left behind, for the checks.
pub(in crate::live::manager) struct Run {
    pub(in crate::live::manager) scenario: Scenario,
    pub(in crate::live::manager) submitted: Vec<JobId>,
    /// The run ended by itself (`Action::Finish`).
    pub(in crate::live::manager) finished: bool,
    pub(in crate::live::manager) outcome: Option<LiveOutcome>,
    pub(in crate::live::manager) counts: (usize, usize, usize, usize),
    /// Jobs whose end the journal recorded (over every manager of the
    /// run), with how many times.
    pub(in crate::live::manager) journal_finished: BTreeMap<JobId, usize>,
    /// Every placement of a part on an engine: (process, incarnation, node).
    pub(in crate::live::manager) placements: HashMap<PartId, Vec<(usize, u32, usize)>>,
    /// Parts that finished their work on an engine, with how many times.
    pub(in crate::live::manager) completions: HashMap<PartId, usize>,
    /// The faults that happened, by their names ("fault #k").
    pub(in crate::live::manager) happened: Vec<String>,
    /// The manager crashes that happened: name and trace time.
    pub(in crate::live::manager) manager_crashes: Vec<(String, Time)>,
    /// When each node process incarnation died or exited, by (process,
    /// incarnation).
    pub(in crate::live::manager) deaths: HashMap<(usize, u32), Time>,
    /// Parts whose dispatch a partition held when the manager crashed
    /// (it died in the manager's buffers).
    pub(in crate::live::manager) dispatches_died: HashSet<PartId>,
    /// Node processes that ended with an error (their link machine's).
    pub(in crate::live::manager) exits: Vec<String>,
    /// Nodes given more than their capacity, in words.
    pub(in crate::live::manager) over_capacity: Vec<String>,
    /// Parts still on a process's nodes when its histograms were asked
    /// for at the end (process, parts).
    pub(in crate::live::manager) leftover: Vec<(usize, Vec<PartId>)>,
    /// Frames that did not decode or that their receiver could not
    /// expect, and a journal a restart could not take over.
    pub(in crate::live::manager) codec_errors: Vec<String>,
    pub(in crate::live::manager) events: u64,
    /// The fault reports delivered to a manager, and the `fault` entries
    /// of the journal with how many times each.
    pub(in crate::live::manager) reported: HashSet<FaultKey>,
    pub(in crate::live::manager) journal_faults: HashMap<FaultKey, usize>,
    /// Reports sent again to a manager after a crash.
    pub(in crate::live::manager) resent: usize,
}

pub(super) struct World {
    pub(super) sc: Scenario,
    pub(super) now: Time,
    seq: u64,
    queue: BinaryHeap<Reverse<(Key, usize)>>,
    slots: Vec<Option<Ev>>,
    free: Vec<usize>,
    pub(super) rng: ChaCha8Rng,
    /// The manager (None: crashed, not restarted yet).
    pub(super) mgr: Option<LiveCore>,
    /// Bumped at each manager crash.
    pub(super) epoch: u32,
    /// The current manager's start (real s of harness time).
    pub(super) mgr_born: f64,
    pub(super) cfg: CoreConfig,
    pub(super) jobs: Vec<WorkloadJob>,
    /// The journal's lines after its header, as the writer writes them.
    pub(super) journal: Vec<u8>,
    pub(super) faults_armed: bool,
    /// The fault injector's reports not yet delivered.
    pub(super) reports: super::manager::Reports,
    /// Nothing can go on (a journal a restart could not take over).
    pub(super) stopped: bool,
    procs: Vec<Proc>,
    pub(super) links: HashMap<LinkId, Link>,
    next_link: LinkId,
    /// The machines' clock: the instant of trace time 0.
    base: Instant,
    pub(super) run: Run,
    out: Vec<Out>,
}

/// Runs `sc` to its end (or to a horizon far beyond it).
pub(in crate::live::manager) fn run(sc: &Scenario) -> Run {
    let jobs = sc.workload();
    let submitted = jobs.iter().map(|j| j.spec.id).collect();
    let mut w = World {
        now: 0.0,
        seq: 0,
        queue: BinaryHeap::new(),
        slots: Vec::new(),
        free: Vec::new(),
        rng: ChaCha8Rng::seed_from_u64(sc.seed),
        mgr: None,
        epoch: 0,
        mgr_born: 0.0,
        cfg: super::manager::core_config(sc),
        jobs,
        journal: Vec::new(),
        faults_armed: false,
        reports: Default::default(),
        stopped: false,
        procs: (0..sc.processes)
            .map(|i| Proc {
                name: format!("p{i}"),
                inc: 0,
                link: None,
                state: ProcState::Down,
            })
            .collect(),
        links: HashMap::new(),
        next_link: 1,
        // Only an origin for the link machines' `Instant`s: what they
        // decide depends on differences, so a run is the same any time.
        base: Instant::now(),
        run: Run {
            scenario: sc.clone(),
            submitted,
            finished: false,
            outcome: None,
            counts: (0, 0, 0, 0),
            journal_finished: BTreeMap::new(),
            placements: HashMap::new(),
            completions: HashMap::new(),
            happened: Vec::new(),
            manager_crashes: Vec::new(),
            deaths: HashMap::new(),
            exits: Vec::new(),
            dispatches_died: HashSet::new(),
            over_capacity: Vec::new(),
            leftover: Vec::new(),
            codec_errors: Vec::new(),
            reported: HashSet::new(),
            journal_faults: HashMap::new(),
            resent: 0,
            events: 0,
        },
        out: Vec::new(),
        sc: sc.clone(),
    };
    w.start_manager();
    for (k, f) in sc.faults.iter().enumerate() {
        if f.at() < 0.0 {
            w.at(-f.at(), Ev::Fault(k));
        }
    }
    for p in 0..sc.processes {
        let at = w.rng.random_range(0.0..10.0);
        w.at(at, Ev::Start { process: p });
    }
    // Far beyond any run: the workload's last deadline is ~1,300 s.
    let horizon = 20_000.0;
    while let Some(Reverse(((t, _), slot))) = w.queue.pop() {
        let ev = w.slots[slot].take().expect("queued");
        w.free.push(slot);
        w.now = f64::from_bits(t);
        if w.now > horizon || w.run.finished || w.stopped {
            break;
        }
        w.run.events += 1;
        w.step(ev);
    }
    if let Some(m) = &mut w.mgr {
        w.run.counts = m.counts();
        w.run.outcome = Some(m.outcome());
    }
    w.run
}

impl World {
    pub(super) fn at(&mut self, t: Time, ev: Ev) {
        let t = t.max(self.now);
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(ev);
                s
            }
            None => {
                self.slots.push(Some(ev));
                self.slots.len() - 1
            }
        };
        self.queue.push(Reverse(((t.to_bits(), self.seq), slot)));
    }

    /// The link timeout in trace seconds.
    pub(super) fn timeout(&self) -> Time {
        self.sc.link_timeout / self.sc.time_scale
    }

    /// One frame's one-way latency (trace s): 0.2-5 ms real, one in fifty
    /// 50-300 ms.
    pub(super) fn latency(&mut self) -> Time {
        let ms = if self.rng.random_range(0..50) == 0 {
            self.rng.random_range(50.0..300.0)
        } else {
            self.rng.random_range(0.2..5.0)
        };
        ms * 1e-3 / self.sc.time_scale
    }

    /// When a frame sent now on `process`'s link arrives, if a partition
    /// holds it (it waits for the end: retransmission).
    fn held_until(&self, process: usize, arrive: Time) -> Time {
        let mut t = arrive;
        for f in &self.sc.faults {
            if let Fault::Partition {
                process: p,
                at,
                len,
            } = *f
            {
                if p == process && t >= at && t < at + len {
                    t = at + len;
                }
            }
        }
        t
    }

    pub(super) fn send_to_node(&mut self, link: LinkId, msg: &ManagerMsg) {
        let lat = self.latency();
        let Some(l) = self.links.get(&link) else {
            return;
        };
        if !l.node_open || l.cut {
            return;
        }
        let due = self.now + lat;
        let released = self.held_until(l.process, due);
        let at = released.max(l.last_to_node);
        self.links.get_mut(&link).expect("open").last_to_node = at;
        let frame = protocol::encode(msg);
        let held = released > due;
        self.at(at, Ev::ToNode { link, frame, held });
    }

    fn send_to_mgr(&mut self, link: LinkId, msg: &NodeMsg) {
        let lat = self.latency();
        let Some(l) = self.links.get(&link) else {
            return;
        };
        if !l.node_open || l.cut {
            return;
        }
        let at = self
            .held_until(l.process, self.now + lat)
            .max(l.last_to_mgr);
        self.links.get_mut(&link).expect("open").last_to_mgr = at;
        let frame = protocol::encode(msg);
        self.at(at, Ev::ToMgr { link, frame });
    }

    /// Feeds `frame` to a decoder in two pieces (a stream's reads split
    /// frames anywhere) and takes one message out.
    fn decode<T: serde::de::DeserializeOwned>(
        rng: &mut ChaCha8Rng,
        dec: &mut Decoder,
        frame: &[u8],
        errors: &mut Vec<String>,
    ) -> Option<T> {
        let cut = rng.random_range(0..=frame.len());
        dec.feed(&frame[..cut]);
        let early = dec.next::<T>("frame");
        dec.feed(&frame[cut..]);
        let r = match early {
            Ok(Some(m)) if cut == frame.len() => Ok(Some(m)),
            Ok(Some(_)) => Err("a frame decoded before all its bytes arrived".to_string()),
            Ok(None) => dec.next::<T>("frame").map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match r {
            Ok(Some(m)) => Some(m),
            Ok(None) => {
                errors.push("a whole frame did not decode".into());
                None
            }
            Err(e) => {
                errors.push(e);
                None
            }
        }
    }

    fn step(&mut self, ev: Ev) {
        match ev {
            Ev::Mgr { epoch, timer } => {
                if epoch == self.epoch {
                    self.mgr_timer(timer);
                }
            }
            Ev::ToMgr { link, frame } => {
                let Some(l) = self.links.get_mut(&link) else {
                    return;
                };
                if !l.node_open || l.cut || (l.registered && !l.mgr_open) {
                    return;
                }
                let Some(msg) = Self::decode::<NodeMsg>(
                    &mut self.rng,
                    &mut l.to_mgr,
                    &frame,
                    &mut self.run.codec_errors,
                ) else {
                    return;
                };
                if !l.registered {
                    l.registered = true;
                    l.mgr_open = true;
                    if let NodeMsg::Register { host, nodes, pid } = msg {
                        self.mgr(Event::Connected {
                            link,
                            host,
                            pid,
                            nodes,
                        });
                    } else {
                        self.run
                            .codec_errors
                            .push(format!("link {link}: first frame not a register"));
                    }
                    return;
                }
                self.mgr(Event::FromNode {
                    link,
                    msgs: vec![msg],
                });
            }
            Ev::ToNode { link, frame, held } => {
                let Some(l) = self.links.get_mut(&link) else {
                    return;
                };
                // A frame on the wire when the manager died still arrives;
                // one a partition held in its buffers died with it.
                if l.cut && held {
                    let mut dec = Decoder::new();
                    dec.feed(&frame);
                    let parts = match dec.next::<ManagerMsg>("frame") {
                        Ok(Some(ManagerMsg::Dispatch(d))) => vec![d.part],
                        Ok(Some(ManagerMsg::Dispatches(ds))) => ds.iter().map(|d| d.part).collect(),
                        _ => Vec::new(),
                    };
                    self.run.dispatches_died.extend(parts);
                    return;
                }
                if !l.node_open {
                    return;
                }
                let process = l.process;
                let Some(msg) = Self::decode::<ManagerMsg>(
                    &mut self.rng,
                    &mut l.to_node,
                    &frame,
                    &mut self.run.codec_errors,
                ) else {
                    return;
                };
                self.node_msg(process, link, msg);
            }
            Ev::MgrLinkDown { link, reason } => {
                let Some(l) = self.links.get_mut(&link) else {
                    return;
                };
                if l.mgr_open && !l.cut {
                    l.mgr_open = false;
                    self.mgr(Event::LinkClosed { link, reason });
                }
            }
            Ev::NodeLinkDown { link, reason } => self.node_link_down(link, reason),
            Ev::NodeTimer { process, inc, node } => {
                self.with_process(process, inc, |p, now, out| p.on_timer(now, node, out));
            }
            Ev::LinkTimer { process, inc } => {
                self.with_process(process, inc, |p, now, out| p.on_link_timer(now, out));
            }
            Ev::Burned {
                process,
                inc,
                node,
                slice,
                burned,
            } => {
                self.with_process(process, inc, |p, now, out| {
                    p.on_burned(now, node, slice, burned, out)
                });
            }
            Ev::Fault(k) => self.fault(k),
            Ev::Start { process } => self.start(process),
            Ev::MgrRestart(k) => self.restart_manager(k),
        }
    }

    /// Runs `f` on incarnation `inc` of `process` if it is the live one,
    /// and carries out what it wants done.
    fn with_process(
        &mut self,
        process: usize,
        inc: u32,
        f: impl FnOnce(&mut NodeProcess, Time, &mut Vec<Out>),
    ) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        let p = &mut self.procs[process];
        if let ProcState::Up(np) = &mut p.state {
            if p.inc == inc {
                f(np, now, &mut out);
                self.node_out(process, out);
                return;
            }
        }
        self.out = out;
    }

    fn infos(&self) -> Vec<NodeInfo> {
        (0..self.sc.nodes_per_process as u32)
            .map(|local| NodeInfo {
                local,
                capacity: 1.0,
                speed: 1.0,
                memory_kb: 1 << 20,
                disk_mb: 1 << 10,
            })
            .collect()
    }

    /// A new node process starts (a new `libratory-node`: its own link
    /// machine) and connects.
    fn start(&mut self, process: usize) {
        if !matches!(self.procs[process].state, ProcState::Down) {
            return;
        }
        let slice_min = Duration::from_millis(5);
        let backoff_seed = self.rng.random::<u64>();
        let mut r = ChaCha8Rng::seed_from_u64(self.rng.random::<u64>());
        let overshoot = Box::new(move || r.random_range(0..20_000u64));
        let p = &mut self.procs[process];
        p.inc += 1;
        let cfg = MachineConfig {
            manager: "harness-manager:7000".into(),
            label: p.name.clone(),
            pid: 1000 + process as u32 * 10 + p.inc,
            nodes: self.infos(),
            grace: Duration::from_secs_f64(self.sc.grace),
            backoff: Backoff::new(BACKOFF_FIRST, BACKOFF_CAP, backoff_seed),
            report_tolerance: node::exception::tolerance_for(1.0, slice_min),
            speed: 1.0,
        };
        let np = NodeProcess::new(cfg, self.base, self.sc.time_scale, self.now, overshoot);
        let register = np.register();
        let p = &mut self.procs[process];
        p.state = ProcState::Up(Box::new(np));
        self.connect(process, register);
    }

    /// The process opens a connection and registers on it; with no
    /// manager there, the attempt fails after the link timeout (the
    /// handshake's idle timeout).
    fn connect(&mut self, process: usize, register: NodeMsg) {
        let link = self.next_link;
        self.next_link += 1;
        self.procs[process].link = Some(link);
        self.links.insert(
            link,
            Link {
                process,
                node_open: true,
                mgr_open: false,
                mgr_closing: false,
                cut: self.mgr.is_none(),
                welcomed: false,
                registered: false,
                last_to_mgr: 0.0,
                last_to_node: 0.0,
                to_mgr: Decoder::new(),
                to_node: Decoder::new(),
            },
        );
        if self.mgr.is_none() {
            let at = self.now + self.timeout();
            let reason = "no manager answered (handshake timed out)".to_string();
            self.at(at, Ev::NodeLinkDown { link, reason });
            return;
        }
        self.send_to_mgr(link, &register);
    }

    fn node_msg(&mut self, process: usize, link: LinkId, msg: ManagerMsg) {
        if self.procs[process].link != Some(link) {
            return;
        }
        let now = self.now;
        let welcomed = self.links[&link].welcomed;
        let mut out = std::mem::take(&mut self.out);
        let p = &mut self.procs[process];
        let ProcState::Up(np) = &mut p.state else {
            self.out = out;
            return;
        };
        match msg {
            ManagerMsg::Welcome(w) if !welcomed => {
                self.links.get_mut(&link).expect("held").welcomed = true;
                np.welcomed(now, &w, &mut out);
            }
            ManagerMsg::Reject { reason } if !welcomed => {
                // As `open` in `node::link`: a refused registration fails
                // the attempt (the first one ends the process).
                self.links.get_mut(&link).expect("held").node_open = false;
                p.link = None;
                if np.ever_welcomed() {
                    np.connect_failed(now, format!("refused: {reason}"), &mut out);
                } else {
                    self.out = out;
                    return self.exit(process);
                }
            }
            msg if welcomed => np.on_msg(now, msg, &mut out),
            other => {
                self.run.codec_errors.push(format!(
                    "p{process}: {other:?} before the welcome on link {link}"
                ));
            }
        }
        self.node_out(process, out);
    }

    /// The process's end of `link` sees it gone: a welcomed link is lost
    /// (the machine keeps the parts and reconnects), a connection attempt
    /// failed (the first one ends the process).
    fn node_link_down(&mut self, link: LinkId, reason: String) {
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        if !l.node_open {
            return;
        }
        l.node_open = false;
        let (process, welcomed) = (l.process, l.welcomed);
        if self.procs[process].link != Some(link) {
            return;
        }
        self.procs[process].link = None;
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        let ProcState::Up(np) = &mut self.procs[process].state else {
            self.out = out;
            return;
        };
        if welcomed {
            np.link_lost(now, reason, &mut out);
        } else if np.ever_welcomed() {
            np.connect_failed(now, reason, &mut out);
        } else {
            // A process whose first connection fails exits; its
            // supervisor starts it again.
            self.out = out;
            return self.kill(process);
        }
        self.node_out(process, out);
    }

    fn node_out(&mut self, process: usize, mut out: Vec<Out>) {
        let inc = self.procs[process].inc;
        for o in out.drain(..) {
            match o {
                Out::Send(m) => {
                    if let Some(link) = self.procs[process].link {
                        self.send_to_mgr(link, &m);
                    }
                }
                Out::Connect(register) => self.connect(process, register),
                Out::Disconnect => {
                    if let Some(link) = self.procs[process].link.take() {
                        self.close_node_end(link, "the node process closed the link".into());
                    }
                }
                Out::Timer { node, at } => self.at(at, Ev::NodeTimer { process, inc, node }),
                Out::LinkTimer { at } => self.at(at, Ev::LinkTimer { process, inc }),
                Out::Burn {
                    node,
                    slice,
                    burned,
                    at,
                } => self.at(
                    at,
                    Ev::Burned {
                        process,
                        inc,
                        node,
                        slice,
                        burned,
                    },
                ),
                Out::Placed { part, node } => self
                    .run
                    .placements
                    .entry(part)
                    .or_default()
                    .push((process, inc, node)),
                Out::Completed { part } => *self.run.completions.entry(part).or_default() += 1,
                Out::OverCapacity(what) => {
                    self.run.over_capacity.push(format!("p{process} {what}"))
                }
                // Reported with the node-side breaches.
                Out::Unexpected(what) => self
                    .run
                    .over_capacity
                    .push(format!("p{process} unexpected: {what}")),
                Out::Leftover(parts) => self.run.leftover.push((process, parts)),
                Out::Exit(r) => {
                    if let Err(e) = r {
                        self.run
                            .exits
                            .push(format!("p{process} at {:.1}: {e}", self.now));
                    }
                    self.exit(process);
                }
            }
        }
        self.out = out;
    }

    /// The process's end of `link` closes; the manager learns it a
    /// latency later unless it already knows or will.
    fn close_node_end(&mut self, link: LinkId, reason: String) {
        let lat = self.latency();
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        l.node_open = false;
        if l.cut || l.mgr_closing || !l.registered {
            return;
        }
        l.mgr_closing = true;
        self.at(self.now + lat, Ev::MgrLinkDown { link, reason });
    }

    /// The process ends for good (shut down, or no manager within the
    /// grace period).
    fn exit(&mut self, process: usize) {
        let p = &mut self.procs[process];
        if matches!(p.state, ProcState::Up(_)) {
            self.run.deaths.insert((process, p.inc), self.now);
        }
        p.state = ProcState::Gone;
        if let Some(link) = p.link.take() {
            self.close_node_end(link, format!("p{process} exited"));
        }
    }

    /// The process dies (its state is gone) and starts again later.
    fn kill(&mut self, process: usize) {
        let p = &mut self.procs[process];
        if matches!(p.state, ProcState::Down) {
            return;
        }
        self.run.deaths.insert((process, p.inc), self.now);
        p.state = ProcState::Down;
        p.link = None;
        let back = self.rng.random_range(1.0..4.0) / self.sc.time_scale;
        self.at(self.now + back, Ev::Start { process });
    }

    fn fault(&mut self, k: usize) {
        let name = format!("fault #{k}");
        let f = self.sc.faults[k].clone();
        let timeout = self.timeout();
        let process = match f {
            Fault::ManagerCrash { down, .. } => return self.crash_manager(k, down),
            Fault::Crash { process, .. }
            | Fault::Reset { process, .. }
            | Fault::Partition { process, .. } => process,
        };
        if let Fault::Crash { .. } = f {
            if !matches!(self.procs[process].state, ProcState::Up(_)) {
                return;
            }
            self.run.happened.push(name.clone());
            self.report(
                &name,
                FaultAct::Kill,
                "crash",
                self.procs[process].name.clone(),
            );
            // The manager's end sees nothing until the idle timeout.
            if let Some(link) = self.procs[process].link {
                let l = self.links.get_mut(&link).expect("held");
                l.node_open = false;
                if l.registered && !l.cut && !l.mgr_closing {
                    l.mgr_closing = true;
                    let reason = format!("{name}: node process crashed (idle timeout)");
                    self.at(self.now + timeout, Ev::MgrLinkDown { link, reason });
                }
            }
            return self.kill(process);
        }
        // The link faults befall a link that is up both ways.
        let Some(link) = self.procs[process].link.filter(|l| {
            let l = &self.links[l];
            l.node_open && l.welcomed && l.mgr_open && !l.cut && !l.mgr_closing
        }) else {
            return;
        };
        self.run.happened.push(name.clone());
        match f {
            Fault::Reset { .. } => {
                let reason = format!("{name}: connection reset");
                self.links.get_mut(&link).expect("held").mgr_closing = true;
                self.at(
                    self.now,
                    Ev::MgrLinkDown {
                        link,
                        reason: reason.clone(),
                    },
                );
                self.node_link_down(link, reason);
            }
            Fault::Partition { len, .. } if len > timeout => {
                self.report(
                    &name,
                    FaultAct::Link,
                    "partition",
                    self.procs[process].name.clone(),
                );
                // Each end gives the link up once its timeout passes (its
                // frames until then are held): the node process first, the
                // manager up to 0.5 s later (their timers are not in step),
                // so the process may register again before the manager has
                // noticed.
                let reason = format!("{name}: partition longer than the link timeout");
                let late = self.rng.random_range(0.0..0.5) / self.sc.time_scale;
                self.links.get_mut(&link).expect("held").mgr_closing = true;
                self.at(
                    self.now + timeout + late,
                    Ev::MgrLinkDown {
                        link,
                        reason: reason.clone(),
                    },
                );
                self.at(self.now + timeout, Ev::NodeLinkDown { link, reason });
            }
            _ => {}
        }
    }
}
