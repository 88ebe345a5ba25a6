//! Job id -> position in the live core's books.
//!
//! The core looks a job up on every event of it (a decision, each part's
//! start and completion, each progress report), and a live run keeps every
//! job it ever saw. In a hash map each lookup lands on a slot of its own
//! somewhere in a table that outgrows the caches (400,000 jobs: ~8 MB), so
//! under a flood nearly every lookup was a miss to memory. Ids come from
//! our own workloads: trace job numbers counted from 1, and a live
//! manager's client jobs counted from 2^40, each dense and nearly in
//! order. So each such run of ids is kept in a vector indexed by id less
//! the run's base, where the jobs in flight are neighbours, and any other
//! id (a sparse or huge one) in a map.

use rustc_hash::FxHashMap;

use crate::job::JobId;

/// Marks an id a vector does not hold.
const ABSENT: u32 = u32::MAX;

/// A run's vector covers ids below `base + DENSE_SLACK + DENSE_FACTOR x
/// (jobs so far)`: its size stays within a small multiple of the job
/// count, whatever ids a workload uses.
const DENSE_SLACK: u64 = 1 << 16;
const DENSE_FACTOR: u64 = 4;

/// Runs of dense ids at most (trace ids, client ids, and room for two
/// more); ids beyond them go in the map.
const MAX_RUNS: usize = 4;

/// A new run starts this far below the id that opened it, for ids a
/// little out of order.
const RUN_LEAD: u64 = 1 << 10;

/// Ids `base..` by position.
#[derive(Debug, Clone)]
struct Run {
    base: JobId,
    /// Position of id `base + i` at `slots[i]` (`ABSENT` if none).
    slots: Vec<u32>,
}

/// Job id -> position, for ids that come in a few dense runs.
#[derive(Debug, Clone, Default)]
pub struct JobIndex {
    runs: Vec<Run>,
    /// Ids no run covers, and positions beyond `u32`.
    sparse: FxHashMap<JobId, usize>,
    len: usize,
}

impl JobIndex {
    fn span(&self) -> u64 {
        DENSE_SLACK + DENSE_FACTOR * self.len as u64
    }

    /// Position of `id`.
    #[inline]
    pub fn get(&self, id: JobId) -> Option<usize> {
        for r in &self.runs {
            // A run may have grown over an id filed elsewhere before it
            // did: an absent slot is not the last word.
            let slot = id
                .checked_sub(r.base)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| r.slots.get(i));
            if let Some(&k) = slot {
                if k != ABSENT {
                    return Some(k as usize);
                }
            }
        }
        if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&id).copied()
        }
    }

    /// Position of a job known to be filed.
    ///
    /// # Panics
    /// If it is not (a broken invariant of the caller's books).
    #[inline]
    pub fn at(&self, id: JobId) -> usize {
        self.get(id)
            .unwrap_or_else(|| panic!("job {id} is not in the books"))
    }

    /// Whether `id` is known.
    pub fn contains(&self, id: JobId) -> bool {
        self.get(id).is_some()
    }

    /// Files `id` at position `k` (`id` is not known yet).
    pub fn insert(&mut self, id: JobId, k: usize) {
        debug_assert!(!self.contains(id), "job {id} filed twice");
        self.len += 1;
        let span = self.span();
        if k < ABSENT as usize {
            let run = match self
                .runs
                .iter()
                .position(|r| id >= r.base && id - r.base < span)
            {
                Some(at) => Some(at),
                None if self.runs.len() < MAX_RUNS => {
                    self.runs.push(Run {
                        base: id.saturating_sub(RUN_LEAD),
                        slots: Vec::new(),
                    });
                    Some(self.runs.len() - 1)
                }
                None => None,
            };
            if let Some(at) = run {
                let r = &mut self.runs[at];
                let i = (id - r.base) as usize;
                if i >= r.slots.len() {
                    r.slots.resize(i + 1, ABSENT);
                }
                r.slots[i] = k as u32;
                return;
            }
        }
        self.sparse.insert(id, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_dense_runs_sparse_and_huge_are_all_found() {
        let mut ix = JobIndex::default();
        // Trace ids, client ids from 2^40, out of order, huge ones, and
        // more runs than the index keeps (the fifth and later: the map).
        let ids = [
            1u64,
            2,
            7,
            5,
            (1 << 40) + 1,
            (1 << 40) + 2,
            u64::MAX - 1,
            10_000_000,
            3,
            1 << 50,
            1 << 60,
            (1 << 40) + 3,
            9,
        ];
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(ix.get(id), None);
            ix.insert(id, k);
        }
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(ix.get(id), Some(k), "id {id}");
            assert_eq!(ix.at(id), k);
        }
        for id in [0u64, 4, 6, 8, 11, 1 << 40, (1 << 40) + 4, u64::MAX] {
            assert!(!ix.contains(id), "id {id}");
        }
        // Runs: 1.., 2^40.., u64::MAX - 1.., 10,000,000..; then the map.
        assert_eq!(ix.runs.len(), MAX_RUNS);
        assert!(ix.sparse.contains_key(&(1 << 50)) && ix.sparse.contains_key(&(1 << 60)));
        // Each vector stays within its span of the job count.
        assert!(ix.runs.iter().all(|r| r.slots.len() as u64 <= ix.span()));
    }

    #[test]
    fn an_id_a_run_grows_over_later_is_still_found_where_it_went() {
        let mut ix = JobIndex::default();
        ix.insert(1, 0);
        // 70,000 is beyond the first run's span (65,536 + 4): it opens a
        // run of its own, based 1,024 below it.
        ix.insert(70_000, 1);
        assert_eq!(ix.runs.len(), 2);
        // Enough jobs stretch the first run's span past it.
        for id in 2..=2_000u64 {
            ix.insert(id, id as usize);
        }
        // Now in both runs' reach: filed in the first, found there.
        ix.insert(69_000, 2_001);
        assert!(ix.span() > 70_000);
        assert_eq!(ix.get(70_000), Some(1));
        assert_eq!(ix.get(69_000), Some(2_001));
        assert_eq!(ix.get(1_500), Some(1_500));
    }
}
