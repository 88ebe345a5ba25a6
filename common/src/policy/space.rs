//! Space-shared baselines: one job per processor at a time, jobs wait in a
//! queue. FCFS-BF, SJF-BF and EDF-BF (the Libra+$ paper: EASY backfilling with the
//! "generous" admission control that drops a waiting job once its deadline
//! has lapsed), EDF (the LibraRisk paper: non-preemptive, no backfilling, rejects a
//! selected job that can no longer meet its deadline) and PBS FIFO (the
//! Libra paper: no admission control at all).
//!
//! These policies own the node allocation (a node is free or busy). They
//! plan with runtime *estimates* on the slowest node of the cluster; the
//! execution model (simulator or real nodes) reports actual completions
//! through [`QueuePolicy::finished`].

use super::{PolicyConfig, QueueAction, QueuePolicy, Reject, RejectReason};
use crate::job::{JobId, JobSpec};
use crate::node_model::NodeSpec;
use crate::time::{Time, TIME_EPS};

#[derive(Debug, Clone)]
struct Waiting {
    id: JobId,
    procs: usize,
    /// Planned runtime: RE on the slowest node.
    est: f64,
    estimate: f64,
    deadline: Time,
    submit: Time,
    /// Started in the current scheduling pass, to be taken out of the
    /// queue at its end (see [`SpaceState::launch`]).
    started: bool,
}

#[derive(Debug, Clone)]
struct Running {
    id: JobId,
    nodes: Vec<usize>,
    est_end: Time,
}

/// Which nodes a space-shared policy may allocate: free or busy, and
/// usable or not (a live node that died is never allocated again). Shared
/// by the queue policies here and the QoPS family.
#[derive(Debug, Clone)]
pub(crate) struct NodePool {
    /// Free nodes, one bit each (node `n` is bit `n % 64` of word
    /// `n / 64`): the lowest free nodes are found a word at a time.
    free: Vec<u64>,
    usable: Vec<bool>,
    n_free: usize,
    n_usable: usize,
}

impl NodePool {
    /// `n` free, usable nodes.
    pub(crate) fn new(n: usize) -> NodePool {
        let mut free = vec![u64::MAX; n / 64];
        let rest = n % 64;
        if rest > 0 {
            free.push((1u64 << rest) - 1);
        }
        NodePool {
            free,
            usable: vec![true; n],
            n_free: n,
            n_usable: n,
        }
    }

    fn set_free(&mut self, node: usize, free: bool) {
        let (w, bit) = (node / 64, 1u64 << (node % 64));
        if free {
            self.free[w] |= bit;
        } else {
            self.free[w] &= !bit;
        }
    }

    /// Nodes free now.
    pub(crate) fn n_free(&self) -> usize {
        self.n_free
    }

    /// Nodes that may be used at all.
    pub(crate) fn usable_count(&self) -> usize {
        self.n_usable
    }

    /// Marks `node` (un)usable; `node == len` appends one. A busy node
    /// stays busy until its job reports; a free one changes the pool at
    /// once.
    pub(crate) fn set_available(&mut self, node: usize, available: bool, busy: bool) {
        if node == self.usable.len() {
            self.usable.push(false);
            if node / 64 == self.free.len() {
                self.free.push(0);
            }
        }
        if node >= self.usable.len() || self.usable[node] == available {
            return;
        }
        self.usable[node] = available;
        if available {
            self.n_usable += 1;
        } else {
            self.n_usable -= 1;
        }
        if !busy {
            self.set_free(node, available);
            if available {
                self.n_free += 1;
            } else {
                self.n_free -= 1;
            }
        }
    }

    /// Takes the `procs` lowest-index free nodes (the caller checked
    /// there are that many).
    pub(crate) fn take_lowest(&mut self, procs: usize) -> Vec<usize> {
        let mut nodes = Vec::with_capacity(procs);
        for (w, word) in self.free.iter_mut().enumerate() {
            while *word != 0 && nodes.len() < procs {
                nodes.push(w * 64 + word.trailing_zeros() as usize);
                // Clears the lowest set bit.
                *word &= *word - 1;
            }
            if nodes.len() == procs {
                break;
            }
        }
        self.n_free -= nodes.len();
        nodes
    }

    /// Takes free node `node`; false if it is not free.
    pub(crate) fn take(&mut self, node: usize) -> bool {
        let (w, bit) = (node / 64, 1u64 << (node % 64));
        if self.free.get(w).is_none_or(|word| word & bit == 0) {
            return false;
        }
        self.free[w] &= !bit;
        self.n_free -= 1;
        true
    }

    /// Gives nodes back (dead ones stay out).
    pub(crate) fn release(&mut self, nodes: &[usize]) {
        for &n in nodes {
            if self.usable[n] {
                self.set_free(n, true);
                self.n_free += 1;
            }
        }
    }
}

/// The state every space-shared policy keeps: free nodes, running jobs,
/// the queue.
#[derive(Debug, Clone)]
struct SpaceState {
    pool: NodePool,
    running: Vec<Running>,
    queue: Vec<Waiting>,
    /// No job was queued since the queue was last sorted: its order keys
    /// never change and starting or dropping jobs keeps the order, so the
    /// sort can be skipped (it ran at every event of a simulation).
    sorted: bool,
    /// Scratch for [`SpaceState::shadow`], kept for its capacity.
    ends: Vec<(Time, usize)>,
    /// At most the earliest deadline in the queue: while `now` is not
    /// past it, no waiting job has lapsed and the queue is not walked.
    earliest_deadline: Time,
    slowest: f64,
    pbase: f64,
}

impl SpaceState {
    fn new(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> SpaceState {
        SpaceState {
            pool: NodePool::new(nodes.len()),
            running: Vec::new(),
            queue: Vec::new(),
            sorted: true,
            ends: Vec::new(),
            earliest_deadline: Time::INFINITY,
            slowest: nodes.iter().map(|n| n.speed).fold(f64::INFINITY, f64::min),
            pbase: cfg.pbase,
        }
    }

    fn usable_count(&self) -> usize {
        self.pool.usable_count()
    }

    fn set_available(&mut self, node: usize, available: bool) {
        let busy = self.running.iter().any(|r| r.nodes.contains(&node));
        self.pool.set_available(node, available, busy);
        if available && self.slowest.is_infinite() {
            // Built without nodes (a live cluster registers them later,
            // and says nothing of speed here): plan on the reference node.
            self.slowest = 1.0;
        }
    }

    fn submit(&mut self, job: &JobSpec) -> Option<Reject> {
        if job.processors() > self.usable_count() {
            return Some(Reject {
                reason: RejectReason::Resources,
                detail: format!(
                    "needs {} processors, the cluster has {}",
                    job.processors(),
                    self.usable_count()
                ),
            });
        }
        self.queue.push(Waiting {
            id: job.id,
            procs: job.processors(),
            est: job.estimate() / self.slowest,
            estimate: job.estimate(),
            deadline: job.deadline_abs(),
            submit: job.details.submit_time,
            started: false,
        });
        self.sorted = false;
        self.earliest_deadline = self.earliest_deadline.min(job.deadline_abs());
        None
    }

    fn finished(&mut self, job: JobId) {
        if let Some(k) = self.running.iter().position(|r| r.id == job) {
            let r = self.running.swap_remove(k);
            self.pool.release(&r.nodes);
        }
    }

    /// An adopted job's part holds `node` (see
    /// [`QueuePolicy::hold_node`]).
    fn hold(&mut self, job: JobId, node: usize, est_end: Time) -> bool {
        if !self.pool.take(node) {
            return false;
        }
        match self.running.iter_mut().find(|r| r.id == job) {
            Some(r) => {
                r.nodes.push(node);
                r.est_end = r.est_end.max(est_end);
            }
            None => self.running.push(Running {
                id: job,
                nodes: vec![node],
                est_end,
            }),
        }
        true
    }

    /// Starts queue entry `k` now on the lowest-index free nodes.
    fn start(&mut self, k: usize, now: Time, out: &mut Vec<QueueAction>) {
        self.launch(k, now, out);
        self.queue.remove(k);
    }

    /// Starts queue entry `k` now on the lowest-index free nodes but
    /// leaves it in the queue, marked started: a pass that starts many
    /// jobs takes them all out at its end with [`Self::remove_started`]
    /// (removing each at once shifted the whole queue every time).
    fn launch(&mut self, k: usize, now: Time, out: &mut Vec<QueueAction>) {
        let w = &mut self.queue[k];
        w.started = true;
        let w = w.clone();
        let nodes = self.pool.take_lowest(w.procs);
        self.running.push(Running {
            id: w.id,
            nodes: nodes.clone(),
            est_end: now + w.est,
        });
        out.push(QueueAction::Start {
            job: w.id,
            nodes,
            cost: w.estimate * self.pbase,
        });
    }

    /// Takes the jobs [`Self::launch`] started out of the queue.
    fn remove_started(&mut self) {
        self.queue.retain(|w| !w.started);
    }

    fn drop_job(
        &mut self,
        k: usize,
        reason: RejectReason,
        detail: String,
        out: &mut Vec<QueueAction>,
    ) {
        let w = self.queue.remove(k);
        out.push(QueueAction::Drop {
            job: w.id,
            reject: Reject { reason, detail },
        });
    }

    /// The run is over (nothing left to arrive, run or wake for): a
    /// waiting job wider than the nodes still usable (the others were
    /// lost for good) can never start, and ahead in the queue it would
    /// hold up the jobs behind it. Each is dropped, naming why.
    fn drop_too_wide(&mut self, out: &mut Vec<QueueAction>) {
        let usable = self.usable_count();
        let mut k = 0;
        while k < self.queue.len() {
            if self.queue[k].procs > usable {
                let detail = too_wide(self.queue[k].procs, usable);
                self.drop_job(k, RejectReason::Resources, detail, out);
            } else {
                k += 1;
            }
        }
    }

    /// Drops every waiting job whose deadline has passed.
    fn drop_lapsed(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        // Every deadline is >= the earliest, so none has lapsed either.
        if now <= self.earliest_deadline + TIME_EPS {
            return;
        }
        self.earliest_deadline = Time::INFINITY;
        let mut k = 0;
        while k < self.queue.len() {
            #[cfg(test)]
            count_walked();
            if now > self.queue[k].deadline + TIME_EPS {
                let detail = format!(
                    "deadline {:.0} lapsed while waiting (dropped at {:.0})",
                    self.queue[k].deadline, now
                );
                self.drop_job(k, RejectReason::Expired, detail, out);
            } else {
                self.earliest_deadline = self.earliest_deadline.min(self.queue[k].deadline);
                k += 1;
            }
        }
    }

    /// Classic EASY's shadow time and extra nodes for a head needing
    /// `procs`: the shadow time is the earliest estimated end at which
    /// `procs` nodes are free (a job past its estimate is expected to end
    /// now); the extra nodes are those free at the shadow time beyond
    /// `procs`, counting *every* running job whose estimated end is at or
    /// before it. Jobs tied with the one that frees the last needed node
    /// free theirs at the same instant, so they count too, whatever their
    /// order in the running list.
    fn shadow(&mut self, now: Time, procs: usize) -> (Time, usize) {
        let ends = &mut self.ends;
        ends.clear();
        ends.extend(
            self.running
                .iter()
                .map(|r| (r.est_end.max(now), r.nodes.len())),
        );
        // Unstable is enough: entries with equal times are summed together
        // below, whatever their order.
        ends.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut avail = self.pool.n_free();
        let mut k = 0;
        while k < ends.len() {
            let shadow = ends[k].0;
            // Everything ending at this instant (within TIME_EPS) frees its
            // nodes together.
            while k < ends.len() && ends[k].0 <= shadow + TIME_EPS {
                avail += ends[k].1;
                k += 1;
            }
            if avail >= procs {
                return (shadow, avail - procs);
            }
        }
        // Unreachable for jobs that fit the cluster; be safe.
        (Time::INFINITY, 0)
    }
}

/// The [`QueuePolicy`] methods every space-shared policy leaves to its
/// [`SpaceState`] (`self.st`): only `name` and `schedule` differ.
macro_rules! space_state_queue {
    () => {
        fn submit(&mut self, _now: Time, job: &JobSpec) -> Option<Reject> {
            self.st.submit(job)
        }

        fn finished(&mut self, _now: Time, job: JobId) {
            self.st.finished(job);
        }

        fn queued(&self) -> usize {
            self.st.queue.len()
        }

        fn set_node_available(&mut self, node: usize, available: bool) {
            self.st.set_available(node, available);
        }

        fn hold_node(&mut self, job: JobId, node: usize, est_end: Time) -> bool {
            self.st.hold(job, node, est_end)
        }

        /// Drops the jobs the nodes left can never run, then starts what
        /// waited behind them.
        fn end(&mut self, now: Time, out: &mut Vec<QueueAction>) {
            let before = out.len();
            self.st.drop_too_wide(out);
            if out.len() > before {
                self.schedule(now, out);
            }
        }
    };
}

/// Why a queue policy drops a waiting job at the end of a run: it needs
/// `procs` nodes and only `usable` were left.
pub(crate) fn too_wide(procs: usize, usable: usize) -> String {
    format!(
        "never started: needs {procs} processors, and only {usable} nodes were left usable \
         (the others lost for good) when nothing else could free one"
    )
}

/// The priority of an EASY backfilling queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackfillOrder {
    /// First come, first served.
    Fcfs,
    /// Shortest runtime estimate first.
    Sjf,
    /// Earliest deadline first.
    Edf,
}

/// EASY backfilling (the Libra+$ paper's FCFS-BF, SJF-BF, EDF-BF).
pub struct Backfill {
    order: BackfillOrder,
    st: SpaceState,
}

impl Backfill {
    /// EASY backfilling with this priority on these nodes.
    pub fn new(order: BackfillOrder, cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Backfill {
        Backfill {
            order,
            st: SpaceState::new(cfg, nodes),
        }
    }

    fn sort_queue(&mut self) {
        if self.st.sorted {
            return;
        }
        self.st.sorted = true;
        let key = |w: &Waiting| match self.order {
            BackfillOrder::Fcfs => w.submit,
            BackfillOrder::Sjf => w.estimate,
            BackfillOrder::Edf => w.deadline,
        };
        // Stable: every change to the queue (a job pushed at its end, a
        // job taken out) keeps its order, so jobs of equal key stay in
        // arrival order.
        self.st.queue.sort_by(|a, b| key(a).total_cmp(&key(b)));
    }
}

impl QueuePolicy for Backfill {
    fn name(&self) -> &'static str {
        match self.order {
            BackfillOrder::Fcfs => "fcfs-bf",
            BackfillOrder::Sjf => "sjf-bf",
            BackfillOrder::Edf => "edf-bf",
        }
    }

    space_state_queue!();

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        self.st.drop_lapsed(now, out);
        self.sort_queue();
        let st = &mut self.st;
        // Started jobs stay in the queue, marked, until the end of the
        // pass (`launch`), so the walk goes by index past them.
        let mut any = false;
        // Start jobs from the head while they fit.
        let mut head = 0;
        while head < st.queue.len() && st.queue[head].procs <= st.pool.n_free() {
            st.launch(head, now, out);
            any = true;
            head += 1;
        }
        if head < st.queue.len() {
            // The head waits: reserve its start at the shadow time;
            // backfill later jobs that end before it, or that fit in the
            // extra nodes.
            let (shadow, mut extra) = st.shadow(now, st.queue[head].procs);
            let mut k = head + 1;
            while k < st.queue.len() && st.pool.n_free() > 0 {
                #[cfg(test)]
                count_walked();
                let w = &st.queue[k];
                if w.procs <= st.pool.n_free() {
                    let ends_before = now + w.est <= shadow + TIME_EPS;
                    if ends_before || w.procs <= extra {
                        if !ends_before {
                            extra -= w.procs;
                        }
                        st.launch(k, now, out);
                        any = true;
                    }
                }
                k += 1;
            }
        }
        if any {
            st.remove_started();
        }
    }
}

/// The LibraRisk paper's EDF: space-shared, non-preemptive, no backfilling. The
/// earliest-deadline job is selected; if its deadline has passed or its
/// estimate can no longer meet it, it is rejected and the next selected;
/// if it does not fit it waits (and a later arrival with an earlier
/// deadline may take its place).
pub struct Edf {
    st: SpaceState,
}

impl Edf {
    /// EDF on these nodes.
    pub fn new(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Edf {
        Edf {
            st: SpaceState::new(cfg, nodes),
        }
    }
}

impl QueuePolicy for Edf {
    fn name(&self) -> &'static str {
        "edf"
    }

    space_state_queue!();

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        // Stable, as Backfill's: equal deadlines in arrival order.
        self.st
            .queue
            .sort_by(|a, b| a.deadline.total_cmp(&b.deadline));
        while let Some(head) = self.st.queue.first() {
            if now > head.deadline + TIME_EPS {
                let detail = format!(
                    "deadline {:.0} passed before it was selected",
                    head.deadline
                );
                self.st.drop_job(0, RejectReason::Expired, detail, out);
            } else if now + head.est > head.deadline + TIME_EPS {
                let detail = format!(
                    "selected at {:.0}: estimate {:.0} s cannot meet deadline {:.0}",
                    now, head.est, head.deadline
                );
                self.st.drop_job(0, RejectReason::Deadline, detail, out);
            } else if head.procs <= self.st.pool.n_free() {
                self.st.start(0, now, out);
            } else {
                break;
            }
        }
    }
}

/// PBS FIFO (the Libra paper): strict arrival order, no backfilling, no admission
/// control: every job eventually runs, late or not.
pub struct Fifo {
    st: SpaceState,
}

impl Fifo {
    /// FIFO on these nodes.
    pub fn new(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Fifo {
        Fifo {
            st: SpaceState::new(cfg, nodes),
        }
    }
}

impl QueuePolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    space_state_queue!();

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        // The queue is already in arrival order (submissions come in order).
        while let Some(head) = self.st.queue.first() {
            if head.procs > self.st.pool.n_free() {
                break;
            }
            self.st.start(0, now, out);
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Waiting jobs EASY's walks looked at: the walk for lapsed deadlines
    /// and the backfill walk behind the head (tests pin a pass's cost in
    /// the queue's length).
    static QUEUE_WALKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one waiting job looked at in [`QUEUE_WALKED`]: a test-only
/// function, out of the walks, so that the mutation run (which skips
/// `#[cfg(test)]` items) mutates the walks and not this count.
#[cfg(test)]
fn count_walked() {
    QUEUE_WALKED.with(|c| c.set(c.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{job, specs};

    fn at(mut j: JobSpec, submit: Time) -> JobSpec {
        j.details.submit_time = submit;
        j
    }

    fn started(out: &[QueueAction]) -> Vec<(JobId, Vec<usize>)> {
        out.iter()
            .filter_map(|a| match a {
                QueueAction::Start { job, nodes, .. } => Some((*job, nodes.clone())),
                _ => None,
            })
            .collect()
    }

    /// The pool as plain flags: the obvious form, which the bit set must
    /// agree with.
    struct FlagPool {
        free: Vec<bool>,
        usable: Vec<bool>,
        n_free: usize,
    }

    impl FlagPool {
        fn set_available(&mut self, node: usize, available: bool, busy: bool) {
            if node == self.free.len() {
                self.free.push(false);
                self.usable.push(false);
            }
            if node >= self.free.len() || self.usable[node] == available {
                return;
            }
            self.usable[node] = available;
            if !busy {
                self.free[node] = available;
                if available {
                    self.n_free += 1;
                } else {
                    self.n_free -= 1;
                }
            }
        }

        fn take_lowest(&mut self, procs: usize) -> Vec<usize> {
            let mut nodes = Vec::new();
            for (n, f) in self.free.iter_mut().enumerate() {
                if nodes.len() == procs {
                    break;
                }
                if *f {
                    *f = false;
                    nodes.push(n);
                }
            }
            self.n_free -= nodes.len();
            nodes
        }

        fn take(&mut self, node: usize) -> bool {
            if !self.free.get(node).is_some_and(|f| *f) {
                return false;
            }
            self.free[node] = false;
            self.n_free -= 1;
            true
        }

        fn release(&mut self, nodes: &[usize]) {
            for &n in nodes {
                if self.usable[n] {
                    self.free[n] = true;
                    self.n_free += 1;
                }
            }
        }
    }

    #[test]
    fn the_bit_set_pool_takes_and_gives_back_the_nodes_a_flag_pool_does() {
        use rand::{Rng, SeedableRng};
        for (n, seed) in [
            (0, 1),
            (1, 2),
            (63, 3),
            (64, 4),
            (65, 5),
            (130, 6),
            (200, 7),
        ] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut pool = NodePool::new(n);
            let mut flags = FlagPool {
                free: vec![true; n],
                usable: vec![true; n],
                n_free: n,
            };
            let mut held: Vec<Vec<usize>> = Vec::new();
            for step in 0..2000 {
                let what = format!("{n} nodes, seed {seed}, step {step}");
                match rng.random_range(0..10) {
                    0..=3 if pool.n_free() > 0 => {
                        let procs = rng.random_range(1..=pool.n_free());
                        let got = pool.take_lowest(procs);
                        assert_eq!(got, flags.take_lowest(procs), "{what}");
                        held.push(got);
                    }
                    4..=6 if !held.is_empty() => {
                        let nodes = held.swap_remove(rng.random_range(0..held.len()));
                        pool.release(&nodes);
                        flags.release(&nodes);
                    }
                    7 => {
                        // A node registering (appended) or coming back.
                        let node = rng.random_range(0..=flags.usable.len());
                        let busy = held.iter().any(|h| h.contains(&node));
                        pool.set_available(node, true, busy);
                        flags.set_available(node, true, busy);
                    }
                    9 => {
                        // One given node taken (an adopted job's part
                        // holding its node), free or not, or past the end.
                        let node = rng.random_range(0..=flags.usable.len());
                        let took = pool.take(node);
                        assert_eq!(took, flags.take(node), "{what}: take {node}");
                        if took {
                            held.push(vec![node]);
                        }
                    }
                    8 if !flags.usable.is_empty() => {
                        // A node dying.
                        let node = rng.random_range(0..flags.usable.len());
                        let busy = held.iter().any(|h| h.contains(&node));
                        pool.set_available(node, false, busy);
                        flags.set_available(node, false, busy);
                    }
                    _ => {}
                }
                assert_eq!(pool.n_free(), flags.n_free, "{what}");
                let usable = flags.usable.iter().filter(|u| **u).count();
                assert_eq!(pool.usable_count(), usable, "{what}");
            }
        }
    }

    /// Two nodes of speed 2: EASY plans a job of RE 100 to run 50 s.
    /// Node 1 dies and comes back (a live node re-registering) before
    /// any job: the plan stays on speed 2. A (1 proc, RE 100) starts at 0
    /// on node 0, planned to end at 50; B (2 procs) waits for it, shadow
    /// 50, no extra node. C (1 proc, RE 92) at t = 5 would end at 5 + 46
    /// = 51 > 50: not backfilled. (Planned on speed 1, A would end at 100
    /// and C at 97: backfilled.)
    #[test]
    fn a_node_coming_back_keeps_the_plan_on_the_slowest_speed() {
        let specs: Vec<NodeSpec> = specs(2)
            .into_iter()
            .map(|s| NodeSpec { speed: 2.0, ..s })
            .collect();
        let mut p = Backfill::new(BackfillOrder::Fcfs, &PolicyConfig::default(), &specs);
        p.set_node_available(1, false);
        p.set_node_available(1, true);
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 1, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0])]);
        out.clear();
        p.submit(1.0, &at(job(2, 10.0, 2, 1e6, 1e9), 1.0));
        p.schedule(1.0, &mut out);
        p.submit(5.0, &at(job(3, 92.0, 1, 1e6, 1e9), 5.0));
        p.schedule(5.0, &mut out);
        assert_eq!(started(&out), vec![]);
        assert_eq!(p.queued(), 2);
    }

    /// A resumed manager's adopted job holds both nodes of a 2-node
    /// cluster, one part each: a 2-processor job waits; once the adopted
    /// job finishes, both nodes are free again and it starts on them. A
    /// node already held cannot be held twice.
    #[test]
    fn an_adopted_job_holds_its_nodes_until_it_finishes() {
        let mut p = Backfill::new(BackfillOrder::Fcfs, &PolicyConfig::default(), &specs(2));
        assert!(p.hold_node(7, 0, 50.0));
        assert!(p.hold_node(7, 1, 60.0));
        assert!(!p.hold_node(8, 1, 60.0));
        let mut out = Vec::new();
        p.submit(1.0, &at(job(1, 10.0, 2, 1e6, 1e9), 1.0));
        p.schedule(1.0, &mut out);
        assert_eq!(started(&out), vec![]);
        p.finished(55.0, 7);
        p.schedule(55.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0, 1])]);
    }

    /// A space-shared job pays its estimate at the base price: RE 10 s
    /// at PBase 2.5 costs 25 (FCFS-BF and EDF alike).
    #[test]
    fn a_started_job_pays_its_estimate_at_the_base_price() {
        let cfg = PolicyConfig {
            pbase: 2.5,
            ..PolicyConfig::default()
        };
        let mut policies: [Box<dyn QueuePolicy>; 2] = [
            Box::new(Backfill::new(BackfillOrder::Fcfs, &cfg, &specs(1))),
            Box::new(Edf::new(&cfg, &specs(1))),
        ];
        for p in &mut policies {
            let mut out = Vec::new();
            p.submit(0.0, &at(job(1, 10.0, 1, 1e6, 1e9), 0.0));
            p.schedule(0.0, &mut out);
            match out.as_slice() {
                [QueueAction::Start { cost, .. }] => assert_eq!(*cost, 25.0, "{}", p.name()),
                other => panic!("{}: {other:?}", p.name()),
            }
        }
    }

    /// A waiting job lapses only beyond TIME_EPS past its deadline. One
    /// node, busy with A; B waits with its deadline at 10, C at 5. At
    /// 10 + TIME_EPS C has lapsed and is dropped, B is exactly at its
    /// tolerance and stays; at 10 + 3e-6 B is dropped too.
    #[test]
    fn a_waiting_job_lapses_only_past_its_deadline_and_tolerance() {
        use crate::time::TIME_EPS;
        let dropped = |out: &[QueueAction]| -> Vec<JobId> {
            out.iter()
                .filter_map(|a| match a {
                    QueueAction::Drop { job, reject } => {
                        assert_eq!(reject.reason, RejectReason::Expired);
                        Some(*job)
                    }
                    _ => None,
                })
                .collect()
        };
        let mut p = Backfill::new(BackfillOrder::Fcfs, &PolicyConfig::default(), &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 1, 1e6, 1e9), 0.0));
        p.submit(0.0, &at(job(2, 1.0, 1, 10.0, 1e9), 0.0));
        p.submit(0.0, &at(job(3, 1.0, 1, 5.0, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0])]);
        out.clear();
        p.schedule(10.0 + TIME_EPS, &mut out);
        assert_eq!(dropped(&out), [3]);
        out.clear();
        p.schedule(10.0 + 3e-6, &mut out);
        assert_eq!(dropped(&out), [2]);
    }

    /// A pass of EASY behind a full cluster costs what its head costs,
    /// not the queue's length: an overloaded trace keeps a long queue
    /// waiting while every node is busy, and each arrival there runs a
    /// pass, so a pass that walked the queue would make the run quadratic
    /// in its backlog. The walk for lapsed deadlines runs only once the
    /// earliest deadline may have passed (lapsing is past the deadline
    /// and its tolerance, so not at the deadline itself), and the backfill
    /// walk stops at once with no node free.
    ///
    /// By hand: one node, busy with A (RE 1000). Jobs 2-101 wait (1
    /// processor, RE 10, submitted at 0): job 2 due at 500, the others at
    /// 1000. A pass at 1 and one at exactly 500 look at no waiting job
    /// (the head, job 2, needs the node: it waits, and nothing is
    /// backfilled). At 500 + 2 x TIME_EPS job 2 has lapsed: the walk looks
    /// at the 100 waiting jobs once each and drops it; the earliest
    /// deadline is then 1000, so a pass at 600 looks at none again.
    #[test]
    fn a_pass_behind_a_full_cluster_looks_at_no_waiting_job_until_a_deadline_lapses() {
        use crate::time::TIME_EPS;
        let mut p = Backfill::new(BackfillOrder::Fcfs, &PolicyConfig::default(), &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 1000.0, 1, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0])]);
        p.submit(0.0, &at(job(2, 10.0, 1, 500.0, 1e9), 0.0));
        for id in 3..=101 {
            p.submit(0.0, &at(job(id, 10.0, 1, 1000.0, 1e9), 0.0));
        }
        let mut pass = |now: Time| {
            out.clear();
            QUEUE_WALKED.with(|c| c.set(0));
            p.schedule(now, &mut out);
            assert!(started(&out).is_empty(), "at {now}: {out:?}");
            let dropped: Vec<JobId> = out
                .iter()
                .filter_map(|a| match a {
                    QueueAction::Drop { job, .. } => Some(*job),
                    _ => None,
                })
                .collect();
            (QUEUE_WALKED.with(|c| c.get()), dropped)
        };
        assert_eq!(pass(1.0), (0, vec![]));
        assert_eq!(pass(500.0), (0, vec![]));
        assert_eq!(pass(500.0 + 2.0 * TIME_EPS), (100, vec![2]));
        assert_eq!(pass(600.0), (0, vec![]));
        assert_eq!(p.queued(), 99);
    }

    /// A head that no longer fits (a node died after it queued) has no
    /// shadow time: EASY then backfills around it. Three nodes; A (1
    /// proc) runs on node 0; B (3 procs) waits; node 2 dies: B needs 3 of
    /// the 2 usable nodes. C (1 proc, RE 1000) starts on node 1 at once.
    #[test]
    fn easy_backfills_around_a_head_that_no_longer_fits() {
        let mut p = Backfill::new(BackfillOrder::Fcfs, &PolicyConfig::default(), &specs(3));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 1, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        p.submit(1.0, &at(job(2, 10.0, 3, 1e6, 1e9), 1.0));
        p.set_node_available(2, false);
        p.submit(2.0, &at(job(3, 1000.0, 1, 1e6, 1e9), 2.0));
        p.schedule(2.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0]), (3, vec![1])]);
    }

    /// EDF's tolerances at selection, by hand. A job whose estimate ends
    /// exactly TIME_EPS past its deadline (RE 10 + TIME_EPS, deadline 10,
    /// at 0) still starts. With the node busy, a job due at 10 looked at
    /// exactly at 10 + TIME_EPS has not lapsed (its deadline is within
    /// the tolerance) but cannot meet it: dropped for its deadline, not
    /// as expired.
    #[test]
    fn edf_selects_within_its_tolerances() {
        use crate::time::TIME_EPS;
        let reasons = |out: &[QueueAction]| -> Vec<(JobId, RejectReason)> {
            out.iter()
                .filter_map(|a| match a {
                    QueueAction::Drop { job, reject } => Some((*job, reject.reason)),
                    _ => None,
                })
                .collect()
        };
        let cfg = PolicyConfig::default();
        let mut p = Edf::new(&cfg, &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 10.0 + TIME_EPS, 1, 10.0, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0])]);

        let mut p = Edf::new(&cfg, &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 1, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0])]);
        out.clear();
        p.submit(0.0, &at(job(2, 1.0, 1, 10.0, 1e9), 0.0));
        p.schedule(10.0 + TIME_EPS, &mut out);
        assert_eq!(reasons(&out), [(2, RejectReason::Deadline)]);
    }

    #[test]
    fn easy_backfills_only_what_does_not_delay_the_head() {
        // 4 nodes. t=0: A (3 procs, RE 100) starts. Queue in FCFS order:
        // B (4 procs, RE 10): must wait for A: shadow 100, extra 0.
        // C (1 proc, RE 50): ends at 50 <= 100: backfilled on node 3.
        // D (1 proc, RE 200): would end after the shadow and there is no
        // extra node: waits.
        let cfg = PolicyConfig::default();
        let mut p = Backfill::new(BackfillOrder::Fcfs, &cfg, &specs(4));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 3, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0, 1, 2])]);
        out.clear();
        p.submit(1.0, &at(job(2, 10.0, 4, 1e6, 1e9), 1.0));
        p.submit(1.0, &at(job(3, 50.0, 1, 1e6, 1e9), 1.0));
        p.submit(1.0, &at(job(4, 200.0, 1, 1e6, 1e9), 1.0));
        p.schedule(1.0, &mut out);
        assert_eq!(started(&out), vec![(3, vec![3])]);
        assert_eq!(p.queued(), 2);
        // A and C finish: B (head) starts on all four.
        out.clear();
        p.finished(51.0, 3);
        p.finished(100.0, 1);
        p.schedule(100.0, &mut out);
        assert_eq!(started(&out), vec![(2, vec![0, 1, 2, 3])]);
    }

    #[test]
    fn easy_counts_every_job_ending_at_the_shadow_time() {
        // 4 nodes. t=0: B (1 proc, RE 100) starts on node 0, then A
        // (2 procs, RE 100) on nodes 1-2; node 3 stays free. Both end at
        // 100, B listed first.
        // t=1: head H (2 procs, RE 10) does not fit the one free node.
        // By hand: at 100 B and A both end, so 1 + 1 + 2 = 4 nodes are
        // free at the shadow time 100; H needs 2: extra = 2.
        // D (1 proc, RE 500) ends at 501 > 100, but 1 <= extra 2: it is
        // backfilled on node 3, and H still gets 2 of the 3 nodes freed
        // at 100. (Stopping at B, the first job that frees enough nodes,
        // gives extra = 1 + 1 - 2 = 0 and D waits.)
        let cfg = PolicyConfig::default();
        let mut p = Backfill::new(BackfillOrder::Fcfs, &cfg, &specs(4));
        let mut out = Vec::new();
        p.submit(0.0, &at(job(1, 100.0, 1, 1e6, 1e9), 0.0));
        p.submit(0.0, &at(job(2, 100.0, 2, 1e6, 1e9), 0.0));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0]), (2, vec![1, 2])]);
        out.clear();
        p.submit(1.0, &at(job(3, 10.0, 2, 1e6, 1e9), 1.0));
        p.submit(1.0, &at(job(4, 500.0, 1, 1e6, 1e9), 1.0));
        p.schedule(1.0, &mut out);
        assert_eq!(started(&out), vec![(4, vec![3])]);
        // At 100 both end and H starts on schedule.
        out.clear();
        p.finished(100.0, 1);
        p.finished(100.0, 2);
        p.schedule(100.0, &mut out);
        assert_eq!(started(&out), vec![(3, vec![0, 1])]);
    }

    #[test]
    fn sjf_orders_by_estimate_and_lapsed_jobs_are_dropped() {
        let cfg = PolicyConfig::default();
        let mut p = Backfill::new(BackfillOrder::Sjf, &cfg, &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &job(1, 100.0, 1, 1e6, 1e9));
        p.schedule(0.0, &mut out);
        // While job 1 runs: job 2 (RE 50, DT 30) and job 3 (RE 20).
        p.submit(0.0, &job(2, 50.0, 1, 30.0, 1e9));
        p.submit(0.0, &job(3, 20.0, 1, 1e6, 1e9));
        p.submit(0.0, &job(4, 10.0, 1, 1e6, 1e9));
        out.clear();
        p.finished(100.0, 1);
        p.schedule(100.0, &mut out);
        // Job 2's deadline (30) lapsed: dropped as expired. Shortest first:
        // job 4 starts.
        assert!(
            matches!(&out[0], QueueAction::Drop { job: 2, reject } if reject.reason == RejectReason::Expired)
        );
        assert_eq!(started(&out), vec![(4, vec![0])]);
    }

    #[test]
    fn edf_rejects_what_its_estimate_cannot_meet() {
        let cfg = PolicyConfig::default();
        let mut p = Edf::new(&cfg, &specs(2));
        let mut out = Vec::new();
        p.submit(0.0, &job(1, 100.0, 2, 1000.0, 1e9));
        p.schedule(0.0, &mut out);
        // Waiting while job 1 runs: job 2 (RE 50, DT 120) and job 3
        // (RE 10, DT 500). At 100 job 2 is selected first (earliest
        // deadline) but 100 + 50 > 120: rejected for deadline; job 3 runs.
        p.submit(0.0, &job(2, 50.0, 1, 120.0, 1e9));
        p.submit(0.0, &job(3, 10.0, 1, 500.0, 1e9));
        out.clear();
        p.finished(100.0, 1);
        p.schedule(100.0, &mut out);
        assert!(
            matches!(&out[0], QueueAction::Drop { job: 2, reject } if reject.reason == RejectReason::Deadline)
        );
        assert_eq!(started(&out), vec![(3, vec![0])]);
    }

    #[test]
    fn edf_head_waits_without_backfilling() {
        // 2 nodes, job 1 holds one. Head (earliest deadline) needs 2 and
        // waits; job 3 needs 1 and would fit, but EDF does not backfill.
        let cfg = PolicyConfig::default();
        let mut p = Edf::new(&cfg, &specs(2));
        let mut out = Vec::new();
        p.submit(0.0, &job(1, 100.0, 1, 1000.0, 1e9));
        p.schedule(0.0, &mut out);
        p.submit(0.0, &job(2, 10.0, 2, 200.0, 1e9));
        p.submit(0.0, &job(3, 10.0, 1, 900.0, 1e9));
        out.clear();
        p.schedule(0.0, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn fifo_runs_everything_in_order() {
        let cfg = PolicyConfig::default();
        let mut p = Fifo::new(&cfg, &specs(1));
        let mut out = Vec::new();
        p.submit(0.0, &job(1, 100.0, 1, 10.0, 1e9));
        p.submit(0.0, &job(2, 1.0, 1, 10.0, 1e9));
        p.schedule(0.0, &mut out);
        p.finished(100.0, 1);
        p.schedule(100.0, &mut out);
        // Job 2 runs although its deadline passed long ago.
        assert_eq!(started(&out), vec![(1, vec![0]), (2, vec![0])]);
        assert!(p.submit(0.0, &job(3, 1.0, 2, 10.0, 1e9)).is_some());
    }

    #[test]
    fn a_dead_node_is_never_allocated_again() {
        // 3 nodes; node 1 dies while job 1 runs on nodes 0-1. After job 1
        // ends only nodes 0 and 2 are free: a 3-processor job is now
        // refused at submission, and a 2-processor job gets 0 and 2.
        let cfg = PolicyConfig::default();
        let mut p = Fifo::new(&cfg, &specs(3));
        let mut out = Vec::new();
        p.submit(0.0, &job(1, 10.0, 2, 1e6, 1e9));
        p.schedule(0.0, &mut out);
        assert_eq!(started(&out), vec![(1, vec![0, 1])]);
        p.set_node_available(1, false);
        p.finished(5.0, 1);
        assert!(p.submit(5.0, &job(2, 10.0, 3, 1e6, 1e9)).is_some());
        out.clear();
        p.submit(5.0, &job(3, 10.0, 2, 1e6, 1e9));
        p.schedule(5.0, &mut out);
        assert_eq!(started(&out), vec![(3, vec![0, 2])]);
        // A node joining later is appended and used.
        p.set_node_available(3, true);
        out.clear();
        p.submit(6.0, &job(4, 10.0, 1, 1e6, 1e9));
        p.schedule(6.0, &mut out);
        assert_eq!(started(&out), vec![(4, vec![3])]);
    }
}
