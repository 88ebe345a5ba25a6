//! glibc's allocator set for a short batch process (`simulate`).
//!
//! A simulation touches a few tens of MB once: the decoded workload, the
//! core's books, the records, the formatted rows. With glibc's defaults
//! every 4 KiB page of that is a page fault (zeroed, charged to the memory
//! cgroup) on first touch, about 2,700 faults on the 4,531-job EASY run,
//! and a fresh process paid them: its first simulation took 9-13 ms where
//! a warm one takes 5 ms (issue 12, item 8). glibc can back its heap with
//! transparent huge pages, but only through `GLIBC_TUNABLES`
//! (`glibc.malloc.hugetlb=1`), which it reads at process start, before
//! `main`. This does the same from inside the process:
//!
//! - one arena for every thread (`M_ARENA_MAX`), so the writer threads'
//!   allocations land in the same huge-page heap as the main thread's;
//! - large blocks from the heap, not from a fresh `mmap` each (the largest
//!   `M_MMAP_THRESHOLD` glibc accepts, 32 MiB on 64-bit), and freed memory
//!   kept (`M_TRIM_THRESHOLD`), so a freed buffer is reused, not faulted in
//!   again;
//! - the heap grown once by [`PAD`] (`M_TOP_PAD`), and that range advised
//!   `MADV_HUGEPAGE`: first touch faults in 2 MiB at a time (allocations
//!   start at the range's first 2 MiB boundary, see below). Only address
//!   space is reserved: memory is committed where it is touched;
//! - the first [`PREFAULT`] of it faulted in on another thread, so that the
//!   main thread does not wait for those huge pages to be zeroed.
//!
//! The machine's transparent-huge-page mode must be `madvise` or `always`
//! (the usual defaults); with `never` the advice is ignored and nothing
//! changes. Memory is still only committed where it is touched, rounded to
//! 2 MiB. Nothing here changes what the process computes: the simulator's
//! result files are the same byte for byte (`scripts/sim-fingerprint.sh`).
//! Only the `libratory simulate` command does this, first thing in its
//! process (`main.rs`): the live manager and nodes are long-running
//! processes whose memory per job is measured (`live_latency`), and a
//! pre-grown heap would hide it; `calibrate`, which calls the simulator
//! inside a live process, leaves the allocator alone. A live run keeps its
//! heap too (`live::runcmd::keep_heap`), but in 4 KiB pages and without
//! faulting ahead: on this VM a huge page's first touch costs ~2.5 ms (2 MiB
//! allocated and zeroed at once, twice a 4 KiB page's cost per byte), a
//! stall a decision would wait out.

/// How far the heap is grown ahead, and advised for huge pages.
pub const PAD: usize = 512 << 20;

/// How much of the advised heap is faulted in ahead, on another thread.
/// On the 4,531-job SDSC run (6 MiB used with `--outputs summary`, 10 MiB
/// writing every file) 8 MiB took the process from 11.2 to 9.7 ms and from
/// 19.6 to 16.3 ms (medians of 31 and 21, interleaved); 16 MiB was slower
/// again (the populating competes with the workload's hashing for the
/// second core).
pub const PREFAULT: usize = 8 << 20;

/// What [`prepare`] did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The heap range advised for huge pages, in bytes.
    HugePages(usize),
    /// The options were set but the heap could not be advised (`madvise`
    /// failed, or the heap did not grow where expected); 4 KiB pages.
    OptionsOnly,
    /// Not glibc on Linux: nothing done.
    Unsupported,
    /// Turned off (`LIBRATORY_BATCH_HEAP=0`): the allocator's defaults.
    Off,
}

impl std::fmt::Display for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Prepared::HugePages(n) => {
                write!(f, "heap: {} MiB advised for huge pages, one arena", n >> 20)
            }
            Prepared::OptionsOnly => write!(
                f,
                "heap: one arena, 4 KiB pages (not grown or not advised here)"
            ),
            Prepared::Unsupported => write!(f, "heap: allocator defaults"),
            Prepared::Off => write!(f, "heap: allocator defaults (LIBRATORY_BATCH_HEAP=0)"),
        }
    }
}

static PREPARED: std::sync::OnceLock<Prepared> = std::sync::OnceLock::new();

/// Sets the allocator up as the module says, unless the environment has
/// `LIBRATORY_BATCH_HEAP=0` (to compare with the defaults). Call once,
/// early, from the main thread, before the big allocations and before any
/// thread is started; later calls return the first call's result.
pub fn prepare() -> Prepared {
    *PREPARED.get_or_init(|| {
        if std::env::var_os("LIBRATORY_BATCH_HEAP").is_some_and(|v| v == "0") {
            Prepared::Off
        } else {
            prepare_heap()
        }
    })
}

/// What [`prepare`] did in this process, if it was called.
pub fn prepared() -> Option<Prepared> {
    PREPARED.get().copied()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn prepare_heap() -> Prepared {
    const HUGE: usize = 2 << 20;
    // SAFETY: mallopt only changes the allocator's parameters; these are
    // valid values for each (glibc refuses, returning 0, what it does not
    // accept, which leaves the default in place).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, PAD as i32);
    }
    // Grow the heap by one allocation that ends just below a 2 MiB
    // boundary `start` at least 1 MiB above the current break (more than
    // the free top a heap can have this early, so glibc must grow it, by
    // the request plus the pad). glibc writes the new free top's header
    // right after the block, below `start`: nothing at or above `start`
    // has been touched when the range is advised, so every 2 MiB of it
    // can be a huge page (a single 4 KiB page touched before the advice
    // would leave its 2 MiB to 4 KiB faults). The block is never used nor
    // freed: it only holds the stretch below `start` out of the way,
    // address space only. The raw system call reads the break without
    // moving it.
    // SAFETY: brk(0) returns the current break and changes nothing.
    let before = unsafe { libc::syscall(libc::SYS_brk, 0usize) } as usize;
    let start = (before + (1 << 20)).div_ceil(HUGE) * HUGE;
    // black_box: without it the compiler may drop a malloc whose block is
    // never used, and the heap would not grow.
    // SAFETY: a malloc whose block nobody uses.
    unsafe {
        std::hint::black_box(libc::malloc(start - before - 64));
    }
    // SAFETY: as above.
    let after = unsafe { libc::syscall(libc::SYS_brk, 0usize) } as usize;
    if after < start + HUGE {
        return Prepared::OptionsOnly;
    }
    let len = (after - start) / HUGE * HUGE;
    // SAFETY: [start, start + len) lies inside the heap glibc just grew
    // (between the old and the new break); MADV_HUGEPAGE changes how its
    // pages are backed, never their contents.
    let rc = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    if rc == 0 {
        // Fault the first huge pages in on another thread, while this one
        // parses, reads and decodes: MADV_POPULATE_WRITE allocates and
        // zeroes them as a write would, without writing (no data is
        // touched that malloc owns). A run of this size uses 6-10 MiB; a
        // kernel without it (before 5.14) refuses, and nothing changes.
        let ahead = PREFAULT.min(len);
        std::thread::spawn(move || {
            // SAFETY: the range is inside the heap advised above; populating
            // changes no contents (untouched anonymous memory reads as zero
            // either way).
            unsafe { libc::madvise(start as *mut libc::c_void, ahead, libc::MADV_POPULATE_WRITE) };
        });
        Prepared::HugePages(len)
    } else {
        Prepared::OptionsOnly
    }
}

/// Not glibc on Linux: the allocator's defaults stay.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn prepare_heap() -> Prepared {
    Prepared::Unsupported
}
