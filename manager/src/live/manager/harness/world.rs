//! The harness's world: the scenario drawn from a seed, the event queue,
//! the simulated links, and the loop that carries out the manager core's
//! and the node processes' actions (see the parent module).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::time::Duration;

use common::admission::{LinkId, ManagerCore};
use common::job::JobId;
use common::policy::{self, PolicyConfig};
use common::protocol::{self, Decoder, ManagerMsg, NodeInfo, NodeMsg, PartId};
use common::share::SpareRule;
use common::time::Time;
use common::workload::{self, WorkloadJob};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::node::{NodeProcess, Out};
use crate::live::journal::Entry;
use crate::live::manager::core::{Action, CoreConfig, Event, LiveCore, Now, Timer, When};
use crate::live::manager::LiveOutcome;

/// The policies a seed picks from: time-shared ones (shares on the
/// nodes) and a space-shared queue (exclusive parts, a scheduling pass).
const POLICIES: [&str; 4] = ["libra", "libra-plus-dollar", "libra-sla", "fcfs-bf"];

/// One run's setting, all drawn from `seed`.
#[derive(Debug, Clone)]
pub(in crate::live::manager) struct Scenario {
    pub(in crate::live::manager) seed: u64,
    pub(in crate::live::manager) policy: &'static str,
    pub(in crate::live::manager) jobs: usize,
    pub(in crate::live::manager) processes: usize,
    pub(in crate::live::manager) nodes_per_process: usize,
    /// Real seconds per trace second.
    pub(in crate::live::manager) time_scale: f64,
    /// The link timeout (real seconds): how long a dead peer goes unseen.
    pub(in crate::live::manager) link_timeout: f64,
    pub(in crate::live::manager) faults: Vec<Fault>,
}

/// A fault of the schedule, at a trace time after the replay's start (a
/// negative one: that long after the harness starts, while the processes
/// register).
#[derive(Debug, Clone, PartialEq)]
pub(in crate::live::manager) enum Fault {
    Crash { process: usize, at: Time },
    Reset { process: usize, at: Time },
    Partition { process: usize, at: Time, len: Time },
}

impl Fault {
    fn at(&self) -> Time {
        match self {
            Fault::Crash { at, .. } | Fault::Reset { at, .. } | Fault::Partition { at, .. } => *at,
        }
    }
}

impl Scenario {
    /// The scenario of `seed`: `jobs` jobs on 3 node processes of 3 nodes.
    pub(in crate::live::manager) fn of(seed: u64, jobs: usize) -> Scenario {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5ce7a110);
        let policy = POLICIES[rng.random_range(0..POLICIES.len())];
        let processes = 3;
        let time_scale = 0.01;
        let link_timeout = 3.0;
        let timeout_trace = link_timeout / time_scale;
        let n = rng.random_range(0..=4);
        let faults = (0..n)
            .map(|_| {
                let process = rng.random_range(0..processes);
                // One in six while the processes register (a negative time:
                // that many trace seconds after the harness starts).
                let at = if rng.random_range(0..6) == 0 {
                    -rng.random_range(0.0..12.0)
                } else {
                    rng.random_range(0.0..1500.0)
                };
                match rng.random_range(0..4) {
                    0 => Fault::Crash { process, at },
                    1 => Fault::Reset { process, at },
                    2 => Fault::Partition {
                        process,
                        at,
                        len: rng.random_range(1.0..0.9 * timeout_trace),
                    },
                    _ => Fault::Partition {
                        process,
                        at,
                        len: rng.random_range(1.1 * timeout_trace..3.0 * timeout_trace),
                    },
                }
            })
            .collect();
        Scenario {
            seed,
            policy,
            jobs,
            processes,
            nodes_per_process: 3,
            time_scale,
            link_timeout,
            faults,
        }
    }

    /// The workload: the Libra paper's synthetic batch of the seed, with
    /// 1 to 3 processors a job (so a lost job has parts elsewhere to
    /// cancel) and runtime estimates off by up to 20% either way.
    pub(in crate::live::manager) fn workload(&self) -> Vec<WorkloadJob> {
        let mut p = workload::Params::preset("libra").expect("the libra preset");
        p.seed = self.seed;
        p.jobs = self.jobs;
        let mut jobs = workload::synthetic_libra(&p).jobs;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x3019);
        for j in &mut jobs {
            j.spec.resources.processors = rng.random_range(1..=3);
            let e = j.spec.details.runtime_estimate * rng.random_range(0.8..1.2);
            j.spec.details.runtime_estimate = e.max(1.0);
        }
        jobs
    }
}

/// Virtual time (trace seconds) as a queue key: non-negative floats order
/// as their bits do.
type Key = (u64, u64);

enum Ev {
    Mgr(Timer),
    ToMgr {
        link: LinkId,
        frame: Vec<u8>,
    },
    ToNode {
        link: LinkId,
        frame: Vec<u8>,
    },
    /// The manager sees a link closed (the reason names the fault).
    MgrLinkDown {
        link: LinkId,
        reason: String,
    },
    NodeTimer {
        process: usize,
        inc: u32,
        node: usize,
    },
    Burned {
        process: usize,
        inc: u32,
        node: usize,
        slice: node::Slice,
        burned: u64,
    },
    Relay {
        process: usize,
        inc: u32,
    },
    Fault(usize),
    /// The node process's end of a link gives it up (and the process
    /// exits); the manager's end at `manager_at`.
    NodeGivesUp {
        link: LinkId,
        manager_at: Time,
        reason: String,
    },
    /// The process (re)starts and connects.
    Start {
        process: usize,
    },
}

struct Link {
    process: usize,
    inc: u32,
    open: bool,
    /// When the last frame each way arrives (streams keep their order).
    last_to_mgr: Time,
    last_to_node: Time,
    to_mgr: Decoder,
    to_node: Decoder,
    registered: bool,
}

enum ProcState {
    /// Down; starts again at an `Ev::Start`.
    Down,
    /// Registered, waiting for the welcome.
    Joining,
    Up(NodeProcess),
    /// Shut down by the manager.
    Gone,
}

struct Proc {
    name: String,
    inc: u32,
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
    /// Jobs whose end the journal recorded, with how many times.
    pub(in crate::live::manager) journal_finished: BTreeMap<JobId, usize>,
    /// Every placement of a part on an engine: (process, incarnation, node).
    pub(in crate::live::manager) placements: HashMap<PartId, Vec<(usize, u32, usize)>>,
    /// Parts that finished their work on an engine, with how many times.
    pub(in crate::live::manager) completions: HashMap<PartId, usize>,
    /// The faults that happened, by their names ("fault #k").
    pub(in crate::live::manager) happened: Vec<String>,
    /// Nodes given more than their capacity, in words.
    pub(in crate::live::manager) over_capacity: Vec<String>,
    /// Parts still on a process's nodes when its histograms were asked
    /// for at the end (process, parts).
    pub(in crate::live::manager) leftover: Vec<(usize, Vec<PartId>)>,
    /// Frames that did not decode or that their receiver could not expect.
    pub(in crate::live::manager) codec_errors: Vec<String>,
    pub(in crate::live::manager) events: u64,
}

struct World {
    sc: Scenario,
    now: Time,
    seq: u64,
    queue: BinaryHeap<Reverse<(Key, usize)>>,
    slots: Vec<Option<Ev>>,
    free: Vec<usize>,
    rng: ChaCha8Rng,
    mgr: LiveCore,
    procs: Vec<Proc>,
    links: HashMap<LinkId, Link>,
    next_link: LinkId,
    run: Run,
    out: Vec<Out>,
}

/// Runs `sc` to its end (or to a horizon far beyond it).
pub(in crate::live::manager) fn run(sc: &Scenario) -> Run {
    let jobs = sc.workload();
    let policy =
        policy::build(sc.policy, &PolicyConfig::default(), &[]).expect("a registered policy");
    let cfg = CoreConfig {
        time_scale: sc.time_scale,
        expect_nodes: sc.processes * sc.nodes_per_process,
        serve: false,
        journal: true,
        start_timeout: Duration::from_secs(30),
        histogram_timeout: Duration::from_secs(5),
        report_ms: 500,
        heartbeat_ms: 200,
        histogram_ms: 10_000,
        spare_rule: SpareRule::default(),
    };
    let submitted = jobs.iter().map(|j| j.spec.id).collect();
    let mut w = World {
        now: 0.0,
        seq: 0,
        queue: BinaryHeap::new(),
        slots: Vec::new(),
        free: Vec::new(),
        rng: ChaCha8Rng::seed_from_u64(sc.seed),
        mgr: LiveCore::new(ManagerCore::new(policy), cfg, jobs),
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
            over_capacity: Vec::new(),
            leftover: Vec::new(),
            codec_errors: Vec::new(),
            events: 0,
        },
        out: Vec::new(),
        sc: sc.clone(),
    };
    w.actions();
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
        if w.now > horizon || w.run.finished {
            break;
        }
        w.run.events += 1;
        w.step(ev);
    }
    w.run.counts = w.mgr.counts();
    w.run.outcome = Some(w.mgr.outcome());
    w.run
}

impl World {
    fn at(&mut self, t: Time, ev: Ev) {
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

    fn now(&self) -> Now {
        let wall = self.now * self.sc.time_scale;
        Now {
            trace: self.now,
            wall,
            journal: wall,
        }
    }

    fn mgr(&mut self, ev: Event) {
        self.mgr.handle(self.now(), ev);
        self.actions();
    }

    /// One frame's one-way latency (trace s): 0.2-5 ms real, one in fifty
    /// 50-300 ms.
    fn latency(&mut self) -> Time {
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

    fn send_to_node(&mut self, link: LinkId, msg: &ManagerMsg) {
        let lat = self.latency();
        let Some(l) = self.links.get(&link) else {
            return;
        };
        if !l.open {
            return;
        }
        let at = self
            .held_until(l.process, self.now + lat)
            .max(l.last_to_node);
        self.links.get_mut(&link).expect("open").last_to_node = at;
        let frame = protocol::encode(msg);
        self.at(at, Ev::ToNode { link, frame });
    }

    fn send_to_mgr(&mut self, link: LinkId, msg: &NodeMsg) {
        let lat = self.latency();
        let Some(l) = self.links.get(&link) else {
            return;
        };
        if !l.open {
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
            Ev::Mgr(timer) => {
                if timer != Timer::Replay {
                    return self.mgr(Event::Timer(timer));
                }
                // As the actor: the due jobs one event each.
                loop {
                    self.mgr(Event::Timer(Timer::Replay));
                    if !self.mgr.replay_due(self.now) {
                        break;
                    }
                }
            }
            Ev::ToMgr { link, frame } => {
                let Some(l) = self.links.get_mut(&link) else {
                    return;
                };
                if !l.open {
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
            Ev::ToNode { link, frame } => {
                let Some(l) = self.links.get_mut(&link) else {
                    return;
                };
                if !l.open {
                    return;
                }
                let (process, inc) = (l.process, l.inc);
                let Some(msg) = Self::decode::<ManagerMsg>(
                    &mut self.rng,
                    &mut l.to_node,
                    &frame,
                    &mut self.run.codec_errors,
                ) else {
                    return;
                };
                if self.procs[process].inc != inc {
                    return;
                }
                self.node_msg(process, msg);
            }
            Ev::MgrLinkDown { link, reason } => self.mgr(Event::LinkClosed { link, reason }),
            Ev::NodeTimer { process, inc, node } => {
                let now = self.now;
                let mut out = std::mem::take(&mut self.out);
                if let Some(p) = self.live(process, inc) {
                    p.on_timer(now, node, &mut out);
                    self.node_out(process, out);
                }
            }
            Ev::Burned {
                process,
                inc,
                node,
                slice,
                burned,
            } => {
                let now = self.now;
                let mut out = std::mem::take(&mut self.out);
                if let Some(p) = self.live(process, inc) {
                    p.on_burned(now, node, slice, burned, &mut out);
                    self.node_out(process, out);
                }
            }
            Ev::Relay { process, inc } => {
                let mut out = std::mem::take(&mut self.out);
                if let Some(p) = self.live(process, inc) {
                    p.flush(&mut out);
                    self.node_out(process, out);
                    let every = 0.5 / self.sc.time_scale;
                    self.at(self.now + every, Ev::Relay { process, inc });
                }
            }
            Ev::Fault(k) => self.fault(k),
            Ev::NodeGivesUp {
                link,
                manager_at,
                reason,
            } => self.node_dies(link, manager_at, reason),
            Ev::Start { process } => self.start(process),
        }
    }

    fn live(&mut self, process: usize, inc: u32) -> Option<&mut NodeProcess> {
        let p = &mut self.procs[process];
        match &mut p.state {
            ProcState::Up(np) if p.inc == inc => Some(np),
            _ => None,
        }
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

    fn start(&mut self, process: usize) {
        let link = self.next_link;
        self.next_link += 1;
        let p = &mut self.procs[process];
        if !matches!(p.state, ProcState::Down) {
            return;
        }
        p.inc += 1;
        p.link = Some(link);
        p.state = ProcState::Joining;
        let inc = p.inc;
        let host = p.name.clone();
        self.links.insert(
            link,
            Link {
                process,
                inc,
                open: true,
                last_to_mgr: 0.0,
                last_to_node: 0.0,
                to_mgr: Decoder::new(),
                to_node: Decoder::new(),
                registered: false,
            },
        );
        let nodes = self.infos();
        self.send_to_mgr(
            link,
            &NodeMsg::Register {
                host,
                nodes,
                pid: 1000 + process as u32 * 10 + inc,
            },
        );
    }

    fn node_msg(&mut self, process: usize, msg: ManagerMsg) {
        let now = self.now;
        let infos = self.infos();
        let p = &mut self.procs[process];
        match (&mut p.state, msg) {
            (ProcState::Joining, ManagerMsg::Welcome(w)) => {
                let seed = self.rng.random::<u64>();
                let mut r = ChaCha8Rng::seed_from_u64(seed);
                let overshoot = Box::new(move || r.random_range(0..20_000u64));
                p.state = ProcState::Up(NodeProcess::new(&infos, &w, overshoot));
                let inc = p.inc;
                let every = f64::from(w.report_ms) * 1e-3 / self.sc.time_scale;
                self.at(now + every, Ev::Relay { process, inc });
            }
            (ProcState::Joining, _) => {
                // A reject (or anything else before the welcome): it ends.
                self.exit(process);
            }
            (ProcState::Up(np), msg) => {
                let mut out = std::mem::take(&mut self.out);
                np.on_msg(now, msg, &mut out);
                self.node_out(process, out);
            }
            (ProcState::Down | ProcState::Gone, _) => {}
        }
    }

    fn node_out(&mut self, process: usize, mut out: Vec<Out>) {
        let inc = self.procs[process].inc;
        let link = self.procs[process].link;
        for o in out.drain(..) {
            match o {
                Out::Send(m) => {
                    if let Some(link) = link {
                        self.send_to_mgr(link, &m);
                    }
                }
                Out::Timer { node, at } => self.at(at, Ev::NodeTimer { process, inc, node }),
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
                Out::Leftover(parts) => self.run.leftover.push((process, parts)),
                Out::Exit => self.exit(process),
                Out::Unexpected(what) => self
                    .run
                    .codec_errors
                    .push(format!("process {process}: {what}")),
            }
        }
        self.out = out;
    }

    /// The process ends for good (shut down or rejected).
    fn exit(&mut self, process: usize) {
        self.procs[process].state = ProcState::Gone;
    }

    /// The process dies: its state is gone; it starts again later.
    fn kill(&mut self, process: usize) {
        let p = &mut self.procs[process];
        if matches!(p.state, ProcState::Gone | ProcState::Down) {
            return;
        }
        p.state = ProcState::Down;
        p.inc += 1;
        let back = self.rng.random_range(1.0..4.0) / self.sc.time_scale;
        self.at(self.now + back, Ev::Start { process });
    }

    /// Closes `link` on both ends now: frames in flight are lost, the
    /// manager is told `reason`, the process exits and restarts.
    fn close(&mut self, link: LinkId, reason: String) {
        self.node_dies(link, self.now, reason);
    }

    fn fault(&mut self, k: usize) {
        let name = format!("fault #{k}");
        let f = self.sc.faults[k].clone();
        let process = match f {
            Fault::Crash { process, .. }
            | Fault::Reset { process, .. }
            | Fault::Partition { process, .. } => process,
        };
        let Some(link) = self.procs[process].link.filter(|l| self.links[l].open) else {
            return;
        };
        let timeout = self.sc.link_timeout / self.sc.time_scale;
        match f {
            Fault::Crash { .. } => {
                self.run.happened.push(name.clone());
                // The manager's end sees nothing until the idle timeout.
                let reason = format!("{name}: node process crashed (idle timeout)");
                self.node_dies(link, self.now + timeout, reason);
            }
            Fault::Reset { .. } => {
                self.run.happened.push(name.clone());
                self.close(link, format!("{name}: connection reset"));
            }
            Fault::Partition { len, .. } => {
                self.run.happened.push(name.clone());
                if len > timeout {
                    // Each end gives the link up once its timeout passes
                    // (its frames until then are held): the node process
                    // first, the manager up to 0.5 s later (their timers
                    // are not in step), so the process may register again
                    // before the manager has noticed.
                    let reason = format!("{name}: partition longer than the link timeout");
                    let late = self.rng.random_range(0.0..0.5) / self.sc.time_scale;
                    self.at(
                        self.now + timeout,
                        Ev::NodeGivesUp {
                            link,
                            manager_at: self.now + timeout + late,
                            reason,
                        },
                    );
                }
            }
        }
    }

    /// The node process of `link` dies now (its frames not yet delivered
    /// are lost with it); the manager is told `reason` at `manager_at`.
    fn node_dies(&mut self, link: LinkId, manager_at: Time, reason: String) {
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        if !l.open {
            return;
        }
        l.open = false;
        let (process, inc) = (l.process, l.inc);
        if self.procs[process].inc == inc {
            self.kill(process);
        }
        self.at(manager_at, Ev::MgrLinkDown { link, reason });
    }

    /// Carries out the manager core's actions.
    fn actions(&mut self) {
        while let Some(a) = self.mgr.poll_action() {
            match a {
                Action::Send { link, msg } => self.send_to_node(link, &msg),
                Action::Reply { .. } => {}
                Action::Refused { link, reason } => {
                    self.send_to_node(link, &ManagerMsg::Reject { reason });
                }
                Action::Journal(entries) => {
                    for e in entries {
                        let id = match e {
                            Entry::Finished { id: Some(id), .. } => id,
                            Entry::Finished {
                                record: Some(r), ..
                            } => r.id,
                            _ => continue,
                        };
                        *self.run.journal_finished.entry(id).or_default() += 1;
                    }
                }
                Action::Arm { timer, when } => {
                    let at = match when {
                        When::Trace(t) => t,
                        When::After(d) => self.now + d.as_secs_f64() / self.sc.time_scale,
                    };
                    self.at(at, Ev::Mgr(timer));
                }
                Action::ReplayStarted { offset } => {
                    for k in 0..self.sc.faults.len() {
                        let at = self.sc.faults[k].at();
                        if at >= 0.0 {
                            self.at(offset + at, Ev::Fault(k));
                        }
                    }
                }
                Action::Finish => self.run.finished = true,
                // No harness scenario runs the external-scheduler policy.
                Action::SchedulerRequest(_) => self
                    .run
                    .codec_errors
                    .push("a scheduler request from a run without an external scheduler".into()),
            }
        }
    }
}
