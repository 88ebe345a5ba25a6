//! The executor pool: a few threads, one per host core, that burn processor
//! time on behalf of every emulated node in the process.
//!
//! An executor takes a [`BurnJob`] (burn this many ns of thread CPU time),
//! runs a cheap synthetic computation until its own thread CPU clock says
//! it has burned that much, and reports back. It knows nothing about nodes,
//! parts or shares: the node decides what to burn, the pool only burns. Idle
//! executors sleep on a condition variable, so an idle process costs nothing.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;

use crate::clock::thread_cpu_ns;

/// How often (thread CPU time) the burn loop reads the thread clock: a
/// read costs 110-200 ns on a quiet host, so every ~4 us keeps the clock's
/// own cost under 5% there (the reads are counted as burned: they are the
/// thread's CPU time) while a long slice ends within a read of its target.
const CHECK_EVERY_NS: f64 = 4_000.0;

/// Iterations of [`mix`] per ns of CPU on this host, measured once (each
/// thread's burns start from it and follow their own pace).
pub fn iters_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let mut best = 0.0f64;
        // Best of a few short runs: preemption only makes a run look slow
        // in wall time, but the thread clock is immune; a run can still be
        // slowed by cache effects, so take the fastest.
        for _ in 0..3 {
            let n = 200_000u64;
            let t0 = thread_cpu_ns();
            black_box(spin(black_box(0x9e37_79b9), black_box(n)));
            let dt = (thread_cpu_ns() - t0).max(1);
            best = best.max(n as f64 / dt as f64);
        }
        best
    })
}

/// One step of the synthetic work: a multiply-xorshift that the compiler
/// cannot fold away and that keeps one core's ALUs busy without touching
/// memory (so emulated jobs do not disturb each other through caches).
#[inline(always)]
fn mix(x: u64) -> u64 {
    let x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// Runs `n` steps of the synthetic work (allocation-free, so it is safe to
/// call in a forked child).
#[inline(never)]
pub fn spin(mut x: u64, n: u64) -> u64 {
    for _ in 0..n {
        x = mix(x);
    }
    x
}

/// Burns `ns` of the calling thread's CPU time; returns what it really
/// burned (>= `ns`; over it by about a fifth of a clock read when the
/// calibration holds).
///
/// The clock reads are part of what is burned (they are the thread's own
/// CPU time). Each read's timestamp falls inside it: the part of the first
/// read before `start` and the part of the last after the end are the
/// burn's too, one read in all (the two parts of one read), which nothing
/// else would count: the burn counts them as the read cost it measures,
/// by two reads back to back (the thread clock does not run while the
/// thread waits, so preemption does not distort it). So a burn
/// costs what it returns, and whatever it returns above `ns` on a part's
/// last slice is CPU that no later slice pays back. A read costs 110-200 ns
/// on a quiet host and 650-900 ns on a busy virtual one (the syscall itself
/// slows), so each chunk is aimed to end so that the read after it lands
/// just past `ns`: `read` ahead, less a fifth of it (the spread of one
/// read's cost), since landing short of `ns` costs a whole further read.
pub fn burn(ns: u64) -> u64 {
    // Before the clock starts: the first use on a thread calibrates.
    let mut rate = RATE.get();
    let typical = READ.get();
    let burns = BURNS.get().wrapping_add(1);
    BURNS.set(burns);
    let start = thread_cpu_ns();
    // The read's cost, by a pair of reads back to back: on the thread's
    // first burn, every 8th, and on any long enough that the extra read is
    // a small part of it. In between the thread's recent figure serves, so
    // a short burn pays for two reads (its start and end), not three: a
    // 2 us burn could not otherwise end within a read of its target on a
    // busy host.
    let (ends, mut done, read) = if typical == 0 || burns.is_multiple_of(8) || ns >= 16 * typical {
        let pair = thread_cpu_ns() - start;
        if typical == 0 || pair < typical * 2 {
            READ.set(if typical == 0 {
                pair
            } else {
                typical - typical / 8 + pair / 8
            });
        }
        // Counted as the ends' read: never more than the thread's recent
        // reads, so an interrupt that stretched this pair cannot shorten
        // the work.
        let ends = if typical == 0 {
            pair
        } else {
            pair.min(typical)
        };
        (ends, pair + ends, pair)
    } else {
        (typical, typical, typical)
    };
    // From here `done` is the thread clock since `start` plus the ends.
    let read = read as f64;
    let ahead = read * (1.0 - READ_SPREAD);
    let mut x = start | 1;
    while done < ns {
        // The last chunk is cut to what is left, so short slices stay
        // short; one that would end within a read of `ns` is one step.
        let left = (ns - done) as f64 - ahead;
        // Within two chunks of the end, the next-to-last chunk takes half
        // of what is left after its read, so that the last one is aimed:
        // a full chunk there could leave too little to aim at, and one
        // more read to pay.
        let chunk = if left <= CHECK_EVERY_NS {
            left
        } else if left < 2.0 * CHECK_EVERY_NS {
            (left - read) / 2.0
        } else {
            CHECK_EVERY_NS
        };
        let iters = (chunk * rate).ceil().max(1.0) as u64;
        x = spin(x, iters);
        let before = done;
        done = thread_cpu_ns() - start + ends;
        // The chunk's own speed (less the read after it) corrects the
        // rate: short chunks need not run at the calibration's pace.
        // A read stretched by an interrupt or a fault would make one
        // observation absurd: those more than 2x off are not taken.
        let seen = iters as f64 / ((done - before) as f64 - read);
        if iters >= MIN_RATE_ITERS && seen > rate * 0.5 && seen < rate * 2.0 {
            rate += (seen - rate) / 8.0;
        }
    }
    RATE.set(rate);
    black_box(x);
    done
}

thread_local! {
    /// Iterations per ns as this thread's recent chunks ran: starts at the
    /// calibration, follows what the burns see.
    static RATE: Cell<f64> = Cell::new(iters_per_ns());
    /// What a clock read costs this thread (ns), as its recent burns'
    /// pairs measured it (0 before the first).
    static READ: Cell<u64> = const { Cell::new(0) };
    /// Burns on this thread so far (for the pair's every-8th turn).
    static BURNS: Cell<u64> = const { Cell::new(0) };
}

/// Chunks shorter than this do not correct the rate: a read's spread
/// would swamp their own time.
const MIN_RATE_ITERS: u64 = 256;

/// How far one clock read's cost strays from another's, as a fraction of
/// it (a read costs 650-900 ns on a busy host, 110-200 ns on a quiet one).
const READ_SPREAD: f64 = 0.2;

/// What an executor did with a [`BurnJob`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurnReport {
    /// Thread CPU time burned (ns).
    pub burned_ns: u64,
}

/// A request to burn CPU, with the callback that receives the result (run
/// on the executor thread; it should only hand the report on).
pub struct BurnJob {
    /// Thread CPU time to burn (ns).
    pub ns: u64,
    /// Jobs of one lane (one node) burn at most `lane_limit` at a time;
    /// further ones wait in the queue, in order, for a running one to end.
    pub lane: u64,
    /// How many jobs of the lane may burn at once (a node's ceil(capacity)).
    pub lane_limit: usize,
    /// Called with the report once the burn is done.
    pub done: Box<dyn FnOnce(BurnReport) + Send>,
}

struct Queue {
    jobs: VecDeque<BurnJob>,
    /// Jobs burning per lane (lanes with none are absent).
    running: HashMap<u64, usize>,
    /// Executors asleep on the condition variable. Waking costs a system
    /// call even when nobody sleeps, so it is done only when this is > 0.
    idle: usize,
    stop: bool,
}

impl Queue {
    fn runnable(&self, j: &BurnJob) -> bool {
        self.running.get(&j.lane).copied().unwrap_or(0) < j.lane_limit
    }

    /// Takes the oldest job whose lane has a free slot.
    fn take(&mut self) -> Option<BurnJob> {
        let i = self.jobs.iter().position(|j| self.runnable(j))?;
        let job = self.jobs.remove(i)?;
        *self.running.entry(job.lane).or_insert(0) += 1;
        Some(job)
    }

    fn release(&mut self, lane: u64) {
        if let Some(n) = self.running.get_mut(&lane) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&lane);
            }
        }
    }
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    burned_ns: AtomicU64,
    next_lane: AtomicU64,
}

/// A fixed set of executor threads shared by every node of a process.
/// Dropping the pool stops the threads (jobs still queued are dropped
/// without their callbacks running) and joins them.
pub struct ExecutorPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    tids: Vec<i32>,
}

impl std::fmt::Debug for ExecutorPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorPool")
            .field("threads", &self.threads.len())
            .finish()
    }
}

impl ExecutorPool {
    /// Number of cores this process may run on (the default pool size).
    pub fn host_cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// Starts `threads` executors (at least one) at normal priority.
    pub fn new(threads: usize) -> std::io::Result<Self> {
        Self::with_nice(threads, 0)
    }

    /// Starts `threads` executors with scheduling niceness `nice` (-20..19;
    /// negative needs root or CAP_SYS_NICE). Under CFS one executor thread
    /// competes with every other runnable thread of the host as one
    /// thread; a negative nice lets emulated nodes get their capacity on a
    /// host that is busy with other work.
    pub fn with_nice(threads: usize, nice: i32) -> std::io::Result<Self> {
        // Calibrate before any job arrives, so the first slice is exact.
        iters_per_ns();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                running: HashMap::new(),
                idle: 0,
                stop: false,
            }),
            ready: Condvar::new(),
            burned_ns: AtomicU64::new(0),
            next_lane: AtomicU64::new(0),
        });
        let mut handles = Vec::new();
        let (tx, rx) = std::sync::mpsc::channel();
        for k in 0..threads.max(1) {
            let mine = Arc::clone(&shared);
            let tx = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("libratory-exec-{k}"))
                .spawn(move || {
                    let r = set_thread_nice(nice).map(|()| gettid());
                    let ok = r.is_ok();
                    let _ = tx.send(r);
                    if ok {
                        executor(&mine);
                    }
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    drop(ExecutorPool {
                        shared,
                        threads: handles,
                        tids: Vec::new(),
                    });
                    return Err(e);
                }
            }
        }
        let mut pool = ExecutorPool {
            shared,
            threads: handles,
            tids: Vec::new(),
        };
        for _ in 0..pool.threads.len() {
            // Dropping the pool on error stops and joins the threads.
            let tid = rx.recv().map_err(std::io::Error::other)??;
            pool.tids.push(tid);
        }
        Ok(pool)
    }

    /// A lane number no other user of this pool has.
    pub fn new_lane(&self) -> u64 {
        self.shared.next_lane.fetch_add(1, Ordering::Relaxed)
    }

    /// The executor threads' kernel thread ids (e.g. to put them in a
    /// cgroup).
    pub fn thread_ids(&self) -> &[i32] {
        &self.tids
    }

    /// Number of executor threads.
    pub fn size(&self) -> usize {
        self.threads.len()
    }

    /// Queues a job; the first free executor takes it (FIFO among jobs whose
    /// lane has a free slot).
    pub fn submit(&self, job: BurnJob) {
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        // A job queued behind its lane's burning one is taken by the
        // executor that frees the lane; nobody needs waking for it.
        let wake = q.idle > 0 && q.runnable(&job);
        q.jobs.push_back(job);
        drop(q);
        if wake {
            self.shared.ready.notify_one();
        }
    }

    /// Counts CPU burned for a slice outside the executors (a short slice
    /// burned on the node actor's thread) as job work.
    pub fn note_burned(&self, ns: u64) {
        self.shared.burned_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Thread CPU time burned by all executors so far (ns): the "job work"
    /// against which the process's overhead is measured.
    pub fn burned_ns(&self) -> u64 {
        self.shared.burned_ns.load(Ordering::Relaxed)
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    // Normal policy whatever the spawning thread had: the node actors'
    // thread may be SCHED_BATCH (see host::batch_dispatch_thread), and
    // executors must not inherit it.
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; param is a valid struct.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if nice == 0 {
        return Ok(());
    }
    // SAFETY: gettid and setpriority on the calling thread; on Linux
    // PRIO_PROCESS with a thread id sets that thread's niceness only.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, nice) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("setting executor niceness {nice}: {e}"),
        ));
    }
    Ok(())
}

fn executor(shared: &Shared) {
    let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if q.stop {
            return;
        }
        let Some(job) = q.take() else {
            q.idle += 1;
            q = shared.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            q.idle -= 1;
            continue;
        };
        drop(q);
        let burned_ns = burn(job.ns);
        shared.burned_ns.fetch_add(burned_ns, Ordering::Relaxed);
        let lane = job.lane;
        (job.done)(BurnReport { burned_ns });
        q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.release(lane);
        // This thread takes the next job itself; if a second one is ready
        // and an executor sleeps, it may take that.
        if q.idle > 0 && q.jobs.iter().filter(|j| q.runnable(j)).nth(1).is_some() {
            shared.ready.notify_one();
        }
    }
}

impl Drop for ExecutorPool {
    fn drop(&mut self) {
        {
            let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.stop = true;
            q.jobs.clear();
        }
        self.shared.ready.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_burn_reaches_its_target_and_returns_what_it_cost() {
        // Behaviour, not speed (the overshoot and the cost beyond a clock
        // read are figures: `cargo bench -p libratory-node --bench burn`):
        // a burn never returns less than asked, stops (a loose bound: a
        // busy host's preemption is not counted by the thread clock, but a
        // VM's steal time can be), and what it returns is the thread's CPU
        // time it used, so the burns of a run add up to their cost.
        for ns in [2_000u64, 50_000, 1_000_000, 3_000_000] {
            let got = burn(ns);
            assert!(got >= ns && got < ns + 50_000_000, "{ns} -> {got}");
        }
        let n = 200u64;
        burn(4_000);
        let t0 = thread_cpu_ns();
        let returned: u64 = (0..n).map(|_| burn(4_000)).sum();
        let cost = thread_cpu_ns() - t0;
        assert!(returned >= n * 4_000, "{returned}");
        // What was returned was spent, give or take the clock reads at the
        // burns' ends (counted as their work) and the loop's bookkeeping:
        // a small fraction of 4 us of work each. Loose: the bench has the
        // figure.
        let (c, r) = (cost as f64, returned as f64);
        assert!(
            (c - r).abs() < 0.5 * r,
            "cost {cost} ns, returned {returned} ns"
        );
    }

    #[test]
    fn pool_runs_jobs_and_counts_cpu() {
        let pool = ExecutorPool::new(2).unwrap();
        let (tx, rx) = mpsc::channel();
        for _ in 0..4 {
            let tx = tx.clone();
            pool.submit(BurnJob {
                ns: 1_000_000,
                lane: 0,
                lane_limit: 2,
                done: Box::new(move |r| tx.send(r.burned_ns).unwrap()),
            });
        }
        let total: u64 = (0..4).map(|_| rx.recv().unwrap()).sum();
        assert!(total >= 4_000_000);
        assert_eq!(pool.burned_ns(), total);
    }

    #[test]
    fn a_lane_burns_at_most_its_limit_at_once() {
        let job = |lane, ns| BurnJob {
            ns,
            lane,
            lane_limit: 1,
            done: Box::new(|_| {}),
        };
        let mut q = Queue {
            jobs: VecDeque::from([job(7, 1), job(7, 2), job(9, 3), job(7, 4)]),
            running: HashMap::new(),
            idle: 0,
            stop: false,
        };
        assert_eq!(q.take().map(|j| j.ns), Some(1));
        // Lane 7 is busy: its second job waits, lane 9 goes ahead.
        assert_eq!(q.take().map(|j| j.ns), Some(3));
        assert!(q.take().is_none());
        q.release(7);
        assert_eq!(q.take().map(|j| j.ns), Some(2));
        q.release(7);
        q.release(9);
        assert_eq!(q.take().map(|j| j.ns), Some(4));
        assert!(q.take().is_none() && q.jobs.is_empty());
    }
}
