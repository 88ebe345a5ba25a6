//! Job id -> position in the live core's books.
//!
//! The core looks a job up on every event of it (a decision, each part's
//! start and completion, each progress report), and a live run keeps every
//! job it ever saw. In a hash map each lookup lands on a slot of its own
//! somewhere in a table that outgrows the caches (400,000 jobs: ~8 MB), so
//! under a flood nearly every lookup was a miss to memory. Ids come from
//! our own workloads: trace job numbers and client jobs counted from 1,
//! dense and nearly in order. So ids up to a bound that follows the number
//! of jobs are kept in a vector indexed by id, where the jobs in flight
//! are neighbours, and any other id (a sparse or huge one) in a map.

use rustc_hash::FxHashMap;

use crate::job::JobId;

/// Marks an id the vector does not hold.
const ABSENT: u32 = u32::MAX;

/// Ids below `DENSE_SLACK + DENSE_FACTOR x (jobs so far)` go in the vector:
/// its size stays within a small multiple of the job count, whatever ids a
/// workload uses.
const DENSE_SLACK: u64 = 1 << 16;
const DENSE_FACTOR: u64 = 4;

/// Job id -> position, for ids that are mostly small and dense.
#[derive(Debug, Clone, Default)]
pub struct JobIndex {
    /// Position of id `i` at `dense[i]` (`ABSENT` if none).
    dense: Vec<u32>,
    /// Ids the vector does not cover, and positions beyond `u32`.
    sparse: FxHashMap<JobId, usize>,
    len: usize,
}

impl JobIndex {
    /// Room for `more` jobs.
    pub fn reserve(&mut self, more: usize) {
        let want = self.bound().saturating_add(DENSE_FACTOR * more as u64);
        self.dense
            .reserve((want as usize).saturating_sub(self.dense.len()).min(more));
    }

    fn bound(&self) -> u64 {
        DENSE_SLACK + DENSE_FACTOR * self.len as u64
    }

    /// Position of `id`.
    #[inline]
    pub fn get(&self, id: JobId) -> Option<usize> {
        match self.dense.get(id as usize) {
            Some(&k) if k != ABSENT => Some(k as usize),
            // Not in the vector: in the map, if anywhere (an id below the
            // vector's end goes there when it came before the vector
            // reached it).
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&id).copied(),
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
        if id < self.bound() && k < ABSENT as usize {
            let i = id as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, ABSENT);
            }
            self.dense[i] = k as u32;
        } else {
            self.sparse.insert(id, k);
        }
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_sparse_and_huge_ids_are_all_found() {
        let mut ix = JobIndex::default();
        // In order, out of order, a huge trace id, then ids that pass the
        // vector's end after an id beyond its bound went to the map.
        let ids = [1u64, 2, 7, 5, u64::MAX - 1, 10_000_000, 3, 70_000, 9];
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(ix.get(id), None);
            ix.insert(id, k);
        }
        for (k, &id) in ids.iter().enumerate() {
            assert_eq!(ix.get(id), Some(k), "id {id}");
            assert_eq!(ix.at(id), k);
        }
        for id in [0u64, 4, 6, 8, 11, 69_999, u64::MAX] {
            assert!(!ix.contains(id), "id {id}");
        }
        assert!(ix.sparse.contains_key(&(u64::MAX - 1)) && ix.sparse.contains_key(&10_000_000));
        // The vector stays within its bound of the job count.
        assert!((ix.dense.len() as u64) <= ix.bound());
    }

    #[test]
    fn an_id_the_vector_reaches_later_is_still_found_in_the_map() {
        let mut ix = JobIndex::default();
        // 70,000 is beyond the first bound (65,536): it goes to the map.
        ix.insert(70_000, 0);
        // Enough jobs raise the bound past it and grow the vector over it.
        for id in 1..=2_000u64 {
            ix.insert(id, id as usize);
        }
        ix.insert(70_001, 2_001);
        assert!(ix.dense.len() > 70_000);
        assert_eq!(ix.get(70_000), Some(0));
        assert_eq!(ix.get(70_001), Some(2_001));
    }
}
